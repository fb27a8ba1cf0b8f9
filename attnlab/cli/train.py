"""`attnlab train RECIPE [--config FILE] [--out DIR] [--resume | --overwrite] [key=value ...]`.

Settings come in three layers, later ones winning: the recipe's defaults, the config file (TOML; YAML when
pyyaml is installed), then key=value pairs on the command line. Any key the recipe does not know is refused
with the list of keys it does know. The same command runs under `torchrun --nproc_per_node=N -m attnlab train`.
"""

from __future__ import annotations

import json
import sys

HELP = "train a named recipe (gpt-char, bert-mlm, translate-numbers, vit-mnist, clip-mnist, ...)"


def _description() -> str:
    """Called only when `attnlab train --help` is printed: the recipe list needs the training code."""
    from attnlab.training.recipes import describe

    return f"{HELP.split(' (')[0]}.\n\nrecipes:\n{describe()}\n\n{__doc__.split(chr(10) * 2, 1)[1].strip()}"


def add_arguments(p) -> None:
    p.description = _description  # a function: attnlab.cli.Parser calls it when the help is printed
    p.add_argument("recipe", help="the recipe's name (listed above)")
    p.add_argument("key_values", nargs="*", metavar="key=value", help="override any recipe or training key")
    p.add_argument("--config", help="TOML (or YAML) file of key = value settings")
    p.add_argument("--out", help="run directory (default runs/RECIPE)")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--resume", action="store_true", help="continue the run in OUT from OUT/latest")
    start.add_argument("--overwrite", action="store_true",
                       help="start afresh in an OUT that holds an earlier run, removing that run's files")
    p.add_argument("--data", help="text file for the language-model recipes (same as data=FILE)")
    p.add_argument("--keys", action="store_true", help="list the recipe's keys with their defaults and exit")


def run(args) -> int:
    from attnlab.training.recipes import get_recipe

    if args.keys:
        for key, value in sorted(get_recipe(args.recipe).defaults().items()):
            print(f"{key} = {value!r}")
        return 0
    from attnlab.training.run import run_train
    from attnlab.training.settings import parse_overrides

    overrides = parse_overrides(args.key_values)
    if args.data is not None:
        overrides["data"] = args.data
    result = run_train(args.recipe, config=args.config, out=args.out, resume=args.resume,
                       overwrite=args.overwrite, overrides=overrides)
    if result:
        shown = {k: v for k, v in result.items() if k not in ("samples",)}
        print(json.dumps(shown, indent=2, default=str))
        for s in result.get("samples", [])[:2]:
            print("---\n" + s, file=sys.stdout)
    return 0
