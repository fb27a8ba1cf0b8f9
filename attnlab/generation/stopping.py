"""When a sequence is finished: its end-of-sequence token, or the text it produced containing a stop string.

Stop strings are checked on decoded text, not on token ids, because one string can be spelled by many
different token splits ("\\n\\n" may be one token or two). Only the generated part is decoded, so a stop
string inside the prompt never ends generation.
"""

from __future__ import annotations

import torch

from attnlab.errors import InputError


class Stopper:
    def __init__(self, eos_token_ids: tuple[int, ...], stop_strings: tuple[str, ...] = (), tokenizer=None):
        if stop_strings and tokenizer is None:
            raise InputError(f"stop_strings={list(stop_strings)!r} need a tokenizer to turn tokens into text; "
                             "pass tokenizer=... (attnlab.load returns one beside the model)")
        if tokenizer is not None and not callable(getattr(tokenizer, "decode", None)):
            raise InputError(f"tokenizer must have a decode(ids) method, got {type(tokenizer).__name__}")
        self.eos = torch.tensor(eos_token_ids, dtype=torch.long) if eos_token_ids else None
        self.eos_set = set(eos_token_ids)
        self.stop_strings, self.tokenizer = stop_strings, tokenizer
        # the longest stop string spans at most this many tokens (each token decodes to >= 1 character,
        # except special tokens, hence the margin): decoding that tail is enough and keeps each step cheap
        self.tail = max((len(s) for s in stop_strings), default=0) + 8

    def is_eos(self, tokens: torch.Tensor) -> torch.Tensor:
        """(batch,) ids -> (batch,) bool."""
        if self.eos is None:
            return torch.zeros_like(tokens, dtype=torch.bool)
        if len(self.eos_set) == 1:
            return tokens == self.eos[0]
        return torch.isin(tokens, self.eos)

    def hits_string(self, generated: list[int]) -> bool:
        """True when the text of the generated tokens (ending at the newest) contains a stop string."""
        if not self.stop_strings:
            return False
        text = self.tokenizer.decode(generated[-self.tail:])
        return any(s in text for s in self.stop_strings)
