"""Causal self-attention of a short prompt on the CPU in one call: out_i = sum_{j <= i} softmax_j(s_ij) v_j with
s_ij = scale q_i . k_j, every query head reading its group's key and value head (grouped-query attention), written
straight into the concatenated-heads layout W_O reads.

Why: for a 32-token SmolLM2 prompt (9 query heads, 3 key/value heads, d_head 64) torch 2.13's CPU
scaled_dot_product_attention took ~40 us a layer, one thread, AMD EPYC Zen 5 (2026-11-28), ~1.3 ms of an ~18 ms
Q4_0 prefill at two threads, where the arithmetic (~0.6 M multiply-adds, half of them masked) is a few
microseconds. Its flash kernel is built for long sequences: blocks of 32 or more keys, a full product per block
however many of them the mask hides, buffers per call. Here each key head is transposed once, each query row
scores only the keys it sees, the query heads are split over the kernels' pool (layers/kernel_threads.count()),
and no transposed copy of the output is made afterwards.

Where it runs (`takes`): a fresh causal prompt (as many keys as queries, no bias, no dropout) of at most MAX_T
tokens, float32 on the CPU, inside torch.inference_mode (generate's prefill), outside torch.compile, d_head a
multiple of 16 up to MAX_D, and the kernel built here. Anything else (training, forwards under no_grad, a prompt
after cached tokens, padding, long prompts, other devices) keeps torch's SDPA.

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
// q (B, H, T, D) and k, v (B, G, T, D) by strides (last one 1) -> out (B, T, H * D) contiguous; query head h reads
// key / value head h / (H / G); query i sees keys 0 .. i. D a multiple of 16.
extern "C" int attnlab_causal_attention(const float* __restrict__ q, int64_t qb, int64_t qh, int64_t qt,
                                        const float* __restrict__ k, int64_t kb, int64_t kh, int64_t kt,
                                        const float* __restrict__ v, int64_t vb, int64_t vh, int64_t vt,
                                        float* __restrict__ out, int64_t B, int64_t H, int64_t G, int64_t T,
                                        int64_t D, int64_t scale_bits, int64_t threads)
{
    float scale;
    const uint32_t bits = (uint32_t)scale_bits;
    std::memcpy(&scale, &bits, sizeof scale);
    const int64_t TP = (T + 15) / 16 * 16;  // keys padded to whole vectors of 16 (T <= MAX_T)
    // every key head transposed once: kt_all[((b G + g) D + d) TP + j] = k_j[d] of head g in row b of the batch
    float* kt_all = (float*)::operator new(B * G * D * TP * sizeof(float), std::align_val_t(64), std::nothrow);
    if (!kt_all) return 2;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t g = 0; g < G; ++g) {
            const float* kg = k + b * kb + g * kh;
            for (int64_t d = 0; d < D; ++d) {
                float* row = kt_all + ((b * G + g) * D + d) * TP;
                for (int64_t j = 0; j < T; ++j) row[j] = kg[j * kt + d];
                for (int64_t j = T; j < TP; ++j) row[j] = 0.f;
            }
        }
    const int64_t per = H / G;
    const __m512 vscale = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-__builtin_inff());
    // a thread per >= 64 K multiply-adds (about as long as waking one): a few tokens stay on one thread
    const int64_t most = (B * H * T * T * D / 2) >> 16, nt = threads < most ? threads : (most > 1 ? most : 1);
    attnlab_pool::for_blocks(B * H, nt, [&](int64_t job) {  // a job: one query head of one row of the batch
        const int64_t b = job / H, h = job % H, g = h / per;
        const float* kt_ = kt_all + (b * G + g) * D * TP;
        const float* vg = v + b * vb + g * vh;
        alignas(64) float s[MAX_T];  // a query row's scores, then its weights
        for (int64_t i = 0; i < T; ++i) {
            const float* qi = q + b * qb + h * qh + i * qt;
            const int64_t n = i + 1, nv = (n + 15) / 16;  // keys seen, in vectors of 16
            // scores: each vector of 16 keys over d in four chains (d mod 4), so the adds overlap
            __m512 m = ninf;
            for (int64_t c = 0; c < nv; ++c) {
                __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
                const float* col = kt_ + 16 * c;
                for (int64_t d = 0; d < D; d += 4) {
                    a0 = _mm512_fmadd_ps(_mm512_set1_ps(qi[d]), _mm512_load_ps(col + d * TP), a0);
                    a1 = _mm512_fmadd_ps(_mm512_set1_ps(qi[d + 1]), _mm512_load_ps(col + (d + 1) * TP), a1);
                    a2 = _mm512_fmadd_ps(_mm512_set1_ps(qi[d + 2]), _mm512_load_ps(col + (d + 2) * TP), a2);
                    a3 = _mm512_fmadd_ps(_mm512_set1_ps(qi[d + 3]), _mm512_load_ps(col + (d + 3) * TP), a3);
                }
                __m512 sc = _mm512_mul_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)), vscale);
                const int64_t left = n - 16 * c;  // keys of this vector the row sees
                if (left < 16) sc = _mm512_mask_blend_ps((__mmask16)((1u << left) - 1), ninf, sc);
                _mm512_store_ps(s + 16 * c, sc);
                m = _mm512_max_ps(m, sc);
            }
            const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(m));
            __m512 total = _mm512_setzero_ps();
            for (int64_t c = 0; c < nv; ++c) {
                const int64_t left = n - 16 * c;
                const __mmask16 seen = left < 16 ? (__mmask16)((1u << left) - 1) : (__mmask16)0xFFFF;
                const __m512 e = attnlab_exp16(_mm512_sub_ps(_mm512_load_ps(s + 16 * c), mx));
                const __m512 p = _mm512_maskz_mov_ps(seen, e);
                _mm512_store_ps(s + 16 * c, p);
                total = _mm512_add_ps(total, p);
            }
            const __m512 inv = _mm512_set1_ps(1.f / _mm512_reduce_add_ps(total));
            // out: each vector of 16 of the head's outputs over the keys seen in four chains (j mod 4)
            float* o = out + (b * T + i) * H * D + h * D;
            for (int64_t e = 0; e < D; e += 16) {
                __m512 o0 = _mm512_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
                const float* ve = vg + e;
                int64_t j = 0;
                for (; j + 4 <= n; j += 4) {
                    o0 = _mm512_fmadd_ps(_mm512_set1_ps(s[j]), _mm512_loadu_ps(ve + j * vt), o0);
                    o1 = _mm512_fmadd_ps(_mm512_set1_ps(s[j + 1]), _mm512_loadu_ps(ve + (j + 1) * vt), o1);
                    o2 = _mm512_fmadd_ps(_mm512_set1_ps(s[j + 2]), _mm512_loadu_ps(ve + (j + 2) * vt), o2);
                    o3 = _mm512_fmadd_ps(_mm512_set1_ps(s[j + 3]), _mm512_loadu_ps(ve + (j + 3) * vt), o3);
                }
                for (; j < n; ++j) o0 = _mm512_fmadd_ps(_mm512_set1_ps(s[j]), _mm512_loadu_ps(ve + j * vt), o0);
                const __m512 sum = _mm512_add_ps(_mm512_add_ps(o0, o1), _mm512_add_ps(o2, o3));
                _mm512_storeu_ps(o + e, _mm512_mul_ps(sum, inv));
            }
        }
    });
    ::operator delete(kt_all, std::align_val_t(64));
    return 0;
}
"""

FLAGS = ("avx512f", "avx512dq")  # AVX-512 only: elsewhere torch's SDPA runs, as quick as plain loops would be
MAX_T = 128  # prompts of at most this many tokens come here; longer ones go to torch's blocked flash kernel
MAX_D = 256  # d_head at most this
_SOURCES = ((FLAGS, kernel_source.sized(_SOURCE, MAX_T=MAX_T)),)

_build = kernel_variants.cached_build("causal_attention", _SOURCES, "attnlab_causal_attention",
                                      "a short prompt's attention runs torch's SDPA")


@functools.cache
def _compiled():
    """The kernel, or (None, why not). A CPU without AVX-512 (or ATTNLAB_INT8_KERNEL=fbgemm) is no fault and said
    nowhere, since SDPA serves it as before; only a failed build or a missing compiler is (once, by build)."""
    reason = kernel_variants.cpu_reason(FLAGS)
    return (None, reason) if reason else _build()


available = kernel_variants.status(lambda: _compiled())[0]


def takes(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    """Does Attention hand this fresh causal prompt's q (batch, heads, T, d) and k, v (batch, kv heads, T, d) to
    the kernel: float32 on the CPU, inside torch.inference_mode (generation) with no dispatch mode watching (torch's
    FLOP counter, tracers), not being compiled, last dimension of stride 1, as many keys as queries, T <= MAX_T, d
    a multiple of 16 up to MAX_D, heads a multiple of kv heads, and the kernel built here?

    Why inference mode and not merely no autograd: its numbers are not SDPA's bits, and two forwards a user or a
    tool compares, one with autograd and one without (attribution patching's clean and corrupted runs), must stay
    one computation; generation never compares itself with an autograd forward."""
    return (q.dtype == torch.float32 and k.dtype == torch.float32 and v.dtype == torch.float32
            and q.device.type == "cpu" and torch.is_inference_mode_enabled() and not is_in_torch_dispatch_mode()
            and q.dim() == 4 and k.dim() == 4
            and k.shape == v.shape and q.shape[0] == k.shape[0] and q.shape[2:] == k.shape[2:]
            and 0 < q.shape[2] <= MAX_T and q.shape[3] % 16 == 0 and q.shape[3] <= MAX_D
            and q.shape[1] % k.shape[1] == 0 and q.stride(-1) == 1 and k.stride(-1) == 1 and v.stride(-1) == 1
            and not torch.compiler.is_compiling() and available())


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """softmax(scale q k^T, causal) v per head -> (batch, T, heads * d), the heads concatenated; the caller checks
    takes() first."""
    batch, heads, t, d = q.shape
    out = torch.empty(batch, t, heads * d)
    if _compiled()[0](q.data_ptr(), q.stride(0), q.stride(1), q.stride(2), k.data_ptr(), k.stride(0), k.stride(1),
                      k.stride(2), v.data_ptr(), v.stride(0), v.stride(1), v.stride(2), out.data_ptr(), batch,
                      heads, k.shape[1], t, d, kernel_variants.float_bits(scale), kernel_threads.count()):
        raise MemoryError("attnlab's causal attention kernel could not allocate its buffers")
    return out
