"""Views of a model's shape: what it is, its block diagram data, the parameter calculator, the famous-models
table and the inference walk-through of the seeds, run live."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.server.common import (
    config_of,
    encode,
    param_count,
    parts_of,
    rounded,
    text_model,
    token_limit,
    token_text,
)
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.views.architecture.particulars import count_gap, features


# ------------------------------------------------------------------------------------------------ models
def list_models(registry) -> list[dict[str, Any]]:
    return registry.list()


def describe(lm: Loaded) -> dict[str, Any]:
    cfg = config_of(lm)
    return {"id": lm.id, "label": lm.label, "topology": cfg.topology, "illustration": lm.illustration,
            "n_layers": cfg.n_layers, "decoder_layers": cfg.decoder_layers, "n_heads": cfg.n_heads,
            "d_model": cfg.d_model, "d_head": cfg.head_dim, "vocab_size": cfg.vocab_size,
            "token_limit": token_limit(lm) if cfg.topology != "vit" else cfg.n_patches + 1,
            "parts": list(parts_of(cfg)), "has_mlm": cfg.topology == "encoder" and cfg.head == "lm",
            "has_tokenizer": lm.tokenizer is not None,
            "mask_token": lm.tokenizer.special.get("mask") if lm.tokenizer is not None else None,
            "examples": _examples(lm), "known_words": _known_words(lm), "truncation": _truncation(lm)}


def _truncation(lm: Loaded) -> int | None:
    """The tokenizer's own cut-off (MiniLM's tokenizer.json keeps 128 tokens), so the page can say when it cut."""
    hf = getattr(lm.tokenizer, "hf", None) if lm.tokenizer is not None else None
    trunc = getattr(hf, "truncation", None)
    return int(trunc["max_length"]) if isinstance(trunc, dict) and trunc.get("max_length") else None


def _known_words(lm: Loaded) -> list[str] | None:
    """The toy's whole vocabulary (any other word becomes [UNK], a zero vector)."""
    if lm.kind != "toy" and not config_of(lm).extra.get("illustration"):
        return None
    from attnlab.explorer.server.toy_model import WORDS

    return list(WORDS)


def _examples(lm: Loaded) -> list[str]:
    if lm.kind == "toy":
        from attnlab.explorer.server.toy_model import SENTENCES

        return list(SENTENCES)
    cfg = config_of(lm)
    if cfg.topology == "vit":
        return []
    if lm.id.startswith("translate"):
        return ["forty-two", "three hundred and seven", "nine thousand nine hundred"]
    if lm.id.startswith("gpt"):
        return ["The module", "def main():", "the cat sat on the mat"]
    return ["the cat sat on the mat", "The bank near the river overflowed its banks."]


# ------------------------------------------------------------------------------------------ architecture
_PRE_NORM_TEXT = ("Pre-norm: normalises the input of the sublayer above it; that sublayer's output is then added "
                  "to the un-normalised residual stream (the skip path never passes through a norm).")
_GATED_FFN_TEXT = ("Gated feed-forward network ({act}): two projections of each position to d_ff, one through the "
                   "activation, multiplied element by element (the gate), then one projection back: three "
                   "matrices, d -> 2 x d_ff -> d, each position on its own.")
_BLOCK_TEXT = {
    "tokens": "Looks up one learned d_model-vector per token id (V x d table).",
    "positions": "Adds where each token sits; without it attention cannot tell order apart.",
    "patches": "Cuts the image into P x P patches and projects each flattened patch to d_model.",
    "embed_extras": "BERT adds a segment (token-type) vector and normalises the sum before the first block.",
    "attn": "Multi-head self-attention: every token builds a weighted mix of the others' values, "
            "weights softmax(QK^T/sqrt(d_k)). Decoders hide later tokens with the causal mask.",
    "norm1": "Add & Norm: the residual skip keeps the input, the norm keeps the scale stable.",
    "cross_attn": "Cross-attention: queries from the target, keys and values from the encoder's output.",
    "norm_cross": "Add & Norm after cross-attention.",
    "ffn": "Feed-forward network: the same two-layer MLP rewrites each position on its own (d -> d_ff -> d).",
    "norm2": "Add & Norm after the feed-forward network.",
    "final_norm": "Final norm of a pre-LN stack (the residual stream itself is never normalised inside).",
    "head": "Turns the last vectors into what the task needs: next-token or masked-token logits, or classes.",
}


def architecture(lm: Loaded, n: int = 8, text: str | None = None) -> dict[str, Any]:
    """The model's blocks as data for the diagram: what each does, its tensor shapes for n tokens (or for the
    tokens of `text`), its parameters."""
    cfg, model = config_of(lm), lm.model
    if text and cfg.topology != "vit":
        n = len(encode(lm, text)[0])
    if cfg.topology == "vit":
        n = cfg.n_patches + 1
    n = max(1, min(int(n), 4096))
    d, h, dk, ff = cfg.d_model, cfg.n_heads, cfg.head_dim, cfg.d_ff

    kv = cfg.kv_heads
    norm_name = "RMSNorm" if cfg.norm == "rmsnorm" else "LayerNorm"
    pre = cfg.norm_placement == "pre"

    def stack_blocks(stack, name: str, n_layers: int, cross: bool) -> list[dict[str, Any]]:
        """The layer's blocks bottom to top, in the order the model runs them: pre-norm models normalise a
        sublayer's input (norm, then sublayer, then add); post-norm models add, then normalise."""
        blk = stack.blocks[0]
        kv_shape = {"Q": [1, h, n, dk], "K,V": [1, kv, n, dk]} if kv != h else {"Q,K,V": [1, h, n, dk]}
        attn_title = "Masked self-attention" if stack.causal else "Multi-head self-attention"
        sub = [("attn", attn_title, blk.attn, {"x": [1, n, d], **kv_shape, "scores": [1, h, n, n], "out": [1, n, d]},
                "norm1", blk.norm1, "1")]
        if cross:
            sub.append(("cross_attn", "Cross-attention", blk.cross_attn,
                        {"Q": [1, h, n, dk], "K,V": [1, kv, "n_src", dk], "scores": [1, h, n, "n_src"]},
                        "norm_cross", blk.norm_cross, "cross"))
        ffn_shapes = {"gate, up": [1, n, ff], "hidden": [1, n, ff], "out": [1, n, d]} if cfg.gated else \
            {"hidden": [1, n, ff], "out": [1, n, d]}
        sub.append(("ffn", "Feed-forward network", blk.ffn, ffn_shapes, "norm2", blk.norm2, "2"))
        items = []  # listed sublayer first, its norm second; `run_order` (below) says which runs first
        for key, title, mod, shapes, norm_key, norm_mod, label in sub:
            text = _GATED_FFN_TEXT.format(act=cfg.activation) if key == "ffn" and cfg.gated else _BLOCK_TEXT[key]
            items += [(key, title, mod, shapes, text),
                      (norm_key, f"{norm_name} ({label})" if pre else f"Add & {norm_name} ({label})", norm_mod,
                       {"out": [1, n, d]}, _PRE_NORM_TEXT if pre else _BLOCK_TEXT[norm_key])]
        out = []
        for key, title, mod, shapes, text in items:
            if key in ("attn", "cross_attn") and kv != h:
                text += (f" Grouped K/V: {h} query heads share {kv} key/value heads ({h // kv} query heads per "
                         "K/V head), which shrinks the KV cache by the same factor.")
            out.append({"id": f"{name}.{key}", "kind": key, "title": title, "text": text, "shapes": shapes,
                        "params_per_layer": param_count(mod), "n_layers": n_layers,
                        "params": param_count(mod) * n_layers, "norm_placement": cfg.norm_placement})
        return out

    def run_order(layer: list[dict[str, Any]]) -> list[str]:
        """Block ids bottom to top as the model runs them (pre-norm: each norm before its sublayer)."""
        ids = [b["id"] for b in layer]
        if pre:
            for i in range(0, len(ids), 2):
                ids[i], ids[i + 1] = ids[i + 1], ids[i]
        return ids

    def embed_blocks(stack, name: str, tokens: bool = True) -> list[dict[str, Any]]:
        out = []
        if cfg.topology == "vit":
            out.append({"id": f"{name}.patches", "kind": "patches", "title": "Patch embedding + [CLS]",
                        "text": _BLOCK_TEXT["patches"], "shapes": {"pixels": [1, cfg.n_channels, cfg.image_size,
                                                                              cfg.image_size], "out": [1, n, d]},
                        "params": param_count(model.patches) + model.cls_token.numel()})
        elif tokens:  # an encoder-decoder's decoder shares the encoder's table: counted once
            out.append({"id": f"{name}.tokens", "kind": "tokens", "title": "Token embeddings",
                        "text": _BLOCK_TEXT["tokens"], "shapes": {"ids": [1, n], "out": [1, n, d]},
                        "params": param_count(model.tokens)})
        extras = param_count(stack.token_types) + param_count(stack.embed_norm)
        if extras:
            out.append({"id": f"{name}.embed_extras", "kind": "embed_extras", "title": "Segments + embedding norm",
                        "text": _BLOCK_TEXT["embed_extras"], "shapes": {"out": [1, n, d]}, "params": extras})
        pos = stack.positions if stack.positions is not None else (stack.rotary or stack.alibi or stack.rel_bias)
        out.append({"id": f"{name}.positions", "kind": "positions", "title": f"Positions ({cfg.position})",
                    "text": _BLOCK_TEXT["positions"], "shapes": {"out": [1, n, d]}, "params": param_count(pos)})
        return out

    def tail(stack, name: str) -> list[dict[str, Any]]:
        if stack.final_norm is None:
            return []
        return [{"id": f"{name}.final_norm", "kind": "final_norm", "title": "Final norm",
                 "text": _BLOCK_TEXT["final_norm"], "shapes": {"out": [1, n, d]},
                 "params": param_count(stack.final_norm)}]

    head_module = getattr(model, "lm_head", None) or getattr(model, "classifier", None)
    head_params = param_count(head_module) + param_count(getattr(model, "pooler", None))
    tokens = getattr(model, "tokens", None)
    if head_module is not None and tokens is not None and cfg.tie_embeddings:
        codes = getattr(tokens, "qweight", None)  # a quantized tied embedding shares its head's codes
        tied = any(b is codes for b in head_module.buffers()) if codes is not None else \
            any(p is tokens.weight for p in head_module.parameters())
        head_params -= param_count(tokens) if tied else 0
    out_shape = [1, n, cfg.vocab_size] if cfg.head == "lm" else [1, cfg.n_classes]
    head = {"id": "head", "kind": "head", "title": f"Head ({cfg.head})", "text": _BLOCK_TEXT["head"],
            "shapes": {"logits": out_shape}, "params": max(head_params, 0),
            "tied": bool(cfg.tie_embeddings and cfg.head == "lm")}

    stacks = []
    if cfg.topology == "encoder-decoder":
        stacks.append({"name": "encoder", "n_layers": cfg.n_layers, "causal": False,
                       "embed": embed_blocks(model.encoder, "encoder"),
                       "layer": stack_blocks(model.encoder, "encoder", cfg.n_layers, False),
                       "tail": tail(model.encoder, "encoder")})
        stacks.append({"name": "decoder", "n_layers": cfg.decoder_layers, "causal": True,
                       "embed": embed_blocks(model.decoder, "decoder", tokens=False),
                       "layer": stack_blocks(model.decoder, "decoder", cfg.decoder_layers, True),
                       "tail": tail(model.decoder, "decoder")})
    else:
        stacks.append({"name": cfg.topology, "n_layers": cfg.n_layers, "causal": cfg.topology == "decoder",
                       "embed": embed_blocks(model, cfg.topology),
                       "layer": stack_blocks(model, cfg.topology, cfg.n_layers, False),
                       "tail": tail(model, cfg.topology)})
    for st in stacks:
        st["run_order"] = run_order(st["layer"])
        st["norm_placement"] = cfg.norm_placement
    stacks_kv = {"n_heads": h, "kv_heads": kv}
    total = param_count(model)
    from attnlab.counting import closed_form

    return {"model": lm.id, "topology": cfg.topology, "n": n, "config": cfg.to_dict(), "stacks": stacks,
            "head": head, "total_params": total, **stacks_kv, "closed_form": closed_form(cfg),
            "features": features(cfg), "count_gap": count_gap(cfg, total)}


def parameter_calculator(V: int, d: int, N: int, h: int, L: int, d_ff: int | None = None) -> dict[str, Any]:
    """The seeds' closed form V*d + L*d + N*12*d^2 beside the exact count of the encoder those sizes build."""
    from attnlab.config import ModelConfig
    from attnlab.counting import closed_form, parameter_table

    for name, value, top in (("V", V, 10**7), ("d", d, 65536), ("N", N, 1024), ("h", h, 1024), ("L", L, 10**6)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
            raise InputError(f"{name}={value!r}: must be an integer in [1, {top}]")
    if d % h:
        raise InputError(f"d={d} must be divisible by h={h} (each head gets d/h dimensions)")
    d_ff = 4 * d if d_ff is None else d_ff
    if isinstance(d_ff, bool) or not isinstance(d_ff, int) or not 1 <= d_ff <= 8 * 65536:
        raise InputError(f"d_ff={d_ff!r}: must be an integer in [1, {8 * 65536}]")
    cfg = ModelConfig(topology="encoder", vocab_size=V, d_model=d, n_layers=N, n_heads=h, max_len=L, d_ff=d_ff,
                      head="none", tie_embeddings=True)
    table = parameter_table(cfg)
    return {"V": V, "d": d, "N": N, "h": h, "L": L, "d_ff": d_ff,
            "terms": {"V*d": V * d, "L*d": L * d, "N*12*d^2": N * 12 * d * d},
            "closed_form": closed_form(cfg), "exact": table.total,
            "rows": [{"component": c, "params": p} for c, p in table.rows]}


FAMOUS = ("bert-base", "bert-large", "gpt2", "gpt3-175b")


@lru_cache(maxsize=1)
def _famous_rows() -> tuple[dict[str, Any], ...]:
    """The seeds' table (BERT-base/large, GPT-2, GPT-3) computed by attnlab from its presets (meta device)."""
    from attnlab.counting import parameter_table
    from attnlab.presets import get

    rows = []
    for name in FAMOUS:
        cfg = get(name)
        table = parameter_table(cfg)
        rows.append({"model": name, "V": cfg.vocab_size, "d": cfg.d_model, "N": cfg.n_layers, "h": cfg.n_heads,
                     "L": cfg.max_len, "params": table.total, "closed_form": table.formula})
    return tuple(rows)


def famous_models() -> list[dict[str, Any]]:
    """The seeds' table (BERT-base/large, GPT-2, GPT-3) computed by attnlab from its presets (meta device)."""
    return [dict(r) for r in _famous_rows()]


def walkthrough(lm: Loaded, text: str, steps: int = 5) -> dict[str, Any]:
    """The seeds' inference walk-through, run live: N tokens in, N vectors out; then what the topology does
    with them (encoder: the [CLS] vector; decoder: predict, append, repeat; encoder-decoder: translate)."""
    cfg = text_model(lm)
    steps = max(1, min(int(steps), 16))
    ids, tokens = encode(lm, text)
    model = lm.model
    out: dict[str, Any] = {"model": lm.id, "topology": cfg.topology, "tokens": tokens, "n": len(ids),
                           "d_model": cfg.d_model}
    with torch.no_grad():
        if cfg.topology == "encoder":
            h = model(torch.tensor([ids])).hidden  # (1, n, d)
            out["output_shape"] = list(h.shape)
            out["first_vector"] = rounded(h[0, 0, :8], 4)
            return out
        if cfg.topology == "encoder-decoder":
            enc = model.encode(torch.tensor([ids]))
            out["output_shape"] = list(enc.shape)
            start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else (cfg.bos_token_id or 0)
            seq, make = [start], (lambda s: model.decode(torch.tensor([s]), enc, last_only=True)[1][0, -1])
        else:
            seq, make = list(ids), (lambda s: model(torch.tensor([s]), last_only=True).logits[0, -1])
            out["output_shape"] = [1, len(ids), cfg.d_model]
        limit = token_limit(lm)
        trail = []
        for _ in range(steps):
            if len(seq) >= limit:
                break
            probs = make(seq).float().softmax(-1)
            nxt = int(probs.argmax())
            trail.append({"context": len(seq), "token": token_text(lm, nxt), "id": nxt,
                          "prob": round(float(probs[nxt]), 6)})
            seq.append(nxt)
            if cfg.eos_token_id is not None and nxt == cfg.eos_token_id:
                break
        out["steps"] = trail
    return out
