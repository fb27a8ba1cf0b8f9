"""Interventions: change a value inside the model's own forward, at the names that attnlab.record uses.

    with attnlab.intervene(model, {"blocks.1.attn.weights": lambda w, name: w * 0}):
        out = model(ids)                      # the plain forward, with that one value replaced

    with attnlab.intervene(model, attnlab.ablate_heads(model, {1: [0, 3]})):   # a helper builds the edits
        out = model(ids)

`edits` maps a name or glob pattern (`blocks.*.resid_post`, as in `record`) to a function `(tensor, name) ->
tensor` or to a tensor that replaces the value; a list of such mappings applies them in order. Every module
already hands each named value to the probe of the current context (attnlab.recording.Probe.keep) and continues
with what it returns, so an edit runs in the one forward: no copy of the model, no torch hook, no second pass.

How it stays local and free when off: the edits sit in the same ContextVar as a recording (one Probe holds
both), set on entering `intervene` and reset in `finally`. Another thread, or code after the `with` (also
after an exception inside it), sees no edit; a layer pays the one `active()` call it paid before. Attention
keeps its fused kernel unless an edit (or a recording) names one of its scores, weights, q, k or v; the
per-head outputs z and head_out are computed only when named.

With a recording: the recorded values are the edited ones (edits apply first). With generation: each decoding
step is the model's forward, so the edit applies at every step. Position-selective helpers (patch, steer with
`positions`) count absolute positions: a KV-cached step that holds only the newest token is edited there only
if that position is selected, so cached generation equals the full forward under the same edit (k and v are
edited as read from the cache, never written back). A plain function sees the step's own slice. Positions are
token positions: in a left-padded batch (attention_mask) a row's position p is its own p-th real token,
`cumsum(mask) - 1` as generation numbers them, not column p, so a row is edited the same in a batch as alone.

Sweeps put their variants on the batch dimension: `head_sweep` ablates one head per row of a repeated input,
`trace_residual` patches one (layer, position) per row: a few forwards, not one per cell. The read-outs they use
(logprobs_at, clean_run, logit_lens) live in attnlab.readouts and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager

import torch
from torch import nn

from attnlab.cache import KVCache
from attnlab.errors import InputError
from attnlab.models.stack import Stack
from attnlab.readouts import (  # re-exported: attnlab.interventions.logit_lens etc. stay where they were
    CleanRun,
    _lm_parts,
    _logprobs_from,
    _position,
    _positions,
    clean_run,
    logit_lens,  # noqa: F401 (re-exported)
    logprobs_at,  # noqa: F401 (re-exported)
)
from attnlab.recording import Named, activated, matches, record, sites, summarize

EditValue = Callable[[torch.Tensor, str], torch.Tensor] | torch.Tensor

# the axis that counts positions, per leaf (k/v: key positions, from 0; raw_scores/weights: query positions)
_SEQ_AXIS = {"embed": 1, "resid_pre": 1, "resid_mid": 1, "resid_cross": 1, "resid_post": 1, "final": 1,
             "hidden": 1, "logits": 1, "z": 1, "q": 2, "k": 2, "v": 2, "raw_scores": 2, "weights": 2,
             "head_out": 2}
_FROM_ZERO = ("k", "v")  # their position axis always starts at 0 (the cache's stored keys, or the source)


class Cancelled(Exception):
    """A sweep's `cancelled()` answered True; `partial` holds the cells computed so far (NaN elsewhere)."""

    def __init__(self, partial: torch.Tensor):
        super().__init__("the sweep was cancelled")
        self.partial = partial


class Edit:
    """An edit that knows which token positions it sees: helpers subclass it and write `apply`.

    `positions` (batch or 1, length): the token position of each index along the value's position axis, -1 on
    padding (a left-padded row's pad columns); None for a value without a position axis. Without padding it is
    start, start + 1, ... (start 0 for a full forward; the cache length for a cached decoding step).
    """

    def apply(self, tensor: torch.Tensor, name: str, positions: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError

    def __call__(self, tensor: torch.Tensor, name: str) -> torch.Tensor:
        axis = _SEQ_AXIS.get(name.rpartition(".")[2])
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
        axis = _SEQ_AXIS.get(leaf)
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


def _int(value, name: str, upper: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < upper:
        raise InputError(f"{name}={value!r}: allowed a {what} in [0, {upper})")
    return value


def _heads_by_layer(stack: Stack, heads) -> dict[int, list[int]]:
    """{layer: head | [heads]} or [(layer, head), ...] -> {layer: sorted heads}, every index checked."""
    n_layers, n_heads = len(stack.blocks), stack.config.n_heads
    items = heads.items() if isinstance(heads, Mapping) else heads
    out: dict[int, set[int]] = {}
    try:
        for layer, hs in items:
            _int(layer, "layer", n_layers, f"layer index (this model has {n_layers} layers)")
            for h in [hs] if isinstance(hs, int) else hs:
                out.setdefault(layer, set()).add(
                    _int(h, f"head (layer {layer})", n_heads, f"head index (n_heads={n_heads})"))
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
    row_index = None if rows is None else _positions(rows, None, "rows")
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
        axis = _SEQ_AXIS.get(leaf)
        if axis is None or tensor.dim() <= axis:
            raise InputError(f"{name} has no position axis to patch")
        index = _positions(positions, tensor.shape[axis], f"the source {name} has {tensor.shape[axis]}")
        row_index = None if rows is None else _positions(rows, None, "rows")
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
    row_index = None if rows is None else _positions(rows, None, "rows")
    return {name: Steer(vector.detach(), float(alpha), _positions(positions, None, "positions"), row_index)}


# --------------------------------------------------------------------------------------------- before and after
def before_after(model: nn.Module, ids: torch.Tensor, position: int, edits, *, start: int = 0,
                 attention_mask=None) -> torch.Tensor:
    """(2, vocab) log-probabilities at `position`: row 0 the unchanged text, row 1 under `edits`, in ONE forward.

    `edits` must change batch row 1 only (helpers' rows=[1], e.g. ablate_heads(model, heads, rows=[1])) and
    nothing before block `start`: the text runs once up to that block (the rows agree there), then as two rows.
    """
    _one_sentence(model, ids)
    position = _position(position, ids.shape[1])
    streams = {}
    if start:
        _int(start, "start", len(model.blocks), "block index")
        name = f"blocks.{start}.resid_pre"
        causal, _ = _lm_parts(model)
        prefix = ids[:, : position + 1] if causal else ids
        mask = attention_mask
        if mask is not None and causal:
            mask = mask[:, : position + 1]
        with torch.no_grad():
            streams = record(model, prefix, attention_mask=mask, names=[name], stop_after=name)
    with intervene(model, edits):
        return _logprobs_from(model, ids, streams, start, 2, position, attention_mask)


# --------------------------------------------------------------------------------------------- sweeps
def _one_sentence(model: nn.Module, ids, name: str = "ids") -> None:
    model.check_ids(ids, name)
    if ids.shape[0] != 1:
        raise InputError(f"{name} has shape {tuple(ids.shape)}: a sweep takes one sentence, shape (1, seq); it "
                         "repeats it on the batch dimension itself")


def _target(model: nn.Module, target) -> int:
    return _int(target, "target", model.config.vocab_size, "token id")


def _chunks(cells: list[tuple[int, int]], batch_size: int, progress, cancelled, grid: torch.Tensor):
    """(layer, x) cells in layer order -> one layer's cells at a time, at most batch_size per forward.

    One layer per forward, because a forward starts at its first changed layer: rows of layer l run L - l
    blocks, so per-layer forwards do about half the work of mixing layers (the small per-forward overhead is
    worth it at these sizes). progress(done, total) after each forward; cancelled() before each.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InputError(f"batch_size={batch_size!r}: allowed a positive integer")
    done, chunk = 0, []
    for i, cell in enumerate(cells):
        chunk.append(cell)
        if len(chunk) < batch_size and i + 1 < len(cells) and cells[i + 1][0] == cell[0]:
            continue
        if cancelled is not None and cancelled():
            raise Cancelled(grid)
        yield chunk
        done += len(chunk)
        chunk = []
        if progress is not None:
            progress(done, len(cells))


def head_sweep(model: nn.Module, ids: torch.Tensor, target: int, *, position: int = -1, mode: str = "zero",
               reference=None, attention_mask=None, batch_size: int = 64,
               progress: Callable[[int, int], None] | None = None,
               cancelled: Callable[[], bool] | None = None, clean: CleanRun | None = None) -> torch.Tensor:
    """Ablate each head in turn: (layers, heads) drop in log P(target) at `position` (clean - ablated).

    One forward per `batch_size` heads: the sentence is repeated on the batch dimension and row r switches
    off its own head at z. Each forward holds one layer's heads and starts at that layer, from the recorded
    residual stream there (the rows agree before it): about half the work of running every row from the tokens.
    progress(done, total) after each forward; cancelled() before each: True raises
    Cancelled with the partial grid (NaN where not run). mode/reference as in ablate_heads. clean: a
    clean_run(model, ids, position, attention_mask, ["blocks.*.resid_pre"]) already made (saves that forward).
    """
    _one_sentence(model, ids)
    target = _target(model, target)
    n_layers, n_heads = len(model.blocks), model.config.n_heads
    if mode not in ("zero", "mean"):
        raise InputError(f"mode={mode!r}: allowed 'zero' or 'mean'")
    means = head_means(model, reference, range(n_layers)) if mode == "mean" else {}
    position = _position(position, ids.shape[1])
    if clean is None:
        clean = clean_run(model, ids, position, attention_mask, ["blocks.*.resid_pre"])
    streams = clean.recorded
    clean = clean.logprobs[0, target]
    grid = torch.full((n_layers, n_heads), float("nan"))
    cells = [(layer, h) for layer in range(n_layers) for h in range(n_heads)]  # layer-major: a chunk starts late
    current = _PerChunk()  # one intervene for the whole sweep: names matched once, not once per forward
    with intervene(model, {f"blocks.{layer}.attn.z": current for layer in range(n_layers)}):
        for chunk in _chunks(cells, batch_size, progress, cancelled, grid):
            layer = chunk[0][0]  # a chunk holds one layer's heads (_chunks)
            mask = torch.zeros(len(chunk), n_heads, dtype=torch.bool)  # (row, head)
            mask[torch.arange(len(chunk)), [h for _, h in chunk]] = True
            current.set(f"blocks.{layer}.attn.z", HeadAblation(mask, means.get(layer)))
            ablated = _logprobs_from(model, ids, streams, layer, len(chunk), position, attention_mask)[:, target]
            for row, (_, h) in enumerate(chunk):
                grid[layer, h] = clean - ablated[row]
    return grid


class _PerChunk(Edit):
    """The edit of one sweep forward: at `name` it applies `edit`; at every other name it leaves the value."""

    def __init__(self):
        self.name, self.edit = None, None

    def set(self, name: str, edit: Edit) -> None:
        self.name, self.edit = name, edit

    def apply(self, tensor: torch.Tensor, name: str, positions: torch.Tensor | None) -> torch.Tensor:
        return self.edit.apply(tensor, name, positions) if name == self.name else tensor


def trace_residual(model: nn.Module, clean_ids: torch.Tensor, corrupted_ids: torch.Tensor, target: int, *,
                   position: int = -1, site: str = "resid_pre", batch_size: int = 64,
                   progress: Callable[[int, int], None] | None = None,
                   cancelled: Callable[[], bool] | None = None, clean: CleanRun | None = None,
                   corrupted: CleanRun | None = None) -> torch.Tensor:
    """Causal tracing: (layers, seq) P(target at `position`) in the corrupted run with the residual stream at
    (layer, position p) copied from the clean run. `site`: "resid_pre" (entering block l) or "resid_post".

    Each row of a forward patches its own (layer, p); a forward starts at its first patched layer, from the
    corrupted run's recorded residual stream there. A decoder's positions after `position` cannot change it:
    their cells hold the corrupted run's probability without being run. In a decoder a patch at p cannot change
    the positions before p either: a layer's cells run in up to POSITION_GROUPS forwards by position, each from
    its first position on, the earlier positions' keys and values read from one cached corrupted run (about a
    third less work on a 20-token input). clean / corrupted: clean_run()s already made (clean's recording holds
    the site's names, corrupted's blocks.*.resid_pre): each saves a forward.
    """
    _one_sentence(model, clean_ids, "clean_ids")
    _one_sentence(model, corrupted_ids, "corrupted_ids")
    if clean_ids.shape != corrupted_ids.shape:
        raise InputError(f"clean_ids {tuple(clean_ids.shape)} and corrupted_ids {tuple(corrupted_ids.shape)} "
                         "must have the same length: patching copies position p to position p")
    if site not in ("resid_pre", "resid_post"):
        raise InputError(f"site={site!r}: allowed 'resid_pre' or 'resid_post'")
    target = _target(model, target)
    causal, _ = _lm_parts(model)
    seq = clean_ids.shape[1]
    position = _position(position, seq)
    n_layers = len(model.blocks)
    names = [f"blocks.{layer}.{site}" for layer in range(n_layers)]
    if clean is None:
        clean = clean_run(model, clean_ids, position, names=names)
    clean = clean.recorded
    if corrupted is None:
        corrupted = clean_run(model, corrupted_ids, position, names=["blocks.*.resid_pre"])
    corrupted_p = corrupted.logprobs[0, target].exp()
    streams = corrupted.recorded
    grid = torch.full((n_layers, seq), float("nan"))
    last = position + 1 if causal else seq
    grid[:, last:] = corrupted_p
    cells = [(layer, p) for layer in range(n_layers) for p in range(last)]
    prefix = _prefix_cache(model, corrupted_ids, position) if causal and last >= MIN_SPLIT else None
    for chunk in _chunks(cells, batch_size, progress, cancelled, grid):
        layer = chunk[0][0]  # one layer per chunk (_chunks)
        groups = _position_groups(chunk) if prefix is not None and layer > 0 else [(0, chunk)]
        for first, group in groups:
            edit = _CellPatch(clean[names[layer]], torch.arange(len(group)), torch.tensor([p for _, p in group]))
            with intervene(model, {names[layer]: edit}):
                if first:
                    logprobs = _logprobs_after(model, streams, prefix, layer, len(group), first, position)
                else:
                    logprobs = _logprobs_from(model, corrupted_ids, streams, layer, len(group), position)
            for (_, pos), p in zip(group, logprobs[:, target].exp(), strict=True):
                grid[layer, pos] = p
    return grid


POSITION_GROUPS = 3  # a layer's patching cells run in this many forwards by position (a decoder's)
MIN_SPLIT = 8  # inputs shorter than this run each layer in one forward (the split saves less than a forward)


def _position_groups(chunk: list[tuple[int, int]]) -> list[tuple[int, list[tuple[int, int]]]]:
    """One layer's (layer, p) cells -> [(first position, cells)], POSITION_GROUPS runs of consecutive p."""
    chunk = sorted(chunk, key=lambda cell: cell[1])
    size = -(-len(chunk) // POSITION_GROUPS)
    return [(part[0][1], part) for part in (chunk[i: i + size] for i in range(0, len(chunk), size))]


def _prefix_cache(model: nn.Module, ids: torch.Tensor, position: int) -> KVCache:
    """The keys and values of `ids` at positions 0..position, every layer: one forward of one row, no edits
    but those in effect (the same run as the corrupted clean_run)."""
    cache = KVCache.for_model(model, 1, position + 1)
    with torch.no_grad():
        model(ids[:, : position + 1], cache=cache, last_only=True)
    return cache


def _logprobs_after(model: nn.Module, streams: dict[str, torch.Tensor], prefix: KVCache, start: int, rows: int,
                    first: int, position: int) -> torch.Tensor:
    """(rows, vocab) log-probabilities at `position` of a decoder whose `rows` variants differ only from block
    `start` and position `first` on: positions first..position run from the recorded stream entering that block,
    the earlier positions' keys and values come from `prefix` (the same unedited run)."""
    _, head = _lm_parts(model)
    cache = KVCache.for_model(model, rows, position + 1)
    for i, (mine, theirs) in enumerate(zip(cache.layers, prefix.layers, strict=True)):
        if i >= start:
            mine.kv.narrow(3, 0, first).copy_(theirs.kv.narrow(3, 0, first))  # (2, 1 -> rows, heads, first, d)
        mine.length = first
    stream = streams[f"blocks.{start}.resid_pre"][:, first: position + 1].expand(rows, -1, -1)
    with torch.no_grad():
        hidden = model.run(stream, cache=cache, start=start)  # (rows, position + 1 - first, d_model)
        return head(hidden[:, -1]).float().log_softmax(dim=-1)


class _CellPatch(Edit):
    """Row rows[i] takes source[0, positions[i]] at positions[i]: one (row, position) cell per row."""

    def __init__(self, source: torch.Tensor, rows: torch.Tensor, positions: torch.Tensor):
        self.source, self.rows, self.positions = source, rows, positions

    def apply(self, tensor: torch.Tensor, name: str, positions: torch.Tensor | None) -> torch.Tensor:
        start = int(positions[0, 0])  # one unpadded sentence (a sweep's): its positions are start, start + 1, ...
        out = tensor.clone()
        out[self.rows, self.positions - start] = self.source[0, self.positions].to(tensor)
        return out
