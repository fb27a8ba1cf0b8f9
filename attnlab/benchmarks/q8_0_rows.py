"""Q8_0's multi-row kernel against the one-row kernel called once per row: the prefill products of 5 to 512 rows
(`q8_0_kernel.rows_product` against `q8_0_kernel.gemv` row by row, the path such products took before 2026-11-28),
on SmolLM2-135M's shapes, one thread, this process's CPU clock.

    OMP_NUM_THREADS=1 nice -n 10 python -m attnlab.benchmarks.q8_0_rows [--rounds 5]

Each shape (outputs x inputs) is one random Q8_0 matrix; each row count is timed in interleaved rounds (rows_product,
then the row-by-row calls on the same rows), and the medians are printed with their ratio; the last line gives the
smallest and the largest ratio. Both answers are compared bit for bit (tests/test_rows_product.py's promise).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import torch

SHAPES = ((576, 576), (192, 576), (1536, 576), (576, 1536), (49152, 576))  # q/o, k/v, gate/up, down, the tied head
ROWS = (5, 8, 16, 32, 64, 128, 256, 512)


def _cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from attnlab.layers import kernel_variants, q8_0_kernel
    if not (q8_0_kernel.available() and q8_0_kernel.rows_available()):
        raise SystemExit(f"the Q8_0 kernels are unavailable here: {q8_0_kernel.unavailable_reason()}")
    load = os.getloadavg()
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor() or platform.machine())
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} | {cpu}, {os.cpu_count()} cores | "
          f"torch {torch.__version__} | kernel variant "
          f"{kernel_variants.CHOSEN.get('q8_0_rows')} | load average at start {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f}")
    print(f"# one thread, process CPU, median of {args.rounds} interleaved rounds")
    print("| outputs x inputs | rows | rows_product ms | row by row ms | ratio |")
    print("|---|---|---|---|---|")
    gen = torch.Generator().manual_seed(0)
    ratios = []
    for n, k in SHAPES:
        buffers = {"qweight": torch.randint(-128, 128, (n, k), dtype=torch.int8, generator=gen),
                   "scale": (torch.rand(n, k // 32, generator=gen) * 0.02).half()}
        tiles, kbias = q8_0_kernel.pack_layer(buffers, None)
        for rows in ROWS:
            x = torch.randn(rows, k, generator=gen)
            many = q8_0_kernel.rows_product(x, tiles, kbias, n, 1)
            one = torch.cat([q8_0_kernel.gemv(row[None], tiles, kbias, n, 1) for row in x])
            assert torch.equal(many, one), (n, k, rows)
            a, b = [], []
            for _ in range(args.rounds):
                a.append(_cpu(lambda: q8_0_kernel.rows_product(x, tiles, kbias, n, 1)))  # noqa: B023
                b.append(_cpu(lambda: [q8_0_kernel.gemv(row[None], tiles, kbias, n, 1) for row in x]))  # noqa: B023
            ta, tb = statistics.median(a) * 1e3, statistics.median(b) * 1e3
            ratios.append(tb / ta)
            print(f"| {n} x {k} | {rows} | {ta:.3f} | {tb:.3f} | {tb / ta:.2f} |", flush=True)
    load = os.getloadavg()
    print(f"row by row / rows_product, every shape and row count: {min(ratios):.1f}-{max(ratios):.1f}x "
          f"(load average at end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})")


if __name__ == "__main__":
    main()
