"""Collators: turn a list of examples into the padded tensors (and labels) one training step needs.

- `pad_batch`: sequences of different lengths -> (ids, attention_mask), padded on the right or the left;
- `MLMCollator` / `apply_mlm_rule`: BERT's masked language modeling rule. Each real, non-special token is selected with
  probability 0.15; of the selected, 80% become [MASK], 10% a random token and 10% stay unchanged. Labels hold
  the original id at selected positions and -100 (ignored by the loss) everywhere else;
- `CausalLMCollator`: padded ids for next-token prediction (the shift happens in `causal_lm_loss`);
- `Seq2SeqCollator`: teacher forcing, decoder_input_ids = [start] + target[:-1], labels = target.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attnlab.errors import InputError

IGNORE_INDEX = -100  # what torch's cross_entropy skips by default

# which part of the MLM rule touched a position (MLMCollator's "mask_rule" output, for the explorer)
NOT_SELECTED, MASKED, RANDOM, KEPT = 0, 1, 2, 3
RULE_NAMES = {NOT_SELECTED: "not selected", MASKED: "[MASK]", RANDOM: "random token", KEPT: "unchanged"}


def _as_ids(seq, index: int) -> list[int]:
    if isinstance(seq, torch.Tensor):
        if seq.dim() != 1:
            raise InputError(f"example {index} has shape {tuple(seq.shape)}; each sequence must be 1-D token ids")
        return seq.tolist()
    if isinstance(seq, (str, bytes)) or not isinstance(seq, Sequence):
        raise InputError(f"example {index} is a {type(seq).__name__}; give a list or 1-D tensor of token ids "
                         "(or pass a tokenizer to encode strings)")
    return [int(i) for i in seq]


def pad_batch(seqs, pad_id: int, side: str = "right") -> tuple[torch.Tensor, torch.Tensor]:
    """Pad token-id sequences to the longest one -> (ids (batch, seq) int64, attention_mask (batch, seq) int64).

    attention_mask is 1 on real tokens and 0 on padding. side="left" suits decoder-only generation, where every
    row's last real token must sit in the last column.
    """
    if side not in ("right", "left"):
        raise InputError(f"side={side!r}: allowed 'right' or 'left'")
    if pad_id is None:
        raise InputError("pad_batch needs a pad_id (this tokenizer has no [PAD]; pass e.g. its eos id)")
    rows = [_as_ids(s, i) for i, s in enumerate(seqs)]
    if not rows:
        raise InputError("pad_batch got no sequences; a batch needs at least one")
    width = max(len(r) for r in rows)
    if width == 0:
        raise InputError("every sequence in the batch is empty; give at least one token")
    ids = torch.full((len(rows), width), int(pad_id), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        span = slice(0, len(row)) if side == "right" else slice(width - len(row), width)
        ids[i, span] = torch.tensor(row, dtype=torch.long)
        mask[i, span] = 1
    return ids, mask


def _encode_all(examples, tokenizer, max_len: int | None) -> list[list[int]]:
    """Strings are encoded with the tokenizer (special tokens included); id sequences pass through. Cut at max_len."""
    rows = []
    for i, example in enumerate(examples):
        if isinstance(example, str):
            if tokenizer is None:
                raise InputError(f"example {i} is a string but the collator has no tokenizer to encode it")
            row = tokenizer.encode(example)
        else:
            row = _as_ids(example, i)
        rows.append(row[:max_len] if max_len is not None else row)
    return rows


def _check_rule(vocab_size: int, mask_id: int, mlm_probability: float, mask_fraction: float,
                random_fraction: float) -> None:
    if not 0 <= mask_id < vocab_size:
        raise InputError(f"mask_id={mask_id} is outside the vocabulary [0, {vocab_size})")
    for name, p in (("mlm_probability", mlm_probability), ("mask_fraction", mask_fraction),
                    ("random_fraction", random_fraction)):
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise InputError(f"{name}={p!r} must be a probability in [0, 1]")
    if mask_fraction + random_fraction > 1.0 + 1e-9:
        raise InputError(f"mask_fraction + random_fraction = {mask_fraction + random_fraction} exceeds 1")


def ordinary_ids(vocab_size: int, special_ids) -> torch.Tensor:
    """The ids a random replacement may take: every id of the vocabulary that is not special, (n,) int64."""
    ordinary = torch.ones(vocab_size, dtype=torch.bool)
    ordinary[[i for i in special_ids if 0 <= i < vocab_size]] = False
    if not ordinary.any():
        raise InputError("every id of the vocabulary is special; MLM needs ordinary tokens to predict")
    return ordinary.nonzero().flatten()


def apply_mlm_rule(input_ids: torch.Tensor, *, vocab_size: int, mask_id: int, special_ids,
                   attention_mask: torch.Tensor | None = None, generator: torch.Generator | None = None,
                   mlm_probability: float = 0.15, mask_fraction: float = 0.8,
                   random_fraction: float = 0.1) -> dict[str, torch.Tensor]:
    """BERT's masking rule, the one place attnlab implements it (MLMCollator, the bert-mlm recipe and the
    explorer's draw all call it).

    Each position whose attention_mask is non-zero and whose id is not special is selected with probability
    `mlm_probability`; one more uniform draw splits the selected into [MASK] (`mask_fraction`), a random ordinary
    (non-special) id (`random_fraction`) and unchanged (the rest). Draws, in this order from `generator`: a
    (batch, seq) uniform for selection, a (batch, seq) uniform for the split, a (batch, seq) randint for the
    replacement ids; so a saved generator state reproduces a batch exactly.

    input_ids: (batch, seq). Returns input_ids (corrupted), attention_mask, labels (the original id where
    selected, -100 elsewhere) and mask_rule (NOT_SELECTED / MASKED / RANDOM / KEPT per position).
    """
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        raise InputError("mask_tokens expects input_ids as a (batch, seq) tensor")
    _check_rule(vocab_size, mask_id, mlm_probability, mask_fraction, random_fraction)
    special = sorted({int(i) for i in special_ids} | {int(mask_id)})
    ordinary = ordinary_ids(vocab_size, special)  # random replacements: uniform over the non-special ids
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    eligible = (attention_mask != 0) & ~torch.isin(input_ids, torch.tensor(special, dtype=input_ids.dtype))
    selected = (torch.rand(input_ids.shape, generator=generator) < mlm_probability) & eligible  # (batch, seq)
    u = torch.rand(input_ids.shape, generator=generator)  # one draw splits the selected into 80 / 10 / 10
    masked = selected & (u < mask_fraction)
    randomized = selected & (u >= mask_fraction) & (u < mask_fraction + random_fraction)
    replacement = ordinary[torch.randint(len(ordinary), input_ids.shape, generator=generator)]

    corrupted = input_ids.clone()
    corrupted[masked] = mask_id
    corrupted[randomized] = replacement[randomized].to(input_ids.dtype)
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, IGNORE_INDEX))
    rule = torch.full_like(input_ids, NOT_SELECTED)
    rule[selected] = KEPT
    rule[masked] = MASKED
    rule[randomized] = RANDOM
    return {"input_ids": corrupted, "attention_mask": attention_mask, "labels": labels, "mask_rule": rule}


class MLMCollator:
    """Masked language modeling batches with BERT's exact 15/80/10/10 rule.

    Build it from a tokenizer (`MLMCollator(tok)`) or from ids (`MLMCollator(vocab_size=..., mask_id=...,
    special_ids=..., pad_id=...)`). Call it on a list of examples (strings or id sequences) or use
    `mask_tokens(input_ids, attention_mask)` on a ready (batch, seq) tensor. Random replacement tokens are drawn
    uniformly from the non-special ids, so [MASK], [PAD], [CLS] ... never appear as "random" tokens.
    """

    def __init__(self, tokenizer=None, *, vocab_size: int | None = None, mask_id: int | None = None,
                 special_ids=(), pad_id: int | None = None, mlm_probability: float = 0.15,
                 mask_fraction: float = 0.8, random_fraction: float = 0.1, max_len: int | None = None,
                 generator: torch.Generator | None = None):
        if tokenizer is not None:
            vocab_size = tokenizer.vocab_size if vocab_size is None else vocab_size
            mask_id = tokenizer.mask_id if mask_id is None else mask_id
            pad_id = tokenizer.pad_id if pad_id is None else pad_id
            special_ids = set(special_ids) | tokenizer.special_ids
        if vocab_size is None or mask_id is None:
            raise InputError("MLMCollator needs vocab_size and mask_id (give a tokenizer with a [MASK] token, "
                             "or pass vocab_size=..., mask_id=...)")
        _check_rule(vocab_size, mask_id, mlm_probability, mask_fraction, random_fraction)
        self.tokenizer, self.vocab_size, self.mask_id, self.pad_id = tokenizer, int(vocab_size), int(mask_id), pad_id
        self.special_ids = {int(i) for i in special_ids} | {self.mask_id} | ({int(pad_id)} if pad_id is not None
                                                                           else set())
        self.mlm_probability, self.mask_fraction, self.random_fraction = mlm_probability, mask_fraction, random_fraction
        self.max_len = max_len
        self.generator = generator if generator is not None else torch.Generator().manual_seed(0)
        ordinary_ids(self.vocab_size, self.special_ids)  # refuse an all-special vocabulary now, not at the first batch

    def mask_tokens(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                    generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        """Apply the rule to (batch, seq) ids -> dict(input_ids, attention_mask, labels, mask_rule).

        Draws from `generator` when given (a trainer's checkpointed sampler), else from the collator's own.
        mask_rule holds NOT_SELECTED / MASKED / RANDOM / KEPT per position (0..3, see RULE_NAMES).
        """
        return apply_mlm_rule(input_ids, vocab_size=self.vocab_size, mask_id=self.mask_id,
                              special_ids=self.special_ids, attention_mask=attention_mask,
                              generator=generator if generator is not None else self.generator,
                              mlm_probability=self.mlm_probability, mask_fraction=self.mask_fraction,
                              random_fraction=self.random_fraction)

    def __call__(self, examples) -> dict[str, torch.Tensor]:
        if self.pad_id is None:
            raise InputError("MLMCollator needs a pad_id to pad a list of examples (a tokenizer with [PAD])")
        ids, mask = pad_batch(_encode_all(examples, self.tokenizer, self.max_len), self.pad_id)
        return self.mask_tokens(ids, mask)


def _pad_from(tokenizer, pad_id):
    if pad_id is None and tokenizer is not None:
        pad_id = tokenizer.pad_id if tokenizer.pad_id is not None else tokenizer.eos_id
    if pad_id is None:
        raise InputError("no pad id: give pad_id=..., or a tokenizer with a [PAD] or EOS token")
    return int(pad_id)


class CausalLMCollator:
    """Padded batches for next-token prediction: input_ids, attention_mask, labels (= ids, -100 on padding).

    The model predicts labels[t + 1] from positions <= t; `causal_lm_loss(logits, input_ids, attention_mask)`
    does that shift. Without [PAD] the EOS id pads (padding is masked out, so its id does not matter).
    """

    def __init__(self, tokenizer=None, *, pad_id: int | None = None, side: str = "right",
                 max_len: int | None = None):
        self.tokenizer, self.pad_id, self.side, self.max_len = tokenizer, _pad_from(tokenizer, pad_id), side, max_len

    def __call__(self, examples) -> dict[str, torch.Tensor]:
        ids, mask = pad_batch(_encode_all(examples, self.tokenizer, self.max_len), self.pad_id, self.side)
        labels = ids.masked_fill(mask == 0, IGNORE_INDEX)
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}


class Seq2SeqCollator:
    """Teacher forcing for an encoder-decoder: examples are (source, target) pairs of strings or id lists.

    Returns input_ids + attention_mask (the source), decoder_input_ids = [start] + target[:-1] and
    decoder_attention_mask, and labels = target with -100 on padding. With an eos id the target gets EOS
    appended, so the model learns where to stop. Strings are encoded without special tokens.
    """

    def __init__(self, tokenizer=None, *, pad_id: int | None = None, start_id: int | None = None,
                 eos_id: int | None = None, max_len: int | None = None):
        if tokenizer is not None:
            start_id = start_id if start_id is not None else next(
                (i for i in (tokenizer.bos_id, tokenizer.cls_id, tokenizer.pad_id) if i is not None), None)
            eos_id = eos_id if eos_id is not None else next(
                (i for i in (tokenizer.eos_id, tokenizer.sep_id) if i is not None), None)
        if start_id is None:
            raise InputError("Seq2SeqCollator needs start_id (the decoder's first input; e.g. BOS or [PAD])")
        self.tokenizer, self.pad_id, self.max_len = tokenizer, _pad_from(tokenizer, pad_id), max_len
        self.start_id, self.eos_id = int(start_id), (int(eos_id) if eos_id is not None else None)

    def _ids(self, value, index: int, what: str) -> list[int]:
        if isinstance(value, str):
            if self.tokenizer is None:
                raise InputError(f"example {index}: the {what} is a string but the collator has no tokenizer")
            return self.tokenizer.encode(value, add_special_tokens=False)
        return _as_ids(value, index)

    def __call__(self, examples) -> dict[str, torch.Tensor]:
        sources, targets = [], []
        for i, example in enumerate(examples):
            if not isinstance(example, (tuple, list)) or len(example) != 2:
                raise InputError(f"example {i} must be a (source, target) pair")
            source, target = self._ids(example[0], i, "source"), self._ids(example[1], i, "target")
            if self.eos_id is not None and (not target or target[-1] != self.eos_id):
                target = target + [self.eos_id]
            if self.max_len is not None:
                source, target = source[: self.max_len], target[: self.max_len]
            if not source or not target:
                raise InputError(f"example {i} has an empty source or target")
            sources.append(source)
            targets.append(target)
        input_ids, attention_mask = pad_batch(sources, self.pad_id)
        labels, decoder_attention_mask = pad_batch(targets, self.pad_id)
        labels = labels.masked_fill(decoder_attention_mask == 0, IGNORE_INDEX)
        decoder_inputs, _ = pad_batch([[self.start_id] + t[:-1] for t in targets], self.pad_id)
        return {"input_ids": input_ids, "attention_mask": attention_mask, "decoder_input_ids": decoder_inputs,
                "decoder_attention_mask": decoder_attention_mask, "labels": labels}


def word_tables(tok) -> tuple[torch.Tensor, torch.Tensor]:
    """Two (vocab,) bool tables over the tokenizer's vocabulary: `whole_word`, a token that is a word by itself
    when no piece follows it (ASCII letters only: no punctuation, digit or ##piece), and `continues`, a ##piece."""
    tokens = [tok.id_to_token(i) or "" for i in range(tok.vocab_size)]
    whole_word = torch.tensor([t.isascii() and t.isalpha() for t in tokens])
    continues = torch.tensor([t.startswith("##") for t in tokens])
    return whole_word, continues


def word_positions(ids: torch.Tensor, whole_word: torch.Tensor, continues: torch.Tensor) -> torch.Tensor:
    """(batch, seq) ids -> (batch, seq) 0/1: 1 where the token is a whole word of one piece (a word token not
    followed by a ##piece). A cloze blank is such a word; "ca ##t" or "," are not, so masking them teaches the
    head to finish pieces and punctuation rather than to find the word that fits."""
    continued = torch.zeros_like(ids, dtype=torch.bool)  # (batch, seq): a ##piece comes next
    continued[:, :-1] = continues[ids[:, 1:]]
    return (whole_word[ids] & ~continued).long()
