"""The cost view: attnlab.cost for the loaded model at n tokens, and its growth with n."""

from __future__ import annotations

from typing import Any

from attnlab.errors import InputError
from attnlab.explorer.server.common import (
    config_of,
    param_count,
)
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.views.cost.held import held_weights

MAX_COST_N = 1 << 15  # the longest n this tab counts for a model without a position limit


# ----------------------------------------------------------------------------------------------- cost
def cost(lm: Loaded, n: int = 128, measure: bool = False, stop=None) -> dict[str, Any]:
    """attnlab.cost for this model at n tokens: the per-operation table (FLOPs, bytes, intensity), the KV cache,
    and how FLOPs and cache grow with n; `measure` also times the forward at each n of the sweep.
    `stop()` is called after each measured length and raises to end the sweep (the server's deadline, or its
    client went away)."""
    from attnlab.cost import cost_table, forward_flops, kv_cache_bytes

    cfg = config_of(lm)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"n={n!r}: allowed a positive integer (up to the model's position limit)")
    asked, note = n, None
    if cfg.topology == "vit":
        n = cfg.n_patches + 1
        if asked != n:
            note = f"a ViT always reads [CLS] + {cfg.n_patches} patches: shown at n = {n}, not {asked}"
    elif cfg.seq_limit and n > cfg.seq_limit:  # learned positions: no row beyond max_len, so clamp and say so
        n = cfg.seq_limit
        note = f"n = {asked} is beyond this model's position limit (max_len = {n}): shown at n = {n}"
    elif n > MAX_COST_N:  # no position limit (RoPE, ALiBi): the explorer's own ceiling, said the same way
        n = MAX_COST_N
        note = f"n = {asked} is beyond the {MAX_COST_N:,} tokens this tab counts: shown at n = {n}"
    table = cost_table(cfg, 1, n)
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
    result = {"model": lm.id, "n": n, "requested_n": asked, "limit": cfg.seq_limit, "note": note,
              "params": param_count(lm.model), "at_n": at_n, "rows": rows,
              "sweep": sweep}
    result["heads"] = heads_comparison(cfg, n)
    result["decode"] = decode_step(cfg, n, lm.id)
    result["held"] = held = held_weights(lm.model)
    if result["decode"]:
        result["decode"]["held"] = held_step(result["decode"], held, _decode_weights(cfg))
    if measure:
        from attnlab.cost.measure import sweep as measured_sweep

        seqs = [m for m in ns if m <= 512][-6:]
        if cfg.topology != "vit" and len(seqs) >= 2:
            points = measured_sweep(cfg, seqs, series=("forward",), budget_s=0.05,
                                    progress=None if stop is None else (lambda point: stop()))
            result["measured"] = [{"n": p.n, "ms": round(p.seconds * 1000, 4), "flops": p.flops} for p in points]
    return result


def decode_step(cfg, n: int, model_id: str) -> dict[str, Any] | None:
    """One decoding step with the KV cache: the n-th token's query against n keys (the n-1 cached ones and its
    own), per operation and layer, as `attnlab cost MODEL --seq n --mode decode_step` prints it (its "with the KV
    cache" table). Beside the totals: the weight matrices every step reads once (the same bytes for any n) and
    the KV cache it reads (growing with n), whose sum is why a step is memory-bound (intensity near 1 FLOP/B).
    None for a model that does not generate (an encoder, a ViT)."""
    from attnlab.cost import cost_table, kv_cache_bytes
    from attnlab.cost.analytic import DTYPE_BYTES

    if cfg.topology not in ("decoder", "encoder-decoder"):
        return None
    table = cost_table(cfg, 1, n, mode="decode_step", cached=True)
    rows = [{"stack": r.stack, "name": r.name, "formula": r.formula, "layers": r.layers,
             "flops_per_layer": r.flops // r.layers, "flops": r.flops, "bytes_read": r.bytes_read,
             "bytes_written": r.bytes_written, "intensity": round(r.intensity, 4) if r.bytes_moved else None}
            for r in table.rows]
    layers = cfg.n_layers if cfg.topology == "decoder" else cfg.decoder_layers
    block = [r for r in table.rows if r.layers == layers and r.stack  # the rows each block repeats
             and not r.name.startswith("embedding") and "(embedding/final)" not in r.name]
    kv = kv_cache_bytes(cfg, 1, n)
    moved = table.bytes_read + table.bytes_written
    return {"n": table.seq, "layers": layers, "dtype": table.dtype, "rows": rows,
            "flops": table.flops, "matmul_flops": table.matmul_flops, "bytes_read": table.bytes_read,
            "bytes_written": table.bytes_written, "bytes_moved": moved,
            "intensity": round(table.flops / moved, 4) if moved else None,
            "per_layer": {"flops": sum(r.flops for r in block) // layers,
                          "bytes_moved": sum(r.bytes_moved for r in block) // layers},
            "weights_bytes": _decode_weights(cfg) * DTYPE_BYTES[table.dtype],
            "kv_read_bytes": kv["self"] + kv["cross"],
            "command": f"attnlab cost {model_id} --seq {table.seq} --mode decode_step"}


def held_step(step: dict[str, Any], held: dict[str, Any], weights: int) -> dict[str, Any] | None:
    """The decoding step with its weight matrices read at the precision the model holds them (kept Q4_1 / Q8_0
    blocks, int8, int4) instead of float32: the same FLOPs over fewer bytes. None when the model holds float32
    weights (nothing changes) or when its matrices do not match the table's count (nothing to swap safely)."""
    if held["matmul"]["weights"] != weights or held["matmul"]["bytes"] == step["weights_bytes"]:
        return None
    moved = step["bytes_moved"] - step["weights_bytes"] + held["matmul"]["bytes"]
    formats = [f["format"] for f in held["formats"] if f["format"] != "float32"]
    return {"formats": formats, "weights_bytes": held["matmul"]["bytes"], "bytes_moved": moved,
            "intensity": round(step["flops"] / moved, 4)}


def _decode_weights(cfg) -> int:
    """Numbers in the weight matrices one decoding step multiplies by: every decoder block's projections and FFN
    (with cross-attention's Q and W_O in an encoder-decoder; its K, V are cached) and the LM head."""
    from attnlab.cost.analytic import matmul_parameters

    if cfg.topology == "decoder":
        return matmul_parameters(cfg)
    d, ff, qw, kvw = cfg.d_model, cfg.d_ff, cfg.n_heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    block = d * (qw + 2 * kvw) + qw * d + d * ff * (2 if cfg.gated else 1) + ff * d + d * qw + qw * d
    return cfg.decoder_layers * block + cfg.vocab_size * d


def heads_comparison(cfg, n: int) -> list[dict[str, Any]]:
    """h heads of width d_head against one head of width h * d_head, on one attention layer at n tokens: torch's
    FlopCounterMode on the real layer (meta device: no memory, no arithmetic) beside the formula
    2n·d·3w (Q, K, V) + 2·2·n²·w (Q Kᵀ and P V over all heads) + 2n·w·d (W_O), w = h · d_head. The head count
    drops out: splitting the width into heads is free in FLOPs; what it buys is h separate attention patterns."""
    from dataclasses import replace

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    from attnlab.layers.attention import Attention

    width, d = cfg.n_heads * cfg.head_dim, cfg.d_model
    rows = []
    for heads in sorted({cfg.n_heads, 1}, reverse=True):
        variant = replace(cfg, n_heads=heads, n_kv_heads=None, d_head=width // heads, position="learned",
                          rotary_dim=None, rope_scaling={}, rope_local_theta=None)  # RoPE options go with RoPE
        with torch.device("meta"):
            layer = Attention(variant)
            x = torch.zeros(1, n, d)
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), counter:
            layer(x)
        predicted = 2 * n * d * 3 * width + 2 * 2 * n * n * width + 2 * n * width * d
        rows.append({"heads": heads, "d_head": width // heads, "flops_counted": int(counter.get_total_flops()),
                     "flops_formula": predicted})
    return rows
