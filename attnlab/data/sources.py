"""A corpus read as a stream of text blocks, from the formats people keep text in, with bounded memory.

`CorpusSource(path, text_field="text")` names a file or a folder of one format:

- .txt (or any other single file): the file's UTF-8 text is one document;
- .txt.gz: the same, gzip'd;
- .jsonl / .jsonl.gz: one JSON object per line, its `text_field` string is one document;
- .parquet: the `text_field` column, one document per row (pyarrow, the `data` extra);
- a Hugging Face `datasets` folder written by `save_to_disk` (the `datasets` library, the `data` extra).

`blocks()` yields the corpus as consecutive strings whose concatenation is the documents joined by a blank line
("\\n\\n", whitespace-only documents left out): for .txt files that is exactly the string `read_text` returns, so
token files and fingerprints made by streaming equal those made from the whole text. Nothing holds more than one
block (about `BLOCK_BYTES`) of a file at a time, except a JSON line, which is parsed whole: a line is read with a
bound, `MAX_LINE_BYTES` (16 MiB, newline not counted), so a file without newlines (or a .gz that expands to one
endless line) cannot fill memory. Bad input (a byte that is not UTF-8, a JSON line without the field or longer
than MAX_LINE_BYTES, a damaged .gz, an empty corpus, a folder mixing formats) raises an InputError naming the
file and the line (or row).
"""

from __future__ import annotations

import codecs
import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path

from attnlab.errors import InputError

BLOCK_BYTES = 1 << 20  # 1 MiB of a file per read
MAX_LINE_BYTES = 1 << 24  # 16 MiB: the longest JSON line read (a line is one document, parsed whole)
# what reading a file may raise: a damaged .gz raises zlib.error (not an OSError) for a corrupt deflate stream
READ_ERRORS = (OSError, EOFError, zlib.error)
SEPARATOR = "\n\n"  # between two documents, as read_text joins files
FORMATS = {"txt": "text", "txt.gz": "gzip'd text", "jsonl": "JSON lines", "jsonl.gz": "gzip'd JSON lines",
           "parquet": "Parquet"}
DATASETS_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")
DATA_EXTRA = "pip install 'attnlab[data]'"


def file_format(path: Path) -> str | None:
    """The format of a file by its name (.txt, .txt.gz, .jsonl, .jsonl.gz, .parquet), None for any other name."""
    name = path.name.lower()
    for fmt in sorted(FORMATS, key=len, reverse=True):  # .jsonl.gz before .gz-less names
        if name.endswith("." + fmt):
            return fmt
    return None


def is_saved_dataset(path: Path) -> bool:
    """A folder written by `datasets`' save_to_disk (a Dataset or a DatasetDict)."""
    return path.is_dir() and any((path / marker).is_file() for marker in DATASETS_MARKERS)


def _require(module: str, what: str):
    """Import an optional library lazily; missing, one line naming the extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"{what} needs the {module!r} library, which is not installed; install the data extra "
                         f"with `{DATA_EXTRA}` (or `pip install {module}`)") from None


class CorpusSource:
    """A corpus on disk (file or folder) or in memory (`CorpusSource.from_text`), read block by block."""

    def __init__(self, path: str | Path, text_field: str = "text"):
        if not isinstance(text_field, str) or not text_field:
            raise InputError(f"text_field={text_field!r} must name the field (column) that holds the text")
        self.path, self.text_field, self._text = Path(path).expanduser(), text_field, None
        self.kind, self.files = self._discover()

    @classmethod
    def from_text(cls, text: str, name: str = "<text>") -> CorpusSource:
        """A corpus already in memory (the CPython docs, a test's string): one document."""
        source = cls.__new__(cls)
        source.path, source.text_field, source._text = Path(name), "text", text
        source.kind, source.files = "memory", []
        return source

    def __repr__(self) -> str:
        return f"CorpusSource({str(self.path)!r}, kind={self.kind!r}, files={len(self.files)})"

    # ------------------------------------------------------------------------------------------ discovery
    def _discover(self) -> tuple[str, list[Path]]:
        path = self.path
        allowed = "a file or folder of .txt, .txt.gz, .jsonl, .jsonl.gz or .parquet, or a saved `datasets` folder"
        if not path.exists():
            raise InputError(f"{path} does not exist; give {allowed}")
        if not path.is_dir() and not path.is_file():
            raise InputError(f"{path} is not a regular file (a device, FIFO or socket); give {allowed}")
        if is_saved_dataset(path):
            return "datasets", [path]
        if path.is_file():
            return file_format(path) or "txt", [path]
        found: dict[str, list[Path]] = {}
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            fmt = file_format(file)
            if fmt is not None:
                found.setdefault(fmt, []).append(file)
        if not found:
            raise InputError(f"{path} is a folder without any .txt, .txt.gz, .jsonl, .jsonl.gz or .parquet file; "
                             "put the corpus in files of one of those formats")
        if len(found) > 1:
            (fa, a), (fb, b) = list(found.items())[:2]
            raise InputError(f"{path} mixes formats ({a[0].name} is {FORMATS[fa]}, {b[0].name} is {FORMATS[fb]}); "
                             "a corpus folder holds files of one format")
        (fmt, files), = found.items()
        return fmt, files

    def n_bytes(self) -> int:
        """Bytes on disk (compressed for .gz and Parquet): what progress counts against."""
        if self.kind == "memory":
            return len(self._text.encode("utf-8", errors="surrogatepass"))
        if self.kind == "datasets":
            return sum(p.stat().st_size for p in self.path.rglob("*.arrow") if p.is_file())
        return sum(p.stat().st_size for p in self.files)

    # -------------------------------------------------------------------------------------------- reading
    def blocks(self, progress=None) -> Iterator[str]:
        """The corpus as consecutive strings (documents joined by a blank line); `progress(n)` gets the bytes
        read on disk as they are read. Raises InputError on bad input, and when the corpus holds no text."""
        progress = progress or (lambda n: None)
        pending_separator = False  # a separator goes before every document after the first
        empty = True
        for document in self._documents(progress):
            lead = []  # leading whitespace waits until the document shows some text
            started = False
            for block in document:
                if not started:
                    if not block.strip():
                        lead.append(block)
                        continue
                    started = True
                    if pending_separator:
                        yield SEPARATOR
                    yield from lead
                    lead = []
                yield block
            if started:
                pending_separator, empty = True, False
        if empty:
            raise InputError(f"{self.path} holds no text; a corpus needs some")

    def _documents(self, progress) -> Iterator[Iterator[str]]:
        if self.kind == "memory":
            progress(self.n_bytes())
            yield iter([self._text])
        elif self.kind in ("txt", "txt.gz"):
            for file in self.files:
                yield _text_blocks(file, self.kind.endswith(".gz"), progress)
        elif self.kind in ("jsonl", "jsonl.gz"):
            for file in self.files:
                yield from ([text] for text in _jsonl_texts(file, self.kind.endswith(".gz"), self.text_field,
                                                            progress))
        elif self.kind == "parquet":
            for file in self.files:
                yield from ([text] for text in _parquet_texts(file, self.text_field, progress))
        elif self.kind == "datasets":
            yield from ([text] for text in _dataset_texts(self.path, self.text_field, progress))


class _Reader:
    """A file opened for bytes (gunzipped when `gz`) that reports the bytes it has read *on disk* to `progress`."""

    def __init__(self, file: Path, gz: bool, progress):
        if not file.is_file():
            raise InputError(f"{file} is not a regular file (a device, FIFO or socket)")
        self.file, self.gz, self.progress, self.seen = file, gz, progress, 0
        self.raw = open(file, "rb")
        self.handle = gzip.GzipFile(fileobj=self.raw, mode="rb") if gz else self.raw

    def report(self) -> None:
        here = self.raw.tell()
        self.progress(here - self.seen)
        self.seen = here

    def failed(self, exc: Exception) -> InputError:
        """One line for a read that failed: a damaged .gz (BadGzipFile, EOFError, zlib.error) or an OS error."""
        if self.gz:
            kind = "zlib.error" if isinstance(exc, zlib.error) else type(exc).__name__
            return InputError(f"{self.file} cannot be read as gzip ({kind}: damaged or truncated); "
                              "compress it again, or give the uncompressed file")
        reason = getattr(exc, "strerror", None) or exc
        return InputError(f"{self.file} cannot be read ({type(exc).__name__}: {reason})")

    def close(self) -> None:
        self.handle.close()
        self.raw.close()


def _not_utf8(file: Path, line: int, exc: UnicodeDecodeError) -> InputError:
    return InputError(f"{file} line {line}: not UTF-8 text ({exc.reason}); save the corpus as UTF-8")


def _text_blocks(file: Path, gz: bool, progress) -> Iterator[str]:
    """A text file's characters in blocks of about BLOCK_BYTES, decoded incrementally (strict UTF-8)."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    line = 1  # the line the next block starts on, for an error message
    reader = _Reader(file, gz, progress)
    try:
        while True:
            try:
                data = reader.handle.read(BLOCK_BYTES)
            except READ_ERRORS as exc:
                raise reader.failed(exc) from None
            try:
                text = decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:  # exc.object: the bytes held back from the last block + data
                raise _not_utf8(file, line + exc.object[:exc.start].count(b"\n"), exc) from None
            reader.report()
            line += text.count("\n")
            if text:
                yield text
            if not data:
                return
    finally:
        reader.close()


def _lines(file: Path, gz: bool, progress) -> Iterator[tuple[int, bytes]]:
    """(line number, raw bytes) of every line of a file; progress reported about once per BLOCK_BYTES.

    A line is read with a bound (readline(MAX_LINE_BYTES + 1)), so memory stays within one line's maximum even
    for a file without a newline; a longer line is refused by number."""
    limit = MAX_LINE_BYTES
    reader = _Reader(file, gz, progress)
    try:
        number, since = 0, 0
        while True:
            try:
                line = reader.handle.readline(limit + 1)
            except READ_ERRORS as exc:
                raise reader.failed(exc) from None
            if not line:
                reader.report()
                return
            number += 1
            if len(line) > limit and not line.endswith(b"\n"):
                raise InputError(f"{file} line {number}: longer than {_size(limit)}, the most one JSON line may "
                                 "hold; put one document per line, each under that size")
            since += len(line)
            if since >= BLOCK_BYTES:
                reader.report()
                since = 0
            yield number, line
    finally:
        reader.close()


def _size(n_bytes: int) -> str:
    """A byte count for a message: "16 MiB" when it is whole MiB, else bytes."""
    return f"{n_bytes >> 20} MiB" if n_bytes % (1 << 20) == 0 else f"{n_bytes:,} bytes"


def _jsonl_texts(file: Path, gz: bool, field: str, progress) -> Iterator[str]:
    for number, raw in _lines(file, gz, progress):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(file, number, exc) from None
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            raise InputError(f"{file} line {number}: not a JSON object; a .jsonl file holds one per line") from None
        if not isinstance(record, dict):
            raise InputError(f"{file} line {number}: a JSON {type(record).__name__}, not an object with a "
                             f"{field!r} field")
        if field not in record:
            raise InputError(f"{file} line {number}: no {field!r} field; name the text's field with text_field=")
        text = record[field]
        if not isinstance(text, str):
            raise InputError(f"{file} line {number}: the {field!r} field is a {type(text).__name__}, not a string")
        yield text


def _column_texts(batches, where: str, field: str, start: int = 0) -> Iterator[str]:
    """Strings of one text column, batch by batch; a null or non-string value is refused by row."""
    row = start
    for batch in batches:
        column = batch.column(0) if hasattr(batch, "column") else batch
        for value in column.to_pylist():
            row += 1
            if not isinstance(value, str):
                what = "empty (null)" if value is None else f"a {type(value).__name__}"
                raise InputError(f"{where} row {row}: the {field!r} value is {what}, not a string")
            yield value


def _parquet_texts(file: Path, field: str, progress) -> Iterator[str]:
    pq = _require("pyarrow.parquet", f"{file} (Parquet)")
    try:
        reader = pq.ParquetFile(file)
    except Exception as exc:  # pyarrow's ArrowInvalid and friends
        raise InputError(f"{file} is not a readable Parquet file ({type(exc).__name__})") from None
    names = reader.schema_arrow.names
    if field not in names:
        raise InputError(f"{file} has no {field!r} column (it has {', '.join(names[:8])}); name the text's column "
                         "with text_field=")
    per_group = max(1, file.stat().st_size // max(1, reader.num_row_groups))
    batches = reader.iter_batches(batch_size=1024, columns=[field])
    yield from _column_texts(_counted(batches, progress, per_group, reader), str(file), field)


def _counted(batches, progress, per_group, reader):
    """Pass record batches through, reporting an estimate of the bytes read (row fraction of the file)."""
    total_rows = max(1, reader.metadata.num_rows)
    size = per_group * max(1, reader.num_row_groups)
    for batch in batches:
        progress(size * batch.num_rows // total_rows)
        yield batch


def _dataset_texts(path: Path, field: str, progress) -> Iterator[str]:
    datasets = _require("datasets", f"{path} (a saved Hugging Face dataset)")
    try:
        loaded = datasets.load_from_disk(str(path))
    except Exception as exc:
        raise InputError(f"{path} is not a readable saved dataset ({type(exc).__name__})") from None
    if isinstance(loaded, datasets.DatasetDict):
        if "train" not in loaded:
            raise InputError(f"{path} holds splits {', '.join(loaded)} but no 'train' split to read")
        loaded = loaded["train"]
    if field not in loaded.column_names:
        raise InputError(f"{path} has no {field!r} column (it has {', '.join(loaded.column_names[:8])}); name the "
                         "text's column with text_field=")
    table = loaded.with_format("arrow")
    total = max(1, len(loaded))
    size = sum(p.stat().st_size for p in path.rglob("*.arrow") if p.is_file())
    for start in range(0, len(loaded), 1024):
        batch = table[start:start + 1024][field]
        progress(size * len(batch) // total)
        yield from _column_texts([batch], str(path), field, start)
