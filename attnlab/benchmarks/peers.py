"""The peers attnlab is timed against, each holding attnlab's weights exactly.

- Hugging Face transformers: built from a seeded HF config and converted to attnlab by
  attnlab.interop.hf.from_hf_model (the interop engineer's mapping), so both hold the same numbers.
- nanoGPT: the PyPI package `nano-gpt` (Allen Porter's GPT-2 reproduction following nanoGPT: fused c_attn,
  SDPA with is_causal, tied wte/lm_head, one cross-entropy over flattened logits). Its package imports the
  `datasets` and `tiktoken` libraries at module level for its data tools; the model needs neither, so empty
  stand-ins are put in sys.modules when they are not installed.
- torch.nn.TransformerEncoder in eval mode (its fused "fast path"), with attnlab's block weights copied in.

Each copy is a table: attnlab name -> peer name; a parity check in the benches shows the copy is right.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable

import torch
from torch import nn

from attnlab.config import ModelConfig


# ----------------------------------------------------------------------------- Hugging Face
def hf_available() -> bool:
    try:
        from attnlab.interop.hf import from_hf_model  # noqa: F401
    except ImportError:
        return False
    return True


def from_hf(hf_model: nn.Module) -> nn.Module:
    """attnlab model holding the HF model's weights (attnlab.interop.hf.from_hf_model)."""
    from attnlab.interop.hf import from_hf_model

    out = from_hf_model(hf_model)
    return out[0] if isinstance(out, tuple) else out


def hf_gpt2(config: ModelConfig) -> nn.Module:
    """A randomly initialised GPT2LMHeadModel of `config`'s shape, SDPA attention, no dropout."""
    from transformers import GPT2Config, GPT2LMHeadModel

    hf_config = GPT2Config(vocab_size=config.vocab_size, n_positions=config.max_len, n_embd=config.d_model,
                           n_layer=config.n_layers, n_head=config.n_heads, n_inner=config.d_ff,
                           activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                           layer_norm_epsilon=config.norm_eps, tie_word_embeddings=True,
                           bos_token_id=None, eos_token_id=None)
    return GPT2LMHeadModel._from_config(hf_config, attn_implementation="sdpa")


def hf_bert(config: ModelConfig, masked_lm: bool) -> nn.Module:
    """BertForMaskedLM (masked_lm) or BertModel with a pooler, SDPA attention, no dropout."""
    from transformers import BertConfig, BertForMaskedLM, BertModel

    hf_config = BertConfig(vocab_size=config.vocab_size, hidden_size=config.d_model,
                           num_hidden_layers=config.n_layers, num_attention_heads=config.n_heads,
                           intermediate_size=config.d_ff, hidden_act="gelu", hidden_dropout_prob=0.0,
                           attention_probs_dropout_prob=0.0, max_position_embeddings=config.max_len,
                           type_vocab_size=max(1, config.type_vocab_size), layer_norm_eps=config.norm_eps,
                           pad_token_id=config.pad_token_id or 0, tie_word_embeddings=True)
    cls = BertForMaskedLM if masked_lm else BertModel
    return cls._from_config(hf_config, attn_implementation="sdpa")


def hf_vit(config: ModelConfig) -> nn.Module:
    """ViTForImageClassification of `config`'s shape, SDPA attention, no dropout."""
    from transformers import ViTConfig, ViTForImageClassification

    hf_config = ViTConfig(hidden_size=config.d_model, num_hidden_layers=config.n_layers,
                          num_attention_heads=config.n_heads, intermediate_size=config.d_ff, hidden_act="gelu",
                          hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                          layer_norm_eps=config.norm_eps, image_size=config.image_size,
                          patch_size=config.patch_size, num_channels=config.n_channels,
                          num_labels=config.n_classes, qkv_bias=config.bias)
    return ViTForImageClassification._from_config(hf_config, attn_implementation="sdpa")


# ----------------------------------------------------------------------------- nanoGPT (nano-gpt package)
class Absent(types.ModuleType):
    """Stand-in for a library nano-gpt imports only for its data tools; any attribute is an empty class."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {})


def nanogpt_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("nano_gpt") is not None


def import_nanogpt():
    import importlib.util

    for name in ("datasets", "tiktoken"):
        if name not in sys.modules and importlib.util.find_spec(name) is None:
            sys.modules[name] = Absent(name)
    from nano_gpt.config import GPTConfig
    from nano_gpt.model import GPT

    return GPT, GPTConfig


def nanogpt_from_attnlab(model: nn.Module) -> nn.Module:
    """A nano-gpt GPT holding `model`'s (an attnlab GPT-2-style Decoder) weights."""
    GPT, GPTConfig = import_nanogpt()
    c = model.config
    if c.d_ff != 4 * c.d_model or not c.bias or c.activation != "gelu_tanh" or not c.tie_embeddings:
        raise ValueError("nano-gpt only builds GPT-2 blocks: d_ff = 4 d_model, biases, tanh-GELU, tied embeddings")
    peer = GPT(GPTConfig(block_size=c.max_len, vocab_size=c.vocab_size, n_layer=c.n_layers, n_head=c.n_heads,
                         n_embd=c.d_model), tokenizer=None)
    table = {"transformer.wte.weight": "tokens.weight", "transformer.wpe.weight": "positions.weight",
             "transformer.ln_f.weight": "final_norm.weight", "transformer.ln_f.bias": "final_norm.bias"}
    for i in range(c.n_layers):
        for peer_name, ours in (("ln_1", "norm1"), ("attn.c_attn", "attn.qkv"), ("attn.c_proj", "attn.out"),
                                ("ln_2", "norm2"), ("mlp.c_fc", "ffn.up"), ("mlp.c_proj", "ffn.down")):
            for leaf in ("weight", "bias"):
                table[f"transformer.h.{i}.{peer_name}.{leaf}"] = f"blocks.{i}.{ours}.{leaf}"
    _copy(model, peer, table)
    return peer


# ----------------------------------------------------------------------------- torch.nn.TransformerEncoder
def torch_encoder_from_attnlab(model: nn.Module) -> nn.TransformerEncoder:
    """torch.nn.TransformerEncoder (batch_first) holding the blocks of an attnlab post- or pre-LN encoder."""
    c = model.config
    if c.activation not in ("relu", "gelu") or c.norm != "layernorm" or not c.bias:
        raise ValueError("torch.nn.TransformerEncoderLayer has LayerNorm, biases and ReLU or GELU only")
    layer = nn.TransformerEncoderLayer(c.d_model, c.n_heads, c.d_ff, dropout=0.0, activation=c.activation,
                                       layer_norm_eps=c.norm_eps, batch_first=True,
                                       norm_first=c.norm_placement == "pre")
    peer = nn.TransformerEncoder(layer, c.n_layers, enable_nested_tensor=False)
    table = {}
    for i in range(c.n_layers):
        for peer_name, ours in (("self_attn.in_proj", "attn.qkv"), ("self_attn.out_proj", "attn.out"),
                                ("linear1", "ffn.up"), ("linear2", "ffn.down"), ("norm1", "norm1"),
                                ("norm2", "norm2")):
            for leaf in ("weight", "bias"):
                sep = "_" if peer_name == "self_attn.in_proj" else "."
                table[f"layers.{i}.{peer_name}{sep}{leaf}"] = f"blocks.{i}.{ours}.{leaf}"
    _copy(model, peer, table)
    return peer


def _copy(source: nn.Module, target: nn.Module, table: dict[str, str]) -> None:
    """target[peer_name] = source[attnlab_name] for every row; every target parameter must be covered."""
    ours = source.state_dict()
    theirs = dict(target.named_parameters())
    missing = sorted(set(theirs) - set(table))
    if missing:
        raise KeyError(f"no attnlab weight mapped to {missing[:4]}")
    with torch.no_grad():
        for peer_name, our_name in table.items():
            theirs[peer_name].copy_(ours[our_name])


# ----------------------------------------------------------------------------- the contestants of one case
def hf_model(kind: str, config: ModelConfig) -> nn.Module:
    """The HF peer of a benchmark case: "gpt" GPT2LMHeadModel, "bert" BertModel, "mlm" BertForMaskedLM, else
    ViTForImageClassification."""
    if kind == "gpt":
        return hf_gpt2(config)
    if kind in ("bert", "mlm"):
        return hf_bert(config, masked_lm=kind == "mlm")
    return hf_vit(config)


def same_weights(impls: tuple[str, ...], hf_model: Callable[[], nn.Module],
                 ours: Callable[[], nn.Module]) -> dict[str, nn.Module]:
    """impl -> model for `impls`, all holding the same weights: attnlab's converted from HF's when HF is a
    contestant (and attnlab.interop.hf is here), else `ours()`; nanoGPT and torch.nn.TransformerEncoder get
    attnlab's tensors copied in. A peer that is not installed is left out (the case reports it missing)."""
    torch.manual_seed(0)
    if impls == ("hf",):
        return {"hf": hf_model()}
    models: dict[str, nn.Module] = {}
    if "hf" in impls and hf_available():
        hf = hf_model()
        models["attnlab"] = from_hf(hf)
        models["hf"] = hf
    else:
        models["attnlab"] = ours()
    if "nanogpt" in impls and nanogpt_available():
        models["nanogpt"] = nanogpt_from_attnlab(models["attnlab"])
    if "torch" in impls:
        models["torch"] = torch_encoder_from_attnlab(models["attnlab"])
    if "attnlab" not in impls:
        models.pop("attnlab")
    return models
