"""Tiny training runs for tests: the corpora they train on, and the folder layout they use (corpus.txt beside
the run folder), so that a test states only the keys that matter to it (steps, eval and save cadence)."""

from __future__ import annotations

from pathlib import Path

# a few kilobytes of Python-like lines: enough characters for a 16-token window and a held-out split
CODE = "".join(f"def function_{i}(x):\n    return x * {i} + {i % 7}\n\n" for i in range(200))
# prose with a repeating number pattern, for the tests that watch the loss and the samples
PROSE = "".join(f"line {i}: the quick brown fox jumps over the lazy dog {i * 7 % 13}.\n" for i in range(300))


def with_corpus(folder: Path, keys: dict[str, str], text: str = CODE) -> dict[str, str]:
    """`keys` plus data=folder/corpus.txt, that file written with `text`."""
    corpus = folder / "corpus.txt"
    corpus.write_text(text)
    return {**keys, "data": str(corpus)}


def train_gpt_char(folder: Path, keys: dict[str, str], text: str = CODE) -> Path:
    """folder/run: gpt-char's recipe trained quietly with `keys` on `text` (see with_corpus)."""
    from attnlab.training.run import run_train

    run = folder / "run"
    run_train("gpt-char", out=str(run), quiet=True, overrides=with_corpus(folder, keys, text))
    return run
