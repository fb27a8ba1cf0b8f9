"""Greedy decoding and sampling: predict the next token, append it, repeat (one token per sequence per step).

Written as a Python generator of Steps so that streaming and the plain call share one code path: `generate`
simply drains the iterator. A finished sequence (EOS or stop string) keeps receiving the pad token, so the
batch stays rectangular, until every sequence is finished or max_new_tokens is reached.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from attnlab.generation.options import GenerationOptions
from attnlab.generation.sampling import choose_next
from attnlab.generation.stepper import Stepper
from attnlab.generation.stopping import Stopper


@dataclass
class Step:
    """What one decoding step produced."""

    index: int  # 0 for the first new token (its time includes the prompt's forward pass)
    tokens: torch.Tensor  # (batch,) the new token of every sequence (pad for sequences already finished)
    finished: torch.Tensor  # (batch,) bool, True once a sequence has stopped (this step's token included)
    seconds: float  # wall time of this step: forward pass + choosing the token
    logits: torch.Tensor | None = None  # (batch, vocab) when options.keep_logits


def decode_steps(stepper: Stepper, options: GenerationOptions, stopper: Stopper,
                 generator: torch.Generator | None) -> Iterator[Step]:
    batch = stepper.batch
    unfinished = torch.ones(batch, dtype=torch.bool, device=stepper.tokens.device)
    pad = torch.tensor(options.pad_token_id, device=stepper.tokens.device)
    can_stop = stopper.eos is not None or bool(stopper.stop_strings)  # else every row runs to max_new_tokens
    started = time.perf_counter()
    logits = stepper.first()
    for index in range(options.max_new_tokens):
        next_tokens = choose_next(logits, options, generator)  # (batch,)
        if can_stop:  # finished rows get the pad token
            next_tokens = torch.where(unfinished, next_tokens, pad)
        stepper.write(next_tokens)
        if can_stop:
            stopped = stopper.is_eos(next_tokens)
            if stopper.stop_strings:
                generated = stepper.generated
                for row in unfinished.nonzero().flatten().tolist():
                    if stopper.hits_string(generated[row].tolist()):
                        stopped[row] = True
            unfinished &= ~stopped
        seconds = time.perf_counter() - started
        yield Step(index, next_tokens, ~unfinished, seconds, logits if options.keep_logits else None)
        # reading `unfinished` back is a host sync (a GPU waits for the step): only when a sequence can stop
        if index + 1 == options.max_new_tokens or (can_stop and not bool(unfinished.any())):
            return
        started = time.perf_counter()
        logits = stepper.run_last()
