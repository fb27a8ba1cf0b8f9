"""Shared hypothesis settings and a tally of generated cases per target, for docs/reliability.md.

Every property test here runs derandomized (the same examples on every machine and run), without a deadline
(the CI machine is shared and slow) and without the example database (nothing written into the repository).
Each test calls `tally(target, outcome)` once per generated case; conftest.py prints the tally at the end.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, settings

SETTINGS = settings(derandomize=True, deadline=None, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much,
                                           HealthCheck.function_scoped_fixture])

CASES: Counter[tuple[str, str]] = Counter()  # (target, outcome) -> generated cases


def tally(target: str, outcome: str) -> None:
    """Count one generated case for `target`; outcome is 'refused' (an attnlab error) or 'ok' (checked result)."""
    CASES[(target, outcome)] += 1


def cases(max_examples: int) -> settings:
    return settings(SETTINGS, max_examples=max_examples)
