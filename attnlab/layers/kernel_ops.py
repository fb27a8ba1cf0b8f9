"""attnlab's one-row kernels as a torch operator, so that torch.compile can trace a decoding step through them.

Why: a SmolLM2 decoding step is ~120 quantized products and ~20 other operators per block, each dispatched from
Python; the kernels themselves take about half the step (bench/RESULTS.md). torch.compile removes
the Python between the operators and fuses norms, rotary positions and residual adds, but it cannot trace a
ctypes call: registered as the operator `attnlab::quantized_rows` (a CPU kernel that calls the same gemv, and a
Meta kernel that only gives the output's shape), a product is one node of the compiled graph.

Why this signature, `quantized_rows(Tensor x, int layer, int n)`: every argument costs at each call. Measured
per call on a 64 x 64 layer (one thread): the kernel 4.9 us; an operator taking (x, tiles, n) 10.7 us; one taking
the packed tensors, the layer's buffers and its format as lists and a string 39.8 us, as much as the compiled
graph saves per product. So the graph holds a number: `layer` names a QuantizedLinear (registered by
`register`, held by a weak reference; numbers are never reused, so a graph that outlives its model fails with a
clear error instead of reading another model's layer). torch.library.custom_op was slower still (its Python
wrappers: autograd and aliasing checks). The operator is inference only (no autograd formula): QuantizedLinear
calls it only while torch.compile traces a product without autograd (generate(compile=True)); eager calls go
straight to the kernels as before.
"""

from __future__ import annotations

import itertools
import weakref

import torch

from attnlab.layers import kernel_threads

_LAYERS: dict[int, weakref.ref] = {}  # layer number -> the QuantizedLinear it names
_NUMBERS = itertools.count()


def register(layer) -> int:
    """A number for `layer` (a QuantizedLinear) that the operator can be given instead of its tensors."""
    number = next(_NUMBERS)
    _LAYERS[number] = weakref.ref(layer, lambda _, number=number: _LAYERS.pop(number, None))
    return number


def _rows(x: torch.Tensor, layer: int, n: int) -> torch.Tensor:
    """x (rows, k) float32 -> (rows, n) through the layer's one-row kernel: one row straight to gemv (a decoding
    step's product), more rows or a row the kernel refuses (NaN / inf) through the layer's own eager path."""
    ref = _LAYERS.get(layer)
    module = ref() if ref is not None else None
    if module is None:
        raise RuntimeError(f"attnlab::quantized_rows: layer {layer} no longer exists (a compiled graph outlived "
                           "its model); compile the step again")
    kernel, packed = module._traced
    if x.shape[0] == 1 and x.is_contiguous():
        y = kernel.gemv(x, *packed, n, kernel_threads.count())
        if y is not None:
            return y
    return module._kernel_product(kernel, x, module.bias)


def _shape(x: torch.Tensor, layer: int, n: int) -> torch.Tensor:
    return x.new_empty(x.shape[0], n)


_LIBRARY = torch.library.Library("attnlab", "DEF")  # kept for the process's life: it holds the registrations
_LIBRARY.define("quantized_rows(Tensor x, int layer, int n) -> Tensor")
_LIBRARY.impl("quantized_rows", _rows, "CPU")
_LIBRARY.impl("quantized_rows", _shape, "Meta")
quantized_rows = torch.ops.attnlab.quantized_rows
