"""The `attnlab` process's own start and end: the garbage collector kept out of a command's start-up, and a quick
exit for a command that asks for one.

Why: a fresh `attnlab generate FILE.gguf --max-new-tokens 1` is mostly start-up (import torch, parse the file,
build the model) and exit, and a good part of both is the cyclic garbage collector walking torch's ~150,000
objects, none of them garbage:
- during start-up the collector runs ~500 times (a few full passes among them): ~0.13 s of SmolLM2's first token;
- at exit the interpreter tears every module down and frees what is left one object at a time: ~0.1 s more than
  a process that runs its exit handlers and then ends (os._exit).

Only a process's own command gets either (`OWN` is set by cli.main when it runs the process's command line): a
caller of cli.main(argv) (the tests, a script) keeps its collector and its interpreter's exit.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
import threading

OWN = [False]  # cli.main sets it when it runs this process's own command line
QUICK = [False]  # a command sets it when the process may end at once after it (`attnlab generate`, `train`)


@contextlib.contextmanager
def start_up():
    """The collector off while torch imports and the model loads (nothing there is a cycle worth finding: each
    pass walks the same live objects); on again afterwards, with everything alive by then frozen (gc.freeze: later
    passes skip it) when this is the process's own command. Refcounting frees what it frees either way."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if OWN[0]:
            gc.freeze()
        if was:
            gc.enable()


def flush() -> None:
    """Flush stdout and stderr; a missing or closed stream (a closed pipe) is left as it is."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass


def end(code: int) -> None:
    """The end of the process's own command: flush its output, then either end the process at once (QUICK, with
    no other thread running: the exit handlers run first, as they would at a normal exit, so files registered for
    removal go and loggers flush; only the module teardown is skipped) or let the interpreter exit with the
    collector's last pass skipped (gc.freeze: every object still alive is left to the exit itself).

    Measured 2026-11-28, 2-core AMD EPYC (Zen 5), fresh processes interleaved, median CPU time (user + system) of
    8-10 rounds: gc.freeze() as the last statement made `python -c "import torch"` 1.64 -> 1.24 s."""
    flush()
    if QUICK[0] and _only_readers_left():
        atexit._run_exitfuncs()  # what Py_FinalizeEx runs first; then nothing is left that writes anywhere
        flush()
        os._exit(code)
    gc.freeze()


READERS = "attnlab-compile-step"  # generation/compiled.py's thread: in a command, it only loads a kept step


def _only_readers_left(threads=None) -> bool:
    """No thread but this one runs, or only the compiled step's loading thread (daemon): in a command it reads the
    kept step and writes nothing (a step not kept is built by a separate process: generation/apart.py), so the
    process may end without waiting for a load it no longer needs. threads: the running threads (default
    threading.enumerate(); a test passes its own list, since its process runs threads of its own)."""
    main = threading.current_thread()
    running = threading.enumerate() if threads is None else threads
    return all(t is main or (t.daemon and t.name == READERS) for t in running)
