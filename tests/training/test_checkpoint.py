"""Checkpoints: exact resume, crash-safe saving, refusal of damaged or incompatible checkpoints, and the
non-finite-loss stop that keeps the last good checkpoint."""

import json

import pytest
import torch
from conftest import TinyLMTask

from attnlab import CheckpointError, load
from attnlab.training import NonFiniteLoss, Trainer, TrainSettings, latest_checkpoint, load_checkpoint
from attnlab.training.checkpoint import read_training_state, save_checkpoint

SETTINGS = dict(steps=8, batch_size=4, lr=3e-3, warmup=3, accum=2, grad_clip=0.5, eval_every=4, log_every=100,
                save_every=0, seed=7, plot=False)


def _train(out, stop_at=None, resume=False, **changes):
    task = TinyLMTask(dropout=0.1, seed=0)  # dropout: the global torch RNG must be restored too
    trainer = Trainer(task, TrainSettings(**{**SETTINGS, **changes}), out, quiet=True)
    trainer.fit(resume=resume, stop_at=stop_at)
    return trainer


def _losses(out):
    return [json.loads(line)["loss"] for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_interrupted_and_resumed_run_equals_uninterrupted_run_exactly(tmp_path):
    whole = _train(tmp_path / "whole")
    _train(tmp_path / "split", stop_at=3)  # "interrupted" after step 3 (saved there)
    with open(tmp_path / "split" / "metrics.jsonl", "a") as f:  # a step done after the save, before the crash
        f.write('{"step": 4, "loss": 99.0}\n')
    # scramble every random stream so that only the checkpoint can restore them
    torch.manual_seed(12345)
    resumed = _train(tmp_path / "split", resume=True)
    assert resumed.step == 8
    assert _losses(tmp_path / "split") == _losses(tmp_path / "whole")  # bit-for-bit, not approximately
    assert len(_losses(tmp_path / "whole")) == 8
    for (name, a), b in zip(whole.model.state_dict().items(), resumed.model.state_dict().values(), strict=False):
        assert torch.equal(a, b), name


def test_crash_mid_save_leaves_previous_checkpoint_loadable(tmp_path):
    trainer = _train(tmp_path, steps=2)
    good = latest_checkpoint(tmp_path)
    assert good.name == "step-00000002"
    weights = {k: v.clone() for k, v in trainer.model.state_dict().items()}

    def crash(tmp_dir):
        raise KeyboardInterrupt("power cut while writing " + str(tmp_dir))

    with torch.no_grad():
        for p in trainer.model.parameters():
            p.add_(1.0)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(tmp_path, 3, trainer.model, optimizer=trainer.optimizer, _before_commit=crash)
    assert latest_checkpoint(tmp_path) == good
    model, _ = load(good)  # attnlab.load reads a step directory as a plain checkpoint
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, weights[name]), name
    # and the trainer resumes from it
    resumed = Trainer(TinyLMTask(dropout=0.1), TrainSettings(**{**SETTINGS, "steps": 2}), tmp_path, quiet=True)
    assert resumed.resume() and resumed.step == 2


@pytest.mark.slow
def test_crash_by_killed_process_mid_save(tmp_path):
    """A real process killed with SIGKILL while it writes step 3: step 2 stays the loadable latest."""
    import subprocess
    import sys
    import textwrap

    _train(tmp_path, steps=2)
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(__file__.rsplit('/', 1)[0])!r})
        from conftest import TinyLMTask
        from attnlab.training.checkpoint import save_checkpoint
        task = TinyLMTask()
        save_checkpoint({str(tmp_path)!r}, 3, task.model,
                        _before_commit=lambda tmp: os.kill(os.getpid(), signal.SIGKILL))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    assert latest_checkpoint(tmp_path).name == "step-00000002"
    assert not (tmp_path / "step-00000003").exists()
    load(latest_checkpoint(tmp_path))


def test_truncated_or_corrupted_files_are_refused_by_name(tmp_path):
    trainer = _train(tmp_path, steps=1)
    path = latest_checkpoint(tmp_path)
    weights = path / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_checkpoint(path, trainer.model)
    weights.write_bytes(data)
    state = path / "training_state.pt"
    blob = state.read_bytes()
    state.write_bytes(blob[: len(blob) // 3])
    with pytest.raises(CheckpointError, match="training_state.pt"):
        read_training_state(path)
    state.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="training_state.pt"):
        load_checkpoint(path, trainer.model)
    (path / "config.json").write_text("{ broken")
    with pytest.raises(CheckpointError, match="config.json"):
        load_checkpoint(path, trainer.model)


def test_incompatible_config_is_refused_naming_the_field(tmp_path):
    _train(tmp_path, steps=1)
    other = TinyLMTask()
    other.model.config = other.model.config.replace(d_ff=128)
    with pytest.raises(CheckpointError, match="d_ff"):
        load_checkpoint(latest_checkpoint(tmp_path), other.model)


def test_non_finite_loss_stops_with_message_and_keeps_last_good_checkpoint(tmp_path):
    task = TinyLMTask(nan_at_call=5)  # accum=1: the 5th call is step 5
    trainer = Trainer(task, TrainSettings(**{**SETTINGS, "accum": 1, "save_every": 1, "keep": 2}), tmp_path,
                      quiet=True)
    with pytest.raises(NonFiniteLoss, match=r"nan at step 5.*step-00000004"):
        trainer.fit()
    assert trainer.step == 4
    good = latest_checkpoint(tmp_path)
    assert good.name == "step-00000004"
    model, _ = load(good)
    for name, tensor in model.state_dict().items():  # the bad step never touched the weights
        assert torch.equal(tensor, trainer.model.state_dict()[name]), name
    assert all(torch.isfinite(t).all() for t in model.state_dict().values())
