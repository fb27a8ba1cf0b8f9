"""`attnlab params MODEL`: the parameter count per component, beside the seeds' V*d + L*d + N*12d^2."""

from __future__ import annotations

from pathlib import Path

from attnlab.errors import AttnlabError

HELP = "parameter count per component beside V*d + L*d + N*12d^2"


def add_arguments(p) -> None:
    p.add_argument("model", help="a model's name (`attnlab models`), config .json, checkpoint directory or .gguf")


def resolve_config(spec: str):
    """A model's name (`attnlab models`: a shipped checkpoint, a pretrained package, a preset), a config .json
    file or a checkpoint directory / .gguf file -> its config (also used by `cost`). A path that exists wins;
    a name with trained weights means the trained model's config."""
    from attnlab.config import ModelConfig
    from attnlab.loading import named_model, read_model_config
    from attnlab.names import all_names
    from attnlab.spelling import did_you_mean

    path = Path(spec)
    if path.is_file() and path.suffix != ".gguf":  # read like any file a stranger may have written: never quoted
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
    if path.exists() or named_model(spec) is not None:
        return read_model_config(spec)
    raise AttnlabError(f"{spec!r} is neither a model's name{did_you_mean(spec, all_names())} (a shipped "
                       "checkpoint, a pretrained package or a preset: `attnlab models` lists them), a config .json "
                       "file, a checkpoint directory nor a .gguf file")


def describe(spec: str) -> str:
    """What a name stands for, for the first line of `params` / `cost`: '' for a path."""
    from attnlab.loading import named_model

    if Path(spec).exists():
        return ""
    named = named_model(spec)
    if named is None:
        return ""
    return {"shipped": " (shipped checkpoint, trained weights)", "pretrained": " (pretrained package)",
            "preset": " (preset: random weights)"}[named.kind]


def run(args) -> int:
    from attnlab.counting import parameter_table

    config = resolve_config(args.model)
    print(f"{config.name or args.model}{describe(args.model)}: {config.summary()}")
    print(parameter_table(config).render())
    return 0
