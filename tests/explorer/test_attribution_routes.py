"""The estimate-first sweeps through HTTP (explorer/views/experiments/attribution/routes.py): the whole grid arrives
first, marked as an estimate; the exact values of the chosen cells then stream in and equal the library's exact sweeps;
cancel stops the work on the server. Tiny random decoder ("path", characters: 2 layers x 4 heads)."""

from __future__ import annotations

import math

import pytest
import torch
from cancelling import hold_until_cancelled, post_then_cancel
from rounded import ndjson_lines

import attnlab
from attnlab.explorer.views.experiments.attribution import compute as attribution_grid
from attnlab.explorer.views.experiments.pairs import prepare
from attnlab.interventions import head_sweep

TOL = 2e-6  # float32 logits of one forward against another batch composition, rounded to 6 decimals by the API


def test_head_grid_comes_first_marked_as_an_estimate_then_exact_cells_equal_the_sweep(client):
    torch.manual_seed(0)
    lines = ndjson_lines(client.post("/api/experiments/head-attribution", json={"model": "path", "text": "a dog ran",
                                                                           "top": 3, "extra": 2}))
    first, result = lines[0]["estimate"], lines[-1]["result"]
    assert first["kind"] == "estimate" and "first-order" in first["method"]
    assert (first["layers"], first["heads"]) == (2, 4)
    assert len(first["grid"]) == 2 and all(len(row) == 4 for row in first["grid"])
    assert len(first["cells"]) == 5 and len({tuple(c) for c in first["cells"]}) == 5
    streamed = [cell for line in lines[1:-1] for cell in line["exact"]]
    assert len(streamed) == 5 and lines[-2]["done"] == lines[-2]["total"] == 5
    assert result["exact"] == streamed and not result["cancelled"] and result["kind"] == "estimate+exact"
    lm = client.registry.get("path")
    ids, _, position, _ = prepare(lm, "a dog ran", None)
    exact = head_sweep(lm.model, ids, first["target"]["id"], position=position)  # the library's full sweep
    for layer, head, value, estimate in streamed:
        assert abs(value - float(exact[layer, head])) <= TOL
        assert estimate == first["grid"][layer][head]
    top = sorted(((abs(v), (i, j)) for i, row in enumerate(first["grid"]) for j, v in enumerate(row)),
                 reverse=True)[:3]
    assert [tuple(c) for c in first["cells"][:3]] == [cell for _, cell in top]  # largest |estimate| first


def test_patch_grid_estimate_then_exact_cells_equal_exact_patch(client):
    lm = client.registry.get("path")
    body = {"model": "path", "clean": "the cat", "corrupted": "the dog", "top": 6, "extra": 2}
    lines = ndjson_lines(client.post("/api/experiments/patch-attribution", json=body))
    first, result = lines[0]["estimate"], lines[-1]["result"]
    assert first["kind"] == "estimate" and (first["layers"], first["positions"]) == (2, 7)
    assert len(first["grid"]) == 2 and all(len(row) == 7 for row in first["grid"])
    clean_ids, _, position, _ = prepare(lm, "the cat", None)
    corrupted_ids, _, _, _ = prepare(lm, "the dog", None)
    t = first["target"]["id"]
    want_est = attnlab.attribution_patch(lm.model, clean_ids, corrupted_ids, t, position=position,
                                         grids=["resid_pre"])["resid_pre"]
    want = attnlab.exact_patch(lm.model, clean_ids, corrupted_ids, t, position=position,
                               grids=["resid_pre"])["resid_pre"]
    assert torch.allclose(torch.tensor(first["grid"]), want_est, atol=TOL)
    assert len(result["exact"]) == 8
    for layer, p, value, _ in result["exact"]:
        assert abs(value - float(want[layer, p])) <= TOL
    gap = first["target"]["logprob_gap"]
    assert math.isclose(gap, math.log(first["target"]["prob_clean"] / first["target"]["prob_corrupted"]),
                        abs_tol=1e-4)


def test_agreement_summary_names_disagreeing_cells_and_rank_correlation():
    assert attribution_grid.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert attribution_grid.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert attribution_grid.spearman([1, 2], [1, 2]) is None
    assert attribution_grid.disagrees(1.0, 0.2, 1.0) and not attribution_grid.disagrees(1.0, 0.9, 1.0)
    assert not attribution_grid.disagrees(0.01, 0.0, 1.0)  # tiny cells: noise, not a disagreement
    est = torch.tensor([[0.1, -3.0], [2.0, 0.0]])
    assert attribution_grid.pick_cells(est, 2, 0) == [(0, 1), (1, 0)]
    assert len(set(attribution_grid.pick_cells(est, 2, 5))) == 4  # the extras never repeat a top cell


def test_cancel_stops_the_exact_cells_on_the_server(client, monkeypatch):
    """The first exact batch waits for the cancel: the answer then holds that batch only and says cancelled."""
    real = attribution_grid._stream_exact
    ran = {"batches": 0}

    def held(cells, estimate, run_layer, emit, cancelled):
        def run_then_wait(layer, xs):
            out = run_layer(layer, xs)
            ran["batches"] += 1
            hold_until_cancelled(cancelled, ran)
            return out

        return real(cells, estimate, run_then_wait, emit, cancelled)

    monkeypatch.setattr(attribution_grid, "_stream_exact", held)
    body = {"model": "path", "text": "a dog ran", "top": 8, "extra": 0, "job": "t-attr-cancel"}
    answer, response = post_then_cancel(client, "/api/experiments/head-attribution", body, ran)
    assert answer == {"job": "t-attr-cancel", "cancelled": True}
    result = ndjson_lines(response)[-1]["result"]
    assert result["cancelled"] and ran["batches"] == 1  # 2 layers hold the 8 heads: one of the 2 forwards ran
    assert 0 < result["checked"] < result["total"] == 8


def test_bad_input_is_a_422_naming_the_field(client):
    r = client.post("/api/experiments/head-attribution", json={"model": "path", "text": "ab", "top": 999})
    assert r.status_code == 422 and "top" in r.text
    r = client.post("/api/experiments/patch-attribution", json={"model": "path", "clean": "ab",
                                                                "corrupted": "ab", "topp": 3})
    assert r.status_code == 422 and "topp" in r.text
    r = client.post("/api/experiments/patch-attribution", json={"model": "path", "clean": "ab",
                                                                "corrupted": "abc"})
    assert r.status_code in (400, 422) and "same number of tokens" in r.json()["detail"], r.text


def test_an_mlm_gets_both_stages_with_exact_cells_equal_to_the_library(tiny_paths):
    """An encoder with a masked-word head (no causal cut: every position is a cell), mean ablation."""
    import importlib.util
    from pathlib import Path

    from attnlab.explorer.server.common import wrap

    spec = importlib.util.spec_from_file_location("tiny_models_attr", Path(__file__).with_name("tiny_models.py"))
    tiny = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiny)
    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.presets["tiny-encoder"].replace(
        vocab_size=len(tiny.WORDS) + 5, d_model=32, d_ff=64, pad_token_id=0)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    lm = wrap(model, tiny.bert_tokenizer(), model_id="mlm")
    lines = []
    out = attribution_grid.heads(lm, "the cat sat on the mat", position=3, mode="mean", top=4, extra=2,
                                 emit=lines.append)
    assert lines[0]["estimate"]["kind"] == "estimate" and len(out["exact"]) == 6
    ids, _, position, _ = prepare(lm, "the cat sat on the mat", 3)
    want = head_sweep(model, ids, out["target"]["id"], position=position, mode="mean", reference=ids)
    for layer, head, value, _ in out["exact"]:
        assert abs(value - float(want[layer, head])) <= TOL
    out = attribution_grid.patching(lm, "the cat sat on the mat", "the dog sat on the mat", position=3, top=6,
                                    extra=0, emit=lines.append)
    clean_ids, _, _, _ = prepare(lm, "the cat sat on the mat", 3)
    corrupted_ids, _, _, _ = prepare(lm, "the dog sat on the mat", 3)
    exact = attnlab.exact_patch(model, clean_ids, corrupted_ids, out["target"]["id"], position=3,
                                grids=["resid_pre"])["resid_pre"]
    assert len(out["exact"]) == 6
    for layer, p, value, _ in out["exact"]:
        assert abs(value - float(exact[layer, p])) <= TOL
