"""Issue 17.7: do h heads of width d/h cost about one head of width d?

For one self-attention layer of width d over n tokens, the textbook count is independent of h:
  projections  Q, K, V, O:      4 * (2 n d^2)    = 8 n d^2
  scores Q K^T and weights @ V: 2 * (2 n^2 d)    = 4 n^2 d     (h heads of d/h: h * 2 n^2 (d/h) each)
What does grow with h is the softmax and the score tensor: h * n^2 exponentials and h * n^2 floats written and
read. This script measures FLOPs with torch's FlopCounterMode and CPU time (time.process_time, one thread) of
attnlab's Attention (torch's SDPA path) and of the same math written out (scores materialised), for
h in {1, 2, 4, ..., d/8}.

    python docs/experiments/heads_cost.py [--d 256 --n 256 --batch 4 --repeats 20 --png docs/img/exp_heads_cost.png]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

import attnlab


def attention_layer(d: int, h: int, n: int) -> torch.nn.Module:
    model = attnlab.build_model(attnlab.ModelConfig(topology="decoder", vocab_size=8, d_model=d, n_heads=h,
                                                    d_ff=4 * d, n_layers=1, max_len=n, position="none"))
    return model.blocks[0].attn.eval()


def explicit(attn, x: torch.Tensor) -> torch.Tensor:
    """The same layer written out: the (batch, h, n, n) scores and weights exist in memory."""
    b, n, _ = x.shape
    q, k, v = attn.qkv(x).split(attn.q_width, dim=-1)
    q, k, v = (t.view(b, n, attn.n_heads, attn.d_head).transpose(1, 2) for t in (q, k, v))  # (b, h, n, d_head)
    scores = (q @ k.transpose(-2, -1)) * attn.scale  # (b, h, n, n)
    mask = torch.ones(n, n, dtype=torch.bool).triu(1)
    weights = scores.masked_fill(mask, float("-inf")).softmax(-1)
    out = (weights @ v).transpose(1, 2).reshape(b, n, attn.q_width)
    return attn.out(out)


def cpu_seconds(fn, repeats: int) -> float:
    """Median process time of one call (one thread: process time is the work done, not the machine's load)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return sorted(times)[len(times) // 2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--png", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    d, n, b = args.d, args.n, args.batch
    formula = b * (8 * n * d * d + 4 * n * n * d)
    x = torch.randn(b, n, d)
    rows = []
    h = 1
    with torch.no_grad():
        while h <= d // 8:
            attn = attention_layer(d, h, n)
            paths = {"sdpa": partial(attn, x, is_causal=True), "explicit": partial(explicit, attn, x)}
            row = {"h": h, "d_head": d // h, "formula_flops": formula, "softmax_exps": b * h * n * n,
                   "score_bytes": 4 * b * h * n * n}
            for name, fn in paths.items():
                with FlopCounterMode(display=False) as counter:
                    fn()
                row[f"flops_{name}"] = counter.get_total_flops()
                row[f"cpu_s_{name}"] = cpu_seconds(fn, args.repeats)
            rows.append(row)
            h *= 2
    base = rows[0]
    print(f"d={d} n={n} batch={b}; times relative to h=1 (h=1: sdpa {base['cpu_s_sdpa'] * 1e3:.2f} ms, "
          f"explicit {base['cpu_s_explicit'] * 1e3:.2f} ms)")
    print("| h | d_head | formula GFLOP | counted (SDPA) | counted (explicit) | softmax exps | score MB "
          "| CPU time SDPA | CPU time explicit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['h']} | {r['d_head']} | {r['formula_flops'] / 1e9:.3f} | {r['flops_sdpa'] / 1e9:.3f} "
              f"| {r['flops_explicit'] / 1e9:.3f} | {r['softmax_exps'] / 1e6:.2f} M | {r['score_bytes'] / 2**20:.0f} "
              f"| {r['cpu_s_sdpa'] / base['cpu_s_sdpa']:.2f}x | {r['cpu_s_explicit'] / base['cpu_s_explicit']:.2f}x |")
    print(json.dumps(rows))
    if args.png:
        sys.path.insert(0, str(Path(__file__).parent))
        from common import figure

        hs = [r["h"] for r in rows]
        fig, ax = figure()
        ax.plot(hs, [r["flops_explicit"] / base["flops_explicit"] for r in rows], "o-",
                label="FLOPs (counted on the explicit path = formula)")
        ax.plot(hs, [r["cpu_s_sdpa"] / base["cpu_s_sdpa"] for r in rows], "s-", label="CPU time, SDPA")
        ax.plot(hs, [r["cpu_s_explicit"] / base["cpu_s_explicit"] for r in rows], "^-", label="CPU time, explicit")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"heads h (d_model {d}, d_head = {d}/h, n {n})")
        ax.set_ylabel("relative to h = 1")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(args.png)


if __name__ == "__main__":
    main()
