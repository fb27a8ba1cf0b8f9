"""Parameter counts from a config alone, in closed form: no torch is imported and no model is built.

`attnlab models` prints a size for every model it lists. Building each one on the meta device needs torch, whose
import alone takes over a second, so `exact_parameters` adds up, matrix by matrix, what each module of
attnlab.models allocates. The built model's num_parameters() stays the reference: tests/test_startup.py checks
the two agree on every preset, every shipped checkpoint and a random sweep of configs. A config this module does
not know (a topology added later) gets None, and the caller builds the model instead.

The seeds' approximate formula V*d + L*d + N*12*d^2 (`closed_form`) and what it leaves out, term by term
(`formula_gap`), live here too: `attnlab params` (attnlab.counting) prints them beside the measured table.
"""

from __future__ import annotations

from attnlab.config import AnyConfig, DualEncoderConfig, ModelConfig


# ------------------------------------------------------------------------------------------------ exact count
def _linear(n_in: int, n_out: int, bias: bool) -> int:
    """nn.Linear(n_in, n_out): an (n_out, n_in) matrix and, with bias, n_out more."""
    return n_in * n_out + (n_out if bias else 0)


def _norm(config: ModelConfig) -> int:
    """LayerNorm keeps a gain and a shift (2d), RMSNorm a gain only (d); config.bias does not change either."""
    return (2 if config.norm == "layernorm" else 1) * config.d_model


def _attention(config: ModelConfig, cross: bool) -> int:
    """W_Q, W_K, W_V (one stacked matrix for self-attention; Q and KV apart for cross) and W_O.

    Grouped-query attention narrows K and V to kv_heads * d_head; the split of the stacked matrix does not change
    the count, so self- and cross-attention hold the same number of parameters except for the bias split."""
    d, bias = config.d_model, config.bias
    q, kv = config.n_heads * config.head_dim, config.kv_heads * config.head_dim
    if cross:
        return _linear(d, q, bias) + _linear(d, 2 * kv, bias) + _linear(q, d, bias)
    return _linear(d, q + 2 * kv, config.attn_qkv_bias) + _linear(q, d, bias) + _qk_norms(config)


def _qk_norms(config: ModelConfig) -> int:
    """The q/k norms' gains: d_head each for per-head norms (shared by the heads), q's and k's whole width for
    norms over all heads' features."""
    if config.qk_norm == "head":
        return 2 * config.head_dim
    if config.qk_norm == "all":
        return (config.n_heads + config.kv_heads) * config.head_dim
    return 0


def _feedforward(config: ModelConfig) -> int:
    """W_1 (a gated FFN stacks W_gate on it: twice d_ff rows) and W_2."""
    up = config.d_ff * (2 if config.gated else 1)
    return _linear(config.d_model, up, config.bias) + _linear(config.d_ff, config.d_model, config.bias)


def _lora(config: ModelConfig) -> int:
    """A block's LoRA pairs (config.lora_rank r; encoders only): r * (in + out) for W_QKV, W_O, W_1 and W_2."""
    d, qw, kvw = config.d_model, config.n_heads * config.head_dim, config.kv_heads * config.head_dim
    up = config.d_ff * (2 if config.gated else 1)
    return config.lora_rank * ((d + qw + 2 * kvw) + (qw + d) + (d + up) + (config.d_ff + d))


def _block(config: ModelConfig, cross: bool) -> int:
    """Self-attention + its norm, cross-attention + its norm (decoder of an encoder-decoder), FFN + its norm; a
    sandwich keeps two norms per sub-layer; LoRA pairs when the config has them."""
    per_sublayer = _norm(config) * (2 if config.norm_placement == "sandwich" else 1)
    own = _attention(config, cross=False) + _feedforward(config) + 2 * per_sublayer + _lora(config)
    return own + (_attention(config, cross=True) + per_sublayer if cross else 0)


def _stack(config: ModelConfig, n_layers: int, rows: int, cross: bool = False) -> int:
    """attnlab.models.stack.Stack: positions, segment embeddings, embedding norm, the blocks, a final norm.

    rows: the positions a learned table holds (max_len; a ViT's patches + [CLS]); sinusoidal, RoPE and ALiBi
    tables are fixed buffers, not parameters; T5 keeps one learned bias per bucket and head in each stack."""
    d = config.d_model
    total = n_layers * _block(config, cross)
    if config.position == "learned":
        total += (rows + config.position_offset) * d
    elif config.position == "t5":
        total += config.t5_num_buckets * config.n_heads
    total += config.type_vocab_size * d
    total += _norm(config) * (int(config.embedding_norm) + int(config.has_final_norm))
    return total


def _lm_head(config: ModelConfig) -> int:
    """LMHead: the BERT transform (dense + norm), the vocabulary matrix unless tied to the tokens, its bias."""
    d, vocab = config.d_model, config.vocab_size
    total = (_linear(d, d, True) + _norm(config)) if config.lm_head_transform else 0
    total += 0 if config.tie_embeddings else vocab * d
    return total + (vocab if config.lm_head_bias else 0)


def _classifier(config: ModelConfig) -> int:
    return _linear(config.d_model, config.n_classes, True)


def _decoder(config: ModelConfig) -> int:
    """Decoder: tokens, one causal stack and always an LM head (whatever config.head says)."""
    return config.vocab_size * config.d_model + _stack(config, config.n_layers, config.max_len) + _lm_head(config)


def _encoder(config: ModelConfig) -> int:
    """Encoder: tokens, one stack, then the heads config.head and config.pooler ask for."""
    total = config.vocab_size * config.d_model + _stack(config, config.n_layers, config.max_len)
    total += _lm_head(config) if config.head == "lm" else 0
    total += _linear(config.d_model, config.d_model, True) if config.pooler else 0
    total += _linear(config.d_model, 2, True) if config.nsp else 0
    return total + (_classifier(config) if config.head in ("classifier", "token_classifier") else 0)


def _encoder_decoder(config: ModelConfig) -> int:
    """Target tokens (and source tokens of their own unless shared), two stacks (the decoder's blocks with
    cross-attention), an LM head."""
    tokens = config.vocab_size * config.d_model * (1 if config.shared_embeddings else 2)
    stacks = _stack(config, config.n_layers, config.max_len) + \
        _stack(config, config.decoder_layers, config.max_len, cross=True)
    return tokens + stacks + _lm_head(config)


def _vit(config: ModelConfig) -> int:
    """Patch embedding (a P x P convolution with bias), the [CLS] vector, one stack over patches + [CLS], and a
    classifier only for head="classifier"."""
    d = config.d_model
    patches = _linear(config.n_channels * config.patch_size ** 2, d, True)
    total = patches + d + _stack(config, config.n_layers, config.n_patches + 1)
    return total + (_classifier(config) if config.head == "classifier" else 0)


_TOPOLOGIES = {"decoder": _decoder, "encoder": _encoder, "encoder-decoder": _encoder_decoder, "vit": _vit}
_TOWERS = ("encoder", "vit")  # what attnlab.models.dual_encoder builds a tower from


def exact_parameters(config: AnyConfig) -> int | None:
    """The number of distinct parameters (a tied matrix once) of the model `config` builds: the same number as
    build_model(config, device="meta").num_parameters(), without torch.

    None when the config is not one this count knows (an unknown topology or config type): build the model on
    the meta device then (attnlab.counting.parameter_table)."""
    if isinstance(config, DualEncoderConfig):
        towers = [exact_parameters(c) if c.topology in _TOWERS else None for c in config.towers]
        if None in towers:
            return None
        projections = (config.tower_a.d_model + config.tower_b.d_model) * config.embed_dim
        return sum(towers) + projections + 1  # + the learned temperature
    if not isinstance(config, ModelConfig) or config.topology not in _TOPOLOGIES:
        return None
    return _TOPOLOGIES[config.topology](config)


# ---------------------------------------------------------------------------------------- the seeds' formula
def lm_head_built(config: ModelConfig) -> bool:
    """Decoders and encoder-decoders always build an LMHead; encoders only for head='lm'; ViTs never."""
    return config.topology in ("decoder", "encoder-decoder") or (config.topology == "encoder" and config.head == "lm")


def formula_gap(config: ModelConfig) -> list[tuple[str, int]]:
    """What V*d + L*d + N*12*d^2 leaves out, term by term, computed from the config alone.

    closed_form(config) + sum of these = the built model's exact parameter count (tested on every preset).
    The N*12*d^2 term assumes W_Q, W_K, W_V, W_O of d x d (4d^2) and an FFN with d_ff = 4d (8d^2); the rows
    below also absorb where a config departs from those shapes (GQA, h*d_k != d, d_ff != 4d, gated FFN).
    """
    d, V, ff = config.d_model, config.vocab_size, config.d_ff
    qw, kvw = config.n_heads * config.head_dim, config.kv_heads * config.head_dim
    up = ff * (2 if config.gated else 1)
    encdec = config.topology == "encoder-decoder"
    n_cross = config.decoder_layers if encdec else 0
    n_self = config.n_layers + n_cross
    stacks = 2 if encdec else 1
    norm_size = 2 * d if config.norm == "layernorm" else d
    lm_head = lm_head_built(config)
    vit = config.topology == "vit"
    gap: list[tuple[str, int]] = [
        ("attention shapes (h*d_k != d, grouped K,V)", n_self * (d * (qw + 2 * kvw) + qw * d - 4 * d * d)),
        ("FFN shapes (d_ff != 4d, gated)", n_self * (d * up + ff * d - 8 * d * d)),
        ("cross-attention matrices", n_cross * (d * qw + d * 2 * kvw + qw * d)),
    ]
    qkv_biases = n_self * (qw + 2 * kvw) if config.attn_qkv_bias else 0  # Qwen2: these without the others
    if config.bias:
        gap.append(("biases", qkv_biases + n_self * (d + up + d) + n_cross * (qw + 2 * kvw + d)))
    elif qkv_biases:
        gap.append(("biases on W_Q, W_K, W_V", qkv_biases))
    n_norms = (2 * n_self + n_cross) * (2 if config.norm_placement == "sandwich" else 1)
    n_norms += stacks * (int(config.embedding_norm) + int(config.has_final_norm))
    n_norms += int(lm_head and config.lm_head_transform)
    gap.append(("norms", n_norms * norm_size))
    if config.qk_norm != "none":
        gap.append(("q/k norms", n_self * _qk_norms(config)))
    if config.lora_rank:
        gap.append(("LoRA pairs", n_self * _lora(config)))
    if config.position == "learned":
        rows = config.n_patches + 1 if vit else config.max_len
        gap.append(("positions beyond L*d (offset rows, second stack)",
                    stacks * (rows + config.position_offset) * d - rows * d))
    if config.position == "t5":
        gap.append(("T5 relative-position buckets", stacks * config.t5_num_buckets * config.n_heads))
    gap.append(("token types", stacks * config.type_vocab_size * d))
    if encdec and not config.shared_embeddings:
        gap.append(("separate source-token embeddings", V * d))
    if vit:
        gap.append(("patch embedding + [CLS]", config.n_channels * config.patch_size ** 2 * d + d + d))
    if lm_head:
        gap.append(("LM head: untied matrix, bias, transform",
                    (0 if config.tie_embeddings else V * d) + (V if config.lm_head_bias else 0)
                    + (d * d + d if config.lm_head_transform else 0)))
    if config.topology == "encoder" and config.pooler:
        gap.append(("pooler", d * d + d))
    if config.topology == "encoder" and config.nsp:
        gap.append(("next-sentence classifier", 2 * d + 2))
    if (config.topology == "encoder" and config.head in ("classifier", "token_classifier")) or \
            (vit and config.head == "classifier"):
        gap.append(("classifier", d * config.n_classes + config.n_classes))
    return [(name, count) for name, count in gap if count]


def dual_gap(config: DualEncoderConfig) -> list[tuple[str, int]]:
    """formula_gap of each tower, plus the projections into the joint space and the temperature."""
    gap = [(f"{tower}: {name}", count) for tower, c in (("tower_a", config.tower_a), ("tower_b", config.tower_b))
           for name, count in formula_gap(c)]
    gap.append(("projections to the joint space + temperature",
                (config.tower_a.d_model + config.tower_b.d_model) * config.embed_dim + 1))
    return gap


def closed_form(config: AnyConfig) -> int:
    """V*d + L*d + N*12*d^2 (the seeds' formula; N counts encoder and decoder layers alike; a dual encoder's
    towers each have their own)."""
    if isinstance(config, DualEncoderConfig):
        return sum(closed_form(c) for c in config.towers)
    d = config.d_model
    v = config.vocab_size if config.topology != "vit" else 0
    L = config.max_len if config.position == "learned" and config.topology != "vit" else 0
    if config.topology == "vit" and config.position == "learned":
        L = config.n_patches + 1
    n = config.total_layers
    return v * d + L * d + n * 12 * d * d
