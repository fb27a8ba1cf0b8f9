"""Patching by component and direct logit attribution through HTTP (explorer/views/experiments/components/compute.py,
routes_components.py), and the logit lens's answer track. Tiny random decoder ("path", characters).

- the component route streams progress over all three grids, then the function's answer; grids have the
  shapes the page draws (attn, mlp: layers x positions; head: layers x heads);
- one cell per mode, written out here as a plain edit of the clean run (zero, the sentence's mean, the
  corrupted sentence's value) and the logit difference read from the model: the grid's cell equals it;
- the DLA route's parts add up to the model's logit difference (the sum check the page shows);
- the lens answers the answer's rank and probability after every layer, its last row the model's own;
- bad input: one clear 4xx naming what is allowed.
"""

from __future__ import annotations

import json

import pytest
import torch
from rounded import ndjson_lines, same

import attnlab
from attnlab.explorer.views.experiments.components import compute as components

CLEAN, CORRUPTED = "the cat sat", "the dog sat"


def _ids(text: str) -> torch.Tensor:
    return torch.tensor([[ord(c) for c in text]])


def test_component_route_streams_every_grid_then_the_functions_answer(client):
    lm = client.registry.get("path")
    body = {"model": "path", "clean": CLEAN, "corrupted": CORRUPTED, "mode": "resample", "method": "exact"}
    lines = ndjson_lines(client.post("/api/experiments/components", json=body))
    result = lines[-1]["result"]
    want = components.component_grid(lm, CLEAN, CORRUPTED, mode="resample", method="exact")
    assert same(result, want) and not result["cancelled"]
    layers, heads, seq = 2, 4, len(CLEAN)
    assert lines[-2]["progress"] == lines[-2]["total"] == 2 * layers * seq + layers * heads
    grids = result["grids"]
    assert [len(grids["attn"]), len(grids["attn"][0])] == [layers, seq] == [len(grids["mlp"]), len(grids["mlp"][0])]
    assert [len(grids["head"]), len(grids["head"][0])] == [layers, heads]
    assert result["answer"]["id"] != result["contrast"]["id"]
    assert "corrupted sentence" in result["mode_text"]


def _logit_diff(model, ids, answer, contrast, edits=None) -> float:
    with torch.no_grad(), attnlab.intervene(model, edits or {}):
        logits = model(ids).logits[0, -1].double()
    return float(logits[answer] - logits[contrast])


@pytest.mark.parametrize("mode", ["zero", "mean", "resample"])
def test_each_mode_equals_the_same_replacement_written_out(client, mode):
    """Cell attn[0][4] (block 0's attention at position 4: all its heads' z there), mlp[1][10] and head[1][2]
    (block 1's head 2 at every position), each against a plain edit of the clean run."""
    lm = client.registry.get("path")
    model, clean, corrupted = lm.model, _ids(CLEAN), _ids(CORRUPTED)
    r = client.post("/api/experiments/logit-attribution", json={"model": "path", "text": CLEAN}).json()
    answer, contrast = r["answer"]["id"], r["contrast"]["id"]
    got = components.component_grid(lm, CLEAN, CORRUPTED, mode=mode, method="exact", target=answer,
                                     contrast=contrast)["grids"]
    names = ["blocks.0.attn.z", "blocks.1.ffn.hidden", "blocks.1.attn.z"]
    with torch.no_grad():
        own = attnlab.record(model, clean, names=names)
        other = attnlab.record(model, corrupted, names=names)

    def replacement(name: str) -> torch.Tensor:  # what a replaced value becomes, at every position
        value = own[name]
        return {"zero": torch.zeros_like(value), "mean": value.mean(dim=1, keepdim=True).expand_as(value),
                "resample": other[name]}[mode]

    def at(name: str, position, head=None):
        def edit(tensor, _name):
            out = tensor.clone()
            index = (slice(None), position) if head is None else (slice(None), slice(None), head)
            out[index] = replacement(name)[index]
            return out
        return {name: edit}

    base = _logit_diff(model, clean, answer, contrast)
    for grid, (layer, x), edits in [("attn", (0, 4), at(names[0], 4)), ("mlp", (1, 10), at(names[1], 10)),
                                    ("head", (1, 2), at(names[2], slice(None), head=2))]:
        want = _logit_diff(model, clean, answer, contrast, edits) - base
        assert got[grid][layer][x] == pytest.approx(want, abs=2e-5), (grid, mode)
        assert abs(want) > 1e-5  # the cell is not trivially zero


def test_attribution_is_the_first_answer_in_the_same_shapes(client):
    body = {"model": "path", "clean": CLEAN, "corrupted": CORRUPTED, "grids": ["head", "mlp"]}
    result = ndjson_lines(client.post("/api/experiments/components", json=body))[-1]["result"]
    assert result["method"] == "attribution" and set(result["grids"]) == {"head", "mlp"}
    assert len(result["grids"]["head"]) == 2 and len(result["grids"]["mlp"][0]) == len(CLEAN)


def test_logit_attribution_route_sums_to_the_models_logit_difference(client):
    lm = client.registry.get("path")
    r = client.post("/api/experiments/logit-attribution", json={"model": "path", "text": CLEAN})
    assert r.status_code == 200, r.text
    d = r.json()
    assert len(d["grid"]) == 2 and len(d["grid"][0]) == 4 and len(d["mlp"]) == len(d["attn_bias"]) == 2
    parts = sum(map(sum, d["grid"])) + sum(d["mlp"]) + sum(d["attn_bias"]) + d["embed"] + d["constant"]
    model_diff = _logit_diff(lm.model, _ids(CLEAN), d["answer"]["id"], d["contrast"]["id"])
    assert parts == pytest.approx(model_diff, abs=2e-5) and d["total"] == pytest.approx(model_diff, abs=2e-6)
    assert d["logit_diff"] == pytest.approx(model_diff, abs=2e-6)
    assert d["answer"]["id"] == d["top"][0]["id"] and d["contrast"]["id"] == d["top"][1]["id"]


def test_lens_tracks_the_answers_rank_and_probability(client):
    r = client.post("/api/experiments/logit-lens", json={"model": "path", "text": CLEAN}).json()
    answer = r["answer"]
    assert len(answer["rank"]) == len(answer["prob"]) == len(r["rows"]) == 3
    assert answer["rank"][-1] == 1 and answer["id"] == r["rows"][-1]["top"][0]["id"]
    for row, rank, prob in zip(r["rows"], answer["rank"], answer["prob"], strict=True):
        ids = [t["id"] for t in row["top"]]
        if answer["id"] in ids:  # where it is in the top 5, rank and probability agree with that list
            assert rank == ids.index(answer["id"]) + 1 and prob == row["top"][rank - 1]["prob"]
        else:
            assert rank > len(ids) and prob <= row["top"][-1]["prob"]
    other = r["rows"][0]["top"][3]["id"]
    r2 = client.post("/api/experiments/logit-lens", json={"model": "path", "text": CLEAN, "target": other}).json()
    assert r2["answer"]["id"] == other and r2["answer"]["rank"][0] == 4


def test_bad_input_is_one_clear_4xx(client):
    def detail(path, body, status):
        r = client.post(path, json=body)
        assert r.status_code == status, r.text
        return json.dumps(r.json()["detail"])

    base = {"model": "path", "clean": CLEAN, "corrupted": CORRUPTED}
    assert "unknown field" in detail("/api/experiments/components", {**base, "sentence": "x"}, 422)
    assert "resample" in detail("/api/experiments/components", {**base, "corrupted": None}, 400)
    assert "same number of tokens" in detail("/api/experiments/components", {**base, "corrupted": "a dog"}, 400)
    assert "mode" in detail("/api/experiments/components", {**base, "mode": "half"}, 422)
    assert "always 0" in detail("/api/experiments/logit-attribution", {"model": "path", "text": CLEAN,
                                                                        "target": 7, "contrast": 7}, 400)
    assert "0..255" in detail("/api/experiments/logit-attribution", {"model": "path", "text": CLEAN,
                                                                      "contrast": 300}, 422)
