"""A fresh machine's first runs: `attnlab generate smollm2` for 8 tokens with an empty cache, run after run, beside
`llama-completion` on the same GGUF file in the same script.

    python -m attnlab.benchmarks.first_run [--tokens 8] [--wait-build 900] [--completion PATH]

What a newcomer meets: the first run builds attnlab's eager kernels (once, a few seconds each) and decodes eagerly
at once, while a separate low-priority process builds the compiled decoding step for later runs
(generation/apart.py); the second and third runs follow at once (the build may still be at work beside them);
then, once that build has ended (at most --wait-build seconds), a run that loads the kept step, and the one-token
prompt "The" (which used to pay the step's load and then decode every token eagerly). Every attnlab run gets the
same empty folders for ATTNLAB_CACHE_DIR, HOME and XDG_CACHE_HOME, made for this script and removed after it.
llama-completion (built by `python -m attnlab.benchmarks.llama_cpp --build`, or --completion) runs the same prompts
three times each. Reported per run: wall and CPU (user + system of the process and its children; a detached
builder is not a child) and the machine's 1-minute load before it: the machine may be shared, and CPU time is the
steadier number there. The stderr lines of each attnlab run are printed after its row.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROMPTS = ("The capital", "The")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, str]:
    """(1-minute load before, wall s, CPU s, stderr) of one process; a failure stops the script."""
    load = os.getloadavg()[0]
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env)
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    return load, wall, _children_cpu() - cpu, done.stderr


def building(cache: Path) -> bool:
    """Whether a builder of the compiled step is still at work in `cache` (its marker: generation/apart.py)."""
    return any((cache / "compiled").glob("*.building"))


def main(argv: list[str] | None = None) -> int:
    from attnlab.benchmarks.common import header
    from attnlab.benchmarks.llama_cpp import find_tool
    from attnlab.benchmarks.quantized import smollm2_path
    from attnlab.benchmarks.startup import attnlab_command, user_environment

    p = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.first_run")
    p.add_argument("--tokens", type=int, default=8)
    p.add_argument("--wait-build", type=float, default=900.0,
                   help="seconds to wait for the compiled step's separate build before the later runs")
    p.add_argument("--completion", type=Path, help="a llama-completion binary (default: the one --build made)")
    args = p.parse_args(argv)
    print(header("python -m attnlab.benchmarks.first_run"), flush=True)
    model = smollm2_path()
    completion = find_tool("llama-completion", str(args.completion) if args.completion else None)
    folders = [Path(tempfile.mkdtemp(prefix=f"attnlab-first-run-{name}-")) for name in ("cache", "home", "xdg")]
    cache = folders[0]
    env = dict(user_environment(), ATTNLAB_CACHE_DIR=str(cache), HOME=str(folders[1]),
               XDG_CACHE_HOME=str(folders[2]))
    env.pop("ATTNLAB_COMPILE", None)  # the default path, as a user has it
    ours = attnlab_command()
    print("| run | command | load before | wall | CPU |\n|---|---|---|---|---|", flush=True)

    def attnlab_run(label: str, prompt: str) -> None:
        command = [*ours, "generate", "smollm2", "--prompt", prompt, "--max-new-tokens", str(args.tokens)]
        load, wall, cpu, said = run(command, env)
        print(f"| {label} | attnlab generate smollm2 --prompt {prompt!r} --max-new-tokens {args.tokens} | "
              f"{load:.2f} | {wall:.2f} s | {cpu:.2f} s |", flush=True)
        for line in said.strip().splitlines():
            print(f"    {line}", flush=True)

    try:
        for label in ("first (empty cache)", "second", "third"):
            attnlab_run(label, PROMPTS[0])
        attnlab_run("one-token prompt, the build perhaps still at work", PROMPTS[1])
        waited, started = 0.0, time.perf_counter()
        while building(cache) and waited < args.wait_build:
            time.sleep(2)
            waited = time.perf_counter() - started
        state = "still at work" if building(cache) else "ended"
        print(f"# the compiled step's separate build: {state} after {waited:.0f} s more", flush=True)
        for label in ("after the build", "after the build, again"):
            attnlab_run(label, PROMPTS[0])
        attnlab_run("one-token prompt, after the build", PROMPTS[1])
        if completion is None:
            print("# llama-completion is not built here: `python -m attnlab.benchmarks.llama_cpp --build`", flush=True)
            return 0
        for prompt in PROMPTS:
            for r in range(3):
                line = [str(completion), "-m", str(model), "-p", prompt, "-n", str(args.tokens), "-no-cnv", "--temp",
                        "0"]
                load, wall, cpu, _ = run(line, env)
                print(f"| {r + 1} | llama-completion -p {prompt!r} -n {args.tokens} | {load:.2f} | {wall:.2f} s | "
                      f"{cpu:.2f} s |", flush=True)
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
