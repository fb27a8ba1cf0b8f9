"""Crashes lose nothing: SIGKILL a training run at seeded random moments (some inside checkpoint writes), resume,
and compare with a run that was never interrupted. Non-finite losses stop training and keep the last good
checkpoint."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from _cases import tally

import attnlab
from attnlab.errors import AttnlabError
from attnlab.training.checkpoint import latest_checkpoint, read_training_state
from attnlab.training.trainer import NonFiniteLoss, Trainer, TrainSettings

HERE = Path(__file__).resolve().parent
STEPS, SLOW_SAVE = 12, 0.3
KILL_MOMENTS = ("training", "saving", "saving", "training")  # what each SIGKILL interrupts, in order


def _losses(out: Path) -> dict[int, float]:
    """Step -> loss, the last record of each step winning (a step redone after a crash is logged twice)."""
    losses = {}
    for line in (out / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        losses[record["step"]] = record["loss"]
    return losses


def _reference(tmp_path: Path) -> tuple[dict[int, float], dict[str, torch.Tensor]]:
    sys.path.insert(0, str(HERE))
    import crash_run

    settings = TrainSettings(steps=STEPS, batch_size=4, lr=3e-3, warmup=2, eval_every=0, log_every=1000,
                             save_every=1, keep=2, seed=0, plot=False)
    out = tmp_path / "uninterrupted"
    Trainer(crash_run.TinyLM(), settings, out, quiet=True).fit()
    model, _ = attnlab.load(latest_checkpoint(out))
    return _losses(out), model.state_dict()


def _wait_for(predicate, proc, timeout=120.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            return False
        if predicate():
            return True
        time.sleep(0.01)
    raise AssertionError("the training subprocess made no progress in time")


def _check_latest_loads(out: Path) -> int:
    """The checkpoint `latest` names is complete: the model loads and so does the training state."""
    path = latest_checkpoint(out)
    if path is None:
        return 0
    model, _ = attnlab.load(path)
    state = read_training_state(path)
    assert isinstance(model, torch.nn.Module) and int(state["step"]) == int(path.name.split("-")[1])
    return int(state["step"])


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_sigkill_at_random_moments_then_resume_equals_uninterrupted(tmp_path):
    ref_losses, ref_state = _reference(tmp_path)
    assert sorted(ref_losses) == list(range(1, STEPS + 1))

    out = tmp_path / "crashed"
    out.mkdir()
    rng = random.Random(8)
    command = [sys.executable, str(HERE / "crash_run.py"), str(out), str(STEPS), str(SLOW_SAVE)]
    env = {**os.environ, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1"}
    kills, saved_at_kill, latest = [], [], 0

    def last_logged() -> int:
        lines = (out / "metrics.jsonl").read_text().splitlines() if (out / "metrics.jsonl").exists() else []
        try:
            return json.loads(lines[-1])["step"] if lines else 0
        except json.JSONDecodeError:  # a line being written right now
            return 0

    for moment in KILL_MOMENTS:
        target = min(STEPS - 1, latest + rng.randint(1, 3))  # each kill lands a few steps further on
        (out / "saving").unlink(missing_ok=True)
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            if moment == "training":  # a random time after step `target` was logged
                alive = _wait_for(lambda t=target: last_logged() >= t, proc)
                time.sleep(rng.uniform(0.0, 0.3))
            else:  # inside the write of checkpoint `target`: files half-written in its temporary directory
                name = f"step-{target:08d}"
                alive = _wait_for(lambda n=name: (out / "saving").exists() and n in (out / "saving").read_text(), proc)
                time.sleep(rng.uniform(0.0, SLOW_SAVE * 0.9))
            alive = alive and proc.poll() is None
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        kills.append((moment, target, alive))
        saved = _check_latest_loads(out)
        assert saved >= latest  # never goes back
        if moment == "saving" and alive:
            assert saved < target  # the half-written checkpoint is not the one `latest` names
        latest = saved
        saved_at_kill.append(saved)
    assert sum(alive for *_, alive in kills) >= 3, kills  # the kills landed mid-run
    assert latest >= 3, saved_at_kill  # and the run made progress between them

    done = subprocess.run(command[:-1] + ["0"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _check_latest_loads(out) == STEPS

    losses = _losses(out)
    assert sorted(losses) == sorted(ref_losses)
    for step in ref_losses:  # bit-for-bit on CPU: same batches, same dropout masks, same optimizer state
        assert losses[step] == ref_losses[step], (step, losses[step], ref_losses[step], kills, saved_at_kill)
    model, _ = attnlab.load(latest_checkpoint(out))
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, ref_state[name]), name
    assert not list(out.glob(".step-*")), list(out.glob(".step-*"))  # no half-written step directory left behind
    for moment, _, alive in kills:
        tally("SIGKILL + resume", f"killed while {moment}" if alive else "process ended before the kill")


class _Poisoned:
    """Wraps crash_run.TinyLM: from step `bad` on, the loss is NaN."""

    def __init__(self, bad: int):
        sys.path.insert(0, str(HERE))
        import crash_run

        self.inner, self.bad, self.calls = crash_run.TinyLM(), bad, 0
        self.model, self.tokenizer = self.inner.model, None

    def train_batch(self, generator, batch_size):
        return self.inner.train_batch(generator, batch_size)

    def loss(self, model, batch):
        self.calls += 1
        loss, n = self.inner.loss(model, batch)
        return (loss * math.nan if self.calls >= self.bad else loss), n

    def evaluate(self, model):
        return {}

    def flops_per_item(self):
        return None


def test_non_finite_loss_stops_with_a_message_and_keeps_the_last_good_checkpoint(tmp_path):
    settings = TrainSettings(steps=8, batch_size=4, lr=3e-3, warmup=2, eval_every=0, log_every=1000,
                             save_every=2, keep=2, seed=0, plot=False)
    task = _Poisoned(bad=6)
    trainer = Trainer(task, settings, tmp_path, quiet=True)
    with pytest.raises(NonFiniteLoss) as info:
        trainer.fit()
    message = str(info.value)
    assert isinstance(info.value, AttnlabError)
    assert "nan" in message and "step 6" in message and "step-00000004" in message and "lr" in message
    path = latest_checkpoint(tmp_path)
    assert path.name == "step-00000004"
    model, _ = attnlab.load(path)
    # step 5 ran after that save, so the live weights differ; but nothing non-finite reached either
    for name, tensor in model.state_dict().items():
        assert torch.isfinite(tensor).all(), name
    for name, tensor in trainer.model.state_dict().items():
        assert torch.isfinite(tensor).all(), name
    assert trainer.step == 5  # the NaN step did not count
    tally("non-finite loss", "stopped, checkpoint kept")


@pytest.mark.slow
def test_resume_survives_a_metrics_line_cut_by_a_kill(tmp_path):
    """A SIGKILL in the middle of appending to metrics.jsonl leaves half a line; resuming must still work, and the
    log ends with each step exactly once."""
    sys.path.insert(0, str(HERE))
    import crash_run

    def settings(steps):
        return TrainSettings(steps=steps, batch_size=4, lr=3e-3, warmup=2, eval_every=0, log_every=1000,
                             save_every=1, keep=2, seed=0, plot=False)

    Trainer(crash_run.TinyLM(), settings(3), tmp_path, quiet=True).fit()
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"step": 4, "loss": 3.4')  # the kill landed here
    Trainer(crash_run.TinyLM(), settings(5), tmp_path, quiet=True).fit(resume=True)
    steps = [json.loads(line)["step"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4, 5]
