"""AdamW with the usual two parameter groups, and the warmup + cosine learning-rate schedule.

Weight decay pulls a weight towards zero. That is a sensible prior for the matrices that mix features, but not
for norm gains (whose natural value is 1), biases (offsets, few and cheap) or embedding rows (each row is only
updated when its token appears, so decay would erase rare tokens). Those go in a group with no decay.
"""

from __future__ import annotations

import math

import torch
from torch import nn

NO_DECAY_MODULES = (nn.LayerNorm, nn.RMSNorm, nn.Embedding, nn.GroupNorm, nn.BatchNorm1d, nn.BatchNorm2d)
NO_DECAY_NAMES = ("positions.weight", "cls_token", "rel_bias.weight", "logit_scale")  # embedding-like parameters


def no_decay_ids(model: nn.Module) -> set[int]:
    """ids of the parameters that must not be decayed: norms, biases, embeddings (tied ones included)."""
    ids: set[int] = set()
    for module in model.modules():
        if isinstance(module, NO_DECAY_MODULES):
            ids.update(id(p) for p in module.parameters(recurse=False))
    for name, param in model.named_parameters(remove_duplicate=False):
        if param.dim() < 2 or name.endswith("bias") or name.endswith(NO_DECAY_NAMES):
            ids.add(id(param))
    return ids


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Two AdamW groups; each tied parameter appears once (named_parameters de-duplicates)."""
    skip = no_decay_ids(model)
    decay, no_decay = [], []
    for _, param in model.named_parameters():
        if param.requires_grad:
            (no_decay if id(param) in skip else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def fused_supported(model: nn.Module) -> bool:
    """torch's fused AdamW kernel (one kernel for every parameter's update instead of ~10 per tensor) runs on
    plain floating-point CPU and CUDA tensors; sharded FSDP parameters (DTensor) take the foreach path."""
    return all(type(p) is nn.Parameter and p.device.type in ("cpu", "cuda") and p.is_floating_point()
               for p in model.parameters())


def build_optimizer(model: nn.Module, lr: float, weight_decay: float = 0.1,
                    betas: tuple[float, float] = (0.9, 0.95), eps: float = 1e-8,
                    fused: bool | None = None) -> torch.optim.AdamW:
    """AdamW over the two groups; fused (one kernel per step) wherever torch supports it, unless fused=False."""
    if fused is None:
        fused = fused_supported(model)
    return torch.optim.AdamW(param_groups(model, weight_decay), lr=lr, betas=betas, eps=eps, fused=fused)


class WarmupCosine:
    """Multiplier of the peak learning rate at a step: linear 0 -> 1 over `warmup` steps, then a half cosine
    from 1 down to `min_ratio` at `total` steps, flat after. A class (not a lambda) so its state pickles."""

    def __init__(self, warmup: int, total: int, min_ratio: float = 0.1):
        self.warmup, self.total, self.min_ratio = int(warmup), int(total), float(min_ratio)

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / self.warmup
        span = max(1, self.total - self.warmup)
        progress = min(1.0, (step - self.warmup) / span)
        return self.min_ratio + (1.0 - self.min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def build_scheduler(optimizer: torch.optim.Optimizer, warmup: int, total: int,
                    min_ratio: float = 0.1) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, WarmupCosine(warmup, total, min_ratio))
