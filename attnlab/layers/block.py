"""The transformer block: the one unit every topology stacks N times.

  self-attention  -> Add & Norm   ("route across positions")
  cross-attention -> Add & Norm   (encoder-decoder decoders only: queries here, keys/values from the encoder)
  feed-forward    -> Add & Norm   ("rewrite within positions")

Post-LN (Vaswani, BERT, BART): x = Norm(x + Sublayer(x)).
Pre-LN (GPT-2, LLaMA, T5, ViT):  x = x + Sublayer(Norm(x)); the residual stream is never normalised,
which keeps gradients healthy in deep stacks (a final norm then closes the stack).
Output-LN (OLMo 2): x = x + Norm(Sublayer(x)); what each sub-layer adds is normalised, the stream still not.
Sandwich (Gemma 2): x = x + Norm_after(Sublayer(Norm_before(x))).
Parallel (GPT-NeoX): x = x + Attn(Norm1(x)) + FFN(Norm2(x)); both sub-layers read the block's input.
"""

from __future__ import annotations

import torch
from torch import nn

from attnlab.config import ModelConfig
from attnlab.layers.attention import Attention
from attnlab.layers.feedforward import FeedForward
from attnlab.layers.norms import make_sublayer_norm
from attnlab.recording import active


class Block(nn.Module):
    def __init__(self, config: ModelConfig, cross: bool = False):
        super().__init__()
        self.pre_norm = config.norm_placement == "pre"
        self.post_norm = config.norm_placement == "post"
        self.output_norm = config.norm_placement == "output"
        self.attn = Attention(config)
        self.norm1 = make_sublayer_norm(config)
        self.cross_attn = Attention(config, cross=True) if cross else None
        self.norm_cross = make_sublayer_norm(config) if cross else None
        self.ffn = FeedForward(config)
        self.norm2 = make_sublayer_norm(config)
        self.dropout = nn.Dropout(config.dropout)
        # attention then feed-forward, no cross-attention: forward's one test sends every other block to _rest
        self.parallel = config.parallel_residual
        self.plain = not cross and not self.parallel

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
        if self.post_norm:
            return norm(x + self._drop(fn(x)))
        if self.output_norm:  # OLMo 2: the sub-layer's output normalised, the residual stream never
            return x + self._drop(norm(fn(x)))
        return x + self._drop(norm.after(fn(norm.before(x))))  # sandwich (Gemma 2): a norm on each side

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
        y = self._sublayer(x, self.norm1, lambda h: self.attn(h, bias=bias, is_causal=is_causal, rope=rope,
                                                              cache=cache))
        if recorder is not None:
            y = recorder.keep(self, "resid_mid", y)
        if self.plain:
            y = self._sublayer(y, self.norm2, self.ffn)
        else:
            y = self._rest(x, y, context, context_bias, cross_cache, recorder)
        if recorder is not None:
            y = recorder.keep(self, "resid_post", y)
        return y

    def _rest(self, x: torch.Tensor, y: torch.Tensor, context, context_bias, cross_cache, recorder) -> torch.Tensor:
        """After self-attention (y = x + Attn(...)): cross-attention then the feed-forward (an encoder-decoder's
        decoder), or the feed-forward reading the block's input x, as attention did (parallel residual, GPT-NeoX:
        y + FFN(Norm2(x)), so the two sub-layers could run side by side)."""
        if self.parallel:
            return y + self._drop(self.ffn(self.norm2(x)))
        if context is None and (cross_cache is None or cross_cache.k is None):
            raise ValueError("this block cross-attends: pass the encoder output as `context`")
        y = self._sublayer(y, self.norm_cross, lambda h: self.cross_attn(h, bias=context_bias, context=context,
                                                                         cache=cross_cache))
        if recorder is not None:
            y = recorder.keep(self, "resid_cross", y)
        return self._sublayer(y, self.norm2, self.ffn)
