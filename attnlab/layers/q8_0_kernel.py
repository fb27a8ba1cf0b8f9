"""One-row and multi-row Q8_0 products (GGUF's 8-bit blocks: w = d[o, b] * q[o, j], q int8, one float16 d per 32
inputs) on x86 CPUs with AVX512-VNNI, or with AVX2 (+ FMA, F16C): two variants of each over one packed layout.

Why: SmolLM2's GGUF keeps its tied token embedding / LM head in Q8_0 (30 MB of its ~96 MB read per token, 31%),
and without a kernel that product went through layers/quantized.py's chunked dequantize-then-multiply path, which
is slower than float32 (the unpacking passes cost more than the bytes they save). This kernel reads the format's
bytes once, in one sequential stream, like layers/int4_kernel.py. kernel_variants.build() compiles the first variant
the CPU runs (SOURCES, AVX-512 VNNI first); where neither runs (no AVX2, no compiler, ATTNLAB_INT8_KERNEL=fbgemm)
the chunked path stays.

y[o] = s2 * sum_b d[o, b] * ( sum_{j in b} (q[o, j] + 128) X_j  -  128 X_b ) + bias[o],  X_j = 254 hi_j + lo_j

Layout (pack(), once): one byte stream of tiles, tile (ob, b) = 64 outputs x 32 inputs (one Q8_0 block each):
  2048 bytes of codes, then 64 float16 d -> 2176 bytes per tile (GGUF's 34 B per 32 weights: the kernel reads the
  format's bytes). Codes are q + 128 as uint8 (vpdpbusd multiplies unsigned bytes by signed ones, and x's pieces
  are the signed side): line (e, g) of 64 bytes for input quad e (inputs 4e..4e+3 of the block) and output group
  g (outputs 16g..16g+15), byte 4 i + r holding output 16g+i, input 4e+r.
Per call: x is rounded to two int8 pieces, hi = round(x/s1), lo = round((x - hi s1)/s2), s1 = max|x|/127,
s2 = s1/254 (~15 bits, as the int8 and int4 kernels); X_b = sum_{j in b} (254 hi_j + lo_j), an exact integer.
Per tile: 8 int32 accumulators (4 output groups x hi/lo; at most 32*255*127 = 1,036,320 each), then the block's
exact integer 254 h + l - 128 X_b (|.| < 4e8 < 2^31) times d, accumulated in float. So the result is exactly
x_rounded . w up to float32 summation: the error is x's rounding (relative ~2^-15 of max|x| per input), the same
as the other kernels'. Output blocks of 64 go to kernel_build.POOL's threads like theirs.

The AVX2 variant (_SOURCE_AVX2; AMD Zen 2-3, Intel Haswell to Ice Lake client) has no vpdpbusd, and AVX2's
byte product vpmaddubsw adds pairs of u8 x s8 products into a SATURATING int16: with codes q + 128 (up to 255) and
a piece of x (up to 127) a pair reaches 2*255*127 = 64770 > 32767 (what made fbgemm's AVX2 product wrong before
it took 127 levels, quantized.fbgemm_levels). So it joins x's pieces into one int16, X_j = 254 hi_j + lo_j (|X_j|
<= 32385), widens each code byte to int16 (vpmovzxbw) and multiplies with vpmaddwd, which adds pairs into int32
with no saturation: a pair at most 2*255*32385 = 16,516,350, a block's 32 products 264,261,600 < 2^31. Each tile
is read as two halves of 32 outputs (8 accumulators of two int32 lanes per output, in registers), the lanes joined
by one vphaddd per 8 outputs and block. Same pack(), same rounding of x, and per block the same exact integer
(sum (q + 128) X_j - 128 X_b) times d in the same float order as the VNNI variant: the same numbers, 1 and 2
threads giving the same bits (tests/test_q8_int8_avx2.py checks it against float64 at the codes' extremes).

Measured on an AMD EPYC Zen 3 (2 cores of a KVM guest, AVX2, no AVX-512; load average ~7 from other jobs), one
thread, process CPU clock, contestants interleaved, matrices cycled from memory (bench/RESULTS.md,
2026-11-26): SmolLM2's head, 576 x 49152, 3.1 ms against float32 F.linear's 10.7 ms (3.4x faster) and
the chunked path's 22.5 ms (7.2x); 1.5x a read of the same bytes (2.1 ms, torch.sum at 14 GB/s). Smaller matrices
(576 x 576 .. 3072 x 768): 2.0-2.3x faster than float32, 1.5-2.5x the read; 576 x 192 (K, V) no faster than
float32 (0.9x: a call's fixed costs; QuantizedLinear's Python added ~40 us to the int8 kernel's bare call there).
Two threads against one (wall clock, interleaved): 0.6-2.7x, which on 2 cores shared with ~7 busy processes
measures the neighbours more than the kernel (the helper thread is often not scheduled; kernel_build.POOL then
lets the caller do the blocks, so it does not wait for it). Whole model, SmolLM2-135M's Q4_1 GGUF (its head and
attention outputs Q8_0), one decoding step on the CPU clock, 1 thread, 24 steps x 5 interleaved rounds
(benchmarks.quantized.step_costs; load ~6): 182.7 ms with attnlab's kernels against 193.6 ms with use_kernel=False
(1.06x; the 4-bit layers, ~170 ms of the step, had no AVX2 kernel on this branch and stayed chunked in both).

rows_product (prefill: 5 .. QuantizedLinear.MANY_ROWS rows; layers/quantized.py) runs the same tile step over
several rows: every row is rounded first, exactly as the one-row kernel rounds it, then each tile, read once, serves
ROWS_CHUNK rows while it is in L1, each row's 64 accumulators kept in L1 between tiles. Both variants (AVX-512 VNNI
and AVX2, the same choice as the one-row kernel's) share that kernel's tile and output code, so every row gets its
bits exactly (tests/test_rows_product.py). Measured on a 2-core AMD EPYC Zen 5 (AVX-512 VNNI, load average 3-4), one
thread, process CPU clock, interleaved rounds, 2026-11-28: 32 rows of 576 x 576 0.08 ms against 0.23 ms row by
row (2.8x) and 1.4 ms for dequantize + F.linear; 576 x 1536 0.19 ms (2.8x, 25x); SmolLM2's head (49152 x 576)
5.9 ms against 34 ms row by row (5.8x); 1.4-5.7x faster than row by row from 5 to 512 rows on SmolLM2's five shapes
(`python -m attnlab.benchmarks.q8_0_rows`, 2026-12-07, load 3.4: bench/results/q8_0-rows-2026-12-07/rows.log).
SmolLM2-135M all in Q8_0, generate's 32-token prefill (`python -m attnlab.benchmarks.llama_cpp --model F`, load
average 1.3-1.8): 1122 tokens/s against llama.cpp pp32's 445 at one thread (2.52x; 526, 1.19x, the row by row
dispatch right after) and 1454 against 859 at two (1.69x; 633, 0.74x before); logs in
bench/results/q8_0-prefill-2026-11-28/. Non-finite activations: the kernel returns 1 without writing y (rounding
would make them finite garbage); gemv() then returns None and the caller multiplies that row by the dequantized
weight (float32's own NaN / inf).
"""

from __future__ import annotations

import torch

from attnlab.layers import kernel_build, kernel_source, kernel_variants

BLOCK_N = 64  # outputs per tile
BLOCK_K = 32  # inputs per tile (one Q8_0 block)
CODE_BYTES = 2048  # a tile's codes (64 outputs x 32 inputs, a byte each), then its 64 fp16 d
TILE_BYTES = 2176
MAX_K = 16384  # the kernel rounds x into two stack arrays of this many bytes
ROWS_CHUNK = 16  # rows_product: rows sharing each tile while it is in L1 (16 x 64 float accumulators = 4 KB)

_BLOCK_SUM = "xs[b] = 128 * total;  // 128 X_b: the +128 of the codes, taken back out exactly"
_CONSTANTS_512 = r"""
        const __m512i c254 = _mm512_set1_epi32(254);"""
_TILE_512 = kernel_source.byte_quads("0", "8", 8) + r"""
            const __m512i xsb = _mm512_set1_epi32(xs[b]);
#define ACC(a, h, l, g) { \
                const __m512i t = _mm512_sub_epi32(_mm512_add_epi32(_mm512_mullo_epi32(h, c254), l), xsb); \
                const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(dm + 16 * g))); \
                a = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(t), a); }
"""
_SOURCE = kernel_source.tile_gemv_512("attnlab_q8_0_gemv", TILE_BYTES, CODE_BYTES, "int32_t", _BLOCK_SUM,
                                      _CONSTANTS_512, _TILE_512)
_SOURCE_ROWS = kernel_source.tile_rows_512("attnlab_q8_0_rows", TILE_BYTES, CODE_BYTES, "int32_t", _BLOCK_SUM,
                                           _CONSTANTS_512, _TILE_512)

# AVX2: tile p (block b) added into a[8] from X (xq) and the block sums xs, the one-row and multi-row kernels' step
_TILE_AVX2 = r"""
            const int16_t* xb = xq + 32 * b;
            const __m256i xsb = _mm256_set1_epi32(xs[b]);
            const uint8_t* dm = p + 2048;  // 64 float16 d, in output order
            for (int half = 0; half < 2; ++half) {  // outputs 32 half .. 32 half + 31: 8 accumulators
                // t[j]: outputs 32 half + 4j .. + 3, two int32 lanes each (inputs 0+1, 2+3 of every quad), each
                // lane at most 2*255*32385*8 = 132,130,800; an output's block sum 264,261,600 < 2^31
                // (named registers, not an array: GCC spilled an array's products to the stack)
                __m256i t0 = _mm256_setzero_si256(), t1 = t0, t2 = t0, t3 = t0, t4 = t0, t5 = t0, t6 = t0, t7 = t0;
                #pragma GCC unroll 2
                for (int e = 0; e < 8; ++e) {
                    const uint8_t* q = p + e * 256 + 128 * half;  // 32 outputs x inputs 4e .. 4e + 3
                    const __m256i xv = _mm256_set1_epi64x(*(const int64_t*)(xb + 4 * e));  // X of the 4 inputs, x4
#define ATTNLAB_STEP(t, j) t = _mm256_add_epi32(t, _mm256_madd_epi16(_mm256_cvtepu8_epi16( \
                        _mm_loadu_si128((const __m128i*)(q + 16 * j))), xv));
                    ATTNLAB_STEP(t0, 0) ATTNLAB_STEP(t1, 1) ATTNLAB_STEP(t2, 2) ATTNLAB_STEP(t3, 3)
                    ATTNLAB_STEP(t4, 4) ATTNLAB_STEP(t5, 5) ATTNLAB_STEP(t6, 6) ATTNLAB_STEP(t7, 7)
#undef ATTNLAB_STEP
                }
                // vphaddd: outputs 0 1 4 5 | 2 3 6 7 of each 8; their d, 4 dwords (0 1)(2 3)(4 5)(6 7), to that
                // order, (0 1)(4 5)(2 3)(6 7)
                const uint8_t* dh = dm + 64 * half;
                __m256* ah = a + 4 * half;
#define ATTNLAB_BLOCK(i, ta, tb) ah[i] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_shuffle_epi32( \
                    _mm_loadu_si128((const __m128i*)(dh + 16 * i)), _MM_SHUFFLE(3, 1, 2, 0))), \
                    _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_hadd_epi32(ta, tb), xsb)), ah[i]);
                ATTNLAB_BLOCK(0, t0, t1) ATTNLAB_BLOCK(1, t2, t3) ATTNLAB_BLOCK(2, t4, t5) ATTNLAB_BLOCK(3, t6, t7)
#undef ATTNLAB_BLOCK
            }"""
# AVX2: y[64 ob ..] (those below n) = s2 a (+ bias), a in vphaddd's order
_OUT_AVX2 = r"""
        const __m256 vs2 = _mm256_set1_ps(s2);
        const int64_t o0 = ob * 64, m = (n - o0) < 64 ? (n - o0) : 64;
        alignas(32) float out[64];
        for (int j = 0; j < 8; ++j) _mm256_store_ps(out + 8 * j, _mm256_mul_ps(attnlab_in_order(a[j]), vs2));
        for (int64_t i = 0; i < m; ++i) y[o0 + i] = has_bias ? out[i] + bias[o0 + i] : out[i];"""
_STORE_X_AVX2 = "attnlab_store16(xq + i, X);"
_PRELUDE_AVX2 = kernel_build.POOL + kernel_source.PRELUDE_AVX2 + r"""
// AVX2 (no vpdpbusd): x's two pieces are joined into one int16, X_j = 254 hi_j + lo_j (|X_j| <= 254*127 + 127 =
// 32385 < 32767), and each code widened to int16 (vpmovzxbw, q + 128 in 0..255) meets it in vpmaddwd, which adds
// products in pairs into int32 without saturation: |pair| <= 2*255*32385 = 16,516,350. vpmaddubsw (u8 x s8, pairs
// into a SATURATING int16) would overflow here: 2*255*127 = 64770 > 32767."""

_SOURCE_AVX2 = _PRELUDE_AVX2 + kernel_source.tile_gemv_head("attnlab_q8_0_gemv") + r"""{
    alignas(64) int16_t xq[MAX_K];  // X_j
    alignas(64) int32_t xs[MAX_K / 32];    // 128 X_b per block
    const int64_t k = kb * 32;""" + kernel_source.scan_avx2(masked=False) + kernel_source.round_blocks(
    256,     _STORE_X_AVX2, _BLOCK_SUM) + kernel_source.pool_threads(
    "nb * kb * TILE_BYTES") + r"""
    attnlab_pool::for_blocks(nb, nt, [&](int64_t ob) {  // block ob: 64 outputs
        // a[j]: outputs 8j .. 8j + 7 of the block in the order vphaddd leaves them, 0 1 4 5 2 3 6 7
        __m256 a[8];
        for (int j = 0; j < 8; ++j) a[j] = _mm256_setzero_ps();
        const uint8_t* wt = w + ob * kb * TILE_BYTES;
        for (int64_t b = 0; b < kb; ++b) {
            const uint8_t* p = wt + b * TILE_BYTES;  // no software prefetch: kernel_source.tile_gemv_512
""" + _TILE_AVX2 + r"""
        }""" + _OUT_AVX2 + r"""
    });
    return 0;
}
"""
_SOURCE_ROWS_AVX2 = _PRELUDE_AVX2 + kernel_source.round_row(
    256, "int32_t", "int16_t* xq = (int16_t*)xr;  // X_j (16-byte aligned: new[] and 2 k r)", _STORE_X_AVX2,
    _BLOCK_SUM) + kernel_source.tile_rows("attnlab_q8_0_rows", TILE_BYTES, "int32_t", "", r"""
                    const int16_t* xq = (const int16_t*)xr;
                    const int32_t* xs = xsr;
                    __m256 a[8];  // as the one-row kernel's, kept between tiles in ar
                    for (int j = 0; j < 8; ++j) a[j] = _mm256_load_ps(ar + 8 * j);""" + _TILE_AVX2 + r"""
                    for (int j = 0; j < 8; ++j) _mm256_store_ps(ar + 8 * j, a[j]);""", r"""
                const float s2 = s2r;
                float* y = yr;
                __m256 a[8];
                for (int j = 0; j < 8; ++j) a[j] = _mm256_load_ps(ar + 8 * j);""" + _OUT_AVX2)
_SOURCE, _SOURCE_AVX2, _SOURCE_ROWS, _SOURCE_ROWS_AVX2 = kernel_source.sized_all(
    (_SOURCE, _SOURCE_AVX2, _SOURCE_ROWS, _SOURCE_ROWS_AVX2), MAX_K=MAX_K, TILE_BYTES=TILE_BYTES, ROWS_CHUNK=ROWS_CHUNK)

# one-row and rows_product's kernels: fastest first; both follow the same choice (switch and flags), so that the
# rows get the one-row kernel's bits
SOURCES = ((kernel_variants.VNNI_F16C, _SOURCE), (kernel_variants.AVX2, _SOURCE_AVX2))
ROWS_SOURCES = ((kernel_variants.VNNI_F16C, _SOURCE_ROWS), (kernel_variants.AVX2, _SOURCE_ROWS_AVX2))
_compiled, _compiled_rows = kernel_variants.tiled_builds("q8_0", SOURCES, ROWS_SOURCES, "Q8_0 products")
available, unavailable_reason, gemv, rows_available, rows_product = kernel_variants.tiled_calls(globals())


def pack(qweight: torch.Tensor, scale: torch.Tensor) -> tuple[torch.Tensor]:
    """Q8_0 buffers ((n, k) int8 codes, (n, k/32) float16 d) -> (tiles,) with tiles a (ceil(n/64), k/32, 2176)
    uint8 tensor (padded outputs have d = 0); see the module docstring."""
    n, k = qweight.shape
    if k % BLOCK_K:
        raise ValueError(f"the Q8_0 kernel needs k divisible by {BLOCK_K}, got {k}")
    if k > MAX_K:
        raise ValueError(f"the Q8_0 kernel takes at most {MAX_K} inputs per row, got {k}")
    nb, kb = -(-n // BLOCK_N), k // BLOCK_K
    tiles = torch.empty(nb, kb, TILE_BYTES, dtype=torch.uint8)
    step = 64  # output blocks per pass: the temporaries stay ~2 MB (SmolLM2's head has 768 blocks, 30 MB packed)
    for b0 in range(0, nb, step):
        b1 = min(nb, b0 + step)
        rows = slice(b0 * BLOCK_N, min(n, b1 * BLOCK_N))
        codes = torch.zeros((b1 - b0) * BLOCK_N, k, dtype=torch.uint8)
        codes[: rows.stop - rows.start] = qweight[rows].view(torch.uint8) ^ 0x80  # q + 128 (two's complement)
        # (ob, g, i, kb, e, r): output = 64 ob + 16 g + i, input = 32 kb + 4 e + r
        tiles[b0:b1, :, :2048] = codes.reshape(b1 - b0, 4, 16, kb, 8, 4).permute(0, 3, 4, 1, 2, 5).reshape(
            b1 - b0, kb, 2048)
        d = torch.zeros((b1 - b0) * BLOCK_N, kb, dtype=torch.float16)
        d[: rows.stop - rows.start] = scale[rows]
        tiles[b0:b1, :, 2048:] = d.reshape(b1 - b0, 64, kb).transpose(1, 2).contiguous().view(torch.uint8)
    return (tiles,)


def pack_layer(buffers: dict[str, torch.Tensor], bias: torch.Tensor | None) -> tuple:
    """A QuantizedLinear's Q8_0 buffers and bias -> gemv's arguments between x and n."""
    tiles, = pack(buffers["qweight"], buffers["scale"])
    return tiles, kernel_variants.layer_bias(bias)
