"""A short prompt's causal attention in C++ (layers/attention_kernel.py) against torch's SDPA in float64, and the
places Attention hands it work or keeps torch's.

Tolerance: the kernel computes in float32 with its own exponential and its own order of sums, so it is checked
against float64 to a few float32 roundings of the values' size (1e-5 of max |v|, where one rounding is ~6e-8);
torch's float32 SDPA is held to the same bound, so the test says the kernel's error is of the size of what it
replaces (in some shapes larger, in others smaller), not that it is more exact in every shape.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from attnlab.config import ModelConfig
from attnlab.layers import attention_kernel
from attnlab.layers.attention import Attention

needs_kernel = pytest.mark.skipif(not attention_kernel.available(), reason="the attention kernel needs AVX-512 here")


def _qkv(heads: int, groups: int, t: int, d: int, batch: int = 1, seed: int = 0):
    """q, k, v as strided views of one projection output, as Attention makes them: (batch, heads or groups, t, d)."""
    gen = torch.Generator().manual_seed(seed)
    packed = torch.randn(batch, t, (heads + 2 * groups) * d, generator=gen) * 2.0
    q, k, v = packed.view(batch, t, heads + 2 * groups, d).transpose(1, 2).split((heads, groups, groups), dim=1)
    return q, k, v


@needs_kernel
@pytest.mark.parametrize("heads,groups,t,d,batch", [
    (9, 3, 32, 64, 1),  # SmolLM2's shape
    (4, 4, 1, 16, 1),  # one token
    (6, 2, 17, 32, 2),  # a key vector and one more; two rows of a batch
    (8, 1, 128, 128, 1),  # MAX_T, one shared key head
    (2, 2, 15, 256, 1),  # MAX_D
])
def test_causal_attention_matches_float64(heads, groups, t, d, batch):
    q, k, v = _qkv(heads, groups, t, d, batch, seed=t + d)
    scale = d ** -0.5
    with torch.inference_mode():
        assert attention_kernel.takes(q, k, v)
        got = attention_kernel.attend(q, k, v, scale)
        exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True, scale=scale,
                                               enable_gqa=True)
        torch_f32 = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=True)
    exact = exact.transpose(1, 2).reshape(batch, t, heads * d)
    bound = 1e-5 * float(v.abs().max())
    assert got.shape == (batch, t, heads * d) and got.dtype == torch.float32
    assert float((got.double() - exact).abs().max()) <= bound
    assert float((torch_f32.transpose(1, 2).reshape(batch, t, heads * d).double() - exact).abs().max()) <= bound


@needs_kernel
def test_what_the_kernel_refuses():
    q, k, v = _qkv(4, 2, 8, 16)
    with torch.inference_mode():
        assert attention_kernel.takes(q, k, v)
        assert not attention_kernel.takes(q.double(), k.double(), v.double())
        assert not attention_kernel.takes(q, k[:, :, :5], v[:, :, :5])  # keys after cached tokens
        assert not attention_kernel.takes(*_qkv(4, 2, attention_kernel.MAX_T + 1, 16))
        assert not attention_kernel.takes(*_qkv(4, 2, 8, 24))  # d not a multiple of 16
        assert not attention_kernel.takes(*_qkv(3, 2, 8, 16))  # heads not a multiple of key heads
    assert not attention_kernel.takes(q, k, v)  # autograd on
    with torch.no_grad():
        assert not attention_kernel.takes(q, k, v)  # no autograd, but not inference mode: SDPA's bits stay
    with torch.inference_mode(), FlopCounterMode(display=False):
        assert not attention_kernel.takes(q, k, v)  # torch's FLOP counter watching: it must see SDPA


def _attention(heads: int, kv_heads: int) -> Attention:
    config = ModelConfig(vocab_size=11, d_model=heads * 16, n_heads=heads, n_kv_heads=kv_heads, n_layers=1,
                         max_len=64, d_ff=32)
    torch.manual_seed(heads + kv_heads)
    return Attention(config).eval()


@needs_kernel
@pytest.mark.parametrize("heads,kv_heads", [(4, 4), (6, 2)])
def test_attention_module_takes_the_kernel_for_a_causal_prompt(heads, kv_heads, monkeypatch):
    """Attention's output with the kernel against the same module on torch's SDPA (float32, same bound), and the
    kernel is really what ran."""
    layer = _attention(heads, kv_heads)
    x = torch.randn(2, 20, heads * 16, generator=torch.Generator().manual_seed(1))
    calls = []
    attend = attention_kernel.attend
    monkeypatch.setattr(attention_kernel, "attend", lambda *a: calls.append(1) or attend(*a))
    with torch.inference_mode():
        got = layer(x, is_causal=True)
        assert calls, "the kernel did not run"
        monkeypatch.setattr(attention_kernel, "takes", lambda *a: False)
        expected = layer(x, is_causal=True)
    assert float((got - expected).abs().max()) <= 1e-5 * float(expected.abs().max())


def test_attention_keeps_sdpa_without_the_causal_flag_or_outside_inference_mode(monkeypatch):
    layer = _attention(4, 2)
    x = torch.randn(1, 6, 64, generator=torch.Generator().manual_seed(2))
    monkeypatch.setattr(attention_kernel, "attend", lambda *a: pytest.fail("the kernel ran"))
    with torch.inference_mode():
        layer(x, is_causal=False)  # an encoder's attention
        layer(x, bias=torch.zeros(1, 1, 6, 6), is_causal=False)
    with torch.no_grad():
        layer(x, is_causal=True)  # a forward a user may compare with an autograd one
    layer(x, is_causal=True).sum().backward()  # training: autograd needs torch's


def test_a_cpu_without_avx512_is_no_warning(monkeypatch, recwarn):
    """SDPA serves such a CPU as before: nothing to say (a failed build or no compiler is said, by the build)."""
    monkeypatch.setattr(attention_kernel.kernel_variants, "cpu_reason", lambda flags: "the CPU lacks avx512dq")
    monkeypatch.setattr(attention_kernel, "_build", lambda: pytest.fail("built without the CPU's flags"))
    assert attention_kernel._compiled.__wrapped__() == (None, "the CPU lacks avx512dq")
    assert not recwarn.list


@needs_kernel
def test_one_and_two_threads_give_the_same_bits():
    """Each query head of each batch row is one thread's job, computed the same way whichever thread takes it."""
    from attnlab.layers import kernel_threads

    q, k, v = _qkv(9, 3, 48, 64, batch=2, seed=3)
    with torch.inference_mode():
        with kernel_threads.apart(1):
            one = attention_kernel.attend(q, k, v, 0.125)
        with kernel_threads.apart(2):
            two = attention_kernel.attend(q, k, v, 0.125)
    assert torch.equal(one, two)
