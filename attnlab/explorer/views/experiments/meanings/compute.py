"""Nearby meanings: which tokens sit close to a token in the embedding table, and how close whole sentences
land when an encoder's output vectors are averaged (mean pooling, as sentence-transformers' MiniLM does).

Why: the seed says similar meanings land nearby in vector space. Two views make that checkable on real weights:
  - nearest tokens: cosine similarity between one row of the input embedding table and every other row (any
    text model: the table is where every token starts, before any attention);
  - sentence cosines: each sentence through the encoder, its last hidden states averaged over its tokens
    (special tokens included, as MiniLM was trained), normalised, and every pair's cosine; paraphrases should
    score well above unrelated sentences even when they share few words.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from attnlab.errors import InputError
from attnlab.explorer.server.common import a_an, encode, rounded, special_flags, text_model, token_text
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.server.tokens import byte_level
from attnlab.recording import record

MAX_NEIGHBOURS = 50
MAX_SENTENCES = 8
CHUNK = 8192  # embedding rows decoded at once when the table is stored quantized

# Three pairs of paraphrases (few shared words) and two unrelated sentences: the default matrix.
EXAMPLE_SENTENCES = (
    "A man is playing the guitar.",
    "Someone strums an acoustic instrument.",
    "The stock market fell sharply today.",
    "Share prices dropped a lot this morning.",
    "The kitten is asleep on the sofa.",
    "A young cat naps on the couch.",
    "Water boils at one hundred degrees.",
    "She forgot her umbrella at the station.",
)


def _embedding_table(lm: Loaded) -> torch.Tensor:
    """(vocab_size, d_model) float32 rows of the input embedding table (a quantized table decoded by chunks)."""
    table = lm.model.tokens
    weight = getattr(table, "weight", None)
    if isinstance(weight, torch.Tensor) and weight.is_floating_point() and weight.dim() == 2:
        return weight.detach().float()
    n = lm.model.config.vocab_size
    with torch.no_grad():
        return torch.cat([table.forward(torch.arange(i, min(n, i + CHUNK))).float() for i in range(0, n, CHUNK)])


def word_start(lm: Loaded, text: str) -> str:
    """A single word typed without a leading space, for a byte-level BPE tokenizer (GPT-2, SmolLM2): " " + word.
    Why: there "king" alone is the piece inside "mocking" (its neighbours: ked, ks, kers), while " king" is the
    word a sentence uses (King, kings, queen); a learner typing one word means the word."""
    word = len(text.split()) == 1 and text[:1].isalnum()
    return " " + text if word and lm.tokenizer is not None and byte_level(lm.tokenizer) else text


def nearest_tokens(lm: Loaded, text: str, k: int = 10) -> dict[str, Any]:
    """The k tokens whose embedding rows have the highest cosine with the first token of `text` (special
    tokens and the token itself left out), and the k lowest for contrast."""
    cfg = text_model(lm)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_NEIGHBOURS:
        raise InputError(f"k={k!r}: allowed 1..{MAX_NEIGHBOURS}")
    looked_up = word_start(lm, text)
    ids, tokens = encode(lm, looked_up, add_special_tokens=False)
    query = ids[0]
    table = _embedding_table(lm)  # (vocab, d_model)
    if not 0 <= query < table.shape[0]:
        raise InputError(f"token id {query} is outside this model's embedding table (0..{table.shape[0] - 1})")
    cos = F.cosine_similarity(table[query][None], table, dim=-1)  # (vocab,)
    skip = torch.zeros(table.shape[0], dtype=torch.bool)
    skip[query] = True
    specials = lm.tokenizer.special_ids if lm.tokenizer is not None else set()
    for i in specials:
        if 0 <= i < table.shape[0]:
            skip[i] = True
    skip |= table.abs().sum(-1) == 0  # all-zero rows (unused ids, the toy's specials): no direction at all
    ranked = cos.masked_fill(skip, float("-inf"))
    top = ranked.topk(min(k, int((~skip).sum()))).indices.tolist()
    bottom = cos.masked_fill(skip, float("inf")).topk(min(k, int((~skip).sum())), largest=False).indices.tolist()

    def items(idx):
        return [{"id": i, "token": token_text(lm, i), "cosine": round(float(cos[i]), 4)} for i in idx]

    notes = []
    if looked_up != text:
        notes.append(f"looked up '{looked_up[:41]}' with a leading space: this byte-level tokenizer spells a word "
                     f"after a space as its own token, while '{text[:40]}' without one is the piece used inside "
                     "longer words")
    if len(ids) > 1:
        notes.append(f"'{looked_up[:40]}' is {len(ids)} tokens here; the neighbours are those of its first token, "
                     f"'{tokens[0]}'. Try a word the tokenizer keeps whole.")
    note = "; ".join(notes) or None
    return {"model": lm.id, "query": {"id": query, "token": token_text(lm, query)}, "d_model": cfg.d_model,
            "vocab_size": int(table.shape[0]), "nearest": items(top), "farthest": items(bottom), "note": note,
            "special": bool(special_flags(lm, [query])[0])}


def sentence_vectors(lm: Loaded, sentences: list[str]) -> torch.Tensor:
    """(n_sentences, d_model): each sentence's last hidden states averaged over its tokens, unit length."""
    out = []
    for text in sentences:
        ids, _ = encode(lm, text)
        hidden = record(lm.model, torch.tensor([ids]), names=["final"], stop_after="final")["final"][0]
        out.append(hidden.float().mean(0))  # (d_model,)
    return F.normalize(torch.stack(out), dim=-1)


def sentence_similarity(lm: Loaded, sentences: list[str] | None = None) -> dict[str, Any]:
    """Cosine of every pair of mean-pooled sentence vectors (an encoder: MiniLM is the one trained for this)."""
    cfg = text_model(lm)
    if cfg.topology != "encoder":
        raise InputError(f"model {lm.id!r} is {a_an(cfg.topology)}; sentence vectors here come from an encoder "
                         "(pick all-MiniLM-L6-v2, trained so that mean-pooled vectors compare meanings)")
    sentences = list(EXAMPLE_SENTENCES) if sentences is None else sentences
    if not isinstance(sentences, list) or not 2 <= len(sentences) <= MAX_SENTENCES or not all(
            isinstance(s, str) and s.strip() for s in sentences):
        raise InputError(f"sentences: allowed a list of 2 to {MAX_SENTENCES} non-empty texts")
    vectors = sentence_vectors(lm, sentences)
    cos = vectors @ vectors.T  # (n, n)
    return {"model": lm.id, "sentences": sentences, "cosine": rounded(cos, 4), "pooling": "mean over tokens",
            "d_model": cfg.d_model, "trained_for_it": lm.id == "minilm"}
