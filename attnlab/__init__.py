"""attnlab: one clean Transformer, every topology, proven equal to the references, and seen from inside.

The names that need torch load on first use (PEP 562), so that `import attnlab` -- and with it
`attnlab --help` -- stays free of torch's import time; `attnlab.build_model` etc. work as if imported here.
"""

import importlib
import importlib.util

from attnlab.config import DualEncoderConfig, ModelConfig
from attnlab.errors import AttnlabError, CheckpointError, ConfigError, InputError
from attnlab.presets import presets

__version__ = "0.1.0"

# public name -> the module that defines it (imported on first access)
_LAZY = {
    "build_model": "attnlab.build", "load": "attnlab.loading",
    "Decoder": "attnlab.models", "DualEncoder": "attnlab.models", "Encoder": "attnlab.models",
    "EncoderDecoder": "attnlab.models", "ModelOutput": "attnlab.models", "VisionTransformer": "attnlab.models",
    "record": "attnlab.recording", "quantize": "attnlab.quantization",
    "intervene": "attnlab.interventions", "logit_lens": "attnlab.interventions",
    "ablate_heads": "attnlab.interventions", "patch": "attnlab.interventions", "steer": "attnlab.interventions",
    "head_sweep": "attnlab.interventions", "trace_residual": "attnlab.interventions",
    "attribution_patch": "attnlab.interventions.attribution", "exact_patch": "attnlab.interventions.attribution",
    "direct_logit_attribution": "attnlab.interventions.logit_attribution",
}


def __getattr__(name: str):
    if name == "recording":  # the module (recording.capture(model, ...) for code that runs the model itself)
        return importlib.import_module("attnlab.recording")
    if name not in _LAZY:
        if not name.startswith("_") and importlib.util.find_spec(f"attnlab.{name}") is not None:
            return importlib.import_module(f"attnlab.{name}")  # attnlab.layers etc., as after an eager import
        raise AttributeError(f"module 'attnlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def generate(model, input_ids, **kwargs):
    """Generate tokens from a Decoder or EncoderDecoder (see attnlab.generation)."""
    from attnlab.generation import generate as _generate

    return _generate(model, input_ids, **kwargs)


__all__ = [
    "ModelConfig", "DualEncoderConfig", "presets", "build_model", "load", "generate", "record", "recording", "quantize",
    "intervene", "logit_lens", "ablate_heads", "patch", "steer", "head_sweep", "trace_residual",
    "attribution_patch", "exact_patch", "direct_logit_attribution",
    "Encoder", "Decoder", "EncoderDecoder", "VisionTransformer", "DualEncoder", "ModelOutput",
    "AttnlabError", "ConfigError", "InputError", "CheckpointError",
]
