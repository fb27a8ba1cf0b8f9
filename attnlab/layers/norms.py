"""LayerNorm and RMSNorm, picked by name from the config (torch's own modules)."""

from __future__ import annotations

import torch
from torch import nn

from attnlab.config import ModelConfig
from attnlab.layers import norm_kernel


class RMSNorm(nn.RMSNorm):
    """torch's RMSNorm (same parameter, same numbers to float32 rounding). A decoding step's or a short prompt's
    rows (up to norm_kernel.MAX_ROWS), without autograd, in float32 on CPU, go through layers/norm_kernel.py: one
    call instead of torch's ~8 small operators (~50 us per norm inside a SmolLM2 step, 61 norms per token)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight
        if (w is not None and not torch.is_grad_enabled() and x.dtype == torch.float32 and x.device.type == "cpu"
                and x.numel() <= norm_kernel.MAX_ROWS * x.shape[-1] and w.dtype == torch.float32
                and len(self.normalized_shape) == 1 and x.is_contiguous() and w.is_contiguous()
                and not torch.compiler.is_compiling() and norm_kernel.available()):
            return norm_kernel.rms_norm(x, w, self.eps if self.eps is not None else torch.finfo(x.dtype).eps)
        return super().forward(x)


class SandwichNorm(nn.Module):
    """The two norms around one sub-layer (Gemma 2): x + after(F(before(x))). Block._sublayer applies them."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.before, self.after = make_norm(config), make_norm(config)


def make_sublayer_norm(config: ModelConfig) -> nn.Module:
    """What a block keeps per sub-layer: one norm, or a SandwichNorm when norm_placement='sandwich'."""
    return SandwichNorm(config) if config.norm_placement == "sandwich" else make_norm(config)


def make_norm(config: ModelConfig) -> nn.Module:
    """LayerNorm re-centres and re-scales (gamma, beta); RMSNorm only re-scales by the root mean square."""
    if config.norm == "layernorm":
        return nn.LayerNorm(config.d_model, eps=config.norm_eps)
    return RMSNorm(config.d_model, eps=config.norm_eps)
