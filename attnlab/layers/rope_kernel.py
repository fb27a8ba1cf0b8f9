"""Rotary positions (RoPE, "rotate half") of a short prompt's or a decoding step's Q and K heads in one call:
y = x cos + rotate_half(x) sin, with rotate_half(x) = (-x[d/2:], x[:d/2]).

Why: layers/positions.apply_rotary is five small torch operators (a negation, a concatenation, two products and a
sum), each with its own dispatch and allocation; inside a 32-token SmolLM2 prefill they took ~26 us per layer,
~0.8 ms of a ~19 ms forward at two threads (torch.profiler, AMD EPYC Zen 5, 2026-11-28), where the arithmetic is a
few microseconds. This is one loop in plain C++, built into attnlab's private kernel folder like the norm kernel
(layers/norm_kernel.py), called by apply_rotary for float32 CPU tensors without autograd, outside torch.compile,
up to MAX_VALUES numbers; training, long prompts and other devices keep torch's operators.

Numerics: the same three roundings as torch's operators (x cos, then rotated sin, then their sum, each rounded to
float32); built without CPU flags, so no fused multiply-add can merge them: bit for bit torch's result
(tests/test_rope_kernel.py).
"""

from __future__ import annotations

import torch

from attnlab.layers import kernel_variants

_SOURCE = r"""
#include <cstdint>
// x (B, H, T, d) by strides (last one 1), cos / sin (B, 1, T, d) by strides (last one 1) -> y (B, H, T, d) contiguous
extern "C" int attnlab_rope(const float* __restrict__ x, int64_t xb, int64_t xh, int64_t xt,
                            const float* __restrict__ c, const float* __restrict__ s, int64_t cb, int64_t ct,
                            float* __restrict__ y, int64_t B, int64_t H, int64_t T, int64_t d)
{
    const int64_t half = d / 2;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t t = 0; t < T; ++t) {
                const float* xr = x + b * xb + h * xh + t * xt;
                const float* cr = c + b * cb + t * ct;
                const float* sr = s + b * cb + t * ct;
                float* yr = y + ((b * H + h) * T + t) * d;
                for (int64_t i = 0; i < half; ++i) {
                    const float a = xr[i] * cr[i], r = -xr[i + half] * sr[i];
                    yr[i] = a + r;
                }
                for (int64_t i = half; i < d; ++i) {
                    const float a = xr[i] * cr[i], r = xr[i - half] * sr[i];
                    yr[i] = a + r;
                }
            }
    return 0;
}
"""

MAX_VALUES = 1 << 18  # apply_rotary sends at most this many numbers here (SmolLM2's Q and K: ~340 tokens)

# built on first use, once per process (plain C++: no CPU flags, so no fused multiply-add)
_compiled = kernel_variants.cached_build("rope", (((), _SOURCE),), "attnlab_rope", "RoPE runs torch's operators")
available = kernel_variants.status(lambda: _compiled())[0]


def takes(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> bool:
    """Does apply_rotary hand (x, cos, sin) to this kernel: float32 on the CPU, no autograd, not being compiled,
    last dimension even and stride 1, cos and sin of one shape (batch or 1, 1, seq, d), few enough numbers, and
    the kernel built here."""
    return (x.dtype == torch.float32 and cos.dtype == torch.float32 and sin.dtype == torch.float32
            and x.device.type == "cpu" and not torch.is_grad_enabled() and x.dim() == 4 and 0 < x.numel() <= MAX_VALUES
            and x.shape[-1] % 2 == 0 and x.stride(-1) == 1 and cos.shape == sin.shape and cos.dim() == 4
            and cos.shape[1] == 1 and cos.shape[2:] == x.shape[2:] and cos.shape[0] in (1, x.shape[0])
            and cos.stride() == sin.stride() and cos.stride(-1) == 1 and not torch.compiler.is_compiling()
            and available())


def apply(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (batch, heads, seq, d) rotated by cos / sin (batch or 1, 1, seq, d) -> a new contiguous tensor; the caller
    checks takes() first."""
    batch, heads, seq, d = x.shape
    y = torch.empty(batch, heads, seq, d)
    cb = cos.stride(0) if cos.shape[0] > 1 else 0
    _compiled()[0](x.data_ptr(), x.stride(0), x.stride(1), x.stride(2), cos.data_ptr(), sin.data_ptr(), cb,
                   cos.stride(2), y.data_ptr(), batch, heads, seq, d)
    return y
