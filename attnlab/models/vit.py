"""Vision Transformer: an image becomes a sequence of patch tokens plus a [CLS] token; an encoder reads it."""

from __future__ import annotations

import torch
from torch import nn

from attnlab.config import ModelConfig
from attnlab.errors import InputError
from attnlab.models.base import ModelOutput, TransformerModel
from attnlab.models.stack import Stack
from attnlab.recording import active


class PatchEmbedding(nn.Module):
    """Cut the image into P x P patches and project each flattened patch to d_model (a strided convolution)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.proj = nn.Conv2d(config.n_channels, config.d_model, config.patch_size, stride=config.patch_size)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        # pixels: (batch, channels, H, W) -> (batch, n_patches, d_model), patches in row-major order
        return self.proj(pixels).flatten(2).transpose(1, 2)


class VisionTransformer(Stack, TransformerModel):
    def __init__(self, config: ModelConfig):
        Stack.__init__(self, config, n_layers=config.n_layers, causal=False, max_len=config.n_patches + 1)
        self.patches = PatchEmbedding(config)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, config.d_model))
        self.classifier = nn.Linear(config.d_model, config.n_classes) if config.head == "classifier" else None
        self.init_weights()

    def check_pixels(self, pixels: torch.Tensor) -> None:
        c, s = self.config.n_channels, self.config.image_size
        if not isinstance(pixels, torch.Tensor) or not pixels.is_floating_point():
            raise InputError("pixel_values must be a float tensor of shape (batch, channels, height, width)")
        if pixels.dim() != 4 or tuple(pixels.shape[1:]) != (c, s, s):
            raise InputError(f"pixel_values has shape {tuple(pixels.shape)}, expected (batch, {c}, {s}, {s})")
        dtype = self.cls_token.dtype
        if pixels.dtype != dtype:
            raise InputError(f"pixel_values has dtype {pixels.dtype} but the model holds {dtype}; convert with "
                             f".to({dtype})")
        if not bool(torch.isfinite(pixels).all()):
            raise InputError("pixel_values holds NaN or infinite values")

    def sites(self) -> tuple[str, ...]:
        """The names this model records or lets edit at its own level (attnlab.recording.sites)."""
        return Stack.sites(self) + (("logits",) if self.classifier is not None else ())

    def forward(self, pixel_values: torch.Tensor) -> ModelOutput:
        self.check_pixels(pixel_values)
        x = self.patches(pixel_values)  # (batch, n_patches, d_model)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)  # [CLS] first
        h = self.run(x)  # (batch, 1 + n_patches, d_model)
        logits = self.classifier(h[:, 0]) if self.classifier is not None else None  # from the [CLS] output
        recorder = active()
        if logits is not None and recorder is not None:
            logits = recorder.keep(self, "logits", logits)
        return ModelOutput(logits=logits, hidden=h)
