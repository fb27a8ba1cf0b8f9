"""attnlab.quantize(model, scheme): weight-only quantization of a model, in place.

Which layers: every nn.Linear inside the transformer blocks (attention's fused QKV / Q / KV and output, the
feed-forward's up / gate+up and down) and the LM head's vocabulary projection. A token embedding tied to that
projection becomes a QuantizedEmbedding over the same codes (one copy of the matrix, as before). Everything
else stays float: untied embeddings (a gather reads one row per token, so they cost memory, not time), position
tables, norms, biases, BERT's head transform, poolers, classifiers and dual-encoder projections.

Schemes: "int8" (symmetric, one scale per output channel) and "int4" (groups of 32 along the input, float16
scale and min, two codes per byte: GGUF Q4_1's layout) for the blocks, with the LM head at int8 (a 4-bit head
cost SmolLM2 +8% perplexity, the blocks nothing measurable). A layer whose input width is not a multiple of 32
stays float under "int4" (with a warning naming it). How each decodes: layers/quantized.py.

This module is named quantization.py, not quantize.py: importing a submodule `attnlab.quantize` would replace
the function `attnlab.quantize` in the package's namespace with the module.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from attnlab.errors import CheckpointError, InputError
from attnlab.layers.quantized import (
    BLOCK,
    FORMATS,
    KERNELS,
    QuantizedEmbedding,
    QuantizedLinear,
    QuantizedParts,
    parts_of,
    quantized_module,
)
from attnlab.models.heads import LMHead

SCHEMES = ("int8", "int4")


class QuantizedLMHead(LMHead):
    """LMHead whose projection is a QuantizedLinear (same submodule names, so state_dict names stay); the scale
    and BERT's transform run as in LMHead, only the projection differs."""

    def __init__(self, head: LMHead, proj: QuantizedLinear):
        nn.Module.__init__(self)  # LMHead's own __init__ would build a float projection from a config
        self.scale, self.transform, self.act, self.norm = head.scale, head.transform, head.act, head.norm
        self.proj, self.bias = proj, head.bias

    def project(self, h):
        return self.proj(h, self.bias)  # (batch, seq, vocab)


def targets(model: nn.Module) -> list[str]:
    """Qualified names of the modules quantize() replaces: Linears inside blocks, and LM heads."""
    names = []
    for name, module in model.named_modules():
        if isinstance(module, LMHead):
            names.append(name)
        elif isinstance(module, nn.Linear) and ".blocks." in f".{name}" and ".lm_head." not in f".{name}":
            names.append(name)
    return names


def _set(model: nn.Module, name: str, module: nn.Module) -> None:
    setattr(_parent(model, name), name.rpartition(".")[2], module)


def replace(model: nn.Module, formats: dict[str, str | QuantizedLinear]) -> nn.Module:
    """Swap each named module (a Linear or an LMHead) for its quantized form: `formats` maps its name to a built
    QuantizedLinear, or to a format name for an empty one on the module's device (a loader fills it); a parts
    string ("q5_1:768+q8_0:192", layers/quantized.parts_of) makes an empty QuantizedParts (a GGUF file's fused
    matrix of mixed types)."""
    embeddings = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Embedding)]  # once, not per module
    for name, spec in formats.items():
        module = model.get_submodule(name)
        linear = module.proj if isinstance(module, LMHead) else module
        if isinstance(spec, str):
            spec = quantized_module(linear.in_features, linear.out_features, spec, bias=linear.bias is not None,
                                    device=linear.weight.device)
        tied = [n for n, m in embeddings if m.weight is linear.weight]
        _set(model, name, QuantizedLMHead(module, spec) if isinstance(module, LMHead) else spec)
        for emb in tied:
            _set(model, emb, QuantizedEmbedding(spec))
    return model


def formats_of(model: nn.Module) -> dict[str, str]:
    """{module name: quantized format} of every quantized module `replace` would rebuild (a Linear, or an LM head
    by its own name); a tied QuantizedEmbedding is left out: replace() makes it again from its head. Empty for a
    float model. This is what a saved checkpoint records (storage.save_model, config.json's extra["quantization"])."""
    out = {}
    for name, module in model.named_modules():
        if isinstance(module, QuantizedLMHead):
            out[name] = module.proj.format
        elif isinstance(module, QuantizedParts):
            out[name] = module.format  # its parts (name.parts.j) are made again from this string
        elif isinstance(module, QuantizedLinear) and not isinstance(_parent(model, name), QuantizedLMHead) \
                and not _in_parts(model, name):
            out[name] = module.format
    return out


def _in_parts(model: nn.Module, name: str) -> bool:
    """Is `name` one of a QuantizedParts' row groups (its_name.parts.j)?"""
    owner, _, rest = name.rpartition(".parts.")
    return bool(owner) and rest.isdigit() and isinstance(model.get_submodule(owner), QuantizedParts)


def _parent(model: nn.Module, name: str) -> nn.Module:
    parent = name.rpartition(".")[0]
    return model.get_submodule(parent) if parent else model


def check_formats(model: nn.Module, formats, source) -> None:
    """Refuse (ValueError naming `source`) a {module name: format} table that `replace` cannot apply to `model`
    (a float model, e.g. built on the meta device from a checkpoint's config): not a table of strings, an unknown
    format, a name that is not one of `targets(model)`, or a 4-bit format on an input width it cannot hold."""
    if not isinstance(formats, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in formats.items()):
        raise ValueError(f"{source}: the quantization table must map module names to format names (strings)")
    allowed = set(targets(model))
    for name, fmt in formats.items():
        parts = parts_of(fmt)
        if fmt not in FORMATS and parts is None:
            raise ValueError(f"{source}: {name} has unknown quantized format {fmt!r}; known: {', '.join(FORMATS)}, "
                             "or row groups of them written as 'q5_1:768+q8_0:192'")
        if name not in allowed:
            raise ValueError(f"{source}: {name!r} is not a module that can be quantized in this model (block "
                             "Linears and LM heads only)")
        module = model.get_submodule(name)
        linear = module.proj if isinstance(module, LMHead) else module
        width = linear.in_features
        if parts is not None and sum(rows for _, rows in parts) != linear.out_features:
            raise ValueError(f"{source}: {name} has parts {fmt!r} of {sum(r for _, r in parts)} rows; the model's "
                             f"matrix has {linear.out_features}")
        if fmt != "int8" and width % BLOCK:
            raise ValueError(f"{source}: {name} has format {fmt!r}, which needs an input width divisible by "
                             f"{BLOCK}; the model's is {width}")


def check_finite(model: nn.Module, source) -> None:
    """Refuse (CheckpointError naming `source` and the tensor) a loaded quantized module whose scales or minimums
    hold NaN or infinity. Every weight such a scale stands for is NaN or infinite, which no quantizer writes: the
    file is damaged. Refused at load, so no product has to decide what a NaN scale means (the int8 kernel and
    fbgemm would each answer differently, and finite); what a NaN *activation* gives is float32's answer
    (layers/quantized.py). Called by the loaders of attnlab checkpoints (storage) and kept GGUF blocks (gguf)."""
    seen = set()
    modules = [(n, m) for n, m in model.named_modules() if isinstance(m, QuantizedLinear)]
    modules += [(n, m) for n, m in model.named_modules() if isinstance(m, QuantizedEmbedding)]  # tied: the head's name
    for name, module in modules:
        for key, tensor in module.buffers_dict().items():
            if key == "qweight" or id(tensor) in seen:
                continue
            seen.add(id(tensor))
            if _all_finite(tensor):
                continue
            bad = int((~torch.isfinite(tensor)).sum())
            raise CheckpointError(f"{source}: {name}.{key} holds {bad} NaN or infinite value(s) of {tensor.numel()}: "
                                  "a quantized matrix's scales must be finite numbers (the file is damaged; write it "
                                  "again from the float model)")


def _all_finite(t: torch.Tensor) -> bool:
    """Is every value of `t` finite? float16 (the scales of every kept format) by its exponent bits, all ones only
    for NaN and infinity: torch's isfinite on float16 is not vectorised, and SmolLM2's ~7.5 M scales took 17 ms of
    a fresh process's first token that way, against 8 ms by the bits (one thread, 2026-11-28, not logged)."""
    if t.dtype == torch.float16:
        return not bool(t.view(torch.int16).bitwise_and(0x7C00).eq(0x7C00).any())
    return bool(torch.isfinite(t).all())


def float_state_dict(model: nn.Module) -> dict:
    """model.state_dict() with each quantized module's codes and scales replaced by its dequantized float32
    `weight` (a tied embedding gets the very same tensor as its head): what a float model of the same config
    would hold. For writers of formats other readers load (Hugging Face, GGUF); a float model's is unchanged."""
    state = model.state_dict()
    decoded = {}
    for name, module in model.named_modules():
        if isinstance(module, QuantizedParts):  # one float matrix, its parts' rows stacked (their names dropped)
            for key in [k for k in state if k.startswith(f"{name}.parts.")]:
                del state[key]
            state[f"{name}.weight"] = module.weight.detach()
            continue
        if not isinstance(module, (QuantizedLinear, QuantizedEmbedding)) or _in_parts(model, name):
            continue
        buffers = module.buffers_dict()
        key = id(buffers["qweight"])
        if key not in decoded:
            decoded[key] = module.weight.detach()
        for b in buffers:
            state.pop(f"{name}.{b}", None)
        state[f"{name}.weight"] = decoded[key]
    return state


def quantize(model: nn.Module, scheme: str) -> nn.Module:
    """Quantize `model`'s block Linears and LM head in place ("int8" | "int4"); returns the same model.

    The model must be in eval mode: quantized weights are buffers and cannot be trained.
    """
    if not isinstance(scheme, str) or scheme not in SCHEMES:
        raise InputError(f"quantization scheme {scheme!r} is not known; use one of: {', '.join(SCHEMES)}")
    if not isinstance(model, nn.Module):
        raise InputError(f"quantize needs a model (torch.nn.Module), got {type(model).__name__}")
    if model.training:
        raise InputError("quantize needs a model in eval mode (call model.eval() first): quantized weights are "
                         "buffers, they cannot be trained")
    if any(isinstance(m, QuantizedLinear) for m in model.modules()):
        raise InputError("this model is already quantized; quantize a float model")
    names = targets(model)
    if not names:
        raise InputError(f"{type(model).__name__} has no Linear inside transformer blocks and no LM head to quantize")
    formats, kept = {}, []
    for name in names:
        module = model.get_submodule(name)
        linear = module.proj if isinstance(module, LMHead) else module
        if linear.weight.device.type == "meta":
            raise InputError("quantize needs a model with real weights, not one on the meta device")
        if scheme == "int4" and linear.in_features % BLOCK:
            kept.append(name)
            continue
        # int4 keeps the LM head (and the embedding tied to it) at int8: on SmolLM2 the head going 4-bit is the
        # whole of int4's perplexity loss (+8.6% simulated; int4 blocks elsewhere re-find the file's Q4_1
        # levels, +0.00%), for 7% of the weights (benchmarks/quality.py, docs/quantization.md)
        fmt = "int8" if scheme == "int4" and isinstance(module, LMHead) else scheme
        formats[name] = QuantizedLinear.from_float(linear, fmt)
    if kept:
        warnings.warn(f"int4 needs input widths divisible by {BLOCK}; kept float: {kept[:6]}"
                      f"{' ...' if len(kept) > 6 else ''}", stacklevel=2)
    for kernel in {KERNELS.get(q.format) for q in formats.values()} - {None}:
        kernel.available()  # build (or load) the one-row kernels now, not on the first generated token
    return replace(model, formats)
