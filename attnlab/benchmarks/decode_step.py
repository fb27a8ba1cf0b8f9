"""Cost of one cached decoding step: attnlab with and without its decode-speed paths, against Hugging Face.

A step's cost is measured as (generate(prompt, 1 + K tokens) - generate(prompt, 1 token)) / K, so the prompt's
forward pass (prefill) cancels out and what remains is K cached steps. Three variants run interleaved in one
process (A B C A B C after a warm-up), on identical weights, greedy, EOS disabled:

  attnlab        as shipped: the layers' decode tricks on (the (in, out) weight copies of layers/linear.py for
                 one-row steps, the LM head's vocabulary slices for 4-16 rows, models/heads.py);
  attnlab plain  both switched off per module: nn.Linear's (out, in) weights and the LM head as one product;
  HF             transformers' `generate` on the model attnlab's weights were converted from.

Default: 1 thread and process CPU time, which is robust to other jobs on a shared machine (wall time is not).
The warm-up runs a full call first, so the (in, out) copies (made once a layer has served Linear.MIN_CALLS
one-row products, then kept with the module) exist before timing; their one-time cost stays out of the step
cost. Also reports the bytes those copies hold and the weight-reading floor: weight bytes / read bandwidth.

    python -m attnlab.benchmarks.decode_step                 # GPT-2-small shape and SmolLM2-135M, batch 1 and 8
    python -m attnlab.benchmarks.decode_step --threads 2         # wall time instead of CPU time
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

from attnlab.benchmarks.generate import gpt2_small, machine, smollm2


def measure(fn, clock) -> float:
    start = clock()
    fn()
    return clock() - start


def read_bandwidth(clock, reps: int = 5) -> float:
    """GB/s of a read-only pass (sum) over 256 MB: the speed at which a step can read its weights."""
    src = torch.randn(64 * 2**20)
    src.sum()
    return src.nbytes / statistics.median(measure(src.sum, clock) for _ in range(reps)) / 1e9


def decode_tricks(model, on: bool) -> None:
    """Switch the layers' decode-time tricks on (as built) or off, per module."""
    from attnlab.layers.linear import Linear
    from attnlab.models.heads import LMHead

    for module in model.modules():
        if isinstance(module, Linear):
            module.decode_copy = on and module.out_features > module.in_features
        if isinstance(module, LMHead):
            module.SLICE_ROWS = LMHead.SLICE_ROWS if on else range(0)


def copy_bytes(model) -> int:
    """Bytes the layers' (in, out) decode copies hold now."""
    from attnlab.layers.linear import Linear

    return sum(m.decode_copy_bytes for m in model.modules() if isinstance(m, Linear))


def step_costs(hf, ours, batch: int, prompt_len: int, steps: int, reps: int, clock):
    import attnlab

    gen = torch.Generator().manual_seed(batch)
    ids = torch.randint(0, ours.config.vocab_size, (batch, prompt_len), generator=gen)

    def attnlab_run(n):
        return attnlab.generate(ours, ids, max_new_tokens=n, eos_token_id=None).sequences

    def plain_run(n):
        decode_tricks(ours, False)  # nn.Linear's (out, in) weights, the LM head as one product
        try:
            return attnlab_run(n)
        finally:
            decode_tricks(ours, True)

    def hf_run(n):
        with torch.inference_mode():
            return hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False,
                               num_beams=1, pad_token_id=0)

    variants = {"attnlab": attnlab_run, "attnlab plain": plain_run, "HF": hf_run}
    for fn in variants.values():  # warm-up, long enough for the layers to make their decode copies
        fn(1 + steps)
    costs = {name: [] for name in variants}
    outputs = {}
    for _ in range(reps):
        for name, fn in variants.items():
            one = measure(lambda fn=fn: fn(1), clock)
            start = clock()
            outputs[name] = fn(1 + steps)
            costs[name].append((clock() - start - one) / steps)
    same = all(torch.equal(outputs["attnlab"], out) for out in outputs.values())
    return {name: statistics.median(values) for name, values in costs.items()}, same


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--models", default="gpt2,smollm2")
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--steps", type=int, default=24, help="cached steps per measurement")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="GPT-2 shape, batch 1, 3 repetitions")
    args = parser.parse_args(argv)
    if args.quick:
        args.models, args.batches, args.reps = "gpt2", "1", 3
    torch.set_num_threads(args.threads)
    clock = time.process_time if args.threads == 1 else time.perf_counter
    import transformers

    print(f"# bench_decode_step: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}; "
          f"torch {torch.__version__}; transformers {transformers.__version__}; "
          f"{'process CPU' if args.threads == 1 else 'wall'} time")
    print(f"# command: python -m attnlab.benchmarks.decode_step {' '.join(argv if argv is not None else sys.argv[1:])}")
    print(f"# {args.prompt}-token prompt, median of {args.reps} interleaved runs of {args.steps} cached steps\n")
    bandwidth = read_bandwidth(clock)
    print(f"read stream: {bandwidth:.1f} GB/s")
    rows = []
    for key in args.models.split(","):
        loaded = {"gpt2": gpt2_small, "smollm2": smollm2}[key]()
        if loaded is None:
            print(f"({key}: not installed, skipped)")
            continue
        name, hf, ours = loaded
        # bytes one step reads: every matrix once (a tied embedding is read once, as the head)
        weight_bytes = sum(p.nbytes for n, p in ours.named_parameters() if n != "tokens.weight" or
                           ours.config.tie_embeddings)
        floor = weight_bytes / bandwidth / 1e9
        print(f"{name}: weights read per step {weight_bytes / 1e6:.0f} MB -> floor {floor * 1e3:.1f} ms", flush=True)
        for batch in (int(b) for b in args.batches.split(",")):
            costs, same = step_costs(hf, ours, batch, args.prompt, args.steps, args.reps, clock)
            rows.append((name, batch, costs, same, floor))
            print(f"  batch {batch}: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in costs.items())
                  + f"; same tokens: {same}; decode copies hold {copy_bytes(ours) / 1e6:.0f} MB", flush=True)
        del hf, ours

    print("\n| model | batch | attnlab ms/step | attnlab plain ms/step | HF ms/step | HF / attnlab | "
          "plain / attnlab | attnlab / floor | same tokens |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, batch, c, same, floor in rows:
        print(f"| {name} | {batch} | {c['attnlab'] * 1e3:.1f} | {c['attnlab plain'] * 1e3:.1f} | {c['HF'] * 1e3:.1f} | "
              f"{c['HF'] / c['attnlab']:.2f}x | {c['attnlab plain'] / c['attnlab']:.2f}x | "
              f"{c['attnlab'] / floor:.2f}x | {'yes' if same else 'no'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
