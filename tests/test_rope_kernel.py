"""layers/rope_kernel.py: RoPE of few rows in one C++ call. Reference: torch's own operators in apply_rotary (the
kernel makes the same three float32 roundings with no fused multiply-add, so the results must be equal bit for
bit), and the places a model calls it (no autograd, float32 on CPU, short inputs)."""

from __future__ import annotations

import pytest
import torch

import attnlab
from attnlab.layers import positions, rope_kernel

pytestmark = pytest.mark.skipif(not rope_kernel.available(), reason="the RoPE kernel cannot be built here")


def _torch_rotary(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


@pytest.mark.parametrize("batch, heads, seq, d, layout", [
    (1, 12, 32, 64, "qkv view"), (2, 3, 5, 16, "contiguous"), (1, 1, 1, 2, "contiguous"), (3, 4, 7, 40, "qkv view")])
def test_the_kernel_gives_torchs_bits(batch, heads, seq, d, layout):
    torch.manual_seed(d + seq)
    if layout == "qkv view":  # as attention.py makes it: (batch, seq, heads + more, d) transposed, a strided view
        x = (torch.randn(batch, seq, heads + 3, d) * 10).transpose(1, 2)[:, :heads]
    else:
        x = torch.randn(batch, heads, seq, d) * 10
    rotary = positions.Rotary(d, theta=10000.0)
    ids = torch.arange(seq).expand(batch, seq) + torch.arange(batch)[:, None] * 3  # rows at other positions
    cos, sin = rotary(ids)
    with torch.no_grad():
        assert rope_kernel.takes(x, cos, sin)
        got = positions.apply_rotary(x, cos, sin)
    assert got.shape == x.shape and torch.equal(got, _torch_rotary(x, cos, sin))


def test_the_model_takes_it_only_without_autograd_and_for_few_values(monkeypatch):
    calls = []
    real = rope_kernel.apply
    monkeypatch.setattr(rope_kernel, "apply", lambda *a: calls.append(a[0].shape) or real(*a))
    x = torch.randn(1, 2, 4, 8)
    cos, sin = positions.Rotary(8)(torch.arange(4)[None])
    with torch.no_grad():
        positions.apply_rotary(x, cos, sin)
        big = torch.randn(1, 2, rope_kernel.MAX_VALUES // 16 + 1, 8)
        positions.apply_rotary(big, *positions.Rotary(8)(torch.arange(big.shape[2])[None]))  # too many: torch's
    assert calls == [x.shape]
    positions.apply_rotary(x.requires_grad_(), cos, sin)  # autograd: torch's
    assert len(calls) == 1


def test_a_llama_generates_the_same_tokens_with_and_without_it(monkeypatch):
    """Greedy generation of a tiny LLaMA-shaped model (RoPE, grouped-query attention): prefill and steps through
    the kernel, then through torch's operators: the same tokens and, the bits being equal, the same logits."""
    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.presets["tiny-llama"]).eval()
    ids = torch.randint(0, 100, (1, 5))
    args = dict(max_new_tokens=6, eos_token_id=None, keep_logits=True)
    calls = []
    real = rope_kernel.apply
    monkeypatch.setattr(rope_kernel, "apply", lambda *a: calls.append(a[0].shape) or real(*a))
    with_kernel = attnlab.generate(model, ids, **args)
    assert len(calls) >= 6 * model.config.n_layers  # the prefill and every step, in every layer
    monkeypatch.setattr(rope_kernel, "available", lambda: False)
    without = attnlab.generate(model, ids, **args)
    assert torch.equal(with_kernel.sequences, without.sequences)
    assert all(torch.equal(a, b) for a, b in zip(with_kernel.logits, without.logits, strict=True))
