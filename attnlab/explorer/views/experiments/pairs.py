"""Experiments views: change a model and see what happens (attnlab.interventions behind JSON-ready answers).

Every function takes a Loaded text model that predicts tokens (a decoder: the next token; an encoder with an MLM
head: a masked word) and returns plain dicts of lists, strings and rounded floats. Where the prediction is read:
`position` (default: a decoder's last token, an MLM's first [MASK]; an MLM position that is not [MASK] is
masked). The token followed: `target` (a token id; default the model's top prediction on the unchanged text).

- ablation: switch heads off (zero or mean) -> top-5 before and after, P(target) before and after;
- head_sweep_grid: each head switched off in turn -> (layers x heads) drop in log P(target); progress, cancel;
- residual_patch_grid: clean and corrupted sentences of the same length -> (layers x positions) P(target) with
  the clean residual stream copied in at that cell (causal tracing); progress, cancel;
- logit_lens_top: the top-5 tokens after the embeddings and after each block, at the position;
- attention_vs_ablation: one head's attention weights from the position to every token beside the drop in
  log P(target) when that head's weight on that token is set to zero (seed 002: attention is not explanation).

No state is kept and no lock taken: interventions live in the request's own context (a ContextVar).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from attnlab.cache import KVCache
from attnlab.errors import InputError
from attnlab.explorer.common import _text_model, _token_text, a_an, check_range, encode
from attnlab.explorer.registry import Loaded
from attnlab.interventions import (
    Cancelled,
    ablate_heads,
    before_after,
    clean_run,
    head_sweep,
    intervene,
    logit_lens,
    logprobs_at,
    trace_residual,
)

TOP = 5


def _round(x: float, decimals: int = 6) -> float | None:
    return None if math.isnan(x) else round(float(x), decimals)


def _grid(t: torch.Tensor) -> list[list[float | None]]:
    return [[_round(v) for v in row] for row in t.tolist()]


def _lm_check(lm: Loaded):
    cfg = _text_model(lm)
    model = lm.model
    if cfg.topology not in ("decoder", "encoder") or cfg.head != "lm" or getattr(model, "lm_head", None) is None:
        raise InputError(f"model {lm.id!r} is {a_an(cfg.topology)} with head={cfg.head!r}; experiments need a model "
                         "that predicts tokens: a decoder language model or an encoder with a masked-LM head")
    return cfg


def _prepare(lm: Loaded, text: str, position) -> tuple[torch.Tensor, list[str], int, str]:
    """-> (ids (1, seq), tokens, the read position, "next" | "masked"), an MLM's position masked."""
    cfg = _lm_check(lm)
    ids, tokens = encode(lm, text)
    if cfg.topology == "decoder":
        position = len(ids) - 1 if position is None else check_range("position", position, len(ids))
        return torch.tensor([ids]), tokens, position, "next"
    mask_id = lm.tokenizer.mask_id if lm.tokenizer is not None else None
    if mask_id is None:
        raise InputError(f"model {lm.id!r} has no tokenizer with a [MASK] token")
    if position is None:
        if mask_id not in ids:
            raise InputError("put [MASK] in the text where the model should guess a word, or choose a position")
        position = ids.index(mask_id)
    position = check_range("position", position, len(ids))
    ids = list(ids)
    ids[position] = mask_id
    return torch.tensor([ids]), tokens, position, "masked"


def _prepare_pair(lm: Loaded, clean_text: str, corrupted_text: str, position):
    """`_prepare` of a patching pair: -> (clean ids, clean tokens, corrupted ids, corrupted tokens, position, kind);
    the two must have the same number of tokens (a cell copies position p to position p)."""
    clean_ids, clean_tokens, position, kind = _prepare(lm, clean_text, position)
    corrupted_ids, corrupted_tokens, _, _ = _prepare(lm, corrupted_text, position)
    if clean_ids.shape != corrupted_ids.shape:
        raise InputError(f"the clean sentence has {clean_ids.shape[1]} tokens and the corrupted one "
                         f"{corrupted_ids.shape[1]}: patching copies position p to position p, so they must have "
                         "the same number of tokens")
    return clean_ids, clean_tokens, corrupted_ids, corrupted_tokens, position, kind


def _top(lm: Loaded, logp: torch.Tensor, k: int = TOP) -> list[dict[str, Any]]:
    top = logp.topk(k)
    return [{"token": _token_text(lm, int(i)), "id": int(i), "prob": _round(math.exp(float(v)))}
            for v, i in zip(top.values, top.indices, strict=True)]


def _target(lm: Loaded, target, logp: torch.Tensor) -> int:
    if target is None:
        return int(logp.argmax())
    return check_range("target token id", target, lm.model.config.vocab_size)


def _heads(value) -> list[tuple[int, int]]:
    """[[layer, head], ...] or [{"layer": l, "head": h}, ...] (the page's JSON) -> [(layer, head)]."""
    if not isinstance(value, list) or not value:
        raise InputError("heads: give a list of [layer, head] pairs (at least one)")
    pairs = []
    for item in value:
        if isinstance(item, dict):
            item = (item.get("layer"), item.get("head"))
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise InputError(f"heads: {item!r} is not a [layer, head] pair")
        pairs.append(tuple(item))
    return pairs


def _check_heads(lm: Loaded, pairs: list[tuple]) -> list[tuple[int, int]]:
    """Each (layer, head) within this model, else OutOfRange naming its layers and heads (the same 422 every
    Experiments view gives for a layer or head the model lacks)."""
    cfg = lm.model.config
    return [(check_range("layer", layer, cfg.n_layers), check_range("head", head, cfg.n_heads))
            for layer, head in pairs]


def ablation(lm: Loaded, text: str, heads, *, mode: str = "zero", position: int | None = None,
             target: int | None = None) -> dict[str, Any]:
    """Switch `heads` off ([[layer, head], ...]); the prediction at `position` before and after.

    mode "mean" replaces each head's output by its mean over this text's positions.
    """
    ids, tokens, position, kind = _prepare(lm, text, position)
    model = lm.model
    pairs = _check_heads(lm, _heads(heads))
    # row 0 unchanged, row 1 ablated: one forward, the text run once up to the first ablated layer
    edits = ablate_heads(model, pairs, mode=mode, reference=ids if mode == "mean" else None, rows=[1])
    first = min(int(name.split(".")[1]) for name in edits)  # blocks.L.attn.z
    before, after = before_after(model, ids, position, edits, start=first)
    t = _target(lm, target, before)
    p_before, p_after = math.exp(float(before[t])), math.exp(float(after[t]))
    return {"model": lm.id, "tokens": tokens, "position": position, "predicts": kind, "mode": mode,
            "heads": [[int(layer), int(h)] for layer, h in pairs], "before": _top(lm, before),
            "after": _top(lm, after),
            "target": {"token": _token_text(lm, t), "id": t, "prob_before": _round(p_before),
                       "prob_after": _round(p_after), "prob_change": _round(p_after - p_before),
                       "logprob_change": _round(float(after[t] - before[t]))}}


def head_sweep_grid(lm: Loaded, text: str, *, position: int | None = None, target: int | None = None,
                    mode: str = "zero", batch_size: int | None = None,
                    progress: Callable[[int, int], None] | None = None,
                    cancelled: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Every head switched off in turn: grid[layer][head] = log P(target) clean - ablated (positive: it helped).

    batch_size (default: whole layers, about 32 rows): a batched forward starts at its first cell's layer, so
    chunks that begin on a layer boundary skip the most work (SmolLM2, 20 tokens, one thread: 27 rows 9.1 s of
    CPU against 9.8-10.8 s with 64).

    progress(done, total) after each batched forward; cancelled() before each: the answer then holds the cells
    done so far (null elsewhere) and "cancelled": true.
    """
    ids, tokens, position, kind = _prepare(lm, text, position)
    model = lm.model
    n_heads = model.config.n_heads
    batch_size = n_heads * max(1, 32 // n_heads) if batch_size is None else batch_size
    run = clean_run(model, ids, position, names=["blocks.*.resid_pre"])  # the target and the sweep's streams
    clean = run.logprobs[0]
    t = _target(lm, target, clean)
    done = True
    try:
        grid = head_sweep(model, ids, t, position=position, mode=mode, reference=ids if mode == "mean" else None,
                          batch_size=batch_size, progress=progress, cancelled=cancelled, clean=run)
    except Cancelled as stop:
        grid, done = stop.partial, False
    return {"model": lm.id, "tokens": tokens, "position": position, "predicts": kind, "mode": mode,
            "target": {"token": _token_text(lm, t), "id": t, "prob": _round(math.exp(float(clean[t]))),
                       "logprob": _round(float(clean[t]))},
            "layers": grid.shape[0], "heads": grid.shape[1], "grid": _grid(grid), "cancelled": not done}


def residual_patch_grid(lm: Loaded, clean_text: str, corrupted_text: str, *, position: int | None = None,
                        target: int | None = None, site: str = "resid_pre", batch_size: int | None = None,
                        progress: Callable[[int, int], None] | None = None,
                        cancelled: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Causal tracing: grid[layer][p] = P(target) in the corrupted sentence with the residual stream entering
    block `layer` (site="resid_post": leaving it) at position p copied from the clean sentence.

    batch_size (default: whole layers, about 64 rows) as in head_sweep_grid. Both sentences must have the same
    number of tokens. "restored" rescales each cell to 0 (corrupted) .. 1
    (clean). Cancelling answers the cells done so far (null elsewhere) and "cancelled": true.
    """
    clean_ids, clean_tokens, corrupted_ids, corrupted_tokens, position, kind = _prepare_pair(
        lm, clean_text, corrupted_text, position)
    model = lm.model
    cells_per_layer = position + 1 if kind == "next" else clean_ids.shape[1]  # a decoder's later ones: not run
    batch_size = cells_per_layer * max(1, 64 // cells_per_layer) if batch_size is None else batch_size
    if site not in ("resid_pre", "resid_post"):
        raise InputError(f"site={site!r}: allowed 'resid_pre' or 'resid_post'")
    # one forward per sentence: the target, both probabilities, and what the grid patches from and starts at
    clean_run_ = clean_run(model, clean_ids, position, names=[f"blocks.*.{site}"])
    corrupted_run = clean_run(model, corrupted_ids, position, names=["blocks.*.resid_pre"])
    clean_logp = clean_run_.logprobs[0]
    t = _target(lm, target, clean_logp)
    p_clean = math.exp(float(clean_logp[t]))
    p_corrupted = math.exp(float(corrupted_run.logprobs[0, t]))
    done = True
    try:
        grid = trace_residual(model, clean_ids, corrupted_ids, t, position=position, site=site,
                              batch_size=batch_size, progress=progress, cancelled=cancelled, clean=clean_run_,
                              corrupted=corrupted_run)
    except Cancelled as stop:
        grid, done = stop.partial, False
    span = p_clean - p_corrupted
    restored = (grid - p_corrupted) / span if abs(span) > 1e-9 else torch.full_like(grid, float("nan"))
    return {"model": lm.id, "clean_tokens": clean_tokens, "corrupted_tokens": corrupted_tokens,
            "position": position, "predicts": kind, "site": site,
            "target": {"token": _token_text(lm, t), "id": t, "prob_clean": _round(p_clean),
                       "prob_corrupted": _round(p_corrupted)},
            "layers": grid.shape[0], "positions": grid.shape[1], "grid": _grid(grid), "restored": _grid(restored),
            "cancelled": not done}


def logit_lens_top(lm: Loaded, text: str, *, position: int | None = None, k: int = TOP,
                   target: int | None = None) -> dict[str, Any]:
    """The top-k tokens at `position` after the embeddings (row 0) and after each block (row i), each through
    the final norm and the output head; the last row is the model's own prediction. "answer" tracks one token
    (`target`, default the model's final top-1) down the rows: its rank (1 = top) and probability at each."""
    ids, tokens, position, kind = _prepare(lm, text, position)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 50:
        raise InputError(f"k={k!r}: allowed 1..50")
    if kind == "next":  # a decoder's later positions cannot change this one: they are not run
        ids = ids[:, : position + 1]
    lens = logit_lens(lm.model, ids, positions=[position])[:, 0, 0]  # (layers + 1, vocab)
    rows = [{"layer": i - 1 if i else None, "after": "embeddings" if i == 0 else f"block {i - 1}",
             "top": _top(lm, lens[i], k)} for i in range(lens.shape[0])]
    t = _target(lm, target, lens[-1])
    ranks = (lens > lens[:, t : t + 1]).sum(dim=1) + 1  # (layers + 1,) 1 = the top token
    answer = {"token": _token_text(lm, t), "id": t, "rank": [int(r) for r in ranks],
              "prob": [_round(math.exp(float(v))) for v in lens[:, t]]}
    return {"model": lm.id, "tokens": tokens, "position": position, "predicts": kind, "rows": rows,
            "answer": answer}


class _KeyKnockout:
    """At one head's attention weights: row r sets the weight from query `position` (an index into this
    forward's queries) to key r to zero."""

    def __init__(self, head: int, position: int, keys: int):
        self.head, self.position, self.keys = head, position, keys

    def __call__(self, weights: torch.Tensor, name: str) -> torch.Tensor:  # (rows, heads, q, k)
        out = weights.clone()
        rows = torch.arange(self.keys)
        out[rows, self.head, self.position, rows] = 0
        return out


def _knocked(model, ids: torch.Tensor, name: str, head: int, position: int, keys: int, kind: str) -> torch.Tensor:
    """(keys, vocab) log-probabilities at `position`, row j with the head's weight from `position` to key j set
    to zero. In a decoder the knock-out changes nothing before `position`: each row runs that one token over the
    earlier tokens' cached keys and values (one forward of the text, not `keys` of them: SmolLM2, 20 tokens,
    0.9 s -> about 0.2 s of CPU)."""
    if kind != "next" or position == 0:
        with intervene(model, {name: _KeyKnockout(head, position, keys)}):
            return logprobs_at(model, ids.expand(keys, -1), position)
    prefix = KVCache.for_model(model, 1, position)
    with torch.no_grad():
        model(ids[:, :position], cache=prefix, last_only=True)
        cache = KVCache.for_model(model, keys, position + 1)
        for mine, theirs in zip(cache.layers, prefix.layers, strict=True):
            mine.kv.narrow(3, 0, position).copy_(theirs.kv)  # (2, 1 -> keys, kv_heads, position, d_head)
            mine.length = position
        with intervene(model, {name: _KeyKnockout(head, 0, keys)}):  # the one query of this forward
            logits = model(ids[:, position: position + 1].expand(keys, -1), cache=cache, last_only=True).logits
    return logits[:, -1].float().log_softmax(dim=-1)


def attention_vs_ablation(lm: Loaded, text: str, layer: int, head: int, *, position: int | None = None,
                          target: int | None = None) -> dict[str, Any]:
    """One head, one query position: per token j, the attention weight on j and the drop in log P(target) when
    that weight is set to zero (the other weights kept). Large weight with no effect, or the reverse, is the
    point: attention weights alone do not say what a head's reading does to the prediction."""
    ids, tokens, position, kind = _prepare(lm, text, position)
    model = lm.model
    cfg = model.config
    layer = check_range("layer", layer, cfg.n_layers)
    head = check_range("head", head, cfg.n_heads)
    name = f"blocks.{layer}.attn.weights"
    run = clean_run(model, ids, position, names=[name])  # the prediction and the weights: one forward
    weights = run.recorded[name][0, head, position]  # (position + 1,) in a decoder (later keys weigh 0), else (seq,)
    clean = run.logprobs[0]
    t = _target(lm, target, clean)
    keys = position + 1 if kind == "next" else ids.shape[1]  # a decoder's query sees keys 0..position
    knocked = _knocked(model, ids, name, head, position, keys, kind)[:, t]
    effect = (clean[t] - knocked).tolist()
    rows = [{"position": j, "token": tokens[j], "weight": _round(float(weights[j]) if j < len(weights) else 0.0),
             "effect": _round(effect[j]) if j < keys else None} for j in range(ids.shape[1])]
    return {"model": lm.id, "tokens": tokens, "position": position, "predicts": kind, "layer": layer,
            "head": head, "target": {"token": _token_text(lm, t), "id": t,
                                     "prob": _round(math.exp(float(clean[t])))}, "rows": rows}
