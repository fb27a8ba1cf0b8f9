"""BERT's next-sentence head: a Hugging Face BertForPreTraining's `cls.seq_relationship` loads into attnlab's
NextSentenceHead and gives the same logits; attnlab's head is written back where transformers reads it.

Tolerance: max |difference| <= 1e-5 in float32 (eval mode, the tiny random model of conftest.py, a right-padded
batch with segment ids): float32 rounding of a 2-layer stack, the pooler and one (2, 32) product.
"""

from __future__ import annotations

import torch
from conftest import hf_inputs, make_hf, run_hf

import attnlab
from attnlab.interop import from_hf_model, load_hf, save_hf, to_hf_state

TOL = 1e-5


def _inputs():
    inputs = hf_inputs("bert")
    types = torch.zeros_like(inputs["input_ids"])
    types[:, 4:] = 1  # a second segment, so the token-type embeddings take part
    return {**inputs, "token_type_ids": types}


def test_nsp_logits_match_transformers():
    hf = make_hf("bert")
    ours = from_hf_model(hf)
    assert ours.config.nsp and ours.nsp_head is not None
    inputs = _inputs()
    expected = run_hf(hf, inputs).seq_relationship_logits  # (batch, 2)
    with torch.no_grad():
        got = ours(inputs["input_ids"], attention_mask=inputs["attention_mask"],
                   token_type_ids=inputs["token_type_ids"]).nsp_logits
    assert got.shape == expected.shape == (3, 2)
    assert float((got - expected).abs().max()) <= TOL
    assert float(got.std()) > 1e-2  # the logits differ across the batch: the comparison can fail


def test_nsp_head_round_trips_to_transformers():
    hf = make_hf("bert")
    state = to_hf_state(from_hf_model(hf))
    for name in ("cls.seq_relationship.weight", "cls.seq_relationship.bias"):
        assert torch.equal(state[name], hf.state_dict()[name])


def test_pretraining_checkpoint_without_nsp_weights_loads_without_the_head(tmp_path):
    """An attnlab BERT with a pooler and no next-sentence head is written as a BertForPreTraining without the
    cls.seq_relationship tensors; it reads back without the head (as a BertModel without its pooler reads back
    without the pooler) and with the same MLM logits."""
    ours = from_hf_model(make_hf("bert"))
    plain = attnlab.build_model(ours.config.replace(nsp=False))
    plain.load_state_dict({k: v for k, v in ours.state_dict().items() if not k.startswith("nsp_head")})
    save_hf(plain.eval(), tmp_path)
    back, _ = load_hf(tmp_path)
    assert not back.config.nsp and back.nsp_head is None
    ids = hf_inputs("bert")["input_ids"]
    with torch.no_grad():
        assert float((back(ids).logits - plain(ids).logits).abs().max()) <= TOL
