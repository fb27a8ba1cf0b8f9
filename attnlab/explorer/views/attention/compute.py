"""Attention views: one head of one layer with raw scores, weights, Q and K; every layer x head as thumbnails;
the causal mask placed before or after the softmax."""

from __future__ import annotations

import fnmatch
import os
from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.server.common import (
    MASKED,
    a_an,
    check_index,
    config_of,
    default_part,
    encode,
    head_site,
    parts_of,
    raw_pieces,
    rounded,
    special_flags,
    text_model,
    token_limit,
    token_text,
)
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.server.sessions import ByteLRU, model_key
from attnlab.recording import record


# ---------------------------------------------------------------------------------------------- attention
def _cache_megabytes() -> int:
    raw = os.environ.get("ATTNLAB_EXPLORER_CACHE_MB", "256")
    if not raw.isdigit() or not 0 <= int(raw) <= 1_000_000:
        raise InputError(f"ATTNLAB_EXPLORER_CACHE_MB={raw!r}: allowed an integer from 0 (no cache) to 1000000")
    return int(raw)


# A sentence's recording (every layer and head of every attention part, with each block's input), kept so that
# changing the layer or head, the grid of thumbnails and the lessons beside them read it instead of running the
# model again. Bounded by bytes (ATTNLAB_EXPLORER_CACHE_MB, default 256); one sentence of MiniLM at 128 tokens is
# about 26 MB. A sentence whose recording would take over half the budget is recorded per request as before.
RECORDINGS = ByteLRU(_cache_megabytes() * 2**20)
TRANSLATIONS = ByteLRU(2**20)  # greedy translations of encoder-decoder sources: the default target of a view
GRIDS = ByteLRU(64 * 2**20)  # thumbnail grids (lists of floats), the same for every layer and head of a sentence
_KINDS = ("resid_pre", "attn.q", "attn.k", "attn.raw_scores", "attn.weights")
_CROSS = ("cross_attn.q", "cross_attn.k", "cross_attn.raw_scores", "cross_attn.weights")


def _sentence_plan(cfg) -> tuple[list[str], str]:
    """(name patterns of a whole-sentence recording, the name recorded last: the forward stops after it)."""
    if cfg.topology == "encoder-decoder":
        patterns = [f"encoder.blocks.*.{k}" for k in _KINDS] + [f"decoder.blocks.*.{k}" for k in _KINDS + _CROSS]
        return patterns, f"decoder.blocks.{cfg.decoder_layers - 1}.cross_attn.weights"
    return [f"blocks.*.{k}" for k in _KINDS], f"blocks.{cfg.n_layers - 1}.attn.weights"


def _sentence_bytes(cfg, n_src: int, n_tgt: int | None) -> int:
    """float32 bytes of a whole-sentence recording: per layer the block input, Q and K, raw scores and weights."""
    def part(layers, nq, nk):
        return layers * (cfg.n_heads * (2 * nq * nk + (nq + nk) * cfg.head_dim) + nq * cfg.d_model)

    if n_tgt is None:
        return 4 * part(cfg.n_layers, n_src, n_src)
    cross = cfg.decoder_layers * cfg.n_heads * (2 * n_tgt * n_src + (n_tgt + n_src) * cfg.head_dim)
    return 4 * (part(cfg.n_layers, n_src, n_src) + part(cfg.decoder_layers, n_tgt, n_tgt) + cross)


def _storage_bytes(store: dict[str, torch.Tensor]) -> int:
    """Memory the tensors hold (a view into a larger buffer keeps all of it)."""
    seen: dict[int, int] = {}
    for t in store.values():
        st = t.untyped_storage()
        seen[st.data_ptr()] = st.nbytes()
    return sum(seen.values())


def record_text(lm: Loaded, ids: list[int], target_ids: list[int] | None, names: list[str],
                 head: int | None = None) -> dict[str, torch.Tensor]:
    """Record `names` for one text (and target): from the sentence's cached recording when the names are part of
    it (no forward at all), else by one forward that stops after the last of them (the later layers and the LM
    head are most of the time of an attention request on a large-vocabulary model)."""
    cfg = config_of(lm)
    kwargs = {"decoder_input_ids": torch.tensor([target_ids])} if cfg.topology == "encoder-decoder" else {}
    patterns, last = _sentence_plan(cfg)
    size = _sentence_bytes(cfg, len(ids), len(target_ids) if target_ids is not None else None)
    covered = all(any(fnmatch.fnmatchcase(n, p) for p in patterns) for n in names)
    if not covered or size > RECORDINGS.max_bytes // 2:
        return record(lm.model, torch.tensor([ids]), names=names, head=head, stop_after=names[-1], **kwargs)
    key = (*model_key(lm), tuple(ids), tuple(target_ids) if target_ids is not None else None)

    def whole_sentence():
        store = record(lm.model, torch.tensor([ids]), names=patterns, stop_after=last, **kwargs)
        return store, _storage_bytes(store)

    store = RECORDINGS.get_or_compute(key, whole_sentence)
    missing = [n for n in names if n not in store]
    if missing:  # a model that records differently (no such layer): let record() say what is wrong
        return record(lm.model, torch.tensor([ids]), names=names, head=head, stop_after=names[-1], **kwargs)
    if head is None:
        return {n: store[n] for n in names}
    return {n: store[n][:, head : head + 1] if n.rsplit(".", 1)[-1] in ("q", "k", "raw_scores", "weights")
            else store[n] for n in names}


def target_token_ids(lm: Loaded, ids: list[int], target: str | None) -> list[int]:
    """Decoder input for an encoder-decoder: the start token + the given target, or a greedy translation."""
    cfg = config_of(lm)
    start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else (cfg.bos_token_id or 0)
    if target:
        tgt, _ = encode(lm, target, add_special_tokens=False)
        return [start] + tgt
    key = (*model_key(lm), tuple(ids))
    return list(TRANSLATIONS.get_or_compute(key, lambda: _sized(greedy_translation(lm, ids))))


def _sized(tokens: list[int]) -> tuple[tuple[int, ...], int]:
    return tuple(tokens), 8 * len(tokens) + 64


def greedy_translation(lm: Loaded, ids: list[int], max_new: int = 16) -> list[int]:
    cfg, model = config_of(lm), lm.model
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


def attention(lm: Loaded, text: str, layer: int = 0, head: int = 0, part: str | None = None,
              target: str | None = None) -> dict[str, Any]:
    """One head of one layer for `text`: raw scores Q.K*scale (+B), softmax weights, Q and K vectors.

    Only the requested layer and head are recorded, so the rest of the forward stays on the fast path.
    Masked entries (causal mask) come back as null raw scores and weight 0.
    """
    cfg, part, name, causal, layer, head = head_site(lm, part, layer, head)
    ids, tokens = encode(lm, text)
    q_ids = k_ids = ids
    target_ids = None
    if cfg.topology == "encoder-decoder":
        target_ids = target_token_ids(lm, ids, target)
        q_ids = target_ids if part in ("decoder", "cross") else ids
        k_ids = target_ids if part == "decoder" else ids
    store = record_text(lm, ids, target_ids, [f"{name}.q", f"{name}.k", f"{name}.raw_scores", f"{name}.weights"],
                         head=head)
    raw = store[f"{name}.raw_scores"][0, 0]  # (q, k)
    weights = store[f"{name}.weights"][0, 0]
    masked = raw <= MASKED
    raw_list = rounded(raw.masked_fill(masked, 0.0))
    for i, j in masked.nonzero().tolist():
        raw_list[i][j] = None
    scale = cfg.attn_scale if cfg.attn_scale is not None else cfg.head_dim ** -0.5
    q_tokens = [token_text(lm, i) for i in q_ids] if q_ids is not ids else tokens
    k_tokens = [token_text(lm, i) for i in k_ids] if k_ids is not ids else tokens
    # .forward: the rows only (a quantized table is not decoded whole), and no hook sees a second forward
    emb = lm.model.tokens.forward(torch.tensor(k_ids))[:, :64]
    illustration = lm.illustration or bool(cfg.extra.get("illustration"))
    dims = list(cfg.extra.get("dims", [])) if illustration else None
    return {"model": lm.id, "topology": cfg.topology, "part": part, "layer": layer, "head": head,
            "n_layers": parts_of(cfg)[part][1], "n_heads": cfg.n_heads, "d_head": cfg.head_dim, "scale": scale,
            "causal": causal, "position": cfg.position,
            "q_tokens": q_tokens, "k_tokens": k_tokens, "q_ids": list(q_ids), "k_ids": list(k_ids),
            "q_pieces": raw_pieces(lm, q_ids), "k_pieces": raw_pieces(lm, k_ids),
            "q_special": special_flags(lm, q_ids), "k_special": special_flags(lm, k_ids),
            "raw_scores": raw_list, "weights": rounded(weights),
            "q": rounded(store[f"{name}.q"][0, 0], 5), "k": rounded(store[f"{name}.k"][0, 0], 5),
            "embeddings": {"dims": dims, "width": cfg.d_model, "values": rounded(emb.detach(), 4)},
            "head_name": cfg.extra.get("heads", [None] * cfg.n_heads)[head] if illustration else None}


def attention_grid(lm: Loaded, text: str, part: str | None = None, size: int = 24,
                   target: str | None = None) -> dict[str, Any]:
    """Every layer x head of one part as small thumbnails (average-pooled to at most size x size)."""
    cfg = text_model(lm)
    part = default_part(cfg, part)
    prefix, n_layers, _ = parts_of(cfg)[part]
    ids, _ = encode(lm, text)
    target_ids = target_token_ids(lm, ids, target) if cfg.topology == "encoder-decoder" else None
    key = (*model_key(lm), tuple(ids), tuple(target_ids) if target_ids is not None else None, part, size)
    cached = GRIDS.get(key)
    if cached is not None:  # the same thumbnails after a layer or head change: pooling them again costs ~30 ms
        return cached
    names = [prefix.format(l=i) + ".weights" for i in range(n_layers)]
    store = record_text(lm, ids, target_ids, names)
    grid = []
    for name in names:
        w = store[name][0]  # (heads, q, k)
        q, k = w.shape[-2:]
        pooled = torch.nn.functional.adaptive_avg_pool2d(w, (min(q, size), min(k, size)))
        peak = pooled.amax(dim=(-2, -1), keepdim=True).clamp(min=1e-9)
        grid.append(rounded(pooled / peak, 3))  # each thumbnail scaled to its own peak
    result = {"model": lm.id, "part": part, "n_layers": n_layers, "n_heads": cfg.n_heads, "thumbnails": grid}
    GRIDS.put(key, result, 64 * n_layers * cfg.n_heads * size * size)  # nested Python floats: ~64 bytes each
    return result


def mask_placement(lm: Loaded, text: str, layer: int = 0, head: int = 0) -> dict[str, Any]:
    """Causal mask applied before the softmax (correct) or after it (wrong): the second leaves rows summing < 1."""
    cfg = text_model(lm)
    if cfg.topology != "decoder":
        raise InputError(f"model {lm.id!r} is {a_an(cfg.topology)}; the mask-placement lesson needs a causal decoder")
    layer = check_index("layer", layer, cfg.n_layers)
    head = check_index("head", head, cfg.n_heads)
    ids, tokens = encode(lm, text)
    name = f"blocks.{layer}.attn"
    store = record_text(lm, ids, None, [f"{name}.q", f"{name}.k", f"{name}.weights"], head=head)
    q, k = store[f"{name}.q"][0, 0], store[f"{name}.k"][0, 0]  # (n, d_head)
    scale = cfg.attn_scale if cfg.attn_scale is not None else cfg.head_dim ** -0.5
    unmasked = (q @ k.T) * scale  # (n, n): what the scores are before any mask (position biases aside)
    n = len(ids)
    keep = torch.ones(n, n, dtype=torch.bool).tril()
    after = unmasked.softmax(-1) * keep  # softmax first, then zero the future: probability mass is lost
    before = store[f"{name}.weights"][0, 0]
    return {"model": lm.id, "tokens": tokens, "before": rounded(before), "after": rounded(after),
            "before_row_sums": rounded(before.sum(-1)), "after_row_sums": rounded(after.sum(-1))}
