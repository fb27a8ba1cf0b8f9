"""A prompt's attention in C++ (layers/attention_kernel.py) against torch's SDPA in float64, and the places
Attention hands it work or keeps torch's: fresh causal prompts of any length, prompts after cached tokens, padded
batches (the masks attnlab.layers.masks.attention_bias builds, given to both as the same additive bias).

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
    (8, 1, 128, 128, 1),  # one shared key head
    (2, 2, 15, 256, 1),  # MAX_D
    (9, 3, 300, 64, 1),  # longer than the 128 tokens it once took
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
        assert not attention_kernel.takes(q, k[:, :, :5], v[:, :, :5])  # fewer keys than queries
        assert not attention_kernel.takes(q[:, :, :5], k, v)  # keys after cached tokens: only with their mask
        assert attention_kernel.takes(q[:, :, :5], k, v, torch.zeros(1, 1, 5, 8), is_causal=False)
        assert not attention_kernel.takes(q[:, :, :1], k, v, torch.zeros(1, 1, 1, 8), is_causal=False)  # a step
        assert not attention_kernel.takes(q, k, v, torch.zeros(1, 1, 8, 8, dtype=torch.bool), is_causal=False)
        assert not attention_kernel.takes(q, k, v, torch.zeros(1, 3, 8, 8), is_causal=False)  # 3 heads of 4?
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
        layer(x, is_causal=False)  # an encoder's attention without a mask
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


def _masked(q, k, v, bias, scale):
    """SDPA in float64 and in float32 with the same additive bias, as (batch, T, heads * d)."""
    b, h, t, d = q.shape
    out = []
    for dtype in (torch.float64, torch.float32):
        o = F.scaled_dot_product_attention(q.to(dtype), k.to(dtype), v.to(dtype), attn_mask=bias.to(dtype),
                                           scale=scale, enable_gqa=True)
        out.append(o.transpose(1, 2).reshape(b, t, h * d))
    return out


def _padded_bias(lengths: list[int], t: int, past: int = 0) -> torch.Tensor:
    """attention_bias of a left-padded batch: row r's last lengths[r] of past + t columns are real tokens."""
    from attnlab.layers.masks import attention_bias

    total = past + t
    mask = torch.tensor([[0] * (total - n) + [1] * n for n in lengths])
    bias, causal = attention_bias(q_len=t, k_len=total, causal=True, attention_mask=mask)
    assert not causal and bias.shape == (len(lengths), 1, t, total)
    return bias


@needs_kernel
@pytest.mark.parametrize("heads,groups,t,d,lengths,past", [
    (9, 3, 40, 64, [40, 23, 1, 17], 0),  # a padded batch; one row all padding but its last token
    (4, 2, 33, 32, [1, 33], 0),  # a key vector and one more; the one-token row again
    (6, 2, 20, 16, [50, 35], 30),  # a second turn of a padded batch after 30 cached positions
    (9, 3, 130, 64, [130, 3], 0),  # longer than 128, a 3-token row
], ids=["batch4", "one-token-row", "after-cache", "long"])
def test_padded_batches_match_sdpa_with_the_same_mask(heads, groups, t, d, lengths, past):
    """Left-padded rows through the kernel against SDPA given the same additive mask, in float64 (the reference)
    and float32: both within 1e-5 of max |v| (module docstring). A query at a padding position sees no real key:
    the kernel, like SDPA, then averages every key (weights uniform under attnlab's finite mask), checked too."""
    total = past + t
    q, _, _ = _qkv(heads, groups, t, d, len(lengths), seed=t)
    _, k, v = _qkv(heads, groups, total, d, len(lengths), seed=total + 1)
    bias = _padded_bias(lengths, t, past)
    scale = d ** -0.5
    with torch.inference_mode():
        assert attention_kernel.takes(q, k, v, bias, is_causal=False)
        got = attention_kernel.attend(q, k, v, scale, bias)
    exact, torch_f32 = _masked(q, k, v, bias, scale)
    bound = 1e-5 * float(v.abs().max())
    assert float((got.double() - exact).abs().max()) <= bound
    assert float((torch_f32.double() - exact).abs().max()) <= bound
    row = lengths.index(min(lengths))  # its first query is padding when its length < total
    if min(lengths) < t:  # its first query sees only padding
        mean = v[row].double().mean(dim=1).repeat_interleave(heads // groups, dim=0).reshape(-1)  # every key's
        assert float((got[row, 0].double() - mean).abs().max()) <= bound


@needs_kernel
def test_a_per_head_bias_and_a_window():
    """ALiBi-like per-head bias plus a causal sliding window (a (1, heads, T, T) bias), and a bias broadcast over
    the queries ((batch, 1, 1, T): an encoder's padding), against SDPA with the same bias."""
    from attnlab.layers.masks import causal_mask

    heads, groups, t, d = 4, 2, 37, 32
    q, k, v = _qkv(heads, groups, t, d, 2, seed=9)
    slopes = torch.tensor([0.5, 0.25, 0.125, 0.0625])[:, None, None]
    distance = (torch.arange(t)[None, :] - torch.arange(t)[:, None]).float()
    keep = causal_mask(t, t, window=10)
    per_head = torch.where(keep, slopes * distance, torch.finfo(torch.float32).min)[None]  # (1, heads, t, t)
    pad = torch.zeros(2, 1, 1, t)
    pad[1, ..., :11] = torch.finfo(torch.float32).min
    for bias in (per_head, pad):
        with torch.inference_mode():
            assert attention_kernel.takes(q, k, v, bias, is_causal=False)
            got = attention_kernel.attend(q, k, v, 0.2, bias)
        exact, _ = _masked(q, k, v, bias, 0.2)
        assert float((got.double() - exact).abs().max()) <= 1e-5 * float(v.abs().max())


@needs_kernel
def test_a_padded_generation_prefill_runs_the_kernel(monkeypatch):
    """A model's forward over a left-padded batch with its attention mask, and a second chunk after the cached
    first (the KV cache), hand every layer's attention to the kernel, and give the logits of the same forward on
    torch's SDPA (float32: 1e-4 of their spread, the layers' roundings compounded)."""
    import attnlab
    from attnlab.cache import KVCache

    config = attnlab.presets["tiny-llama"].replace(n_layers=2)
    torch.manual_seed(0)
    model = attnlab.build_model(config).eval()
    ids = torch.randint(0, config.vocab_size, (3, 24), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(3, 24, dtype=torch.long)
    mask[1, :10], mask[2, :23] = 0, 0  # row 2: all padding but its last token

    def run():
        cache = KVCache.for_model(model, 3, 24)
        with torch.inference_mode():
            first = model(ids[:, :16], attention_mask=mask[:, :16], cache=cache).logits
            second = model(ids[:, 16:], attention_mask=mask, cache=cache).logits
        return torch.cat((first, second), dim=1)

    calls = []
    attend = attention_kernel.attend
    monkeypatch.setattr(attention_kernel, "attend", lambda *a: calls.append(a[4] is not None) or attend(*a))
    got = run()
    assert calls == [True] * 4, calls  # 2 layers x 2 chunks, each with its mask
    monkeypatch.setattr(attention_kernel, "takes", lambda *a: False)
    expected = run()
    real = mask.bool()
    spread = float(expected[real].std())
    assert float((got - expected)[real].abs().max()) <= 1e-4 * spread
