"""The editable toy: toy.scores against an independent numpy computation, against the toy Encoder's own
recorded attention (default weights), the seed's 2.34, and "remove the verb x2" taking sat's attention away."""

import numpy as np
import pytest
import torch

import attnlab
from attnlab.errors import InputError
from attnlab.explorer.views.experiments.toy import compute as toy

SENTENCE = "the cat sat on the mat"
VERB = toy.DIMS.index("verb")


def _numpy_scores(words, w_q, w_k):
    table = {w: np.array(v) for w, v in toy.WORDS.items()}
    x = np.stack([table.get(w, np.zeros(8)) for w in words])
    q, k = x @ np.array(w_q), x @ np.array(w_k)
    raw = q @ k.T / np.sqrt(4)
    e = np.exp(raw - raw.max(-1, keepdims=True))
    return raw, e / e.sum(-1, keepdims=True)


def test_default_weights_give_the_seeds_234_and_match_the_encoder():
    model, tok = toy.build()
    ids = tok.encode(SENTENCE, add_special_tokens=False)
    rec = attnlab.record(model, torch.tensor([ids]), names=["blocks.0.attn.raw_scores", "blocks.0.attn.weights"])
    for head in range(4):
        w_q, w_k = toy.default_weights(head)
        r = toy.scores(SENTENCE, w_q, w_k, 1)
        np.testing.assert_allclose(r["raw_scores"], rec["blocks.0.attn.raw_scores"][0, head].numpy(), atol=2e-6)
        np.testing.assert_allclose(r["weights"], rec["blocks.0.attn.weights"][0, head].numpy(), atol=2e-6)
    w_q, w_k = toy.default_weights(0)
    r = toy.scores(SENTENCE, w_q, w_k, 1)
    assert r["words"][1:3] == ["cat", "sat"]
    assert r["raw_scores"][1][2] == pytest.approx(2.34, abs=1e-6)  # (2*0.9 + 0.8) * (2*0.9) / sqrt(4)


def test_edited_cells_against_numpy():
    rng = np.random.default_rng(22)
    for _ in range(5):
        w_q = np.round(rng.normal(size=(8, 4)) * 2, 2).tolist()
        w_k = np.round(rng.normal(size=(8, 4)) * 2, 2).tolist()
        text = "a dog chased the big ball in the park"
        r = toy.scores(text, w_q, w_k, 2)
        raw, weights = _numpy_scores(text.split(), w_q, w_k)
        np.testing.assert_allclose(r["raw_scores"], raw, atol=1e-6)  # 6 decimals sent
        np.testing.assert_allclose(r["weights"], weights, atol=1e-6)


def test_remove_the_verb_takes_sats_attention_away():
    w_q, w_k = toy.default_weights(0)
    before = toy.scores(SENTENCE, w_q, w_k, 1)["weights"][1]
    w_k[VERB][0] = 0.0  # the page's "remove the verb x2" button
    after = toy.scores(SENTENCE, w_q, w_k, 1)["weights"][1]
    assert before[2] > 0.6  # cat -> sat dominates
    assert after[2] == pytest.approx(1 / 6, abs=1e-6)  # no key says "verb" any more: a flat row
    _, expected = _numpy_scores(SENTENCE.split(), w_q, w_k)
    np.testing.assert_allclose(after, expected[1], atol=1e-6)


@pytest.mark.parametrize("w_q, message", [
    ([[0.0] * 4] * 7, "8 rows"),
    ([[0.0] * 3] * 8, "4 numbers"),
    ([[1e9] + [0.0] * 3] + [[0.0] * 4] * 7, r"w_q\[animate\]\[0\]"),
    ([["x"] + [0.0] * 3] + [[0.0] * 4] * 7, "allowed a number"),
])
def test_bad_matrices_are_refused_by_name(w_q, message):
    _, w_k = toy.default_weights(0)
    with pytest.raises(InputError, match=message):
        toy.scores(SENTENCE, w_q, w_k, 1)


def test_bad_query_and_unknown_words():
    w_q, w_k = toy.default_weights(0)
    with pytest.raises(InputError, match="allowed a word index 0..5"):
        toy.scores(SENTENCE, w_q, w_k, 6)
    r = toy.scores("the zebra sat", w_q, w_k, 0)
    assert r["words"][1] == "[UNK]" and "1 word" in r["unknown"]
