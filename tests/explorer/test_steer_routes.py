"""POST /api/experiments/steer on gpt-char: alpha 0 is the plain greedy generation; a nonzero alpha moves the
logits exactly as adding alpha x (the two prompts' difference at that layer) to the stream does; the work stops
between decoding steps when asked; bad input is one clear 4xx."""

from __future__ import annotations

import pytest
import torch

import attnlab
from attnlab.explorer.views.experiments.steering import compute as steering_compute
from attnlab.explorer.views.experiments.steering import routes as routes_steer

BODY = {"model": "gpt-char", "prompt": "The function ", "positive": "list ", "negative": "string ", "layer": 3,
        "tokens": 10}


@pytest.fixture(scope="module")
def client(shipped_client):
    return shipped_client  # gpt-char as shipped (conftest.py)


def _ids(tok, text):
    return torch.tensor([tok.encode(text)])


def _direction(model, tok, layer):
    name = f"blocks.{layer}.resid_pre"
    pos = attnlab.record(model, _ids(tok, BODY["positive"]), names=[name])[name][0, -1]
    neg = attnlab.record(model, _ids(tok, BODY["negative"]), names=[name])[name][0, -1]
    return pos - neg


def test_alpha_zero_is_the_plain_generation(client):
    r = client.post("/api/experiments/steer", json={**BODY, "alpha": 0.0})
    assert r.status_code == 200, r.text
    got = r.json()
    lm = client.registry.get("gpt-char")
    alone = lm.model.generate(_ids(lm.tokenizer, BODY["prompt"]), max_new_tokens=10)
    assert got["plain"]["ids"] == got["steered"]["ids"] == alone.tokens[0]
    assert got["plain"]["text"] == lm.tokenizer.decode(alone.tokens[0]) and got["first_difference"] is None
    assert got["next"]["plain"] == got["next"]["steered"]


def test_alpha_adds_exactly_the_direction_at_the_layer(client):
    r = client.post("/api/experiments/steer", json={**BODY, "alpha": 1.5})
    assert r.status_code == 200, r.text
    got = r.json()
    lm = client.registry.get("gpt-char")
    model, tok = lm.model, lm.tokenizer
    v = _direction(model, tok, 3)
    assert got["direction"]["norm"] == pytest.approx(float(v.norm()), abs=1e-5)
    prompt = _ids(tok, BODY["prompt"])
    # the edit written out by hand, not through attnlab.steer: the stream entering block 3 plus 1.5 v
    with attnlab.intervene(model, {"blocks.3.resid_pre": lambda x, name: x + 1.5 * v}), torch.no_grad():
        probs = model(prompt).logits[0, -1].softmax(-1)
    top = probs.topk(5)
    assert [c["id"] for c in got["next"]["steered"]] == top.indices.tolist()
    assert torch.allclose(torch.tensor([c["prob"] for c in got["next"]["steered"]]), top.values, atol=2e-6)
    with torch.no_grad():
        plain = model(prompt).logits[0, -1].softmax(-1)
    assert not torch.allclose(plain, probs, atol=1e-3)  # it did move
    with attnlab.intervene(model, attnlab.steer(model, "blocks.3.resid_pre", v, alpha=1.5)):
        steered = model.generate(prompt, max_new_tokens=10)
    assert got["steered"]["ids"] == steered.tokens[0] != got["plain"]["ids"]
    pairs = zip(got["plain"]["ids"], got["steered"]["ids"], strict=True)
    assert got["first_difference"] == next(i for i, (a, b) in enumerate(pairs) if a != b)


def test_steering_stops_between_decoding_steps_when_asked(client):
    lm = client.registry.get("gpt-char")
    calls = []

    def stop():
        calls.append(1)
        if len(calls) == 3:
            raise routes_steer._Gone("the client went away")

    with pytest.raises(routes_steer._Gone):
        steering_compute.steering(lm, "The function ", "list ", "string ", 3, 1.0, 30, stop=stop)
    assert len(calls) == 3  # 3 of the 30 steps ran


@pytest.mark.parametrize("change, status, words", [
    ({"layer": 4}, 422, "layers 0..3"),
    ({"alpha": 1e9}, 422, "alpha"),
    ({"tokens": 500}, 422, "tokens"),
    ({"strength": 2}, 422, "allowed"),
    ({"prompt": "   "}, 400, "prompt is empty"),
    ({"model": "path"}, 400, "needs a decoder"),
])
def test_bad_input_is_one_clear_error(client, change, status, words):
    r = client.post("/api/experiments/steer", json={**BODY, **change})
    assert r.status_code == status and words in r.json()["detail"], r.text
