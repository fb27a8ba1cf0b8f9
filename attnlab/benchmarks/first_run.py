"""A fresh machine's first runs: `attnlab generate smollm2` for 8 tokens with an empty cache, run after run, beside
`llama-completion` on the same GGUF file in the same script.

    python -m attnlab.benchmarks.first_run [--tokens 8] [--wait-build 900] [--completion PATH] [--no-phases]
        [--first-runs N] [--priority-check]

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

--first-runs N: N first runs only, each with new empty folders, and the detached builders each one started stopped
(by the process ids their markers hold) before the next, so that every one is a fresh machine's first run and none
is slowed by the one before; then llama-completion as above. For a machine too busy to measure one run by.

--priority-check: what a detached builder takes from the run that started it. A fixed loop of Python arithmetic is
timed alone, then beside four busy processes started as kernel_build starts its builders (each in a session of its
own), once at nice 19 alone and once at kernel_build.lowest_priority (nice 19 and the session's scheduling group
at nice 19), rounds interleaved; reported: the loop's wall seconds and its share of a core (CPU / wall).

Phases (unless --no-phases): each attnlab run goes through `python -m attnlab.benchmarks.first_run --phases-of
ARGS`, which runs the same command line in the same way as the `attnlab` script (cli.main) and adds one stderr line,
`[phases: ...]`: wall / CPU seconds of this process from its start (the interpreter's own start-up first) to the
imports done, the model and tokenizer loaded, the kernels asked for (built, loaded, or left to a detached build),
the first token, the last one and the exit; then the seconds its threads waited for a core (the scheduler's run
queue, /proc/self/task/*/schedstat: what the machine's other work cost it) and its peak resident memory.
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


def _schedstat() -> tuple[float, float]:
    """(CPU seconds, seconds spent waiting for a core) of this process's threads alive now (Linux; zeros
    elsewhere)."""
    cpu = wait = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 0.0, 0.0
    for task in tasks:
        try:
            ran, waited, _ = Path(f"/proc/self/task/{task}/schedstat").read_text().split()
        except (OSError, ValueError):
            continue
        cpu, wait = cpu + int(ran), wait + int(waited)
    return cpu / 1e9, wait / 1e9


def _started() -> float:
    """Seconds since this process started (its start time in /proc/self/stat against /proc/uptime), or 0."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        return float(Path("/proc/uptime").read_text().split()[0]) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def phases_of(argv: list[str]) -> int:
    """Run `attnlab ARGV` in this process as the `attnlab` script does (cli.main with the process's own command line)
    and say where its time went in one stderr line at exit (the module docstring lists the phases)."""
    import atexit

    wall0, cpu0 = time.perf_counter() - _started(), 0.0  # CPU before this line: counted in the first phase
    marks: list[tuple[str, float, float]] = []

    def mark(name: str) -> None:
        marks.append((name, time.perf_counter(), time.process_time()))

    def said() -> None:
        mark("exit")
        _, waited = _schedstat()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        parts, (wall, cpu) = [], (wall0, cpu0)
        for name, t, c in marks:
            parts.append(f"{name} {t - wall:.2f} / {c - cpu:.2f} s")
            wall, cpu = t, c
        print(f"[phases, wall / CPU: {', '.join(parts)}; waited for a core {waited:.2f} s; peak memory "
              f"{peak:.0f} MB]", file=sys.stderr, flush=True)

    atexit.register(said)
    from attnlab.cli import generate

    def marked(name: str, label: str) -> None:
        inner = getattr(generate, name)

        def call(*args, **kwargs):
            result = inner(*args, **kwargs)
            mark(label)
            return result
        setattr(generate, name, call)

    import attnlab.generation

    stream = attnlab.generation.generate_stream

    def tokens(*args, **kwargs):
        first = True
        for step in stream(*args, **kwargs):
            if first:
                mark("first token")
                first = False
            yield step
        mark("the other tokens")

    mark("imports")
    marked("_load", "model and tokenizer loaded")
    marked("_ready_kernels", "kernels asked for")
    attnlab.generation.generate_stream = tokens
    from attnlab.cli import main

    sys.argv = ["attnlab", *argv]
    return main()


def stop_builders(cache: Path) -> int:
    """Stop the detached builds the runs in `cache` started (each marker, `kernels/.*.building` or
    `compiled/*.building`, holds its builder's process id; a builder leads its own session, so its compilers go with
    it); -> how many were still at work."""
    import signal

    stopped = 0
    for marker in [*(cache / "kernels").glob(".*.building"), *(cache / "compiled").glob("*.building")]:
        try:
            pid = int(marker.read_text().strip())
            os.killpg(pid, signal.SIGKILL)
            stopped += 1
        except (OSError, ValueError):
            continue
    return stopped


BUSY = "import os, sys\n{lower}\nx = 0\nwhile True:\n    x += 1\n"
LOWER = {"alone": None, "nice 19": "os.nice(19)",
         "lowest_priority": "from attnlab.layers.kernel_build import lowest_priority\nlowest_priority()"}


def _loop(n: int = 6_000_000) -> tuple[float, float]:
    """(wall, CPU) seconds of a fixed loop of Python arithmetic in this process."""
    wall, cpu = time.perf_counter(), time.process_time()
    x = 0
    for i in range(n):
        x += i
    return time.perf_counter() - wall, time.process_time() - cpu


def priority_check(rounds: int = 3, busy: int = 4) -> None:
    """The loop alone and beside `busy` detached processes at each priority of LOWER, `rounds` rounds interleaved;
    one table row per case (median wall, median share of a core)."""
    import signal
    import statistics

    times: dict[str, list[tuple[float, float]]] = {label: [] for label in LOWER}
    for _ in range(rounds):
        for label, lower in LOWER.items():
            children = [] if lower is None else [
                subprocess.Popen([sys.executable, "-c", BUSY.format(lower=lower)], stdin=subprocess.DEVNULL,
                                 start_new_session=True) for _ in range(busy)]
            try:
                time.sleep(0.5 if children else 0.0)  # the children past their start-up
                times[label].append(_loop())
            finally:
                for child in children:
                    os.killpg(child.pid, signal.SIGKILL)  # the processes started above, by their ids
                    child.wait()
    print(f"| the loop | wall (median of {rounds}) | share of a core (CPU / wall) |\n|---|---|---|")
    for label, samples in times.items():
        wall = statistics.median(w for w, _ in samples)
        share = statistics.median(c / w for w, c in samples)
        what = "alone" if label == "alone" else f"beside {busy} detached processes at {label}"
        print(f"| {what} | {wall:.2f} s | {share:.2f} |", flush=True)
    print(f"# 1-minute load average at the end: {os.getloadavg()[0]:.2f}", flush=True)


def building(cache: Path) -> bool:
    """Whether a builder of the compiled step is still at work in `cache` (its marker: generation/apart.py)."""
    return any((cache / "compiled").glob("*.building"))


def later_runs(attnlab_run, cache: Path, wait_build: float) -> None:
    """The first, second and third runs in one cache, the one-token prompt, then (the compiled step's build ended or
    `wait_build` seconds past) the same again."""
    for label in ("first (empty cache)", "second", "third"):
        attnlab_run(label, PROMPTS[0])
    attnlab_run("one-token prompt, the build perhaps still at work", PROMPTS[1])
    waited, started = 0.0, time.perf_counter()
    while building(cache) and waited < wait_build:
        time.sleep(2)
        waited = time.perf_counter() - started
    state = "still at work" if building(cache) else "ended"
    print(f"# the compiled step's separate build: {state} after {waited:.0f} s more", flush=True)
    for label in ("after the build", "after the build, again"):
        attnlab_run(label, PROMPTS[0])
    attnlab_run("one-token prompt, after the build", PROMPTS[1])


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
    p.add_argument("--no-phases", dest="phases", action="store_false",
                   help="run the installed `attnlab` script itself (no [phases: ...] line)")
    p.add_argument("--first-runs", type=int, default=0,
                   help="only N first runs, each with new empty folders and its builders stopped before the next")
    p.add_argument("--priority-check", action="store_true",
                   help="only time a loop beside detached processes at nice 19, with and without their group lowered")
    args = p.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    print(header(" ".join(["python -m attnlab.benchmarks.first_run", *given])), flush=True)
    if args.priority_check:
        priority_check()
        return 0
    model = smollm2_path()
    completion = find_tool("llama-completion", str(args.completion) if args.completion else None)

    def fresh() -> tuple[list[Path], dict[str, str]]:
        """New empty folders for the cache, HOME and XDG_CACHE_HOME, and the environment naming them."""
        made = [Path(tempfile.mkdtemp(prefix=f"attnlab-first-run-{name}-")) for name in ("cache", "home", "xdg")]
        named = dict(user_environment(), ATTNLAB_CACHE_DIR=str(made[0]), HOME=str(made[1]),
                     XDG_CACHE_HOME=str(made[2]))
        named.pop("ATTNLAB_COMPILE", None)  # the default path, as a user has it
        return made, named

    folders, env = fresh()
    cache = folders[0]
    ours = [sys.executable, "-m", "attnlab.benchmarks.first_run", "--phases-of"] if args.phases \
        else attnlab_command()
    print("| run | command | load before | wall | CPU |\n|---|---|---|---|---|", flush=True)

    def attnlab_run(label: str, prompt: str, env: dict[str, str] = env) -> None:
        command = [*ours, "generate", "smollm2", "--prompt", prompt, "--max-new-tokens", str(args.tokens)]
        load, wall, cpu, said = run(command, env)
        print(f"| {label} | attnlab generate smollm2 --prompt {prompt!r} --max-new-tokens {args.tokens} | "
              f"{load:.2f} | {wall:.2f} s | {cpu:.2f} s |", flush=True)
        for line in said.strip().splitlines():
            print(f"    {line}", flush=True)

    try:
        if args.first_runs:
            for r in range(args.first_runs):
                made, named = fresh()
                try:
                    attnlab_run(f"first (empty cache) {r + 1}", PROMPTS[0], named)
                    print(f"# its detached builds still at work, stopped: {stop_builders(made[0])}", flush=True)
                finally:
                    for folder in made:
                        shutil.rmtree(folder, ignore_errors=True)
        else:
            later_runs(attnlab_run, cache, args.wait_build)
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
        stop_builders(cache)  # a build still at work would write into a folder removed next
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--phases-of"]:
        sys.exit(phases_of(sys.argv[2:]))
    sys.exit(main())
