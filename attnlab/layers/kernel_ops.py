"""attnlab's one-row kernels as a torch operator, so that torch.compile can trace a decoding step through them.

Why: a SmolLM2 decoding step is ~120 quantized products and ~20 other operators per block, each dispatched from
Python; the kernels themselves take about half the step (bench/decode_compiled_probe.py). torch.compile removes
the Python between the operators and fuses norms, rotary positions and residual adds, but it cannot trace a
ctypes call: registered as the operator `attnlab::quantized_rows` (a CPU kernel that calls the same gemv, and a
Meta kernel that only gives the output's shape), a product is one node of the compiled graph.

Registered with a plain torch.library schema, not torch.library.custom_op: the latter's Python wrappers
(autograd and aliasing checks) cost ~50 us per call, as much as they save (measured in the probe). The operator
is inference only (no autograd formula): QuantizedLinear calls it only while torch.compile traces a product
without autograd (generate(compile=True)); eager calls go straight to the kernels as before.
"""

from __future__ import annotations

import torch

from attnlab.layers import int4_kernel, int8_kernel, q8_0_kernel

KERNELS = {"int8": int8_kernel, "q8_0": q8_0_kernel, "int4": int4_kernel, "q4_0": int4_kernel, "q4_1": int4_kernel}
SCHEMA = "quantized_rows(Tensor x, Tensor[] packed, Tensor[] buffers, Tensor? bias, str format, int n) -> Tensor"


def _rows(x: torch.Tensor, packed: list[torch.Tensor], buffers: list[torch.Tensor], bias: torch.Tensor | None,
          format: str, n: int) -> torch.Tensor:
    """x (rows, k) float32 -> (rows, n): each row through `format`'s one-row kernel (its own rounding, as a
    decoding step's product), a row the kernel refuses (NaN / inf) through the dequantized weight, as eager."""
    from attnlab.layers.quantized import dequantize

    kernel, threads = KERNELS[format], torch.get_num_threads()
    x = x.contiguous()
    out = []
    for row in x.split(1):  # (1, k) each
        y = kernel.gemv(row, *packed, bias, n, threads)
        if y is None:
            names = ("qweight", "scale", "min")[: len(buffers)]
            y = torch.nn.functional.linear(row, dequantize(format, dict(zip(names, buffers, strict=True))), bias)
        out.append(y)
    return out[0] if len(out) == 1 else torch.cat(out)


def _shape(x, packed, buffers, bias, format, n):  # noqa: A002 (the schema's name)
    return x.new_empty(x.shape[0], n)


_LIBRARY = torch.library.Library("attnlab", "DEF")  # kept for the process's life: it holds the registrations
_LIBRARY.define(SCHEMA)
_LIBRARY.impl("quantized_rows", _rows, "CPU")
_LIBRARY.impl("quantized_rows", _shape, "Meta")
quantized_rows = torch.ops.attnlab.quantized_rows
