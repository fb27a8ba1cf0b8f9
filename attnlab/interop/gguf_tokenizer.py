"""A tokenizer in GGUF metadata (llama.cpp's `tokenizer.ggml.*` keys): written by save_gguf, rebuilt by load_gguf.

llama.cpp names three kinds of vocabulary that attnlab's tokenizers (Hugging Face `tokenizers`) can be:
- "gpt2": byte-level BPE (GPT-2, SmolLM2, attnlab's train_bpe): `tokens` in the byte alphabet, `merges` ("a b",
  best first), `pre` naming the split before BPE ("gpt-2": GPT-2's regex; "smollm": every digit alone, then it);
- "llama": SentencePiece-style BPE with byte fallback (LLaMA 1/2, Mistral): `tokens` with "\u2581" for a space,
  `<0xNN>` byte tokens (type BYTE) and `scores`; no merges: llama.cpp merges the adjacent pair whose joined piece
  has the highest score, so a merge of rank r is written as the score -r and read back the same way;
  `add_space_prefix` says whether a "\u2581" is put before the text;
- "bert": WordPiece (uncased BERT): llama.cpp spells a word-initial piece "\u2581piece" and a continuation piece
  "piece" (where `tokenizers` writes "piece" and "##piece"); [CLS] is the BOS id, [SEP] the separator.
Every kind stores `token_type` (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte) and the special
ids (bos/eos/unk/pad/sep/mask); `tokenizer.chat_template` holds a Jinja chat template when there is one.
A model whose vocabulary is larger than its tokenizer's (rows kept for alignment) gets "[PAD{i}]" tokens of type
UNUSED, as llama.cpp's converter writes them: llama.cpp wants one token per embedding row.

Reading is bounded, because a GGUF file may come from anyone: gguf_file.open_gguf checks the caps below (caps())
as it walks the metadata: more than MAX_KEYS keys, an array of more than MAX_ARRAY entries (real vocabularies reach
~260k tokens, LLaMA 3's merges 280k), more than MAX_STRINGS strings in all arrays together, or a string in an array
(a token, a merge) longer than MAX_STRING_BYTES (real tokens are at most a few hundred bytes) are refused before
anything is built from them. tokenizer_from_gguf checks every key's type and length the same way (a
gguf.GGUFReader may be passed in), and rebuilds a "llama" vocabulary's merges in time linear in its characters.
Every refusal is one CheckpointError naming the file and the key, never the content.
A tokenizer read from a GGUF file carries that file's tokenizer keys (`gguf_metadata`), so that writing it again
keeps each key, its value and its type (see keep_source_keys).
"""

from __future__ import annotations

import json
import random
import re
import warnings
from itertools import accumulate
from operator import itemgetter

from attnlab.data.tokenizers import Tokenizer as Wrapper
from attnlab.errors import CheckpointError
from attnlab.interop.gguf_file import (
    ARRAY,
    BOOL,
    FLOAT32,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT8,
    UINT16,
    UINT32,
    UINT64,
    Caps,
    GGUFFile,
    as_gguf_file,
    spelled,
)
from attnlab.interop.gguf_file import safe_name as _name

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6  # gguf.TokenType
KINDS = ("gpt2", "llama", "bert")
SPACE = "\u2581"
BYTE_TOKEN = re.compile(r"<0x[0-9A-F]{2}>")

MAX_KEYS = 10_000  # metadata keys of one file (real files: ~40)
MAX_ARRAY = 400_000  # entries of one array: tokens, merges, scores (Gemma: 262,144 tokens; LLaMA 3: 280k merges)
MAX_STRINGS = 800_000  # strings in all metadata arrays together (LLaMA 3: 128k tokens + 280k merges)
MAX_STRING_BYTES = 1_024  # one string of an array: a token or a merge (real tokens: at most a few hundred bytes)

INTS = (UINT8, INT8, UINT16, INT16, UINT32, INT32, UINT64, INT64)
FLOATS = (FLOAT32, FLOAT64)


def caps() -> Caps:
    """The caps above as they are now (read at each call: a test may lower them), for gguf_file.open_gguf."""
    return Caps(MAX_KEYS, MAX_ARRAY, MAX_STRINGS, MAX_STRING_BYTES)


def field(reader: GGUFFile, key: str, default=None):
    """A metadata value as Python, or `default` when the key is absent."""
    f = reader.fields.get(key)
    return default if f is None else f.value()


# ------------------------------------------------------------------------------------------------ writing
def _parts(component: dict | None) -> list[dict]:
    """A normalizer / pre-tokenizer / decoder of a tokenizer.json as its flat list of steps."""
    if not component:
        return []
    key = "normalizers" if "normalizers" in component else "pretokenizers" if "pretokenizers" in component else None
    if component.get("type") == "Sequence" and key:
        return [p for c in component[key] for p in _parts(c)]
    return [component]


def _kind(spec: dict) -> str:
    """Which llama.cpp vocabulary kind a tokenizer.json describes; a clear error for one llama.cpp cannot run."""
    model = spec["model"]
    pre = [p.get("type") for p in _parts(spec.get("pre_tokenizer"))]
    if model["type"] == "BPE" and "ByteLevel" in pre and not model.get("byte_fallback"):
        return "gpt2"
    if model["type"] == "BPE" and model.get("byte_fallback"):
        return "llama"
    if model["type"] == "WordPiece":
        return "bert"
    raise CheckpointError(f"save_gguf: a {model['type']} tokenizer has no llama.cpp vocabulary type; supported: "
                          "byte-level BPE (gpt2), SentencePiece-style BPE with byte fallback (llama), WordPiece "
                          "(bert); pass tokenizer=None to write the model alone")


def _gpt2_pre(spec: dict) -> str:
    """llama.cpp's name for the split before byte-level BPE: GPT-2's regex, or SmolLM's digits-then-GPT-2."""
    parts = _parts(spec.get("pre_tokenizer"))
    kinds = [p.get("type") for p in parts]
    regex = all(p.get("use_regex", True) for p in parts if p.get("type") == "ByteLevel")
    if kinds == ["ByteLevel"] and regex:
        return "gpt-2"  # llama.cpp's name (convert_hf_to_gguf_update.py); "gpt2" it refuses as unknown
    if kinds == ["Digits", "ByteLevel"] and parts[0].get("individual_digits") and regex:
        return "smollm"
    raise CheckpointError(f"save_gguf: byte-level BPE split by {kinds} has no llama.cpp pre-tokenizer name attnlab "
                          "knows; supported: GPT-2's split (ByteLevel with its regex), SmolLM's (Digits, ByteLevel)")


def _space_prefix(spec: dict) -> bool:
    """Whether a SentencePiece-style tokenizer puts "\u2581" before the text (llama.cpp's add_space_prefix)."""
    for p in _parts(spec.get("pre_tokenizer")):
        if p.get("type") == "Metaspace":
            return p.get("prepend_scheme", "always") in ("always", "first") and p.get("add_prefix_space", True)
    return any(p.get("type") == "Prepend" and p.get("prepend") == SPACE for p in _parts(spec.get("normalizer")))


def _adds(spec: dict) -> tuple[str | None, str | None]:
    """(first, last) special token the post-processor puts around a single text (BOS / [CLS], EOS / [SEP])."""
    post = spec.get("post_processor") or {}
    steps = [p for p in ([post] if post.get("type") != "Sequence" else post.get("processors", []))
             if p.get("type") == "TemplateProcessing"]
    if not steps:
        return None, None
    single = steps[0]["single"]
    first = single[0]["SpecialToken"]["id"] if "SpecialToken" in single[0] else None
    last = single[-1]["SpecialToken"]["id"] if "SpecialToken" in single[-1] else None
    return first, last


def write_tokenizer(writer, tokenizer: Wrapper, vocab_size: int, chat_template: str | None = None) -> str:
    """Write `tokenizer`'s tokenizer.ggml.* keys (and the chat template) with a gguf.GGUFWriter; returns the kind."""
    hf = tokenizer.hf
    spec = json.loads(hf.to_str())
    kind = _kind(spec)
    vocab = hf.get_vocab(with_added_tokens=True)
    n = len(vocab)
    if sorted(vocab.values()) != list(range(n)):
        raise CheckpointError("save_gguf: the tokenizer's ids are not 0..n-1; llama.cpp needs one token per id")
    if n > vocab_size:
        raise CheckpointError(f"save_gguf: the tokenizer has {n} tokens but the model only {vocab_size} rows")
    tokens = [""] * n
    for tok, i in vocab.items():
        tokens[i] = tok
    added = hf.get_added_tokens_decoder()  # id -> AddedToken
    types = [CONTROL if i in added and added[i].special else USER_DEFINED if i in added else NORMAL
             for i in range(n)]
    unk = tokenizer.unk_id
    if kind == "llama":
        types = [BYTE if BYTE_TOKEN.fullmatch(t) and ty == NORMAL else ty for t, ty in zip(tokens, types, strict=True)]
        if unk is not None:
            types[unk] = UNKNOWN
    if kind == "bert":  # llama.cpp's WordPiece spelling: a word start carries the space mark, "##" goes
        tokens = [t if ty != NORMAL else t[2:] if t.startswith("##") else SPACE + t
                  for t, ty in zip(tokens, types, strict=True)]
    kept = (getattr(tokenizer, "gguf_metadata", None) or {}).get("tokenizer.ggml.token_type", (None,))[0]
    if kept and len(kept) == n:  # a GGUF's UNUSED rows (its padding) are plain tokens in a `tokenizers` vocabulary
        types = [UNUSED if k == UNUSED and t == NORMAL else t for k, t in zip(kept, types, strict=True)]
    tokens += [f"[PAD{i}]" for i in range(n, vocab_size)]
    types += [UNUSED] * (vocab_size - n)

    writer.add_tokenizer_model(kind)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    first, last = _adds(spec)
    if kind == "gpt2":
        writer.add_tokenizer_pre(_gpt2_pre(spec))
        merges = spec["model"]["merges"]
        writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    elif kind == "llama":
        writer.add_tokenizer_pre("default")
        rank = {}
        for r, m in enumerate(spec["model"]["merges"]):
            a, b = m.split(" ", 1) if isinstance(m, str) else m
            rank.setdefault(vocab[a + b], r)
        writer.add_token_scores([-float(rank[i]) if i in rank else 0.0 for i in range(vocab_size)])
        writer.add_add_space_prefix(_space_prefix(spec))
    else:
        normalizer = _parts(spec.get("normalizer"))
        if not any(p.get("type") == "BertNormalizer" and p.get("lowercase") for p in normalizer):
            raise CheckpointError("save_gguf: llama.cpp's WordPiece lowercases its input; this WordPiece tokenizer "
                                  "is cased, so llama.cpp would split texts differently")
        writer.add_tokenizer_pre("default")
        writer.add_token_type_count(2)
    ids = {"bos": tokenizer.bos_id, "eos": tokenizer.eos_id, "unk": unk, "pad": tokenizer.pad_id}
    if kind == "bert":
        ids.update(bos=tokenizer.cls_id, eos=tokenizer.sep_id, sep=tokenizer.sep_id, mask=tokenizer.mask_id)
    adders = {"bos": writer.add_bos_token_id, "eos": writer.add_eos_token_id, "unk": writer.add_unk_token_id,
              "pad": writer.add_pad_token_id, "sep": writer.add_sep_token_id, "mask": writer.add_mask_token_id}
    for role, i in ids.items():
        if i is not None:
            adders[role](i)
    spelled = {role: hf.id_to_token(i) for role, i in ids.items() if i is not None}
    writer.add_add_bos_token(first is not None and first == spelled.get("bos"))
    if kind == "bert":
        writer.add_add_sep_token(last is not None and last == spelled.get("sep"))
    else:
        writer.add_add_eos_token(last is not None and last == spelled.get("eos"))
    if chat_template:
        writer.add_chat_template(chat_template)
    source = getattr(tokenizer, "gguf_metadata", None)
    if source:
        defaults = {"tokenizer.ggml.add_eos_token": False, "tokenizer.ggml.add_bos_token": kind == "llama",
                    "tokenizer.ggml.pre": "default"}
        if kind == "llama":
            defaults["tokenizer.ggml.add_space_prefix"] = True
        keep_source_keys(writer, source, lambda key: key.startswith("tokenizer."), defaults)
    return kind


# Each GGUF integer type's range, for keeping a source file's type when the value written still fits it
INT_RANGES = {UINT8: (0, 2**8 - 1), INT8: (-2**7, 2**7 - 1), UINT16: (0, 2**16 - 1), INT16: (-2**15, 2**15 - 1),
              UINT32: (0, 2**32 - 1), INT32: (-2**31, 2**31 - 1), UINT64: (0, 2**64 - 1), INT64: (-2**63, 2**63 - 1)}


def _fits(value, kind: int) -> bool:
    """Whether a Python value can be written as GGUF type `kind` unchanged."""
    if kind == BOOL:
        return isinstance(value, bool)
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]
        return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    if kind in FLOATS:
        return isinstance(value, float)
    return kind == STRING and isinstance(value, str)


def _in_type(entry, kind: int, sub: int | None):
    """The writer's entry (a gguf GGUFValue) retyped to the source's (kind, sub) when its value fits that type."""
    from gguf import GGUFValueType
    from gguf.gguf_writer import GGUFValue

    value = entry.value
    if kind == ARRAY:
        same = int(entry.type) == ARRAY and isinstance(value, (list, tuple)) and all(_fits(v, sub) for v in value)
    else:
        same = _fits(value, kind)
    if not same:
        return entry
    return GGUFValue(value, GGUFValueType(kind), None if sub is None else GGUFValueType(sub))


def keep_source_keys(writer, source: dict, mine, defaults: dict) -> None:
    """Make the writer's metadata keep the keys of the file a model or tokenizer was read from, so that a GGUF file
    read and written again has the same keys, values and types. source: {key: (value, type, sub type)} in the
    file's order (value None: not kept, rebuilt by the writer); mine(key): the keys this source speaks for.
    - a key in both: the value being written (it describes what is written), in the source's type when it fits;
    - a key only in the source (general.license, tokenizer.ggml.add_space_prefix, ...): copied as it was;
    - a key only in the writer: left out when its value is what readers assume without it (`defaults`).
    Then the source's keys, and this source's others after them, take the source's order in the slots they hold
    (a model's source lists every key of its file, so a whole file read and written again keeps its order)."""
    from gguf import GGUFValueType
    from gguf.gguf_writer import GGUFValue

    written = writer.kv_data[0]  # gguf.GGUFWriter's {key: GGUFValue} of the (single) file
    for key, (value, kind, sub) in source.items():
        if not mine(key):
            continue
        if key in written:
            written[key] = _in_type(written[key], kind, sub)
        elif value is not None:
            written[key] = GGUFValue(value, GGUFValueType(kind), None if sub is None else GGUFValueType(sub))
    for key in [k for k in written if mine(k) and k not in source and k in defaults]:
        if written[key].value == defaults[key] and type(written[key].value) is type(defaults[key]):
            del written[key]
    rank = {key: i for i, key in enumerate(source)}
    items = list(written.items())
    slots = [i for i, (key, _) in enumerate(items) if key in rank or mine(key)]  # the others stay where they are
    moved = sorted((items[i] for i in slots), key=lambda kv: (kv[0] not in rank, rank.get(kv[0], 0)))
    for i, item in zip(slots, moved, strict=True):
        items[i] = item
    written.clear()
    written.update(items)


def source_keys(reader, source: str, wanted, kept) -> dict:
    """{key: (value, type, sub type)} of the file's metadata keys for which wanted(key), in the file's order; the
    value is read only where kept(key) (else None: the writer rebuilds it, and 100k tokens need not be held
    twice). Arrays of arrays, which no tokenizer or model metadata uses, are left out. reader: a GGUFFile or a
    gguf.GGUFReader."""
    reader = as_gguf_file(reader)
    keys = {}
    for key, f in reader.fields.items():
        types = f.types
        if key.startswith("GGUF.") or not wanted(key) or len(types) > 2:
            continue
        value = _read(reader, key, tuple(range(13)), "a value", source, array=len(types) == 2) if kept(key) else None
        keys[key] = (value, types[0], types[-1] if types[0] == ARRAY else None)
    return keys


# ------------------------------------------------------------------------------------------------ reading
# A piece of up to SHORT characters is split by slicing (at most SHORT slices of it: linear, and faster than hashing
# in Python up to ~4,000 characters); a longer one (only reachable past the MAX_STRING_BYTES cap) goes by hashes.
SHORT = 1_024
MOD = (1 << 61) - 1  # a prime: two different strings of length L share a hash with odds at most L / 2**61


def _prefix_hashes(text: str, base: int) -> list[int]:
    """h[k] = hash of text[:k] for k = 0..len(text), one multiply-add per character."""
    return list(accumulate(map(ord, text), lambda acc, c: (acc * base + c) % MOD, initial=0))


def _splits(piece: str, vocab: dict[str, int], long: dict, base: int):
    """(id of a, id of b) for every split piece = a + b into two pieces of the vocabulary, in time linear in
    len(piece): a short part is sliced, a long one is found by its hash (the hash of piece[k:] follows from the
    prefix hashes: h[L] - h[k] * base**(L-k)). Slicing every split instead costs len(piece)**2 characters."""
    n = len(piece)
    if n <= SHORT:
        for k in range(1, n):
            a = vocab.get(piece[:k])
            b = vocab.get(piece[k:]) if a is not None else None
            if b is not None:
                yield a, b
        return
    h = _prefix_hashes(piece, base)
    power = 1
    for k in range(n - 1, 0, -1):  # power = base ** (n - k)
        power = power * base % MOD
        a = vocab.get(piece[:k]) if k <= SHORT else long.get((k, h[k]))
        if a is None:
            continue
        b = vocab.get(piece[k:]) if n - k <= SHORT else long.get((n - k, (h[n] - h[k] * power) % MOD))
        if b is not None:
            yield a, b


def _merges_from_scores(tokens: list[str], scores: list[float], skip: set[int]) -> list[tuple[str, str]]:
    """BPE merges a SentencePiece vocabulary implies: every split of a piece into two pieces of the vocabulary,
    best score first (llama.cpp merges the adjacent pair whose joined piece scores highest). Linear in the
    vocabulary's characters (plus sorting the merges), whatever the pieces' lengths."""
    vocab = {t: i for i, t in enumerate(tokens) if i not in skip}
    base = random.randrange(1 << 20, MOD - 1)  # drawn per call: a file cannot be built to make hashes collide
    long = {}  # (length, hash) -> id, for the pieces longer than SHORT
    for piece, i in vocab.items():
        if len(piece) > SHORT:
            long.setdefault((len(piece), _prefix_hashes(piece, base)[-1]), i)
    found = [(-scores[i], a, b) for piece, i in vocab.items() for a, b in _splits(piece, vocab, long, base)]
    found.sort()
    return [(tokens[a], tokens[b]) for _, a, b in found]


def _checked(reader: GGUFFile, key: str, kinds: tuple[int, ...], what: str, source: str, array: bool = False):
    """The field `key` (None when absent) after checking its type (and, for an array, its length and its strings'
    lengths) without decoding it; a clear CheckpointError naming the key otherwise."""
    f = reader.fields.get(key)
    if f is None:
        return None
    types = f.types
    shape = (len(types) == 2 and types[0] == ARRAY) if array else len(types) == 1
    if not shape or types[-1] not in kinds:
        raise CheckpointError(f"{source}: {key} is {spelled(types)}; expected {what}")
    if array and f.count > MAX_ARRAY:
        raise CheckpointError(f"{source}: {key} has {f.count:,} entries; attnlab reads at most {MAX_ARRAY:,}")
    if array and f.longest > MAX_STRING_BYTES:
        raise CheckpointError(f"{source}: {key} holds a string longer than {MAX_STRING_BYTES:,} bytes (real "
                              "tokens are a few hundred at most)")
    return f


def _read(reader: GGUFFile, key: str, kinds: tuple[int, ...], what: str, source: str, default=None,
          array: bool = False):
    """The value of `key` as Python (see _checked), or `default` when absent; text that is not UTF-8 is refused."""
    f = _checked(reader, key, kinds, what, source, array)
    if f is None:
        return default
    try:
        return f.value()
    except UnicodeDecodeError:
        raise CheckpointError(f"{source}: {key} holds text that is not UTF-8") from None


MERGES = "tokenizer.ggml.merges"


def _merges(reader: GGUFFile, tokens: list[str], source: str) -> list[tuple[str, str]]:
    """tokenizer.ggml.merges as pairs, each "a b" with a + b in the vocabulary; a and b themselves are checked by
    tokenizers' BPE as it is built (`_bpe`: a clean error there, which _bad_merge then names). What BPE would not
    check cleanly is checked here, with set operations over all merges at once: a pair whose joined token is not
    in the vocabulary makes tokenizers' Rust code panic (a stack trace on stderr), not raise. ~20 ms for SmolLM2's
    48,900 merges, where checking a and b here too took ~40 ms."""
    merges = _read(reader, MERGES, (STRING,), "an array of strings (\"a b\")", source, [], array=True)
    split = [m.partition(" ") for m in merges]
    if not (all(map(itemgetter(1), split))
            and set(tokens).issuperset([m.replace(" ", "", 1) for m in merges])):  # a + b, without a join per pair
        _bad_merge(split, tokens, source)
    return [(a, b) for a, _, b in split]


def _bad_merge(split: list[tuple[str, str, str]], tokens: list[str], source: str) -> None:
    """Raise the CheckpointError naming the first merge that has no space or joins tokens the vocabulary lacks
    (walked entry by entry: only for a file that failed the quick checks)."""
    vocab = set(tokens)
    for i, (a, space, b) in enumerate(split):
        if not space:
            raise CheckpointError(f"{source}: {MERGES} entry {i} has no space between its two tokens")
        if a not in vocab or b not in vocab or a + b not in vocab:
            raise CheckpointError(f"{source}: {MERGES} entry {i} joins tokens that tokenizer.ggml.tokens lacks")


def _bpe(vocab: dict[str, int], merges: list[tuple[str, str]], tokens: list[str], source: str, **options):
    """tokenizers' BPE model of `vocab` and `merges`; a merge of a token the vocabulary lacks (which BPE refuses
    with an error quoting the token) becomes _bad_merge's CheckpointError naming the entry, not the token."""
    from tokenizers import models

    try:
        return models.BPE(vocab, merges, **options)
    except Exception:
        _bad_merge([(a, " ", b) for a, b in merges], tokens, source)
        raise


def tokenizer_from_gguf(reader, source: str = "gguf"):
    """The tokenizer stored in tokenizer.ggml.* (kinds "gpt2", "llama", "bert"), with its chat template as the
    attribute `chat_template` (None without one) and the file's tokenizer keys as `gguf_metadata`; None (with a
    warning for another kind) when there is none. Every key is checked for its type and size first (at most
    MAX_ARRAY tokens and merges, tokens of at most MAX_STRING_BYTES bytes): a CheckpointError names the key."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    reader = as_gguf_file(reader)  # a gguf.GGUFReader passed in (benchmarks, the explorer) becomes a GGUFFile
    kind = _read(reader, "tokenizer.ggml.model", (STRING,), "a string", source)
    if kind is None or "tokenizer.ggml.tokens" not in reader.fields:
        return None
    if kind not in KINDS:
        warnings.warn(f"{source}: tokenizer model {_name(kind)!r} is not rebuilt (only {', '.join(KINDS)}); "
                      "the model loads without a tokenizer", stacklevel=3)
        return None
    tokens = _read(reader, "tokenizer.ggml.tokens", (STRING,), "an array of strings", source, array=True)
    if not tokens:
        raise CheckpointError(f"{source}: tokenizer.ggml.tokens is empty")
    types = _read(reader, "tokenizer.ggml.token_type", INTS, "an array of integers", source, [], array=True)
    types = [int(t) for t in types] or [NORMAL] * len(tokens)
    if len(types) != len(tokens):
        raise CheckpointError(f"{source}: tokenizer.ggml.token_type has {len(types)} entries for {len(tokens)} "
                              "tokens")

    def token(key: str):
        i = _read(reader, f"tokenizer.ggml.{key}", INTS, "an integer (a token id)", source)
        return tokens[int(i)] if i is not None and 0 <= int(i) < len(tokens) else None

    def flag(key: str, default: bool) -> bool:
        return bool(_read(reader, f"tokenizer.ggml.{key}", (BOOL,), "a bool", source, default))

    bos, eos, unk, pad = (token(k) for k in ("bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id"))
    add_bos = flag("add_bos_token", kind == "llama")  # llama.cpp's defaults
    if kind == "gpt2":
        merges = _merges(reader, tokens, source)
        hf = Tokenizer(_bpe({tok: i for i, tok in enumerate(tokens)}, merges, tokens, source, fuse_unk=False))
        byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        pre = _read(reader, "tokenizer.ggml.pre", (STRING,), "a string", source, "default")
        if pre == "smollm":  # SmolLM splits every digit on its own, then GPT-2's byte-level regex
            hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
        else:
            if pre not in ("default", "gpt-2", "gpt2"):  # "gpt2": what attnlab wrote before 2026-12-07
                warnings.warn(f"{source}: pre-tokenizer {_name(pre)!r} is approximated by GPT-2's byte-level "
                              "split; token ids may differ from the original tokenizer on some texts", stacklevel=3)
            hf.pre_tokenizer = byte_level
        hf.decoder = decoders.ByteLevel()
        special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    elif kind == "llama":
        scores = _read(reader, "tokenizer.ggml.scores", FLOATS, "an array of floats", source, [], array=True)
        scores = [float(s) for s in scores] or [0.0] * len(tokens)
        if len(scores) != len(tokens):
            raise CheckpointError(f"{source}: tokenizer.ggml.scores has {len(scores)} entries for {len(tokens)} "
                                  "tokens")
        skip = {i for i, t in enumerate(types) if t in (CONTROL, BYTE, UNUSED, UNKNOWN)}
        merges = _merges_from_scores(tokens, scores, skip)
        hf = Tokenizer(models.BPE({tok: i for i, tok in enumerate(tokens)}, merges, unk_token=unk, fuse_unk=True,
                                  byte_fallback=True))
        prefix = flag("add_space_prefix", True)
        hf.normalizer = normalizers.Sequence([*([normalizers.Prepend(SPACE)] if prefix else []),
                                              normalizers.Replace(" ", SPACE)])
        hf.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse(),
                                        *([decoders.Strip(" ", 1, 0)] if prefix else [])])
        special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    else:  # bert: back to tokenizers' spelling ("\u2581word" -> "word", "piece" -> "##piece")
        tokens = [t if ty != NORMAL else t[1:] if t.startswith(SPACE) else "##" + t
                  for t, ty in zip(tokens, types, strict=True)]
        bos, unk, pad = token("bos_token_id"), token("unknown_token_id"), token("padding_token_id")
        hf = Tokenizer(models.WordPiece({tok: i for i, tok in enumerate(tokens)}, unk_token=unk or "[UNK]"))
        hf.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=None)
        hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        hf.decoder = decoders.WordPiece()
        sep = token("seperator_token_id")
        special = {"cls": bos, "sep": sep, "pad": pad, "unk": unk, "mask": token("mask_token_id")}
    hf.add_special_tokens([AddedToken(t, special=True, normalized=False)
                           for t, ty in zip(tokens, types, strict=True) if ty == CONTROL])
    hf.add_tokens([AddedToken(t, special=False, normalized=False)
                   for t, ty in zip(tokens, types, strict=True) if ty == USER_DEFINED])
    if kind == "bert" and add_bos and special["cls"] and special["sep"]:
        cls, sep = special["cls"], special["sep"]
        hf.post_processor = processors.TemplateProcessing(
            single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1",
            special_tokens=[(cls, tokens.index(cls)), (sep, tokens.index(sep))])
    elif add_bos and bos is not None:
        hf.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                          special_tokens=[(bos, tokens.index(bos))])
    elif kind == "gpt2":
        hf.post_processor = processors.ByteLevel(trim_offsets=False)
    wrapper = Wrapper(hf, {k: v for k, v in special.items() if v is not None})
    wrapper.chat_template = _read(reader, "tokenizer.chat_template", (STRING,), "a string", source)
    rebuilt = {"tokenizer.ggml.tokens", "tokenizer.ggml.merges" if kind == "gpt2" else "tokenizer.ggml.scores"}
    wrapper.gguf_metadata = source_keys(reader, source, lambda key: key.startswith("tokenizer."),
                                        lambda key: key not in rebuilt)
    return wrapper
