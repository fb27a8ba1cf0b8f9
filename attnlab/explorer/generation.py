"""The decoding view: one step of generation with the KV cache, timed with and without it."""

from __future__ import annotations

import time
from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.common import (
    _check_index,
    _round,
    _text_model,
    _token_text,
    encode,
    token_limit,
    token_texts,
)
from attnlab.explorer.registry import Loaded
from attnlab.recording import capture


# ------------------------------------------------------------------------------------------- generation
def _filtered_probs(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """Next-token probabilities after temperature, top-k and nucleus (top-p) filtering.

    The logits are shifted so their maximum is 0 before the division: the softmax is unchanged, and a tiny
    temperature (1e-39) gives -inf for the others instead of inf - inf = NaN. Nucleus filtering always keeps
    the most probable token, so a top_p that rounds to 0 in float32 still leaves one token to draw."""
    if temperature <= 0 or float(torch.tensor(temperature, dtype=logits.dtype)) == 0:  # 5e-324 is 0 in float32
        probs = torch.zeros_like(logits)
        probs[logits.argmax()] = 1.0
        return probs
    scaled = (logits - logits.max()) / temperature
    if 0 < top_k < scaled.numel():
        kth = scaled.topk(top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    probs = scaled.softmax(-1)
    if 0 < top_p < 1:
        sorted_p, order = probs.sort(descending=True)
        cumulative = sorted_p.cumsum(-1)
        drop = cumulative - sorted_p >= top_p  # keep the smallest prefix whose mass reaches top_p
        drop[0] = False
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(0, order, sorted_p)
        probs = probs / probs.sum()
    return probs


def _generator_seed(seed: int, step: int) -> int:
    """The sampling seed of step `step` (seed * 100003 + step, as before), folded into the 64-bit range that
    torch.Generator.manual_seed accepts when it would fall outside it."""
    value = seed * 100_003 + step
    return value if -(2**63) <= value < 2**64 else value % 2**64


def _timed(fn, repeats: int = 3) -> tuple[Any, float]:
    best, result = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return result, best * 1000


def generation_step(lm: Loaded, prompt: str, generated: list[int] | None = None, temperature: float = 1.0,
                    top_k: int = 0, top_p: float = 1.0, seed: int = 0, bars: int = 10) -> dict[str, Any]:
    """One decoding step: the next-token distribution under the sampling settings, the sampled token, the
    KV cache after the step, and the step's time with the cache (one new token) and without (full recompute)."""
    from attnlab.cache import KVCache

    cfg = _text_model(lm)
    if cfg.topology not in ("decoder", "encoder-decoder"):
        raise InputError(f"model {lm.id!r} is a {cfg.topology}; generation needs a decoder or an encoder-decoder")
    if isinstance(seed, bool) or not isinstance(seed, int) or not -(2**63) <= seed < 2**63:
        raise InputError(f"seed={seed!r}: allowed an integer from -2**63 to 2**63-1")
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

        # best of 3 for small models; one timing each for large ones, where a step already takes a while
        repeats = 3 if sum(p.numel() for p in model.parameters()) < 20_000_000 else 1
        logits_full, ms_full = _timed(full, repeats)
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

        logits_cached, _ = _timed(cached, repeats)
        ms_cached = min(t for _, t in caches) * 1000
        cache = caches[-1][0]
    if not bool(torch.isfinite(logits_full).all()):
        raise InputError(f"model {lm.id!r} gives logits that are not finite (NaN or infinity) for this prompt: its "
                         "weights are probably damaged, so there is nothing to sample from")
    probs = _filtered_probs(logits_full.float(), float(temperature), int(top_k), float(top_p))
    gen = torch.Generator().manual_seed(_generator_seed(int(seed), len(generated)))
    token = int(torch.multinomial(probs, 1, generator=gen))
    raw_probs = logits_full.float().softmax(-1)
    top = probs.topk(min(bars, probs.numel()))
    bar_list = [{"token": _token_text(lm, int(i)), "id": int(i), "prob": round(float(p), 6),
                 "raw_prob": round(float(raw_probs[int(i)]), 6)} for p, i in zip(top.values, top.indices, strict=True)]
    result = {"model": lm.id, "topology": cfg.topology, "step": len(generated) + 1, "bars": bar_list,
              "token": _token_text(lm, token), "token_id": token, "generated": generated + [token],
              "text": token_texts(lm, seq + [token]),
              "cache": {"positions": cache.length, "entries": cache.entries, "bytes": cache.nbytes,
                        "formula": f"2 x {len(cache.layers)} layers x {cfg.kv_heads} kv heads x {cache.length} "
                                   f"positions x {cfg.head_dim} d_head"},
              "ms_with_cache": round(ms_cached, 4), "ms_without_cache": round(ms_full, 4),
              "cache_matches": bool(torch.allclose(logits_full, logits_cached, atol=1e-4, rtol=1e-4)),
              "finished": cfg.eos_token_id is not None and token == cfg.eos_token_id}
    if enc_dec:
        names = [f"decoder.blocks.{i}.cross_attn.weights" for i in range(cfg.decoder_layers)]
        with torch.no_grad(), capture(model, names) as store:
            model.decode(x, enc)
        result["source"] = [_token_text(lm, i) for i in source]
        # each layer's cross-attention of the newest target position over the source, averaged over heads
        result["cross_attention"] = [_round(store[nm][0, :, -1].mean(0), 5) for nm in names]
    return result
