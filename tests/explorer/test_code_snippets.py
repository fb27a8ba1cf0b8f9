""""Show the code": every view's snippet, run as the learner would copy it, gives the numbers its route answered
for the same request (gpt-char as shipped, the hand-set toy, a tiny random encoder for the sentence view)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import torch

from attnlab.explorer.views.experiments.code.compute import SNIPPETS

GPT = "gpt-char"


@pytest.fixture(scope="module")
def client(shipped_client):
    return shipped_client  # gpt-char as shipped, the toy and the tiny encoder (conftest.py)


def _answer(client, path: str, body: dict) -> dict:
    r = client.post(path, json=body)
    assert r.status_code == 200, r.text
    if r.headers["content-type"].startswith("application/x-ndjson"):
        lines = [json.loads(line) for line in r.text.splitlines() if line.strip()]
        return {**lines[-1]["result"], "lines": lines}
    return r.json()


def _run(client, path: str, body: dict) -> dict:
    """The snippet for (path, body), executed as it reads; -> its variables."""
    r = client.post("/api/experiments/code", json={"path": path, "body": body})
    assert r.status_code == 200, r.text
    code = r.json()["code"]
    if body.get("model") == "path":  # a command-line folder is loaded by its name: here, by its full path
        code = code.replace("attnlab.load('encoder')", f"attnlab.load({str(client.paths['encoder'])!r})")
    scope: dict = {}
    torch.manual_seed(0)
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(code, f"<snippet {path}>", "exec"), scope)  # noqa: S102 (the snippet under test)
    assert out.getvalue().strip(), "a snippet prints its numbers"
    return scope


def _close(a, b, tol):
    assert torch.allclose(torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64),
                          atol=tol, rtol=0), (a, b)


def test_ablation_and_lens_snippets_give_the_views_numbers(client):
    body = {"model": GPT, "text": "def f(x, y", "heads": [[0, 2], [3, 1]], "mode": "mean"}
    want, got = _answer(client, "/api/experiments/ablation", body), _run(client, "/api/experiments/ablation", body)
    _close([got["p_before"], got["p_after"]], [want["target"]["prob_before"], want["target"]["prob_after"]], 2e-6)
    assert got["target"] == want["target"]["id"]
    body = {"model": GPT, "text": "def f(x, y", "position": 6, "k": 3}
    want, got = _answer(client, "/api/experiments/logit-lens", body), _run(client, "/api/experiments/logit-lens", body)
    assert got["top"].indices.tolist() == [[c["id"] for c in row["top"]] for row in want["rows"]]
    _close(got["top"].values.exp(), [[c["prob"] for c in row["top"]] for row in want["rows"]], 2e-6)


def test_sweep_and_patch_snippets_give_the_grids(client):
    body = {"model": GPT, "text": "def f(x, y"}
    want, got = _answer(client, "/api/experiments/head-sweep", body), _run(client, "/api/experiments/head-sweep", body)
    _close(got["drops"], want["grid"], 1e-5)
    body = {"model": GPT, "clean": "def f(x, y", "corrupted": "def f[x, y", "site": "resid_post"}
    want, got = _answer(client, "/api/experiments/patch", body), _run(client, "/api/experiments/patch", body)
    _close(got["grid"], want["grid"], 1e-5)
    body = {"model": GPT, "clean": "def f(x, y", "corrupted": "def f[x, y", "top": 5, "extra": 0}
    want = _answer(client, "/api/experiments/patch-attribution", body)
    got = _run(client, "/api/experiments/patch-attribution", body)
    _close(got["estimate"], want["lines"][0]["estimate"]["grid"], 1e-5)
    for layer, p, exact, _ in want["exact"]:
        _close(got["exact"][layer, p], exact, 1e-5)


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_head_estimate_snippet_prints_the_estimate_the_grid_draws(client, mode):
    """The first grid of "Which heads matter" is attribution patching's estimate: its snippet computes that
    estimate (not the exact sweep) and checks the same heads exactly. float32 forward and backward, the products
    summed in float64 on both sides: 1e-5 nats."""
    body = {"model": GPT, "text": "def f(x, y", "top": 4, "extra": 0, "mode": mode}
    want = _answer(client, "/api/experiments/head-attribution", body)
    got = _run(client, "/api/experiments/head-attribution", body)
    _close(got["estimate"], want["lines"][0]["estimate"]["grid"], 1e-5)
    assert sorted(got["exact"]) == sorted((layer, head) for layer, head, _, _ in want["exact"])
    for layer, head, exact, _ in want["exact"]:
        _close(got["exact"][layer, head], exact, 1e-5)


def test_attention_flow_and_meanings_snippets_give_the_views_numbers(client):
    body = {"model": GPT, "text": "def f(x, y", "layer": 1, "head": 2, "position": 7}
    want = _answer(client, "/api/experiments/attention-ablation", body)
    got = _run(client, "/api/experiments/attention-ablation", body)
    _close(got["weights"], [row["weight"] for row in want["rows"]], 2e-6)
    _close(got["effects"], [row["effect"] for row in want["rows"][:8]], 1e-5)
    body = {"model": GPT, "text": "import os", "layer": 2, "token": 4}
    want, got = _answer(client, "/api/experiments/flow", body), _run(client, "/api/experiments/flow", body)
    _close(got["weights"], want["weights"], 1e-4)
    _close(got["shares"].norm(dim=-1), want["contribution_norm"], 1e-4)
    body = {"model": GPT, "text": "e", "k": 6}
    want, got = _answer(client, "/api/experiments/neighbours", body), _run(client, "/api/experiments/neighbours", body)
    assert got["nearest"].tolist() == [n["id"] for n in want["nearest"]]
    body = {"model": "path", "sentences": ["the cat sat", "a dog ran", "the cat ran"]}
    want, got = _answer(client, "/api/experiments/sentences", body), _run(client, "/api/experiments/sentences", body)
    _close(got["cosine"], want["cosine"], 1e-4)


@pytest.mark.parametrize("mode, method", [("resample", "attribution"), ("zero", "exact"), ("mean", "attribution")])
def test_component_snippets_give_the_views_grids(client, mode, method):
    body = {"model": GPT, "clean": "def f(x, y", "corrupted": "def f[x, y", "mode": mode, "method": method,
            "grids": ["attn", "head"]}
    want = _answer(client, "/api/experiments/components", body)
    got = _run(client, "/api/experiments/components", body)
    assert (got["answer"], got["contrast"]) == (want["answer"]["id"], want["contrast"]["id"])
    for grid, cells in want["grids"].items():
        for i, row in enumerate(cells):
            for j, value in enumerate(row):
                if value is not None:  # null: after the read position (not run)
                    _close(got["effects"][grid][i, j], value, 1e-5)
                    _close(got["contributions"][grid][i, j], -value, 1e-5)  # what the page draws


def test_logit_attribution_snippet_gives_the_views_grid(client):
    body = {"model": GPT, "text": "def f(x, y"}
    want = _answer(client, "/api/experiments/logit-attribution", body)
    got = _run(client, "/api/experiments/logit-attribution", body)
    assert (got["answer"], got["contrast"]) == (want["answer"]["id"], want["contrast"]["id"])
    _close(got["dla"]["heads"], want["grid"], 1e-5)
    _close(got["dla"]["mlp"], want["mlp"], 1e-5)
    _close(float(got["dla"]["total"]), want["total"], 1e-5)


def test_toy_snippet_gives_the_toys_scores(client):
    weights = client.get("/api/experiments/toy/1").json()
    body = {"text": "the cat sat on the mat", "w_q": weights["w_q"], "w_k": weights["w_k"], "query": 2}
    body["w_q"][0][1] = 2.5  # an edited cell
    want, got = _answer(client, "/api/experiments/toy", body), _run(client, "/api/experiments/toy", body)
    _close(got["scores"], want["raw_scores"], 1e-6)
    _close(got["weights"], want["weights"], 1e-6)


def test_steer_snippet_gives_the_views_continuations(client):
    body = {"model": GPT, "prompt": "The function ", "positive": "list ", "negative": "string ", "layer": 3,
            "alpha": 1.0, "tokens": 12}
    want, got = _answer(client, "/api/experiments/steer", body), _run(client, "/api/experiments/steer", body)
    assert got["plain"].tokens[0] == want["plain"]["ids"]
    assert got["steered"].tokens[0] == want["steered"]["ids"] != want["plain"]["ids"]
    top = got["next_steered"].topk(5)
    assert top.indices.tolist() == [c["id"] for c in want["next"]["steered"]]
    _close(top.values, [c["prob"] for c in want["next"]["steered"]], 2e-6)


def test_code_route_checks_the_body_with_the_views_schema(client):
    r = client.post("/api/experiments/code", json={"path": "/api/experiments/ablation",
                                                    "body": {"model": GPT, "text": "x", "heads": [[0, 0]], "txt": 1}})
    assert r.status_code == 422 and "txt" in r.json()["detail"] and "allowed" in r.json()["detail"]
    r = client.post("/api/experiments/code", json={"path": "/api/nothing", "body": {}})
    assert r.status_code == 400 and "/api/experiments/steer" in r.json()["detail"]
    # text is written as a Python literal: quotes and new lines cannot break out of the string
    body = {"model": GPT, "text": "a\"\n__import__('os')#", "k": 2}
    code = client.post("/api/experiments/code", json={"path": "/api/experiments/logit-lens", "body": body}).json()
    assert "ids = encode('a\"\\n__import__(\\'os\\')#')" in code["code"]
    assert set(SNIPPETS) >= {"/api/experiments/steer", "/api/experiments/ablation", "/api/experiments/toy"}
