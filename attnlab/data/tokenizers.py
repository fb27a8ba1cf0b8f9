"""Tokenizers through Hugging Face `tokenizers`, behind one small face attnlab's models, trainer and explorer share.

A Tokenizer wraps a `tokenizers.Tokenizer` and remembers which strings are its special tokens
([PAD], [CLS], [SEP], [MASK], [UNK], BOS/EOS), so every part of attnlab finds them the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer as HFTokenizer

from attnlab.errors import CheckpointError

SPECIAL_ROLES = ("pad", "unk", "cls", "sep", "mask", "bos", "eos")
META_NAME = "attnlab_tokenizer.json"


class Tokenizer:
    def __init__(self, hf: HFTokenizer, special: dict[str, str] | None = None):
        self.hf = hf
        self.hf.no_padding()  # checkpoints may ship fixed-length padding; attnlab pads batches itself
        self.special = {role: tok for role, tok in (special or {}).items() if tok is not None}
        for role, tok in self.special.items():
            if role not in SPECIAL_ROLES:
                raise ValueError(f"unknown special-token role {role!r}; allowed: {', '.join(SPECIAL_ROLES)}")
            if hf.token_to_id(tok) is None:
                raise ValueError(f"special token {tok!r} ({role}) is not in the vocabulary")

    # ids of the special tokens (None when the tokenizer has no such token)
    def _id(self, role: str) -> int | None:
        tok = self.special.get(role)
        return self.hf.token_to_id(tok) if tok is not None else None

    pad_id = property(lambda self: self._id("pad"))
    unk_id = property(lambda self: self._id("unk"))
    cls_id = property(lambda self: self._id("cls"))
    sep_id = property(lambda self: self._id("sep"))
    mask_id = property(lambda self: self._id("mask"))
    bos_id = property(lambda self: self._id("bos"))
    eos_id = property(lambda self: self._id("eos"))

    @property
    def vocab_size(self) -> int:
        return self.hf.get_vocab_size(with_added_tokens=True)

    @property
    def special_ids(self) -> set[int]:
        return {i for i in (self._id(r) for r in self.special) if i is not None}

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self.hf.encode(text, add_special_tokens=add_special_tokens).ids

    def encode_batch(self, texts: list[str], add_special_tokens: bool = True) -> list[list[int]]:
        return [e.ids for e in self.hf.encode_batch(texts, add_special_tokens=add_special_tokens)]

    def tokens(self, text: str, add_special_tokens: bool = True) -> list[str]:
        return self.hf.encode(text, add_special_tokens=add_special_tokens).tokens

    def id_to_token(self, i: int) -> str:
        return self.hf.id_to_token(int(i))

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return self.hf.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def save(self, directory: str | Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.hf.save(str(directory / "tokenizer.json"))
        (directory / META_NAME).write_text(json.dumps({"special": self.special}, indent=2) + "\n")

    @classmethod
    def from_file(cls, path: str | Path, special: dict[str, str] | None = None) -> Tokenizer:
        path = Path(path)
        try:
            hf = HFTokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception on bad files
            raise CheckpointError(f"{path} is not a valid tokenizer.json ({exc})") from None
        return cls(hf, special if special is not None else guess_special(hf))


def guess_special(hf: HFTokenizer) -> dict[str, str]:
    """Find the conventional special tokens of BERT ([CLS] ...), GPT-2 (<|endoftext|>) and LLaMA (<s> </s>)."""
    vocab = hf.get_vocab(with_added_tokens=True)
    candidates = {
        "pad": ["[PAD]", "<pad>", "<|pad|>"], "unk": ["[UNK]", "<unk>", "<|unk|>"], "cls": ["[CLS]", "<cls>"],
        "sep": ["[SEP]", "<sep>"], "mask": ["[MASK]", "<mask>"],
        "bos": ["<s>", "<|im_start|>", "<|endoftext|>", "[BOS]", "<bos>"],
        "eos": ["</s>", "<|im_end|>", "<|endoftext|>", "[EOS]", "<eos>"],
    }
    return {role: next(t for t in toks if t in vocab) for role, toks in candidates.items()
            if any(t in vocab for t in toks)}


def load_tokenizer(directory: str | Path) -> Tokenizer | None:
    """The tokenizer saved in `directory` (tokenizer.json, or BERT vocab.txt, or GPT-2 vocab.json+merges.txt)."""
    directory = Path(directory)
    special = None
    meta = directory / META_NAME
    if meta.is_file():
        special = json.loads(meta.read_text()).get("special")
    if (directory / "tokenizer.json").is_file():
        return Tokenizer.from_file(directory / "tokenizer.json", special)
    if (directory / "vocab.txt").is_file():
        from tokenizers.implementations import BertWordPieceTokenizer

        hf = BertWordPieceTokenizer(str(directory / "vocab.txt"), lowercase=True)._tokenizer
        return Tokenizer(hf, special if special is not None else guess_special(hf))
    if (directory / "vocab.json").is_file() and (directory / "merges.txt").is_file():
        from tokenizers.implementations import ByteLevelBPETokenizer

        hf = ByteLevelBPETokenizer(str(directory / "vocab.json"), str(directory / "merges.txt"))._tokenizer
        return Tokenizer(hf, special if special is not None else guess_special(hf))
    return None
