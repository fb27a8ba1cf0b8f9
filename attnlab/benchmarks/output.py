"""Where benchmark results go: a folder the user names with --out, by default a new one under the system's
temporary directory, so that a run never rewrites the repository's bench/results (which RESULTS.md cites)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

OUT_HELP = ("folder for the results (default: a new folder under the system's temporary directory, printed at "
            "the start and the end; never the repository's bench/results)")


def default_out() -> Path:
    """A new folder for one run's results, outside any checkout: $TMPDIR/attnlab-bench/<UTC time>."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return Path(tempfile.gettempdir()) / "attnlab-bench" / stamp


def add_output_arguments(p, name: str) -> None:
    """--save NAME and --out DIR: where a bench script writes its JSON results."""
    p.add_argument("--save", default=name, help="name of the JSON results file written under --out ('' = none)")
    p.add_argument("--out", default=None, help=OUT_HELP)
