"""An interrupted data preparation keeps what it encoded at a fine grain: the resumed preparation encodes only what
was not yet recorded, its token file is byte-identical to an uninterrupted one, and `attnlab train` says how much
of the corpus was kept. The module's sizes are scaled down by one factor (their ratios kept), corpora are a few KB."""

import random

import pytest

from attnlab.data import streaming
from attnlab.data.sources import CorpusSource
from attnlab.data.streaming import ChunkEncoder
from attnlab.data.token_file import TokenFile
from attnlab.data.tokenizers import char_tokenizer, train_bpe

SCALE = 1 << 12  # 256 Ki-character chunks become 64, 1 Mi-character batches and shards 256
TEXT = "".join(f"line {i}: the {random.Random(i).choice(['quick', 'slow', 'lazy'])} fox jumps over {i % 7} dogs.\n"
               for i in range(120))  # ~5 KB: ~20 batches at the scaled sizes
REAL_ENCODE = ChunkEncoder.encode  # before any test patches it


@pytest.fixture(autouse=True)
def _scaled(tmp_path, monkeypatch):
    """Every size divided by SCALE, the checkpoint size included (as its default is), and a private token store."""
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("CHUNK_CHARS", "BATCH_CHARS", "SHARD_CHARS"):
        monkeypatch.setattr(streaming, name, getattr(streaming, name) // SCALE)


def _counting(monkeypatch, stop_at: int | None = None) -> list[int]:
    """Patch the encoder to record the chunks of each call, raising KeyboardInterrupt on call `stop_at` (1-based)."""
    calls: list[int] = []

    def encode(self, chunks):
        if stop_at is not None and len(calls) + 1 == stop_at:
            raise KeyboardInterrupt
        calls.append(len(chunks))
        return REAL_ENCODE(self, chunks)

    monkeypatch.setattr(ChunkEncoder, "encode", encode)
    return calls


def _files(directory) -> dict[str, bytes]:
    return {name: (directory / name).read_bytes() for name in ("train.bin", "val.bin")}


@pytest.mark.parametrize("kind", ["char", "bpe"])
def test_a_resumed_preparation_redoes_nothing_and_equals_an_uninterrupted_one(tmp_path, monkeypatch, kind):
    tok = char_tokenizer(TEXT) if kind == "char" else train_bpe(TEXT.split("\n"), vocab_size=300)
    source = CorpusSource.from_text(TEXT, "corpus")
    calls = _counting(monkeypatch)
    TokenFile.prepare(source, tok, tmp_path / "whole", progress=False)
    whole, all_chunks = _files(tmp_path / "whole"), sum(calls)
    assert len(calls) >= 10  # enough batches for an interruption in the middle to mean something

    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache2"))  # nothing reused from the first build
    done = _counting(monkeypatch, stop_at=6)
    with pytest.raises(KeyboardInterrupt):
        TokenFile.prepare(source, tok, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()
    rest = _counting(monkeypatch)
    tf, reused = TokenFile.prepare(source, tok, tmp_path / "run", progress=False)
    assert not reused and sum(done) > 0
    assert sum(rest) == all_chunks - sum(done)  # every chunk encoded once over both attempts: nothing redone
    assert _files(tmp_path / "run") == whole
    ids = [*tf.tokens("train").tolist(), *tf.tokens("val").tolist()]
    assert ids == tok.encode(TEXT, add_special_tokens=False)  # and both hold the ids of one encode() of the text


def test_a_preparation_interrupted_twice_still_equals_an_uninterrupted_one(tmp_path, monkeypatch):
    tok = char_tokenizer(TEXT)
    source = CorpusSource.from_text(TEXT, "corpus")
    calls = _counting(monkeypatch)
    TokenFile.prepare(source, tok, tmp_path / "whole", progress=False)
    all_chunks = sum(calls)
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache2"))
    encoded = []
    for stop_at in (4, 5):  # a user's Ctrl-C twice, the second attempt getting further
        encoded.append(_counting(monkeypatch, stop_at=stop_at))
        with pytest.raises(KeyboardInterrupt):
            TokenFile.prepare(source, tok, tmp_path / "run", progress=False)
    encoded.append(_counting(monkeypatch))
    TokenFile.prepare(source, tok, tmp_path / "run", progress=False)
    assert [sum(e) > 0 for e in encoded] == [True] * 3 and sum(map(sum, encoded)) == all_chunks
    assert _files(tmp_path / "run") == _files(tmp_path / "whole")


def test_the_default_checkpoint_loses_at_most_a_few_megabytes():
    assert streaming.SHARD_CHARS * SCALE <= 4 << 20  # the fixture divided it: this is the module's default


def test_attnlab_train_says_how_much_of_the_corpus_was_kept(tmp_path, monkeypatch, capsys):
    from attnlab.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT)
    argv = ["train", "gpt-char", "--out", str(tmp_path / "run"), "--data", str(corpus), "steps=1", "d_model=16",
            "n_layers=1", "n_heads=2", "d_ff=32", "seq_len=8", "batch_size=2", "eval_every=0", "sample_tokens=2",
            "log_every=1", "threads=1"]
    done = _counting(monkeypatch, stop_at=6)
    assert main(argv) == 130
    err = capsys.readouterr().err
    kept = len(TEXT[: streaming.CHUNK_CHARS * sum(done)].encode())  # the scaled chunk size
    assert (f"attnlab train: interrupted while preparing the data: {kept:,} of {len(TEXT.encode()):,} bytes of "
            f"{corpus} encoded and kept; run the same command again to continue from there\n") in err, err
    assert "nothing to resume" not in err
    rest = _counting(monkeypatch)
    assert main(argv) == 0, capsys.readouterr().err
    assert sum(rest) == -(-len(TEXT) // streaming.CHUNK_CHARS) - sum(done)  # the same command went on from there


def test_a_progress_line_cut_short_by_a_kill_loses_only_that_shard(tmp_path, monkeypatch):
    tok = char_tokenizer(TEXT)
    source = CorpusSource.from_text(TEXT, "corpus")
    _counting(monkeypatch)
    TokenFile.prepare(source, tok, tmp_path / "whole", progress=False)
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache2"))
    done = _counting(monkeypatch, stop_at=6)
    with pytest.raises(KeyboardInterrupt):
        TokenFile.prepare(source, tok, tmp_path / "run", progress=False)
    (log,) = (tmp_path / "cache2" / "tokens").glob(f".partial-*/{streaming.PROGRESS_FILE}")
    with open(log, "a") as f:
        f.write('{"chunks": 96, "bytes": 5')  # a kill in the middle of recording the next shard
    rest = _counting(monkeypatch)
    TokenFile.prepare(source, tok, tmp_path / "run", progress=False)
    assert sum(rest) == -(-len(TEXT) // streaming.CHUNK_CHARS) - sum(done)
    assert _files(tmp_path / "run") == _files(tmp_path / "whole")


def test_an_interrupt_in_a_temporary_token_store_says_nothing_was_kept(tmp_path, monkeypatch):
    from attnlab.files import CacheWarning
    from attnlab.training.run import interruption_message

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(blocker))  # refused: builds go to a store deleted at exit
    _counting(monkeypatch, stop_at=6)
    with pytest.warns(CacheWarning), pytest.raises(streaming.PreparationInterrupted) as caught:
        TokenFile.prepare(CorpusSource.from_text(TEXT, "corpus"), char_tokenizer(TEXT), tmp_path / "run",
                          progress=False)
    assert interruption_message(caught.value) == (f"interrupted while preparing the data: nothing of corpus "
                                                  f"({len(TEXT):,} bytes) kept; run the same command again to "
                                                  "start over")
