"""Seeds 002 and 004: a recurrent layer needs fewer operations per token, but it runs one position after another;
attention does more work per token and runs all positions at once. Measured on this CPU.

Two layers of the same width d over the same sequences (batch b, n tokens, causal):
  GRU        torch.nn.GRU(d, d): ~ 6 * 2 d^2 FLOPs per token (three gates, each an input and a hidden product),
             but token t needs the hidden state of token t - 1: n matrix products of b rows, one after another
  attention  attnlab's Attention (h heads, causal, the fused kernel): ~ 8 d^2 per token for the projections plus
             ~ 2 n d (causal half of 4 n d) for the scores and the weighted sum; every product covers all n tokens
FLOPs are counted by torch's FlopCounterMode on one call (forward; and a training step: forward, backward of a
mean-square loss), the attention's on the same layer written out (its fused kernel has no FLOP formula). Times:
the two contestants interleaved, their order shuffled every round, the median and 10th-90th percentiles over the
rounds of each one's wall time and process time, at 1 and at 2 torch threads (this machine's cores), and the
GRU / attention ratio taken within each round.

    python docs/experiments/recurrence_vs_attention.py [--ns 64 256 1024 4096 --rounds 7 --jsonl FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).parent))
from common import write_jsonl  # noqa: E402
from heads_cost import attention_layer, explicit, interleaved_times, machine, quantiles  # noqa: E402


class GRULayer(nn.Module):
    """torch.nn.GRU of width d, returning only the outputs (batch, n, d)."""

    def __init__(self, d: int):
        super().__init__()
        self.gru = nn.GRU(d, d, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gru(x)[0]


class AttentionLayer(nn.Module):
    """attnlab's causal self-attention of width d with h heads (no positions: the layer alone)."""

    def __init__(self, d: int, h: int, n: int):
        super().__init__()
        self.attn = attention_layer(d, h, n)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attn(x, is_causal=True)


class Explicit(nn.Module):
    """The same attention written out with its (batch, h, n, n) scores: what FlopCounterMode can count (it has no
    formula for the fused CPU kernel, so the fused call would count the projections only)."""

    def __init__(self, layer: AttentionLayer):
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return explicit(self.layer.attn, x)


def calls(layer: nn.Module, x: torch.Tensor) -> dict:
    """The two measured calls of a layer: a forward without autograd, and one training step's forward + backward."""
    def forward():
        with torch.no_grad():
            layer(x)

    def train_step():
        layer.zero_grad(set_to_none=True)
        layer(x).square().mean().backward()

    return {"forward": forward, "train step": train_step}


def flops(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ns", type=int, nargs="+", default=[64, 256, 1024, 4096])
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--jsonl", default="")
    args = ap.parse_args()
    lines = []
    for n in args.ns:
        torch.manual_seed(0)
        layers = {"GRU": GRULayer(args.d), "attention": AttentionLayer(args.d, args.heads, n)}
        x = torch.randn(args.batch, n, args.d)
        params = {name: sum(p.numel() for p in layer.parameters()) for name, layer in layers.items()}
        for kind in ("forward", "train step"):
            fns = {name: calls(layer, x)[kind] for name, layer in layers.items()}
            counting = {"GRU": layers["GRU"], "attention": Explicit(layers["attention"])}
            counted = {name: flops(calls(layer, x)[kind]) for name, layer in counting.items()}
            for threads in args.threads:
                torch.set_num_threads(threads)
                times = interleaved_times(fns, args.rounds)
                info = {"n": n, "d": args.d, "heads": args.heads, "batch": args.batch, "call": kind,
                        "rounds": args.rounds, **machine()}
                for name in fns:
                    wall = [w for w, _ in times[name]]
                    row = {**info, "layer": name, "parameters": params[name], "flops": counted[name],
                           "flops_per_token": round(counted[name] / (args.batch * n)),
                           "wall_ms": {k: round(v * 1e3, 3) for k, v in quantiles(wall).items()},
                           "cpu_ms": {k: round(v * 1e3, 3) for k, v in quantiles([c for _, c in times[name]]).items()},
                           "gflops_per_s": round(counted[name] / quantiles(wall)["median"] / 1e9, 2),
                           "wall_vs_attention": {k: round(v, 3) for k, v in quantiles(
                               [w / a for (w, _), (a, _) in zip(times[name], times["attention"], strict=True)]
                           ).items()}}
                    lines.append(json.dumps(row))
                    print(lines[-1], flush=True)
    write_jsonl(lines, args.jsonl, echo=False)  # each line was printed as it came


if __name__ == "__main__":
    main()
