"""LoRA (Hu et al. 2021): a frozen matrix W_0 learns a low-rank change, W = W_0 + (alpha / r) B A.

Why: adapting all 135M weights of a pre-trained model costs their gradients and optimizer state, and a shipped
result would be the whole model again. A (r, in) and B (out, r) hold r * (in + out) numbers per matrix (SmolLM2's
fused W_Q/W_K/W_V at r = 8: 12,288 against 552,960), B starts at zero so the adapted model starts as the original,
and only A and B train and ship (smollm2-mlm: 2.0M numbers, 4 MB in float16).

How: a torch parametrization of each block matrix's `weight`, so every reader of `weight` (the plain product, the
per-head W_O of the recorder, the decode-time copy) sees W_0 + (alpha / r) B A without knowing about LoRA; W_0 is
kept as `...parametrizations.weight.original`. `merge` folds the change into plain weights for inference.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.utils import parametrize


class LowRankDelta(nn.Module):
    """W_0 -> W_0 + scale * B A: A (r, in) starts like nn.Linear's init (Kaiming uniform), B (out, r) at zero."""

    def __init__(self, out_features: int, in_features: int, rank: int, alpha: float):
        super().__init__()
        self.lora_a = nn.Parameter(torch.empty(rank, in_features))  # (r, in)
        self.lora_b = nn.Parameter(torch.zeros(out_features, rank))  # (out, r)
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, weight: torch.Tensor) -> torch.Tensor:  # (out, in) -> (out, in)
        delta = (self.lora_b @ self.lora_a) * self.scale
        return weight + delta.to(weight.dtype)


def block_linears(blocks: nn.Module) -> list[nn.Linear]:
    """The matrices LoRA adapts: every nn.Linear inside the blocks (fused W_Q/W_K/W_V, W_O, the FFN's W_1 and
    W_2, and cross-attention's where there is one); embeddings, norms and the head stay as they are."""
    return [m for m in blocks.modules() if isinstance(m, nn.Linear)]


def add_lora(blocks: nn.Module, rank: int, alpha: float) -> None:
    """Give every block matrix its LoRA pair, in place (the model's outputs do not change: B is zero)."""
    for linear in block_linears(blocks):
        out_features, in_features = linear.weight.shape
        delta = LowRankDelta(out_features, in_features, rank, alpha).to(linear.weight.device)
        parametrize.register_parametrization(linear, "weight", delta)


def merge(blocks: nn.Module) -> int:
    """Fold each LoRA change into a plain weight (W_0 + scale B A, computed once) and drop the pairs; returns how
    many matrices were merged. The products are the same to float32 rounding and no longer recompute B A."""
    merged = 0
    for module in blocks.modules():
        if parametrize.is_parametrized(module, "weight"):
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=True)
            merged += 1
    return merged


def adapted_name(name: str, names) -> str:
    """Where a plain model's tensor `name` sits in the same model with LoRA pairs (`names`: its state-dict names):
    a block matrix's weight is W_0, kept as `...parametrizations.weight.original`; everything else is unmoved."""
    original = name.removesuffix(".weight") + ".parametrizations.weight.original"
    return original if name.endswith(".weight") and original in names else name


def lora_names(state: dict) -> list[str]:
    """The names of the LoRA tensors in a state dict (what a run trains and ships)."""
    return sorted(n for n in state if n.endswith((".lora_a", ".lora_b")))
