"""attnlab's one-row kernels as a torch operator, so that torch.compile can trace a decoding step through them.

Why: a SmolLM2 decoding step is ~120 quantized products and ~20 other operators per block, each dispatched from
Python; the kernels themselves take about half the step (bench/RESULTS.md). torch.compile removes
the Python between the operators and fuses norms, rotary positions and residual adds, but it cannot trace a
ctypes call: registered as the operator `attnlab::quantized_rows` (a CPU kernel that calls the same gemv, and a
Meta kernel that only gives the output's shape), a product is one node of the compiled graph.

Why this signature, `quantized_rows(Tensor x, int layer, int n)`: every argument costs at each call. Measured
per call on a 64 x 64 layer (one thread): the kernel 4.9 us; an operator taking (x, tiles, n) 10.7 us; one taking
the packed tensors, the layer's buffers and its format as lists and a string 39.8 us, as much as the compiled
graph saves per product. So the graph holds a number: `layer` is the layer's place among its model's quantized
layers (generation/compiled.py numbers them in `model.modules()` order), looked up in the table of the model whose
step is running in this thread (`serving`). A place, not a process-wide number, because the compiled step is
saved to disk and loaded by other processes (generation/step_cache.py): the same model built anew gives every
layer the same place, so a loaded graph names the right layers; a graph called outside `serving` fails with a
clear error instead of reading another model's layer. torch.library.custom_op was slower still (its Python
wrappers: autograd and aliasing checks). The operator is inference only (no autograd formula): QuantizedLinear
calls it only while torch.compile traces a product without autograd (the compiled decoding step); eager calls go
straight to the kernels as before.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import torch

from attnlab.layers import kernel_threads

_SERVING = threading.local()  # .layers: the quantized layers, in place order, of the model stepping in this thread


@contextmanager
def serving(layers: list):
    """Within: attnlab::quantized_rows(x, i, n) in this thread multiplies by layers[i] (a model's QuantizedLinear
    layers in place order, each prepared with prepare_traced)."""
    before = getattr(_SERVING, "layers", None)
    _SERVING.layers = layers
    try:
        yield
    finally:
        _SERVING.layers = before


def _rows(x: torch.Tensor, layer: int, n: int) -> torch.Tensor:
    """x (rows, k) float32 -> (rows, n) through the layer's one-row kernel: one row straight to gemv (a decoding
    step's product), more rows or a row the kernel refuses (NaN / inf) through the layer's own eager path."""
    layers = getattr(_SERVING, "layers", None)
    if layers is None or not 0 <= layer < len(layers):
        raise RuntimeError(f"attnlab::quantized_rows: no quantized layer {layer} is being served in this thread "
                           "(a compiled step runs through attnlab.generation.compiled, which serves its model's "
                           "layers)")
    module = layers[layer]
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
