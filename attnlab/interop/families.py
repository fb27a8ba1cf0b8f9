"""The Hugging Face families attnlab reads and writes: for each, its config translation and ONE mapping table.

A family knows:
- `to_config(hf, architecture)`: the HF config.json dict -> ModelConfig fields (in the seeds' notation);
- `from_config(config, architecture)`: the reverse, a dict transformers builds the same model from;
- `table(config)`: attnlab tensor name <-> HF tensor name(s), with transforms (see mapping.py);
- `prefix`: where the base model sits inside the task model ("bert.", "transformer.", "model.", ...), so a bare
  BertModel checkpoint and a BertForMaskedLM one read through the same table;
- `legacy`: renames from older transformers layouts to the current one (ViT's `encoder.layer.N.attention...`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from attnlab.config import ROPE_SCALINGS, ModelConfig
from attnlab.errors import ConfigError
from attnlab.interop.mapping import (
    GATE_UP,
    HEADS_QKV,
    KV,
    PLUS_ONE,
    QKV,
    SQUEEZE0,
    TRANSPOSE,
    Rule,
    fused,
    linear,
    rule,
)

# HF activation names -> attnlab's (and back: the first HF name listed for an attnlab activation wins)
_ACT_FROM_HF = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu",
                "silu": "silu", "swish": "silu"}
_ACT_TO_HF = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu", "silu": "silu"}


def _act(name: str, family: str) -> str:
    if name not in _ACT_FROM_HF:
        raise ConfigError(f"{family}: activation {name!r} is not supported; supported: {', '.join(_ACT_FROM_HF)}")
    return _ACT_FROM_HF[name]


def _act_to_hf(name: str, family: str) -> str:
    if name not in _ACT_TO_HF:
        raise ConfigError(f"{family}: attnlab activation {name!r} has no HF equivalent here; "
                          f"allowed: {', '.join(_ACT_TO_HF)}")
    return _ACT_TO_HF[name]


def _token_id(value: Any, vocab_size: int) -> int | None:
    """HF token ids may be lists (several EOS) or lie outside a tiny test vocabulary; attnlab keeps one valid id."""
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < vocab_size:
        return None
    return value


def _ids(hf: dict, vocab_size: int, decoder_start: bool = False) -> dict[str, int | None]:
    keys = ("pad_token_id", "bos_token_id", "eos_token_id") + (("decoder_start_token_id",) if decoder_start else ())
    return {k: _token_id(hf.get(k), vocab_size) for k in keys}


def _n_classes(hf: dict) -> int:
    if isinstance(hf.get("id2label"), dict) and hf["id2label"]:
        return len(hf["id2label"])
    return int(hf.get("num_labels", 2))


def _labels(n: int) -> dict[str, Any]:
    """A classifier's HF label maps (LABEL_0 ...), whose size tells transformers num_labels; {} without classes."""
    if not n:
        return {}
    return {"id2label": {str(i): f"LABEL_{i}" for i in range(n)}, "label2id": {f"LABEL_{i}": i for i in range(n)}}


def _head_dim(d_model: int, n_heads: int, d_head: int | None) -> int | None:
    """attnlab leaves d_head unset when it is d_model / n_heads; keep that so configs compare equal."""
    if d_head is None or (d_model % n_heads == 0 and d_head == d_model // n_heads):
        return None
    return d_head


@dataclass
class Family:
    name: str
    model_types: tuple[str, ...]
    prefix: str
    architectures: dict[str, dict[str, Any]]  # HF class name -> ModelConfig fields it implies (head, pooler...)
    to_config: Callable[[dict, dict], dict]
    from_config: Callable[[ModelConfig], dict]
    table: Callable[[ModelConfig], list[Rule]]
    legacy: list[tuple[str, str]] = field(default_factory=list)  # (regex, replacement) on HF names
    uncompared: tuple[str, ...] = ()  # ModelConfig fields this family does not carry (ignored on export check)
    # HF tensors the table does not map but that may be in a checkpoint (regular expressions on the name), each
    # with the reason it is safe to skip; any other tensor the table leaves unread is refused (a copy of a mapped
    # tensor, a tied alias, is accepted)
    unmapped: Callable[[ModelConfig], dict[str, str]] = lambda c: {}

    @property
    def default_architecture(self) -> str:
        return next(iter(self.architectures))

    def architecture_for(self, config: ModelConfig) -> str:
        """The HF class whose head matches the attnlab config's head."""
        for arch, implied in self.architectures.items():
            if all(getattr(config, k) == v for k, v in implied.items() if k != "n_classes"):
                return arch
        raise ConfigError(f"{self.name}: no HF class has head={config.head!r}, pooler={config.pooler}; "
                          f"classes: {', '.join(self.architectures)}")

    def rename_legacy(self, name: str) -> str:
        for pattern, replacement in self.legacy:
            name = re.sub(pattern, replacement, name)
        return name


# ---------------------------------------------------------------------------------------------------- BERT
def _bert_config(hf: dict, arch: dict) -> dict:
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise ConfigError(f"bert: position_embedding_type={hf['position_embedding_type']!r}; only 'absolute'")
    v = hf["vocab_size"]
    return dict(topology="encoder", vocab_size=v, d_model=hf["hidden_size"], n_heads=hf["num_attention_heads"],
                d_ff=hf["intermediate_size"], n_layers=hf["num_hidden_layers"],
                max_len=hf.get("max_position_embeddings", 512), position="learned",
                activation=_act(hf.get("hidden_act", "gelu"), "bert"), norm="layernorm",
                norm_eps=hf.get("layer_norm_eps", 1e-12), norm_placement="post", embedding_norm=True,
                type_vocab_size=hf.get("type_vocab_size", 2), tie_embeddings=hf.get("tie_word_embeddings", True),
                lm_head_bias=arch["head"] == "lm", lm_head_transform=arch["head"] == "lm",
                dropout=hf.get("hidden_dropout_prob", 0.0), attn_dropout=hf.get("attention_probs_dropout_prob", 0.0),
                n_classes=_n_classes(hf) if arch["head"] in ("classifier", "token_classifier") else 0,
                nsp=arch == BERT_PRETRAINING,  # hf._refine drops it when the weights lack cls.seq_relationship
                **arch, **_ids(hf, v))


def _bert_hf(c: ModelConfig) -> dict:
    return dict(vocab_size=c.vocab_size, hidden_size=c.d_model, num_attention_heads=c.n_heads,
                intermediate_size=c.d_ff, num_hidden_layers=c.n_layers, max_position_embeddings=c.max_len,
                hidden_act=_act_to_hf(c.activation, "bert"), layer_norm_eps=c.norm_eps,
                type_vocab_size=c.type_vocab_size, tie_word_embeddings=c.tie_embeddings,
                hidden_dropout_prob=c.dropout, attention_probs_dropout_prob=c.attn_dropout,
                position_embedding_type="absolute", pad_token_id=c.pad_token_id, bos_token_id=c.bos_token_id,
                eos_token_id=c.eos_token_id, **_labels(c.n_classes))


def _bert_table(c: ModelConfig) -> list[Rule]:
    layer = "bert.encoder.layer.{i}"
    rules = [rule("tokens.weight", "bert.embeddings.word_embeddings.weight"),
             rule("positions.weight", "bert.embeddings.position_embeddings.weight"),
             *linear("embed_norm", "bert.embeddings.LayerNorm"),
             *fused("blocks.{i}.attn.qkv", [f"{layer}.attention.self.{p}" for p in ("query", "key", "value")],
                    True, QKV),
             *linear("blocks.{i}.attn.out", f"{layer}.attention.output.dense"),
             *linear("blocks.{i}.norm1", f"{layer}.attention.output.LayerNorm"),
             *linear("blocks.{i}.ffn.up", f"{layer}.intermediate.dense"),
             *linear("blocks.{i}.ffn.down", f"{layer}.output.dense"),
             *linear("blocks.{i}.norm2", f"{layer}.output.LayerNorm")]
    if c.type_vocab_size:
        rules.append(rule("token_types.weight", "bert.embeddings.token_type_embeddings.weight"))
    if c.pooler:
        rules += linear("pooler.dense", "bert.pooler.dense")
    if c.nsp:
        rules += linear("nsp_head", "cls.seq_relationship")
    if c.head == "lm":
        rules += [*linear("lm_head.transform", "cls.predictions.transform.dense"),
                  *linear("lm_head.norm", "cls.predictions.transform.LayerNorm"),
                  rule("lm_head.bias", "cls.predictions.bias")]
        if not c.tie_embeddings:
            rules.append(rule("lm_head.proj.weight", "cls.predictions.decoder.weight"))
    if c.head in ("classifier", "token_classifier"):
        rules += linear("classifier", "classifier")
    return rules


BERT_PRETRAINING = dict(head="lm", pooler=True)  # BertForPreTraining: MLM head, pooler and next-sentence head
BERT = Family(
    "bert", ("bert",), "bert.",
    {"BertForMaskedLM": dict(head="lm", pooler=False), "BertForPreTraining": BERT_PRETRAINING,
     "BertModel": dict(head="none", pooler=True),
     "BertForSequenceClassification": dict(head="classifier", pooler=True),
     "BertForTokenClassification": dict(head="token_classifier", pooler=False)},
    _bert_config, _bert_hf, _bert_table,
    # nsp is not compared on export: a pooler + MLM config without it still writes a BertForPreTraining, whose
    # next-sentence head transformers then initialises at random (its MLM logits are unaffected)
    uncompared=("nsp",),
    unmapped=lambda c: {**({} if c.nsp else {r"cls\.seq_relationship\.(weight|bias)": "BertForPreTraining's "
                                             "next-sentence head, which a config with nsp=False does not compute "
                                             "(the MLM logits are unaffected)"}),
                        r"bert\.embeddings\.(position_ids|token_type_ids)": "index buffers (0, 1, 2 ... and zeros) "
                        "older transformers saved; attnlab makes the same indices itself"},
    legacy=[(r"LayerNorm\.gamma$", "LayerNorm.weight"), (r"LayerNorm\.beta$", "LayerNorm.bias")])  # TF-era names


# ------------------------------------------------------------------------------------- decoder-only LMs
def _untied_lm_head(c: ModelConfig) -> list[Rule]:
    """A decoder LM's output matrix is its own tensor (HF's lm_head.weight) only when not tied to the embedding."""
    return [rule("lm_head.proj.weight", "lm_head.weight")] if c.head == "lm" and not c.tie_embeddings else []


def _decoder_family(name: str, prefix: str, lm_class: str, base_class: str, to_config: Callable[[dict, dict], dict],
                    from_config: Callable[[ModelConfig], dict], table: Callable[[ModelConfig], list[Rule]],
                    skipped: str, reason: str) -> Family:
    """A decoder-only family (GPT-2, LLaMA): the LM class (head='lm', the default export) and the bare model
    (head='none'); `skipped`, a regex of the buffers older transformers saved, is read past for `reason`."""
    return Family(name, (name,), prefix, {lm_class: dict(head="lm"), base_class: dict(head="none")},
                  to_config, from_config, table, unmapped=lambda c: {skipped: reason})


# --------------------------------------------------------------------------------------------------- GPT-2
def _gpt2_config(hf: dict, arch: dict) -> dict:
    for flag in ("scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention"):
        if hf.get(flag):
            raise ConfigError(f"gpt2: {flag}=True is not supported (attnlab's attention has no such variant)")
    v, d = hf["vocab_size"], hf["n_embd"]
    return dict(topology="decoder", vocab_size=v, d_model=d, n_heads=hf["n_head"], d_ff=hf.get("n_inner") or 4 * d,
                n_layers=hf["n_layer"], max_len=hf.get("n_positions", 1024), position="learned",
                activation=_act(hf.get("activation_function", "gelu_new"), "gpt2"), norm="layernorm",
                norm_eps=hf.get("layer_norm_epsilon", 1e-5), norm_placement="pre",
                attn_scale=None if hf.get("scale_attn_weights", True) else 1.0,
                tie_embeddings=hf.get("tie_word_embeddings", True), dropout=hf.get("resid_pdrop", 0.0),
                attn_dropout=hf.get("attn_pdrop", 0.0), **arch, **_ids(hf, v))


def _gpt2_hf(c: ModelConfig) -> dict:
    return dict(vocab_size=c.vocab_size, n_embd=c.d_model, n_head=c.n_heads, n_inner=c.d_ff, n_layer=c.n_layers,
                n_positions=c.max_len, activation_function=_act_to_hf(c.activation, "gpt2"),
                layer_norm_epsilon=c.norm_eps, scale_attn_weights=c.attn_scale is None,
                tie_word_embeddings=c.tie_embeddings, resid_pdrop=c.dropout, embd_pdrop=c.dropout,
                attn_pdrop=c.attn_dropout, pad_token_id=c.pad_token_id, bos_token_id=c.bos_token_id,
                eos_token_id=c.eos_token_id)


def _gpt2_table(c: ModelConfig) -> list[Rule]:
    h = "transformer.h.{i}"
    rules = [rule("tokens.weight", "transformer.wte.weight"), rule("positions.weight", "transformer.wpe.weight"),
             *linear("blocks.{i}.norm1", f"{h}.ln_1"),
             *linear("blocks.{i}.attn.qkv", f"{h}.attn.c_attn", transform=TRANSPOSE),  # Conv1D: already fused
             *linear("blocks.{i}.attn.out", f"{h}.attn.c_proj", transform=TRANSPOSE),
             *linear("blocks.{i}.norm2", f"{h}.ln_2"),
             *linear("blocks.{i}.ffn.up", f"{h}.mlp.c_fc", transform=TRANSPOSE),
             *linear("blocks.{i}.ffn.down", f"{h}.mlp.c_proj", transform=TRANSPOSE),
             *linear("final_norm", "transformer.ln_f")]
    return rules + _untied_lm_head(c)


GPT2 = _decoder_family("gpt2", "transformer.", "GPT2LMHeadModel", "GPT2Model", _gpt2_config, _gpt2_hf, _gpt2_table,
                       r"transformer\.h\.\d+\.attn\.(bias|masked_bias)",
                       "the causal-mask buffers older transformers saved; attnlab builds the same mask itself")


# ------------------------------------------------------------------------- LLaMA and its rotary relatives
# LLaMA, Qwen2, Qwen3 and Mistral share one layout (model.layers.N.self_attn.q_proj ..., RMSNorm, SwiGLU, RoPE);
# they differ in options of the block: biases on Q, K, V only (Qwen2), a q/k norm per head (Qwen3), a sliding
# window (Mistral), and in how RoPE's frequencies are scaled (any of them).
_ROPE_KEYS = {"original_max_len": "original_max_position_embeddings"}  # attnlab's rope_scaling key -> HF's


def _rope(hf: dict, family: str) -> tuple[float, dict[str, Any]]:
    """(rope_theta, ModelConfig.rope_scaling) from rope_parameters (transformers 5) or rope_scaling (older files),
    with the defaults transformers fills in: llama3 and yarn read their pre-training length from
    original_max_position_embeddings (else max_position_embeddings), dynamic from max_position_embeddings.
    GPT-NeoX's older files name theta rotary_emb_base."""
    params = _rope_parameters(hf, family)
    kind = params.get("rope_type", params.get("type", "default"))
    theta = float(params.get("rope_theta", hf.get("rope_theta", hf.get("rotary_emb_base", 10000.0))))
    if kind == "default":
        return theta, {}
    if kind not in ROPE_SCALINGS:
        raise ConfigError(f"{family}: rope_type={kind!r} is not supported; supported: default, "
                          f"{', '.join(ROPE_SCALINGS)}")
    max_pos = hf.get("max_position_embeddings", 2048)
    original = (max_pos if kind == "dynamic" else hf.get("original_max_position_embeddings")
                or params.get("original_max_position_embeddings") or max_pos)
    scaling: dict[str, Any] = {"type": kind}
    if "original_max_len" in ROPE_SCALINGS[kind]:
        scaling["original_max_len"] = original
    for key in ROPE_SCALINGS[kind]:
        value = params.get(_ROPE_KEYS.get(key, key))
        if key != "original_max_len" and value is not None:
            scaling[key] = value
    if kind in ("yarn", "longrope") and scaling.get("factor") is None:  # transformers: the ratio of the lengths
        scaling["factor"] = max_pos / original
    return theta, scaling


def _rope_parameters(hf: dict, family: str) -> dict:
    params = hf.get("rope_parameters") or hf.get("rope_scaling") or {}
    if not isinstance(params, dict):
        raise ConfigError(f"{family}: rope_parameters must be a JSON object, got {type(params).__name__}")
    return params


def _partial_rotary(hf: dict, family: str, d_head: int, default: float = 1.0) -> int | None:
    """ModelConfig.rotary_dim from partial_rotary_factor (GPT-NeoX's older files: rotary_pct): int(d_head * factor)
    features rotated, as transformers computes it; None when every feature is."""
    params = _rope_parameters(hf, family)
    factor = params.get("partial_rotary_factor", hf.get("partial_rotary_factor", hf.get("rotary_pct", default)))
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
        raise ConfigError(f"{family}: partial_rotary_factor={factor!r}; allowed: a number in (0, 1]")
    rotary_dim = int(d_head * factor)
    return None if rotary_dim == d_head else rotary_dim


def _rope_to_hf(c: ModelConfig) -> dict:
    """rope_parameters for config.json: the type, theta and every scaling key under its HF name."""
    scaling = dict(c.rope_scaling)
    kind = scaling.pop("type", "default")
    if kind == "dynamic":
        scaling.pop("original_max_len")  # transformers reads it from max_position_embeddings
    params = {"rope_type": kind, "rope_theta": c.rope_theta, **{_ROPE_KEYS.get(k, k): v for k, v in scaling.items()}}
    if c.rotary_dim is not None:
        params["partial_rotary_factor"] = c.rotary_dim / c.head_dim
    return {"rope_parameters": params, "rope_theta": c.rope_theta}


def _sliding_window(hf: dict, family: str) -> int | None:
    """Mistral and Phi-3 slide every layer's window; Qwen2/Qwen3 only with use_sliding_window, on the layers layer_types
    names (by default those from max_window_layers on). attnlab's window covers every layer or none."""
    window = hf.get("sliding_window")
    if family in ("mistral", "phi3"):
        return window
    if not hf.get("use_sliding_window", False) or window is None:
        return None
    n = hf["num_hidden_layers"]
    types = hf.get("layer_types") or ["sliding_attention" if i >= hf.get("max_window_layers", n) else
                                      "full_attention" for i in range(n)]
    if set(types) == {"full_attention"}:
        return None
    if set(types) != {"sliding_attention"}:
        raise ConfigError(f"{family}: use_sliding_window=True on some layers only (layer_types / max_window_layers) "
                          "is not supported; attnlab's sliding_window covers every layer or none")
    return window


def _rotary_config(hf: dict, arch: dict, family: str) -> dict:
    """An HF LLaMA-layout config -> ModelConfig fields; the family decides the biases, q/k norm and window."""
    if hf.get("hidden_act", "silu") != "silu":
        raise ConfigError(f"{family}: hidden_act={hf['hidden_act']!r}; only 'silu' (SwiGLU)")
    qkv_bias = None
    if family == "llama":
        if bool(hf.get("attention_bias", False)) != bool(hf.get("mlp_bias", False)):
            raise ConfigError("llama: attention_bias and mlp_bias differ; attnlab has one `bias` flag for both")
        bias = bool(hf.get("attention_bias"))
    elif family in ("qwen3", "olmo2") and hf.get("attention_bias"):
        raise ConfigError(f"{family}: attention_bias=True (biases on W_Q, W_K, W_V and W_O but not the "
                          "feed-forward) is not supported; attnlab's `bias` covers attention and feed-forward, "
                          "`qkv_bias` W_Q, W_K, W_V")
    else:  # qwen2: biases on W_Q, W_K, W_V only; qwen3, mistral, olmo2: none
        bias, qkv_bias = False, True if family == "qwen2" else None
    qk_norm = {"qwen3": "head", "olmo2": "all"}.get(family, "none")
    placement = "output" if family == "olmo2" else "pre"  # OLMo 2 normalises each sub-layer's output instead
    v, d, h = hf["vocab_size"], hf["hidden_size"], hf["num_attention_heads"]
    kv = hf.get("num_key_value_heads") or h
    theta, scaling = _rope(hf, family)
    rotary_dim = _partial_rotary(hf, family, hf.get("head_dim") or d // h)
    if rotary_dim is not None and family != "phi3":
        raise ConfigError(f"{family}: a partial_rotary_factor below 1 is not supported for this family; only 1.0")
    return dict(topology="decoder", vocab_size=v, d_model=d, n_heads=h, n_kv_heads=None if kv == h else kv,
                d_head=_head_dim(d, h, hf.get("head_dim")), d_ff=hf["intermediate_size"],
                n_layers=hf["num_hidden_layers"], max_len=hf.get("max_position_embeddings", 2048), position="rope",
                rope_theta=theta, rope_scaling=scaling, rotary_dim=rotary_dim, activation="swiglu", norm="rmsnorm",
                norm_eps=hf.get("rms_norm_eps", 1e-6), norm_placement=placement, bias=bias, qkv_bias=qkv_bias,
                qk_norm=qk_norm, sliding_window=_sliding_window(hf, family),
                tie_embeddings=hf.get("tie_word_embeddings", False), attn_dropout=hf.get("attention_dropout", 0.0),
                **arch, **_ids(hf, v))


def _rotary_hf(c: ModelConfig, family: str) -> dict:
    out = dict(vocab_size=c.vocab_size, hidden_size=c.d_model, num_attention_heads=c.n_heads,
               num_key_value_heads=c.kv_heads, head_dim=c.head_dim, intermediate_size=c.d_ff,
               num_hidden_layers=c.n_layers, max_position_embeddings=c.max_len, **_rope_to_hf(c),
               hidden_act="silu", rms_norm_eps=c.norm_eps, tie_word_embeddings=c.tie_embeddings,
               attention_dropout=c.attn_dropout, pad_token_id=c.pad_token_id, bos_token_id=c.bos_token_id,
               eos_token_id=c.eos_token_id)
    if family == "llama":
        out.update(attention_bias=c.bias, mlp_bias=c.bias)
    elif family in ("qwen3", "olmo2"):
        out.update(attention_bias=False)
    if family in ("mistral", "phi3"):
        out.update(sliding_window=c.sliding_window)
    if family == "phi3":  # Phi-3 keeps the pre-training length at the top level, where transformers reads it first
        out.update(original_max_position_embeddings=c.rope_scaling.get("original_max_len", c.max_len))
    elif family in ("qwen2", "qwen3"):
        window = c.sliding_window is not None
        out.update(use_sliding_window=window, sliding_window=c.sliding_window, max_window_layers=0,
                   layer_types=[("sliding_attention" if window else "full_attention")] * c.n_layers)
    return out


def _rotary_table(c: ModelConfig) -> list[Rule]:
    layer = "model.layers.{i}"
    # norm1 and norm2 sit before attention and the feed-forward (pre-LN), or after each (OLMo 2's output norms)
    norms = (("post_attention_layernorm", "post_feedforward_layernorm") if c.norm_placement == "output"
             else ("input_layernorm", "post_attention_layernorm"))
    rules = [rule("tokens.weight", "model.embed_tokens.weight"),
             *fused("blocks.{i}.attn.qkv", [f"{layer}.self_attn.{p}_proj" for p in "qkv"], c.attn_qkv_bias, QKV),
             *linear("blocks.{i}.attn.out", f"{layer}.self_attn.o_proj", c.bias),
             *linear("blocks.{i}.norm1", f"{layer}.{norms[0]}", bias=False),
             *linear("blocks.{i}.norm2", f"{layer}.{norms[1]}", bias=False),
             *fused("blocks.{i}.ffn.up", [f"{layer}.mlp.gate_proj", f"{layer}.mlp.up_proj"], c.bias, GATE_UP),
             *linear("blocks.{i}.ffn.down", f"{layer}.mlp.down_proj", c.bias),
             *linear("final_norm", "model.norm", bias=False)]
    if c.qk_norm != "none":
        rules += [*linear("blocks.{i}.attn.q_norm", f"{layer}.self_attn.q_norm", bias=False),
                  *linear("blocks.{i}.attn.k_norm", f"{layer}.self_attn.k_norm", bias=False)]
    return rules + _untied_lm_head(c)


def _phi3_table(c: ModelConfig) -> list[Rule]:
    """LLaMA's table with Phi-3's fused matrices: qkv_proj is already q | k | v, gate_up_proj gate | up (no biases)."""
    layer = "model.layers.{i}"
    fused_here = {"blocks.{i}.attn.qkv.weight": f"{layer}.self_attn.qkv_proj.weight",
                  "blocks.{i}.ffn.up.weight": f"{layer}.mlp.gate_up_proj.weight"}
    return [rule(r.ours, fused_here[r.ours]) if r.ours in fused_here else r for r in _rotary_table(c)]


def _rotary_family(name: str, classes: str, table: Callable[[ModelConfig], list[Rule]] = _rotary_table) -> Family:
    """A LLaMA-layout family: {classes}ForCausalLM (head='lm') and {classes}Model (head='none')."""
    return _decoder_family(name, "model.", f"{classes}ForCausalLM", f"{classes}Model",
                           lambda hf, arch: _rotary_config(hf, arch, name), lambda c: _rotary_hf(c, name),
                           table, r"model\.(layers\.\d+\.self_attn\.)?rotary_emb\.inv_freq",
                           "RoPE frequencies older transformers saved; attnlab computes them from rope_theta")


# ------------------------------------------------------------------------------------------ GPT-NeoX (Pythia)
def _neox_config(hf: dict, arch: dict) -> dict:
    """GPT-NeoX / Pythia: LayerNorms with biases, RoPE on the first quarter of each head (rotary_pct), attention and
    feed-forward side by side (use_parallel_residual), q/k/v fused head by head, an untied output matrix."""
    if not hf.get("attention_bias", True):
        raise ConfigError("gpt_neox: attention_bias=False (no biases on attention, biases on the feed-forward) is not "
                          "supported; attnlab's `bias` covers both")
    v, d, h = hf["vocab_size"], hf["hidden_size"], hf["num_attention_heads"]
    theta, scaling = _rope(hf, "gpt_neox")
    return dict(topology="decoder", vocab_size=v, d_model=d, n_heads=h, d_ff=hf["intermediate_size"],
                n_layers=hf["num_hidden_layers"], max_len=hf.get("max_position_embeddings", 2048), position="rope",
                rope_theta=theta, rope_scaling=scaling, rotary_dim=_partial_rotary(hf, "gpt_neox", d // h, 0.25),
                activation=_act(hf.get("hidden_act", "gelu"), "gpt_neox"), norm="layernorm",
                norm_eps=hf.get("layer_norm_eps", 1e-5), norm_placement="pre", bias=True,
                parallel_residual=bool(hf.get("use_parallel_residual", True)),
                tie_embeddings=hf.get("tie_word_embeddings", False), dropout=hf.get("hidden_dropout", 0.0),
                attn_dropout=hf.get("attention_dropout", 0.0), **arch, **_ids(hf, v))


def _neox_hf(c: ModelConfig) -> dict:
    rope = _rope_to_hf(c)
    rope["rope_parameters"]["partial_rotary_factor"] = c.rope_dim / c.head_dim  # said even at 1: NeoX's default is 1/4
    return dict(vocab_size=c.vocab_size, hidden_size=c.d_model, num_attention_heads=c.n_heads,
                intermediate_size=c.d_ff, num_hidden_layers=c.n_layers, max_position_embeddings=c.max_len, **rope,
                hidden_act=_act_to_hf(c.activation, "gpt_neox"), layer_norm_eps=c.norm_eps,
                use_parallel_residual=c.parallel_residual, attention_bias=True, tie_word_embeddings=c.tie_embeddings,
                hidden_dropout=c.dropout, attention_dropout=c.attn_dropout, pad_token_id=c.pad_token_id,
                bos_token_id=c.bos_token_id, eos_token_id=c.eos_token_id)


def _neox_table(c: ModelConfig) -> list[Rule]:
    layer = "gpt_neox.layers.{i}"
    qkv = f"{layer}.attention.query_key_value"
    rules = [rule("tokens.weight", "gpt_neox.embed_in.weight"),
             *linear("blocks.{i}.norm1", f"{layer}.input_layernorm"),
             rule("blocks.{i}.attn.qkv.weight", f"{qkv}.weight", HEADS_QKV),  # q, k, v head by head
             rule("blocks.{i}.attn.qkv.bias", f"{qkv}.bias", HEADS_QKV),
             *linear("blocks.{i}.attn.out", f"{layer}.attention.dense"),
             *linear("blocks.{i}.norm2", f"{layer}.post_attention_layernorm"),
             *linear("blocks.{i}.ffn.up", f"{layer}.mlp.dense_h_to_4h"),
             *linear("blocks.{i}.ffn.down", f"{layer}.mlp.dense_4h_to_h"),
             *linear("final_norm", "gpt_neox.final_layer_norm")]
    return rules + ([rule("lm_head.proj.weight", "embed_out.weight")] if c.head == "lm" and not c.tie_embeddings
                    else [])


GPT_NEOX = _decoder_family("gpt_neox", "gpt_neox.", "GPTNeoXForCausalLM", "GPTNeoXModel", _neox_config, _neox_hf,
                           _neox_table, r"gpt_neox\.layers\.\d+\.attention\.(bias|masked_bias|rotary_emb\.inv_freq)",
                           "the causal-mask and RoPE buffers older transformers saved; attnlab makes both itself")
# transformers 5 names the head lm_head in memory (its state_dict) and embed_out in the files it saves
GPT_NEOX.legacy.append((r"^lm_head\.weight$", "embed_out.weight"))

# ------------------------------------------------------------------------------------------------- Gemma 2
_GEMMA_ACT = {"gelu_pytorch_tanh": "geglu_tanh", "gelu_new": "geglu_tanh", "gelu": "geglu"}


def _gemma_windows(hf: dict, n_layers: int, family: str = "gemma2") -> tuple[int | None, int | None]:
    """(sliding_window, global_every) from layer_types: no window, a window on every layer, or on all but every
    global_every-th layer (Gemma 2's default: layers 1, 3, 5 ... see every key; Gemma 3's: layers 5, 11, 17 ...,
    older files saying so by sliding_window_pattern)."""
    window = hf.get("sliding_window")
    period = 2 if family == "gemma2" else hf.get("sliding_window_pattern") or hf.get("_sliding_window_pattern") or 6
    types = hf.get("layer_types") or ["sliding_attention" if (i + 1) % period else "full_attention"
                                      for i in range(n_layers)]
    sliding = [t == "sliding_attention" for t in types]
    if window is None or not any(sliding):
        return None, None
    if all(sliding):
        return window, None
    for every in range(2, n_layers + 1):
        if sliding == [bool((i + 1) % every) for i in range(n_layers)]:
            return window, every
    raise ConfigError(f"{family}: layer_types is not a periodic pattern (every k-th layer global, the others sliding); "
                      "attnlab's global_every cannot describe it")


def _gemma2_config(hf: dict, arch: dict, family: str = "gemma2") -> dict:
    """Gemma 2: sandwich RMSNorms with (1 + w) gains, GELU-tanh gated feed-forward, embeddings times sqrt(d_model),
    soft-capped scores and logits, queries scaled by query_pre_attn_scalar^-1/2, alternating sliding windows.
    Gemma 3 reads its block through here too (`family` names it in the errors, its RoPE is read apart)."""
    if hf.get("attention_bias"):
        raise ConfigError(f"{family}: attention_bias=True is not supported (attnlab's `bias` would put biases on the "
                          "feed-forward too)")
    act = hf.get("hidden_activation") or hf.get("hidden_act") or "gelu_pytorch_tanh"
    if act not in _GEMMA_ACT:
        raise ConfigError(f"{family}: hidden_activation={act!r}; supported: {', '.join(_GEMMA_ACT)}")
    v, d, h = hf["vocab_size"], hf["hidden_size"], hf["num_attention_heads"]
    kv = hf.get("num_key_value_heads") or h
    d_head = hf.get("head_dim") or d // h
    theta, scaling = _rope(hf, family) if family == "gemma2" else (10000.0, {})
    window, every = _gemma_windows(hf, hf["num_hidden_layers"], family)
    query_scalar = hf.get("query_pre_attn_scalar", d_head)
    return dict(topology="decoder", vocab_size=v, d_model=d, n_heads=h, n_kv_heads=None if kv == h else kv,
                d_head=_head_dim(d, h, d_head), d_ff=hf["intermediate_size"], n_layers=hf["num_hidden_layers"],
                max_len=hf.get("max_position_embeddings", 8192), position="rope", rope_theta=theta,
                rope_scaling=scaling, activation=_GEMMA_ACT[act], norm="rmsnorm", norm_eps=hf.get("rms_norm_eps", 1e-6),
                norm_placement="sandwich", bias=False, scale_embeddings=True,
                attn_scale=None if query_scalar == d_head else float(query_scalar) ** -0.5,
                attn_softcap=hf.get("attn_logit_softcapping"), logit_softcap=hf.get("final_logit_softcapping"),
                sliding_window=window, global_every=every, tie_embeddings=hf.get("tie_word_embeddings", True),
                attn_dropout=hf.get("attention_dropout", 0.0), **arch, **_ids(hf, v))


def _gemma2_hf(c: ModelConfig) -> dict:
    every = c.global_every
    sliding = [c.sliding_window is not None and (every is None or bool((i + 1) % every)) for i in range(c.n_layers)]
    query_scalar = c.head_dim if c.attn_scale is None else c.attn_scale ** -2
    if round(query_scalar) and abs(query_scalar - round(query_scalar)) <= 1e-6 * query_scalar:
        query_scalar = round(query_scalar)  # an integer in transformers' config (12 ** -0.5 squared is 12.000000001)
    return dict(vocab_size=c.vocab_size, hidden_size=c.d_model, num_attention_heads=c.n_heads,
                num_key_value_heads=c.kv_heads, head_dim=c.head_dim, intermediate_size=c.d_ff,
                num_hidden_layers=c.n_layers, max_position_embeddings=c.max_len, **_rope_to_hf(c),
                hidden_activation={v: k for k, v in _GEMMA_ACT.items()}.get(c.activation, c.activation),
                rms_norm_eps=c.norm_eps, attention_bias=False, query_pre_attn_scalar=query_scalar,
                attn_logit_softcapping=c.attn_softcap, final_logit_softcapping=c.logit_softcap,
                sliding_window=c.sliding_window,
                layer_types=["sliding_attention" if s else "full_attention" for s in sliding],
                tie_word_embeddings=c.tie_embeddings, attention_dropout=c.attn_dropout, pad_token_id=c.pad_token_id,
                bos_token_id=c.bos_token_id, eos_token_id=c.eos_token_id)


def _gemma2_table(c: ModelConfig) -> list[Rule]:
    layer = "model.layers.{i}"
    norms = (("norm1.before", "input_layernorm"), ("norm1.after", "post_attention_layernorm"),
             ("norm2.before", "pre_feedforward_layernorm"), ("norm2.after", "post_feedforward_layernorm"))
    rules = [rule("tokens.weight", "model.embed_tokens.weight"),
             *fused("blocks.{i}.attn.qkv", [f"{layer}.self_attn.{p}_proj" for p in "qkv"], False, QKV),
             *linear("blocks.{i}.attn.out", f"{layer}.self_attn.o_proj", False),
             *[rule(f"blocks.{{i}}.{ours}.weight", f"{layer}.{theirs}.weight", PLUS_ONE) for ours, theirs in norms],
             *fused("blocks.{i}.ffn.up", [f"{layer}.mlp.gate_proj", f"{layer}.mlp.up_proj"], False, GATE_UP),
             *linear("blocks.{i}.ffn.down", f"{layer}.mlp.down_proj", False),
             rule("final_norm.weight", "model.norm.weight", PLUS_ONE)]
    return rules + _untied_lm_head(c)


GEMMA2 = _decoder_family("gemma2", "model.", "Gemma2ForCausalLM", "Gemma2Model", _gemma2_config, _gemma2_hf,
                         _gemma2_table, r"model\.(layers\.\d+\.self_attn\.)?rotary_emb\.inv_freq",
                         "RoPE frequencies older transformers saved; attnlab computes them from rope_theta")

# ------------------------------------------------------------------------------------------ Gemma 3 (text)
def _gemma3_rope(hf: dict) -> tuple[float, dict[str, Any], float | None]:
    """(rope_theta, rope_scaling, rope_local_theta): the global layers' RoPE and the sliding layers' own base, from
    rope_parameters keyed by layer type (transformers 5) or rope_theta, rope_scaling and rope_local_base_freq (older
    files). The local layers turn plainly in Gemma 3; rope_local_theta stays None where they turn as the global
    ones do (the same base, no scaling), so that such a config compares equal to one without the option."""
    params = hf.get("rope_parameters")
    if isinstance(params, dict) and ("full_attention" in params or "sliding_attention" in params):
        full, local = params.get("full_attention") or {}, params.get("sliding_attention") or {}
        if not isinstance(full, dict) or not isinstance(local, dict):
            raise ConfigError("gemma3: rope_parameters of each layer type must be a JSON object")
        theta, scaling = _rope({**hf, "rope_parameters": full}, "gemma3")
        if local.get("rope_type", local.get("type", "default")) != "default":
            raise ConfigError(f"gemma3: rope_type={local.get('rope_type')!r} on the sliding layers is not supported; "
                              "attnlab's local layers turn plainly (rope_type 'default')")
        local_theta = float(local.get("rope_theta", 10000.0))
    else:
        theta, scaling = _rope(hf, "gemma3")
        local_theta = float(hf.get("rope_local_base_freq", 10000.0))
    return theta, scaling, None if local_theta == theta and not scaling else local_theta


def _gemma3_config(hf: dict, arch: dict) -> dict:
    """Gemma 3's text decoder: Gemma 2's block (sandwich (1 + w) RMSNorms, GELU-tanh gated feed-forward, embeddings
    times sqrt(d_model), query_pre_attn_scalar) with a q/k norm per head (1 + w gains, the caps of Gemma 2 gone by
    default), five sliding layers to one global one, and the sliding layers' own RoPE base (rope_local_theta)."""
    if hf.get("use_bidirectional_attention"):
        raise ConfigError("gemma3: use_bidirectional_attention=True (an encoder's mask, EmbeddingGemma) is not "
                          "supported; attnlab reads Gemma 3 as a causal decoder")
    theta, scaling, local_theta = _gemma3_rope(hf)
    fields = _gemma2_config(hf, arch, "gemma3")
    return dict(fields, rope_theta=theta, rope_scaling=scaling, qk_norm="head",
                rope_local_theta=local_theta if fields["sliding_window"] is not None else None,
                max_len=hf.get("max_position_embeddings", 131072))


def _gemma3_hf(c: ModelConfig) -> dict:
    out = _gemma2_hf(c)
    full = _rope_to_hf(c)["rope_parameters"]
    local = {"rope_type": "default", "rope_theta": c.rope_local_theta if c.rope_local_theta is not None
             else c.rope_theta}
    out.pop("rope_theta")
    out.update(rope_parameters={"full_attention": full, "sliding_attention": local}, use_bidirectional_attention=False)
    return out


def _gemma3_table(c: ModelConfig) -> list[Rule]:
    """Gemma 2's table and the per-head q/k norms, (1 + w) gains like every Gemma norm."""
    layer = "model.layers.{i}"
    return _gemma2_table(c) + [rule(f"blocks.{{i}}.attn.{x}_norm.weight", f"{layer}.self_attn.{x}_norm.weight",
                                    PLUS_ONE) for x in "qk"]


GEMMA3 = Family("gemma3", ("gemma3_text",), "model.",
                {"Gemma3ForCausalLM": dict(head="lm"), "Gemma3TextModel": dict(head="none")},
                _gemma3_config, _gemma3_hf, _gemma3_table,
                unmapped=lambda c: {r"model\.(layers\.\d+\.self_attn\.)?rotary_emb(_local)?\.inv_freq":
                                    "RoPE frequencies older transformers saved; attnlab computes them from "
                                    "rope_theta and rope_local_theta"})

LLAMA = _rotary_family("llama", "Llama")
QWEN2 = _rotary_family("qwen2", "Qwen2")
QWEN3 = _rotary_family("qwen3", "Qwen3")
MISTRAL = _rotary_family("mistral", "Mistral")
OLMO2 = _rotary_family("olmo2", "Olmo2")
PHI3 = _rotary_family("phi3", "Phi3", _phi3_table)


# ----------------------------------------------------------------------------------------------------- ViT
def _vit_config(hf: dict, arch: dict) -> dict:
    if not hf.get("qkv_bias", True):
        raise ConfigError("vit: qkv_bias=False is not supported (attnlab's `bias` covers attention and MLP)")
    return dict(topology="vit", vocab_size=1, d_model=hf["hidden_size"], n_heads=hf["num_attention_heads"],
                d_ff=hf["intermediate_size"], n_layers=hf["num_hidden_layers"], image_size=hf["image_size"],
                patch_size=hf["patch_size"], n_channels=hf.get("num_channels", 3), position="learned",
                activation=_act(hf.get("hidden_act", "gelu"), "vit"), norm="layernorm",
                norm_eps=hf.get("layer_norm_eps", 1e-12), norm_placement="pre",
                dropout=hf.get("hidden_dropout_prob", 0.0), attn_dropout=hf.get("attention_probs_dropout_prob", 0.0),
                n_classes=_n_classes(hf) if arch["head"] == "classifier" else 0, **arch)


def _vit_hf(c: ModelConfig) -> dict:
    return dict(hidden_size=c.d_model, num_attention_heads=c.n_heads, intermediate_size=c.d_ff,
                num_hidden_layers=c.n_layers, image_size=c.image_size, patch_size=c.patch_size,
                num_channels=c.n_channels, hidden_act=_act_to_hf(c.activation, "vit"), layer_norm_eps=c.norm_eps,
                qkv_bias=True, hidden_dropout_prob=c.dropout, attention_probs_dropout_prob=c.attn_dropout,
                **_labels(c.n_classes))


def _vit_table(c: ModelConfig) -> list[Rule]:
    layer = "vit.layers.{i}"
    rules = [rule("cls_token", "vit.embeddings.cls_token"),
             rule("positions.weight", "vit.embeddings.position_embeddings", SQUEEZE0),  # (1, 1 + patches, d)
             *linear("patches.proj", "vit.embeddings.patch_embeddings.projection"),
             *fused("blocks.{i}.attn.qkv", [f"{layer}.attention.{p}_proj" for p in "qkv"], True, QKV),
             *linear("blocks.{i}.attn.out", f"{layer}.attention.o_proj"),
             *linear("blocks.{i}.norm1", f"{layer}.layernorm_before"),
             *linear("blocks.{i}.norm2", f"{layer}.layernorm_after"),
             *linear("blocks.{i}.ffn.up", f"{layer}.mlp.fc1"),
             *linear("blocks.{i}.ffn.down", f"{layer}.mlp.fc2"),
             *linear("final_norm", "vit.layernorm")]
    if c.head == "classifier":
        rules += linear("classifier", "classifier")
    return rules


_VIT_LEGACY = [  # transformers < 5 wrote ViT as encoder.layer.N.attention.attention.query ...
    (r"vit\.encoder\.layer\.(\d+)\.attention\.attention\.(query|key|value)\.",
     lambda m: f"vit.layers.{m[1]}.attention.{m[2][0]}_proj."),
    (r"vit\.encoder\.layer\.(\d+)\.attention\.output\.dense\.", r"vit.layers.\1.attention.o_proj."),
    (r"vit\.encoder\.layer\.(\d+)\.intermediate\.dense\.", r"vit.layers.\1.mlp.fc1."),
    (r"vit\.encoder\.layer\.(\d+)\.output\.dense\.", r"vit.layers.\1.mlp.fc2."),
    (r"vit\.encoder\.layer\.(\d+)\.layernorm_", r"vit.layers.\1.layernorm_"),
]

VIT = Family("vit", ("vit",), "vit.",
             {"ViTForImageClassification": dict(head="classifier"), "ViTModel": dict(head="none")},
             _vit_config, _vit_hf, _vit_table, legacy=_VIT_LEGACY,
             unmapped=lambda c: {r"vit\.pooler\.dense\.(weight|bias)": "ViTModel's pooler: an output attnlab's ViT "
                                 "does not compute (the hidden states are unaffected)"},
             uncompared=("max_len", "vocab_size", "pad_token_id", "bos_token_id", "eos_token_id"))


# --------------------------------------------------------------------------------------- BART and Marian
def _seq2seq_common(hf: dict, family: str) -> dict:
    for a, b in (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")):
        if hf.get(a) != hf.get(b):
            raise ConfigError(f"{family}: {a}={hf.get(a)} differs from {b}={hf.get(b)}; attnlab's encoder and "
                              "decoder share n_heads and d_ff")
    if hf.get("add_final_layer_norm") or hf.get("normalize_before"):
        raise ConfigError(f"{family}: pre-LN variants (normalize_before/add_final_layer_norm) are not supported")
    v = hf["vocab_size"]
    enc, dec = hf["encoder_layers"], hf["decoder_layers"]
    tied = hf.get("tie_word_embeddings", True)
    # transformers 5 ties encoder, decoder and output embeddings under one flag: untied, all four differ
    return dict(topology="encoder-decoder", vocab_size=v, d_model=hf["d_model"], n_heads=hf["encoder_attention_heads"],
                d_ff=hf["encoder_ffn_dim"], n_layers=enc, n_decoder_layers=None if dec == enc else dec,
                max_len=hf.get("max_position_embeddings", 1024),
                activation=_act(hf.get("activation_function", "gelu"), family), norm="layernorm", norm_eps=1e-5,
                norm_placement="post", scale_embeddings=bool(hf.get("scale_embedding", False)),
                tie_embeddings=tied, shared_embeddings=tied, dropout=hf.get("dropout", 0.0),
                attn_dropout=hf.get("attention_dropout", 0.0), **_ids(hf, v, decoder_start=True))


def _seq2seq_hf(c: ModelConfig, family: str) -> dict:
    return dict(vocab_size=c.vocab_size, d_model=c.d_model, encoder_attention_heads=c.n_heads,
                decoder_attention_heads=c.n_heads, encoder_ffn_dim=c.d_ff, decoder_ffn_dim=c.d_ff,
                encoder_layers=c.n_layers, decoder_layers=c.decoder_layers, max_position_embeddings=c.max_len,
                activation_function=_act_to_hf(c.activation, family), scale_embedding=c.scale_embeddings,
                tie_word_embeddings=c.tie_embeddings, dropout=c.dropout, attention_dropout=c.attn_dropout,
                activation_dropout=0.0, pad_token_id=c.pad_token_id, bos_token_id=c.bos_token_id,
                eos_token_id=c.eos_token_id, forced_eos_token_id=c.eos_token_id,
                decoder_start_token_id=c.decoder_start_token_id, is_encoder_decoder=True)


def _seq2seq_table(c: ModelConfig, learned_positions: bool) -> list[Rule]:
    if c.shared_embeddings:
        rules = [rule("tokens.weight", "model.shared.weight")]
    else:  # untied (transformers 5): each stack reads its own matrix
        rules = [rule("source_tokens.weight", "model.encoder.embed_tokens.weight"),
                 rule("tokens.weight", "model.decoder.embed_tokens.weight")]
    for stack in ("encoder", "decoder"):
        ours, theirs = f"{stack}.blocks.{{i}}", f"model.{stack}.layers.{{i}}"
        if learned_positions:  # BART: learned table with 2 spare rows; Marian: fixed sinusoids, not stored here
            rules += [rule(f"{stack}.positions.weight", f"model.{stack}.embed_positions.weight"),
                      *linear(f"{stack}.embed_norm", f"model.{stack}.layernorm_embedding")]
        rules += [*fused(f"{ours}.attn.qkv", [f"{theirs}.self_attn.{p}_proj" for p in "qkv"], True, QKV),
                  *linear(f"{ours}.attn.out", f"{theirs}.self_attn.out_proj"),
                  *linear(f"{ours}.norm1", f"{theirs}.self_attn_layer_norm"),
                  *linear(f"{ours}.ffn.up", f"{theirs}.fc1"),
                  *linear(f"{ours}.ffn.down", f"{theirs}.fc2"),
                  *linear(f"{ours}.norm2", f"{theirs}.final_layer_norm")]
    ours, theirs = "decoder.blocks.{i}", "model.decoder.layers.{i}"
    rules += [*linear(f"{ours}.cross_attn.q", f"{theirs}.encoder_attn.q_proj"),
              *fused(f"{ours}.cross_attn.kv", [f"{theirs}.encoder_attn.{p}_proj" for p in "kv"], True, KV),
              *linear(f"{ours}.cross_attn.out", f"{theirs}.encoder_attn.out_proj"),
              *linear(f"{ours}.norm_cross", f"{theirs}.encoder_attn_layer_norm")]
    if c.lm_head_bias:
        rules.append(rule("lm_head.bias", "final_logits_bias", SQUEEZE0))  # (1, vocab) buffer in HF
    if not c.tie_embeddings:
        rules.append(rule("lm_head.proj.weight", "lm_head.weight"))
    return rules


def _seq2seq_unmapped(c: ModelConfig, family: str) -> dict[str, str]:
    out = {}
    if not c.shared_embeddings:
        out[r"model\.shared\.weight"] = "untied: transformers keeps it, but its forward reads the stacks' embed_tokens"
    if family == "marian":
        out[r"model\.(encoder|decoder)\.embed_positions\.weight"] = "fixed sinusoids, checked equal to attnlab's table"
    return out


def _bart_config(hf: dict, arch: dict) -> dict:
    return dict(_seq2seq_common(hf, "bart"), position="learned", position_offset=2, embedding_norm=True, **arch)


def _marian_config(hf: dict, arch: dict) -> dict:
    if not hf.get("share_encoder_decoder_embeddings", True) or hf.get("decoder_vocab_size", hf["vocab_size"]) \
            != hf["vocab_size"]:
        raise ConfigError("marian: separate source/target vocabularies are not supported (attnlab shares one)")
    return dict(_seq2seq_common(hf, "marian"), position="sinusoidal", sinusoidal_layout="halves", **arch)


BART = Family("bart", ("bart",), "model.",
              {"BartForConditionalGeneration": dict(head="lm", lm_head_bias=True),
               "BartModel": dict(head="lm", lm_head_bias=False)},
              _bart_config, lambda c: _seq2seq_hf(c, "bart"), lambda c: _seq2seq_table(c, True),
              unmapped=lambda c: _seq2seq_unmapped(c, "bart"))
MARIAN = Family("marian", ("marian",), "model.",
                {"MarianMTModel": dict(head="lm", lm_head_bias=True),
                 "MarianModel": dict(head="lm", lm_head_bias=False)},
                _marian_config,
                lambda c: dict(_seq2seq_hf(c, "marian"), decoder_vocab_size=c.vocab_size,
                               share_encoder_decoder_embeddings=True),
                lambda c: _seq2seq_table(c, False), unmapped=lambda c: _seq2seq_unmapped(c, "marian"))


# ------------------------------------------------------------------------------------------------------ T5
_T5_FFN = {"relu": "relu", "gelu": "gelu", "gated-gelu": "geglu_tanh", "gated-relu": "reglu", "gated-silu": "swiglu"}


def _t5_config(hf: dict, arch: dict) -> dict:
    proj = hf.get("feed_forward_proj", "relu")
    if proj not in _T5_FFN:
        raise ConfigError(f"t5: feed_forward_proj={proj!r}; supported: {', '.join(_T5_FFN)}")
    v, d, h = hf["vocab_size"], hf["d_model"], hf["num_heads"]
    enc = hf["num_layers"]
    dec = hf.get("num_decoder_layers") or enc
    tied = hf.get("tie_word_embeddings", True)
    # T5 (v1.0, tied) rescales the decoder output by d_model**-0.5 before the LM head; v1.1 (untied) does not.
    # transformers 5 keeps that switch as scale_decoder_outputs (and always ties); older files only say tie_word_...
    scaled = hf.get("scale_decoder_outputs", tied)
    ids = _ids(hf, v, decoder_start=True)
    # T5 starts decoding from the pad token when the config does not say otherwise
    ids["decoder_start_token_id"] = _token_id(hf.get("decoder_start_token_id", hf.get("pad_token_id", 0)), v)
    return dict(topology="encoder-decoder", vocab_size=v, d_model=d, n_heads=h,
                d_head=_head_dim(d, h, hf.get("d_kv")), d_ff=hf["d_ff"], n_layers=enc,
                n_decoder_layers=None if dec == enc else dec, max_len=hf.get("n_positions", 512), position="t5",
                t5_num_buckets=hf.get("relative_attention_num_buckets", 32),
                t5_max_distance=hf.get("relative_attention_max_distance", 128), activation=_T5_FFN[proj],
                norm="rmsnorm", norm_eps=hf.get("layer_norm_epsilon", 1e-6), norm_placement="pre", bias=False,
                attn_scale=1.0, tie_embeddings=tied, logit_scale=d ** -0.5 if scaled else 1.0,
                dropout=hf.get("dropout_rate", 0.0), **arch, **ids)


def _t5_hf(c: ModelConfig) -> dict:
    proj = {v: k for k, v in _T5_FFN.items()}.get(c.activation)
    if proj is None:
        raise ConfigError(f"t5: activation {c.activation!r} has no T5 feed_forward_proj; allowed: "
                          f"{', '.join(_T5_FFN.values())}")
    if c.logit_scale not in (1.0, c.d_model ** -0.5):
        raise ConfigError(f"t5: logit_scale={c.logit_scale}; T5 allows 1.0 or d_model**-0.5 (scale_decoder_outputs)")
    return dict(vocab_size=c.vocab_size, d_model=c.d_model, num_heads=c.n_heads, d_kv=c.head_dim, d_ff=c.d_ff,
                num_layers=c.n_layers, num_decoder_layers=c.decoder_layers, n_positions=c.max_len,
                relative_attention_num_buckets=c.t5_num_buckets, relative_attention_max_distance=c.t5_max_distance,
                feed_forward_proj=proj, layer_norm_epsilon=c.norm_eps, tie_word_embeddings=c.tie_embeddings,
                scale_decoder_outputs=c.logit_scale != 1.0,
                dropout_rate=c.dropout, pad_token_id=c.pad_token_id, eos_token_id=c.eos_token_id,
                decoder_start_token_id=c.decoder_start_token_id, is_encoder_decoder=True)


def _t5_table(c: ModelConfig) -> list[Rule]:
    rules = [rule("tokens.weight", "shared.weight")]
    for stack, ffn_layer in (("encoder", 1), ("decoder", 2)):
        ours, theirs = f"{stack}.blocks.{{i}}", f"{stack}.block.{{i}}"
        # T5 keeps the relative-position table in the first block of each stack only
        rules.append(rule(f"{stack}.rel_bias.weight",
                          f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"))
        rules += [rule(f"{ours}.attn.qkv.weight", tuple(f"{theirs}.layer.0.SelfAttention.{p}.weight" for p in "qkv"),
                       QKV),
                  rule(f"{ours}.attn.out.weight", f"{theirs}.layer.0.SelfAttention.o.weight"),
                  rule(f"{ours}.norm1.weight", f"{theirs}.layer.0.layer_norm.weight"),
                  rule(f"{ours}.ffn.down.weight", f"{theirs}.layer.{ffn_layer}.DenseReluDense.wo.weight"),
                  rule(f"{ours}.norm2.weight", f"{theirs}.layer.{ffn_layer}.layer_norm.weight")]
        ffn = f"{theirs}.layer.{ffn_layer}.DenseReluDense"
        if c.gated:
            rules.append(rule(f"{ours}.ffn.up.weight", (f"{ffn}.wi_0.weight", f"{ffn}.wi_1.weight"), GATE_UP))
        else:
            rules.append(rule(f"{ours}.ffn.up.weight", f"{ffn}.wi.weight"))
        rules.append(rule(f"{stack}.final_norm.weight", f"{stack}.final_layer_norm.weight"))
    ours, theirs = "decoder.blocks.{i}", "decoder.block.{i}.layer.1"
    rules += [rule(f"{ours}.cross_attn.q.weight", f"{theirs}.EncDecAttention.q.weight"),
              rule(f"{ours}.cross_attn.kv.weight", (f"{theirs}.EncDecAttention.k.weight",
                                                    f"{theirs}.EncDecAttention.v.weight"), KV),
              rule(f"{ours}.cross_attn.out.weight", f"{theirs}.EncDecAttention.o.weight"),
              rule(f"{ours}.norm_cross.weight", f"{theirs}.layer_norm.weight")]
    if not c.tie_embeddings:
        rules.append(rule("lm_head.proj.weight", "lm_head.weight"))
    return rules


T5 = Family("t5", ("t5",), "",
            {"T5ForConditionalGeneration": dict(head="lm"), "T5Model": dict(head="lm")},
            _t5_config, _t5_hf, _t5_table)


# the rotary decoders of today's open families; on export the first that reproduces a config exactly is written
OPEN_DECODERS = (LLAMA, QWEN2, QWEN3, MISTRAL, OLMO2, PHI3, GPT_NEOX, GEMMA2, GEMMA3)
FAMILIES: dict[str, Family] = {f.name: f for f in (BERT, GPT2, VIT, BART, MARIAN, T5, *OPEN_DECODERS)}
BY_MODEL_TYPE: dict[str, Family] = {t: f for f in FAMILIES.values() for t in f.model_types}
