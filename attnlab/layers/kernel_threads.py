"""How many threads attnlab's kernels split a product's output rows over: torch's count, or a decoding step's own.

Why a count apart from torch's: the kernels do not use torch's OpenMP pool but their own (kernel_build.POOL), whose
helpers watch for the next job a moment before sleeping. In a decoding step the two pools take turns ~120 times
a token (SmolLM2: a product, then a norm or an add in torch), and each pool's waiting threads sit on the core the
other one needs: at two threads the compiled step was no faster than at one, although the block products alone ran
1.6-1.75x faster at two. With torch at one thread and only the kernels at two, the step went 16.2 -> 13.3 ms
(bench/RESULTS.md, 2026-11-28; Sapphire Rapids, 2 cores). The other operators of a one-row step (norms, rotary
positions, attention over a short cache) are too small for a second thread to pay anyway.

- `count()`: the count a kernel call passes to its pool (this OS thread's `apart` count, else torch's).
- `apart(threads)`: inside, torch runs at one thread and the kernels at `threads`; both come back on exit.
  attnlab.threads.kernels_only decides when a forward runs this way (a decoder whose products at that row count
  are all the kernels'), and kernels_apart enters it.
- `one_torch_thread()`: torch at one thread inside, the caller's count after (packing a layer, a GGUF load).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch

_LOCAL = threading.local()  # per OS thread, like torch's own OpenMP count (the explorer serves requests in threads)


def count() -> int:
    """Threads for the next kernel call on this OS thread."""
    threads = getattr(_LOCAL, "threads", None)
    return torch.get_num_threads() if threads is None else threads


@contextlib.contextmanager
def apart(threads: int) -> Iterator[None]:
    """torch at one thread and attnlab's kernels at `threads` inside the block (the caller's settings after)."""
    before, outer = torch.get_num_threads(), getattr(_LOCAL, "threads", None)
    if before != 1:
        torch.set_num_threads(1)
    _LOCAL.threads = threads
    try:
        yield
    finally:
        _LOCAL.threads = outer
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch's pool at one thread inside the block, the caller's count after: for work made of many small
    memory-bound operators (packing a layer's tiles, a GGUF file's copies and checks), each of which would otherwise
    wait for every thread of the pool. Here and not in attnlab.threads (whose using_threads does the same) because
    layers/ and interop/ sit below it (tests/test_import_layers.py)."""
    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)
