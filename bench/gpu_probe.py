"""Where the time goes on a lent GPU (issue 25.8, follow-up of bench/gpu_run.sh's first numbers).

1. attnlab.generate, GPT-2-small shape, batch 1, 256 tokens, bf16 and float32: the whole call against the sum of
   its steps, the prefill and the slowest steps (the first run showed bf16 at 5.4 ms/token for the call but a
   3.0 ms median step).
2. One eager bf16 training step of attnlab and of nanoGPT (same weights) under torch.profiler: the kernels that
   differ.

    PYTHONPATH=. python3 bench/gpu_probe.py [--generation-only]   (on the device machine; nano-gpt from .whl)
"""

from __future__ import annotations

import time

import torch

import attnlab
from attnlab.benchmarks import generate as gen_bench
from attnlab.benchmarks import train as train_bench


def generation(dtype: torch.dtype) -> None:
    gen_bench.DEVICE = torch.device("cuda")
    _, hf, ours = gen_bench.gpt2_small()
    del hf
    ours = ours.to("cuda", dtype)
    ids = torch.randint(0, ours.config.vocab_size, (1, 32), generator=torch.Generator().manual_seed(1)).cuda()
    for run in range(4):
        torch.cuda.synchronize()
        start = time.perf_counter()
        r = attnlab.generate(ours, ids, max_new_tokens=256, eos_token_id=None)
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
        steps = r.step_seconds
        top = sorted(range(len(steps)), key=lambda i: -steps[i])[:6]
        print(f"{dtype} run {run}: call {wall * 1e3:.0f} ms, sum of steps {sum(steps) * 1e3:.0f} ms, "
              f"step 0 {steps[0] * 1e3:.1f} ms, median {sorted(steps)[len(steps) // 2] * 1e3:.2f} ms, slowest "
              + ", ".join(f"#{i} {steps[i] * 1e3:.1f}" for i in top), flush=True)
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        attnlab.generate(ours, ids, max_new_tokens=64, eos_token_id=None)
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=18, max_name_column_width=60))


def training() -> None:
    case = train_bench.CASES["gpt2-small"]
    models = train_bench.build_models(case, ("attnlab", "nanogpt"))
    inputs = {k: v.cuda() for k, v in train_bench.make_inputs(case).items()}
    from torch.profiler import ProfilerActivity, profile
    for impl, model in models.items():
        step = train_bench.make_step(case, impl, model.cuda(), inputs, autocast=torch.bfloat16, device="cuda")
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                step()
            torch.cuda.synchronize()
        print(f"\n### {impl}: 3 eager bf16 steps, by device time")
        print(prof.key_averages().table(sort_by="self_device_time_total", row_limit=22, max_name_column_width=70))
        model.cpu()


if __name__ == "__main__":
    import sys

    for dt in (torch.bfloat16, torch.float32):
        generation(dt)
    if "--generation-only" not in sys.argv:
        training()
