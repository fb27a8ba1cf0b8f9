"""Hugging Face checkpoints <-> attnlab, for the families of families.FAMILIES (BERT, GPT-2, ViT, BART, Marian, T5,
and the open decoders: LLaMA, Qwen2, Qwen3, Mistral, OLMo 2, Phi-3, GPT-NeoX, Gemma 2, Gemma 3 text).

Everything family-specific lives in one table per family (families.py); this module is the engine that reads
and writes through those tables:

    config_from_hf(hf_config_dict)      -> ModelConfig
    hf_config_from(config)              -> HF config dict (with model_type and architectures)
    from_hf_state(config, hf_state)     -> attnlab state dict (shapes checked against the config, by HF name)
    to_hf_state(model)                  -> HF state dict
    from_hf_model(hf_model)             -> attnlab model with identical weights (in memory, no files)
    load_hf(directory)                  -> (model, tokenizer) from config.json + model.safetensors/pytorch_model.bin
    save_hf(model, directory)           -> a directory transformers' from_pretrained reads

Nothing here downloads: directories are local. Weights are read with safetensors or torch.load(weights_only=True).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from pickle import UnpicklingError
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import save_file

from attnlab.build import build_model, refuse_if_absurd
from attnlab.config import ModelConfig
from attnlab.data.tokenizers import load_tokenizer
from attnlab.errors import CheckpointError, ConfigError
from attnlab.files import check_regular, read_json_object
from attnlab.interop.families import BY_MODEL_TYPE, FAMILIES, Family
from attnlab.interop.mapping import expand, to_ours, to_theirs
from attnlab.layers.positions import sinusoid_table
from attnlab.models.base import register_saver
from attnlab.quantization import float_state_dict
from attnlab.storage import atomic_write, materialize, read_tensors

SUPPORTED = ", ".join(FAMILIES)
# ModelConfig fields that describe training, not the function a model computes: not compared on export
_UNCOMPARED = {"name", "extra", "dropout", "attn_dropout", "scaled_residual_init"}


# ---------------------------------------------------------------------------------------------- configs
# what an unsupported config.json says of its kind, checked in this order: the key, and the words for it
_MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", "num_experts_per_tok",
             "moe_intermediate_size")
_TOWER_KEYS = ("vision_config", "audio_config", "speech_config", "vq_config", "image_config", "visual")


def _kind_of(hf_config: dict[str, Any]) -> str:
    """' (a mixture of experts: num_experts=8)' or ' (multimodal: vision_config, a tower beside the text model)' when
    the config says so, for the refusal of a model_type attnlab does not read; else ''."""
    for key in _MOE_KEYS:
        value = hf_config.get(key)
        if value and not isinstance(value, bool) and value != 1:
            return f" (a mixture of experts: {key}={value!r})" if not isinstance(value, (dict, list)) else \
                f" (a mixture of experts: {key})"
    for key in _TOWER_KEYS:
        if hf_config.get(key):
            return f" (multimodal: {key}, a tower beside the text model)"
    return ""


def family_of(hf_config: dict[str, Any]) -> Family:
    model_type = hf_config.get("model_type") if isinstance(hf_config, dict) else None
    if model_type not in BY_MODEL_TYPE:
        kind = _kind_of(hf_config) if isinstance(hf_config, dict) else ""
        raise ConfigError(f"Hugging Face model_type={model_type!r} is not supported{kind}; supported families: "
                          f"{SUPPORTED}")
    return BY_MODEL_TYPE[model_type]


def config_from_hf(hf_config: dict[str, Any], architecture: str | None = None) -> ModelConfig:
    """Translate an HF config.json dict. `architecture` (an HF class name) picks the head; by default the
    first of config["architectures"], else the family's language-model class."""
    family = family_of(hf_config)
    if architecture is None:
        archs = hf_config.get("architectures") or [family.default_architecture]
        architecture = archs[0] if isinstance(archs, list) else archs
    if not isinstance(architecture, str) or architecture not in family.architectures:
        raise ConfigError(f"{family.name}: architecture {architecture!r} is not supported; supported: "
                          f"{', '.join(family.architectures)}")
    try:
        fields = family.to_config(hf_config, dict(family.architectures[architecture]))
    except KeyError as exc:
        raise ConfigError(f"{family.name} config lacks the key {exc.args[0]!r}") from None
    fields["extra"] = {"hf_family": family.name, "hf_architecture": architecture}
    fields.setdefault("name", hf_config.get("_name_or_path") or "")
    return ModelConfig(**fields)


def _differences(a: ModelConfig, b: ModelConfig, family: Family) -> list[str]:
    skip = _UNCOMPARED | set(family.uncompared)
    return [f"{f.name}={getattr(a, f.name)!r} (the {family.name} layout gives {getattr(b, f.name)!r})"
            for f in dataclasses.fields(ModelConfig)
            if f.name not in skip and getattr(a, f.name) != getattr(b, f.name)]


def _export(config: ModelConfig, family: Family) -> tuple[dict[str, Any], list[str]]:
    """(HF config dict, what this family cannot represent of `config`)."""
    try:
        arch = family.architecture_for(config)
        hf = {"model_type": family.model_types[0], "architectures": [arch], **family.from_config(config),
              "dtype": "float32"}
        back = config_from_hf(hf)
    except ConfigError as exc:
        return {}, [str(exc)]
    return hf, _differences(config, back, family)


def choose_family(config: ModelConfig) -> Family:
    """The family named in config.extra["hf_family"], else the first whose layout reproduces `config` exactly."""
    named = config.extra.get("hf_family") if isinstance(config.extra, dict) else None
    if named is not None:
        if named not in FAMILIES:
            raise ConfigError(f"config.extra['hf_family']={named!r}; supported families: {SUPPORTED}")
        return FAMILIES[named]
    reasons = []
    for family in FAMILIES.values():
        _, diffs = _export(config, family)
        if not diffs:
            return family
        reasons.append(f"{family.name}: {diffs[0]}")
    raise ConfigError("no Hugging Face family reproduces this config exactly; " + "; ".join(reasons))


def hf_config_from(config: ModelConfig, family: str | None = None) -> dict[str, Any]:
    """An HF config.json dict describing the same model; ConfigError naming every field HF could not carry."""
    fam = FAMILIES[family] if family in FAMILIES else choose_family(config) if family is None else None
    if fam is None:
        raise ConfigError(f"family={family!r}; supported: {SUPPORTED}")
    hf, diffs = _export(config, fam)
    if diffs:
        raise ConfigError(f"the {fam.name} layout cannot represent this config: " + "; ".join(diffs))
    return hf


# ----------------------------------------------------------------------------------------------- tensors
def _normalise(family: Family, hf_state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Bring HF names to the task-model layout the table uses: add the base prefix a bare base model lacks,
    apply renames from older transformers layouts."""
    state = dict(hf_state)
    if family.prefix and not any(k.startswith(family.prefix) for k in state):
        state = {family.prefix + k: v for k, v in state.items()}
    if family.legacy:
        state = {family.rename_legacy(k): v for k, v in state.items()}
    return state


def _expected_hf_shapes(config: ModelConfig, family: Family) -> dict[str, tuple[int, ...]]:
    """Shapes the HF tensors must have for `config`, from a model built on the meta device (no memory)."""
    meta = build_model(config, device="meta").state_dict()
    return {k: tuple(v.shape) for k, v in to_theirs(family.table(config), config, meta).items()}


def _unread(config: ModelConfig, family: Family, state: dict[str, torch.Tensor]) -> list[str]:
    """Checkpoint tensors the family's table does not read. A tensor equal to one the table reads (a tied
    matrix saved under each of its names, as transformers' state_dict() does) and the tensors the family
    declares safe to skip are not counted: anything else would be silently dropped, so it is refused."""
    read = {name for _, names, _ in expand(family.table(config), config) for name in names}
    skip = re.compile("|".join(f"(?:{pattern})" for pattern in family.unmapped(config)) or "(?!)")
    by_shape: dict[tuple, list[torch.Tensor]] = {}
    for name in read & set(state):
        by_shape.setdefault(tuple(state[name].shape), []).append(state[name])
    return sorted(n for n, t in state.items() if n not in read and not skip.fullmatch(n) and not any(
        t is r or (t.dtype == r.dtype and torch.equal(t, r)) for r in by_shape.get(tuple(t.shape), ())))


def from_hf_state(config: ModelConfig, hf_state: dict[str, torch.Tensor], source: str = "checkpoint"
                  ) -> dict[str, torch.Tensor]:
    """HF tensors -> attnlab state dict; CheckpointError naming every missing or mis-shaped HF tensor."""
    family = choose_family(config)
    state = _normalise(family, hf_state)
    expected = _expected_hf_shapes(config, family)
    missing = sorted(n for n in expected if n not in state)
    wrong = [f"{n}: {source} has {tuple(state[n].shape)}, config.json implies {shape}"
             for n, shape in expected.items() if n in state and tuple(state[n].shape) != shape]
    if missing or wrong:
        parts = []
        if wrong:
            more = " ..." if len(wrong) > 8 else ""
            parts.append(f"tensors whose shapes disagree with config.json: {wrong[:8]}{more}")
        if missing:
            parts.append(f"missing tensors: {missing[:8]}{' ...' if len(missing) > 8 else ''}")
        raise CheckpointError(f"{source} does not fit its {family.name} config: " + "; ".join(parts))
    unread = _unread(config, family, state)
    if unread:
        raise CheckpointError(f"{source} holds tensors the {family.name} mapping does not read: {unread[:4]}"
                              f"{' ...' if len(unread) > 4 else ''} ({len(unread)} in all); attnlab would ignore "
                              "them and compute something else than the checkpoint's model, so it refuses")
    if family.name == "marian":
        _check_sinusoids(config, state, source)
    ours, _ = to_ours(family.table(config), config, state)
    return ours


def _check_sinusoids(config: ModelConfig, state: dict[str, torch.Tensor], source: str) -> None:
    """Marian stores its fixed position table; attnlab recomputes it, so make sure they are the same numbers."""
    for stack in ("encoder", "decoder"):
        stored = state.get(f"model.{stack}.embed_positions.weight")
        if stored is None:
            continue
        expected = sinusoid_table(stored.shape[0], config.d_model, config.sinusoidal_layout)
        if stored.shape != expected.shape or float((stored.float() - expected).abs().max()) > 1e-4:
            raise CheckpointError(f"{source}: model.{stack}.embed_positions.weight is not the sinusoid table "
                                  f"(layout {config.sinusoidal_layout!r}) attnlab computes; this Marian variant "
                                  "is not supported")


def to_hf_state(model_or_config, state: dict[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """attnlab model (or config + attnlab state dict) -> HF state dict, tied matrices written once."""
    if isinstance(model_or_config, ModelConfig):
        config = model_or_config
        if state is None:
            raise ConfigError("to_hf_state(config, state): give the attnlab state dict too")
    else:
        # a quantized model is written as float32: the dequantized codes (transformers cannot read attnlab's)
        config, state = model_or_config.config, float_state_dict(model_or_config)
    family = choose_family(config)
    out = to_theirs(family.table(config), config, state)
    if config.topology == "encoder-decoder" and not config.shared_embeddings and "model.shared.weight" not in out:
        out["model.shared.weight"] = state["tokens.weight"]  # unread by HF's untied forward, but expected there
    if family.name == "marian":  # HF stores Marian's fixed sinusoids as a (frozen) weight; write them out
        table = sinusoid_table(config.max_len, config.d_model, "halves")
        for stack in ("encoder", "decoder"):
            out[f"model.{stack}.embed_positions.weight"] = table.clone()
    return out


# ------------------------------------------------------------------------------------------------ models
def _build(config: ModelConfig, ours: dict[str, torch.Tensor], source, device=None):
    return materialize(config, ours, source, device)  # meta build, no random init


def from_hf_model(hf_model, device=None):
    """An attnlab model with the same weights as an in-memory transformers PreTrainedModel (eval mode)."""
    hf_config = hf_model.config.to_dict()
    config = config_from_hf(hf_config, architecture=type(hf_model).__name__)
    state = {k: v.detach() for k, v in hf_model.state_dict().items()}
    config = _refine(config, family_of(hf_config), state)
    ours = from_hf_state(config, state, source=type(hf_model).__name__)
    return _build(config, ours, type(hf_model).__name__, device)


def _refine(config: ModelConfig, family: Family, state: dict) -> ModelConfig:
    """Optional parts whose presence only the weights reveal (a BertModel saved without its pooler, a
    BertForPreTraining without its next-sentence head; an untied BART/Marian written by transformers 4, whose
    stacks still read model.shared)."""
    keys = _normalise(family, state)
    if family.name == "bert" and config.pooler and "bert.pooler.dense.weight" not in keys:
        return config.replace(pooler=False, nsp=False)
    if family.name == "bert" and config.nsp and "cls.seq_relationship.weight" not in keys:
        return config.replace(nsp=False)  # a BertForPreTraining written without its next-sentence head
    if family.name in ("bart", "marian") and not config.shared_embeddings \
            and "model.encoder.embed_tokens.weight" not in keys and "model.decoder.embed_tokens.weight" not in keys:
        return config.replace(shared_embeddings=True)
    return config


def _index_shards(index: Path, directory: Path) -> list[str]:
    """The shard files a model.safetensors.index.json names, checked to be plain names beside the index."""
    data = read_json_object(index, what="safetensors index")
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{index}: 'weight_map' must be a non-empty JSON object (tensor name -> shard file), "
                              f"got {type(weight_map).__name__}")
    shards = sorted({s for s in weight_map.values() if isinstance(s, str)})
    outside = [s for s in weight_map.values() if not isinstance(s, str) or Path(s).name != s or s in ("", ".", "..")]
    if outside:  # a shard must be a file beside the index, never a path out of the checkpoint
        raise CheckpointError(f"{index} names shards outside {directory}: {outside[:4]}; only plain file "
                              "names in the same directory are allowed")
    return shards


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split("\n")[0].split())[:300]


def read_hf_tensors(directory: Path) -> dict[str, torch.Tensor]:
    """model.safetensors, sharded model.safetensors.index.json, or pytorch_model.bin (weights only)."""
    single, index, pickle = (directory / "model.safetensors", directory / "model.safetensors.index.json",
                             directory / "pytorch_model.bin")
    if os.path.lexists(single):
        return read_tensors(single)
    if os.path.lexists(index):
        tensors: dict[str, torch.Tensor] = {}
        for shard in _index_shards(index, directory):
            tensors.update(read_tensors(directory / shard))
        return tensors
    if os.path.lexists(pickle):
        check_regular(pickle, "weights file")
        try:
            return torch.load(pickle, map_location="cpu", weights_only=True)
        except UnpicklingError as exc:  # weights_only refused a global: the file would run code
            raise CheckpointError(f"{pickle} is refused: it holds pickled code, not only tensors "
                                  f"({_one_line(exc)}); convert it to model.safetensors") from None
        except (OSError, ValueError, KeyError, RuntimeError, EOFError, SafetensorError) as exc:
            raise CheckpointError(f"{pickle} cannot be read ({type(exc).__name__}: {_one_line(exc)})") from None
    raise CheckpointError(f"{directory} has no weights: expected model.safetensors, model.safetensors.index.json "
                          "or pytorch_model.bin beside config.json")


def load_hf(path, device=None):
    """(model, tokenizer) from a local Hugging Face checkpoint directory; tokenizer is None when none is saved."""
    directory = Path(path)
    config_path = directory / "config.json"
    hf_config = read_json_object(config_path, what="Hugging Face config")
    try:
        family = family_of(hf_config)
        config = config_from_hf(hf_config)
    except ConfigError as exc:
        raise CheckpointError(f"{config_path}: {exc}") from None
    except (TypeError, AttributeError, KeyError, IndexError, ZeroDivisionError, OverflowError,
            UnicodeDecodeError) as exc:
        # a field of the wrong JSON type (a string where a number belongs, a number where a list belongs)
        raise CheckpointError(f"{config_path}: a field has the wrong type or value ({type(exc).__name__}: {exc}); "
                              "compare it with a config.json saved by transformers") from None
    config = config.replace(name=config.name or directory.name)
    refuse_if_absurd(config, config_path)  # before any tensor is read or mapped (the mapping loops over layers)
    tensors = read_hf_tensors(directory)
    config = _refine(config, family, tensors)
    ours = from_hf_state(config, tensors, source=str(directory))
    model = _build(config, ours, directory, device)
    return model, load_tokenizer(directory)


def save_hf(model, directory, tokenizer=None) -> Path:
    """Write config.json + model.safetensors in the HF layout of the model's family (+ tokenizer files).

    A quantized model (attnlab.quantize, or a GGUF file kept quantized) is written as the float32 model its codes
    stand for: transformers reads it as a plain checkpoint computing what the quantized model computes (its
    dequantized weights), at float32's size; no quantization_config is written."""
    directory = Path(directory)
    hf_config = hf_config_from(model.config)
    tensors = {k: v.detach().to("cpu").contiguous().clone() for k, v in to_hf_state(model).items()}
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write(directory / "model.safetensors", lambda tmp: save_file(tensors, tmp, metadata={"format": "pt"}))
    atomic_write(directory / "config.json",
                 lambda tmp: Path(tmp).write_text(json.dumps(hf_config, indent=2, sort_keys=True) + "\n"))
    if tokenizer is not None:
        tokenizer.save(directory)
    return directory


register_saver("hf", lambda model, directory, tokenizer: save_hf(model, directory, tokenizer=tokenizer))
