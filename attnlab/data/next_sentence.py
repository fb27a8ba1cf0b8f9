"""Next-sentence prediction pairs: BERT's second pretraining objective, built from a corpus's sentences.

BERT reads "[CLS] A [SEP] B [SEP]" and learns, from the pooled [CLS] vector, whether B is the sentence that
followed A in the text (half the pairs) or a sentence drawn from another document (the other half). The two
segments are told apart by segment (token-type) ids: 0 for [CLS] A [SEP], 1 for B [SEP].

- `documents_of(text)`: paragraphs (blank-line separated) split into sentences, the unit NSP pairs;
- `draw_pairs(documents, n, generator)`: (A, B, label) triples, label IS_NEXT or NOT_NEXT;
- `encode_pair(a, b, ...)`: one pair as ids and segment ids, cut to a length budget;
- `NextSentenceCollator`: a list of pairs -> padded tensors, optionally with BERT's MLM rule applied on top
  (MLMCollator), which is what BERT's pretraining batches are.

Labels follow Hugging Face's BertForPreTraining (0 = B follows A), so a loaded NSP head means the same thing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import torch

from attnlab.data.collators import MLMCollator, pad_batch
from attnlab.errors import InputError

IS_NEXT, NOT_NEXT = 0, 1  # Hugging Face's next_sentence_label convention
SEGMENT_A, SEGMENT_B = 0, 1  # token_type_ids of [CLS] A [SEP] and of B [SEP]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")  # a stop, space, then what starts a sentence


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph, cut after . ! ? followed by a space and a capital, digit or opening quote.

    A rule, not a parser ("Dr. Smith" is cut in two): NSP only needs most cuts to fall between sentences."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def documents_of(text: str, min_sentences: int = 2) -> list[list[str]]:
    """The paragraphs of `text` (separated by blank lines) as lists of sentences, keeping those with at least
    `min_sentences` (a true next sentence needs two)."""
    docs = [split_sentences(" ".join(p.split())) for p in re.split(r"\n\s*\n", text)]
    return [d for d in docs if len(d) >= min_sentences]


def draw_pairs(documents: Sequence[Sequence[Sequence[int]]], n: int, generator: torch.Generator | None = None,
               next_fraction: float = 0.5) -> list[tuple[list[int], list[int], int]]:
    """`n` (A, B, label) triples from tokenized documents (each a list of sentences, each a list of ids).

    A is a uniformly drawn sentence that has a successor in its document; with probability `next_fraction` B is
    that successor (IS_NEXT), else a uniformly drawn sentence of another document (NOT_NEXT), as in BERT: a
    sentence of the same document could be a near-neighbour and blur the label. Empty documents are skipped (a
    NOT_NEXT B drawn from one would have no sentence to take)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InputError(f"n={n!r}: the number of pairs must be an integer >= 0")
    if not 0.0 <= next_fraction <= 1.0:
        raise InputError(f"next_fraction={next_fraction!r} must be a probability in [0, 1]")
    given = len(documents)
    documents = [doc for doc in documents if len(doc)]
    firsts = [(d, i) for d, doc in enumerate(documents) for i in range(len(doc) - 1)]
    if not firsts or len(documents) < 2:
        raise InputError(f"next-sentence pairs need at least two documents that are not empty, and one with two "
                         f"or more sentences; got {len(documents)} non-empty of {given}")
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    picks = torch.randint(len(firsts), (n,), generator=g).tolist()
    is_next = (torch.rand(n, generator=g) < next_fraction).tolist()
    others = torch.randint(len(documents) - 1, (n,), generator=g).tolist()  # shifted past the pair's own doc
    spots = torch.rand(n, generator=g).tolist()
    pairs = []
    for (d, i), follows, other, spot in zip((firsts[k] for k in picks), is_next, others, spots, strict=True):
        if follows:
            pairs.append((list(documents[d][i]), list(documents[d][i + 1]), IS_NEXT))
        else:
            doc = documents[other + (other >= d)]  # any document but d
            pairs.append((list(documents[d][i]), list(doc[int(spot * len(doc))]), NOT_NEXT))
    return pairs


def encode_pair(a: Sequence[int], b: Sequence[int], *, cls_id: int, sep_id: int,
                max_len: int) -> tuple[list[int], list[int]]:
    """[CLS] A [SEP] B [SEP] and its segment ids. The longer segment loses its last token until the pair fits
    `max_len` (BERT trims the longer one too), so neither segment is emptied while the other is long; the kept
    lengths are worked out at once (trimmed_lengths) and only the kept tokens are copied."""
    if max_len < 5:
        raise InputError(f"max_len={max_len}: a pair needs room for [CLS], [SEP], [SEP] and a token of each")
    keep_a, keep_b = trimmed_lengths(len(a), len(b), max_len - 3)
    a, b = list(a[:keep_a]), list(b[:keep_b])
    ids = [cls_id, *a, sep_id, *b, sep_id]
    types = [SEGMENT_A] * (len(a) + 2) + [SEGMENT_B] * (len(b) + 1)
    return ids, types


def trimmed_lengths(len_a: int, len_b: int, budget: int) -> tuple[int, int]:
    """The lengths A and B keep when the longer loses its last token, one at a time, until len_a + len_b <= budget
    (A losing first on a tie), worked out in one step: token by token, a sentence of millions of tokens took
    seconds to trim."""
    if len_a + len_b <= budget:
        return len_a, len_b
    short = min(len_a, len_b)
    if 2 * short <= budget:  # only the longer one is cut, down to what the shorter leaves
        return (budget - short, short) if len_a >= len_b else (short, budget - short)
    half = budget // 2  # both are cut to about half; A, cut first on each tie, keeps the smaller half
    return half, budget - half


class NextSentenceCollator:
    """(A, B, label) triples -> input_ids, attention_mask, token_type_ids, next_sentence_label (batch, ...).

    With `mlm` (an MLMCollator) the ids are also corrupted by BERT's 15/80/10/10 rule and `labels` holds the MLM
    targets: one batch carries both of BERT's objectives. [CLS] and [SEP] are special, so never masked."""

    def __init__(self, *, cls_id: int, sep_id: int, pad_id: int, max_len: int, mlm: MLMCollator | None = None):
        self.cls_id, self.sep_id, self.pad_id, self.max_len, self.mlm = cls_id, sep_id, pad_id, max_len, mlm

    @classmethod
    def from_tokenizer(cls, tokenizer, max_len: int, mlm: MLMCollator | None = None) -> NextSentenceCollator:
        if None in (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id):
            raise InputError("next-sentence pairs need a tokenizer with [CLS], [SEP] and [PAD]")
        return cls(cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, pad_id=tokenizer.pad_id, max_len=max_len,
                   mlm=mlm)

    def __call__(self, pairs, generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        encoded = [encode_pair(a, b, cls_id=self.cls_id, sep_id=self.sep_id, max_len=self.max_len)
                   for a, b, _ in pairs]
        ids, mask = pad_batch([e[0] for e in encoded], self.pad_id)
        types, _ = pad_batch([e[1] for e in encoded], SEGMENT_A)
        out = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types,
               "next_sentence_label": torch.tensor([label for _, _, label in pairs], dtype=torch.long)}
        if self.mlm is not None:
            masked = self.mlm.mask_tokens(ids, mask, generator=generator)
            out.update(input_ids=masked["input_ids"], labels=masked["labels"], mask_rule=masked["mask_rule"])
        return out
