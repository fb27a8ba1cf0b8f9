"""The Experiments views' answers, each against a computation without interventions
(a copy of the model with a head's W_O slice zeroed, plain forwards of the model, a hand-written edit of one cell).
Tiny random models: a character decoder and a BERT-style MLM encoder with a word tokenizer."""

from __future__ import annotations

import copy
import importlib.util
import json
import math
from pathlib import Path

import pytest
import torch

import attnlab
from attnlab.errors import InputError
from attnlab.explorer import api as ex
from attnlab.explorer.server.common import wrap

_spec = importlib.util.spec_from_file_location("explorer_tiny_models", Path(__file__).with_name("tiny_models.py"))
tiny_models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiny_models)

TOL = 1e-5


def _perturbed(preset: str, **fields):
    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.presets[preset].replace(**fields)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return model


@pytest.fixture(scope="module")
def decoder():
    return wrap(_perturbed("tiny-decoder", vocab_size=256, d_model=32, d_ff=64), model_id="decoder")


@pytest.fixture(scope="module")
def mlm():
    tok = tiny_models.bert_tokenizer()
    model = _perturbed("tiny-encoder", vocab_size=len(tiny_models.WORDS) + 5, d_model=32, d_ff=64, pad_token_id=0)
    return wrap(model, tok, model_id="mlm")


def _zeroed(model, layer, head):
    twin = copy.deepcopy(model)
    d = model.config.head_dim
    with torch.no_grad():
        twin.blocks[layer].attn.out.weight[:, head * d:(head + 1) * d] = 0
    return twin


def _ids(lm, text):
    if lm.tokenizer is None:
        return torch.tensor([[ord(c) for c in text]])
    return torch.tensor([lm.tokenizer.hf.encode(text).ids])


def _logp(model, ids, position):
    with torch.no_grad():
        return model(ids).logits[0, position].log_softmax(-1)


def test_ablation_equals_a_copy_with_the_heads_w_o_slices_zeroed(decoder, mlm):
    for lm, text, at in ((decoder, "the cat sat", None), (mlm, "the cat sat on the mat", 3)):
        out = ex.ablation(lm, text, [[1, 2], {"layer": 0, "head": 1}], position=at)
        ids = _ids(lm, text)
        position = ids.shape[1] - 1 if at is None else at
        if at is not None:
            ids[0, at] = lm.tokenizer.mask_id  # the word the MLM guesses: [CLS] the cat [MASK] on the mat [SEP]
        twin = _zeroed(_zeroed(lm.model, 1, 2), 0, 1)
        before, after = _logp(lm.model, ids, position), _logp(twin, ids, position)
        t = int(before.argmax())
        assert out["position"] == position and out["target"]["id"] == t
        assert abs(out["target"]["prob_before"] - math.exp(before[t])) < 1e-5
        assert abs(out["target"]["prob_after"] - math.exp(after[t])) < 1e-5
        assert [r["id"] for r in out["after"]] == after.topk(5).indices.tolist()
        assert out["predicts"] == ("next" if lm is decoder else "masked")
        json.dumps(out)


def test_head_sweep_grid_cells_and_cancel(decoder):
    text = "a dog ran"
    ids = _ids(decoder, text)
    seen = []
    out = ex.head_sweep_grid(decoder, text, target=ord("x"), batch_size=3, progress=lambda d, t: seen.append(d))
    clean = _logp(decoder.model, ids, -1)[ord("x")]
    for layer, head in ((0, 0), (1, 3)):
        ablated = _logp(_zeroed(decoder.model, layer, head), ids, -1)[ord("x")]
        assert abs(out["grid"][layer][head] - float(clean - ablated)) < 1e-4
    assert (out["layers"], out["heads"], out["cancelled"]) == (2, 4, False) and seen == [3, 4, 7, 8]
    asked = []
    stopped = ex.head_sweep_grid(decoder, text, batch_size=3, cancelled=lambda: bool(asked.append(0)) or len(asked) > 2)
    assert stopped["cancelled"] and sum(v is None for row in stopped["grid"] for v in row) == 4  # layer 0 ran
    assert stopped["grid"][0][3] is not None and stopped["grid"][1][0] is None
    json.dumps(stopped)


def test_residual_patch_grid_cells_against_a_hand_written_patch(decoder):
    clean, corrupted = "the cat", "the dog"
    out = ex.residual_patch_grid(decoder, clean, corrupted, site="resid_post")
    a, b = _ids(decoder, clean), _ids(decoder, corrupted)
    rec = attnlab.record(decoder.model, a, names=["blocks.0.resid_post"])["blocks.0.resid_post"]

    def by_hand(t, name):
        t = t.clone()
        t[0, 5] = rec[0, 5]
        return t

    with torch.no_grad(), attnlab.intervene(decoder.model, {"blocks.0.resid_post": by_hand}):
        want = decoder.model(b).logits[0, -1].softmax(-1)[out["target"]["id"]]
    assert abs(out["grid"][0][5] - float(want)) < 1e-5
    assert abs(out["restored"][1][6] - 1.0) < 1e-4  # the last block's output at the read position: all restored
    assert abs(out["target"]["prob_clean"] - float(_logp(decoder.model, a, -1).exp().max())) < 1e-5
    with pytest.raises(InputError, match="same number of tokens"):
        ex.residual_patch_grid(decoder, "the cat", "the dogs")


def test_logit_lens_top_last_row_is_the_models_prediction(decoder, mlm):
    for lm, text, at in ((decoder, "the cat sat", None), (mlm, "the cat sat on the mat", 2)):
        out = ex.logit_lens_top(lm, text, position=at)
        ids = _ids(lm, text)
        if at is not None:
            ids[0, at] = lm.tokenizer.mask_id
        want = _logp(lm.model, ids, out["position"]).exp().topk(5)
        assert len(out["rows"]) == lm.model.config.n_layers + 1 and out["rows"][0]["after"] == "embeddings"
        assert [r["id"] for r in out["rows"][-1]["top"]] == want.indices.tolist()
        for got, p in zip(out["rows"][-1]["top"], want.values.tolist(), strict=True):
            assert abs(got["prob"] - p) < 1e-5


def test_attention_vs_ablation_each_key_against_its_own_knockout(decoder):
    text = "the cat sat"
    out = ex.attention_vs_ablation(decoder, text, layer=1, head=2, position=6)
    ids = _ids(decoder, text)[:, :7]
    rec = attnlab.record(decoder.model, ids, names=["blocks.1.attn.weights"])["blocks.1.attn.weights"]
    t = out["target"]["id"]
    clean = _logp(decoder.model, ids, 6)[t]
    for j in (0, 3, 6):
        def knock(w, name, j=j):
            w = w.clone()
            w[0, 2, 6, j] = 0
            return w

        with torch.no_grad(), attnlab.intervene(decoder.model, {"blocks.1.attn.weights": knock}):
            knocked = decoder.model(ids).logits[0, 6].log_softmax(-1)[t]
        assert abs(out["rows"][j]["effect"] - float(clean - knocked)) < 1e-5
        assert abs(out["rows"][j]["weight"] - float(rec[0, 2, 6, j])) < 1e-6
    assert out["rows"][8]["effect"] is None  # a decoder's position 6 cannot see token 8


def test_models_that_predict_no_tokens_and_bad_positions_are_refused(decoder, mlm):
    classifier = wrap(_perturbed("tiny-encoder", head="classifier", n_classes=3), tiny_models.bert_tokenizer(),
                      model_id="cls")
    with pytest.raises(InputError, match="decoder language model or an encoder with a masked-LM head"):
        ex.logit_lens_top(classifier, "the cat")
    with pytest.raises(InputError, match=r"put \[MASK\]"):
        ex.ablation(mlm, "the cat sat", [[0, 0]])
    with pytest.raises(InputError, match="position 40 does not exist"):
        ex.ablation(decoder, "the cat", [[0, 0]], position=40)
    with pytest.raises(InputError, match=r"head 9 does not exist: this model has 4 \(heads 0..3\)"):
        ex.ablation(decoder, "the cat", [[0, 9]])
    with pytest.raises(InputError, match="list of \\[layer, head\\] pairs"):
        ex.ablation(decoder, "the cat", [])
