"""The `attnlab` command. Each subcommand lives in its own function; heavy imports happen inside them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attnlab.errors import AttnlabError


def resolve_config(spec: str):
    """A preset name, a config .json file, or a checkpoint directory -> ModelConfig."""
    from attnlab import presets
    from attnlab.config import ModelConfig

    if spec in presets:
        return presets[spec]
    path = Path(spec)
    if path.is_file():
        return ModelConfig.from_json(path)
    if path.is_dir():
        from attnlab.loading import resolve
        from attnlab.storage import read_config

        kind, folder = resolve(path)
        if kind == "attnlab":  # the config alone: no weights are read
            return read_config(folder)
        from attnlab.loading import load

        return load(path)[0].config
    from attnlab.presets import names

    raise AttnlabError(f"{spec!r} is neither a preset ({', '.join(names())}), a config .json file nor a "
                       "checkpoint directory")


def cmd_params(args) -> int:
    from attnlab.counting import parameter_table

    config = resolve_config(args.model)
    print(f"{config.name or args.model}: {config.summary()}")
    print(parameter_table(config).render())
    return 0


SUBCOMMANDS: dict[str, tuple] = {}  # name -> (help, add_arguments, run); other modules register here


def register(name: str, help: str, add_arguments, run) -> None:
    SUBCOMMANDS[name] = (help, add_arguments, run)


def _add_params(p):
    p.add_argument("model", help="preset name, config .json or checkpoint directory")


register("params", "parameter count per component beside V*d + L*d + N*12d^2", _add_params, cmd_params)


def _load_plugins() -> None:
    """Subcommands defined beside the features they drive (generate, train, cost, explore, bench)."""
    import importlib

    for module in ("attnlab.generation_cli", "attnlab.training.cli", "attnlab.cost_cli", "attnlab.explorer.cli",
                   "attnlab.bench_cli"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module and not module.startswith(str(exc.name)):
                raise


def build_parser() -> argparse.ArgumentParser:
    _load_plugins()
    parser = argparse.ArgumentParser(prog="attnlab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help, add_arguments, run) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help)
        add_arguments(p)
        p.set_defaults(run=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # key=value pairs after options (argparse stops filling a nargs="*" positional at the first option)
        if not hasattr(args, "key_values") or any(x.startswith("-") for x in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.key_values = [*args.key_values, *extra]
    try:
        return args.run(args) or 0
    except AttnlabError as exc:
        print(f"attnlab {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
