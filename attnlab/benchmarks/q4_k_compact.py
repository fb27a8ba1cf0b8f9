"""Q4_K's two tile layouts side by side (layers/q4_k_kernel.py): the compact one (the file's own scales: 1184 bytes
per 2048 weights) and the float32 one (1536 bytes), one-row products of TinyLlama-1.1B's matrix shapes, against a
plain read (torch.sum) of a float32 buffer of each layout's bytes.

    python -m attnlab.benchmarks.q4_k_compact                  # one thread, CPU clock, 7 interleaved rounds
    python -m attnlab.benchmarks.q4_k_compact --rounds 11 --copies 12

The weights are random Q4_K blocks (random codes and 6-bit scales, float16 d and dmin near 1e-3, as
tests/test_kquants.py draws them): a product's time depends on the bytes and the layout, not on the values. Each
matrix kind is held in --copies copies, cycled, so its tiles come from memory as a decoding step reads them. The
products are compared bit for bit before timing (the two layouts give the same numbers). Times are per matrix, the
median over rounds of this process's CPU time (one torch thread, so other processes' load does not count), the
contestants interleaved in each round.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np
import torch

from attnlab.benchmarks.common import interleaved
from attnlab.layers import int4_kernel, kquants, q4_k_kernel

SHAPES = {"q/o (2048 x 2048)": (2048, 2048), "gate/up (2048 x 5632)": (5632, 2048),
          "down (5632 x 2048)": (2048, 5632)}  # (out, in): TinyLlama-1.1B's blocks


def random_q4_k(n: int, k: int, seed: int) -> dict[str, torch.Tensor]:
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=(n, k // 256, kquants.BYTES["q4_k"]), dtype=np.uint8)
    for lo in (0, 2):  # float16 d, dmin near 1e-3
        raw[..., lo:lo + 2] = (rng.uniform(0.25, 1, size=(n, k // 256)) * 1e-3).astype(np.float16).view(
            np.uint8).reshape(n, k // 256, 2)
    return kquants.q4_k(torch.from_numpy(raw.reshape(n, -1)))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--copies", type=int, default=8)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} | {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, 1 torch thread | torch {torch.__version__} | load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"# command: python -m attnlab.benchmarks.q4_k_compact {' '.join(sys.argv[1:] if argv is None else argv)}")
    if not q4_k_kernel.available():
        print(f"the Q4_K kernel does not run here: {q4_k_kernel.unavailable_reason()}")
        return 0
    print("| matrix | compact: tiles, product, read | float32: tiles, product, read | compact / float32 "
          "(product) | product / read (compact, float32) |")
    print("|---|---|---|---|---|")
    ratios = []
    for name, (n, k) in SHAPES.items():
        layers = [random_q4_k(n, k, seed) for seed in range(args.copies)]
        compact = [q4_k_kernel.pack(b["qweight"], b["scale"], b["min"])[0] for b in layers]
        wide = [int4_kernel.pack(b["qweight"], b["scale"], b["min"])[0] for b in layers]
        assert compact[0].shape[-1] == q4_k_kernel.COMPACT_BYTES and wide[0].shape[-1] == q4_k_kernel.TILE_BYTES
        x = torch.randn(1, k)
        for c, w in zip(compact, wide, strict=True):  # the same numbers, bit for bit
            assert torch.equal(q4_k_kernel.gemv(x, c, None, n), q4_k_kernel.gemv(x, w, None, n))
        reads = {"compact": [torch.ones(t.numel() // 4) for t in compact],
                 "float32": [torch.ones(t.numel() // 4) for t in wide]}
        times = interleaved({
            "compact": lambda x=x, n=n, tiles=compact: [q4_k_kernel.gemv(x, t, None, n) for t in tiles],
            "float32": lambda x=x, n=n, tiles=wide: [q4_k_kernel.gemv(x, t, None, n) for t in tiles],
            "read compact": lambda r=reads["compact"]: [t.sum() for t in r],
            "read float32": lambda r=reads["float32"]: [t.sum() for t in r]},
            warmup=2, repeats=args.rounds, clock="cpu")
        us = {key: statistics.median(v) / args.copies * 1e6 for key, v in times.items()}
        ratio = us["compact"] / us["float32"]
        ratios.append(ratio)
        print(f"| {name} | {compact[0].numel() / 2**20:.2f} MB, {us['compact']:.0f} us, {us['read compact']:.0f} us "
              f"| {wide[0].numel() / 2**20:.2f} MB, {us['float32']:.0f} us, {us['read float32']:.0f} us | "
              f"{ratio:.2f}x | {us['compact'] / us['read compact']:.2f} / {us['float32'] / us['read float32']:.2f} |",
              flush=True)
    print(f"compact / float32 time: {min(ratios):.2f}-{max(ratios):.2f}x; bytes {q4_k_kernel.COMPACT_BYTES} / "
          f"{q4_k_kernel.TILE_BYTES} = {q4_k_kernel.COMPACT_BYTES / q4_k_kernel.TILE_BYTES:.3f}; load average after "
          f"{os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
