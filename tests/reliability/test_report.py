"""docs/reliability.md's case-count table is what tests/reliability/report.py computes from the tests' definitions,
and every target a test tallies has a row there (so a new fuzz target cannot be left off the page)."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _report():
    spec = importlib.util.spec_from_file_location("reliability_report", HERE / "report.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_page_table_is_what_the_report_computes():
    report = _report()
    assert report.page_table() == report.table(), "run: python -m tests.reliability.report --write"


def test_every_tallied_target_has_a_row():
    tallied = set()
    for path in sorted(HERE.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "tally" and node.args
                    and isinstance(node.args[0], ast.Constant)):
                tallied.add(node.args[0].value)
    rows = {t.tally for t in _report().TARGETS}
    assert tallied, "no tally(...) calls found"
    assert tallied <= rows, f"targets tallied by the tests but missing from report.TARGETS: {sorted(tallied - rows)}"
