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
resumes after its last recorded shard (one batch, 1 Mi characters). Builds live in a private token store
($ATTNLAB_CACHE_DIR/tokens, default ~/.cache/attnlab/tokens) under their fingerprint and are copied into a run's
folder, so another run, or another recipe with the same tokenizer and split, reuses them; nothing is written to
the run's folder until the token file is whole. Copied, never hard-linked: a link would let whoever can write the
run's folder (a group-shared one) rewrite the store's ids.
A store build records the sha256 of each of its files (meta.json included) in its `.sha256.json`, a dot-file
no attnlab version ever put into a run's folder (so no old hard link can rewrite it), and it is copied only while
its bytes hash to those: one that does not (changed since, or built before checksums were kept) is rebuilt.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch

from attnlab.data import streaming
from attnlab.data.sources import CorpusSource
from attnlab.errors import InputError
from attnlab.files import CacheWarning, warn_cache
from attnlab.heap import release_freed_memory
from attnlab.layers import kernel_build

META_NAME = "meta.json"
CHECKSUMS_NAME = ".sha256.json"  # in a store build: {file name: sha256} of every file a run's folder receives
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
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)  # never through a link
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def token_store() -> Path:
    """The private folder that holds finished and half-built token files by fingerprint: <cache>/tokens (made
    0700), cache = $ATTNLAB_CACHE_DIR or ~/.cache/attnlab, as for the kernels.

    Its ids are read as this user's training data, so whoever could write it, or any folder above it (and so
    rename it away and put their own in its place), could choose what this user trains on: the whole folder
    chain gets the kernel builder's check (kernel_build.make_private_dir). A refused folder is said once, in
    one warning line, and this process keeps its builds in a new private temporary folder instead (deleted at
    exit; nothing is reused from, or written to, the refused one), as the kernel builder does. Ranks started
    together cannot share such a folder: they get a one-line error instead."""
    store = kernel_build.cache_root() / "tokens"
    problem = kernel_build.make_private_dir(store)
    if problem is None:
        return store
    if os.environ.get("WORLD_SIZE", "1").strip() not in ("", "0", "1"):
        raise InputError(f"not keeping token files there: {problem}; set ATTNLAB_CACHE_DIR to a folder only you "
                         "can write (ranks started together share the token store)")
    return _private_temporary_store(problem)


@functools.cache
def _private_temporary_store(problem: str) -> Path:
    """One warning and one fresh private temporary token store per refusal, removed when the process ends."""
    warnings.warn(f"attnlab: not keeping token files there: {problem}; building them in a new private temporary "
                  "folder instead (not reused by later runs)", CacheWarning, stacklevel=4)
    store = Path(tempfile.mkdtemp(prefix="attnlab-tokens-"))  # 0700, a name nobody can guess
    atexit.register(shutil.rmtree, store, ignore_errors=True)
    _TEMPORARY_STORES.add(store)
    return store


_TEMPORARY_STORES: set[Path] = set()  # stores removed at exit: an interrupted build there keeps nothing


def _usable_store() -> Path:
    """token_store(), unless this user cannot write it (a read-only cache folder that is otherwise private): then,
    with one warning, a private temporary one, and the run goes on without reusing builds."""
    store = token_store()
    if os.access(store, os.W_OK | os.X_OK):
        return store
    problem = f"{store} cannot be written by this user"
    if os.environ.get("WORLD_SIZE", "1").strip() not in ("", "0", "1"):
        raise InputError(f"not keeping token files there: {problem}; set ATTNLAB_CACHE_DIR to a folder only you "
                         "can write (ranks started together share the token store)")
    return _private_temporary_store(problem)


COPY_BLOCK = 1 << 22  # 4 MiB per read while copying and hashing


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(COPY_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _file_digests(directory: Path) -> dict[str, str]:
    """{name: sha256} of the files a token file consists of (every regular file but meta.json and dot-files):
    what a store build's CHECKSUMS_NAME records (with meta.json's), so a copy can be checked byte for byte."""
    return {item.name: _sha256_file(item) for item in sorted(directory.iterdir())
            if item.is_file() and not item.is_symlink() and item.name != META_NAME and not item.name.startswith(".")}


def _copy_checked(src: Path, dst: Path, sha256: str | None) -> bool:
    """Copy src to dst (a temporary name, renamed), hashing the very bytes written; False (nothing at dst
    changed) when they do not hash to `sha256`. One pass, so no one can swap the file between check and copy;
    the temporary file is created exclusively, never opened through a link someone left in dst's folder."""
    tmp = dst.with_name(f".{dst.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    digest = hashlib.sha256()
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    with open(os.open(src, os.O_RDONLY | nofollow), "rb") as source, \
            open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o644), "wb") as out:
        while block := source.read(COPY_BLOCK):
            digest.update(block)
            out.write(block)
    if sha256 is not None and digest.hexdigest() != sha256:
        tmp.unlink(missing_ok=True)
        return False
    os.replace(tmp, dst)
    return True


def _recorded_digests(built: Path) -> dict[str, str] | None:
    """The {name: sha256} a store build recorded, or None when it has none (an older attnlab built it) or it is
    not what _split writes (plain file names, train.bin, val.bin and meta.json among them)."""
    path = built / CHECKSUMS_NAME
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 1 << 20:
            return None
        digests = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    needed = {f"{split}.bin" for split in SPLITS} | {META_NAME}
    if not isinstance(digests, dict) or not needed <= set(digests) or not all(
            isinstance(name, str) and name == Path(name).name and not name.startswith(".") and isinstance(value, str)
            for name, value in digests.items()):
        return None
    return digests


def _install(built: Path, directory: Path) -> bool:
    """Copy the store build `built` into `directory`, each file checked against the sha256 the build recorded:
    meta.json removed first, copied last. False when a file does not match (or the build records no checksums):
    `directory` then has no meta.json, so nothing there is taken for a token file."""
    digests = _recorded_digests(built)
    if digests is None:
        return False
    directory.mkdir(parents=True, exist_ok=True)
    (directory / META_NAME).unlink(missing_ok=True)
    for name in sorted(digests, key=lambda name: name == META_NAME):  # meta.json last
        src = built / name
        if src.is_symlink() or not src.is_file() or not _copy_checked(src, directory / name, digests[name]):
            return False
    return True


class TokenFile:
    """Token ids of one corpus on disk: `train` and `val` splits, random batches and evaluation windows."""

    origin: str | None = None  # where prepare() found reused ids: "the run folder" or "the token store"

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
               progress: bool, checksums: bool = False) -> TokenFile:
        """Encode `source` into work/ (resuming what a previous attempt left there), then split it into target/.
        checksums: record each file's sha256 in meta.json (a store build: copies from it are checked)."""
        encoder = streaming.ChunkEncoder(tokenizer)
        plan = {"fingerprint": key, "dtype": np.dtype(encoder.dtype).name, "chunk_chars": streaming.CHUNK_CHARS,
                "any_cut": encoder.is_char}
        meter = streaming.Progress(f"tokenizing {source.path}", source.n_bytes(), enabled=progress)
        expected = dict(text_sha256=scan.digest.hexdigest(), corpus=str(source.path),
                        text_bytes=getattr(scan, "n_bytes", None))
        try:
            chunks = streaming.safe_chunks(source.blocks(meter), streaming.CHUNK_CHARS, any_cut=encoder.is_char)
            n_tokens, _ = streaming.write_ids(chunks, encoder, work, plan, **expected)
        except streaming.StaleProgress:  # an interrupted attempt encoded other text: start over, once
            shutil.rmtree(work, ignore_errors=True)
            chunks = streaming.safe_chunks(source.blocks(meter), streaming.CHUNK_CHARS, any_cut=encoder.is_char)
            n_tokens, _ = streaming.write_ids(chunks, encoder, work, plan, **expected)
        release_freed_memory()  # the batch encoder's Encoding records, freed but kept resident
        meter.finish()
        return cls._split(work, target, tokenizer, encoder.dtype, n_tokens, val_fraction,
                          {"n_chars": scan.n_chars, "fingerprint": key}, checksums)

    @classmethod
    def _split(cls, work: Path, target: Path, tokenizer, dtype, n_tokens: int, val_fraction: float,
               extra: dict, checksums: bool = False) -> TokenFile:
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
        text = json.dumps(meta, indent=2) + "\n"
        if checksums:  # one more read of what was just written (from the page cache, mostly); before meta.json
            digests = {**_file_digests(target), META_NAME: hashlib.sha256(text.encode()).hexdigest()}
            record = target / f"{CHECKSUMS_NAME}.tmp-{os.getpid()}"
            record.write_text(json.dumps(digests, indent=2) + "\n")
            os.replace(record, target / CHECKSUMS_NAME)
        tmp = target / f".{META_NAME}.tmp-{os.getpid()}"
        tmp.write_text(text)
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
        matches, else taken from the token store (when its files still hash to the sha256 its meta.json records)
        or built there (streaming, resumable), and copied in.

        Returns (token_file, reused); token_file.origin says where reused ids came from ("the run folder" or "the
        token store"; None when built now). `min_tokens` ({"train": n, "val": m}) refuses a corpus too small for
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
            return found._from("the run folder"), True
        store = _usable_store()
        with _locked(store / f".lock-{key[:32]}"):
            found = cls._matching(directory, key)  # another rank may have copied it while this one waited
            if found is not None:
                found._require(min_tokens or {}, purpose)
                return found._from("the run folder"), True
            entry = store / key
            built = cls._matching(entry, key)
            if built is not None:
                built._require(min_tokens or {}, purpose)  # the store keeps it; the run's folder gets nothing
                if _install(entry, directory):
                    return cls.open(directory)._from("the token store"), True
                warn_cache(f"the token store's build {entry} does not match the sha256 recorded when it was built "
                           "(changed since, or built by an attnlab that kept none); building it again")
                shutil.rmtree(entry, ignore_errors=True)  # new files, no link to whatever changed the old ones
            try:
                built = cls._build(source, scan, key, tokenizer, entry, store / f".partial-{key}", val_fraction,
                                   progress, checksums=True)
            except streaming.PreparationInterrupted as exc:
                if store in _TEMPORARY_STORES:  # deleted when this process ends: what was encoded is not kept
                    exc.kept = 0
                raise
            built._require(min_tokens or {}, purpose)
            if not _install(entry, directory):
                raise InputError(f"the token store's build {entry} changed while it was copied to {directory}; "
                                 "run again (and check who else can write that folder)")
            return cls.open(directory), False

    def _from(self, origin: str) -> TokenFile:
        """This token file, marked as reused from `origin` (what the run's summary line says)."""
        self.origin = origin
        return self

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

    def windows(self, split: str, seq_len: int, limit: int | None = None,
                spread: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Non-overlapping windows of a split, for a deterministic evaluation.

        Window i covers ids[i*seq_len : (i+1)*seq_len] and targets one position later; the final tokens that
        do not fill a window are left out. Returns (x, y) of shape (n_windows, seq_len), at most `limit` windows:
        the first `limit` ones, or with spread=True `limit` of them evenly spaced over the whole split (window
        (j * n) // limit for j < limit), so that a bounded evaluation of a large corpus samples all of its held-out
        part rather than its first pages (one source, often one document, in a concatenated corpus).
        """
        if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len <= 0:
            raise InputError(f"seq_len={seq_len!r} must be a positive integer")
        data = self._check_size(split, seq_len + 1, f"one evaluation window of seq_len={seq_len} (+1 target)")
        n_windows = (len(data) - 1) // seq_len
        if limit is not None and int(limit) < n_windows and spread:
            starts = (np.arange(int(limit), dtype=np.int64) * n_windows // int(limit)) * seq_len  # (limit,)
            rows = torch.from_numpy(data[starts[:, None] + np.arange(seq_len + 1)].astype(np.int64))  # (limit, seq+1)
            return rows[:, :-1], rows[:, 1:]
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
