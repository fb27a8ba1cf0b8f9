"""`attnlab bench [--quick] [--only ...] [--out DIR]`: attnlab beside its peers, timed in one process.

The benchmarks live in attnlab.benchmarks (so they run from any install); the peers they compare with
(transformers, nano-gpt) are imported only when a benchmark needs them, and a missing peer is reported and
skipped. Results go to --out, never into the repository's bench/results.
"""

from __future__ import annotations

HELP = "time attnlab against HF, nanoGPT and torch.nn.TransformerEncoder, side by side"


def add_arguments(p) -> None:
    from attnlab.benchmarks.run_all import add_arguments as bench_arguments

    p.description = f"{HELP}.\n\n{__doc__.split(chr(10) * 2, 1)[1].strip()}"
    bench_arguments(p)


def run(args) -> int:
    from attnlab.benchmarks.run_all import run as run_all

    return run_all(args)
