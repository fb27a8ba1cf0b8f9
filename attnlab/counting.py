"""Parameter counts: measured from the built model, beside the seeds' closed form V*d + L*d + N*12*d^2.

The closed form keeps the dominant terms: token embeddings V*d, learned positions L*d (0 for sinusoidal and
relative schemes), and per layer 4d^2 for W_Q, W_K, W_V, W_O plus 8d^2 for an FFN with d_ff = 4d. It
neglects biases, norms, segment embeddings and heads; `parameter_table` itemises exactly those.

The formulas (the seeds' one, its gap term by term, and the exact count) need no torch and live in
attnlab.parameter_count, so that `attnlab models` can size every model without importing torch; they are
re-exported here beside the measured table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from attnlab.build import build_model
from attnlab.config import AnyConfig, DualEncoderConfig
from attnlab.parameter_count import closed_form, dual_gap, exact_parameters, formula_gap

__all__ = ["ParameterTable", "closed_form", "count_parameters", "exact_parameters", "formula_gap", "parameter_table"]


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
    gap = dual_gap(config) if isinstance(config, DualEncoderConfig) else formula_gap(config)
    return ParameterTable(rows=rows, total=sum(n for _, n in rows), formula=closed_form(config), gap=gap)


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
