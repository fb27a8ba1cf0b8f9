"""Attribution patching: every cell of a patching grid from one clean forward, one corrupted forward, one backward.

Exact activation patching (attnlab.interventions.trace_residual, `exact_patch` here) runs the corrupted input
once per cell with one activation a copied from the clean run, and measures how the metric m moves. Attribution
patching replaces each of those runs by the first-order term around the corrupted run:

    effect(cell) ~= (a_clean - a_corrupt) . dm/da      (the gradient taken on the corrupted run)

so the clean run's values, the corrupted run's values and ONE backward give every cell of every grid:

    resid_pre  (layers, seq)    the residual stream entering block l at position p
    head       (layers, heads)  head h of block l at every position (its z, before W_O)
    attn       (layers, seq)    block l's attention output at position p (all its heads' z there)
    mlp        (layers, seq)    block l's feed-forward output at position p (its hidden activations there)

The metric: log P(target) at `position`, or with `contrast` the logit difference target - contrast. Cells
after `position` in a decoder cannot change it: exactly 0 in both functions, never run.

How the gradient is taken: an edit (attnlab.intervene, so the model's one forward path and the recorder's names,
no module hook) adds a zero tensor that requires grad to each site's value; the gradient with respect to that
zero is dm/da at the site. z and ffn.hidden enter W_O and the feed-forward's output projection linearly, so
their attribution equals that of the head's / sub-layer's output (patching all of a cell's z or hidden values
patches exactly that output).

Where it is wrong (it is an estimate, to be checked by exact patching of the top cells): a saturated softmax has
a near-zero gradient, so a large real effect can score ~0; two paths whose effects cancel to first order; large
edits in early layers (the residual stream at layer 0 is the usual worst case) are far from linear.

Kept-quantized layers (attnlab.layers.quantized): their kernels run only without autograd, so on the corrupted
run (whose values require grad from the first probed site on) each such layer computes its float product of
the dequantized weights, the same numbers up to the kernel's rounding; the clean run takes the kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from attnlab.errors import InputError
from attnlab.interventions.checks import check_one_sentence, checked_index, checked_target
from attnlab.interventions.context import Edit, intervene
from attnlab.interventions.edits import CellPatch
from attnlab.interventions.readouts import CleanRun, checked_position, clean_run, lm_parts, logprobs_from, read_row
from attnlab.interventions.sweeps import layer_chunks
from attnlab.recording import sites

GRIDS = ("resid_pre", "head", "attn", "mlp")
_SITE = {"resid_pre": "resid_pre", "head": "attn.z", "attn": "attn.z", "mlp": "ffn.hidden"}  # grid -> leaf


def site_names(model: nn.Module, grids: Iterable[str] = GRIDS) -> list[str]:
    """The recorded names the grids read (blocks.L.resid_pre, blocks.L.attn.z, blocks.L.ffn.hidden), checked."""
    grids = _grids(grids)
    names = [f"blocks.{layer}.{_SITE[g]}" for g in grids for layer in range(len(model.blocks))]
    names = list(dict.fromkeys(names))
    allowed = set(sites(model))
    missing = [n for n in names if n not in allowed]
    if missing:
        raise InputError(f"this {type(model).__name__} has no {missing[0]}: the grids {list(grids)} need "
                         "resid_pre, attn.z and ffn.hidden in every block")
    return names


def _grids(grids) -> tuple[str, ...]:
    grids = (grids,) if isinstance(grids, str) else tuple(grids)
    bad = [g for g in grids if g not in GRIDS]
    if bad or not grids:
        raise InputError(f"grids={list(grids)!r}: allowed a non-empty selection of {', '.join(GRIDS)}")
    return grids


def _pair(model: nn.Module, clean_ids, corrupted_ids, target, contrast, position) -> tuple[int, int, int | None]:
    """Checks both inputs (one sentence each, same length) -> (position, target, contrast)."""
    lm_parts(model)
    check_one_sentence(model, clean_ids, "clean_ids")
    check_one_sentence(model, corrupted_ids, "corrupted_ids")
    if clean_ids.shape != corrupted_ids.shape:
        raise InputError(f"clean_ids {tuple(clean_ids.shape)} and corrupted_ids {tuple(corrupted_ids.shape)} "
                         "must have the same length: patching copies position p to position p")
    contrast = None if contrast is None else checked_index(contrast, "contrast", model.config.vocab_size, "token id")
    return checked_position(position, clean_ids.shape[1]), checked_target(model, target), contrast


def _metric(logprobs: torch.Tensor, target: int, contrast: int | None) -> torch.Tensor:
    """(rows, vocab) log-probabilities -> (rows,) log P(target), or the logit difference target - contrast."""
    return logprobs[:, target] - (logprobs[:, contrast] if contrast is not None else 0)


def _blank(model: nn.Module, grid: str, seq: int) -> torch.Tensor:
    """A zero grid of the shape the exact sweep gives: (layers, heads) for head, else (layers, seq)."""
    width = model.config.n_heads if grid == "head" else seq
    return torch.zeros(len(model.blocks), width, dtype=torch.float64)


# --------------------------------------------------------------------------------------------- the estimate
def site_gradients(model: nn.Module, ids: torch.Tensor, position: int, names: list[str], target: int,
               contrast: int | None) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """ONE forward of `ids` with a zero that requires grad added at each name, ONE backward of the metric.

    -> ({name: the value there}, {name: d metric / d value}), positions up to `position` in a decoder.
    """
    causal, head = lm_parts(model)
    zeros: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    final: list[torch.Tensor] = []

    def probe(tensor: torch.Tensor, name: str) -> torch.Tensor:
        zero = torch.zeros_like(tensor, requires_grad=True)  # d metric / d zero == d metric / d value
        zeros[name] = (tensor.detach(), zero)
        return tensor + zero

    def keep_final(tensor: torch.Tensor, name: str) -> torch.Tensor:
        final.append(tensor)
        return tensor

    run = ids[:, : position + 1] if causal else ids
    edits = {**{name: probe for name in names}, **({} if causal else {"final": keep_final})}
    with torch.enable_grad(), intervene(model, edits):
        if causal:
            logits = model(run, last_only=True).logits[:, -1]  # (1, vocab)
        else:
            model(run)
            logits = head(final[-1][:, read_row(model, position % run.shape[1])])
        logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # float64 models keep float64
        metric = _metric(logits.log_softmax(dim=-1), target, contrast).sum()
        grads = torch.autograd.grad(metric, [zero for _, zero in zeros.values()])
    values = {name: value for name, (value, _) in zeros.items()}
    return values, dict(zip(zeros, grads, strict=True))


def attribution_patch(model: nn.Module, clean_ids: torch.Tensor, corrupted_ids: torch.Tensor, target: int, *,
                      contrast: int | None = None, position: int = -1, grids: Iterable[str] = GRIDS,
                      clean: CleanRun | None = None) -> dict[str, torch.Tensor]:
    """Estimated patching effects {grid: tensor} from one clean forward, one corrupted forward and one backward.

    Each cell: (a_clean - a_corrupt) . d metric / da on the corrupted run, the first-order estimate of what
    copying the clean activation into the corrupted run does to the metric (exact_patch gives the real effect,
    in the same units and shapes). metric: log P(target) at `position`, or with `contrast` the logit difference
    target - contrast. grids: any of "resid_pre", "head", "attn", "mlp" (module docstring); the cost is the same
    three passes whatever their number and size. clean: a clean_run(model, clean_ids, position,
    names=site_names(model, grids)) already made. Edits in effect (attnlab.intervene) apply to both runs.
    Kept-quantized layers run their float path on the corrupted run (module docstring).

        >>> effects = attnlab.attribution_patch(model, clean, corrupted, answer, contrast=other)
        >>> effects["resid_pre"].shape     # (layers, seq): the exact sweep's grid, estimated
    """
    position, target, contrast = _pair(model, clean_ids, corrupted_ids, target, contrast, position)
    grids = _grids(grids)
    names = site_names(model, grids)
    if clean is None:
        clean = clean_run(model, clean_ids, position, names=names)
    values, grads = site_gradients(model, corrupted_ids, position, names, target, contrast)
    out = {}
    for grid in grids:
        out[grid] = result = _blank(model, grid, clean_ids.shape[1])
        for layer in range(len(model.blocks)):
            name = f"blocks.{layer}.{_SITE[grid]}"
            if name not in clean.recorded:
                raise InputError(f"clean= lacks {name}: make it with names=site_names(model, grids)")
            value, grad = values[name].double(), grads[name].double()
            delta = clean.recorded[name].double()[:, : value.shape[1]] - value  # (1, seq, ...)
            effect = (delta * grad)[0]  # (seq, d) or (seq, heads, d_head) for z
            if grid == "head":
                result[layer] = effect.sum(dim=(0, 2))  # (heads,)
            else:
                result[layer, : effect.shape[0]] = effect.flatten(1).sum(dim=1)  # (seq,)
    return {g: t.float() for g, t in out.items()}


# --------------------------------------------------------------------------------------------- the real thing
class _HeadPatch(Edit):
    """At z (batch, seq, heads, d_head): row rows[i] takes source's head heads[i] at every position."""

    def __init__(self, source: torch.Tensor, rows: torch.Tensor, heads: torch.Tensor):
        self.source, self.rows, self.heads = source, rows, heads

    def apply(self, tensor: torch.Tensor, name: str, positions: torch.Tensor | None) -> torch.Tensor:
        out = tensor.clone()
        seq = tensor.shape[1]
        out[self.rows, :, self.heads] = self.source[0, :seq, self.heads].transpose(0, 1).to(tensor)  # (n, seq, d)
        return out


def exact_patch(model: nn.Module, clean_ids: torch.Tensor, corrupted_ids: torch.Tensor, target: int, *,
                contrast: int | None = None, position: int = -1, grids: Iterable[str] = GRIDS,
                batch_size: int = 64, progress: Callable[[int, int], None] | None = None,
                cancelled: Callable[[], bool] | None = None, clean: CleanRun | None = None,
                corrupted: CleanRun | None = None) -> dict[str, torch.Tensor]:
    """The real patching effects {grid: tensor}, the shapes and units of attribution_patch: metric(patched) -
    metric(corrupted), one patched cell per row of a batched forward (trace_residual's way: a forward holds one
    layer's cells and starts at that layer from the corrupted run's recorded residual stream).

    Costs one forward per layer per grid (more when a layer's cells exceed batch_size): the reference the
    estimate is checked against. progress / cancelled as in head_sweep (counted per grid). clean: a clean_run
    with names=site_names(model, grids); corrupted: one with names=["blocks.*.resid_pre"].
    """
    position, target, contrast = _pair(model, clean_ids, corrupted_ids, target, contrast, position)
    grids = _grids(grids)
    causal, _ = lm_parts(model)
    names = site_names(model, grids)
    if clean is None:
        clean = clean_run(model, clean_ids, position, names=names)
    if corrupted is None:
        corrupted = clean_run(model, corrupted_ids, position, names=["blocks.*.resid_pre"])
    base = _metric(corrupted.logprobs, target, contrast)[0]
    last = position + 1 if causal else clean_ids.shape[1]
    n_layers, n_heads = len(model.blocks), model.config.n_heads
    out = {}
    for grid in grids:
        out[grid] = result = _blank(model, grid, clean_ids.shape[1]).float()
        width = n_heads if grid == "head" else last
        cells = [(layer, x) for layer in range(n_layers) for x in range(width)]
        for chunk in layer_chunks(cells, batch_size, progress, cancelled, result):
            layer = chunk[0][0]  # one layer per chunk (layer_chunks)
            name = f"blocks.{layer}.{_SITE[grid]}"
            rows, xs = torch.arange(len(chunk)), torch.tensor([x for _, x in chunk])
            edit = _HeadPatch(clean.recorded[name], rows, xs) if grid == "head" else \
                CellPatch(clean.recorded[name], rows, xs)
            with intervene(model, {name: edit}):
                logprobs = logprobs_from(model, corrupted_ids, corrupted.recorded, layer, len(chunk), position)
            result[layer, xs] = (_metric(logprobs, target, contrast) - base).float()
    return out
