"""The C++ that every one-row kernel format shares, as text pieces its source is put together from.

Why text: the int8, 4-bit and Q8_0 kernels (layers/int8_kernel.py, int4_kernel.py, q8_0_kernel.py) differ only in
their block layout and inner product; around it they round x into the same two int8 pieces (hi = round(x / s1),
lo = round((x - hi s1) / s2), s1 = max|x| / 127, s2 = s1 / 254), refuse a row holding NaN or +-inf, split output
blocks over kernel_build.POOL's threads, prefetch their tiles and write scale / bias / y. Each of these is written
once here and pasted into each source, so the compiler sees the same code it saw when every format spelled it out:
the hot loops keep their vector widths, order and unrolling. (Inline C++ functions serve where the code is a
self-contained step; the pieces that declare the variables a kernel goes on to use are text.)

- prelude_512 / PRELUDE_AVX2: target pragma, headers, and the inline helpers of that instruction set.
- scan_512 / scan_avx2: the NaN / inf check, max|x|, and s1, s2 with their vectors vs1, vi1, vi2.
- round_blocks: per 32-input block, x's pieces and the block's exact sum of 254 hi + lo.
- pool_threads: how many threads a product of so many weight bytes gets.
- prefetch_tile: the tile two ahead of `p`, a line at a time (the multi-row kernels and the AVX2 4-bit one-row
  kernel; the AVX-512 one-row kernels leave the stream to the hardware prefetcher: see tile_gemv_512).
- STORE_512: acc * s2 + bias into y, 16 outputs of a block at a time.
- tile_gemv_head / tile_gemv_512: the tiled formats' (4-bit, Q8_0) function head, and their whole AVX-512 kernel
  around the format's tile product.
- byte_quads / nibble_quads: the inner loop over a tile's 256-byte lines of 8-bit codes (Q8_0, Q6_K) or of
  4-bit codes (4-bit, Q4_K; the 5-bit formats with their fifth bits), each line's four 64-byte vectors against
  x's two int8 pieces in vpdpbusd: h0..h3 collect the hi piece, l0..l3 the lo piece.
- round_row / tile_rows / tile_rows_512: the multi-row (prefill) kernels: a row's rounding as a function, the
  kernel that rounds every row and then serves each tile to several rows while it is in L1, and its AVX-512 form
  around the one-row kernel's own tile step (so each row gets the one-row kernel's bits).
- sized(source, MAX_K=..., ...), sized_all: the format module's sizes written into its C++.
"""

from __future__ import annotations

from attnlab.layers import kernel_build


def _pieces(bits: int) -> str:
    """attnlab_pieces for vectors of `bits` (512: AVX-512, 256: AVX2): one text, so both round x alike."""
    lanes, rnd = (16, "roundscale") if bits == 512 else (8, "round")
    return r"""
// LANES values v -> hi = round(v / s1), lo = round((v - hi s1) / s2), each clamped to +-127 (vs1 = s1, vi1 = 1 / s1,
// vi2 = 1 / s2)
ATTNLAB_INLINE void attnlab_pieces(__mBITS v, __mBITS vs1, __mBITS vi1, __mBITS vi2, __mBITSi& hi, __mBITSi& li) {
    const __mBITSi lo_ = _mmBITS_set1_epi32(-127), hi_ = _mmBITS_set1_epi32(127);
    const __mBITS h = _mmBITS_RND_ps(_mmBITS_mul_ps(v, vi1), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __mBITS l = _mmBITS_RND_ps(_mmBITS_mul_ps(_mmBITS_fnmadd_ps(h, vs1, v), vi2),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    hi = _mmBITS_min_epi32(hi_, _mmBITS_max_epi32(lo_, _mmBITS_cvtps_epi32(h)));
    li = _mmBITS_min_epi32(hi_, _mmBITS_max_epi32(lo_, _mmBITS_cvtps_epi32(l)));
}
""".replace("LANES", str(lanes)).replace("BITS", str(bits)).replace("RND", rnd)


def prelude_512(*extra: str) -> str:
    """AVX-512 VNNI target (plus `extra` target names, e.g. f16c) and attnlab_pieces for 16 values."""
    return r"""
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni""" + "".join("," + e for e in extra) + r"""")
#include <immintrin.h>
#include <cstdint>
#define ATTNLAB_INLINE static inline __attribute__((always_inline))
""" + _pieces(512)


# The AVX2 variants' target and helpers: the horizontal max of |x|, the rounding of 8 values of x into the two int8
# pieces (the same operations as the AVX-512 sources), the sum of 8 int32 lanes, X as int16, and the output order
# after vphaddd.
PRELUDE_AVX2 = r"""
#pragma GCC target("avx2,fma,f16c")
#include <immintrin.h>
#include <cstdint>
#define ATTNLAB_INLINE static inline __attribute__((always_inline))
// the largest of 8 lanes
ATTNLAB_INLINE float attnlab_hmax(__m256 v) {
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
    return _mm_cvtss_f32(m4);
}
""" + _pieces(256) + r"""// the sum of 8 int32 lanes
ATTNLAB_INLINE int32_t attnlab_hsum(__m256i v) {
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s4);
}
// 8 int32 lanes (values within +-32767) -> 8 int16 at dst (16-byte aligned): the saturating pack is exact here
ATTNLAB_INLINE void attnlab_store16(int16_t* dst, __m256i a) {
    _mm_store_si128((__m128i*)dst, _mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1)));
}
// 8 floats in the order two vphaddd leave them, 64-bit pairs (0 1)(4 5)(2 3)(6 7), back to 0 .. 7
ATTNLAB_INLINE __m256 attnlab_in_order(__m256 v) {
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
}
"""


def scan_512(masked: bool) -> str:
    """x[0 .. k) -> `return 1` if it holds NaN or +-inf, else s1, s2 and vs1, vi1, vi2 (AVX-512). `masked`: k need
    not be a multiple of 16 (the lanes past k are read as 0)."""
    load = (r"""
        const __mmask16 mk = (k - i) >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (k - i)) - 1);
        const __m512 a = _mm512_abs_ps(_mm512_maskz_loadu_ps(mk, x + i));""" if masked else r"""
        const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(x + i));""")
    return r"""
    __m512 vmax = _mm512_setzero_ps();
    const __m512 inf = _mm512_set1_ps(__builtin_inff());
    __mmask16 bad = 0;  // lanes holding NaN or +-inf (unordered, or |x| >= inf)
    for (int64_t i = 0; i < k; i += 16) {""" + load + r"""
        bad |= _mm512_cmp_ps_mask(a, inf, _CMP_NLT_UQ);
        vmax = _mm512_max_ps(vmax, a);
    }
    if (bad) return 1;  // not finite: the caller multiplies this row in float32
    const float amax = _mm512_reduce_max_ps(vmax);
    const float s1 = amax > 0.f ? amax / 127.f : 1.f, s2 = s1 / 254.f;
    const __m512 vs1 = _mm512_set1_ps(s1), vi1 = _mm512_set1_ps(1.f / s1), vi2 = _mm512_set1_ps(1.f / s2);
"""


def scan_avx2(masked: bool) -> str:
    """scan_512's AVX2 twin (also c254 = 254 in every int32 lane). `masked` reads through `ramp`, which the kernel
    declares: 8 -1s then 8 0s."""
    load = (r"""
        const int64_t r = k - i;
        const __m256i mk = _mm256_loadu_si256((const __m256i*)(ramp + 8 - (r >= 8 ? 8 : r)));  // first r lanes
        const __m256 a = _mm256_andnot_ps(sign, _mm256_maskload_ps(x + i, mk));""" if masked else r"""
        const __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i));""")
    return r"""
    const __m256 sign = _mm256_set1_ps(-0.f), inf = _mm256_set1_ps(__builtin_inff());
    __m256 vmax = _mm256_setzero_ps(), bad = _mm256_setzero_ps();  // bad: lanes that met NaN or +-inf
    for (int64_t i = 0; i < k; i += 8) {""" + load + r"""
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ));
        vmax = _mm256_max_ps(vmax, a);
    }
    if (_mm256_movemask_ps(bad)) return 1;  // not finite: the caller multiplies this row in float32
    const float amax = attnlab_hmax(vmax);
    const float s1 = amax > 0.f ? amax / 127.f : 1.f, s2 = s1 / 254.f;
    const __m256 vs1 = _mm256_set1_ps(s1), vi1 = _mm256_set1_ps(1.f / s1), vi2 = _mm256_set1_ps(1.f / s2);
    const __m256i c254 = _mm256_set1_epi32(254);
"""


def round_blocks(bits: int, store: str, block_sum: str) -> str:
    """After scan_512 (bits 512) or scan_avx2 (256): for each of the kb blocks of 32 inputs, a vector at a time,
    x's pieces hi, li and X = 254 hi + li, which the statement `store` keeps where the kernel wants them (at
    position i); then the statement `block_sum` stores `total`, the block's sum of X (an exact integer), in xs[b]."""
    lanes, total = (16, "_mm512_reduce_add_epi32(sum)") if bits == 512 else (8, "attnlab_hsum(sum)")
    return r"""
    for (int64_t b = 0; b < kb; ++b) {
        __mBITSi sum = _mmBITS_setzero_siBITS();
        for (int64_t i = 32 * b; i < 32 * b + 32; i += LANES) {
            __mBITSi hi, li;
            attnlab_pieces(_mmBITS_loadu_ps(x + i), vs1, vi1, vi2, hi, li);
            const __mBITSi X = _mmBITS_add_epi32(_mmBITS_mullo_epi32(hi, _mmBITS_set1_epi32(254)), li);
            sum = _mmBITS_add_epi32(sum, X);
""".replace("BITS", str(bits)).replace("LANES", str(lanes)) + "            " + store + r"""
        }
        const int32_t total = """ + total + r""";
        """ + block_sum + r"""
    }
"""


def pool_threads(weight_bytes: str) -> str:
    """nt, the threads for a product reading `weight_bytes` (a C++ expression) of weights, at most `threads`."""
    return r"""
    // a thread per >= 64 KB of weights (~10 us of reading, against a few us to wake a thread): K and V of a small
    // model stay on one thread, which would otherwise wait for the other more than it saves
    const int64_t most = (""" + weight_bytes + r""") >> 16, nt = threads < most ? threads : (most > 1 ? most : 1);
"""


def prefetch_tile(tile_bytes: int) -> str:
    """Prefetch the tile two ahead of `p` (tiles of `tile_bytes`, a multiple of 64), one line at a time."""
    lines = tile_bytes // 64
    return fr"""
            #pragma GCC unroll {lines}
            for (int t = 0; t < {lines}; ++t) _mm_prefetch((const char*)(p + {2 * tile_bytes} + 64 * t), _MM_HINT_T0);
"""


# y[64 ob + j] = s2 * a_g lane + bias for the outputs below n (AVX-512: a0..a3, 16 outputs each, in a block ob)
STORE_512 = r"""
        const __m512 vs2 = _mm512_set1_ps(s2);
        const __m512 acc[4] = {a0, a1, a2, a3};
        for (int g = 0; g < 4; ++g) {
            const int64_t o = ob * 64 + 16 * g;
            const int64_t r = n - o;
            if (r <= 0) break;
            const __mmask16 mk = r >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << r) - 1);
            __m512 v = _mm512_mul_ps(acc[g], vs2);
            if (has_bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, bias + o));
            _mm512_mask_storeu_ps(y + o, mk, v);
        }
"""


def tile_gemv_head(function: str) -> str:
    """The extern "C" head of a tiled format's one-row kernel (4-bit, Q8_0): x, tiles, bias, y and their sizes."""
    return r"""
extern "C" int """ + function + r"""(const float* __restrict__ x, const uint8_t* __restrict__ w,
                       const float* __restrict__ bias, float* __restrict__ y,
                       int64_t nb, int64_t kb, int64_t n, int64_t has_bias, int64_t threads)
"""


def sized(source: str, **sizes: int) -> str:
    """`source` with each of the NAMES in `sizes` (MAX_K, TILE_BYTES, ...) replaced by its number: the C++ reads
    the sizes the Python side packs and checks, from the one definition there."""
    for name, value in sizes.items():
        source = source.replace(name, str(value))
    return source


def sized_all(sources: tuple[str, ...], **sizes: int) -> tuple[str, ...]:
    """sized() of each of `sources`, in order."""
    return tuple(sized(s, **sizes) for s in sources)


# x's pieces at position i as int8 (the tiled formats' xh, xl)
_STORE_PIECES_512 = r"""_mm_storeu_si128((__m128i*)(xh + i), _mm512_cvtepi32_epi8(hi));
            _mm_storeu_si128((__m128i*)(xl + i), _mm512_cvtepi32_epi8(li));"""


def tile_gemv_512(function: str, tile_bytes: int, scales_at: int, xs_type: str, block_sum: str, constants: str,
                  tile: str) -> str:
    """The AVX-512 VNNI source of a tiled format's one-row kernel (4-bit, Q8_0: 64 outputs x 32 inputs a tile, tiles
    of an output block in a row): x rounded into xh, xl and xs (`xs_type`, filled by `block_sum` as in
    round_blocks), then for each block ob of 64 outputs, after the format's `constants`, each tile p in turn:
    `tile` adds its products into the int32 h0..h3 / l0..l3 (hi / lo pieces, 16 outputs each) and defines
    ACC(a, h, l, g), which folds group g into the float accumulator a (a0..a3, units of s2) with the tile's float16
    scales at dm (`scales_at` bytes into the tile); STORE_512 writes y. The text keeps MAX_K for sized().
    No software prefetch: an output block's tiles are one sequential stream, which the hardware prefetcher follows.
    With prefetch_tile's 18-34 prefetches a tile (two tiles ahead), every format's kernel took 1.01-1.33x the time
    of torch.sum over the same bytes from memory; without them 0.89-1.13x, the same numbers (SmolLM2's Q4_0,
    Q4_K_M and Q8_0 matrices cloned to >= 80 MB a kind, one thread, CPU clock, interleaved, AMD EPYC Zen 5, load
    16-17, 2026-12-07: bench/RESULTS.md, bench/results/decode-kernels-2026-12-07/kernels-against-read.log)."""
    return (kernel_build.POOL + prelude_512("f16c") + tile_gemv_head(function) + r"""{
    alignas(64) int8_t xh[MAX_K], xl[MAX_K];
    alignas(64) """ + xs_type + r""" xs[MAX_K / 32];
    const int64_t k = kb * 32;""" + scan_512(masked=False) + round_blocks(512, _STORE_PIECES_512, block_sum)
            + pool_threads(f"nb * kb * {tile_bytes}") + r"""
    attnlab_pool::for_blocks(nb, nt, [&](int64_t ob) {  // block ob: 64 outputs
        const __m512i z = _mm512_setzero_si512();""" + constants + r"""
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        const uint8_t* wt = w + ob * kb * """ + str(tile_bytes) + r""";
        for (int64_t b = 0; b < kb; ++b) {
            const uint8_t* p = wt + b * """ + str(tile_bytes) + r""";""" + _tile_step_512(
        scales_at, tile) + r"""
        }""" + STORE_512 + r"""    });
    return 0;
}
""")


def _tile_step_512(scales_at: int, tile: str) -> str:
    """One tile p's products for one row (pieces xh, xl, block sums xs) folded into a0..a3: the step the one-row
    and the multi-row AVX-512 kernels share, so that every row gets the same operations in the same order."""
    return r"""
            __m512i h0 = z, h1 = z, h2 = z, h3 = z, l0 = z, l1 = z, l2 = z, l3 = z;
            const int8_t* xhb = xh + 32 * b;
            const int8_t* xlb = xl + 32 * b;
            const uint16_t* dm = (const uint16_t*)(p + """ + str(scales_at) + r""");""" + tile + r"""
            ACC(a0, h0, l0, 0) ACC(a1, h1, l1, 1) ACC(a2, h2, l2, 2) ACC(a3, h3, l3, 3)
#undef ACC"""


def round_row(bits: int, xs_type: str, names: str, store: str, block_sum: str) -> str:
    """attnlab_round(x, kb, xr, xs, s2out): one row of x (kb * 32 floats) rounded as the one-row kernels round it
    (scan_512 / scan_avx2, then round_blocks with `store` and `block_sum`) into xr (2 k bytes: the row's two int8
    pieces, or X as int16, as `names` declares them from xr), its block sums xs (`xs_type`) and *s2out; 1 when
    the row holds NaN or +-inf (nothing else written). For the multi-row kernels, which round every row first."""
    scan = scan_512 if bits == 512 else scan_avx2
    return r"""
ATTNLAB_INLINE int attnlab_round(const float* __restrict__ x, int64_t kb, int8_t* __restrict__ xr,
                                 """ + xs_type + r"""* __restrict__ xs, float* s2out) {
    const int64_t k = kb * 32;
    """ + names + scan(masked=False) + round_blocks(bits, store, block_sum) + r"""
    *s2out = s2;
    return 0;
}
"""


# e^x of 16 lanes (AVX-512F): x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts), e^r by its Taylor polynomial to
# degree 6 (Horner, ~1 unit in the last place), times 2^n by vscalefps (inf above ~88.7); x clamped at -87 first (0
# below would be denormal), where a NaN also turns into -87: callers keep NaN by multiplying with x's own lanes.
# Shared by the attention kernel (layers/attention_kernel.py) and SWIGLU_512.
EXP_512 = r"""
static inline __attribute__((always_inline)) __m512 attnlab_exp16(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
    __m512 p = _mm512_set1_ps(1.f / 720.f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
    return _mm512_scalef_ps(p, n);
}
"""

# The gated feed-forward's hidden row, h = silu(g) u = g / (1 + e^-g) u, in the order torch's F.silu(g) * up rounds
# it (k a multiple of 32: whole blocks); what tile_rows(..., swiglu=SWIGLU_512) rounds instead of x when `gated`
SWIGLU_512 = EXP_512 + r"""
static inline void attnlab_swiglu(const float* __restrict__ g, const float* __restrict__ u, float* __restrict__ h,
                                  int64_t k) {
    const __m512 one = _mm512_set1_ps(1.f);
    for (int64_t i = 0; i < k; i += 16) {
        const __m512 gv = _mm512_loadu_ps(g + i);
        const __m512 e = attnlab_exp16(_mm512_sub_ps(_mm512_setzero_ps(), gv));  // e^-g
        const __m512 silu = _mm512_div_ps(gv, _mm512_add_ps(one, e));
        _mm512_storeu_ps(h + i, _mm512_mul_ps(silu, _mm512_loadu_ps(u + i)));
    }
}
"""


def tile_rows(function: str, tile_bytes: int, xs_type: str, constants: str, tile_row: str, out_row: str,
              swiglu: str | None = None) -> str:
    """The extern "C" multi-row kernel of a tiled format (prefill): x (rows, k) -> y (rows, n) with each row given
    exactly the one-row kernel's bits. Each output block of 64 takes its tiles in order for each chunk of
    ROWS_CHUNK rows (a job for the pool's threads), each tile serving those rows while in L1. A chunk's rows are
    rounded (attnlab_round, from round_row) by the first job that needs them, the others waiting for it: with two
    chunks the two threads round one each at once (the caller rounded every row alone before, ~23 us of each
    SmolLM2 layer while the helper waited). 1 back when a row is not finite, 2 when the buffers cannot be allocated.
    `tile_row` adds tile p (block b) into the row's 64 float accumulators ar from its rounded x, xr, and block
    sums, xsr; `out_row` writes the row's ar times s2r (+ bias) into yr. `constants` are the tile's vectors,
    made once per job (an output block for a chunk of rows). The text keeps ROWS_CHUNK for sized().
    `gated` (a SwiGLU feed-forward's W_2): x is (rows, 2 k), each row [g | u], and the kernel multiplies
    h = silu(g) u, made by `swiglu`'s attnlab_swiglu in the rounding job just before it rounds h (so the two
    threads make it for their chunks at once, and no (rows, k) tensor is written and read back); without `swiglu`
    (a variant that has none) a gated call answers 3 and the caller does it in torch."""
    gate = (r"""
    float* hx = gated ? new (std::nothrow) float[k * rows] : nullptr;  // row r's h = silu(g) u at k r
    if (gated && !hx) return 2;""" if swiglu else r"""
    if (gated) return 3;  // this variant has no SwiGLU: the caller computes h in torch
    float* hx = nullptr;""")
    return (swiglu or "") + r"""
#include <new>
extern "C" int """ + function + r"""(const float* __restrict__ x, const uint8_t* __restrict__ w,
                       const float* __restrict__ bias, float* __restrict__ y,
                       int64_t rows, int64_t nb, int64_t kb, int64_t n, int64_t has_bias, int64_t threads,
                       int64_t gated)
{
    const int64_t k = kb * 32;""" + gate + r"""
    int8_t* xp = new (std::nothrow) int8_t[2 * k * rows];  // row r's rounded x at 2 k r
    """ + xs_type + r"""* xs = new (std::nothrow) """ + xs_type + r"""[kb * rows];  // row r's block sums at kb r
    float* s2 = new (std::nothrow) float[rows];
    const int64_t chunks = (rows + ROWS_CHUNK - 1) / ROWS_CHUNK;
    std::atomic<int>* state = new (std::nothrow) std::atomic<int>[chunks]();  // a chunk's rows: see ROUNDED
    if (!xp || !xs || !s2 || !state) { delete[] xp; delete[] xs; delete[] s2; delete[] state; delete[] hx; return 2; }
    enum { FRESH = 0, ROUNDING = 1, ROUNDED = 2, NOT_FINITE = 3 };
    std::atomic<int> refused{0};
""" + pool_threads(f"nb * kb * {tile_bytes} * rows") + r"""
    // a job: output block ob (64 outputs) for rows r0 .. r0 + ROWS_CHUNK - 1, so that 2 threads share even a
    // matrix of few output blocks (K and V: 3) evenly once a prompt has more than ROWS_CHUNK rows
    attnlab_pool::for_blocks(nb * chunks, nt, [&](int64_t job) {""" + constants + r"""
        const int64_t ob = job / chunks, c = job % chunks, r0 = c * ROWS_CHUNK;
        const int64_t rc = rows - r0 < ROWS_CHUNK ? rows - r0 : ROWS_CHUNK;
        int seen = FRESH;
        if (state[c].compare_exchange_strong(seen, ROUNDING, std::memory_order_acq_rel)) {  // this job rounds them
            int failed = 0;
            for (int64_t r = r0; r < r0 + rc && !failed; ++r) {
                const float* xr = x + r * k;""" + ("""
                if (gated) {
                    attnlab_swiglu(x + 2 * k * r, x + 2 * k * r + k, hx + k * r, k);
                    xr = hx + k * r;
                }""" if swiglu else "") + r"""
                failed = attnlab_round(xr, kb, xp + 2 * k * r, xs + kb * r, s2 + r);  // 1: not finite
            }
            state[c].store(failed ? NOT_FINITE : ROUNDED, std::memory_order_release);
        } else {
            for (int spin = 0; (seen = state[c].load(std::memory_order_acquire)) == ROUNDING; ++spin) {
                if (spin < 4096) _mm_pause(); else std::this_thread::yield();  // another job is rounding them
            }
        }
        if (state[c].load(std::memory_order_acquire) == NOT_FINITE) { refused.store(1); return; }
        alignas(64) float acc[ROWS_CHUNK * 64];  // row r0 + i's 64 outputs at 64 i, in units of its s2
        const uint8_t* wt = w + ob * kb * """ + str(tile_bytes) + r""";
        for (int64_t i = 0; i < rc * 64; ++i) acc[i] = 0.f;
        for (int64_t b = 0; b < kb; ++b) {
            const uint8_t* p = wt + b * """ + str(tile_bytes) + r""";""" + prefetch_tile(tile_bytes) + r"""
            for (int64_t i = 0; i < rc; ++i) {  // the tile stays in L1 across these rows
                const int8_t* xr = xp + 2 * k * (r0 + i);
                const """ + xs_type + r"""* xsr = xs + kb * (r0 + i);
                float* ar = acc + 64 * i;""" + tile_row + r"""
            }
        }
        for (int64_t i = 0; i < rc; ++i) {
            const float* ar = acc + 64 * i;
            const float s2r = s2[r0 + i];
            float* yr = y + (r0 + i) * n;""" + out_row + r"""
        }
    });
    delete[] xp; delete[] xs; delete[] s2; delete[] state; delete[] hx;
    return refused.load() ? 1 : 0;  // 1: the caller multiplies in float32
}
"""


def tile_rows_512(function: str, tile_bytes: int, scales_at: int, xs_type: str, block_sum: str, constants: str,
                  tile: str) -> str:
    """tile_gemv_512's multi-row twin (tile_rows around the same `constants`, `tile` and STORE_512): each row's
    a0..a3 come from and go back to its accumulators in L1 around the one-row kernel's tile step."""
    load = r"""
        __m512 a0 = _mm512_load_ps(ar), a1 = _mm512_load_ps(ar + 16), a2 = _mm512_load_ps(ar + 32),
               a3 = _mm512_load_ps(ar + 48);"""
    tile_row = r"""
                    const int8_t* xh = xr;
                    const int8_t* xl = xr + k;
                    const """ + xs_type + r"""* xs = xsr;""" + load + _tile_step_512(scales_at, tile) + r"""
                    _mm512_store_ps(ar, a0); _mm512_store_ps(ar + 16, a1);
                    _mm512_store_ps(ar + 32, a2); _mm512_store_ps(ar + 48, a3);"""
    out_row = r"""
                const float s2 = s2r;
                float* y = yr;""" + load + STORE_512
    return (kernel_build.POOL + prelude_512("f16c")
            + round_row(512, xs_type, "int8_t* xh = xr;\n    int8_t* xl = xr + k;", _STORE_PIECES_512, block_sum)
            + tile_rows(function, tile_bytes, xs_type, r"""
        const __m512i z = _mm512_setzero_si512();""" + constants, tile_row, out_row, swiglu=SWIGLU_512))


_DPBUSD_NIBBLES = r"""
                h0 = _mm512_dpbusd_epi32(h0, u0, xa); h0 = _mm512_dpbusd_epi32(h0, v0, xb);
                h1 = _mm512_dpbusd_epi32(h1, u1, xa); h1 = _mm512_dpbusd_epi32(h1, v1, xb);
                h2 = _mm512_dpbusd_epi32(h2, u2, xa); h2 = _mm512_dpbusd_epi32(h2, v2, xb);
                h3 = _mm512_dpbusd_epi32(h3, u3, xa); h3 = _mm512_dpbusd_epi32(h3, v3, xb);
                l0 = _mm512_dpbusd_epi32(l0, u0, ya); l0 = _mm512_dpbusd_epi32(l0, v0, yb);
                l1 = _mm512_dpbusd_epi32(l1, u1, ya); l1 = _mm512_dpbusd_epi32(l1, v1, yb);
                l2 = _mm512_dpbusd_epi32(l2, u2, ya); l2 = _mm512_dpbusd_epi32(l2, v2, yb);
                l3 = _mm512_dpbusd_epi32(l3, u3, ya); l3 = _mm512_dpbusd_epi32(l3, v3, yb);"""


def nibble_quads(extra: str, codes: str) -> str:
    """The AVX-512 loop over a 4-bit tile's four 256-byte lines (inputs 8e..8e+7 of 64 outputs each): x's pieces of
    those inputs broadcast (xa, xb: hi of the low and high nibble's inputs; ya, yb: lo), the line loaded as w0..w3,
    `codes` turning w0..w3 into u0..u3 (low nibbles) and v0..v3 (high) as unsigned bytes, then eight vpdpbusd per
    piece. `extra` declares what `codes` reads beside the line (the 5-bit formats' fifth-bit masks), or is ""."""
    return r"""
            #pragma GCC unroll 4
            for (int e = 0; e < 4; ++e) {
                const uint8_t* q = p + e * 256;""" + extra + r"""
                const __m512i xa = _mm512_set1_epi32(*(const int32_t*)(xhb + 8 * e));
                const __m512i xb = _mm512_set1_epi32(*(const int32_t*)(xhb + 8 * e + 4));
                const __m512i ya = _mm512_set1_epi32(*(const int32_t*)(xlb + 8 * e));
                const __m512i yb = _mm512_set1_epi32(*(const int32_t*)(xlb + 8 * e + 4));
                const __m512i w0 = _mm512_loadu_si512(q), w1 = _mm512_loadu_si512(q + 64);
                const __m512i w2 = _mm512_loadu_si512(q + 128), w3 = _mm512_loadu_si512(q + 192);""" + codes \
        + _DPBUSD_NIBBLES + r"""
            }
"""


def byte_quads(start: str, stop: str, unroll: int) -> str:
    """The AVX-512 loop over a tile's 256-byte lines of 8-bit codes from line `start` to `stop` (C expressions): x's
    hi and lo pieces of the line's four inputs broadcast (xa, ya), its four 64-byte vectors w0..w3 (64 outputs x 4
    inputs, unsigned bytes) into h0..h3 and l0..l3 by vpdpbusd; `unroll` lines at a time."""
    return rf"""
            #pragma GCC unroll {unroll}
            for (int e = {start}; e < {stop}; ++e) {{
                const uint8_t* q = p + e * 256;
                const __m512i xa = _mm512_set1_epi32(*(const int32_t*)(xhb + 4 * e));
                const __m512i ya = _mm512_set1_epi32(*(const int32_t*)(xlb + 4 * e));
                const __m512i w0 = _mm512_loadu_si512(q), w1 = _mm512_loadu_si512(q + 64);
                const __m512i w2 = _mm512_loadu_si512(q + 128), w3 = _mm512_loadu_si512(q + 192);
                h0 = _mm512_dpbusd_epi32(h0, w0, xa); h1 = _mm512_dpbusd_epi32(h1, w1, xa);
                h2 = _mm512_dpbusd_epi32(h2, w2, xa); h3 = _mm512_dpbusd_epi32(h3, w3, xa);
                l0 = _mm512_dpbusd_epi32(l0, w0, ya); l1 = _mm512_dpbusd_epi32(l1, w1, ya);
                l2 = _mm512_dpbusd_epi32(l2, w2, ya); l3 = _mm512_dpbusd_epi32(l3, w3, ya);
            }}"""
