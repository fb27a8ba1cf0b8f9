"""A prompt's self-attention on the CPU in one call: out_i = sum_j softmax_j(s_ij) v_j with s_ij = scale q_i . k_j
(+ the mask's bias) over the keys query i sees, every query head reading its group's key and value head
(grouped-query attention), written straight into the concatenated-heads layout W_O reads.

Why: for a 32-token SmolLM2 prompt (9 query heads, 3 key/value heads, d_head 64) torch 2.13's CPU
scaled_dot_product_attention took ~40 us a layer, one thread, AMD EPYC Zen 5 (2026-11-28), ~1.3 ms of an ~18 ms
Q4_0 prefill at two threads, where the arithmetic (~0.6 M multiply-adds, half of them masked) is a few
microseconds. Its flash kernel is built for long sequences: blocks of 32 or more keys, a full product per block
however many of them the mask hides, buffers per call; given a mask (a padded batch, a prompt after cached tokens)
it scores every key of every block. Here each key head is transposed once, each query row scores only the keys it
sees (from its first to its last unhidden key), the query heads are split over the kernels' pool
(layers/kernel_threads.count()), and no transposed copy of the output is made afterwards.

Where it runs (`takes`): a causal prompt of any length without a bias (as many keys as queries), or a prompt of two
or more tokens with an additive float32 bias (what attnlab.layers.masks.attention_bias builds: a left-padded batch,
a prompt after cached tokens, a sliding window, ALiBi's per-head bias), no dropout, float32 on the CPU, inside
torch.inference_mode (generate's prefill), outside torch.compile, d_head a multiple of 16 up to MAX_D, and the
kernel built here. Anything else (training, forwards under no_grad, decoding steps, other devices) keeps torch's
SDPA. A query row whose keys are all hidden (a padding position) attends over every key with the bias added, as
SDPA does (uniform weights for attnlab's finite masks).

Numerics: float32 throughout, the exponential from a degree-6 polynomial after the usual split into a power of two
(a few units in the last place), scores and sums in another order than torch's: against torch's SDPA the outputs
agree to ~1e-6 of the values' size (tests/test_attention_kernel.py), not bit for bit.
"""

from __future__ import annotations

import functools

import torch
from torch.utils._python_dispatch import is_in_torch_dispatch_mode

from attnlab.layers import kernel_build, kernel_source, kernel_threads, kernel_variants

_SOURCE = kernel_build.POOL + r"""
#pragma GCC target("avx512f,avx512dq")
#include <immintrin.h>
#include <cstdint>
#include <cstring>
#include <new>
""" + kernel_source.EXP_512 + r"""
// R query rows at a time: each key vector (16 keys of K^T) and each value row read from memory serves R rows
constexpr int R = 4;

// the (inclusive) range of keys lo .. hi a query row scores: causal up to i + offset, narrowed by the bias to its
// first and last unhidden key; every key hidden: all of them (SDPA's answer: uniform for a finite mask)
static inline void attnlab_key_range(const float* brow, int64_t i, int64_t offset, int64_t causal, int64_t TK,
                                     int64_t& lo, int64_t& hi) {
    const float hidden = -3.40282347e+38f;  // -FLT_MAX: a mask's hidden key (attnlab.layers.masks)
    lo = 0, hi = causal ? i + offset : TK - 1;
    if (brow) {
        while (lo <= hi && !(brow[lo] > hidden)) ++lo;
        while (hi >= lo && !(brow[hi] > hidden)) --hi;
        if (lo > hi) lo = 0, hi = TK - 1;
    }
}

// lanes of key vector c (keys 16 c .. 16 c + 15) inside lo .. hi
static inline __mmask16 attnlab_lanes(int64_t c, int64_t lo, int64_t hi) {
    const int64_t base = 16 * c;
    if (hi < base || lo > base + 15) return 0;
    const int64_t first = lo > base ? lo - base : 0, last = hi < base + 15 ? hi - base : 15;
    return (__mmask16)(((1u << (last + 1)) - 1) & ~((1u << first) - 1));
}

// out rows += weights (R rows of s, stride TP) times value rows lo .. hi, NV vectors of 16 outputs from column e
template <int NV>
static inline void attnlab_weighted_values(const float* s, int64_t TP, const float* ve, int64_t vt, int64_t lo,
                                           int64_t hi, __m512 (&acc)[R][4]) {
    for (int r = 0; r < R; ++r)
        for (int u = 0; u < NV; ++u) acc[r][u] = _mm512_setzero_ps();
    for (int64_t j = lo; j <= hi; ++j) {
        __m512 w[R];
        for (int r = 0; r < R; ++r) w[r] = _mm512_set1_ps(s[r * TP + j]);
        for (int u = 0; u < NV; ++u) {
            const __m512 x = _mm512_loadu_ps(ve + j * vt + 16 * u);
            for (int r = 0; r < R; ++r) acc[r][u] = _mm512_fmadd_ps(w[r], x, acc[r][u]);
        }
    }
}

// q (B, H, Tq, D) and k, v (B, G, Tk, D) by strides (last one 1) -> out (B, Tq, H * D) contiguous; query head h
// reads key / value head h / (H / G). Which keys query i sees: with causal, keys 0 .. i + Tk - Tq (the last query
// is the last key: a prompt after Tk - Tq cached tokens); with an additive bias (B|1, H|1, Tq|1, Tk by strides,
// 0 for a broadcast dimension, last stride 1), the keys from its first to its last key whose bias is above -FLT_MAX
// (a mask's hidden keys hold -FLT_MAX or -inf), the bias added to their scores (attnlab_key_range). D a multiple of
// 16.
extern "C" int attnlab_causal_attention(const float* __restrict__ q, int64_t qb, int64_t qh, int64_t qt,
                                        const float* __restrict__ k, int64_t kb, int64_t kh, int64_t kt,
                                        const float* __restrict__ v, int64_t vb, int64_t vh, int64_t vt,
                                        const float* __restrict__ bias, int64_t bb, int64_t bh, int64_t bi,
                                        float* __restrict__ out, int64_t B, int64_t H, int64_t G, int64_t T,
                                        int64_t TK, int64_t D, int64_t causal, int64_t scale_bits, int64_t threads)
{
    float scale;
    const uint32_t bits = (uint32_t)scale_bits;
    std::memcpy(&scale, &bits, sizeof scale);
    const int64_t TP = (TK + 31) / 32 * 32;  // keys padded to whole pairs of vectors of 16 (zeros)
    // every key head transposed once: kt_all[((b G + g) D + d) TP + j] = k_j[d] of head g in row b of the batch
    float* kt_all = (float*)::operator new(B * G * D * TP * sizeof(float), std::align_val_t(64), std::nothrow);
    // R query rows' scores, then their weights: R TP floats for each job
    float* s_all = (float*)::operator new(B * H * R * TP * sizeof(float), std::align_val_t(64), std::nothrow);
    if (!kt_all || !s_all) {
        if (kt_all) ::operator delete(kt_all, std::align_val_t(64));
        if (s_all) ::operator delete(s_all, std::align_val_t(64));
        return 2;
    }
    for (int64_t b = 0; b < B; ++b)
        for (int64_t g = 0; g < G; ++g) {
            const float* kg = k + b * kb + g * kh;
            for (int64_t d = 0; d < D; ++d) {
                float* row = kt_all + ((b * G + g) * D + d) * TP;
                for (int64_t j = 0; j < TK; ++j) row[j] = kg[j * kt + d];
                for (int64_t j = TK; j < TP; ++j) row[j] = 0.f;
            }
        }
    const int64_t per = H / G, offset = TK - T;
    const __m512 vscale = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-__builtin_inff());
    // a thread per >= 64 K multiply-adds (about as long as waking one): a few tokens stay on one thread
    const int64_t most = (B * H * T * TK * D / 2) >> 16, nt = threads < most ? threads : (most > 1 ? most : 1);
    attnlab_pool::for_blocks(B * H, nt, [&](int64_t job) {  // a job: one query head of one row of the batch
        const int64_t b = job / H, h = job % H, g = h / per;
        const float* kt_ = kt_all + (b * G + g) * D * TP;
        const float* vg = v + b * vb + g * vh;
        float* s = s_all + job * R * TP;
        for (int64_t i0 = 0; i0 < T; i0 += R) {
            // R rows i0 .. i0 + R - 1 (past T: the last row again, not stored), each with its own key range
            const float* qi[R];
            const float* brow[R];
            int64_t lo[R], hi[R], blo = TK, bhi = -1;
            for (int r = 0; r < R; ++r) {
                const int64_t i = i0 + r < T ? i0 + r : T - 1;
                qi[r] = q + b * qb + h * qh + i * qt;
                brow[r] = bias ? bias + b * bb + h * bh + i * bi : nullptr;
                attnlab_key_range(brow[r], i, offset, causal, TK, lo[r], hi[r]);
                blo = lo[r] < blo ? lo[r] : blo;
                bhi = hi[r] > bhi ? hi[r] : bhi;
            }
            const int64_t c0 = blo / 16, c1 = bhi / 16;  // the vectors of 16 keys any of the rows scores
            // scores: two key vectors by R rows (8 chains), over d; K^T's vectors read once for the R rows
            __m512 m[R];
            for (int r = 0; r < R; ++r) m[r] = ninf;
            for (int64_t c = c0; c <= c1; c += 2) {
                __m512 a[R][2];
                for (int r = 0; r < R; ++r) a[r][0] = a[r][1] = _mm512_setzero_ps();
                const float* col = kt_ + 16 * c;
                for (int64_t d = 0; d < D; ++d) {
                    const __m512 k0 = _mm512_load_ps(col + d * TP), k1 = _mm512_load_ps(col + d * TP + 16);
                    for (int r = 0; r < R; ++r) {
                        const __m512 x = _mm512_set1_ps(qi[r][d]);
                        a[r][0] = _mm512_fmadd_ps(x, k0, a[r][0]);
                        a[r][1] = _mm512_fmadd_ps(x, k1, a[r][1]);
                    }
                }
                for (int r = 0; r < R; ++r)
                    for (int u = 0; u < 2 && c + u <= c1; ++u) {
                        const __mmask16 seen = attnlab_lanes(c + u, lo[r], hi[r]);
                        __m512 sc = _mm512_mul_ps(a[r][u], vscale);
                        if (brow[r]) sc = _mm512_add_ps(sc, _mm512_maskz_loadu_ps(seen, brow[r] + 16 * (c + u)));
                        sc = _mm512_mask_blend_ps(seen, ninf, sc);
                        _mm512_store_ps(s + r * TP + 16 * (c + u), sc);
                        m[r] = _mm512_max_ps(m[r], sc);
                    }
            }
            __m512 inv[R];
            for (int r = 0; r < R; ++r) {  // weights: exp(score - max) on the row's keys, 0 on the block's others
                const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(m[r]));
                __m512 total = _mm512_setzero_ps();
                float* sr = s + r * TP;
                for (int64_t c = c0; c <= c1; ++c) {
                    const __m512 e = attnlab_exp16(_mm512_sub_ps(_mm512_load_ps(sr + 16 * c), mx));
                    const __m512 p = _mm512_maskz_mov_ps(attnlab_lanes(c, lo[r], hi[r]), e);
                    _mm512_store_ps(sr + 16 * c, p);
                    total = _mm512_add_ps(total, p);
                }
                inv[r] = _mm512_set1_ps(1.f / _mm512_reduce_add_ps(total));
            }
            // out: up to 64 of the head's outputs at a time over the block's keys, each value row read once for
            // the R rows
            for (int64_t e = 0; e < D; e += 64) {
                __m512 acc[R][4];
                const int64_t nv = (D - e) / 16 < 4 ? (D - e) / 16 : 4;
                const float* ve = vg + e;
                switch (nv) {
                    case 1: attnlab_weighted_values<1>(s, TP, ve, vt, blo, bhi, acc); break;
                    case 2: attnlab_weighted_values<2>(s, TP, ve, vt, blo, bhi, acc); break;
                    case 3: attnlab_weighted_values<3>(s, TP, ve, vt, blo, bhi, acc); break;
                    default: attnlab_weighted_values<4>(s, TP, ve, vt, blo, bhi, acc); break;
                }
                for (int r = 0; r < R && i0 + r < T; ++r) {
                    float* o = out + (b * T + i0 + r) * H * D + h * D + e;
                    for (int u = 0; u < nv; ++u) _mm512_storeu_ps(o + 16 * u, _mm512_mul_ps(acc[r][u], inv[r]));
                }
            }
        }
    });
    ::operator delete(kt_all, std::align_val_t(64));
    ::operator delete(s_all, std::align_val_t(64));
    return 0;
}
"""

FLAGS = ("avx512f", "avx512dq")  # AVX-512 only: elsewhere torch's SDPA runs, as quick as plain loops would be
MAX_D = 256  # d_head at most this
_SOURCES = ((FLAGS, _SOURCE),)

_build = kernel_variants.cached_build("causal_attention", _SOURCES, "attnlab_causal_attention",
                                      "a prompt's attention runs torch's SDPA")


@functools.cache
def _compiled():
    """The kernel, or (None, why not). A CPU without AVX-512 (or ATTNLAB_INT8_KERNEL=fbgemm) is no fault and said
    nowhere, since SDPA serves it as before; only a failed build or a missing compiler is (once, by build)."""
    reason = kernel_variants.cpu_reason(FLAGS)
    return (None, reason) if reason else _build()


available = kernel_variants.status(lambda: _compiled())[0]


def takes(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None = None,
          is_causal: bool = True) -> bool:
    """Does Attention hand this prompt's q (batch, heads, T, d) and k, v (batch, kv heads, T_k, d) to the kernel:
    causal without a bias (T_k = T: a fresh prompt), or an additive float32 bias broadcastable to (batch, heads, T,
    T_k) (a padded batch, a prompt after T_k - T cached tokens, a window: the masks attnlab.layers.masks builds)
    with T >= 2 (a decoding step keeps its own path); float32 on the CPU, inside torch.inference_mode (generation)
    with no dispatch mode watching (torch's FLOP counter, tracers), not being compiled, last dimension of stride 1,
    d a multiple of 16 up to MAX_D, heads a multiple of kv heads, and the kernel built here?

    Why inference mode and not merely no autograd: its numbers are not SDPA's bits, and two forwards a user or a
    tool compares, one with autograd and one without (attribution patching's clean and corrupted runs), must stay
    one computation; generation never compares itself with an autograd forward."""
    if bias is None:
        shaped = is_causal and q.dim() == 4 and k.dim() == 4 and q.shape[2] == k.shape[2]
    else:
        shaped = (not is_causal and q.dim() == 4 and k.dim() == 4 and bias.dtype == torch.float32
                  and bias.device.type == "cpu" and q.shape[2] >= 2 and bias.dim() <= 4
                  and _broadcasts(bias.shape, (q.shape[0], q.shape[1], q.shape[2], k.shape[2])))
    return (shaped and q.dtype == torch.float32 and k.dtype == torch.float32 and v.dtype == torch.float32
            and q.device.type == "cpu" and torch.is_inference_mode_enabled() and not is_in_torch_dispatch_mode()
            and k.shape == v.shape and q.shape[0] == k.shape[0] and q.shape[3] == k.shape[3]
            and 0 < q.shape[2] <= k.shape[2] and q.shape[3] % 16 == 0 and q.shape[3] <= MAX_D
            and q.shape[1] % k.shape[1] == 0 and q.stride(-1) == 1 and k.stride(-1) == 1 and v.stride(-1) == 1
            and not torch.compiler.is_compiling() and available())


def _broadcasts(shape, full) -> bool:
    """Does a bias of `shape` broadcast to `full` (batch, heads, q, k) with its last dimension whole?"""
    shape = (1,) * (4 - len(shape)) + tuple(shape)
    return shape[3] == full[3] and all(a in (1, b) for a, b in zip(shape[:3], full[:3], strict=True))


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
           bias: torch.Tensor | None = None) -> torch.Tensor:
    """softmax(scale q k^T + bias) v per head -> (batch, T, heads * d), the heads concatenated: causal (bottom-right:
    the last query sees every key) without a bias, else the bias's keys only; the caller checks takes() first."""
    batch, heads, t, d = q.shape
    out = torch.empty(batch, t, heads * d)
    strides, pointer = (0, 0, 0), 0
    if bias is not None:
        bias = bias.reshape((1,) * (4 - bias.dim()) + tuple(bias.shape))
        if bias.stride(-1) != 1:
            bias = bias.contiguous()
        strides = tuple(0 if bias.shape[i] == 1 else bias.stride(i) for i in range(3))
        pointer = bias.data_ptr()
    if _compiled()[0](q.data_ptr(), q.stride(0), q.stride(1), q.stride(2), k.data_ptr(), k.stride(0), k.stride(1),
                      k.stride(2), v.data_ptr(), v.stride(0), v.stride(1), v.stride(2), pointer, *strides,
                      out.data_ptr(), batch, heads, k.shape[1], t, k.shape[2], d, int(bias is None),
                      kernel_variants.float_bits(scale), kernel_threads.count()):
        raise MemoryError("attnlab's attention kernel could not allocate its buffers")
    return out
