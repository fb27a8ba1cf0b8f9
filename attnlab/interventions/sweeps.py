"""Runs that put variants on the batch dimension: before_after, head_sweep, trace_residual.

Why its own module: these run the model (the edits only describe a change): one sentence repeated on the batch
dimension, each row its own variant, each forward started at the first block a variant changes from the recorded
residual stream there, so a grid of (layer, x) cells costs a few forwards, not one per cell. The chunking (layer_chunks,
with progress and cancellation) is shared with attnlab.interventions.attribution's exact patching. """

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from attnlab.cache import KVCache
from attnlab.errors import InputError
from attnlab.interventions.checks import check_one_sentence, checked_index, checked_target
from attnlab.interventions.context import Edit, intervene
from attnlab.interventions.edits import CellPatch, HeadAblation, head_means
from attnlab.interventions.readouts import CleanRun, checked_position, clean_run, lm_parts, logprobs_from
from attnlab.recording import record


class Cancelled(Exception):
    """A sweep's `cancelled()` answered True; `partial` holds the cells computed so far (NaN elsewhere)."""

    def __init__(self, partial: torch.Tensor):
        super().__init__("the sweep was cancelled")
        self.partial = partial


# --------------------------------------------------------------------------------------------- before and after
def before_after(model: nn.Module, ids: torch.Tensor, position: int, edits, *, start: int = 0,
                 attention_mask=None) -> torch.Tensor:
    """(2, vocab) log-probabilities at `position`: row 0 the unchanged text, row 1 under `edits`, in ONE forward.

    `edits` must change batch row 1 only (helpers' rows=[1], e.g. ablate_heads(model, heads, rows=[1])) and
    nothing before block `start`: the text runs once up to that block (the rows agree there), then as two rows.
    """
    check_one_sentence(model, ids)
    position = checked_position(position, ids.shape[1])
    streams = {}
    if start:
        checked_index(start, "start", len(model.blocks), "block index")
        name = f"blocks.{start}.resid_pre"
        causal, _ = lm_parts(model)
        prefix = ids[:, : position + 1] if causal else ids
        mask = attention_mask
        if mask is not None and causal:
            mask = mask[:, : position + 1]
        with torch.no_grad():
            streams = record(model, prefix, attention_mask=mask, names=[name], stop_after=name)
    with intervene(model, edits):
        return logprobs_from(model, ids, streams, start, 2, position, attention_mask)


# --------------------------------------------------------------------------------------------- sweeps
def layer_chunks(cells: list[tuple[int, int]], batch_size: int, progress, cancelled, grid: torch.Tensor):
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
    check_one_sentence(model, ids)
    target = checked_target(model, target)
    n_layers, n_heads = len(model.blocks), model.config.n_heads
    if mode not in ("zero", "mean"):
        raise InputError(f"mode={mode!r}: allowed 'zero' or 'mean'")
    means = head_means(model, reference, range(n_layers)) if mode == "mean" else {}
    position = checked_position(position, ids.shape[1])
    if clean is None:
        clean = clean_run(model, ids, position, attention_mask, ["blocks.*.resid_pre"])
    streams = clean.recorded
    clean = clean.logprobs[0, target]
    grid = torch.full((n_layers, n_heads), float("nan"))
    cells = [(layer, h) for layer in range(n_layers) for h in range(n_heads)]  # layer-major: a chunk starts late
    current = _PerChunk()  # one intervene for the whole sweep: names matched once, not once per forward
    with intervene(model, {f"blocks.{layer}.attn.z": current for layer in range(n_layers)}):
        for chunk in layer_chunks(cells, batch_size, progress, cancelled, grid):
            layer = chunk[0][0]  # a chunk holds one layer's heads (layer_chunks)
            mask = torch.zeros(len(chunk), n_heads, dtype=torch.bool)  # (row, head)
            mask[torch.arange(len(chunk)), [h for _, h in chunk]] = True
            current.set(f"blocks.{layer}.attn.z", HeadAblation(mask, means.get(layer)))
            ablated = logprobs_from(model, ids, streams, layer, len(chunk), position, attention_mask)[:, target]
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
    check_one_sentence(model, clean_ids, "clean_ids")
    check_one_sentence(model, corrupted_ids, "corrupted_ids")
    if clean_ids.shape != corrupted_ids.shape:
        raise InputError(f"clean_ids {tuple(clean_ids.shape)} and corrupted_ids {tuple(corrupted_ids.shape)} "
                         "must have the same length: patching copies position p to position p")
    if site not in ("resid_pre", "resid_post"):
        raise InputError(f"site={site!r}: allowed 'resid_pre' or 'resid_post'")
    target = checked_target(model, target)
    causal, _ = lm_parts(model)
    seq = clean_ids.shape[1]
    position = checked_position(position, seq)
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
    for chunk in layer_chunks(cells, batch_size, progress, cancelled, grid):
        layer = chunk[0][0]  # one layer per chunk (layer_chunks)
        groups = _position_groups(chunk) if prefix is not None and layer > 0 else [(0, chunk)]
        for first, group in groups:
            edit = CellPatch(clean[names[layer]], torch.arange(len(group)), torch.tensor([p for _, p in group]))
            with intervene(model, {names[layer]: edit}):
                if first:
                    logprobs = _logprobs_after(model, streams, prefix, layer, len(group), first, position)
                else:
                    logprobs = logprobs_from(model, corrupted_ids, streams, layer, len(group), position)
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
    _, head = lm_parts(model)
    cache = KVCache.for_model(model, rows, position + 1)
    for i, (mine, theirs) in enumerate(zip(cache.layers, prefix.layers, strict=True)):
        if i >= start:
            mine.kv.narrow(3, 0, first).copy_(theirs.kv.narrow(3, 0, first))  # (2, 1 -> rows, heads, first, d)
        mine.length = first
    stream = streams[f"blocks.{start}.resid_pre"][:, first: position + 1].expand(rows, -1, -1)
    with torch.no_grad():
        hidden = model.run(stream, cache=cache, start=start)  # (rows, position + 1 - first, d_model)
        return head(hidden[:, -1]).float().log_softmax(dim=-1)


