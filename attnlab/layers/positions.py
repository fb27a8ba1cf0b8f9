"""Where a token sits: six schemes, three ways of entering the model.

- added to the embeddings: sinusoidal (fixed) and learned absolute positions;
- rotating Q and K inside attention: rotary (RoPE), so scores depend only on the offset between positions;
- added to the attention scores as a bias B: ALiBi (a slope per head times the distance) and T5's learned
  relative-position buckets.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attnlab.layers import rope_kernel


def fixed_table(shape: tuple[int, ...], compute) -> torch.Tensor:
    """A table a module computes itself (sinusoids, RoPE frequencies): `compute()`, or only its shape when the
    model is being built on the meta device. There it holds no values anyway (`build.allocate_empty` recomputes it
    through `reset_buffers`), and computing it would route arange, pow and sin through torch._refs, which imports
    torch._dynamo and sympy: seconds of every command that checks a checkpoint's shapes."""
    if torch.get_default_device().type == "meta":
        return torch.empty(shape, device="meta")
    return compute()


def sinusoid_table(n_positions: int, d_model: int, layout: str = "interleaved") -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)).

    layout="halves" puts all the sines first and all the cosines after (Marian's checkpoints).
    """
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (L, 1)
    i = torch.arange(d_model // 2, dtype=torch.float64)[None, :]  # (1, d/2)
    angle = pos / torch.pow(10000.0, 2 * i / d_model)  # (L, d/2)
    table = torch.empty(n_positions, d_model, dtype=torch.float64)
    if layout == "interleaved":
        table[:, 0::2], table[:, 1::2] = angle.sin(), angle.cos()
    else:
        table[:, : d_model // 2], table[:, d_model // 2 :] = angle.sin(), angle.cos()
    return table.float()


class SinusoidalPositions(nn.Module):
    """Fixed positional encoding; no parameters (the seeds' L*d term is zero for it)."""

    def __init__(self, max_len: int, d_model: int, layout: str = "interleaved"):
        super().__init__()
        self.layout = layout
        table = fixed_table((max_len, d_model), lambda: sinusoid_table(max_len, d_model, layout))
        self.register_buffer("table", table, persistent=False)

    def reset_buffers(self) -> None:
        """Recompute the fixed table (a model built on the meta device and then allocated has none yet)."""
        self.table.copy_(sinusoid_table(*self.table.shape, self.layout))

    def forward(self, position_ids: torch.Tensor) -> torch.Tensor:
        return self.table[position_ids]  # (batch, seq, d_model)


class LearnedPositions(nn.Module):
    """One trained vector per position, L*d parameters; `offset` spare rows first (BART keeps 2)."""

    def __init__(self, max_len: int, d_model: int, offset: int = 0):
        super().__init__()
        self.offset = offset
        self.weight = nn.Parameter(torch.zeros(max_len + offset, d_model))

    def forward(self, position_ids: torch.Tensor) -> torch.Tensor:
        return nn.functional.embedding(position_ids + self.offset, self.weight)  # (batch, seq, d_model)


class Rotary(nn.Module):
    """RoPE: rotate each pair of (q, k) features by an angle proportional to the position.

    Pairs are (i, i + d_head/2) ("rotate half"), as in the LLaMA checkpoints.
    """

    def __init__(self, d_head: int, theta: float = 10000.0):
        super().__init__()
        self.d_head, self.theta = d_head, theta
        self.register_buffer("inv_freq", fixed_table(((d_head + 1) // 2,), self._inv_freq), persistent=False)

    def _inv_freq(self) -> torch.Tensor:
        return 1.0 / (self.theta ** (torch.arange(0, self.d_head, 2, dtype=torch.int64).float() / self.d_head))

    def reset_buffers(self) -> None:
        """Recompute the frequencies (a model built on the meta device and then allocated has none yet)."""
        self.inv_freq.copy_(self._inv_freq())

    def forward(self, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # position_ids: (batch, seq) -> cos, sin: (batch, 1, seq, d_head)
        angle = position_ids[..., None].float() * self.inv_freq  # (batch, seq, d_head/2)
        angle = torch.cat((angle, angle), dim=-1)
        return angle.cos()[:, None], angle.sin()[:, None]


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: (batch, heads, seq, d_head) rotated pairwise by the angles in cos/sin. A decoding step's or a short
    prompt's heads without autograd on the CPU go through layers/rope_kernel.py: one call, the same bits."""
    if rope_kernel.takes(x, cos, sin):
        return rope_kernel.apply(x, cos, sin)
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)  # angles are computed in float32; keep q, k in the model's dtype
    return x * cos + rotated * sin


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """Head h gets slope 2^(-8(h+1)/n) for n a power of two; other n interleave the next power's slopes."""
    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (h + 1) for h in range(n)]

    if math.log2(n_heads).is_integer():
        slopes = power_of_two(n_heads)
    else:
        closest = 2 ** math.floor(math.log2(n_heads))
        slopes = power_of_two(closest) + power_of_two(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(slopes)


class ALiBi(nn.Module):
    """B[h, i, j] = -slope_h * |i - j|: a linear penalty on distance, no parameters and no length limit."""

    def __init__(self, n_heads: int):
        super().__init__()
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)

    def reset_buffers(self) -> None:
        """Recompute the slopes (a model built on the meta device and then allocated has none yet)."""
        self.slopes.copy_(alibi_slopes(len(self.slopes)))

    def forward(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        distance = (q_pos[:, None] - k_pos[None, :]).abs().float()  # (q, k)
        return -self.slopes[:, None, None] * distance[None]  # (heads, q, k)


class T5RelativeBias(nn.Module):
    """T5's learned scalar per (bucket, head); buckets are exact for small offsets and logarithmic after.

    Bidirectional (encoder) buckets split half for keys before the query and half for keys after;
    causal (decoder) buckets only look back.
    """

    def __init__(self, n_heads: int, num_buckets: int, max_distance: int, bidirectional: bool):
        super().__init__()
        self.num_buckets, self.max_distance, self.bidirectional = num_buckets, max_distance, bidirectional
        self.weight = nn.Parameter(torch.zeros(num_buckets, n_heads))

    def bucket(self, relative: torch.Tensor) -> torch.Tensor:
        """relative = key position - query position -> bucket index in [0, num_buckets)."""
        n = self.num_buckets
        out = torch.zeros_like(relative)
        if self.bidirectional:
            n //= 2
            out = out + (relative > 0).long() * n
            distance = relative.abs()
        else:
            distance = (-relative).clamp(min=0)
        exact = n // 2
        is_small = distance < exact
        # log-spaced buckets between `exact` and max_distance, the last one catching everything further
        log_bucket = exact + (
            torch.log(distance.float().clamp(min=1) / exact) / math.log(self.max_distance / exact) * (n - exact)
        ).long()
        log_bucket = log_bucket.clamp(max=n - 1)
        return out + torch.where(is_small, distance, log_bucket)

    def forward(self, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        relative = k_pos[None, :] - q_pos[:, None]  # (q, k)
        return self.weight[self.bucket(relative)].permute(2, 0, 1)  # (heads, q, k)
