"""The command line that the case-table benchmarks (train, forward) share: their options, the peak-memory child
process and the main that runs the chosen cases.

Why one place: both time a table of cases against their peers with the same interleaved rounds, the same clocks,
devices and memory children; written twice, an option added to one was missing from the other.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

import torch

from attnlab.benchmarks import common, output


def parser(doc: str, cases: dict, name: str, *, quick_help: str, warmup: int | None,
           extra: Callable[[argparse.ArgumentParser], None] = lambda p: None) -> argparse.ArgumentParser:
    """The shared options; `extra` adds a benchmark's own ones (after the shared ones, before --save/--out)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=quick_help)
    p.add_argument("--cases", default="", help=f"comma-separated subset of {', '.join(cases)}")
    p.add_argument("--repeats", type=int, default=0, help="timed rounds (default: per case)")
    p.add_argument("--warmup", type=int, default=warmup)
    p.add_argument("--no-memory", action="store_true", help="skip the per-implementation memory subprocesses")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast around the forward")
    p.add_argument("--compile", default=None, help="torch.compile backend for every contestant (inductor, ...)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="wall clock, or this process's CPU time (steadier on a shared machine; use with --threads 1)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own choice)")
    extra(p)
    p.add_argument("--probe-size", type=int, default=2048, help="n of the n x n matmul-peak probe")
    output.add_output_arguments(p, name)
    p.add_argument("--memory-case", help=argparse.SUPPRESS)
    p.add_argument("--memory-impl", help=argparse.SUPPRESS)
    return p


def print_peak_memory(case, impl: str, build_models: Callable, make_inputs: Callable, make_work: Callable) -> None:
    """Child process (--memory-case): build one implementation only, run its work three times, print the peak
    memory as JSON. make_work(case, impl, model, inputs) is the timed call (a training step, a forward)."""
    models = build_models(case, (impl,))  # only this implementation lives in this process
    work = make_work(case, impl, models[impl], make_inputs(case))
    del models
    print(json.dumps(common.step_peak_memory(work)))


def main(p: argparse.ArgumentParser, argv, module: str, cases: dict, run_case: Callable,
         memory_child: Callable[[str, str], None], **selected) -> list[common.CaseResult]:
    """Parse, set the threads, then either be a memory child or run the chosen cases (common.run_selected)."""
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.memory_case:
        memory_child(args.memory_case, args.memory_impl)
        return []
    command = f"python -m {module} " + " ".join(sys.argv[1:] if argv is None else argv)
    print(common.header(command))
    return common.run_selected(cases, run_case, args, module, command, **selected)
