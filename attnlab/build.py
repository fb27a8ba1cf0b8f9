"""build_model: config -> the right topology, refusing what will not fit in memory."""

from __future__ import annotations

import os

import torch

from attnlab import recording
from attnlab.config import ModelConfig
from attnlab.errors import ConfigError


def _model_class(config: ModelConfig):
    from attnlab.models import Decoder, Encoder, EncoderDecoder, VisionTransformer

    return {"encoder": Encoder, "decoder": Decoder, "encoder-decoder": EncoderDecoder,
            "vit": VisionTransformer}[config.topology]


def available_memory() -> int:
    """Bytes of memory the OS says are available now (MemAvailable), or total RAM as a fallback."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def build_model(config: ModelConfig, device: str | torch.device | None = None, dtype: torch.dtype | None = None):
    """Build the model `config` describes.

    The parameter count is first measured on the `meta` device (no memory); a model whose weights would take
    more than 80% of the available memory is refused unless device="meta" (shapes only, for counting).
    """
    if not isinstance(config, ModelConfig):
        raise ConfigError(f"build_model needs a ModelConfig, got {type(config).__name__}; "
                          "see attnlab.presets for named ones")
    cls = _model_class(config)
    if str(device) != "meta":
        with torch.device("meta"):
            n_params = cls(config).num_parameters()
        element = torch.finfo(dtype).bits // 8 if dtype is not None else 4
        need, have = n_params * element, available_memory()
        if need > 0.8 * have:
            raise ConfigError(
                f"model {config.name or config.topology!r} has {n_params:,} parameters = {need / 2**30:.1f} GiB, "
                f"more than 80% of the {have / 2**30:.1f} GiB available; build it with device='meta' to count "
                "and inspect it without allocating, or choose a smaller config")
    with torch.device(device if device is not None else "cpu"):
        model = cls(config)
    if dtype is not None:
        model = model.to(dtype)
    recording.name_modules(model)
    return model
