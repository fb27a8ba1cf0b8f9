"""Two ways to split a fused QKV projection into heads, forward + backward through SDPA, interleaved on one thread.

- permute_unbind: qkv.view(b, s, 3, h, d_head).permute(2, 0, 3, 1, 4).unbind(0) (attnlab's layout before
  session 10; still its layout when a KV cache is filled: K and V go into the cache with one copy);
- split_last: qkv.split(d, dim=-1), then each .view(b, s, h, d_head).transpose(1, 2) (nanoGPT's; attnlab's for
  training and cache-free forwards since session 10).
On an H200 the first one's backward ran two extra kernels per layer (a stack and a strided copy, 2.4 ms of a
35 ms GPT-2 step: bench/results/gpu-h200/probe-before.log). This script measures the CPU side.

    python bench/qkv_layout_ab.py      # process CPU time, medians, ratio split / permute
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F


def run(b: int, s: int, d: int, h: int, reps: int = 30) -> float:
    torch.manual_seed(0)
    lin = torch.nn.Linear(d, 3 * d)
    x = torch.randn(b, s, d, requires_grad=True)

    def permute_unbind():
        q, k, v = lin(x).view(b, s, 3, h, d // h).permute(2, 0, 3, 1, 4).unbind(0)
        F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()

    def split_last():
        q, k, v = (t.view(b, s, h, d // h).transpose(1, 2) for t in lin(x).split(d, dim=-1))
        F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()

    contestants = {"permute_unbind": permute_unbind, "split_last": split_last}
    for fn in contestants.values():  # warm-up
        fn()
        fn()
    times: dict[str, list[float]] = {name: [] for name in contestants}
    for r in range(reps):  # alternate the order each round
        for name, fn in (list(contestants.items()) if r % 2 else list(contestants.items())[::-1]):
            start = time.process_time()
            fn()
            times[name].append(time.process_time() - start)
    med = {name: statistics.median(t) for name, t in times.items()}
    ratio = med["split_last"] / med["permute_unbind"]
    print(f"batch {b}, seq {s}, d_model {d}, heads {h}: permute_unbind {med['permute_unbind'] * 1e3:.2f} ms, "
          f"split_last {med['split_last'] * 1e3:.2f} ms, split / permute {ratio:.3f}")
    return ratio


if __name__ == "__main__":
    torch.set_num_threads(1)
    run(12, 64, 128, 4)  # gpt-4L's attention (nanoGPT's baby GPT)
    run(8, 256, 384, 6)  # gpt-6L's
    run(4, 1024, 768, 12, reps=10)  # GPT-2 small's at batch 4
