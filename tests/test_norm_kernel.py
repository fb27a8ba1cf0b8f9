"""layers/norm_kernel.py: a decoding step's RMSNorm in one call gives torch's RMSNorm numbers (float32 rounding),
and the model's norms take it exactly where they should (few rows, no autograd, float32 on CPU)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import attnlab
from attnlab.layers import norm_kernel
from attnlab.layers.norms import RMSNorm

pytestmark = pytest.mark.skipif(not norm_kernel.available(), reason="no C++ compiler: norms run torch's operators")


@pytest.mark.parametrize("rows,d,eps", [(1, 576, 1e-5), (3, 37, 1e-6), (4, 64, 1e-5), (1, 8, 0.5), (128, 576, 1e-5)])
def test_the_kernel_gives_torchs_rms_norm(rows, d, eps):
    torch.manual_seed(d)
    x = torch.randn(rows, d) * torch.logspace(-3, 3, d)  # a wide range of magnitudes, as outlier channels
    w = torch.randn(d)
    got = norm_kernel.rms_norm(x, w, eps)
    reference = F.rms_norm(x.double(), (d,), w.double(), eps)  # float64: independent of either float32 order
    assert torch.allclose(got.double(), reference, rtol=1e-6, atol=1e-7 * float(reference.abs().max()))


def test_non_finite_rows_give_what_torch_gives():
    x = torch.tensor([[1.0, float("nan"), 2.0], [1.0, float("inf"), 2.0], [0.0, 0.0, 0.0]])
    w = torch.ones(3)
    got, expected = norm_kernel.rms_norm(x, w, 1e-5), F.rms_norm(x, (3,), w, 1e-5)
    assert torch.equal(got.isnan(), expected.isnan()) and torch.equal(got[2], expected[2])


def test_the_module_takes_the_kernel_for_few_rows_only(monkeypatch):
    """A decoding step's rows and a short prompt's (up to MAX_ROWS) go to the kernel, a longer prompt to torch."""
    calls = []
    real = norm_kernel.rms_norm
    monkeypatch.setattr(norm_kernel, "rms_norm", lambda *a: calls.append(a[0].shape) or real(*a))
    norm = RMSNorm(16, eps=1e-5)
    x = torch.randn(1, 1, 16)
    with torch.no_grad():
        fast = norm(x)
        norm(torch.randn(1, norm_kernel.MAX_ROWS, 16))  # a short prompt: the kernel's
        norm(torch.randn(1, norm_kernel.MAX_ROWS + 1, 16))  # a long one: torch's
    assert calls == [torch.Size([1, 1, 16]), torch.Size([1, norm_kernel.MAX_ROWS, 16])]
    calls.clear()
    slow = norm(x)  # autograd on: torch's, same numbers to rounding
    assert not calls and torch.allclose(fast, slow, rtol=1e-6, atol=1e-7)


def test_a_decoding_step_gives_the_same_tokens_with_and_without_it(monkeypatch):
    """Greedy generation of a tiny LLaMA-shaped model (RMSNorm) with the kernel and with torch's norms."""
    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.presets["tiny-llama"]).eval()
    ids = torch.randint(0, 100, (1, 5))
    with_kernel = attnlab.generate(model, ids, max_new_tokens=6, eos_token_id=None)
    monkeypatch.setattr(norm_kernel, "available", lambda: False)
    without = attnlab.generate(model, ids, max_new_tokens=6, eos_token_id=None)
    assert torch.equal(with_kernel.sequences, without.sequences)
