"""Parameter counts: measured from the built model, beside the seeds' closed form V*d + L*d + N*12*d^2.

The closed form keeps the dominant terms: token embeddings V*d, learned positions L*d (0 for sinusoidal and
relative schemes), and per layer 4d^2 for W_Q, W_K, W_V, W_O plus 8d^2 for an FFN with d_ff = 4d. It
neglects biases, norms, segment embeddings and heads; `parameter_table` itemises exactly those.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.config import ModelConfig


def closed_form(config: ModelConfig) -> int:
    """V*d + L*d + N*12*d^2 (the seeds' formula; N counts encoder and decoder layers alike)."""
    d = config.d_model
    v = config.vocab_size if config.topology != "vit" else 0
    L = config.max_len if config.position == "learned" and config.topology != "vit" else 0
    if config.topology == "vit" and config.position == "learned":
        L = config.n_patches + 1
    n = config.n_layers + (config.decoder_layers if config.topology == "encoder-decoder" else 0)
    return v * d + L * d + n * 12 * d * d


_COMPONENTS = [  # (component, predicate on the parameter name) - first match wins
    ("token embeddings (V*d)", lambda n: n == "tokens.weight"),
    ("positions (L*d)", lambda n: "positions" in n or n.endswith("cls_token") or "rel_bias" in n),
    ("token types", lambda n: "token_types" in n),
    ("patch embedding", lambda n: n.startswith("patches.")),
    ("attention W_Q,W_K,W_V,W_O", lambda n: (".attn." in n or ".cross_attn." in n) and n.endswith("weight")),
    ("attention biases", lambda n: (".attn." in n or ".cross_attn." in n) and n.endswith("bias")),
    ("feed-forward W_1,W_2", lambda n: ".ffn." in n and n.endswith("weight")),
    ("feed-forward biases", lambda n: ".ffn." in n and n.endswith("bias")),
    ("norms", lambda n: "norm" in n),
    ("heads (LM/MLM/pooler/classifier)", lambda n: True),
]


@dataclass
class ParameterTable:
    rows: list[tuple[str, int]]  # (component, measured count), tied matrices counted once
    total: int
    formula: int

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
        return "\n".join(lines)


def parameter_table(config: ModelConfig) -> ParameterTable:
    """Count every parameter of the model `config` builds (on the meta device: no memory is used)."""
    from attnlab.build import build_model

    model = build_model(config, device="meta")
    counts: dict[str, int] = {name: 0 for name, _ in _COMPONENTS}
    seen: set[int] = set()
    for name, param in model.named_parameters():  # named_parameters skips the tied duplicate
        if id(param) in seen:
            continue
        seen.add(id(param))
        # strip the stack prefix of encoder-decoders so the predicates see "blocks.0.attn..." alike
        short = name.split(".", 1)[1] if name.startswith(("encoder.", "decoder.")) else name
        for component, match in _COMPONENTS:
            if match(short):
                counts[component] += param.numel()
                break
    rows = [(c, n) for c, n in counts.items() if n]
    return ParameterTable(rows=rows, total=sum(n for _, n in rows), formula=closed_form(config))


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
