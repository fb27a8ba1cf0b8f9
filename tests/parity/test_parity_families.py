"""Each of the 7 HF families, converted to attnlab, computes the same hidden states and logits.

Tolerance: max |difference| <= 1e-5 in float32 (eval mode, a right-padded batch, compared at real tokens;
ViT has no padding and is compared everywhere).
"""

from __future__ import annotations

import pytest
import torch
from conftest import hf_inputs, hf_last_hidden, hf_logits, make_hf, max_diff, real, run_hf, run_ours

from attnlab.interop import config_from_hf, from_hf_model

TOL = 1e-5


def test_family_matches_transformers(family):
    hf = make_hf(family)
    ours = from_hf_model(hf)
    inputs = hf_inputs(family)
    expected, got = run_hf(hf, inputs), run_ours(ours, inputs)
    where = real(inputs)
    assert max_diff(hf_logits(expected), got.logits, where) <= TOL
    if family == "vit":  # HF's hidden_states stop before ViT's final LayerNorm; the base model's output has it
        with torch.no_grad():
            last_hidden = hf.vit(**inputs).last_hidden_state
    else:
        last_hidden = hf_last_hidden(expected)
    assert max_diff(last_hidden, got.hidden, where) <= TOL
    if family in ("bart", "marian", "t5"):
        enc_mask = inputs["attention_mask"].bool()
        assert max_diff(expected.encoder_last_hidden_state, got.encoder_hidden, enc_mask) <= TOL
    # the comparison means something: the outputs vary across positions and the batch
    assert float(got.logits.std()) > 1e-2


@pytest.mark.parametrize("family", ["bert", "gpt2", "vit", "llama"])
def test_every_layer_matches(family):
    """Per-layer hidden states agree too (so an error is located, not averaged away).

    Encoder-decoders are compared layer by layer in tests/test_recording.py (residuals and attention weights).
    """
    import attnlab

    hf = make_hf(family)
    ours = from_hf_model(hf)
    inputs = hf_inputs(family)
    expected = run_hf(hf, inputs).hidden_states  # (embeddings, after block 0, ..., last)
    rec = attnlab.record(ours, *_positional(inputs), names=["blocks.*.resid_post"], **_keywords(inputs))
    where = real(inputs)
    n = ours.config.n_layers
    # HF's last entry has the final norm applied (pre-LN models); compare the blocks before it
    for i in range(n - 1):
        assert max_diff(expected[i + 1], rec[f"blocks.{i}.resid_post"], where) <= TOL, i


def _positional(inputs):
    return (inputs["pixel_values"],) if "pixel_values" in inputs else (inputs["input_ids"],)


def _keywords(inputs):
    return {} if "pixel_values" in inputs else {"attention_mask": inputs["attention_mask"]}


def test_perturbed_weight_is_detected():
    """The parity check can fail: one changed number in one matrix moves the logits beyond the tolerance."""
    hf = make_hf("gpt2")
    ours = from_hf_model(hf)
    with torch.no_grad():
        ours.blocks[1].ffn.down.weight[0, 0] += 0.05
    inputs = hf_inputs("gpt2")
    assert max_diff(hf_logits(run_hf(hf, inputs)), run_ours(ours, inputs).logits, real(inputs)) > TOL


@pytest.mark.parametrize("arch, head", [("BertModel", "none"), ("BertForMaskedLM", "lm"),
                                        ("BertForSequenceClassification", "classifier"),
                                        ("BertForTokenClassification", "token_classifier")])
def test_bert_heads(arch, head):
    import transformers

    hf_cls = getattr(transformers, arch)
    torch.manual_seed(0)
    base = make_hf("bert")
    hf = hf_cls(base.config).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    ours = from_hf_model(hf)
    assert ours.config.head == head
    inputs = hf_inputs("bert")
    expected, got = run_hf(hf, inputs), run_ours(ours, inputs)
    where = real(inputs)
    assert max_diff(expected.hidden_states[-1], got.hidden, where) <= TOL
    if head == "classifier":
        assert max_diff(expected.logits, got.logits) <= TOL
    elif head != "none":
        assert max_diff(expected.logits, got.logits, where) <= TOL
    else:
        assert max_diff(expected.pooler_output, got.pooled) <= TOL


def test_config_translation_fields():
    """The config table in closed form: a few fields that each need a transform, not a copy."""
    t5 = config_from_hf({"model_type": "t5", "vocab_size": 100, "d_model": 64, "d_kv": 16, "d_ff": 128,
                         "num_layers": 2, "num_heads": 4, "feed_forward_proj": "gated-gelu"})
    assert t5.attn_scale == 1.0 and t5.logit_scale == 64 ** -0.5 and t5.activation == "geglu_tanh"
    bart = config_from_hf({"model_type": "bart", "vocab_size": 100, "d_model": 32, "encoder_layers": 1,
                           "decoder_layers": 1, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
                           "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "max_position_embeddings": 50})
    assert bart.position_offset == 2 and bart.max_len == 50 and bart.lm_head_bias
    llama = config_from_hf({"model_type": "llama", "vocab_size": 100, "hidden_size": 64, "num_attention_heads": 8,
                            "num_key_value_heads": 2, "intermediate_size": 100, "num_hidden_layers": 1,
                            "rope_theta": 500000.0})
    assert llama.kv_heads == 2 and llama.rope_theta == 500000.0 and llama.activation == "swiglu"
