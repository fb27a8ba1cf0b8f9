"""The edit context: `intervene(model, edits)` and the Edit / Editor machinery every edit runs through.

Why its own module: this is the one part the rest of the package (the ready-made edits, the sweeps) and the
recorder's Probe depend on; it knows names, patterns and token positions, and nothing of heads, patching or
sweeps. An Editor sits in the recorder's ContextVar (attnlab.recording.activated), so the edits apply inside
the model's own forward and vanish on leaving the `with`, exception or not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager

import torch
from torch import nn

from attnlab.errors import InputError
from attnlab.recording import Named, activated, matches, sites, summarize

EditValue = Callable[[torch.Tensor, str], torch.Tensor] | torch.Tensor

# the axis that counts positions, per leaf (k/v: key positions, from 0; raw_scores/weights: query positions)
SEQ_AXIS = {"embed": 1, "resid_pre": 1, "resid_mid": 1, "resid_cross": 1, "resid_post": 1, "final": 1,
            "hidden": 1, "logits": 1, "z": 1, "q": 2, "k": 2, "v": 2, "raw_scores": 2, "weights": 2,
            "head_out": 2}
_FROM_ZERO = ("k", "v")  # their position axis always starts at 0 (the cache's stored keys, or the source)


class Edit:
    """An edit that knows which token positions it sees: helpers subclass it and write `apply`.

    `positions` (batch or 1, length): the token position of each index along the value's position axis, -1 on
    padding (a left-padded row's pad columns); None for a value without a position axis. Without padding it is
    start, start + 1, ... (start 0 for a full forward; the cache length for a cached decoding step).
    """

    def apply(self, tensor: torch.Tensor, name: str, positions: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError

    def __call__(self, tensor: torch.Tensor, name: str) -> torch.Tensor:
        axis = SEQ_AXIS.get(name.rpartition(".")[2])
        length = tensor.shape[axis] if axis is not None and tensor.dim() > axis else None
        return self.apply(tensor, name, None if length is None else torch.arange(length)[None])


class Editor(Named):
    """One `intervene` context's edits of one model: pattern -> edit, checked, applied by Probe.keep."""

    def __init__(self, model: nn.Module, edits: list[tuple[str, EditValue]]):
        super().__init__(model)
        self.edits = edits
        self.end = 0  # set by each stack's forward (Probe.span): columns seen so far, this forward included
        self.mask: torch.Tensor | None = None  # and its attention mask (batch, end), None without padding
        self._for_name: dict[str, list[EditValue]] = {}

    def wants(self, name: str) -> bool:
        return any(matches(name, [pattern]) for pattern, _ in self.edits)

    def edit(self, module: nn.Module, leaf: str, tensor: torch.Tensor) -> torch.Tensor:
        name = self.name(module, leaf)
        if name is None:
            return tensor
        values = self._for_name.get(name)
        if values is None:
            values = self._for_name[name] = [v for p, v in self.edits if matches(name, [p])]
        for value in values:
            if isinstance(value, Edit):
                new = value.apply(tensor, name, self._token_positions(name, leaf, tensor))
            elif callable(value):
                new = value(tensor, name)
            else:
                new = value.to(dtype=tensor.dtype, device=tensor.device)
            if not isinstance(new, torch.Tensor) or new.shape != tensor.shape:
                got = tuple(new.shape) if isinstance(new, torch.Tensor) else type(new).__name__
                raise InputError(f"the edit of {name} gave {got}; it must keep the value's shape "
                                 f"{tuple(tensor.shape)} (return a new tensor of the same shape)")
            tensor = new
        return tensor

    def _token_positions(self, name: str, leaf: str, tensor: torch.Tensor) -> torch.Tensor | None:
        """(batch or 1, length) the token position of each index on `tensor`'s position axis, -1 on padding.

        Why from the mask: a left-padded row's token p sits in column pad + p; its position is cumsum(mask) - 1,
        the numbering generation gives its positions, so an edit at position p meets the same token in a batch
        as alone. k/v count key columns from 0; the others end at the forward's last column (`end`). A
        cross-attention's k/v are the source's positions, which the decoder's mask does not describe.
        """
        axis = SEQ_AXIS.get(leaf)
        if axis is None or tensor.dim() <= axis:
            return None
        length = tensor.shape[axis]
        first = 0 if leaf in _FROM_ZERO else max(self.end - length, 0)
        mask = None if ".cross_attn." in f".{name}" else self.mask
        if mask is None or first + length > mask.shape[-1] or (leaf in _FROM_ZERO and length != mask.shape[-1]):
            return torch.arange(first, first + length, device=tensor.device)[None]  # (1, length)
        mask = mask.to(tensor.device)
        token = mask.long().cumsum(dim=-1) - 1  # (batch, end)
        token = token.masked_fill(mask == 0, -1)
        return token[:, first: first + length]


def _pairs(edits) -> list[tuple[str, EditValue]]:
    """A mapping, or a list of mappings / (name, edit) pairs -> [(pattern, edit)] in order."""
    groups = [edits] if isinstance(edits, Mapping) else edits
    if not isinstance(groups, Iterable) or isinstance(groups, (str, bytes, torch.Tensor)):
        raise InputError(f"edits must map names to edits (a dict, or a list of dicts), got {type(edits).__name__}")
    pairs = []
    for group in groups:
        items = group.items() if isinstance(group, Mapping) else [group]
        for item in items:
            if not (isinstance(item, tuple) and len(item) == 2):
                raise InputError(f"edits must map names to edits (a dict, or a list of dicts); got {item!r}")
            pairs.append(item)
    return pairs


def check_edits(model: nn.Module, edits) -> list[tuple[str, EditValue]]:
    """Every pattern names at least one site of `model`, every edit is a function or a tensor: else InputError."""
    pairs = _pairs(edits)
    allowed = sites(model)
    for pattern, value in pairs:
        if not isinstance(pattern, str) or not any(matches(n, [pattern]) for n in allowed):
            raise InputError(f"edit name {pattern!r} matches nothing this {type(model).__name__} computes; "
                             f"allowed names (glob patterns, * for any layer): {summarize(allowed)}")
        if not (callable(value) or isinstance(value, torch.Tensor)):
            raise InputError(f"the edit of {pattern!r} is a {type(value).__name__}: allowed a function "
                             "(tensor, name) -> tensor, or a tensor that replaces the value")
    return pairs


@contextmanager
def intervene(model: nn.Module, edits) -> Iterator[Editor]:
    """Within the `with`, `model`'s forwards (in this thread/task) run with `edits` applied.

    edits: {name or pattern: function (tensor, name) -> tensor, or a replacement tensor}, or a list of such
    dicts (applied in order). Names as in attnlab.record (`attnlab.recording.sites(model)` lists them). Checked
    before anything runs: an unknown name raises InputError listing the allowed ones. A nested `intervene`
    applies its edits first, then the outer ones.
    """
    editor = Editor(model, check_edits(model, edits))
    with activated(editor=editor):
        yield editor

