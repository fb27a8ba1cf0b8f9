"""Choosing the next token from the last position's logits: greedy, or sampling reshaped by T, top-k, top-p.

The order follows common practice (and Hugging Face's): divide by the temperature, then cut to the k best,
then cut to the nucleus of probability mass top_p, then sample. Cut tokens get -inf so softmax gives them 0.
"""

from __future__ import annotations

import torch

from attnlab.generation.options import GenerationOptions


def filtered_logits(logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None) -> torch.Tensor:
    """(batch, vocab) logits -> the logits sampling draws from (cut tokens at -inf)."""
    scores = logits / temperature if temperature not in (0, 1) else logits
    vocab = scores.shape[-1]
    if top_k and top_k < vocab:
        kth_best = torch.topk(scores, top_k, dim=-1).values[..., -1:]  # (batch, 1)
        scores = scores.masked_fill(scores < kth_best, float("-inf"))
    if top_p is not None and top_p < 1:
        found = nucleus_candidates(scores, top_p)
        if found is None:
            return sorted_nucleus(scores, top_p)
        best, order = found
        return torch.full_like(scores, float("-inf")).scatter(-1, order, best)
    return scores


def sorted_nucleus(scores: torch.Tensor, top_p: float) -> torch.Tensor:
    """The top-p cut by a sort of the whole vocabulary: (batch, vocab) -> the same with cut tokens at -inf."""
    sorted_scores, order = torch.sort(scores, dim=-1, descending=True)
    probs = sorted_scores.softmax(dim=-1)
    mass_before = probs.cumsum(dim=-1) - probs  # probability of the strictly better tokens
    drop_sorted = mass_before >= top_p  # the nucleus already holds top_p without this token
    drop_sorted[..., 0] = False  # always keep the best token
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return scores.masked_fill(drop, float("-inf"))


NUCLEUS_CANDIDATES = 1024  # how many best tokens nucleus_candidates looks at before it gives up


def nucleus_candidates(scores: torch.Tensor, top_p: float) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The top-p cut found among the NUCLEUS_CANDIDATES best tokens only: (their scores with cut ones at -inf, their
    token ids), each (batch, K) best first; None when some row's nucleus is larger (or the vocabulary is small).

    Why: sorting a 49,152-word vocabulary costs ~3.5 ms a row on one core, and drawing from it ~1 ms more, more than a
    decoding step of a 135M model in a batch; the nucleus of a trained model is nearly always a few hundred tokens.
    Exactness: a token outside the candidates has at least the candidates' whole mass before it, so when that mass
    reaches top_p in every row it is cut by the same rule as in the full sort; inside, the rule is the full sort's,
    on probabilities normalised over the whole vocabulary (they may differ from the sort's softmax in the last bit
    of float32 rounding).
    """
    if scores.shape[-1] <= 4 * NUCLEUS_CANDIDATES:
        return None
    best, order = torch.topk(scores, NUCLEUS_CANDIDATES, dim=-1)  # (batch, K), sorted best first
    probs = (best - torch.logsumexp(scores, dim=-1, keepdim=True)).exp()
    mass = probs.cumsum(dim=-1)
    if not bool((mass[..., -1] >= top_p).all()):
        return None
    drop = (mass - probs) >= top_p  # (batch, K): the nucleus already holds top_p without this token
    drop[..., 0] = False
    return best.masked_fill(drop, float("-inf")), order


def choose_next(logits: torch.Tensor, options: GenerationOptions, generator: torch.Generator | None) -> torch.Tensor:
    """(batch, vocab) -> (batch,) next token ids."""
    if options.greedy:
        return logits.argmax(dim=-1)
    if not options.top_k and options.top_p is not None and options.top_p < 1:
        scores = filtered_logits(logits.float(), options.temperature, None, None)  # divided by T only
        found = nucleus_candidates(scores, options.top_p)
        if found is not None:
            # draw among the nucleus's candidates only: the same distribution, without a pass over the vocabulary
            best, order = found  # (batch, K) each
            pick = torch.multinomial(best.softmax(dim=-1), 1, generator=generator)  # (batch, 1) among candidates
            return order.gather(-1, pick).squeeze(1)
        scores = sorted_nucleus(scores, options.top_p)  # the candidates were looked at once, not again
    else:
        scores = filtered_logits(logits.float(), options.temperature, options.top_k, options.top_p)
    probs = scores.softmax(dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)
