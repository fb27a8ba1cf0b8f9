"""Encoder-only model (BERT): bidirectional attention, one contextual vector per token, task heads on top."""

from __future__ import annotations

import torch
from torch import nn

from attnlab.config import ModelConfig
from attnlab.models.base import ModelOutput, TransformerModel
from attnlab.models.heads import LMHead, NextSentenceHead, Pooler
from attnlab.models.stack import Stack
from attnlab.recording import active


class Encoder(Stack, TransformerModel):
    """Heads (all optional, from the config): MLM head tied to the embeddings (head="lm"), [CLS] sequence
    classifier (head="classifier"), token classifier (head="token_classifier"), BERT pooler (pooler=True) and,
    on the pooler, BERT's next-sentence classifier (nsp=True; its logits in ModelOutput.nsp_logits)."""

    def __init__(self, config: ModelConfig):
        Stack.__init__(self, config, n_layers=config.n_layers, causal=False)
        d = config.d_model
        self.tokens = nn.Embedding(config.vocab_size, d)
        self.lm_head = LMHead(config) if config.head == "lm" else None
        self.pooler = Pooler(config) if config.pooler else None
        self.nsp_head = NextSentenceHead(config) if config.nsp else None
        self.classifier = nn.Linear(d, config.n_classes) if config.head in ("classifier", "token_classifier") else None
        self.init_weights()
        if config.tie_embeddings and self.lm_head is not None:
            self.lm_head.proj.weight = self.tokens.weight
        if config.lora_rank:  # after the init: W_0 is whatever a loader copies in, B A starts at zero
            from attnlab.layers.lora import add_lora

            add_lora(self.blocks, config.lora_rank, config.lora_alpha)

    def sites(self) -> tuple[str, ...]:
        """The names this model records or lets edit at its own level (attnlab.recording.sites)."""
        has_logits = self.config.head in ("lm", "classifier", "token_classifier")
        return Stack.sites(self) + (("logits",) if has_logits else ())

    def head_input(self, h: torch.Tensor) -> torch.Tensor:
        """The vectors the MLM head reads for each position: its own, or with predict_from_previous the previous
        position's (position 0, which has none, reads its own: a [CLS]-like first token is never masked)."""
        if not self.config.predict_from_previous:
            return h
        return torch.cat([h[:, :1], h[:, :-1]], dim=1)  # (batch, seq, d_model)

    def forward(
        self,
        input_ids: torch.Tensor,  # (batch, seq)
        attention_mask: torch.Tensor | None = None,  # (batch, seq)
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> ModelOutput:
        self.check_ids(input_ids)
        h = self.run(self.tokens(input_ids), attention_mask=attention_mask, token_type_ids=token_type_ids,
                     position_ids=position_ids)
        pooled = self.pooler(h) if self.pooler is not None else None
        head = self.config.head
        if head == "lm":
            logits = self.lm_head(self.head_input(h))  # (batch, seq, vocab)
        elif head == "classifier":
            logits = self.classifier(pooled if pooled is not None else h[:, 0])  # (batch, n_classes) from [CLS]
        elif head == "token_classifier":
            logits = self.classifier(h)  # (batch, seq, n_classes)
        else:
            logits = None
        recorder = active()
        if logits is not None and recorder is not None:
            logits = recorder.keep(self, "logits", logits)
        nsp_logits = self.nsp_head(pooled) if self.nsp_head is not None else None  # (batch, 2)
        return ModelOutput(logits=logits, hidden=h, pooled=pooled, nsp_logits=nsp_logits)
