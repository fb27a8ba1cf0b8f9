"""ModelConfig: the single source of truth for a transformer.

Every topology in the seeds (encoder, decoder, encoder-decoder, ViT) is the same block stacked N times;
they differ in the mask, in cross-attention, in what the tokens are and in the head. This dataclass names
each of those choices as a field, validates them on construction (so a bad value is reported by name,
not as a shape mismatch deep inside torch), and round-trips through JSON.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from attnlab.errors import CheckpointError, ConfigError
from attnlab.files import MAX_JSON_BYTES, read_text

TOPOLOGIES = ("encoder", "decoder", "encoder-decoder", "vit")
POSITIONS = ("sinusoidal", "learned", "rope", "alibi", "t5", "none")
SINUSOIDAL_LAYOUTS = ("interleaved", "halves")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "reglu", "geglu", "geglu_tanh", "swiglu")
GATED_ACTIVATIONS = ("reglu", "geglu", "geglu_tanh", "swiglu")
NORMS = ("layernorm", "rmsnorm")
# head: an RMSNorm over each head's d_head features of q and of k (Qwen3); all: over all heads' features at once,
# before the split into heads (OLMo 2)
QK_NORMS = ("none", "head", "all")
# RoPE frequency scalings (Hugging Face's rope_type) and the keys each takes besides "type"
ROPE_SCALINGS: dict[str, tuple[str, ...]] = {
    "linear": ("factor",),
    "dynamic": ("factor", "original_max_len"),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_len"),
    "yarn": ("factor", "original_max_len", "beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim",
             "truncate"),
    # Phi-3's long-context variants: one divisor per rotated pair, the short list up to original_max_len, the long
    # one beyond it; `factor` sets cos/sin's multiplier sqrt(1 + ln(factor) / ln(original_max_len))
    "longrope": ("short_factor", "long_factor", "factor", "original_max_len", "attention_factor"),
}
_ROPE_REQUIRED = {"linear": ("factor",), "dynamic": ("factor", "original_max_len"),
                  "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_len"),
                  "yarn": ("factor", "original_max_len"),
                  "longrope": ("short_factor", "long_factor", "factor", "original_max_len")}
ROPE_FACTOR_LISTS = ("short_factor", "long_factor")  # longrope's per-pair divisors: lists, not numbers
# pre: x + F(Norm(x)); post: Norm(x + F(x)); output: x + Norm(F(x)), the sub-layer's output normalised (OLMo 2);
# sandwich: x + Norm_after(F(Norm_before(x))), two norms per sub-layer (Gemma 2)
NORM_PLACEMENTS = ("pre", "post", "output", "sandwich")
HEADS = ("lm", "classifier", "token_classifier", "none")
FLOAT32_MAX = 3.4028234663852886e38


def _dump_json(data: dict[str, Any], path: str | Path | None) -> str:
    """config.json text (sorted keys, so equal configs give equal files), also written to `path` if given."""
    text = json.dumps(data, indent=2, sort_keys=True)
    if path is not None:
        Path(path).write_text(text + "\n")
    return text


def _known_fields(cls, data: Any, what: str) -> dict[str, dataclasses.Field]:
    """{name: field} of the config class `cls`, once `data` is a dict with no key the class lacks: a config file
    is refused whole, naming the stray keys, before any value is read (a typo is not silently dropped)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{what} must be a JSON object, got {type(data).__name__}")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"unknown {cls.__name__} keys {unknown}; known keys: {', '.join(sorted(known))}")
    return known


@dataclass
class ModelConfig:
    """Hyper-parameters of one model, in the seeds' notation.

    Sizes: vocab_size V, d_model d, n_heads h, d_head d_k (defaults to d/h), d_ff, n_layers N, max_len L.
    """

    topology: str = "decoder"
    vocab_size: int = 256
    d_model: int = 64
    n_heads: int = 4
    n_kv_heads: int | None = None  # grouped-query attention; None = n_heads (plain MHA), 1 = multi-query
    d_head: int | None = None  # None = d_model // n_heads
    d_ff: int = 256
    n_layers: int = 2
    n_decoder_layers: int | None = None  # encoder-decoder only; None = n_layers
    max_len: int = 128

    # positions
    position: str = "learned"
    position_offset: int = 0  # learned positions start at this row (BART keeps 2 spare rows)
    sinusoidal_layout: str = "interleaved"  # interleaved: sin/cos pairs (Vaswani); halves: all sin then all cos
    rope_theta: float = 10000.0
    # {} = plain RoPE; else {"type": one of ROPE_SCALINGS, ...its keys}: how the frequencies are stretched for
    # contexts longer than the pre-training one (Llama 3.1's "llama3", YaRN, linear and dynamic NTK scaling)
    rope_scaling: dict[str, Any] = field(default_factory=dict)
    rotary_dim: int | None = None  # RoPE rotates the first rotary_dim features of each head; None = all (NeoX: 1/4)
    # the sliding-window layers' own RoPE base, plain (rope_scaling applies to the global layers only): Gemma 3 turns
    # its local layers at 10,000 and its global ones at 1,000,000; None = every layer rotates as rope_theta says
    rope_local_theta: float | None = None
    t5_num_buckets: int = 32
    t5_max_distance: int = 128

    # block
    activation: str = "gelu"
    norm: str = "layernorm"
    norm_eps: float = 1e-5
    norm_placement: str = "pre"
    final_norm: bool | None = None  # None = True for pre-LN, False for post-LN
    embedding_norm: bool = False  # LayerNorm right after the embedding sum (BERT, BART)
    scale_embeddings: bool = False  # multiply token embeddings by sqrt(d_model) (Vaswani, Marian, T5 does not)
    bias: bool = True  # biases on the attention and feed-forward projections
    attn_scale: float | None = None  # None = 1/sqrt(d_head); T5 folds it into the weights and uses 1.0
    qkv_bias: bool | None = None  # biases on W_Q, W_K, W_V; None = follow `bias` (Qwen2: True with bias=False)
    qk_norm: str = "none"  # normalise q and k before the scores (and before RoPE): see QK_NORMS
    sliding_window: int | None = None  # each query sees only the last `sliding_window` keys, itself included (Mistral)
    parallel_residual: bool = False  # x + Attn(Norm1(x)) + FFN(Norm2(x)): both sub-layers read the block's input (NeoX)
    global_every: int | None = None  # with a sliding window: layers global_every-1, 2*global_every-1 ... see every key
    attn_softcap: float | None = None  # scores -> cap * tanh(scores / cap) before the softmax (Gemma 2)
    dropout: float = 0.0
    attn_dropout: float = 0.0

    # embeddings / output
    type_vocab_size: int = 0  # BERT token-type (segment) embeddings; 0 = none
    tie_embeddings: bool = True  # output projection shares the token embedding matrix
    shared_embeddings: bool = True  # encoder-decoder: source and target share one token matrix (False: BART/Marian
    #                                 untied, the encoder reads its own `source_tokens`)
    lm_head_bias: bool = False  # a bias on the vocabulary logits (BERT MLM, BART/Marian final_logits_bias)
    lm_head_transform: bool = False  # BERT MLM head: dense + activation + norm before the vocabulary projection
    logit_scale: float = 1.0  # hidden state is multiplied by this before the LM head (T5 tied: d_model**-0.5)
    logit_softcap: float | None = None  # logits -> cap * tanh(logits / cap) (Gemma 2)
    head: str = "lm"  # what forward() returns logits for
    n_classes: int = 0  # classifier / token classifier / ViT head
    pooler: bool = False  # BERT pooler: dense + tanh on the [CLS] vector
    nsp: bool = False  # BERT's next-sentence classifier (2-way) on the pooled [CLS] vector; needs the pooler
    # a decoder read both ways as a masked LM (smollm2-mlm): the MLM logits at position i come from position i-1's
    # vector (masked next-token prediction, LLM2Vec 2024), so the pre-trained LM head keeps the job it learnt
    predict_from_previous: bool = False
    # LoRA (Hu et al. 2021): > 0 makes every block matrix W_0 + (lora_alpha / lora_rank) B A, with A (r, in) and
    # B (out, r) the only new weights (B starts at 0: the model starts as W_0); an encoder's option
    lora_rank: int = 0
    lora_alpha: float = 16.0

    # vision
    image_size: int = 32
    patch_size: int = 4
    n_channels: int = 3

    # special tokens
    pad_token_id: int | None = None
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    decoder_start_token_id: int | None = None

    # initialisation (training only: a loaded checkpoint overwrites every weight)
    scaled_residual_init: bool = False  # GPT-2: W_O and W_2 start at std 0.02/sqrt(2 * layers) instead of 0.02

    name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # free-form notes (source family, tokenizer hints)

    def __post_init__(self) -> None:
        self.validate()

    # ----------------------------------------------------------------- derived
    @property
    def head_dim(self) -> int:
        """d_k: width of one head."""
        return self.d_head if self.d_head is not None else self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    @property
    def decoder_layers(self) -> int:
        return self.n_decoder_layers if self.n_decoder_layers is not None else self.n_layers

    @property
    def total_layers(self) -> int:
        """Blocks in the whole model: n_layers, plus the decoder's for an encoder-decoder."""
        return self.n_layers + (self.decoder_layers if self.topology == "encoder-decoder" else 0)

    def sliding_layer(self, i: int) -> bool:
        """Whether layer i attends through the sliding window: every layer when sliding_window is set, except each
        global_every-th (Gemma 2 and 3's global layers: i = global_every-1, 2*global_every-1, ...)."""
        if self.sliding_window is None:
            return False
        return self.global_every is None or (i + 1) % self.global_every != 0

    @property
    def rope_dim(self) -> int:
        """Features of each head that RoPE rotates (the first ones; the rest pass unrotated)."""
        return self.rotary_dim if self.rotary_dim is not None else self.head_dim

    @property
    def attn_qkv_bias(self) -> bool:
        """Whether W_Q, W_K and W_V carry biases."""
        return self.bias if self.qkv_bias is None else self.qkv_bias

    @property
    def gated(self) -> bool:
        return self.activation in GATED_ACTIVATIONS

    @property
    def has_final_norm(self) -> bool:
        return self.final_norm if self.final_norm is not None else self.norm_placement != "post"

    @property
    def n_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2

    @property
    def seq_limit(self) -> int | None:
        """Longest sequence the positions allow; None when the scheme has no limit (rope, alibi, t5, none)."""
        if self.topology == "vit":
            return self.n_patches + 1
        if self.position in ("learned", "sinusoidal"):
            return self.max_len
        return None

    # --------------------------------------------------------------- validation
    def validate(self) -> None:
        def bad(name: str, why: str) -> ConfigError:
            return ConfigError(f"ModelConfig.{name}={getattr(self, name)!r}: {why}")

        def choice(name: str, allowed: tuple[str, ...]) -> None:
            value = getattr(self, name)
            if value not in allowed:
                raise bad(name, f"unknown value; allowed: {', '.join(allowed)}")

        def positive(name: str, allow_none: bool = False) -> None:
            value = getattr(self, name)
            if value is None and allow_none:
                return
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise bad(name, "must be a positive integer")

        choice("topology", TOPOLOGIES)
        choice("position", POSITIONS)
        choice("sinusoidal_layout", SINUSOIDAL_LAYOUTS)
        choice("activation", ACTIVATIONS)
        choice("norm", NORMS)
        choice("norm_placement", NORM_PLACEMENTS)
        choice("head", HEADS)
        choice("qk_norm", QK_NORMS)
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len"):
            positive(name)
        for name in ("n_kv_heads", "d_head", "n_decoder_layers", "sliding_window", "rotary_dim", "global_every"):
            positive(name, allow_none=True)
        for name in ("t5_num_buckets", "t5_max_distance", "image_size", "patch_size", "n_channels"):
            positive(name)
        for name in ("position_offset", "type_vocab_size", "n_classes", "lora_rank"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise bad(name, "must be a non-negative integer")
        for name in ("dropout", "attn_dropout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise bad(name, "must be a probability in [0, 1)")
        # the model computes in float32 (or narrower): a number beyond float32's range would become inf there
        for name in ("norm_eps", "rope_theta", "logit_scale"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= FLOAT32_MAX:
                raise bad(name, f"must be a positive finite number (at most {FLOAT32_MAX:.4g}, float32's largest)")
        if self.attn_scale is not None and not (isinstance(self.attn_scale, (int, float))
                                                and not isinstance(self.attn_scale, bool)
                                                and 0 < self.attn_scale <= FLOAT32_MAX):
            raise bad("attn_scale", f"must be a positive finite number (at most {FLOAT32_MAX:.4g}) or None "
                      "(= 1/sqrt(d_head))")
        if self.d_head is None and self.d_model % self.n_heads:
            raise bad("d_model", f"must be divisible by n_heads={self.n_heads} (or set d_head explicitly)")
        if self.n_heads % self.kv_heads:
            raise bad("n_kv_heads", f"must divide n_heads={self.n_heads} (grouped-query attention shares each "
                      "key/value head among n_heads/n_kv_heads query heads)")
        if self.position == "rope" and self.head_dim % 2:
            raise bad("position", f"rope needs an even d_head, got d_head={self.head_dim}")
        if self.rope_scaling:
            self._validate_rope_scaling(bad)
        if self.rotary_dim is not None and (self.position != "rope" or self.rotary_dim % 2
                                            or self.rotary_dim > self.head_dim):
            raise bad("rotary_dim", f"rotates pairs of RoPE features: it needs position='rope' and an even number "
                      f"up to d_head={self.head_dim}")
        for name in ("attn_softcap", "logit_softcap"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not 0 < value <= FLOAT32_MAX):
                raise bad(name, "must be a positive finite number (the cap) or None (no capping)")
        if self.rope_local_theta is not None and (
                isinstance(self.rope_local_theta, bool) or not isinstance(self.rope_local_theta, (int, float))
                or not 0 < self.rope_local_theta <= FLOAT32_MAX):
            raise bad("rope_local_theta", "must be a positive finite number (the local layers' RoPE base) or None")
        if self.rope_local_theta is not None and (self.position != "rope" or self.sliding_window is None):
            raise bad("rope_local_theta", "is the RoPE base of the sliding-window layers: it needs position='rope' and "
                      "a sliding_window")
        if self.global_every is not None and (self.sliding_window is None or self.global_every < 2):
            raise bad("global_every", "picks the layers that see past the sliding window: it needs sliding_window "
                      "and a period of at least 2")
        if self.qk_norm != "none" and self.norm != "rmsnorm":
            raise bad("qk_norm", "q and k are normalised by an RMSNorm, as the model's other norms: it needs "
                      "norm='rmsnorm'")
        if self.parallel_residual and (self.norm_placement != "pre" or self.topology == "encoder-decoder"):
            raise bad("parallel_residual", "both sub-layers read the block's normalised input: it needs "
                      "norm_placement='pre' and no cross-attention (not an encoder-decoder)")
        if self.sliding_window is not None and self.topology != "decoder":
            raise bad("sliding_window", "a sliding window is a causal decoder's option (topology='decoder')")
        if self.position == "sinusoidal" and self.d_model % 2:
            raise bad("position", f"sinusoidal positions need an even d_model, got {self.d_model}")
        if self.topology == "vit":
            if self.image_size % self.patch_size:
                raise bad("image_size", f"must be a multiple of patch_size={self.patch_size}")
            if self.n_classes <= 0 and self.head == "classifier":
                raise bad("n_classes", "a ViT with a classifier head needs n_classes > 0")
        if self.head in ("classifier", "token_classifier") and self.n_classes <= 0:
            raise bad("n_classes", f"head={self.head!r} needs n_classes > 0")
        if self.head == "lm" and self.topology == "vit":
            raise bad("head", "a ViT has no vocabulary; use 'classifier' or 'none'")
        if self.nsp and (self.topology != "encoder" or not self.pooler):
            raise bad("nsp", "the next-sentence head reads the pooled [CLS] vector: it needs an encoder with "
                      "pooler=True")
        if self.predict_from_previous and (self.topology != "encoder" or self.head != "lm"):
            raise bad("predict_from_previous", "reads the MLM logits from the previous position: it needs an "
                      "encoder with head='lm'")
        if self.lora_rank and self.topology != "encoder":
            raise bad("lora_rank", "LoRA adapters are built for encoders (topology='encoder'); 0 turns them off")
        if (isinstance(self.lora_alpha, bool) or not isinstance(self.lora_alpha, (int, float))
                or not 0 < self.lora_alpha <= FLOAT32_MAX):
            raise bad("lora_alpha", "must be a positive finite number (the adapters' scale is lora_alpha / lora_rank)")
        if not self.shared_embeddings and self.topology != "encoder-decoder":
            raise bad("shared_embeddings", "only an encoder-decoder has separate source and target embeddings")
        for name in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int) and 0 <= value < self.vocab_size):
                raise bad(name, f"must be a token id in [0, vocab_size={self.vocab_size}) or None")
        if not isinstance(self.extra, dict):
            raise bad("extra", "must be a dict")
        for f in fields(self):  # the type check from_dict does (bool fields, name): no looser door from Python
            _check_type(f.name, f.type, getattr(self, f.name))

    def _validate_rope_scaling(self, bad) -> None:
        """rope_scaling: a known type, only its keys, the required ones present, each a positive finite number."""
        scaling = self.rope_scaling
        if not isinstance(scaling, dict):
            raise bad("rope_scaling", "must be a dict ({} for plain RoPE)")
        kind = scaling.get("type")
        if kind not in ROPE_SCALINGS:
            raise bad("rope_scaling", f"'type' must be one of {', '.join(ROPE_SCALINGS)}")
        if self.position != "rope":
            raise bad("rope_scaling", "scales rotary positions: it needs position='rope'")
        allowed = ROPE_SCALINGS[kind]
        stray = sorted(set(scaling) - {"type", *allowed})
        if stray:
            raise bad("rope_scaling", f"unknown keys {stray} for type {kind!r}; allowed: {', '.join(allowed)}")
        missing = [k for k in _ROPE_REQUIRED[kind] if k not in scaling]
        if missing:
            raise bad("rope_scaling", f"type {kind!r} needs {', '.join(missing)}")
        for key in allowed:
            value = scaling.get(key)
            if key in ROPE_FACTOR_LISTS:
                pairs = self.rope_dim // 2
                if not (isinstance(value, (list, tuple)) and len(value) == pairs and all(
                        not isinstance(v, bool) and isinstance(v, (int, float)) and 0 < v <= FLOAT32_MAX
                        for v in value)):
                    raise bad("rope_scaling", f"{key!r} must be a list of {pairs} positive finite numbers (one per "
                                              "rotated pair of features)")
            elif key == "truncate":
                if value is not None and not isinstance(value, bool):
                    raise bad("rope_scaling", "'truncate' must be true or false")
            elif value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                        or not 0 < value <= FLOAT32_MAX):
                raise bad("rope_scaling", f"{key!r} must be a positive finite number")
        if kind == "llama3" and scaling["high_freq_factor"] <= scaling["low_freq_factor"]:
            raise bad("rope_scaling", "'high_freq_factor' must exceed 'low_freq_factor'")

    # ------------------------------------------------------------------ I/O
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self, path: str | Path | None = None) -> str:
        return _dump_json(self.to_dict(), path)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Build from a dict, refusing unknown keys and wrong types before anything is allocated."""
        known = _known_fields(cls, data, "a model config")
        for key, value in data.items():
            _check_type(key, known[key].type, value)
        return cls(**data)

    @classmethod
    def from_json(cls, text_or_path: str | Path) -> ModelConfig:
        path = Path(text_or_path)
        if isinstance(text_or_path, Path) or (len(str(text_or_path)) < 4096 and path.suffix == ".json"):
            try:  # bounded, refuses FIFOs and symlink loops
                text = read_text(path, MAX_JSON_BYTES, "model config")
            except CheckpointError as exc:
                raise ConfigError(f"config file: {exc}") from None
        else:
            text = str(text_or_path)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"config is not valid JSON: {exc}") from None
        except RecursionError:
            raise ConfigError("config JSON nests arrays/objects too deeply") from None
        return cls.from_dict(data)

    def replace(self, **changes: Any) -> ModelConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def summary(self) -> str:
        """One line naming the sizes, for listings (`attnlab params`)."""
        return (f"{self.topology}, d_model={self.d_model}, n_layers={self.n_layers}, n_heads={self.n_heads}, "
                f"vocab={self.vocab_size}, positions={self.position}")


DUAL_ENCODER = "dual-encoder"
POOLINGS = ("cls", "mean")
TOWER_TOPOLOGIES = ("encoder", "vit")


@dataclass
class DualEncoderConfig:
    """A dual encoder (CLIP): two towers, each an encoder or a ViT described by its own ModelConfig, whose pooled
    vectors are projected to `embed_dim` and compared by cosine similarity times exp(logit_scale).

    config.json holds {"topology": "dual-encoder", "tower_a": {...}, "tower_b": {...}, ...}: the topology key is
    what tells a reader this is not a ModelConfig.
    """

    tower_a: ModelConfig
    tower_b: ModelConfig
    embed_dim: int = 64  # width of the joint space both towers project into
    pool: str = "cls"  # "cls": the first position's output; "mean": the mean over real (unpadded) positions
    logit_scale_init: float = math.log(1 / 0.07)  # CLIP's initial temperature 0.07 (a learned parameter after)
    name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    topology: str = DUAL_ENCODER  # fixed; present so config.json names its kind

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        def bad(name: str, why: str) -> ConfigError:
            return ConfigError(f"DualEncoderConfig.{name}={getattr(self, name)!r}: {why}")

        if self.topology != DUAL_ENCODER:
            raise bad("topology", f"must be {DUAL_ENCODER!r}")
        for tower in ("tower_a", "tower_b"):
            config = getattr(self, tower)
            if not isinstance(config, ModelConfig):
                raise ConfigError(f"DualEncoderConfig.{tower} must be a ModelConfig, got {type(config).__name__}")
            if config.topology not in TOWER_TOPOLOGIES:
                raise ConfigError(f"DualEncoderConfig.{tower}.topology={config.topology!r}: a tower must be one of "
                                  f"{', '.join(TOWER_TOPOLOGIES)} (it reads its input whole, no causal mask)")
        if isinstance(self.embed_dim, bool) or not isinstance(self.embed_dim, int) or self.embed_dim <= 0:
            raise bad("embed_dim", "must be a positive integer")
        if self.pool not in POOLINGS:
            raise bad("pool", f"unknown value; allowed: {', '.join(POOLINGS)}")
        if isinstance(self.logit_scale_init, bool) or not isinstance(self.logit_scale_init, (int, float)) \
                or not math.isfinite(self.logit_scale_init):
            raise bad("logit_scale_init", "must be a finite number (the log of 1/temperature)")
        if not isinstance(self.name, str):
            raise bad("name", "must be a string")
        if not isinstance(self.extra, dict):
            raise bad("extra", "must be a dict")

    @property
    def towers(self) -> tuple[ModelConfig, ModelConfig]:
        return self.tower_a, self.tower_b

    def to_dict(self) -> dict[str, Any]:
        return {"topology": self.topology, "tower_a": self.tower_a.to_dict(), "tower_b": self.tower_b.to_dict(),
                "embed_dim": self.embed_dim, "pool": self.pool, "logit_scale_init": self.logit_scale_init,
                "name": self.name, "extra": dict(self.extra)}

    def to_json(self, path: str | Path | None = None) -> str:
        return _dump_json(self.to_dict(), path)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DualEncoderConfig:
        """Build from a dict, refusing unknown keys and wrong types before anything is allocated."""
        _known_fields(cls, data, "a dual-encoder config")
        missing = [k for k in ("tower_a", "tower_b") if k not in data]
        if missing:
            raise ConfigError(f"DualEncoderConfig needs {' and '.join(missing)} (each a ModelConfig object)")
        towers = {}
        for key in ("tower_a", "tower_b"):
            try:
                towers[key] = ModelConfig.from_dict(data[key])
            except ConfigError as exc:
                raise ConfigError(f"DualEncoderConfig.{key}: {exc}") from None
        for key, kind in (("name", str), ("pool", str), ("topology", str), ("extra", dict)):
            if key in data and not isinstance(data[key], kind):
                raise ConfigError(f"DualEncoderConfig.{key}={data[key]!r}: expected {kind.__name__}")
        return cls(**{**data, **towers})

    def replace(self, **changes: Any) -> DualEncoderConfig:
        return dataclasses.replace(self, **changes)

    def summary(self) -> str:
        a, b = self.tower_a, self.tower_b
        return (f"dual-encoder, embed_dim={self.embed_dim}, pool={self.pool}; tower_a: {a.topology} "
                f"d_model={a.d_model} n_layers={a.n_layers}; tower_b: {b.topology} d_model={b.d_model} "
                f"n_layers={b.n_layers}")


AnyConfig = ModelConfig | DualEncoderConfig


def config_from_dict(data: Any) -> AnyConfig:
    """The config a config.json object describes: a DualEncoderConfig when its topology says "dual-encoder",
    else a ModelConfig. The one place that tells the two apart."""
    if isinstance(data, dict) and data.get("topology") == DUAL_ENCODER:
        return DualEncoderConfig.from_dict(data)
    return ModelConfig.from_dict(data)


_TYPES = {
    "int": (int,), "float": (int, float), "str": (str,), "bool": (bool,),
    "int | None": (int, type(None)), "float | None": (int, float, type(None)), "bool | None": (bool, type(None)),
    "dict[str, Any]": (dict,),
}


def _check_type(key: str, annotation: Any, value: Any) -> None:
    allowed = _TYPES.get(str(annotation))
    if allowed is None:
        return
    if isinstance(value, bool) and bool not in allowed:
        ok = False
    else:
        ok = isinstance(value, allowed)
    if not ok:
        raise ConfigError(f"ModelConfig.{key}={value!r}: expected {annotation}, got {type(value).__name__}")
