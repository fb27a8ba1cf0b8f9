"""generate(compile=True): a decoder's one-token steps through torch.compile of the model's own forward.

Why: on a CPU a decoding step of a small model is mostly Python between operators (SmolLM2: ~30 blocks of ~20
dispatched calls around ~120 quantized products). Compiled with dynamic shapes (the cache grows by a column a
step), the step becomes one graph: inductor fuses the norms, rotary positions, activations and residual adds,
and each quantized product is one attnlab::quantized_rows node (layers/kernel_ops.py) calling the same kernel
as eager. No second model: the graph is traced from Decoder.forward, and the prompt (prefill) stays eager.

What it costs and refuses: the first compiled step traces and compiles (a minute or more for SmolLM2 on a loaded
laptop core; a 2-layer model ~10-20 s); later steps and requests reuse the graph (dynamo's cache, guarded on the
model and the shapes that matter). A compiled forward cannot record or take interventions (recording.active
answers None while tracing), so generate refuses compile=True while either is active (inputs.py). Inductor
builds and loads its libraries in attnlab's private cache folder, not the shared temporary one
(kernel_build.private_inductor_cache).
"""

from __future__ import annotations

import weakref

from attnlab.layers import kernel_build
from attnlab.layers.quantized import QuantizedLinear

_PREPARED: weakref.WeakSet = weakref.WeakSet()  # models whose quantized layers are packed for the operator


def _step(model, ids, attention_mask, position_ids, cache):
    """The step generation makes every token (Stepper._call): the model's forward, last position's logits."""
    return model(ids, attention_mask=attention_mask, position_ids=position_ids, cache=cache, last_only=True,
                 validate=False).logits


# One function for every model (dynamo guards on the model). cpp_wrapper: inductor writes the code that calls the
# graph's kernels and operators in C++ instead of Python; a SmolLM2 step 1.11x faster at one thread and 1.14x at
# two (15.6 -> 14.0 ms, 11.4 -> 10.0 ms, interleaved in one process, same tokens; bench/RESULTS.md, 2026-11-28),
# for ~25 s more on the first compile (the built graph is cached in attnlab's private inductor folder)
_compiled_step = kernel_build.torch_compile(_step, dynamic=True, options={"cpp_wrapper": True})


def compiled_step(model):
    """-> call(ids, attention_mask, position_ids, cache) -> logits (batch, 1, vocab), through the compiled graph.
    Packs the model's quantized layers for the kernel operator once (QuantizedLinear.prepare_traced)."""
    kernel_build.private_inductor_cache()  # inductor's generated libraries: from a folder only this user writes
    if model not in _PREPARED:
        for module in model.modules():
            if isinstance(module, QuantizedLinear):
                module.prepare_traced()
        _PREPARED.add(model)

    def call(ids, attention_mask, position_ids, cache):
        return _compiled_step(model, ids, attention_mask, position_ids, cache)

    return call
