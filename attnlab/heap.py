"""Freed C-heap pages handed back to the operating system (glibc's malloc_trim): a base module, so that both the
tokenizer reader and trainer (storage) and the token-file builder (features) can call it."""

from __future__ import annotations

import sys


def release_freed_memory() -> None:
    """Hand the C heap's freed pages back to the operating system (glibc's malloc_trim; nothing elsewhere).

    The tokenizers library's trainer and batch encoder work in their own threads' heaps and free it all on return,
    but glibc keeps freed heap pages resident in the process: a 30 MB corpus's BPE training left ~95 MB of them and
    its tokenizing ~100 MB more, carried through the whole training run (2026-12-07,
    bench/results/data-prep-2026-12-07/). Called once after each of those steps: one walk over the heaps."""
    trim = malloc_trim()
    if trim is not None:
        trim(0)


_TRIM: list = []


def malloc_trim():
    """glibc's malloc_trim, or None (another C library, or no ctypes); looked up once."""
    if not _TRIM:
        try:
            import ctypes
            import ctypes.util

            name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
            _TRIM.append(getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None)
        except (OSError, ImportError):
            _TRIM.append(None)
    return _TRIM[0]
