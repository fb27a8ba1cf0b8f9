"""Every benchmark in one command (what `attnlab bench` runs): training, forward, generation, one decode step,
recording overhead, the explorer under load, the thread policy vs fixed counts, quantized decoding, a GGUF against
llama.cpp (when built) and (not in --quick) quantized perplexity, each printing its tables.

    attnlab bench [--quick] [--only train,forward,generate] [--no-memory] [--out DIR]
    python -m attnlab.benchmarks.run_all ...      (the same)

--quick: small cases and few repeats, about 12-17 minutes on a 2-core machine (measured 2026-11-26 with other work
on the cores: 12 m 18 s for the 9 sections, the slowest generate 145 s and forward 119 s; an earlier quiet run took
about 11): the small training cases, the bert-base forward cases, 3 timed rounds, no memory subprocesses, and the
other benchmarks with their own --quick. Each case is printed as it finishes, numbered with the time so far.
Results go to --out (default: a new folder under the system's temporary directory): OUT/train.json and
OUT/forward.json, which bench/report.py renders as RESULTS.md tables, and OUT/<name>.txt with what every other
benchmark printed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from attnlab.benchmarks.output import OUT_HELP, default_out

# run in this process, saving JSON results: name -> module
OURS = {"train": "attnlab.benchmarks.train", "forward": "attnlab.benchmarks.forward"}

# run in a fresh process each, their output kept as OUT/<name>.txt: name -> (module, --quick args, full args);
# --quick args None: left out of --quick
OTHERS = {
    "generate": ("attnlab.benchmarks.generate", ["--quick"], []),
    "decode_step": ("attnlab.benchmarks.decode_step", ["--quick"], []),
    "recording": ("attnlab.benchmarks.recording", ["--quick"], []),
    "explorer": ("attnlab.benchmarks.explorer", ["--clients", "4", "--requests", "10"], []),
    "threads": ("attnlab.benchmarks.threads", ["--quick"], []),
    "quantized": ("attnlab.benchmarks.quantized", ["--quick"], []),
    "data": ("attnlab.benchmarks.data", ["--quick"], ["--baby-gpt"]),  # token-file preparation vs tokenizers
    # SmolLM2's GGUF decoded by attnlab and, when built (python -m attnlab.benchmarks.llama_cpp --build), by
    # llama.cpp's llama-bench in the same script; without it, attnlab's side and how to get the peer
    "llama_cpp": ("attnlab.benchmarks.llama_cpp", ["--rounds", "1"], ["--rounds", "3"]),
    "quality": ("attnlab.benchmarks.quality", None, []),  # perplexity runs take minutes: not in --quick
    # fresh-process start-up of attnlab --help / models / generate beside `import torch`, against their targets
    "startup": ("attnlab.benchmarks.startup", ["--rounds", "3"], []),
    # start-up, then a first gpt-char training on a 50 MB .jsonl corpus at the default schedule, its phases read
    # from its own lines: minutes, so not in --quick
    "newcomer": ("attnlab.benchmarks.newcomer", None, []),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="attnlab bench", description=__doc__.splitlines()[0])
    add_arguments(p)
    return p.parse_args(argv)


def add_arguments(p) -> None:
    p.add_argument("--quick", action="store_true",
                   help="small cases, few repeats: about 12-17 minutes on 2 cores (each case printed as it ends)")
    p.add_argument("--only", default="", help=f"comma-separated subset of {', '.join([*OURS, *OTHERS])}")
    p.add_argument("--no-memory", action="store_true", help="skip the per-implementation peak-memory subprocesses")
    p.add_argument("--out", default=None, help=OUT_HELP)


def _run_other(name: str, module: str, flags: list[str], out: Path) -> int:
    """Run one benchmark module in a fresh process, echo its output and keep a copy as OUT/<name>.txt.

    PYTHONUNBUFFERED: a child writing into a pipe buffers its prints until it exits, so a section showed nothing
    for minutes and then everything at once; unbuffered, each case appears as it finishes."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen([sys.executable, "-m", module, *flags], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=env) as proc, open(out / f"{name}.txt", "w") as copy:
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            copy.write(line)
    return proc.returncode


def main(argv=None) -> int:
    args = parse_args(argv)
    return run(args)


def run(args) -> int:
    wanted = [w for w in args.only.split(",") if w] or [
        *OURS, *(n for n, (_, quick, _) in OTHERS.items() if quick is not None or not args.quick)]
    unknown = [w for w in wanted if w not in OURS and w not in OTHERS]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; available: {', '.join([*OURS, *OTHERS])}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else default_out()
    out.mkdir(parents=True, exist_ok=True)
    print(f"results go to {out}", flush=True)
    started = time.perf_counter()
    failed = []
    for number, name in enumerate(wanted, 1):
        section_start = time.perf_counter()
        place = f"[{number}/{len(wanted)}, {time.perf_counter() - started:.0f} s so far]"
        if name in OURS:
            import importlib

            flags = (["--quick"] if args.quick else []) + (["--no-memory"] if args.no_memory else [])
            print(f"\n######## {name} {' '.join(flags)} {place}", flush=True)
            importlib.import_module(OURS[name]).main([*flags, "--out", str(out)])
        else:
            module, quick, full = OTHERS[name]
            flags = (quick or []) if args.quick else full
            print(f"\n######## {name}: python -m {module} {' '.join(flags)} {place}", flush=True)
            if _run_other(name, module, flags, out):
                failed.append(name)
        print(f"######## {name}: {time.perf_counter() - section_start:.0f} s", flush=True)
    print(f"\nall benchmarks done in {time.perf_counter() - started:.0f} s"
          + (f"; failed: {', '.join(failed)}" if failed else "") + f"; results in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
