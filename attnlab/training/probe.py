"""The training probe: every K steps, the attention of one fixed sentence, kept in the run folder.

Why: a finished checkpoint shows the heads a model ended with, never how they got there. Recording the same
short input at regular steps lets the explorer replay training: a step slider beside the loss curve, and a
head's pattern going from a blur to, say, "look at the previous character". The cost is one forward of a few
dozen tokens every K steps (K = the run's log_every, 50 by default), on the main process only.

File: OUT/probe.jsonl, one JSON object per line.
  line 1   {"kind": "attnlab-probe", "version": 1, "text", "tokens", "ids", "n_layers", "n_heads", "every"}
  then     {"step": s, "loss": training loss of step s, "weights": [layer][head][query][key]} (3 decimals)
Step s means "after s optimizer updates". A resumed run keeps the lines up to the step it resumes from and
appends after them; a fresh run starts a new file.

What is probed: decoders and encoders with a tokenizer (their self-attention, `blocks.i.attn.weights`). Other
tasks (ViT, dual encoders, encoder-decoders) and multi-process runs (a sharded model cannot run a forward on
one rank alone) keep no probe; training is unaffected.
"""

from __future__ import annotations

import json
import weakref
from pathlib import Path
from typing import Any

import torch

from attnlab.files import read_text
from attnlab.recording import record
from attnlab.storage import atomic_write

PROBE_NAME = "probe.jsonl"
KIND, VERSION = "attnlab-probe", 1
# Repeated words: a previous-token head shows as the diagonal just below the main one, and a later head that
# copies what followed the same letters last time (an induction head) shows on the repeat.
PROBE_TEXT = "the cat sat on the mat. the cat sat"
MAX_TOKENS = 48  # the probe's length cap (a 48 x 48 map per head stays readable and small on disk)
MAX_VALUES = 400_000  # layers * heads * n * n per line at most: the input is shortened to fit
DECIMALS = 3

_state: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # trainer -> _Probe (or None: not probed)


class _Probe:
    """The fixed input and the file of one trainer's run."""

    def __init__(self, path: Path, ids: list[int], tokens: list[str], n_layers: int, n_heads: int, every: int):
        self.path, self.ids, self.tokens = path, ids, tokens
        self.n_layers, self.n_heads, self.every = n_layers, n_heads, every

    def header(self) -> dict[str, Any]:
        return {"kind": KIND, "version": VERSION, "text": "".join(self.tokens), "tokens": self.tokens,
                "ids": self.ids, "n_layers": self.n_layers, "n_heads": self.n_heads, "every": self.every}

    def start(self, first_step: int) -> None:
        """A fresh run (first_step 1) writes the header; a resumed one keeps the lines before first_step."""
        kept: list[str] = []
        if first_step > 1 and self.path.is_file() and not self.path.is_symlink():  # a link may lead anywhere
            for line in self.path.read_text().splitlines()[1:]:
                try:
                    if int(json.loads(line).get("step", 0)) < first_step:
                        kept.append(line)
                except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
                    break  # a line cut by a kill: nothing after it is trusted
        text = "".join(f"{line}\n" for line in [json.dumps(self.header()), *kept])
        # replaced, never written through: a probe.jsonl linked to a file elsewhere leaves that file as it was, and
        # keep() then appends to the run folder's own file
        atomic_write(self.path, lambda tmp: Path(tmp).write_text(text))

    def keep(self, model: torch.nn.Module, device: torch.device, step: int, loss: float) -> None:
        was_training = model.training
        model.eval()  # dropout off: the probe shows the weights, not a dropout draw
        try:
            store = record(model, torch.tensor([self.ids], device=device), names="blocks.*.attn.weights")
        finally:
            model.train(was_training)
        weights = [store[f"blocks.{i}.attn.weights"][0].double().cpu() for i in range(self.n_layers)]
        # in float64: 0.123 stays 0.123 in the JSON (float32 would write 0.12300000339746475)
        rounded = torch.round(torch.stack(weights) * 10**DECIMALS) / 10**DECIMALS  # (layers, heads, n, n)
        line = {"step": step, "loss": round(float(loss), 5), "weights": rounded.tolist()}
        with open(self.path, "a") as f:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")


def _make(trainer) -> _Probe | None:
    """The probe for this trainer's task, or None when its model is not one the probe reads."""
    model, tok = trainer.model, getattr(trainer.task, "tokenizer", None)
    cfg = getattr(model, "config", None)
    if tok is None or cfg is None or cfg.topology not in ("decoder", "encoder") or trainer.info.world > 1:
        return None
    ids = list(tok.encode(PROBE_TEXT, add_special_tokens=cfg.topology == "encoder"))
    per_token = cfg.n_layers * cfg.n_heads
    n = min(len(ids), MAX_TOKENS, cfg.seq_limit or MAX_TOKENS, max(2, int((MAX_VALUES / per_token) ** 0.5)))
    ids = ids[:n]
    if len(ids) < 2:
        return None
    tokens = [tok.decode([i], skip_special_tokens=False) or tok.id_to_token(i) for i in ids]
    every = max(1, int(trainer.settings.log_every))
    return _Probe(Path(trainer.out) / PROBE_NAME, ids, tokens, cfg.n_layers, cfg.n_heads, every)


def after_step(trainer, record_: dict[str, Any]) -> None:
    """Called by the trainer after each optimizer step (its metrics `record_` written): keeps a probe line at
    step 1, every `every` steps, and at the run's last step. Does nothing on other ranks or for other tasks."""
    if not trainer.info.is_main:
        return
    if trainer not in _state:
        probe = _make(trainer)
        if probe is not None:
            probe.start(trainer.step)
        elif trainer.step == 1:  # a fresh run that keeps no probe: an older run's file here would be mistaken
            (Path(trainer.out) / PROBE_NAME).unlink(missing_ok=True)  # for this one's
        _state[trainer] = probe
    probe = _state[trainer]
    if probe is None:
        return
    step = trainer.step
    if step == 1 or step % probe.every == 0 or step == trainer.settings.steps:
        probe.keep(trainer.model, trainer.device, step, record_["loss"])


def read(path: str | Path, limit: int = 256 * 2**20) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, lines) of a probe file; a cut last line (a killed run) is left out. Raises CheckpointError when
    the file is missing, not a regular file or over `limit` bytes, ValueError when it is not a probe."""
    return parse(read_text(path, limit=limit, what="training probe"), Path(path).name)


def parse(text: str, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, lines) of a probe file's text (`read`, or the explorer's shipped gzipped probe); `name` for the
    message of a ValueError when it is not a probe."""
    rows = text.splitlines()
    try:
        header = json.loads(rows[0]) if rows else None
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("kind") != KIND:
        raise ValueError(f"{name} is not an attnlab training probe (its first line names no {KIND!r})")
    lines = []
    for row in rows[1:]:
        try:
            item = json.loads(row)
        except json.JSONDecodeError:
            break
        if isinstance(item, dict) and "step" in item and "weights" in item:
            lines.append(item)
    return header, lines
