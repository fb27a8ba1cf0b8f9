"""What the page needs to redraw sampling at once, without a request: the step's best logits and, for the
tokens it does not send, the few sums that keep every probability it draws exact.

The Generation tab's sliders reshape the current distribution (temperature, top-k, top-p) the moment they move,
as Transformer Explainer's do; the page computes what `filtered_probs` computes. Sending all logits would cost
a 49,152-number answer per step on SmolLM2, so the step sends its N best logits, and for the other V - N tokens:
- `rest_lse[t]`: log sum over them of exp((z - z_max) / T) at each temperature T the slider can take
  (TEMPERATURES): the softmax's denominator at T is then exact. One number cannot serve every T: the sum of
  exp(z / T) over the rest is not a function of its value at T = 1.
- with top-k off, the nucleus (top-p) can reach past the N tokens sent; then `nucleus[t][j]` holds how many
  tokens it keeps and their probability mass at (TEMPERATURES[t], TOP_PS[j]), the renormaliser of what is drawn.
A top-k slider of at most N (TOP_K_MAX) cuts the rest away, so with top-k on nothing more is needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

N_SENT = 50  # the best logits sent: the page draws the first few, and top-k goes up to this many
TOP_K_MAX = N_SENT
TEMPERATURES = tuple(round(0.05 * i, 2) for i in range(1, 41))  # the slider's positive values: 0.05 .. 2.00
TOP_PS = tuple(round(0.05 * i, 2) for i in range(1, 20))  # the slider's values below 1 (1 = off): 0.05 .. 0.95


def nucleus_sizes(sorted_probs: torch.Tensor, top_ps: torch.Tensor) -> torch.Tensor:
    """How many of the best tokens top-p keeps, per row and p, from (rows, vocab) probabilities sorted descending
    (filtered_probs's rule: a token is dropped when the tokens before it already hold p; the best is always kept).
    -> (rows, len(top_ps)) counts."""
    cumulative = sorted_probs.cumsum(-1)
    mass_before = torch.cat((torch.zeros_like(cumulative[:, :1]), cumulative[:, :-1]), dim=-1)  # non-decreasing
    wanted = top_ps.to(sorted_probs.dtype).expand(sorted_probs.shape[0], -1).contiguous()
    return torch.searchsorted(mass_before, wanted, side="left").clamp_min(1)


def sampling_tables(logits: torch.Tensor, label: Callable[[int], str], chosen: int | None = None,
                    n: int = N_SENT) -> dict[str, Any]:
    """(vocab,) logits of one step -> the page's redraw data: the n best tokens (id, text, logit, descending),
    the other tokens' log-sum-exp at each slider temperature, the nucleus beyond the n sent (None where it ends
    within them: the page computes that from the logits it has), and the `chosen` (sampled) token's logit and
    rank (1 = best), so its probability can be followed when it is not among the n. Float32, as filtered_probs."""
    z = logits.detach().float().flatten()  # (vocab,)
    vocab = z.numel()
    n = min(n, vocab)
    order = z.argsort(descending=True)  # the same order at every temperature: T > 0 keeps it
    shifted = z[order] - z[order[0]]  # (vocab,) sorted, the best at 0 (filtered_probs's shift)
    scaled = shifted[None] / torch.tensor(TEMPERATURES)[:, None]  # (temperatures, vocab)
    rest_lse = scaled[:, n:].logsumexp(-1).tolist() if n < vocab else [None] * len(TEMPERATURES)
    probs = scaled.softmax(-1)
    keep = nucleus_sizes(probs, torch.tensor(TOP_PS))  # (temperatures, top_ps)
    mass = probs.cumsum(-1).gather(-1, keep - 1)  # the nucleus's probability before renormalising
    nucleus = [[None if k <= n else {"tokens": k, "mass": m} for k, m in zip(ks, ms, strict=True)]
               for ks, ms in zip(keep.tolist(), mass.tolist(), strict=True)]
    best = order[:n].tolist()
    return {"ids": best, "tokens": [label(i) for i in best], "logits": z[order[:n]].tolist(), "vocab": vocab,
            "others": vocab - n, "temperatures": list(TEMPERATURES), "top_ps": list(TOP_PS),
            "top_k_max": min(TOP_K_MAX, n), "rest_lse": rest_lse, "nucleus": nucleus,
            "chosen": None if chosen is None else {"id": chosen, "token": label(chosen), "logit": float(z[chosen]),
                                                   "rank": 1 + int((z > z[chosen]).sum())}}
