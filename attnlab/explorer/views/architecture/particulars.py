"""What is particular to one model, and why its closed-form count V·d + L·d + N·12d² differs from its real count.

The seeds' formula assumes d × d matrices for W_Q, W_K, W_V, W_O, an FFN of two matrices with d_ff = 4d, and
nothing else. A real model departs from that in named ways: grouped-query attention narrows W_K and W_V, a gated
FFN adds a third matrix (and usually shrinks d_ff to pay for it), a head tied to the embeddings adds nothing, a norm
holds d or 2d numbers, biases add a vector per matrix. attnlab.parameter_count.formula_gap adds those up; here its
two shape rows are split further (W_Q/W_O apart from W_K/W_V, the third matrix apart from d_ff ≠ 4d) and each row
gets one sentence, so a learner sees where SmolLM2's 147,750,912 becomes 134,515,008. The rows add up exactly
(tests/explorer/test_forward_pass.py, on every preset).
"""

from __future__ import annotations

from typing import Any

from attnlab.parameter_count import closed_form, formula_gap, lm_head_built

HOW = {  # formula_gap's other rows, each in one phrase
    "cross-attention matrices": "W_Q, W_K, W_V, W_O of each decoder layer's cross-attention",
    "biases": "a vector beside each matrix: b_Q, b_K, b_V, b_O, b_1, b_2 in every layer",
    "biases on W_Q, W_K, W_V": "b_Q, b_K, b_V in every layer (no other biases)",
    "q/k norms (a gain per head feature)": "a d_head gain for q and one for k in every layer",
    "positions beyond L*d (offset rows, second stack)": "rows the L·d term leaves out: an offset, a second stack's "
                                                        "table, or a ViT's patches + 1 rows in place of L",
    "T5 relative-position buckets": "a learned bias per (distance bucket, head) in each stack",
    "token types": "the segment table, type_vocab_size × d_model",
    "separate source-token embeddings": "V × d_model: the encoder's own table",
    "patch embedding + [CLS]": "the (channels · P²) × d_model patch projection, its bias and the [CLS] vector",
    "LM head: untied matrix, bias, transform": "what the head adds beyond the embedding table",
    "pooler": "d_model × d_model + d_model, over the [CLS] vector",
    "next-sentence classifier": "2 × d_model + 2",
    "classifier": "d_model × n_classes + n_classes, over the [CLS] vector",
}


def features(cfg) -> list[dict[str, str]]:
    """The model's choices a learner should notice, each with the one-line reason it matters."""
    out = []
    if cfg.norm == "rmsnorm":
        out.append({"name": "RMSNorm", "why": "rescales each vector by its root mean square with a gain γ only: "
                    "no mean subtraction and no shift β, so d numbers per norm instead of LayerNorm's 2d"})
    else:
        out.append({"name": "LayerNorm", "why": "subtracts each vector's mean, divides by its standard deviation, "
                    "then applies a gain γ and a shift β: 2d numbers per norm"})
    out.append({"name": "pre-norm" if cfg.norm_placement == "pre" else "post-norm",
                "why": "the norm sits before each sublayer and the residual stream is never normalised (a final "
                       "norm closes the stack)" if cfg.norm_placement == "pre" else
                       "the norm comes after each residual add, as in the original Transformer and BERT"})
    positions = {
        "rope": "no position vectors are added; Q and K are turned by an angle proportional to the position, "
                "so a score depends on the offset between two tokens; no parameters",
        "learned": f"a table of {cfg.max_len} rows × d_model added to the token vectors "
                   "(the L·d term of the formula)",
        "sinusoidal": "fixed sines and cosines added to the token vectors; no parameters",
        "alibi": "a bias −slope·|i − j| added to the scores; no parameters",
        "t5": "a learned bias per (distance bucket, head) added to the scores",
    }
    out.append({"name": {"rope": "RoPE", "learned": "learned positions", "sinusoidal": "sinusoidal positions",
                         "alibi": "ALiBi", "t5": "T5 relative bias"}.get(cfg.position, cfg.position),
                "why": positions.get(cfg.position, cfg.position)})
    if cfg.kv_heads != cfg.n_heads:
        group = cfg.n_heads // cfg.kv_heads
        out.append({"name": f"grouped-query attention ({cfg.n_heads} query heads, {cfg.kv_heads} K/V heads)",
                    "why": f"each K/V head serves {group} query heads, so W_K and W_V are {group}× narrower and the "
                           f"KV cache {group}× smaller"})
    if cfg.gated:
        out.append({"name": f"gated feed-forward ({cfg.activation})",
                    "why": "three matrices (W_gate, W_up, W_2) instead of two; the gate, act(x W_gate), multiplies "
                           "x W_up feature by feature"})
    if lm_head_built(cfg):
        out.append({"name": "tied head" if cfg.tie_embeddings else "separate output matrix",
                    "why": "the output projection is W_E^T: the embedding table read backwards, no new parameters"
                    if cfg.tie_embeddings else "the head has its own V × d_model matrix"})
    if not cfg.bias:
        out.append({"name": "no biases", "why": "the linear maps hold matrices only (no b_1, b_2, …)"})
    return out


def count_gap(cfg, measured: int) -> dict[str, Any]:
    """The closed form, the measured count, and the rows between them: closed form + Σ rows = measured.

    `measured` is the built model's count (explorer/server/common.param_count); formula_gap computes the same
    total from the config, and the last row says so if they ever disagree rather than hiding it."""
    d, n_self = cfg.d_model, cfg.n_layers + (cfg.decoder_layers if cfg.topology == "encoder-decoder" else 0)
    qw, kvw = cfg.n_heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    third = n_self * d * cfg.d_ff if cfg.gated else 0
    rows = [("W_Q and W_O not d × d (n_heads · d_head ≠ d_model)", n_self * (2 * d * qw - 2 * d * d),
             "the formula counts 2d² for them"),
            ("grouped K/V: W_K and W_V narrower", n_self * (2 * d * kvw - 2 * d * d),
             f"{n_self} layers × 2 × d_model × (n_kv_heads · d_head − d_model) = "
             f"{n_self} × 2 × {d} × ({kvw} − {d})"),
            ("the gated FFN's third matrix (W_gate)", third,
             f"{n_self} layers × d_model × d_ff = {n_self} × {d} × {cfg.d_ff}"),
            ("d_ff ≠ 4 d_model", n_self * 2 * d * (cfg.d_ff - 4 * d),
             f"{n_self} layers × 2 × d_model × (d_ff − 4 d_model) = {n_self} × 2 × {d} × ({cfg.d_ff} − {4 * d})")]
    for name, count in formula_gap(cfg):
        if name.startswith(("attention shapes", "FFN shapes")):
            continue  # split into the four rows above
        if name == "norms":
            size = 2 * d if cfg.norm == "layernorm" else d
            rows.append((f"norms ({'LayerNorm: γ and β' if size == 2 * d else 'RMSNorm: γ only, no bias'})", count,
                         f"{count // size} norms × {size}"))
        else:
            rows.append((name, count, HOW.get(name, "")))
    if lm_head_built(cfg) and cfg.tie_embeddings:
        rows.append(("tied head (W_out = W_E^T)", 0, f"an untied one would add V × d_model = {cfg.vocab_size * d:,}"))
    if cfg.position in ("rope", "sinusoidal", "alibi"):
        label = {"rope": "RoPE", "sinusoidal": "sinusoidal", "alibi": "ALiBi"}[cfg.position]
        rows.append((f"{label} positions", 0, "no parameters: the formula's L·d term is 0 here"))
    formula = closed_form(cfg)
    rows = [r for r in rows if r[1] or "would" in r[2] or "no parameters" in r[2]]
    rest = measured - formula - sum(r[1] for r in rows)
    if rest:
        rows.append(("not itemised (this model departs from its config)", rest, ""))
    return {"closed_form": formula, "measured": measured,
            "rows": [{"term": t, "params": c, "how": h} for t, c, h in rows]}
