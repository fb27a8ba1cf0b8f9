"""Reliability tests: make the shared `_cases` helper importable and report how many cases were generated.

Set ATTNLAB_CASE_COUNTS=path.json to also write the tally as JSON (docs/reliability.md quotes it).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import _cases  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread_per_module):
    """Every reliability file runs on one torch thread (tests/conftest.py says why)."""


def pytest_terminal_summary(terminalreporter):
    if not _cases.CASES:
        return
    targets: dict[str, dict[str, int]] = {}
    for (target, outcome), n in sorted(_cases.CASES.items()):
        targets.setdefault(target, {})[outcome] = n
    terminalreporter.section("generated cases per target (hypothesis)")
    for target, outcomes in targets.items():
        total = sum(outcomes.values())
        detail = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        terminalreporter.write_line(f"{target:<40} {total:>5}  ({detail})")
    out = os.environ.get("ATTNLAB_CASE_COUNTS")
    if out:
        Path(out).write_text(json.dumps(targets, indent=2, sort_keys=True) + "\n")
