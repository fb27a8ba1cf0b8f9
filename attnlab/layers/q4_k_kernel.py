"""One-row and multi-row products of GGUF's Q4_K kept in memory (attnlab format "q4_k"): the 4-bit kernel of
layers/int4_kernel.py with Q4_K's own scales.

Q4_K (llama.cpp's k-quants): super-blocks of 256 inputs, 144 bytes each: a float16 d and dmin, twelve bytes
holding eight 6-bit scales sc_j and eight 6-bit mins m_j, and 128 bytes of 4-bit codes; the weight of input i in
sub-block j (32 inputs) is  w = d sc_j q_i - dmin m_j.  A sub-block is thus a Q4_1 block with scale d sc_j and min
-dmin m_j, and the loader (layers/kquants.py) repacks each into this project's 4-bit layout (codes in Q4_1's
nibble order, which differs from Q4_K's order inside its 64-input chunks) with float32 scale d sc_j and min
-dmin m_j as its buffers (exact: a float16 times an integer below 64 has at most 17 significant bits).

The tiles (64 outputs x 32 inputs, one sub-block of 64 rows) come in two layouts:
- compact (COMPACT_BYTES = 1184 a tile on average, the default): per super-block (8 tiles) a head of the 64 rows'
  float16 D and Dmin (256 bytes), then its 8 tiles of 1024 bytes of codes, the 64 rows' sc_j as bytes (S) and their
  m_j as bytes (M). 0.578 bytes a weight: the file's 0.5625 plus the head's share. The kernel forms S D and M Dmin
  in float32, the buffers' own numbers bit for bit, so the products equal the float32 layout's exactly.
  pack() recovers S, D, M and Dmin from the float32 buffers (factor): for each super-block of each row it tries
  D = the largest scale / c for c = 63, 62, ... 1 until every scale is D times a whole number below 256 exactly
  and D is a float16; a file's own d and sc always pass (c = the largest sc, most often 63 at the first try).
- float32 (TILE_BYTES = 1536): 1024 bytes of codes, then 64 d and 64 m as float32. Used where factor() finds no
  such D for some super-block (buffers that were not read from a GGUF file, or rows not a whole number of
  super-blocks): 0.75 bytes a weight, the same numbers.
Everything else (x's rounding into two int8 pieces, the exact integer block sums, the accumulation order, AVX-512
VNNI and AVX2 variants, rows_product) is the 4-bit kernel's, so its error is that kernel's: x's rounding (~2^-15 of
max|x| per input), nothing from the weight.

Why the compact layout: a decoding step reads every weight once, so its time follows the tiles' bytes; the float32
layout read 1.33x Q4_K's bytes, and llama.cpp reads the file's own.
"""

from __future__ import annotations

import functools

import torch

from attnlab.layers import int4_kernel, kernel_variants

BLOCK_N, BLOCK_K, MAX_K = int4_kernel.BLOCK_N, int4_kernel.BLOCK_K, int4_kernel.MAX_K
TILE_BYTES = 1536  # the float32 layout: 1024 bytes of codes, 64 float32 d, 64 float32 m
COMPACT_BYTES = 1184  # the compact layout, a tile on average: int4_kernel.K_GROUP (head and 8 tiles) / 8
SUB = 8  # sub-blocks (tiles along k) per super-block
LARGEST = 255  # S and M are bytes

SOURCES, ROWS_SOURCES = int4_kernel.sources("q4_k", TILE_BYTES, float32_scales=True)
COMPACT_SOURCES, COMPACT_ROWS_SOURCES = int4_kernel.sources("q4_kc", COMPACT_BYTES, k_scales=True)
_compiled, _compiled_rows = kernel_variants.tiled_builds("q4_k", SOURCES, ROWS_SOURCES, "Q4_K products")
_compiled_c, _compiled_rows_c = kernel_variants.tiled_builds("q4_kc", COMPACT_SOURCES, COMPACT_ROWS_SOURCES,
                                                             "Q4_K products")
_available_f, unavailable_reason, _gemv_f, _rows_available_f, _rows_product_f = kernel_variants.tiled_calls(globals())
_available_c, _reason_c, _gemv_c, _rows_available_c, _rows_product_c = kernel_variants.tiled_calls(
    {"_compiled": lambda: _compiled_c(), "_compiled_rows": lambda: _compiled_rows_c()})
runs_here = functools.partial(kernel_variants.runs_on_this_cpu, SOURCES)


def available() -> bool:
    """Do both layouts' one-row kernels run here (built, or loaded from attnlab's cache folder)?"""
    return _available_f() and _available_c()


def rows_available() -> bool:
    """Do both layouts' multi-row kernels run here?"""
    return _rows_available_f() and _rows_available_c()


def _compact(tiles: torch.Tensor) -> bool:
    return tiles.shape[-1] == COMPACT_BYTES


def compiled_for(tiles: torch.Tensor):
    """The one-row kernel (as _compiled() gives it) of the layout `tiles` is in (kernel_ops_native's table)."""
    return (_compiled_c if _compact(tiles) else _compiled)()


def gemv(x: torch.Tensor, tiles: torch.Tensor, bias: torch.Tensor | None, n: int,
         threads: int = 1) -> torch.Tensor | None:
    """kernel_variants.tile_gemv's product, through the kernel of the layout `tiles` is in."""
    return (_gemv_c if _compact(tiles) else _gemv_f)(x, tiles, bias, n, threads)


def rows_product(x: torch.Tensor, tiles: torch.Tensor, bias: torch.Tensor | None, n: int, threads: int = 1,
                 gated: bool = False) -> torch.Tensor | None:
    """kernel_variants.tile_rows' product, through the multi-row kernel of the layout `tiles` is in."""
    return (_rows_product_c if _compact(tiles) else _rows_product_f)(x, tiles, bias, n, threads, gated=gated)


def factor(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(rows, super-blocks, 8) float32 scales (all >= 0) or mins (all <= 0) -> (D (rows, super-blocks) float16,
    S (rows, super-blocks, 8) uint8) with D S == v exactly in float32; None where some super-block has no such
    pair (see the module docstring). A file's super-blocks pass at c = 63 (llama.cpp quantizes the largest sc to
    63) in one pass over all of them; the others are tried at c = 62 .. 1."""
    high, low = v.amax(-1), v.amin(-1)
    if bool(((high > 0) & (low < 0)).any()):
        return None  # mixed signs: no D with S >= 0
    top = torch.where(high > 0, high, low)  # the scales' largest, the mins' most negative; 0: an all-zero block
    d = torch.zeros_like(top)
    s = torch.zeros(v.shape, dtype=torch.float32)
    todo = torch.ones(top.shape, dtype=torch.bool)
    for c in range(63, 0, -1):
        rows = todo.nonzero(as_tuple=True) if c < 63 else None  # the first pass: every super-block, no gather
        part, vals = (top, v) if rows is None else (top[rows], v[rows])
        cand = part / c
        zero = part == 0
        whole = torch.where(zero[..., None], 0.0, (vals / torch.where(zero, 1.0, cand)[..., None]).round())
        ok = ((cand.half().float() == cand) & (whole <= LARGEST).all(-1)
              & (whole * cand[..., None] == vals).all(-1))
        if rows is None:
            d, s, todo = torch.where(ok, cand, 0.0), torch.where(ok[..., None], whole, 0.0), ~ok
        else:
            picked = tuple(r[ok] for r in rows)
            d[picked], s[picked], todo[picked] = cand[ok], whole[ok], False
        if not bool(todo.any()):
            return d.half(), s.to(torch.uint8)
    return None


def pack_compact(qweight: torch.Tensor, scale: torch.Tensor, min: torch.Tensor) -> torch.Tensor | None:
    """q4_k buffers -> (ceil(n/64), k/32, COMPACT_BYTES) uint8 compact tiles, or None where factor() fails or k is
    not a whole number of super-blocks."""
    n, kb = scale.shape
    if kb % SUB:
        return None
    nsb = kb // SUB
    scales = factor(scale.reshape(n, nsb, SUB))
    mins = factor(min.reshape(n, nsb, SUB))
    if scales is None or mins is None:
        return None
    codes = int4_kernel.pack_codes(qweight)  # (nb, kb, 1024): the 4-bit tiles' codes
    nb = codes.shape[0]

    def padded(t: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(nb * BLOCK_N, *t.shape[1:], dtype=t.dtype)
        out[:n] = t
        return out

    (d, s), (dmin, m) = scales, mins
    s = padded(s.reshape(n, kb)).reshape(nb, BLOCK_N, kb).transpose(1, 2)  # (nb, kb, 64 rows)
    m = padded(m.reshape(n, kb)).reshape(nb, BLOCK_N, kb).transpose(1, 2)
    tiles = torch.cat((codes, s, m), dim=-1)  # (nb, kb, 1152)
    # each super-block's head: D of its 64 outputs, then their Dmin, float16 (int4_kernel.K_HEAD bytes)
    heads = torch.stack((padded(d), padded(dmin)), dim=1).reshape(nb, BLOCK_N, 2, nsb).permute(0, 3, 2, 1)
    heads = heads.contiguous().view(torch.uint8).reshape(nb, nsb, int4_kernel.K_HEAD)
    group = torch.cat((heads, tiles.reshape(nb, nsb, SUB * int4_kernel.K_SUB_BYTES)), dim=-1)
    return group.reshape(nb, kb, COMPACT_BYTES).contiguous()


def _tiles(qweight: torch.Tensor, scale: torch.Tensor, min: torch.Tensor) -> tuple[torch.Tensor]:
    """(tiles,): the compact layout where factor() finds Q4_K's own scales in the buffers, else the float32 one."""
    compact = pack_compact(qweight, scale, min)
    return (compact,) if compact is not None else int4_kernel.pack(qweight, scale, min)


pack, pack_layer = kernel_variants.min_packs("Q4_K", torch.float32, _tiles)
