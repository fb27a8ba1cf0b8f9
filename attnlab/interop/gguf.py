"""GGUF files (llama.cpp's format) of the LLaMA family, Qwen2, Qwen3, Phi-3, OLMo 2, GPT-NeoX, Gemma 2 and Gemma 3
-> attnlab, and attnlab LLaMA-style models -> GGUF (float32).

A GGUF file holds metadata (hyper-parameters, the tokenizer's vocabulary and merges) and tensors, often
quantized in blocks. Reading one means (its header, metadata and tensor table: gguf_file.py):
1. check the architecture and every tensor's quantization type BEFORE allocating anything (nothing half-loaded);
2. keep Q8_0 / Q4_0 / Q4_1 matrices quantized (their row bytes become attnlab.layers.quantized buffers; blocks
   run along the input dimension, so steps 3 and 4 move whole rows of bytes), convert every other tensor to
   float32 (F32 / F16 by numpy, the rest with the `gguf` package's gguf.quants.dequantize);
3. undo the row permutation llama.cpp's converter applies to a `llama` file's W_Q and W_K (it regroups each head's
   rotary pairs from "rotate half" (i, i + d/2) to adjacent (2i, 2i + 1)); attnlab, like HF, uses rotate-half, as
   llama.cpp does for the other architectures, whose rows are left as they are;
4. map names through one table (blk.N.attn_q ... -> blocks.N.attn.qkv ...), the same engine as the HF tables;
5. rebuild the tokenizer (gguf_tokenizer.py: byte-level BPE, SentencePiece-style BPE, WordPiece) as a
   `tokenizers` Tokenizer.
Writing (save_gguf) does the reverse: float matrices as F32 or F16, quantized ones in their own blocks (every kept
type: a file read and written again keeps each tensor's type and bytes, the parts of a mixed fused matrix
included), the tokenizer and chat template as llama.cpp's converter writes them.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import torch

from attnlab.build import allocate_empty, build_model, refuse_if_absurd
from attnlab.config import ModelConfig
from attnlab.errors import CheckpointError, ConfigError
from attnlab.extras import require
from attnlab.files import check_regular
from attnlab.interop.gguf_file import as_gguf_file, open_gguf
from attnlab.interop.gguf_tokenizer import (
    caps,
    keep_source_keys,
    source_keys,
    tokenizer_from_gguf,
    write_tokenizer,
)
from attnlab.interop.gguf_tokenizer import field as _field
from attnlab.interop.mapping import GATE_UP, QKV, Concat, Rule, expand, fused, linear, rule, to_ours, to_theirs
from attnlab.layers import kernel_threads, kquants, q5_0_kernel, q5_1_kernel, q5_k_kernel, q6_k_kernel
from attnlab.layers.quantized import (
    QuantizedEmbedding,
    QuantizedLinear,
    QuantizedParts,
    from_gguf_rows,
    parts_of,
    parts_spec,
    unpack4,
)
from attnlab.storage import check_shapes, materialize

SUPPORTED_ARCHITECTURES = ("llama", "qwen2", "qwen3", "phi3", "olmo2", "gptneox", "gemma2", "gemma3")
# what llama.cpp fixes for Gemma rather than reading it from the file: every k-th layer global (Gemma 2: 2, Gemma 3: 6),
# the sliding layers' RoPE base (Gemma 3), and the block count of the 27B models, whose queries are scaled by
# (d_model / n_heads)^-1/2 instead of d_head^-1/2 (query_pre_attn_scalar has no GGUF key)
_GEMMA = {"gemma2": dict(every=2, layers_27b=46), "gemma3": dict(every=6, layers_27b=62, local_theta=10000.0)}
# GGUF type -> the attnlab.layers.quantized format that keeps it (Q5_0: read as Q8_0 rows, the same numbers, where
# its kernel cannot run or beside Q8_0 parts of a fused matrix; kept_quantized)
KEPT_QUANTIZED = {"Q8_0": "q8_0", "Q4_0": "q4_0", "Q4_1": "q4_1", "Q4_K": "q4_k", "Q6_K": "q6_k", "Q5_0": "q5_0",
                  "Q5_1": "q5_1", "Q5_K": "q5_k"}
# formats kept only where their kernel (AVX-512 VNNI only) runs; elsewhere expanded to float32, which is faster than
# dequantizing them in chunks at every product
VNNI_ONLY = {"q6_k": q6_k_kernel, "q5_1": q5_1_kernel, "q5_k": q5_k_kernel}
# a kept format's GGUF row bytes per input: (inputs per block, bytes per block); a Q5_0 part read as Q8_0 rows has
# Q8_0's (the widening happens before the row groups of a mixed fused matrix are split, _pad_parts)
ROW_BYTES = {"q8_0": (32, 34), "q4_0": (32, 18), "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24),
             "q4_k": (256, 144), "q5_k": (256, 176), "q6_k": (256, 210)}
SUPPORTED_TYPES = ("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
                   "Q6_K")


# ------------------------------------------------------------------------------------ the Q/K permutation
def unpermute(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """llama.cpp row order (per head: pairs interleaved) -> rotate-half row order. w: (n_heads * d_head, d_in)."""
    rows = w.shape[0]
    return w.reshape(n_heads, rows // n_heads // 2, 2, *w.shape[1:]).transpose(1, 2).reshape(w.shape)


def permute(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """rotate-half row order -> llama.cpp's (the inverse of unpermute)."""
    rows = w.shape[0]
    return w.reshape(n_heads, 2, rows // n_heads // 2, *w.shape[1:]).transpose(1, 2).reshape(w.shape)


class _GGUFQKV(Concat):
    """attn_q | attn_k | attn_v -> fused qkv, undoing llama.cpp's permutation of Q and K."""

    def to_ours(self, tensors, config):
        q, k, v = tensors
        return torch.cat((unpermute(q, config.n_heads), unpermute(k, config.kv_heads), v), dim=0)

    def to_theirs(self, tensor, config):
        q, k, v = tensor.split(self.sizes(config), dim=0)
        return [permute(q, config.n_heads), permute(k, config.kv_heads), v]


GGUF_QKV = _GGUFQKV(lambda c: [c.n_heads * c.head_dim, c.kv_heads * c.head_dim, c.kv_heads * c.head_dim])


def llama_table(config: ModelConfig) -> list[Rule]:
    """The one mapping table of LLaMA-family GGUF files."""
    blk = "blk.{i}"
    rules = [rule("tokens.weight", "token_embd.weight"),
             rule("blocks.{i}.attn.qkv.weight", (f"{blk}.attn_q.weight", f"{blk}.attn_k.weight",
                                                 f"{blk}.attn_v.weight"), GGUF_QKV),
             *linear("blocks.{i}.attn.out", f"{blk}.attn_output", bias=False),
             *linear("blocks.{i}.norm1", f"{blk}.attn_norm", bias=False),
             *linear("blocks.{i}.norm2", f"{blk}.ffn_norm", bias=False),
             rule("blocks.{i}.ffn.up.weight", (f"{blk}.ffn_gate.weight", f"{blk}.ffn_up.weight"), GATE_UP),
             *linear("blocks.{i}.ffn.down", f"{blk}.ffn_down", bias=False),
             *linear("final_norm", "output_norm", bias=False)]
    if not config.tie_embeddings:
        rules.append(rule("lm_head.proj.weight", "output.weight"))
    return rules


def qwen_table(config: ModelConfig) -> list[Rule]:
    """The mapping table of Qwen2 and Qwen3 GGUF files: LLaMA's names, but W_Q and W_K in Hugging Face's row order
    (llama.cpp rotates them as rotate-half, its NEOX RoPE type, so its converter leaves them as they are), biases on
    W_Q, W_K, W_V (Qwen2) and the per-head q/k norms (Qwen3)."""
    blk = "blk.{i}"
    rules = [rule(r.ours, r.theirs, r.transform) for r in llama_table(config) if r.ours != "blocks.{i}.attn.qkv.weight"]
    rules += fused("blocks.{i}.attn.qkv", [f"{blk}.attn_{p}" for p in "qkv"], config.attn_qkv_bias, QKV)
    if config.qk_norm != "none":  # Qwen3: per head; OLMo 2: over all heads' features
        rules += [*linear("blocks.{i}.attn.q_norm", f"{blk}.attn_q_norm", bias=False),
                  *linear("blocks.{i}.attn.k_norm", f"{blk}.attn_k_norm", bias=False)]
    return rules


def phi3_table(config: ModelConfig) -> list[Rule]:
    """Phi-3 GGUF files: attn_qkv is already q | k | v and ffn_up gate | up (Hugging Face's fused matrices, rows in
    its order: llama.cpp rotates Phi-3 rotate-half), copied into attn.qkv and ffn.up."""
    blk = "blk.{i}"
    fused_here = {"blocks.{i}.attn.qkv.weight": f"{blk}.attn_qkv.weight",
                  "blocks.{i}.ffn.up.weight": f"{blk}.ffn_up.weight"}
    return [rule(r.ours, fused_here[r.ours]) if r.ours in fused_here else r for r in llama_table(config)]


def olmo2_table(config: ModelConfig) -> list[Rule]:
    """OLMo 2 GGUF files: Qwen's table (W_Q, W_K unpermuted: llama.cpp's converter leaves OLMo 2's rows as they are)
    with each sub-layer's output norm (post_attention_norm, post_ffw_norm -> norm1, norm2: norm_placement="output")
    and q/k norms over all heads' features (qk_norm="all")."""
    blk = "blk.{i}"
    norms = {f"{blk}.attn_norm.weight": f"{blk}.post_attention_norm.weight",
             f"{blk}.ffn_norm.weight": f"{blk}.post_ffw_norm.weight"}
    return [rule(r.ours, tuple(norms.get(n, n) for n in r.theirs), r.transform) for r in qwen_table(config)]


def gptneox_table(config: ModelConfig) -> list[Rule]:
    """GPT-NeoX (Pythia) GGUF files: llama.cpp's converter regroups query_key_value from head by head to q | k | v
    (attnlab's own layout: copied as it is) and keeps every bias; LayerNorms with biases."""
    blk = "blk.{i}"
    rules = [rule("tokens.weight", "token_embd.weight"),
             *linear("blocks.{i}.norm1", f"{blk}.attn_norm"),
             *linear("blocks.{i}.attn.qkv", f"{blk}.attn_qkv"),
             *linear("blocks.{i}.attn.out", f"{blk}.attn_output"),
             *linear("blocks.{i}.norm2", f"{blk}.ffn_norm"),
             *linear("blocks.{i}.ffn.up", f"{blk}.ffn_up"),
             *linear("blocks.{i}.ffn.down", f"{blk}.ffn_down"),
             *linear("final_norm", "output_norm")]
    return rules + ([] if config.tie_embeddings else [rule("lm_head.proj.weight", "output.weight")])


def gemma_table(config: ModelConfig) -> list[Rule]:
    """Gemma 2 and 3 GGUF files: llama.cpp's converter stores every norm's gain as 1 + w, which is attnlab's own
    (Gemma multiplies by 1 + w): copied as they are, four per block; W_Q, W_K unpermuted (rotate-half in
    llama.cpp); Gemma 3's per-head q/k norms."""
    blk = "blk.{i}"
    norms = {"blocks.{i}.norm1.before.weight": "attn_norm", "blocks.{i}.norm1.after.weight": "post_attention_norm",
             "blocks.{i}.norm2.before.weight": "ffn_norm", "blocks.{i}.norm2.after.weight": "post_ffw_norm"}
    rules = [r for r in qwen_table(config) if ".norm" not in r.ours and "final_norm" not in r.ours]
    rules += [rule(ours, f"{blk}.{theirs}.weight") for ours, theirs in norms.items()]
    return rules + [rule("final_norm.weight", "output_norm.weight")]


def gguf_table(config: ModelConfig) -> list[Rule]:
    """The table of the architecture the config was read from (config.extra["gguf_architecture"]; LLaMA's else)."""
    arch = config.extra.get("gguf_architecture") if isinstance(config.extra, dict) else None
    return {"qwen2": qwen_table, "qwen3": qwen_table, "phi3": phi3_table, "olmo2": olmo2_table,
            "gptneox": gptneox_table, "gemma2": gemma_table, "gemma3": gemma_table}.get(arch, llama_table)(config)


# ------------------------------------------------------------------------------------------------ reading
def open_reader(path: Path):
    """The file's metadata and tensor table (gguf_file.GGUFFile: ~20 ms for SmolLM2, where gguf.GGUFReader took
    ~1.8 s), its sizes capped as gguf_tokenizer says; a CheckpointError naming the file for anything else.
    GGUF files are the interop extra's: without the gguf package this is MissingExtra up front, as for every face of
    an extra, though the reading itself imports nothing from it (~0.1 s less to a first token)."""
    if importlib.util.find_spec("gguf") is None:
        require("gguf", "interop", "reading a GGUF file")  # raises MissingExtra
    check_regular(path, "GGUF file")
    return open_gguf(path, caps())


def config_from_gguf(reader, source: str = "gguf") -> ModelConfig:
    """The ModelConfig a LLaMA-family file's metadata describes. reader: a gguf_file.GGUFFile or gguf.GGUFReader
    (as are the other functions here that take one)."""
    reader = as_gguf_file(reader)
    arch = _field(reader, "general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise CheckpointError(f"{source}: GGUF architecture {arch!r} is not supported; supported: "
                              f"{', '.join(SUPPORTED_ARCHITECTURES)}")

    def need(key: str):
        value = _field(reader, f"{arch}.{key}")
        if value is None:
            raise CheckpointError(f"{source}: GGUF metadata lacks {arch}.{key}")
        return value

    scaling = _field(reader, f"{arch}.rope.scaling.type", "none")
    if scaling not in ("none", None, "linear"):
        raise CheckpointError(f"{source}: rope scaling {scaling!r} is not supported; only unscaled or linear RoPE")
    rope_scaling = {"type": "linear", "factor": float(_field(reader, f"{arch}.rope.scaling.factor", 1.0))} \
        if scaling == "linear" else {}
    names = {t.name for t in reader.tensors}
    tokens = reader.fields.get("tokenizer.ggml.tokens")  # counted, not decoded: tokenizer_from_gguf checks it
    tokens = tokens.count if tokens is not None and len(tokens.types) == 2 else None
    embd = next((t for t in reader.tensors if t.name == "token_embd.weight"), None)
    vocab = _field(reader, f"{arch}.vocab_size") or tokens or \
        (int(embd.dims[1]) if embd is not None else None)
    d_model, n_heads = int(need("embedding_length")), int(need("attention.head_count"))
    n_kv = int(_field(reader, f"{arch}.attention.head_count_kv", n_heads))
    rope_dims = _field(reader, f"{arch}.rope.dimension_count")
    # Phi-3 and GPT-NeoX say their rotated features (partial RoPE) by rope.dimension_count, not their head width
    d_head = _field(reader, f"{arch}.attention.key_length") or (rope_dims if arch not in ("phi3", "gptneox") else None)
    if d_head is not None and d_model % n_heads == 0 and int(d_head) == d_model // n_heads:
        d_head = None
    width = int(d_head) if d_head is not None else d_model // n_heads
    if "rope_factors_long.weight" in names or "rope_factors_short.weight" in names:
        raise CheckpointError(f"{source}: LongRoPE factors (rope_factors_long / rope_factors_short, Phi-3's 128k "
                              "variants) are not supported; only unscaled RoPE")

    def token_id(key: str):
        value = _field(reader, f"tokenizer.ggml.{key}")
        return int(value) if value is not None and 0 <= int(value) < vocab else None

    # Qwen2: biases on W_Q, W_K, W_V only; Qwen3: an RMSNorm over each head's q and k before RoPE (as from HF);
    # OLMo 2: norms on each sub-layer's output, q/k norms over all heads; Phi-3: a sliding window, RoPE on the first
    # rope.dimension_count features of each head
    options = {"qwen2": dict(qkv_bias=True), "qwen3": dict(qk_norm="head"),
               "olmo2": dict(qk_norm="all", norm_placement="output")}.get(arch, {})
    if arch == "phi3":
        window = _field(reader, f"{arch}.attention.sliding_window")
        options = dict(sliding_window=int(window) if window else None,
                       rotary_dim=int(rope_dims) if rope_dims and int(rope_dims) < width else None)

    if arch in _GEMMA:
        options = _gemma_options(reader, arch, d_model, n_heads, width, int(need("block_count")), rope_scaling)
    if arch == "gptneox":  # Pythia: LayerNorms and Linears with biases, GELU, RoPE on a part of each head
        parallel = _field(reader, f"{arch}.use_parallel_residual", True)
        options = dict(norm="layernorm", activation="gelu", bias=True, parallel_residual=bool(parallel),
                       norm_eps=float(_field(reader, f"{arch}.attention.layer_norm_epsilon", 1e-5)),
                       rotary_dim=int(rope_dims) if rope_dims and int(rope_dims) < width else None)
    fields = dict(
        topology="decoder", vocab_size=int(vocab), d_model=d_model, n_heads=n_heads,
        n_kv_heads=None if n_kv == n_heads else n_kv, d_head=None if d_head is None else int(d_head),
        d_ff=int(need("feed_forward_length")), n_layers=int(need("block_count")),
        max_len=int(_field(reader, f"{arch}.context_length", 2048)), position="rope",
        rope_theta=float(_field(reader, f"{arch}.rope.freq_base", 10000.0)), activation="swiglu", norm="rmsnorm",
        norm_eps=float(_field(reader, f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)), norm_placement="pre",
        bias=False, tie_embeddings="output.weight" not in names, bos_token_id=token_id("bos_token_id"),
        eos_token_id=token_id("eos_token_id"), pad_token_id=token_id("padding_token_id"),
        name=str(_field(reader, "general.name", source)), extra={"gguf_architecture": arch},
        rope_scaling=rope_scaling)
    return ModelConfig(**{**fields, **options})


def _gemma_options(reader, arch: str, d_model: int, n_heads: int, d_head: int, n_layers: int,
                   rope_scaling: dict) -> dict:
    """A Gemma 2 / 3 file's block as llama.cpp computes it: sandwich norms, GELU-tanh gated feed-forward, embeddings
    times sqrt(d_model), soft caps, a window on all but every k-th layer (_GEMMA), Gemma 3's per-head q/k norms and
    its sliding layers' RoPE base."""
    fixed = _GEMMA[arch]
    window = _field(reader, f"{arch}.attention.sliding_window")
    scalar = d_model / n_heads if n_layers == fixed["layers_27b"] else d_head
    every = fixed["every"] if window and n_layers >= fixed["every"] else None
    options = dict(activation="geglu_tanh", norm_placement="sandwich", scale_embeddings=True,
                   attn_scale=None if scalar == d_head else float(scalar) ** -0.5,
                   attn_softcap=_field(reader, f"{arch}.attn_logit_softcapping"),
                   logit_softcap=_field(reader, f"{arch}.final_logit_softcapping"),
                   sliding_window=int(window) if window else None, global_every=every)
    if arch == "gemma3":
        theta = float(_field(reader, f"{arch}.rope.freq_base", 10000.0))
        local = fixed["local_theta"] if window and (theta != fixed["local_theta"] or rope_scaling) else None
        options.update(qk_norm="head", rope_local_theta=local)
    return options


def check_gguf_types(reader, source: str = "gguf") -> None:
    unknown = sorted({f"{t.name}: {t.type_name}" for t in as_gguf_file(reader).tensors
                      if t.type_name not in SUPPORTED_TYPES})
    if unknown:
        raise CheckpointError(f"{source}: unsupported quantization types {unknown[:4]}; supported: "
                              f"{', '.join(SUPPORTED_TYPES)}")


def read_gguf_tensors(reader, source: str = "gguf", keep=(), widen=()) -> dict[str, torch.Tensor]:
    """Every tensor dequantized to float32, shaped like torch's (out, in); the names in `keep` (of a type in
    KEPT_QUANTIZED) come as their raw row bytes instead: uint8 (rows, bytes per row), read-only views of the
    reader's memory map (never written: the quantized modules copy them into their own buffers), so a kept matrix
    is not copied once more on its way (SmolLM2: ~40 ms of a fresh process's first token). Types are checked
    first. F32 and F16 tensors are converted by numpy; the `gguf` package (~0.1 s to import) dequantizes the
    others. The Q5_0 tensors of `keep` named in `widen` come as Q8_0 rows of the same numbers (a copy)."""
    reader = as_gguf_file(reader)
    check_gguf_types(reader, source)
    out = {}
    for t in reader.tensors:
        if t.name in keep:
            with warnings.catch_warnings():  # "not writable": the view is only read
                warnings.simplefilter("ignore", UserWarning)
                out[t.name] = torch.from_numpy(np.asarray(t.data, dtype=np.uint8).reshape(t.shape[0], -1))
            if t.name in widen:  # Q5_0 kept as Q8_0 (a copy: the same numbers in Q8_0's blocks)
                out[t.name] = kquants.q5_0_as_q8_0_rows(out[t.name])
            continue
        values = t.data if t.type_name in ("F32", "F16") else _dequantize(t)
        # np.array copies: the reader's arrays are views of a read-only memory map
        out[t.name] = torch.from_numpy(np.array(values, dtype=np.float32).reshape(t.shape))
    return out


def _dequantize(t):
    """A tensor of blocks (or BF16) as float32 values, by the `gguf` package."""
    gguf = require("gguf", "interop", "reading a GGUF file")
    return gguf.quants.dequantize(t.data, gguf.GGMLQuantizationType(t.type))


def kept_quantized(reader, config: ModelConfig) -> dict[str, str]:
    """attnlab weight name -> quantized format, for each matrix whose GGUF sources all have a kept type (_kept)."""
    return _kept(reader, config)[0]


def _kept(reader, config: ModelConfig) -> tuple[dict[str, str], dict[str, str]]:
    """({attnlab weight name: quantized format}, {GGUF tensor name: the format it is read in}) of the kept matrices.

    A fused matrix (qkv, gate+up) whose parts share a kept format is one QuantizedLinear (their rows concatenate as
    bytes); Q5_0 beside Q8_0, as llama-quantize's Q4_K_M writes SmolLM2's Q/K/V, is kept as Q8_0, and so is every
    Q5_0 matrix where q5_0_kernel cannot run: load_gguf then reads those Q5_0 parts as Q8_0 rows (the same
    numbers). A fused matrix whose parts keep different formats (Q5_1 beside Q8_0 in Q5_K_M, Q5_0 beside Q5_1 in
    Q4_K_S, Q4_K beside Q6_K) is a QuantizedParts: consecutive parts of one format form a row group, its format a
    parts_spec string ("q5_1:768+q8_0:192"). A matrix with a part of another type (Q2_K, Q3_K, F16), or of a format
    of VNNI_ONLY where its kernel cannot run (Q6_K, Q5_1, Q5_K without AVX-512 VNNI), is dequantized to float32.
    Why Q2_K and Q3_K expand: attnlab has no kernel that reads them (their 2- and 3-bit codes with 4-bit scale and
    min per 16 inputs, Q2_K, or signed 6-bit scales and a separate high-bit mask, Q3_K, fit none of the layouts of
    layers/quantized.py), and only llama.cpp's Q2_K / Q3_K presets use them for more than a few tensors; their
    float32 weights are the gguf package's dequantized values bit for bit (tests/test_gguf_round_trip.py).
    The token embedding is kept only when tied to the LM head (the head's QuantizedLinear owns the codes).
    """
    tensors = {t.name: t for t in as_gguf_file(reader).tensors}
    formats, sources = {}, {}
    for ours, names, transform in expand(gguf_table(config), config):
        kinds = [KEPT_QUANTIZED.get(tensors[n].type_name) if n in tensors else None for n in names]
        if "q5_0" in kinds and (set(kinds) == {"q5_0", "q8_0"} or not q5_0_kernel.runs_here()):
            kinds = ["q8_0" if k == "q5_0" else k for k in kinds]  # read as Q8_0 rows (the same numbers)
        if None in kinds or any(k in VNNI_ONLY and not VNNI_ONLY[k].runs_here() for k in kinds):
            continue
        if not ours.endswith(".weight") or (len(set(kinds)) > 1 and not isinstance(transform, Concat)):
            continue
        if ours == "tokens.weight" and not config.tie_embeddings:
            continue
        if not (ours.startswith("blocks.") or ours in ("tokens.weight", "lm_head.proj.weight")):
            continue
        if ours.startswith("blocks.") and (".norm" in ours):
            continue
        sources.update(zip(names, kinds, strict=True))
        if len(set(kinds)) == 1:
            formats[ours] = kinds[0]
            continue
        groups: list[list] = []  # consecutive parts of one format: [format, rows]
        for name, kind in zip(names, kinds, strict=True):
            if groups and groups[-1][0] == kind:
                groups[-1][1] += tensors[name].shape[0]
            else:
                groups.append([kind, tensors[name].shape[0]])
        formats[ours] = parts_spec([(k, r) for k, r in groups])
    return formats, sources


def _pad_parts(tensors: dict, formats: dict[str, str], config: ModelConfig) -> None:
    """Give the row bytes of each mixed fused matrix's parts one width (zero bytes on the right of the narrower),
    in place, so the table's transform stacks them (and undoes llama.cpp's Q/K row order) as it stacks any rows;
    _quantized_model splits the stacked rows into the parts' groups and cuts each back to its own width."""
    for ours, names, _ in expand(gguf_table(config), config):
        if parts_of(formats.get(ours)) is None:
            continue
        width = max(tensors[n].shape[1] for n in names)
        for n in names:
            t = tensors[n]
            if t.shape[1] < width:
                tensors[n] = torch.cat((t, t.new_zeros(t.shape[0], width - t.shape[1])), dim=1)


def check_gguf_shapes(reader, config: ModelConfig, source):
    """Every tensor the table reads must be in the file with the shape the config implies: checked against the
    file's tensor infos and a model built on the meta device, before anything is dequantized or allocated; -> that
    meta model (the quantized load builds on it instead of building it twice)."""
    meta = build_model(config, device="meta")
    expected = {k: tuple(v.shape) for k, v in to_theirs(gguf_table(config), config, meta.state_dict()).items()}
    stored = {t.name: t.shape for t in as_gguf_file(reader).tensors}
    missing = sorted(n for n in expected if n not in stored)
    if missing:
        raise CheckpointError(f"{source} lacks tensors {missing[:8]}{' ...' if len(missing) > 8 else ''}")
    wrong = [f"{n}: file {stored[n]} vs config {shape}" for n, shape in expected.items() if stored[n] != shape]
    if wrong:
        raise CheckpointError(f"{source}: tensor shapes disagree with the metadata: {wrong[:8]}"
                              f"{' ...' if len(wrong) > 8 else ''}")
    return meta


def load_gguf(path, device=None, keep_quantized: bool = True):
    """(model, tokenizer) from a GGUF file (SUPPORTED_ARCHITECTURES). Q8_0, Q4_0, Q4_1, Q4_K, Q6_K and Q5_0 matrices
    stay quantized, and Q5_1 and Q5_K where AVX-512 VNNI runs their kernels (KEPT_QUANTIZED, kept_quantized;
    attnlab.layers.quantized: 3-8x less memory than float32, products by attnlab's kernels), a fused Q/K/V or
    gate+up whose parts have different kept types too (a QuantizedParts, one quantized layer per run of rows of one
    type); other types (Q2_K, Q3_K: no kernel reads them, see _kept) are dequantized to float32. keep_quantized=False
    dequantizes every tensor to float32. The model carries the file's metadata (`gguf_metadata`) and tensor types
    (`gguf_types`), which save_gguf writes back."""
    path = Path(path)
    reader = open_reader(path)
    try:
        config = config_from_gguf(reader, str(path))
    except CheckpointError:
        raise
    except ConfigError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    except (TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:  # metadata of the wrong type or 0
        raise CheckpointError(f"{path}: GGUF metadata holds an impossible value ({type(exc).__name__}: {exc})"
                              ) from None
    refuse_if_absurd(config, path)  # before any tensor is dequantized or mapped
    check_gguf_types(reader, str(path))
    meta = check_gguf_shapes(reader, config, path)
    formats, read_as = _kept(reader, config) if keep_quantized else ({}, {})
    sources = set(read_as)
    types = {t.name: t.type_name for t in as_gguf_file(reader).tensors}
    widen = {n for n, fmt in read_as.items() if fmt == "q8_0" and types.get(n) == "Q5_0"}  # kept as Q8_0 rows
    tokenizer, metadata = _tokenizer_and_metadata(reader, path)
    # The tensors' copies, splits and checks run on one thread: ~1,000 small memory-bound operations, each of which
    # waits for every thread of torch's pool; with another process busy on the second core that wait made SmolLM2's
    # load 1.7-7.3 s instead of 0.42-0.53 s on one (fresh processes, 2-core AMD EPYC, 2026-11-28, not logged).
    with kernel_threads.one_torch_thread():
        # copies, but kept matrices view the map (Q5_0 ones widened to Q8_0 are copies)
        tensors = read_gguf_tensors(reader, str(path), keep=sources, widen=widen)
        del reader  # its raw strings are released before the model is built (the map once the views are copied)
        _pad_parts(tensors, formats, config)
        state, missing = to_ours(gguf_table(config), config, tensors)
        if missing:
            raise CheckpointError(f"{path} lacks tensors {missing[:8]}{' ...' if len(missing) > 8 else ''}")
        del tensors
        if not formats:
            model = materialize(config, state, path, device)
        else:
            model = _quantized_model(meta, state, formats, path, device)
    model.gguf_metadata = metadata  # save_gguf writes the file's keys back as they were
    model.gguf_types = types  # and its matrices in their types where their buffers say them (a Q5_0 read as Q8_0)
    return model, tokenizer


def _tokenizer_and_metadata(reader, path: Path):
    """(the file's tokenizer or None, its metadata for save_gguf: {key: (value, type, sub type)}, tokenizer keys
    there for their order only); whatever is wrong in the tokenizer's keys is one CheckpointError naming the file."""
    try:
        tokenizer = tokenizer_from_gguf(reader, str(path))
        metadata = source_keys(reader, str(path), lambda key: True, lambda key: not key.startswith("tokenizer."))
    except CheckpointError:
        raise
    except Exception as exc:  # tokenizers' own refusals (they may quote a token: only the type is shown)
        raise CheckpointError(f"{path}: the tokenizer in its metadata cannot be rebuilt ({type(exc).__name__})"
                              ) from None
    return tokenizer, metadata


def _put(module, buffers: dict, holders: list, prefix: str, what: str, path, device) -> dict[str, tuple]:
    """Put a kept matrix's buffers in `module` (and in every holder sharing its buffers: a tied embedding) ->
    {state name: shape} of them; shapes other than the module's are refused naming the matrix."""
    got = {k: tuple(v.shape) for k, v in buffers.items()}
    want = {k: tuple(v.shape) for k, v in module.buffers_dict().items()}
    if got != want:
        raise CheckpointError(f"{path}: {what} holds blocks of shapes {got}, the model needs {want}")
    swap = {id(old): buffers[k].to(device) if device is not None else buffers[k]
            for k, old in module.buffers_dict().items()}
    for m in holders:  # the linear and a tied QuantizedEmbedding share these buffers
        m._buffers.update({k: swap[id(b)] for k, b in m._buffers.items() if id(b) in swap})
    return {f"{prefix}.{k}": v for k, v in got.items()}


def _quantized_model(meta, state: dict, formats: dict[str, str], path, device):
    """The model (`meta`: built on the meta device, nothing else done to it) with the kept matrices' modules swapped
    for quantized ones holding `state`'s bytes.

    The quantized buffers are converted one matrix at a time and put in place (no second copy: SmolLM2's
    resident size stays near its file's); the float tensors are copied into the allocated model as usual.
    """
    from attnlab.quantization import check_finite, replace

    model = meta.eval()
    modules = {("lm_head" if name in ("tokens.weight", "lm_head.proj.weight") else name.removesuffix(".weight")): fmt
               for name, fmt in formats.items()}
    replace(model, modules)
    allocate_empty(model, device)  # uninitialised storage costs no resident memory until written
    shapes = {n: tuple(t.shape) for n, t in state.items() if n not in formats}
    holders = [m for m in model.modules() if isinstance(m, (QuantizedLinear, QuantizedEmbedding))]
    for name, fmt in formats.items():
        prefix = "lm_head.proj" if name in ("tokens.weight", "lm_head.proj.weight") else name.removesuffix(".weight")
        module = model.get_submodule(prefix)
        raw = state.pop(name)
        if isinstance(module, QuantizedParts):  # row groups of their own formats (_pad_parts made one width)
            start = 0
            for j, (part_fmt, rows) in enumerate(parts_of(fmt)):
                per, size = ROW_BYTES[part_fmt]
                group = raw[start:start + rows, : module.in_features // per * size].contiguous()
                start += rows
                shapes.update(_put(module.parts[j], from_gguf_rows(group, part_fmt), [module.parts[j]],
                                   f"{prefix}.parts.{j}", f"{name} (rows of {part_fmt})", path, device))
            continue
        shapes.update(_put(module, from_gguf_rows(raw, fmt), holders, prefix, f"{name} ({fmt})", path, device))
    check_shapes(model, shapes, path)
    expected = model.state_dict(keep_vars=True)
    with torch.no_grad():
        for name, tensor in state.items():
            expected[name].copy_(tensor)
    check_finite(model, path)  # kept blocks' NaN / inf scales: refused by name
    return model.eval()


# ------------------------------------------------------------------------------------------------ writing
GGUF_TYPE = {"q8_0": "Q8_0", "int8": "Q8_0", "q4_0": "Q4_0", "q4_1": "Q4_1", "int4": "Q4_1", "q5_0": "Q5_0",
             "q5_1": "Q5_1", "q4_k": "Q4_K", "q5_k": "Q5_K", "q6_k": "Q6_K"}  # attnlab -> GGUF
# gguf.LlamaFileType of the matrices' main type (K-quants: the _M preset that makes it the main type; a file read
# and written again in its own types keeps its own general.file_type instead)
FILE_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q4_K": 15, "Q5_K": 17,
              "Q6_K": 18}
DTYPES = {"float32": "F32", "float16": "F16"}


def _scale_codes(values: torch.Tensor, order, low: int, high: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """A K-quant super-block's sub-block scales d * c_j (values (..., m) float32, exact products of a float16 d and
    integer codes c_j in low..high) -> (d float16 (...), c (..., m) int16), or None where some super-block has no
    such pair.

    The pair is not unique (d * c = 2d * c/2): the candidates are tried in `order`, the code of the largest |value|
    first at the value llama.cpp's quantizers give it (Q4_K / Q5_K: 63, since d = max scale / 63; Q6_K: -128, since
    d = -max scale / 128), so a block llama.cpp wrote comes back as its own bytes; any other block comes back as
    other bytes of the same numbers. All-zero values give d = 0 and codes 0."""
    v = values.float()
    at = v.gather(-1, v.abs().argmax(-1, keepdim=True))[..., 0]  # the value of largest magnitude
    found = at == 0
    d = torch.zeros_like(at)
    codes = torch.zeros(v.shape, dtype=torch.int16)
    for c in order:
        if bool(found.all()):
            break
        cand = at / c
        q = v / cand[..., None]
        r = torch.round(q)
        ok = ~found & (cand.half().float() == cand) & (r == q).all(-1) & (r >= low).all(-1) & (r <= high).all(-1)
        ok &= (cand[..., None] * r == v).all(-1)
        d = torch.where(ok, cand, d)
        codes = torch.where(ok[..., None], r.nan_to_num().to(torch.int16), codes)
        found |= ok
    return (d.half(), codes) if bool(found.all()) else None


_SIX_BITS = range(63, 0, -1)  # Q4_K / Q5_K sub-block scale and min codes, llama.cpp's largest first
_INT8_SCALES = [-128] + [c for a in range(127, 0, -1) for c in (a, -a)]  # Q6_K's, -128 first


def _k_header(scale: torch.Tensor, minimum: torch.Tensor) -> torch.Tensor | None:
    """Q4_K / Q5_K per super-block: scale d sc_j and min -dmin m_j (n, nsb, 8) float32 -> d, dmin and the 12 bytes
    of 6-bit sc and m as the file packs them, (n, nsb, 16) uint8 (the inverse of kquants._k_scales); None where no
    float16 d and 6-bit codes make the numbers."""
    got, mins = _scale_codes(scale, _SIX_BITS, 0, 63), _scale_codes(-minimum, _SIX_BITS, 0, 63)
    if got is None or mins is None:
        return None
    (d, sc), (dmin, m) = got, mins
    sc, m = sc.to(torch.uint8), m.to(torch.uint8)
    low = (sc[..., :4] & 63) | ((sc[..., 4:] >> 4) << 6)
    mid = (m[..., :4] & 63) | ((m[..., 4:] >> 4) << 6)
    high = (sc[..., 4:] & 15) | ((m[..., 4:] & 15) << 4)
    halves = torch.stack((d, dmin), dim=-1).contiguous().view(torch.uint8)  # (n, nsb, 4)
    return torch.cat((halves, low, mid, high), dim=-1)


def _k_rows(module) -> torch.Tensor | None:
    """A kept "q4_k" / "q5_k" / "q6_k" module -> its GGUF row bytes (the inverse of kquants' decoders), or None where
    its scales are not a float16 d times the format's integer codes (_scale_codes)."""
    b = module.buffers_dict()
    q = b["qweight"]
    n = q.shape[0]
    nsb = b["scale"].shape[1] // (16 if module.format == "q6_k" else 8)  # super-blocks: 16 or 8 scales each
    if module.format == "q6_k":
        got = _scale_codes(b["scale"].reshape(n, nsb, 16), _INT8_SCALES, -128, 127)
        if got is None:
            return None
        d, sc = got
        codes = (q.reshape(n, nsb, 2, 128).to(torch.int16) + 32).to(torch.uint8)  # 0..63
        low, high = codes & 15, codes >> 4
        ql = low[..., :64] | (low[..., 64:] << 4)  # input v: byte v % 64, nibble v // 64
        qh = high[..., 0:32] | (high[..., 32:64] << 2) | (high[..., 64:96] << 4) | (high[..., 96:] << 6)
        return torch.cat((ql.reshape(n, nsb, 128), qh.reshape(n, nsb, 64), sc.to(torch.int8).view(torch.uint8),
                          d.contiguous().view(torch.uint8).reshape(n, nsb, 2)), dim=-1).reshape(n, -1)
    header = _k_header(b["scale"].reshape(n, nsb, 8), b["min"].reshape(n, nsb, 8))
    if header is None:
        return None
    if module.format == "q4_k":
        values = unpack4(q).reshape(n, nsb, 4, 2, 32)  # sub-blocks 2c and 2c + 1 of each 64-input chunk
        qs = values[..., 0, :] | (values[..., 1, :] << 4)
        return torch.cat((header, qs.reshape(n, nsb, 128)), dim=-1).reshape(n, -1)
    values = kquants.q5_codes(q).reshape(n, nsb, 8, 32)  # q5_k: 0..31
    pairs = values.reshape(n, nsb, 4, 2, 32)
    qs = (pairs[..., 0, :] & 15) | ((pairs[..., 1, :] & 15) << 4)
    qh = (((values >> 4) & 1) << torch.arange(8, dtype=torch.uint8)[:, None]).sum(2, dtype=torch.uint8)  # (n, nsb, 32)
    return torch.cat((header, qh, qs.reshape(n, nsb, 128)), dim=-1).reshape(n, -1)


def _q8_0_as_q5_0(raw: torch.Tensor) -> torch.Tensor | None:
    """Q8_0 rows whose codes all lie in -16..15 (a Q5_0 tensor read as Q8_0 rows: kquants.q5_0_as_q8_0_rows) ->
    the Q5_0 rows of the same numbers; None where a code does not fit in 5 bits."""
    n = raw.shape[0]
    b = raw.reshape(n, -1, 34)
    codes = b[..., 2:].contiguous().view(torch.int8)
    if bool((codes < -16).any()) or bool((codes > 15).any()):
        return None
    q = (codes.to(torch.int16) + 16).to(torch.uint8)  # (n, blocks, 32): 0..31
    qs = (q[..., :16] & 15) | ((q[..., 16:] & 15) << 4)
    bits = (((q >> 4) & 1).long() << torch.arange(32)).sum(-1)  # fifth bit of input j: bit j, little-endian
    qh = torch.stack([(bits >> s) & 255 for s in (0, 8, 16, 24)], dim=-1).to(torch.uint8)
    return torch.cat((b[..., 0:2], qh, qs), dim=-1).reshape(n, -1)


def to_gguf_rows(module) -> tuple[torch.Tensor, str]:
    """A quantized module's buffers -> (GGUF row bytes (n, blocks * bytes per block) uint8, GGUF type name), or
    (None, type) where a K-quant's scales are not its format's (_k_rows; not so for anything load_gguf read).

    q8_0 / q4_0 / q4_1 / q5_0 / q5_1 and attnlab's int4 (Q4_1's layout) give back their very bytes; q4_k / q5_k /
    q6_k their super-blocks rebuilt (codes moved back into the file's order, each super-block's float16 d and
    integer sub-block codes found again from their exact float32 products: _scale_codes). attnlab's int8 (one
    float32 scale per row) becomes Q8_0 with the same codes and each row's scale rounded to float16 in every block
    (weights move by at most 2**-11 of themselves; Q8_0 has no per-row scale). Inverse of from_gguf_rows.
    """
    fmt = module.format
    if fmt in ("q4_k", "q5_k", "q6_k"):
        return _k_rows(module), GGUF_TYPE[fmt]
    b = module.buffers_dict()
    q, d = b["qweight"], b["scale"]
    n = q.shape[0]
    if fmt == "int8":
        blocks = q.shape[1] // 32
        d = d.to(torch.float16)[:, None].expand(n, blocks)
    d = d.contiguous().view(torch.uint8).reshape(n, -1, 2)  # (n, blocks, 2): float16 bytes
    if fmt in ("q8_0", "int8"):
        return torch.cat((d, q.contiguous().view(torch.uint8).reshape(n, -1, 32)), dim=-1).reshape(n, -1), "Q8_0"
    if fmt in ("q5_0", "q5_1"):  # per block: d (, m), the 4 bytes of fifth bits, the 16 nibble bytes (kept:
        codes = q.reshape(n, -1, 20)  # nibbles, then bits)
        bits, nibbles = codes[..., 16:], codes[..., :16]
        if fmt == "q5_0":
            return torch.cat((d, bits, nibbles), dim=-1).reshape(n, -1), "Q5_0"
        m = b["min"].contiguous().view(torch.uint8).reshape(n, -1, 2)
        return torch.cat((d, m, bits, nibbles), dim=-1).reshape(n, -1), "Q5_1"
    codes = q.reshape(n, -1, 16)  # (n, blocks, 16): two 4-bit codes per byte, GGUF's order already
    if fmt == "q4_0" and torch.equal(b["min"], (b["scale"].float() * -8).half()):
        return torch.cat((d, codes), dim=-1).reshape(n, -1), "Q4_0"
    m = b["min"].contiguous().view(torch.uint8).reshape(n, -1, 2)
    return torch.cat((d, m, codes), dim=-1).reshape(n, -1), "Q4_1"


def _export_state(model) -> tuple[dict[str, torch.Tensor], dict]:
    """(attnlab state with each quantized weight as GGUF row bytes, {weight name: GGUF type} of those). A
    QuantizedParts' weight is its parts' row bytes stacked, each part's rows padded with zero bytes to the widest
    (cut back by _part_types once the table has split them into the file's tensors), and its entry the list of
    (GGUF type, rows, bytes per row) of its parts."""
    state = model.state_dict()
    types, done = {}, {}
    for name, module in model.named_modules():
        if isinstance(module, QuantizedParts):
            for key in [k for k in state if k.startswith(f"{name}.parts.")]:
                del state[key]
            rows = [to_gguf_rows(part) for part in module.parts]
            if any(raw is None for raw, _ in rows):  # scales that are not a K-quant's: float, as any float matrix
                state[f"{name}.weight"] = module.weight
                continue
            width = max(raw.shape[1] for raw, _ in rows)
            state[f"{name}.weight"] = torch.cat([torch.nn.functional.pad(raw, (0, width - raw.shape[1]))
                                                 for raw, _ in rows])
            types[f"{name}.weight"] = [(kind, raw.shape[0], raw.shape[1]) for raw, kind in rows]
            continue
        if not isinstance(module, (QuantizedLinear, QuantizedEmbedding)) or ".parts." in name:
            continue
        buffers = module.buffers_dict()
        for b in buffers:
            state.pop(f"{name}.{b}", None)
        if module.format == "int8" and module.weight.shape[1] % 32:  # no Q8_0 layout for this width
            state[f"{name}.weight"] = module.weight  # written as float (dtype), like any float matrix
            continue
        key = id(buffers["qweight"])  # a tied embedding shares its head's codes: converted once
        if key not in done:
            done[key] = to_gguf_rows(module)
        if done[key][0] is None:
            state[f"{name}.weight"] = module.weight
            continue
        state[f"{name}.weight"], types[f"{name}.weight"] = done[key]
    return state, types


def _file_types(table, config, quantized: dict) -> dict[str, str | tuple[str, int]]:
    """{file tensor name: its GGUF type} of the quantized matrices; a QuantizedParts' tensors as (type, bytes per
    row), each tensor's rows inside one part. A QuantizedParts whose parts' rows do not fall on the file's tensors
    (one built by hand) has its state entry replaced by its float weight, in place, and is written as float."""
    kinds = {}
    for ours, names, transform in expand(table, config):
        kind = quantized.get(ours)
        if kind is None:
            continue
        if isinstance(kind, str):
            kinds.update(dict.fromkeys(names, kind))
            continue
        sizes = transform.sizes(config) if isinstance(transform, Concat) else [sum(rows for _, rows, _ in kind)]
        bounds, start = [], 0  # each part's row range
        for part_kind, rows, width in kind:
            bounds.append((start, start + rows, part_kind, width))
            start += rows
        found, start = {}, 0
        for foreign, size in zip(names, sizes, strict=True):
            inside = [(k, w) for lo, hi, k, w in bounds if lo <= start and start + size <= hi]
            if inside:
                found[foreign] = inside[0]
            start += size
        if len(found) == len(names):
            kinds.update(found)
        else:
            quantized[ours] = None
    return kinds


def _file_tensors(model, table, config, keep_quantized: bool) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """({file tensor name: tensor}, {file tensor name: GGUF type} of those written in blocks) of save_gguf."""
    if keep_quantized:
        state, quantized = _export_state(model)
    else:
        from attnlab.quantization import float_state_dict

        state, quantized = float_state_dict(model), {}
    kinds = _file_types(table, config, quantized)
    for ours in [k for k, v in quantized.items() if v is None]:  # parts not on the file's tensors: float
        state[ours] = model.get_submodule(ours.removesuffix(".weight")).weight
    tensors = to_theirs(table, config, state)
    source_types = getattr(model, "gguf_types", None) or {}  # the types of the file the model was read from
    for name, kind in kinds.items():
        if isinstance(kind, tuple):  # a part's rows: cut back to its own width (_export_state padded them)
            kind, width = kind
            tensors[name], kinds[name] = tensors[name][:, :width], kind
        if kinds[name] == "Q8_0" and source_types.get(name) == "Q5_0":  # read as Q8_0 rows: Q5_0 again
            narrow = _q8_0_as_q5_0(tensors[name])
            if narrow is not None:
                tensors[name], kinds[name] = narrow, "Q5_0"
    return tensors, kinds


def _llama_keys(config) -> list[tuple[str, int | float]]:
    """The llama.* hyperparameters a written file carries, as (GGUFWriter.add_<key>, value), in the order written.

    Why a table: each is one writer call of the same form; listed together they show what a reader (load_gguf,
    llama.cpp) finds, key_length and value_length included, so no reader has to assume d_model / n_heads."""
    return [("block_count", config.n_layers), ("context_length", config.max_len),
            ("embedding_length", config.d_model), ("feed_forward_length", config.d_ff),
            ("head_count", config.n_heads), ("head_count_kv", config.kv_heads), ("key_length", config.head_dim),
            ("value_length", config.head_dim), ("rope_dimension_count", config.rotary_dim or config.head_dim),
            ("rope_freq_base", config.rope_theta),
            ("layer_norm_eps" if config.norm == "layernorm" else "layer_norm_rms_eps", config.norm_eps),
            ("vocab_size", config.vocab_size)]


def _family_keys(config, arch: str) -> list[tuple[str, int | float | bool]]:
    """The keys of `arch` beyond _llama_keys, as llama.cpp's converter writes them (Phi-3's and Gemma's window,
    Gemma's soft caps, GPT-NeoX's parallel residual)."""
    keys = []
    if arch in ("phi3", "gemma2", "gemma3") and config.sliding_window:
        keys.append(("sliding_window", config.sliding_window))
    if arch == "gptneox":
        keys.append(("parallel_residual", config.parallel_residual))
    if config.attn_softcap is not None:
        keys.append(("attn_logit_softcapping", float(config.attn_softcap)))
    if config.logit_softcap is not None:
        keys.append(("final_logit_softcapping", float(config.logit_softcap)))
    return keys


def _gemma_departures(config, arch: str) -> list[str]:
    """What a gemma2 / gemma3 file cannot say of `config`: what llama.cpp fixes instead of reading (_GEMMA: the
    global layers' period, Gemma 3's sliding layers' RoPE base, the query scale of all but the 27B models), Gemma
    2's soft caps (llama.cpp assumes 50 and 30 without them), Gemma 3's missing attention cap."""
    fixed, wrong = _GEMMA[arch], []
    window = config.sliding_window
    if config.global_every != (fixed["every"] if window and config.n_layers >= fixed["every"] else None):
        wrong.append(f"global_every={config.global_every} (a {arch} file: every {fixed['every']}th layer global)")
    scalar = config.d_model / config.n_heads if config.n_layers == fixed["layers_27b"] else config.head_dim
    expected = None if scalar == config.head_dim else float(scalar) ** -0.5
    if (config.attn_scale is None) != (expected is None) or (
            expected is not None and abs(config.attn_scale - expected) > 1e-7 * expected):
        wrong.append(f"attn_scale={config.attn_scale} (a {arch} file of {config.n_layers} blocks: {expected})")
    if arch == "gemma2":
        if config.rope_scaling or config.rope_local_theta is not None:
            wrong.append("rope_scaling / rope_local_theta")
        if config.attn_softcap is None or config.logit_softcap is None or not window:
            wrong.append("no attn_softcap, logit_softcap or sliding_window (llama.cpp assumes 50, 30, 4096)")
        if config.qk_norm != "none":
            wrong.append(f"qk_norm={config.qk_norm!r}")
    else:
        scaling = config.rope_scaling or {}
        if scaling and (scaling.get("type") != "linear" or set(scaling) != {"type", "factor"}):
            wrong.append(f"rope_scaling={scaling} (a gemma3 file: linear only)")
        local = config.rope_local_theta if config.rope_local_theta is not None else \
            (config.rope_theta if not scaling else None)
        if window and local != fixed["local_theta"]:
            wrong.append(f"rope_local_theta={config.rope_local_theta} (llama.cpp: {fixed['local_theta']:g} on the "
                         "sliding layers)")
        if config.attn_softcap is not None:
            wrong.append("attn_softcap (llama.cpp's gemma3 has none)")
        if config.qk_norm != "head":
            wrong.append(f"qk_norm={config.qk_norm!r}")
    return wrong


def export_architecture(config) -> str:
    """The llama.cpp architecture whose file says `config` exactly (load_gguf reads it back to the same model):
    llama, qwen2 (Q/K/V biases), qwen3 (per-head q/k norms), olmo2 (output norms, q/k norms over all heads), phi3 (a
    model that came from Phi-3: its window and partial RoPE), gptneox (LayerNorms, GELU, biases, partial RoPE,
    parallel residual), gemma2 / gemma3 (sandwich norms, GELU-tanh gates, scaled embeddings, caps, windows). A
    CheckpointError names the options no architecture says."""
    extra = config.extra if isinstance(config.extra, dict) else {}
    source = extra.get("gguf_architecture") or {"gpt_neox": "gptneox"}.get(extra.get("hf_family"),
                                                                         extra.get("hf_family"))
    if config.topology != "decoder" or config.position != "rope":
        raise CheckpointError("save_gguf writes decoders with RoPE only (LLaMA, Qwen2/3, OLMo 2, Phi-3, GPT-NeoX, "
                              f"Gemma 2/3); this is a {config.topology} with {config.position} positions")
    used = {name for name, value in llama_departures(config).items() if value}
    gemma = config.norm_placement == "sandwich"
    unsaid = {"attn_scale": config.attn_scale is not None and not gemma,  # no GGUF key says these
              "rope_local_theta": config.rope_local_theta is not None and not gemma,
              "global_every": config.global_every is not None and not gemma, "logit_scale": config.logit_scale != 1,
              "embedding_norm": config.embedding_norm, "lm_head_bias": config.lm_head_bias,
              "lm_head_transform": config.lm_head_transform, "type_vocab_size": config.type_vocab_size > 0,
              f"head={config.head!r}": config.head != "lm", "final_norm=False": config.final_norm is False}
    if any(unsaid.values()):
        raise CheckpointError(f"save_gguf: no GGUF architecture says {', '.join(k for k, v in unsaid.items() if v)}")
    if config.rope_scaling and config.rope_scaling.get("type") != "linear":
        used.add(f"rope_scaling {config.rope_scaling.get('type')!r}")
    wrong: list[str] = []
    if config.norm == "layernorm" and config.activation == "gelu" and config.bias:  # GPT-NeoX
        arch = "gptneox"
        wrong = sorted(used - {"rotary_dim", "parallel_residual", "qkv_bias"})  # biases everywhere
        if config.kv_heads != config.n_heads or config.tie_embeddings:
            wrong.append("n_kv_heads or tie_embeddings (a gptneox file has neither)")
    elif gemma:
        arch = "gemma3" if config.qk_norm == "head" or source == "gemma3" else "gemma2"
        base = config.norm == "rmsnorm" and config.activation == "geglu_tanh" and not config.bias
        wrong = ([] if base else ["norm / activation / bias (Gemma: rmsnorm, geglu_tanh, none)"]) + \
            sorted(used - {"norm_placement", "scale_embeddings", "sliding_window", "attn_softcap", "logit_softcap",
                           "qk_norm", "rope_scaling"}) + _gemma_departures(config, arch)
        if not config.scale_embeddings:
            wrong.append("scale_embeddings=False (Gemma multiplies by sqrt(d_model))")
        if arch == "gemma2" and not config.tie_embeddings:
            wrong.append("tie_embeddings=False (llama.cpp's gemma2 reads the embedding as the head)")
    elif not (config.norm == "rmsnorm" and config.activation == "swiglu" and not config.bias):
        raise CheckpointError("save_gguf writes LLaMA-style decoders (rope, rmsnorm, swiglu, no biases), Qwen2/3, OLMo "
                              "2, Phi-3, GPT-NeoX (layernorm, gelu, biases) and Gemma 2/3 (sandwich norms, "
                              "geglu_tanh) only")
    elif config.norm_placement == "output" and config.qk_norm == "all":  # OLMo 2
        arch = "olmo2"
        wrong = sorted(used - {"norm_placement", "qk_norm"})
        if config.tie_embeddings:
            wrong.append("tie_embeddings (an olmo2 file has its own output matrix)")
    elif source == "phi3":  # a window and partial RoPE: llama.cpp reads both keys (it runs Phi-3 without the window)
        arch = "phi3"
        wrong = sorted(used - {"sliding_window", "rotary_dim"})
        if config.n_heads * config.head_dim != config.d_model:
            wrong.append("n_heads * d_head != d_model (a phi3 file has no key_length)")
    else:
        # Qwen2 (Q/K/V biases) and Qwen3 (per-head q/k norms) have architectures of their own that say them
        arch = {("qkv_bias",): "qwen2", ("qk_norm",): "qwen3"}.get(tuple(sorted(used)), "llama")
        if arch == "qwen3" and config.qk_norm != "head":
            arch = "llama"  # q/k norms over all heads are OLMo 2's, whose norms also sit after each sub-layer
        if used and arch == "llama":
            raise CheckpointError(f"save_gguf writes LLaMA-style decoders, Qwen2 (qkv_bias), Qwen3 (qk_norm='head'), "
                                  f"OLMo 2 (norm_placement='output' with qk_norm='all'), Phi-3, GPT-NeoX and Gemma 2/3 "
                                  f"only; this one sets {', '.join(sorted(used))}, which no llama.cpp architecture "
                                  "says as attnlab computes it")
    if wrong:
        raise CheckpointError(f"save_gguf: a {arch} file cannot say {'; '.join(wrong)}: llama.cpp would compute "
                              "another model")
    return arch


def llama_departures(config) -> dict[str, bool]:
    """The block options of the other open families (Qwen, Mistral, OLMo 2, Phi-3, Gemma 2, GPT-NeoX), each True
    where `config` uses it: a LLaMA GGUF cannot say any of them."""
    return {"qkv_bias": config.attn_qkv_bias, "qk_norm": config.qk_norm != "none",
            "sliding_window": config.sliding_window is not None, "rope_scaling": bool(config.rope_scaling),
            "rotary_dim": config.rotary_dim is not None, "parallel_residual": config.parallel_residual,
            "norm_placement": config.norm_placement != "pre", "attn_softcap": config.attn_softcap is not None,
            "logit_softcap": config.logit_softcap is not None, "scale_embeddings": config.scale_embeddings}


def save_gguf(model, path, tokenizer=None, dtype: str = "float32", chat_template: str | None = None,
              keep_quantized: bool = True) -> Path:
    """Write an attnlab decoder as a GGUF file llama.cpp runs (its names and Q/K row order): a `llama` file, or the
    architecture of the family whose options it uses (export_architecture: qwen2, qwen3, olmo2, phi3, gptneox,
    gemma2, gemma3), whose rows keep Hugging Face's order.

    tokenizer: an attnlab Tokenizer (byte-level BPE, SentencePiece-style BPE or uncased WordPiece; see
    gguf_tokenizer.py), written as tokenizer.ggml.*; without one the file holds the model alone (attnlab and
    transformers read it, llama.cpp refuses it). chat_template: a Jinja template (default: the tokenizer's
    `chat_template`, which a GGUF-loaded tokenizer carries). dtype: "float32" or "float16" for the float matrices
    (norms stay float32, as llama.cpp's converter writes them). A quantized model's matrices are written in their
    own blocks without expanding: Q8_0 / Q4_0 / Q4_1 as loaded, attnlab int4 as Q4_1 (the same bytes), int8 as
    Q8_0 (the same codes; see to_gguf_rows), except an int8 matrix whose input width is not a multiple of 32
    (Q8_0's block), which is written as float. A model read from a GGUF file is written in its file's types: Q5_0,
    Q5_1, Q4_K, Q5_K and Q6_K in their own blocks too (K-quant super-blocks rebuilt from the kept codes and the exact
    float32 products d * sc: to_gguf_rows), a QuantizedParts (Q, K, V or gate, up of different types) tensor by
    tensor in each part's type, a Q5_0 tensor read as Q8_0 rows as Q5_0 again; so a llama.cpp Q4_K_M or Q5_K_M
    file read and written keeps every tensor's type and bytes (tests/test_gguf_round_trip.py). Written as float
    instead: a K-quant matrix whose float32 scales are no float16 d times its format's integer codes (changed after
    loading), a QuantizedParts whose parts do not fall on the file's tensors (built by hand), and every matrix
    load_gguf itself expanded (Q2_K, Q3_K; Q5_1, Q5_K and Q6_K where AVX-512 VNNI does not run their kernels).
    keep_quantized=False writes every matrix as float (`dtype`).
    A model (or tokenizer) loaded from a GGUF file carries its metadata (`gguf_metadata`): every key of it is
    written back, none added or dropped, with its type (see gguf_tokenizer.keep_source_keys).
    """
    gguf = require("gguf", "interop", "save_gguf")
    GGML_QUANT_VERSION, GGMLQuantizationType, GGUFWriter = gguf.GGML_QUANT_VERSION, gguf.GGMLQuantizationType, \
        gguf.GGUFWriter

    config = model.config
    arch = export_architecture(config)
    table = {"llama": llama_table, "phi3": phi3_table, "olmo2": olmo2_table, "gptneox": gptneox_table,
             "gemma2": gemma_table, "gemma3": gemma_table}.get(arch, qwen_table)(config)
    if dtype not in DTYPES:
        raise CheckpointError(f"save_gguf: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    path = Path(path)
    # many small byte operations, each waiting for every thread of torch's pool: one thread (as load_gguf; a tiny
    # K-quant model's conversion took 4.5 s on two threads of a busy 2-core machine, 0.09 s on one)
    with kernel_threads.one_torch_thread():
        tensors, kinds = _file_tensors(model, table, config, keep_quantized)
    source_types = getattr(model, "gguf_types", None) or {}  # the types of the file the model was read from
    writer = GGUFWriter(str(path), arch)
    if config.name:
        writer.add_name(str(config.name))
    for key, value in _llama_keys(config) + _family_keys(config, arch):
        getattr(writer, f"add_{key}")(value)
    if arch == "gemma3" and config.rope_scaling:  # linear only (export_architecture checked)
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(float(config.rope_scaling["factor"]))
    matrices = {n: kinds.get(n, DTYPES[dtype]) for n, t in tensors.items() if t.dim() == 2}
    main = list(matrices.values())
    file_type = FILE_TYPES[max(set(main), key=main.count)]
    source = getattr(model, "gguf_metadata", None)  # the file the model was read from: its keys are kept
    if source and "general.file_type" in source and all(source_types.get(n) == k for n, k in matrices.items()):
        file_type = int(source["general.file_type"][0])  # every matrix in its source's type: the source's preset
    writer.add_file_type(file_type)
    if kinds:
        writer.add_quantization_version(GGML_QUANT_VERSION)
    if tokenizer is not None:
        template = chat_template if chat_template is not None else getattr(tokenizer, "chat_template", None)
        write_tokenizer(writer, tokenizer, config.vocab_size, template)
    elif chat_template is not None:
        writer.add_chat_template(chat_template)
    if source:
        d_head = config.d_model // config.n_heads  # what llama.cpp assumes without key_length / value_length
        keep_source_keys(writer, source, lambda key: not key.startswith("tokenizer."),
                         {f"{arch}.attention.key_length": d_head, f"{arch}.attention.value_length": d_head})
    for name, tensor in tensors.items():
        tensor = tensor.detach().cpu()
        if name in kinds:
            writer.add_tensor(name, tensor.contiguous().numpy(), raw_dtype=GGMLQuantizationType[kinds[name]])
        elif dtype == "float16" and tensor.dim() == 2:
            writer.add_tensor(name, tensor.half().contiguous().numpy())
        else:
            writer.add_tensor(name, tensor.float().contiguous().numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
