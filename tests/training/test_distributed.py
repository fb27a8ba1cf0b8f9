"""`attnlab train` under torchrun with 2 gloo processes on CPU equals one process with the same global batch."""

import json
import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from attnlab.training.cli import run_train

TEXT = "".join(f"line {i}: the quick brown fox jumps over the lazy dog {i * 7 % 13}.\n" for i in range(300))
KEYS = ["steps=4", "batch_size=4", "d_model=32", "n_heads=2", "d_ff=64", "n_layers=2", "seq_len=16",
        "eval_every=2", "log_every=1", "threads=1", "plot=false", "warmup=2", "lr=3e-3", "dropout=0.0"]


@pytest.mark.slow
def test_two_gloo_processes_equal_one_process(tmp_path):
    data = tmp_path / "corpus.txt"
    data.write_text(TEXT)
    keys = [*KEYS, f"data={data}"]
    run_train("gpt-char", out=str(tmp_path / "single"), quiet=True,
              overrides=dict(k.split("=", 1) for k in keys))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "attnlab",
           "train", "gpt-char", "--out", str(tmp_path / "ddp"), *keys]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    single = load_file(tmp_path / "single" / "step-00000004" / "model.safetensors")
    ddp = load_file(tmp_path / "ddp" / "step-00000004" / "model.safetensors")
    assert single.keys() == ddp.keys()
    # Gradients are averaged by an all-reduce (sum, then divide) instead of one mean: rounding differences of
    # ~1e-9. Adam divides by sqrt(v), so where the exact gradient is ~0 (the key biases, whose gradient is
    # exactly zero in exact arithmetic) rounding noise becomes a full-size step: those few elements may differ
    # by up to ~1e-5 after 4 steps; more than 99% of all elements (measured: 99.8%) agree within 1e-6.
    diffs = torch.cat([(ddp[n] - single[n]).abs().flatten() for n in single])
    assert float(diffs.max()) < 1e-5
    assert float((diffs <= 1e-6).float().mean()) > 0.99
    losses = [[json.loads(line)["loss"] for line in (tmp_path / run / "metrics.jsonl").read_text().splitlines()]
              for run in ("single", "ddp")]
    assert len(losses[0]) == 4
    torch.testing.assert_close(torch.tensor(losses[1]), torch.tensor(losses[0]), rtol=1e-6, atol=1e-6)
