"""Refresh the `file:line` references in docs/architecture.md from the code quoted beside them.

Each reference is `path:LINE` followed by quoted `code` (a table row `| ... | `path:LINE` | `code` |`, or the
two side by side in a sentence); the line number is set to the first line of `path` that contains `code`, so
quote a line that is unique in its file. Run after editing the core: `python docs/sync_lines.py`.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
ROW = re.compile(r"`(?P<path>attnlab/[\w/]+\.py):(?P<line>\d+)`(?P<sep>[^`]*)`(?P<code>[^`]+)`")


def find(path: str, code: str) -> int | None:
    for number, text in enumerate((ROOT / path).read_text().splitlines(), start=1):
        if code in text:
            return number
    return None


def sync(text: str) -> tuple[str, list[str]]:
    missing: list[str] = []

    def fix(match: re.Match) -> str:
        line = find(match["path"], match["code"])
        if line is None:
            missing.append(f"{match['path']}: {match['code']}")
            return match[0]
        return f"`{match['path']}:{line}`{match['sep']}`{match['code']}`"

    return ROW.sub(fix, text), missing


if __name__ == "__main__":
    new, missing = sync(DOC.read_text())
    DOC.write_text(new)
    for m in missing:
        print("not found:", m, file=sys.stderr)
    sys.exit(1 if missing else 0)
