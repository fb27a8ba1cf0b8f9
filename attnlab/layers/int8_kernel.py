"""One-row int8 weight-only product on x86 CPUs with AVX512-VNNI or AVX2: y = x (scale * q)^T + bias at memory speed.

Why a hand-written kernel: a decoding step of one sequence multiplies one row by every weight matrix, so its
time is the bytes of the weights over the memory bandwidth. Storing int8 codes cuts the bytes 4x, but only if
the product reads them at that speed. Measured on this project's Xeon (Sapphire Rapids), one thread, matrices
cycled from memory (bench/RESULTS.md, `python -m attnlab.benchmarks.quantized`): fbgemm's dynamically
quantized linear 1.14-1.36x of the weight-reading floor plus ~15 us of fixed cost per call; torch's
`_weight_int8pack_mm` 0.3x the speed of float32; torch.compile'd dequantise-and-multiply 1.7-2.5x of the
floor (inductor keeps one accumulator per output strip). This kernel (its VNNI variant): 0.94-1.13x of the floor,
1.3 us per call, and ~200x smaller activation rounding error than fbgemm (fbgemm rounds x to 8 bits; see below).

How: the codes are repacked once as (ceil(n/64), ceil(k/4), 64, 4) int8, so four consecutive input positions
of 64 outputs are 256 contiguous bytes: one stream the prefetcher follows. Per call, x is rounded to two int8
pieces, hi = round(x / s1) and lo = round((x - hi s1) / s2) with s1 = max|x| / 127 and s2 = s1 / 254 (about
15 bits of x: rows with outlier channels, such as SmolLM2's, keep their small channels), each stored as
uint8 (+128) for `vpdpbusd` (uint8 x int8 -> int32, 64 products per instruction), eight independent
accumulators. The +128 offset comes back out through the codes' row sums; scale and bias are applied at the
end. Blocks of 64 outputs are shared among `threads` threads (kernel_build.POOL).

Non-finite activations: float32's product turns a NaN or an infinity in x into NaN / inf outputs, but rounding
would make them finite garbage, so the kernel checks x first and returns 1 without writing y for such a row;
gemv() then returns None and the caller multiplies that row by the dequantized weight (float32's own answer).

AVX2 variant (_SOURCE_AVX2, for CPUs without AVX-512 VNNI: AMD Zen 2-3, Intel Haswell to Ice Lake client), same
pack() and the same two pieces of x. AVX2 has no vpdpbusd, and its byte product vpmaddubsw adds pairs of u8 x s8
products into a SATURATING int16 (2*255*127 = 64770 > 32767 with 8-bit pieces: why fbgemm rounds x to 127 levels
on such CPUs, quantized.fbgemm_levels). So the pieces are joined into one int16, X_j = 254 hi_j + lo_j (|X_j| <=
32385), the codes widened to int16 (vpmovsxbw) and multiplied with vpmaddwd, which adds pairs into int32 with no
saturation (a pair at most 2*127*32385 = 8,225,790); signed codes times signed X need no +128 offset (rowsum is
not read). The int32 sums are exact over 256 inputs at a time (at most 1,052,948,480 < 2^31 per output), then
added in float32, so the error is x's rounding plus float32 summation, as for the VNNI variant. Each 256-input
chunk of a block is read as two halves of 32 outputs (8 accumulators in registers), the second from L1.
Measured on an AMD EPYC Zen 3 (2 cores of a KVM guest, AVX2, no AVX-512; load average ~7 from other jobs), one
thread, process CPU clock, interleaved, matrices cycled from memory (bench/RESULTS.md,
2026-11-26), against fbgemm's one-row product (reduce_range, 127 levels, one pass: x without outliers), as
QuantizedLinear calls them: 0.37-0.86x of fbgemm's time on every SmolLM2 / GPT-2 matrix (576 x 192: 0.062 against
0.168 ms; 3072 x 768: 0.272 against 0.333; the 576 x 49152 head: 3.08 against 3.59), the bare calls 0.30-0.89x;
1.75-3.5x faster than float32 F.linear except 576 x 192 (0.95x); 1.5-2.8x a read of the same bytes (torch.sum,
11-15 GB/s), 4.0x on 576 x 192, where a call's fixed costs dominate. So it is shipped (SOURCES, after the VNNI
variant) and fbgemm runs only where neither variant can. Rows with outlier channels, most of SmolLM2's, cost
fbgemm a second pass (its residual); the kernel never needs one. Two threads against one (wall clock) gave
1.3-1.9x on the larger matrices, on 2 cores shared with other jobs: not a clean measurement.

Built once per machine by layers/kernel_build.py (plain C++, compiled into attnlab's private cache folder and
imported from there: nothing is read from a shared temporary folder; ~1 s the first time, later processes load
the file). Where the CPU lacks AVX2 (and AVX512-VNNI), no compiler works, or ATTNLAB_INT8_KERNEL=fbgemm is set,
`available()` is False with the reason in `unavailable_reason()` (said once per process in a warning), and
layers/quantized.py uses fbgemm instead. ATTNLAB_INT8_KERNEL=avx2 takes the AVX2 variant even on a VNNI CPU.
"""

from __future__ import annotations

import torch

from attnlab.layers import kernel_build, kernel_source, kernel_variants

# the checks and build every format shares (layers/kernel_variants.py), also under the names that tests and
# layers/quantized.fbgemm_levels use here
from attnlab.layers.kernel_variants import AVX2, CHOSEN, build  # noqa: F401

_cpu_flags, _cpu_reason, _pick = kernel_variants.cpu_flags, kernel_variants.cpu_reason, kernel_variants.pick

BLOCK_N = 64  # outputs per block: one 64-byte line of codes per input position
GROUP_K = 4  # input positions per vpdpbusd lane
MAX_K = 8192  # the kernel rounds x into two stack arrays of this many bytes
FLAGS = kernel_variants.VNNI

_HEAD = r"""
extern "C" int attnlab_int8_gemv(const float* __restrict__ x, const int8_t* __restrict__ w,
                       const float* __restrict__ scale, const float* __restrict__ bias,
                       const int32_t* __restrict__ rowsum, float* __restrict__ y,
                       int64_t nb, int64_t k4, int64_t k, int64_t n, int64_t has_bias, int64_t threads)
"""

_SOURCE = kernel_build.POOL + kernel_source.prelude_512() + _HEAD + r"""{
    // x -> hi, lo as uint8 (+128); positions k .. 4 k4 - 1 are 0 (their codes are 0 too)
    alignas(64) uint8_t xh[MAX_K], xl[MAX_K];
    const int64_t kp = k4 * 4;""" + kernel_source.scan_512(masked=True) + r"""
    const __m512i off = _mm512_set1_epi32(128);
    for (int64_t i = 0; i < kp; i += 16) {
        const int64_t r = k - i;
        const __mmask16 mk = r >= 16 ? (__mmask16)0xFFFF : (r <= 0 ? (__mmask16)0 : (__mmask16)((1u << r) - 1));
        const __mmask16 ms = (kp - i) >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (kp - i)) - 1);
        __m512i hi, li;
        attnlab_pieces(_mm512_maskz_loadu_ps(mk, x + i), vs1, vi1, vi2, hi, li);
        _mm_mask_storeu_epi8(xh + i, ms, _mm512_cvtepi32_epi8(_mm512_add_epi32(hi, off)));
        _mm_mask_storeu_epi8(xl + i, ms, _mm512_cvtepi32_epi8(_mm512_add_epi32(li, off)));
    }""" + kernel_source.pool_threads("nb * k4 * 256") + r"""
    attnlab_pool::for_blocks(nb, nt, [&](int64_t b) {  // block b: 64 outputs
        const __m512i z = _mm512_setzero_si512();
        const int8_t* wb = w + b * k4 * 256;
        __m512i h0 = z, h1 = z, h2 = z, h3 = z, l0 = z, l1 = z, l2 = z, l3 = z;
        for (int64_t g = 0; g < k4; ++g) {
            // no software prefetch: a block's 256-byte groups are one stream the hardware prefetcher follows; the
            // four prefetches a group made this kernel 1.12-1.15x a read of its bytes from memory, 0.97-1.01x
            // without (GPT-2-small's shapes, one thread, CPU clock, AMD EPYC Zen 5, 2026-12-07: bench/RESULTS.md)
            const int8_t* p = wb + g * 256;
            const __m512i w0 = _mm512_loadu_si512(p), w1 = _mm512_loadu_si512(p + 64);
            const __m512i w2 = _mm512_loadu_si512(p + 128), w3 = _mm512_loadu_si512(p + 192);
            const __m512i xv = _mm512_set1_epi32(*(const int32_t*)(xh + 4 * g));
            const __m512i xw = _mm512_set1_epi32(*(const int32_t*)(xl + 4 * g));
            h0 = _mm512_dpbusd_epi32(h0, xv, w0); h1 = _mm512_dpbusd_epi32(h1, xv, w1);
            h2 = _mm512_dpbusd_epi32(h2, xv, w2); h3 = _mm512_dpbusd_epi32(h3, xv, w3);
            l0 = _mm512_dpbusd_epi32(l0, xw, w0); l1 = _mm512_dpbusd_epi32(l1, xw, w1);
            l2 = _mm512_dpbusd_epi32(l2, xw, w2); l3 = _mm512_dpbusd_epi32(l3, xw, w3);
        }
        alignas(64) int32_t th[64], tl[64];
        _mm512_store_si512(th, h0); _mm512_store_si512(th + 16, h1);
        _mm512_store_si512(th + 32, h2); _mm512_store_si512(th + 48, h3);
        _mm512_store_si512(tl, l0); _mm512_store_si512(tl + 16, l1);
        _mm512_store_si512(tl + 32, l2); _mm512_store_si512(tl + 48, l3);
        const int64_t o0 = b * 64;
        const int64_t m = (n - o0) < 64 ? (n - o0) : 64;
        for (int64_t j = 0; j < m; ++j) {
            const int32_t c = 128 * rowsum[o0 + j];
            const float acc = s1 * (float)(th[j] - c) + s2 * (float)(tl[j] - c);
            y[o0 + j] = acc * scale[o0 + j] + (has_bias ? bias[o0 + j] : 0.f);
        }
    });
    return 0;
}
"""

_SOURCE_AVX2 = kernel_build.POOL + kernel_source.PRELUDE_AVX2 + r"""
// AVX2 (no vpdpbusd): x's two pieces are joined into one int16, X_j = 254 hi_j + lo_j (|X_j| <= 254*127 + 127 =
// 32385 < 32767), and each code widened to int16 (vpmovsxbw) meets it in vpmaddwd, which adds products in pairs
// into int32 without saturation: |pair| <= 2*127*32385 = 8,225,790. (vpmaddubsw, u8 x s8 in pairs into a
// SATURATING int16, would overflow with 8-bit pieces: 2*255*127 = 64770 > 32767; fbgemm's reason for 127 levels.)
// The codes stay signed and X is signed: no +128 offset, so rowsum is not read.""" + _HEAD + r"""{
    alignas(64) int16_t xq[MAX_K];  // X_j; positions k .. 4 k4 - 1 are 0 (their codes are 0 too)
    alignas(32) static const int32_t ramp[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    const int64_t kp = k4 * 4;""" + kernel_source.scan_avx2(masked=True) + r"""
    for (int64_t i = 0; i < kp; i += 8) {  // writes up to 8 * ceil(kp / 8) <= MAX_K entries
        const int64_t r = k - i;
        const __m256i mk = _mm256_loadu_si256((const __m256i*)(ramp + 8 - (r >= 8 ? 8 : (r <= 0 ? 0 : r))));
        const __m256 v = _mm256_maskload_ps(x + i, mk);
        __m256i hi, li;
        attnlab_pieces(v, vs1, vi1, vi2, hi, li);
        const __m256i X = _mm256_add_epi32(_mm256_mullo_epi32(hi, c254), li);
        attnlab_store16(xq + i, X);
    }""" + kernel_source.pool_threads("nb * k4 * 256") + r"""
    attnlab_pool::for_blocks(nb, nt, [&](int64_t b) {  // block b: 64 outputs
        // f[j]: outputs 8j .. 8j + 7 of the block in the order vphaddd leaves them, 0 1 4 5 2 3 6 7
        __m256 f[8];
        for (int j = 0; j < 8; ++j) f[j] = _mm256_setzero_ps();
        const int8_t* wb = w + b * k4 * 256;
        for (int64_t c = 0; c < k4; c += 64) {  // 256 inputs (16 KB of codes, in L1 for the second half)
            const int64_t ce = c + 64 < k4 ? c + 64 : k4;
            for (int half = 0; half < 2; ++half) {  // outputs 32 half .. 32 half + 31: 8 accumulators
                // t<j>: outputs 32 half + 4j .. + 3, two int32 lanes each (inputs 0+1, 2+3 of every quad): a lane
                // at most 2*127*32385*64 = 526,474,240 over the chunk, an output's two 1,052,948,480 < 2^31
                // (named registers, not an array: GCC kept one of an array's on the stack)
                __m256i t0 = _mm256_setzero_si256(), t1 = t0, t2 = t0, t3 = t0, t4 = t0, t5 = t0, t6 = t0, t7 = t0;
                for (int64_t g = c; g < ce; ++g) {
                    const int8_t* p = wb + g * 256;  // 64 outputs x inputs 4g .. 4g + 3, output-major
                    if (half == 0) {
                        _mm_prefetch((const char*)(p + 2048), _MM_HINT_T0);
                        _mm_prefetch((const char*)(p + 2048 + 64), _MM_HINT_T0);
                        _mm_prefetch((const char*)(p + 2048 + 128), _MM_HINT_T0);
                        _mm_prefetch((const char*)(p + 2048 + 192), _MM_HINT_T0);
                    }
                    const __m256i xv = _mm256_set1_epi64x(*(const int64_t*)(xq + 4 * g));  // X of the 4 inputs, x4
                    const int8_t* ph = p + 128 * half;
#define ATTNLAB_STEP(t, j) t = _mm256_add_epi32(t, _mm256_madd_epi16(_mm256_cvtepi8_epi16( \
                        _mm_loadu_si128((const __m128i*)(ph + 16 * j))), xv));
                    ATTNLAB_STEP(t0, 0) ATTNLAB_STEP(t1, 1) ATTNLAB_STEP(t2, 2) ATTNLAB_STEP(t3, 3)
                    ATTNLAB_STEP(t4, 4) ATTNLAB_STEP(t5, 5) ATTNLAB_STEP(t6, 6) ATTNLAB_STEP(t7, 7)
#undef ATTNLAB_STEP
                }
                // vphaddd: outputs 0 1 4 5 | 2 3 6 7 of each 8, exact; then into float (relative 2^-24 per chunk)
                __m256* fh = f + 4 * half;
                fh[0] = _mm256_add_ps(fh[0], _mm256_cvtepi32_ps(_mm256_hadd_epi32(t0, t1)));
                fh[1] = _mm256_add_ps(fh[1], _mm256_cvtepi32_ps(_mm256_hadd_epi32(t2, t3)));
                fh[2] = _mm256_add_ps(fh[2], _mm256_cvtepi32_ps(_mm256_hadd_epi32(t4, t5)));
                fh[3] = _mm256_add_ps(fh[3], _mm256_cvtepi32_ps(_mm256_hadd_epi32(t6, t7)));
            }
        }
        alignas(32) float out[64];
        for (int j = 0; j < 8; ++j) _mm256_store_ps(out + 8 * j, attnlab_in_order(f[j]));
        const int64_t o0 = b * 64;
        const int64_t m = (n - o0) < 64 ? (n - o0) : 64;
        for (int64_t j = 0; j < m; ++j)
            y[o0 + j] = s2 * out[j] * scale[o0 + j] + (has_bias ? bias[o0 + j] : 0.f);
    });
    return 0;
}
"""
_SOURCE, _SOURCE_AVX2 = (kernel_source.sized(s, MAX_K=MAX_K) for s in (_SOURCE, _SOURCE_AVX2))

SOURCES = ((FLAGS, _SOURCE), (AVX2, _SOURCE_AVX2))  # build()'s variants of this kernel, fastest first
_compiled = kernel_variants.cached_build("int8", SOURCES, "attnlab_int8_gemv", "int8 products use fbgemm")
available, unavailable_reason = kernel_variants.status(lambda: _compiled())


def pack(q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, k) int8 codes -> (ceil(n/64), ceil(k/4), 64, 4) int8 (zero padded) and the (n,) int32 row sums."""
    n, k = q.shape
    if k > MAX_K:
        raise ValueError(f"the int8 kernel takes at most {MAX_K} inputs per row, got {k}")
    nb, k4 = -(-n // BLOCK_N), -(-k // GROUP_K)
    padded = torch.zeros(nb * BLOCK_N, k4 * GROUP_K, dtype=torch.int8)
    padded[:n, :k] = q
    packed = padded.reshape(nb, BLOCK_N, k4, GROUP_K).permute(0, 2, 1, 3).contiguous()
    return packed, q.sum(1, dtype=torch.int32).contiguous()


def pack_layer(buffers: dict[str, torch.Tensor], bias: torch.Tensor | None) -> tuple:
    """A QuantizedLinear's int8 buffers and bias -> gemv's arguments between x and n."""
    codes, rowsum = pack(buffers["qweight"])
    return codes, rowsum, buffers["scale"].float().contiguous(), kernel_variants.layer_bias(bias)


def gemv(x: torch.Tensor, packed: torch.Tensor, rowsum: torch.Tensor, scale: torch.Tensor,
         bias: torch.Tensor | None, n: int, threads: int = 1) -> torch.Tensor | None:
    """x (1, k) float32 contiguous on CPU -> (1, n) float32, or None when x holds a NaN or an infinity (then
    multiply in float32). No checks here (one call per matrix per token): the caller guarantees the dtypes,
    contiguity, k <= MAX_K and that available() is True."""
    y = torch.empty(1, n)
    if _compiled()[0](x.data_ptr(), packed.data_ptr(), scale.data_ptr(), (scale if bias is None else bias).data_ptr(),
                      rowsum.data_ptr(), y.data_ptr(), packed.shape[0], packed.shape[1], x.shape[-1], n,
                      0 if bias is None else 1, threads):
        return None
    return y
