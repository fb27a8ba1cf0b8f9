"""Where attnlab keeps its llama.cpp build and the files made with it (a private folder under attnlab's cache), and
how a llama.cpp tool is found there: shared by the benchmarks that run llama.cpp (llama_cpp, quantized,
first_run, llama_cpp_agreement) without importing each other."""

from __future__ import annotations

import os
from pathlib import Path

from attnlab.layers import kernel_build


def llama_dir() -> Path:
    return kernel_build.cache_root() / "llama.cpp"


def private_folder(directory: Path) -> None:
    """Make (0700) and check `directory` under the cache like kernel_build's folder; raise when it is not safe."""
    problem = kernel_build.make_private_dir(directory)
    if problem:
        raise SystemExit(f"not using {directory}: {problem}")


def find_tool(name: str, named: str | None) -> Path | None:
    """`named` (a binary the user gave) when it is an executable file, else <cache>/llama.cpp/build/bin/<name> when
    that folder chain and the file are this user's alone; None when there is none."""
    if named:
        return Path(named) if Path(named).is_file() and os.access(named, os.X_OK) else None
    binary = llama_dir() / "build" / "bin" / name
    if not binary.is_file():
        return None
    for folder in (llama_dir(), llama_dir() / "build", llama_dir() / "build" / "bin"):  # each one's chain
        problem = kernel_build.check_private_dir(folder)
        if problem:
            print(f"not running {binary}: {problem}")
            return None
    problem = kernel_build.check_file(binary)
    if problem:
        print(f"not running {binary}: {problem}")
        return None
    return binary
