"""Writes bindings.tsv: for each traced part, what each number it prints is (run after editing a traced part).

    python tests/experiments_trace/bind.py [PART ...]     # e.g. "## 16." "| 16 |"; no PART: every part

Why a writer and not a hand-made list: the traced parts print about 2,700 numbers. For each, in order, it picks:
1. a setting the part's Trace allows, or a name, date, reference or machine figure (settings.py's REFERENCES);
2. for "N runs" / "N seeds", a count of the part's results lines or seeds;
3. for one side of "11 of 12" or "24 / 24", a derived value of the part's `extra` (a count it computes);
4. a value of the part's results files that prints as the number: unconverted first, preferring the line of the
   previous number (then the most alike line of the same file) and a key the words around name ("w 4": window);
   a decimal never binds to an integer setting, and a value of exactly 0 or 1 loses to a derived value;
5. a derived value of `extra`; then 4 and 5 again with unit conversions where a unit says so (GFLOP, MiB, %, k,
   M, minutes);
6. a setting of the runs by the words around it (settings.py's SETTINGS).
A number with none of these is written as "? <its context>": the check fails on it until a person binds it (a
setting with why in the Trace, a derived value in parts.py) or fixes the page. Read the diff before committing:
where a value prints the same from two keys, the writer's guess may be the wrong key. Bindings of the parts not
named are kept.
"""

from __future__ import annotations

import json
import re
import sys
from itertools import combinations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments_trace.check import (  # noqa: E402
    BINDINGS,
    SCALES,
    TOKEN,
    Binding,
    _file,
    _value,
    extras,
    masked,
    page_text,
    read_bindings,
    render,
)
from experiments_trace.parts import TRACES, _part  # noqa: E402
from experiments_trace.settings import is_count, reference, setting  # noqa: E402


def _flat(obj, path: tuple = ()):
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return
    if isinstance(obj, (int, float)):
        yield json.dumps(list(path)), obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _flat(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _flat(v, (*path, i))


SETTING_KEYS = {"seed", "steps", "warmup", "n", "k", "h", "d", "d_k", "lr", "n_layers", "n_heads", "d_model", "window",
                "hidden", "patch_size", "max_shift", "train_images", "cap", "layer", "head", "heads", "phase", "grid",
                "grad_clip", "summary", "chosen", "batch"}


def _selector(lines: tuple[dict, ...], i: int) -> str:
    """The fewest keys (in the line's order; names and settings before measured values) that pick line i alone
    out of its file."""
    line = lines[i]
    keys = [k for k, v in line.items() if isinstance(v, (str, int, float, bool)) or v is None]
    readable = [k for k in keys if (isinstance(line[k], str) and len(line[k]) <= 40)
                or (isinstance(line[k], int) and abs(line[k]) < 10_000)
                or (isinstance(line[k], float) and len(repr(line[k])) <= 6)]  # a setting such as lr 0.003
    given = [k for k in readable if isinstance(line[k], str) or k in SETTING_KEYS]
    for pool in (given, readable, keys):  # what a run was given first (a variant and an n, not a FLOP count)
        for n in range(1, len(pool) + 1):
            for combo in combinations(pool, n):
                if sum(all(r.get(k) == line[k] for k in combo) for r in lines) == 1:
                    return json.dumps({k: line[k] for k in combo})
    return json.dumps({"#": i})  # no keys tell it apart: its place in the file


def _format(shown: str) -> str:
    if "e" in shown:
        mantissa = shown.split("e")[0]
        return f".{len(mantissa.split('.')[1]) if '.' in mantissa else 0}e"
    sign = "+" if shown.startswith("+") else ""
    comma = "," if "," in shown else ""
    if "." in shown:
        return f"{sign}{comma}.{len(shown.split('.')[1])}f"
    return f"{sign}{comma}d"


UNITS = {"%": "*100", "k": "/1e3", "M": "/1e6", " min": "/60", " CPU min": "/60", " minutes": "/60"}


def _unit(after: str) -> str | None:
    """The scale a unit after a number implies (12% of a fraction, 56k of a count)."""
    return next((scale for suffix, scale in UNITS.items() if after.startswith(suffix)), None)


def _prints(x: float, shown: str, fmt: str, scaled_ok: bool) -> bool:
    """Does x print as shown? An integer must be x exactly, unless it is large (a rounded count of seconds) or
    a unit after it says it is scaled (12% of 0.12)."""
    if fmt.endswith("d") or fmt == ".0e":
        number = float(shown.replace(",", ""))
        if not (scaled_ok or abs(number) >= 100):
            return abs(x - number) < 1e-9
    return render(x, fmt) == shown


SCALED_KEYS = {"/1e9": ("flops",), "/2**20": ("bytes",), "*1e3": ("_s", "ms"), "*1e7": ("diff",),
               "/60": ("cpu_s",), "/1e6": ("measured", "params", "closed_form"), "/1e3": ("params",)}


def _plausible(scale: str, path: str, after: str) -> bool:
    """A unit conversion only where it means something: GFLOP of a FLOP count, MiB of bytes, % of a fraction
    followed by %, minutes of CPU seconds, k or M of a parameter count."""
    if scale == "1":
        return True
    if scale in ("*100", "/60", "/1e3", "/1e6") and _unit(after) != scale:
        return False
    return scale == "*100" or any(key in path for key in SCALED_KEYS.get(scale, ()))


def _unlike(a: dict, b: dict) -> float:
    """How far apart two lines of a file are, below 1: the share of their scalar settings that differ."""
    keys = [k for k in a if isinstance(a[k], (str, int)) and not isinstance(a[k], bool)]
    return sum(a[k] != b.get(k) for k in keys) / (len(keys) + 1)


ALIASES = {"w": "window", "heads": "n_heads", "layers": "n_layers", "images": "train_images", "step": "steps",
           "seeds": "seed", "accuracy": "test_accuracy", "test": "test_accuracy"}


def _hint(text: str, start: int, after: str) -> set[str]:
    """Names the words around a number suggest for its key: "w 4" a window, "4 heads" n_heads, "test 0.07" a
    test value (the word before a list of numbers counts for each of them)."""
    before = re.sub(r"[\d.,/()+\-\s]|\b(and|vs|or|to|of)\b", " ", text[max(0, start - 40):start]).split()
    words = ([before[-1]] if before else []) + re.findall(r"^\s(\w+)", after)
    return {w for word in words for w in (word, ALIASES.get(word, word))}


def _hinted(path: str, hint: set[str]) -> bool:
    return any(isinstance(step, str) and (step in hint or step.split("_")[0] in hint) for step in json.loads(path))


def _value_candidates(trace, shown: str, fmt: str, near: tuple[str, int] | None, after: str, ranged: bool,
                      scaled: bool, hint: set[str], avoid: tuple | None = None):
    """(rank, file, line, path, scale) of every results value that prints as shown, nearest first; at scale 1
    only, or only converted (a second pass, after the derived values)."""
    names = (trace.results,) if isinstance(trace.results, str) else trace.results
    unit = _unit(after)
    found = []
    for name in names:
        for i, line in enumerate(_file(name)):
            for path, v in _flat(line):
                if isinstance(v, int) and "." in shown and not scaled:
                    continue  # a decimal is a measured value, not a count or setting that equals it
                for scale, factor in SCALES.items():
                    if (scale != "1") != scaled or not _plausible(scale, path, after):
                        continue
                    if _prints(v * factor, shown, fmt, scale == unit or ranged):
                        rank = 0 if near == (name, i) else 1 + _unlike(_file(name)[near[1]], line) \
                            if near and near[0] == name else 2
                        rank += 3 * (v in (0, 1) and "." in shown) - 2 * _hinted(path, hint)
                        rank += 1.5 * (avoid == (name, i, path))
                        found.append((rank, name, i, path, scale))
    return sorted(found, key=lambda c: c[0])


def _extra_candidates(trace, shown: str, fmt: str, after: str, ranged: bool, scaled: bool):
    unit = _unit(after)
    scales = [unit] if scaled and unit in ("*100", "/60") else [] if scaled else ["1"]
    return [(i, scale) for scale in scales for i, v in enumerate(extras(trace.part))
            if _prints(v * SCALES[scale], shown, fmt, scale == unit or ranged)]


def _allowed(trace, text: str, start: int, end: int, shown: str) -> str:
    """The Trace's why for a number it allows: by the number itself, or by a phrase around it ("k + 7")."""
    for key, why in trace.allowed.items():
        if key == shown:
            return why
        if shown in key and key != shown:
            i = text.find(key, max(0, start - len(key)))
            if i != -1 and i <= start and end <= i + len(key):
                return why
    return ""


def _count(trace, shown: str, after: str) -> Binding | None:
    """A count of runs (lines with CPU seconds, or with a seed) or of seeds, where the words after say so."""
    if not shown.isdigit() or not re.match(r" (runs|seeds)\b", after):
        return None
    names = (trace.results,) if isinstance(trace.results, str) else trace.results
    tries = [("seed", "distinct")] if after.startswith(" seeds") else [("cpu_s", ""), ("seed", "")]
    for name in names:
        for key, path in tries:
            b = Binding(shown, "n", name, key, path, "1", "d")
            if render(_value(trace.part, b), "d") == shown:
                return b
    return None


def bind_part(trace) -> list[Binding]:
    text = masked(trace.part, _part(page_text(trace.doc), trace.part, trace.end))
    out, near, last = [], None, None
    for m in TOKEN.finditer(text):
        shown = m.group().replace("−", "-")
        why = _allowed(trace, text, m.start(), m.end(), shown) or reference(text, m.start(), m.end(), shown)
        if why:
            out.append(Binding(shown, "=", why))
            continue
        fmt, after = _format(shown), text[m.end():m.end() + 8]
        ranged = bool(re.search(r"\d\.\d+-$", text[max(0, m.start() - 8):m.start()]))  # the 12 of 3.7-12
        binding = _count(trace, shown, after)
        hint = _hint(text, m.start(), after)
        # "2 of 3 seeds", "on average (1.457": a derived count or mean first
        if binding is None and (trace.prefer_extra or is_count(text, m.start(), m.end())
                                or hint & {"mean", "means", "average"}):
            hits = _extra_candidates(trace, shown, fmt, after, ranged, False)
            if hits:
                binding = Binding(shown, "x", trace.extra.__qualname__.split(".")[0], str(hits[0][0]), "", "1", fmt)
        # the second number of "24 / 24" is another value than the first (a total, not the count again)
        second = is_count(text, m.start(), m.end()) and re.search(r"\d (of|/) (the )?$", text[:m.start()])
        avoid = last if second else None
        for scaled in (False, True) if binding is None else ():
            found = _value_candidates(trace, shown, fmt, near, after, ranged, scaled, hint, avoid)
            if found and found[0][0] >= 3 and _extra_candidates(trace, shown, fmt, after, ranged, scaled):
                found = []  # a ratio of a reference to itself (1.0) is a worse guess than a quoted derived value
            if found:
                _, name, i, path, scale = found[0]
                near, last = (name, i), (name, i, path)
                binding = Binding(shown, "v", name, _selector(_file(name), i), path, scale, fmt)
                break
            hits = _extra_candidates(trace, shown, fmt, after, ranged, scaled)
            if hits:
                name = trace.extra.__qualname__.split(".")[0]
                binding = Binding(shown, "x", name, str(hits[0][0]), "", hits[0][1], fmt)
                break
        if binding is None:
            why = setting(text, m.start(), m.end(), shown)
            context = text[max(0, m.start() - 40):m.end() + 20].replace("\n", " ")
            binding = Binding(shown, "=", why or f"? {context}")
        out.append(binding)
    return out


def main(parts: list[str]) -> None:
    old = read_bindings() if BINDINGS.exists() else {}
    lines = ["# One line per number a traced part prints, in order (tests/experiments_trace/check.py says how).",
             "# printed\tv\tresults file\tits line's keys\tpath\tscale\tformat",
             "# printed\tx\textra function\tindex\t\tscale\tformat",
             "# printed\t=\twhy it is a setting, not a result"]
    for trace in TRACES:
        bound = bind_part(trace) if not parts or trace.part in parts else old.get(trace.part, [])
        lines += ["", "@" + trace.part] + [b.line() for b in bound]
    BINDINGS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
