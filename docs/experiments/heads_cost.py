"""Do h heads of width d/h cost about one head of width d?

For one self-attention layer of width d over n tokens, the textbook count is independent of h:
  projections  Q, K, V, O:      4 * (2 n d^2)    = 8 n d^2
  scores Q K^T and weights @ V: 2 * (2 n^2 d)    = 4 n^2 d     (h heads of d/h: h * 2 n^2 (d/h) each)
What does grow with h is the softmax and the score tensor: h * n^2 exponentials and h * n^2 floats written and
read. This script measures FLOPs with torch's FlopCounterMode and CPU time (time.process_time, one thread) of
attnlab's Attention (torch's SDPA path) and of the same math written out (scores materialised), for
h in {1, 2, 4, ..., d/8}. The timings are interleaved: every round times one call of each (h, path) in a
shuffled order, and each ratio to h = 1 is taken within its round; the median and the 10th-90th percentiles
over the rounds are reported, with the machine (CPU model, load average) in every JSON line.

    python docs/experiments/heads_cost.py [--d 256 --n 256 --batch 4 --rounds 30 --jsonl FILE \
        --png docs/img/exp_heads_cost.png]
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


def machine() -> dict:
    """The machine the timings were made on (they mean nothing without it)."""
    import os
    import platform

    cpu = ""
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                   "")
    except OSError:
        pass
    return {"cpu": cpu or platform.processor(), "cores": os.cpu_count(), "torch": torch.__version__,
            "threads": torch.get_num_threads(), "loadavg_1min": round(os.getloadavg()[0], 2)}


def interleaved_times(fns: dict, rounds: int, seed: int = 0) -> dict[str, list[tuple[float, float]]]:
    """(wall, process) seconds of one call of every contestant, per round, in a shuffled order each round: the
    machine's drift (other sessions' load, caches, frequency) falls on every contestant alike instead of on
    whichever happened to run last."""
    import random

    order = list(fns)
    rng = random.Random(seed)
    for fn in fns.values():
        fn()  # warm-up
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in order}
    for _ in range(rounds):
        rng.shuffle(order)
        for name in order:
            wall, cpu = time.perf_counter(), time.process_time()
            fns[name]()
            times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return times


def interleaved_cpu_seconds(fns: dict, rounds: int, seed: int = 0) -> dict[str, list[float]]:
    """Process time of one call of every contestant per round (interleaved_times). One thread: process time is
    the work done, not the wall clock of a busy machine."""
    return {name: [cpu for _, cpu in runs] for name, runs in interleaved_times(fns, rounds, seed).items()}


def quantiles(values: list[float]) -> dict[str, float]:
    """Median and the 10th / 90th percentiles (nearest rank) of a list."""
    v = sorted(values)

    def at(p: float) -> float:
        return v[min(len(v) - 1, int(round(p * (len(v) - 1))))]

    return {"median": at(0.5), "p10": at(0.1), "p90": at(0.9)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--jsonl", default="", help="append the JSON lines to this file as well")
    ap.add_argument("--png", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    d, n, b = args.d, args.n, args.batch
    formula = b * (8 * n * d * d + 4 * n * n * d)
    x = torch.randn(b, n, d)
    heads = [2 ** i for i in range(20) if 2 ** i <= d // 8]
    fns, rows = {}, []
    with torch.no_grad():
        for h in heads:
            attn = attention_layer(d, h, n)
            paths = {"sdpa": partial(attn, x, is_causal=True), "explicit": partial(explicit, attn, x)}
            row = {"h": h, "d_head": d // h, "formula_flops": formula, "softmax_exps": b * h * n * n,
                   "score_bytes": 4 * b * h * n * n}
            for name, fn in paths.items():
                with FlopCounterMode(display=False) as counter:
                    fn()
                row[f"flops_{name}"] = counter.get_total_flops()
                fns[(h, name)] = fn
            rows.append(row)
        times = interleaved_cpu_seconds(fns, args.rounds)
    info = {"d": d, "n": n, "batch": b, "rounds": args.rounds, **machine()}
    lines = []
    for row in rows:
        for name in ("sdpa", "explicit"):
            own, base = times[(row["h"], name)], times[(1, name)]
            row[f"ms_{name}"] = {k: round(v * 1e3, 3) for k, v in quantiles(own).items()}
            # the ratio to h = 1 within each round (same moment, same load), then its spread over the rounds
            row[f"ratio_{name}"] = {k: round(v, 3) for k, v in
                                    quantiles([a / c for a, c in zip(own, base, strict=True)]).items()}
        lines.append(json.dumps({**info, **row}))
    print(f"d={d} n={n} batch={b} rounds={args.rounds}; time ratio to h=1 within a round: median (p10-p90)")
    print("| h | d_head | formula GFLOP | counted (SDPA) | counted (explicit) | softmax exps | score MB "
          "| CPU time SDPA | CPU time explicit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        s, e = r["ratio_sdpa"], r["ratio_explicit"]
        print(f"| {r['h']} | {r['d_head']} | {r['formula_flops'] / 1e9:.3f} | {r['flops_sdpa'] / 1e9:.3f} "
              f"| {r['flops_explicit'] / 1e9:.3f} | {r['softmax_exps'] / 1e6:.2f} M | {r['score_bytes'] / 2**20:.0f} "
              f"| {s['median']:.2f}x ({s['p10']:.2f}-{s['p90']:.2f}) "
              f"| {e['median']:.2f}x ({e['p10']:.2f}-{e['p90']:.2f}) |")
    for line in lines:
        print(line)
    if args.jsonl:
        with open(args.jsonl, "a") as f:
            f.write("".join(line + "\n" for line in lines))
    if args.png:
        sys.path.insert(0, str(Path(__file__).parent))
        from common import figure, save_figure

        hs = [r["h"] for r in rows]
        fig, ax = figure()
        ax.plot(hs, [r["flops_explicit"] / rows[0]["flops_explicit"] for r in rows], "o-",
                label="FLOPs (counted on the explicit path = formula)")
        for name, marker in (("sdpa", "s-"), ("explicit", "^-")):
            med = [r[f"ratio_{name}"]["median"] for r in rows]
            lo = [m - r[f"ratio_{name}"]["p10"] for m, r in zip(med, rows, strict=True)]
            hi = [r[f"ratio_{name}"]["p90"] - m for m, r in zip(med, rows, strict=True)]
            ax.errorbar(hs, med, yerr=[lo, hi], fmt=marker, capsize=3,
                        label=f"CPU time, {'SDPA' if name == 'sdpa' else 'explicit'} (median, p10-p90)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"heads h (d_model {d}, d_head = {d}/h, n {n})")
        ax.set_ylabel("relative to h = 1")
        ax.legend(fontsize=8)
        save_figure(fig, [ax], args.png)


if __name__ == "__main__":
    main()
