"""BART and Marian written by transformers 5 with tie_word_embeddings=False keep four different matrices:
model.shared (unread by the forward), model.encoder.embed_tokens, model.decoder.embed_tokens and lm_head.
attnlab maps each stack's own matrix, and refuses any tensor its table does not read instead of ignoring it."""

from __future__ import annotations

import pytest
import torch
from conftest import hf_inputs, hf_logits, make_hf, max_diff, real, run_hf, run_ours
from safetensors.torch import load_file, save_file

import attnlab
from attnlab.errors import CheckpointError

TOL = 1e-5


def _untied(family: str, tmp_path):
    hf = make_hf(family, seed=3, tie_word_embeddings=False)
    sd = hf.state_dict()
    # the premise: four matrices that really differ (a mapping reading `shared` for both stacks would be wrong)
    names = ["model.shared.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight",
             "lm_head.weight"]
    assert all(not torch.equal(sd[a], sd[b]) for i, a in enumerate(names) for b in names[i + 1:])
    hf.save_pretrained(tmp_path / family)
    return hf, tmp_path / family


@pytest.mark.parametrize("family", ["bart", "marian"])
def test_untied_checkpoint_matches_transformers(family, tmp_path):
    hf, folder = _untied(family, tmp_path)
    model, _ = attnlab.load(folder)
    assert not model.config.shared_embeddings and not model.config.tie_embeddings
    inputs = hf_inputs(family)
    expected, got = run_hf(hf, inputs), run_ours(model, inputs)
    assert max_diff(hf_logits(expected), got.logits, real(inputs)) <= TOL
    assert max_diff(expected.encoder_last_hidden_state, got.encoder_hidden, inputs["attention_mask"].bool()) <= TOL
    assert float(got.logits.std()) > 1e-2


@pytest.mark.parametrize("family", ["bart", "marian"])
def test_untied_round_trip_through_save_hf(family, tmp_path):
    """attnlab writes the untied layout back; transformers reads it and computes the same logits."""
    import transformers

    hf, folder = _untied(family, tmp_path)
    model, _ = attnlab.load(folder)
    model.save(tmp_path / "back", format="hf")
    cls = transformers.BartForConditionalGeneration if family == "bart" else transformers.MarianMTModel
    again = cls.from_pretrained(tmp_path / "back", attn_implementation="eager").eval()
    inputs = hf_inputs(family)
    assert max_diff(hf_logits(run_hf(hf, inputs)), hf_logits(run_hf(again, inputs)), real(inputs)) <= TOL


def test_a_tensor_the_table_does_not_read_is_refused(tmp_path):
    hf, folder = _untied("bart", tmp_path)
    tensors = load_file(folder / "model.safetensors")
    tensors["model.encoder.layers.0.adapter.weight"] = torch.ones(4, 4)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match=r"does not read: \['model.encoder.layers.0.adapter.weight'\]"):
        attnlab.load(folder)


def test_a_tied_alias_with_equal_values_is_accepted_and_a_different_one_refused(tmp_path):
    """transformers' in-memory state_dict() repeats tied matrices under each name: equal copies are fine."""
    from attnlab.interop import from_hf_model
    from attnlab.interop.hf import config_from_hf, from_hf_state

    hf = make_hf("bart", seed=4)
    state = {k: v.clone() for k, v in hf.state_dict().items()}
    assert "model.encoder.embed_tokens.weight" in state  # the alias of model.shared.weight
    from_hf_model(hf)  # accepted
    state["model.encoder.embed_tokens.weight"] += 1.0
    config = config_from_hf(hf.config.to_dict(), "BartForConditionalGeneration")
    with pytest.raises(CheckpointError, match="model.encoder.embed_tokens.weight"):
        from_hf_state(config, state)
