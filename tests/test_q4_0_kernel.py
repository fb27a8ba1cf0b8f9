"""GGUF's Q4_0 through its own kernel (layers/q4_0_kernel.py): tiles of the codes and d only (1152 bytes per 64
outputs x 32 inputs, the file's 18 bytes per 32 weights), m = -8 d made in the kernel.

References, independent of the code under test:
- the weights: the `gguf` package's `gguf.quants.dequantize` of the same random bytes, bit for bit;
- the products: float64 x . w of those weights within the kernels' rounding of x (two int8 pieces; the bound of
  tests/test_kquants.py), and the 4-bit kernel (layers/int4_kernel.py) on the same buffers in Q4_1's tiles (d and
  m = -8 d), whose numbers the Q4_0 kernel must give bit for bit: it is that kernel with m made from d.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.layers import int4_kernel, q4_0_kernel, quantized
from attnlab.layers.quantized import QuantizedLinear, dequantize

gguf = pytest.importorskip("gguf")


def q4_0_rows(n: int, k: int, seed: int) -> np.ndarray:
    """(n, k/32 * 18) uint8: random Q4_0 blocks (random codes, float16 d of both signs near 1e-3); row 0 has every
    code 15, row 1 every code 0."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=(n, k // 32, 18), dtype=np.uint8)
    d = rng.uniform(0.25, 1, size=(n, k // 32)) * 1e-3 * rng.choice([-1, 1], size=(n, k // 32))
    raw[..., 0:2] = d.astype(np.float16).view(np.uint8).reshape(n, k // 32, 2)
    raw[0, :, 2:], raw[1, :, 2:] = 0xFF, 0
    return raw.reshape(n, -1)


def _layer(n: int, k: int, seed: int = 0) -> tuple[QuantizedLinear, torch.Tensor]:
    raw = q4_0_rows(n, k, seed)
    module = QuantizedLinear(k, n, "q4_0")
    module.load_buffers(quantized.from_gguf_rows(torch.from_numpy(raw), "q4_0"))
    w = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.Q4_0)
    return module, torch.from_numpy(np.asarray(w, dtype=np.float32).reshape(n, k))


def test_the_tiles_hold_the_files_bytes_and_the_weights_are_ggufs():
    module, w = _layer(70, 96)
    assert torch.equal(dequantize("q4_0", module.buffers_dict()), w)
    tiles, = q4_0_kernel.pack(*module.buffers_dict().values())
    assert tiles.shape == (2, 3, 1152) and q4_0_kernel.TILE_BYTES == 18 * 64
    four, = int4_kernel.pack(*module.buffers_dict().values())
    assert torch.equal(tiles, four[..., :1152])  # Q4_1's tile without its 64 m
    assert quantized.KERNELS["q4_0"] is q4_0_kernel


def test_pack_refuses_a_min_that_is_not_minus_8_d():
    module, _ = _layer(64, 64)
    b = module.buffers_dict()
    b["min"] = b["min"].clone()
    b["min"][3, 1] += 1
    with pytest.raises(ValueError, match="-8 times its scale"):
        q4_0_kernel.pack(b["qweight"], b["scale"], b["min"])
    with pytest.raises(ValueError, match="float16 scales, got float32"):
        q4_0_kernel.pack(b["qweight"], b["scale"].float(), b["min"].float())


@pytest.mark.parametrize("n,k", [(70, 96), (1000, 576)])
def test_products_are_the_4_bit_kernels_bit_for_bit_and_within_the_rounding(n, k):
    """One row (decoding), 3 rows (one-row calls) and 40 rows (rows_product), with an outlier channel and a bias:
    the Q4_0 kernel's outputs equal the 4-bit kernel's on Q4_1 tiles of the same buffers, bit for bit, and float64
    x . w within the rounding of x."""
    if not q4_0_kernel.available():
        pytest.skip(f"the Q4_0 kernel is unavailable here: {q4_0_kernel.unavailable_reason()}")
    module, w = _layer(n, k, seed=k)
    gen = torch.Generator().manual_seed(n)
    bias = torch.randn(n, generator=gen)
    x = torch.randn(40, k, generator=gen) * torch.logspace(-2, 1, 40)[:, None]
    x[:, 5] *= 30
    with torch.no_grad():
        one = torch.cat([module(row[None], bias) for row in x])
        many = module(x, bias)
    tiles, kbias = int4_kernel.pack_layer(module.buffers_dict(), bias)
    as_q4_1 = torch.cat([int4_kernel.gemv(row[None].contiguous(), tiles, kbias, n) for row in x])
    assert torch.equal(one, as_q4_1)
    if q4_0_kernel.rows_available():
        assert torch.equal(many, one)
    expected = x.double() @ w.double().t() + bias.double()
    big = x.abs().amax(dim=-1, keepdim=True).double()
    bound = big / 127 / 254 / 2 * w.abs().sum(1) + 1e-5 * (1 + big * w.abs().sum(1))
    assert bool(((one.double() - expected).abs() <= bound).all())
