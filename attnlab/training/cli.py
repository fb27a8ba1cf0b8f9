"""What `attnlab train` runs (its command line is attnlab/cli/train.py): settings files, overrides, run_train.

Settings come in three layers, later ones winning: the recipe's defaults, the config file (TOML; YAML when
pyyaml is installed), then key=value pairs on the command line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from attnlab.errors import ConfigError


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A flat {key: value} from TOML or YAML; tables/sections are flattened (their keys must be unique)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    text = path.read_text()
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise ConfigError(f"{path}: YAML needs the pyyaml package; install it or use a .toml file") from None
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    elif path.suffix == ".toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10
            import tomli as tomllib
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    else:
        raise ConfigError(f"config file {path}: allowed suffixes .toml, .yaml, .yml")
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold key = value pairs")
    flat: dict[str, Any] = {}

    def walk(d: dict[str, Any]) -> None:
        for key, value in d.items():
            if isinstance(value, dict):
                walk(value)
            elif key in flat:
                raise ConfigError(f"{path}: key {key!r} is set twice")
            else:
                flat[key] = value
    walk(data)
    return flat


def parse_overrides(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item or item.startswith("="):
            raise ConfigError(f"{item!r} is not key=value (e.g. steps=500 lr=3e-4)")
        key, value = item.split("=", 1)
        out[key.strip()] = value
    return out


def seed_everything(seed: int) -> None:
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def run_train(recipe_name: str, *, config: str | None = None, out: str | None = None, resume: bool = False,
              overrides: dict[str, Any] | None = None, quiet: bool = False) -> dict[str, Any]:
    """The whole `attnlab train` as a function (tests and notebooks call it)."""
    from attnlab.training import distributed
    from attnlab.training.recipes import get_recipe, resolve_params
    from attnlab.training.trainer import Trainer

    recipe = get_recipe(recipe_name)
    layers = [read_config_file(config)] if config else []
    layers.append(overrides or {})
    settings, params = resolve_params(recipe, *layers)
    out_dir = Path(out or f"runs/{recipe.name}")
    seed_everything(settings.seed)  # the same seed gives the same initial weights in every process
    saved_tokenizer = None
    if resume:  # trained tokenizers are not reproducible bit-for-bit: continue with the checkpoint's own
        from attnlab.loading import load_tokenizer
        from attnlab.training.checkpoint import latest_checkpoint

        latest = latest_checkpoint(out_dir)
        saved_tokenizer = load_tokenizer(latest) if latest is not None else None
    # build checks the data covers one batch
    task = recipe.build({**params, "batch_size": settings.batch_size, "tokenizer": saved_tokenizer,
                         "out_dir": str(out_dir)})  # text recipes keep their token file in OUT/data
    trainer = Trainer(task, settings, out_dir, recipe={"name": recipe.name, **params}, quiet=quiet)
    try:
        result = trainer.fit(resume=resume)
        result.pop("losses", None)
        if trainer.info.is_main:
            report = getattr(task, "report", None)
            if report is not None:
                result.update(report(trainer.model, out_dir))
            result["recipe"] = recipe.name
            result["checkpoint"] = str(out_dir / "latest")
            (out_dir / "result.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
        return result
    finally:
        distributed.cleanup()
