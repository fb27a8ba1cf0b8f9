"""The decode layout: block weights stored (in, out) while a generate call runs, then put back exactly.

Why: a decoding step with a handful of rows is a matrix-vector product per weight matrix, so its cost is
reading the matrix. nn.Linear stores W as (out, in) and computes x W^T; on CPU (MKL) the one-row product
streams a wide matrix (out > in: fused QKV, the FFN's up or gate+up) 1.3-1.7x faster when the same numbers sit
in memory as (in, out), the layout of GPT-2's Conv1D (bench/bench_matvec.py; bench/RESULTS.md). Narrow
matrices (the FFN's down projection) are faster as they are, and from 4 rows on MKL's (out, in) matrix-matrix
product is no slower, so only wide matrices of the decoder's blocks, for steps of few rows, are laid out anew.

How: each chosen parameter keeps its name, shape, values and Parameter object; only its storage changes, to a
contiguous (in, out) tensor seen through a transposed (out, in) view (`w.data = W_t.t()`), so F.linear runs
the (in, out) kernel and every module reads it unchanged. The original storage is kept aside and restored on
exit, so after the call the model is bit-for-bit and storage-for-storage what it was (a state_dict taken
before still aliases it; saving needs no care). Cost, paid once per call: one transposed copy of those
matrices (GPT-2-small: 198 MB, about 0.1 s) held beside the originals while the call runs; so the layout is
only used for calls long enough to pay it back (MIN_NEW_TOKENS). Logits agree with the plain layout to float32
rounding (another summation order).
"""

from __future__ import annotations

import threading

import torch
from torch import nn

MAX_ROWS = 3  # rows per step (batch x beams) up to which the (in, out) product is the faster one (MKL, measured)
MIN_NEW_TOKENS = 16  # shorter calls do not win back the one-time copy
ENABLED = True  # benches and tests switch it off to compare

_LOCK = threading.Lock()
_ACTIVE: dict[int, list] = {}  # id(parameter) -> [original data, calls using the layout, version after the swap]


def decoder_blocks(model) -> nn.Module | None:
    """The blocks a decoding step runs: a Decoder's own, an EncoderDecoder's decoder stack's."""
    stack = getattr(model, "decoder", model)
    return getattr(stack, "blocks", None)


def wide_weights(model) -> list[nn.Parameter]:
    """Self-attention and feed-forward weights with more outputs than inputs (QKV, up / gate+up).

    Cross-attention is left out: its K/V projection runs once per source, its query projection is square.
    """
    blocks = decoder_blocks(model)
    if blocks is None:
        return []
    seen, weights = set(), []
    for name, module in blocks.named_modules():
        if (isinstance(module, nn.Linear) and "cross_attn" not in name.split(".")
                and module.out_features > module.in_features and id(module.weight) not in seen):
            seen.add(id(module.weight))
            weights.append(module.weight)
    return weights


def worth_it(rows: int, max_new_tokens: int, use_cache: bool) -> bool:
    return ENABLED and use_cache and rows <= MAX_ROWS and max_new_tokens >= MIN_NEW_TOKENS


class DecodeLayout:
    """Context manager: wide block weights stored (in, out) inside, restored exactly on exit.

    Nested or concurrent calls on the same model share one layout (a count per parameter); the last to leave
    restores the original storage. Enter it outside inference mode: the new storage must be an ordinary tensor
    so the parameter can still be trained after the call.
    """

    def __init__(self, model, active: bool = True):
        self.weights = wide_weights(model) if active else []

    def __enter__(self) -> DecodeLayout:
        with _LOCK, torch.no_grad():
            for w in self.weights:
                entry = _ACTIVE.get(id(w))
                if entry is not None:
                    entry[1] += 1
                    continue
                if w.device.type != "cpu" or w.dim() != 2 or not w.is_contiguous() or w.is_inference():
                    continue  # measured on CPU (MKL) only; or not nn.Linear's plain (out, in) storage
                original = w.data
                w.data = original.t().contiguous().t()  # (out, in) view of (in, out) storage; same values
                _ACTIVE[id(w)] = [original, 1, w._version]
        return self

    def __exit__(self, *exc) -> None:
        with _LOCK:
            for w in self.weights:
                entry = _ACTIVE.get(id(w))
                if entry is None:
                    continue
                entry[1] -= 1
                if entry[1] == 0:
                    original = entry[0]
                    if w._version != entry[2]:  # updated in place meanwhile (another thread): keep the update
                        with torch.no_grad():
                            original.copy_(w.data)
                    w.data = original
                    del _ACTIVE[id(w)]
