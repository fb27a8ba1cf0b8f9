"""One-row and multi-row products of GGUF's Q4_K kept in memory (attnlab format "q4_k"): the 4-bit kernel of
layers/int4_kernel.py with float32 scales.

Q4_K (llama.cpp's k-quants): super-blocks of 256 inputs, 144 bytes each: a float16 d and dmin, twelve bytes
holding eight 6-bit scales sc_j and eight 6-bit mins m_j, and 128 bytes of 4-bit codes; the weight of input i in
sub-block j (32 inputs) is  w = d sc_j q_i - dmin m_j.  A sub-block is thus a Q4_1 block with scale d sc_j and min
-dmin m_j, and the loader (layers/kquants.py) repacks each into this project's 4-bit layout (codes in Q4_1's
nibble order, which differs from Q4_K's order inside its 64-input chunks). The scale d sc_j is a float16 (11
significant bits) times an integer below 64 (6 bits): exact in float32 (24 bits), not in float16, and so is the
min. So the scales and mins stay float32 (8 bytes per 32 inputs: 24 bytes per 32 weights, 0.75 bytes a weight,
against Q4_K's 0.5625 and Q4_1's 0.625) and the tiles carry them as float32: 1024 bytes of codes, then 64 d and
64 m as float32, 1536 bytes per tile of 64 outputs x 32 inputs. Everything else (x's rounding into two int8
pieces, the exact integer block sums, the accumulation order, AVX-512 VNNI and AVX2 variants, rows_product) is the
4-bit kernel's, so its error is that kernel's: x's rounding (~2^-15 of max|x| per input), nothing from the weight.
"""

from __future__ import annotations

import functools

import torch

from attnlab.layers import int4_kernel, kernel_variants

BLOCK_N, BLOCK_K, MAX_K = int4_kernel.BLOCK_N, int4_kernel.BLOCK_K, int4_kernel.MAX_K
TILE_BYTES = 1536  # 1024 bytes of codes, 64 float32 d, 64 float32 m

SOURCES, ROWS_SOURCES = int4_kernel.sources("q4_k", TILE_BYTES, float32_scales=True)
_compiled, _compiled_rows = kernel_variants.tiled_builds("q4_k", SOURCES, ROWS_SOURCES, "Q4_K products")
available, unavailable_reason, gemv, rows_available, rows_product = kernel_variants.tiled_calls(globals())
runs_here = functools.partial(kernel_variants.runs_on_this_cpu, SOURCES)
pack, pack_layer = kernel_variants.min_packs("Q4_K", torch.float32, int4_kernel.pack)
