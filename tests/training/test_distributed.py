"""`attnlab train` under torchrun with 2 gloo processes on CPU equals one process with the same global batch,
with DistributedDataParallel (strategy=ddp) and with FSDP2 sharding (strategy=fsdp)."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file
from tiny_runs import PROSE

import attnlab
from attnlab.errors import ConfigError
from attnlab.training.run import run_train
from attnlab.training.trainer import TrainSettings

KEYS = ["steps=4", "batch_size=4", "d_model=32", "n_heads=2", "d_ff=64", "n_layers=2", "seq_len=16",
        "eval_every=2", "log_every=1", "threads=1", "plot=false", "warmup=2", "lr=3e-3", "dropout=0.0",
        "sample_tokens=8"]  # samples fit seq_len=16 (no sliding window needed)


def _corpus_keys(tmp_path, *extra):
    data = tmp_path / "corpus.txt"
    data.write_text(PROSE)
    return [*KEYS, f"data={data}", *extra]


def _single(out, keys, resume=False):
    run_train("gpt-char", out=str(out), quiet=True, resume=resume, overrides=dict(k.split("=", 1) for k in keys))


def _torchrun(out, keys, resume=False) -> str:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "attnlab",
           "train", "gpt-char", "--out", str(out), *keys, *(["--resume"] if resume else [])]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stderr


def _weights(run, step=4):
    return load_file(run / f"step-{step:08d}" / "model.safetensors")


def _metrics(run):
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def _assert_weights_close(single, other):
    """Gradients averaged across ranks (all-reduce or reduce-scatter: sum, then divide) round differently from
    one mean: ~1e-9. Adam divides by sqrt(v), so where the exact gradient is ~0 (the key biases, whose gradient
    is exactly zero in exact arithmetic) rounding noise becomes a full-size step: those few elements may differ
    by up to ~1e-5 after 4 steps; more than 99% of all elements (measured: 99.8%) agree within 1e-6."""
    assert single.keys() == other.keys()
    diffs = torch.cat([(other[n] - single[n]).abs().flatten() for n in single])
    assert float(diffs.max()) < 1e-5
    assert float((diffs <= 1e-6).float().mean()) > 0.99


@pytest.mark.slow
def test_two_gloo_processes_equal_one_process(tmp_path):
    keys = _corpus_keys(tmp_path)
    _single(tmp_path / "single", keys)
    _torchrun(tmp_path / "ddp", keys)
    _assert_weights_close(_weights(tmp_path / "single"), _weights(tmp_path / "ddp"))
    losses = [[r["loss"] for r in _metrics(tmp_path / run)] for run in ("single", "ddp")]
    assert len(losses[0]) == 4
    torch.testing.assert_close(torch.tensor(losses[1]), torch.tensor(losses[0]), rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_fsdp_two_gloo_processes_equal_one_process(tmp_path):
    """Sharded weights, gradients and AdamW state give the single-process trajectory; the checkpoint holds the
    full tensors under the single-process names, loads with attnlab.load, and its optimizer state has the
    single-process layout and values (so it resumes anywhere)."""
    keys = _corpus_keys(tmp_path, "grad_clip=0.5")  # a low clip so clipping by the global norm is exercised
    _single(tmp_path / "single", keys)
    log = _torchrun(tmp_path / "fsdp", keys + ["strategy=fsdp"])
    single, fsdp = _weights(tmp_path / "single"), _weights(tmp_path / "fsdp")
    # real sharding: 2 Blocks + the root, and rank 0 holds the first ceil(rows / 2) rows of every parameter
    # (the tied embedding/head once, as the file stores it), not a replica
    first_half = sum(-(-t.shape[0] // 2) * t[0].numel() for t in single.values())
    total = sum(t.numel() for t in single.values())
    assert f"fsdp: 3 sharded units over 2 ranks; rank 0 holds {first_half:,} of {total:,} parameters" in log
    assert all(single[n].shape == fsdp[n].shape for n in single)  # full, not one rank's shard
    _assert_weights_close(single, fsdp)
    records = [_metrics(tmp_path / run) for run in ("single", "fsdp")]
    assert [r["step"] for r in records[1]] == [1, 2, 3, 4]
    for key in ("loss", "grad_norm"):  # grad_norm: the norm over all shards, as one process computes it
        torch.testing.assert_close(torch.tensor([r[key] for r in records[1]]),
                                   torch.tensor([r[key] for r in records[0]]), rtol=1e-6, atol=1e-6)
    assert any(r["grad_norm"] > 0.5 for r in records[0])  # the clip was active on some step
    states = [torch.load(tmp_path / run / "step-00000004" / "training_state.pt", weights_only=True)["optimizer"]
              for run in ("single", "fsdp")]
    assert [g["params"] for g in states[1]["param_groups"]] == [g["params"] for g in states[0]["param_groups"]]
    assert states[1]["state"].keys() == states[0]["state"].keys()
    for i, moments in states[0]["state"].items():
        assert float(states[1]["state"][i]["step"]) == float(moments["step"]) == 4.0
        torch.testing.assert_close(states[1]["state"][i]["exp_avg"], moments["exp_avg"], rtol=0, atol=1e-6)
    model, _ = attnlab.load(tmp_path / "fsdp" / "step-00000004")
    loaded = model.state_dict()
    assert all(torch.equal(loaded[name], tensor) for name, tensor in fsdp.items())
    assert loaded["tokens.weight"] is loaded["lm_head.proj.weight"] or torch.equal(loaded["tokens.weight"],
                                                                                   loaded["lm_head.proj.weight"])


@pytest.mark.slow
def test_fsdp_resume_equals_uninterrupted_fsdp_run(tmp_path):
    """An FSDP run saving at steps 2 and 4; a copy rolled back to its step-2 checkpoint (what a run killed
    after step 2 leaves) and resumed under FSDP must redo steps 3-4 bit for bit: the optimizer state gathered
    to rank 0 and scattered back to the shards loses nothing. One process resumes the same checkpoint too."""
    keys = _corpus_keys(tmp_path, "strategy=fsdp", "save_every=2", "keep=3")
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    _torchrun(whole, keys)
    shutil.copytree(whole, parts)
    shutil.rmtree(parts / "step-00000004")
    (parts / "latest").write_text("step-00000002\n")
    _torchrun(parts, keys, resume=True)
    expected, got = _weights(whole), _weights(parts)
    assert expected.keys() == got.keys()
    assert all(torch.equal(got[n], expected[n]) for n in expected)
    assert [r["loss"] for r in _metrics(parts)] == [r["loss"] for r in _metrics(whole)]
    assert [r["step"] for r in _metrics(parts)] == [1, 2, 3, 4]
    name = "lm_head.proj.weight"
    assert not torch.equal(_weights(whole, 2)[name], expected[name])  # steps 3-4 moved the weights
    # the FSDP checkpoint has the single-process layout: one process resumes it too (to the rounding of the
    # gradient average, as in the DDP comparison)
    mixed = tmp_path / "mixed"
    shutil.copytree(parts, mixed)
    shutil.rmtree(mixed / "step-00000004")
    (mixed / "latest").write_text("step-00000002\n")
    _single(mixed, keys, resume=True)
    _assert_weights_close(expected, _weights(mixed))
    torch.testing.assert_close(torch.tensor([r["loss"] for r in _metrics(mixed)]),
                               torch.tensor([r["loss"] for r in _metrics(whole)]), rtol=1e-6, atol=1e-6)


def test_strategy_other_than_ddp_or_fsdp_is_refused():
    with pytest.raises(ConfigError, match="allowed ddp, fsdp"):
        TrainSettings(strategy="zero3")


def test_fsdp_refuses_models_it_cannot_shard():
    """Refused with a ConfigError naming the cause and the way out, before any collective (no process group)."""
    from torch import nn

    from attnlab import ModelConfig, build_model
    from attnlab.training.distributed import shard_fully

    with pytest.raises(ConfigError, match="has none; use strategy=ddp"):
        shard_fully(nn.Linear(4, 4))
    torch.manual_seed(0)
    model = build_model(ModelConfig(topology="decoder", vocab_size=20, d_model=8, n_heads=2, d_ff=16, n_layers=1,
                                    max_len=8))
    model.logit_scale = nn.Parameter(torch.tensor(1.0))  # a 0-dimensional parameter, as DualEncoder has
    with pytest.raises(ConfigError, match=r"0-dimensional parameters \['logit_scale'\].*use strategy=ddp"):
        shard_fully(model)
