"""Tokenize a corpus of any size into token ids on disk, with bounded memory, at the tokenizer's own speed.

The corpus arrives as a stream of text blocks (attnlab.data.sources). `safe_chunks` cuts it into chunks of about
`chunk_chars` characters, only where every tokenizer attnlab builds would cut anyway (right after a newline that
sits between two non-space characters), so the ids equal those of one encode() over the whole text. Chunks go to
the tokenizer in bounded batches (`batch_chars`): the tokenizers library spreads one batch over every core it may
use (RAYON_NUM_THREADS), and only one batch's Encoding records exist at a time. A character vocabulary (what
`char_tokenizer` builds) skips the tokenizer: its ids are a table lookup on the code points, >100 MB/s.

`write_ids` appends the ids to one file in shards of one batch (1 Mi characters, ~0.4 s of BPE on one core),
each recorded with its sha256 as one line appended to a progress file, so an interrupted preparation resumes after
the last whole shard instead of starting over, losing at most one batch of work; Ctrl-C becomes a
PreparationInterrupted that says how much of the text was kept. It also hashes the text it encodes (each shard's,
and the whole): a corpus edited between the scan that made the fingerprint and the encode is refused, and a shard
encoded from other text than what is read now is never resumed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

from attnlab.errors import InputError

CHUNK_CHARS = 1 << 18  # 256 Ki characters per encode call
# 1 Mi characters per encode_batch: a 4 Mi batch held ~100 MB of Encoding records for byte-level BPE and put a
# 30 MB corpus's gpt-bpe preparation at 553 MB (tokenizing); 1 Mi: 463 MB, at the same speed (2026-12-07)
BATCH_CHARS = 1 << 20
SHARD_CHARS = 1 << 20  # 1 Mi characters per resumable shard (one batch): what an interruption may lose
HARD_LIMIT = 1 << 24  # a text without a newline cut for 16 Mi characters is cut before a space instead
PROGRESS_FILE = "progress.json"  # JSON lines: the plan, then one line per shard (appended: linear in the shards)

# after "x\n", before "y" (x, y not whitespace): no pre-tokenizer attnlab builds joins across this point
_SAFE_CUT = re.compile(r"(?<=\S\n)(?=\S)")
# fallback for text without such newlines: before one space between two non-space characters (GPT-2's regex
# starts a word with its one leading space; WordPiece splits on whitespace)
_SPACE_CUT = re.compile(r"(?<=\S)(?= \S)")


def safe_chunks(blocks: Iterable[str], chunk_chars: int = CHUNK_CHARS, any_cut: bool = False) -> Iterator[str]:
    """The concatenated `blocks`, cut into consecutive chunks of >= chunk_chars characters (the last shorter).

    any_cut: every cut is safe (a character vocabulary): blocks up to 4 * chunk_chars pass through as they are
    (no copy), longer ones are cut every chunk_chars."""
    if any_cut:
        for block in blocks:
            step = chunk_chars if len(block) > 4 * chunk_chars else max(1, len(block))
            yield from (block[i:i + step] for i in range(0, len(block), step))
        return
    buf = ""
    for block in blocks:
        buf = buf + block if buf else block
        while len(buf) >= chunk_chars:
            match = _SAFE_CUT.search(buf, chunk_chars)
            if match is None and len(buf) >= HARD_LIMIT:
                match = _SPACE_CUT.search(buf, chunk_chars) or _SAFE_CUT.search(buf, 1)
            if match is None:
                if len(buf) < 4 * HARD_LIMIT:
                    break  # wait for more text
                cut = chunk_chars  # no whitespace at all in 64 Mi characters: memory comes first
            else:
                cut = match.start()
            yield buf[:cut]
            buf = buf[cut:]
    if buf:
        yield buf


# ------------------------------------------------------------------------------------------------ encoders
class ChunkEncoder:
    """Token ids of text chunks for one tokenizer: a code-point table for a character vocabulary, else the
    tokenizers library's batch encoding (without offsets when it offers encode_batch_fast)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.hf = tokenizer, tokenizer.hf
        self.dtype = dtype_for(int(tokenizer.vocab_size))
        self.table, self.added, self.known = _char_table(self.hf, self.dtype)
        self.is_char = self.table is not None
        self._batch = getattr(self.hf, "encode_batch_fast", None) or self.hf.encode_batch

    def encode(self, chunks: list[str]) -> np.ndarray:
        """The ids of the chunks, concatenated: (n_tokens,) in the token file's dtype."""
        if self.is_char:
            return np.concatenate([self._lookup(c) for c in chunks]) if chunks else np.empty(0, self.dtype)
        try:
            encodings = self._batch(chunks, add_special_tokens=False)
        except Exception as exc:  # e.g. a vocabulary without [UNK] meeting an unknown character
            raise InputError(f"cannot encode the corpus with this tokenizer: {exc}") from None
        if not encodings:
            return np.empty(0, self.dtype)
        return np.concatenate([np.asarray(e.ids, dtype=self.dtype) for e in encodings])

    def _lookup(self, chunk: str) -> np.ndarray:
        if any(token in chunk for token in self.added):  # a special token written in the text: the library's way
            return self._slow(chunk)
        try:
            if chunk.isascii():
                codes = np.frombuffer(chunk.encode("ascii"), dtype=np.uint8)
            else:
                codes = np.frombuffer(chunk.encode("utf-32-le"), dtype=np.uint32)
        except UnicodeEncodeError:  # a lone surrogate (only a str built in Python can hold one)
            return self._slow(chunk)
        if self.known is not None:  # no [UNK]: a character outside the vocabulary is an error
            known = self.known[codes]
            if not known.all():
                bad = chunk[int(np.argmin(known))]
                raise InputError(f"cannot encode the corpus with this tokenizer: the character {bad!r} is not in "
                                 "its vocabulary, and it has no [UNK]")
        return self.table[codes]

    def _slow(self, chunk: str) -> np.ndarray:
        try:
            ids = self.hf.encode(chunk, add_special_tokens=False).ids
        except Exception as exc:
            raise InputError(f"cannot encode the corpus with this tokenizer: {exc}") from None
        return np.asarray(ids, dtype=self.dtype)


def _char_table(hf, dtype) -> tuple[np.ndarray | None, list[str], np.ndarray | None]:
    """(code point -> id table, added tokens' strings, code point -> in vocabulary) for a one-character-per-token
    vocabulary, (None, [], None) for any other tokenizer. Code points outside the vocabulary map to [UNK]; without
    an [UNK] the third table (None with one) says which code points are known."""
    try:
        spec = json.loads(hf.to_str())
    except Exception:
        return None, [], None
    model, pre = spec.get("model") or {}, spec.get("pre_tokenizer") or {}
    pattern = (pre.get("pattern") or {}).get("Regex")
    if (model.get("type") != "WordLevel" or spec.get("normalizer") is not None or pre.get("type") != "Split"
            or pattern != r"[\s\S]" or pre.get("behavior") != "Isolated" or pre.get("invert")):
        return None, [], None
    added = [t["content"] for t in spec.get("added_tokens") or []]
    vocab = model.get("vocab") or {}
    unk = model.get("unk_token")
    table = np.full(0x110000, vocab.get(unk, 0), dtype=dtype)
    known = None if unk in vocab else np.zeros(0x110000, dtype=bool)
    for token, i in vocab.items():
        if len(token) == 1:
            table[ord(token)] = i
            if known is not None:
                known[ord(token)] = True
    return table, [t for t in added if t], known


def dtype_for(vocab_size: int):
    return np.uint16 if vocab_size <= np.iinfo(np.uint16).max + 1 else np.uint32


# ------------------------------------------------------------------------------------------------ progress
class Progress:
    """Bytes done, rate and ETA on stderr, at most every `every` seconds (nothing for a job done sooner)."""

    def __init__(self, what: str, total: int, enabled: bool = True, every: float = 2.0, stream=None):
        enabled = enabled and os.environ.get("RANK", "0") == "0"  # under torchrun, rank 0 speaks for all
        self.what, self.total, self.enabled, self.every = what, max(1, total), enabled, every
        self.done, self.start = 0, time.perf_counter()
        self.last = self.start
        self.stream = stream or sys.stderr
        self.printed = False

    def __call__(self, n: int) -> None:
        self.done += n
        now = time.perf_counter()
        if self.enabled and now - self.last >= self.every:
            self.last = now
            self.show(now)

    def show(self, now: float | None = None, final: bool = False) -> None:
        now = now or time.perf_counter()
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        tail = f"in {elapsed:.1f} s" if final else f"ETA {eta:.0f} s"
        print(f"{self.what}: {self.done / 1e6:,.1f} / {self.total / 1e6:,.1f} MB, {rate / 1e6:.1f} MB/s, {tail}",
              file=self.stream, flush=True)
        self.printed = True

    def finish(self) -> None:
        if self.enabled and self.printed:
            self.show(final=True)


# ------------------------------------------------------------------------------------------------ shards
def _sha256_of(path: Path, start: int, length: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        f.seek(start)
        while length > 0:
            data = f.read(min(length, 1 << 22))
            if not data:
                break
            digest.update(data)
            length -= len(data)
    return digest.hexdigest()


class StaleProgress(Exception):
    """The shards an interrupted preparation left were encoded from other text than the corpus holds now (it was
    edited during that preparation); the caller starts the encode over."""


class PreparationInterrupted(KeyboardInterrupt):
    """Ctrl-C (any KeyboardInterrupt) while a corpus was being encoded, saying what was kept: `kept` bytes of its
    text (UTF-8) have their ids written and recorded, so the same preparation started again continues after them;
    `total`: the text's bytes (None when unknown). Still a KeyboardInterrupt: whatever stops on Ctrl-C stops."""

    def __init__(self, kept: int, total: int | None, corpus: str):
        super().__init__(kept, total, corpus)
        self.kept, self.total, self.corpus = kept, total, corpus

    def __str__(self) -> str:
        if not self.kept:
            return f"nothing of {self.corpus}{f' ({_amount(self.total)})' if self.total else ''} kept"
        return f"{_amount(self.kept, self.total)} of {self.corpus} encoded and kept"


def _amount(n: int, total: int | None = None) -> str:
    """'33.3 of 50.1 MB' ('1,280 of 4,975 bytes' under a megabyte); 'n of' left out without a total."""
    scale, unit = (1e6, "MB") if max(n, total or 0) >= 1e6 else (None, "bytes")
    show = (lambda b: f"{b / scale:,.1f}") if scale else (lambda b: f"{b:,}")
    return f"{show(n)} of {show(total)} {unit}" if total is not None else f"{show(n)} {unit}"


def _text_bytes(chunk: str) -> bytes:
    return chunk.encode("utf-8", errors="surrogatepass")  # what CorpusScan hashes, so the digests compare


def _read_progress(work: Path, plan: dict) -> list[dict]:
    """The shard records in work's progress file when its first line is `plan` (else []), up to the first line
    that is not a whole record (one an interruption cut short)."""
    try:
        lines = (work / PROGRESS_FILE).read_text().splitlines()
        header = json.loads(lines[0]) if lines else None
    except (OSError, ValueError):
        return []
    if not isinstance(header, dict) or {k: header.get(k) for k in plan} != plan:
        return []  # another preparation's, or one written as a single object by an older attnlab
    records = []
    for line in lines[1:]:
        try:
            record = json.loads(line)
        except ValueError:
            break
        if not isinstance(record, dict):
            break
        records.append(record)
    return records


def _write_progress(work: Path, plan: dict, shards: list[dict]) -> None:
    """The progress file holding `plan` and `shards` only (atomically): what a resume keeps, and nothing after."""
    tmp = work / f".{PROGRESS_FILE}.tmp"
    tmp.write_text("".join(json.dumps(line) + "\n" for line in [plan, *shards]))
    os.replace(tmp, work / PROGRESS_FILE)


def _resume_point(work: Path, plan: dict) -> tuple[list[dict], int]:
    """The shards of an interrupted preparation that are whole and match their checksums, and their bytes."""
    ids = work / "ids.bin"
    kept, offset = [], 0
    size = ids.stat().st_size if ids.is_file() else 0
    for shard in _read_progress(work, plan):
        try:
            length, n_chunks, n_text = int(shard["bytes"]), int(shard["chunks"]), int(shard["text_bytes"])
            if not isinstance(shard["text_sha256"], str) or n_chunks <= (kept[-1]["chunks"] if kept else 0) \
                    or min(length, n_text) < 0:
                break  # written before shards recorded their text, or chunk counts that do not grow
            if offset + length > size or _sha256_of(ids, offset, length) != shard["sha256"]:
                break
        except (KeyError, TypeError, ValueError):
            break
        kept.append({**shard, "bytes": length, "chunks": n_chunks, "text_bytes": n_text})
        offset += length
    return kept, offset


def write_ids(chunks: Iterator[str], encoder: ChunkEncoder, work: Path, plan: dict,
              batch_chars: int | None = None, shard_chars: int | None = None,
              on_chunk: Callable[[str], None] | None = None, text_sha256: str | None = None,
              corpus: str = "the corpus", text_bytes: int | None = None) -> tuple[int, bool]:
    """Encode `chunks` into work/ids.bin shard by shard; returns (n_tokens, resumed).

    `plan` (the fingerprint, dtype, chunk size) must match the progress file for its shards to be kept. The
    shards already written and verified are skipped: their chunks are read (and passed to on_chunk) but not
    tokenized again; their text is hashed and compared with the shard's, and StaleProgress is raised (the progress
    file removed) when one differs. `text_sha256`: the sha256 the scan saw (the fingerprint's); when the text
    encoded hashes otherwise, the corpus (named `corpus`) changed during preparation and is refused, since ids of
    one text would be stored under the fingerprint of another. A KeyboardInterrupt comes out as
    PreparationInterrupted, with the bytes of text the recorded shards cover (of `text_bytes`, the scan's)."""
    batch_chars, shard_chars = batch_chars or BATCH_CHARS, shard_chars or SHARD_CHARS
    work.mkdir(parents=True, exist_ok=True)
    shards, offset = _resume_point(work, plan)
    _write_progress(work, plan, shards)  # new shards are appended after the kept ones
    ids_path = work / "ids.bin"
    skip = shards[-1]["chunks"] if shards else 0
    itemsize = np.dtype(encoder.dtype).itemsize
    with open(ids_path, "r+b" if ids_path.exists() else "wb") as out:
        out.truncate(offset)
        out.seek(offset)
        n_chunks, batch, batch_len, shard_chars_seen, shard_text = 0, [], 0, 0, 0
        digest = hashlib.sha256()
        shard_bytes = 0
        text_all, text_shard = hashlib.sha256(), hashlib.sha256()  # of the text read: the whole, this shard's
        checking = iter(shards[:])  # the kept shards, whose text is compared as their chunks go by
        pending = next(checking, None)

        def flush_batch():
            nonlocal batch, batch_len, shard_bytes
            if batch:
                data = encoder.encode(batch).tobytes()
                out.write(data)
                digest.update(data)
                shard_bytes += len(data)
            batch, batch_len = [], 0

        def close_shard():
            """Record the shard once its ids are written. No fsync: a resume hashes every shard's ids before
            keeping it, so ids a crash never let reach the disk are encoded again, and at this grain (a batch) an
            fsync per shard would cost a fast tokenizer much of its speed."""
            nonlocal digest, shard_bytes, shard_chars_seen, text_shard, shard_text
            flush_batch()
            out.flush()
            record = {"chunks": n_chunks, "bytes": shard_bytes, "sha256": digest.hexdigest(),
                      "text_sha256": text_shard.hexdigest(), "text_bytes": shard_text}
            with open(work / PROGRESS_FILE, "a") as log:
                log.write(json.dumps(record) + "\n")
            shards.append(record)
            digest, shard_bytes, shard_chars_seen, text_shard, shard_text = hashlib.sha256(), 0, 0, \
                hashlib.sha256(), 0

        try:
            for chunk in chunks:
                n_chunks += 1
                if on_chunk is not None:
                    on_chunk(chunk)
                data = _text_bytes(chunk)
                text_all.update(data)
                text_shard.update(data)
                if n_chunks <= skip:
                    if n_chunks == pending["chunks"]:  # the end of a kept shard: was it encoded from this text?
                        if text_shard.hexdigest() != pending["text_sha256"]:
                            (work / PROGRESS_FILE).unlink(missing_ok=True)
                            raise StaleProgress(f"{work}: a kept shard was encoded from other text")
                        pending, text_shard = next(checking, None), hashlib.sha256()
                    continue
                batch.append(chunk)
                batch_len += len(chunk)
                shard_chars_seen += len(chunk)
                shard_text += len(data)
                if batch_len >= batch_chars:
                    flush_batch()
                if shard_chars_seen >= shard_chars:
                    close_shard()
            if pending is not None:  # the text ended inside the kept shards: they hold ids of a longer text
                (work / PROGRESS_FILE).unlink(missing_ok=True)
                raise StaleProgress(f"{work}: the kept shards cover more text than the corpus holds")
            if batch or shard_bytes:
                close_shard()
        except KeyboardInterrupt:
            raise PreparationInterrupted(sum(shard["text_bytes"] for shard in shards), text_bytes, corpus) from None
        total_bytes = out.tell()
    if text_sha256 is not None and text_all.hexdigest() != text_sha256:
        (work / PROGRESS_FILE).unlink(missing_ok=True)  # these ids belong to no fingerprint: never resumed
        raise InputError(f"{corpus} changed while it was being prepared (the text encoded differs from the text "
                         "scanned a moment before); leave the corpus unchanged until the run starts, then run again")
    return total_bytes // itemsize, skip > 0


# ------------------------------------------------------------------------------------------------ scanning
class CorpusScan:
    """One pass over a corpus before it is tokenized: the sha256 of its text (what the token file's fingerprint
    starts from), its size in characters and in UTF-8 bytes, and, when asked, the set of its characters (for
    char_tokenizer). Bad input is found here, before anything is written."""

    def __init__(self, source, chars: bool = False, progress: bool = True):
        self.digest = hashlib.sha256()
        self.n_chars = self.n_bytes = 0
        seen = np.zeros(0x110000, dtype=bool) if chars else None
        meter = Progress(f"reading {source.path}", source.n_bytes(), enabled=progress)
        for block in source.blocks(meter):
            data = block.encode("utf-8", errors="surrogatepass")
            self.digest.update(data)
            self.n_chars += len(block)
            self.n_bytes += len(data)
            if seen is not None:
                if len(data) == len(block):  # ASCII
                    seen[np.frombuffer(data, dtype=np.uint8)] = True
                else:
                    seen[np.frombuffer(block.encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32)] = True
        meter.finish()
        self.chars = None if seen is None else [chr(c) for c in np.flatnonzero(seen)]


def paragraphs_of(blocks: Iterable[str]) -> Iterator[str]:
    """The blank-line-separated paragraphs of a stream (non-blank ones), as text.split("\\n\\n") would give."""
    carry = ""
    for block in blocks:
        parts = (carry + block).split("\n\n")
        carry = parts.pop()
        yield from (part for part in parts if part.strip())
    if carry.strip():
        yield carry
