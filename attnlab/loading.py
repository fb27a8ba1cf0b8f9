"""attnlab.load(path) -> (model, tokenizer): one entry point for every checkpoint kind attnlab reads.

- an attnlab checkpoint directory (config.json with attnlab's fields + model.safetensors), a dual encoder's too;
- a training run folder (`attnlab train --out runs/x`: loads its newest step), or the run's `latest` file;
- a local Hugging Face checkpoint directory (config.json with "model_type");
- a GGUF file of the LLaMA family.

An attnlab checkpoint that sits on an installed base model (storage.base_directory: a trained head shipped
without the base's weights) takes the base's tokenizer when it has none of its own.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attnlab.build import build_model
from attnlab.config import ModelConfig
from attnlab.data.tokenizers import load_tokenizer
from attnlab.errors import CheckpointError
from attnlab.files import read_json_object
from attnlab.interop.gguf import load_gguf
from attnlab.interop.hf import load_hf
from attnlab.storage import (
    CONFIG_NAME,
    WEIGHTS_NAME,
    base_directory,
    file_sha256,
    load_attnlab,
    materialize,
    newest_checkpoint,
    read_config,
    read_header,
    read_tensors,
)

KINDS = "an attnlab checkpoint directory, a training run folder, a Hugging Face checkpoint directory or a .gguf file"


def _stat(path: Path) -> os.stat_result:
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise CheckpointError(f"{path} does not exist; give {KINDS}") from None
    except OSError as exc:  # a symlink loop, a permission error
        raise CheckpointError(f"{path} cannot be opened ({exc.strerror or exc}); give {KINDS}") from None


def resolve(path) -> tuple[str, Path]:
    """(kind, path) of what `path` names, reading at most its config.json: kind is "gguf", "hf" or "attnlab";
    a training run folder (or its `latest` file) resolves to its newest step directory."""
    path = Path(path).expanduser()
    mode = _stat(path).st_mode
    if stat.S_ISREG(mode) and path.suffix == ".gguf":
        return "gguf", path
    path = newest_checkpoint(path)
    mode = _stat(path).st_mode
    if not stat.S_ISDIR(mode):
        raise CheckpointError(f"{path} is not a directory nor a .gguf file; give {KINDS}")
    if not os.path.lexists(path / CONFIG_NAME):
        raise CheckpointError(f"{path} has no config.json; an attnlab or Hugging Face checkpoint directory needs one")
    data = read_json_object(path / CONFIG_NAME, what="model config")
    if "model_type" in data and "topology" not in data:
        return "hf", path
    return "attnlab", path


def load(path, device=None, keep_quantized: bool = True):
    """Load a model and its tokenizer (None if the checkpoint has none).

    keep_quantized: a GGUF file's Q8_0 / Q4_0 / Q4_1 matrices stay in their blocks (SmolLM2: 97 MB instead of
    538 MB; decoding runs 2x faster than float32 where the VNNI kernels run); False expands them to float32,
    which is faster for whole forward passes (prefill, the explorer) (docs/quantization.md)."""
    kind, path = resolve(path)
    if kind == "gguf":
        return load_gguf(path, device=device, keep_quantized=keep_quantized)
    if kind == "hf":
        return load_hf(path, device=device)
    config = read_config(path)
    base = base_directory(config, path / CONFIG_NAME)
    if base is not None:  # only what was trained on top of an installed base model (minilm-mlm)
        tokenizer = load_tokenizer(path)
        return load_on_base(path, config, base, device), tokenizer if tokenizer is not None else load_tokenizer(base)
    model = load_attnlab(path, device=device)
    tokenizer = load_tokenizer(path)
    base = base_directory(model.config) if tokenizer is None else None
    return model, (load_tokenizer(base) if base is not None else tokenizer)


def load_on_base(directory: Path, config: ModelConfig, base: Path, device=None):
    """A checkpoint whose model.safetensors holds only the tensors trained on top of an installed base model."""
    expected = config.extra["base"].get("sha256")
    if expected is not None and file_sha256(base / WEIGHTS_NAME) != expected:
        raise CheckpointError(f"{directory} was trained on {base / WEIGHTS_NAME} with sha256 {expected[:12]}...; "
                              f"the installed {config.extra['base']['package']} holds other weights: reinstall "
                              "the version it was trained on")
    weights = directory / WEIGHTS_NAME
    header = read_header(weights)
    model = build_model(config, device="meta")
    names = model.state_dict(keep_vars=True)
    unexpected = [n for n in header if n not in names]
    if unexpected:
        raise CheckpointError(f"{weights} does not match its config: unexpected tensors {unexpected[:8]}")
    base_model, _ = load_hf(base)
    # the base's tensors this model uses (a pooler it drops is left out); the checkpoint's own ones override
    tensors = {n: t for n, t in base_model.state_dict().items() if n in names and n not in header}
    del base_model
    tensors.update(read_tensors(weights))
    return materialize(config, tensors, f"{weights} on {base}", device)
