"""`--quantize none|int8|int4`, shared by the commands that load a model (generate, explore): the option.

The check and the applying live in the library (attnlab.quantize_options), which the explorer's registry uses
too; they are re-exported here so that a command reads `quantizing.check(...)`, `quantizing.apply(...)`.
"""

from __future__ import annotations

from attnlab.quantize_options import HELP, SCHEMES, already_quantized, apply, check

__all__ = ["HELP", "SCHEMES", "add_argument", "already_quantized", "apply", "check"]


def add_argument(p) -> None:
    p.add_argument("--quantize", default="none", metavar="SCHEME", help=HELP)
