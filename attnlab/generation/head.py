"""The vocabulary projection for decoding, with the weight laid out the way a one-row product wants it.

During decoding the LM head multiplies one hidden vector per sequence by a (vocab, d_model) matrix: a
matrix-vector product that reads the whole matrix (GPT-2: 50257 x 768 floats = 154 MB, a third of all the
bytes one token touches). nn.Linear stores it (out, in) and computes x W^T; with MKL on CPU that one-row
product streams the matrix about 1.7x slower than x W_t with W_t stored (in, out) contiguously (measured in
bench/RESULTS.md). So generation keeps a transposed copy of the head's weight, made once per weight version
and reused across calls, and uses it when a step has at most MAX_ROWS rows. With more rows MKL's one
matrix-matrix product over all 50k vocabulary rows is poorly blocked; the same product cut into slices of
CHUNK vocabulary rows (views of the weight, no copy) is about 1.3x faster at 4-16 rows on one thread
(bench/RESULTS.md). With more threads each slice is a parallel region of its own, and on cores shared with
other jobs every region can wait milliseconds for its second thread (measured: 48 slices made a step 7x
slower on the loaded 2-core machine), so several threads keep the single product.
The numbers are the same products and sums, so the logits agree with the model's own head to float32
rounding (the tests compare them at 1e-5).
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F

_TRANSPOSED: dict[int, tuple] = {}  # id(proj weight) -> (weakref to it, its _version, W^T)
MAX_ROWS = 3  # up to this many rows the (d_model, vocab) copy is faster; from 4 rows MKL's (out, in) gemm is
CHUNK = 1024  # vocabulary rows per product when a step has more rows (one thread only, see below)
SLICE_MAX_THREADS = 1  # each slice opens its own parallel region; on shared cores that costs ms per region


def transposed_weight(weight: torch.Tensor) -> torch.Tensor:
    """(vocab, d_model) -> contiguous (d_model, vocab), cached until the weight changes in place."""
    key = id(weight)
    entry = _TRANSPOSED.get(key)
    if (entry is None or entry[0]() is not weight or entry[1] != weight._version
            or entry[2].dtype != weight.dtype or entry[2].device != weight.device):
        with torch.no_grad():
            entry = (weakref.ref(weight), weight._version, weight.detach().t().contiguous())
        _TRANSPOSED[key] = entry
        weakref.finalize(weight, _TRANSPOSED.pop, key, None)  # forget the copy with the model
    return entry[2]


class DecodeHead:
    """Computes what attnlab's LMHead computes, for the last position only."""

    def __init__(self, lm_head, rows: int):
        self.lm_head = lm_head
        # (d_model, vocab) copy only where it pays: a batch of more rows never makes it (no memory spent)
        self.weight_t = transposed_weight(lm_head.proj.weight) if rows <= MAX_ROWS else None

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        """(rows, d_model) -> (rows, vocab)."""
        head = self.lm_head
        if head.scale != 1.0:
            h = h * head.scale
        if head.transform is not None:
            h = head.norm(head.act(head.transform(h)))
        if self.weight_t is not None and h.shape[0] <= MAX_ROWS:
            if head.bias is not None:
                return torch.addmm(head.bias, h, self.weight_t)
            return h @ self.weight_t
        if torch.get_num_threads() > SLICE_MAX_THREADS:  # measured only where it pays: one thread
            return F.linear(h, head.proj.weight, head.bias)
        weights = head.proj.weight.split(CHUNK)  # views of (vocab, d_model): CHUNK vocabulary rows each
        biases = head.bias.split(CHUNK) if head.bias is not None else [None] * len(weights)
        return torch.cat([F.linear(h, w, b) for w, b in zip(weights, biases, strict=True)], dim=-1)  # (rows, vocab)


def usable(model) -> bool:
    """The fast head applies to attnlab's own LMHead (proj weight, optional scale/transform/bias)."""
    head = getattr(model, "lm_head", None)
    return (head is not None and hasattr(head, "proj") and hasattr(head, "scale")
            and hasattr(head, "transform") and getattr(head.proj, "bias", None) is None)
