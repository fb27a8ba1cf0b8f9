"""Seeded mutations of the user docs (README.md and the pages under docs/), and whether the checks that bind
their figures catch each one.

Why: a check is only as good as the edits it catches. The trace of docs/experiments.md caught every changed number
of a traced part, yet words that carry a claim, prose between the sections and every other page were free. This
module makes five kinds of edit that a person (or a careless rewrite) makes, on every page, from one seed:
- number: a number's last digit changed (1.42 -> 1.43, 82,944 -> 82,945);
- claim word: a comparative or verdict word turned into another of its family (faster -> slower, not needed ->
  needed, grow as n -> grow as n²; tests/experiments_trace/claims.py's FAMILIES);
- moved number: two different numbers of one paragraph swapped;
- deleted row: one body row of a table removed;
- invented sentence: a sentence with a number and a claim word added to a paragraph.
`caught(page, text)` runs the checks that cover the page: for docs/experiments*.md the trace (every number bound,
in order), its coverage (no number outside a traced part) and the claim words (claims.py); for the other pages the
figures tests/test_claims_sources.py binds to logs. A page or kind that no check covers is reported, not hidden.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from experiments_trace import check, claims, figures

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("number", "claim word", "moved number", "deleted row", "invented sentence")
TRACED = {"docs/experiments.md": "experiments.md", "docs/experiments_vit_grid.md": "experiments_vit_grid.md"}
INVENTED = ("On seed 3 the loss was {n} lower, so the change holds.",
            "A second run took {n} s and was faster than the first.",
            "With {n} heads the model did better than with one.")


def pages() -> list[str]:
    """The user docs: README.md and every page under docs/ but the generated API reference (as they are now:
    pages may be added or moved)."""
    return ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")
                                 if p.relative_to(ROOT / "docs").parts[0] != "api")]


@dataclass(frozen=True)
class Mutant:
    kind: str
    page: str
    where: str  # what changed, for a report of the misses
    text: str
    bound: bool = False  # the changed number or word is bound to a source or rule (not only pinned as written)


def _bump(shown: str) -> str:
    k = max(i for i, c in enumerate(shown) if c.isdigit())
    return shown[:k] + str((int(shown[k]) + 1) % 10) + shown[k + 1:]


def _numbers(text: str) -> list[re.Match]:
    return list(check.TOKEN.finditer(text))


def _paragraphs(text: str) -> list[tuple[int, int]]:
    """(start, end) of each prose paragraph (not a heading, table, list of code)."""
    out, start = [], 0
    for m in re.finditer(r"\n\s*\n", text + "\n\n"):
        block = text[start:m.start()]
        if block.strip() and not re.match(r"\s*(#|\||```|    |- |\d+\. |!\[)", block) and "```" not in block:
            out.append((start, m.start()))
        start = m.end()
    return out


def mutants(page: str, kind: str, rng: random.Random, count: int) -> Iterator[Mutant]:
    """Up to count mutants of one kind on one page, drawn by rng (fewer where the page has fewer places)."""
    text = (ROOT / page).read_text()
    if kind == "number":
        found = _numbers(text)
        bound = _bound_numbers(page, text)
        for i in rng.sample(range(len(found)), min(count, len(found))):
            m = found[i]
            yield Mutant(kind, page, f"{m.group()} -> {_bump(m.group())}",
                         text[:m.start()] + _bump(m.group()) + text[m.end():], i in bound)
    elif kind == "claim word":
        found = list(claims.WORD.finditer(text))
        ruled = _ruled_words(page, text)
        for m in rng.sample(found, min(count, len(found))):
            other = rng.choice([w for w in claims.FAMILY[m.group()] if w != m.group()])
            yield Mutant(kind, page, f"{m.group()} -> {other}", text[:m.start()] + other + text[m.end():],
                         len(claims.normal(text[:m.start()])) in ruled)
    elif kind == "moved number":
        pairs = []
        for a, b in _paragraphs(text):
            nums = [m for m in _numbers(text[a:b]) if not re.fullmatch(r"\d{4}-\d\d-\d\d|[0-9a-f]{7,}", m.group())]
            pairs += [(a + x.start(), a + x.end(), a + y.start(), a + y.end(), x.group(), y.group())
                      for x, y in zip(nums, nums[1:], strict=False) if x.group() != y.group()]
        starts = {m.start(): n for n, m in enumerate(_numbers(text))}
        bound = _bound_numbers(page, text)
        for i, j, k, m, x, y in rng.sample(pairs, min(count, len(pairs))):
            yield Mutant(kind, page, f"{x} <-> {y}", text[:i] + y + text[j:k] + x + text[m:],
                         starts.get(i) in bound or starts.get(k) in bound)
    elif kind == "deleted row":
        lines = text.splitlines(keepends=True)
        starts = [sum(map(len, lines[:i])) for i in range(len(lines))]
        sep = re.compile(r"^\|[\s:|-]+\|\s*$")
        body = [i for i, line in enumerate(lines) if line.startswith("|") and not sep.match(line)
                and not (i + 1 < len(lines) and sep.match(lines[i + 1]))]  # not a separator, not a header
        for i in rng.sample(body, min(count, len(body))):
            yield Mutant(kind, page, lines[i][:60].strip(), text[:starts[i]] + text[starts[i] + len(lines[i]):])
    elif kind == "invented sentence":
        spots = _paragraphs(text)
        for a, b in rng.sample(spots, min(count, len(spots))):
            sentence = rng.choice(INVENTED).format(n=rng.choice(["2.7", "14", "0.35", "1,250"]))
            yield Mutant(kind, page, f"after {text[max(a, b - 40):b]!r}", text[:b] + " " + sentence + text[b:])


BOUND = ("log", "computed", "results", "source", "output")  # figures.py's classes checked against a source
RULED_PINS = claims.PINS


def _bound_numbers(page: str, text: str) -> set[int]:
    """Indices (in the page's order of numbers) of the numbers bound to a source: a traced page's numbers are all
    bound by bindings.tsv but its settings ("=" lines, printed literally: here any number that prints the same as a
    setting anywhere counts as one, an undercount of the bound); another page's by figures.tsv's class."""
    if page in TRACED:
        name = TRACED[page]
        spans = check.traced_spans(check.page_text(name), name)
        settings = {b.printed for part in check._bindings().values() for b in part if b.kind == "="}
        offset = 0 if name == "experiments.md" else 1
        return {i for i, m in enumerate(_numbers(text)) if m.group() not in settings
                and any(a <= m.start() + offset < b for a, b in spans)}
    ledger = [f for f in figures._ledger().get(page, ()) if f.token != figures.ROWS]
    return {i for i, f in enumerate(ledger) if f.cls.split(":")[0] in BOUND and f.cls not in figures.SELF}


def _ruled_words(page: str, text: str) -> set[int]:
    """Offsets, in the whitespace-collapsed page, of the claim words that follow a rule over the results."""
    flat, name = claims.normal(text), TRACED.get(page, page)
    out = set()
    for c in claims._claims():
        if c.page == name and c.rule not in RULED_PINS:
            k = flat.find(c.before + c.word + c.after)
            if k >= 0:
                out.add(k + len(c.before))
    return out


def _logged_figures() -> list[tuple[str, str]]:
    """(page, printed text with its figure) of tests/test_claims_sources.py's CLAIMS."""
    import test_claims_sources as sources
    return [(c[0], sources._squash(c[1].replace("{", "").replace("}", ""))) for c in sources.CLAIMS]


def covered(page: str) -> bool:
    """Does any check read this page's figures?"""
    return page in TRACED or page in figures.pages()


def caught(page: str, text: str) -> bool:
    """Do the checks that cover the page reject this text?"""
    if page in TRACED:
        name = TRACED[page]
        try:
            return bool(check.problems(text, name) or claims.problems(text, name)
                        or check.untraced_numbers(text, name))
        except (AssertionError, ValueError):  # a traced part no longer found: the check fails, so it is caught
            return True
    if figures.problems(text, page, deep=False) or claims.problems(text, page):
        return True
    flat = re.sub(r"\s+", " ", text)
    return any(p == page and shown not in flat for p, shown in _logged_figures())


def logged_figure_mutants(rng: random.Random, count: int) -> Iterator[Mutant]:
    """The figures tests/test_claims_sources.py binds to logs on the user docs, each changed where its page prints
    it: what the other pages' check covers, so each must be caught. A figure whose text the page prints twice is
    left out (test_claims_sources.py checks that one of them is right, not both)."""
    import test_claims_sources as sources
    user = set(pages())
    rows = [c for c in sources.CLAIMS if c[0] in user and (ROOT / c[0]).is_file()]
    for page, printed, *_ in rng.sample(rows, min(count, len(rows))):
        text = (ROOT / page).read_text()
        head, figure, tail = re.split(r"[{}]", re.sub(r"\s+", " ", printed))
        words = lambda part: r"\s+".join(re.escape(w) for w in part.split(" "))  # noqa: E731
        found = list(re.finditer(words(head) + "(" + re.escape(figure) + ")" + words(tail), text))
        if len(found) != 1:
            continue  # gone (test_claims_sources.py fails on that already) or printed twice
        k = found[0].start(1)
        yield Mutant("logged figure", page, f"{figure} -> {_bump(figure)}",
                     text[:k] + _bump(figure) + text[k + len(figure):])


def table(seed: int = 0, count: int = 8) -> tuple[dict[tuple[str, str], tuple[int, int, int]], list[str]]:
    """{(page, kind): (caught, made, of the made: how many changed a bound number or ruled word)} over every page
    and kind, and the misses, from one seed."""
    rng, out, misses = random.Random(seed), {}, []
    for page in pages():
        for kind in KINDS:
            made = list(mutants(page, kind, rng, count))
            hit = [caught(page, m.text) for m in made]
            out[(page, kind)] = (sum(hit), len(made), sum(m.bound for m in made))
            misses += [f"{page}: {kind}: {m.where}" for m, h in zip(made, hit, strict=True) if not h]
    return out, misses


def render(rates: dict[tuple[str, str], tuple[int, int, int]]) -> list[str]:
    """The catch rates as a Markdown table: a row per page, a column per kind, and a total row. A number and a
    claim word cell also says how many of the edits hit a figure bound to a source or a word ruled by the results
    ("b 3"): the rest were caught only because the figure or word is pinned as written."""
    def cell(c: int, n: int, b: int = -1) -> str:
        return "-" if n == 0 else f"{c}/{n}" + (f" (b {b})" if b >= 0 else "")
    lines = ["| page | checked by | " + " | ".join(KINDS) + " |", "|---|---|" + "---|" * len(KINDS)]
    for page in pages():
        by = "trace + claims" if page in TRACED else "figures + claims" if covered(page) else "nothing"
        lines.append(f"| {page} | {by} | " + " | ".join(cell(*_shown(rates[(page, k)], k)) for k in KINDS) + " |")
    totals = [_shown(tuple(map(sum, zip(*(rates[(p, k)] for p in pages()), strict=True))), k) for k in KINDS]
    lines.append("| all pages | | " + " | ".join(cell(*t) for t in totals) + " |")
    return lines


def _shown(rate: tuple[int, ...], kind: str) -> tuple[int, ...]:
    """A cell's figures: the bound count only for the kinds that change one number or word."""
    return rate if kind in ("number", "claim word", "moved number") else rate[:2]


if __name__ == "__main__":
    import sys
    rates, _ = table(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    print("\n".join(render(rates)))
