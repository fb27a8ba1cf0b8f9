"""Parameter counts: measured from the built model, beside the seeds' closed form V*d + L*d + N*12*d^2.

The closed form keeps the dominant terms: token embeddings V*d, learned positions L*d (0 for sinusoidal and
relative schemes), and per layer 4d^2 for W_Q, W_K, W_V, W_O plus 8d^2 for an FFN with d_ff = 4d. It
neglects biases, norms, segment embeddings and heads; `parameter_table` itemises exactly those.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from attnlab.build import build_model
from attnlab.config import AnyConfig, DualEncoderConfig, ModelConfig


def _lm_head_built(config: ModelConfig) -> bool:
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
    lm_head = _lm_head_built(config)
    vit = config.topology == "vit"
    gap: list[tuple[str, int]] = [
        ("attention shapes (h*d_k != d, grouped K,V)", n_self * (d * (qw + 2 * kvw) + qw * d - 4 * d * d)),
        ("FFN shapes (d_ff != 4d, gated)", n_self * (d * up + ff * d - 8 * d * d)),
        ("cross-attention matrices", n_cross * (d * qw + d * 2 * kvw + qw * d)),
    ]
    if config.bias:
        gap.append(("biases", n_self * (qw + 2 * kvw + d + up + d) + n_cross * (qw + 2 * kvw + d)))
    n_norms = 2 * n_self + n_cross + stacks * (int(config.embedding_norm) + int(config.has_final_norm))
    n_norms += int(lm_head and config.lm_head_transform)
    gap.append(("norms", n_norms * norm_size))
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
    if (config.topology == "encoder" and config.head in ("classifier", "token_classifier")) or \
            (vit and config.head == "classifier"):
        gap.append(("classifier", d * config.n_classes + config.n_classes))
    return [(name, count) for name, count in gap if count]


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


_COMPONENTS = [  # (component, predicate on the parameter name) - first match wins
    ("token embeddings (V*d)", lambda n: n in ("tokens.weight", "source_tokens.weight")),
    ("positions (L*d)", lambda n: "positions" in n or n.endswith("cls_token") or "rel_bias" in n),
    ("token types", lambda n: "token_types" in n),
    ("patch embedding", lambda n: n.startswith("patches.")),
    ("attention W_Q,W_K,W_V,W_O", lambda n: (".attn." in n or ".cross_attn." in n) and n.endswith("weight")),
    ("attention biases", lambda n: (".attn." in n or ".cross_attn." in n) and n.endswith("bias")),
    ("feed-forward W_1,W_2", lambda n: ".ffn." in n and n.endswith("weight")),
    ("feed-forward biases", lambda n: ".ffn." in n and n.endswith("bias")),
    ("norms", lambda n: "norm" in n),
    ("dual-encoder projections + temperature", lambda n: n in ("proj_a.weight", "proj_b.weight", "logit_scale")),
    ("heads (LM/MLM/pooler/classifier)", lambda n: True),
]


@dataclass
class ParameterTable:
    rows: list[tuple[str, int]]  # (component, measured count), tied matrices counted once
    total: int
    formula: int
    gap: list[tuple[str, int]] = field(default_factory=list)  # formula_gap: what the formula leaves out

    @property
    def relative_difference(self) -> float:
        return (self.total - self.formula) / self.formula if self.formula else float("nan")

    def render(self) -> str:
        width = max(len(r[0]) for r in self.rows) + 2
        lines = [f"{'component':<{width}}{'parameters':>16}"]
        lines += [f"{name:<{width}}{count:>16,}" for name, count in self.rows]
        lines.append(f"{'total (measured)':<{width}}{self.total:>16,}")
        lines.append(f"{'V*d + L*d + N*12*d^2':<{width}}{self.formula:>16,}")
        lines.append(f"{'relative difference':<{width}}{self.relative_difference:>+15.2%}")
        if self.gap:
            lines.append("the difference, term by term (from the config; adds up to measured - formula):")
            lines += [f"  {name:<{width + 14}}{count:>+16,}" for name, count in self.gap]
        return "\n".join(lines)


def _dual_gap(config: DualEncoderConfig) -> list[tuple[str, int]]:
    gap = [(f"{tower}: {name}", count) for tower, c in (("tower_a", config.tower_a), ("tower_b", config.tower_b))
           for name, count in formula_gap(c)]
    gap.append(("projections to the joint space + temperature",
                (config.tower_a.d_model + config.tower_b.d_model) * config.embed_dim + 1))
    return gap


def parameter_table(config: AnyConfig) -> ParameterTable:
    """Count every parameter of the model `config` builds (on the meta device: no memory is used)."""
    model = build_model(config, device="meta")
    counts: dict[str, int] = {name: 0 for name, _ in _COMPONENTS}
    seen: set[int] = set()
    for name, param in model.named_parameters():  # named_parameters skips the tied duplicate
        if id(param) in seen:
            continue
        seen.add(id(param))
        # strip the stack prefix of encoder-decoders and the tower prefix of dual encoders so the predicates see
        # "blocks.0.attn..." alike
        short = name.split(".", 1)[1] if name.startswith(("encoder.", "decoder.", "tower_a.", "tower_b.")) else name
        for component, match in _COMPONENTS:
            if match(short):
                counts[component] += param.numel()
                break
    rows = [(c, n) for c, n in counts.items() if n]
    gap = _dual_gap(config) if isinstance(config, DualEncoderConfig) else formula_gap(config)
    return ParameterTable(rows=rows, total=sum(n for _, n in rows), formula=closed_form(config), gap=gap)


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
