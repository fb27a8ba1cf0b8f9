"""Streaming preparation: every corpus format gives the ids of one encode() over the text it holds; bad input is one
line naming the file and line and leaves no token file; an interrupted build resumes; the character table equals
the tokenizers library; a build is reused across run folders. Corpora are a few KB, seeded."""

import gzip
import importlib.util
import json
import random

import numpy as np
import pytest

from attnlab import heap
from attnlab.data import streaming
from attnlab.data.sources import CorpusSource
from attnlab.data.streaming import ChunkEncoder, CorpusScan, paragraphs_of, safe_chunks
from attnlab.data.token_file import TokenFile, fingerprint, fingerprint_from
from attnlab.data.tokenizers import char_tokenizer, char_tokenizer_from_chars, train_bpe
from attnlab.errors import InputError

DOCS = [f"Document {i}: the {random.Random(i).choice(['quick', 'slow', 'lazy'])} fox — nº {i * 7 % 13}.\n"
        f"It jumps over {i} dogs.\n" for i in range(40)]
JOINED = "\n\n".join(DOCS)  # what every format below holds: documents joined by a blank line


@pytest.fixture(autouse=True)
def _own_token_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache"))  # no build is reused from another test


def _ids(text, tok):
    return tok.encode(text, add_special_tokens=False)


def _write(tmp_path, fmt):
    """The DOCS in one format; returns the path to give as data=."""
    if fmt == "txt-folder":
        for i, doc in enumerate(DOCS):
            (tmp_path / "c" / f"{i // 10}").mkdir(parents=True, exist_ok=True)
            (tmp_path / "c" / f"{i // 10}" / f"{i % 10:02d}.txt").write_text(doc, encoding="utf-8")
        (tmp_path / "c" / "empty.txt").write_text("  \n")  # whitespace only: left out, as read_text does
        return tmp_path / "c"
    if fmt == "txt.gz":
        path = tmp_path / "c.txt.gz"
        path.write_bytes(gzip.compress(JOINED.encode()))
        return path
    lines = "".join(json.dumps({"id": i, "body": doc}) + "\n" for i, doc in enumerate(DOCS))
    if fmt == "jsonl":
        (tmp_path / "c.jsonl").write_text(lines, encoding="utf-8")
        return tmp_path / "c.jsonl"
    if fmt == "jsonl.gz-folder":
        (tmp_path / "c").mkdir()
        (tmp_path / "c" / "a.jsonl.gz").write_bytes(gzip.compress(lines.encode()))
        return tmp_path / "c"
    if fmt == "parquet":
        pa, pq = pytest.importorskip("pyarrow"), pytest.importorskip("pyarrow.parquet")
        pq.write_table(pa.table({"body": DOCS}), tmp_path / "c.parquet", row_group_size=16)
        return tmp_path / "c.parquet"
    if fmt == "datasets":
        datasets = pytest.importorskip("datasets", reason="the data extra: pip install datasets")
        datasets.Dataset.from_dict({"body": DOCS}).save_to_disk(str(tmp_path / "ds"))
        return tmp_path / "ds"
    raise AssertionError(fmt)


@pytest.mark.parametrize("fmt", ["txt-folder", "txt.gz", "jsonl", "jsonl.gz-folder", "parquet", "datasets"])
def test_every_format_gives_the_ids_of_its_text(tmp_path, fmt):
    source = CorpusSource(_write(tmp_path, fmt), text_field="body")
    assert "".join(source.blocks()) == JOINED
    tok = char_tokenizer(JOINED, ["[UNK]"])
    tf, reused = TokenFile.prepare(source, tok, tmp_path / "out", 0.1)
    ids = _ids(JOINED, tok)
    n_val = round(0.1 * len(ids))
    assert not reused and tf.tokens("train").tolist() == ids[:-n_val] and tf.tokens("val").tolist() == ids[-n_val:]
    assert tf.meta["fingerprint"] == fingerprint(JOINED, tok, 0.1)  # the same key as the text in memory


def test_bpe_ids_streamed_in_small_chunks_equal_one_encode(tmp_path, monkeypatch):
    text = JOINED * 3
    tok = train_bpe(paragraphs_of([text]), 300)
    monkeypatch.setattr(streaming, "CHUNK_CHARS", 200)  # many cuts, many batches, many shards
    monkeypatch.setattr(streaming, "BATCH_CHARS", 700)
    monkeypatch.setattr(streaming, "SHARD_CHARS", 1500)
    (tmp_path / "c.txt").write_text(text)
    tf = TokenFile.build(CorpusSource(tmp_path / "c.txt"), tok, tmp_path / "out", 0.0)
    assert tf.tokens("train").tolist() == _ids(text, tok)


def test_safe_chunks_cut_only_between_lines_and_lose_nothing():
    text = "".join(random.Random(0).choice(["ab", " ", "\n", "c d\n", "é"]) for _ in range(4000))
    blocks = [text[i:i + 97] for i in range(0, len(text), 97)]
    chunks = list(safe_chunks(blocks, 150))
    assert "".join(chunks) == text and len(chunks) > 5
    for left, right in zip(chunks, chunks[1:], strict=False):
        assert left[-1] == "\n" and not left[-2].isspace() and not right[0].isspace()


def test_the_character_table_equals_the_tokenizers_library():
    rng = random.Random(1)
    alphabet = "abc xyz\n\t\r—é€😀[UNK]"
    text = "".join(rng.choice(alphabet) for _ in range(3000))
    tok = char_tokenizer(text[:2000], ["[UNK]"])  # the rest may hold characters it never saw: [UNK]
    encoder = ChunkEncoder(tok)
    assert encoder.is_char
    pieces = [text[i:i + 311] for i in range(0, len(text), 311)] + ["plain ascii", "new ☃ [UNK] here"]
    for piece in pieces:
        assert encoder.encode([piece]).tolist() == _ids(piece, tok), piece
    assert not ChunkEncoder(train_bpe([text], 300)).is_char


def test_the_scan_collects_the_characters_char_tokenizer_would_use():
    text = JOINED + "☃😀"
    scan = CorpusScan(CorpusSource.from_text(text), chars=True, progress=False)
    assert char_tokenizer_from_chars(scan.chars, ["[UNK]"]).hf.to_str() == char_tokenizer(text, ["[UNK]"]).hf.to_str()
    assert fingerprint_from(scan.digest, char_tokenizer(text), 0.1) == fingerprint(text, char_tokenizer(text), 0.1)
    assert scan.n_chars == len(text)


def test_paragraphs_of_a_stream_equal_split_on_blank_lines():
    text = "a\n\nb c\n\n\n\n d \n\ne" * 5
    blocks = [text[i:i + 3] for i in range(0, len(text), 3)]
    assert list(paragraphs_of(blocks)) == [p for p in text.split("\n\n") if p.strip()]


# ------------------------------------------------------------------------------------------------ bad input
def _bad(tmp_path, case):
    if case == "missing field":
        (tmp_path / "c.jsonl").write_text('{"text": "fine"}\n{"body": "no text here"}\n')
        return tmp_path / "c.jsonl", r"c\.jsonl line 2: no 'text' field"
    if case == "not utf-8":
        (tmp_path / "c.txt").write_bytes("line one\nline two\nbad \xff byte\n".encode("latin-1"))
        return tmp_path / "c.txt", r"c\.txt line 3: not UTF-8 text"
    if case == "not utf-8 gz":
        (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(b'{"text": "a"}\n{"text": "\xe9"}\n'))
        return tmp_path / "c.jsonl.gz", r"c\.jsonl\.gz line 2: not UTF-8 text"
    if case == "not json":
        (tmp_path / "c.jsonl").write_text('{"text": "a"}\n\n{"text": oops}\n')
        return tmp_path / "c.jsonl", r"c\.jsonl line 3: not a JSON object"
    if case == "empty":
        (tmp_path / "c").mkdir()
        (tmp_path / "c" / "a.txt").write_text(" \n\n")
        return tmp_path / "c", r"holds no text"
    if case == "mixed":
        (tmp_path / "c").mkdir()
        (tmp_path / "c" / "a.txt").write_text("text")
        (tmp_path / "c" / "b.jsonl").write_text('{"text": "x"}\n')
        return tmp_path / "c", r"mixes formats \(a\.txt is text, b\.jsonl is JSON lines\)"
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["missing field", "not utf-8", "not utf-8 gz", "not json", "empty", "mixed"])
def test_bad_input_is_one_line_naming_file_and_line_and_leaves_no_token_file(tmp_path, case):
    path, match = _bad(tmp_path, case)
    with pytest.raises(InputError, match=match) as caught:
        TokenFile.prepare(CorpusSource(path), char_tokenizer("abc", ["[UNK]"]), tmp_path / "out", 0.1)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_bad_input_after_the_first_shard_leaves_no_token_file(tmp_path, monkeypatch):
    """An error found late (line 400 of a file) leaves no meta.json anywhere: nothing looks finished."""
    monkeypatch.setattr(streaming, "CHUNK_CHARS", 100)
    monkeypatch.setattr(streaming, "SHARD_CHARS", 300)
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"text": f"row {i}\nok"}) + "\n" for i in range(399)) + '{"txt": "x"}\n')
    with pytest.raises(InputError, match=r"c\.jsonl line 400: no 'text' field"):
        TokenFile.build(CorpusSource(path), char_tokenizer("row okx0123456789\n"), tmp_path / "out", 0.1)
    assert not list(tmp_path.rglob("meta.json"))


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is not None, reason="pyarrow is installed")
def test_parquet_without_pyarrow_names_the_extra(tmp_path):
    (tmp_path / "c.parquet").write_bytes(b"PAR1")
    with pytest.raises(InputError, match=r"needs the 'pyarrow\.parquet' library.*attnlab\[data\]"):
        list(CorpusSource(tmp_path / "c.parquet").blocks())


def test_a_missing_optional_library_is_named_with_its_extra(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_datasets(name, *args, **kwargs):
        if name.split(".")[0] == "datasets":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_datasets)
    monkeypatch.setattr(importlib, "import_module", lambda name: no_datasets(name))
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "state.json").write_text("{}")
    with pytest.raises(InputError, match=r"needs the 'datasets' library, which is not installed; install the data "
                                         r"extra with `pip install 'attnlab\[data\]'`"):
        list(CorpusSource(tmp_path / "ds").blocks())


# ------------------------------------------------------------------------------------------------ resume, reuse
def test_an_interrupted_build_resumes_after_its_last_whole_shard(tmp_path, monkeypatch):
    monkeypatch.setattr(streaming, "CHUNK_CHARS", 100)
    monkeypatch.setattr(streaming, "BATCH_CHARS", 100)
    monkeypatch.setattr(streaming, "SHARD_CHARS", 400)
    text = JOINED * 2
    tok = char_tokenizer(text)
    encoder_calls = []
    real_encode = ChunkEncoder.encode

    def stop_after(n):
        def encode(self, chunks):
            encoder_calls.append(sum(map(len, chunks)))
            if n is not None and len(encoder_calls) > n:
                raise KeyboardInterrupt
            return real_encode(self, chunks)
        return encode

    monkeypatch.setattr(ChunkEncoder, "encode", stop_after(20))
    with pytest.raises(KeyboardInterrupt):
        TokenFile.prepare(text, tok, tmp_path / "run1", 0.1)
    assert not (tmp_path / "run1").exists()
    done_chars = sum(encoder_calls[:20])
    encoder_calls.clear()
    monkeypatch.setattr(ChunkEncoder, "encode", stop_after(None))
    tf, reused = TokenFile.prepare(text, tok, tmp_path / "run1", 0.1)
    assert not reused and sum(encoder_calls) <= len(text) - done_chars + 400  # at most one shard encoded again
    ids = _ids(text, tok)
    assert np.concatenate([tf.tokens("train"), tf.tokens("val")]).tolist() == ids


def test_a_damaged_shard_is_encoded_again(tmp_path, monkeypatch):
    monkeypatch.setattr(streaming, "CHUNK_CHARS", 100)
    monkeypatch.setattr(streaming, "SHARD_CHARS", 300)
    text = JOINED
    tok = char_tokenizer(text)
    work = tmp_path / "out" / ".partial"
    source = CorpusSource.from_text(text)
    key = fingerprint(text, tok, 0.0)
    encoder = ChunkEncoder(tok)
    plan = {"fingerprint": key, "dtype": "uint16", "chunk_chars": 100, "any_cut": True}
    streaming.write_ids(safe_chunks(source.blocks(), 100, True), encoder, work, plan)
    with open(work / "ids.bin", "r+b") as f:  # flip a byte in the second shard
        f.seek(700)
        byte = f.read(1)
        f.seek(700)
        f.write(bytes([byte[0] ^ 1]))
    kept, offset = streaming._resume_point(work, plan)
    assert len(kept) == 1 and offset == kept[0]["bytes"]
    n, resumed = streaming.write_ids(safe_chunks(source.blocks(), 100, True), encoder, work, plan)
    assert resumed and np.fromfile(work / "ids.bin", np.uint16).tolist() == _ids(text, tok)


def test_a_build_is_reused_by_another_run_folder(tmp_path, monkeypatch):
    tok = char_tokenizer(JOINED)
    first, reused = TokenFile.prepare(JOINED, tok, tmp_path / "a" / "data", 0.1)
    assert not reused
    monkeypatch.setattr(ChunkEncoder, "encode", lambda *a: pytest.fail("encoded again"))
    second, reused = TokenFile.prepare(JOINED, char_tokenizer(JOINED), tmp_path / "b" / "data", 0.1)
    assert reused and (tmp_path / "b" / "data" / "train.bin").read_bytes() == \
        (tmp_path / "a" / "data" / "train.bin").read_bytes()


def test_progress_shows_bytes_rate_and_eta(capsys):
    meter = streaming.Progress("tokenizing x", 4_000_000, every=0.0)
    meter(1_000_000)
    meter.finish()
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("tokenizing x: 1.0 / 4.0 MB, ") and " MB/s, ETA " in err[0]
    assert err[-1].startswith("tokenizing x: 1.0 / 4.0 MB, ") and " in " in err[-1]


def test_the_benchmark_sides_count_the_same_tokens(tmp_path):
    """attnlab.benchmarks.data's two sides on a 20 KB corpus: attnlab's token file and the library's direct
    batches hold the same number of ids for the character vocabulary (every cut is safe there)."""
    from attnlab.benchmarks import data as bench

    corpus = tmp_path / "c.txt"
    n_bytes = bench.make_corpus(corpus, 20_000)
    assert 19_000 < n_bytes <= 20_000
    toks = bench.make_tokenizers(tmp_path / "tok")
    ours = bench.child_attnlab(str(corpus), str(toks["char"]), str(tmp_path / "w"))
    peer = bench.child_tokenizers(str(corpus), str(toks["char"]), str(tmp_path / "w"))
    text = corpus.read_text(encoding="utf-8")
    assert ours["n_tokens"] == peer["n_tokens"] == len(text)  # one id per character
    assert ours["peak"] >= ours["before"] > 0


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


@pytest.mark.skipif(heap.malloc_trim() is None, reason="glibc's malloc_trim only (Linux)")
def test_release_freed_memory_returns_freed_heap_pages():
    """What the tokenizers library's threads leave after training and encoding: heap blocks freed below a block
    still in use, kept resident until malloc_trim. 60,000 blocks of 1,000 bytes (bytes objects this size come from
    malloc, not Python's small-object arenas) are freed under one kept block; release_freed_memory hands back most
    of their ~60 MB, where free() alone hands back none of it."""
    blocks = [bytes(1000) for _ in range(60_000)]
    kept = bytes(1000)  # above them in the heap: free() cannot shrink the heap past it
    before = _rss_mb()
    del blocks
    freed = _rss_mb()
    heap.release_freed_memory()
    after = _rss_mb()
    assert freed > before - 10, (before, freed)  # free() alone: still resident
    assert after < freed - 40, (before, freed, after)
    assert len(kept) == 1000
