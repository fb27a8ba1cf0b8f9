"""attnlab's own checkpoint format: a directory with config.json and model.safetensors (+ tokenizer files).

safetensors holds only tensors (no code runs on load); tied matrices are stored once.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from safetensors.torch import save_model as _save_safetensors

from attnlab.config import ModelConfig
from attnlab.errors import CheckpointError, ConfigError

CONFIG_NAME, WEIGHTS_NAME = "config.json", "model.safetensors"


def atomic_write(path: Path, write) -> None:
    """Write through a temporary file in the same directory, then rename: a crash leaves the old file whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def save_model(model, directory: str | Path, tokenizer=None, format: str = "attnlab") -> Path:
    directory = Path(directory)
    if format == "hf":
        from attnlab.interop.hf import save_hf

        return save_hf(model, directory, tokenizer=tokenizer)
    if format != "attnlab":
        raise ValueError(f"format={format!r}: allowed 'attnlab' or 'hf'")
    if not hasattr(model, "config") or not isinstance(model.config, ModelConfig):
        raise CheckpointError("only attnlab models (with a ModelConfig) can be saved this way")
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write(directory / WEIGHTS_NAME, lambda tmp: _save_safetensors(model, tmp))
    atomic_write(directory / CONFIG_NAME, lambda tmp: Path(tmp).write_text(model.config.to_json() + "\n"))
    if tokenizer is not None:
        tokenizer.save(directory)
    return directory


def read_config(directory: Path) -> ModelConfig:
    path = directory / CONFIG_NAME
    if not path.is_file():
        raise CheckpointError(f"{path} is missing: an attnlab checkpoint needs {CONFIG_NAME} and {WEIGHTS_NAME}")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path} is not valid JSON: {exc}") from None
    try:
        return ModelConfig.from_dict(data)
    except ConfigError as exc:
        raise CheckpointError(f"{path}: {exc}") from None


def read_tensors(path: Path) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise CheckpointError(f"{path} is missing")
    try:
        return load_file(path)
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path} is truncated or corrupted ({exc})") from None


def load_state(model, tensors: dict[str, torch.Tensor], source: str | Path) -> None:
    """Copy `tensors` into `model`, refusing missing, unexpected or mis-shaped tensors by name."""
    expected = {name: p for name, p in model.state_dict(keep_vars=True).items()}
    # tied parameters are stored once; accept either of the names
    tied = _tied_aliases(model)
    missing = [n for n in expected if n not in tensors and not any(a in tensors for a in tied.get(n, ()))]
    unexpected = [n for n in tensors if n not in expected]
    wrong = [f"{n}: file {tuple(t.shape)} vs model {tuple(expected[n].shape)}"
             for n, t in tensors.items() if n in expected and tuple(t.shape) != tuple(expected[n].shape)]
    if missing or unexpected or wrong:
        parts = []
        if missing:
            parts.append(f"missing tensors {missing[:8]}{' ...' if len(missing) > 8 else ''}")
        if unexpected:
            parts.append(f"unexpected tensors {unexpected[:8]}{' ...' if len(unexpected) > 8 else ''}")
        if wrong:
            parts.append(f"shape mismatches {wrong[:8]}")
        raise CheckpointError(f"{source} does not match its config: " + "; ".join(parts))
    with torch.no_grad():
        for name, tensor in tensors.items():
            expected[name].copy_(tensor)


def _tied_aliases(model) -> dict[str, list[str]]:
    by_id: dict[int, list[str]] = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        by_id.setdefault(id(tensor), []).append(name)
    return {n: [m for m in names if m != n] for names in by_id.values() for n in names}


def load_attnlab(directory: str | Path, device=None):
    from attnlab.build import build_model

    directory = Path(directory)
    config = read_config(directory)
    tensors = read_tensors(directory / WEIGHTS_NAME)
    model = build_model(config, device=device)
    load_state(model, tensors, directory / WEIGHTS_NAME)
    model.eval()
    return model
