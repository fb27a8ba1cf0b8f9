"""docs/notebook.md's verdicts follow the lab notebook's own table (docs/experiments.md): the summary has a row
for every row of the table, each of its verdict words ("holds", "partly", "not at this budget", ...) is in the
same row of the table, the table's first verdict word is in the summary, and every number the summary prints
is one the table's row prints. An edit of a verdict in the notebook fails here until the summary follows."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from experiments_trace.verdicts import VERDICT, verdict_cell  # noqa: E402

NUMBER = re.compile(r"\d[\d,.]*\d|\d")


def _rows(page: str) -> dict[int, str]:
    """Row number -> the whole row, in the first table of a page whose rows start with `| N |`."""
    rows = {}
    for line in (ROOT / page).read_text().splitlines():
        found = re.match(r"^\| (\d+) \|", line)
        if found:
            rows[int(found[1])] = line
        elif rows and not line.startswith("|"):
            break
    return rows


def test_the_summary_follows_the_notebooks_verdicts():
    notebook = _rows("docs/experiments.md")
    summary = {n: row.split(" | ")[2].rstrip(" |") for n, row in _rows("docs/notebook.md").items()}
    assert sorted(summary) == sorted(notebook) and len(summary) >= 20
    wrong = []
    for n, mine in summary.items():
        theirs = verdict_cell(notebook[n])
        words, their_words = VERDICT.findall(mine), VERDICT.findall(theirs)
        wrong += [f"row {n}: '{w}' is not in the notebook's verdict" for w in words if w not in their_words]
        if their_words and their_words[0] not in words:
            wrong.append(f"row {n}: the notebook's verdict starts with '{their_words[0]}', the summary does not say it")
        wrong += [f"row {n}: {x} is not in the notebook's row" for x in NUMBER.findall(mine) if x not in theirs]
    assert wrong == []
