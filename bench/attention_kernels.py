"""Causal attention forward + backward at the gpt-4L training shape, three ways, interleaved in one process:
SDPA's default CPU kernel (flash), SDPA forced to its math path, and an explicit softmax(QK^T)V.

    python bench/attention_kernels.py [--rounds 60]

One thread, process CPU time, medians after 10 warm-up rounds. Cited in bench/RESULTS.md ("Latest") for why
attention is not where attnlab can gain on the small training shape. Not run by `attnlab bench` (no peer library).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    batch, heads, seq, d_head = 12, 4, 64, 32  # gpt-4L: batch 12, 4 heads of 32, block 64
    q, k, v = (torch.randn(batch, heads, seq, d_head, requires_grad=True) for _ in range(3))
    causal = torch.ones(seq, seq, dtype=torch.bool).tril()

    def flash():
        F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()

    def math():
        with sdpa_kernel(SDPBackend.MATH):
            F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()

    def explicit():
        scores = (q @ k.transpose(-1, -2)) * d_head ** -0.5  # (batch, heads, seq, seq)
        (scores.masked_fill(~causal, float("-inf")).softmax(-1) @ v).sum().backward()

    contestants = {"sdpa (default)": flash, "sdpa math": math, "explicit softmax": explicit}
    times: dict[str, list[float]] = {name: [] for name in contestants}
    for _ in range(args.rounds):
        for name, fn in contestants.items():
            start = time.process_time()
            fn()
            times[name].append(time.process_time() - start)
    base = statistics.median(times["sdpa (default)"][10:])
    print(f"# {batch} x {heads} heads x {seq} x {d_head}, causal, forward + backward, 1 thread, CPU time, "
          f"torch {torch.__version__}")
    for name, values in times.items():
        median = statistics.median(values[10:])
        print(f"{name:18s} {median * 1e3:7.3f} ms   {median / base:.2f}x the default")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
