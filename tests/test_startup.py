"""Start-up: `attnlab models` sizes every model from its config without importing torch (over a second on its own),
through attnlab.parameter_count's closed form, which must equal the built model's count exactly."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import attnlab
from attnlab.build import build_model
from attnlab.checkpoint_config import read_config
from attnlab.cli.models import human, size
from attnlab.config import ACTIVATIONS, NORM_PLACEMENTS, NORMS, POSITIONS, DualEncoderConfig, ModelConfig
from attnlab.names import model_names
from attnlab.parameter_count import closed_form, exact_parameters, formula_gap


def built(config) -> int:
    """The reference: distinct parameters of the model built on the meta device (a tied matrix once)."""
    return build_model(config, device="meta").num_parameters()


def config_of(named):
    return attnlab.presets[named.name.removeprefix("preset:")] if named.kind == "preset" else read_config(named.path)


@pytest.mark.parametrize("name", list(attnlab.presets))
def test_exact_count_of_every_preset_is_the_built_models(name):
    config = attnlab.presets[name]
    assert exact_parameters(config) == built(config)


SHIPPED = [m for m in model_names() if m.kind == "shipped"]


@pytest.mark.parametrize("named", SHIPPED, ids=[m.name for m in SHIPPED])
def test_exact_count_of_every_shipped_checkpoint_is_the_built_models(named):
    config = config_of(named)
    assert exact_parameters(config) == built(config)


@st.composite
def model_configs(draw, topologies=("decoder", "encoder", "encoder-decoder", "vit")) -> ModelConfig:
    """A small valid ModelConfig with every option the count depends on drawn at random."""
    topology = draw(st.sampled_from(topologies))
    n_heads = draw(st.sampled_from([1, 2, 4]))
    d_head = draw(st.sampled_from([None, 2, 4, 6]))  # even: RoPE needs it
    d_model = n_heads * 2 * draw(st.integers(1, 3)) if d_head is None else 2 * draw(st.integers(1, 8))
    heads = ["none", "classifier"] + (["token_classifier"] if topology != "vit" else []) + \
        (["lm"] if topology != "vit" else [])
    head = draw(st.sampled_from(heads))
    fields = dict(
        topology=topology, vocab_size=draw(st.integers(5, 40)), d_model=d_model, n_heads=n_heads, d_head=d_head,
        n_kv_heads=draw(st.sampled_from([k for k in (None, 1, 2, 4) if k is None or n_heads % k == 0])),
        d_ff=draw(st.integers(1, 24)), n_layers=draw(st.integers(1, 3)), max_len=draw(st.integers(1, 20)),
        position=draw(st.sampled_from(POSITIONS)), position_offset=draw(st.integers(0, 3)),
        t5_num_buckets=draw(st.integers(1, 8)), activation=draw(st.sampled_from(ACTIVATIONS)),
        norm=draw(st.sampled_from(NORMS)), norm_placement=draw(st.sampled_from(NORM_PLACEMENTS)),
        final_norm=draw(st.sampled_from([None, True, False])), embedding_norm=draw(st.booleans()),
        bias=draw(st.booleans()), type_vocab_size=draw(st.integers(0, 3)), tie_embeddings=draw(st.booleans()),
        lm_head_bias=draw(st.booleans()), lm_head_transform=draw(st.booleans()), pooler=draw(st.booleans()),
        head=head, n_classes=draw(st.integers(1, 5) if head in ("classifier", "token_classifier") else st.just(0)),
    )
    if topology == "encoder-decoder":
        fields.update(n_decoder_layers=draw(st.sampled_from([None, 1, 3])), shared_embeddings=draw(st.booleans()))
    if topology == "vit":
        patch = draw(st.integers(1, 3))
        fields.update(patch_size=patch, image_size=patch * draw(st.integers(1, 3)), n_channels=draw(st.integers(1, 3)))
    return ModelConfig(**fields)


@st.composite
def any_configs(draw):
    """A ModelConfig of any topology, or a dual encoder of two encoder/ViT towers."""
    topology = draw(st.sampled_from(["decoder", "encoder", "encoder-decoder", "vit", "dual-encoder"]))
    if topology != "dual-encoder":
        return draw(model_configs((topology,)))
    towers = [draw(model_configs(("encoder", "vit"))) for _ in range(2)]
    return DualEncoderConfig(*towers, embed_dim=draw(st.integers(1, 8)))


GRID_OPTIONS = dict(vocab_size=11, d_model=12, n_heads=4, n_kv_heads=2, d_head=4, d_ff=10, n_layers=2, max_len=9,
                    position_offset=2, t5_num_buckets=5, activation="swiglu", norm="rmsnorm", embedding_norm=True,
                    bias=False, type_vocab_size=2, tie_embeddings=False, lm_head_bias=True, lm_head_transform=True,
                    pooler=True, n_classes=3, image_size=6, patch_size=3, n_channels=2)


def grid_config(topology: str, position: str) -> ModelConfig | DualEncoderConfig:
    """Every non-default option the count depends on at once, on one topology and position scheme."""
    if topology == "dual-encoder":
        return DualEncoderConfig(grid_config("vit", position), grid_config("encoder", position), embed_dim=5)
    extra = {"encoder-decoder": dict(n_decoder_layers=3, shared_embeddings=False), "vit": dict(head="classifier"),
             "encoder": dict(head="token_classifier")}.get(topology, {})
    return ModelConfig(topology=topology, position=position, **GRID_OPTIONS, **extra)


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("topology", ["decoder", "encoder", "encoder-decoder", "vit", "dual-encoder"])
def test_exact_count_of_every_topology_and_position_scheme_is_the_built_models(topology, position):
    config = grid_config(topology, position)
    assert exact_parameters(config) == built(config)


@settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_configs())
def test_exact_count_of_random_configs_is_the_built_models(config):
    assert exact_parameters(config) == built(config)
    if isinstance(config, ModelConfig):  # the seeds' formula plus its itemised gap is exact as well
        assert closed_form(config) + sum(n for _, n in formula_gap(config)) == exact_parameters(config)


def test_an_unknown_config_is_refused_and_listed_by_building_it(monkeypatch):
    """None is the count's "I do not know this one": `attnlab models` then builds it on the meta device."""
    assert exact_parameters(object()) is None
    monkeypatch.setattr("attnlab.parameter_count.exact_parameters", lambda config: None)
    named = next(m for m in model_names() if m.name == "tiny-llama")
    assert size(named) == human(built(attnlab.presets["tiny-llama"]))


def test_models_command_imports_no_torch_and_prints_the_built_sizes():
    """A fresh `attnlab models` imports no torch (counted, not timed), and each size it prints is the built
    model's count, rounded as the listing rounds it."""
    code = ("import sys, runpy; sys.argv = ['attnlab', 'models']\n"
            "try:\n    runpy.run_module('attnlab', run_name='__main__')\n"
            "except SystemExit as e:\n    assert not e.code\n"
            "print('TORCH', 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "TORCH False" in done.stdout, done.stdout[-500:]
    printed = {}
    for line in done.stdout.splitlines()[1:]:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 5:
            printed[cells[0]] = cells[3]
    counted = [m for m in model_names() if m.kind in ("shipped", "preset")]
    assert counted and all(m.name in printed for m in counted), sorted(printed)
    assert {m.name: printed[m.name] for m in counted} == {m.name: human(built(config_of(m))) for m in counted}


def test_startup_benchmark_times_each_command_per_round_and_writes_its_table(tmp_path, monkeypatch, capsys):
    """The benchmark's machinery on stand-in commands (a bare `python -c pass` each): every command timed once
    per round in wall and CPU time, the targets beside them, the JSON under --out."""
    import json

    from attnlab.benchmarks import startup

    monkeypatch.setattr(startup, "command_lines", lambda: {label: [sys.executable, "-c", "pass"]
                                                           for label in startup.CASES})
    assert startup.main(["--rounds", "2", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "attnlab models" in printed and "1.0" in printed and "results written to" in printed
    saved = json.loads((tmp_path / "startup.json").read_text())
    assert [r["command"] for r in saved["rows"]] == list(startup.CASES)
    for row in saved["rows"]:
        times = saved["times"][row["command"]]
        assert len(times["wall"]) == len(times["cpu"]) == 2
        assert 0 < row["cpu_median"] and 0 < row["wall_median"] < 30
        assert row["target"] == startup.CASES[row["command"]][1]
