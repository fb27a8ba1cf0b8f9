"""What another user, a shared folder or a damaged file can do to what attnlab trains on: the token store is
copied (never linked) into a run's folder and checked by sha256 on reuse; a corpus edited during preparation is
refused; a JSON line is read with a bound; a damaged .gz and an unusable cache folder are one line, not a
traceback. Corpora are a few KB; every test has its own token store."""

import gzip
import json
import os
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest

from attnlab.data import sources, streaming
from attnlab.data.sources import CorpusSource
from attnlab.data.token_file import TokenFile, fingerprint_from
from attnlab.data.tokenizers import char_tokenizer
from attnlab.errors import InputError
from attnlab.files import CacheWarning

TEXT = "".join(f"line {i}: the quick brown fox jumps over the lazy dog.\n" for i in range(60))


@pytest.fixture(autouse=True)
def _own_token_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache"))


def _store_entry(tmp_path) -> Path:
    (entry,) = [p for p in (tmp_path / "cache" / "tokens").iterdir() if not p.name.startswith(".")]
    return entry


def _poison(path: Path) -> None:
    """Rewrite a file in place (same inode), as a group member with write access to it would."""
    with open(path, "r+b") as f:
        f.write(b"\x07" * os.path.getsize(path))


# ------------------------------------------------------------------------------------------ token store
def test_writing_a_run_folder_does_not_change_what_the_next_run_reads(tmp_path):
    tok = char_tokenizer(TEXT)
    first, reused = TokenFile.prepare(TEXT, tok, tmp_path / "shared" / "data", progress=False)
    expected = np.array(first.tokens("train"))
    run_file = tmp_path / "shared" / "data" / "train.bin"
    assert not os.path.samefile(run_file, _store_entry(tmp_path) / "train.bin")  # a copy, not a link
    _poison(run_file)
    again, reused = TokenFile.prepare(TEXT, tok, tmp_path / "private" / "data", progress=False)
    assert reused and again.origin == "the token store"
    assert np.array_equal(again.tokens("train"), expected)


def _edit_meta(path: Path) -> None:
    meta = json.loads(path.read_text())
    path.write_text(json.dumps({**meta, "n_chars": 1}))


@pytest.mark.parametrize("change", [
    lambda entry: _poison(entry / "train.bin"),  # through a hard link an older attnlab put into a shared folder
    lambda entry: _edit_meta(entry / "meta.json"),  # meta.json was linked out too: its content is not trusted
    lambda entry: (entry / ".sha256.json").unlink(missing_ok=True),  # an older attnlab's build: no checksums to compare
], ids=["ids", "meta", "no-record"])
def test_a_store_build_that_changed_is_rebuilt_with_one_warning(tmp_path, change):
    tok = char_tokenizer(TEXT)
    first, _ = TokenFile.prepare(TEXT, tok, tmp_path / "a" / "data", progress=False)
    expected = np.array(first.tokens("train"))
    entry = _store_entry(tmp_path)
    change(entry)
    with pytest.warns(CacheWarning, match="does not match the sha256") as caught:
        again, reused = TokenFile.prepare(TEXT, tok, tmp_path / "b" / "data", progress=False)
    assert len(caught) == 1 and str(entry) in str(caught[0].message)
    assert not reused and again.origin is None
    assert np.array_equal(again.tokens("train"), expected)
    assert np.array_equal(TokenFile.open(entry).tokens("train"), expected)  # the store holds the rebuilt ids


def test_the_summary_says_where_reused_tokens_came_from(tmp_path):
    from attnlab.training.trainer import Task

    tok = char_tokenizer(TEXT)
    task = Task()
    task.data, task.data_reused = TokenFile.prepare(TEXT, tok, tmp_path / "a", progress=False)
    assert "reused" not in task.data_summary()
    task.data, task.data_reused = TokenFile.prepare(TEXT, tok, tmp_path / "a", progress=False)
    assert task.data_summary().endswith("(reused from the run folder)")
    task.data, task.data_reused = TokenFile.prepare(TEXT, tok, tmp_path / "b", progress=False)
    assert task.data_summary().endswith("(reused from the token store)")


# ------------------------------------------------------------------------------------------ corpus edits
def test_a_corpus_edited_between_scan_and_encode_is_refused(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT)
    source = CorpusSource(corpus)
    tok = char_tokenizer(TEXT)
    scan = streaming.CorpusScan(source, progress=False)
    corpus.write_text(TEXT.replace("lazy", "busy"))  # same characters, other text: the ids would differ
    with pytest.raises(InputError, match="changed while it was being prepared") as caught:
        TokenFile.prepare(source, tok, tmp_path / "data", scan=scan, progress=False)
    assert str(corpus) in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "data").exists()
    store = tmp_path / "cache" / "tokens"
    assert not [p for p in store.iterdir() if not p.name.startswith(".")]  # no build under the old fingerprint
    assert not list(store.glob(".partial-*/progress.json"))  # and nothing to resume from


def test_shards_encoded_from_other_text_are_not_resumed(tmp_path, monkeypatch):
    monkeypatch.setattr(streaming, "CHUNK_CHARS", 64)
    monkeypatch.setattr(streaming, "SHARD_CHARS", 256)
    tok = char_tokenizer(TEXT)
    other = TEXT.replace("quick", "quack")
    source = CorpusSource.from_text(TEXT)
    scan = streaming.CorpusScan(source, progress=False)
    key = fingerprint_from(scan.digest, tok, 0.1)
    encoder = streaming.ChunkEncoder(tok)
    plan = {"fingerprint": key, "dtype": np.dtype(encoder.dtype).name, "chunk_chars": 64, "any_cut": True}
    work = tmp_path / "data" / ".partial"

    def interrupted():  # the text changed under an earlier attempt, which was then stopped
        for n, chunk in enumerate(streaming.safe_chunks([other], 64, any_cut=True)):
            if n == 20:
                raise KeyboardInterrupt
            yield chunk

    with pytest.raises(KeyboardInterrupt):
        streaming.write_ids(interrupted(), encoder, work, plan)
    built = TokenFile.build(source, tok, tmp_path / "data", 0.1)
    ids = np.concatenate([built.tokens("train"), built.tokens("val")])
    assert np.array_equal(ids, tok.encode(TEXT, add_special_tokens=False))


# ------------------------------------------------------------------------------------------ long lines
def test_a_json_line_longer_than_the_maximum_is_refused_by_number(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "MAX_LINE_BYTES", 1024, raising=False)
    fits = '{"text": "' + "a" * (1024 - 12) + '"}'  # exactly 1024 bytes before its newline
    path = tmp_path / "c.jsonl"
    path.write_text(f'{fits}\n{{"text": "ok"}}\n{{"text": "{"b" * 2000}"}}\n')
    with pytest.raises(InputError, match=r"c\.jsonl line 3: longer than 1,024 bytes"):
        list(CorpusSource(path).blocks())
    path.write_text(f"{fits}\n")
    assert list(CorpusSource(path).blocks()) == ["a" * 1012]


def test_a_gz_that_expands_to_one_endless_line_stops_within_the_maximum(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "MAX_LINE_BYTES", 1 << 16, raising=False)
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"text": "' + b"x" * (8 << 20), compresslevel=1))  # 8 MiB, no newline
    assert path.stat().st_size < 100_000
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"c\.jsonl\.gz line 1: longer than 65,536 bytes"):
            list(CorpusSource(path).blocks())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 << 20, peak  # not the 8 MiB line


# ------------------------------------------------------------------------------------------ the command line
def _damaged_gz(path: Path) -> None:
    """A .txt.gz with one flipped byte that zlib itself rejects (not only the CRC check), found deterministically."""
    text = "".join(f"def f{i}(x):\n    return x * {i * 7 % 13} + {i}\n\n" for i in range(400)).encode()
    data = gzip.compress(text, mtime=0)
    for pos in range(20, len(data) - 8):
        bad = bytearray(data)
        bad[pos] ^= 0x10
        try:
            zlib.decompress(bytes(bad[10:-8]), wbits=-15)
        except zlib.error:
            path.write_bytes(bytes(bad))
            return
    raise AssertionError("no byte flip upsets zlib")


TRAIN = ["steps=1", "batch_size=2", "seq_len=16", "d_model=16", "n_heads=2", "d_ff=32", "n_layers=1",
         "eval_every=0", "sample_tokens=4", "log_every=1", "threads=1", "report=none"]


def test_train_on_a_damaged_gz_is_one_line(tmp_path, capsys):
    from attnlab.cli import main

    corpus = tmp_path / "c.txt.gz"
    _damaged_gz(corpus)
    code = main(["train", "gpt-char", "--out", str(tmp_path / "run"), *TRAIN, f"data={corpus}"])
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if line.startswith("attnlab train: error:")]
    assert code == 2 and "Traceback" not in err, err
    assert str(corpus) in line and "cannot be read as gzip (zlib.error" in line


def test_train_with_an_uncreatable_cache_folder_warns_and_goes_on(tmp_path, monkeypatch, capsys):
    from attnlab.cli import main

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(blocker))  # mkdir under it fails, as in a read-only folder
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT * 4)
    code = main(["train", "gpt-char", "--out", str(tmp_path / "run"), *TRAIN, f"data={corpus}"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "Traceback" not in err and "warning: attnlab: not keeping token files there" in err
    assert (tmp_path / "run" / "data" / "meta.json").is_file()


def test_a_token_store_this_user_cannot_write_is_left_aside_with_a_warning(tmp_path, monkeypatch):
    from attnlab.data import token_file

    store = token_file.token_store()
    real_access = os.access
    monkeypatch.setattr(token_file.os, "access",
                        lambda path, mode, **kw: (not (isinstance(path, (str, os.PathLike)) and Path(path) == store)
                                                  and real_access(path, mode, **kw)))
    token_file._private_temporary_store.cache_clear()
    with pytest.warns(CacheWarning, match="cannot be written by this user"):
        built, reused = TokenFile.prepare(TEXT, char_tokenizer(TEXT), tmp_path / "data", progress=False)
    token_file._private_temporary_store.cache_clear()
    assert not reused and built.n_tokens("train") > 0
    assert not [p for p in store.iterdir() if not p.name.startswith(".")]  # nothing written to the store
