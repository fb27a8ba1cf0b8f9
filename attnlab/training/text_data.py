"""Small data helpers the recipes share: corpora, tokenizers built with Hugging Face `tokenizers`, windows.

Kept deliberately plain (in-memory tensors): the recipes' corpora are at most a few MB. attnlab.data holds the
general data layer (memory-mapped token files, collators); these helpers only keep the recipes self-contained.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
from tokenizers import Regex, decoders, models, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

from attnlab.data.tokenizers import Tokenizer
from attnlab.errors import InputError


def python_docs_text() -> str:
    """The Python documentation topics that ship with CPython (pydoc_data.topics): ~460k characters, offline."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k] for k in sorted(topics))


def read_corpus(path: str | None) -> str:
    """The text of `path`, or the CPython docs when path is empty. Refuses a missing or empty file by name."""
    if not path:
        return python_docs_text()
    file = Path(path).expanduser()
    if not file.is_file():
        raise InputError(f"data file {file} does not exist; give a UTF-8 text file (or leave data= empty for "
                         "the CPython documentation)")
    text = file.read_text(encoding="utf-8", errors="replace")
    if not text.strip():
        raise InputError(f"data file {file} is empty; give a UTF-8 text file with some text in it")
    return text


def char_tokenizer(text: str, extra_special: dict[str, str] | None = None) -> Tokenizer:
    """One token per character seen in `text` (sorted), after [UNK] and any extra special tokens (role -> token);
    decoding concatenates."""
    special = {"unk": "[UNK]", **(extra_special or {})}
    vocab = {tok: i for i, tok in enumerate(special.values())}
    for c in sorted(set(text)):
        vocab.setdefault(c, len(vocab))
    hf = HFTokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    hf.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    hf.decoder = decoders.Fuse()
    if extra_special:
        hf.add_special_tokens(list(extra_special.values()))  # never split into characters
    return Tokenizer(hf, special)


def word_tokenizer(words: list[str], special: dict[str, str]) -> Tokenizer:
    """A closed word-level vocabulary (specials first); hyphens and commas are tokens of their own."""
    vocab: dict[str, int] = {}
    for tok in [*special.values(), *sorted(set(words))]:
        vocab.setdefault(tok, len(vocab))
    hf = HFTokenizer(models.WordLevel(vocab, unk_token=special.get("unk", "[UNK]")))
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                pre_tokenizers.Punctuation(behavior="isolated")])
    return Tokenizer(hf, special)


def split_words(text: str) -> list[str]:
    """The same split word_tokenizer's pre-tokenizer makes (used to collect the vocabulary)."""
    return re.findall(r"[^\s\-,]+|[\-,]", text)


def bpe_tokenizer(text: str, vocab_size: int) -> Tokenizer:
    """Byte-level BPE (GPT-2 style) trained on `text`."""
    from tokenizers.implementations import ByteLevelBPETokenizer

    impl = ByteLevelBPETokenizer()
    impl.train_from_iterator(text.split("\n\n"), vocab_size=vocab_size, min_frequency=2,
                             special_tokens=["<|endoftext|>"], show_progress=False)
    return Tokenizer(impl._tokenizer, {"bos": "<|endoftext|>", "eos": "<|endoftext|>"})


def wordpiece_tokenizer(text: str, vocab_size: int) -> Tokenizer:
    """BERT-style lower-cased WordPiece with [PAD] [UNK] [CLS] [SEP] [MASK], trained on `text`."""
    from tokenizers.implementations import BertWordPieceTokenizer

    impl = BertWordPieceTokenizer(lowercase=True)
    impl.train_from_iterator(text.split("\n\n"), vocab_size=vocab_size, min_frequency=2, show_progress=False,
                             special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    return Tokenizer(impl._tokenizer, {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]",
                                       "mask": "[MASK]"})


def encode_corpus(tokenizer: Tokenizer, text: str) -> torch.Tensor:
    """The whole corpus as one long (n_tokens,) id tensor, paragraph by paragraph (no special tokens)."""
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    ids: list[int] = []
    for enc in tokenizer.encode_batch([p + "\n\n" for p in paragraphs], add_special_tokens=False):
        ids.extend(enc)
    return torch.tensor(ids, dtype=torch.long)


def split_train_val(ids: torch.Tensor, val_fraction: float, window: int, batch_size: int,
                    what: str = "corpus") -> tuple[torch.Tensor, torch.Tensor]:
    """Contiguous split: the last `val_fraction` of the tokens is validation. Refuses a corpus too small for
    one batch of windows."""
    n_val = int(len(ids) * val_fraction)
    train, val = ids[: len(ids) - n_val], ids[len(ids) - n_val:]
    if len(train) < window + batch_size or len(val) < window:
        raise InputError(f"{what} has {len(ids)} tokens: too small for windows of {window} tokens "
                         f"(train needs > {window + batch_size}, validation >= {window} at "
                         f"val_fraction={val_fraction}); give more text or lower seq_len/batch_size")
    return train, val


def random_windows(ids: torch.Tensor, n: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """(n, length) windows starting at uniformly drawn offsets."""
    starts = torch.randint(0, len(ids) - length + 1, (n,), generator=generator)
    return torch.stack([ids[s: s + length] for s in starts.tolist()])


def tiled_windows(ids: torch.Tensor, length: int, limit: int | None = None) -> torch.Tensor:
    """(n, length) non-overlapping windows covering `ids` from the start (the remainder is dropped)."""
    n = len(ids) // length
    if limit is not None:
        n = min(n, limit)
    return ids[: n * length].view(n, length)
