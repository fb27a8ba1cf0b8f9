"""One-row and multi-row products of GGUF's Q5_0 kept in its own bytes (attnlab format "q5_0"), AVX-512 VNNI.

Q5_0: blocks of 32 inputs, 22 bytes: a float16 d, 32 fifth bits (4 bytes) and 16 bytes of low nibbles (byte j:
input j low, input j + 16 high, Q4_1's order); w = d (q - 16), q in 0..31. llama-quantize's Q4_K_M writes it for
every matrix whose input width is not a multiple of 256 (where Q4_K cannot go): most of SmolLM2's (width 576).
The module keeps each block's 20 code bytes as they are (qweight (n, k/32 * 20): the 16 nibble bytes, then the 4
bytes of fifth bits) and d (float16): 0.6875 bytes a weight, the file's.

Tile (ob, b) = 64 outputs x 32 inputs: the 4-bit kernel's 1024 bytes of nibbles (layers/int4_kernel.py: line (e, g)
of 64 bytes for input octet e and output group g, byte 4 i + r holding inputs 8e + r (low nibble) and 8e + 4 + r
(high) of output 16 g + i), then 256 bytes of fifth bits, 8 bytes per line and half (bit 4 i + r of the first 8:
the low nibble's input, of the next 8: the high nibble's), then 64 float16 d: 1408 bytes per tile, the format's
0.6875 bytes a weight. Per line, `and 0x0F` / `srli 4` give the nibbles and vpmovdqu8 with the fifth bits as its
mask adds 16 where set (one instruction per 64 codes): u8 codes 0..31 for vpdpbusd against x's two int8 pieces. Per
block the exact integer 254 h + l - 16 X_b (X_b the block's sum of 254 hi + lo: the codes' +16 taken back out;
|h|, |l| <= 32 * 31 * 127) times d is added in float32, as Q8_0's kernel does: the result is x_rounded . w up to
float32 summation. No AVX2 variant: without AVX-512 VNNI the loader reads Q5_0 as Q8_0 rows (the same numbers),
which Q8_0's AVX2 kernel multiplies.
"""

from __future__ import annotations

import torch

from attnlab.layers import int4_kernel, kernel_source, kernel_variants

BLOCK_N = 64
BLOCK_K = 32
CODE_BYTES = 1280  # nibbles (1024) and fifth bits (256); then 64 float16 d
TILE_BYTES = 1408
MAX_K = 16384
ROWS_CHUNK = 16

_BLOCK_SUM = "xs[b] = 16 * total;  // 16 X_b: the codes' +16, taken back out exactly"
_CONSTANTS_512 = r"""
        const __m512i mask = _mm512_set1_epi8(0x0F), c16 = _mm512_set1_epi8(16);
        const __m512i c254 = _mm512_set1_epi32(254);"""
_TILE_512 = kernel_source.nibble_quads(r"""
                const uint64_t* mb = (const uint64_t*)(p + 1024 + e * 64);  // line g: mb[2 g] low, mb[2 g + 1] high""",
                                       r"""
#define ATTNLAB_CODES(u, v, w, g) \
                const __m512i u = _mm512_or_si512(_mm512_and_si512(w, mask), \
                                                  _mm512_maskz_mov_epi8((__mmask64)mb[2 * g], c16)); \
                const __m512i v = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(w, 4), mask), \
                                                  _mm512_maskz_mov_epi8((__mmask64)mb[2 * g + 1], c16));
                ATTNLAB_CODES(u0, v0, w0, 0) ATTNLAB_CODES(u1, v1, w1, 1)
                ATTNLAB_CODES(u2, v2, w2, 2) ATTNLAB_CODES(u3, v3, w3, 3)
#undef ATTNLAB_CODES""")
# Q5_0: w = d (q - 16): the exact integer 254 h + l - 16 X_b times d
_ACC_Q5_0 = r"""
            const __m512i xsb = _mm512_set1_epi32(xs[b]);
#define ACC(a, h, l, g) { \
                const __m512i t = _mm512_sub_epi32(_mm512_add_epi32(_mm512_mullo_epi32(h, c254), l), xsb); \
                const __m512 d = D_LOAD; \
                a = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(t), a); }
"""
# Q5_1, Q5_K: w = d q + m: d (254 h + l) + m X_b, X_b the block's sum of the rounded x (in float: exact, |.| < 2^21)
_ACC_MIN = r"""
            const __m512 xsb = _mm512_set1_ps(xs[b]);
#define ACC(a, h, l, g) { \
                const __m512i t = _mm512_add_epi32(_mm512_mullo_epi32(h, c254), l); \
                const __m512 d = D_LOAD; \
                const __m512 m = M_LOAD; \
                a = _mm512_fmadd_ps(m, xsb, _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(t), a)); }
"""
_LOADS = {False: ("_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(dm + 16 * g)))",
                  "_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(dm + 64 + 16 * g)))"),
          True: ("_mm512_loadu_ps((const float*)dm + 16 * g)", "_mm512_loadu_ps((const float*)dm + 64 + 16 * g)")}


def sources(name: str, tile_bytes: int, with_min: bool, float32_scales: bool) -> tuple[tuple, tuple]:
    """(SOURCES, ROWS_SOURCES) of a 5-bit tiled format (AVX-512 VNNI only): attnlab_<name>_gemv / _rows over tiles
    of nibbles (1024 bytes), fifth bits (256), then 64 d (and 64 m where `with_min`: Q5_1, Q5_K), float16 or
    float32 (`float32_scales`: Q5_K's d sc and dmin m, exact in float32)."""
    d_load, m_load = _LOADS[float32_scales]
    acc = (_ACC_MIN if with_min else _ACC_Q5_0).replace("D_LOAD", d_load).replace("M_LOAD", m_load)
    xs_type, block_sum = ("float", "xs[b] = (float)total;  // the block's sum of the rounded x, units of s2 (exact)") \
        if with_min else ("int32_t", _BLOCK_SUM)
    one = kernel_source.tile_gemv_512(f"attnlab_{name}_gemv", tile_bytes, CODE_BYTES, xs_type, block_sum,
                                      _CONSTANTS_512, _TILE_512 + acc)
    rows = kernel_source.tile_rows_512(f"attnlab_{name}_rows", tile_bytes, CODE_BYTES, xs_type, block_sum,
                                       _CONSTANTS_512, _TILE_512 + acc)
    one, rows = kernel_source.sized_all((one, rows), MAX_K=MAX_K, TILE_BYTES=tile_bytes, ROWS_CHUNK=ROWS_CHUNK)
    return ((kernel_variants.VNNI_F16C, one),), ((kernel_variants.VNNI_F16C, rows),)
SOURCES, ROWS_SOURCES = sources("q5_0", TILE_BYTES, with_min=False, float32_scales=False)
_compiled, _compiled_rows = kernel_variants.tiled_builds("q5_0", SOURCES, ROWS_SOURCES, "Q5_0 products")
available, unavailable_reason, gemv, rows_available, rows_product = kernel_variants.tiled_calls(globals())


def runs_here() -> bool:
    """Does this CPU have what the kernel needs (checked from its flags, nothing built)? The loader keeps Q5_0 as
    "q5_0" only then, else as Q8_0 rows."""
    return kernel_variants.pick(SOURCES)[0] is not None  # the CPU's flags and ATTNLAB_INT8_KERNEL


def pack(qweight: torch.Tensor, scale: torch.Tensor, min: torch.Tensor | None = None) -> tuple[torch.Tensor]:
    """q5_0 buffers ((n, k/32 * 20) uint8: per block 16 nibble bytes then 4 bytes of fifth bits; (n, k/32) float16
    d) -> (tiles,), (ceil(n/64), k/32, 1408) uint8; see the module docstring. With `min` (Q5_1: float16, Q5_K:
    float32 scale and min) the tiles end with 64 d and 64 m of that type (1536 or 1792 bytes)."""
    n = qweight.shape[0]
    kb = qweight.shape[1] // 20
    k = kb * BLOCK_K
    if k > MAX_K:
        raise ValueError(f"the Q5_0 kernel takes at most {MAX_K} inputs per row, got {k}")
    nb = -(-n // BLOCK_N)
    blocks = qweight.reshape(n, kb, 20)
    nibbles = blocks[..., :16].reshape(n, k // 2)
    four, = int4_kernel.pack(nibbles, scale, torch.zeros_like(scale) if min is None else min)  # codes, d, m
    word = blocks[..., 16:].long()
    word = word[..., 0] | (word[..., 1] << 8) | (word[..., 2] << 16) | (word[..., 3] << 24)  # (n, kb)
    bits = torch.zeros(nb * BLOCK_N, kb, 32, dtype=torch.uint8)
    bits[:n] = ((word[..., None] >> torch.arange(32)) & 1).to(torch.uint8)  # input j's fifth bit
    # (ob, g, i, kb, e, half, r): output 64 ob + 16 g + i, input 8 e + 4 half + r -> (ob, kb, e, g, half, i, r)
    bits = bits.reshape(nb, 4, 16, kb, 4, 2, 4).permute(0, 3, 4, 1, 5, 2, 6).reshape(nb, kb, 4 * 4 * 2, 8, 8)
    masks = (bits << torch.arange(8, dtype=torch.uint8)).sum(dim=-1, dtype=torch.uint8)  # bit 4 i + r, little-endian
    scales = four[..., 1024:] if min is not None else four[..., 1024:1152]  # d (and m)
    return (torch.cat((four[..., :1024], masks.reshape(nb, kb, 256), scales), dim=-1).contiguous(),)


def pack_layer(buffers: dict[str, torch.Tensor], bias: torch.Tensor | None) -> tuple:
    """A QuantizedLinear's q5_0 buffers and bias -> gemv's arguments between x and n."""
    tiles, = pack(buffers["qweight"], buffers["scale"])
    return tiles, kernel_variants.layer_bias(bias)
