"""Dual encoder (CLIP): two towers map two kinds of input into one joint space where matching pairs are close.

Each tower is an attnlab Encoder or VisionTransformer built from its own ModelConfig (DualEncoderConfig.tower_a,
.tower_b); its pooled vector (the [CLS] output, or the mean of the real tokens) is projected to `embed_dim` and
L2-normalised. Similarity logits are cosine similarities times a learnable temperature exp(logit_scale), as in
CLIP's contrastive (InfoNCE) objective.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.config import DualEncoderConfig
from attnlab.errors import ConfigError
from attnlab.models.base import TransformerModel
from attnlab.models.encoder import Encoder
from attnlab.models.heads import mean_pool
from attnlab.models.vit import VisionTransformer

TOWERS = {"encoder": Encoder, "vit": VisionTransformer}


class DualEncoder(TransformerModel):
    """Two towers (Encoder or VisionTransformer) projected into one L2-normalised space (embed_a, embed_b);
    forward gives the (batch_a, batch_b) similarity logits (cosine x exp(logit_scale)) CLIP's loss trains."""
    def __init__(self, config: DualEncoderConfig, *, towers: tuple[nn.Module, nn.Module] | None = None):
        """Build both towers from `config` (or adopt `towers`, already built from config.tower_a and .tower_b)."""
        super().__init__()
        if not isinstance(config, DualEncoderConfig):
            raise ConfigError(f"DualEncoder needs a DualEncoderConfig, got {type(config).__name__}; "
                              "DualEncoder.from_towers(a, b) wraps two models already built")
        self.config = config
        if towers is None:  # tower_a, tower_b, then the projections: the order the random init draws in
            towers = (TOWERS[config.tower_a.topology](config.tower_a), TOWERS[config.tower_b.topology](config.tower_b))
        self.tower_a, self.tower_b = towers
        self.pool = config.pool
        self.proj_a = nn.Linear(config.tower_a.d_model, config.embed_dim, bias=False)
        self.proj_b = nn.Linear(config.tower_b.d_model, config.embed_dim, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(float(config.logit_scale_init)))

    @classmethod
    def from_towers(cls, tower_a: nn.Module, tower_b: nn.Module, embed_dim: int = 64, pool: str = "cls",
                    **fields) -> DualEncoder:
        """Wrap two encoders/ViTs already built (their weights are kept); the config is read off them."""
        configs = [getattr(t, "config", None) for t in (tower_a, tower_b)]
        if any(type(t) not in TOWERS.values() for t in (tower_a, tower_b)):
            raise ConfigError(f"towers must be attnlab Encoder or VisionTransformer models, got "
                              f"{type(tower_a).__name__} and {type(tower_b).__name__}")
        config = DualEncoderConfig(configs[0], configs[1], embed_dim=embed_dim, pool=pool, **fields)
        return cls(config, towers=(tower_a, tower_b))

    def init_weights(self) -> None:
        """Each tower as its own model does, the projections as nn.Linear does, the temperature from the config."""
        self.tower_a.init_weights()
        self.tower_b.init_weights()
        self.proj_a.reset_parameters()
        self.proj_b.reset_parameters()
        with torch.no_grad():
            self.logit_scale.fill_(float(self.config.logit_scale_init))

    def _embed(self, tower, proj, inputs, attention_mask=None) -> torch.Tensor:
        if attention_mask is not None:
            h = tower(inputs, attention_mask=attention_mask).hidden
        else:
            h = tower(inputs).hidden
        pooled = h[:, 0] if self.pool == "cls" else mean_pool(h, attention_mask)
        return F.normalize(proj(pooled), dim=-1)  # (batch, embed_dim), unit length

    def embed_a(self, inputs, attention_mask=None) -> torch.Tensor:
        return self._embed(self.tower_a, self.proj_a, inputs, attention_mask)

    def embed_b(self, inputs, attention_mask=None) -> torch.Tensor:
        return self._embed(self.tower_b, self.proj_b, inputs, attention_mask)

    def forward(self, inputs_a, inputs_b, mask_a=None, mask_b=None) -> torch.Tensor:
        """(batch_a, batch_b) similarity logits: row i scores input a_i against every b_j."""
        a, b = self.embed_a(inputs_a, mask_a), self.embed_b(inputs_b, mask_b)
        return self.logit_scale.exp() * a @ b.T
