"""attnlab -> HF -> attnlab is exact, and transformers reads what attnlab writes.

- tensors: HF state -> attnlab -> HF state gives back the very same numbers (torch.equal, no tolerance);
- files: model.save(dir, format="hf") then attnlab.load(dir) gives identical tensors;
- transformers' own from_pretrained on that directory computes what the original HF model computed (<= 1e-5).
"""

from __future__ import annotations

import json

import pytest
import torch
from conftest import hf_inputs, hf_logits, make_hf, max_diff, real, run_hf, run_ours

import attnlab
from attnlab.interop import from_hf_model, from_hf_state, hf_config_from, save_hf, to_hf_state
from attnlab.interop.families import FAMILIES

transformers = pytest.importorskip("transformers")


def _same_state(a: torch.nn.Module, b: torch.nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for name in sa:
        assert torch.equal(sa[name], sb[name]), name


def test_state_round_trip_is_exact(family):
    hf = make_hf(family)
    ours = from_hf_model(hf)
    back = to_hf_state(ours)
    original = hf.state_dict()
    for name, tensor in back.items():
        key = name if name in original else name.split(".", 1)[1]  # HF base models drop the prefix
        assert torch.equal(tensor, original[key]), name
    again = from_hf_state(ours.config, back)
    ours_state = ours.state_dict()
    for name, tensor in again.items():
        assert torch.equal(tensor, ours_state[name]), name


def test_save_load_and_transformers_reads_it(family, tmp_path):
    hf = make_hf(family)
    ours = from_hf_model(hf)
    ours.save(tmp_path, format="hf")
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model_type"] == FAMILIES[family].model_types[0]

    loaded, tokenizer = attnlab.load(tmp_path)  # dispatches on "model_type"
    assert tokenizer is None
    _same_state(ours, loaded)

    reread = getattr(transformers, config["architectures"][0]).from_pretrained(tmp_path).eval()
    inputs = hf_inputs(family)
    where = None if family == "vit" else real(inputs)
    assert max_diff(hf_logits(run_hf(hf, inputs)), hf_logits(run_hf(reread, inputs)), where) <= 1e-5
    assert max_diff(hf_logits(run_hf(reread, inputs)), run_ours(loaded, inputs).logits, where) <= 1e-5


@pytest.mark.parametrize("preset", ["tiny-decoder", "tiny-llama", "tiny-encoder", "tiny-t5", "tiny-vit"])
def test_attnlab_presets_export(preset, tmp_path):
    """A model born in attnlab (not converted from HF) exports to the family that reproduces its config."""
    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.presets[preset]).eval()
    save_hf(model, tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    hf = getattr(transformers, config["architectures"][0]).from_pretrained(tmp_path).eval()
    if model.config.topology == "vit":
        inputs = {"pixel_values": torch.randn(2, 1, 28, 28)}
        where = None
    else:
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(3, model.config.vocab_size, (2, 7), generator=g)
        mask = torch.ones_like(ids)
        mask[1, 5:] = 0
        inputs = {"input_ids": ids, "attention_mask": mask}
        if model.config.topology == "encoder-decoder":
            inputs.update(decoder_input_ids=ids[:, :5], decoder_attention_mask=mask[:, :5])
        where = real(inputs)
    assert max_diff(hf_logits(run_hf(hf, inputs)), run_ours(model, inputs).logits, where) <= 1e-5
    reloaded, _ = attnlab.load(tmp_path)
    _same_state(model, reloaded)


def test_export_refuses_what_no_family_represents():
    config = attnlab.presets["tiny-encoder-decoder"]  # interleaved sinusoids: neither BART nor Marian
    with pytest.raises(attnlab.ConfigError, match="no Hugging Face family reproduces"):
        hf_config_from(config)
    with pytest.raises(attnlab.ConfigError, match="sinusoidal_layout"):
        hf_config_from(config, family="marian")


def test_legacy_names_are_read():
    """Checkpoints written by older transformers (ViT's encoder.layer.N.attention.attention.query, TF-era BERT
    LayerNorm.gamma/beta) read into the same model."""
    import re

    vit = make_hf("vit")
    ours = from_hf_model(vit)
    legacy = {}
    for name, tensor in vit.state_dict().items():
        name = re.sub(r"vit\.layers\.(\d+)\.attention\.([qkv])_proj\.",
                      lambda m: f"vit.encoder.layer.{m[1]}.attention.attention."
                                f"{ {'q': 'query', 'k': 'key', 'v': 'value'}[m[2]]}.", name)
        name = re.sub(r"vit\.layers\.(\d+)\.attention\.o_proj\.", r"vit.encoder.layer.\1.attention.output.dense.", name)
        name = re.sub(r"vit\.layers\.(\d+)\.mlp\.fc1\.", r"vit.encoder.layer.\1.intermediate.dense.", name)
        name = re.sub(r"vit\.layers\.(\d+)\.mlp\.fc2\.", r"vit.encoder.layer.\1.output.dense.", name)
        name = re.sub(r"vit\.layers\.(\d+)\.layernorm_", r"vit.encoder.layer.\1.layernorm_", name)
        legacy[name] = tensor
    assert any(".attention.attention.query." in n for n in legacy)
    state = from_hf_state(ours.config, legacy)
    for name, tensor in ours.state_dict().items():
        assert torch.equal(state[name], tensor), name

    bert = make_hf("bert")
    ours = from_hf_model(bert)
    tf_names = {n.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): t
                for n, t in bert.state_dict().items()}
    assert any(n.endswith("LayerNorm.gamma") for n in tf_names)
    state = from_hf_state(ours.config, tf_names)
    assert torch.equal(state["blocks.0.norm1.weight"], ours.state_dict()["blocks.0.norm1.weight"])


def test_marian_position_table_is_checked():
    marian = make_hf("marian")
    ours = from_hf_model(marian)
    state = dict(marian.state_dict())
    table = state["model.encoder.embed_positions.weight"].clone()
    d = table.shape[1]
    state["model.encoder.embed_positions.weight"] = torch.cat((table[:, d // 2:], table[:, : d // 2]), dim=1)
    with pytest.raises(attnlab.CheckpointError, match="embed_positions.weight is not the sinusoid table"):
        from_hf_state(ours.config, state)


def test_tokenizer_travels_with_the_checkpoint(tmp_path):
    from tokenizers import ByteLevelBPETokenizer

    from attnlab.data.tokenizers import Tokenizer

    trained = ByteLevelBPETokenizer()
    trained.train_from_iterator(["a small corpus for a small tokenizer"] * 10, vocab_size=280,
                                special_tokens=["<|endoftext|>"])
    tokenizer = Tokenizer(trained._tokenizer, {"eos": "<|endoftext|>"})
    model = from_hf_model(make_hf("gpt2"))
    model.save(tmp_path, tokenizer=tokenizer, format="hf")
    _, loaded = attnlab.load(tmp_path)
    assert loaded is not None and loaded.eos_id == tokenizer.eos_id
    assert loaded.encode("a small tokenizer") == tokenizer.encode("a small tokenizer")
