"""Fresh processes: the wall time of a whole command that prints a model's first token (or first few), attnlab's
beside llama.cpp's, with every cache warm (files in the page cache, kernels and the compiled step built).

Why: what a user waits for at the command line is the process, not the decoding loop: interpreter and torch start,
the file's parse, the model's build, the prompt's forward, and (past the first token) the compiled step's load.
llama-completion does the same job in C++ and is the reference for how little of that wait is necessary.
Each round runs the two commands one after the other (interleaved); the median of the rounds is reported.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

PROMPT = "The capital of France is"


def _wall(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise SystemExit(f"{command[0]} exited with {done.returncode}: {tail[0][:200]}")
    return seconds


def commands(model: Path, tokens: int, completion: Path | None) -> dict[str, list[str]]:
    ours = [sys.executable, "-m", "attnlab", "generate", str(model), "--prompt", PROMPT, "--max-new-tokens",
            str(tokens)]
    found = {"attnlab generate": ours}
    if completion is not None:
        found["llama-completion"] = [str(completion), "-m", str(model), "-p", PROMPT, "-n", str(tokens), "-no-cnv",
                                     "--temp", "0"]
    return found


def first_token_rows(model: Path, completion: Path | None, rounds: int = 3,
                     tokens: tuple[int, ...] = (1, 16)) -> list[str]:
    """Markdown rows: for each token count, the median fresh-process wall of each command and their difference.
    One unmeasured run of each command first warms the page cache, the kernels and the compiled step."""
    rows = [f"fresh processes, median of {rounds} interleaved rounds after a warm-up run (wall, prompt "
            f"{PROMPT!r}, each command at its default threads)",
            "| new tokens | attnlab generate | llama-completion | difference |", "|---|---|---|---|"]
    for n in tokens:
        runs = commands(model, n, completion)
        for command in runs.values():
            _wall(command)
        walls: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(rounds):
            for name, command in runs.items():
                walls[name].append(_wall(command))
        ours = statistics.median(walls["attnlab generate"])
        if "llama-completion" in walls:
            peer = statistics.median(walls["llama-completion"])
            rows.append(f"| {n} | {ours:.2f} s | {peer:.2f} s | {ours - peer:+.2f} s |")
        else:
            rows.append(f"| {n} | {ours:.2f} s | - | - |")
    return rows
