"""What keeps a training run's memory small, checked where it is deterministic: which libraries get imported (in
a fresh interpreter, through sys.modules), how large the evaluation's forwards are. Never a timed or RSS
threshold: those flake on a loaded machine; `python -m attnlab.benchmarks.data --only-baby-gpt` measures RSS.

Issue 25.6 (attnlab's peak RSS on nanoGPT's baby GPT <= 1.2x nanoGPT's train.py): boto3 behind TensorBoard was
~9 MB, matplotlib ~35 MB and torch._dynamo ~60 MB. Issue 53.5 (<= 1.0x): torch.optim's AdamW imports
torch._dynamo at its construction (72 MB, ~1.2 CPU-seconds; nanoGPT's train.py pays it), and asking whether the
model was sharded imported torch.distributed.fsdp with DTensor (~45 MB) at the first checkpoint; a whole
one-process run now imports neither."""

import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest
import torch

HEAVY = ("tensorboard", "torch.utils.tensorboard", "matplotlib", "torch._dynamo", "boto3", "botocore", "wandb",
         "torch.distributed.fsdp", "torch.distributed.tensor")


def _loaded_after(script: str) -> list[str]:
    """The HEAVY modules in sys.modules after `script` runs in a fresh interpreter."""
    code = f"import json, sys\n{script}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_training_code_imports_no_logger_plotter_or_compiler():
    assert _loaded_after("import attnlab.training, attnlab.training.run, attnlab.cli.train") == []


def test_building_gpt_char_imports_no_logger_plotter_or_compiler(tmp_path):
    """The recipe's build (scan, tokenizer, token file, model, bigram baseline) needs none of them: torch._dynamo
    comes with torch's optimizer, TensorBoard with the first logged step, matplotlib with the plot at the end."""
    (tmp_path / "text.txt").write_text("def f(x):\n    return x + 1\n\n" * 400)
    script = f"""
from attnlab.training.recipes import get_recipe
from attnlab.training.settings import resolve_params
recipe = get_recipe("gpt-char")
keys = {{"data": {str(tmp_path / "text.txt")!r}, "d_model": "32", "n_heads": "2", "d_ff": "64", "n_layers": "1",
        "seq_len": "16", "batch_size": "4"}}
settings, params = resolve_params(recipe, keys)
task = recipe.build({{**params, "batch_size": settings.batch_size, "tokenizer": None, "out_dir": {str(tmp_path)!r}}})
assert task.bigram > 0
"""
    assert _loaded_after(script) == []


def test_a_whole_run_imports_neither_the_compiler_nor_fsdp(tmp_path):
    """`attnlab train` (run_train) without plot, logger or samples: its AdamW steps, evaluations and checkpoints
    (two saves, a resume point and the end) load none of HEAVY; with torch.optim.AdamW the optimizer's first
    add_param_group imports torch._dynamo, and is_sharded used to import torch.distributed.fsdp."""
    (tmp_path / "text.txt").write_text("def f(x):\n    return x + 1\n\n" * 400)
    script = f"""
from attnlab.training.run import run_train
keys = {{"data": {str(tmp_path / "text.txt")!r}, "d_model": "32", "n_heads": "2", "d_ff": "64", "n_layers": "1",
        "seq_len": "16", "batch_size": "4", "steps": "4", "eval_every": "2", "eval_windows": "8",
        "sample_tokens": "0", "plot": "false", "report": "none", "threads": "1"}}
result = run_train("gpt-char", out={str(tmp_path / "run")!r}, overrides=keys, quiet=True)
assert result["step"] == 4 and result["checkpoint"].endswith("step-00000004")
"""
    assert _loaded_after(script) == []


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None, reason="tensorboard not installed")
@pytest.mark.skipif(importlib.util.find_spec("boto3") is None, reason="boto3 not installed: nothing to keep out")
def test_the_tensorboard_log_keeps_boto3_out_and_boto3_still_imports_after(tmp_path):
    script = f"""
from pathlib import Path
from attnlab.training.report import Reporter
r = Reporter(("tensorboard",), {str(tmp_path)!r})
r.scalars(1, {{"loss": 2.5}})
r.close()
assert len(list(Path({str(tmp_path)!r}).glob("events.out.tfevents.*"))) == 1
print(json.dumps([m for m in ("boto3", "botocore") if m in sys.modules]))
import boto3  # the stand-ins are gone: a later import is an ordinary one
"""
    proc = subprocess.run([sys.executable, "-c", "import json, sys\n" + script], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None, reason="tensorboard not installed")
@pytest.mark.skipif(importlib.util.find_spec("boto3") is None, reason="boto3 not installed")
def test_a_process_that_imported_boto3_keeps_it():
    script = """
import boto3
from attnlab.training.report import import_summary_writer
import_summary_writer()
assert sys.modules["boto3"] is boto3 and sys.modules["botocore"] is not None
"""
    proc = subprocess.run([sys.executable, "-c", "import sys\n" + script], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_evaluation_runs_windows_in_groups_of_the_training_batch(tmp_path):
    """A no-grad forward of batch_size windows holds less than a training step: the evaluation adds no peak."""
    from attnlab.training.recipes import get_recipe
    from attnlab.training.settings import resolve_params

    (tmp_path / "text.txt").write_text("def f(x):\n    return x + 1\n\n" * 400)
    recipe = get_recipe("gpt-char")
    keys = {"data": str(tmp_path / "text.txt"), "d_model": "32", "n_heads": "2", "d_ff": "64", "n_layers": "1",
            "seq_len": "16", "batch_size": "5"}
    settings, params = resolve_params(recipe, keys)
    task = recipe.build({**params, "batch_size": settings.batch_size, "tokenizer": None, "out_dir": str(tmp_path)})
    assert len(task.val_windows) > 2 * 5  # several groups, the last one shorter
    sizes = []
    forward = task.model.forward
    task.model.forward = lambda ids, *a, **k: sizes.append(len(ids)) or forward(ids, *a, **k)
    with torch.no_grad():
        metrics = task.evaluate(task.model)
    assert max(sizes) == 5 and sum(sizes) == len(task.val_windows)
    assert metrics["val_loss"] > 0


@pytest.mark.skipif(importlib.util.find_spec("nano_gpt") is None, reason="the nano-gpt package is not installed")
def test_the_baby_gpt_benchmark_runs_nanogpts_train_loop(tmp_path):
    """The peer side of `python -m attnlab.benchmarks.data --only-baby-gpt`, 1 step (train.py's iterations 0 and
    1, estimate_loss at 0: no checkpoint, as train.py writes one only for an improvement after iteration 0)."""
    (tmp_path / "text.txt").write_text("def f(x):\n    return x + 1\n\n" * 2000)
    proc = subprocess.run([sys.executable, "-m", "attnlab.benchmarks.data", "--child", "baby-nanogpt",
                           str(tmp_path / "text.txt"), str(tmp_path), "train", "1"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    vocab = len(set((tmp_path / "text.txt").read_text()))
    assert 0 < result["val_loss"] < 1.5 * math.log(vocab)  # about ln(vocab) at initialisation
    assert result["peak"] >= result["after_imports"] > 0 and result["cpu"] > 0
    assert (tmp_path / "train.bin").is_file() and not (tmp_path / "ckpt.pt").exists()
