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

Its CPU kernel is C++ where that can be built (layers/kernel_ops_native.py: no Python per product, reading a
table of the served layers' addresses), and `_rows` below where not; `_rows` is also registered as
`attnlab::quantized_rows_python`, which the C++ kernel hands the calls it does not take (a batch's NaN row, an
int8 layer). `ready()` chooses, once per process, before the first compiled step runs.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import torch

from attnlab.layers import kernel_build, kernel_threads

_SERVING = threading.local()  # .layers: the quantized layers, in place order, of the model stepping in this thread


_NATIVE: list = []  # [serve] once ready() loaded the C++ kernel, [None] when the Python one serves
PRODUCTS = [0]  # products the C++ kernel ran in this process (each compiled step's count, added when it ends)
PREPARED = [0]  # bumped by every QuantizedLinear.prepare_traced: a table built before a later one is out of date


@contextmanager
def serving(layers: list, table: torch.Tensor | None = None):
    """Within: attnlab::quantized_rows(x, i, n) in this thread multiplies by layers[i] (a model's QuantizedLinear
    layers in place order, each prepared with prepare_traced); `table` (kernel_ops_native.table(layers)) is what
    the C++ kernel reads, when ready() loaded it."""
    before = getattr(_SERVING, "layers", None), getattr(_SERVING, "table", None)
    serve = _NATIVE[0] if _NATIVE else None
    _SERVING.layers, _SERVING.table = layers, table
    if serve is not None:
        _serve(serve, table)
    try:
        yield
    finally:
        _SERVING.layers, _SERVING.table = before
        if serve is not None:
            PRODUCTS[0] += _serve(serve, before[1])


def _serve(serve, table: torch.Tensor | None) -> int:
    """Point this thread's C++ kernel at `table` (None: no table); -> the products it ran since the last call."""
    if table is None:
        return serve(0, 0, 1)
    return serve(table.data_ptr(), table.shape[0], kernel_threads.count())


def ready() -> bool:
    """Give attnlab::quantized_rows its CPU kernel (once per process): the C++ one where it builds, else `_rows`;
    True when the C++ one serves."""
    if not _NATIVE:
        from attnlab.layers import kernel_ops_native

        try:
            _NATIVE.append(kernel_ops_native.load())
        except (OSError, ImportError, RuntimeError) as e:  # no compiler, no torch headers, a failed build
            kernel_build.warn_unavailable(f"the C++ kernel of attnlab::quantized_rows: {type(e).__name__}: "
                                          f"{str(e).strip()[:200]}", "the compiled step's products call Python")
            _LIBRARY.impl("quantized_rows", _rows, "CPU")
            _NATIVE.append(None)
    return decodes_natively()


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
_LIBRARY.define("quantized_rows(Tensor x, int layer, int n) -> Tensor")  # CPU kernel: ready()
_LIBRARY.impl("quantized_rows", _shape, "Meta")
_LIBRARY.define("quantized_rows_python(Tensor x, int layer, int n) -> Tensor")
_LIBRARY.impl("quantized_rows_python", _rows, "CPU")


def _attention_shape(q: torch.Tensor, kv: torch.Tensor, slot: torch.Tensor, scale: float) -> torch.Tensor:
    return q.new_empty(q.shape)


# a decoding step's attention over a cache buffer's positions 0 .. slot (C++ only: kernel_ops_native; the compiled
# step takes it only where ready() loaded that, see decodes_natively)
_LIBRARY.define("decode_attention(Tensor q, Tensor kv, Tensor slot, float scale) -> Tensor")
_LIBRARY.impl("decode_attention", _attention_shape, "Meta")
decode_attention = torch.ops.attnlab.decode_attention


def decodes_natively() -> bool:
    """Whether attnlab::decode_attention has its C++ kernel in this process (ready() loaded it)."""
    return bool(_NATIVE) and _NATIVE[0] is not None
quantized_rows = torch.ops.attnlab.quantized_rows
