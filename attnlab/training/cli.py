"""`attnlab train RECIPE [--config FILE] [--out DIR] [--resume] [key=value ...]`.

Settings come in three layers, later ones winning: the recipe's defaults, the config file (TOML; YAML when
pyyaml is installed), then key=value pairs on the command line. Any key the recipe does not know is refused
with the list of keys it does know. The same command runs under `torchrun --nproc_per_node=N`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from attnlab.cli import register
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


def _add_arguments(p) -> None:
    from attnlab.training.recipes import describe

    p.description = "recipes:\n" + describe()
    p.add_argument("recipe", help="gpt-char, gpt-bpe, bert-mlm, translate-numbers, vit-mnist, clip-mnist")
    p.add_argument("key_values", nargs="*", metavar="key=value", help="override any recipe or training key")
    p.add_argument("--config", help="TOML (or YAML) file of key = value settings")
    p.add_argument("--out", help="run directory (default runs/RECIPE)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/latest")
    p.add_argument("--data", help="text file for the language-model recipes (same as data=FILE)")
    p.add_argument("--keys", action="store_true", help="list the recipe's keys with their defaults and exit")


def _run(args) -> int:
    from attnlab.training.recipes import get_recipe

    if args.keys:
        for key, value in sorted(get_recipe(args.recipe).defaults().items()):
            print(f"{key} = {value!r}")
        return 0
    overrides = parse_overrides(args.key_values)
    if args.data is not None:
        overrides["data"] = args.data
    result = run_train(args.recipe, config=args.config, out=args.out, resume=args.resume, overrides=overrides)
    if result:
        shown = {k: v for k, v in result.items() if k not in ("samples",)}
        print(json.dumps(shown, indent=2, default=str))
        for s in result.get("samples", [])[:2]:
            print("---\n" + s, file=sys.stdout)
    return 0


register("train", "train a named recipe (gpt-char, bert-mlm, translate-numbers, vit-mnist, clip-mnist, ...)",
         _add_arguments, _run)
