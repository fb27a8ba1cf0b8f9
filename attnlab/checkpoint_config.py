"""The one reader of an attnlab checkpoint's config.json, apart from attnlab.storage so that reading a config
imports no torch: `attnlab models` sizes every shipped checkpoint from its config alone, and importing torch
takes longer than the whole listing may. attnlab.storage re-exports everything here.
"""

from __future__ import annotations

import os
from pathlib import Path

from attnlab.config import AnyConfig, config_from_dict
from attnlab.errors import CheckpointError, ConfigError
from attnlab.files import read_json_object

CONFIG_NAME, WEIGHTS_NAME = "config.json", "model.safetensors"


def read_config(directory: str | Path) -> AnyConfig:
    """THE reader of an attnlab config.json (checkpoint loading, training resume, attnlab.load all call it):
    bounded, never blocking, every fault a CheckpointError naming the file."""
    path = Path(directory) / CONFIG_NAME
    if not os.path.lexists(path):
        raise CheckpointError(f"{path} is missing: an attnlab checkpoint needs {CONFIG_NAME} and {WEIGHTS_NAME}")
    data = read_json_object(path, what="model config")
    try:
        return config_from_dict(upgrade(data))
    except ConfigError as exc:
        raise CheckpointError(f"{path}: {exc}") from None


def upgrade(data: dict) -> dict:
    """Dual encoders saved before DualEncoderConfig existed (clip-mnist runs of attnlab <= 0.1): the image
    tower's config carried the text tower in extra["dual_encoder"]. Rewritten to today's layout."""
    extra = data.get("extra")
    spec = extra.get("dual_encoder") if isinstance(extra, dict) else None
    if spec is None or data.get("topology") == "dual-encoder":
        return data
    if not isinstance(spec, dict) or not isinstance(spec.get("text_config"), dict):
        raise ConfigError("extra['dual_encoder'] must hold a 'text_config' object (an older dual-encoder layout)")
    tower_a = {**data, "extra": {k: v for k, v in extra.items() if k != "dual_encoder"}}
    return {"topology": "dual-encoder", "tower_a": tower_a, "tower_b": spec["text_config"],
            "embed_dim": spec.get("embed_dim", 64), "pool": spec.get("pool", "cls"), "name": data.get("name", "")}
