"""Seed 002: sparse, linear and hierarchical attention against full attention - the cost side only.

No quality claims: nothing is trained. Each variant is the attention core alone (q, k, v given; the projections
cost the same 8 n d^2 for all of them), bidirectional (an encoder's attention), for h heads of d_head over n
tokens, written in plain torch so that torch's FlopCounterMode can count its matrix products:
  full          softmax(q k^T / sqrt(d)) v over all n keys                        ~ 4 h n^2 d_head
  local         each block of w queries attends to its own block and the two beside it (3w keys)  ~ 12 h n w d
  strided       query i attends to the keys j with j = i (mod s): n/s keys each                    ~ 4 h n^2 d / s
  linear        phi(q) (phi(k)^T v) with phi = elu + 1 (Katharopoulos et al. 2020): no n x n matrix ~ 4 h n d^2
  hierarchical  w neighbours (own block) in full, plus the n/w block means of k and v as summaries  ~ 4 h n (w + n/w) d
  multilevel    w neighbours in full, then r block means per level over log_r(n/w) levels  ~ 4 h n (w + r log_r(n/w)) d
FLOPs count matrix products only (FlopCounterMode has no formula for softmax or elementwise work). Times are
process time of one call on one thread, the variants interleaved in a shuffled order every round, reported as
the median and 10th-90th percentiles over the rounds, with the ratio to full attention taken within each round.

    python docs/experiments/efficient_attention_cost.py [--ns 256 512 1024 2048 4096 --rounds 7 --jsonl FILE]

--ns takes the lengths every variant can: 64-token blocks numbering 1, 2 or 3 times a power of 4 (64, 128, 192,
256, 512, 768, 1024, 2048, 3072, 4096, ...); any other length is refused in one line (`fits`).
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).parent))
from common import write_jsonl
from heads_cost import interleaved_cpu_seconds, machine, quantiles  # noqa: E402

WINDOW, STRIDE, BRANCHING = 64, 8, 4  # local/hierarchical/multilevel block w, strided's s, multilevel's r


def fits(n: int) -> bool:
    """Whether every variant can take n tokens: whole blocks of WINDOW (local, hierarchical, multilevel), whole
    groups of STRIDE (strided), and multilevel's larger blocks, each BRANCHING of the one below or all n tokens,
    dividing n (n = 384 is 6 blocks: the level of 4 blocks leaves 2 over, and its view failed)."""
    if n <= 0 or n % WINDOW or n % STRIDE:
        return False
    size = WINDOW
    while size * BRANCHING < n:
        size *= BRANCHING
        if n % size:
            return False
    return True


def check_lengths(ns: list[int]) -> str | None:
    """The error line for the lengths in `ns` that some variant cannot take (None when every one fits)."""
    bad = [n for n in ns if not fits(n)]
    if not bad:
        return None
    allowed = [n for n in range(WINDOW, max(4096, 2 * max(bad)) + 1, WINDOW) if fits(n)]
    return (f"--ns {' '.join(map(str, bad))}: every variant needs n a multiple of {WINDOW} whose {WINDOW}-token "
            f"blocks number 1, 2 or 3 times a power of {BRANCHING} (multilevel's levels); allowed up to "
            f"{allowed[-1]}: {', '.join(map(str, allowed))}")


def full(q, k, v):  # (b, h, n, d) each
    return (q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5).softmax(-1) @ v


def local(q, k, v, w: int = WINDOW):
    """Block-local attention: the n/w blocks of w queries each see 3w keys (the block before, its own, after)."""
    b, h, n, d = q.shape
    nb = n // w
    qb = q.view(b, h, nb, w, d)
    pad = lambda t: F.pad(t.view(b, h, nb, w, d), (0, 0, 0, 0, 1, 1))  # noqa: E731  (b, h, nb + 2, w, d)
    kp, vp = pad(k), pad(v)
    kb = torch.cat([kp[:, :, :-2], kp[:, :, 1:-1], kp[:, :, 2:]], dim=3)  # (b, h, nb, 3w, d)
    vb = torch.cat([vp[:, :, :-2], vp[:, :, 1:-1], vp[:, :, 2:]], dim=3)
    valid = torch.cat([torch.arange(nb) > 0, torch.ones(nb, dtype=torch.bool), torch.arange(nb) < nb - 1])
    valid = valid.view(3, nb).T.repeat_interleave(w, 1)  # (nb, 3w): padding blocks are not keys
    scores = (qb @ kb.transpose(-2, -1)) * d ** -0.5  # (b, h, nb, w, 3w)
    scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
    return (scores.softmax(-1) @ vb).view(b, h, n, d)


def strided(q, k, v, s: int = STRIDE):
    """Query i attends to the keys j = i (mod s): s interleaved sequences of n/s tokens, full attention in each."""
    b, h, n, d = q.shape
    split = lambda t: t.view(b, h, n // s, s, d).transpose(2, 3)  # noqa: E731  (b, h, s, n/s, d)
    out = full(split(q), split(k), split(v))
    return out.transpose(2, 3).reshape(b, h, n, d)


def linear(q, k, v):
    """phi(q) (phi(k)^T v) / (phi(q) sum_j phi(k_j)): the (d x d) summary replaces the (n x n) matrix."""
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    kv = fk.transpose(-2, -1) @ v  # (b, h, d, d)
    z = fq @ fk.sum(-2, keepdim=True).transpose(-2, -1)  # (b, h, n, 1)
    return (fq @ kv) / z


def hierarchical(q, k, v, w: int = WINDOW):
    """Each query attends to the w keys of its own block and to the n/w block means (one coarse level)."""
    b, h, n, d = q.shape
    nb = n // w
    kc, vc = k.view(b, h, nb, w, d).mean(3), v.view(b, h, nb, w, d).mean(3)  # (b, h, nb, d) summaries
    qb = q.view(b, h, nb, w, d)
    fine = qb @ k.view(b, h, nb, w, d).transpose(-2, -1)  # (b, h, nb, w, w)
    coarse = qb @ kc[:, :, None].transpose(-2, -1)  # (b, h, nb, w, nb)
    weights = (torch.cat([fine, coarse], -1) * d ** -0.5).softmax(-1)
    out = weights[..., :w] @ v.view(b, h, nb, w, d) + weights[..., w:] @ vc[:, :, None]
    return out.view(b, h, n, d)


def multilevel(q, k, v, w: int = WINDOW, r: int = BRANCHING):
    """Hierarchical attention with log_r(n / w) levels: each query sees the w keys of its own block in full, then,
    level by level, the r mean keys and values of the blocks that make up its next larger block (w r, w r^2, ...
    up to n). Keys per query: w + r log_r(n / w), so the cost grows as n log n, not n^2."""
    b, h, n, d = q.shape
    scores = [q.view(b, h, n // w, w, d) @ k.view(b, h, n // w, w, d).transpose(-2, -1)]  # (b, h, n/w, w, w)
    values = [v.view(b, h, n // w, w, d)]
    size = w  # the blocks summarised at this level
    while size < n:
        group = min(size * r, n)  # the larger block whose children a query sees as summaries
        kc, vc = (t.view(b, h, n // size, size, d).mean(3).view(b, h, n // group, group // size, d) for t in (k, v))
        scores.append(q.view(b, h, n // group, group, d) @ kc.transpose(-2, -1))  # (b, h, n/group, group, r)
        values.append(vc)
        size = group
    weights = (torch.cat([sc.reshape(b, h, n, -1) for sc in scores], -1) * d ** -0.5).softmax(-1)
    out, start = 0, 0
    for sc, val in zip(scores, values, strict=True):
        m = sc.shape[-1]
        out = out + (weights[..., start:start + m].reshape(sc.shape) @ val).reshape(b, h, n, d)
        start += m
    return out


VARIANTS = {"full": full, "local": local, "strided": strided, "linear": linear, "hierarchical": hierarchical,
            "multilevel": multilevel}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ns", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096])
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--d-head", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--jsonl", default="")
    args = ap.parse_args()
    if (problem := check_lengths(args.ns)) is not None:
        ap.error(problem)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    lines = []
    for n in args.ns:
        q, k, v = (torch.randn(1, args.heads, n, args.d_head) for _ in range(3))
        fns, flops = {}, {}
        with torch.no_grad():
            for name, fn in VARIANTS.items():
                fns[name] = partial(fn, q, k, v)
                with FlopCounterMode(display=False) as counter:
                    fns[name]()
                flops[name] = counter.get_total_flops()
            times = interleaved_cpu_seconds(fns, args.rounds)
        info = {"n": n, "heads": args.heads, "d_head": args.d_head, "window": WINDOW, "stride": STRIDE,
                "rounds": args.rounds, **machine()}
        for name in VARIANTS:
            row = {**info, "variant": name, "flops": flops[name],
                   "flops_vs_full": round(flops[name] / flops["full"], 4),
                   "ms": {key: round(val * 1e3, 3) for key, val in quantiles(times[name]).items()},
                   "time_vs_full": {key: round(val, 3) for key, val in quantiles(
                       [a / c for a, c in zip(times[name], times["full"], strict=True)]).items()}}
            lines.append(json.dumps(row))
            print(lines[-1], flush=True)
    write_jsonl(lines, args.jsonl, echo=False)  # each line was printed as it came


if __name__ == "__main__":
    main()
