"""Token pieces as text a learner can read.

Byte-level BPE (GPT-2, SmolLM2) works on the UTF-8 bytes of the text and writes each byte as a printable
stand-in character: a space is `Ġ`, a newline `Ċ`, and a Japanese character's three bytes come out as mojibake
such as `æĿ` + `±`. `piece_texts` undoes that per token: each token gets the characters that *start* in its
bytes, and a token holding only the later bytes of a character started by an earlier token gets "" (the
explorer shows it as CONTINUATION). Concatenated, the texts are exactly what the tokenizer decodes the ids to.

Pure functions of the pieces (no model, no tokenizer object), so they are tested against the tokenizer's own
decode in tests/explorer/test_api.py.
"""

from __future__ import annotations

import codecs
import json

CONTINUATION = "◌"  # shown for a token that only continues a character an earlier token started


def _byte_table() -> dict[str, int]:
    """GPT-2's printable stand-in character -> byte: printable Latin-1 bytes stand for themselves, the other 68
    bytes (controls, space, soft hyphen ...) map in order to U+0100 and up (so 0x20 -> `Ġ`, 0x0A -> `Ċ`)."""
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {chr(b): b for b in keep}
    extra = 0
    for b in range(256):
        if b not in table.values():
            table[chr(0x100 + extra)] = b
            extra += 1
    return table


BYTE_OF = _byte_table()


def piece_bytes(piece: str) -> bytes | None:
    """The bytes a byte-level piece stands for, or None when it is not one (an added special token)."""
    try:
        return bytes(BYTE_OF[c] for c in piece)
    except KeyError:
        return None


def piece_texts(pieces: list[str], specials: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Per-token decoded text of byte-level BPE pieces: a character goes to the token holding its first byte;
    tokens that only continue it get "". Special tokens (in `specials`, or any piece that is not byte-level)
    keep their own text and end any unfinished character, which decodes as U+FFFD like the tokenizer does."""
    out = [""] * len(pieces)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    owners: list[int] = []  # the token of each byte fed to the decoder and not yet decoded

    def feed(data: bytes, owner: int, final: bool = False) -> None:
        owners.extend([owner] * len(data))
        text = decoder.decode(data, final=final)
        pending = len(decoder.getstate()[0])
        done = owners[: len(owners) - pending]
        del owners[: len(owners) - pending]
        if text:  # usually one character from its bytes; after an invalid sequence, U+FFFD then what follows
            out[done[0]] += text[0]
            out[done[-1]] += text[1:]

    for i, piece in enumerate(pieces):
        raw = None if piece in specials else piece_bytes(piece)
        if raw is None:
            if owners:
                feed(b"", owners[0], final=True)  # an unfinished character before a special token
            decoder.reset()
            out[i] += piece
            continue
        for b in raw:
            feed(bytes([b]), i)
    if owners:
        feed(b"", owners[0], final=True)
    return out


def is_byte_level(tokenizer) -> bool:
    """Whether a tokenizer (attnlab's wrapper or a `tokenizers.Tokenizer`) decodes with GPT-2's byte-level
    decoder, alone or inside a Sequence."""
    hf = getattr(tokenizer, "hf", tokenizer)
    try:
        decoder = json.loads(hf.to_str()).get("decoder") or {}
    except (AttributeError, ValueError, TypeError):
        return False
    parts = decoder.get("decoders", [decoder]) if decoder.get("type") == "Sequence" else [decoder]
    return any(isinstance(p, dict) and p.get("type") == "ByteLevel" for p in parts)


def display_texts(pieces: list[str], specials=frozenset()) -> list[str]:
    """piece_texts with CONTINUATION for the tokens that only continue a character (what the page shows)."""
    return [t if t else CONTINUATION for t in piece_texts(pieces, specials)]


def single_text(piece: str) -> str:
    """One byte-level piece on its own (a prediction, a sampled token): its text when its bytes are whole
    UTF-8, else its whole characters and the rest in hex: "Ġâ" (a space and the first byte of ✨) -> " <e2>"."""
    raw = piece_bytes(piece)
    if raw is None:
        return piece
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        head = raw[: exc.start].decode("utf-8")  # the characters before the first incomplete or invalid byte
        return head + "<" + " ".join(f"{b:02x}" for b in raw[exc.start:]) + ">"


def tokenizer_specials(tokenizer) -> frozenset[str]:
    """The added (special) tokens' texts, which a byte-level tokenizer never splits into bytes."""
    hf = getattr(tokenizer, "hf", tokenizer)
    return frozenset(t.content for t in hf.get_added_tokens_decoder().values())


def byte_level(tokenizer) -> bool:
    """is_byte_level, remembered on the tokenizer object (serialising a 50k vocabulary to look costs ~50 ms)."""
    known = getattr(tokenizer, "_attnlab_byte_level", None)
    if known is None:
        hf = getattr(tokenizer, "hf", tokenizer)
        name = type(getattr(hf, "decoder", None)).__name__
        known = name == "ByteLevel" or (name == "Sequence" and is_byte_level(tokenizer))
        try:
            tokenizer._attnlab_byte_level = known
        except AttributeError:  # a tokenizer object without a __dict__: look each time
            pass
    return known
