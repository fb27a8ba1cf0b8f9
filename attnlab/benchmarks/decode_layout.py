"""How fast can one decoding step read its weights? F.linear for a few rows, by weight layout, against plain streams.

A decoding step at batch 1 multiplies one vector by every weight matrix of the model once: a matrix-vector
product whose cost is reading the matrix. So the floor for one token is (weight bytes) / (memory bandwidth),
and the question for each kernel is how close to that bandwidth it gets. This script measures, per matrix shape
of GPT-2-small and SmolLM2-135M:

  (out, in)  F.linear(x, W) with W stored (out, in) contiguously, as nn.Linear holds it;
  (in, out)  the same product with the weight stored (in, out) contiguously (GPT-2's Conv1D layout), passed to
             F.linear as the non-contiguous view W_t.t(), so the parameter's shape would not change;

at 1 and 8 rows, against two streams of the same machine: a read-only reduction (`sum` of 256 MB) and a copy
(256 MB read + 256 MB written). Each shape gets enough distinct copies of its matrix to exceed the last-level
cache (as the 30 layers of a model do), and every pass walks all of them, so each product reads from memory.
A and B alternate within one process (A B A B after a warm-up); the median pass is reported, and the ratio
(out, in) time / (in, out) time is > 1 when the (in, out) layout is faster.

A second table (`--head-rows`) times attnlab's own LM head (attnlab.models.heads.LMHead, GPT-2's and SmolLM2's
vocabulary shapes) at a few rows: its product cut into LMHead.CHUNK-row slices (what it does at LMHead.SLICE_ROWS
rows on one thread) against the one product over the whole vocabulary (F.linear on the same weight), interleaved
the same way; one product / sliced > 1 when the slices are faster.

    python -m attnlab.benchmarks.decode_layout              # 1 thread, process CPU time (steady on a shared machine)
    python -m attnlab.benchmarks.decode_layout --threads 2  # 2 threads; wall time (CPU time counts both threads)
    python -m attnlab.benchmarks.decode_layout --rows 1,2,3 --head-rows 4,6,8,12,16  # 1-3 rows, the head's slices

First written 2026-11-22 (commit 54821b4, as bench/bench_matvec.py) and removed with bench/'s other one-off probes;
restored 2026-12-07 (bench/bench_matvec.py, then here: its log's command line names the old path) to re-run the
ratios docs/generation.md prints, with the head's slices and the machine and load in the header.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn.functional as F

# (label, in_features, out_features): the linears one decoding step runs, per layer, and the LM head
SHAPES = {
    "gpt2": [("qkv", 768, 2304), ("attn out", 768, 768), ("ffn up", 768, 3072), ("ffn down", 3072, 768),
             ("lm head", 768, 50257)],
    "smollm2": [("qkv", 576, 960), ("attn out", 576, 576), ("gate+up", 576, 3072), ("gate", 576, 1536),
                ("ffn down", 1536, 576), ("lm head", 576, 49152)],
}
CACHE_BEATING_BYTES = 192 * 2**20  # every shape's copies together exceed the 32 MB L3 several times over


def clock(wall: bool):
    return time.perf_counter if wall else time.process_time


def timed(fn, wall: bool) -> float:
    tick = clock(wall)
    start = tick()
    fn()
    return tick() - start


def stream_floor(reps: int, wall: bool) -> dict[str, float]:
    """GB/s of a read-only reduction and of a copy over 256 MB: what this machine's memory gives one process."""
    src = torch.randn(64 * 2**20)  # 256 MB of float32
    dst = torch.empty_like(src)
    src.sum(), dst.copy_(src)  # warm-up (page faults)
    read, copy = [], []
    for _ in range(reps):
        read.append(timed(lambda: src.sum(), wall))
        copy.append(timed(lambda: dst.copy_(src), wall))
    return {"read (sum)": src.nbytes / statistics.median(read) / 1e9,
            "copy (read+write)": 2 * src.nbytes / statistics.median(copy) / 1e9}


def linear_pair(d_in: int, d_out: int, rows: int, reps: int, wall: bool) -> tuple[float, float]:
    """Median seconds per matrix of one pass, (out, in) layout and (in, out) layout, interleaved."""
    gen = torch.Generator().manual_seed(0)
    copies = max(1, CACHE_BEATING_BYTES // (d_in * d_out * 4))
    w_out_in = [torch.randn(d_out, d_in, generator=gen) * 0.02 for _ in range(copies)]  # (out, in)
    w_in_out = [w.t().contiguous() for w in w_out_in]  # (in, out) storage
    x = torch.randn(rows, d_in, generator=gen)  # (rows, in)

    def pass_out_in():
        for w in w_out_in:
            F.linear(x, w)

    def pass_in_out():
        for w_t in w_in_out:
            F.linear(x, w_t.t())  # a (out, in) view of (in, out) storage: same parameter shape, other layout

    torch.testing.assert_close(F.linear(x, w_out_in[0]), F.linear(x, w_in_out[0].t()), rtol=1e-5, atol=1e-5)
    pass_out_in(), pass_in_out()  # warm-up
    a, b = [], []
    for _ in range(reps):
        a.append(timed(pass_out_in, wall) / copies)
        b.append(timed(pass_in_out, wall) / copies)
    return statistics.median(a), statistics.median(b)


def head_pair(name: str, rows: int, reps: int, wall: bool) -> tuple[float, float]:
    """Median seconds of LMHead.project at `rows` rows (its slices) and of one F.linear over the same weight."""
    from types import SimpleNamespace

    from attnlab.models.heads import LMHead

    d_in, d_out = next((i, o) for label, i, o in SHAPES[name] if label == "lm head")
    config = SimpleNamespace(d_model=d_in, vocab_size=d_out, logit_scale=1.0, lm_head_transform=False,
                             lm_head_bias=False, activation="gelu")
    head = LMHead(config)
    assert rows in LMHead.SLICE_ROWS and torch.get_num_threads() == 1, "the head slices only there"
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        head.proj.weight.normal_(0, 0.02, generator=gen)
        h = torch.randn(rows, d_in, generator=gen)
        torch.testing.assert_close(head.project(h), F.linear(h, head.proj.weight), rtol=1e-5, atol=1e-5)
        sliced = lambda: head.project(h)  # noqa: E731
        whole = lambda: F.linear(h, head.proj.weight)  # noqa: E731
        sliced(), whole()  # warm-up
        a, b = [], []
        for _ in range(reps):
            a.append(timed(whole, wall))
            b.append(timed(sliced, wall))
    return statistics.median(a), statistics.median(b)


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--rows", default="1,8")
    parser.add_argument("--models", default="gpt2,smollm2")
    parser.add_argument("--wall", action="store_true", help="wall time even at 1 thread")
    parser.add_argument("--head-rows", default="", help="rows for the LM head's slices table (4-16), e.g. 4,8,12")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    wall = args.wall or args.threads > 1
    print(f"# bench_matvec: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; torch {torch.__version__}; "
          f"{args.threads} thread(s); {'wall' if wall else 'process CPU'} time; median of {args.reps}")
    print("# command: python -m attnlab.benchmarks.decode_layout "
          + " ".join(argv if argv is not None else sys.argv[1:]))
    print(f"# machine: {cpu_model()}, {os.cpu_count()} CPUs; niceness {os.nice(0)}; "
          f"load average {os.getloadavg()[0]:.2f} at the start\n")
    floor = stream_floor(args.reps, wall)
    for name, gbs in floor.items():
        print(f"stream {name}: {gbs:.1f} GB/s")
    read_gbs = floor["read (sum)"]
    print("\n| model | matrix | in x out | rows | (out, in) ms | (in, out) ms | (out, in) GB/s | (in, out) GB/s | "
          "(out, in) / (in, out) time | best / read stream |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        for label, d_in, d_out in SHAPES[model]:
            for rows in (int(r) for r in args.rows.split(",")):
                a, b = linear_pair(d_in, d_out, rows, args.reps, wall)
                nbytes = d_in * d_out * 4
                best = nbytes / min(a, b) / 1e9
                print(f"| {model} | {label} | {d_in} x {d_out} | {rows} | {a * 1e3:.3f} | {b * 1e3:.3f} | "
                      f"{nbytes / a / 1e9:.1f} | {nbytes / b / 1e9:.1f} | {a / b:.2f}x | {best / read_gbs:.2f} |",
                      flush=True)
    if args.head_rows:
        print("\n| model | head (in x out) | rows | one product ms | sliced ms | one product / sliced time |")
        print("|---|---|---|---|---|---|")
        for model in args.models.split(","):
            d_in, d_out = next((i, o) for label, i, o in SHAPES[model] if label == "lm head")
            for rows in (int(r) for r in args.head_rows.split(",")):
                a, b = head_pair(model, rows, args.reps, wall)
                print(f"| {model} | {d_in} x {d_out} | {rows} | {a * 1e3:.3f} | {b * 1e3:.3f} | {a / b:.2f}x |",
                      flush=True)
    print(f"\n# load average {os.getloadavg()[0]:.2f} at the end; process CPU time {time.process_time():.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
