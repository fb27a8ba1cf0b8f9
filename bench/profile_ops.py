"""Where the time goes: torch.profiler's per-operator table for attnlab and each peer on one benchmark case.

    python bench/profile_ops.py train gpt-4L [--steps 5] [--threads 1] [--rows 15]
    python bench/profile_ops.py forward bert-base-stack

Operator totals are summed over `steps` calls after two warm-up calls. On a shared machine the wall time of
one operator can jump when another process takes the core, so compare the operator lists and call counts
(what each library does) more than single timings; attnlab.benchmarks.train / .forward give the interleaved ratios.
"""

from __future__ import annotations

import argparse

import torch
from torch.profiler import ProfilerActivity, profile

from attnlab.benchmarks import forward as bench_forward
from attnlab.benchmarks import train as bench_train


def callables(kind: str, case_name: str) -> dict:
    """impl -> zero-argument call of the benchmarked work (training step or forward)."""
    if kind == "train":
        case = bench_train.CASES[case_name]
        models = bench_train.build_models(case, ("attnlab", *case.peers))
        inputs = bench_train.make_inputs(case)
        return {k: bench_train.make_step(case, k, m, inputs) for k, m in models.items()}
    case = bench_forward.CASES[case_name]
    models = bench_forward.build_models(case, ("attnlab", *case.peers))
    inputs = bench_forward.make_inputs(case)
    return {k: bench_forward.make_call(case, k, m, inputs) for k, m in models.items()}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kind", choices=("train", "forward"))
    p.add_argument("case")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--rows", type=int, default=15)
    p.add_argument("--diff", action="store_true",
                   help="also list the operators whose call counts differ between attnlab and each peer")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    counts = {}
    for impl, call in callables(args.kind, args.case).items():
        call()
        call()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(args.steps):
                call()
        print(f"===== {impl}: {args.kind} {args.case}, {args.steps} calls, {torch.get_num_threads()} threads")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows))
        counts[impl] = {e.key: e.count // args.steps for e in prof.key_averages()}
    if args.diff:
        for impl in counts:
            if impl == "attnlab":
                continue
            print(f"===== operator calls per {args.kind} call that differ: attnlab vs {impl}")
            for key in sorted(set(counts["attnlab"]) | set(counts[impl])):
                ours, theirs = counts["attnlab"].get(key, 0), counts[impl].get(key, 0)
                if ours != theirs:
                    print(f"   {key[:70]:<72}{ours:>6}{theirs:>6}")


if __name__ == "__main__":
    main()
