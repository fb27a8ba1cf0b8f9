"""One-row and multi-row products of GGUF's Q6_K kept in memory (attnlab format "q6_k"), AVX-512 VNNI.

Q6_K (llama.cpp's k-quants; what llama-quantize's Q4_K_M writes for the token embedding / output head and some
attn_v / ffn_down matrices): super-blocks of 256 inputs, 210 bytes each: 6-bit codes q (low 4 bits in 128 bytes, high
2 bits in 64), sixteen signed 8-bit scales sc_j (one per 16 inputs) and a float16 d; w = d sc_j (q - 32). The loader
(layers/kquants.py) keeps q - 32 as int8 (-32..31) and d sc_j as float32 per 16 inputs: a float16 (11 significant
bits) times an integer of magnitude below 128 (7 bits) is exact in float32 and not in float16, and so is w = (d sc_j)
(q - 32) (|q - 32| <= 32: 5 significant bits at most, 23 in all). 1.25 bytes a weight against Q6_K's 0.82.

The kernel is Q8_0's (layers/q8_0_kernel.py) with two scales per tile row: tile (ob, b) = 64 outputs x 32 inputs,
2048 bytes of codes stored as q = (q - 32) + 32 in 0..63 (unsigned, vpdpbusd's unsigned side) in Q8_0's line order
(line (e, g): input quad e, output group g), then 64 float32 scales of inputs 0..15 and 64 of inputs 16..31: 2560
bytes. Per tile the quads 0..3 and 4..7 are accumulated apart (int32, at most 16 * 63 * 127 = 128016 per piece), and
each half's exact integer 254 h + l - 32 X_half (X_half = the half's sum of 254 hi + lo, once per call) is scaled by
its own d sc and added in float32. x is rounded as every tiled kernel rounds it (two int8 pieces, ~15 bits), so the
result is x_rounded . w up to float32 summation, as Q8_0's. No AVX2 variant: without AVX-512 VNNI the loader
expands Q6_K to float32 (gguf.kept_quantized).
"""

from __future__ import annotations

import torch

from attnlab.layers import kernel_source, kernel_variants

BLOCK_N = 64  # outputs per tile
BLOCK_K = 32  # inputs per tile (two Q6_K scale blocks)
CODE_BYTES = 2048  # a tile's codes (64 outputs x 32 inputs, a byte each), then 2 x 64 float32 scales
TILE_BYTES = 2560
MAX_K = 16384  # the kernel rounds x into two stack arrays of this many bytes
ROWS_CHUNK = 16  # rows_product: rows sharing each tile while it is in L1

# xs[b] (int64) holds two int32: 32 X of inputs 0..15 of block b, and of inputs 16..31 (the codes' +32 taken back out)
_BLOCK_SUM = r"""int32_t half = 0;
        for (int j = 0; j < 16; ++j) half += 254 * (int32_t)xh[32 * b + j] + (int32_t)xl[32 * b + j];
        int32_t* pair = (int32_t*)(xs + b);
        pair[0] = 32 * half;
        pair[1] = 32 * (total - half);"""
_CONSTANTS_512 = r"""
        const __m512i c254 = _mm512_set1_epi32(254);"""
_TILE_512 = kernel_source.byte_quads("0", "0 + 4", 4) + r"""
            const int32_t* pair = (const int32_t*)(xs + b);
            const __m512i xs0 = _mm512_set1_epi32(pair[0]), xs1 = _mm512_set1_epi32(pair[1]);
#define ATTNLAB_HALF(a, h, l, g, s, xsh) { \
                const __m512i t = _mm512_sub_epi32(_mm512_add_epi32(_mm512_mullo_epi32(h, c254), l), xsh); \
                const __m512 d = _mm512_loadu_ps((const float*)dm + 64 * s + 16 * g); \
                a = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(t), a); }
            ATTNLAB_HALF(a0, h0, l0, 0, 0, xs0) ATTNLAB_HALF(a1, h1, l1, 1, 0, xs0)
            ATTNLAB_HALF(a2, h2, l2, 2, 0, xs0) ATTNLAB_HALF(a3, h3, l3, 3, 0, xs0)
            h0 = z; h1 = z; h2 = z; h3 = z; l0 = z; l1 = z; l2 = z; l3 = z;""" \
    + kernel_source.byte_quads("4", "4 + 4", 4) + r"""
#define ACC(a, h, l, g) ATTNLAB_HALF(a, h, l, g, 1, xs1)
"""
_SOURCE = kernel_source.tile_gemv_512("attnlab_q6_k_gemv", TILE_BYTES, CODE_BYTES, "int64_t", _BLOCK_SUM,
                                      _CONSTANTS_512, _TILE_512)
_SOURCE_ROWS = kernel_source.tile_rows_512("attnlab_q6_k_rows", TILE_BYTES, CODE_BYTES, "int64_t", _BLOCK_SUM,
                                           _CONSTANTS_512, _TILE_512)
_SOURCE, _SOURCE_ROWS = kernel_source.sized_all((_SOURCE, _SOURCE_ROWS), MAX_K=MAX_K, TILE_BYTES=TILE_BYTES,
                                                ROWS_CHUNK=ROWS_CHUNK)
SOURCES = ((kernel_variants.VNNI_F16C, _SOURCE),)
ROWS_SOURCES = ((kernel_variants.VNNI_F16C, _SOURCE_ROWS),)
_compiled, _compiled_rows = kernel_variants.tiled_builds("q6_k", SOURCES, ROWS_SOURCES, "Q6_K products")
available, unavailable_reason, gemv, rows_available, rows_product = kernel_variants.tiled_calls(globals())


def runs_here() -> bool:
    """Does this CPU have what the kernel needs (its flags and ATTNLAB_INT8_KERNEL; nothing built)? The loader keeps
    Q6_K only then (elsewhere it expands it to float32)."""
    return kernel_variants.pick(SOURCES)[0] is not None


def pack(qweight: torch.Tensor, scale: torch.Tensor) -> tuple[torch.Tensor]:
    """q6_k buffers ((n, k) int8 codes q - 32, (n, k/16) float32 d sc) -> (tiles,), a (ceil(n/64), k/32, 2560)
    uint8 tensor (padded outputs have scale 0); see the module docstring."""
    n, k = qweight.shape
    if k % BLOCK_K:
        raise ValueError(f"the Q6_K kernel needs k divisible by {BLOCK_K}, got {k}")
    if k > MAX_K:
        raise ValueError(f"the Q6_K kernel takes at most {MAX_K} inputs per row, got {k}")
    if scale.dtype != torch.float32 or scale.shape != (n, k // 16):
        raise ValueError(f"the Q6_K kernel takes ({n}, {k // 16}) float32 scales, got {tuple(scale.shape)} "
                         f"{scale.dtype}")
    nb, kb = -(-n // BLOCK_N), k // BLOCK_K
    tiles = torch.empty(nb, kb, TILE_BYTES, dtype=torch.uint8)
    step = 64  # output blocks per pass: the temporaries stay a few MB
    for b0 in range(0, nb, step):
        b1 = min(nb, b0 + step)
        rows = slice(b0 * BLOCK_N, min(n, b1 * BLOCK_N))
        codes = torch.zeros((b1 - b0) * BLOCK_N, k, dtype=torch.uint8)
        codes[: rows.stop - rows.start] = (qweight[rows] + 32).view(torch.uint8)  # q in 0..63
        # (ob, g, i, kb, e, r): output = 64 ob + 16 g + i, input = 32 kb + 4 e + r
        tiles[b0:b1, :, :CODE_BYTES] = codes.reshape(b1 - b0, 4, 16, kb, 8, 4).permute(0, 3, 4, 1, 2, 5).reshape(
            b1 - b0, kb, CODE_BYTES)
        d = torch.zeros((b1 - b0) * BLOCK_N, kb, 2, dtype=torch.float32)
        d[: rows.stop - rows.start] = scale[rows].reshape(-1, kb, 2)
        # (ob, i, kb, half) -> (ob, kb, half, i)
        tiles[b0:b1, :, CODE_BYTES:] = d.reshape(b1 - b0, 64, kb, 2).permute(0, 2, 3, 1).contiguous().view(
            torch.uint8).reshape(b1 - b0, kb, 512)
    return (tiles,)


def pack_layer(buffers: dict[str, torch.Tensor], bias: torch.Tensor | None) -> tuple:
    """A QuantizedLinear's q6_k buffers and bias -> gemv's arguments between x and n."""
    tiles, = pack(buffers["qweight"], buffers["scale"])
    return tiles, kernel_variants.layer_bias(bias)
