"""The training timeline: a run folder's probe (attnlab/training/probe.py) read back for the explorer.

Why: the probe holds, every K steps, the attention of one fixed sentence in every layer and head. Replayed with
a step slider beside the loss curve, a learner watches a head's pattern form. One number per head and step
makes the search easy: the previous-token score, the average weight a token puts on the token just before it
(1.0 = a perfect "look one back" head; about 1/i for a head that spreads evenly over i tokens). The head whose
score ends highest is where the page starts.

Files are found from the model's registry entry (a run folder named on `attnlab explore`'s command line), never
from a path in a request; they are read bounded and as data only.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from attnlab.errors import CheckpointError, InputError
from attnlab.explorer.common import check_range
from attnlab.explorer.registry import Entry, UnknownItem
from attnlab.files import read_text
from attnlab.training import probe

MAX_CURVE_POINTS = 400  # the loss curve is thinned to at most this many points
METRICS_LIMIT = 64 * 2**20
# Parsed probes, keyed by (path, size, mtime): a 1500-step gpt-char probe is ~6 MB of JSON and takes ~1 s to
# parse and score on a busy 2-core machine; a head change then only slices. Two runs kept (a run being
# written has a new mtime at every probe, so it is read again; the older entry goes).
_PARSED: dict[tuple, tuple] = {}
_PARSED_LOCK = threading.Lock()
_PARSED_MAX = 2


def run_file(entry: Entry, folder: Path, name: str, what: str) -> Path | None:
    """folder/name when it is a regular file of the run folder; None when there is none. A link that leads outside
    the folder (to /etc/passwd, to another user's file) or cannot be followed raises InputError, as `latest` is
    refused (attnlab.storage.latest_step): what it leads to is never read, and the message never names it."""
    path = folder / name
    if not os.path.lexists(path):
        return None
    try:
        home, target = folder.resolve(), path.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        raise InputError(f"the {what} of model {entry.id!r} ({name}) is a link that cannot be followed (a loop?): "
                         "refused") from None
    if target == home or not target.is_relative_to(home):
        raise InputError(f"the {what} of model {entry.id!r} ({name}) leads outside its run folder (a link to "
                         f"another place): refused; {name} must be a file of the run folder")
    return path if path.is_file() else None


def probe_path(entry: Entry) -> Path | None:
    """OUT/probe.jsonl of the run folder the entry names (or of the run holding the step folder it names); None
    without one. InputError for a probe.jsonl that is a link leading outside that folder."""
    source = entry.source
    if entry.kind != "path" or source is None:
        return None
    for folder in (source, source.parent):
        candidate = run_file(entry, folder, probe.PROBE_NAME, "training probe")
        if candidate is not None:
            return candidate
        if not source.name.startswith("step-"):
            break
    return None


def _has_probe(entry: Entry) -> bool:
    """Whether the entry is offered on the timeline page: a refused (linked-out) probe is not."""
    try:
        return probe_path(entry) is not None
    except InputError:
        return False


def runs(entries: list[Entry]) -> list[dict[str, Any]]:
    """The models on offer that come with a training probe: [{id, label}]."""
    return [{"id": e.id, "label": e.label} for e in entries if _has_probe(e)]


def previous_token_score(weights: list[list[float]]) -> float:
    """Mean over positions i >= 1 of the weight on position i - 1. weights: (n, n) rows summing to 1."""
    n = len(weights)
    return sum(weights[i][i - 1] for i in range(1, n)) / max(1, n - 1)


def _loss_curve(entry: Entry, folder: Path) -> list[dict[str, float]]:
    """(step, loss, val_loss when evaluated) from metrics.jsonl, thinned to MAX_CURVE_POINTS; [] without one.
    InputError for a metrics.jsonl that is a link leading outside the run folder."""
    path = run_file(entry, folder, "metrics.jsonl", "training metrics")
    if path is None:
        return []
    points = []
    for line in read_text(path, limit=METRICS_LIMIT, what="training metrics").splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            break  # a line cut by a kill
        if isinstance(item, dict) and isinstance(item.get("step"), int) and isinstance(item.get("loss"), (int, float)):
            point = {"step": item["step"], "loss": round(float(item["loss"]), 5)}
            if isinstance(item.get("val_loss"), (int, float)):
                point["val_loss"] = round(float(item["val_loss"]), 5)
            points.append(point)
    stride = max(1, -(-len(points) // MAX_CURVE_POINTS))
    kept = {i for i in range(0, len(points), stride)} | {i for i, p in enumerate(points) if "val_loss" in p}
    if points:
        kept.add(len(points) - 1)  # the last step, and every evaluation, always shown
    return [points[i] for i in sorted(kept)]


def _parsed(entry: Entry, path: Path) -> tuple[dict, list[dict], list]:
    """(header, lines, previous-token scores as (layers, heads, steps)) of a probe file, parsed once per version."""
    try:
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        with _PARSED_LOCK:
            hit = _PARSED.get(key)
        if hit is not None:
            return hit
        header, lines = probe.read(path)
    except (OSError, CheckpointError, ValueError) as exc:
        raise InputError(f"the training probe of model {entry.id!r} cannot be read: {exc}") from None
    if not lines:
        raise InputError(f"the training probe of model {entry.id!r} has no step yet (the run kept none so far)")
    try:
        n_layers, n_heads = int(header["n_layers"]), int(header["n_heads"])
        scores = [[[round(previous_token_score(line["weights"][i][h]), 4) for line in lines]
                   for h in range(n_heads)] for i in range(n_layers)]  # (layers, heads, steps)
    except (KeyError, IndexError, TypeError, ValueError):
        raise InputError(f"the training probe of model {entry.id!r} is inconsistent: its lines do not match its "
                         "header's layers, heads and tokens") from None
    with _PARSED_LOCK:
        _PARSED[key] = (header, lines, scores)
        while len(_PARSED) > _PARSED_MAX:
            _PARSED.pop(next(iter(_PARSED)))
    return header, lines, scores


def timeline(entry: Entry, layer: int = 0, head: int | None = None) -> dict[str, Any]:
    """One head's probed attention at every kept step, every head's previous-token score per step, and the
    run's loss curve. `head` None: the head with the highest previous-token score at the last step."""
    path = probe_path(entry)
    if path is None:
        raise UnknownItem(f"model {entry.id!r} has no training probe: open a run folder trained by this version "
                          "(`attnlab train gpt-char --out runs/gpt-char`, then `attnlab explore runs/gpt-char`)")
    header, lines, scores = _parsed(entry, path)
    n_layers, n_heads, n = int(header["n_layers"]), int(header["n_heads"]), len(header["tokens"])
    if head is None:
        layer, head = max(((i, h) for i in range(n_layers) for h in range(n_heads)),
                          key=lambda ih: scores[ih[0]][ih[1]][-1])
    layer = check_range("layer", layer, n_layers)
    head = check_range("head", head, n_heads)
    for line in lines:
        w = line["weights"]
        if len(w) != n_layers or len(w[layer]) != n_heads or len(w[layer][head]) != n:
            raise InputError(f"the training probe of model {entry.id!r} is inconsistent at step {line['step']}: "
                             f"expected {n_layers} layers x {n_heads} heads x {n} tokens")
    return {"model": entry.id, "text": header.get("text", ""), "tokens": header["tokens"], "every": header["every"],
            "n_layers": n_layers, "n_heads": n_heads, "layer": layer, "head": head,
            "steps": [line["step"] for line in lines], "probe_loss": [line.get("loss") for line in lines],
            "weights": [line["weights"][layer][head] for line in lines],  # (steps, n, n)
            "previous_token": scores, "curve": _loss_curve(entry, path.parent)}
