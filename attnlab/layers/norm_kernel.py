"""RMSNorm of a decoding step's few rows in one call: y = x / sqrt(mean(x^2) + eps) * w.

Why: torch 2.13's CPU rms_norm is a composite of about eight small operators (pow, sum, div, add, rsqrt, mul,
casts), each with its own dispatch and allocation. On a row of 576 numbers the arithmetic takes well under a
microsecond, and the operators around it took ~50 us per norm inside a SmolLM2 decoding step (torch.profiler, one
thread, AMD Zen 3): 61 norms per token, ~3 ms of a 27 ms step with the GGUF blocks kept. This is one loop in plain
C++ (no intrinsics: the compiler's own code for the CPU at hand is fast enough for a few thousand numbers), built
into attnlab's private kernel folder like the product kernels (layers/kernel_build.py), and called by
layers/norms.RMSNorm for up to MAX_ROWS rows without autograd (a decoding step, a short prompt's prefill);
training, long prompts and other devices keep torch's.

Numerics: the sum of squares is accumulated in double, then one float32 scale per row, as torch's formula (eps
inside the root, the weight applied last). Against torch's float32 result: a few units in the last place
(tests/test_norm_kernel.py). NaN and infinities propagate as in torch (inf -> 1/sqrt(inf) = 0 -> inf * 0 = NaN).
"""

from __future__ import annotations

import torch

from attnlab.layers import kernel_variants

_SOURCE = r"""
#include <cmath>
#include <cstdint>
#include <cstring>
extern "C" int attnlab_rms_norm(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                int64_t rows, int64_t d, int64_t eps_bits)
{
    float eps;
    const uint32_t bits = (uint32_t)eps_bits;
    std::memcpy(&eps, &bits, sizeof eps);
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * d;
        float* yr = y + r * d;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;  // four chains: the additions overlap
        int64_t i = 0;
        for (; i + 4 <= d; i += 4) {
            s0 += (double)xr[i] * xr[i]; s1 += (double)xr[i + 1] * xr[i + 1];
            s2 += (double)xr[i + 2] * xr[i + 2]; s3 += (double)xr[i + 3] * xr[i + 3];
        }
        for (; i < d; ++i) s0 += (double)xr[i] * xr[i];
        const float scale = (float)(1.0 / std::sqrt((s0 + s1 + s2 + s3) / (double)d + (double)eps));
        for (i = 0; i < d; ++i) yr[i] = (xr[i] * scale) * w[i];
    }
    return 0;
}
"""

MAX_ROWS = 128  # layers/norms.RMSNorm sends at most this many rows here (a decoding step's, a short prompt's),
# more go to torch. One norm of d = 576, one thread, AMD EPYC Zen 5 (2026-11-28, not logged): 32 rows 6.4 us against
# torch's 11.1 (in a SmolLM2 prefill, where torch's took ~23 us each, a 32-token Q4_0 forward went 19.6 -> 18.7 ms at
# two threads), 128 rows 20.0 against 23.4; from 256 rows torch's is as quick, and quicker at two threads.


# built on first use, once per process (plain C++: no CPU flags needed)
_compiled = kernel_variants.cached_build("rms_norm", (((), _SOURCE),), "attnlab_rms_norm",
                                         "RMSNorm runs torch's operators")
available = kernel_variants.status(lambda: _compiled())[0]


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x (..., d) float32 contiguous on CPU, weight (d,) float32 contiguous -> a new (..., d) tensor. No checks (one
    call per norm per token): the caller guarantees dtypes, contiguity and available()."""
    d = x.shape[-1]
    y = torch.empty_like(x)
    _compiled()[0](x.data_ptr(), weight.data_ptr(), y.data_ptr(), x.numel() // d, d, kernel_variants.float_bits(eps))
    return y
