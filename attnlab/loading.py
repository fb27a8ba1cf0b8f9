"""attnlab.load(path) -> (model, tokenizer): one entry point for every checkpoint kind attnlab reads.

- an attnlab checkpoint directory (config.json with attnlab's fields + model.safetensors), a dual encoder's too;
- a training run folder (`attnlab train --out runs/x`: loads its newest step), or the run's `latest` file;
- a local Hugging Face checkpoint directory (config.json with "model_type");
- a GGUF file of the LLaMA family;
- a model's name (attnlab.names, listed by `attnlab models`): a shipped checkpoint (gpt-char), an installed
  pretrained package (smollm2, minilm), or a preset (random weights, said in a warning; `preset:NAME` asks for
  the preset where a trained model has the same name). A path that exists wins over a name.

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
from attnlab.names import ModelName, all_names, lookup
from attnlab.presets import presets
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
        from attnlab.spelling import did_you_mean

        raise CheckpointError(f"{path} does not exist{did_you_mean(str(path), all_names())}; give {KINDS}, or a "
                              "model's name (`attnlab models` lists them)") from None
    except OSError as exc:  # a symlink loop, a permission error
        raise CheckpointError(f"{path} cannot be opened ({exc.strerror or exc}); give {KINDS}") from None


def resolve(path) -> tuple[str, Path]:
    """(kind, path) of what `path` names, reading at most its config.json: kind is "gguf", "hf" or "attnlab";
    a training run folder (or its `latest` file) resolves to its newest step directory; a model's name resolves to
    the files it names (a preset has none: built by `load`, refused here)."""
    named = named_model(path)
    if named is not None:
        if named.kind == "preset":
            raise CheckpointError(f"{named.name} is a preset: a configuration with random weights, no files to "
                                  f"read; build it with attnlab.build_model(attnlab.presets[{named.name!r}])")
        path = named.path
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

    keep_quantized: a GGUF file's Q8_0 / Q4_0 / Q4_1 matrices stay in their blocks, and Q5_0 / Q5_1 / Q4_K / Q5_K /
    Q6_K ones (Q4_K_M files) in attnlab's forms of them (interop.gguf.KEPT_QUANTIZED) (SmolLM2: 97 MB instead of
    538 MB; decoding runs 2x faster than float32 where the VNNI kernels run); False expands them to float32,
    which is faster for whole forward passes (prefill, the explorer) (docs/quantization.md).

    `path` may also be a model's name (module docstring): a preset name builds the configuration with random
    weights and no tokenizer, and says so in a warning."""
    named = named_model(path)
    if named is not None and named.kind == "preset":
        import warnings

        warnings.warn(f"{named.name} is a preset: random weights, no tokenizer (the text it writes means nothing)",
                      RandomWeightsWarning, stacklevel=2)
        return build_model(presets[named.name], device=device).eval(), None
    kind, path = resolve(path)
    # the interop loaders (and the gguf package, numpy) are imported only for their files: an attnlab checkpoint,
    # the common case of every command, loads without them
    if kind == "gguf":
        from attnlab.interop.gguf import load_gguf

        return load_gguf(path, device=device, keep_quantized=keep_quantized)
    if kind == "hf":
        from attnlab.interop.hf import load_hf

        return load_hf(path, device=device)
    config = read_config(path)
    base = base_directory(config, path / CONFIG_NAME)
    if base is not None and base.suffix == ".gguf":  # adapters over a packaged GGUF model (smollm2-mlm)
        return load_on_gguf(path, config, base, device)
    if base is not None:  # only what was trained on top of an installed base model (minilm-mlm)
        tokenizer = load_tokenizer(path)
        return load_on_base(path, config, base, device), tokenizer if tokenizer is not None else load_tokenizer(base)
    model = load_attnlab(path, device=device)
    tokenizer = load_tokenizer(path)
    base = base_directory(model.config) if tokenizer is None else None
    return model, (load_tokenizer(base) if base is not None else tokenizer)


ADDED_ROWS = "tokens.added_rows"  # a shipped adapter's embedding rows for the tokens it adds ([MASK])


def load_on_gguf(directory: Path, config: ModelConfig, base: Path, device=None):
    """A checkpoint trained over a GGUF file of an installed package (smollm2-mlm): the file's weights expanded to
    float32 are W_0; the checkpoint's own tensors (LoRA pairs, the added tokens' embedding rows, or every tensor of a
    run's checkpoint) complete them; the LoRA changes are then merged, so the model returned is a plain encoder
    (its config says lora_rank=0 and keeps the rank in extra["lora_merged"]). The tokenizer is the run's, or the
    file's with [MASK] added (data.tokenizers.with_mask_token)."""
    import torch

    from attnlab.data.tokenizers import with_mask_token
    from attnlab.interop.gguf import load_gguf
    from attnlab.layers.lora import adapted_name, merge

    expected = config.extra["base"].get("sha256")
    if expected is not None and file_sha256(base) != expected:
        raise CheckpointError(f"{directory} was trained on {base} with sha256 {expected[:12]}...; the installed "
                              f"{config.extra['base']['package']} holds another file: reinstall the version it was "
                              "trained on")
    weights = directory / WEIGHTS_NAME
    names = build_model(config, device="meta").state_dict(keep_vars=True)
    unexpected = [n for n in read_header(weights) if n not in names and n != ADDED_ROWS]
    if unexpected:
        raise CheckpointError(f"{weights} does not match its config: unexpected tensors {unexpected[:8]}")
    base_model, base_tokenizer = load_gguf(base, keep_quantized=False)
    tensors = {adapted_name(n, names): t for n, t in base_model.state_dict().items()}  # W_0 under the pairs
    del base_model
    own = {n: t.float() for n, t in read_tensors(weights).items()}
    added = own.pop(ADDED_ROWS, None)
    if added is not None:
        tensors["tokens.weight"] = torch.cat([tensors["tokens.weight"], added])  # (vocab + added, d_model)
    tensors.update(own)
    if config.tie_embeddings:  # one matrix under two names: a run's checkpoint saves it as the head's
        full = max((tensors[n] for n in ("tokens.weight", "lm_head.proj.weight") if n in tensors), key=len)
        tensors["tokens.weight"] = tensors["lm_head.proj.weight"] = full
    tensors = {n: t for n, t in tensors.items() if n in names}
    model = materialize(config, tensors, f"{weights} on {base}", device)
    rank = config.lora_rank
    if rank:
        merge(model.blocks)
        model.config = config.replace(lora_rank=0, extra={**config.extra, "lora_merged": rank})
    tokenizer = load_tokenizer(directory)
    if tokenizer is None:
        tokenizer = with_mask_token(base_tokenizer, config.extra.get("first_token", "<|im_start|>"))
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(f"{directory}: its tokenizer has {tokenizer.vocab_size} tokens and its config "
                              f"vocab_size={config.vocab_size}: they belong to different runs")
    return model, tokenizer


def read_model_config(spec):
    """The config of the model `spec` names (a path or a model's name), reading as little as possible: an attnlab
    checkpoint's config.json, a GGUF file's metadata (no tensors), a preset's configuration; a Hugging Face
    directory is loaded (its config is settled by its tensors)."""
    named = named_model(spec)
    if named is not None and named.kind == "preset":
        return presets[named.name]
    kind, path = resolve(spec)
    if kind == "attnlab":
        return read_config(path)
    if kind == "gguf":
        from attnlab.interop.gguf import config_from_gguf, open_reader

        return config_from_gguf(open_reader(path), str(path))
    return load(path)[0].config


class RandomWeightsWarning(UserWarning):
    """A model was built from a preset: its weights are random, not trained."""


def named_model(spec) -> ModelName | None:
    """The model a name stands for, when `spec` is a name and no file or folder of that name exists (a path wins);
    a name whose package is not installed is refused with the pip command that brings it."""
    if not isinstance(spec, str) or os.path.lexists(os.path.expanduser(spec)):
        return None
    named = lookup(spec)
    if named is not None and not named.available:
        raise CheckpointError(f"{named.name} cannot be loaded here: {named.reason}")
    return named


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
    from attnlab.interop.hf import load_hf

    base_model, _ = load_hf(base)
    # the base's tensors this model uses (a pooler it drops is left out); the checkpoint's own ones override
    tensors = {n: t for n, t in base_model.state_dict().items() if n in names and n not in header}
    del base_model
    tensors.update(read_tensors(weights))
    return materialize(config, tensors, f"{weights} on {base}", device)
