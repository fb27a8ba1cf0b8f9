"""Text a tokenizer cannot represent: which pieces of it became the unknown token ([UNK], <unk>), said once.

Why: a WordPiece, word or character vocabulary maps what it has never seen to its unknown token, silently;
the model then continues from "[UNK]" and the person wonders why the answer ignores "café" or "€". Byte-level
BPE (GPT-2, SmolLM2) represents every string and never warns. Works on attnlab's Tokenizer (data.tokenizers)
or anything with the same face: `.hf` (a tokenizers.Tokenizer, for the offsets) and `.unk_id`.
"""

from __future__ import annotations

import warnings

MAX_NAMED = 8  # pieces quoted in the warning; the rest are counted


class UnknownTextWarning(UserWarning):
    """Part of a text is not in the tokenizer's vocabulary and was encoded as its unknown token."""


def unknown_pieces(tokenizer, text: str) -> list[str]:
    """The distinct pieces of `text` (characters, or whole words for word-level vocabularies) that the tokenizer
    encodes as its unknown token, in order of appearance; [] when it has none or represents every string."""
    unk = getattr(tokenizer, "unk_id", None)
    hf = getattr(tokenizer, "hf", None)
    if unk is None or hf is None or not isinstance(text, str):
        return []
    try:
        encoding = hf.encode(text, add_special_tokens=False)
    except Exception:  # the tokenizer refuses the text itself: encode() reports that, not this
        return []
    pieces: list[str] = []
    for token_id, (start, end) in zip(encoding.ids, encoding.offsets, strict=False):
        piece = text[start:end]
        if token_id == unk and piece and piece not in pieces:
            pieces.append(piece)
    return pieces


def warn_unknown(tokenizer, text: str, what: str = "the prompt") -> list[str]:
    """One UnknownTextWarning naming the pieces of `text` that became the unknown token (none: no warning);
    -> those pieces. The command line prints it as `attnlab CMD: warning: ...`."""
    pieces = unknown_pieces(tokenizer, text)
    if pieces:
        named = ", ".join(repr(p) for p in pieces[:MAX_NAMED])
        more = f" and {len(pieces) - MAX_NAMED} more" if len(pieces) > MAX_NAMED else ""
        token = tokenizer.id_to_token(tokenizer.unk_id) if hasattr(tokenizer, "id_to_token") else "unknown"
        warnings.warn(f"{what} holds text this model's vocabulary does not have: {named}{more} "
                      f"{'is' if len(pieces) == 1 and not more else 'are'} encoded as {token}", UnknownTextWarning,
                      stacklevel=2)
    return pieces


def missing_characters(tokenizer, text: str) -> list[str]:
    """For a vocabulary without an unknown token, whose encode() refuses such text: the distinct characters of
    `text` that are not tokens of their own (what a character vocabulary lacks), in order of appearance."""
    hf = getattr(tokenizer, "hf", None)
    if hf is None or not isinstance(text, str):
        return []
    return [c for c in dict.fromkeys(text) if hf.token_to_id(c) is None]
