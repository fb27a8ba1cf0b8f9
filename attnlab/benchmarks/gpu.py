"""On a CUDA GPU: GPT-2-small training as nanoGPT trains it and GPT-2-shape generation, against HF and nanoGPT.

    python -m attnlab.benchmarks.gpu [--out DIR] [--scale 1.0]
    attnlab bench --only gpu

The stages RESULTS.md's "Speed: GPU" figures come from, each a fresh process with its own time limit, so that one
failure or stall leaves the others' numbers (a lent GPU is often held for minutes only):

1. train_eager: attnlab.benchmarks.train --cases gpt2-small --device cuda --bf16, every contestant eager, plus
   attnlab compiled with inductor (--compile-ours);
2. generate_bf16, generate_fp32: attnlab.benchmarks.generate on the GPT-2-small shape, a 32-token prompt and 256
   greedy tokens, batch 1 and 8;
3. train_compiled: the training step with every contestant compiled (nanoGPT's own setting).

Each stage's output goes to OUT/<stage>.log (train's JSON under OUT/eager and OUT/compiled) and its last lines are
printed. nanoGPT's peer needs the nano-gpt package (`pip install --no-deps nano-gpt`); without it, that peer is
reported missing. Without a CUDA device nothing runs (exit 0).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from attnlab.benchmarks.output import OUT_HELP, default_out

TRAIN = ["attnlab.benchmarks.train", "--device", "cuda", "--bf16", "--probe-size", "8192", "--no-memory",
         "--cases", "gpt2-small"]
GENERATE = ["attnlab.benchmarks.generate", "--device", "cuda", "--models", "gpt2", "--batches", "1,8", "--reps", "3",
            "--new-tokens", "256"]


def stages(out: Path) -> list[tuple[str, int, list[str]]]:
    """(name, seconds allowed on an H200, python -m arguments), in the order they run."""
    return [("train_eager", 150, [*TRAIN, "--compile-ours", "inductor", "--out", str(out / "eager")]),
            ("generate_bf16", 100, [*GENERATE, "--dtype", "bfloat16"]),
            ("generate_fp32", 80, [*GENERATE, "--dtype", "float32"]),
            ("train_compiled", 150, [*TRAIN, "--compile", "inductor", "--out", str(out / "compiled")])]


def run_stage(name: str, seconds: float, args: list[str], out: Path) -> int:
    """One stage in a fresh process, its output to OUT/<name>.log; returns its exit status (124: out of time)."""
    log = out / f"{name}.log"
    print(f"== {name} (limit {seconds:.0f} s): python -m {' '.join(args)}", flush=True)
    with open(log, "w") as sink:
        try:
            code = subprocess.run([sys.executable, "-m", *args], stdout=sink, stderr=subprocess.STDOUT,
                                  timeout=seconds).returncode
        except subprocess.TimeoutExpired:
            code = 124
    lines = [line for line in log.read_text(errors="replace").splitlines() if not line.startswith("[transformers]")]
    print("\n".join(lines[-14:]), f"\n== {name} exit {code}", flush=True)
    return code


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.gpu", description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help=OUT_HELP)
    p.add_argument("--scale", type=float, default=1.0, help="multiply every stage's time limit (a slower GPU)")
    args = p.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device here: the GPU benchmark has nothing to run")
        return 0
    out = Path(args.out) if args.out else default_out()
    out.mkdir(parents=True, exist_ok=True)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}; logs in {out}",
          flush=True)
    failed = [name for name, seconds, stage_args in stages(out)
              if run_stage(name, seconds * args.scale, stage_args, out)]
    print(f"failed: {', '.join(failed)}" if failed else "every stage finished", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
