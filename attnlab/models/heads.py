"""Heads: what turns the last hidden vectors into what a task needs."""

from __future__ import annotations

import torch
from torch import nn

from attnlab.config import ModelConfig
from attnlab.layers.feedforward import activation
from attnlab.layers.linear import Linear
from attnlab.layers.norms import make_norm


class LMHead(nn.Module):
    """Vocabulary logits. BERT's MLM head first transforms (dense + act + norm); the projection may be tied to
    the token embedding matrix (the seeds' "tied output projection").

    Decoding reads the whole (vocab, d_model) matrix for a handful of rows (GPT-2: 154 MB, a third of what a
    token reads), so two decode-time layouts of the same product are used where they were measured faster
    (bench/RESULTS.md; logits equal the plain product to float32 rounding):
    - one row: the projection's (in, out) copy (layers/linear.py), 1.12-1.14x faster on this project's Intel
      Xeon (1.7x on an AMD EPYC), slower at 2-3 rows;
    - SLICE_ROWS rows, no autograd, one thread: CHUNK vocabulary rows per product (views, no copy): MKL blocks
      one product over all 50k rows poorly at 4-16 rows (1.2-1.8x faster in slices at 4-12 rows, 0.97-1.15x at
      16, 0.92-0.96x at 2-3 rows: GPT-2 and SmolLM2 heads, 1 thread; on the AMD EPYC Zen 5, 2026-12-07: 1.16-1.62x at
      4-16 rows, bench/results/decode-layout-2026-12-07/matvec.log). With more threads each slice opens a region
      of its own, and on cores shared with other jobs each region can wait milliseconds for its second thread
      (measured: a step 7x slower on a loaded 2-core machine), so several threads keep the single product.
    """

    SLICE_ROWS = range(4, 17)
    CHUNK = 1024

    def __init__(self, config: ModelConfig):
        super().__init__()
        d = config.d_model
        self.scale = config.logit_scale
        self.transform = nn.Linear(d, d) if config.lm_head_transform else None
        self.act = activation(config.activation) if config.lm_head_transform else None
        self.norm = make_norm(config) if config.lm_head_transform else None
        self.proj = Linear(d, config.vocab_size, bias=False)  # decodes through an (in, out) copy (layers/linear.py)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size)) if config.lm_head_bias else None

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if self.scale != 1.0:
            h = h * self.scale
        if self.transform is not None:
            h = self.norm(self.act(self.transform(h)))
        return self.project(h)

    def project(self, h: torch.Tensor) -> torch.Tensor:
        """The vocabulary projection of the (scaled, transformed) hidden vectors: (..., d_model) -> (..., vocab)."""
        weight = self.proj.weight_for(h)  # (vocab, d_model), maybe a view of the (in, out) decode copy
        if (h.numel() // h.shape[-1] in self.SLICE_ROWS and not torch.is_grad_enabled()
                and torch.get_num_threads() == 1 and weight.device.type == "cpu"):
            weights = weight.split(self.CHUNK)  # views: CHUNK vocabulary rows each
            biases = self.bias.split(self.CHUNK) if self.bias is not None else [None] * len(weights)
            return torch.cat([nn.functional.linear(h, w, b) for w, b in zip(weights, biases, strict=True)], dim=-1)
        # the vocabulary bias rides in the projection's own addmm: no second (batch, seq, vocab) tensor
        return nn.functional.linear(h, weight, self.bias)  # (batch, seq, vocab)


class Pooler(nn.Module):
    """BERT's pooled embedding: tanh(W h_[CLS] + b)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.dense = nn.Linear(config.d_model, config.d_model)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(h[:, 0]))  # (batch, d_model)


class NextSentenceHead(nn.Linear):
    """BERT's next-sentence prediction (NSP): a 2-way classifier on the pooled [CLS] vector (Pooler's output).

    Given "[CLS] A [SEP] B [SEP]", class 0 says B followed A in the text and class 1 that B is a random sentence:
    Hugging Face's convention (BertForPreTraining's `cls.seq_relationship`), so a loaded head means the same.
    BERT trained it beside masked LM so that [CLS] carries something about the relation of two segments;
    RoBERTa (2019) later found MLM does as well or better without it (docs/experiments.md measures it here)."""

    def __init__(self, config: ModelConfig):
        super().__init__(config.d_model, 2)


def mean_pool(h: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """Average of the real tokens' vectors (sentence-transformers' pooling)."""
    if attention_mask is None:
        return h.mean(dim=1)
    m = attention_mask[..., None].to(h.dtype)
    return (h * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)
