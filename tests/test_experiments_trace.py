"""Every number of a traced part of docs/experiments.md is bound to one value of the committed results.

The traced parts, what they render from results (parts.py), which value each printed number is, in order
(bindings.tsv, written by bind.py) and the verdict words of the table at the top (verdicts.py) live in
tests/experiments_trace/; check.py's `problems(doc_text)` is the check. The mutation test below changes every
number of every traced part (its last digit; an integer by one) and every verdict word (to each other verdict
word), one at a time, and asks that the check catch each: `python -m pytest -q tests/test_experiments_trace.py`
prints the count in its summary. Every number of the pages is inside a traced part, and every claim word
(faster / slower, worse / better, grow as n ...) follows its rule over the results or its pin (claims.py).
"""

from __future__ import annotations

import re
import time

import pytest
from experiments_trace import claims
from experiments_trace.check import (
    BY_PART,
    TOKEN,
    page_text,
    part_problems,
    problems,
    read_bindings,
    untraced_numbers,
)
from experiments_trace.parts import DOCS, RESULTS, TRACES, UNTRACED, _part
from experiments_trace.verdicts import VERDICT, VERDICTS, verdict_cell

PAGES = sorted({trace.doc for trace in TRACES})


def _page(page: str) -> str:
    return (DOCS / page).read_text()


@pytest.mark.parametrize("page", PAGES)
def test_every_number_of_a_traced_part_is_its_bound_value(page):
    assert problems(_page(page), page) == []


def test_every_traced_part_has_its_bindings_and_no_other_part_has():
    bindings = read_bindings()
    assert sorted(bindings) == sorted(BY_PART), "bindings.tsv and parts.py's TRACES name different parts"
    unbound = [f"{part}: {b.printed} ({b.source})" for part, bs in bindings.items() for b in bs
               if b.kind == "=" and b.source.startswith("?")]
    assert unbound == [], "numbers bind.py found no source for (bind them by hand or fix the page):\n" + \
        "\n".join(unbound)


@pytest.mark.parametrize(("part", "before", "after"), [
    ("## 13.", "1.26, 1.42 |", "1.26, 1.43 |"),  # the exponent table: the old check passed 1.43
    ("| 12 |", "24 / 24", "23 / 24"),  # a count
    ("| 12 |", "| holds for MiniLM", "| partly for MiniLM"),  # a verdict word
])
def test_an_edit_to_another_plausible_value_is_caught(part, before, after):
    """Edits that a check of "is it some value of the file" passed: each is now a problem."""
    doc = _page("experiments.md")
    trace = BY_PART[part]
    text = _part(doc, part, trace.end)
    assert before in text and part_problems(trace, text) == []
    assert part_problems(trace, text.replace(before, after, 1)) != []


def _mutations(text: str):
    """(where, changed text) for each number of text (last digit + 1, an integer also + 1 and - 1 as a whole)."""
    for m in TOKEN.finditer(text):
        shown, i, j = m.group(), m.start(), m.end()
        digits = [k for k, c in enumerate(shown) if c.isdigit()]
        k = digits[-1]
        changed = {shown[:k] + str((int(shown[k]) + 1) % 10) + shown[k + 1:]}
        if re.fullmatch(r"[+\-−]?\d[\d,]*", shown) and ":" not in shown:
            value = int(shown.replace(",", "").replace("−", "-"))
            for other in (value + 1, value - 1):
                text_other = f"{other:,}" if "," in shown else str(other)
                if shown[0] == "+" and other >= 0:
                    text_other = "+" + text_other
                changed.add(text_other)
        for new in changed - {shown}:
            yield shown, text[:i] + new + text[j:]


def _verdict_mutations(text: str):
    cell = verdict_cell(text)
    offset = text.index(cell)
    for m in VERDICT.finditer(cell):
        for other in VERDICTS:
            if other != m.group():
                i, j = offset + m.start(), offset + m.end()
                yield m.group(), text[:i] + other + text[j:]


MUTATION_SUMMARY: list[str] = []  # the line tests/conftest.py prints after the run


def test_every_changed_number_and_verdict_is_caught():
    start, missed = time.process_time(), []
    counts = {"number": 0, "verdict word": 0}
    for trace in TRACES:
        text = _part(page_text(trace.doc), trace.part, trace.end)
        mutants = [("number", *m) for m in _mutations(text)]
        if trace.part.startswith("|"):
            mutants += [("verdict word", *m) for m in _verdict_mutations(text)]
        for what, shown, mutant in mutants:
            counts[what] += 1
            if not part_problems(trace, mutant):
                missed.append(f"{trace.part}: {what} {shown}")
    total = sum(counts.values())
    MUTATION_SUMMARY.append(
        f"experiments trace: {total - len(missed):,} of {total:,} changes caught ({counts['number']:,} changed "
        f"numbers, {counts['verdict word']:,} swapped verdict words) in {time.process_time() - start:.1f} s CPU")
    assert missed == [], f"{len(missed)} of {total} changes not caught: {missed[:20]}"
    stated = f"catches {total:,} of {total:,} changes"
    assert stated in re.sub(r"\s+", " ", _page("experiments.md")), \
        f"docs/experiments.md states another count of the mutation test: write \"{stated}\""


def test_traced_and_untraced_parts_exist():
    doc = _page("experiments.md")
    for trace in TRACES:
        _part(page_text(trace.doc), trace.part, trace.end)
        names = (trace.results,) if isinstance(trace.results, str) else trace.results
        assert all((RESULTS / name).is_file() for name in names)
    for part in UNTRACED:
        if part.startswith("##"):
            _part(doc, part)


@pytest.mark.parametrize("page", PAGES)
def test_no_number_outside_a_traced_part(page):
    """Prose that no binding checks carries no number: every number of the page is inside a traced part."""
    assert untraced_numbers(page_text(page), page) == []


@pytest.mark.parametrize("where", ["## Sections 10-16", "## Sections 17-19", "## Sections 4-8", "Row 8 was rerun",
                                   "The seed column names"])
def test_an_invented_sentence_in_the_prose_between_sections_is_caught(where):
    """The introductions between sections were untraced, so a sentence with a number passed there."""
    doc = _page("experiments.md")
    start = doc.index(where)
    end = doc.index("\n\n", doc.index("\n\n", start) + 2) if where.startswith("##") else doc.index("\n\n", start)
    changed = doc[:end] + " Every run took 12 minutes." + doc[end:]
    assert problems(changed) != []


@pytest.mark.parametrize("page", claims.PAGES)
def test_every_claim_word_follows_its_rule_or_pin(page):
    """Each comparative or verdict word (claims.FAMILIES) stands where claims.tsv lists it, and is the word its rule
    over the results gives (or the word pinned there); no claim word stands anywhere else."""
    assert claims.problems(page_text(page), page) == []


def test_every_claim_rule_is_used_and_gives_one_of_its_words():
    used = {c.rule for c in claims.read_claims()} - set(claims.PINS)
    assert used == set(claims.RULES), f"unused: {set(claims.RULES) - used}, unknown: {used - set(claims.RULES)}"
    for c in claims.read_claims():
        if c.rule not in claims.PINS:
            assert claims.expected_word(c.rule) in claims.FAMILY[c.word], (c.rule, claims.expected_word(c.rule))


# The five claim-word edits that once passed every trace and claims test: each turns a claim into its opposite.
QUOTED_EDITS = [("are worse than 4 heads", "are better than 4 heads"),
                ("; faster than the GRU", "; slower than the GRU"),
                ("local and linear attention grow as n (", "local and linear attention grow as n² ("),
                ("LayerNorm is not needed", "LayerNorm is needed"),
                ("did not hurt", "did hurt")]


@pytest.mark.parametrize(("before", "after"), QUOTED_EDITS)
def test_a_claim_word_turned_into_its_opposite_fails(before, after):
    doc = _page("experiments.md")
    assert before in re.sub(r"\s+", " ", doc), before
    changed = claims.normal(doc).replace(before, after, 1)
    assert claims.problems(doc, "experiments.md") == []
    assert claims.problems(changed, "experiments.md") != []


def test_a_claim_rule_follows_the_results(monkeypatch):
    """A rule reads the results, not the page: if a run without LayerNorm had stayed on the plateau, "LayerNorm is
    not needed" would fail."""
    assert claims.RULES["layernorm_needed"]() == "not needed"
    real = claims._load

    def stuck(names):
        rows = [dict(r) for r in real(names)]
        if names == "residual_depth.jsonl":
            next(r for r in rows if r["arm"] == "no norm")["plateau_end"] = None
        return rows

    monkeypatch.setattr(claims, "_load", stuck)
    assert claims.RULES["layernorm_needed"]() == "needed"
