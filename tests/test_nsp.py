"""BERT's next-sentence prediction: the pair builder, the collator, the loss and the head on the encoder.

(Its agreement with Hugging Face's BertForPreTraining is tests/parity/test_parity_nsp.py.)
"""

from __future__ import annotations

import math

import pytest
import torch

import attnlab
from attnlab.data.collators import MLMCollator
from attnlab.data.next_sentence import (
    IS_NEXT,
    NOT_NEXT,
    SEGMENT_A,
    SEGMENT_B,
    NextSentenceCollator,
    documents_of,
    draw_pairs,
    encode_pair,
    split_sentences,
)
from attnlab.errors import ConfigError, InputError
from attnlab.objectives import next_sentence_loss
from attnlab.parameter_count import exact_parameters

CLS, SEP, PAD, MASK = 2, 3, 0, 4
# three documents of sentences whose ids say where they come from: document d, sentence i -> [10 d + i] * 3
DOCS = [[[10 * d + i] * 3 for i in range(4)] for d in range(1, 4)]


def test_sentences_and_documents():
    assert split_sentences("It rains. The 2 cats sleep! Why? e.g. this") == ["It rains.", "The 2 cats sleep!",
                                                                             "Why? e.g. this"]
    text = "One. Two.\n\nAlone.\n\nThree. Four. Five."
    assert documents_of(text) == [["One.", "Two."], ["Three.", "Four.", "Five."]]


def test_pairs_are_half_next_and_next_means_next():
    pairs = draw_pairs(DOCS, 2000, torch.Generator().manual_seed(0))
    labels = [label for _, _, label in pairs]
    assert abs(labels.count(IS_NEXT) / len(pairs) - 0.5) < 0.05
    for a, b, label in pairs:
        doc_a, doc_b = a[0] // 10, b[0] // 10
        if label == IS_NEXT:
            assert doc_b == doc_a and b[0] == a[0] + 1  # the sentence that follows A
        else:
            assert doc_b != doc_a  # a sentence of another document
    # the same generator state gives the same pairs
    assert draw_pairs(DOCS, 5, torch.Generator().manual_seed(3)) == draw_pairs(DOCS, 5,
                                                                            torch.Generator().manual_seed(3))


def test_pairs_refuse_what_cannot_make_one():
    with pytest.raises(InputError, match="two documents"):
        draw_pairs([[[1], [2]]], 4)
    with pytest.raises(InputError, match="next_fraction"):
        draw_pairs(DOCS, 4, next_fraction=1.5)


def test_empty_documents_are_skipped_and_a_negative_count_refused():
    docs = [*DOCS[:2], [], DOCS[2]]
    pairs = draw_pairs(docs, 300, torch.Generator().manual_seed(4))
    assert len(pairs) == 300 and all(a and b for a, b, _ in pairs)
    assert {label for _, _, label in pairs} == {IS_NEXT, NOT_NEXT}
    with pytest.raises(InputError, match="two documents that are not empty, .* got 1 non-empty of 2"):
        draw_pairs([[[1], [2]], []], 5)
    with pytest.raises(InputError, match=r"n=-1: the number of pairs must be an integer >= 0"):
        draw_pairs(DOCS, -1)
    assert draw_pairs(DOCS, 0) == []


def _trimmed_token_by_token(a, b, max_len):
    """The rule as written: the longer segment (A on a tie) loses its last token until the pair fits."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_len - 3:
        (a if len(a) >= len(b) else b).pop()
    return a, b


def test_trimming_in_one_step_keeps_what_token_by_token_trimming_keeps():
    for max_len in range(5, 16):
        for len_a in range(14):
            for len_b in range(14):
                a, b = list(range(100, 100 + len_a)), list(range(200, 200 + len_b))
                want_a, want_b = _trimmed_token_by_token(a, b, max_len)
                ids, types = encode_pair(a, b, cls_id=CLS, sep_id=SEP, max_len=max_len)
                assert ids == [CLS, *want_a, SEP, *want_b, SEP], (max_len, len_a, len_b)
                assert types == [SEGMENT_A] * (len(want_a) + 2) + [SEGMENT_B] * (len(want_b) + 1)
    # only the kept tokens are read: a sentence of 10^12 ids (a range, never listed whole) is trimmed at once
    ids, _ = encode_pair(range(10**12), [7, 8], cls_id=CLS, sep_id=SEP, max_len=9)
    assert ids == [CLS, 0, 1, 2, 3, SEP, 7, 8, SEP]


def test_encode_pair_segments_and_trimming():
    ids, types = encode_pair([5, 6], [7], cls_id=CLS, sep_id=SEP, max_len=16)
    assert ids == [CLS, 5, 6, SEP, 7, SEP]
    assert types == [SEGMENT_A] * 4 + [SEGMENT_B] * 2
    ids, types = encode_pair(list(range(10, 20)), [7, 8], cls_id=CLS, sep_id=SEP, max_len=9)
    assert ids == [CLS, 10, 11, 12, 13, SEP, 7, 8, SEP]  # the longer segment lost its tail
    assert len(types) == len(ids)


def test_collator_pads_and_masks_only_ordinary_tokens():
    pairs = draw_pairs(DOCS, 64, torch.Generator().manual_seed(1))
    mlm = MLMCollator(vocab_size=40, mask_id=MASK, special_ids={CLS, SEP}, pad_id=PAD, mlm_probability=0.5)
    batch = NextSentenceCollator(cls_id=CLS, sep_id=SEP, pad_id=PAD, max_len=12, mlm=mlm)(
        pairs, torch.Generator().manual_seed(2))
    width = 9  # [CLS], 3 ids, [SEP], 3 ids, [SEP]
    assert batch["input_ids"].shape == batch["token_type_ids"].shape == batch["labels"].shape == (64, width)
    assert batch["next_sentence_label"].tolist() == [label for _, _, label in pairs]
    chosen = batch["labels"] != -100
    assert chosen.any() and not torch.isin(batch["labels"][chosen], torch.tensor([CLS, SEP, PAD])).any()
    assert (batch["input_ids"][:, 0] == CLS).all()
    plain = NextSentenceCollator(cls_id=CLS, sep_id=SEP, pad_id=PAD, max_len=12)(pairs)
    assert "labels" not in plain and plain["input_ids"][0].tolist() == encode_pair(*pairs[0][:2], cls_id=CLS,
                                                                                    sep_id=SEP, max_len=12)[0]


def test_next_sentence_loss():
    logits = torch.zeros(4, 2)
    labels = torch.tensor([IS_NEXT, NOT_NEXT, IS_NEXT, NOT_NEXT])
    assert math.isclose(float(next_sentence_loss(logits, labels)), math.log(2), rel_tol=1e-6)  # chance
    with pytest.raises(InputError, match=r"\(batch, 2\)"):
        next_sentence_loss(torch.zeros(4, 3), labels)


def _config(**overrides):
    return attnlab.ModelConfig(**{**dict(topology="encoder", vocab_size=40, d_model=16, n_heads=2, d_ff=32,
                                         n_layers=1, max_len=16, type_vocab_size=2, head="lm", pooler=True,
                                         nsp=True), **overrides})


def test_encoder_nsp_head_counts_and_trains():
    model = attnlab.build_model(_config())
    assert model.num_parameters() == exact_parameters(model.config)
    assert model.num_parameters() - attnlab.build_model(_config(nsp=False)).num_parameters() == 16 * 2 + 2
    ids = torch.randint(5, 40, (3, 7))
    out = model(ids, token_type_ids=torch.zeros_like(ids))
    assert out.nsp_logits.shape == (3, 2) and out.logits.shape == (3, 7, 40)
    next_sentence_loss(out.nsp_logits, torch.tensor([0, 1, 0])).backward()
    assert model.nsp_head.weight.grad.abs().sum() > 0 and model.pooler.dense.weight.grad.abs().sum() > 0
    assert attnlab.build_model(_config(nsp=False))(ids).nsp_logits is None


def test_nsp_needs_the_pooler():
    with pytest.raises(ConfigError, match="pooler"):
        _config(pooler=False)


def test_analytic_flops_count_the_nsp_head():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    from attnlab.cost import forward_flops

    model = attnlab.build_model(_config()).eval()
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), counter:
        model(torch.randint(5, 40, (2, 7)))
    assert forward_flops(model.config, 2, 7, None) == counter.get_total_flops()
