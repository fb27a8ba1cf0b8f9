"""The compiled decoding step: a decoder's one-token steps through torch.compile of the model's own forward, taken
by default where it pays (a model whose products are attnlab's quantized kernels) and kept on disk.

Why: on a CPU a decoding step of a small model is mostly Python between operators (SmolLM2: ~30 blocks of ~20
dispatched calls around ~120 quantized products). Compiled with dynamic shapes (the cache grows by a column a
step), the step becomes one graph: inductor fuses the norms, rotary positions, activations and residual adds,
and each quantized product is one attnlab::quantized_rows node (layers/kernel_ops.py) calling the same kernel
as eager. No second model: the graph is traced from Decoder.forward, and the prompt (prefill) stays eager.

When: `compile=None` (generate's default) compiles a cached, unrecorded decoder whose products include attnlab's
CPU kernels (a GGUF or a model quantized with its blocks kept), where a C++ compiler exists and ATTNLAB_COMPILE
is not 0; anything else runs eagerly as before. compile=True asks for it on any decoder; compile=False never.
A caller that said how to load the model again (`build_apart_with`: the CLI does) never waits for the step:
its steps run eagerly while a thread loads the step from <cache>/compiled (generation/step_cache.py: a few seconds
of its own) and use it from the first step after it is ready; where no process kept it yet, a separate low-priority
process builds it there for later runs (generation/apart.py; one line says so) and this one stays eager. Any other
caller builds it at the first decoding step (a one-token request never waits for it): loaded, else compiled (a
minute or more for SmolLM2; one line says so and how long it took) and saved. A call the saved graph does not
fit (its guards), a padded batch (the attention bias reads the mask's values) and a
model whose step cannot be traced as one graph (one warning) run eagerly. A compiled forward cannot record or take
interventions (recording.active answers None while tracing), so generate refuses compile=True while either is
active (inputs.py) and compile=None runs eagerly then.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
import weakref
from dataclasses import dataclass

import torch

from attnlab.generation.compiled_options import unsupported_option
from attnlab.layers import kernel_build, kernel_ops, kernel_threads
from attnlab.layers.quantized import QuantizedLinear

_LAYERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> its _Served layers
_NAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {(rows, threads): key}
_STEPS: dict[str, object] = {}  # key -> the loaded or compiled step (this process)
_BUILDING = threading.Lock()  # one load or compile at a time (two explorer requests must not compile it twice)
_SAID: set[str] = set()
_SLOTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # KVCache -> its slot tensor (_slot_for)
_FITS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # KVCache -> (layout, its buffers, fits): _fits
COUNTS = {"compiled": 0, "eager": 0}  # this process's decoding steps through `compiled_step`'s call, each way
_LAST = threading.local()  # .way: how this OS thread's last call went, ("compiled", None) or ("eager", why)
_BACKGROUND: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {kind: its build_in_background thread}
_STARTING = threading.Lock()  # guards _BACKGROUND: two requests must not start two threads for one model and kind
_COMMANDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> how to load it apart (build_apart_with)
HOLD_NOTES = [False]  # True (the CLI): notes wait in NOTES for the caller to print after the text, not in its midst
NOTES: list[str] = []


def _step(model, ids, attention_mask, position_ids, cache):
    """The step generation makes every token (Stepper._call): the model's forward, last position's logits."""
    return model(ids, attention_mask=attention_mask, position_ids=position_ids, cache=cache, last_only=True,
                 validate=False).logits


def _say(message: str) -> None:
    """One line to stderr, once per process: the compiled step speaks only when it makes someone wait (or, built
    apart, to say why this run is eager); held in NOTES while HOLD_NOTES is set."""
    if message not in _SAID:
        _SAID.add(message)
        if HOLD_NOTES[0]:
            NOTES.append(f"[attnlab: {message}]")
        else:
            print(f"[attnlab: {message}]", file=sys.stderr, flush=True)


def build_apart_with(model, command: list[str]) -> None:
    """Say how another process loads `model` again (`command`: an argv running generation/step_builder.py with the
    model's --model and --quantize). From then on generate(compile=None) never waits for `model`'s step: it decodes
    eagerly while the step is loaded in a thread, or built by that process when none was kept yet."""
    _COMMANDS[model] = list(command)


def why_not(model) -> str | None:
    """Why this process cannot compile a decoding step of `model` (None when it can): first a block option the step
    does not compute as the eager forward does (generation/compiled_options.py), named before any compile starts."""
    option = unsupported_option(getattr(model, "config", None))
    if option is not None:
        return f"the compiled step does not handle {option}"
    if next(model.parameters()).device.type != "cpu":
        return "the compiled step is built for the CPU"
    if not kernel_build.compiler():
        return "no C++ compiler (g++, c++ or clang++ on PATH, or $CXX) for torch.compile"
    if not hasattr(torch.compiler, "load_compiled_function"):
        return f"torch {torch.__version__} cannot save a compiled function (torch >= 2.9 can)"
    return None


def pays(model) -> bool:
    """Whether compile=None compiles `model`'s steps: some of its products are attnlab's quantized CPU kernels,
    the case where a step is mostly Python between operators (a float model's steps are mostly torch's own
    matrix products, and compiling it would make a newcomer wait for little)."""
    return any(isinstance(m, QuantizedLinear) and m._one_row_kernel() is not None for m in model.modules())


def switched_off() -> bool:
    """ATTNLAB_COMPILE=0: the default path decodes eagerly (the test suite sets it)."""
    return os.environ.get("ATTNLAB_COMPILE", "").strip() == "0"


def auto(model) -> bool:
    """compile=None's choice for `model` (a decoder with a cache, nothing recording): compile when it pays and can,
    unless ATTNLAB_COMPILE=0 (the test suite sets it: each distinct step would cost it a compile)."""
    if switched_off() or not pays(model):
        return False
    reason = why_not(model)
    if reason:
        _say(f"decoding eagerly: {reason}")
        return False
    return True


@dataclass
class _Served:
    """A model's quantized layers as the kernel operator serves them (see _layers)."""

    layers: list  # its QuantizedLinear layers in place order, each prepared with prepare_traced
    table: torch.Tensor | None = None  # kernel_ops_native.table(layers), or None where the Python kernel serves
    snapshot: list | None = None  # the layers' _traced when the table was made: keeps what it points into alive
    prepared: int = -1  # kernel_ops.PREPARED when the table was made


def _layers(model) -> _Served:
    """`model`'s quantized layers, each prepared for the kernel operator (once per model), and the table the
    operator's C++ kernel reads, made again when a layer was prepared anew since (kernel_ops.PREPARED)."""
    from attnlab.layers import kernel_ops_native

    served = _LAYERS.get(model)
    if served is None:
        layers = [m for m in model.modules() if isinstance(m, QuantizedLinear)]
        for place, layer in enumerate(layers):
            layer.prepare_traced(place)
        served = _LAYERS[model] = _Served(layers)
    if served.prepared != kernel_ops.PREPARED[0]:
        native = kernel_ops.ready()
        served.snapshot = [layer._traced for layer in served.layers]
        served.table = kernel_ops_native.table(served.layers) if native else None
        served.prepared = kernel_ops.PREPARED[0]
    return served


def _example(model, ids, positions, cache):
    """Arguments of an unpadded call's kind with generic sizes, so that the graph is traced for every cache length
    rather than for this call's: a cache holding 11 of 37 positions, and the step's ids and positions as `_own`
    hands them to the graph, (rows, 1) tensors of their own (storage offset 0, contiguous). Why their own: the
    Stepper's are slices of its (rows, prompt + new) buffers at column `length`, and torch.compile specialises a
    storage offset of 0 or 1 (guard `2 <= ids.storage_offset()`): a one-token prompt's first step (offset 1) did
    not fit, and since the answer is kept per cache (`_fits`), none of its steps ran compiled ("The": every step
    eager after paying the step's load). Sizes that differ here are never assumed equal in the graph."""
    from attnlab.cache import KVCache

    length, capacity = 11, 37
    rows = ids.shape[0]
    example = KVCache.for_model(model, rows, capacity, dtype=cache.layers[0].kv.dtype)
    slot = _new_slot(length) if _slotted(model) else None
    for layer in example.layers:
        layer.length, layer.slot = length, slot
    new_ids = ids.new_zeros(rows, 1)
    new_positions = torch.full((rows, 1), length, dtype=positions.dtype)
    return model, new_ids, None, new_positions, example


def _own(t: torch.Tensor) -> torch.Tensor:
    """`t` (rows, 1) as a contiguous tensor of its own (storage offset 0), the layout `_example` traces with."""
    return t.clone(memory_format=torch.contiguous_format)


def _slotted(model) -> bool:
    """Whether `model`'s compiled step writes and attends through its cache's slot (LayerCache.slot_write,
    attnlab::decode_attention): where attnlab's C++ operators are loaded, for float32 weights in eval mode (the
    operator's case). Part of the step's key (the operators' presence, the dtype and the mode are)."""
    return kernel_ops.decodes_natively() and next(model.parameters()).dtype == torch.float32 and not model.training


def _new_slot(length: int) -> torch.Tensor:
    """A cache's slot: (1,) int64 holding `length`, an ordinary tensor (the same kind in every mode, as guarded)."""
    with torch.inference_mode(False), torch.no_grad():
        return torch.full((1,), length, dtype=torch.long)


def _slot_for(cache) -> torch.Tensor | None:
    """cache's slot tensor at its length (made once per cache), or None when the step cannot take this cache
    (layers of different lengths, or no room for one more position: the eager forward then runs, and says so)."""
    layers = cache.layers
    length = layers[0].length
    if length < 1 or length >= layers[0].capacity or any(layer.length != length for layer in layers):
        return None
    slot = _SLOTS.get(cache)
    if slot is None:
        slot = _SLOTS[cache] = _new_slot(length)
    else:
        slot.fill_(length)
    return slot


def _build(model, name: str, ids, positions, cache, command: list[str] | None = None):
    """Load the step saved as `name`, else compile it (saying so, and how long it took) and save it; None (with
    one warning) when the step cannot be traced as one graph: this model's steps then run eagerly. With
    `command` (build_apart_with), a step that cannot be loaded is built apart instead, and this process gets None."""
    from attnlab.generation import step_cache

    kernel_build.private_inductor_cache()  # inductor's generated libraries: from a folder only this user writes
    started = time.perf_counter()
    step = step_cache.load(name)
    if step is None and command is not None:
        _start_apart(model, command, _kind(ids.shape[0]), cache.layers[0].kv.dtype)
        return None
    if step is None:
        label = getattr(model.config, "name", None) or type(model).__name__
        rows, threads = ids.shape[0], kernel_threads.count()
        where = step_cache.place()  # None: the folder was refused (step_cache warned why); the step is not kept
        kept = (f"once for this CPU (a minute or more; kept in {where})" if where is not None else
                "for this process only (a minute or more; not kept: its folder was refused)")
        print(f"[attnlab: compiling the decoding step of {label} for {rows} row{'s' if rows > 1 else ''} at "
              f"{threads} thread{'s' if threads > 1 else ''}, {kept}]", file=sys.stderr, flush=True)
        try:
            step = step_cache.compile_step(_step, _example(model, ids, positions, cache))
        except Exception as e:  # a forward torch.compile cannot trace whole (a data-dependent branch, an op)
            warnings.warn(f"the decoding step of {label} could not be compiled ({type(e).__name__}); decoding "
                          "eagerly", stacklevel=6)
            return None
        saved = step_cache.save(name, step)
        print(f"[attnlab: compiled in {time.perf_counter() - started:.0f} s{'' if saved else ' (not kept)'}]",
              file=sys.stderr, flush=True)
    step.disable_guard_check()  # checked by `call` itself, to run the calls the graph does not fit eagerly
    return step


def _step_for(model, name: str, ids, positions, cache, command: list[str] | None = None):
    """The step kept as `name` in this process, built (_build: loaded or compiled) the first time it is asked for;
    under _BUILDING, so that two callers (generate, the explorer's background build) never build one key twice."""
    if name not in _STEPS:
        with _BUILDING:
            if name not in _STEPS:
                _STEPS[name] = _build(model, name, ids, positions, cache, command)
    return _STEPS[name]


def _start_apart(model, command: list[str], kind: tuple[int, int, int], dtype: torch.dtype) -> None:
    """Have a separate low-priority process build the step for `kind` into the private folder (generation/apart.py)
    and say so in one line; nothing when the folder is refused (step_cache warned why)."""
    from attnlab.generation import apart, step_cache

    where = step_cache.place()
    if where is None:
        return
    if apart.start(where, command, kind, str(dtype).removeprefix("torch.")):
        label = getattr(model.config, "name", None) or type(model).__name__
        _say(f"decoding eagerly; the compiled step of {label} is being built apart at low priority (a minute or "
             f"more, kept in {where}); later runs load it")


_NOT_READY = {"building": "the compiled step is not ready yet (being loaded, or built apart for later runs)",
              "failed": "the compiled step is not in this process (built apart for later runs, or it cannot be)"}


def compiled_step(model, wait: bool = True):
    """-> call(ids, attention_mask, position_ids, cache) -> logits (batch, 1, vocab), through the compiled step
    (built at its first call: loaded from disk or compiled), or the eager forward for a call it does not fit.
    wait=False, for a model with build_apart_with: a call never waits for the step (build_in_background gets it
    ready: loaded by a thread, or built by a separate process for later runs); until then calls run eagerly."""
    command = _COMMANDS.get(model) if not wait else None

    def call(ids, attention_mask, position_ids, cache):
        args = (model, ids, attention_mask, position_ids, cache)
        if attention_mask is not None:  # padded rows: the attention bias reads the mask's values (one graph cannot)
            _count("eager", "padded rows: the attention bias reads the mask's values")
            return _step(*args)
        if command is not None:
            state = build_in_background(model, ids.shape[0], cache.layers[0].kv.dtype, command)
            if state != "ready":
                _count("eager", _NOT_READY[state])
                return _step(*args)
        args = (model, _own(ids), None, _own(position_ids), cache)  # the layout the graph was traced with
        served = _layers(model)
        name = _name(model, ids.shape[0])
        step = _step_for(model, name, ids, position_ids, cache)
        slotted = step is not None and _slotted(model)
        slot = _slot_for(cache) if slotted else None
        if step is None or (slotted and slot is None):
            _count("eager", "the step could not be compiled" if step is None else
                   "the cache is empty (a one-token prompt's own forward), full, or its layers differ in length")
            return _step(*args)
        if slot is not None:  # set for this call only: an eager forward ignores it (it reads `length`)
            for layer in cache.layers:
                layer.slot = slot
        try:
            if not _fits(step, args, slot is not None):
                _count("eager", "the compiled graph does not fit this call (its guards)")
                return _step(*args)
            _count("compiled")
            with kernel_ops.serving(served.layers, served.table):
                logits = step(*args)
            if slot is not None:  # the step wrote at the slot: one more position stored in every layer
                for layer in cache.layers:
                    layer.length += 1
            return logits
        finally:
            if slot is not None:
                for layer in cache.layers:
                    layer.slot = None

    return call


def _fits(step, args: tuple, slotted: bool) -> bool:
    """step.guard_check(*args): does the saved graph fit this call? Where the step writes through the cache's slot,
    the answer is kept per cache and asked again only when what the guards read can have changed: the layout of
    the ids and positions (shape, strides, storage offset: `_own`'s, the same every step), the cache's buffers,
    the autograd and inference modes. Why: the check runs Python on each of the 30 layers' K / V sizes and
    strides, ~0.24 ms of a ~4.1 ms SmolLM2 step at two threads (3.8 ms without it; interleaved in one process, AMD
    EPYC Zen 5, 2026-11-28, not logged). Without the slot, the layers' lengths are inputs the guards bound, so
    every call is checked."""
    if not slotted:
        return step.guard_check(*args)
    _, ids, _, positions, cache = args
    layout = (step, ids.shape, ids.stride(), ids.storage_offset(), ids.dtype, ids.is_inference(), positions.shape,
              positions.stride(), positions.storage_offset(), positions.dtype, positions.is_inference(),
              torch.is_grad_enabled(), torch.is_inference_mode_enabled())
    buffers = [layer.kv for layer in cache.layers]
    kept = _FITS.get(cache)
    if kept is not None and kept[0] == layout and all(a is b for a, b in zip(kept[1], buffers, strict=True)):
        return kept[2]
    fits = bool(step.guard_check(*args))
    _FITS[cache] = (layout, buffers, fits)
    return fits


def _count(way: str, why: str | None = None) -> None:
    """Count a call of `compiled_step`'s call as `way` ("compiled" or "eager"), and keep why for last_way."""
    COUNTS[way] += 1
    _LAST.way = (way, why)


def last_way() -> tuple[str, str | None] | None:
    """How the last call of a `compiled_step` call in this OS thread ran: ("compiled", None), ("eager", why it
    could not use the graph), or None before any. Per thread, so concurrent explorer requests each read their own."""
    return getattr(_LAST, "way", None)


def _name(model, rows: int) -> str:
    """The key of `model`'s step for `rows` rows at this OS thread's counts (torch's and the kernels'), as `call`
    looks it up (kept per model and counts). Only after `_layers(model)`: the key says whether attnlab's C++
    operators are loaded, which that decides."""
    kind = _kind(rows)
    names = _NAMES.setdefault(model, {})
    if kind not in names:
        from attnlab.generation import step_cache

        names[kind] = step_cache.key(model, kind[0], kind[1:])
    return names[kind]


def build_in_background(model, rows: int = 1, dtype: torch.dtype | None = None,
                        command: list[str] | None = None) -> str:
    """For a server whose requests must never wait for a compile (the explorer's Generation tab): whether
    `compiled_step(model)`'s calls of `rows` rows, made in this OS thread at its current thread counts, can use
    the step now. "ready": built (loaded or compiled) in this process; "failed": it could not be built, the calls
    run eagerly; "building": not yet, and a daemon thread is getting it ready (started here unless one already
    is for this model and these counts). That thread loads attnlab's C++ operators and readies the model's layers
    as `call` does (the key says whether the operators are loaded, so it is known only after), then loads the step
    from disk or compiles it, under `_BUILDING` like `call`: one build per key, and a generate() meanwhile does
    not build it twice. It runs at the caller's torch and kernel thread counts, which are part of the key and
    which inductor builds its loops for. dtype: the cache's (default: the model's parameters'). It builds in
    inference mode, as generate() builds and calls the step: the graph's guards check that the cache and the
    inputs are inference tensors, so call it in inference mode with a cache made there. generate() itself
    builds at its first step instead (`call`).

    While it compiles, other threads keep running the model's eager forward: torch.compile's ahead-of-time path
    leaves torch.compiler.is_compiling() False for them (attnlab's layers read that flag to choose their traced
    paths; tests/test_explorer_generation_compiled.py runs and records eagerly beside a build)."""
    kind = _kind(rows)
    name = _NAMES.get(model, {}).get(kind)  # known once `call` or a build readied this model at these counts
    if name is not None and name in _STEPS:
        return "ready" if _STEPS[name] is not None else "failed"
    with _STARTING:
        threads = _BACKGROUND.setdefault(model, {})
        thread = threads.get(kind)
        if thread is not None and not thread.is_alive():
            name = _NAMES.get(model, {}).get(kind)
            if name is None:
                return "failed"  # it stopped before it knew the key: readying the layers failed (one warning)
            if name in _STEPS:
                return "ready" if _STEPS[name] is not None else "failed"
            thread = None  # its step was forgotten since (a test resets _STEPS): build it again
        if thread is None:
            dtype = dtype or next(model.parameters()).dtype
            thread = threads[kind] = threading.Thread(target=_build_apart, args=(model, kind, dtype, command),
                                                      daemon=True, name="attnlab-compile-step")
            thread.start()
    return "building"


def _kind(rows: int) -> tuple[int, int, int]:
    """What a step's key depends on in the calling OS thread: the rows, torch's thread count, the kernels'."""
    return rows, torch.get_num_threads(), kernel_threads.count()


def _build_apart(model, kind: tuple[int, int, int], dtype: torch.dtype, command: list[str] | None = None) -> None:
    """build_in_background's thread: at `kind`'s thread counts, the model's layers readied (`_layers`, which loads
    the C++ operators), its key known, and the step built and kept in _STEPS (None when it cannot be built: one
    warning, and the steps run eagerly, as `call` does). With `command` nothing is compiled here: the C++
    operators not built yet, or no step kept for the key, start the separate builder (generation/apart.py)."""
    from attnlab.cache import KVCache
    from attnlab.layers import kernel_ops_native

    rows, torch_threads, kernel_count = kind
    if command is not None and not kernel_ops.decodes_natively() and not kernel_ops_native.built():
        _start_apart(model, command, kind, dtype)  # the key waits for the operators: the builder builds both
        return
    # in inference mode, as generate() builds it (the example's tensors are inference tensors)
    with kernel_threads.apart(kernel_count), torch.inference_mode():  # torch's count set next
        torch.set_num_threads(torch_threads)
        try:
            _layers(model)
            name = _name(model, rows)
        except Exception as e:
            warnings.warn(f"the decoding step could not be prepared ({type(e).__name__}: {e}); decoding eagerly",
                          stacklevel=1)
            return
        if name in _STEPS:
            return
        try:
            ids = torch.zeros(rows, 1, dtype=torch.long)  # _example reads only the kinds of these
            _step_for(model, name, ids, ids, KVCache.for_model(model, rows, 2, dtype=dtype), command)
        except Exception as e:  # e.g. the compiled folder or inductor failing in a way _build does not expect
            warnings.warn(f"the decoding step could not be built ({type(e).__name__}: {e}); decoding eagerly",
                          stacklevel=1)
            _STEPS.setdefault(name, None)


def build_here(model, kind: tuple[int, int, int], dtype: torch.dtype) -> bool:
    """The separate builder's work (generation/step_builder.py): the step for `kind` built in this thread, now
    (loaded when kept, else compiled and kept); True when this process has it."""
    _build_apart(model, kind, dtype)
    name = _NAMES.get(model, {}).get(kind)
    return name is not None and _STEPS.get(name) is not None


def wait_for_builds(timeout: float | None = None) -> bool:
    """Wait for the builds build_in_background started (tests; a server shutting down); True when none is left."""
    with _STARTING:
        threads = [thread for kinds in _BACKGROUND.values() for thread in kinds.values()]
    deadline = None if timeout is None else time.monotonic() + timeout
    for thread in threads:
        thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    return not any(thread.is_alive() for thread in threads)
