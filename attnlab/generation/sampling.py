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
        sorted_scores, order = torch.sort(scores, dim=-1, descending=True)
        probs = sorted_scores.softmax(dim=-1)
        mass_before = probs.cumsum(dim=-1) - probs  # probability of the strictly better tokens
        drop_sorted = mass_before >= top_p  # the nucleus already holds top_p without this token
        drop_sorted[..., 0] = False  # always keep the best token
        drop = drop_sorted.scatter(-1, order, drop_sorted)
        scores = scores.masked_fill(drop, float("-inf"))
    return scores


def choose_next(logits: torch.Tensor, options: GenerationOptions, generator: torch.Generator | None) -> torch.Tensor:
    """(batch, vocab) -> (batch,) next token ids."""
    if options.greedy:
        return logits.argmax(dim=-1)
    scores = filtered_logits(logits.float(), options.temperature, options.top_k, options.top_p)
    probs = scores.softmax(dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)
