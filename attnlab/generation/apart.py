"""The compiled decoding step built apart: a separate, detached, low-priority process that builds it into the
private cache for later runs, so that the run which asked for it decodes eagerly at once.

Why: compiling SmolLM2's step takes a minute or more on a 2-core machine (and attnlab's C++ operators, which its
key depends on, ~8 s more), while 8 eager tokens take a fraction of a second. A first `attnlab generate` that
waited for the compiler (41.7 s for 8 tokens, reported from a fresh machine) or that compiled in a thread of its own
(ended with the process, and slowing the eager steps through the interpreter lock) serves nobody. A separate
process outlives the command, runs at the lowest priority (nice 19, its compiler processes too), writes nothing
but its log into <cache>/compiled (a folder only this user can write, checked by step_cache), and keeps the step
where the next process loads it.

Who starts it: generation/compiled.py, for a model whose caller said how to load it again (`command`: the CLI gives
`python -m attnlab.generation.step_builder --model SPEC --quantize Q`); this module adds the step's rows, thread counts,
dtype and the marker. One builder per model and kind at a time: a marker file `<hash>.building` (created
exclusively, holding the builder's pid) keeps a second one from starting while the first one lives; a marker whose
process is gone (or one left without a pid for over a minute) is taken over. ATTNLAB_COMPILE=0 starts nothing
(compiled.auto is False then).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from attnlab.layers import kernel_build

STALE_S = 24 * 3600.0  # a marker this old is taken over even when its pid is alive (the id may be reused by then)


def marker(command: list[str], kind: tuple[int, int, int], dtype: str) -> str:
    """The name of the builder's marker and log for this command and kind (the step's own key is known only after
    attnlab's C++ operators are loaded, which the builder may have to build first)."""
    text = "\0".join([*command, *map(str, kind), dtype])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _take(path: Path) -> bool:
    """Create `path` exclusively (0600, no link followed); True when this process holds it now. A marker whose
    builder is gone is removed and taken."""
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(2):
        try:
            os.close(os.open(path, flags, 0o600))
            return True
        except FileExistsError:
            if kernel_build.at_work(path, STALE_S):
                return False  # a builder is at work (or is being started)
            path.unlink(missing_ok=True)
    return False


def start(folder: Path, command: list[str], kind: tuple[int, int, int], dtype: str) -> bool:
    """Start the builder for `kind` (rows, torch threads, kernel threads) unless one is at work; True when one is
    now building (started here or earlier). `folder`: the private compiled-step folder (step_cache.place())."""
    name = marker(command, kind, dtype)
    path = folder / f"{name}.building"
    if not _take(path):
        return path.exists()
    rows, threads, kernel_threads = kind
    argv = [*command, "--rows", str(rows), "--threads", str(threads), "--kernel-threads", str(kernel_threads),
            "--dtype", dtype, "--marker", str(path)]
    flags = os.O_CREAT | os.O_WRONLY | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        log = os.open(folder / f"{name}.log", flags, 0o600)
        try:
            # its own session: the terminal's Ctrl-C and the command's end leave it running; no pipe of the
            # caller's is held open (a `| head` or a benchmark reading the output would wait for it otherwise)
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                     close_fds=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
        finally:
            os.close(log)
        path.write_text(str(child.pid))
    except OSError:
        path.unlink(missing_ok=True)
        return False
    return True


def lower_priority() -> None:
    """The builder's first act: the lowest CPU priority (nice 19 and, as its session's leader, its session's
    scheduling group at nice 19 too: kernel_build.lowest_priority; the compiler processes it starts inherit both)."""
    kernel_build.lowest_priority()


def python() -> list[str]:
    """This interpreter, to run a module with -m (the builder's command starts with it)."""
    return [sys.executable, "-m"]
