"""The ready-made edits, for `intervene`: switch heads off, patch values from another run, steer the stream.

Why its own module: each helper checks its arguments against the model (layers, heads, names, positions) and
returns plain {name: Edit} dicts; the edit context (attnlab.interventions.context) applies them and knows none
of this. The Edit subclasses here count token positions (Edit.apply's `positions`), so a left-padded row or a
KV-cached step is edited at the same tokens as a full forward of the row alone. CellPatch is the sweeps' edit
(one (row, position) cell per row), also used by attnlab.interventions.attribution and the explorer's grids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch
from torch import nn

from attnlab.errors import InputError
from attnlab.interventions.checks import checked_index
from attnlab.interventions.context import SEQ_AXIS, Edit
from attnlab.interventions.readouts import checked_positions
from attnlab.models.stack import Stack
from attnlab.recording import matches, record, sites, summarize


# --------------------------------------------------------------------------------------------- where the heads are
def _stack(model: nn.Module, part: str | None) -> tuple[Stack, str]:
    """(the stack whose blocks are meant, its name prefix): the model itself, or an encoder-decoder's part."""
    if isinstance(model, Stack) and part is None:
        return model, ""
    if part in ("encoder", "decoder") and isinstance(getattr(model, part, None), Stack):
        return getattr(model, part), f"{part}."
    if isinstance(model, Stack):
        raise InputError(f"part={part!r}: this {type(model).__name__} has one stack; leave part=None")
    raise InputError(f"part={part!r}: an encoder-decoder needs part='encoder' or part='decoder'")


def _heads_by_layer(stack: Stack, heads) -> dict[int, list[int]]:
    """{layer: head | [heads]} or [(layer, head), ...] -> {layer: sorted heads}, every index checked."""
    n_layers, n_heads = len(stack.blocks), stack.config.n_heads
    items = heads.items() if isinstance(heads, Mapping) else heads
    out: dict[int, set[int]] = {}
    try:
        for layer, hs in items:
            checked_index(layer, "layer", n_layers, f"layer index (this model has {n_layers} layers)")
            for h in [hs] if isinstance(hs, int) else hs:
                out.setdefault(layer, set()).add(
                    checked_index(h, f"head (layer {layer})", n_heads, f"head index (n_heads={n_heads})"))
    except TypeError:
        raise InputError("heads must be {layer: head or [heads]} or [(layer, head), ...]") from None
    if not out:
        raise InputError("heads is empty: name at least one (layer, head)")
    return {layer: sorted(hs) for layer, hs in sorted(out.items())}


def _rows(rows, batch: int) -> torch.Tensor | None:
    if rows is None:
        return None
    index = torch.as_tensor(rows, dtype=torch.long).flatten()
    if index.numel() and (int(index.min()) < 0 or int(index.max()) >= batch):
        raise InputError(f"rows={rows!r}: allowed batch row indices in [0, {batch})")
    return index


# --------------------------------------------------------------------------------------------- head ablation
class HeadAblation(Edit):
    """At `*.attn.z` (batch, seq, heads, d_head): heads where `mask` is True take `fill` (zeros or a mean).

    mask: (heads,) for every row, or (batch, heads) per row (a sweep: one variant per row).
    fill: (heads, d_head) or None for zeros.
    """

    def __init__(self, mask: torch.Tensor, fill: torch.Tensor | None = None, rows: torch.Tensor | None = None):
        self.mask, self.fill, self.rows = mask, fill, rows

    def apply(self, tensor: torch.Tensor, name: str, positions: torch.Tensor | None) -> torch.Tensor:
        mask = self.mask.to(tensor.device)
        if mask.dim() == 1:
            mask = mask.expand(tensor.shape[0], -1)
            if self.rows is not None:
                keep = torch.zeros(tensor.shape[0], dtype=torch.bool, device=tensor.device)
                keep[_rows(self.rows, tensor.shape[0]).to(tensor.device)] = True
                mask = mask & keep[:, None]
        elif mask.shape[0] != tensor.shape[0]:
            raise InputError(f"a per-row head mask for {mask.shape[0]} rows met a batch of {tensor.shape[0]}")
        fill = torch.zeros((), dtype=tensor.dtype, device=tensor.device) if self.fill is None else \
            self.fill.to(tensor)[None, None]  # (1, 1, heads, d_head)
        return torch.where(mask[:, None, :, None], fill, tensor)  # (batch, seq, heads, d_head)


def head_means(model: nn.Module, reference, layers: Iterable[int], part: str | None = None) -> dict[int, torch.Tensor]:
    """{layer: (heads, d_head)} the mean of each head's z over a reference batch's rows and positions.

    reference: token ids (batch, seq) run through `model`, or a dict from attnlab.record holding the z names.
    """
    _, prefix = _stack(model, part)
    names = {layer: f"{prefix}blocks.{layer}.attn.z" for layer in layers}
    if isinstance(reference, Mapping):
        missing = [n for n in names.values() if n not in reference]
        if missing:
            raise InputError(f"reference lacks {missing[0]}: record it with names=['{prefix}blocks.*.attn.z']")
        source = reference
    elif isinstance(reference, torch.Tensor):
        source = record(model, reference, names=list(names.values()))
    else:
        raise InputError("mode='mean' needs reference=: token ids (batch, seq) or a record() dict with the z names")
    return {layer: source[name].float().mean(dim=(0, 1)) for layer, name in names.items()}


def ablate_heads(model: nn.Module, heads, *, mode: str = "zero", reference=None, rows=None,
                 part: str | None = None) -> dict[str, HeadAblation]:
    """Edits that switch heads off at z (each head's sum of w * V, before W_O), for `intervene`.

    heads: {layer: head or [heads]} or [(layer, head), ...]. mode "zero": the head adds nothing but W_O's
    bias share; "mean": it adds what it adds on average over `reference` (ids or a record() dict), which keeps
    the residual stream's scale. rows: batch rows to ablate (default all). part: "encoder"/"decoder" for an
    encoder-decoder. With grouped-query attention each query head is switched off alone (z is per query head).

        >>> with attnlab.intervene(model, attnlab.ablate_heads(model, {0: [1]})):
        ...     logits = model(ids).logits
    """
    stack, prefix = _stack(model, part)
    by_layer = _heads_by_layer(stack, heads)
    if mode not in ("zero", "mean"):
        raise InputError(f"mode={mode!r}: allowed 'zero' or 'mean'")
    means = head_means(model, reference, by_layer, part) if mode == "mean" else {}
    row_index = None if rows is None else checked_positions(rows, None, "rows")
    edits = {}
    for layer, hs in by_layer.items():
        mask = torch.zeros(stack.config.n_heads, dtype=torch.bool)
        mask[hs] = True
        edits[f"{prefix}blocks.{layer}.attn.z"] = HeadAblation(mask, means.get(layer), row_index)
    return edits


# --------------------------------------------------------------------------------------------- patching
class Patch(Edit):
    """Replace the value at token `positions` (None = all) of `rows` (None = all) by `source`'s.

    source: the same name recorded on another run, (batch or 1, ...), its index i holding token position i (a
    run without padding). A left-padded row's token position p sits in its column pad + p (Edit).
    """

    def __init__(self, source: torch.Tensor, positions: torch.Tensor | None, rows: torch.Tensor | None, axis: int):
        self.source, self.positions, self.rows, self.axis = source, positions, rows, axis

    def apply(self, tensor: torch.Tensor, name: str, positions: torch.Tensor | None) -> torch.Tensor:
        axis = self.axis
        if self.source.shape[axis + 1:] != tensor.shape[axis + 1:] or self.source.shape[1:axis] != tensor.shape[1:axis]:
            raise InputError(f"patch of {name}: the source has shape {tuple(self.source.shape)}, the run "
                             f"{tuple(tensor.shape)}; they must agree except on batch and positions")
        batch = tensor.shape[0]
        rows = None if self.rows is None else _rows(self.rows, batch).to(tensor.device)
        n_rows = batch if rows is None else rows.numel()
        if self.source.shape[0] not in (1, n_rows):
            raise InputError(f"patch of {name}: the source has {self.source.shape[0]} rows, the run patches "
                             f"{n_rows}; give a source of 1 row or one per patched row")
        token = positions.to(tensor.device).expand(batch, -1)  # (batch, length) token positions, -1 = padding
        chosen = (token >= 0) & (token < self.source.shape[axis])
        if self.positions is not None:
            chosen &= torch.isin(token, self.positions.to(tensor.device))
        source_row = torch.zeros(batch, dtype=torch.long, device=tensor.device)  # row -> its row of the source
        if rows is not None:
            keep = torch.zeros(batch, dtype=torch.bool, device=tensor.device)
            keep[rows] = True
            chosen &= keep[:, None]
            source_row[rows] = torch.arange(n_rows, device=tensor.device)
        elif self.source.shape[0] > 1:
            source_row = torch.arange(batch, device=tensor.device)
        if self.source.shape[0] == 1:
            source_row.zero_()
        row, col = chosen.nonzero(as_tuple=True)  # the (row, column) cells to copy
        if row.numel() == 0:
            return tensor
        out = tensor.clone()
        view, src = out.movedim(axis, 1), self.source.to(tensor).movedim(axis, 1)  # positions on dim 1
        view[row, col] = src[source_row[row], token[row, col]]
        return out


def patch(model: nn.Module, source: Mapping[str, torch.Tensor], *, names=None, positions=None,
          rows=None) -> dict[str, Patch]:
    """Edits that copy values from another run into this one (activation patching), for `intervene`.

    source: {name: tensor}, e.g. `attnlab.record(model, clean_ids, names=[...])` on an input of the same length.
    names: patterns choosing which of source's names to patch (default all). positions: token positions
    (default all that both runs have); in a left-padded batch each row's own (cumsum(attention_mask) - 1), so
    the source (recorded without padding: index i = token i) lands on the same tokens in every row. rows: the
    batch rows of this run to patch (default all).

        >>> clean = attnlab.record(model, clean_ids, names=["blocks.2.resid_post"])
        >>> with attnlab.intervene(model, attnlab.patch(model, clean, positions=[3])):
        ...     logits = model(corrupted_ids).logits
    """
    if not isinstance(source, Mapping) or not all(isinstance(v, torch.Tensor) for v in source.values()):
        raise InputError("source must be a dict of name -> tensor (what attnlab.record returns)")
    patterns = [names] if isinstance(names, str) else names
    chosen = {n: t for n, t in source.items() if patterns is None or matches(n, patterns)}
    if not chosen:
        raise InputError(f"names={names!r} matches none of source's names: {', '.join(source) or 'none'}")
    allowed = set(sites(model))
    edits = {}
    for name, tensor in chosen.items():
        leaf = name.rpartition(".")[2]
        if name not in allowed:
            raise InputError(f"source name {name!r} is not a name of this {type(model).__name__}; allowed: "
                             f"{summarize(sites(model))}")
        axis = SEQ_AXIS.get(leaf)
        if axis is None or tensor.dim() <= axis:
            raise InputError(f"{name} has no position axis to patch")
        index = checked_positions(positions, tensor.shape[axis], f"the source {name} has {tensor.shape[axis]}")
        row_index = None if rows is None else checked_positions(rows, None, "rows")
        edits[name] = Patch(tensor.detach(), index, row_index, axis)
    return edits


# --------------------------------------------------------------------------------------------- steering
class Steer(Edit):
    """Add alpha * vector (d_model,) at token `positions` (None = all) of `rows` (None = all)."""

    def __init__(self, vector: torch.Tensor, alpha: float, positions: torch.Tensor | None,
                 rows: torch.Tensor | None):
        self.vector, self.alpha, self.positions, self.rows = vector, alpha, positions, rows

    def apply(self, tensor: torch.Tensor, name: str, positions: torch.Tensor | None) -> torch.Tensor:
        batch, length = tensor.shape[:2]
        where = torch.ones(batch, length, 1, dtype=tensor.dtype, device=tensor.device)
        if self.positions is not None:  # the columns holding a chosen token position, row by row
            token = positions.to(tensor.device).expand(batch, -1)  # (batch, length), -1 = padding
            where = torch.isin(token, self.positions.to(tensor.device))[..., None].to(tensor.dtype)
        if self.rows is not None:
            keep = torch.zeros(batch, 1, 1, dtype=tensor.dtype, device=tensor.device)
            keep[_rows(self.rows, batch).to(tensor.device)] = 1
            where = where * keep
        return tensor + where * (self.alpha * self.vector.to(tensor))


def steer(model: nn.Module, name: str, vector: torch.Tensor, *, alpha: float = 1.0, positions=None,
          rows=None) -> dict[str, Steer]:
    """Edits that add alpha * vector to the residual stream at `name` (a pattern: blocks.*.resid_post too).

    vector: (d_model,), e.g. the difference of two recorded resid_post means. positions: token positions
    (default all, generated tokens included); in a left-padded batch each row's own (cumsum(attention_mask) -
    1), so a row is steered the same in a batch as alone. rows: batch rows (default all).

        >>> v = happy["blocks.1.resid_post"].mean((0, 1)) - sad["blocks.1.resid_post"].mean((0, 1))
        >>> with attnlab.intervene(model, attnlab.steer(model, "blocks.1.resid_post", v, alpha=4.0)):
        ...     out = model.generate(ids, max_new_tokens=10)
    """
    d_model = model.config.d_model
    if not isinstance(vector, torch.Tensor) or tuple(vector.shape) != (d_model,):
        got = tuple(vector.shape) if isinstance(vector, torch.Tensor) else type(vector).__name__
        raise InputError(f"the steering vector must be a tensor of shape (d_model={d_model},), got {got}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise InputError(f"alpha={alpha!r}: allowed a number")
    residual = ("embed", "resid_pre", "resid_mid", "resid_cross", "resid_post", "final")
    allowed = [n for n in sites(model) if n.rpartition(".")[2] in residual]
    if not isinstance(name, str) or not any(matches(n, [name]) for n in allowed):
        raise InputError(f"steer name {name!r} matches no residual-stream name of this model; allowed: "
                         f"{summarize(allowed)}")
    row_index = None if rows is None else checked_positions(rows, None, "rows")
    return {name: Steer(vector.detach(), float(alpha), checked_positions(positions, None, "positions"), row_index)}



# --------------------------------------------------------------------------------------------- one cell per row
class CellPatch(Edit):
    """Row rows[i] takes source[0, positions[i]] at positions[i]: one (row, position) cell per row."""

    def __init__(self, source: torch.Tensor, rows: torch.Tensor, positions: torch.Tensor):
        self.source, self.rows, self.positions = source, rows, positions

    def apply(self, tensor: torch.Tensor, name: str, positions: torch.Tensor | None) -> torch.Tensor:
        start = int(positions[0, 0])  # one unpadded sentence (a sweep's): its positions are start, start + 1, ...
        out = tensor.clone()
        out[self.rows, self.positions - start] = self.source[0, self.positions].to(tensor)
        return out
