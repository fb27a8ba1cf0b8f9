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
    placement = {
        "pre": ("pre-norm", "the norm sits before each sublayer and the residual stream is never normalised (a final "
                            "norm closes the stack)"),
        "sandwich": ("sandwich norms", "a norm before each sublayer and another on its output before the residual "
                                       "add: four norms per block (Gemma 2 and 3)"),
        "output": ("norms on each sublayer's output", "the sublayer reads the raw residual stream and its output is "
                                                      "normalised before the residual add (OLMo 2)"),
    }
    name, why = placement.get(cfg.norm_placement, (
        "post-norm", "the norm comes after each residual add, as in the original Transformer and BERT"))
    out.append({"name": name, "why": why})
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
        out.append({"name": "biases on W_Q, W_K, W_V only" if cfg.attn_qkv_bias else "no biases",
                    "why": "b_Q, b_K, b_V and no other bias (Qwen2)" if cfg.attn_qkv_bias else
                    "the linear maps hold matrices only (no b_1, b_2, …)"})
    return out + block_options(cfg)


def block_options(cfg) -> list[dict[str, str]]:
    """The options the newer open decoders add to the block (Qwen, Gemma, Phi-3, GPT-NeoX, OLMo 2, Mistral), each
    named with what it does to the computation."""
    out = []
    if cfg.qk_norm != "none":
        out.append({"name": f"q/k norms ({'per head' if cfg.qk_norm == 'head' else 'over all heads'})",
                    "why": "q and k are RMS-normalised before RoPE, which keeps the scores' size in check"})
    if cfg.parallel_residual:
        out.append({"name": "parallel attention and feed-forward", "why": "both sublayers read the block's input: "
                    "x + Attn(Norm1(x)) + FFN(Norm2(x))"})
    if cfg.position == "rope" and cfg.rotary_dim:
        out.append({"name": f"partial RoPE ({cfg.rotary_dim} of {cfg.head_dim} features)",
                    "why": "only the first features of each head are turned; the rest carry no position"})
    if cfg.rope_scaling:
        out.append({"name": f"RoPE scaling ({cfg.rope_scaling.get('type')})",
                    "why": "the rotation frequencies are stretched for contexts longer than the pre-training one"})
    if cfg.rope_local_theta is not None:
        out.append({"name": f"local RoPE base {cfg.rope_local_theta:g}", "why": f"the sliding-window layers turn "
                    f"at base {cfg.rope_local_theta:g}, the global ones at {cfg.rope_theta:g}"})
    if cfg.sliding_window:
        every = f"; one layer in {cfg.global_every} sees every position" if cfg.global_every else ""
        out.append({"name": f"sliding window ({cfg.sliding_window} keys)", "why": f"each query sees only the last "
                    f"{cfg.sliding_window} positions, itself included{every}; the KV cache keeps no more"})
    if cfg.attn_scale is not None:
        out.append({"name": f"query scale {cfg.attn_scale:.4g}", "why": "scores are q·k times this, not "
                    f"1/sqrt(d_head) = {cfg.head_dim ** -0.5:.4g}"})
    if cfg.attn_softcap is not None:
        out.append({"name": f"attention soft cap {cfg.attn_softcap:g}", "why": "scores become cap · tanh(score / "
                    "cap) before the softmax: none can exceed the cap"})
    if cfg.logit_softcap is not None:
        out.append({"name": f"logit soft cap {cfg.logit_softcap:g}", "why": "the output logits become cap · "
                    "tanh(logit / cap)"})
    if cfg.scale_embeddings:
        out.append({"name": "embeddings times sqrt(d_model)", "why": f"token vectors are multiplied by "
                    f"{cfg.d_model ** 0.5:.4g} before the first block"})
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
