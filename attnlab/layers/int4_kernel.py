"""One-row 4-bit product (attnlab's "int4" = GGUF Q4_1, and Q4_0 stored as Q4_1) on x86 CPUs: an AVX512-VNNI
variant and an AVX2 one (+ FMA, F16C), the same packed tiles and the same numbers; and a multi-row product of each.

Why: the same reason as layers/int8_kernel.py, at half the bytes. The chunked dequantize-then-multiply path of
layers/quantized.py reads the 4-bit codes once but unpacks them in eager torch: 3x SLOWER than float32 per one-row
product on this project's Xeon. The VNNI kernel: 0.99-1.05x of the weight-reading floor, 5.6-6.5x faster than
float32 and 1.5x faster than the int8 kernel (bench/RESULTS.md), errors like the int8 kernel's.

Why an AVX2 variant: CPUs without AVX-512 VNNI (AMD Zen 2-3, Intel before Ice Lake server) otherwise took the
chunked path, and decoding SmolLM2-135M's Q4_1 GGUF ran at 5.6 tokens/s on an AMD EPYC Zen 3 where llama.cpp does
60-85. vpmaddubsw (u8 x s8 -> s16 pair sums, saturating) replaces vpdpbusd: the codes are 0..15 and the pieces
within +-127, so a pair is at most 2 * 15 * 127 = 3810 (never saturates), and each 16-bit lane sums the 8 pairs
of one block (4 octets x 2 nibbles: <= 30480 < 32767, exact), widened once per block by vpmaddwd to 254 H + L
in int32 (exact in float too: <= 255 * 32 * 15 * 127 < 2^24). x is rounded exactly as the VNNI source does, so
both variants compute x_rounded . w from the same exact per-block integer sums, then accumulate the blocks in
float32 in the same order (not checked bit for bit against each other: no CPU here has both).
kernel_variants.build picks VNNI where the CPU has it, else AVX2; ATTNLAB_INT8_KERNEL=avx2 forces AVX2, =fbgemm
neither (kernel_variants.CHOSEN["int4"] says which loaded).
Measured on the AMD EPYC Zen 3 (KVM, 2 cores shared, load average 8-9; thread CPU clock, interleaved rounds;
SmolLM2's own Q4_1 matrices, all 30 blocks cycled so they come from memory): 3.7-5.2x faster than float32
F.linear on the dequantized weight, 1.2-1.7x of the weight-reading floor (torch.sum over the same tile bytes, same
rounds), 25-30x faster than the chunked path; ~16 us for 960 x 576 with the tiles in L2 (~22 GB/s of tiles:
compute is about twice as fast as this machine's memory). Two threads could not be judged at that load (the
helper thread waits for a core; wall time 1.0x at 3072 x 576, worse for the small matrices).

rows_product (AVX-512 VNNI or AVX2, the one-row kernel's choice): the same tiles for several rows (prefill), each
row rounded with its own scale and given exactly the one-row kernel's bits; each tile is read once and used for up
to ROWS_CHUNK rows while in L1. 32 rows of SmolLM2's matrices (AVX2, AMD Zen 3): 3.5-10x faster than dequantizing
the weight and F.linear. The VNNI variant (kernel_source.tile_rows_512, around the one-row tile step, as Q8_0's)
is 2.9-3.0x faster than the AVX2 one at 32 rows of 576 x 576, 1536 x 576 and 576 x 1536 (AMD EPYC Zen 5, one
thread, process CPU, interleaved, 2026-11-28).

y[o] = sum_b ( d[o,b] * sum_{j in b} x_j q[o,j]  +  m[o,b] * sum_{j in b} x_j ) + bias[o],  q in [0, 15].

Layout (pack(), once): one byte stream of tiles, tile (ob, b) = 64 outputs x 32 inputs (one Q4_1 block each):
  1024 bytes of codes, then 64 float16 d, then 64 float16 m  -> 1280 bytes per tile (= Q4_1's 20 B / 32 weights,
  so the kernel reads exactly the bytes of the format, in one sequential stream the prefetcher follows).
  Codes: 16 lines of 64 bytes, line (e, g) for input octet e (inputs 8e..8e+7 of the block) and output group g
  (outputs 16g..16g+15); byte 4 i + r of that line holds q[16g+i, 8e+r] in its low nibble and q[16g+i, 8e+4+r]
  in its high nibble. So `and 0x0F` / `srli 4` of one line give two vpdpbusd u8 operands (16 outputs x 4 inputs).
Per call: x is rounded to two int8 pieces, hi = round(x/s1), lo = round((x - hi s1)/s2), s1 = max|x|/127,
s2 = s1/254 (as the int8 kernel, ~15 bits); codes (u8, 0..15) x pieces (s8) need no offset. Per tile (VNNI): 8
int32 accumulators (4 output groups x hi/lo; at most 32*127*15 = 60960 each), combined exactly in float as
254 h + l; (AVX2) per output group, 4 s16 accumulators (2 registers of 8 outputs x hi/lo) over the 4 octets, one
octet at a time, x pieces broadcast once per block into memory operands (16 ymm registers do not hold them and
the accumulators). Then acc += d * (254 h + l) + m * X_b; y = s2 acc + bias. Output blocks of 64 go to
kernel_build.POOL's threads.
X_b = sum_{j in b} (254 hi_j + lo_j), the block sum of the ROUNDED x (exact integer, once per call), not of x:
then the product is exactly x_rounded . w (w = d q + m), whose error sum_j e_j w_j matches the int8 kernel's;
with the exact float sum of x the error was sum_j e_j d q_j, and d q = w - m is not centred (1.2-1.7x larger
max error measured with outlier rows).
"""

from __future__ import annotations

import torch

from attnlab.layers import kernel_build, kernel_source, kernel_variants

BLOCK_N = 64  # outputs per tile
BLOCK_K = 32  # inputs per tile (one Q4_1 block)
CODE_BYTES = 1024  # a tile's codes (64 outputs x 32 inputs, 4 bits each), then its 64 fp16 d and 64 fp16 m
TILE_BYTES = 1280
MAX_K = 16384  # the kernel rounds x into two stack arrays of this many bytes

_BLOCK_SUM = "xs[b] = (float)total;  // block sum of the ROUNDED x, in units of s2 (exact)"
_CONSTANTS_512 = r"""
        const __m512i mask = _mm512_set1_epi8(0x0F);
        const __m512 c254 = _mm512_set1_ps(254.f);"""
# a line's low nibbles (inputs 8e..8e+3) as u0..u3 and its high nibbles (8e+4..8e+7) as v0..v3, unsigned bytes
_NIBBLES_512 = "".join(f"\n                const __m512i u{g} = _mm512_and_si512(w{g}, mask), "
                       f"v{g} = _mm512_and_si512(_mm512_srli_epi16(w{g}, 4), mask);" for g in range(4))
_TILE_512 = kernel_source.nibble_quads("", _NIBBLES_512) + r"""            const __m512 xsb = _mm512_set1_ps(xs[b]);
#define ACC(a, h, l, g) { \
                const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(h), c254, _mm512_cvtepi32_ps(l)); \
                const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(dm + 16 * g))); \
                const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(dm + 64 + 16 * g))); \
                a = _mm512_fmadd_ps(m, xsb, _mm512_fmadd_ps(d, t, a)); }
"""

# the scales' loads: float16 d and m (Q4_1's, converted by vcvtph2ps) or float32 (layers/q4_k_kernel.py)
_F16_LOADS = ("_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(dm + 16 * g)))",
              "_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(dm + 64 + 16 * g)))",
              "_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(dm + 8 * (j))))",
              "_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(dm + 64 + 8 * (j))))")
_F32_LOADS = ("_mm512_loadu_ps((const float*)dm + 16 * g)", "_mm512_loadu_ps((const float*)dm + 64 + 16 * g)",
              "_mm256_loadu_ps((const float*)dm + 8 * (j))", "_mm256_loadu_ps((const float*)dm + 64 + 8 * (j))")
# Q4_0 (w = d (q - 8)): no m in the tile, m = -8 d made from d (exact in float32; layers/q4_0_kernel.py)
_MINUS_8D_LOADS = (_F16_LOADS[0], "_mm512_mul_ps(d, _mm512_set1_ps(-8.f))",
                   _F16_LOADS[2], "_mm256_mul_ps(d, _mm256_set1_ps(-8.f))")
# Q4_K's own scales (layers/q4_k_kernel.py's compact layout): a sub-block's scale is the byte S (its 6-bit sc, at
# dm) times its super-block's float16 D, and its min the byte M (at dm + 64) times the float16 Dmin. A super-block's
# 8 tiles (1152 bytes each: codes, S, M) follow its head, K_HEAD bytes: D of its 64 outputs, then Dmin (float16).
# So tile b starts at K_TILE(b) (replacing b * TILE_BYTES: 1184 bytes a tile on average), and the head is read
# just before the tiles it scales, in the stream's order. VNNI: sd[g] / sm[g] (outputs 16 g .. 16 g + 15) are
# loaded at the super-block's first tile; AVX2: read through sb, the super-block's head. Each product S D is exact
# in float32 (8 bits times 11), so these tiles give the float32 tiles' numbers bit for bit.
K_HEAD = 256  # 64 float16 D, 64 float16 Dmin
K_SUB_BYTES = 1152  # a compact tile: 1024 bytes of codes, 64 S, 64 M
K_GROUP = K_HEAD + 8 * K_SUB_BYTES  # a super-block: its head and 8 tiles (9472 bytes, 148 cache lines)
K_TILE = f"((b) >> 3) * {K_GROUP} + {K_HEAD} + ((b) & 7) * {K_SUB_BYTES}"  # tile b's offset in its output block
_K_LOADS = ("_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)"
            "((const uint8_t*)dm + 16 * g)))), sd[g])",
            "_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)"
            "((const uint8_t*)dm + 64 + 16 * g)))), sm[g])",
            "_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)"
            "((const uint8_t*)dm + 8 * (j))))), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(sb + 16 * (j)))))",
            "_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)"
            "((const uint8_t*)dm + 64 + 8 * (j))))), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)"
            "(sb + 128 + 16 * (j)))))")
_K_CONSTANTS_512 = """
        __m512 sd[4], sm[4];  // the super-block's D and Dmin of output groups 0..3 (loaded at its first tile)"""
_K_HOIST_512 = f"""
            if ((b & 7) == 0) {{  // the super-block's head, just before p
                for (int g = 0; g < 4; ++g) {{
                    sd[g] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(p - {K_HEAD} + 32 * g)));
                    sm[g] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(p - {K_HEAD} + 128 + 32 * g)));
                }}
            }}"""


def sources(name: str, tile_bytes: int, float32_scales: bool = False, minus_8d: bool = False,
            k_scales: bool = False) -> tuple[tuple, tuple]:
    """(SOURCES, ROWS_SOURCES) of a 4-bit tiled format: the one-row kernels attnlab_<name>_gemv and multi-row
    kernels attnlab_<name>_rows (AVX-512 VNNI, then AVX2), over tiles of `tile_bytes`: 1024 bytes of codes, then 64
    d and 64 m, float16 (1280: Q4_1's layout, this module) or float32 (`float32_scales`, 1536: Q4_K's sub-block
    scales d * sc and mins dmin * m, exact in float32 and not in float16; layers/q4_k_kernel.py); or, `minus_8d`,
    64 float16 d alone (1152: Q4_0's bytes, layers/q4_0_kernel.py), m = -8 d made in the kernel; or, `k_scales`,
    Q4_K's own scales (tile_bytes 1184, the average: 1152-byte tiles of codes, S and M after each super-block's
    head of float16 D and Dmin, K_TILE; 0.578 bytes a weight against Q4_K's 0.5625 and the float32 tiles' 0.75)."""
    loads = _MINUS_8D_LOADS if minus_8d else _F32_LOADS if float32_scales else _K_LOADS if k_scales else _F16_LOADS

    def scaled(text: str) -> str:
        for old, new in zip(_F16_LOADS, loads, strict=True):
            text = text.replace(old, new)
        return text

    tile_512 = (_K_HOIST_512 if k_scales else "") + scaled(_TILE_512)
    constants = _CONSTANTS_512 + (_K_CONSTANTS_512 if k_scales else "")
    one = kernel_source.tile_gemv_512(f"attnlab_{name}_gemv", tile_bytes, CODE_BYTES, "float", _BLOCK_SUM,
                                      constants, tile_512)
    rows = kernel_source.tile_rows_512(f"attnlab_{name}_rows", tile_bytes, CODE_BYTES, "float", _BLOCK_SUM,
                                       constants, tile_512)
    if k_scales:  # tile b after its super-block's head (K_TILE), not at b * tile_bytes
        one, rows = (t.replace(f"wt + b * {tile_bytes};", f"wt + {K_TILE};") for t in (one, rows))
    parts = scaled(_avx2_parts(tile_bytes))
    one_avx2 = kernel_build.POOL + parts + kernel_source.tile_gemv_head(f"attnlab_{name}_gemv") + _GEMV_AVX2
    rows_avx2 = kernel_build.POOL + parts + _ROWS_AVX2.replace("attnlab_int4_rows", f"attnlab_{name}_rows")
    if k_scales:  # the AVX2 tile step also takes sb, its super-block's head (where D and Dmin are)
        one_avx2, rows_avx2 = (t.replace("attnlab_tile(const uint8_t* __restrict__ p,",
                                         "attnlab_tile(const uint8_t* __restrict__ p, const uint8_t* __restrict__ sb,")
                               .replace("attnlab_tile(wt + b * TILE_BYTES,",
                                        f"attnlab_tile(wt + {K_TILE}, wt + (b >> 3) * {K_GROUP},")
                               .replace("attnlab_prefetch(wt + b * TILE_BYTES)", f"attnlab_prefetch(wt + {K_TILE})")
                               for t in (one_avx2, rows_avx2))
    one, one_avx2, rows, rows_avx2 = kernel_source.sized_all(
        (one, one_avx2, rows, rows_avx2), MAX_K=MAX_K, TILE_BYTES=tile_bytes, ROWS_CHUNK=ROWS_CHUNK)
    return (((kernel_variants.VNNI_F16C, one), (kernel_variants.AVX2, one_avx2)),  # fastest first
            ((kernel_variants.VNNI_F16C, rows), (kernel_variants.AVX2, rows_avx2)))


def _avx2_parts(tile_bytes: int) -> str:
    """The AVX2 variant's helpers (rounding, prefetch, tile step, output) for tiles of `tile_bytes`."""
    return kernel_source.PRELUDE_AVX2 + r"""
// 8 int32 lanes (values within +-127) -> 8 int8 bytes at dst: saturating packs are exact here
ATTNLAB_INLINE void attnlab_store8(int8_t* dst, __m256i a) {
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    _mm_storel_epi64((__m128i*)dst, _mm_packs_epi16(w, w));
}
// One row x (kb * 32 floats) -> pieces xh, xl (int8), block sums xs of the rounded x (units of s2) and s2; 1 when x
// holds NaN or +-inf (nothing else written). The same rounding as the AVX-512 source, operation for operation.
ATTNLAB_INLINE int attnlab_round(const float* __restrict__ x, int64_t kb, int8_t* __restrict__ xh,
                                 int8_t* __restrict__ xl, float* __restrict__ xs, float* s2out) {
    const int64_t k = kb * 32;""" + kernel_source.scan_avx2(masked=False) + kernel_source.round_blocks(
    256,     "attnlab_store8(xh + i, hi); attnlab_store8(xl + i, li);",
    _BLOCK_SUM) + r"""
    *s2out = s2;
    return 0;
}
ATTNLAB_INLINE void attnlab_prefetch(const uint8_t* p) {  // the tile two ahead of p""" + kernel_source.prefetch_tile(
    tile_bytes) + r"""}
// acc[j] += the tile p's contribution to output j (0..63) for one row's pieces of this block (xhb, xlb: 32 bytes)
// and its rounded block sum xsb, in units of s2
ATTNLAB_INLINE void attnlab_tile(const uint8_t* __restrict__ p, const int8_t* xhb, const int8_t* xlb, float xsb_,
                                 float* __restrict__ acc) {
    const __m256i mask = _mm256_set1_epi8(0x0F);
    const __m256i w254 = _mm256_set1_epi16(254), one = _mm256_set1_epi16(1);
    // the block's x pieces broadcast once (4 bytes to 32) and kept in memory: vpmaddubsw reads them as operands
    // in each of the 4 groups (in registers they would take 16 of the 16 ymm registers)
    alignas(32) __m256i xv[16];  // octet e: hi of inputs 8e..8e+3, hi of 8e+4..8e+7, then lo of both
    #pragma GCC unroll 4
    for (int e = 0; e < 4; ++e) {
        xv[4 * e] = _mm256_set1_epi32(*(const int32_t*)(xhb + 8 * e));
        xv[4 * e + 1] = _mm256_set1_epi32(*(const int32_t*)(xhb + 8 * e + 4));
        xv[4 * e + 2] = _mm256_set1_epi32(*(const int32_t*)(xlb + 8 * e));
        xv[4 * e + 3] = _mm256_set1_epi32(*(const int32_t*)(xlb + 8 * e + 4));
    }
    const uint16_t* dm = (const uint16_t*)(p + 1024);
    const __m256 xsb = _mm256_set1_ps(xsb_);
    // group g: outputs 16 g .. 16 g + 15, two registers (line bytes 0-31: outputs 16 g + 0..7, 32-63: + 8..15)
    for (int g = 0; g < 4; ++g) {
        // an opaque pointer: the compiler would otherwise hoist the 16 loads out of this loop and spill them
        const __m256i* xg = xv;
        __asm__("" : "+r"(xg) : : "memory");
        // s16 sums of code x piece. Each vpmaddubsw lane is q0 x0 + q1 x1 with q in 0..15, |x| <= 127:
        // |.| <= 2 * 15 * 127 = 3810, no saturation. A lane adds 8 of them (4 octets x 2 nibbles):
        // |.| <= 8 * 3810 = 30480 < 32767, so the s16 sums are exact.
        __m256i h0, h1, l0, l1;
        #pragma GCC unroll 4
        for (int e = 0; e < 4; ++e) {
            const uint8_t* q = p + e * 256 + g * 64;
            const __m256i xa = _mm256_load_si256(xg + 4 * e), xb = _mm256_load_si256(xg + 4 * e + 1);
            const __m256i ya = _mm256_load_si256(xg + 4 * e + 2), yb = _mm256_load_si256(xg + 4 * e + 3);
            const __m256i w0 = _mm256_loadu_si256((const __m256i*)q);
            const __m256i w1 = _mm256_loadu_si256((const __m256i*)(q + 32));
            const __m256i u0 = _mm256_and_si256(w0, mask);
            const __m256i v0 = _mm256_and_si256(_mm256_srli_epi16(w0, 4), mask);
            const __m256i u1 = _mm256_and_si256(w1, mask);
            const __m256i v1 = _mm256_and_si256(_mm256_srli_epi16(w1, 4), mask);
            const __m256i ph0 = _mm256_add_epi16(_mm256_maddubs_epi16(u0, xa), _mm256_maddubs_epi16(v0, xb));
            const __m256i ph1 = _mm256_add_epi16(_mm256_maddubs_epi16(u1, xa), _mm256_maddubs_epi16(v1, xb));
            const __m256i pl0 = _mm256_add_epi16(_mm256_maddubs_epi16(u0, ya), _mm256_maddubs_epi16(v0, yb));
            const __m256i pl1 = _mm256_add_epi16(_mm256_maddubs_epi16(u1, ya), _mm256_maddubs_epi16(v1, yb));
            if (e == 0) { h0 = ph0; h1 = ph1; l0 = pl0; l1 = pl1; }
            else {
                h0 = _mm256_add_epi16(h0, ph0); h1 = _mm256_add_epi16(h1, ph1);
                l0 = _mm256_add_epi16(l0, pl0); l1 = _mm256_add_epi16(l1, pl1);
            }
            // one octet at a time: left free, the compiler forms all 32 products first and spills them
            __asm__("" : "+x"(h0), "+x"(h1), "+x"(l0), "+x"(l1));
        }
        // per output: 254 H + L over the block's 32 inputs, exact in int32 and in float (|.| <= 255 * 32 * 15 *
        // 127 = 15544800 < 2^24): what the AVX-512 source forms in float as 254 h + l
#define ACC(j, h, l) { \
        const __m256i t = _mm256_add_epi32(_mm256_madd_epi16(h, w254), _mm256_madd_epi16(l, one)); \
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(dm + 8 * (j)))); \
        const __m256 m = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(dm + 64 + 8 * (j)))); \
        const __m256 a = _mm256_load_ps(acc + 8 * (j)); \
        _mm256_store_ps(acc + 8 * (j), _mm256_fmadd_ps(m, xsb, _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(t), a))); }
        ACC(2 * g, h0, l0) ACC(2 * g + 1, h1, l1)
#undef ACC
    }
}
// y[o0 .. o0 + 63] (those below n) = s2 acc + bias
ATTNLAB_INLINE void attnlab_out(const float* acc, float s2, const float* __restrict__ bias, float* __restrict__ y,
                                int64_t o0, int64_t n, int64_t has_bias) {
    const __m256 vs2 = _mm256_set1_ps(s2);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int j = 0; j < 8; ++j) {
        const int64_t o = o0 + 8 * j;
        const int64_t r = n - o;
        if (r <= 0) break;
        __m256 v = _mm256_mul_ps(_mm256_load_ps(acc + 8 * j), vs2);
        if (r >= 8) {
            if (has_bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + o));
            _mm256_storeu_ps(y + o, v);
        } else {
            const __m256i mk = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r), lane);  // lanes < r
            if (has_bias) v = _mm256_add_ps(v, _mm256_maskload_ps(bias + o, mk));
            _mm256_maskstore_ps(y + o, mk, v);
        }
    }
}
"""

_GEMV_AVX2 = r"""{
    alignas(64) int8_t xh[MAX_K], xl[MAX_K];
    alignas(64) float xs[MAX_K / 32];
    float s2;
    if (attnlab_round(x, kb, xh, xl, xs, &s2)) return 1;  // not finite: the caller multiplies this row in float32
""" + kernel_source.pool_threads("nb * kb * TILE_BYTES") + r"""
    attnlab_pool::for_blocks(nb, nt, [&](int64_t ob) {  // block ob: 64 outputs, as 8 registers of 8
        alignas(32) float acc[64] = {};  // outputs 64 ob + j, in units of s2
        const uint8_t* wt = w + ob * kb * TILE_BYTES;
        for (int64_t b = 0; b < kb; ++b) {
            attnlab_prefetch(wt + b * TILE_BYTES);
            attnlab_tile(wt + b * TILE_BYTES, xh + 32 * b, xl + 32 * b, xs[b], acc);
        }
        attnlab_out(acc, s2, bias, y, ob * 64, n, has_bias);
    });
    return 0;
}
"""

ROWS_CHUNK = 16  # rows_product: rows sharing each tile while it is in L1 (16 x 64 float accumulators = 4 KB)

_ROWS_AVX2 = r"""
#include <new>
extern "C" int attnlab_int4_rows(const float* __restrict__ x, const uint8_t* __restrict__ w,
                       const float* __restrict__ bias, float* __restrict__ y,
                       int64_t rows, int64_t nb, int64_t kb, int64_t n, int64_t has_bias, int64_t threads,
                       int64_t gated)
{
    if (gated) return 3;  // no SwiGLU in this variant (kernel_source.tile_rows): the caller computes h in torch
    const int64_t k = kb * 32;
    int8_t* xh = new (std::nothrow) int8_t[2 * rows * k];  // each row's hi pieces, then each row's lo pieces
    float* xs = new (std::nothrow) float[rows * (kb + 1)];  // each row's block sums, then each row's s2
    if (!xh || !xs) { delete[] xh; delete[] xs; return 2; }
    int8_t* xl = xh + rows * k;
    float* s2 = xs + rows * kb;
    for (int64_t r = 0; r < rows; ++r) {
        if (attnlab_round(x + r * k, kb, xh + r * k, xl + r * k, xs + r * kb, s2 + r)) {
            delete[] xh; delete[] xs;
            return 1;  // a row holds NaN or +-inf: the caller multiplies in float32
        }
    }
""" + kernel_source.pool_threads("nb * kb * TILE_BYTES * rows") + r"""
    attnlab_pool::for_blocks(nb, nt, [&](int64_t ob) {  // block ob: 64 outputs of every row
        alignas(32) float acc[ROWS_CHUNK * 64];  // row r0 + i, output 64 ob + j at 64 i + j, in units of that row's s2
        const uint8_t* wt = w + ob * kb * TILE_BYTES;
        for (int64_t r0 = 0; r0 < rows; r0 += ROWS_CHUNK) {
            const int64_t rc = rows - r0 < ROWS_CHUNK ? rows - r0 : ROWS_CHUNK;
            for (int64_t i = 0; i < rc * 64; ++i) acc[i] = 0.f;
            for (int64_t b = 0; b < kb; ++b) {
                attnlab_prefetch(wt + b * TILE_BYTES);
                for (int64_t i = 0; i < rc; ++i) {  // the tile stays in L1 across these rows
                    const int64_t r = r0 + i;
                    attnlab_tile(wt + b * TILE_BYTES, xh + r * k + 32 * b, xl + r * k + 32 * b, xs[r * kb + b],
                                 acc + 64 * i);
                }
            }
            for (int64_t i = 0; i < rc; ++i)
                attnlab_out(acc + 64 * i, s2[r0 + i], bias, y + (r0 + i) * n, ob * 64, n, has_bias);
        }
    });
    delete[] xh; delete[] xs;
    return 0;
}
"""

# rows_product's kernel: the one-row kernel's variant (the same choice), around its tile step
SOURCES, ROWS_SOURCES = sources("int4", TILE_BYTES)
(_, _SOURCE), (_, _SOURCE_AVX2) = SOURCES
(_, _SOURCE_ROWS), (_, _SOURCE_ROWS_AVX2) = ROWS_SOURCES
_compiled, _compiled_rows = kernel_variants.tiled_builds("int4", SOURCES, ROWS_SOURCES, "4-bit products")
available, unavailable_reason, gemv, rows_available, rows_product = kernel_variants.tiled_calls(globals())


NIBBLES_LOW = 0x0F0F0F0F  # the low nibble of each byte of a 32-bit word
NIBBLES_HIGH = 0xF0F0F0F0 - (1 << 32)  # the high nibbles, as the int32 with those bits


def pack(qweight: torch.Tensor, scale: torch.Tensor, min: torch.Tensor) -> tuple[torch.Tensor]:
    """int4 buffers ((n, k/2) uint8 GGUF nibble order, (n, k/32) float16 d, (n, k/32) float16 m) ->
    (tiles,) with tiles a (ceil(n/64), k/32, 1280) uint8 tensor (zero padded outputs); see the module docstring.
    float32 d and m (Q4_K's, layers/q4_k_kernel.py) give 1536-byte tiles, the scales as float32."""
    c = pack_codes(qweight)
    nb, kb = c.shape[:2]
    n = qweight.shape[0]
    d = torch.zeros(nb * BLOCK_N, kb, dtype=scale.dtype)  # float16 (Q4_1) or float32 (Q4_K: q4_k_kernel)
    m = torch.zeros(nb * BLOCK_N, kb, dtype=scale.dtype)
    d[:n], m[:n] = scale, min
    d = d.reshape(nb, 64, kb).transpose(1, 2).contiguous().view(torch.uint8)  # (nb, kb, 64 x 2 or 4 bytes)
    m = m.reshape(nb, 64, kb).transpose(1, 2).contiguous().view(torch.uint8)
    return (torch.cat((c, d, m), dim=-1).contiguous(),)


def pack_codes(qweight: torch.Tensor) -> torch.Tensor:
    """(n, k/2) uint8 codes in GGUF's nibble order -> (ceil(n/64), k/32, CODE_BYTES) uint8: each tile's codes in
    the kernels' line order (the module docstring), zero padded outputs; what every 4-bit layout's tile starts
    with (pack; layers/q4_k_kernel.py's compact tiles)."""
    n, k2 = qweight.shape
    k = 2 * k2
    if k % BLOCK_K:
        raise ValueError(f"the int4 kernel needs k divisible by {BLOCK_K}, got {k}")
    if k > MAX_K:
        raise ValueError(f"the int4 kernel takes at most {MAX_K} inputs per row, got {k}")
    nb, kb = -(-n // BLOCK_N), k // BLOCK_K
    # A tile byte holds inputs 8e + r (low nibble) and 8e + 4 + r (high), r = 0..3; a GGUF block's byte t holds
    # inputs t (low) and 16 + t (high). So each tile word (r = 0..3) is made from two of the block's four 32-bit
    # words (little-endian, as every CPU the kernel runs on) with masks and shifts: 3.5-4x quicker than splitting
    # nibbles and permuting bytes (SmolLM2's 120 4-bit matrices packed in ~35 ms instead of ~130, which a fresh
    # process's first token waits for; one thread, process time, 2026-11-28)
    b = qweight.contiguous()
    if b.storage_offset() % 4:
        b = b.clone()  # a word view needs 4-byte alignment
    w0, w1, w2, w3 = b.view(torch.int32).reshape(n, kb, 4).unbind(-1)
    words = torch.zeros(nb * BLOCK_N, kb, 4, dtype=torch.int32)  # (outputs, kb, e) zero-padded outputs
    words[:n, :, 0] = (w0 & NIBBLES_LOW) | ((w1 & NIBBLES_LOW) << 4)
    words[:n, :, 1] = (w2 & NIBBLES_LOW) | ((w3 & NIBBLES_LOW) << 4)
    words[:n, :, 2] = ((w0 >> 4) & NIBBLES_LOW) | (w1 & NIBBLES_HIGH)
    words[:n, :, 3] = ((w2 >> 4) & NIBBLES_LOW) | (w3 & NIBBLES_HIGH)
    # (ob, g, i, kb, e) -> (ob, kb, e, g, i): output = 64 ob + 16 g + i, each word the 4 bytes of r
    return words.reshape(nb, 4, 16, kb, 4).permute(0, 3, 4, 1, 2).contiguous().view(torch.uint8).reshape(
        nb, kb, CODE_BYTES)


def pack_layer(buffers: dict[str, torch.Tensor], bias: torch.Tensor | None) -> tuple:
    """A QuantizedLinear's 4-bit buffers and bias -> gemv's arguments between x and n."""
    tiles, = pack(buffers["qweight"], buffers["scale"], buffers["min"])
    return tiles, kernel_variants.layer_bias(bias)

