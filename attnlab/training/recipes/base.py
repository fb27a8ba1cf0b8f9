"""What every recipe is made of: the Recipe record, and the text-data steps the text recipes share.

A recipe is data (a name, a help line, its keys with defaults, its TrainSettings defaults) plus one function,
build(params) -> Task, that turns resolved settings into the model, its data, its loss and its evaluation.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnlab.data import corpora, sources, streaming
from attnlab.data.packages import MissingDataError
from attnlab.data.token_file import TokenFile
from attnlab.errors import InputError
from attnlab.training.settings import TrainSettings
from attnlab.training.trainer import Task


@dataclass
class Recipe:
    name: str
    help: str
    build: Callable[[dict[str, Any]], Task]
    params: dict[str, Any]  # recipe-specific keys and their defaults (model size, data, evaluation)
    train: dict[str, Any] = field(default_factory=dict)  # TrainSettings defaults for this recipe

    def defaults(self) -> dict[str, Any]:
        base = {k: getattr(TrainSettings, k) for k in TrainSettings.keys()}
        return {**base, **self.train, **self.params}


# the text recipes' eval_windows: 200 batches of their default 12 windows (nanoGPT scores 200 batches). The default
# gpt-char scores a 64-token window in ~5 ms on one thread of the shared 2-core machine, so an evaluation takes
# ~11 s (about 50 training steps) however large the corpus; a 50 MB corpus's whole validation split, 81,817 windows,
# took 13.5 minutes per evaluation. 2,400 x 64 scored targets pin the mean loss far more finely than the
# differences between runs worth reading. The CPython docs' split (726 windows for gpt-char) is still scored whole.
EVAL_WINDOWS = 2400


def eval_scope(scored: int, available: int, what: str, key: str, value: int, which: str = "the first") -> str:
    """The opening summary's account of an evaluation: how many of the held-out `what` it scores ("the first"
    N, or N "evenly spaced"), and the key that sets it (0 scoring them all)."""
    if scored < available:
        chosen = f"the first {scored:,} of {available:,} {what}" if which == "the first" else \
            f"{scored:,} of {available:,} {what}, {which}"
        return f"{chosen}, the same each time ({key}={value}; 0 = all)"
    return f"all {available:,} {what} ({key}={value}{'' if value else ' scores all'})"


def say(p: dict[str, Any], text: str) -> None:
    """Tell the person watching which slow step the build is in: run_train passes its Console's status as
    p["status"] (a build called outside a run has none and says nothing)."""
    status = p.get("status")
    if status is not None:
        status(text)


@contextlib.contextmanager
def phase(p: dict[str, Any], what: str) -> Iterator[None]:
    """One step of preparing the run, shown while it works and then with the seconds it took: run_train passes
    its Console's phase as p["phase"] (a build called outside a run has none and says nothing). Every slow step
    of a build runs inside one, so preparing a large corpus is never minutes of silence."""
    show = p.get("phase")
    if show is None:
        yield
        return
    with show(what):
        yield


def read_corpus(path: str | None) -> str:
    """The text of `path` (a UTF-8 file or a folder of .txt files), or the CPython docs when path is empty."""
    if not path:
        return corpora.python_docs()
    try:
        return corpora.read_text(path)
    except MissingDataError:
        raise
    except InputError as exc:
        raise InputError(f"data={path}: {exc} (or leave data= empty to train on the CPython documentation)") from None


def corpus_source(path: str | None, text_field: str = "text") -> sources.CorpusSource:
    """The corpus at `path` read as a stream (a file or folder of .txt, .txt.gz, .jsonl(.gz), .parquet, or a saved
    `datasets` folder), or the CPython docs when path is empty."""
    if not path:
        return sources.CorpusSource.from_text(corpora.python_docs(), "the CPython documentation")
    try:
        return sources.CorpusSource(path, text_field)
    except MissingDataError:
        raise
    except InputError as exc:
        raise InputError(f"data={path}: {exc} (or leave data= empty to train on the CPython documentation)") from None


def scan_corpus(source: sources.CorpusSource, chars: bool = False) -> streaming.CorpusScan:
    """One pass over the corpus (its fingerprint, its characters when asked); bad input is refused here, by file
    and line, before anything is written."""
    return streaming.CorpusScan(source, chars=chars)


def open_corpus(p: dict[str, Any], chars: bool = False) -> tuple[sources.CorpusSource, streaming.CorpusScan]:
    """(the corpus data= / text_field= name, its one checking pass), before any tokenizer trains: bad input is
    refused first, by file and line. chars: the pass also collects the characters (gpt-char's vocabulary)."""
    source = corpus_source(p["data"], p["text_field"])
    with phase(p, f"reading and checking {'the CPython documentation' if not p['data'] else p['data']}"):
        return source, scan_corpus(source, chars=chars)


def trained_tokenizer(p: dict[str, Any], recipe: str, kind: str, train: Callable[[], Any]):
    """The run's tokenizer: a resumed run's saved one (run_train passes it as p["tokenizer"]), else `train()`'s.

    Training one is a pass over the whole corpus, minutes for a large one, so the run says so before and after.
    """
    tokenizer = p.get("tokenizer")
    if tokenizer is None:
        with phase(p, f"{recipe}: training a {p['vocab_size']:,}-token {kind} tokenizer on the corpus (once for "
                      "this run; --resume reuses it)"):
            tokenizer = train()
    return tokenizer


class CorpusTask(Task):
    """A task on a text corpus tokenized once into OUT/data/ (the text recipes, bert-mlm): `self.data`, a
    TokenFile split into train and val, and what the task says about its evaluation."""

    data: TokenFile
    p: dict[str, Any]

    def tokenize_corpus(self, p: dict[str, Any], source: sources.CorpusSource, tokenizer, min_tokens: dict[str, int],
                        purpose: str, scan: streaming.CorpusScan | None = None) -> TokenFile:
        """The corpus tokenized once into OUT/data/ (train = first 1 - val_fraction of the ids, val = the rest).

        A run resumed with the same corpus and tokenizer reuses the ids on disk (self.data_reused says which), and
        so does any run whose corpus, tokenizer and split match a build in the token store; without an output
        directory (a task built outside `attnlab train`) a temporary directory holds them. OUT/data is created
        only once the token file is whole: a data error leaves nothing there to be taken for a previous run.
        """
        if p.get("out_dir"):
            directory = Path(p["out_dir"]) / "data"
        else:
            self._scratch = tempfile.TemporaryDirectory(prefix="attnlab-tokens-")  # removed with the task
            directory = Path(self._scratch.name)
        scan = scan or scan_corpus(source)
        with phase(p, f"tokenizing the corpus into {directory} (reused when already built)"):
            data, self.data_reused = TokenFile.prepare(source, tokenizer, directory, p["val_fraction"],
                                                       min_tokens=min_tokens, purpose=purpose, scan=scan)
        return data

    @property
    def train_ids(self) -> torch.Tensor:
        """The whole train split as int64 (copied out of the memory map on each call: for tests and small corpora)."""
        return split_ids(self.data, "train")

    def windows_scope(self, scored: int, available: int, which: str = "the first") -> str:
        """eval_summary's line: `scored` of the `available` validation windows, bounded by eval_windows."""
        return eval_scope(scored, available, "validation windows", "eval_windows", self.p["eval_windows"], which)


def split_ids(data: TokenFile, split: str) -> torch.Tensor:
    """A whole split as an int64 tensor (copied out of the memory map)."""
    return torch.from_numpy(data.tokens(split).astype(np.int64))


def split_pieces(data: TokenFile, split: str, piece: int = 1 << 16, overlap: int = 0):
    """A split as int64 tensors of `piece` ids (each repeating the last `overlap` ids of the one before), so a
    count over a corpus of any size never copies the whole split out of the memory map. 1<<16 ids: 512 KB a
    piece (1<<20 pieces, 8 MB each plus the count's temporaries, showed in a small run's peak memory)."""
    ids = data.tokens(split)
    start = 0
    while start < len(ids):
        stop = min(len(ids), start + piece)
        yield torch.from_numpy(ids[max(0, start - overlap):stop].astype(np.int64))
        start = stop


def paragraphs(text: str) -> list[str]:
    """What the tokenizer trainers read: one string per blank-line-separated paragraph."""
    return [part for part in text.split("\n\n") if part.strip()]


def ship_trained(dest, tensors: dict[str, torch.Tensor], config, info=None) -> Path:
    """Write a shipped checkpoint that holds only what a run trained on top of an installed base model (minilm-mlm,
    smollm2-mlm): model.safetensors with `tensors` (readable by every user), config.json, and trained.json with
    `info` when given. attnlab.load reads the rest from the base package that config.extra["base"] names."""
    import json
    import os

    from safetensors.torch import save_file

    from attnlab.storage import CONFIG_NAME, WEIGHTS_NAME, atomic_write

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    atomic_write(dest / WEIGHTS_NAME, lambda tmp: save_file(tensors, tmp))
    os.chmod(dest / WEIGHTS_NAME, 0o644)
    (dest / CONFIG_NAME).write_text(config.to_json() + "\n")
    if info is not None:
        (dest / "trained.json").write_text(json.dumps(info, indent=2, default=str) + "\n")
    return dest
