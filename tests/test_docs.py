"""docs/architecture.md quotes code with file:line references; they must still be true."""

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("sync_lines", ROOT / "docs" / "sync_lines.py")
sync_lines = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sync_lines)


def test_every_quoted_line_is_where_the_tour_says():
    text = sync_lines.DOC.read_text()
    rows = list(sync_lines.ROW.finditer(text))
    assert len(rows) >= 30
    wrong = []
    for row in rows:
        lines = (ROOT / row["path"]).read_text().splitlines()
        number = int(row["line"])
        if not (1 <= number <= len(lines) and row["code"] in lines[number - 1]):
            wrong.append(f"{row['path']}:{number} does not hold {row['code']!r}")
    assert wrong == [], "run `python docs/sync_lines.py` after editing the core:\n" + "\n".join(wrong)


# a path of the repository named in the page: a file (attnlab/x.py, tests/y.py, static .js ...) or a folder (ends in /)
PATH = re.compile(r"(?<![\w./-])((?:attnlab|tests|docs)/(?:[\w.-]+/)*(?:[\w.-]+\.(?:py|js|html|css|md|json)\b)?)")


def test_every_path_the_page_names_exists():
    """The map names files without line numbers too; when one moves or is renamed the map must follow."""
    text = sync_lines.DOC.read_text()
    paths = {m[1] for m in PATH.finditer(text)}
    assert len([p for p in paths if p.startswith("attnlab/") and p.endswith(".py")]) >= 80
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert missing == [], "docs/architecture.md names paths that do not exist:\n" + "\n".join(missing)
