"""The topologies, each a thin assembly of the one Stack/Block."""

from attnlab.models.base import ModelOutput, TransformerModel
from attnlab.models.decoder import Decoder
from attnlab.models.dual_encoder import DualEncoder
from attnlab.models.encoder import Encoder
from attnlab.models.encoder_decoder import EncoderDecoder
from attnlab.models.vit import VisionTransformer

__all__ = ["ModelOutput", "TransformerModel", "Encoder", "Decoder", "EncoderDecoder", "VisionTransformer",
           "DualEncoder"]
