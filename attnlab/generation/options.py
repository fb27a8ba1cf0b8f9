"""What a generation request may ask for, checked once before any compute.

Every bad value is refused here with an InputError that names the argument, the value and what is allowed,
so a typo never surfaces as a shape error deep inside a forward pass after minutes of decoding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attnlab.errors import InputError
from attnlab.threads import check_threads


@dataclass
class GenerationOptions:
    """Decoding settings. temperature == 0 means greedy; num_beams > 1 means beam search (deterministic)."""

    max_new_tokens: int = 20
    temperature: float = 0.0
    top_k: int | None = None  # keep the k most likely tokens before sampling; None or 0 = all
    top_p: float | None = None  # nucleus: keep the smallest set whose probability reaches top_p; None = all
    num_beams: int = 1
    length_penalty: float = 1.0  # beam score = sum of log-probs / (generated length ** length_penalty)
    early_stopping: bool | str = False  # beam search: True, False (Hugging Face's heuristic) or "never"
    eos_token_ids: tuple[int, ...] = ()
    pad_token_id: int = 0
    stop_strings: tuple[str, ...] = ()
    seed: int | None = None
    use_cache: bool = True
    keep_logits: bool = False  # keep each step's last-position logits (tests compare cached vs recomputed)
    sliding_window: bool = False  # past a position limit, run each step on the last `limit` tokens
    threads: int | None = None  # torch threads for the steps; None = attnlab.threads.choose (free, measured best)
    compile: bool | None = None  # one-token steps compiled (generation/compiled.py): None = where it pays

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def validate(self, vocab_size: int) -> None:
        def bad(name: str, value, allowed: str) -> InputError:
            return InputError(f"{name}={value!r} is not allowed: {allowed}")

        if isinstance(self.max_new_tokens, bool) or not isinstance(self.max_new_tokens, int) \
                or self.max_new_tokens < 1:
            raise bad("max_new_tokens", self.max_new_tokens, "give a positive integer")
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or math.isnan(t) or t < 0 or math.isinf(t):
            raise bad("temperature", t, "use a finite number >= 0 (0 = greedy, 1 = the model's distribution)")
        if self.top_k is not None and (isinstance(self.top_k, bool) or not isinstance(self.top_k, int)
                                       or self.top_k < 0):
            raise bad("top_k", self.top_k, "use None/0 (no limit) or a positive integer")
        p = self.top_p
        if p is not None and (isinstance(p, bool) or not isinstance(p, (int, float)) or math.isnan(p)
                              or not 0 < p <= 1):
            raise bad("top_p", p, "use a probability in (0, 1] (1 keeps every token) or None")
        b = self.num_beams
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise bad("num_beams", b, "use an integer >= 1 (1 = no beam search)")
        if b > 1 and not self.greedy:
            raise InputError(f"num_beams={b} with temperature={t}: beam search here is deterministic; "
                             "set temperature=0 for beam search, or num_beams=1 to sample")
        lp = self.length_penalty
        if isinstance(lp, bool) or not isinstance(lp, (int, float)) or not math.isfinite(lp):
            raise bad("length_penalty", lp, "use a finite number (1 = average log-prob, 0 = raw sum)")
        if self.early_stopping not in (True, False, "never"):
            raise bad("early_stopping", self.early_stopping, "use True, False or 'never'")
        for eos in self.eos_token_ids:
            if isinstance(eos, bool) or not isinstance(eos, int) or not 0 <= eos < vocab_size:
                raise bad("eos_token_id", eos, f"use token ids in [0, vocab_size={vocab_size}) or None")
        if isinstance(self.pad_token_id, bool) or not isinstance(self.pad_token_id, int) \
                or not 0 <= self.pad_token_id < vocab_size:
            raise bad("pad_token_id", self.pad_token_id, f"use a token id in [0, vocab_size={vocab_size})")
        for s in self.stop_strings:
            if not isinstance(s, str) or not s:
                raise bad("stop_strings", s, "use non-empty strings")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise bad("seed", self.seed, "use an integer or None")
        if not isinstance(self.sliding_window, bool):
            raise bad("sliding_window", self.sliding_window, "use True or False")
        if self.compile is not None and not isinstance(self.compile, bool):
            raise bad("compile", self.compile, "use None (compile where it pays: the default), True or False")
        self.threads = check_threads(self.threads)  # 0 / "auto" -> None; refuses the rest by name
