"""ModelConfig: validation names the field and the bad value; JSON round trip; presets; memory refusal."""

import json

import pytest
import torch

import attnlab
from attnlab import ModelConfig
from attnlab.errors import ConfigError


@pytest.mark.parametrize(
    "changes, field",
    [
        (dict(d_model=100, n_heads=3), "d_model"),
        (dict(n_heads=4, n_kv_heads=3), "n_kv_heads"),
        (dict(activation="tanhh"), "activation"),
        (dict(norm="batchnorm"), "norm"),
        (dict(position="absolute"), "position"),
        (dict(norm_placement="middle"), "norm_placement"),
        (dict(d_model=0), "d_model"),
        (dict(n_layers=-1), "n_layers"),
        (dict(vocab_size=0), "vocab_size"),
        (dict(d_ff=2.5), "d_ff"),
        (dict(dropout=1.5), "dropout"),
        (dict(topology="rnn"), "topology"),
        (dict(head="classifier"), "n_classes"),
        (dict(position="rope", d_model=36, n_heads=4), "position"),
        (dict(eos_token_id=10_000), "eos_token_id"),
    ],
)
def test_bad_fields_are_named(changes, field):
    with pytest.raises(ConfigError) as info:
        ModelConfig(**changes)
    message = str(info.value)
    assert f"ModelConfig.{field}=" in message
    assert "allowed" in message or "must" in message or "needs" in message  # says what would be accepted


def test_unknown_activation_lists_allowed():
    with pytest.raises(ConfigError, match="allowed: relu, gelu"):
        ModelConfig(activation="mish")


def test_json_round_trip_every_preset(tmp_path):
    for name in attnlab.presets:
        config = attnlab.presets[name]
        assert ModelConfig.from_json(config.to_json()) == config
        path = tmp_path / f"{name}.json"
        config.to_json(path)
        assert ModelConfig.from_json(path) == config


def test_from_dict_refuses_unknown_keys_and_wrong_types():
    with pytest.raises(ConfigError, match="unknown ModelConfig keys \\['d_modle'\\]"):
        ModelConfig.from_dict({"d_modle": 64})
    with pytest.raises(ConfigError, match="ModelConfig.d_model='64'"):
        ModelConfig.from_dict({"d_model": "64"})
    with pytest.raises(ConfigError, match="expected bool"):
        ModelConfig.from_dict({"bias": 1})
    with pytest.raises(ConfigError, match="not valid JSON"):
        ModelConfig.from_json("{not json")


def test_presets_have_the_documented_shapes():
    names = set(attnlab.presets)
    for required in ["bert-base", "bert-large", "gpt2", "gpt2-medium", "gpt3-175b", "transformer-base", "t5-small",
                     "bart-base", "vit-base-16", "llama-style"]:
        assert required in names
    assert attnlab.presets["gpt3-175b"].d_model == 12288 and attnlab.presets["gpt3-175b"].n_layers == 96
    with pytest.raises(ConfigError, match="unknown preset 'gpt5'"):
        attnlab.presets["gpt5"]
    with pytest.raises(ConfigError, match=r"unknown preset 'tiny-decodr' \(did you mean 'tiny-decoder'"):
        attnlab.presets["tiny-decodr"]


def test_presets_are_fresh_copies():
    a = attnlab.presets["gpt2"]
    a.n_layers = 1
    assert attnlab.presets["gpt2"].n_layers == 12


def test_huge_preset_refused_unless_meta():
    config = attnlab.presets["gpt3-175b"]
    with pytest.raises(ConfigError, match="device='meta'"):
        attnlab.build_model(config)
    model = attnlab.build_model(config, device="meta")
    assert model.num_parameters() > 170e9
    assert next(model.parameters()).device.type == "meta"


def test_config_json_is_plain_json():
    data = json.loads(attnlab.presets["tiny-llama"].to_json())
    assert data["position"] == "rope" and data["n_kv_heads"] == 2


def test_build_model_needs_a_config():
    with pytest.raises(ConfigError, match="needs a ModelConfig"):
        attnlab.build_model({"d_model": 64})
    assert isinstance(attnlab.build_model(attnlab.presets["tiny-decoder"]), torch.nn.Module)


@pytest.mark.parametrize("preset", ["tiny-decoder", "tiny-encoder-decoder", "tiny-vit"])
def test_total_layers_counts_every_block_the_model_builds(preset):
    from attnlab.layers.block import Block

    config = attnlab.presets[preset].replace(n_layers=3)
    if config.topology == "encoder-decoder":
        config = config.replace(n_decoder_layers=2)
    model = attnlab.build_model(config, device="meta")
    assert config.total_layers == sum(isinstance(m, Block) for m in model.modules())
