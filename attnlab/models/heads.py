"""Heads: what turns the last hidden vectors into what a task needs."""

from __future__ import annotations

import torch
from torch import nn

from attnlab.config import ModelConfig
from attnlab.layers.feedforward import activation
from attnlab.layers.norms import make_norm


class LMHead(nn.Module):
    """Vocabulary logits. BERT's MLM head first transforms (dense + act + norm); the projection may be tied to
    the token embedding matrix (the seeds' "tied output projection")."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        d = config.d_model
        self.scale = config.logit_scale
        self.transform = nn.Linear(d, d) if config.lm_head_transform else None
        self.act = activation(config.activation) if config.lm_head_transform else None
        self.norm = make_norm(config) if config.lm_head_transform else None
        self.proj = nn.Linear(d, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size)) if config.lm_head_bias else None

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if self.scale != 1.0:
            h = h * self.scale
        if self.transform is not None:
            h = self.norm(self.act(self.transform(h)))
        # the vocabulary bias rides in the projection's own addmm: no second (batch, seq, vocab) tensor
        return nn.functional.linear(h, self.proj.weight, self.bias)  # (batch, seq, vocab)


class Pooler(nn.Module):
    """BERT's pooled embedding: tanh(W h_[CLS] + b)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.dense = nn.Linear(config.d_model, config.d_model)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(h[:, 0]))  # (batch, d_model)


def mean_pool(h: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """Average of the real tokens' vectors (sentence-transformers' pooling)."""
    if attention_mask is None:
        return h.mean(dim=1)
    m = attention_mask[..., None].to(h.dtype)
    return (h * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)
