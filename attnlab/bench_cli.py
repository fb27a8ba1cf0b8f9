"""`attnlab bench [--quick]`: run the side-by-side benchmarks of bench/ (a source checkout is needed).

The benchmarks compare attnlab with Hugging Face, nanoGPT and torch.nn.TransformerEncoder in one process; they
live in the repository's bench/ folder rather than in the package because they import the peers, which an
installed attnlab does not depend on.
"""

from __future__ import annotations

import sys
from pathlib import Path

from attnlab.cli import register
from attnlab.errors import AttnlabError


def bench_dir() -> Path:
    """The bench/ folder beside the attnlab package of an editable (source) install."""
    return Path(__file__).resolve().parent.parent / "bench"


def _add_arguments(p) -> None:
    p.add_argument("--quick", action="store_true", help="small cases and few repeats: under about 3 minutes")
    p.add_argument("--only", default="", help="comma-separated subset: train, forward, generate, ...")
    p.add_argument("--no-memory", action="store_true", help="skip the per-implementation peak-memory runs")


def cmd_bench(args) -> int:
    folder = bench_dir()
    if not (folder / "run_all.py").is_file():
        raise AttnlabError(f"no benchmarks at {folder}: `attnlab bench` runs the bench/ folder of a source "
                           "checkout (git clone, then pip install -e .)")
    root = str(folder.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from bench import run_all

    argv = (["--quick"] if args.quick else []) + (["--only", args.only] if args.only else [])
    return run_all.main(argv + (["--no-memory"] if args.no_memory else []))


register("bench", "time attnlab against HF, nanoGPT and torch.nn.TransformerEncoder, side by side",
         _add_arguments, cmd_bench)
