"""Decoder-only causal language model (GPT, LLaMA): each position predicts the next token."""

from __future__ import annotations

import torch
from torch import nn

from attnlab.config import ModelConfig
from attnlab.models.base import ModelOutput, TransformerModel
from attnlab.models.heads import LMHead
from attnlab.models.stack import Stack
from attnlab.recording import active


class Decoder(Stack, TransformerModel):
    """Causal language model: token (+ position) embeddings, causal blocks, a final norm and an LM head that may
    share the embedding matrix; forward(input_ids) gives a ModelOutput with next-token logits at every position."""
    def __init__(self, config: ModelConfig):
        Stack.__init__(self, config, n_layers=config.n_layers, causal=True)
        self.tokens = nn.Embedding(config.vocab_size, config.d_model)
        self.lm_head = LMHead(config)
        self.init_weights()
        if config.tie_embeddings:
            self.lm_head.proj.weight = self.tokens.weight

    def sites(self) -> tuple[str, ...]:
        """The names this model records or lets edit at its own level (attnlab.recording.sites)."""
        return Stack.sites(self) + (("logits",) if self.config.head == "lm" else ())

    def forward(
        self,
        input_ids: torch.Tensor,  # (batch, seq)
        attention_mask: torch.Tensor | None = None,  # (batch, past + seq)
        position_ids: torch.Tensor | None = None,
        cache=None,
        last_only: bool = False,  # logits for the last position only (generation)
        *,
        validate: bool = True,  # False: ids, mask and positions were checked once by the caller (generation)
    ) -> ModelOutput:
        """-> logits (batch, seq|1, vocab) and hidden (batch, seq, d_model). Every generation step is this call.

        validate=False skips the input checks that read tensors back to the host (id range, mask values): a
        decoding loop checks its inputs once at its entry and then only feeds the model ids it chose itself.
        """
        if validate:
            self.check_ids(input_ids)
        h = self.run(self.tokens(input_ids), attention_mask=attention_mask, position_ids=position_ids, cache=cache,
                     validate=validate)
        logits = self.lm_head(h[:, -1:] if last_only else h) if self.config.head == "lm" else None
        if logits is not None and self.config.logit_softcap is not None:  # Gemma 2: within (-cap, cap)
            logits = torch.tanh(logits / self.config.logit_softcap) * self.config.logit_softcap
        recorder = active()
        if logits is not None and recorder is not None:
            logits = recorder.keep(self, "logits", logits)
        return ModelOutput(logits=logits, hidden=h)
