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


def check_only(only: str, available: list[str]) -> None:
    """Refuse an unknown --only name in the usual one-line error, with the closest names."""
    from attnlab.errors import InputError
    from attnlab.spelling import did_you_mean

    for name in (w.strip() for w in only.split(",")):
        if name and name not in available:
            raise InputError(f"--only {name!r}: no such benchmark{did_you_mean(name, available)}; available: "
                             f"{', '.join(available)}")


def run(args) -> int:
    from attnlab.benchmarks.run_all import OTHERS, OURS
    from attnlab.benchmarks.run_all import run as run_all

    check_only(args.only, [*OURS, *OTHERS])
    args.only = ",".join(w.strip() for w in args.only.split(",") if w.strip())
    return run_all(args)
