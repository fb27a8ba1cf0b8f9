"""Perplexity of a causal language model on a token sequence longer than its window (teacher forcing).

Why one more function: a quantized model is only as good as its measured loss. The measurement must be the same
number for every variant (float32, int8, 4-bit), defined once, and checked against an independent computation
(tests/test_quality.py: Hugging Face's own loss on the same weights).

The definition. Tokens x_0 .. x_{n-1}; every token after the first is scored exactly once. The scored positions
1 .. n-1 are cut into consecutive blocks of `stride` tokens; the block [a, b) is scored by one forward pass over
the window x[max(0, b - window) : b], so each scored token sees at least `window - stride` tokens before it
(fewer only near the start of the sequence). With the default stride = window - 1 the windows do not overlap
(one token of context is shared), and every pass costs one window.

    log p_t = log softmax(logits of the window at the position before t)[x_t]
    PPL     = exp( -(1 / (n - 1)) * sum_{t=1}^{n-1} log p_t )        (natural log: nats per token)

`step` feeds each window `step` tokens at a time through a KV cache, as a decoding loop does (step=1: one token
per forward), instead of in one forward pass. The numbers are the same up to float rounding for a float model;
a model whose kernels depend on how many rows a product has (attnlab's int8 layers decode one row through an
8-bit-activation kernel) is then measured on the path generation takes.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from attnlab.cache import KVCache
from attnlab.errors import InputError


@dataclass
class TokenScores:
    """Per scored token (positions 1 .. n-1 of the sequence): its log-probability and the model's top-1 choice."""

    logprobs: torch.Tensor  # (n - 1,) float64: log p(x_t | its window's tokens before t)
    top1: torch.Tensor  # (n - 1,) long: argmax of the same distribution (the greedy choice at t)

    @property
    def tokens(self) -> int:
        return int(self.logprobs.numel())

    @property
    def nll(self) -> float:
        """Mean negative log-likelihood, nats per token."""
        return float(-self.logprobs.mean())

    @property
    def perplexity(self) -> float:
        return math.exp(self.nll)


def windows(n: int, window: int, stride: int | None = None) -> list[tuple[int, int, int]]:
    """(start, first_scored, end) for each forward pass over a sequence of n tokens: the pass reads
    x[start:end] and scores x[first_scored:end]. The scored ranges tile 1 .. n-1 without gaps or overlaps."""
    stride = window - 1 if stride is None else stride
    if window < 2:
        raise InputError(f"window={window}: a window must hold at least 2 tokens (one of context, one scored)")
    if not 1 <= stride <= window - 1:
        raise InputError(f"stride={stride}: use 1 <= stride <= window - 1 = {window - 1} (each scored block needs "
                         "the token before it inside its window)")
    if n < 2:
        raise InputError(f"{n} token(s): perplexity needs at least 2 (the first token is never scored)")
    out = []
    for a in range(1, n, stride):
        b = min(a + stride, n)
        out.append((max(0, b - window), a, b))
    return out


def _logits(model, chunk: torch.Tensor, step: int | None) -> torch.Tensor:
    """(L, vocab) logits of one window chunk (1, L): one forward, or `step` tokens at a time through a cache."""
    if step is None:
        return model(chunk).logits[0]
    cache = KVCache.for_model(model, batch=1, capacity=chunk.shape[1])
    return torch.cat([model(chunk[:, i:i + step], cache=cache).logits[0] for i in range(0, chunk.shape[1], step)])


@torch.no_grad()
def score_tokens(model, token_ids, window: int, stride: int | None = None, step: int | None = None) -> TokenScores:
    """Log-probability and top-1 token of every token after the first, each from one window (see the module
    docstring). `model(ids)` must return logits (batch, seq, vocab) as attnlab's Decoder does."""
    ids = torch.as_tensor(token_ids, dtype=torch.long).reshape(-1)  # (n,)
    limit = getattr(getattr(model, "config", None), "seq_limit", None)
    if limit is not None and window > limit:
        raise InputError(f"window={window} exceeds the model's {limit} positions: use window <= {limit}")
    spans = windows(ids.numel(), window, stride)
    if step is not None and step < 1:
        raise InputError(f"step={step}: feed at least 1 token per forward (or None: the whole window at once)")
    device = next(itertools.chain(model.parameters(), model.buffers()), torch.empty(0)).device  # quantized: buffers
    logprobs, top1 = [], []
    training = model.training
    model.eval()  # dropout off: a model in training mode would score a random sub-network
    try:
        for start, first, end in spans:
            chunk = ids[start:end].to(device)[None]  # (1, L)
            logits = _logits(model, chunk, step)  # (L, vocab): row i predicts chunk[i + 1]
            rows = logits[first - start - 1:end - start - 1].float()  # (scored, vocab)
            targets = ids[first:end].to(device)  # (scored,)
            # log p = logit - logsumexp(logits), without a (scored, vocab) log-softmax copy (49k-token vocabularies)
            picked = rows.gather(-1, targets[:, None])[:, 0] - rows.logsumexp(-1)  # (scored,)
            logprobs.append(picked.double().cpu())
            top1.append(rows.argmax(-1).cpu())
    finally:
        model.train(training)
    return TokenScores(torch.cat(logprobs), torch.cat(top1))


def perplexity(model, token_ids, window: int, stride: int | None = None, step: int | None = None) -> float:
    """exp(mean negative log-likelihood) of token_ids[1:] under the model, windowed as the module docstring says."""
    return score_tokens(model, token_ids, window, stride, step).perplexity
