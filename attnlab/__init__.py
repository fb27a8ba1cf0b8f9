"""attnlab: one clean Transformer, every topology, proven equal to the references, and seen from inside."""

from attnlab.build import build_model
from attnlab.config import DualEncoderConfig, ModelConfig
from attnlab.errors import AttnlabError, CheckpointError, ConfigError, InputError
from attnlab.loading import load
from attnlab.models import Decoder, DualEncoder, Encoder, EncoderDecoder, ModelOutput, VisionTransformer
from attnlab.models.base import register_generator
from attnlab.presets import presets
from attnlab.recording import record, recording

__version__ = "0.1.0"


def generate(model, input_ids, **kwargs):
    """Generate tokens from a Decoder or EncoderDecoder (see attnlab.generation)."""
    from attnlab.generation import generate as _generate

    return _generate(model, input_ids, **kwargs)


register_generator(generate)  # model.generate(...): the models sit below generation and cannot import it


__all__ = [
    "ModelConfig", "DualEncoderConfig", "presets", "build_model", "load", "generate", "record", "recording",
    "Encoder", "Decoder", "EncoderDecoder", "VisionTransformer", "DualEncoder", "ModelOutput",
    "AttnlabError", "ConfigError", "InputError", "CheckpointError",
]
