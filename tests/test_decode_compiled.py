"""generate(compile=True): the one-token steps through torch.compile of the model's own forward, with the quantized
products as attnlab::quantized_rows nodes (generation/compiled.py, layers/kernel_ops.py).

Reference: the same model generating eagerly (its kernels, one row per product). Both arms round each product's
input row the same way (the operator calls the same gemv), so the tokens must be equal and the logits equal to
float32 rounding of the fused graph: |compiled - eager| <= 1e-4 max|eager| (inductor reorders the norms' and the
residuals' sums; a kernel difference would show at the format's ~15-bit rounding, 5e-4, and in the tokens).
One small model, compiled once for the file (~10-30 s on a loaded 2-core machine).
"""

from __future__ import annotations

import pytest
import torch

import attnlab
from attnlab.errors import InputError
from attnlab.generation import compiled
from attnlab.layers import int4_kernel, kernel_ops
from attnlab.layers.quantized import QuantizedLinear
from attnlab.recording import capture

PROMPT = [[5, 17, 30, 2, 9, 11]]


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = attnlab.presets["tiny-llama"].replace(n_layers=2, d_ff=128)  # every width a multiple of 32: all int4
    return attnlab.quantize(attnlab.build_model(config).eval(), "int4")


@pytest.fixture(scope="module")
def both(model):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        args = dict(max_new_tokens=6, keep_logits=True, threads=1)
        return attnlab.generate(model, PROMPT, **args), attnlab.generate(model, PROMPT, compile=True, **args)
    finally:
        torch.set_num_threads(before)


def test_compiled_steps_give_the_eager_tokens_and_logits(both):
    eager, compiled = both
    assert compiled.tokens == eager.tokens
    for e, c in zip(eager.logits, compiled.logits, strict=True):
        assert float((c - e).abs().max()) <= 1e-4 * float(e.abs().max())


class _Counting:
    """A kernel module stand-in that counts gemv calls (the operator reads each layer's kernel at every call)."""

    def __init__(self, kernel):
        self.kernel, self.calls = kernel, 0

    def gemv(self, *args):
        self.calls += 1
        return self.kernel.gemv(*args)


def _quantized_layers(model) -> list:
    if not int4_kernel.available():
        pytest.skip(f"the 4-bit kernel does not run here: {int4_kernel.unavailable_reason()}")
    layers = [m for m in model.modules() if isinstance(m, QuantizedLinear)]
    assert layers and all(m._traced is not None and m._layer is not None for m in layers)
    return layers


def test_the_compiled_graph_calls_the_kernel_operator(model, both):
    """Where the 4-bit kernel runs, every quantized layer was readied for attnlab::quantized_rows and each compiled
    step multiplied through it once per layer (a compiled float product would give the tokens too, not this):
    counted in C++ where the operator's C++ kernel is loaded."""
    layers = _quantized_layers(model)
    if not kernel_ops.ready():
        pytest.skip("the C++ kernel of attnlab::quantized_rows could not be built here")
    tiled = [m for m in layers if m.format != "int8"]  # the head here is int8: handed to the Python kernel
    assert tiled
    before = kernel_ops.PRODUCTS[0]
    attnlab.generate(model, PROMPT, max_new_tokens=3, compile=True, threads=1)
    assert kernel_ops.PRODUCTS[0] - before == 2 * len(tiled)  # 2 compiled steps; the prefill is eager


def test_the_python_kernel_serves_what_the_cpp_one_hands_it(model, both):
    """Without a table (the C++ kernel's case for a layer it cannot take) every product goes to the Python kernel,
    once per layer and step, and gives the same tokens."""
    layers = _quantized_layers(model)
    kernel_ops.ready()
    served = compiled._LAYERS[model]
    table, served.table = served.table, None  # the served table: none, so every call is handed on
    before = [m._traced for m in layers]
    counters = [_Counting(kernel) for kernel, _ in before]
    try:
        for m, counter, (_, packed) in zip(layers, counters, before, strict=True):
            m._traced = (counter, packed)
        out = attnlab.generate(model, PROMPT, max_new_tokens=3, compile=True, threads=1)
    finally:
        for m, traced in zip(layers, before, strict=True):
            m._traced = traced
        served.table = table
    assert [c.calls for c in counters] == [2] * len(layers)
    assert out.tokens[0] == both[0].tokens[0][:3]


def test_the_guards_are_checked_once_per_cache_where_the_step_writes_through_its_slot(model, both, monkeypatch):
    """compiled._fits: with the cache's slot, a generate call checks the saved graph's guards at its first compiled
    step only (the Stepper's buffers and the cache stay the same), and a new call (a new cache) checks again; the
    tokens are the eager ones. Without the slot every step is checked (the layers' lengths are inputs)."""
    if not compiled._slotted(model):
        pytest.skip("attnlab's C++ operators are not loaded here: every step is checked")
    steps = [s for s in compiled._STEPS.values() if s is not None]
    assert steps
    checks = []
    for step in steps:
        monkeypatch.setattr(step, "guard_check",
                            lambda *a, _real=step.guard_check: checks.append(1) or _real(*a))
    before = dict(compiled.COUNTS)
    for _ in range(2):
        out = attnlab.generate(model, PROMPT, max_new_tokens=6, compile=True, threads=1)
        assert out.tokens[0] == both[0].tokens[0]
    assert compiled.COUNTS["compiled"] - before["compiled"] == 2 * 5 and len(checks) == 2


def test_a_one_token_prompt_decodes_through_the_compiled_step(model, both):
    """A one-token prompt leaves a cache of one position, and the Stepper's ids at storage offset 1 of its buffer:
    torch.compile specialises offsets of 0 and 1, so the step's first call did not fit the graph, and the answer,
    kept per cache (compiled._fits), sent every later step of the call eager too ("The": all eager after paying
    the step's load). The graph is traced for, and handed, ids and positions of their own (compiled._own): every
    step of a one-token prompt runs compiled, with the eager tokens."""
    before = dict(compiled.COUNTS)
    out = attnlab.generate(model, [[5]], max_new_tokens=5, compile=True, threads=1)
    eager = attnlab.generate(model, [[5]], max_new_tokens=5, compile=False, threads=1)
    assert compiled.COUNTS["compiled"] - before["compiled"] == 4, compiled.last_way()
    assert out.tokens == eager.tokens


def test_compile_is_refused_while_recording(model):
    with capture(model, ["blocks.0.attn.*"]):
        with pytest.raises(InputError, match="compile=True while a recording or an intervention is active"):
            attnlab.generate(model, PROMPT, max_new_tokens=2, compile=True)


def test_compile_must_be_a_bool(model):
    with pytest.raises(InputError, match="compile="):
        attnlab.generate(model, PROMPT, max_new_tokens=2, compile="yes")


def test_a_cache_the_slot_cannot_serve_goes_eager():
    """The slot holds every layer's common length; layers of different lengths, or a full cache, get None (the
    step then runs the eager forward, whose own checks answer)."""
    from attnlab.cache import KVCache

    cache = KVCache(2, 1, 1, 4, 8)
    for layer in cache.layers:
        layer.length = 3
    slot = compiled._slot_for(cache)
    assert slot is not None and slot.tolist() == [3]
    cache.layers[1].length = 2
    assert compiled._slot_for(cache) is None
    for layer in cache.layers:
        layer.length = 4  # full: no room for the step's position
    assert compiled._slot_for(cache) is None


def test_a_float_decoder_compiles_when_asked():
    """compile=True on a float model (GPT-style: one K/V write per layer through append_kv): every step compiled,
    the eager tokens, logits to float32 rounding of the fused graph. Its Linear layers' decode copies stay out of
    the trace (they read the weight's inference flag, which torch.compile cannot trace)."""
    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.presets["tiny-decoder"].replace(n_layers=1)).eval()
    before = dict(compiled.COUNTS)
    args = dict(max_new_tokens=4, keep_logits=True, threads=1)
    eager = attnlab.generate(model, PROMPT, **args)
    traced = attnlab.generate(model, PROMPT, compile=True, **args)
    assert compiled.COUNTS["compiled"] - before["compiled"] == 3 and compiled.COUNTS["eager"] == before["eager"]
    assert traced.tokens == eager.tokens
    for e, c in zip(eager.logits, traced.logits, strict=True):
        assert float((c - e).abs().max()) <= 1e-4 * float(e.abs().max())
