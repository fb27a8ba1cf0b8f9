"""A corpus tokenized once into a memory-mapped file of token ids, split into train and validation parts.

Tokenizing is the slow part of reading text, and it gives the same ids every time, so it is done once:
`TokenFile.build` writes `train.bin` and `val.bin` (uint16 when the vocabulary fits, else uint32) plus
`meta.json` and the tokenizer; `TokenFile.open` maps them back without reading them into memory.
The validation part is the *last* `val_fraction` of the token stream (contiguous, so no window straddles both).
`TokenFile.prepare` is what a training run calls: it reuses a build whose fingerprint (text, tokenizer,
val_fraction) matches, so a resumed run reads the ids its first run wrote, and rebuilds only when they are missing
or stale.

Preparation streams (attnlab.data.streaming): the corpus is read block by block, tokenized in bounded batches and
appended to disk shard by shard, so memory stays bounded for any corpus size and an interrupted preparation
resumes. Builds live in a private token store ($ATTNLAB_CACHE_DIR/tokens, default ~/.cache/attnlab/tokens) under
their fingerprint and are hard-linked (or copied) into a run's folder, so another run, or another recipe with the
same tokenizer and split, reuses them; nothing is written to the run's folder until the token file is whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import torch

from attnlab.data import streaming
from attnlab.data.sources import CorpusSource
from attnlab.errors import InputError

META_NAME = "meta.json"
SPLITS = ("train", "val")
FORMAT = "attnlab-token-file"



def encode_corpus(text: str, tokenizer, chunk_chars: int = streaming.CHUNK_CHARS) -> np.ndarray:
    """All token ids of `text` (no special tokens added), as int64, tokenized in bounded batches of chunks."""
    encoder = streaming.ChunkEncoder(tokenizer)
    parts = []
    batch: list[str] = []
    for chunk in streaming.safe_chunks([text], chunk_chars, any_cut=encoder.is_char):
        batch.append(chunk)
        if sum(map(len, batch)) >= streaming.BATCH_CHARS:
            parts.append(encoder.encode(batch))
            batch = []
    parts.append(encoder.encode(batch))
    return np.concatenate(parts).astype(np.int64)


_dtype_for = streaming.dtype_for


def _write_atomic(path: Path, array: np.ndarray) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")  # one temporary name per process: ranks never collide
    array.tofile(tmp)
    os.replace(tmp, path)


def fingerprint(text: str, tokenizer, val_fraction: float) -> str:
    """What decides the ids of a build: the corpus text, the tokenizer's full description and the split."""
    digest = hashlib.sha256()
    digest.update(text.encode("utf-8", errors="surrogatepass"))
    return fingerprint_from(digest, tokenizer, val_fraction)


def fingerprint_from(text_digest, tokenizer, val_fraction: float) -> str:
    """fingerprint() from a sha256 already fed the corpus text (a CorpusScan's), without the text in memory."""
    digest = text_digest.copy()
    digest.update(b"\0" + tokenizer.hf.to_str().encode("utf-8"))
    digest.update(f"\0{float(val_fraction)!r}".encode())
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on the file `path` (POSIX flock), so ranks started together build a token file once."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock; single-process runs need none
        yield
        return
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def token_store() -> Path:
    """The private folder that holds finished and half-built token files by fingerprint (created 0700).

    A folder another user could write is refused: its ids would be read as this user's training data."""
    root = os.environ.get("ATTNLAB_CACHE_DIR")
    store = (Path(root) if root else Path.home() / ".cache" / "attnlab") / "tokens"
    store.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = store.lstat()
    if not store.is_dir() or store.is_symlink() or (hasattr(os, "getuid") and info.st_uid != os.getuid()) \
            or info.st_mode & 0o022:
        raise InputError(f"the token store {store} is not a private folder of this user (a link, another owner, "
                         "or writable by others); remove it or set ATTNLAB_CACHE_DIR to a folder of your own")
    return store


def _link_or_copy(src: Path, dst: Path) -> None:
    tmp = dst.with_name(f".{dst.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)  # the same bytes, no second copy on disk; builds are never written in place
    except OSError:
        shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def _install(built: Path, directory: Path) -> None:
    """Put the token file of `built` into `directory`: meta.json removed first, written last."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / META_NAME).unlink(missing_ok=True)
    for item in sorted(built.iterdir()):
        if item.is_file() and item.name != META_NAME and not item.name.startswith("."):
            _link_or_copy(item, directory / item.name)
    _link_or_copy(built / META_NAME, directory / META_NAME)


class TokenFile:
    """Token ids of one corpus on disk: `train` and `val` splits, random batches and evaluation windows."""

    def __init__(self, directory: Path, meta: dict):
        self.directory, self.meta = directory, meta
        self.dtype = np.dtype(meta["dtype"])
        self.vocab_size: int = meta["vocab_size"]
        self._data = {split: self._map(split) for split in SPLITS}

    def _map(self, split: str) -> np.ndarray:
        path = self.directory / f"{split}.bin"
        expected = self.meta["n_tokens"][split]
        if not path.is_file():
            raise InputError(f"{path} is missing; rebuild the token file with TokenFile.build")
        if path.stat().st_size != expected * self.dtype.itemsize:
            raise InputError(f"{path} holds {path.stat().st_size} bytes, but meta.json promises {expected} tokens "
                             f"of {self.dtype.itemsize} bytes; the file is truncated or stale, rebuild it")
        if expected == 0:
            return np.empty(0, dtype=self.dtype)
        return np.memmap(path, dtype=self.dtype, mode="r", shape=(expected,))

    # ----------------------------------------------------------------------------------------- build / open
    @classmethod
    def build(cls, text, tokenizer, directory: str | Path, val_fraction: float = 0.1, *,
              progress: bool = False) -> TokenFile:
        """Tokenize `text` (a str or a CorpusSource) once and write it under `directory` (created if needed; an
        old build is replaced). Streams: memory stays bounded whatever the corpus size."""
        source = _as_source(text, "TokenFile.build")
        _check_val_fraction(val_fraction)
        scan = streaming.CorpusScan(source, progress=progress)
        key = fingerprint_from(scan.digest, tokenizer, val_fraction)
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        return cls._build(source, scan, key, tokenizer, directory, directory / ".partial", val_fraction, progress)

    @classmethod
    def _build(cls, source, scan, key: str, tokenizer, target: Path, work: Path, val_fraction: float,
               progress: bool) -> TokenFile:
        """Encode `source` into work/ (resuming what a previous attempt left there), then split it into target/."""
        encoder = streaming.ChunkEncoder(tokenizer)
        plan = {"fingerprint": key, "dtype": np.dtype(encoder.dtype).name, "chunk_chars": streaming.CHUNK_CHARS,
                "any_cut": encoder.is_char}
        meter = streaming.Progress(f"tokenizing {source.path}", source.n_bytes(), enabled=progress)
        chunks = streaming.safe_chunks(source.blocks(meter), streaming.CHUNK_CHARS, any_cut=encoder.is_char)
        n_tokens, _ = streaming.write_ids(chunks, encoder, work, plan)
        meter.finish()
        return cls._split(work, target, tokenizer, encoder.dtype, n_tokens, val_fraction,
                          {"n_chars": scan.n_chars, "fingerprint": key})

    @classmethod
    def _split(cls, work: Path, target: Path, tokenizer, dtype, n_tokens: int, val_fraction: float,
               extra: dict) -> TokenFile:
        """work/ids.bin becomes target/train.bin (renamed, truncated) and target/val.bin (its tail, copied)."""
        target.mkdir(parents=True, exist_ok=True)
        (target / META_NAME).unlink(missing_ok=True)  # until the new meta.json lands, the directory is incomplete
        itemsize = np.dtype(dtype).itemsize
        n_val = int(round(n_tokens * val_fraction))
        n_train = n_tokens - n_val
        ids = work / "ids.bin"
        val_tmp = target / f".val.bin.tmp-{os.getpid()}"
        with open(ids, "r+b") as src, open(val_tmp, "wb") as dst:
            src.seek(n_train * itemsize)
            shutil.copyfileobj(src, dst, 1 << 22)
            src.truncate(n_train * itemsize)
        os.replace(ids, target / "train.bin")
        os.replace(val_tmp, target / "val.bin")
        tokenizer.save(target)
        vocab_size = int(tokenizer.vocab_size)
        meta = {"format": FORMAT, "version": 1, "dtype": np.dtype(dtype).name, "vocab_size": vocab_size,
                "n_tokens": {"train": n_train, "val": n_val}, "n_chars": extra.pop("n_chars", None),
                "val_fraction": val_fraction, **extra}
        tmp = target / f".{META_NAME}.tmp-{os.getpid()}"
        tmp.write_text(json.dumps(meta, indent=2) + "\n")
        os.replace(tmp, target / META_NAME)  # written last: a directory with meta.json is complete
        shutil.rmtree(work, ignore_errors=True)
        return cls(target, meta)

    @classmethod
    def write(cls, ids: np.ndarray, tokenizer, directory: str | Path, val_fraction: float = 0.1, *,
              n_chars: int | None = None, extra: dict | None = None) -> TokenFile:
        """Write already-encoded ids (1-D) as a token file; `extra` is stored in meta.json (e.g. a fingerprint)."""
        _check_val_fraction(val_fraction)
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / META_NAME).unlink(missing_ok=True)  # until the new meta.json lands, the directory is incomplete
        vocab_size = int(tokenizer.vocab_size)
        dtype = _dtype_for(vocab_size)
        n_val = int(round(len(ids) * val_fraction))
        n_train = len(ids) - n_val
        _write_atomic(directory / "train.bin", ids[:n_train].astype(dtype))
        _write_atomic(directory / "val.bin", ids[n_train:].astype(dtype))
        tokenizer.save(directory)
        meta = {"format": FORMAT, "version": 1, "dtype": np.dtype(dtype).name, "vocab_size": vocab_size,
                "n_tokens": {"train": n_train, "val": n_val}, "n_chars": n_chars, "val_fraction": val_fraction,
                **(extra or {})}
        tmp = directory / f".{META_NAME}.tmp-{os.getpid()}"
        tmp.write_text(json.dumps(meta, indent=2) + "\n")
        os.replace(tmp, directory / META_NAME)  # written last: a directory with meta.json is complete
        return cls(directory, meta)

    @classmethod
    def prepare(cls, text, tokenizer, directory: str | Path, val_fraction: float = 0.1, *,
                min_tokens: dict[str, int] | None = None, purpose: str = "training", scan=None,
                progress: bool = True) -> tuple[TokenFile, bool]:
        """The token file of `text` (a str or a CorpusSource) under `directory`: reused when its fingerprint
        matches, else taken from the token store or built there (streaming, resumable) and linked in.

        Returns (token_file, reused). `min_tokens` ({"train": n, "val": m}) refuses a corpus too small for
        `purpose` before anything is written to `directory`; so does bad input (read once, first, by a
        CorpusScan; pass `scan` when one was made already). Under torchrun every rank calls this; a file lock in
        the store makes the first one build and the others reuse its ids.
        """
        directory = Path(directory)
        source = _as_source(text, "TokenFile.prepare")
        _check_val_fraction(val_fraction)
        scan = scan or streaming.CorpusScan(source, progress=progress)
        key = fingerprint_from(scan.digest, tokenizer, val_fraction)
        found = cls._matching(directory, key)
        if found is not None:
            found._require(min_tokens or {}, purpose)
            return found, True
        store = token_store()
        with _locked(store / f".lock-{key[:32]}"):
            found = cls._matching(directory, key)  # another rank may have linked it while this one waited
            if found is not None:
                found._require(min_tokens or {}, purpose)
                return found, True
            built = cls._matching(store / key, key)
            reused = built is not None
            if built is None:
                built = cls._build(source, scan, key, tokenizer, store / key, store / f".partial-{key}",
                                   val_fraction, progress)
            built._require(min_tokens or {}, purpose)  # the store keeps it; the run's folder gets nothing
            _install(built.directory, directory)
            return cls.open(directory), reused

    @classmethod
    def _matching(cls, directory: Path, key: str) -> TokenFile | None:
        try:
            existing = cls.open(directory)
        except InputError:  # missing, half-written or damaged
            return None
        return existing if existing.meta.get("fingerprint") == key else None

    def _require(self, min_tokens: dict[str, int], purpose: str) -> None:
        n = self.meta["n_tokens"]
        _require_sizes(n, min_tokens, purpose, n["train"] + n["val"], self.meta["val_fraction"])

    @classmethod
    def open(cls, directory: str | Path) -> TokenFile:
        directory = Path(directory)
        path = directory / META_NAME
        if not path.is_file():
            raise InputError(f"{directory} is not a token file directory (no {META_NAME}); "
                             "create one with TokenFile.build(text, tokenizer, directory)")
        try:
            meta = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise InputError(f"{path} is not valid JSON ({exc}); rebuild the token file") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise InputError(f"{path} is not an attnlab token file description (format {FORMAT!r})")
        return cls(directory, meta)

    @property
    def tokenizer(self):
        """The tokenizer the corpus was encoded with (saved beside the ids)."""
        from attnlab.data.tokenizers import load_tokenizer

        return load_tokenizer(self.directory)

    # -------------------------------------------------------------------------------------------- access
    def tokens(self, split: str) -> np.ndarray:
        """The read-only memory-mapped ids of one split, shape (n_tokens,)."""
        if split not in SPLITS:
            raise InputError(f"split={split!r}: allowed {', '.join(SPLITS)}")
        return self._data[split]

    def n_tokens(self, split: str) -> int:
        return len(self.tokens(split))

    def __repr__(self) -> str:
        n = self.meta["n_tokens"]
        return f"TokenFile({str(self.directory)!r}, train={n['train']}, val={n['val']}, dtype={self.dtype.name})"

    def _check_size(self, split: str, needed: int, what: str) -> np.ndarray:
        data = self.tokens(split)
        if len(data) < needed:
            raise InputError(f"the {split!r} split of {self.directory} holds {len(data)} tokens, fewer than the "
                             f"{needed} that {what} needs; use a bigger corpus, a smaller batch_size/seq_len"
                             + (" or a larger val_fraction" if split == "val" else ""))
        return data

    def sample(self, split: str, batch_size: int, length: int,
               generator: torch.Generator | None = None) -> torch.Tensor:
        """`batch_size` windows of `length` consecutive ids at uniform random starts: (batch, length) int64.

        The starts come from one torch.randint call on `generator`, so its saved state fixes the data order.
        """
        for name, value in (("batch_size", batch_size), ("length", length)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InputError(f"{name}={value!r} must be a positive integer")
        data = self._check_size(split, length, f"one window of length={length}")
        return self._windows_at(data, batch_size, length, generator)

    @staticmethod
    def _windows_at(data: np.ndarray, batch_size: int, length: int, generator) -> torch.Tensor:
        starts = torch.randint(0, len(data) - length + 1, (batch_size,), generator=generator).numpy()
        index = starts[:, None] + np.arange(length)  # (batch, length)
        return torch.from_numpy(data[index].astype(np.int64))

    def tiles(self, split: str, length: int, limit: int | None = None) -> torch.Tensor:
        """Non-overlapping windows of `length` ids from the start of a split: (n, length), at most `limit`.

        For evaluations that read whole windows (masked LM); the final ids that do not fill a window are left out.
        """
        if isinstance(length, bool) or not isinstance(length, int) or length <= 0:
            raise InputError(f"length={length!r} must be a positive integer")
        data = self._check_size(split, length, f"one window of length={length}")
        n = len(data) // length
        if limit is not None:
            n = min(n, int(limit))
        return torch.from_numpy(data[: n * length].astype(np.int64)).view(n, length)

    def get_batch(self, split: str, batch_size: int, seq_len: int,
                  generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """`batch_size` random windows for causal LM: x = ids[s : s+seq_len], y = ids[s+1 : s+seq_len+1].

        Returns two int64 tensors of shape (batch, seq_len). The start positions come from `generator`
        (torch.randint), so saving its state is enough to resume the exact data order.
        """
        for name, value in (("batch_size", batch_size), ("seq_len", seq_len)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InputError(f"{name}={value!r} must be a positive integer")
        data = self._check_size(split, batch_size * seq_len + 1,
                                f"one batch of batch_size={batch_size} x seq_len={seq_len} (+1 shifted target)")
        window = self._windows_at(data, batch_size, seq_len + 1, generator)  # (batch, seq_len + 1)
        return window[:, :-1], window[:, 1:]

    def windows(self, split: str, seq_len: int, limit: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Consecutive non-overlapping windows from the start of a split, for a deterministic evaluation.

        Window i covers ids[i*seq_len : (i+1)*seq_len] and targets one position later; the final tokens that
        do not fill a window are left out. Returns (x, y) of shape (n_windows, seq_len), at most `limit` windows.
        """
        if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len <= 0:
            raise InputError(f"seq_len={seq_len!r} must be a positive integer")
        data = self._check_size(split, seq_len + 1, f"one evaluation window of seq_len={seq_len} (+1 target)")
        n_windows = (len(data) - 1) // seq_len
        if limit is not None:
            n_windows = min(n_windows, int(limit))
        flat = torch.from_numpy(data[: n_windows * seq_len + 1].astype(np.int64))
        return flat[:-1].view(n_windows, seq_len), flat[1:].view(n_windows, seq_len)


def _check_val_fraction(val_fraction) -> None:
    if isinstance(val_fraction, bool) or not (isinstance(val_fraction, (int, float)) and 0.0 <= val_fraction < 1.0):
        raise InputError(f"val_fraction={val_fraction!r} must be a number in [0, 1)")


def _as_source(text, what: str) -> CorpusSource:
    if isinstance(text, CorpusSource):
        return text
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{what} got an empty corpus; give some text")
    return CorpusSource.from_text(text)


def _require_sizes(n_tokens: dict[str, int], min_tokens: dict[str, int], purpose: str, total: int,
                   val_fraction: float) -> None:
    short = [split for split, need in min_tokens.items() if n_tokens[split] < need]
    if short:
        needs = ", ".join(f"the {split} part needs >= {min_tokens[split]} (has {n_tokens[split]})"
                          for split in min_tokens)
        raise InputError(f"corpus has {total} tokens: too small for {purpose} ({needs} at "
                         f"val_fraction={val_fraction}); give more text or lower seq_len/batch_size")
