"""`attnlab params MODEL`: the parameter count per component, beside the seeds' V*d + L*d + N*12d^2."""

from __future__ import annotations

from pathlib import Path

from attnlab.errors import AttnlabError

HELP = "parameter count per component beside V*d + L*d + N*12d^2"


def add_arguments(p) -> None:
    p.add_argument("model", help="preset name, config .json or checkpoint directory")


def resolve_config(spec: str):
    """A preset name, a config .json file, or a checkpoint directory -> ModelConfig (also used by `cost`)."""
    from attnlab.config import ModelConfig
    from attnlab.presets import names, presets

    if spec in presets:
        return presets[spec]
    path = Path(spec)
    if path.is_file():
        return ModelConfig.from_json(path)
    if path.is_dir():
        from attnlab.loading import load, resolve
        from attnlab.storage import read_config

        kind, folder = resolve(path)
        if kind == "attnlab":  # the config alone: no weights are read
            return read_config(folder)
        return load(path)[0].config
    raise AttnlabError(f"{spec!r} is neither a preset ({', '.join(names())}), a config .json file nor a "
                       "checkpoint directory")


def run(args) -> int:
    from attnlab.counting import parameter_table

    config = resolve_config(args.model)
    print(f"{config.name or args.model}: {config.summary()}")
    print(parameter_table(config).render())
    return 0
