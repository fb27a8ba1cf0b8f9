"""The Generation tab's redraw data: each step sends its best logits and the sums that let the page compute, with
no request, what filtered_probs computes at any slider position. Checked against independent float64 sums over
the whole vocabulary and against filtered_probs itself (float32: tolerances of 1e-5 on probabilities and
log-sums, a few float32 roundings of numbers of order 1 to 50)."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.explorer import api
from attnlab.explorer.views.generation.sampling import N_SENT, TEMPERATURES, TOP_PS, sampling_tables


def _logits(vocab: int, scale: float, seed: int) -> torch.Tensor:
    return (torch.randn(vocab, generator=torch.Generator().manual_seed(seed)) * scale).float()


@pytest.mark.parametrize("vocab, scale", [(300, 3.0), (40, 1.0)])
def test_tables_hold_the_rest_of_the_softmax_exactly(vocab, scale):
    z = _logits(vocab, scale, seed=vocab)
    s = sampling_tables(z, str)
    order = sorted(range(vocab), key=lambda i: -float(z[i]))
    n = min(N_SENT, vocab)
    assert s["ids"] == order[:n] and s["logits"] == [float(z[i]) for i in order[:n]]
    assert s["others"] == vocab - n and s["vocab"] == vocab
    best = float(z[order[0]])
    for t, temperature in enumerate(TEMPERATURES):
        if n == vocab:
            assert s["rest_lse"][t] is None
            continue
        # the rest's log-sum-exp by plain float64 summation, no torch reduction involved
        direct = math.log(math.fsum(math.exp((float(z[i]) - best) / temperature) for i in order[n:]))
        assert s["rest_lse"][t] == pytest.approx(direct, abs=1e-5, rel=1e-6)


def test_nucleus_beyond_the_sent_tokens_matches_filtered_probs():
    z = _logits(400, 1.0, seed=3)  # flat enough that the nucleus reaches past 50 tokens at most temperatures
    s = sampling_tables(z, str)
    beyond = 0
    for t, temperature in enumerate(TEMPERATURES):
        for j, top_p in enumerate(TOP_PS):
            probs = api.filtered_probs(z, temperature, 0, top_p)
            kept = int((probs > 0).sum())
            entry = s["nucleus"][t][j]
            if kept <= N_SENT:
                assert entry is None, (temperature, top_p)
                continue
            beyond += 1
            softmax = torch.softmax(z.double() / temperature, -1)
            assert entry["tokens"] == kept, (temperature, top_p)
            assert entry["mass"] == pytest.approx(float(softmax[probs > 0].sum()), abs=1e-5)
    assert beyond > 100  # the check above ran on many cells, not on none


def test_chosen_token_rank_and_logit():
    z = _logits(120, 2.0, seed=5)
    chosen = int(z.argsort()[10])  # the 11th worst: far outside the 50 sent
    c = sampling_tables(z, lambda i: f"t{i}", chosen=chosen)["chosen"]
    assert c == {"id": chosen, "token": f"t{chosen}", "logit": float(z[chosen]),
                 "rank": 1 + sum(float(v) > float(z[chosen]) for v in z)}


def test_a_step_sends_the_model_logits_for_the_page(registry):
    lm = next(registry.get(e.id) for e in registry.entries.values() if e.kind == "path" and
              e.source.name == "decoder")
    out = api.generation_step(lm, "abc", [], temperature=0.7, top_k=0, top_p=0.9, seed=1)
    with torch.no_grad():  # the model's own logits, a full forward independent of the step's cache
        logits = lm.model(torch.tensor([[ord(c) for c in "abc"]])).logits[0, -1]
    s = out["sampling"]
    assert s["ids"] == logits.topk(N_SENT).indices.tolist()
    assert s["logits"] == pytest.approx(logits.topk(N_SENT).values.tolist(), abs=1e-4)
    assert s["chosen"]["id"] == out["token_id"] and s["vocab"] == lm.model.config.vocab_size
