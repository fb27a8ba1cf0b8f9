"""Pure functions behind every view of the explorer: the server, the notebook view and the tests call these.

Each takes a `Loaded` model (registry.Loaded: model + tokenizer + label) and plain values, and returns plain
JSON-ready dicts and lists. Nothing here touches HTTP or files: the server maps errors to status codes, the
registry decides which files exist. Numbers are rounded only for transport (see `_round`).
"""

from __future__ import annotations

import functools
import math
import sys
import threading
import time
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.registry import Loaded, UnknownItem
from attnlab.recording import Recorder
from attnlab.recording import recording as recording_of

MAX_TOKENS = 512  # the explorer's own ceiling: an N x N heatmap beyond this is not readable anyway
MAX_TEXT_CHARS = 20_000
MASKED = -1e30  # raw scores at or below this are masked entries (the model fills them with finfo.min)


# ----------------------------------------------------------------------------------------------- helpers
_MODEL_LOCK = threading.RLock()


def exclusive(fn):
    """Run `fn` holding the api's lock. attnlab.recording keeps ONE active recorder per process, and any forward
    pass records into it, so a forward in one thread must never overlap a recording in another."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with _MODEL_LOCK:
            return fn(*args, **kwargs)

    return wrapper


class _Enough(Exception):
    """Raised once the last wanted tensor is recorded: the rest of the forward (later layers, the LM head) is
    skipped, which is most of the time of an attention request on a large-vocabulary model."""


class _RecordUntil(Recorder):
    def __init__(self, names: list[str], head: int | None, last: str):
        super().__init__(names, head)
        self.last = last

    def save(self, name: str, tensor, per_head: bool = False) -> None:
        super().save(name, tensor, per_head)
        if name == self.last:
            raise _Enough


@contextmanager
def record_until(names: list[str], last: str, head: int | None = None):
    """Like attnlab.recording(names, head), but the forward stops right after `last` is recorded."""
    module = sys.modules["attnlab.recording"]
    previous, rec = module._active, _RecordUntil(names, head, last)
    module._active = rec
    try:
        with torch.no_grad():
            yield rec.store
    except _Enough:
        pass
    finally:
        module._active = previous


def wrap(model, tokenizer=None, label: str | None = None, model_id: str = "model") -> Loaded:
    """A model built in Python as a `Loaded`, for the notebook view and tests."""
    model.eval()
    return Loaded(model_id, label or model.config.name or model.config.topology, model, tokenizer, kind="python")


def _round(t: torch.Tensor, decimals: int = 6) -> list:
    """Tensor -> nested lists with `decimals` places: short JSON, and the same numbers the page shows."""
    t = t.detach().double()
    return (torch.round(t * 10**decimals) / 10**decimals).tolist()


def _config(lm: Loaded):
    return lm.model.config


def _text_model(lm: Loaded):
    cfg = _config(lm)
    if cfg.topology == "vit":
        raise InputError(f"model {lm.id!r} is a vision transformer: it reads images, not text; use the Vision tab")
    return cfg


def token_limit(lm: Loaded) -> int:
    limit = _config(lm).seq_limit
    return min(limit, MAX_TOKENS) if limit else MAX_TOKENS


def encode(lm: Loaded, text: str, add_special_tokens: bool = True) -> tuple[list[int], list[str]]:
    """Text -> (ids, token strings), refusing text beyond the model's limit with the limit in the message.

    A checkpoint saved without a tokenizer reads characters: id = code point (unknown when >= vocab_size).
    """
    cfg = _text_model(lm)
    if not isinstance(text, str):
        raise InputError(f"text must be a string, got {type(text).__name__}")
    if len(text) > MAX_TEXT_CHARS:
        raise InputError(f"text is {len(text)} characters; the explorer accepts at most {MAX_TEXT_CHARS}")
    tok = lm.tokenizer
    if tok is not None:
        enc = tok.hf.encode(text, add_special_tokens=add_special_tokens)
        ids, tokens = list(enc.ids), list(enc.tokens)
    else:
        ids = [ord(c) if ord(c) < cfg.vocab_size else 0 for c in text]
        tokens = list(text)
    if not ids:
        raise InputError("the text has no tokens; type at least one word")
    limit = token_limit(lm)
    if len(ids) > limit:
        raise InputError(f"the text is {len(ids)} tokens; model {lm.id!r} takes at most {limit} tokens here "
                         "(its position limit, capped at the explorer's 512): shorten it")
    return ids, tokens


def _special_flags(lm: Loaded, ids: list[int]) -> list[bool]:
    specials = lm.tokenizer.special_ids if lm.tokenizer is not None else set()
    return [i in specials for i in ids]


def _token_text(lm: Loaded, i: int) -> str:
    if lm.tokenizer is not None:
        return lm.tokenizer.id_to_token(int(i)) or f"<{i}>"
    return chr(i) if 32 <= i < 0x110000 else f"<{i}>"


def _check_index(what: str, value: Any, count: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
        raise UnknownItem(f"{what} {value!r} does not exist: this model has {count} ({what}s 0..{count - 1})")
    return value


def _parts(cfg) -> dict[str, tuple[str, int, bool]]:
    """attention part -> (recording prefix, number of layers, causal)."""
    if cfg.topology == "encoder-decoder":
        return {"encoder": ("encoder.blocks.{l}.attn", cfg.n_layers, False),
                "decoder": ("decoder.blocks.{l}.attn", cfg.decoder_layers, True),
                "cross": ("decoder.blocks.{l}.cross_attn", cfg.decoder_layers, False)}
    return {"self": ("blocks.{l}.attn", cfg.n_layers, cfg.topology == "decoder")}


def _default_part(cfg, part: str | None) -> str:
    parts = _parts(cfg)
    if part in (None, "", "self") and "self" in parts:
        return "self"
    if part in (None, ""):
        return "encoder"
    if part not in parts:
        raise UnknownItem(f"attention part {part!r} does not exist for a {cfg.topology}; allowed: {', '.join(parts)}")
    return part


# ------------------------------------------------------------------------------------------------ models
def list_models(registry) -> list[dict[str, Any]]:
    return registry.list()


def describe(lm: Loaded) -> dict[str, Any]:
    cfg = _config(lm)
    return {"id": lm.id, "label": lm.label, "topology": cfg.topology, "illustration": lm.illustration,
            "n_layers": cfg.n_layers, "decoder_layers": cfg.decoder_layers, "n_heads": cfg.n_heads,
            "d_model": cfg.d_model, "d_head": cfg.head_dim, "vocab_size": cfg.vocab_size,
            "token_limit": token_limit(lm) if cfg.topology != "vit" else cfg.n_patches + 1,
            "parts": list(_parts(cfg)), "has_mlm": cfg.topology == "encoder" and cfg.head == "lm",
            "has_tokenizer": lm.tokenizer is not None,
            "mask_token": lm.tokenizer.special.get("mask") if lm.tokenizer is not None else None,
            "examples": _examples(lm)}


def _examples(lm: Loaded) -> list[str]:
    if lm.kind == "toy":
        from attnlab.explorer.toy import SENTENCES

        return list(SENTENCES)
    cfg = _config(lm)
    if cfg.topology == "vit":
        return []
    if lm.id.startswith("translate"):
        return ["forty-two", "three hundred and seven", "nine thousand nine hundred"]
    if lm.id.startswith("gpt"):
        return ["The module", "def main():", "the cat sat on the mat"]
    return ["the cat sat on the mat", "The bank near the river overflowed its banks."]


# ------------------------------------------------------------------------------------------ architecture
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


def _param_count(module) -> int:
    return sum(p.numel() for p in {id(p): p for p in module.parameters()}.values()) if module is not None else 0


def architecture(lm: Loaded, n: int = 8, text: str | None = None) -> dict[str, Any]:
    """The model's blocks as data for the diagram: what each does, its tensor shapes for n tokens (or for the
    tokens of `text`), its parameters."""
    cfg, model = _config(lm), lm.model
    if text and cfg.topology != "vit":
        n = len(encode(lm, text)[0])
    if cfg.topology == "vit":
        n = cfg.n_patches + 1
    n = max(1, min(int(n), 4096))
    d, h, dk, ff = cfg.d_model, cfg.n_heads, cfg.head_dim, cfg.d_ff

    def stack_blocks(stack, name: str, n_layers: int, cross: bool) -> list[dict[str, Any]]:
        blk = stack.blocks[0]
        items = [("attn", "Masked self-attention" if stack.causal else "Multi-head self-attention", blk.attn,
                  {"x": [1, n, d], "Q,K,V": [1, h, n, dk], "scores": [1, h, n, n], "out": [1, n, d]}),
                 ("norm1", "Add & Norm (1)", blk.norm1, {"out": [1, n, d]})]
        if cross:
            items += [("cross_attn", "Cross-attention", blk.cross_attn,
                       {"Q": [1, h, n, dk], "K,V": [1, h, "n_src", dk], "scores": [1, h, n, "n_src"]}),
                      ("norm_cross", "Add & Norm (cross)", blk.norm_cross, {"out": [1, n, d]})]
        items += [("ffn", "Feed-forward network", blk.ffn, {"hidden": [1, n, ff], "out": [1, n, d]}),
                  ("norm2", "Add & Norm (2)", blk.norm2, {"out": [1, n, d]})]
        return [{"id": f"{name}.{key}", "kind": key, "title": title, "text": _BLOCK_TEXT[key],
                 "shapes": shapes, "params_per_layer": _param_count(mod), "n_layers": n_layers,
                 "params": _param_count(mod) * n_layers} for key, title, mod, shapes in items]

    def embed_blocks(stack, name: str, tokens: bool = True) -> list[dict[str, Any]]:
        out = []
        if cfg.topology == "vit":
            out.append({"id": f"{name}.patches", "kind": "patches", "title": "Patch embedding + [CLS]",
                        "text": _BLOCK_TEXT["patches"], "shapes": {"pixels": [1, cfg.n_channels, cfg.image_size,
                                                                              cfg.image_size], "out": [1, n, d]},
                        "params": _param_count(model.patches) + model.cls_token.numel()})
        elif tokens:  # an encoder-decoder's decoder shares the encoder's table: counted once
            out.append({"id": f"{name}.tokens", "kind": "tokens", "title": "Token embeddings",
                        "text": _BLOCK_TEXT["tokens"], "shapes": {"ids": [1, n], "out": [1, n, d]},
                        "params": model.tokens.weight.numel()})
        extras = _param_count(stack.token_types) + _param_count(stack.embed_norm)
        if extras:
            out.append({"id": f"{name}.embed_extras", "kind": "embed_extras", "title": "Segments + embedding norm",
                        "text": _BLOCK_TEXT["embed_extras"], "shapes": {"out": [1, n, d]}, "params": extras})
        pos = stack.positions if stack.positions is not None else (stack.rotary or stack.alibi or stack.rel_bias)
        out.append({"id": f"{name}.positions", "kind": "positions", "title": f"Positions ({cfg.position})",
                    "text": _BLOCK_TEXT["positions"], "shapes": {"out": [1, n, d]}, "params": _param_count(pos)})
        return out

    def tail(stack, name: str) -> list[dict[str, Any]]:
        if stack.final_norm is None:
            return []
        return [{"id": f"{name}.final_norm", "kind": "final_norm", "title": "Final norm",
                 "text": _BLOCK_TEXT["final_norm"], "shapes": {"out": [1, n, d]},
                 "params": _param_count(stack.final_norm)}]

    head_module = getattr(model, "lm_head", None) or getattr(model, "classifier", None)
    head_params = _param_count(head_module) + _param_count(getattr(model, "pooler", None))
    if head_module is not None and getattr(model, "tokens", None) is not None and cfg.tie_embeddings:
        head_params -= model.tokens.weight.numel() if any(p is model.tokens.weight for p in head_module.parameters()) \
            else 0
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
    total = _param_count(model)
    from attnlab.counting import closed_form

    return {"model": lm.id, "topology": cfg.topology, "n": n, "config": cfg.to_dict(), "stacks": stacks,
            "head": head, "total_params": total, "closed_form": closed_form(cfg)}


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


@exclusive
def walkthrough(lm: Loaded, text: str, steps: int = 5) -> dict[str, Any]:
    """The seeds' inference walk-through, run live: N tokens in, N vectors out; then what the topology does
    with them (encoder: the [CLS] vector; decoder: predict, append, repeat; encoder-decoder: translate)."""
    cfg = _text_model(lm)
    steps = max(1, min(int(steps), 16))
    ids, tokens = encode(lm, text)
    model = lm.model
    out: dict[str, Any] = {"model": lm.id, "topology": cfg.topology, "tokens": tokens, "n": len(ids),
                           "d_model": cfg.d_model}
    with torch.no_grad():
        if cfg.topology == "encoder":
            h = model(torch.tensor([ids])).hidden  # (1, n, d)
            out["output_shape"] = list(h.shape)
            out["first_vector"] = _round(h[0, 0, :8], 4)
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
            trail.append({"context": len(seq), "token": _token_text(lm, nxt), "id": nxt,
                          "prob": round(float(probs[nxt]), 6)})
            seq.append(nxt)
            if cfg.eos_token_id is not None and nxt == cfg.eos_token_id:
                break
        out["steps"] = trail
    return out


# ---------------------------------------------------------------------------------------------- attention
def _forward_text(lm: Loaded, ids: list[int], target_ids: list[int] | None):
    model = lm.model
    x = torch.tensor([ids])
    if _config(lm).topology == "encoder-decoder":
        return model(x, decoder_input_ids=torch.tensor([target_ids]))
    return model(x)


def _target_ids(lm: Loaded, ids: list[int], target: str | None) -> list[int]:
    """Decoder input for an encoder-decoder: the start token + the given target, or a greedy translation."""
    cfg = _config(lm)
    start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else (cfg.bos_token_id or 0)
    if target:
        tgt, _ = encode(lm, target, add_special_tokens=False)
        return [start] + tgt
    return greedy_translation(lm, ids)


@exclusive
def greedy_translation(lm: Loaded, ids: list[int], max_new: int = 16) -> list[int]:
    cfg, model = _config(lm), lm.model
    start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else (cfg.bos_token_id or 0)
    out = [start]
    limit = min(token_limit(lm), max_new + 1)
    with torch.no_grad():
        enc = model.encode(torch.tensor([ids]))
        while len(out) < limit:
            _, logits = model.decode(torch.tensor([out]), enc, last_only=True)
            nxt = int(logits[0, -1].argmax())
            out.append(nxt)
            if cfg.eos_token_id is not None and nxt == cfg.eos_token_id:
                break
    return out


@exclusive
def attention(lm: Loaded, text: str, layer: int = 0, head: int = 0, part: str | None = None,
              target: str | None = None) -> dict[str, Any]:
    """One head of one layer for `text`: raw scores Q.K*scale (+B), softmax weights, Q and K vectors.

    Only the requested layer and head are recorded, so the rest of the forward stays on the fast path.
    Masked entries (causal mask) come back as null raw scores and weight 0.
    """
    cfg = _text_model(lm)
    part = _default_part(cfg, part)
    prefix, n_layers, causal = _parts(cfg)[part]
    layer = _check_index("layer", layer, n_layers)
    head = _check_index("head", head, cfg.n_heads)
    ids, tokens = encode(lm, text)
    q_ids = k_ids = ids
    target_ids = None
    if cfg.topology == "encoder-decoder":
        target_ids = _target_ids(lm, ids, target)
        q_ids = target_ids if part in ("decoder", "cross") else ids
        k_ids = target_ids if part == "decoder" else ids
    name = prefix.format(l=layer)
    with record_until([f"{name}.q", f"{name}.k", f"{name}.raw_scores", f"{name}.weights"], f"{name}.weights",
                      head=head) as store:
        _forward_text(lm, ids, target_ids)
    raw = store[f"{name}.raw_scores"][0, 0]  # (q, k)
    weights = store[f"{name}.weights"][0, 0]
    masked = raw <= MASKED
    raw_list = _round(raw.masked_fill(masked, 0.0))
    for i, j in masked.nonzero().tolist():
        raw_list[i][j] = None
    scale = cfg.attn_scale if cfg.attn_scale is not None else cfg.head_dim ** -0.5
    q_tokens = [_token_text(lm, i) for i in q_ids] if q_ids is not ids else tokens
    k_tokens = [_token_text(lm, i) for i in k_ids] if k_ids is not ids else tokens
    emb = lm.model.tokens.weight[torch.tensor(k_ids)][:, :64]
    illustration = lm.illustration or bool(cfg.extra.get("illustration"))
    dims = list(cfg.extra.get("dims", [])) if illustration else None
    return {"model": lm.id, "topology": cfg.topology, "part": part, "layer": layer, "head": head,
            "n_layers": n_layers, "n_heads": cfg.n_heads, "d_head": cfg.head_dim, "scale": scale,
            "causal": causal, "position": cfg.position,
            "q_tokens": q_tokens, "k_tokens": k_tokens,
            "q_special": _special_flags(lm, q_ids), "k_special": _special_flags(lm, k_ids),
            "raw_scores": raw_list, "weights": _round(weights),
            "q": _round(store[f"{name}.q"][0, 0], 5), "k": _round(store[f"{name}.k"][0, 0], 5),
            "embeddings": {"dims": dims, "width": cfg.d_model, "values": _round(emb.detach(), 4)},
            "head_name": cfg.extra.get("heads", [None] * cfg.n_heads)[head] if illustration else None}


@exclusive
def attention_grid(lm: Loaded, text: str, part: str | None = None, size: int = 24,
                   target: str | None = None) -> dict[str, Any]:
    """Every layer x head of one part as small thumbnails (average-pooled to at most size x size)."""
    cfg = _text_model(lm)
    part = _default_part(cfg, part)
    prefix, n_layers, _ = _parts(cfg)[part]
    ids, _ = encode(lm, text)
    target_ids = _target_ids(lm, ids, target) if cfg.topology == "encoder-decoder" else None
    names = [prefix.format(l=i) + ".weights" for i in range(n_layers)]
    with record_until(names, names[-1]) as store:
        _forward_text(lm, ids, target_ids)
    grid = []
    for name in names:
        w = store[name][0]  # (heads, q, k)
        q, k = w.shape[-2:]
        pooled = torch.nn.functional.adaptive_avg_pool2d(w, (min(q, size), min(k, size)))
        peak = pooled.amax(dim=(-2, -1), keepdim=True).clamp(min=1e-9)
        grid.append(_round(pooled / peak, 3))  # each thumbnail scaled to its own peak
    return {"model": lm.id, "part": part, "n_layers": n_layers, "n_heads": cfg.n_heads, "thumbnails": grid}


@exclusive
def mask_placement(lm: Loaded, text: str, layer: int = 0, head: int = 0) -> dict[str, Any]:
    """Causal mask applied before the softmax (correct) or after it (wrong): the second leaves rows summing < 1."""
    cfg = _text_model(lm)
    if cfg.topology != "decoder":
        raise InputError(f"model {lm.id!r} is a {cfg.topology}; the mask-placement lesson needs a causal decoder")
    layer = _check_index("layer", layer, cfg.n_layers)
    head = _check_index("head", head, cfg.n_heads)
    ids, tokens = encode(lm, text)
    name = f"blocks.{layer}.attn"
    with record_until([f"{name}.q", f"{name}.k", f"{name}.weights"], f"{name}.weights", head=head) as store:
        lm.model(torch.tensor([ids]))
    q, k = store[f"{name}.q"][0, 0], store[f"{name}.k"][0, 0]  # (n, d_head)
    scale = cfg.attn_scale if cfg.attn_scale is not None else cfg.head_dim ** -0.5
    unmasked = (q @ k.T) * scale  # (n, n): what the scores are before any mask (position biases aside)
    n = len(ids)
    keep = torch.ones(n, n, dtype=torch.bool).tril()
    after = unmasked.softmax(-1) * keep  # softmax first, then zero the future: probability mass is lost
    before = store[f"{name}.weights"][0, 0]
    return {"model": lm.id, "tokens": tokens, "before": _round(before), "after": _round(after),
            "before_row_sums": _round(before.sum(-1)), "after_row_sums": _round(after.sum(-1))}


# ---------------------------------------------------------------------------------------- self-supervised
def _mlm_check(lm: Loaded):
    cfg = _text_model(lm)
    if cfg.topology != "encoder" or cfg.head != "lm":
        raise InputError(f"model {lm.id!r} is a {cfg.topology} with head={cfg.head!r}; masked-token predictions "
                         "need an encoder with an MLM head (bert-mlm, minilm)")
    if lm.tokenizer is None or lm.tokenizer.mask_id is None:
        raise InputError(f"model {lm.id!r} has no tokenizer with a [MASK] token")
    return cfg


def mlm_draw(lm: Loaded, text: str, seed: int = 0, rate: float = 0.15) -> dict[str, Any]:
    """BERT's corruption drawn token by token: pick ~15% of the real tokens (at least one); of those,
    80% become [MASK], 10% a random token, 10% stay unchanged. Every picked position is a loss position."""
    cfg = _mlm_check(lm)
    ids, tokens = encode(lm, text)
    special = _special_flags(lm, ids)
    gen = torch.Generator().manual_seed(int(seed))
    candidates = [i for i, s in enumerate(special) if not s]
    if not candidates:
        raise InputError("the text has only special tokens; nothing to mask")
    picked = [i for i in candidates if float(torch.rand((), generator=gen)) < rate]
    if not picked:
        picked = [candidates[int(torch.randint(len(candidates), (), generator=gen))]]
    draws = []
    for i in picked:
        u = float(torch.rand((), generator=gen))
        if u < 0.8:
            draws.append({"position": i, "action": "mask", "token_id": lm.tokenizer.mask_id})
        elif u < 0.9:
            rid = int(torch.randint(cfg.vocab_size, (), generator=gen))
            draws.append({"position": i, "action": "random", "token_id": rid})
        else:
            draws.append({"position": i, "action": "keep", "token_id": ids[i]})
    for dr in draws:
        dr["token"] = _token_text(lm, dr["token_id"])
    return {"model": lm.id, "tokens": tokens, "special": special, "seed": seed, "rate": rate, "draws": draws}


@exclusive
def mlm_predict(lm: Loaded, text: str, selections: list[dict[str, Any]] | list[int]) -> dict[str, Any]:
    """Run the MLM on the corrupted text; top-5 predictions and loss -log p(original) at each selected position.

    `selections`: positions (each replaced by [MASK]) or dicts {position, action: mask|random|keep, token_id}.
    """
    cfg = _mlm_check(lm)
    ids, tokens = encode(lm, text)
    if not isinstance(selections, list) or not selections:
        raise InputError("select at least one position to mask (a list of token positions)")
    corrupted = list(ids)
    rows = []
    seen = set()
    for sel in selections:
        if isinstance(sel, dict):
            pos, action, tid = sel.get("position"), sel.get("action", "mask"), sel.get("token_id")
        else:
            pos, action, tid = sel, "mask", None
        pos = _check_index("position", pos, len(ids))
        if pos in seen:
            continue
        seen.add(pos)
        if action == "mask":
            tid = lm.tokenizer.mask_id
        elif action == "keep":
            tid = ids[pos]
        elif action == "random":
            tid = _check_index("token_id", tid, cfg.vocab_size)
        else:
            raise InputError(f"action {action!r}: allowed mask, random, keep")
        corrupted[pos] = tid
        rows.append({"position": pos, "action": action, "input_token": _token_text(lm, tid),
                     "original": tokens[pos], "original_id": ids[pos]})
    with torch.no_grad():
        logits = lm.model(torch.tensor([corrupted])).logits[0]  # (seq, vocab)
    logp = logits.log_softmax(-1)
    for row in rows:
        lp = logp[row["position"]]
        top = lp.topk(5)
        row["top5"] = [{"token": _token_text(lm, int(i)), "id": int(i), "prob": round(math.exp(float(v)), 6)}
                       for v, i in zip(top.values, top.indices, strict=False)]
        row["loss"] = round(-float(lp[row["original_id"]]), 6)
    loss = sum(r["loss"] for r in rows) / len(rows)
    return {"model": lm.id, "tokens": tokens, "corrupted": [_token_text(lm, i) for i in corrupted],
            "special": _special_flags(lm, ids), "rows": rows, "loss": round(loss, 6)}


@exclusive
def causal_predictions(lm: Loaded, text: str) -> dict[str, Any]:
    """Every position's next-token prediction (top 5) and its loss -log p(actual next token)."""
    cfg = _text_model(lm)
    if cfg.topology != "decoder":
        raise InputError(f"model {lm.id!r} is a {cfg.topology}; next-token predictions need a decoder")
    ids, tokens = encode(lm, text)
    with torch.no_grad():
        logits = lm.model(torch.tensor([ids])).logits[0]
    logp = logits.log_softmax(-1)
    rows = []
    for i in range(len(ids)):
        top = logp[i].topk(5)
        row = {"position": i, "token": tokens[i],
               "top5": [{"token": _token_text(lm, int(t)), "id": int(t), "prob": round(math.exp(float(v)), 6)}
                        for v, t in zip(top.values, top.indices, strict=False)]}
        if i + 1 < len(ids):
            row["next"] = tokens[i + 1]
            row["loss"] = round(-float(logp[i, ids[i + 1]]), 6)
        rows.append(row)
    losses = [r["loss"] for r in rows if "loss" in r]
    return {"model": lm.id, "tokens": tokens, "rows": rows,
            "loss": round(sum(losses) / len(losses), 6) if losses else None}


# ----------------------------------------------------------------------------------------------- vision
def _vit_check(lm: Loaded):
    cfg = _config(lm)
    if cfg.topology != "vit":
        raise InputError(f"model {lm.id!r} is a {cfg.topology}; the Vision tab needs a vision transformer")
    return cfg


def rollout(weights: list[torch.Tensor]) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020): average heads, add the residual as 0.5 I, renormalise rows,
    multiply through the layers. Each factor is row-stochastic, so the product's rows sum to 1."""
    result = None
    for w in weights:  # (heads, n, n)
        a = w.mean(0)
        a = 0.5 * a + 0.5 * torch.eye(a.shape[-1])
        a = a / a.sum(-1, keepdim=True)
        result = a if result is None else a @ result
    return result


@exclusive
def vision(lm: Loaded, pixels: torch.Tensor, layer: int = 0, head: int = 0, patch: int = 0) -> dict[str, Any]:
    """A ViT on one image: prediction, the selected token's attention over the patch grid in one layer/head,
    the rollout from that token, and the cosine similarity of its learned position embedding to every other.

    `pixels`: (channels, size, size) float tensor as the model reads it (images.to_pixels makes one).
    `patch`: token index, 0 = [CLS], 1.. = patches in raster order.
    """
    cfg = _vit_check(lm)
    layer = _check_index("layer", layer, cfg.n_layers)
    head = _check_index("head", head, cfg.n_heads)
    n_tokens = cfg.n_patches + 1
    patch = _check_index("patch", patch, n_tokens)
    g = cfg.image_size // cfg.patch_size
    names = [f"blocks.{i}.attn.weights" for i in range(cfg.n_layers)]
    with torch.no_grad(), recording_of(names) as store:
        out = lm.model(pixels[None])
    weights = [store[nm][0] for nm in names]  # each (heads, n, n)
    roll = rollout(weights)
    row = weights[layer][head, patch]  # (n,)
    probs = out.logits[0].softmax(-1) if out.logits is not None else None
    result = {"model": lm.id, "grid": g, "patch_size": cfg.patch_size, "layer": layer, "head": head,
              "patch": patch, "n_layers": cfg.n_layers, "n_heads": cfg.n_heads,
              "tokens": ["[CLS]"] + [f"p{i} (r{i // g}, c{i % g})" for i in range(cfg.n_patches)],
              "attention": _round(row), "attention_row_sum": round(float(row.sum()), 6),
              "rollout": _round(roll[patch]), "rollout_row_sums": _round(roll.sum(-1))}
    if probs is not None:
        top = probs.topk(min(5, probs.numel()))
        labels = cfg.extra.get("labels")
        result["prediction"] = [{"class": int(i), "label": str(labels[int(i)]) if labels else str(int(i)),
                                 "prob": round(float(p), 6)} for p, i in zip(top.values, top.indices, strict=False)]
    if cfg.position == "learned":
        table = lm.model.positions.weight.detach()  # (offset + n_tokens, d_model)
        p = table[cfg.position_offset:cfg.position_offset + n_tokens][1:]  # patches only, (n_patches, d)
        p = torch.nn.functional.normalize(p, dim=-1)
        sel = patch - 1 if patch > 0 else 0
        result["position_similarity"] = _round(p @ p[sel], 4)
        result["position_similarity_of"] = sel
    return result


# ------------------------------------------------------------------------------------------- generation
def _filtered_probs(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """Next-token probabilities after temperature, top-k and nucleus (top-p) filtering."""
    if temperature <= 0:
        probs = torch.zeros_like(logits)
        probs[logits.argmax()] = 1.0
        return probs
    scaled = logits / temperature
    if 0 < top_k < scaled.numel():
        kth = scaled.topk(top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    probs = scaled.softmax(-1)
    if 0 < top_p < 1:
        sorted_p, order = probs.sort(descending=True)
        cumulative = sorted_p.cumsum(-1)
        drop = cumulative - sorted_p >= top_p  # keep the smallest prefix whose mass reaches top_p
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(0, order, sorted_p)
        probs = probs / probs.sum()
    return probs


def _timed(fn, repeats: int = 3) -> tuple[Any, float]:
    best, result = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return result, best * 1000


@exclusive
def generation_step(lm: Loaded, prompt: str, generated: list[int] | None = None, temperature: float = 1.0,
                    top_k: int = 0, top_p: float = 1.0, seed: int = 0, bars: int = 10) -> dict[str, Any]:
    """One decoding step: the next-token distribution under the sampling settings, the sampled token, the
    KV cache after the step, and the step's time with the cache (one new token) and without (full recompute)."""
    from attnlab.cache import KVCache

    cfg = _text_model(lm)
    if cfg.topology not in ("decoder", "encoder-decoder"):
        raise InputError(f"model {lm.id!r} is a {cfg.topology}; generation needs a decoder or an encoder-decoder")
    if not isinstance(temperature, (int, float)) or not 0 <= temperature <= 10:
        raise InputError(f"temperature={temperature!r}: allowed 0 (greedy) to 10")
    if not isinstance(top_p, (int, float)) or not 0 < top_p <= 1:
        raise InputError(f"top_p={top_p!r}: allowed (0, 1]")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise InputError(f"top_k={top_k!r}: allowed 0 (off) or a positive integer")
    generated = list(generated or [])
    for t in generated:
        _check_index("generated token id", t, cfg.vocab_size)
    model = lm.model
    source, _ = encode(lm, prompt)
    enc_dec = cfg.topology == "encoder-decoder"
    if enc_dec:
        start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else (cfg.bos_token_id or 0)
        seq = [start] + generated
    else:
        seq = source + generated
    limit = token_limit(lm)
    if len(seq) >= limit:
        raise InputError(f"the sequence is {len(seq)} tokens; model {lm.id!r} takes at most {limit}: "
                         "start again with a shorter prompt")
    x = torch.tensor([seq])
    with torch.no_grad():
        enc = model.encode(torch.tensor([source])) if enc_dec else None

        def full():
            if enc_dec:
                return model.decode(x, enc, last_only=True)[1][0, -1]
            return model(x, last_only=True).logits[0, -1]

        logits_full, ms_full = _timed(full)
        caches = []

        def cached():
            cache = KVCache.for_model(model, batch=1, capacity=len(seq) + 1)
            if len(seq) > 1:  # the earlier tokens are already in the cache when this step starts
                if enc_dec:
                    model.decode(x[:, :-1], enc, cache=cache, last_only=True)
                else:
                    model(x[:, :-1], cache=cache, last_only=True)
            t0 = time.perf_counter()
            if enc_dec:
                out = model.decode(x[:, -1:], enc, cache=cache, last_only=True)[1][0, -1]
            else:
                out = model(x[:, -1:], cache=cache, last_only=True).logits[0, -1]
            caches.append((cache, time.perf_counter() - t0))
            return out

        logits_cached, _ = _timed(cached)
        ms_cached = min(t for _, t in caches) * 1000
        cache = caches[-1][0]
    probs = _filtered_probs(logits_full.float(), float(temperature), int(top_k), float(top_p))
    gen = torch.Generator().manual_seed(int(seed) * 100_003 + len(generated))
    token = int(torch.multinomial(probs, 1, generator=gen))
    raw_probs = logits_full.float().softmax(-1)
    top = probs.topk(min(bars, probs.numel()))
    bar_list = [{"token": _token_text(lm, int(i)), "id": int(i), "prob": round(float(p), 6),
                 "raw_prob": round(float(raw_probs[int(i)]), 6)} for p, i in zip(top.values, top.indices, strict=True)]
    result = {"model": lm.id, "topology": cfg.topology, "step": len(generated) + 1, "bars": bar_list,
              "token": _token_text(lm, token), "token_id": token, "generated": generated + [token],
              "text": [_token_text(lm, i) for i in (seq + [token])],
              "cache": {"positions": cache.length, "entries": cache.entries, "bytes": cache.nbytes,
                        "formula": f"2 x {len(cache.layers)} layers x {cfg.kv_heads} kv heads x {cache.length} "
                                   f"positions x {cfg.head_dim} d_head"},
              "ms_with_cache": round(ms_cached, 4), "ms_without_cache": round(ms_full, 4),
              "cache_matches": bool(torch.allclose(logits_full, logits_cached, atol=1e-4, rtol=1e-4)),
              "finished": cfg.eos_token_id is not None and token == cfg.eos_token_id}
    if enc_dec:
        names = [f"decoder.blocks.{i}.cross_attn.weights" for i in range(cfg.decoder_layers)]
        with torch.no_grad(), recording_of(names) as store:
            model.decode(x, enc)
        result["source"] = [_token_text(lm, i) for i in source]
        # each layer's cross-attention of the newest target position over the source, averaged over heads
        result["cross_attention"] = [_round(store[nm][0, :, -1].mean(0), 5) for nm in names]
    return result


# ----------------------------------------------------------------------------------------------- cost
@exclusive
def cost(lm: Loaded, n: int = 128, measure: bool = False) -> dict[str, Any]:
    """attnlab.cost for this model at n tokens: the per-operation table (FLOPs, bytes, intensity), the KV cache,
    and how FLOPs and cache grow with n; `measure` also times the forward at each n of the sweep."""
    from attnlab.cost import cost_table, forward_flops, kv_cache_bytes

    cfg = _config(lm)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"n={n!r}: allowed a positive integer (up to the model's position limit)")
    if cfg.topology == "vit":
        n = cfg.n_patches + 1
    table = cost_table(cfg, 1, n)  # InputError names the limit when n is beyond the positions
    limit = cfg.seq_limit or 1 << 15
    ns = sorted({m for m in (2**k for k in range(3, 16)) if m <= min(limit, 1 << 15)} | {n})
    if cfg.topology == "vit":
        ns = [n]

    def dense_attention(t) -> tuple[int, int]:
        attn = sum(r.flops for r in t.rows if r.matmul and ("Q K^T" in r.name or "P V" in r.name))
        return t.matmul_flops - attn, attn

    sweep = []
    for m in ns:
        t = cost_table(cfg, 1, m)
        dense, attn = dense_attention(t)
        sweep.append({"n": m, "flops": forward_flops(cfg, 1, m), "flops_dense": dense, "flops_attention": attn,
                      "kv_cache_bytes": sum(kv_cache_bytes(cfg, 1, m).values())})
    dense, attn = dense_attention(table)
    at_n = {"n": n, "flops": table.matmul_flops, "flops_dense": dense, "flops_attention": attn,
            "kv_cache_bytes": sum(table.kv_cache_bytes.values()), "bytes_moved": table.bytes_read +
            table.bytes_written, "attention_matrix_bytes": cfg.n_heads * n * n * 4}
    rows = [{"stack": r.stack, "name": r.name, "formula": r.formula, "layers": r.layers, "flops": r.flops,
             "bytes": r.bytes_moved, "intensity": round(r.intensity, 3) if r.bytes_moved else None}
            for r in table.rows]
    result = {"model": lm.id, "n": n, "params": _param_count(lm.model), "at_n": at_n, "rows": rows,
              "sweep": sweep}
    if measure:
        from attnlab.cost.measure import sweep as measured_sweep

        seqs = [m for m in ns if m <= 512][-6:]
        if cfg.topology != "vit" and len(seqs) >= 2:
            points = measured_sweep(cfg, seqs, series=("forward",), budget_s=0.05)
            result["measured"] = [{"n": p.n, "ms": round(p.seconds * 1000, 4), "flops": p.flops} for p in points]
    return result


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "to_dict"):
        return _jsonable(obj.to_dict())
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return _jsonable(dataclasses.asdict(obj))
    if isinstance(obj, torch.Tensor):
        return obj.tolist()
    return str(obj)
