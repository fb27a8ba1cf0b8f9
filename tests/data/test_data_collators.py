"""Collators: BERT's 15/80/10/10 masking rule checked statistically, padding, causal and teacher-forcing batches."""

import math

import pytest
import torch

from attnlab.data.collators import (
    IGNORE_INDEX,
    KEPT,
    MASKED,
    NOT_SELECTED,
    RANDOM,
    CausalLMCollator,
    MLMCollator,
    Seq2SeqCollator,
    apply_mlm_rule,
    pad_batch,
)
from attnlab.data.tokenizers import train_wordpiece
from attnlab.errors import InputError

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
SPECIAL = {PAD, UNK, CLS, SEP, MASK}
VOCAB = 50
SIGMAS = 5  # binomial bounds: a correct rule lands outside them with probability < 1e-6


def _sample_batch(batch=512, seq=512, seed=0):
    """Random sentences [CLS] w... [SEP] [PAD]..., with ragged lengths and some [UNK] inside."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, VOCAB, (batch, seq), generator=g)
    ids[torch.rand(batch, seq, generator=g) < 0.02] = UNK
    lengths = torch.randint(seq // 2, seq + 1, (batch,), generator=g)
    mask = (torch.arange(seq)[None, :] < lengths[:, None]).long()
    ids[:, 0] = CLS
    ids[torch.arange(batch), lengths - 1] = SEP
    ids[mask == 0] = PAD
    return ids, mask


def _within(count, n, p, what):
    rate, sd = count / n, math.sqrt(p * (1 - p) / n)
    assert abs(rate - p) < SIGMAS * sd, f"{what}: rate {rate:.4f} from n={n}, expected {p} +- {SIGMAS * sd:.4f}"


def test_mlm_rule_statistics_on_a_large_seeded_sample():
    ids, mask = _sample_batch()
    collator = MLMCollator(vocab_size=VOCAB, mask_id=MASK, special_ids=SPECIAL, pad_id=PAD,
                           generator=torch.Generator().manual_seed(1234))
    out = collator.mask_tokens(ids, mask)
    rule, labels, corrupted = out["mask_rule"], out["labels"], out["input_ids"]
    eligible = (mask == 1) & ~torch.isin(ids, torch.tensor(sorted(SPECIAL)))
    selected = rule != NOT_SELECTED
    n_eligible, n_selected = int(eligible.sum()), int(selected.sum())
    assert n_eligible > 150_000  # 5 sigma of the selection rate is then 0.004: a 0.16 rate would fail

    # special tokens ([CLS] [SEP] [UNK]) and padding are never selected
    assert not bool((selected & ~eligible).any())
    _within(n_selected, n_eligible, 0.15, "selection")
    _within(int((rule == MASKED).sum()), n_selected, 0.8, "[MASK] share")
    _within(int((rule == RANDOM).sum()), n_selected, 0.1, "random share")
    _within(int((rule == KEPT).sum()), n_selected, 0.1, "unchanged share")

    # labels: the original id where selected, -100 everywhere else
    assert torch.equal(labels[selected], ids[selected])
    assert bool((labels[~selected] == IGNORE_INDEX).all())
    # inputs: [MASK] / a random ordinary token / the original, and untouched where not selected
    assert bool((corrupted[rule == MASKED] == MASK).all())
    assert torch.equal(corrupted[rule == KEPT], ids[rule == KEPT])
    assert torch.equal(corrupted[~selected], ids[~selected])
    randoms = corrupted[rule == RANDOM]
    assert not bool(torch.isin(randoms, torch.tensor(sorted(SPECIAL))).any())
    # random replacements are uniform over the 45 ordinary ids: each count within binomial bounds
    counts = torch.bincount(randoms, minlength=VOCAB)[5:]
    p = 1 / (VOCAB - 5)
    sd = math.sqrt(len(randoms) * p * (1 - p))
    assert bool(((counts - len(randoms) * p).abs() < SIGMAS * sd).all())
    assert torch.equal(out["attention_mask"], mask)


def test_mlm_is_reproducible_from_its_generator():
    ids, mask = _sample_batch(batch=8, seq=64)
    make = lambda seed: MLMCollator(vocab_size=VOCAB, mask_id=MASK, special_ids=SPECIAL, pad_id=PAD,
                                    generator=torch.Generator().manual_seed(seed))
    a, b, c = make(7).mask_tokens(ids, mask), make(7).mask_tokens(ids, mask), make(8).mask_tokens(ids, mask)
    assert torch.equal(a["input_ids"], b["input_ids"]) and torch.equal(a["labels"], b["labels"])
    assert not torch.equal(a["labels"], c["labels"])


def test_one_rule_function_behind_the_collator_with_a_given_generator():
    """MLMCollator.mask_tokens is apply_mlm_rule; a generator passed in (a trainer's sampler) is used instead of
    the collator's own, and the draws match a plain reimplementation: rand (select), rand (split), randint."""
    ids, mask = _sample_batch(batch=16, seq=64, seed=3)
    collator = MLMCollator(vocab_size=VOCAB, mask_id=MASK, special_ids=SPECIAL, pad_id=PAD,
                           generator=torch.Generator().manual_seed(99))
    via_collator = collator.mask_tokens(ids, mask, generator=torch.Generator().manual_seed(5))
    direct = apply_mlm_rule(ids, vocab_size=VOCAB, mask_id=MASK, special_ids=SPECIAL, attention_mask=mask,
                            generator=torch.Generator().manual_seed(5))
    for key in ("input_ids", "labels", "mask_rule"):
        assert torch.equal(via_collator[key], direct[key]), key

    g = torch.Generator().manual_seed(5)  # the reference: BERT's rule written out with the same three draws
    selected = (torch.rand(ids.shape, generator=g) < 0.15) & (mask == 1) & (ids >= 5)  # ids 0..4 are special
    u = torch.rand(ids.shape, generator=g)
    replacement = torch.randint(5, VOCAB, ids.shape, generator=g)  # uniform over the ordinary ids 5..49
    expected = ids.clone()
    expected[selected & (u < 0.8)] = MASK
    swap = selected & (u >= 0.8) & (u < 0.9)
    expected[swap] = replacement[swap]
    assert torch.equal(direct["input_ids"], expected)
    assert torch.equal(direct["labels"], torch.where(selected, ids, IGNORE_INDEX))
    with pytest.raises(InputError, match="mlm_probability=1.5"):
        apply_mlm_rule(ids, vocab_size=VOCAB, mask_id=MASK, special_ids=SPECIAL, mlm_probability=1.5)


def test_mlm_collator_from_a_tokenizer_on_strings():
    texts = ["the cat sat on the mat", "a dog ran in the park", "attention is routing"] * 10
    tok = train_wordpiece(texts, vocab_size=120)
    collator = MLMCollator(tok, mlm_probability=0.5, generator=torch.Generator().manual_seed(0))
    out = collator(texts[:3])
    assert out["input_ids"].shape == out["labels"].shape == out["attention_mask"].shape
    assert out["input_ids"][:, 0].tolist() == [tok.cls_id] * 3  # [CLS] kept: specials are never selected
    assert bool((out["labels"][out["attention_mask"] == 0] == IGNORE_INDEX).all())
    assert bool((out["labels"] != IGNORE_INDEX).any())


def test_mlm_bad_configuration():
    with pytest.raises(InputError, match="mask_id"):
        MLMCollator(vocab_size=10)
    with pytest.raises(InputError, match="exceeds 1"):
        MLMCollator(vocab_size=10, mask_id=4, mask_fraction=0.8, random_fraction=0.3)
    with pytest.raises(InputError, match="outside the vocabulary"):
        MLMCollator(vocab_size=10, mask_id=10)


def test_pad_batch_right_and_left():
    ids, mask = pad_batch([[5, 6, 7], [8], torch.tensor([9, 10])], pad_id=0)
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0], [9, 10, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0], [1, 1, 0]]
    ids, mask = pad_batch([[5, 6, 7], [8]], pad_id=0, side="left")
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]] and mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    with pytest.raises(InputError, match="side='middle'"):
        pad_batch([[1]], 0, side="middle")
    with pytest.raises(InputError, match="no sequences"):
        pad_batch([], 0)
    with pytest.raises(InputError, match="is a str"):
        pad_batch(["abc"], 0)


def test_causal_collator_masks_padding_in_labels():
    out = CausalLMCollator(pad_id=0)([[1, 2, 3], [4]])
    assert out["input_ids"].tolist() == [[1, 2, 3], [4, 0, 0]]
    assert out["labels"].tolist() == [[1, 2, 3], [4, IGNORE_INDEX, IGNORE_INDEX]]


def test_seq2seq_teacher_forcing():
    out = Seq2SeqCollator(pad_id=0, start_id=1, eos_id=2)([([5, 6, 7], [8, 9]), ([5], [8, 9, 10, 11])])
    assert out["input_ids"].tolist() == [[5, 6, 7], [5, 0, 0]]
    assert out["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    # targets get EOS; the decoder reads [start] + target[:-1] and predicts target
    assert out["labels"].tolist() == [[8, 9, 2, IGNORE_INDEX, IGNORE_INDEX], [8, 9, 10, 11, 2]]
    assert out["decoder_input_ids"].tolist() == [[1, 8, 9, 0, 0], [1, 8, 9, 10, 11]]
    assert out["decoder_attention_mask"].tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]
    real = out["decoder_attention_mask"] == 1
    assert torch.equal(out["decoder_input_ids"][:, 1:][real[:, 1:]], out["labels"][:, :-1][real[:, 1:]])
    with pytest.raises(InputError, match="start_id"):
        Seq2SeqCollator(pad_id=0)
    with pytest.raises(InputError, match="pair"):
        Seq2SeqCollator(pad_id=0, start_id=1)([[1, 2, 3]])
