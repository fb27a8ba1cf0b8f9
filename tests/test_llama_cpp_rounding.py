"""The llama.cpp rounding of activations that `python -m attnlab.benchmarks.llama_cpp_agreement --kquants` puts into
attnlab to explain the gap between attnlab's and llama.cpp's logits on quantized files.

References, each independent of the code under test:
- Q8_0: the `gguf` package's own Q8_0 quantize + dequantize (a port of ggml-quants.c's quantize_row_q8_0_ref: x / d
  rounded half away from zero, where llama.cpp's x86 build multiplies by 127 / max|x| and rounds half to even); the
  two may differ only where x * 127 / max|x| lies within float32 noise of a half, by one step there.
- Q8_K: a scalar loop written from ggml-quants.c's quantize_row_q8_K_ref (the `gguf` package cannot quantize it).
- The patched model: every quantized matrix of a decoder goes through the rounding (counted), and none keeps the
  kept path's fused SwiGLU + W_2 kernel, which would skip it (a first version missed that).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.benchmarks.llama_cpp_agreement import round_q8_0, round_q8_k, with_llama_cpp_rounding

gguf = pytest.importorskip("gguf")


def activations(rows: int, k: int, seed: int = 0) -> torch.Tensor:
    """Random activations with a few large entries (as a decoder's have), and one all-zero block."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, k, generator=gen)
    x[torch.rand(rows, k, generator=gen) < 0.01] *= 40
    x[0, :256] = 0
    return x


def test_q8_0_values_are_ggufs_q8_0():
    x = activations(16, 576)
    got, sums = round_q8_0(x)
    raw = gguf.quants.quantize(x.numpy(), gguf.GGMLQuantizationType.Q8_0)
    want = torch.from_numpy(gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.Q8_0).astype(np.float64))
    blocks = x.reshape(16, -1, 32)
    step = (blocks.abs().amax(-1, keepdim=True) / 127).half().double().expand_as(blocks).reshape(16, -1)
    scaled = (blocks * (127 / blocks.abs().amax(-1, keepdim=True))).reshape(16, -1)
    near_half = ((scaled - scaled.floor()) - 0.5).abs() < 1e-4
    differ = got != want
    assert not (differ & ~near_half).any(), "a value off a tie differs from gguf's Q8_0"
    assert torch.allclose((got - want).abs()[differ], step[differ]), "a tie rounded more than one step apart"
    assert got[0, :256].eq(0).all()
    # Q8_1's block sums (quantize_row_q8_1: s = fp16(d * sum(q)) with d = max|x| / 127 before its float16 rounding)
    d = blocks.abs().amax(-1) / 127
    q = torch.round(got.reshape(16, -1, 32) / d.half().double()[..., None].clamp_min(1e-30))
    assert torch.equal(sums, (d * q.float().sum(-1)).half().double())


def q8_k_reference(x: np.ndarray) -> np.ndarray:
    """ggml-quants.c quantize_row_q8_K_ref, then q * d, one element at a time in float32."""
    out = np.zeros(x.shape, dtype=np.float64)
    for start in range(0, x.size, 256):
        block = x[start:start + 256].astype(np.float32)
        amax, signed = np.float32(0), np.float32(0)
        for v in block:
            if abs(v) > amax:
                amax, signed = abs(v), v
        if amax == 0:
            continue
        iscale = np.float32(-127) / signed
        d = np.float32(1) / iscale
        for j, v in enumerate(block):
            q = min(127, int(np.rint(np.float32(iscale * v))))  # nearest_int: ties to even
            out[start + j] = q * np.float64(d)
    return out


def test_q8_k_values_follow_ggmls_reference_loop():
    x = activations(3, 768, seed=1)
    got = round_q8_k(x)
    for row in range(3):
        assert np.array_equal(got[row].numpy(), q8_k_reference(x[row].numpy()))
    # at most half a step from x, and the largest input kept exactly (its q is -127 against iscale's sign)
    step = x.reshape(3, -1, 256).abs().amax(-1, keepdim=True) / 127
    assert ((got - x.double()).reshape(3, -1, 256).abs() <= step.double() / 2 * (1 + 1e-6)).all()


def test_every_quantized_matrix_takes_the_rounding():
    import attnlab
    from attnlab.layers.quantized import QuantizedLinear
    from attnlab.quantization import quantize

    torch.manual_seed(0)
    config = attnlab.presets["tiny-llama"]
    config.d_ff = 192  # the int4 format's blocks of 32 inputs
    model = quantize(attnlab.build_model(config).eval(), "int4")
    layers = [m for m in model.modules() if isinstance(m, QuantizedLinear)]
    for m in layers:
        m.use_kernel = False  # no kernel build in a test (the fused SwiGLU path is checked by name below)
    ids = torch.tensor([[1, 2, 3, 4, 5, 6, 7]])
    with torch.no_grad():
        kept = model(ids).logits
    calls = []
    for m in layers:
        m.register_forward_hook(lambda mod, args, out: calls.append(mod))
    with_llama_cpp_rounding(model)
    with torch.no_grad():
        emulated = model(ids).logits
    assert len(calls) == len(layers) and {id(m) for m in calls} == {id(m) for m in layers}
    h = torch.randn(1, 7, 2 * config.d_ff)
    assert all(m.swiglu_product(h) is None for m in layers)  # a kernel's fused W_2 would skip the rounding
    # the product is the dequantized weight times Q8_0-rounded x: close to the kept path, not equal to it
    assert 0 < float((emulated - kept).abs().max()) < 0.05 * float(kept.abs().max())
