"""How a run is configured: TrainSettings, and the three layers of settings a run reads.

Settings come in three layers, later ones winning: the recipe's defaults, a config file (TOML; YAML when pyyaml
is installed), then key=value pairs from the command line. Values arrive as strings (command line) or TOML/YAML
values and are brought to the type of the default (`coerce`); any key the recipe does not know is refused with
the list of keys it does know (`resolve_params`). Every check here runs before a run writes anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from attnlab.devices import check_device_name
from attnlab.errors import ConfigError
from attnlab.training.report import parse_report

CONFIG_SUFFIXES = (".toml", ".yaml", ".yml")
MAX_CONFIG_BYTES = 1 << 20  # a settings file is a few lines; refuse to read megabytes of something else
MAX_EPOCHS = 10_000  # more passes than this is a typo (epochs=1e9 would ask for billions of steps)
# recipe keys whose use comes late (a sample after training, the windows of an evaluation): checked here so a bad
# value is refused before the run spends its time, not after; (lowest, highest, what it is)
RECIPE_KEY_RANGES = {"sample_tokens": (0, 100_000, "tokens sampled from the trained model for samples.txt; 0 = none"),
                     "eval_windows": (0, 10**9, "validation windows scored at each evaluation; 0 = all of them")}


@dataclass
class TrainSettings:
    """How to train (not what): the same fields for every recipe, each overridable as key=value."""

    steps: int = 1000
    epochs: float = 0.0  # passes over the training data; > 0 sets steps from the data's size (give steps= or this)
    batch_size: int = 32  # global batch (sequences or images) per optimizer step, before accumulation
    lr: float = 1e-3  # peak learning rate
    min_lr_ratio: float = 0.1  # cosine ends at lr * min_lr_ratio
    warmup: int = 100  # linear warmup steps
    weight_decay: float = 0.1  # on matrices only (see optim.py)
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0  # max global gradient norm; 0 = off
    accum: int = 1  # micro-batches per step (each of batch_size); gradients are averaged
    eval_every: int = 200  # steps between evaluations; 0 = only at the end
    patience: int = 0  # stop after this many evaluations without a lower val_loss; 0 = never stop early
    log_every: int = 50  # steps between progress lines
    save_every: int = 0  # extra checkpoints every N steps; 0 = none (one is saved at each evaluation and the end)
    keep: int = 2  # newest step directories kept, besides the best by val_loss; 0 = all
    seed: int = 0
    device: str = "cpu"  # cpu, cuda, cuda:N or auto (cuda when available)
    bf16: bool = False  # bf16 autocast (on CPU allowed but slow on most CPUs; off by default)
    compile: bool = False  # torch.compile the model
    strategy: str = "ddp"  # under torchrun: ddp or fsdp
    threads: int = 0  # torch threads; 0 = auto: never more than the free cores (attnlab.threads), re-checked
    plot: bool = True  # write loss.png at the end (matplotlib: ~25 MB more resident memory from then on)
    mfu: bool = False  # report model FLOPs utilisation against the measured matmul peak (attnlab.cost)
    report: str = "tensorboard"  # where metrics go besides metrics.jsonl: tensorboard (~5 MB), csv, wandb, none

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "accum"):
            if int(getattr(self, name)) <= 0:
                raise ConfigError(f"{name}={getattr(self, name)!r} must be a positive integer")
        for name in ("warmup", "eval_every", "patience", "log_every", "save_every", "keep", "threads"):
            if int(getattr(self, name)) < 0:
                raise ConfigError(f"{name}={getattr(self, name)!r} must be 0 or a positive integer")
        if not (math.isfinite(self.epochs) and 0 <= self.epochs <= MAX_EPOCHS):
            raise ConfigError(f"epochs={self.epochs!r}: allowed a number of passes over the training data, above 0 "
                              f"and at most {MAX_EPOCHS:,} (0.5 = half of it), or 0 to train steps= steps")
        if self.patience and not self.eval_every:
            raise ConfigError(f"patience={self.patience} counts evaluations, and eval_every=0 evaluates only at the "
                              "end: give eval_every=N (steps between evaluations) too, or patience=0")
        if self.lr <= 0 or not math.isfinite(self.lr):
            raise ConfigError(f"lr={self.lr!r} must be a positive finite number")
        if self.grad_clip < 0 or not math.isfinite(self.grad_clip):
            raise ConfigError(f"grad_clip={self.grad_clip!r} must be 0 (off) or a positive finite number")
        if self.strategy not in ("ddp", "fsdp"):
            raise ConfigError(f"strategy={self.strategy!r}: allowed ddp, fsdp")
        if not 0 <= int(self.seed) < 2**32:  # what NumPy's global generator accepts
            raise ConfigError(f"seed={self.seed!r}: allowed 0 .. {2**32 - 1}")
        check_device_name(self.device, "device", ConfigError)  # the one check `--device` uses too
        parse_report(self.report)

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in fields(cls)]


def coerce(key: str, value: Any, default: Any) -> Any:
    """Bring a value from the command line (a string) or a config file to the type of the default."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{key}={value!r}: expected true or false")
    if isinstance(default, int):
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"{key}={value!r}: expected an integer") from None
        if not number.is_integer() or isinstance(value, bool):
            raise ConfigError(f"{key}={value!r}: expected an integer")
        return int(number)
    if isinstance(default, float):
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"{key}={value!r}: expected a number") from None
    return str(value)


def resolve_params(recipe, *layers: dict[str, Any]) -> tuple[TrainSettings, dict[str, Any]]:
    """Defaults, then each layer (config file, then command line) on top. Unknown keys are refused by name.

    `recipe` is a Recipe (attnlab.training.recipes): its name and defaults() are all that is read."""
    defaults = recipe.defaults()
    merged = dict(defaults)
    for layer in layers:
        unknown = sorted(set(layer) - set(defaults))
        if unknown:
            raise ConfigError(f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} for recipe "
                              f"{recipe.name!r}; valid keys: {', '.join(sorted(defaults))}")
        for key, value in layer.items():
            merged[key] = coerce(key, value, defaults[key])
    for key, (low, high, what) in RECIPE_KEY_RANGES.items():
        if key in merged and not low <= merged[key] <= high:
            raise ConfigError(f"{key}={merged[key]!r}: allowed {low} .. {high:,} ({what})")
    train_keys = set(TrainSettings.keys())
    settings = TrainSettings(**{k: v for k, v in merged.items() if k in train_keys})
    check_length_keys(layers)  # after each value's own check: epochs=-1 is refused for its value first
    return settings, {k: v for k, v in merged.items() if k not in train_keys}


def check_length_keys(layers: tuple[dict[str, Any], ...]) -> None:
    """steps= and epochs= both say how long to train: given together (in any layer) the run is refused, since
    either one would silently overrule the other."""
    given = {key for layer in layers for key in layer if key in ("steps", "epochs")}
    epochs = [layer["epochs"] for layer in layers if "epochs" in layer]
    if given == {"steps", "epochs"} and coerce("epochs", epochs[-1], 0.0):
        raise ConfigError("steps= and epochs= both set how long to train: give one of them (epochs=N sets steps "
                          "from the size of the training data)")


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A flat {key: value} from TOML or YAML; tables/sections are flattened (their keys must be unique)."""
    path = Path(path)
    if path.suffix not in CONFIG_SUFFIXES:
        raise ConfigError(f"config file {path}: allowed suffixes {', '.join(CONFIG_SUFFIXES)}")
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    if not path.is_file():  # a folder, a FIFO or a device: reading it could block or never end
        raise ConfigError(f"config file {path} is not a regular file; give a {' or '.join(CONFIG_SUFFIXES)} file")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} holds {path.stat().st_size:,} bytes; a settings file of key = value "
                          f"lines is at most {MAX_CONFIG_BYTES:,}")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise ConfigError(f"{path}: YAML needs the pyyaml package; install it or use a .toml file") from None
        try:
            data = yaml.safe_load(text) or {}
        except (yaml.YAMLError, RecursionError) as exc:
            raise ConfigError(f"{path} is not valid YAML: {str(exc).splitlines()[0] if str(exc) else exc}") from None
    else:
        try:
            import tomllib
        except ImportError:  # Python 3.10
            import tomli as tomllib
        try:
            data = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold key = value pairs")
    flat: dict[str, Any] = {}

    def walk(d: dict[str, Any], depth: int = 0) -> None:
        if depth > 8:
            raise ConfigError(f"{path}: sections nest deeper than 8 levels; settings are flat key = value pairs")
        for key, value in d.items():
            if isinstance(value, dict):
                walk(value, depth + 1)
            elif key in flat:
                raise ConfigError(f"{path}: key {key!r} is set twice")
            else:
                flat[key] = value
    walk(data)
    return flat


def parse_overrides(items: list[str]) -> dict[str, str]:
    """['steps=500', 'lr=3e-4'] -> {'steps': '500', 'lr': '3e-4'} (values stay strings until coerce)."""
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item or item.startswith("="):
            raise ConfigError(f"{item!r} is not key=value (e.g. steps=500 lr=3e-4)")
        key, value = item.split("=", 1)
        out[key.strip()] = value
    return out


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators (the same seed gives the same initial weights)."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
