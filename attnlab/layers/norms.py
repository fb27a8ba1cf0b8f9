"""LayerNorm and RMSNorm, picked by name from the config (torch's own modules)."""

from __future__ import annotations

from torch import nn

from attnlab.config import ModelConfig


def make_norm(config: ModelConfig) -> nn.Module:
    """LayerNorm re-centres and re-scales (gamma, beta); RMSNorm only re-scales by the root mean square."""
    if config.norm == "layernorm":
        return nn.LayerNorm(config.d_model, eps=config.norm_eps)
    return nn.RMSNorm(config.d_model, eps=config.norm_eps)
