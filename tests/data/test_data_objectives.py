"""Losses and accuracies against references computed independently: explicit log-softmax sums,
torch's cross_entropy on hand-built targets, and transformers' own causal/masked LM losses."""

import pytest
import torch
import torch.nn.functional as F

from attnlab.errors import InputError
from attnlab.objectives import (
    accuracy,
    causal_lm_accuracy,
    causal_lm_loss,
    classification_loss,
    exact_match,
    info_nce,
    mlm_loss,
    next_token_loss,
    retrieval_accuracy,
    seq2seq_loss,
)

TOL = dict(atol=1e-5, rtol=1e-5)  # float32 sums of a few hundred terms


def _nll_sum(logits, targets):
    """-sum log softmax(logits)[target] over positions, one at a time (the seeds' -sum log P(y_i | ...))."""
    total, count = 0.0, 0
    log_probs = logits.double().log_softmax(-1)
    for index in torch.nonzero(targets != -100).tolist():
        total -= log_probs[tuple(index)][targets[tuple(index)]].item()
        count += 1
    return total, count


def test_causal_lm_loss_uses_n_minus_1_targets_and_skips_padding():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 7, 11, generator=g)
    ids = torch.randint(0, 11, (3, 7), generator=g)
    mask = torch.ones(3, 7, dtype=torch.long)
    mask[1, 5:] = 0
    mask[2, 2:] = 0
    total, count = _nll_sum(logits[:, :-1], ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100))
    assert count == 6 + 4 + 1  # N-1 targets per full row, fewer where padded
    torch.testing.assert_close(causal_lm_loss(logits, ids, mask), torch.tensor(total / count, dtype=torch.float32),
                               **TOL)
    # without a mask every one of the 3 * 6 targets counts
    expected = F.cross_entropy(logits[:, :-1].reshape(-1, 11), ids[:, 1:].reshape(-1))
    torch.testing.assert_close(causal_lm_loss(logits, ids), expected, **TOL)


def test_causal_lm_loss_equals_transformers():
    loss_utils = pytest.importorskip("transformers.loss.loss_utils")
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 9, 13, generator=g)
    ids = torch.randint(0, 13, (2, 9), generator=g)
    mask = torch.ones_like(ids)
    mask[0, 6:] = 0
    labels = ids.masked_fill(mask == 0, -100)  # transformers marks padding in labels and shifts inside
    expected = loss_utils.ForCausalLMLoss(logits, labels, vocab_size=13)
    torch.testing.assert_close(causal_lm_loss(logits, ids, mask), expected, **TOL)


def test_mlm_and_seq2seq_losses_count_only_labelled_positions():
    loss_utils = pytest.importorskip("transformers.loss.loss_utils")
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(4, 10, 17, generator=g)
    labels = torch.randint(0, 17, (4, 10), generator=g)
    labels[torch.rand(4, 10, generator=g) > 0.2] = -100
    total, count = _nll_sum(logits, labels)
    expected = torch.tensor(total / count, dtype=torch.float32)
    torch.testing.assert_close(mlm_loss(logits, labels), expected, **TOL)
    torch.testing.assert_close(seq2seq_loss(logits, labels), expected, **TOL)
    torch.testing.assert_close(mlm_loss(logits, labels), loss_utils.ForMaskedLMLoss(logits, labels, 17), **TOL)
    # changing the logits at an ignored position leaves the loss unchanged
    ignored = torch.nonzero(labels == -100)[0].tolist()
    moved = logits.clone()
    moved[ignored[0], ignored[1]] += 100.0
    torch.testing.assert_close(mlm_loss(moved, labels), mlm_loss(logits, labels))


def test_loss_without_any_target_is_zero_and_differentiable():
    logits = torch.randn(2, 3, 5, requires_grad=True)
    loss = mlm_loss(logits, torch.full((2, 3), -100))
    loss.backward()
    assert loss.item() == 0.0 and logits.grad is not None and bool((logits.grad == 0).all())


def test_classification_loss_for_sequences_and_tokens():
    g = torch.Generator().manual_seed(3)
    logits, labels = torch.randn(6, 4, generator=g), torch.tensor([0, 1, 2, 3, 0, 1])
    total, count = _nll_sum(logits, labels)
    torch.testing.assert_close(classification_loss(logits, labels), torch.tensor(total / count).float(), **TOL)
    token_logits, token_labels = torch.randn(2, 5, 3, generator=g), torch.tensor([[0, 1, -100, 2, 0], [1] * 5])
    total, count = _nll_sum(token_logits, token_labels)
    torch.testing.assert_close(classification_loss(token_logits, token_labels), torch.tensor(total / count).float(),
                               **TOL)
    with pytest.raises(InputError, match="targets"):
        classification_loss(logits, labels[:3])


def test_info_nce_is_the_symmetric_cross_entropy_of_the_diagonal():
    g = torch.Generator().manual_seed(4)
    a, b = F.normalize(torch.randn(5, 8, generator=g), dim=-1), F.normalize(torch.randn(5, 8, generator=g), dim=-1)
    logit_scale = torch.tensor(2.6592, requires_grad=True)  # log(1/0.07), CLIP's initial temperature
    logits = logit_scale.exp() * a @ b.T
    row = -torch.stack([logits[i].log_softmax(-1)[i] for i in range(5)]).mean()
    column = -torch.stack([logits[:, j].log_softmax(-1)[j] for j in range(5)]).mean()
    loss = info_nce(logits)
    torch.testing.assert_close(loss, (row + column) / 2, **TOL)
    loss.backward()
    assert logit_scale.grad is not None and logit_scale.grad.item() != 0.0  # the temperature is learned
    # a perfect alignment with a sharp temperature gives a loss near zero
    assert info_nce(100.0 * torch.eye(4)).item() < 1e-6
    with pytest.raises(InputError, match="square"):
        info_nce(torch.randn(3, 4))


def test_info_nce_with_labels_spreads_each_target_over_the_rows_of_the_same_label():
    g = torch.Generator().manual_seed(5)
    logits = torch.randn(6, 6, generator=g)
    labels = torch.tensor([3, 1, 3, 0, 1, 3])

    def direction(matrix):  # -mean_i sum_{j: same label} (1/n_i) log softmax(matrix[i])[j], written out
        total = 0.0
        for i in range(6):
            positives = [j for j in range(6) if labels[j] == labels[i]]
            log_p = matrix[i].double().log_softmax(-1)
            total -= sum(log_p[j].item() for j in positives) / len(positives)
        return total / 6

    expected = (direction(logits) + direction(logits.T)) / 2
    assert info_nce(logits, labels).item() == pytest.approx(expected, rel=1e-5)
    assert torch.equal(info_nce(logits, torch.arange(6)), info_nce(logits))  # distinct labels: the diagonal
    with pytest.raises(InputError, match="labels"):
        info_nce(logits, labels[:4])


def test_next_token_loss_sum_and_label_smoothing_match_the_references():
    g = torch.Generator().manual_seed(6)
    logits, targets = torch.randn(2, 5, 7, generator=g), torch.randint(0, 7, (2, 5), generator=g)
    targets[0, 1] = -100
    assert next_token_loss(logits, targets).item() == pytest.approx(_nll_sum(logits, targets)[0] / 9, rel=1e-5)
    assert next_token_loss(logits, targets, reduction="sum").item() == pytest.approx(_nll_sum(logits, targets)[0],
                                                                                     rel=1e-5)
    with pytest.raises(InputError, match="reduction"):
        mlm_loss(logits, targets, reduction="none")
    images, labels = torch.randn(4, 10, generator=g), torch.tensor([1, 2, 3, 9])
    smoothed = (0.9 * F.cross_entropy(images.double(), labels) - 0.1 * images.double().log_softmax(-1).mean())
    assert classification_loss(images, labels, label_smoothing=0.1).item() == pytest.approx(smoothed.item(), rel=1e-5)


def test_accuracies():
    logits = torch.tensor([[[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]])  # predicts 1, 0, 1
    assert accuracy(logits, torch.tensor([[1, 1, -100]])) == 0.5
    assert causal_lm_accuracy(logits, torch.tensor([[9, 0, 0]])) == 0.5  # targets 0, 0 vs predictions 1, 0
    assert retrieval_accuracy(torch.tensor([[3.0, 1.0], [4.0, 2.0]])) == 0.5
    assert exact_match(["un", "deux"], ["un", "trois"]) == 0.5
    with pytest.raises(InputError):
        exact_match(["a"], ["a", "b"])



def test_info_nce_on_a_dual_encoder_reaches_its_temperature():
    """Images vs their digit written as a word: collator -> DualEncoder -> info_nce -> gradients everywhere."""
    from attnlab import ModelConfig, build_model
    from attnlab.data.collators import pad_batch
    from attnlab.data.pairs import digit_words
    from attnlab.data.tokenizers import char_tokenizer
    from attnlab.models import DualEncoder

    torch.manual_seed(0)
    words = digit_words("en")
    tok = char_tokenizer("".join(words), special_tokens=["[PAD]", "[CLS]"])
    ids, mask = pad_batch([[tok.cls_id] + tok.encode(w) for w in words], tok.pad_id)  # (10, seq)
    images = torch.rand(10, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    small = dict(d_model=32, n_heads=2, d_ff=64, n_layers=1)
    vit = build_model(ModelConfig(topology="vit", image_size=8, patch_size=4, n_channels=1, head="none", **small))
    text = build_model(ModelConfig(topology="encoder", vocab_size=tok.vocab_size, max_len=16, head="none", **small))
    model = DualEncoder.from_towers(vit, text, embed_dim=16)
    with torch.no_grad():
        model.logit_scale.fill_(1.0)
    loss = info_nce(model(images, ids, mask_b=mask))
    # independently: cosine similarities of the two embeddings times e^1, symmetric cross-entropy on the diagonal
    with torch.no_grad():
        a, b = model.embed_a(images), model.embed_b(ids, mask)
        similarity = torch.e * (a / a.norm(dim=-1, keepdim=True)) @ (b / b.norm(dim=-1, keepdim=True)).T
        target = torch.arange(10)
        expected = (F.cross_entropy(similarity, target) + F.cross_entropy(similarity.T, target)) / 2
    torch.testing.assert_close(loss.detach(), expected, **TOL)
    loss.backward()
    for name in ("logit_scale", "proj_a.weight", "proj_b.weight"):
        grad = dict(model.named_parameters())[name].grad
        assert grad is not None and float(grad.abs().sum()) > 0, name
