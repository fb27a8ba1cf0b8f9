"""Dual encoder (CLIP): two towers map two kinds of input into one joint space where matching pairs are close.

Each tower is any attnlab Encoder or VisionTransformer; its pooled vector (the [CLS] output, or the mean of
the real tokens) is projected to `embed_dim` and L2-normalised. Similarity logits are cosine similarities
times a learnable temperature exp(logit_scale), as in CLIP's contrastive (InfoNCE) objective.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.models.base import TransformerModel
from attnlab.models.heads import mean_pool


class DualEncoder(TransformerModel):
    def __init__(self, tower_a: nn.Module, tower_b: nn.Module, embed_dim: int = 64, pool: str = "cls"):
        super().__init__()
        if pool not in ("cls", "mean"):
            raise ValueError(f"pool={pool!r}: allowed 'cls' or 'mean'")
        self.tower_a, self.tower_b, self.pool = tower_a, tower_b, pool
        self.config = tower_a.config
        self.proj_a = nn.Linear(tower_a.config.d_model, embed_dim, bias=False)
        self.proj_b = nn.Linear(tower_b.config.d_model, embed_dim, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))  # CLIP's initial temperature 0.07

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
