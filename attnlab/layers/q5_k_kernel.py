"""One-row and multi-row products of GGUF's Q5_K kept in memory (attnlab format "q5_k"), AVX-512 VNNI.

Q5_K: w = d sc q - dmin m per 32-input sub-block of a 256-input super-block (6-bit sc and m, float16 d
and dmin; 176 bytes per 256 weights); kept as scale d sc and min -dmin m in float32 (exact: a float16 times a
6-bit integer), 28 bytes per 32 weights against the file's 22.
The kernel is Q5_0's (layers/q5_0_kernel.py: nibble tiles, the fifth bits as vpmovdqu8 masks, codes 0..31 against
x's two int8 pieces in vpdpbusd) with a minimum: per block the exact integer 254 h + l times d, plus m times the
block's sum of the rounded x, as the 4-bit kernel adds Q4_1's minimum. Tiles: 1024 bytes of nibbles, 256 of fifth
bits, then 64 d and 64 m (float32): 1792 bytes. Without AVX-512 VNNI the loader expands Q5_K to float32.
"""

from __future__ import annotations

import functools

import torch

from attnlab.layers import kernel_variants, q5_0_kernel

BLOCK_N, BLOCK_K, MAX_K = q5_0_kernel.BLOCK_N, q5_0_kernel.BLOCK_K, q5_0_kernel.MAX_K
TILE_BYTES = 1792

SOURCES, ROWS_SOURCES = q5_0_kernel.sources("q5_k", TILE_BYTES, with_min=True, float32_scales=True)
_compiled, _compiled_rows = kernel_variants.tiled_builds("q5_k", SOURCES, ROWS_SOURCES, "Q5_K products")
available, unavailable_reason, gemv, rows_available, rows_product = kernel_variants.tiled_calls(globals())
runs_here = functools.partial(kernel_variants.runs_on_this_cpu, SOURCES)
pack, pack_layer = kernel_variants.min_packs("Q5_K", torch.float32, q5_0_kernel.pack)
