"""One decoding step at a time, for decoders and encoder-decoders, with or without the KV cache.

The decoding strategies (greedy, sampling, beams) only see "logits of the last position" and "append these
tokens"; this module hides the topology and the cache behind those two verbs.

Buffers are allocated once for the whole request (tokens, attention mask, positions), so a step writes one
column in place and passes views: no per-step concatenation.

Positions: prompts are LEFT-padded (the newest token of every row is in the last column, so one new column
serves the whole batch). A row's positions count only its real tokens, position = cumsum(mask) - 1, so a
prompt gets the same positions whatever padding sits in front of it; the mask hides the pad keys.
"""

from __future__ import annotations

import torch

from attnlab.cache import KVCache
from attnlab.generation import head as fast_head
from attnlab.recording import active as active_recorder


class Stepper:
    def __init__(
        self,
        model,
        prompt: torch.Tensor,  # (batch, prompt_len) decoder prompt (decoders) or decoder start ids (enc-dec)
        prompt_mask: torch.Tensor | None,  # (batch, prompt_len) 1 = real token, or None = no padding
        max_new_tokens: int,
        use_cache: bool,
        encoder_hidden: torch.Tensor | None = None,  # (batch, src_seq, d_model) encoder-decoders
        source_mask: torch.Tensor | None = None,  # (batch, src_seq)
    ):
        self.model, self.use_cache = model, use_cache
        self.encoder_decoder = encoder_hidden is not None
        self.encoder_hidden, self.source_mask = encoder_hidden, source_mask
        batch, prompt_len = prompt.shape
        total = prompt_len + max_new_tokens
        device = prompt.device
        self.batch, self.prompt_len, self.length = batch, prompt_len, prompt_len
        self.tokens = torch.zeros(batch, total, dtype=torch.long, device=device)  # (batch, total)
        self.tokens[:, :prompt_len] = prompt
        self.padded = prompt_mask is not None and not bool(prompt_mask.all())
        self.mask = torch.ones(batch, total, dtype=torch.long, device=device) if self.padded else None
        if self.padded:
            self.mask[:, :prompt_len] = prompt_mask
            self.positions = (self.mask.cumsum(dim=-1) - 1).clamp(min=0)  # (batch, total)
        else:
            self.positions = torch.arange(total, device=device).expand(batch, total)
        self.cache = KVCache.for_model(model, batch, total) if use_cache else None
        self.head = fast_head.DecodeHead(model.lm_head, batch) if fast_head.usable(model) else None

    # ------------------------------------------------------------------ the two verbs
    def first(self) -> torch.Tensor:
        """Run the prompt (prefill); -> (batch, vocab) logits of its last position."""
        return self._forward(0, self.length)

    def advance(self, next_tokens: torch.Tensor) -> torch.Tensor:
        """Append (batch,) tokens and run them; -> (batch, vocab) logits for the token after them."""
        self.write(next_tokens)
        return self.run_last()

    def write(self, next_tokens: torch.Tensor) -> None:
        self.tokens[:, self.length] = next_tokens
        self.length += 1

    def run_last(self) -> torch.Tensor:
        start = self.length - 1 if self.use_cache else 0
        return self._forward(start, self.length)

    def reorder(self, index: torch.Tensor) -> None:
        """Beam search: row i continues from row index[i] (tokens so far and cached K/V)."""
        self.tokens[:, : self.length] = self.tokens[index, : self.length]
        if self.cache is not None:
            self.cache.reorder(index, cross=False)  # every beam of a source shares the same cross K/V

    @property
    def generated(self) -> torch.Tensor:
        """(batch, new) the tokens written after the prompt."""
        return self.tokens[:, self.prompt_len : self.length]

    # ------------------------------------------------------------------ the model call
    def _forward(self, start: int, end: int) -> torch.Tensor:
        ids = self.tokens[:, start:end]  # (batch, end - start)
        mask = self.mask[:, :end] if self.mask is not None else None  # (batch, past + seq)
        positions = self.positions[:, start:end]
        if self.head is not None and active_recorder() is None:
            return self._forward_fast(ids, mask, positions)
        if self.encoder_decoder:
            # the encoder output is needed until the cross-attention K/V sit in the cache (first call)
            cached_cross = self.cache is not None and self.cache.cross[0].k is not None
            _, logits = self.model.decode(
                ids, None if cached_cross else self.encoder_hidden, attention_mask=self.source_mask,
                decoder_attention_mask=mask, position_ids=positions, cache=self.cache, last_only=True)
        else:
            logits = self.model(ids, attention_mask=mask, position_ids=positions, cache=self.cache,
                                last_only=True).logits
        return logits[:, -1]  # (batch, vocab)

    def _forward_fast(self, ids, mask, positions) -> torch.Tensor:
        """The model's own stack, then the decode head on the last position (see generation/head.py).

        The same calls Decoder.forward / EncoderDecoder.decode make (ids were checked once up front).
        """
        model = self.model
        if self.encoder_decoder:
            cached_cross = self.cache is not None and self.cache.cross[0].k is not None
            h = model.decoder.run(model.tokens(ids), attention_mask=mask, position_ids=positions,
                                  context=None if cached_cross else self.encoder_hidden,
                                  context_mask=self.source_mask, cache=self.cache)
        else:
            h = model.run(model.tokens(ids), attention_mask=mask, position_ids=positions, cache=self.cache)
        return self.head(h[:, -1])  # (batch, vocab)
