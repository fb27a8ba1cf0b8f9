"""Encoder-decoder (Vaswani et al., BART, Marian, T5): the encoder reads the source once; the decoder
generates the target with causal self-attention plus cross-attention into the encoder's output."""

from __future__ import annotations

import torch
from torch import nn

from attnlab.config import ModelConfig
from attnlab.errors import InputError
from attnlab.models.base import ModelOutput, TransformerModel
from attnlab.models.heads import LMHead
from attnlab.models.stack import Stack
from attnlab.recording import active


class EncoderDecoder(TransformerModel):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.tokens = nn.Embedding(config.vocab_size, config.d_model)  # target tokens (and source ones if shared)
        # untied BART/Marian (config.shared_embeddings=False): the encoder reads its own matrix
        self.source_tokens = None if config.shared_embeddings else nn.Embedding(config.vocab_size, config.d_model)
        self.encoder = Stack(config, n_layers=config.n_layers, causal=False)
        self.decoder = Stack(config, n_layers=config.decoder_layers, causal=True, cross=True)
        self.lm_head = LMHead(config)
        self.init_weights()
        if config.tie_embeddings:
            self.lm_head.proj.weight = self.tokens.weight

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """(batch, src_seq) -> (batch, src_seq, d_model): run once per source, held fixed while decoding."""
        self.check_ids(input_ids)
        embed = self.tokens if self.source_tokens is None else self.source_tokens
        return self.encoder.run(embed(input_ids), attention_mask=attention_mask)

    def decode(
        self,
        decoder_input_ids: torch.Tensor,  # (batch, tgt_seq)
        encoder_hidden: torch.Tensor | None,  # (batch, src_seq, d_model); may be None once the cache holds K, V
        *,
        attention_mask: torch.Tensor | None = None,  # source padding (batch, src_seq)
        decoder_attention_mask: torch.Tensor | None = None,  # (batch, past + tgt_seq)
        position_ids: torch.Tensor | None = None,
        cache=None,
        last_only: bool = False,
        validate: bool = True,  # False: the caller checked ids and masks once (generation); skip host reads
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """-> (hidden (batch, tgt_seq, d_model), logits (batch, tgt_seq|1, vocab)). Every generation step is this
        call (the encoder output is needed until the cross-attention K, V sit in the cache)."""
        if validate:
            self.check_ids(decoder_input_ids, "decoder_input_ids")
        h = self.decoder.run(self.tokens(decoder_input_ids), attention_mask=decoder_attention_mask,
                             position_ids=position_ids, context=encoder_hidden, context_mask=attention_mask,
                             cache=cache, validate=validate)
        logits = self.lm_head(h[:, -1:] if last_only else h)
        recorder = active()
        if recorder is not None:
            logits = recorder.keep(self, "logits", logits)
        return h, logits

    def sites(self) -> tuple[str, ...]:
        """The names this model records or lets edit at its own level (attnlab.recording.sites)."""
        return ("logits",)

    def forward(
        self,
        input_ids: torch.Tensor,
        decoder_input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_hidden: torch.Tensor | None = None,
        cache=None,
    ) -> ModelOutput:
        if decoder_input_ids is None:
            raise InputError("EncoderDecoder needs decoder_input_ids (the target so far, starting with "
                             f"decoder_start_token_id={self.config.decoder_start_token_id})")
        if encoder_hidden is None:
            encoder_hidden = self.encode(input_ids, attention_mask)
        h, logits = self.decode(decoder_input_ids, encoder_hidden, attention_mask=attention_mask,
                                decoder_attention_mask=decoder_attention_mask, cache=cache)
        return ModelOutput(logits=logits, hidden=h, encoder_hidden=encoder_hidden)
