"""Comparing the explorer's JSON answers: numbers travel rounded, so two honest computations of one number (another
thread count, another batch composition, a loaded machine) may differ by one step of that rounding."""

from __future__ import annotations

import json


def rounding_step(x: float) -> float:
    """The step of the rounding a number travelled with, read from its shortest repr: 0.12345 -> 1e-5,
    1.5e-07 -> 1e-8, 3.0 -> 1. Trailing zeros make it read coarser than the API's rounding, never finer."""
    text = repr(float(x)).lower()
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.split(".")[1].rstrip("0")) if "." in mantissa else 0
    return 10.0 ** (int(exponent or 0) - decimals)


def same(a, b) -> bool:
    """Nested dicts and lists equal; numbers within ONE step of the rounding they travel with (the API rounds
    to 6 decimals, Q and K to 5, embeddings to 4, thumbnails to 3, statistics to 7 significant digits): float32
    rounding that lands either side of a rounding boundary moves a number by one step, whatever that step is.
    (A fixed 2e-6 failed on a loaded machine where a 5-decimal value moved by 1e-5.)"""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        step = max(rounding_step(a), rounding_step(b))
        return abs(a - b) <= step * (1 + 1e-9)  # + the float error of the subtraction itself
    return a == b


def ndjson_lines(response) -> list[dict]:
    """A streamed answer's lines (application/x-ndjson), each parsed, after checking it is one."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]
