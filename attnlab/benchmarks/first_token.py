"""Fresh processes: the wall time of a whole command that prints a model's first token (or first few), attnlab's
beside llama.cpp's, with every cache warm (files in the page cache, kernels and the compiled step built).

Why: what a user waits for at the command line is the process, not the decoding loop: interpreter and torch start,
the file's parse, the model's build, the prompt's forward, and (past the first token) the compiled step's load.
llama-completion does the same job in C++ and is the reference for how little of that wait is necessary.
The commands run as the start-up benchmark runs its own (startup.interleaved: a warm-up run each, then rounds in
rotated order, in the user's environment); the median of the rounds is reported.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from attnlab.benchmarks.startup import interleaved

PROMPT = "The capital of France is"


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
        walls = interleaved(commands(model, n, completion), rounds)
        ours = statistics.median(walls["attnlab generate"]["wall"])
        if "llama-completion" in walls:
            peer = statistics.median(walls["llama-completion"]["wall"])
            rows.append(f"| {n} | {ours:.2f} s | {peer:.2f} s | {ours - peer:+.2f} s |")
        else:
            rows.append(f"| {n} | {ours:.2f} s | - | - |")
    return rows
