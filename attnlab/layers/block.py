"""The transformer block: the one unit every topology stacks N times.

  self-attention  -> Add & Norm   ("route across positions")
  cross-attention -> Add & Norm   (encoder-decoder decoders only: queries here, keys/values from the encoder)
  feed-forward    -> Add & Norm   ("rewrite within positions")

Post-LN (Vaswani, BERT, BART): x = Norm(x + Sublayer(x)).
Pre-LN (GPT-2, LLaMA, T5, ViT):  x = x + Sublayer(Norm(x)); the residual stream is never normalised,
which keeps gradients healthy in deep stacks (a final norm then closes the stack).
"""

from __future__ import annotations

import torch
from torch import nn

from attnlab.config import ModelConfig
from attnlab.layers.attention import Attention
from attnlab.layers.feedforward import FeedForward
from attnlab.layers.norms import make_norm
from attnlab.recording import active


class Block(nn.Module):
    def __init__(self, config: ModelConfig, cross: bool = False):
        super().__init__()
        self.pre_norm = config.norm_placement == "pre"
        self.attn = Attention(config)
        self.norm1 = make_norm(config)
        self.cross_attn = Attention(config, cross=True) if cross else None
        self.norm_cross = make_norm(config) if cross else None
        self.ffn = FeedForward(config)
        self.norm2 = make_norm(config)
        self.dropout = nn.Dropout(config.dropout)

    def sites(self) -> tuple[str, ...]:
        """The names this module records or lets edit (attnlab.recording.sites)."""
        cross = ("resid_cross",) if self.cross_attn is not None else ()
        return ("resid_pre", "resid_mid", *cross, "resid_post")

    def _drop(self, y: torch.Tensor) -> torch.Tensor:
        """Dropout while training; at inference not even the call (an identity, but a decoding step makes 24)."""
        return self.dropout(y) if self.training else y

    def _sublayer(self, x: torch.Tensor, norm: nn.Module, fn) -> torch.Tensor:
        if self.pre_norm:
            return x + self._drop(fn(norm(x)))
        return norm(x + self._drop(fn(x)))

    def forward(
        self,
        x: torch.Tensor,  # (batch, seq, d_model)
        *,
        bias: torch.Tensor | None = None,
        is_causal: bool = False,
        rope=None,
        context: torch.Tensor | None = None,  # (batch, src_seq, d_model) encoder output
        context_bias: torch.Tensor | None = None,
        cache=None,
        cross_cache=None,
    ) -> torch.Tensor:
        recorder = active()
        if recorder is not None:
            x = recorder.keep(self, "resid_pre", x)
        x = self._sublayer(x, self.norm1, lambda h: self.attn(h, bias=bias, is_causal=is_causal, rope=rope,
                                                              cache=cache))
        if recorder is not None:
            x = recorder.keep(self, "resid_mid", x)
        if self.cross_attn is not None:
            if context is None and (cross_cache is None or cross_cache.k is None):
                raise ValueError("this block cross-attends: pass the encoder output as `context`")
            x = self._sublayer(x, self.norm_cross, lambda h: self.cross_attn(h, bias=context_bias, context=context,
                                                                             cache=cross_cache))
            if recorder is not None:
                x = recorder.keep(self, "resid_cross", x)
        x = self._sublayer(x, self.norm2, self.ffn)
        if recorder is not None:
            x = recorder.keep(self, "resid_post", x)
        return x
