""""Did you mean ...?" for a mistyped name (a recipe, a key, a model, a benchmark): the closest allowed names,
found by difflib's similarity ratio, so an error can say what the person probably meant besides what exists."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Up to n allowed names most similar to `word` (difflib ratio >= 0.6, case-insensitive), best first."""
    choices = list(choices)
    lowered = {c.lower(): c for c in choices}
    found = difflib.get_close_matches(str(word).lower(), list(lowered), n=n, cutoff=0.6)
    return [lowered[f] for f in found]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean 'forward'?)' when a close name exists, '' otherwise: appended to an error naming `word`."""
    found = closest(word, choices)
    if not found:
        return ""
    return f" (did you mean {' or '.join(repr(f) for f in found)}?)"
