"""Does recording cost anything when it records nothing?

The forward pass asks the recorder's ContextVar once per module (`recording.active()`); a recorder whose
filter matches nothing keeps attention on the fused SDPA path. This script times, in one process and
interleaved A B A B after a warm-up (so drift and other load hit both alike):

  A  plain forward()                                                  (no recorder)
  B  forward() under capture(model, names=["nothing.matches"])       (recorder active, keeps nothing)
  C  forward() under capture(model, names=["blocks.0.attn.weights"]) (one layer takes the explicit path)

and prints the median and minimum time of each and the ratios B/A and C/A. B/A ~ 1.00 is the claim.

    python -m attnlab.benchmarks.recording [--quick] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import torch

import attnlab
from attnlab.recording import capture


def _time(fn, repeats: int) -> float:
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller model and fewer rounds (a smoke run)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    overrides = dict(n_layers=2, d_model=128, d_ff=512, max_len=64) if args.quick else \
        dict(n_layers=6, d_model=384, n_heads=6, d_ff=1536, max_len=256)
    config = attnlab.presets["tiny-decoder"].replace(**overrides)
    batch, seq = (2, 32) if args.quick else (8, 128)
    rounds, repeats = (5, 3) if args.quick else (15, 5)

    torch.manual_seed(0)
    model = attnlab.build_model(config).eval()
    ids = torch.randint(0, config.vocab_size, (batch, seq))

    def plain():
        model(ids)

    def filtered(names):
        def run():
            with capture(model, names=names):
                model(ids)
        return run

    variants = {"A plain": plain, "B recorder, nothing kept": filtered(["nothing.matches"]),
                "C recorder, blocks.0.attn.weights": filtered(["blocks.0.attn.weights"])}
    times: dict[str, list[float]] = {name: [] for name in variants}
    with torch.inference_mode():
        for fn in variants.values():  # warm-up
            _time(fn, 2)
        for _ in range(rounds):  # interleaved A B C A B C ...
            for name, fn in variants.items():
                times[name].append(_time(fn, repeats))

    medians = {name: statistics.median(ts) for name, ts in times.items()}
    base, base_min = medians["A plain"], min(times["A plain"])
    print(f"machine: {platform.machine()} {platform.processor() or ''} ({os.cpu_count()} CPUs, "
          f"{torch.get_num_threads()} torch threads), python {platform.python_version()}, torch {torch.__version__}")
    print(f"model: decoder d_model={config.d_model} n_layers={config.n_layers} n_heads={config.n_heads}, "
          f"batch {batch} x seq {seq}; {rounds} interleaved rounds of {repeats} forwards")
    for name, median in medians.items():
        spread = (min(times[name]) * 1e3, max(times[name]) * 1e3)
        print(f"  {name:38s} median {median * 1e3:8.2f} ms  (min {spread[0]:.2f}, max {spread[1]:.2f})  "
              f"ratio to A: median {median / base:.3f}, min {min(times[name]) / base_min:.3f}")
    print("(on a shared machine the min is the least disturbed estimate; the median shows the load)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
