"""What a transformer costs, per operation, computed from its config alone (nothing is built or run).

Every row is one kind of operation summed over the layers of one stack, in the seeds' accounting:

- a matrix product A (r x k) . B (k x c) takes 2*r*k*c FLOPs (one multiply and one add per term), reads
  r*k + k*c numbers and writes r*c numbers;
- elementwise work (softmax, norms, activations, residual adds) is counted with the small per-element
  constants below; it is tiny beside the products but it is what makes those rows memory-bound;
- bytes are the textbook, unfused traffic: every operand is read from memory once and every result written
  once. A fused attention kernel (FlashAttention, SDPA) never writes the (n x n) score matrix, so the real
  traffic of the attention rows is lower; the table shows the cost the fusion removes.

Modes:
- "forward": one full forward over b sequences of n tokens (source m for encoder-decoders);
- "train": forward + backward = 3x the forward (the backward of a product is two products of the same size,
  one for the gradient of each operand); the patch embedding of a ViT gets 2x, since pixels need no gradient.
  No activation recomputation, no optimizer update. Elementwise rows and bytes are scaled by 3 too (rough);
- "decode_step": one new token per sequence that attends over n keys (the n-1 tokens before it and itself).
  cached=True reads the n-1 earlier keys/values from the KV cache: every n^2 of the forward becomes n and every
  n becomes 1. cached=False recomputes the whole prefix (the model run on n tokens, logits for the last one).
  An encoder-decoder's encoder runs once per source, outside the step; with the cache the cross-attention K, V
  are projected once too, without it they are projected again at every step.

Attention FLOPs count the full (n x n) score matrix even under a causal mask, as the dense kernels compute it
(and as torch.utils.flop_counter does).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attnlab.config import ModelConfig
from attnlab.errors import InputError

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
_DTYPE_ALIASES = {"fp32": "float32", "float": "float32", "bf16": "bfloat16", "fp16": "float16",
                  "half": "float16", "torch.float32": "float32", "torch.bfloat16": "bfloat16",
                  "torch.float16": "float16"}
MODES = ("forward", "train", "decode_step")

# FLOPs per element of the operations that are not matrix products (approximate by nature).
SOFTMAX_FLOPS = 5  # scale, running max, subtract + exp, sum, divide
NORM_FLOPS = {"layernorm": 8, "rmsnorm": 5}  # mean, centre, square, mean, rsqrt, multiply, gain (+ shift)
ACTIVATION_FLOPS = {"relu": 1, "reglu": 1, "gelu": 8, "geglu": 8, "gelu_tanh": 8, "geglu_tanh": 8,
                    "silu": 4, "swiglu": 4}  # gated variants add one multiply per element
ROPE_FLOPS = 3  # x*cos + rotate_half(x)*sin per element of q and k


def dtype_name(dtype) -> str:
    """'float32' | 'bfloat16' | 'float16' from a string or a torch.dtype; anything else is an InputError."""
    name = str(dtype)
    name = _DTYPE_ALIASES.get(name, name)
    if name not in DTYPE_BYTES:
        raise InputError(f"unknown dtype {dtype!r}; allowed: {', '.join(DTYPE_BYTES)} "
                         f"(or {', '.join(k for k in _DTYPE_ALIASES if not k.startswith('torch'))})")
    return name


@dataclass(frozen=True)
class CostRow:
    """One operation, summed over `layers` layers of one stack."""

    stack: str  # "encoder", "decoder" or "" for whole-model rows (embeddings, heads)
    name: str
    formula: str  # FLOPs of ONE layer in the seeds' symbols
    layers: int
    flops: int
    bytes_read: int
    bytes_written: int
    matmul: bool  # a matrix product (what FlopCounterMode counts)

    @property
    def bytes_moved(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """Arithmetic intensity: FLOPs per byte moved. Low = memory-bound, high = compute-bound."""
        return self.flops / self.bytes_moved if self.bytes_moved else float("inf")

    def scaled(self, factor: int) -> CostRow:
        return CostRow(self.stack, self.name, self.formula, self.layers, self.flops * factor,
                       self.bytes_read * factor, self.bytes_written * factor, self.matmul)


@dataclass
class CostTable:
    config: ModelConfig
    mode: str
    cached: bool
    batch: int
    seq: int
    src_seq: int | None
    dtype: str
    rows: list[CostRow] = field(default_factory=list)

    @property
    def flops(self) -> int:
        return sum(r.flops for r in self.rows)

    @property
    def matmul_flops(self) -> int:
        return sum(r.flops for r in self.rows if r.matmul)

    @property
    def bytes_read(self) -> int:
        return sum(r.bytes_read for r in self.rows)

    @property
    def bytes_written(self) -> int:
        return sum(r.bytes_written for r in self.rows)

    @property
    def intensity(self) -> float:
        moved = self.bytes_read + self.bytes_written
        return self.flops / moved if moved else float("inf")

    def flops_of(self, name: str) -> int:
        """FLOPs of every row whose name contains `name` (e.g. "Q K^T", "FFN")."""
        return sum(r.flops for r in self.rows if name in r.name)

    @property
    def kv_cache_bytes(self) -> dict[str, int]:
        return kv_cache_bytes(self.config, self.batch, self.seq, self.src_seq, self.dtype)

    def render(self) -> str:
        from attnlab.cost.report import render_table

        return render_table(self)


# ------------------------------------------------------------------------------------------------ checks
def _positive(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(f"{name}={value!r}: must be a positive integer")
    return value


def _check_length(config: ModelConfig, name: str, n: int) -> None:
    limit = config.seq_limit
    if config.topology == "vit":
        if n != limit:
            raise InputError(f"{name}={n}: a ViT's sequence is fixed by image_size/patch_size at "
                             f"{config.n_patches} patches + [CLS] = {limit}; leave it out or give {limit}")
        return
    if limit is not None and n > limit:
        raise InputError(f"{name}={n} exceeds max_len={limit}: {config.position} positions are a table of "
                         f"max_len rows, so this model has no position {limit} or later; rope, alibi and t5 "
                         "positions have no such limit")


def resolve_sizes(config: ModelConfig, batch, seq, src_seq) -> tuple[int, int, int | None]:
    """Validate b, n, m against the config; fill the defaults (ViT n, encoder-decoder m = n)."""
    _positive("batch", batch)
    if seq is None:
        if config.topology != "vit":
            raise InputError("seq is required (the number of tokens n per sequence)")
        seq = config.n_patches + 1
    _positive("seq", seq)
    _check_length(config, "seq", seq)
    if config.topology == "encoder-decoder":
        src_seq = seq if src_seq is None else src_seq
        _positive("src_seq", src_seq)
        _check_length(config, "src_seq", src_seq)
    elif src_seq is not None:
        raise InputError(f"src_seq={src_seq!r}: a source length m applies only to encoder-decoder models, "
                         f"this one is a {config.topology}")
    return batch, seq, src_seq


# ----------------------------------------------------------------------------------------------- builder
class _Rows:
    """Collects rows; knows the bytes per element."""

    def __init__(self, element: int):
        self.element = element
        self.rows: list[CostRow] = []

    def matmul(self, stack, name, formula, layers, r, k, c, bias=False, extra_read=0):
        """L x (r x k) . (k x c) [+ bias]; the bias add (r*c, 1/(2k) of the product) is left out of the FLOPs,
        as FlopCounterMode leaves it out of addmm, but its bytes are read."""
        e = self.element
        flops = 2 * r * k * c
        read = (r * k + k * c + (c if bias else 0) + extra_read) * e
        self.rows.append(CostRow(stack, name, formula, layers, layers * flops, layers * read, layers * r * c * e,
                                 True))

    def other(self, stack, name, formula, layers, flops, read, written):
        e = self.element
        self.rows.append(CostRow(stack, name, formula, layers, layers * flops, layers * read * e,
                                 layers * written * e, False))


def _attention(out: _Rows, config: ModelConfig, stack: str, layers: int, b: int, nq: int, nk: int,
               sq: str, sk: str, cross: bool, project_kv: bool, sm: str = "") -> None:
    """One attention sub-layer x `layers`: nq queries per sequence against nk keys.

    sq / sk are the symbols of nq / nk for the formulas; sm the symbol of the source length (cross).
    """
    d, h, g, dk = config.d_model, config.n_heads, config.kv_heads, config.head_dim
    qw, kvw = h * dk, g * dk
    tag = "cross-attn" if cross else "self-attn"
    rq = f"b·{sq}" if sq != "1" else "b"
    if cross:
        out.matmul(stack, f"{tag} Q projection", f"2·{rq}·d·h·d_k", layers, b * nq, d, qw, config.bias)
        if project_kv:
            rk = f"b·{sk}" if sk != "1" else "b"
            out.matmul(stack, f"{tag} K,V projections", f"2·{rk}·d·2g·d_k", layers, b * nk, d, 2 * kvw,
                       config.bias)
    else:
        out.matmul(stack, f"{tag} Q,K,V projections", f"2·{rq}·d·(h+2g)·d_k", layers, b * nq, d, qw + 2 * kvw,
                   config.attn_qkv_bias)
        if config.position == "rope":  # the first rotary_dim features of each head (all of them by default)
            elems = b * nq * (h + g) * config.rope_dim
            rotated = "d_k" if config.rotary_dim is None else "rotary_dim"
            out.other(stack, f"{tag} rotary (RoPE)", f"{ROPE_FLOPS}·{rq}·(h+g)·{rotated}", layers,
                      ROPE_FLOPS * elems, elems, elems)
    scores = b * h * nq * nk
    pair = f"{sq}·{sk}" if sq != "1" else sk
    e = out.element
    # Q K^T: reads Q (b, h, nq, d_k) and K (b, g, nk, d_k), writes the scores (b, h, nq, nk)
    out.rows.append(CostRow(stack, f"{tag} Q K^T", f"2·b·h·{pair}·d_k", layers,
                            layers * 2 * scores * dk, layers * (b * h * nq * dk + b * g * nk * dk) * e,
                            layers * scores * e, True))
    out.other(stack, f"{tag} softmax", f"{SOFTMAX_FLOPS}·b·h·{pair}", layers, SOFTMAX_FLOPS * scores,
              scores, scores)
    # P V: reads P (b, h, nq, nk) and V (b, g, nk, d_k), writes the heads (b, h, nq, d_k)
    out.rows.append(CostRow(stack, f"{tag} P V", f"2·b·h·{pair}·d_k", layers,
                            layers * 2 * scores * dk, layers * (scores + b * g * nk * dk) * e,
                            layers * b * h * nq * dk * e, True))
    out.matmul(stack, f"{tag} output projection W_O", f"2·{rq}·h·d_k·d", layers, b * nq, qw, d, config.bias)


def _stack(out: _Rows, config: ModelConfig, stack: str, layers: int, b: int, nq: int, nk: int, sq: str, sk: str,
           cross_len: int | None = None, project_cross_kv: bool = True) -> None:
    """Embedding sum, `layers` blocks and the final norm of one stack, for nq new positions per sequence."""
    d, ff = config.d_model, config.d_ff
    rows = b * nq
    rq = f"b·{sq}" if sq != "1" else "b"
    adds = int(config.position in ("learned", "sinusoidal")) + int(config.scale_embeddings) + \
        int(config.type_vocab_size > 0)
    out.other(stack, "embedding lookup (+ positions)", f"{adds}·{rq}·d", 1, adds * rows * d,
              (1 + adds) * rows * d, rows * d)
    _attention(out, config, stack, layers, b, nq, nk, sq, sk, cross=False, project_kv=True)
    if cross_len is not None:
        _attention(out, config, stack, layers, b, nq, cross_len, sq, "m", cross=True,
                   project_kv=project_cross_kv)
    up = ff * (2 if config.gated else 1)
    gate = "2·" if config.gated else ""
    out.matmul(stack, "FFN up W_1" + (" (gate + up)" if config.gated else ""), f"2·{rq}·d·{gate}d_ff", layers,
               rows, d, up, config.bias)
    act = ACTIVATION_FLOPS[config.activation] + int(config.gated)
    out.other(stack, f"FFN activation ({config.activation})", f"{act}·{rq}·d_ff", layers, act * rows * ff,
              rows * up, rows * ff)
    out.matmul(stack, "FFN down W_2", f"2·{rq}·d_ff·d", layers, rows, ff, d, config.bias)
    per_block = 3 if cross_len is not None else 2
    adds_per_block = per_block  # a sandwich normalises before and after each sub-layer: twice the norms, same adds
    per_block *= 2 if config.norm_placement == "sandwich" else 1
    nf = NORM_FLOPS[config.norm]
    n_params = 2 if config.norm == "layernorm" else 1
    out.other(stack, f"{config.norm} ({per_block} per block)", f"{per_block}·{nf}·{rq}·d", layers,
              per_block * nf * rows * d, per_block * (rows * d + n_params * d), per_block * rows * d)
    out.other(stack, f"residual adds ({adds_per_block} per block)", f"{adds_per_block}·{rq}·d", layers,
              adds_per_block * rows * d, adds_per_block * 2 * rows * d, adds_per_block * rows * d)
    ends = int(config.embedding_norm) + int(config.has_final_norm)
    if ends:
        out.other(stack, f"{config.norm} (embedding/final)", f"{nf}·{rq}·d", ends, nf * rows * d,
                  rows * d + n_params * d, rows * d)


def _lm_head(out: _Rows, config: ModelConfig, r: int, sym: str) -> None:
    d, V = config.d_model, config.vocab_size
    if config.lm_head_transform:  # BERT MLM: dense + activation + norm first
        out.matmul("", "LM head transform (dense)", f"2·{sym}·d·d", 1, r, d, d, True)
        nf = NORM_FLOPS[config.norm] + ACTIVATION_FLOPS[config.activation]
        out.other("", "LM head transform (act + norm)", f"{nf}·{sym}·d", 1, nf * r * d, r * d, r * d)
    out.matmul("", "LM head / logits", f"2·{sym}·d·V", 1, r, d, V, config.lm_head_bias)


def _rows(config: ModelConfig, mode: str, cached: bool, b: int, n: int, m: int | None, element: int) -> list[CostRow]:
    out = _Rows(element)
    topo, d = config.topology, config.d_model
    step = mode == "decode_step"
    if step and topo not in ("decoder", "encoder-decoder"):
        raise InputError(f"mode='decode_step' needs a model that generates (decoder or encoder-decoder); "
                         f"this one is a {topo}")
    # queries per sequence in this pass, and how many of them reach the head
    nq, sq = (1, "1") if step and cached else (n, "n")
    head_rows, head_sym = (b, "b") if step else (b * n, "b·n")
    if topo == "decoder":
        _stack(out, config, "decoder", config.n_layers, b, nq, n, sq, "n")
        if config.head == "lm":
            _lm_head(out, config, head_rows, head_sym)
    elif topo == "encoder-decoder":
        if not step:
            _stack(out, config, "encoder", config.n_layers, b, m, m, "m", "m")
        _stack(out, config, "decoder", config.decoder_layers, b, nq, n, sq, "n", cross_len=m,
               project_cross_kv=not (step and cached))
        _lm_head(out, config, head_rows, head_sym)
    elif topo == "encoder":
        _stack(out, config, "encoder", config.n_layers, b, n, n, "n", "n")
        if config.pooler:
            out.matmul("", "pooler (dense on [CLS])", "2·b·d·d", 1, b, d, d, True)
        if config.nsp:
            out.matmul("", "next-sentence classifier (on the pooled [CLS])", "2·b·d·2", 1, b, d, 2, True)
        if config.head == "lm":
            _lm_head(out, config, b * n, "b·n")
        elif config.head == "classifier":
            out.matmul("", "classifier", "2·b·d·C", 1, b, d, config.n_classes, True)
        elif config.head == "token_classifier":
            out.matmul("", "token classifier", "2·b·n·d·C", 1, b * n, d, config.n_classes, True)
    else:  # vit: n = patches + [CLS]
        k = config.n_channels * config.patch_size ** 2
        out.matmul("", "patch embedding", "2·b·(n-1)·(C·p²)·d", 1, b * config.n_patches, k, d, True)
        _stack(out, config, "encoder", config.n_layers, b, n, n, "n", "n")
        if config.head == "classifier":
            out.matmul("", "classifier", "2·b·d·C", 1, b, d, config.n_classes, True)
    rows = [r for r in out.rows if r.flops or r.bytes_moved]
    if mode == "train":
        rows = [r.scaled(2 if r.name == "patch embedding" else 3) for r in rows]
    return rows


# ------------------------------------------------------------------------------------------------ public
def cost_table(config: ModelConfig, batch: int, seq: int | None, src_seq: int | None = None,
               dtype="float32", mode: str = "forward", cached: bool = True) -> CostTable:
    """Per-operation FLOPs, bytes read/written and arithmetic intensity (see the module docstring).

    seq is n (tokens per sequence; for decode_step the keys the new token attends to, itself included);
    src_seq is m, the source length of an encoder-decoder (default n). A ViT's n is fixed (patches + 1).
    """
    if mode not in MODES:
        raise InputError(f"mode={mode!r}: allowed {', '.join(MODES)}")
    name = dtype_name(dtype)
    b, n, m = resolve_sizes(config, batch, seq, src_seq)
    rows = _rows(config, mode, bool(cached), b, n, m, DTYPE_BYTES[name])
    return CostTable(config, mode, bool(cached), b, n, m, name, rows)


def kv_cache_bytes(config: ModelConfig, batch: int, seq: int, src_seq: int | None = None,
                   dtype="float32") -> dict[str, int]:
    """Bytes of the KV cache after n tokens: 2 (K and V) * n * n_kv_heads * d_head * L * bytes, x batch.

    'self' is the decoder's self-attention cache, as generation keeps it: a layer with a sliding window W
    (Mistral; Gemma's all but every global_every-th) holds min(n, W) positions (KVCache.for_model(bounded=True)),
    so a windowed model's cache stops growing. 'cross' is the encoder-decoder's cross-attention K, V over the m
    source tokens. Encoders and ViTs keep no cache (both 0).
    """
    element = DTYPE_BYTES[dtype_name(dtype)]
    if config.topology not in ("decoder", "encoder-decoder"):
        return {"self": 0, "cross": 0}
    b, n, m = resolve_sizes(config, batch, seq, src_seq)
    layers = config.n_layers if config.topology == "decoder" else config.decoder_layers
    per_layer = 2 * config.kv_heads * config.head_dim * element  # K and V of one token, one layer
    stored = sum(min(n, config.sliding_window) if config.sliding_layer(i) else n for i in range(layers))
    return {"self": b * stored * per_layer, "cross": b * m * per_layer * layers if m is not None else 0}


def forward_flops(config: ModelConfig, batch: int, seq: int | None, src_seq: int | None = None) -> int:
    """Matrix-product FLOPs of one full forward (the 'model FLOPs' of MFU); elementwise work excluded."""
    return cost_table(config, batch, seq, src_seq, mode="forward").matmul_flops


def training_flops(config: ModelConfig, batch: int, seq: int | None, src_seq: int | None = None) -> int:
    """Matrix-product FLOPs of one training step (forward + backward = 3x forward, see the module docstring)."""
    return cost_table(config, batch, seq, src_seq, mode="train").matmul_flops


def training_flops_per_token(config: ModelConfig, seq: int | None, src_seq: int | None = None) -> float:
    """Training FLOPs per token of a length-n sequence: training_flops(b=1) / n.

    For a decoder this is exactly 6*N + 12*L*n*(h*d_k), with N the parameters every token multiplies by
    (see `matmul_parameters`: block matrices plus the LM-head matrix, embedding lookups and biases excluded).
    For an encoder-decoder it is per target token (the m source tokens' cost included); for a ViT per patch token.
    """
    table = cost_table(config, 1, seq, src_seq, mode="train")
    return table.matmul_flops / table.seq


def matmul_parameters(config: ModelConfig) -> int:
    """N of the 6N rule: weights that every token multiplies by (attention and FFN matrices, LM head matrix).

    The token embedding is a lookup (no FLOPs); a tied LM head still costs 2*V*d per token, so its matrix counts
    here once. Biases, norms and positions are left out (they add, they do not multiply).
    """
    d, ff, qw, kvw = config.d_model, config.d_ff, config.n_heads * config.head_dim, config.kv_heads * config.head_dim
    block = d * (qw + 2 * kvw) + qw * d + d * ff * (2 if config.gated else 1) + ff * d
    total = config.n_layers * block
    if config.topology == "encoder-decoder":
        total += config.decoder_layers * (block + d * qw + qw * d)  # cross Q and W_O run per target token
    if config.head == "lm" or config.topology == "encoder-decoder":
        total += config.vocab_size * d + (d * d if config.lm_head_transform else 0)
    return total


def closed_form_training_flops_per_token(config: ModelConfig, seq: int) -> int:
    """6*N + 12*L*n*(h*d_k): the usual rule (PaLM appendix B, nanoGPT's estimate_mfu), N = matmul_parameters.

    12*L*n*d is the attention term: Q K^T and P V take 2*n*d FLOPs each per token and layer, x3 for training.
    """
    attn_width = config.n_heads * config.head_dim
    layers = config.total_layers
    return 6 * matmul_parameters(config) + 12 * layers * seq * attn_width
