"""The Experiments routes through HTTP: each answers what its pure function answers, and bad input gets one
clear 4xx message (no traceback)."""

import pytest

from attnlab.explorer.views.experiments.flow.compute import attention_flow
from attnlab.explorer.views.experiments.toy import compute as toy


def test_flow_route_equals_the_function(client):
    r = client.post("/api/experiments/flow", json={"model": "path", "text": "abcdef", "layer": 1, "token": 3})
    assert r.status_code == 200
    assert r.json() == attention_flow(client.registry.get("path"), "abcdef", 1, 3)
    bad = client.post("/api/experiments/flow", json={"model": "path", "text": "abc", "layer": 99})
    assert bad.status_code == 422 and "layer 99 does not exist" in bad.json()["detail"]
    assert client.post("/api/experiments/flow", json={"model": "nope", "text": "a"}).status_code == 404


def test_toy_routes(client):
    w = client.get("/api/experiments/toy/0").json()
    assert w["name"] == toy.HEADS[0][0] and w["w_k"][toy.DIMS.index("verb")][0] == 2.0
    r = client.post("/api/experiments/toy", json={"text": "the cat sat", "w_q": w["w_q"], "w_k": w["w_k"],
                                                    "query": 1})
    assert r.status_code == 200 and r.json()["raw_scores"][1][2] == pytest.approx(2.34)
    bad = client.post("/api/experiments/toy", json={"text": "the cat", "w_q": [[0, 0, 0]] * 8, "w_k": w["w_k"]})
    assert bad.status_code == 400 and "4 numbers" in bad.json()["detail"]
    assert client.get("/api/experiments/toy/4").status_code == 422


def test_meanings_routes(client):
    r = client.post("/api/experiments/neighbours", json={"model": "toy", "text": "cat", "k": 3})
    assert r.status_code == 200 and {n["token"] for n in r.json()["nearest"]} == {"dog", "man", "bird"}
    bad = client.post("/api/experiments/sentences", json={"model": "path", "sentences": ["a", "b"]})
    assert bad.status_code == 400 and "is a decoder" in bad.json()["detail"]


def test_timeline_routes_without_a_run(client):
    assert client.get("/api/experiments/runs").json() == {"runs": []}
    r = client.get("/api/experiments/timeline/path")
    assert r.status_code == 404 and "no training probe" in r.json()["detail"]


def test_oversized_inputs_get_a_422_that_names_the_field(client):
    r = client.post("/api/experiments/sentences", json={"model": "toy", "sentences": ["a" * 2001, "b"]})
    assert r.status_code == 422 and "sentences.0" in r.json()["detail"]
    r = client.post("/api/experiments/sentences", json={"model": "toy", "sentences": ["a"] * 9})
    assert r.status_code == 422 and "sentences" in r.json()["detail"]
    r = client.post("/api/experiments/neighbours", json={"model": "toy", "text": "cat", "k": 51})
    assert r.status_code == 422 and "k" in r.json()["detail"]
