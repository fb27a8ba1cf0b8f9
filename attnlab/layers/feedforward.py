"""Position-wise feed-forward network: FFN(x) = W_2 act(W_1 x + b_1) + b_2, optionally gated.

The seeds' "rewrite within positions": the same two-layer MLP applied to every position independently.
Gated variants (GEGLU, SwiGLU) compute act(x W_gate) * (x W_up); W_gate and W_up are fused in `up`. A prompt through
a quantized W_2 (kept GGUF blocks) has SwiGLU made inside W_2's kernel (QuantizedLinear.swiglu_product).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.config import ModelConfig
from attnlab.layers.linear import Linear
from attnlab.layers.quantized import QuantizedLinear
from attnlab.recording import active

_ACT = {
    "relu": F.relu, "reglu": F.relu,
    "gelu": F.gelu, "geglu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "geglu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu, "swiglu": F.silu,
}


def activation(name: str):
    return _ACT[name]


class FeedForward(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.gated = config.gated
        self.act = activation(config.activation)
        width = config.d_ff * (2 if self.gated else 1)
        # W_1 (and W_gate, stacked first); wide: decoding steps read it from an (in, out) copy (layers/linear.py)
        self.up = Linear(config.d_model, width, bias=config.bias)
        self.down = nn.Linear(config.d_ff, config.d_model, bias=config.bias)  # W_2
        self.dropout = nn.Dropout(config.dropout)

    def sites(self) -> tuple[str, ...]:
        """The names this module records or lets edit (attnlab.recording.sites)."""
        return ("hidden",)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (batch, seq, d_model)
        h = self.up(x)  # (batch, seq, d_ff or 2*d_ff)
        recorder = active()
        if self.gated:
            if (self.act is F.silu and recorder is None and not self.training
                    and isinstance(self.down, QuantizedLinear)):  # a prompt through kept GGUF blocks, say
                y = self.down.swiglu_product(h)  # silu(gate) * up made inside W_2's kernel, or None
                if y is not None:
                    return y
            gate, up = h.chunk(2, dim=-1)
            h = self.act(gate) * up
        else:
            h = self.act(h)  # (batch, seq, d_ff)
        if recorder is not None:
            h = recorder.keep(self, "hidden", h)
        if self.training:  # at inference dropout is the identity: skip its call (one per layer per step)
            h = self.dropout(h)
        return self.down(h)  # (batch, seq, d_model)
