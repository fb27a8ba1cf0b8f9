"""What a model predicts at a position, read from one forward: logprobs_at, clean_run, logit_lens.

Why its own module: the interventions change values inside a forward; these read its output (through the final
norm and the output head) at the one position a question is about, and run no more of the model than that needs:
a decoder's later positions cannot change an earlier one, so they are not run, and the head's vocab-wide product
runs only where asked. attnlab.interventions re-exports every public name, so both import paths work.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from attnlab.errors import InputError
from attnlab.models.stack import Stack
from attnlab.recording import capture, record


def checked_positions(positions, limit: int | None, what: str) -> torch.Tensor | None:
    """A position or list of positions (None: all) -> a long tensor, each checked against `limit` (InputError)."""
    if positions is None:
        return None
    if isinstance(positions, int) and not isinstance(positions, bool):
        positions = [positions]
    try:
        index = torch.as_tensor(list(positions), dtype=torch.long)
    except (TypeError, ValueError):
        raise InputError(f"positions={positions!r}: allowed a position or a list of positions") from None
    if index.numel() and (int(index.min()) < 0 or (limit is not None and int(index.max()) >= limit)):
        raise InputError(f"positions={positions!r}: allowed positions in [0, {limit}) ({what})"
                         if limit is not None else f"positions={positions!r}: allowed positions >= 0")
    return index


def lm_parts(model: nn.Module) -> tuple[bool, nn.Module]:
    """(causal, LM head) of a decoder or an encoder with an MLM head; InputError for anything else."""
    head = getattr(model, "lm_head", None)
    if not isinstance(model, Stack) or head is None or getattr(model.config, "head", None) != "lm":
        raise InputError(f"this needs a decoder language model or an encoder with an MLM head (head='lm'); "
                         f"got a {type(model).__name__} with head={getattr(model.config, 'head', None)!r}")
    return model.causal, head


def read_row(model: nn.Module, position: int) -> int:
    """The row of the final stream that the MLM head reads to predict the token at `position` (>= 0): its own, or
    under predict_from_previous (smollm2-mlm) the previous row, as Encoder.head_input does; row 0 reads itself."""
    if getattr(model.config, "predict_from_previous", False) and position > 0:
        return position - 1
    return position


def head_rows(model: nn.Module, states: torch.Tensor) -> torch.Tensor:
    """states (..., seq, d_model) -> the rows the MLM head reads for each position (see read_row)."""
    if not getattr(model.config, "predict_from_previous", False):
        return states
    return torch.cat([states[..., :1, :], states[..., :-1, :]], dim=-2)  # (..., seq, d_model)


def checked_position(position, seq: int) -> int:
    if isinstance(position, bool) or not isinstance(position, int) or not -seq <= position < seq:
        raise InputError(f"position={position!r}: allowed in [-{seq}, {seq}) for an input of {seq} tokens")
    return position % seq


def logprobs_at(model: nn.Module, ids: torch.Tensor, position: int, attention_mask=None) -> torch.Tensor:
    """(batch, vocab) log-probabilities at `position` (a decoder: of the next token; an MLM: of that token).

    A decoder runs only positions up to `position` (the later ones cannot change it) and its head only there;
    an encoder runs the blocks and applies its MLM head to that position alone. Edits in effect apply.
    """
    causal, head = lm_parts(model)
    model.check_ids(ids)
    position = checked_position(position, ids.shape[1])
    with torch.no_grad():
        if causal:
            ids = ids[:, : position + 1]
            mask = attention_mask[:, : position + 1] if attention_mask is not None else None
            logits = model(ids, attention_mask=mask, last_only=True).logits[:, -1]
        else:
            final = record(model, ids, attention_mask=attention_mask, names=["final"], stop_after="final")["final"]
            logits = head(final[:, read_row(model, position)])
    return logits.float().log_softmax(dim=-1)


def logprobs_from(model: nn.Module, ids: torch.Tensor, streams: dict[str, torch.Tensor], start: int, rows: int,
                   position: int, attention_mask=None) -> torch.Tensor:
    """(rows, vocab) log-probabilities at `position` for `rows` copies of one sentence, whose variants differ only
    from block `start` on: they run from the recorded stream entering that block (streams["blocks.L.resid_pre"]),
    not from the tokens. A decoder runs positions up to `position` only."""
    if start == 0:
        mask = attention_mask.expand(rows, -1) if attention_mask is not None else None
        return logprobs_at(model, ids.expand(rows, -1), position, mask)
    causal, head = lm_parts(model)
    stream = streams[f"blocks.{start}.resid_pre"].expand(rows, -1, -1)  # (rows, seq, d_model)
    mask = attention_mask.expand(rows, -1) if attention_mask is not None else None
    if causal:
        stream = stream[:, : position + 1]
        mask = mask[:, : position + 1] if mask is not None else None
    with torch.no_grad():
        hidden = model.run(stream, attention_mask=mask, start=start)  # (rows, seq, d_model)
        row = position if causal else read_row(model, position % hidden.shape[1])
        return head(hidden[:, row]).float().log_softmax(dim=-1)


class CleanRun(NamedTuple):
    """One unedited forward read at one position: what a sweep needs of it, computed once."""

    logprobs: torch.Tensor  # (batch, vocab) at the position
    recorded: dict[str, torch.Tensor]  # the names asked for (a decoder: positions up to the read one only)


def clean_run(model: nn.Module, ids: torch.Tensor, position: int, attention_mask=None,
              names: list[str] | None = None) -> CleanRun:
    """log-probabilities at `position` and the values `names` (e.g. blocks.*.resid_pre) of ONE forward.

    Why: a sweep needs the clean prediction and the streams its variants start from; the explorer also reads its
    target from the prediction. One forward gives all three (it was three). A decoder runs positions up to
    `position` only (later ones cannot change it), so what it records stops there too. Edits in effect apply.
    """
    causal, head = lm_parts(model)
    model.check_ids(ids)
    position = checked_position(position, ids.shape[1])
    names = list(names or [])
    with torch.no_grad():
        if causal:
            ids = ids[:, : position + 1]
            mask = attention_mask[:, : position + 1] if attention_mask is not None else None
            with capture(model, names) as store:
                logits = model(ids, attention_mask=mask, last_only=True).logits[:, -1]
        else:
            store = record(model, ids, attention_mask=attention_mask, names=names + ["final"], stop_after="final")
            logits = head(store.pop("final")[:, read_row(model, position)])
    return CleanRun(logits.float().log_softmax(dim=-1), store)


def logit_lens(model: nn.Module, ids: torch.Tensor, attention_mask: torch.Tensor | None = None, *,
               positions=None) -> torch.Tensor:
    """Log-probabilities (layers + 1, batch, seq, vocab): what the model would predict after each layer.

    Entry 0 reads the embeddings, entry i the output of block i; each goes through the final norm (applied to
    that entry's own vectors, not the last layer's statistics) and the output head. The last entry is the
    model's own output: log_softmax of its logits. For decoders and encoders with an MLM head (under
    predict_from_previous, position i reads row i - 1, as the head does).
    positions: only these positions (the seq axis then lists them in that order): the head's vocab-wide product
    is most of the cost for a large vocabulary, and an explorer row needs one position.

        >>> lens = attnlab.logit_lens(model, ids)          # (n_layers + 1, 1, seq, vocab)
        >>> lens[:, 0, -1].argmax(-1)                      # the top token after each layer, last position
    """
    _, head = lm_parts(model)
    model.check_ids(ids)
    index = None if positions is None else checked_positions(positions, ids.shape[1], f"the input has {ids.shape[1]}")
    n = len(model.blocks)
    names = ["embed"] + [f"blocks.{i}.resid_post" for i in range(n)]
    with torch.no_grad():
        rec = record(model, ids, attention_mask=attention_mask, names=names, stop_after=names[-1])
        states = head_rows(model, torch.stack([rec[name] for name in names]))  # (layers + 1, batch, seq, d_model)
        if index is not None:
            states = states[:, :, index]
        if model.final_norm is not None:
            states = model.final_norm(states)
        return head(states).float().log_softmax(dim=-1)
