"""Tokens per CPU-second of the everyday corpus's generator: one batch as `python -m attnlab.data.everyday --dtype
bfloat16` writes it (64 prompts of batch 0, SmolLM2-135M-Instruct expanded to bfloat16, temperature 0.8, top-p
0.95, up to 128 new tokens, one torch thread), timed with the process's CPU clock.

    nice -n 10 python -m attnlab.benchmarks.everyday_rate                           # the installed attnlab
    PYTHONPATH=/tmp/old nice -n 10 python -m attnlab.benchmarks.everyday_rate  # another tree (git archive COMMIT)

Prints the attnlab it ran, the machine's load, the generated tokens (each row's new tokens up to its stop), the CPU
and wall seconds of the generate call alone (the model is loaded and expanded before), and tokens per CPU-second.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import torch


def main(argv=None) -> None:
    argparse.ArgumentParser(prog="python -m attnlab.benchmarks.everyday_rate",
                            description=__doc__.splitlines()[0]).parse_args(argv)
    import attnlab
    from attnlab.data.everyday import chat, prompts
    from attnlab.generation import generate
    from attnlab.loading import load

    torch.set_num_threads(1)
    batch_size, new_tokens, seed, b = 64, 128, 0, 0
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} | {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores | torch {torch.__version__} | attnlab from {os.path.dirname(attnlab.__file__)}")
    print(f"# load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    model, tok = load("smollm2", keep_quantized=False)
    model = model.to(torch.bfloat16)
    messages = prompts(seed)
    rows = [chat(messages[(b * batch_size + i) % len(messages)]) for i in range(batch_size)]
    cpu, wall = time.process_time(), time.perf_counter()
    result = generate(model, [tok.encode(r) for r in rows], max_new_tokens=new_tokens, temperature=0.8, top_p=0.95,
                      seed=seed + b, threads=1, compile=False, tokenizer=tok)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    tokens = sum(len(t) for t in result.tokens)
    print(f"rows {batch_size}, up to {new_tokens} new tokens, {len(result.step_seconds)} steps, "
          f"{tokens} tokens generated")
    print(f"generate: {cpu:.1f} s of CPU, {wall:.1f} s of wall time")
    print(f"tokens per CPU-second: {tokens / cpu:.0f}")
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
