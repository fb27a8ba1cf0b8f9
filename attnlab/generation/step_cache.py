"""The compiled decoding step on disk, so that only the first process ever waits for torch.compile.

Why: compiling SmolLM2's step takes a minute or more, and torch's own caches (the FX graph and AOT autograd
caches, kept in attnlab's private inductor folder) still leave every new process to trace the model's Python
again: ~16-30 s before its second token here (2026-11-28). torch.compile's ahead-of-time form
(`compiled.aot_compile(example)`, then `save_compiled_function` / `torch.compiler.load_compiled_function`) keeps
the traced graph, its guards and the built library in one file, and a later process loads it in about a second.

What a file is keyed by (`key`): the model's class, config and every parameter's and buffer's name, shape and dtype
(another model, or the same one quantized otherwise, compiles anew; weights are read at each call, so new values of
the same shapes reuse it), the rows of the batch (a padded batch is never compiled), the thread counts (inductor
builds its loops for the count it compiles at), the torch, Python and attnlab sources (a changed forward compiles
anew), the CPU (its flags and model name), and whether attnlab's C++ operators are loaded (a graph traced with
attnlab::decode_attention needs them). The file lives in <cache>/compiled, which must be a folder only this
user can write (kernel_build.make_private_dir), and is loaded only when it is this user's regular file that nobody
else can write: loading it runs the code in it. When the folder is refused, the step is compiled in this process and
not kept (one warning).

Which guards a file keeps (`_portable`): those on the step's shapes and on the cache (the rows, the cache's
length and capacity), not those on the model's Python attributes: the key stands for those (its config and
tensors), and the model object itself differs in every process.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import re
import sys
import tempfile
import warnings
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass, replace
from pathlib import Path

import torch

from attnlab.cost.peak import cpu_name
from attnlab.layers import kernel_build, kernel_variants

SOURCES = Path(__file__).resolve().parents[1]  # the attnlab package: its Python is what the graph was traced from
_MODEL_ARGUMENT = "model"  # the step's first argument (compiled._step): the guards on it are not kept
_MODEL_SOURCE = re.compile(rf"{_MODEL_ARGUMENT}\b")
_WARNED: set[str] = set()
_SOURCE_HASH: list[str] = []  # computed once per process


def folder() -> Path:
    return kernel_build.cache_root() / "compiled"


def _sources_hash() -> str:
    """A hash of attnlab's Python files (names and bytes): a changed forward must not load an old graph."""
    if not _SOURCE_HASH:
        h = hashlib.sha256()
        for path in sorted(SOURCES.rglob("*.py")):
            h.update(str(path.relative_to(SOURCES)).encode())
            h.update(path.read_bytes())
        _SOURCE_HASH.append(h.hexdigest())
    return _SOURCE_HASH[0]


def _cpu() -> str:
    flags, _ = kernel_variants.cpu_flags()
    return f"{platform.machine()} {cpu_name()} {' '.join(sorted(flags))}"


def model_signature(model) -> dict:
    """What of `model` the compiled graph depends on, as plain data: its class, config, tensors' shapes and dtypes,
    and its quantized layers' formats."""
    config = model.config
    return {
        "class": f"{type(model).__module__}.{type(model).__qualname__}",
        "training": model.training,  # dropout is traced in or out
        "config": asdict(config) if is_dataclass(config) else repr(config),
        "tensors": [[name, list(t.shape), str(t.dtype)]
                    for name, t in [*model.named_parameters(), *model.named_buffers()]],
        "formats": [getattr(m, "format", None) for m in model.modules() if hasattr(m, "prepare_traced")],
    }


def key(model, rows: int, threads: tuple[int, int]) -> str:
    """The file name (a hash) of the compiled step for this model and call shape, here (see the module docstring)."""
    from attnlab.layers import kernel_ops

    parts = {"model": model_signature(model), "rows": rows, "threads": list(threads),
             "native": kernel_ops.decodes_natively(),  # the graph calls attnlab::decode_attention where it runs
             "torch": torch.__version__, "python": sys.version, "attnlab": _sources_hash(), "cpu": _cpu()}
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _warn_once(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, stacklevel=4)


def place() -> Path | None:
    """The private folder for compiled steps, made when missing; None (with one warning) when it is not safe."""
    problem = kernel_build.make_private_dir(folder())
    if problem:
        _warn_once(f"compiled decoding steps are not kept on disk: {problem}; each process compiles its own")
        return None
    return folder()


def load(name: str):
    """The compiled step saved as `name`, or None when there is none (or it cannot be used: then it is removed,
    with one warning, and compiled anew)."""
    where = place()
    if where is None:
        return None
    path = where / f"{name}.step"
    if not os.path.lexists(path):
        return None
    problem = kernel_build.check_file(path)
    if problem:
        _warn_once(f"not loading the compiled decoding step {path}: {problem}; compiling it in this process")
        return None
    try:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
        with os.fdopen(os.open(path, flags), "rb") as f:
            data = f.read()
        import torch._inductor.config as inductor_config

        # inductor asks which vector instruction sets this machine has by compiling and loading a probe for each
        # in a child Python (~1 s for six); this file was compiled here, for this CPU (the key), after those very
        # probes passed, so they are taken as passed (the AVX-512 bf16 check still runs: it sets build flags)
        with inductor_config.patch({"cpp.vec_isa_ok": True}):
            return torch.compiler.load_compiled_function(io.BytesIO(data))
    except Exception as e:  # a file cut short, or one another torch wrote: compile anew
        _warn_once(f"the compiled decoding step {path} could not be loaded ({type(e).__name__}); compiling anew")
        path.unlink(missing_ok=True)
        return None


def save(name: str, step) -> Path | None:
    """Write `step` (an aot-compiled function) as `name` in the private folder, atomically; its path, or None."""
    where = place()
    if where is None:
        return None
    descriptor, partial = tempfile.mkstemp(dir=where, prefix=f".{name}.", suffix=".partial")
    os.close(descriptor)
    try:
        step.save_compiled_function(partial)
        os.chmod(partial, 0o600)
        os.replace(partial, where / f"{name}.step")
    except Exception as e:
        Path(partial).unlink(missing_ok=True)
        _warn_once(f"the compiled decoding step could not be kept on disk ({type(e).__name__}: {e})")
        return None
    return where / f"{name}.step"


def _portable(entries) -> list[bool]:
    """torch.compile's guard_filter_fn: keep the guards on the step's arguments and the cache; drop those on the
    model's Python attributes (the key stands for them), globals and closures (which cannot be saved)."""
    return [not (e.is_global or e.guard_type == "CLOSURE_MATCH" or _MODEL_SOURCE.match(e.name)) for e in entries]


def compile_step(step, example: tuple):
    """Trace and compile `step` ahead of time for `example`'s kind of arguments (model, ids, mask, positions,
    cache): dynamic sizes, one graph, inductor writing its C++ wrapper (cpp_wrapper: the code that calls the
    graph's kernels and operators in C++ instead of Python; a SmolLM2 step 1.11x faster at one thread and 1.14x at
    two, 15.6 -> 14.0 ms and 11.4 -> 10.0 ms, interleaved in one process, same tokens; bench/RESULTS.md,
    2026-11-28). Floats are specialized (the model's constants: its norm's eps, its scales) so that no float
    becomes a graph input, which the ahead-of-time path cannot trace."""
    import torch._dynamo.config as dynamo_config

    compiled = kernel_build.torch_compile(step, dynamic=True, fullgraph=True,
                                          options={"cpp_wrapper": True, "guard_filter_fn": _portable})
    with dynamo_config.patch(specialize_float=True), _model_key_order_left_out():
        return compiled.aot_compile((example, {}))


@contextmanager
def _model_key_order_left_out():
    """While compiling: the saved guards leave out the dicts of the model whose key order torch would check.

    Why: iterating the model's blocks (a ModuleList: its `_modules` dict) makes torch note that dict's key order,
    and a later process, loading the file, looks the dict up again. `_portable` drops every guard on the model, so
    the file holds no model to look it up in, and the load fails (AttributeError: '_Missing' object has no
    attribute '_modules'; every float model compiled anew in each process). A quantized model loaded only because
    another kept guard (on its layers' class) happened to keep the path to its blocks. The order is never used:
    it shapes guards on those dicts, and `_portable` keeps none."""
    from torch._dynamo import guards

    pickle_state = getattr(guards, "pickle_guards_state", None)
    local_name = getattr(guards, "get_local_source_name", None)
    if pickle_state is None or local_name is None:  # another torch: its guards are saved as it saves them
        yield
        return

    def without_model(state, *args, **kwargs):
        graph = state.output_graph
        kept = {s for s in graph.guard_on_key_order if local_name(s) != _MODEL_ARGUMENT}
        if kept != graph.guard_on_key_order:
            state = replace(state, output_graph=replace(graph, guard_on_key_order=kept))
        return pickle_state(state, *args, **kwargs)

    guards.pickle_guards_state = without_model  # serialize_guards calls it by its module-level name
    try:
        yield
    finally:
        guards.pickle_guards_state = pickle_state
