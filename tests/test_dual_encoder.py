"""The dual encoder is a model type like the others: a validated config, build_model, save/load bit for bit,
exact parameter counts, and the shipped clip-mnist checkpoint reads the same numbers as its file holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from torch import nn

import attnlab
from attnlab import DualEncoderConfig, ModelConfig
from attnlab.counting import closed_form, parameter_table
from attnlab.errors import CheckpointError, ConfigError
from attnlab.models import DualEncoder

CLIP = Path(attnlab.__file__).parent / "assets" / "checkpoints" / "clip-mnist"
SMALL = dict(d_model=32, n_heads=2, d_ff=64, n_layers=1)


def _config(**changes) -> DualEncoderConfig:
    vit = ModelConfig(topology="vit", image_size=8, patch_size=4, n_channels=1, head="none", **SMALL)
    text = ModelConfig(topology="encoder", vocab_size=20, max_len=8, head="none", **SMALL)
    return DualEncoderConfig(**{"tower_a": vit, "tower_b": text, "embed_dim": 16, **changes})


@pytest.mark.parametrize("changes, field", [
    (dict(embed_dim=0), "embed_dim"), (dict(embed_dim=True), "embed_dim"), (dict(pool="max"), "pool"),
    (dict(logit_scale_init=float("inf")), "logit_scale_init"),
    (dict(tower_b=ModelConfig(topology="decoder")), "tower_b.topology"),
    (dict(tower_a={"topology": "vit"}), "tower_a must be a ModelConfig")])
def test_config_errors_name_the_field(changes, field):
    with pytest.raises(ConfigError, match=f"DualEncoderConfig.{field}"):
        _config(**changes)


def test_config_json_round_trip_and_refusals():
    config = _config(pool="mean", name="pair")
    assert DualEncoderConfig.from_dict(json.loads(config.to_json())) == config
    with pytest.raises(ConfigError, match="unknown DualEncoderConfig keys"):
        DualEncoderConfig.from_dict({**config.to_dict(), "tower_c": {}})
    with pytest.raises(ConfigError, match="DualEncoderConfig.tower_a: .*d_model"):
        DualEncoderConfig.from_dict({**config.to_dict(), "tower_a": {**config.tower_a.to_dict(), "d_model": -1}})
    with pytest.raises(ConfigError, match="needs tower_b"):
        DualEncoderConfig.from_dict({"topology": "dual-encoder", "tower_a": config.tower_a.to_dict()})


def test_build_save_load_is_bit_identical(tmp_path):
    torch.manual_seed(0)
    model = attnlab.build_model(_config(pool="mean"))
    with torch.no_grad():
        model.logit_scale.fill_(1.234567)  # a value the config's init would not give back
    model.save(tmp_path / "dual")
    loaded, tokenizer = attnlab.load(tmp_path / "dual")
    assert isinstance(loaded, DualEncoder) and tokenizer is None
    assert loaded.config == model.config
    a, b = model.state_dict(), loaded.state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    images, ids = torch.rand(3, 1, 8, 8), torch.randint(0, 20, (3, 5))
    with torch.no_grad():
        assert torch.equal(model(images, ids), loaded(images, ids))


def test_build_draws_the_same_numbers_as_two_models_and_two_linears():
    """Towers first, then the projections: a recipe seeded as before builds the same initial model."""
    config = _config()
    torch.manual_seed(7)
    dual = attnlab.build_model(config)
    torch.manual_seed(7)
    a, b = attnlab.build_model(config.tower_a), attnlab.build_model(config.tower_b)
    proj_a, proj_b = nn.Linear(32, 16, bias=False), nn.Linear(32, 16, bias=False)
    expected = {**{f"tower_a.{k}": v for k, v in a.state_dict().items()},
                **{f"tower_b.{k}": v for k, v in b.state_dict().items()},
                "proj_a.weight": proj_a.weight, "proj_b.weight": proj_b.weight}
    got = dual.state_dict()
    assert all(torch.equal(got[k], v) for k, v in expected.items())
    assert float(got["logit_scale"]) == pytest.approx(2.6592600)  # log(1/0.07), CLIP's temperature


def test_parameter_table_counts_it_exactly():
    config = _config()
    table = parameter_table(config)
    model = attnlab.build_model(config)
    assert table.total == model.num_parameters() == sum(p.numel() for p in model.parameters())
    assert closed_form(config) + sum(n for _, n in table.gap) == table.total


def test_from_towers_keeps_the_towers_weights():
    config = _config()
    a, b = attnlab.build_model(config.tower_a), attnlab.build_model(config.tower_b)
    dual = DualEncoder.from_towers(a, b, embed_dim=16)
    assert dual.tower_a is a and dual.config.tower_b == config.tower_b
    with pytest.raises(ConfigError, match="Encoder or VisionTransformer"):
        DualEncoder.from_towers(a, nn.Linear(2, 2))


def test_shipped_clip_mnist_reads_its_file_and_counts_215873():
    model, tokenizer = attnlab.load(CLIP)
    assert isinstance(model, DualEncoder) and tokenizer is not None
    stored = load_file(CLIP / "model.safetensors")  # float16 on disk
    state = model.state_dict()
    assert set(stored) <= set(state)
    assert all(torch.equal(state[k], v.float()) for k, v in stored.items())
    assert parameter_table(model.config).total == model.num_parameters() == 215_873


def test_the_older_dual_encoder_layout_still_loads(tmp_path):
    """Runs saved before DualEncoderConfig: the ViT config carried the text tower in extra["dual_encoder"]."""
    new = json.loads((CLIP / "config.json").read_text())
    old = {**new["tower_a"], "extra": {"dual_encoder": {"text_config": new["tower_b"], "embed_dim": new["embed_dim"],
                                                         "pool": new["pool"]}}}
    folder = tmp_path / "old"
    shutil.copytree(CLIP, folder)
    (folder / "config.json").write_text(json.dumps(old))
    a, _ = attnlab.load(CLIP)
    b, _ = attnlab.load(folder)
    assert b.config.tower_b == a.config.tower_b and b.config.embed_dim == a.config.embed_dim
    assert all(torch.equal(a.state_dict()[k], v) for k, v in b.state_dict().items())
    (folder / "config.json").write_text(json.dumps({**old, "extra": {"dual_encoder": {"embed_dim": 3}}}))
    with pytest.raises(CheckpointError, match="text_config"):
        attnlab.load(folder)
