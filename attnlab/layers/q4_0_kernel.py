"""One-row and multi-row products of GGUF's Q4_0 kept in its own bytes (attnlab format "q4_0"): the 4-bit kernel of
layers/int4_kernel.py over tiles without the minimum.

Q4_0: blocks of 32 inputs, 18 bytes: a float16 d and 16 bytes of 4-bit codes; w = d (q - 8), q in 0..15. It is a
Q4_1 block with m = -8 d, and the 4-bit kernel computes it exactly that way, but a Q4_1 tile carries 64 float16 m
beside the 64 d (1280 bytes per 64 outputs x 32 inputs, 20 bytes per 32 weights), which decoding reads at every
step. This kernel's tiles hold the codes and d only (1152 bytes: 18 per 32 weights, the file's) and make
m = -8 d in registers (exact in float32: a power of two). Everything else (x's rounding into two int8 pieces, the
exact integer block sums, the accumulation order, the AVX-512 VNNI and AVX2 variants, rows_product) is the 4-bit
kernel's, so its products are those of the 4-bit kernel on the Q4_1 form, bit for bit (tests/test_kquants.py).
The module's buffers stay Q4_1's (qweight, scale d, min -8 d: layers/quantized.py); pack() checks the min.
"""

from __future__ import annotations

import functools

import torch

from attnlab.layers import int4_kernel, kernel_variants

BLOCK_N, BLOCK_K, MAX_K = int4_kernel.BLOCK_N, int4_kernel.BLOCK_K, int4_kernel.MAX_K
TILE_BYTES = 1152  # 1024 bytes of codes, 64 float16 d

SOURCES, ROWS_SOURCES = int4_kernel.sources("q4_0", TILE_BYTES, minus_8d=True)
_compiled, _compiled_rows = kernel_variants.tiled_builds("q4_0", SOURCES, ROWS_SOURCES, "Q4_0 products")
available, unavailable_reason, gemv, rows_available, rows_product = kernel_variants.tiled_calls(globals())
runs_here = functools.partial(kernel_variants.runs_on_this_cpu, SOURCES)


def pack(qweight: torch.Tensor, scale: torch.Tensor, min: torch.Tensor) -> tuple[torch.Tensor]:
    """q4_0 buffers ((n, k/2) uint8 in GGUF's nibble order, (n, k/32) float16 d, (n, k/32) float16 m = -8 d) ->
    (tiles,), (ceil(n/64), k/32, 1152) uint8: the 4-bit kernel's tiles without their 64 m."""
    if scale.dtype != torch.float16:
        raise ValueError(f"the Q4_0 kernel takes float16 scales, got {str(scale.dtype).removeprefix('torch.')}")
    if not torch.equal(min, scale * -8):
        raise ValueError("the Q4_0 kernel needs every block's min to be -8 times its scale (w = d (q - 8)); "
                         "these buffers hold other mins: keep them as format q4_1")
    four, = int4_kernel.pack(qweight, scale, min)
    return (four[..., :TILE_BYTES].contiguous(),)


def pack_layer(buffers: dict[str, torch.Tensor], bias: torch.Tensor | None) -> tuple:
    """A QuantizedLinear's q4_0 buffers and bias -> gemv's arguments between x and n."""
    tiles, = pack(buffers["qweight"], buffers["scale"], buffers["min"])
    return tiles, kernel_variants.layer_bias(bias)
