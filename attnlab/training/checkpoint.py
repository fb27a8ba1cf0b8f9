"""Training checkpoints: everything needed to continue a run bit-for-bit, written so a crash never loses one.

Layout of a run directory:

    out/latest                  one line: the name of the newest complete step directory
    out/best                    one line: the step directory with the lowest validation loss so far (kept when
                                pruning; written by the trainer at each evaluation that improves on it)
    out/step-00000500/          config.json, model.safetensors, tokenizer files (attnlab.load reads this alone)
                                training_state.pt: optimizer, scheduler, RNG states (torch, python, numpy),
                                                   data-sampler state and step; read with weights_only=True
                                settings.json: the recipe and training settings the run was started with

A step directory is written under a temporary name and renamed when complete; only then is `latest` switched
(itself through a temporary file + rename). A crash at any moment leaves `latest` naming a complete directory.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError

from attnlab.errors import CheckpointError
from attnlab.storage import (
    LATEST,
    WEIGHTS_NAME,
    atomic_write,
    config_differences,
    latest_step,
    load_state,
    read_config,
    read_tensors,
    save_model,
)

STATE_NAME = "training_state.pt"
SETTINGS_NAME = "settings.json"
BEST = "best"  # in a run folder: one line naming the step directory with the lowest validation loss


def rng_state() -> dict[str, Any]:
    """Every random stream a training step may touch, as tensors and plain Python values."""
    np_state = np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": {"name": np_state[0], "keys": torch.from_numpy(np_state[1].astype(np.int64)), "pos": int(np_state[2]),
                  "has_gauss": int(np_state[3]), "cached_gaussian": float(np_state[4])},
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    n = state["numpy"]
    np.random.set_state((n["name"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"],
                         n["cached_gaussian"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def step_name(step: int) -> str:
    return f"step-{step:08d}"


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save_checkpoint(out: str | Path, step: int, model, *, optimizer=None, scheduler=None, tokenizer=None,
                    data_state: dict[str, Any] | None = None, settings: dict[str, Any] | None = None,
                    keep: int = 2, optimizer_state: dict[str, Any] | None = None, protect: str | None = None,
                    _before_commit=None) -> Path:
    """Write out/step-XXXXXXXX completely, then point out/latest at it; prune all but the newest `keep` and the
    step directory named `protect` (the best one so far, which may be older than those).

    `optimizer_state` stands in for `optimizer.state_dict()` when the optimizer's own state is sharded (FSDP:
    the trainer passes the state gathered to rank 0, in the same index-keyed layout).

    `_before_commit` is a test hook called after the files are written and before the rename (to simulate a
    crash mid-save)."""
    out = Path(out)
    final = out / step_name(step)
    tmp = out / f".{final.name}.tmp-{os.getpid()}"
    try:
        out.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        _write_step(tmp, model, tokenizer, optimizer, optimizer_state, scheduler, data_state, settings, step)
        if _before_commit is not None:
            _before_commit(tmp)
    except (OSError, SafetensorError) as exc:  # a full disk, a quota, a read-only folder: the old run stays whole
        shutil.rmtree(tmp, ignore_errors=True)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        try:
            kept = latest_checkpoint(out)
        except CheckpointError:
            kept = None
        raise CheckpointError(f"could not save the step {step} checkpoint in {out}: {reason}; "
                              f"{f'the previous checkpoint {kept} is intact' if kept else 'no checkpoint was saved'}"
                              " (free some space, or save to another --out)") from None
    if final.exists():  # re-saving the same step: move the old one aside first, rename is atomic on one fs
        old = out / f".{final.name}.old-{os.getpid()}"
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)
    _fsync_dir(out)
    try:
        atomic_write(out / LATEST, lambda p: Path(p).write_text(final.name + "\n"))
    except OSError as exc:  # the step directory is whole; `latest` (replaced atomically or not at all) is too
        raise CheckpointError(f"saved {final} but could not point {out / LATEST} at it: {exc.strerror or exc}; "
                              "`latest` still names the previous checkpoint (free some space, then --resume)") from None
    _prune(out, keep, final.name, protect)
    return final


def point_best(out: str | Path, step_dir: Path) -> None:
    """out/best names `step_dir` (replaced atomically, as `latest` is): the checkpoint with the lowest validation
    loss, for `attnlab generate OUT/step-...` and for people reading the run folder."""
    atomic_write(Path(out) / BEST, lambda tmp: Path(tmp).write_text(Path(step_dir).name + "\n"))


def _write_step(tmp: Path, model, tokenizer, optimizer, optimizer_state, scheduler, data_state, settings,
                step: int) -> None:
    """Every file of one step directory, written and flushed to disk under its temporary name."""
    save_model(model, tmp, tokenizer=tokenizer)
    state = {"step": int(step), "rng": rng_state(), "data": data_state or {},
             "optimizer": optimizer.state_dict() if optimizer is not None else optimizer_state,
             "scheduler": scheduler.state_dict() if scheduler is not None else None}
    torch.save(state, tmp / STATE_NAME)
    (tmp / SETTINGS_NAME).write_text(json.dumps(settings or {}, indent=2, sort_keys=True, default=str) + "\n")
    for f in tmp.iterdir():
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())
    _fsync_dir(tmp)


def _prune(out: Path, keep: int, current: str, protect: str | None = None) -> None:
    for stale in out.glob(".step-*"):  # temporary directories of runs killed mid-save: never complete, never read
        if stale.is_dir() and not stale.name.endswith(f"-{os.getpid()}"):
            shutil.rmtree(stale, ignore_errors=True)
    steps = sorted(p.name for p in out.glob("step-*") if p.is_dir())
    for name in steps[:-keep] if keep > 0 else []:
        if name not in (current, protect):
            shutil.rmtree(out / name, ignore_errors=True)


def latest_checkpoint(out: str | Path) -> Path | None:
    """The directory `out/latest` names, or None when the run has never saved. A `latest` that points at a
    missing directory is an error (something deleted it), not a fresh start."""
    return latest_step(out)


def check_compatible(path: Path, model) -> None:
    """Refuse a checkpoint whose config.json differs from the model being trained, naming the fields."""
    differ = config_differences(read_config(path), model.config)
    if differ:
        detail = ", ".join(differ[:8])
        raise CheckpointError(f"{path} was trained with an incompatible model config ({detail}); "
                              "resume with the same settings or start a new --out directory")


def read_training_state(path: Path) -> dict[str, Any]:
    file = path / STATE_NAME
    if not file.is_file():
        raise CheckpointError(f"{file} is missing: the checkpoint is incomplete")
    try:
        state = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises RuntimeError, UnpicklingError, EOFError ... on a damaged file
        raise CheckpointError(f"{file} is truncated or corrupted ({type(exc).__name__}: {exc})") from None
    if not isinstance(state, dict) or "step" not in state:
        raise CheckpointError(f"{file} is not an attnlab training state (no 'step')")
    return state


def load_checkpoint(path: str | Path, model, *, optimizer=None, scheduler=None, restore_rng: bool = True
                    ) -> dict[str, Any]:
    """Load a step directory into model (+ optimizer, scheduler, RNG). Returns the training state dict."""
    path = Path(path)
    check_compatible(path, model)
    tensors = read_tensors(path / WEIGHTS_NAME)
    state = read_training_state(path)
    load_state(model, tensors, path / WEIGHTS_NAME)
    try:
        if optimizer is not None and state.get("optimizer") is not None:
            optimizer.load_state_dict(state["optimizer"])
        if scheduler is not None and state.get("scheduler") is not None:
            scheduler.load_state_dict(state["scheduler"])
    except (ValueError, KeyError, RuntimeError) as exc:
        raise CheckpointError(f"{path / STATE_NAME}: optimizer/scheduler state does not fit this model ({exc})"
                              ) from None
    if restore_rng:
        set_rng_state(state["rng"])
    return state


def export_model(step_dir: str | Path, dest: str | Path, *, half: bool = True,
                 info: dict[str, Any] | None = None) -> Path:
    """Copy the servable part of a training checkpoint (config.json, weights, tokenizer) to `dest`, without the
    optimizer state; `half` stores the float weights as float16 (loading copies them into float32 parameters;
    a quantized model's codes and scales are copied as they are).
    `info` (the command that made it, its measured result) is written beside it as trained.json."""
    from safetensors.torch import save_file

    step_dir, dest = Path(step_dir), Path(dest)
    if (step_dir / LATEST).is_file():  # a run directory: export its latest step
        step_dir = latest_checkpoint(step_dir)
    tensors = read_tensors(step_dir / WEIGHTS_NAME)
    if half:  # a quantized module's scales and mins stay as they are (float32 int8 scales would change the model)
        coded = {k.removesuffix(".qweight") for k in tensors if k.endswith(".qweight")}
        tensors = {k: v.half() if v.is_floating_point() and k.rpartition(".")[0] not in coded else v
                   for k, v in tensors.items()}
    dest.mkdir(parents=True, exist_ok=True)
    atomic_write(dest / WEIGHTS_NAME, lambda tmp: save_file({k: v.contiguous() for k, v in tensors.items()}, tmp))
    os.chmod(dest / WEIGHTS_NAME, 0o644)  # mkstemp makes 0600; package data must be readable by all
    for f in step_dir.iterdir():
        if f.is_file() and f.name not in (WEIGHTS_NAME, STATE_NAME, SETTINGS_NAME):
            shutil.copyfile(f, dest / f.name)
    if info is not None:
        (dest / "trained.json").write_text(json.dumps(info, indent=2, default=str) + "\n")
    return dest
