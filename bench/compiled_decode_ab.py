"""generate(compile=True) against eager generate on SmolLM2's GGUF (blocks kept): prefill and decoding step.

    python bench/compiled_decode_ab.py [--rounds 3] [--threads 1 2]

64 greedy tokens after a fixed random 32-token prompt, interleaved round by round (eager, compiled at each thread
count); reported: the medians of generate's own step times (step 0 holds the prefill and the first token; the
decoding step is the median of the others), tokens/s of the decoding steps, and whether both chose the same tokens.
The compiled graph is built in an untimed warm-up (a minute or more on a laptop core).
"""

from __future__ import annotations

import argparse
import statistics

import torch

import attnlab
from attnlab.benchmarks.quantized import smollm2_or_exit


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = p.parse_args()
    model, _ = attnlab.load(smollm2_or_exit())
    ids = torch.randint(0, model.config.vocab_size, (1, 32), generator=torch.Generator().manual_seed(0))
    arms = [(t, c) for t in args.threads for c in (False, True)]
    for t, c in arms:  # warm-up: packed weights, the thread pools, the compiled graph
        attnlab.generate(model, ids, max_new_tokens=4, eos_token_id=None, compile=c, threads=t)
    runs: dict[tuple[int, bool], list] = {arm: [] for arm in arms}
    for _ in range(args.rounds):
        for t, c in arms:
            out = attnlab.generate(model, ids, max_new_tokens=64, eos_token_id=None, compile=c, threads=t)
            runs[t, c].append((out.step_seconds[0], statistics.median(out.step_seconds[1:]), out.tokens))
    for (t, c), r in runs.items():
        step = statistics.median(x[1] for x in r)
        print(f"{t} thread(s), {'compile=True' if c else 'eager':12s}: prefill + first token "
              f"{statistics.median(x[0] for x in r) * 1e3:.1f} ms, decoding step {step * 1e3:.2f} ms "
              f"({1 / step:.1f} tokens/s)")
    same = all(runs[t, True][0][2] == runs[t, False][0][2] for t in args.threads)
    print(f"same tokens eager and compiled: {same}")


if __name__ == "__main__":
    main()
