"""nn.Linear plus one decoding trick: a second, (in, out) copy of a wide weight for products of a few rows.

Why: a decoding step multiplies a handful of rows (one per sequence) by every weight matrix, so its cost is
reading the matrix. nn.Linear stores W as (out, in) and computes x W^T; on CPU (MKL) that one-row product
streams a wide matrix (out > in: fused QKV, the FFN's up or gate+up, the LM head's vocabulary projection)
faster when the same numbers sit in memory as (in, out), GPT-2's Conv1D layout
(bench/RESULTS.md): 1.05-1.19x at one row on the Intel Xeon that runs this project's benchmarks now (1.3-1.9x on
the AMD EPYC the benchmarks ran on before), but 0.7-0.86x at 2-3 rows there (the AMD one still won at 2-3 rows), and
no better from 4 rows on. Narrow matrices (the FFN's down projection) are as fast or faster as they are. So the
copy is used for wide weights and at most MAX_ROWS rows. On the AMD EPYC Zen 5 the benchmarks use now (one thread,
2026-12-07, `python -m attnlab.benchmarks.decode_layout`: bench/results/decode-layout-2026-12-07/matvec.log) the
wide matrices gain 1.35-1.67x at one row and also at 2-3 rows; MAX_ROWS stays as the Intel machine set it (not
re-decided).

When: without autograd, on CPU, once this layer has served MIN_CALLS such few-row products (a generation of
that many tokens: shorter uses never pay for the copy). The copy belongs to this module, like a cache: it is
not a parameter or a buffer (state_dict, saving and `.to()` never see it) and it is dropped and remade when
the weight changes (updated in place, replaced, or moved to another dtype or device) and dropped as soon as
the layer runs with autograd on a trainable weight (training). Memory: the copy doubles the bytes of the wide
weights it covers while it is kept (GPT-2-small: +198 MB for the blocks, +154 MB for the head).
The numbers are the same products in another summation order: outputs agree to float32 rounding.
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F
from torch import nn


class Linear(nn.Linear):
    """nn.Linear (same parameters, names and init) whose wide weight gets an (in, out) copy for decoding."""

    MAX_ROWS = 1  # up to this many rows the (in, out) product is the faster one (MKL, measured; see above)
    MIN_CALLS = 16  # few-row products served before the copy is made (its one-time cost must pay back)

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, decode_copy: bool | None = None):
        super().__init__(in_features, out_features, bias=bias)
        # None: only wide weights (out > in) get a copy; a narrow one is faster as (out, in)
        self.decode_copy = out_features > in_features if decode_copy is None else decode_copy
        self._copy: tuple | None = None  # (weakref to the weight, its (version, data_ptr, dtype), (in, out) tensor)
        self._few_row_calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight_for(x), self.bias)

    def weight_for(self, x: torch.Tensor) -> torch.Tensor:
        """The (out, in) weight to multiply x (..., in) by: the parameter, or a view of the (in, out) copy."""
        if not self.decode_copy or torch.compiler.is_compiling():  # traced: the graph multiplies by the parameter
            return self.weight
        copy = self._decode_copy(x)
        return self.weight if copy is None else copy.t()

    def _decode_copy(self, x: torch.Tensor) -> torch.Tensor | None:
        w = self.weight
        if torch.is_grad_enabled():
            if w.requires_grad and self._copy is not None:  # training: free the copy, it would go stale anyway
                self._copy, self._few_row_calls = None, 0
            return None
        if x.numel() > self.MAX_ROWS * self.in_features or w.device.type != "cpu" or w.is_inference():
            return None
        state = (w._version, w.data_ptr(), w.dtype)
        copy = self._copy
        if copy is not None:
            if copy[0]() is w and copy[1] == state:
                return copy[2]
            self._copy, self._few_row_calls = None, 0  # the weight changed: the copy is stale
        self._few_row_calls += 1
        if self._few_row_calls < self.MIN_CALLS:
            return None
        with torch.inference_mode(False), torch.no_grad():  # an ordinary tensor, usable in any later mode
            transposed = w.detach().t().contiguous()  # (in, out)
        self._copy = (weakref.ref(w), state, transposed)
        return transposed

    @property
    def decode_copy_bytes(self) -> int:
        """Bytes held by the (in, out) copy now (0 when there is none)."""
        return self._copy[2].nbytes if self._copy is not None else 0
