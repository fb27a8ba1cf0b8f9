"""The intervention routes through HTTP: each answers what its tested function in
explorer/views/experiments/<view>/compute.py answers, the two sweeps stream progress lines then the answer and stop
server-side when cancelled, and bad input gets one clear 4xx that names what is allowed (never the input echoed back).
Tiny random decoder ("path", characters)."""

from __future__ import annotations

import pytest
import torch
from cancelling import hold_until_cancelled, post_then_cancel
from rounded import ndjson_lines, same

from attnlab.explorer import api as ex
from attnlab.explorer.views.experiments import requests as routes_experiments
from attnlab.explorer.views.experiments.sweeps import compute as sweeps


def test_ablation_lens_and_attention_routes_equal_their_functions(client):
    lm = client.registry.get("path")
    r = client.post("/api/experiments/ablation", json={"model": "path", "text": "the cat", "heads": [[1, 2], [0, 0]],
                                                       "mode": "mean"})
    assert r.status_code == 200 and same(r.json(), ex.ablation(lm, "the cat", [[1, 2], [0, 0]], mode="mean"))
    r = client.post("/api/experiments/logit-lens", json={"model": "path", "text": "the cat", "position": 3})
    assert r.status_code == 200 and same(r.json(), ex.logit_lens_top(lm, "the cat", position=3))
    r = client.post("/api/experiments/attention-ablation", json={"model": "path", "text": "the cat", "layer": 1,
                                                                 "head": 3})
    assert r.status_code == 200 and same(r.json(), ex.attention_vs_ablation(lm, "the cat", 1, 3))


def test_sweeps_stream_progress_then_the_functions_answer(client):
    lm = client.registry.get("path")
    lines = ndjson_lines(client.post("/api/experiments/head-sweep", json={"model": "path", "text": "a dog ran",
                                                                     "job": "t-sweep"}))
    assert same(lines[-1]["result"], ex.head_sweep_grid(lm, "a dog ran"))
    progress = [line["progress"] for line in lines[:-1]]
    assert progress == sorted(progress) and progress[-1] == lines[0]["total"] == 8  # 2 layers x 4 heads
    lines = ndjson_lines(client.post("/api/experiments/patch", json={"model": "path", "clean": "the cat",
                                                                "corrupted": "the dog", "site": "resid_post"}))
    want = ex.residual_patch_grid(lm, "the cat", "the dog", site="resid_post")
    assert same(lines[-1]["result"], want) and lines[-2]["progress"] == lines[-2]["total"] == 2 * 7
    assert not want["cancelled"]


def test_cancel_stops_the_sweep_on_the_server(client, monkeypatch):
    """The sweep's first batch waits until the cancel arrives: the answer then holds that batch's cells only, and
    the server ran one batched forward of the three (batch_size 3, 8 heads)."""
    real = ex.head_sweep_grid
    ran = {}

    def held(lm, text, *, progress, cancelled, **kw):
        def first_then_wait(done, total):
            progress(done, total)
            hold_until_cancelled(cancelled, ran)
            ran["batches"] = ran.get("batches", 0) + 1

        return real(lm, text, batch_size=3, progress=first_then_wait, cancelled=cancelled, **kw)

    monkeypatch.setattr(sweeps, "head_sweep_grid", held)  # the function the sweep route calls
    body = {"model": "path", "text": "a dog ran", "job": "t-cancel"}
    answer, response = post_then_cancel(client, "/api/experiments/head-sweep", body, ran)
    assert answer == {"job": "t-cancel", "cancelled": True}
    result = ndjson_lines(response)[-1]["result"]
    assert result["cancelled"] and ran["batches"] == 1
    cells = [v for row in result["grid"] for v in row]
    assert sum(v is None for v in cells) == 5  # 3 of 8 heads ran before the cancel
    full = real(client.registry.get("path"), "a dog ran")["grid"]
    assert same(result["grid"][0][:3], full[0][:3])  # a batch of 3 against one of 8: equal to the rounding step
    gone = client.post("/api/experiments/cancel", json={"job": "t-cancel"}).json()
    assert gone["cancelled"] is False  # finished jobs are forgotten


def test_bad_input_is_one_clear_4xx_that_names_what_is_allowed(client):
    def detail(path, body, status):
        r = client.post(path, json=body)
        assert r.status_code == status, r.text
        return r.json()["detail"]

    assert "models offered: toy, path" in detail("/api/experiments/ablation", {"model": "nope", "text": "a",
                                                                    "heads": [[0, 0]]}, 404)
    assert "heads 0..3" in detail("/api/experiments/ablation", {"model": "path", "text": "ab", "heads": [[0, 9]]}, 422)
    assert "layer 5 does not exist" in detail("/api/experiments/attention-ablation",
                                              {"model": "path", "text": "ab", "layer": 5}, 422)
    assert "position 7 does not exist" in detail("/api/experiments/logit-lens",
                                                 {"model": "path", "text": "ab", "position": 7}, 422)
    long = "x" * 100
    msg = detail("/api/experiments/logit-lens", {"model": "path", "text": long}, 400)
    assert f"at most {routes_experiments.MAX_EXPERIMENT_TOKENS}" in msg and long not in msg
    msg = detail("/api/experiments/logit-lens", {"model": "path", "text": "y" * 5000}, 422)
    assert "1000 characters" in msg and "yyyy" not in msg
    assert "same number of tokens" in detail("/api/experiments/patch", {"model": "path", "clean": "the cat",
                                                                         "corrupted": "the dogs"}, 400)
    assert "mode" in detail("/api/experiments/head-sweep", {"model": "path", "text": "ab", "mode": "half"}, 422)
    assert "job" in detail("/api/experiments/cancel", {"job": "../x"}, 422)
    assert "heads" in detail("/api/experiments/ablation", {"model": "path", "text": "ab", "heads": []}, 422)


def test_the_lens_at_one_position_equals_the_librarys_full_logit_lens(client):
    """explorer/views/experiments/lens/compute.py reads the lens at the chosen position only (a speed-up);
    attnlab.logit_lens, the tested library function, computes every position: their top-5 agree, probabilities to
    float32 rounding."""
    import attnlab

    lm = client.registry.get("path")
    ids = torch.tensor([[ord(c) for c in "the cat sat"]])
    full = attnlab.logit_lens(lm.model, ids)[:, 0].exp()  # (layers + 1, seq, vocab)
    for position in (0, 5, 10):
        rows = ex.logit_lens_top(lm, "the cat sat", position=position)["rows"]
        want = full[:, position].topk(5)
        assert [[c["id"] for c in r["top"]] for r in rows] == want.indices.tolist()
        assert [c["prob"] for r in rows for c in r["top"]] == pytest.approx(want.values.flatten().tolist(), abs=1e-6)
