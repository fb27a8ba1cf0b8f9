"""The check of the traced parts: every number a part prints, in order, against what bindings.tsv binds it to.

Why by order: a check that only asks whether a printed number equals some value of the results files passes an
edit that turns one result into another (1.42 -> 1.43 where 1.43 is also in the file). Here each number a part
prints is one entry of bindings.tsv, in the order the part prints them: one value of one results line (the line
picked by its keys, the value by its path, rounded as the entry's format says), a count of a file's runs or
seeds, one derived value of the part's `extra` function (a mean, a gap, a count), or a setting that is not a
result (a threshold, a year, an issue item), printed literally, with why. Numbers inside a table row that the
part's `rows` function renders verbatim are bound by that row and not listed again. The verdict words of the
table at the top are derived by verdicts.py.

`problems(doc_text)` is pure over results loaded once, so the mutation test can run it per changed number.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from experiments_trace.parts import DOCS, TRACES, Trace, _load, _part
from experiments_trace.verdicts import VERDICT, expected_verdicts, verdict_cell

BINDINGS = Path(__file__).with_name("bindings.tsv")

# A number as the pages print it: a date, a time of day, or a signed decimal or integer (thousands separated or
# not, or in e-notation like 6e-3). Not a number: digits inside a name or a file name (v2, W_1, ln_1500.jsonl,
# GPT-2, layer-0) or the second half of a range (0.32-0.69 is two positive numbers). A commit (8601e7a) is one.
TOKEN = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b|\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}(?!\d)"
                   r"|(?<![A-Za-z_\d.,])(?<![A-Za-z]-)[+\-−]?\d+(?:,\d{3})*(?:\.\d+)?(?:e-?\d+)?(?![\d])")

SCALES = {"1": 1.0, "/1e9": 1e-9, "/2**20": 2.0**-20, "*1e3": 1e3, "*100": 100.0, "*1e7": 1e7, "/60": 1 / 60,
          "/1e3": 1e-3, "/1e6": 1e-6}


@dataclass(frozen=True)
class Binding:
    """One printed number: `kind` "v" (a results value: source is the file, key its line's keys as JSON, path
    the value's path in the line), "n" (a count of runs or seeds: the file's lines that have the key, or with path
    "distinct" how many values the key takes), "x" (the part's extra(rows)[index]: source names the function, key
    the index) or "=" (a setting printed literally: source says why); scale and fmt say how it is printed."""
    printed: str
    kind: str
    source: str
    key: str = ""
    path: str = ""
    scale: str = "1"
    fmt: str = ""

    def line(self) -> str:
        cells = [self.printed, self.kind, self.source] + ([self.key, self.path, self.scale, self.fmt]
                                                          if self.kind != "=" else [])
        return "\t".join(cells)


def tokens(text: str) -> list[str]:
    return [m.group().replace("−", "-") for m in TOKEN.finditer(text)]


def render(value: float, fmt: str) -> str:
    """value as the page prints it: a format spec (".3f", "+.3f", ",d"; ".0e" prints 0.003 as 3e-3)."""
    if fmt.endswith("e"):
        return format(value, fmt).replace("e-0", "e-").replace("e+00", "")
    if fmt.endswith("d"):
        return format(round(value), fmt)
    text = format(value, fmt)
    return "0" + text[2:] if text.startswith("-0") and not any(c in text[1:] for c in "123456789") else text


def resolve(obj, path: str):
    """The value at path (a JSON list of keys and indices) in a results line."""
    for step in json.loads(path):
        obj = obj[step]
    return obj


def read_bindings(path: Path = BINDINGS) -> dict[str, list[Binding]]:
    """bindings.tsv: "@<part>" starts a part's list; then one tab-separated line per printed number."""
    out: dict[str, list[Binding]] = {}
    current: list[Binding] = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("@"):
            current = out.setdefault(line[1:], [])
            continue
        current.append(Binding(*line.split("\t")))
    return out


BY_PART = {trace.part: trace for trace in TRACES}


@cache
def _rows_of(part: str) -> list[dict]:
    return _load(BY_PART[part].results)


@cache
def _rendered_rows(part: str) -> tuple[str, ...]:
    trace = BY_PART[part]
    return tuple(trace.rows(_rows_of(part))) if trace.rows else ()


@cache
def extras(part: str) -> tuple[float, ...]:
    trace = BY_PART[part]
    return tuple(trace.extra(_rows_of(part))) if trace.extra else ()


@cache
def _file(name: str) -> tuple[dict, ...]:
    return tuple(_load(name))


def _value(part: str, b: Binding) -> float:
    if b.kind == "x":
        return extras(part)[int(b.key)]
    if b.kind == "n":  # a count: the lines of a file that have the key, or (path "distinct") its distinct values
        values = [r[b.key] for r in _file(b.source) if b.key in r]
        return len(set(values)) if b.path == "distinct" else len(values)
    keys, lines = json.loads(b.key), _file(b.source)
    lines = [lines[keys["#"]]] if "#" in keys else [r for r in lines if all(r.get(k) == v for k, v in keys.items())]
    assert len(lines) == 1, f"{b.source} {b.key}: {len(lines)} lines match, not one"
    return resolve(lines[0], b.path)


@cache
def _bindings() -> dict[str, list[Binding]]:
    return read_bindings()


@cache
def expected(part: str) -> tuple[str, ...]:
    """The numbers the part must print, in order, rendered from the results (or literal, for settings)."""
    return tuple(b.printed if b.kind == "=" else render(_value(part, b) * SCALES[b.scale], b.fmt)
                 for b in _bindings().get(part, []))


def _consume(part: str, text: str) -> tuple[str, list[str]]:
    """The part with each rendered row blanked wherever it stands, longest first (so that a short row is not found
    inside a longer one that starts the same: the longer one is blanked before it is looked for), and the rendered
    rows it lacks."""
    missing = []
    for line in sorted(_rendered_rows(part), key=len, reverse=True):
        if line not in text:
            missing.append(line)
        text = text.replace(line, " " * len(line))
    return text, missing


def masked(part: str, text: str) -> str:
    """The part without its rendered rows (their numbers are bound by the rows themselves)."""
    return _consume(part, text)[0]


def part_problems(trace: Trace, text: str) -> list[str]:
    """What is wrong with one traced part's text: a rendered row it lacks, a number that differs from its
    binding (or one too many or too few), a verdict word the results do not give."""
    rest, missing = _consume(trace.part, text)
    out = [f"{trace.part}: the page lacks the row rendered from {trace.results}:\n{line}" for line in missing]
    shown, want = tokens(rest), expected(trace.part)
    if list(shown) != list(want):
        i = next((i for i, (a, b) in enumerate(zip(shown, want, strict=False)) if a != b), min(len(shown), len(want)))
        at = f"printed {shown[i]!r}" if i < len(shown) else "nothing"
        out.append(f"{trace.part}: number {i + 1} of {len(want)}: {at}, the results give "
                   f"{want[i] if i < len(want) else 'no more numbers'} (bindings.tsv)"
                   f" near: {' '.join(shown[max(0, i - 3):i + 2])}")
    if trace.part.startswith("|"):
        words, want_words = VERDICT.findall(verdict_cell(text)), expected_verdicts(trace.part)
        if words != want_words:
            out.append(f"{trace.part}: verdict words {words}, the results give {want_words} (verdicts.py)")
    return out


def page_text(page: str) -> str:
    """A page of docs/ (a newline first, so that a heading on its first line is found like any other)."""
    return (DOCS / page).read_text() if page == "experiments.md" else "\n" + (DOCS / page).read_text()


def problems(doc_text: str, page: str = "experiments.md") -> list[str]:
    """Everything wrong with the traced parts of one page (docs/experiments.md unless named), given its text."""
    text = doc_text if page == "experiments.md" or doc_text.startswith("\n") else "\n" + doc_text
    out = []
    for trace in TRACES:
        if trace.doc == page:
            out += part_problems(trace, _part(text, trace.part, trace.end))
    return out


def traced_spans(text: str, page: str = "experiments.md") -> list[tuple[int, int]]:
    """(start, end) in text of every traced part of the page (text as page_text gives it)."""
    out = []
    for trace in TRACES:
        if trace.doc == page:
            part = _part(text, trace.part, trace.end)
            start = text.index(part) if trace.part.startswith("|") else text.index("\n" + trace.part) + 1
            out.append((start, start + len(part)))
    return out


def untraced_numbers(doc_text: str, page: str = "experiments.md") -> list[str]:
    """Numbers outside every traced part: prose that no binding checks carries none (a number there, right or
    invented, would be believed and never checked)."""
    text = doc_text if page == "experiments.md" or doc_text.startswith("\n") else "\n" + doc_text
    spans = traced_spans(text, page)
    return [f"line {text.count(chr(10), 0, m.start()) + (page == 'experiments.md')}: {m.group()!r} in "
            f"{text[max(0, m.start() - 40):m.end() + 20]!r}"
            for m in TOKEN.finditer(text) if not any(a <= m.start() < b for a, b in spans)]
