"""Recording of the numbers inside a forward pass, under stable dotted names.

Modules get their dotted path (`blocks.3.attn`) as `record_name` when a model is built. While a Recorder is
active, a module asks `wants(name)` and, only if so, computes and keeps the tensor. When no Recorder is
active the cost is one global lookup per module, so the normal forward stays on its fast path.

Names (per block i; encoder-decoders prefix `encoder.` / `decoder.`):
  embed                      vectors entering block 0 (embeddings + positions, after any embedding norm)
  blocks.i.resid_pre         residual stream entering block i
  blocks.i.attn.q/k/v        (batch, heads, seq, d_head) after any rotary embedding (k/v per query head)
  blocks.i.attn.raw_scores   (batch, heads, q, k)  Q K^T * scale + B   (B: positions bias + mask)
  blocks.i.attn.weights      (batch, heads, q, k)  softmax of raw_scores
  blocks.i.resid_mid         after the self-attention sub-layer (residual added, post-LN norm applied)
  blocks.i.cross_attn.*      the same for cross-attention; blocks.i.resid_cross after it
  blocks.i.ffn.hidden        (batch, seq, d_ff) activations inside the feed-forward
  blocks.i.resid_post        leaving block i
  final                      after the final norm (the model's last hidden state)
  logits                     the head's output
"""

from __future__ import annotations

import fnmatch
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager

import torch

_active: Recorder | None = None


class Recorder:
    """Collects tensors whose names match `names` (glob patterns; None = everything).

    `head` keeps only one head of the per-head tensors (q, k, v, raw_scores, weights).
    """

    def __init__(self, names: list[str] | str | None = None, head: int | None = None):
        if isinstance(names, str):
            names = [names]
        self.patterns = names
        self.head = head
        self.store: dict[str, torch.Tensor] = {}
        self._wants: dict[str, bool] = {}
        self._prefix: dict[str, bool] = {}

    def wants(self, name: str) -> bool:
        hit = self._wants.get(name)
        if hit is None:
            hit = self.patterns is None or any(fnmatch.fnmatchcase(name, p) for p in self.patterns)
            self._wants[name] = hit
        return hit

    def wants_any(self, prefix: str, leaves: tuple[str, ...]) -> bool:
        """Whether any of `prefix.leaf` is wanted (decides whether attention takes the explicit path)."""
        key = prefix + "|" + ",".join(leaves)
        hit = self._prefix.get(key)
        if hit is None:
            hit = any(self.wants(f"{prefix}.{leaf}") for leaf in leaves)
            self._prefix[key] = hit
        return hit

    def save(self, name: str, tensor: torch.Tensor, per_head: bool = False) -> None:
        if per_head and self.head is not None:
            tensor = tensor[:, self.head : self.head + 1]
        self.store[name] = tensor.detach()


def active() -> Recorder | None:
    return _active


def save(name: str, tensor: torch.Tensor) -> None:
    """Keep `tensor` under `name` if a recorder is active and wants it."""
    rec = _active
    if rec is not None and rec.wants(name):
        rec.save(name, tensor)


@contextmanager
def recording(names: list[str] | str | None = None, head: int | None = None) -> Iterator[dict[str, torch.Tensor]]:
    """`with recording(["blocks.0.attn.*"]) as store: model(x)` fills `store` with what was computed."""
    global _active
    previous = _active
    rec = Recorder(names, head)
    _active = rec
    try:
        yield rec.store
    finally:
        _active = previous


def record(model: torch.nn.Module, *args, names: list[str] | str | None = None, head: int | None = None,
           **kwargs) -> dict[str, torch.Tensor]:
    """Run `model(*args, **kwargs)` once and return every recorded tensor (see module docstring for names)."""
    n_heads = getattr(getattr(model, "config", None), "n_heads", None)
    if head is not None and (not isinstance(head, int) or not 0 <= head < (n_heads or head + 1)):
        from attnlab.errors import InputError

        raise InputError(f"head={head!r}: allowed a head index in [0, n_heads={n_heads}) or None for all heads")
    with torch.no_grad(), recording(names, head) as store:
        model(*args, **kwargs)
    return dict(store)


def name_modules(model: torch.nn.Module) -> None:
    """Give every submodule its dotted path as `record_name` (called once when a model is built)."""
    for name, module in model.named_modules():
        module.record_name = name


class _CallableModule(types.ModuleType):
    """`attnlab.recording(...)` has been the `recording` context manager while library code reads this module
    through the same name (`from attnlab import recording`). attnlab/__init__.py now imports lazily, so the
    name can no longer be rebound to the function after the package loads: the module itself forwards calls."""

    def __call__(self, *args, **kwargs):
        return recording(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
