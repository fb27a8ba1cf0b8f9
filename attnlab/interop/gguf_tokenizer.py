"""A tokenizer in GGUF metadata (llama.cpp's `tokenizer.ggml.*` keys): written by save_gguf, rebuilt by load_gguf.

llama.cpp names three kinds of vocabulary that attnlab's tokenizers (Hugging Face `tokenizers`) can be:
- "gpt2": byte-level BPE (GPT-2, SmolLM2, attnlab's train_bpe): `tokens` in the byte alphabet, `merges` ("a b",
  best first), `pre` naming the split before BPE ("gpt2": GPT-2's regex; "smollm": every digit alone, then it);
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
"""

from __future__ import annotations

import json
import re
import warnings

import numpy as np

from attnlab.data.tokenizers import Tokenizer as Wrapper
from attnlab.errors import CheckpointError

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6  # gguf.TokenType
KINDS = ("gpt2", "llama", "bert")
SPACE = "\u2581"
BYTE_TOKEN = re.compile(r"<0x[0-9A-F]{2}>")


def field(reader, key: str, default=None):
    """A metadata value of a gguf.GGUFReader as a Python value (numpy scalars unwrapped), or `default`."""
    f = reader.fields.get(key)
    if f is None:
        return default
    value = f.contents()
    if isinstance(value, np.generic):
        value = value.item()
    return value


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
        return "gpt2"
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
    return kind


# ------------------------------------------------------------------------------------------------ reading
def _merges_from_scores(tokens: list[str], scores: list[float], skip: set[int]) -> list[tuple[str, str]]:
    """BPE merges a SentencePiece vocabulary implies: every split of a piece into two pieces of the vocabulary,
    best score first (llama.cpp merges the adjacent pair whose joined piece scores highest)."""
    vocab = {t: i for i, t in enumerate(tokens) if i not in skip}
    found = []
    for piece, i in vocab.items():
        splits = [(piece[:k], piece[k:]) for k in range(1, len(piece)) if piece[:k] in vocab and piece[k:] in vocab]
        found += [(-scores[i], vocab[a], vocab[b], a, b) for a, b in splits]
    found.sort()
    return [(a, b) for *_, a, b in found]


def tokenizer_from_gguf(reader, source: str = "gguf"):
    """The tokenizer stored in tokenizer.ggml.* (kinds "gpt2", "llama", "bert"), with its chat template as the
    attribute `chat_template` (None without one); None (with a warning for another kind) when there is none."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    kind = field(reader, "tokenizer.ggml.model")
    tokens = field(reader, "tokenizer.ggml.tokens")
    if kind is None or tokens is None:
        return None
    if kind not in KINDS:
        warnings.warn(f"{source}: tokenizer model {kind!r} is not rebuilt (only {', '.join(KINDS)}); "
                      "the model loads without a tokenizer", stacklevel=3)
        return None
    types = [int(t) for t in field(reader, "tokenizer.ggml.token_type", [])] or [NORMAL] * len(tokens)
    if len(types) != len(tokens):
        raise CheckpointError(f"{source}: tokenizer.ggml.token_type has {len(types)} entries for {len(tokens)} "
                              "tokens")

    def token(key: str):
        i = field(reader, f"tokenizer.ggml.{key}")
        return tokens[int(i)] if i is not None and 0 <= int(i) < len(tokens) else None

    bos, eos, unk, pad = (token(k) for k in ("bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id"))
    add_bos = bool(field(reader, "tokenizer.ggml.add_bos_token", kind == "llama"))  # llama.cpp's defaults
    if kind == "gpt2":
        merges = [tuple(m.split(" ", 1)) for m in field(reader, "tokenizer.ggml.merges", [])]
        hf = Tokenizer(models.BPE({tok: i for i, tok in enumerate(tokens)}, merges, fuse_unk=False))
        byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        pre = field(reader, "tokenizer.ggml.pre", "default")
        if pre == "smollm":  # SmolLM splits every digit on its own, then GPT-2's byte-level regex
            hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
        else:
            if pre not in ("default", "gpt2"):
                warnings.warn(f"{source}: pre-tokenizer {pre!r} is approximated by GPT-2's byte-level split; "
                              "token ids may differ from the original tokenizer on some texts", stacklevel=3)
            hf.pre_tokenizer = byte_level
        hf.decoder = decoders.ByteLevel()
        special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    elif kind == "llama":
        scores = [float(s) for s in field(reader, "tokenizer.ggml.scores", [])] or [0.0] * len(tokens)
        skip = {i for i, t in enumerate(types) if t in (CONTROL, BYTE, UNUSED, UNKNOWN)}
        merges = _merges_from_scores(tokens, scores, skip)
        hf = Tokenizer(models.BPE({tok: i for i, tok in enumerate(tokens)}, merges, unk_token=unk, fuse_unk=True,
                                  byte_fallback=True))
        prefix = bool(field(reader, "tokenizer.ggml.add_space_prefix", True))
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
    wrapper.chat_template = field(reader, "tokenizer.chat_template")
    return wrapper
