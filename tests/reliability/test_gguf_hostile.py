"""Hostile tokenizers in GGUF files: each is refused with one CheckpointError naming the file and the key (never
the content), fast, instead of minutes of parsing, gigabytes, or a raw TypeError / ValueError traceback.

The files are a tiny LLaMA (written by save_gguf) with tokenizer keys set by tests/gguf_files.rewrite_metadata.
"""

from __future__ import annotations

import random
import time

import pytest
from gguf import GGUFValueType as T
from gguf_files import rewrite_metadata

import attnlab
from attnlab.errors import CheckpointError
from attnlab.interop import gguf_tokenizer
from attnlab.interop.gguf import save_gguf

SECRET = "zq"  # every hostile token starts with it: a message must never show it


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A tiny LLaMA GGUF without a tokenizer (64 embedding rows)."""
    config = attnlab.presets["tiny-llama"].replace(vocab_size=64, n_layers=1)
    return save_gguf(attnlab.build_model(config).eval(), tmp_path_factory.mktemp("plain") / "plain.gguf")


def llama_vocab(tokens: list[str]) -> dict:
    """tokenizer.ggml.* keys of a SentencePiece-style ("llama") vocabulary: <unk> first, then `tokens`."""
    tokens = ["<unk>", *tokens]
    return {"tokenizer.ggml.model": ("llama", T.STRING),
            "tokenizer.ggml.tokens": (tokens, T.ARRAY, T.STRING),
            "tokenizer.ggml.token_type": ([2] + [1] * (len(tokens) - 1), T.ARRAY, T.INT32),
            "tokenizer.ggml.scores": ([0.0] * len(tokens), T.ARRAY, T.FLOAT32),
            "tokenizer.ggml.unknown_token_id": (0, T.UINT32)}


def gpt2_vocab(merges: list[str]) -> dict:
    """tokenizer.ggml.* keys of a byte-level BPE ("gpt2") vocabulary with the given merges."""
    tokens = ["a", "b", "ab", "<|end|>"]
    return {"tokenizer.ggml.model": ("gpt2", T.STRING), "tokenizer.ggml.pre": ("gpt2", T.STRING),
            "tokenizer.ggml.tokens": (tokens, T.ARRAY, T.STRING),
            "tokenizer.ggml.token_type": ([1, 1, 1, 3], T.ARRAY, T.INT32),
            "tokenizer.ggml.merges": (merges, T.ARRAY, T.STRING)}


def refused(path, *needles: str, seconds: float = 2.0) -> str:
    """attnlab.load(path) raises one CheckpointError of one line naming the file and each needle, without the
    hostile content, within `seconds`; -> the message."""
    start = time.perf_counter()
    with pytest.raises(CheckpointError) as info:
        attnlab.load(path)
    elapsed = time.perf_counter() - start
    message = str(info.value)
    assert "\n" not in message and str(path) in message and SECRET not in message, message
    for needle in needles:
        assert needle in message, message
    assert elapsed < seconds, f"{elapsed:.1f} s"
    return message


def test_long_token_is_refused_before_parsing(plain, tmp_path):
    """A 200,000-character token: its merges alone took ~5 s to rebuild (every prefix sliced); now the header
    walk refuses it before gguf.GGUFReader parses anything."""
    path = rewrite_metadata(plain, tmp_path / "long.gguf", llama_vocab(["a", "b", SECRET + "a" * 199_998]))
    refused(path, "tokenizer.ggml.tokens", "200,000 bytes", f"{gguf_tokenizer.MAX_STRING_BYTES:,}")
    _, tok = attnlab.load(rewrite_metadata(plain, tmp_path / "ok.gguf", llama_vocab(["a", "b", "ab"])))
    assert tok.encode("ab") == [0, 3]  # the control: <unk> for the "\u2581" llama.cpp puts first, then "ab"


@pytest.mark.parametrize("cap, value, key, needle", [
    ("MAX_ARRAY", 50, "tokenizer.ggml.tokens", "81 entries"),
    ("MAX_STRINGS", 150, "tokenizer.ggml.merges", "more than 150 strings"),  # 81 tokens, then 80 merges
    ("MAX_KEYS", 10, "metadata keys", "at most 10"),
])
def test_too_many_entries_are_refused(plain, tmp_path, monkeypatch, cap, value, key, needle):
    """Caps lowered so that a small file exceeds them: each is checked before the reader parses the metadata."""
    tokens = [f"{SECRET}{i}" for i in range(80)]
    changes = {**llama_vocab(tokens), "tokenizer.ggml.merges": ([f"{t} x" for t in tokens], T.ARRAY, T.STRING)}
    path = rewrite_metadata(plain, tmp_path / "many.gguf", changes)
    monkeypatch.setattr(gguf_tokenizer, cap, value)
    refused(path, key, needle)


def test_caps_also_hold_for_a_reader_passed_in(plain, tmp_path, monkeypatch):
    """tokenizer_from_gguf given an already parsed reader (as benchmarks and the explorer call it) checks the
    same caps on each key."""
    from gguf import GGUFReader

    path = rewrite_metadata(plain, tmp_path / "many.gguf", llama_vocab([f"{SECRET}{i}" for i in range(80)]))
    monkeypatch.setattr(gguf_tokenizer, "MAX_ARRAY", 50)
    with pytest.raises(CheckpointError, match=r"^src: tokenizer.ggml.tokens has 81 entries; attnlab reads at most 50$"):
        gguf_tokenizer.tokenizer_from_gguf(GGUFReader(str(path)), "src")


def test_merge_without_a_space_is_refused(plain, tmp_path):
    _, tok = attnlab.load(rewrite_metadata(plain, tmp_path / "ok.gguf", gpt2_vocab(["a b"])))
    assert tok.encode("ab") == [2]  # the control: a well-formed merge loads
    refused(rewrite_metadata(plain, tmp_path / "m.gguf", gpt2_vocab(["a b", "ab"])),
            "tokenizer.ggml.merges entry 1 has no space")
    refused(rewrite_metadata(plain, tmp_path / "m2.gguf", gpt2_vocab(["a b", "ab ab"])),
            "tokenizer.ggml.merges entry 1 joins tokens that tokenizer.ggml.tokens lacks")
    # the joined token is there, a part is not: tokenizers' BPE refuses it (quoting the token), named here instead
    refused(rewrite_metadata(plain, tmp_path / "m3.gguf", gpt2_vocab(["a b", " ab"])),
            "tokenizer.ggml.merges entry 1 joins tokens that tokenizer.ggml.tokens lacks")


@pytest.mark.parametrize("key, value, expected", [
    ("tokenizer.ggml.tokens", ([1, 2, 3], T.ARRAY, T.INT32), "an array of int32; expected an array of strings"),
    ("tokenizer.ggml.token_type", ([SECRET] * 4, T.ARRAY, T.STRING), "an array of string; expected an array of int"),
    ("tokenizer.ggml.scores", ([SECRET] * 4, T.ARRAY, T.STRING), "an array of string; expected an array of floats"),
    ("tokenizer.ggml.tokens", (SECRET, T.STRING), "is string; expected an array of strings"),
    ("tokenizer.ggml.unknown_token_id", (SECRET, T.STRING), "is string; expected an integer"),
    ("tokenizer.ggml.add_space_prefix", (SECRET, T.STRING), "is string; expected a bool"),
    ("tokenizer.ggml.model", ([SECRET], T.ARRAY, T.STRING), "is an array of string; expected a string"),
    ("tokenizer.ggml.scores", ([0.0], T.ARRAY, T.FLOAT32), "has 1 entries for 4 tokens"),
])
def test_wrongly_typed_key_is_refused_by_name(plain, tmp_path, key, value, expected):
    changes = {**llama_vocab(["a", "b", "ab"]), key: value}
    refused(rewrite_metadata(plain, tmp_path / "typed.gguf", changes), key, expected)


def test_token_that_is_not_utf8_is_refused(plain, tmp_path):
    changes = llama_vocab(["a", "b", "ab"])
    changes["tokenizer.ggml.tokens"] = (["<unk>", "a", b"\xff" + SECRET.encode(), "ab"], T.ARRAY, T.STRING)
    refused(rewrite_metadata(plain, tmp_path / "utf.gguf", changes), "tokenizer.ggml.tokens", "not UTF-8")


# ------------------------------------------------------------------------------------------------ merges
def brute_force_merges(tokens, scores, skip):
    """The definition: every split of every piece into two pieces, best score first (ties: by the parts' ids)."""
    vocab = {t: i for i, t in enumerate(tokens) if i not in skip}
    found = sorted((-scores[i], vocab[p[:k]], vocab[p[k:]]) for p, i in vocab.items() for k in range(1, len(p))
                   if p[:k] in vocab and p[k:] in vocab)
    return [(tokens[a], tokens[b]) for _, a, b in found]


def test_merges_by_hash_equal_the_definition(monkeypatch):
    """With SHORT lowered to 3, most pieces and parts go through the hash path: the merges still equal the
    brute-force definition on seeded random vocabularies over a two-letter alphabet (many splits each)."""
    monkeypatch.setattr(gguf_tokenizer, "SHORT", 3)
    rng = random.Random(0)
    for _ in range(20):
        tokens = sorted({"".join(rng.choice("ab") for _ in range(rng.randint(1, 12))) for _ in range(200)})
        rng.shuffle(tokens)
        scores = [float(rng.choice([0, -1, -2])) for _ in tokens]
        skip = set(rng.sample(range(len(tokens)), 5))
        assert gguf_tokenizer._merges_from_scores(tokens, scores, skip) == brute_force_merges(tokens, scores, skip)


def test_merges_are_rebuilt_in_linear_time():
    """Two 200,000-character pieces: slicing every prefix took ~10 s (quadratic); hashing takes well under 3 s."""
    n = 200_000
    tokens = ["a", "b", "a" * (n - 1), "a" * (n - 1) + "b"]
    start = time.perf_counter()
    merges = gguf_tokenizer._merges_from_scores(tokens, [0.0, 0.0, -1.0, -2.0], set())
    elapsed = time.perf_counter() - start
    assert merges == [("a" * (n - 1), "b")]
    assert elapsed < 3.0, f"{elapsed:.1f} s"
