"""attnlab.load(path) -> (model, tokenizer): one entry point for every checkpoint kind attnlab reads.

- an attnlab checkpoint directory (config.json with attnlab's fields + model.safetensors);
- a local Hugging Face checkpoint directory (config.json with "model_type");
- a GGUF file of the LLaMA family.
"""

from __future__ import annotations

import json
from pathlib import Path

from attnlab.errors import CheckpointError


def load_tokenizer(directory: Path):
    """The tokenizer saved beside a checkpoint, or None when there is none."""
    try:
        from attnlab.data.tokenizers import load_tokenizer as _load
    except ImportError:
        return None
    return _load(directory)


def load(path, device=None):
    """Load a model and its tokenizer (None if the checkpoint has none)."""
    path = Path(path).expanduser()
    if not path.exists():
        raise CheckpointError(f"{path} does not exist; give an attnlab checkpoint directory, a Hugging Face "
                              "checkpoint directory or a .gguf file")
    if path.is_file():
        if path.suffix == ".gguf":
            from attnlab.interop.gguf import load_gguf

            return load_gguf(path, device=device)
        raise CheckpointError(f"{path} is a file but not a .gguf file; give a checkpoint directory or a .gguf file")
    config_path = path / "config.json"
    if not config_path.is_file():
        raise CheckpointError(f"{path} has no config.json; an attnlab or Hugging Face checkpoint directory needs one")
    try:
        data = json.loads(config_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{config_path} is not valid JSON: {exc}") from None
    if isinstance(data, dict) and "model_type" in data and "topology" not in data:
        from attnlab.interop.hf import load_hf

        return load_hf(path, device=device)
    if isinstance(data, dict) and isinstance(data.get("extra"), dict) and "dual_encoder" in data["extra"]:
        from attnlab.training.recipes import load_dual_encoder  # clip-mnist: two towers in one directory

        model, tokenizer = load_dual_encoder(path)
        return (model.to(device) if device is not None else model), tokenizer
    from attnlab.checkpoint import load_attnlab

    return load_attnlab(path, device=device), load_tokenizer(path)
