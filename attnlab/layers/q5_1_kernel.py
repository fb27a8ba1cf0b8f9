"""One-row and multi-row products of GGUF's Q5_1 kept in memory (attnlab format "q5_1"), AVX-512 VNNI.

Q5_1: w = d q + m (q in 0..31, float16 d and m per 32 inputs; 24 bytes per 32 weights, the file's).
The kernel is Q5_0's (layers/q5_0_kernel.py: nibble tiles, the fifth bits as vpmovdqu8 masks, codes 0..31 against
x's two int8 pieces in vpdpbusd) with a minimum: per block the exact integer 254 h + l times d, plus m times the
block's sum of the rounded x, as the 4-bit kernel adds Q4_1's minimum. Tiles: 1024 bytes of nibbles, 256 of fifth
bits, then 64 d and 64 m (float16): 1536 bytes. Without AVX-512 VNNI the loader expands Q5_1 to float32.
"""

from __future__ import annotations

import functools

import torch

from attnlab.layers import kernel_variants, q5_0_kernel

BLOCK_N, BLOCK_K, MAX_K = q5_0_kernel.BLOCK_N, q5_0_kernel.BLOCK_K, q5_0_kernel.MAX_K
TILE_BYTES = 1536

SOURCES, ROWS_SOURCES = q5_0_kernel.sources("q5_1", TILE_BYTES, with_min=True, float32_scales=False)
_compiled, _compiled_rows = kernel_variants.tiled_builds("q5_1", SOURCES, ROWS_SOURCES, "Q5_1 products")
available, unavailable_reason, gemv, rows_available, rows_product = kernel_variants.tiled_calls(globals())
runs_here = functools.partial(kernel_variants.runs_on_this_cpu, SOURCES)
pack, pack_layer = kernel_variants.min_packs("Q5_1", torch.float16, q5_0_kernel.pack)
