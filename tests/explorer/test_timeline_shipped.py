"""The training timeline on first launch: the bundled gpt-char ships its recipe's probe (small, gzipped), a plain
registry serves its timeline, and previous-token and induction heads are found on constructed patterns."""

import random

import pytest
from fastapi.testclient import TestClient

from attnlab.explorer.server.app import create_app
from attnlab.explorer.server.registry import build_registry
from attnlab.explorer.views.experiments.timeline import compute as timeline


def _pattern(n: int, look) -> list[list[float]]:
    """An (n, n) causal attention map where row i puts 0.9 on look(i) (when it is a key before i) and spreads the
    rest evenly over its keys."""
    rows = []
    for i in range(n):
        target = look(i)
        row = [0.0] * n
        if target is not None and 0 <= target <= i:
            row[target] = 0.9
            for j in range(i + 1):
                row[j] += 0.1 / (i + 1)
        else:
            for j in range(i + 1):
                row[j] = 1.0 / (i + 1)
        rows.append(row)
    return rows


def test_previous_token_and_induction_heads_are_told_apart_on_a_repeated_random_sequence():
    rng = random.Random(0)
    half = [f"t{i}" for i in rng.sample(range(100), 12)]
    tokens = ["<s>", *half, *half]  # a repeated random sequence after one start token
    copy = timeline.repeated_copy(tokens)
    assert copy == (1, 13, 12)
    n, m = len(tokens), len(half)
    previous = _pattern(n, lambda i: i - 1 if i else None)
    induction = _pattern(n, lambda i: i - m + 1 if i >= 1 + m else None)  # the token after the earlier copy
    even = _pattern(n, lambda i: None)
    assert timeline.previous_token_score(previous) > 0.9 and timeline.induction_score(previous, copy) < 0.1
    assert timeline.induction_score(induction, copy) > 0.9 and timeline.previous_token_score(induction) < 0.1
    assert timeline.induction_score(even, copy) < 0.1 and timeline.previous_token_score(even) < 0.2


def test_a_head_forms_at_the_first_step_from_which_it_stays_above_the_threshold():
    steps = [1, 50, 100, 150, 200]
    assert timeline.formed_at(steps, [0.1, 0.35, 0.2, 0.31, 0.5]) == 150  # a blip at 50 is not forming
    assert timeline.formed_at(steps, [0.1, 0.2, 0.2, 0.2, 0.29]) is None
    assert timeline.formed_at(steps, [0.3, 0.3, 0.3, 0.3, 0.3]) == 1
    scores = [[[0.1, 0.4, 0.5], [0.1, 0.1, 0.1]], [[0.0, 0.0, 0.6], [0.2, 0.2, 0.2]]]  # (layers, heads, steps)
    assert timeline.formations([1, 2, 3], scores) == [{"layer": 0, "head": 0, "step": 2, "score": 0.5},
                                                      {"layer": 1, "head": 0, "step": 3, "score": 0.6}]
    assert timeline.repeated_copy(list("abcdefg")) is None


def test_the_shipped_gpt_char_has_a_small_probe_and_a_plain_registry_serves_its_timeline():
    registry = build_registry(pretrained=False)
    path = timeline.probe_path(registry.entry("gpt-char"))
    assert path is not None and path.name == timeline.SHIPPED_PROBE and path.stat().st_size < 200_000
    assert [r["id"] for r in timeline.runs(list(registry.entries.values()))] == ["gpt-char"]
    with TestClient(create_app(registry), base_url="http://localhost") as c:
        data = c.get("/api/experiments/timeline/gpt-char").json()
        assert data["shipped"] and data["n_layers"] == 4 and data["n_heads"] == 4 and data["steps"][-1] == 2000
        assert len(data["steps"]) == 20 and data["tokens"] == list("the cat sat on the mat. the cat sat")
        assert data["repeat"] == {"first": 0, "second": 24, "length": 11}
        # the recipe's run forms previous-token heads in the first layer; no induction head in 2,000 steps
        formed = data["formed"]["previous_token"]
        assert formed and all(f["layer"] == 0 for f in formed) and formed[0]["step"] <= 500
        assert data["formed"]["induction"] == []
        assert max(max(s) for row in data["induction"] for s in row) < data["formed_threshold"]
        assert (data["layer"], data["head"]) == (formed[0]["layer"], formed[0]["head"])  # the page starts there
        other = c.get("/api/experiments/timeline/gpt-char?layer=3&head=1").json()
        assert len(other["weights"]) == 20 and len(other["weights"][0]) == 35


def test_a_damaged_shipped_probe_is_one_clear_error(tmp_path, monkeypatch):
    folder = tmp_path / "gpt-char"
    folder.mkdir()
    (folder / timeline.SHIPPED_PROBE).write_bytes(b"not gzip at all")
    entry = build_registry(pretrained=False).entry("gpt-char")
    monkeypatch.setattr(entry, "source", folder)
    with pytest.raises(Exception, match="training probe of model 'gpt-char' cannot be read"):
        timeline.timeline(entry)
