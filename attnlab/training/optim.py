"""AdamW with the usual two parameter groups, and the warmup + cosine learning-rate schedule.

Weight decay pulls a weight towards zero. That is a sensible prior for the matrices that mix features, but not
for norm gains (whose natural value is 1), biases (offsets, few and cheap) or embedding rows (each row is only
updated when its token appears, so decay would erase rare tokens). Those go in a group with no decay.
"""

from __future__ import annotations

import inspect
import math

import torch
from torch import nn
from torch.optim.optimizer import Optimizer

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


class AdamW(torch.optim.AdamW):
    """torch.optim.AdamW, the same update (the same kernels, state and state_dict), without importing torch's
    compiler into a run that never compiles.

    torch.optim.Optimizer wraps add_param_group, zero_grad, state_dict and load_state_dict in torch._disable_dynamo
    and step in _use_grad_for_differentiable; the first call of either wrapper imports torch._dynamo, to keep the
    compiler from tracing into the optimizer. Measured with torch 2.13 on the 2-core Zen 5 (2026-12-07): that
    import is 72 MB of resident memory and ~1.2 s of CPU time in every training process (nanoGPT's train.py pays
    it too), more than the baby GPT's weights, gradients, AdamW state and a training step's activations together.
    Outside a compiled region those wrappers only switch the gradient off around the step (kept here), so this
    class calls the functions they wrap (inspect.unwrap: functools' __wrapped__); while torch.compile traces
    (torch.compiler.is_compiling), and on a torch whose methods are not wrapped, it is torch's own class."""

    def add_param_group(self, param_group: dict) -> None:
        if torch.compiler.is_compiling():
            return super().add_param_group(param_group)
        return _plain(Optimizer.add_param_group)(self, param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        if torch.compiler.is_compiling():
            return super().zero_grad(set_to_none)
        return _plain(Optimizer.zero_grad)(self, set_to_none)

    def state_dict(self) -> dict:
        if torch.compiler.is_compiling():
            return super().state_dict()
        return _plain(Optimizer.state_dict)(self)

    def load_state_dict(self, state_dict: dict) -> None:
        if torch.compiler.is_compiling():
            return super().load_state_dict(state_dict)
        return _plain(Optimizer.load_state_dict)(self, state_dict)

    def step(self, closure=None):
        if torch.compiler.is_compiling():
            return torch.optim.AdamW.step(self, closure)
        with torch.set_grad_enabled(self.defaults["differentiable"]):  # what _use_grad_for_differentiable sets
            return _plain(torch.optim.AdamW.step)(self, closure)


def _plain(method):
    """The function under torch's wrappers (itself when it has none)."""
    return inspect.unwrap(method)


def build_optimizer(model: nn.Module, lr: float, weight_decay: float = 0.1,
                    betas: tuple[float, float] = (0.9, 0.95), eps: float = 1e-8,
                    fused: bool | None = None) -> torch.optim.AdamW:
    """AdamW over the two groups; fused (one kernel per step) wherever torch supports it, unless fused=False.
    attnlab's AdamW (above): torch's, without the compiler's import."""
    if fused is None:
        fused = fused_supported(model)
    return AdamW(param_groups(model, weight_decay), lr=lr, betas=betas, eps=eps, fused=fused)


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
