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


def yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """YaRN's attention temperature for a context `factor` times longer: 0.1 * mscale * ln(factor) + 1 (1 for
    factor <= 1)."""
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def rope_frequencies(d_head: int, theta: float, scaling: dict | None = None, seq_len: int | None = None
                     ) -> tuple[torch.Tensor, float]:
    """(inv_freq (d_head/2,) float32, attention_factor): the rotation speed of each feature pair, and the factor
    cos and sin are multiplied by. Plain RoPE turns pair i at theta^(-2i/d_head) radians per position; a scaling
    stretches the slow pairs so that a model sees a longer context than it was trained on as a familiar one:

    - linear: every frequency divided by `factor` (positions interpolated);
    - dynamic (NTK): theta raised to theta * (factor * L / L0 - (factor - 1))^(d/(d-2)) once the sequence L
      exceeds the pre-training length L0 (`seq_len` is L; nothing changes up to L0);
    - llama3 (Llama 3.1): wavelengths longer than L0 / low_freq_factor divided by `factor`, shorter than
      L0 / high_freq_factor kept, a smooth blend between;
    - yarn: the same kind of blend by a linear ramp over the pairs that turn between beta_fast and beta_slow times
      in L0, and cos/sin multiplied by a temperature (yarn_mscale) unless `attention_factor` is given;
    - longrope (Phi-3's long-context models): pair i's speed divided by short_factor[i] up to L0 and by
      long_factor[i] once the sequence L exceeds L0, cos/sin multiplied by sqrt(1 + ln(factor) / ln(L0)) unless
      `attention_factor` is given (1 for factor <= 1).

    The formulas are those of Hugging Face's modeling_rope_utils, in float32 like there.
    """
    pairs = torch.arange(0, d_head, 2, dtype=torch.int64).float()  # (d_head/2,): 0, 2, 4, ...
    inv_freq = 1.0 / (theta ** (pairs / d_head))
    kind = (scaling or {}).get("type")
    if kind is None:
        return inv_freq, 1.0
    factor = float(scaling["factor"])
    if kind == "linear":
        return inv_freq / factor, 1.0
    original = scaling["original_max_len"]
    if kind == "longrope":
        divisors = scaling["long_factor"] if seq_len and seq_len > original else scaling["short_factor"]
        return 1.0 / (torch.tensor(divisors, dtype=torch.float32) * theta ** (pairs / d_head)), \
            rope_attention_factor(scaling)
    if kind == "dynamic":
        length = max(seq_len or original, original)
        base = theta * ((factor * length / original) - (factor - 1)) ** (d_head / (d_head - 2))
        return 1.0 / (base ** (pairs / d_head)), 1.0
    if kind == "llama3":
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        wavelength = 2 * math.pi / inv_freq
        scaled = torch.where(wavelength > original / low, inv_freq / factor, inv_freq)
        smooth = (original / wavelength - low) / (high - low)  # 0 at the long end of the blend, 1 at the short end
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        between = (wavelength >= original / high) & (wavelength <= original / low)
        return torch.where(between, blended, scaled), 1.0

    def pair_turning(turns: float) -> float:  # the (fractional) pair index that turns `turns` times in L0
        return d_head * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(theta))

    low, high = pair_turning(scaling.get("beta_fast") or 32), pair_turning(scaling.get("beta_slow") or 1)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d_head - 1)
    if low == high:
        high += 0.001  # a ramp of zero width would divide by zero
    ramp = ((torch.arange(d_head // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
    speeds = theta ** (pairs / d_head)
    kept = 1 - ramp  # 1: the pair keeps its speed (fast pairs), 0: interpolated by `factor` (slow pairs)
    return (1.0 / (factor * speeds)) * (1 - kept) + (1.0 / speeds) * kept, rope_attention_factor(scaling)


def rope_attention_factor(scaling: dict | None) -> float:
    """What cos and sin are multiplied by: YaRN's `attention_factor`, or its temperature from `factor` (and the
    ratio of two temperatures when `mscale` and `mscale_all_dim` are both given); LongRoPE's `attention_factor`,
    or sqrt(1 + ln(factor) / ln(original_max_len)); 1 for every other scaling.
    Plain Python: a model built on the meta device computes it without tensors."""
    kind = (scaling or {}).get("type")
    if kind == "longrope":
        if scaling.get("attention_factor") is not None:
            return float(scaling["attention_factor"])
        factor, original = float(scaling["factor"]), scaling["original_max_len"]
        return 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))
    if kind != "yarn":
        return 1.0
    if scaling.get("attention_factor") is not None:
        return float(scaling["attention_factor"])
    factor, mscale, mscale_all = float(scaling["factor"]), scaling.get("mscale"), scaling.get("mscale_all_dim")
    if mscale and mscale_all:
        return yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all)
    return yarn_mscale(factor)


class Rotary(nn.Module):
    """RoPE: rotate each pair of (q, k) features by an angle proportional to the position.

    Pairs are (i, i + d_head/2) ("rotate half"), as in the LLaMA checkpoints. `scaling` (ModelConfig.rope_scaling)
    stretches the frequencies (rope_frequencies); a dynamic or longrope one recomputes them for each forward's longest
    position, every other is fixed at construction.
    """

    def __init__(self, d_head: int, theta: float = 10000.0, scaling: dict | None = None):
        super().__init__()
        self.d_head, self.theta, self.scaling = d_head, theta, dict(scaling or {})
        # dynamic NTK and LongRoPE: the frequencies depend on the forward's longest position
        self.dynamic = self.scaling.get("type") in ("dynamic", "longrope")
        self.attention_factor = rope_attention_factor(self.scaling)
        self.register_buffer("inv_freq", fixed_table(((d_head + 1) // 2,), self._inv_freq), persistent=False)

    def _inv_freq(self) -> torch.Tensor:
        return rope_frequencies(self.d_head, self.theta, self.scaling)[0]

    def reset_buffers(self) -> None:
        """Recompute the frequencies (a model built on the meta device and then allocated has none yet)."""
        self.inv_freq.copy_(self._inv_freq())

    def forward(self, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # position_ids: (batch, seq) -> cos, sin: (batch, 1, seq, d_head)
        inv_freq = self.inv_freq
        if self.dynamic:  # NTK, LongRoPE: the frequencies follow this forward's longest position (one host read)
            seq_len = int(position_ids.max()) + 1 if position_ids.numel() else 1
            inv_freq = rope_frequencies(self.d_head, self.theta, self.scaling, seq_len)[0].to(inv_freq.device)
        angle = position_ids[..., None].float() * inv_freq  # (batch, seq, d_head/2)
        angle = torch.cat((angle, angle), dim=-1)
        if self.attention_factor != 1.0:  # YaRN's temperature, folded into cos and sin as Hugging Face does
            return (angle.cos() * self.attention_factor)[:, None], (angle.sin() * self.attention_factor)[:, None]
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
