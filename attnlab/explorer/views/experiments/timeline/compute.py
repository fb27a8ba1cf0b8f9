"""The training timeline: a run folder's probe (attnlab/training/probe.py) read back for the explorer.

Why: the probe holds, every K steps, the attention of one fixed sentence in every layer and head. Replayed with
a step slider beside the loss curve, a learner watches a head's pattern form. One number per head and step
makes the search easy: the previous-token score, the average weight a token puts on the token just before it
(1.0 = a perfect "look one back" head; about 1/i for a head that spreads evenly over i tokens). The head whose
score ends highest is where the page starts. A second number finds induction heads: on the probe text's repeated
words, the weight a token of the second copy puts on the token that followed its earlier occurrence (on a
repeated random sequence, the usual induction score). A head "forms" at the first kept step from which its score
stays at or above FORMED (0.3); the page marks that step on the slider.

The bundled gpt-char ships its recipe's probe (SHIPPED_PROBE, gzipped and thinned by `ship_probe`; see
docs/explorer.md), so the timeline works on a plain `attnlab explore`.

Files are found from the model's registry entry (a run folder named on `attnlab explore`'s command line), never
from a path in a request; they are read bounded and as data only.
"""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from pathlib import Path
from typing import Any

from attnlab.errors import CheckpointError, InputError
from attnlab.explorer.server.common import check_range
from attnlab.explorer.server.registry import Entry, UnknownItem
from attnlab.files import read_text
from attnlab.storage import where_inside
from attnlab.training import probe

SHIPPED_PROBE = "probe.jsonl.gz"  # in a shipped checkpoint's folder (the package's own: written by nobody else)
SHIPPED_PROBE_LIMIT = 32 * 2**20  # its text once unzipped, at most
# the bundled gpt-char's kept steps: every 50 while its first-layer heads form, then sparser (20 of the run's 41)
SHIPPED_STEPS = (1, *range(50, 501, 50), *range(600, 1001, 100), 1250, 1500, 1750, 2000)
FORMED = 0.3  # a head has formed once its score stays at or above this (an even spread over 35 tokens: ~0.09,
#              the mean of 1/(i+1) over rows 1-35)
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
    where = where_inside(folder, path, lambda: InputError(
        f"the {what} of model {entry.id!r} ({name}) is a link that cannot be followed (a loop?): refused"),
        lambda: InputError(f"the {what} of model {entry.id!r} ({name}) leads outside its run folder (a link to "
                           f"another place): refused; {name} must be a file of the run folder"))
    return path if where is not None and path.is_file() else None


def probe_path(entry: Entry) -> Path | None:
    """OUT/probe.jsonl of the run folder the entry names (or of the run holding the step folder it names); None
    without one. InputError for a probe.jsonl that is a link leading outside that folder."""
    source = entry.source
    if entry.kind == "shipped" and source is not None:
        shipped = source / SHIPPED_PROBE
        return shipped if shipped.is_file() and not shipped.is_symlink() else None
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


def repeated_copy(tokens: list[str]) -> tuple[int, int, int] | None:
    """(start of the first copy, start of the second, length) of the longest run of tokens that occurs twice
    without overlap ("the cat sat" in the probe text); None when no two tokens repeat in a row. Why the longest:
    its second copy is where an induction head can predict, from the first, what comes next."""
    n = len(tokens)
    for length in range(n // 2, 1, -1):
        for a in range(n - 2 * length + 1):
            for b in range(a + length, n - length + 1):
                if tokens[a:a + length] == tokens[b:b + length]:
                    return a, b, length
    return None


def induction_score(weights: list[list[float]], copy: tuple[int, int, int]) -> float:
    """Mean over the second copy's tokens b + k of the weight on a + k + 1, the token after the same token's
    earlier occurrence (the last token of the copy looks at the token after the first copy). weights: (n, n)."""
    a, b, length = copy
    return sum(weights[b + k][a + k + 1] for k in range(length)) / length


def formed_at(steps: list[int], scores: list[float], threshold: float = FORMED) -> int | None:
    """The first kept step from which the score stays at or above `threshold` to the end; None if it never does."""
    at = None
    for step, score in zip(steps, scores, strict=True):
        if score >= threshold:
            at = step if at is None else at
        else:
            at = None
    return at


def formations(steps: list[int], scores: list) -> list[dict[str, Any]]:
    """[{layer, head, step, score}] of the heads that formed (scores: (layers, heads, steps)), earliest first."""
    out = [{"layer": i, "head": h, "step": formed_at(steps, s), "score": s[-1]}
           for i, row in enumerate(scores) for h, s in enumerate(row)]
    return sorted((f for f in out if f["step"] is not None), key=lambda f: (f["step"], -f["score"]))


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


def _read_shipped(path: Path) -> tuple[dict, list[dict]]:
    """A shipped gzipped probe, unzipped to at most SHIPPED_PROBE_LIMIT bytes (a damaged file cannot fill memory)."""
    with gzip.open(path, "rb") as f:
        data = f.read(SHIPPED_PROBE_LIMIT + 1)
    if len(data) > SHIPPED_PROBE_LIMIT:
        raise ValueError(f"{path.name} unzips to over {SHIPPED_PROBE_LIMIT} bytes")
    return probe.parse(data.decode("utf-8"), path.name)


def _parsed(entry: Entry, path: Path) -> tuple[dict, list[dict], tuple]:
    """(header, lines, (previous-token scores, induction scores or None, the repeated copy)) of a probe file,
    scores as (layers, heads, steps); parsed once per version."""
    try:
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        with _PARSED_LOCK:
            hit = _PARSED.get(key)
        if hit is not None:
            return hit
        header, lines = _read_shipped(path) if path.name == SHIPPED_PROBE else probe.read(path)
    except (OSError, CheckpointError, ValueError, EOFError, zlib.error) as exc:
        raise InputError(f"the training probe of model {entry.id!r} cannot be read: {exc}") from None
    if not lines:
        raise InputError(f"the training probe of model {entry.id!r} has no step yet (the run kept none so far)")
    try:
        n_layers, n_heads = int(header["n_layers"]), int(header["n_heads"])
        scores = [[[round(previous_token_score(line["weights"][i][h]), 4) for line in lines]
                   for h in range(n_heads)] for i in range(n_layers)]  # (layers, heads, steps)
        copy = repeated_copy(list(header["tokens"]))
        induction = None if copy is None else [[[round(induction_score(line["weights"][i][h], copy), 4)
                                                 for line in lines] for h in range(n_heads)]
                                               for i in range(n_layers)]  # (layers, heads, steps)
    except (KeyError, IndexError, TypeError, ValueError):
        raise InputError(f"the training probe of model {entry.id!r} is inconsistent: its lines do not match its "
                         "header's layers, heads and tokens") from None
    with _PARSED_LOCK:
        _PARSED[key] = (header, lines, (scores, induction, copy))
        while len(_PARSED) > _PARSED_MAX:
            _PARSED.pop(next(iter(_PARSED)))
    return header, lines, (scores, induction, copy)


def timeline(entry: Entry, layer: int = 0, head: int | None = None) -> dict[str, Any]:
    """One head's probed attention at every kept step, every head's previous-token score per step, and the
    run's loss curve. `head` None: the head with the highest previous-token score at the last step."""
    path = probe_path(entry)
    if path is None:
        raise UnknownItem(f"model {entry.id!r} has no training probe: open a run folder trained by this version "
                          "(`attnlab train gpt-char --out runs/gpt-char`, then `attnlab explore runs/gpt-char`)")
    header, lines, (scores, induction, copy) = _parsed(entry, path)
    steps = [line["step"] for line in lines]
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
            "steps": steps, "probe_loss": [line.get("loss") for line in lines],
            "weights": [line["weights"][layer][head] for line in lines],  # (steps, n, n)
            "previous_token": scores, "induction": induction, "formed_threshold": FORMED,
            "repeat": None if copy is None else {"first": copy[0], "second": copy[1], "length": copy[2]},
            "formed": {"previous_token": formations(steps, scores),
                       "induction": [] if induction is None else formations(steps, induction)},
            "shipped": path.name == SHIPPED_PROBE,
            "curve": [] if path.name == SHIPPED_PROBE else _loss_curve(entry, path.parent)}


def ship_probe(source: str | Path, target: str | Path, steps=SHIPPED_STEPS, decimals: int = 2) -> int:
    """Write a run's probe.jsonl thinned to `steps` and rounded to `decimals`, gzipped (the bundled gpt-char's
    SHIPPED_PROBE: 20 steps of 2 decimals fit in ~150 KB where the whole probe is ~4 MB). Returns its size."""
    header, lines = probe.read(source)
    kept = [line for line in lines if line["step"] in set(steps)]
    missing = sorted(set(steps) - {line["step"] for line in kept})
    if missing:
        raise InputError(f"the probe has no line for steps {missing}; it kept steps {[x['step'] for x in lines]}")

    def rounded(x):
        return [rounded(v) for v in x] if isinstance(x, list) else round(x, decimals)

    rows = [json.dumps(header)] + [json.dumps({"step": line["step"], "loss": line["loss"],
                                               "weights": rounded(line["weights"])}, separators=(",", ":"))
                                   for line in kept]
    data = gzip.compress("".join(f"{r}\n" for r in rows).encode(), compresslevel=9, mtime=0)
    Path(target).write_bytes(data)
    return len(data)
