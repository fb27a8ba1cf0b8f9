"""What a person sees while a run works: a status line as it starts, a progress bar on a terminal, plain lines
in a log file.

Why two modes: a bar redrawn in place (tqdm, carriage returns) is what a terminal user expects, and garbage in
a log file or a CI console, where one plain line every log_every steps reads best. `Console` decides once, from
whether its stream is a terminal with a width: a terminal that reports 0 columns (a new tmux pane, some IDE
consoles) or none gets the plain lines too, since tqdm would draw a bar of width zero there and every status line
would be erased by the next. Everything goes to stderr (stdout carries the result), from rank 0 only, and
nothing at all when quiet.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO

CLEAR = "\r\x1b[K"  # carriage return, then erase to the end of the line
MIN_COLUMNS = 20  # narrower than this, a bar shows nothing useful: plain lines instead


def draws_in_place(stream: TextIO) -> bool:
    """Whether `stream` is a terminal at least MIN_COLUMNS wide (so a bar and rewritten status lines are seen)."""
    try:
        if not stream.isatty():
            return False
        return os.get_terminal_size(stream.fileno()).columns >= MIN_COLUMNS
    except (AttributeError, OSError, ValueError):  # no isatty/fileno (a StringIO), a closed or odd stream
        return False


def duration(seconds: float) -> str:
    """12 -> 0m12s, 3725 -> 1h02m05s."""
    seconds = int(max(0, seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


def rate(value: float) -> str:
    """Tokens per second, short: 812, 3.8k, 1.2M."""
    if value >= 1e6:
        return f"{value / 1e6:.1f}M"
    return f"{value / 1e3:.1f}k" if value >= 1e3 else f"{value:.0f}"


class Console:
    """Lines for a person: `status` (replaced by the next output on a terminal), `line` (kept), and a bar."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None):
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.tty = draws_in_place(self.stream)
        self._status = False
        self._bar: Any = None

    def status(self, text: str) -> None:
        """Work under way (data preparation, building the model): rewritten in place on a terminal."""
        if not self.enabled:
            return
        if self.tty and self._bar is None:
            self.stream.write(CLEAR + text)
            self.stream.flush()
            self._status = True
        else:
            self.line(text)

    def line(self, text: str) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.write(text, file=self.stream)  # above the bar, which is redrawn below it
            return
        self.stream.write((CLEAR if self.tty else "") + text + "\n")
        self.stream.flush()
        self._status = False

    def clear(self) -> None:
        if self.enabled and self._status:
            self.stream.write(CLEAR)
            self.stream.flush()
            self._status = False

    @contextlib.contextmanager
    def phase(self, what: str) -> Iterator[None]:
        """One step of preparing a run: "WHAT ..." while it works (a status line), then a kept line with the
        seconds it took ("WHAT: 7.1 s"), so a slow step is seen while it runs and named after it."""
        start = time.perf_counter()
        self.status(f"{what} ...")
        yield
        self.line(f"{what}: {time.perf_counter() - start:.1f} s")

    def bar(self, total: int, initial: int = 0, started: float | None = None) -> Bar:
        """A progress bar over steps on a terminal; elsewhere (or quiet) a Bar that draws nothing.

        started: when the training began (time.time(), tqdm's clock; Bar.started of the bar this one replaces):
        a bar drawn again after an evaluation goes on counting the elapsed time from there, not from 00:00."""
        if not (self.enabled and self.tty):
            return Bar(None)
        try:
            from tqdm import tqdm
        except ImportError:  # a dependency, but an install without it still trains: plain lines instead
            return Bar(None)
        self.clear()
        self._bar = tqdm(total=total, initial=initial, file=self.stream, unit="step", dynamic_ncols=True,
                         bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]",
                         desc="train", smoothing=0.1)
        if started is not None:
            self._bar.start_t = started  # tqdm's elapsed is now - start_t; its ETA uses the smoothed step rate
        return Bar(self._bar, self)


class Bar:
    """Steps done, the loss and tokens/s; tqdm works out the ETA from its smoothed step rate."""

    def __init__(self, bar: Any, console: Console | None = None):
        self._bar, self._console = bar, console

    @property
    def drawn(self) -> bool:
        return self._bar is not None

    @property
    def started(self) -> float | None:
        """When this bar's elapsed time counts from (tqdm's start_t), None for a bar that draws nothing."""
        return None if self._bar is None else self._bar.start_t

    def update(self, step: int, loss: float, tokens_per_s: float | None) -> None:
        if self._bar is None:
            return
        shown = f"loss {loss:.4f}" + (f", {rate(tokens_per_s)} tok/s" if tokens_per_s else "")
        self._bar.set_postfix_str(shown, refresh=False)
        self._bar.update(step - self._bar.n)

    def close(self) -> None:
        if self._bar is None:
            return
        self._bar.close()
        self._bar = None
        if self._console is not None:
            self._console._bar = None
