"""One-row products per matrix on this CPU, for the AVX2 (or VNNI) variants of attnlab's int8 and Q8_0 kernels.

Contestants, interleaved round by round (A B C ... then rotated), one torch thread, the process CPU clock: float32
F.linear; QuantizedLinear int8 (attnlab's int8 kernel) and the same layer through fbgemm (use_kernel=False:
reduce_range, 127 levels, where the CPU lacks AVX-512 VNNI; plus its residual pass for outlier rows, --outlier);
the bare calls (int8_kernel.gemv, torch.ops.quantized.linear_dynamic); QuantizedLinear Q8_0 (attnlab's Q8_0
kernel) and, with --chunked, its chunked dequantize-then-multiply path; and a read of the int8 codes' bytes
(torch.sum over as many float32s): the floor. Each contestant cycles its own distinct matrices, >= 200 MB of
float32 and >= 130 MB of int8 codes, so every product reads from memory as in a decoding step. Shapes: SmolLM2-135M's
(576 x 576, 576 x 192, 576 x 1536, 1536 x 576, the 576 x 49152 head), GPT-2's (768 x 3072, 3072 x 768).
--threads2: the kernels and fbgemm at 2 threads against 1, on the wall clock (CPU time would count both threads).

    PYTHONPATH=$PWD python bench/q8_int8_avx2.py --chunked --threads2   # ~7 minutes on a loaded 2-core machine
    PYTHONPATH=$PWD python bench/q8_int8_avx2.py --shapes head            # SmolLM2's head only
"""

from __future__ import annotations

import argparse
import os
import statistics

import torch
import torch.nn.functional as F

from attnlab.benchmarks.common import interleaved
from attnlab.layers import int8_kernel, q8_0_kernel
from attnlab.layers.quantized import QuantizedLinear

SHAPES = {"small": [(576, 576), (576, 192), (576, 1536), (1536, 576), (768, 3072), (3072, 768)],
          "head": [(576, 49152)]}  # (in, out)


def layers(k: int, n: int, fmt: str, copies: int, kernel: bool) -> list[QuantizedLinear]:
    """`copies` distinct random layers of `fmt` ("int8" codes -127..127, "q8_0" codes -128..127 with float16 d)."""
    out = []
    for i in range(copies):
        g = torch.Generator().manual_seed(i)
        m = QuantizedLinear(k, n, fmt, bias=False)
        if fmt == "int8":
            m.load_buffers({"qweight": torch.randint(-127, 128, (n, k), dtype=torch.int8, generator=g),
                            "scale": torch.rand(n, generator=g) * 0.01})
        else:
            m.load_buffers({"qweight": torch.randint(-128, 128, (n, k), dtype=torch.int8, generator=g),
                            "scale": (torch.rand(n, k // 32, generator=g) * 0.01).half()})
        m.use_kernel = kernel
        out.append(m)
    return out


def at_threads(threads: int, fn):
    def run():
        torch.set_num_threads(threads)
        try:
            return fn()
        finally:
            torch.set_num_threads(1)
    return run


def shape(k: int, n: int, args) -> None:
    mb = n * k / 1e6  # MB of int8 codes
    c32, c8 = max(2, int(200 / (4 * mb))), max(3, int(130 / mb))  # copies: >= 200 MB float32, >= 130 MB codes
    x = torch.randn(1, k)
    if args.outlier:
        x[0, 7] = 100.0
    ws = [torch.randn(n, k) * 0.02 for _ in range(c32)]
    i8, fb, q8 = layers(k, n, "int8", c8, True), layers(k, n, "int8", c8, False), layers(k, n, "q8_0", c8, True)
    reads = [torch.zeros(n * k // 4) for _ in range(c8)]  # the codes' bytes, as float32 to sum
    bare = [int8_kernel.pack_layer(m.buffers_dict(), None) for m in i8]
    prepacked = [m._prepacked(None) for m in fb]
    contestants = {
        "f32": lambda: [F.linear(x, w) for w in ws],
        "int8": lambda: [m(x) for m in i8],
        "fbgemm": lambda: [m(x) for m in fb],
        "bare_int8": lambda: [int8_kernel.gemv(x, *p, n, 1) for p in bare],
        "bare_fbgemm": lambda: [torch.ops.quantized.linear_dynamic(x, p, True) for p in prepacked],
        "q8_0": lambda: [m(x) for m in q8],
        "read": lambda: [r.sum() for r in reads],
    }
    if args.chunked:
        chunked = layers(k, n, "q8_0", c8, False)
        contestants["chunked"] = lambda: [m(x) for m in chunked]
    t = interleaved(contestants, warmup=1, repeats=args.reps, clock="cpu")
    ms = {name: statistics.median(v) / (c32 if name == "f32" else c8) * 1e3 for name, v in t.items()}
    print(f"{k}x{n}: " + "  ".join(f"{name} {v:.3f}ms" for name, v in ms.items()))
    q8_floor = ms["read"] * 34 / 32  # Q8_0 reads 34 bytes per 32 weights
    print(f"   int8/fbgemm {ms['int8'] / ms['fbgemm']:.2f}  bare {ms['bare_int8'] / ms['bare_fbgemm']:.2f}  "
          f"int8/read {ms['int8'] / ms['read']:.2f}  f32/int8 {ms['f32'] / ms['int8']:.2f}  "
          f"q8_0/read(x34/32) {ms['q8_0'] / q8_floor:.2f}  f32/q8_0 {ms['f32'] / ms['q8_0']:.2f}  "
          f"GB/s int8 {mb / ms['int8']:.1f} q8_0 {mb * 34 / 32 / ms['q8_0']:.1f} read {mb / ms['read']:.1f} "
          f"f32 {4 * mb / ms['f32']:.1f}"
          + (f"  chunked/q8_0 {ms['chunked'] / ms['q8_0']:.2f}" if args.chunked else ""), flush=True)
    if args.threads2:
        pairs = {f"{name}@{th}": at_threads(th, contestants[name]) for name in ("int8", "q8_0", "fbgemm")
                 for th in (1, 2)}
        wall = {name: statistics.median(v) / c8 * 1e3
                for name, v in interleaved(pairs, warmup=1, repeats=args.reps, clock="wall").items()}
        print("   wall, 2 threads vs 1: " + "  ".join(
            f"{p} {wall[p + '@1']:.3f}->{wall[p + '@2']:.3f}ms ({wall[p + '@1'] / wall[p + '@2']:.2f}x)"
            for p in ("int8", "q8_0", "fbgemm")), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--shapes", choices=("all", *SHAPES), default="all")
    p.add_argument("--threads2", action="store_true", help="also 2 threads against 1 (wall clock)")
    p.add_argument("--outlier", action="store_true", help="x with one channel at 100 (fbgemm's residual pass)")
    p.add_argument("--chunked", action="store_true", help="also Q8_0's chunked path (slow)")
    args = p.parse_args()
    torch.set_num_threads(1)
    chosen = int8_kernel.CHOSEN if int8_kernel.available() else int8_kernel.unavailable_reason()
    print(f"load average {os.getloadavg()}; kernels: {chosen}, q8_0 available: {q8_0_kernel.available()}")
    with torch.no_grad():
        for k, n in SHAPES["small"] + SHAPES["head"] if args.shapes == "all" else SHAPES[args.shapes]:
            shape(k, n, args)


if __name__ == "__main__":
    main()
