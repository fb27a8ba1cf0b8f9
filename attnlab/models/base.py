"""What every attnlab model shares: its config, initialisation, input checks, save and generate."""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from attnlab.config import ModelConfig
from attnlab.errors import CheckpointError, InputError
from attnlab.layers.attention import Attention
from attnlab.layers.feedforward import FeedForward

# Storage and generation sit above the models: they import the models, so a model may not import them back (not
# even inside a method). They register here what `save` and `generate` delegate to when they are imported. So that
# `Decoder(cfg).save(d)` works however attnlab was imported (`import attnlab` is lazy: no torch for `--help`), a
# method loads the registering module by its name from PLUGINS the first time it is needed: a lookup table of
# plugins, not a dependency of this file on their code.
SAVERS: dict[str, Callable] = {}  # format ("attnlab", "hf") -> writer(model, directory, tokenizer) -> Path
GENERATORS: dict[str, Callable] = {}  # "generate" -> attnlab.generation.generate
PLUGINS = {"attnlab": "attnlab.storage", "hf": "attnlab.interop.hf", "generate": "attnlab.generation"}


def _plugin(table: dict[str, Callable], key: str) -> Callable | None:
    if key not in table and key in PLUGINS:
        importlib.import_module(PLUGINS[key])  # registers itself into `table` on import
    return table.get(key)


def register_saver(format: str, writer: Callable) -> None:
    SAVERS[format] = writer


def register_generator(generate: Callable) -> None:
    GENERATORS["generate"] = generate


@dataclass
class ModelOutput:
    """What every model's forward returns: the fields its topology fills, None for the rest."""

    logits: torch.Tensor | None = None  # (batch, seq, vocab) or (batch, n_classes) or (batch, seq, n_classes)
    hidden: torch.Tensor | None = None  # (batch, seq, d_model) last hidden state (after any final norm)
    pooled: torch.Tensor | None = None  # (batch, d_model) pooler output, when the model has one
    encoder_hidden: torch.Tensor | None = None  # (batch, src_seq, d_model) encoder-decoders only
    nsp_logits: torch.Tensor | None = None  # (batch, 2) next-sentence logits (0 = B follows A), encoders with nsp


class TransformerModel(nn.Module):
    config: ModelConfig

    def init_weights(self) -> None:
        """BERT's initialisation, which GPT-2 shares except for one step: Normal(0, 0.02) for every matrix and
        embedding (learned positions, [CLS] too), zeros for biases; norms keep their ones and zeros.

        With config.scaled_residual_init (GPT-2's step, off by default so existing recipes train as before), the
        matrices that write into the residual stream (W_O of every attention, W_2 of every feed-forward) start
        at std 0.02 / sqrt(2 N), N the number of blocks: the stream sums 2N such branches, and this keeps its
        variance at initialisation independent of depth.
        """
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Conv2d)):
                nn.init.normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=0.02)
        for name, param in self.named_parameters():
            if name.endswith("positions.weight") or name.endswith("cls_token"):
                nn.init.normal_(param, std=0.02)
        if self.config.scaled_residual_init:
            n_blocks = self.config.n_layers + (self.config.decoder_layers
                                               if self.config.topology == "encoder-decoder" else 0)
            std = 0.02 / math.sqrt(2 * n_blocks)
            for module in self.modules():
                if isinstance(module, (Attention, FeedForward)):
                    nn.init.normal_(module.out.weight if isinstance(module, Attention) else module.down.weight,
                                    std=std)

    def check_ids(self, ids: torch.Tensor, name: str = "input_ids") -> None:
        if not isinstance(ids, torch.Tensor):
            raise InputError(f"{name} must be a torch.Tensor of token ids, got {type(ids).__name__}")
        if ids.dtype not in (torch.long, torch.int32, torch.int64):
            raise InputError(f"{name} must hold integer token ids, got dtype {ids.dtype}")
        if ids.dim() != 2:
            raise InputError(f"{name} must have shape (batch, seq), got {tuple(ids.shape)}")
        if ids.shape[1] == 0:
            raise InputError(f"{name} is empty: give at least one token")
        # reading min/max back is data-dependent: under torch.compile it would split the graph in two (and stall a
        # GPU), so compiled code skips it and relies on the embedding's own bounds check
        if ids.numel() and not torch.compiler.is_compiling() and (
                int(ids.min()) < 0 or int(ids.max()) >= self.config.vocab_size):
            raise InputError(f"{name} holds ids outside [0, vocab_size={self.config.vocab_size}): "
                             f"min {int(ids.min())}, max {int(ids.max())}")

    def num_parameters(self) -> int:
        """Distinct parameters (a tied matrix counts once)."""
        return sum(p.numel() for p in {id(p): p for p in self.parameters()}.values())

    def save(self, directory: str | Path, tokenizer=None, format: str = "attnlab") -> Path:
        """Write config.json + model.safetensors (format="attnlab", attnlab.storage) or a Hugging Face layout
        (format="hf", attnlab.interop.hf)."""
        writer = _plugin(SAVERS, format) if isinstance(format, str) else None
        if writer is None:
            raise CheckpointError(f"format={format!r}: allowed 'attnlab' or 'hf'")
        return writer(self, directory, tokenizer)

    def generate(self, input_ids: torch.Tensor, **kwargs):
        """Token-by-token generation with a KV cache; see attnlab.generation.generate."""
        return _plugin(GENERATORS, "generate")(self, input_ids, **kwargs)
