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
    if path.is_file():  # read like any file a stranger may have written: named in every error, never quoted
        from attnlab.errors import CheckpointError, ConfigError
        from attnlab.files import read_json_object

        try:
            data = read_json_object(path, what="model config .json")
        except CheckpointError as exc:  # its message starts with the path already
            raise AttnlabError(f"{exc} (expected a preset, a model config .json or a checkpoint directory)") \
                from None
        try:
            return ModelConfig.from_dict(data)
        except ConfigError as exc:
            raise AttnlabError(f"{path}: {exc}") from None
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
