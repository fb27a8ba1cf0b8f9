"""Work the explorer defers until it is idle: building the Generation tab's compiled decoding step.

Why: building that step (torch.compile and a C++ compiler) takes a minute or more of every core, and on a busy
machine it ran for minutes while every other view answered slowly. So a build asked for while serving a request
waits until the explorer has had no request running or waiting for IDLE_SECONDS, and then starts in a thread at
the lowest CPU priority (nice 19; the compiler processes it starts inherit it), so requests that arrive during
it keep the cores. `attnlab explore --no-compile` turns it off (the steps stay eager). Outside a server (the
notebook, a script) a build starts at once, at the same low priority.

The runner marks the threads that serve requests (`serving`), so `ask` knows whose idleness to wait for;
`poll` is one pass of the thread that waits (poll_seconds None: no such thread; the tests call `poll`).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from contextlib import contextmanager

IDLE_SECONDS = 10.0  # no request running or waiting for this long before a build starts
POLL_SECONDS = 1.0
WAITING = (f"the step compiles once the explorer has had no request for {IDLE_SECONDS:g} s, at low priority so "
           "that no view slows down; until then steps run eagerly")
OFF = "compiling the step is off in this explorer (attnlab explore --no-compile)"
_LOCAL = threading.local()


@contextmanager
def serving(runner):
    """Mark this thread as serving a request of `runner` (its .quiet_for() and .compile_steps are read)."""
    before = getattr(_LOCAL, "runner", None)
    _LOCAL.runner = runner
    try:
        yield
    finally:
        _LOCAL.runner = before


def at_low_priority(start) -> None:
    """Run `start()` in a new thread at nice 19 and wait for it: the threads and processes it starts (a build)
    inherit that priority, while the calling thread keeps its own (which it could not raise back once lowered)."""
    def body():
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)  # Linux: this thread only
        except (AttributeError, OSError):
            pass  # elsewhere: at the normal priority
        start()

    thread = threading.Thread(target=body, name="attnlab-low-priority-start", daemon=True)
    thread.start()
    thread.join()


class IdleBuilds:
    """Builds by key, each started once: at once outside a server, else when its server is idle (module
    docstring)."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS, poll_seconds: float | None = POLL_SECONDS):
        self.idle_seconds, self.poll_seconds = idle_seconds, poll_seconds
        self._lock = threading.Lock()
        self._pending: dict = {}  # key -> (weak reference to the runner, start)
        self._started: set = set()
        self._watcher: threading.Thread | None = None

    def was_started(self, key) -> bool:
        """Whether the build of `key` was started before now (by an earlier ask or by the idle watcher)."""
        with self._lock:
            return key in self._started

    def ask(self, key, start) -> str | None:
        """None when the build of `key` has started (ask the builder how far it is); else why not yet, in words
        for the page (OFF or WAITING). `start()` starts the build and returns at once."""
        runner = getattr(_LOCAL, "runner", None)
        with self._lock:
            if key in self._started:
                return None
            if runner is not None and not runner.compile_steps:
                return OFF
            if runner is not None:
                self._pending.setdefault(key, (weakref.ref(runner), start))
                if self._watcher is None and self.poll_seconds is not None:
                    self._watcher = threading.Thread(target=self._watch, name="attnlab-idle-builds", daemon=True)
                    self._watcher.start()
                return WAITING
            self._started.add(key)
        at_low_priority(start)
        return None

    def poll(self) -> bool:
        """Start the first pending build whose server has been idle long enough (one whose server is gone is
        dropped); True while builds are still pending."""
        chosen = None
        with self._lock:
            for key, (ref, start) in list(self._pending.items()):
                runner = ref()
                if runner is None:
                    del self._pending[key]
                elif runner.quiet_for() >= self.idle_seconds:
                    del self._pending[key]
                    self._started.add(key)
                    chosen = start
                    break
        if chosen is not None:
            at_low_priority(chosen)
        with self._lock:
            if not self._pending:
                self._watcher = None
                return False
            return True

    def _watch(self) -> None:
        while self.poll():
            time.sleep(self.poll_seconds)


BUILDS = IdleBuilds()  # the process's builds (a compiled step is shared by every app in the process)
