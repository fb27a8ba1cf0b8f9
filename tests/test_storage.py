"""attnlab's own storage: file modes, training run folders, the one config reader, GPT-2's residual init,
and loads that allocate nothing before the file's header agrees with the config."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

import pytest
import torch

import attnlab
from attnlab import ModelConfig, build_model
from attnlab.counting import parameter_table
from attnlab.errors import CheckpointError

TINY = ModelConfig(topology="decoder", vocab_size=40, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16)


@pytest.fixture
def umask():
    before = os.umask(0o022)
    os.umask(before)

    def set_(mask: int) -> None:
        os.umask(mask)

    yield set_
    os.umask(before)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_saved_files_keep_the_users_umask(tmp_path, umask, mask, mode):
    umask(mask)
    folder = build_model(TINY).save(tmp_path / "ckpt")
    for name in ("config.json", "model.safetensors"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == mode, name


def _run(tmp_path: Path, pointer: str = "file") -> tuple[Path, torch.nn.Module]:
    """A training run folder as `attnlab train --out` writes it: step folders and `latest` naming the newest."""
    run = tmp_path / "runs" / "gpt-char"
    models = []
    for step in (100, 200):
        torch.manual_seed(step)
        models.append(build_model(TINY))
        models[-1].save(run / f"step-{step:08d}")
    if pointer == "file":
        (run / "latest").write_text("step-00000200\n")
    elif pointer == "link":
        os.symlink("step-00000200", run / "latest")
    return run, models[-1]


@pytest.mark.parametrize("pointer", ["file", "link", "none"])
def test_a_training_run_folder_loads_its_newest_step(tmp_path, pointer):
    run, newest = _run(tmp_path, pointer)
    for path in (run, run / "latest") if pointer != "none" else (run,):
        model, _ = attnlab.load(path)
        assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), newest.state_dict().values(),
                                                       strict=True)), path


def test_a_run_whose_latest_names_a_missing_step_is_refused(tmp_path):
    run, _ = _run(tmp_path)
    (run / "latest").write_text("step-00000300\n")
    with pytest.raises(CheckpointError, match="step-00000300"):
        attnlab.load(run)
    (run / "latest").write_text("../../elsewhere\n")
    with pytest.raises(CheckpointError, match="does not name a step directory") as caught:
        attnlab.load(run)
    assert "elsewhere" not in str(caught.value)


@pytest.mark.parametrize("target", ["secret-file", "secret-folder", "dotdot-step"])
def test_a_latest_leading_outside_its_run_is_refused_by_name_without_its_content(tmp_path, target):
    """A `latest` linked to a small file elsewhere (a token, /etc/passwd) must not have its content quoted in the
    error (the explorer sends errors over HTTP); one leading to a folder outside the run is refused too."""
    run, _ = _run(tmp_path, pointer="none")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-TOKEN=hunter2\n")
    outside = tmp_path / "step-00000900"
    build_model(TINY).save(outside)
    if target == "secret-file":
        os.symlink(secret, run / "latest")
    elif target == "secret-folder":
        os.symlink(outside, run / "latest")
    else:
        os.symlink(run / ".." / ".." / "step-00000900", run / "latest")
    for path in (run, run / "latest"):
        with pytest.raises(CheckpointError) as caught:
            attnlab.load(path)
        message = str(caught.value)
        assert "hunter2" not in message and "TOP-SECRET" not in message
        assert str(run / "latest") in message and "outside" in message


def test_a_latest_holding_text_that_is_not_a_step_name_is_not_quoted(tmp_path):
    run, _ = _run(tmp_path, pointer="none")
    (run / "latest").write_text("TOP-SECRET-TOKEN=hunter2\n")
    with pytest.raises(CheckpointError, match="does not name a step directory") as caught:
        attnlab.load(run)
    assert "hunter2" not in str(caught.value)


def test_training_resume_reads_config_through_the_same_reader(tmp_path):
    """check_compatible (resume) refuses a changed field by name and a damaged config.json like attnlab.load."""
    from attnlab.training.checkpoint import check_compatible

    folder = build_model(TINY).save(tmp_path / "ckpt")
    check_compatible(folder, build_model(TINY))
    with pytest.raises(CheckpointError, match="d_ff: checkpoint 32 vs now 64"):
        check_compatible(folder, build_model(TINY.replace(d_ff=64)))
    (folder / "config.json").write_text("[" * 100_000)
    with pytest.raises(CheckpointError, match="too deeply"):
        check_compatible(folder, build_model(TINY))


def test_loading_allocates_no_random_init_and_keeps_ties_and_fixed_tables(tmp_path):
    """Meta build + uninitialised storage: tied matrices stay one Parameter, sinusoid/RoPE/ALiBi tables are
    recomputed, and the loaded model computes exactly what the saved one did."""
    for position in ("sinusoidal", "rope", "alibi"):
        torch.manual_seed(0)
        model = build_model(TINY.replace(position=position)).eval()
        model.save(tmp_path / position)
        loaded, _ = attnlab.load(tmp_path / position)
        assert loaded.lm_head.proj.weight is loaded.tokens.weight
        assert loaded.num_parameters() == model.num_parameters()
        for (name, a), b in zip(model.named_buffers(), loaded.buffers(), strict=True):
            assert torch.equal(a, b), (position, name)
        ids = torch.randint(0, 40, (2, 9))
        with torch.no_grad():
            assert torch.equal(model(ids).logits, loaded(ids).logits), position


def test_scaled_residual_init_is_gpt2s_and_off_by_default():
    config = TINY.replace(d_model=256, n_heads=4, d_ff=512, n_layers=8, max_len=8, vocab_size=64)
    torch.manual_seed(0)
    plain = build_model(config)
    torch.manual_seed(0)
    scaled = build_model(config.replace(scaled_residual_init=True))
    assert not config.scaled_residual_init  # the default: presets and shipped checkpoints train as before
    target = 0.02 / math.sqrt(2 * 8)
    outputs = [n for n, _ in scaled.named_parameters() if n.endswith(("attn.out.weight", "ffn.down.weight"))]
    assert len(outputs) == 16
    for name, p in scaled.named_parameters():
        if name in outputs:
            assert float(p.std()) == pytest.approx(target, rel=0.03), name
            assert float(dict(plain.named_parameters())[name].std()) == pytest.approx(0.02, rel=0.03), name
        else:  # the first pass draws the same numbers: only the residual outputs change
            assert torch.equal(p, dict(plain.named_parameters())[name]), name


def test_config_json_round_trip_of_the_new_fields(tmp_path):
    config = ModelConfig(topology="encoder-decoder", shared_embeddings=False, tie_embeddings=False,
                         scaled_residual_init=True)
    assert ModelConfig.from_dict(json.loads(config.to_json())) == config
    with pytest.raises(attnlab.ConfigError, match="shared_embeddings"):
        ModelConfig(topology="decoder", shared_embeddings=False)
    model = build_model(config)
    table = parameter_table(config)
    assert table.total == model.num_parameters() == table.formula + sum(n for _, n in table.gap)
    assert model.source_tokens is not None and model.source_tokens.weight is not model.tokens.weight
    model.save(tmp_path / "ed")
    loaded, _ = attnlab.load(tmp_path / "ed")
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), loaded.state_dict().values(),
                                                   strict=True))
