"""Cost of one cached decoding step: attnlab with and without its decode-speed paths, against Hugging Face.

A step's cost is measured as (generate(prompt, 1 + K tokens) - generate(prompt, 1 token)) / K, so the prompt's
forward pass (prefill) cancels out and what remains is K cached steps. Three variants run interleaved in one
process (A B C A B C after a warm-up), on identical weights, greedy, EOS disabled:

  attnlab        as shipped: the layers' decode tricks on (the (in, out) weight copies of layers/linear.py for
                 one-row steps, the LM head's vocabulary slices for 4-16 rows, models/heads.py);
  attnlab plain  both switched off per module: nn.Linear's (out, in) weights and the LM head as one product;
  HF             transformers' `generate` on the model attnlab's weights were converted from.

HF / attnlab per step is the steady-state tokens/s ratio. The warm-up runs a full call first, so the (in, out)
copies (made once a layer has served Linear.MIN_CALLS one-row products, then kept with the module) exist before
timing; their one-time cost stays out of the step cost.

Where a batch-1 step's time goes (a second interleaved set, same process, same clock):
  - matvecs only: the step's own matrix products (the layouts it uses: weight_for) back to back, nothing else:
    what the step would cost with every other op free;
  - all but matvecs: the step with every product replaced by an empty output of its shape (F.linear swapped
    for the call): norms, activations, views, cache writes, SDPA, Python, at the model's real widths;
  - step at cache 16 and at cache 256: the model's forward on one token after 16 or 256 cached positions
    (attention over the cache grows with it; the cache is preallocated and written in place);
  - fixed cost per step: the same forward on a model of the same depth and layout with tiny widths, where
    the products cost nothing: Python, module calls and small kernels (norms, views, cache writes, SDPA).
Floors, weight bytes / read bandwidth, two of them: the read stream over 256 MB (the yardstick of earlier
runs, measured once) and over a buffer as large as the weights a step reads. The second is the honest one: on
a host whose last-level cache is large (lscpu reports 480 MiB on this project's Xeon) a 256 MB buffer can
partly stay in it while a step's ~500 MB of weights cannot, so the 256 MB stream overstates what a step can
read. The step-parts table also times that weight-sized read as one more contestant in the same rounds as the
step, so step / floor there is not thrown off by the machine's drift between two measurements.

Default: 1 thread and process CPU time, which is robust to other jobs on a shared machine (wall time is not).

    python -m attnlab.benchmarks.decode_step                 # GPT-2-small shape and SmolLM2-135M, batch 1 and 8
    python -m attnlab.benchmarks.decode_step --quick         # GPT-2 shape, batch 1, 3 repetitions
    python -m attnlab.benchmarks.decode_step --threads 2     # wall time instead of CPU time
    python -m attnlab.benchmarks.decode_step --int8          # also attnlab with int8 weights, in the same rounds
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.benchmarks.generate import gpt2_small, machine, smollm2


def measure(fn, clock) -> float:
    start = clock()
    fn()
    return clock() - start


def read_bandwidth(clock, nbytes: int = 2**28, reps: int = 5) -> float:
    """GB/s of a read-only pass (sum) over `nbytes`: the speed at which a step can read its weights."""
    src = torch.randn(nbytes // 4)
    src.sum()
    speed = src.nbytes / statistics.median(measure(src.sum, clock) for _ in range(reps)) / 1e9
    del src
    return speed


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


def matvec_step(model):
    """A function running the matrix products of one batch-1 step (same weights, same layouts) and nothing else."""
    from attnlab.layers.linear import Linear

    products = []  # the LM head's projection is a Linear too (its own vocabulary bias, if any, is left out)
    for module in model.modules():
        if isinstance(module, nn.Linear):  # attnlab's Linear is one too; weight_for picks its decode layout
            x = torch.randn(1, 1, module.in_features)
            weight = module.weight_for(x) if isinstance(module, Linear) else module.weight
            products.append((x, weight, module.bias))

    def run():
        with torch.inference_mode():
            for x, w, b in products:
                F.linear(x, w, b)
    return run


def cached_step(model, cache_len: int):
    """A function running one cached batch-1 step of the model's own forward after `cache_len` positions."""
    from attnlab.cache import KVCache

    gen = torch.Generator().manual_seed(cache_len)
    cache = KVCache.for_model(model, 1, cache_len + 1)
    with torch.inference_mode():
        model(torch.randint(0, model.config.vocab_size, (1, cache_len), generator=gen), cache=cache,
              validate=False)
    token, position = torch.tensor([[7]]), torch.tensor([[cache_len]])

    def run():
        with torch.inference_mode():
            model(token, position_ids=position, cache=cache, last_only=True, validate=False)
        for layer in cache.layers:  # forget the token: the next call writes the same slot
            layer.length = cache_len
    return run


def tiny_twin(model):
    """The same depth, layout and vocabulary-free shape with tiny widths: its step costs only the fixed overhead."""
    import dataclasses

    from attnlab.build import build_model

    c = model.config
    # 4-wide heads, the same head counts (GQA kept), 16 * heads wide FFN, 256 tokens
    config = dataclasses.replace(c, d_model=4 * c.n_heads, d_head=None, d_ff=16 * c.n_heads, vocab_size=256,
                                 bos_token_id=None, eos_token_id=None, pad_token_id=None)
    return build_model(config).eval()


def without_products(step):
    """`step` with every matrix product replaced by an uninitialised output of its shape: all the rest it costs."""
    def empty_product(x, weight, bias=None):
        return torch.empty(*x.shape[:-1], weight.shape[0], dtype=x.dtype)

    def run():
        real, F.linear = F.linear, empty_product  # nn.Linear, attnlab's Linear and the LM head all call F.linear
        try:
            step()
        finally:
            F.linear = real
    return run


def step_parts(model, reps: int, clock, warmup: int = 10, read_bytes: int | None = None) -> dict[str, float]:
    """Median seconds of: the full step at cache 16 and 256, its products alone, the rest alone, the tiny twin,
    and (read_bytes) a read stream over that many bytes: the floor, measured in the same rounds as the step."""
    twin = tiny_twin(model)
    step16 = cached_step(model, 16)
    parts = {"step @16": step16, "matvecs only": matvec_step(model), "all but matvecs": without_products(step16),
             "step @256": cached_step(model, 256), "fixed cost (tiny twin)": cached_step(twin, 16)}
    if read_bytes:
        parts["floor (read stream)"] = torch.randn(read_bytes // 4).sum
    for _ in range(2):  # warm-up: past Linear.MIN_CALLS so the (in, out) copies exist, as in a generation
        for fn in parts.values():
            for _ in range(warmup):
                fn()
    parts["matvecs only"] = matvec_step(model)  # now with the decode copies the step uses
    times = {name: [] for name in parts}
    for _ in range(reps):
        for name, fn in parts.items():
            inner = 20 if name.startswith("fixed") else 3
            times[name].append(measure(lambda fn=fn, inner=inner: [fn() for _ in range(inner)], clock) / inner)
    return {name: statistics.median(values) for name, values in times.items()}


def step_costs(hf, ours, batch: int, prompt_len: int, steps: int, reps: int, clock, int8=None):
    """Median seconds per cached step of attnlab, attnlab without its decode layouts, HF (and `int8`, the same
    model through attnlab.quantize(..., "int8"), when given), interleaved; and whether the float32 contestants
    chose the same tokens (int8 is not expected to: its agreement is reported apart)."""
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
    if int8 is not None:
        variants["attnlab int8"] = lambda n: attnlab.generate(int8, ids, max_new_tokens=n, eos_token_id=None).sequences
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
    same = all(torch.equal(outputs["attnlab"], out) for name, out in outputs.items() if name != "attnlab int8")
    result = {name: statistics.median(values) for name, values in costs.items()}
    if int8 is not None:
        new_tokens = outputs["attnlab"][:, prompt_len:]
        result["int8 agreement"] = float((outputs["attnlab int8"][:, prompt_len:] == new_tokens).float().mean())
    return result, same


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--models", default="gpt2,smollm2")
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--steps", type=int, default=24, help="cached steps per measurement")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="GPT-2 shape, batch 1, 3 repetitions")
    parser.add_argument("--int8", action="store_true", help="also attnlab with int8 weights (attnlab.quantize)")
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
    print(f"read stream over 256 MB: {bandwidth:.1f} GB/s")
    rows, parts_rows = [], []
    for key in args.models.split(","):
        loaded = {"gpt2": gpt2_small, "smollm2": smollm2}[key]()
        if loaded is None:
            print(f"({key}: not installed, skipped)")
            continue
        name, hf, ours = loaded
        # bytes one step reads: every matrix once (a tied embedding is read once, as the head)
        weight_bytes = sum(p.nbytes for n, p in ours.named_parameters() if n != "tokens.weight" or
                           ours.config.tie_embeddings)
        big_bandwidth = read_bandwidth(clock, nbytes=weight_bytes)
        floor, big_floor = weight_bytes / bandwidth / 1e9, weight_bytes / big_bandwidth / 1e9
        print(f"{name}: weights read per step {weight_bytes / 1e6:.0f} MB -> floor {floor * 1e3:.1f} ms at the 256 MB "
              f"stream, {big_floor * 1e3:.1f} ms at the stream over {weight_bytes / 1e6:.0f} MB "
              f"({big_bandwidth:.1f} GB/s)", flush=True)
        import attnlab

        int8 = attnlab.quantize(copy.deepcopy(ours).eval(), "int8") if args.int8 else None
        for batch in (int(b) for b in args.batches.split(",")):
            costs, same = step_costs(hf, ours, batch, args.prompt, args.steps, args.reps, clock, int8=int8)
            rows.append((name, batch, costs, same, floor, big_floor))
            print(f"  batch {batch}: " + ", ".join(f"{k} {v * 1e3:.1f} ms" if k != "int8 agreement" else
                                                   f"int8 tokens agreeing with float32 {v:.0%}"
                                                   for k, v in costs.items())
                  + f"; same tokens: {same}; decode copies hold {copy_bytes(ours) / 1e6:.0f} MB", flush=True)
        parts = step_parts(ours, args.reps, clock, read_bytes=weight_bytes)
        parts_rows.append((name, parts, floor, big_floor))
        print("  batch 1 step parts: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in parts.items()), flush=True)
        del hf, ours

    for name, batch, c, _, _, _ in rows:
        if "attnlab int8" in c:
            print(f"{name}, batch {batch}: attnlab int8 {c['attnlab int8'] * 1e3:.1f} ms/step, HF (float32) / attnlab "
                  f"int8 {c['HF'] / c['attnlab int8']:.2f}x, attnlab float32 / int8 "
                  f"{c['attnlab'] / c['attnlab int8']:.2f}x, new tokens equal to float32's: {c['int8 agreement']:.0%}")
    print("\n| model | batch | attnlab ms/step | attnlab plain ms/step | HF ms/step | HF / attnlab | "
          "plain / attnlab | attnlab / floor (256 MB stream) | attnlab / floor (weight-sized stream) | same tokens |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, batch, c, same, floor, big_floor in rows:
        print(f"| {name} | {batch} | {c['attnlab'] * 1e3:.1f} | {c['attnlab plain'] * 1e3:.1f} | {c['HF'] * 1e3:.1f} | "
              f"{c['HF'] / c['attnlab']:.2f}x | {c['attnlab plain'] / c['attnlab']:.2f}x | "
              f"{c['attnlab'] / floor:.2f}x | {c['attnlab'] / big_floor:.2f}x | {'yes' if same else 'no'} |")
    print("\n| model, batch 1 | step @16 ms | step @256 ms | @256 / @16 | matvecs only ms | all but matvecs ms "
          "| fixed cost ms (tiny twin) | floor ms (weight-sized read, same rounds) | step @16 / floor "
          "| matvecs / floor |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, p, _, _ in parts_rows:
        s16, s256, mv, floor = p["step @16"], p["step @256"], p["matvecs only"], p["floor (read stream)"]
        print(f"| {name} | {s16 * 1e3:.1f} | {s256 * 1e3:.1f} | {s256 / s16:.2f}x | {mv * 1e3:.1f} | "
              f"{p['all but matvecs'] * 1e3:.2f} | {p['fixed cost (tiny twin)'] * 1e3:.2f} | {floor * 1e3:.1f} | "
              f"{s16 / floor:.2f}x | {mv / floor:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
