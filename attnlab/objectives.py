"""Training objectives: the losses and accuracies of the self-supervised and supervised tasks.

Every loss is a mean cross-entropy over the positions that carry a target (-100 marks the rest), so the
numbers are "nats per predicted token" and comparable across batch shapes:
- causal LM: N tokens give N-1 targets, token t+1 predicted from tokens <= t;
- MLM: only the selected (masked / randomized / kept) positions count;
- seq2seq (teacher forcing): -sum_i log P(y_i | y_<i, x), averaged over real target tokens;
- classification: one label per sequence or image (or per token, with -100 for ignored ones);
- next-sentence prediction (BERT): one 2-way label per pair of segments, 0 = B followed A, 1 = B random; BERT's
  pretraining loss is its sum with the MLM loss;
- InfoNCE: for a (batch, batch) similarity matrix, row i's positive is column i (or, given labels, every column
  with row i's label); the mean of the image->text and text->image cross-entropies (CLIP). The temperature lives
  in the model (DualEncoder.logit_scale).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnlab.errors import InputError

IGNORE_INDEX = -100


def _check(logits: torch.Tensor, targets: torch.Tensor, name: str) -> None:
    if not isinstance(logits, torch.Tensor) or not isinstance(targets, torch.Tensor):
        raise InputError(f"{name}: logits and targets must be tensors")
    if logits.shape[:-1] != targets.shape:
        raise InputError(f"{name}: logits {tuple(logits.shape)} must be targets {tuple(targets.shape)} + (classes,)")


def _mean_ce(logits: torch.Tensor, targets: torch.Tensor, reduction: str = "mean",
             label_smoothing: float = 0.0) -> torch.Tensor:
    """Cross-entropy over targets != -100, their mean (or sum, for evaluations that add up batches); 0 (still
    differentiable) when no position has a target."""
    if reduction not in ("mean", "sum"):
        raise InputError(f"reduction={reduction!r}: allowed 'mean' or 'sum'")
    flat_logits, flat_targets = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
    if not bool((flat_targets != IGNORE_INDEX).any()):
        return flat_logits.sum() * 0.0
    return F.cross_entropy(flat_logits.float(), flat_targets.long(), ignore_index=IGNORE_INDEX, reduction=reduction,
                           label_smoothing=label_smoothing)


def causal_lm_loss(logits: torch.Tensor, input_ids: torch.Tensor,
                   attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Next-token loss: logits (batch, seq, vocab) at position t score input_ids[t+1]; padded targets are skipped."""
    targets = input_ids[:, 1:]  # (batch, seq-1)
    if attention_mask is not None:
        targets = targets.masked_fill(attention_mask[:, 1:] == 0, IGNORE_INDEX)
    shifted = logits[:, :-1]  # (batch, seq-1, vocab)
    _check(shifted, targets, "causal_lm_loss")
    return _mean_ce(shifted, targets)


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """causal_lm_loss for targets already shifted: logits (batch, seq, vocab) at position t score targets[:, t].

    A model with a position limit of seq reads `seq` tokens of a (seq + 1)-token window and predicts its last
    seq; the shift happened when the window was cut, so nothing is dropped here."""
    _check(logits, targets, "next_token_loss")
    return _mean_ce(logits, targets, reduction)


def mlm_loss(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Masked LM loss: logits (batch, seq, vocab); labels hold original ids at selected positions, -100 elsewhere."""
    _check(logits, labels, "mlm_loss")
    return _mean_ce(logits, labels, reduction)


def seq2seq_loss(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Teacher-forcing loss: decoder logits (batch, tgt_seq, vocab) against labels (batch, tgt_seq), -100 = padding."""
    _check(logits, labels, "seq2seq_loss")
    return _mean_ce(logits, labels, reduction)


def classification_loss(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean",
                        label_smoothing: float = 0.0) -> torch.Tensor:
    """(batch, classes) vs (batch,) for sequences and images; (batch, seq, classes) vs (batch, seq) per token.

    label_smoothing > 0 moves that much of each target's probability evenly onto all classes (ViT recipes)."""
    _check(logits, labels, "classification_loss")
    if not 0.0 <= label_smoothing < 1.0:
        raise InputError(f"label_smoothing={label_smoothing!r}: allowed 0 <= label_smoothing < 1")
    return _mean_ce(logits, labels, reduction, label_smoothing)


def next_sentence_loss(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """BERT's NSP loss: (batch, 2) logits from the pooled [CLS] against (batch,) labels, 0 = B followed A and
    1 = B is a random sentence (attnlab.data.next_sentence draws them half and half, so chance is ln 2 nats).

    A loss of its own rather than classification_loss so a head of the wrong width is refused by name."""
    if isinstance(logits, torch.Tensor) and logits.shape[-1:] != (2,):
        raise InputError(f"next_sentence_loss: logits {tuple(logits.shape)} must be (batch, 2): is-next, not-next")
    _check(logits, labels, "next_sentence_loss")
    return _mean_ce(logits, labels, reduction)


def info_nce(logits_a_b: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
    """Symmetric contrastive loss of a (batch, batch) similarity matrix.

    Without labels the diagonal holds the matching pairs (CLIP). With labels (batch,), every pair of rows with
    the same label is a positive: a row's target spreads evenly over its positives (a batch of captions drawn
    from ten digit names holds each digit several times, and those are not negatives of each other)."""
    if not isinstance(logits_a_b, torch.Tensor) or logits_a_b.dim() != 2 or \
            logits_a_b.shape[0] != logits_a_b.shape[1]:
        shape = tuple(logits_a_b.shape) if isinstance(logits_a_b, torch.Tensor) else type(logits_a_b).__name__
        raise InputError(f"info_nce needs a square (batch, batch) similarity matrix, got {shape}")
    logits = logits_a_b.float()
    if labels is None:
        targets = torch.arange(logits_a_b.shape[0], device=logits_a_b.device)
    else:
        if not isinstance(labels, torch.Tensor) or labels.shape != logits.shape[:1]:
            shape = tuple(labels.shape) if isinstance(labels, torch.Tensor) else type(labels).__name__
            raise InputError(f"info_nce: labels must be a ({logits.shape[0]},) tensor, got {shape}")
        same = (labels[:, None] == labels[None, :]).float()  # (batch, batch), symmetric, diagonal 1
        targets = same / same.sum(1, keepdim=True)  # each row a distribution over its positives
    return 0.5 * (F.cross_entropy(logits, targets) + F.cross_entropy(logits.T, targets))


# ------------------------------------------------------------------------------------------------ metrics
@torch.no_grad()
def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of positions with a label (!= -100) whose arg-max prediction equals it (nan when there are none)."""
    _check(logits, labels, "accuracy")
    keep = labels != IGNORE_INDEX
    if not bool(keep.any()):
        return float("nan")
    return (logits.argmax(-1)[keep] == labels[keep]).float().mean().item()


@torch.no_grad()
def causal_lm_accuracy(logits: torch.Tensor, input_ids: torch.Tensor,
                       attention_mask: torch.Tensor | None = None) -> float:
    """Top-1 next-token accuracy with the same shift and padding rule as causal_lm_loss."""
    targets = input_ids[:, 1:]
    if attention_mask is not None:
        targets = targets.masked_fill(attention_mask[:, 1:] == 0, IGNORE_INDEX)
    return accuracy(logits[:, :-1], targets)


@torch.no_grad()
def retrieval_accuracy(logits_a_b: torch.Tensor) -> float:
    """Fraction of rows whose best-scoring column is their own pair (the diagonal)."""
    targets = torch.arange(logits_a_b.shape[0], device=logits_a_b.device)
    return (logits_a_b.argmax(-1) == targets).float().mean().item()


def exact_match(predictions, targets) -> float:
    """Fraction of predicted sequences (strings or id lists) identical to their target."""
    predictions, targets = list(predictions), list(targets)
    if len(predictions) != len(targets) or not targets:
        raise InputError(f"exact_match needs as many predictions ({len(predictions)}) as targets ({len(targets)}), "
                         "at least one")
    return sum(p == t for p, t in zip(predictions, targets, strict=True)) / len(targets)
