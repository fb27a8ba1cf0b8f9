"""The mutation test of the user docs: seeded edits of every page (tests/docs_mutation/mutate.py), and which the
checks catch.

Five kinds of edit on README.md and every docs/*.md page: a changed number, a claim word turned into its opposite,
two numbers of a paragraph swapped, a table row deleted, an invented sentence. docs/experiments.md and
docs/experiments_vit_grid.md are covered by the trace and the claim words, the other pages by figures.tsv (each
number bound to a log, the library, a results line, a rule, or pinned as written: tests/experiments_trace/
figures.py) and claims.tsv: every edit of every kind must be caught on every page. The table also says, for the
kinds that change one number or word, how many of the edits hit a figure bound to a source or a word ruled by the
results ("b N"); the rest were caught only because the figure or word is pinned as written (an edit is caught, a
change of what was measured would not be). `python -m pytest -q tests/test_docs_mutation.py` prints the table
after the run; `cd tests && python -m docs_mutation.mutate [SEED]` prints it alone.
"""

from __future__ import annotations

import random

from docs_mutation import mutate

MUTATION_TABLE: list[str] = []  # the lines tests/conftest.py prints after the run
SEED, PER_KIND = 0, 8  # mutations per kind and page, drawn from one seed


def test_every_edit_of_a_traced_page_is_caught_and_the_rest_is_reported():
    rates, misses = mutate.table(SEED, PER_KIND)
    MUTATION_TABLE.extend(["docs mutation test (seed 0, up to 8 edits per kind and page), caught / made:",
                           *mutate.render(rates)])
    uncovered = [p for p in mutate.pages() if not mutate.covered(p)]
    assert uncovered == [], f"pages no check covers: {uncovered} (python tests/experiments_trace/figures.py)"
    for page in mutate.TRACED:
        for kind in mutate.KINDS:
            assert rates[(page, kind)][1] > 0, f"{page}: no {kind} edit could be made (the mutator lost its places)"
    from experiments_trace import figures

    page_text = (figures.ROOT / "docs" / "reliability.md").read_text()
    (a, b, _), = [blk for blk in figures.output_blocks("docs/reliability.md", page_text) if blk[2] == "docs_mutation"]
    assert page_text[a:b].splitlines() == mutate.render(rates), \
        "docs/reliability.md's mutation table is not this run's (python tests/experiments_trace/figures.py rewrites it)"
    for (page, kind), (caught, made, _) in rates.items():
        assert caught == made, f"{page}: {kind}: {made - caught} of {made} edits not caught: " + \
            str([m for m in misses if m.startswith(f"{page}: {kind}:")])


def test_every_logged_figure_changed_is_caught():
    """Where a page's figure is bound to a log, changing it on the page is caught."""
    made = list(mutate.logged_figure_mutants(random.Random(SEED), 40))
    assert len(made) >= 20, "fewer logged figures than expected: did test_claims_sources.py lose its rows?"
    missed = [f"{m.page}: {m.where}" for m in made if not mutate.caught(m.page, m.text)]
    assert missed == []
