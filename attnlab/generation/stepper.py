"""One decoding step at a time, for decoders and encoder-decoders, with or without the KV cache.

The decoding strategies (greedy, sampling, beams) only see "logits of the last position" and "append these
tokens"; this module hides the topology and the cache behind those two verbs. Every step is one call of the
model itself (Decoder.forward, or EncoderDecoder.decode), with validate=False: the ids and masks were checked
once at generate's entry, and the ids written here are ones the model chose.

Buffers are allocated once for the whole request (tokens, attention mask, positions), so a step writes one
column in place and passes views: no per-step concatenation.

Positions: prompts are LEFT-padded (the newest token of every row is in the last column, so one new column
serves the whole batch). A row's positions count only its real tokens, position = cumsum(mask) - 1, so a
prompt gets the same positions whatever padding sits in front of it; the mask hides the pad keys.

Sliding window (window = the model's position limit, set by generate(sliding_window=True)): once the sequence
has more columns than the limit, each step runs the model on the last `window` columns alone, positions
restarting at 0 within them (a row keeps its last `window` real tokens). The cached K/V belong to positions
that have shifted, so from then on every step is a full forward pass over `window` tokens, without cache:
about the cost of a prefill of `window` tokens per new token instead of one token's worth.
"""

from __future__ import annotations

import torch

from attnlab.cache import KVCache
from attnlab.models.stack import token_positions
from attnlab.threads import kernels_apart, kernels_only


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
        window: int | None = None,  # sliding window: run each step on at most this many last columns
        compiled=None,  # call(ids, mask, positions, cache) -> logits for one-token cached steps (compiled.py)
    ):
        self.model, self.compiled = model, compiled
        self.apart: dict[tuple[int, int], bool] = {}  # (rows, head rows) -> kernels_only: see _call
        self.encoder_decoder = encoder_hidden is not None
        self.encoder_hidden, self.source_mask = encoder_hidden, source_mask
        batch, prompt_len = prompt.shape
        total = prompt_len + max_new_tokens
        self.window = window if window is not None and total > window else None
        device = prompt.device
        self.batch, self.prompt_len, self.length = batch, prompt_len, prompt_len
        self.tokens = torch.zeros(batch, total, dtype=torch.long, device=device)  # (batch, total)
        self.tokens[:, :prompt_len] = prompt
        self.padded = prompt_mask is not None and not bool(prompt_mask.all())
        self.mask = torch.ones(batch, total, dtype=torch.long, device=device) if self.padded else None
        if self.padded:
            self.mask[:, :prompt_len] = prompt_mask
        # a row's positions count its real tokens, cumsum(mask) - 1: the model's own default (token_positions)
        self.positions = token_positions(self.mask, 0, batch, total, device)  # (batch, total)
        # with a window the cache serves the steps before the first shift (none if the prompt fills the window)
        capacity = total if self.window is None else self.window
        # bounded: a sliding-window layer (Mistral, Gemma) keeps only its window's keys, however long the text grows
        self.cache = (KVCache.for_model(model, batch, capacity, bounded=True) if use_cache and prompt_len < capacity
                      else None)
        self.capacity = capacity
        # LongRoPE (Phi-3): keys turned with the short factors are turned again with the long ones once the text
        # outgrows original_max_len: the first step past it runs the whole sequence afresh, as transformers does
        scaling = getattr(getattr(model, "config", None), "rope_scaling", None) or {}
        self.long_after = scaling.get("original_max_len") if scaling.get("type") == "longrope" else None

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
        if self.cache is not None and self.long_after is not None and self._outgrows_short_rope():
            self.cache = KVCache.for_model(self.model, self.batch, self.capacity, bounded=True)
            return self._forward(0, self.length)
        start = self.length - 1 if self.cache is not None else 0
        return self._forward(start, self.length)

    def _outgrows_short_rope(self) -> bool:
        """Whether this step's longest position is the first past LongRoPE's original_max_len (the cache's keys
        were turned with the short factors)."""
        longest = int(self.positions[:, self.length - 1].max()) + 1
        before = int(self.positions[:, self.length - 2].max()) + 1 if self.length > 1 else 0
        return before <= self.long_after < longest

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
        if self.window is not None and end > self.window:
            return self._forward_window(end)
        mask = self.mask[:, :end] if self.mask is not None else None  # (batch, past + seq)
        return self._call(self.tokens[:, start:end], mask, self.positions[:, start:end], self.cache)

    def _forward_window(self, end: int) -> torch.Tensor:
        """The last `window` columns alone, positions restarting at 0, no cache (see the module docstring)."""
        self.cache = None  # its K/V were computed at positions that no longer hold: free it
        begin = end - self.window
        if self.mask is None:
            mask, positions = None, self.positions[:, : self.window]  # 0 .. window-1 for every row
        else:
            mask = self.mask[:, begin:end]  # (batch, window)
            positions = token_positions(mask, 0, batch=mask.shape[0], seq=self.window, device=mask.device)
        return self._call(self.tokens[:, begin:end], mask, positions, None)

    def _call(self, ids, mask, positions, cache) -> torch.Tensor:
        """The model's own forward on (batch, seq) ids; -> (batch, vocab) logits of the last position. A decoder
        whose products at this row count are all attnlab's kernels runs with torch at one thread and the kernels
        at the caller's count (attnlab.threads.kernels_only)."""
        shape = (ids.shape[0] * ids.shape[1], ids.shape[0])
        if shape not in self.apart:
            self.apart[shape] = not self.encoder_decoder and kernels_only(self.model, *shape)
        with kernels_apart(self.apart[shape]):
            return self._forward_call(ids, mask, positions, cache)

    def _forward_call(self, ids, mask, positions, cache) -> torch.Tensor:
        if self.encoder_decoder:
            # the encoder output is needed until the cross-attention K/V sit in the cache (first call)
            cached_cross = cache is not None and cache.cross[0].k is not None
            _, logits = self.model.decode(
                ids, None if cached_cross else self.encoder_hidden, attention_mask=self.source_mask,
                decoder_attention_mask=mask, position_ids=positions, cache=cache, last_only=True, validate=False)
        elif self.compiled is not None and cache is not None and ids.shape[1] == 1:  # a decoding step
            logits = self.compiled(ids, mask, positions, cache)
        else:
            logits = self.model(ids, attention_mask=mask, position_ids=positions, cache=cache, last_only=True,
                                validate=False).logits
        return logits[:, -1]  # (batch, vocab)
