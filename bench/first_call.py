"""First and later generate calls on a fresh model: what one-time decode-time copies cost (hand-run).

    python bench/first_call.py            # GPT-2-small shape, random weights, batch 1, 2 threads

Prints the wall time of three 32-token greedy calls after a 4-token warm-up (shorter than the 16 one-row calls
after which attnlab.layers.linear.Linear makes its (in, out) copies), so the first timed call pays for them.
"""

import time

import torch

import attnlab


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(2)
    cfg = attnlab.presets["gpt2"]
    model = attnlab.build_model(cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 32))
    attnlab.generate(model, ids, max_new_tokens=4, eos_token_id=None)  # kernels and allocator warm
    seconds = []
    for _ in range(3):
        start = time.perf_counter()
        attnlab.generate(model, ids, max_new_tokens=32, eos_token_id=None)
        seconds.append(round(time.perf_counter() - start, 3))
    print("32-token calls, s:", seconds)


if __name__ == "__main__":
    main()
