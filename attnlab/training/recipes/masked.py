"""Masked language model (bert-mlm): an encoder learns BERT's objective on a trained WordPiece vocabulary.

The corpus is the CPython documentation unless data=FILE names the user's own text; it is tokenized once into
OUT/data/ like the text recipes'. The evaluation masks fixed validation windows with a fixed seed (comparable
evaluations) and compares top-1 accuracy with always guessing the most frequent training token.
"""

from __future__ import annotations

import torch

from attnlab.build import build_model
from attnlab.config import ModelConfig
from attnlab.data import tokenizers
from attnlab.data.collators import MLMCollator
from attnlab.data.streaming import paragraphs_of
from attnlab.errors import ConfigError
from attnlab.objectives import mlm_loss
from attnlab.training.recipes.base import CorpusTask, Recipe, open_corpus, split_pieces, trained_tokenizer
from attnlab.training.recipes.pretrained import Start, load_start, refuse_without_start


class ClsSepMasking:
    """What both masked-LM recipes do to a window: [CLS] ... [SEP] around it, then the 15/80/10/10 rule
    (MLMCollator). Needs `cls`, `sep` (token ids) and `collator` on the task."""

    def _wrap(self, windows):  # (n, inner) -> (n, inner + 2) as [CLS] ... [SEP]
        n = windows.shape[0]
        return torch.cat([torch.full((n, 1), self.cls), windows, torch.full((n, 1), self.sep)], dim=1)

    def mask(self, ids, generator):
        """(batch, seq) ids -> inputs, labels (-100 where not selected), drawn from `generator`."""
        out = self.collator.mask_tokens(ids, generator=generator)
        return {"ids": out["input_ids"], "labels": out["labels"]}


def masked_batches(task, model, group: int = 32):
    """(logits at the masked positions, their true tokens) for each group of the task's held-out windows
    (task.val["ids"] / ["labels"], scored by task.selected_logits), reporting progress through task.evaluated:
    the evaluation loop both MiniLM's and SmolLM2's masked-LM recipes count their figures over."""
    device = next(model.parameters()).device
    scored = 0
    for ids, labels in zip(task.val["ids"].split(group), task.val["labels"].split(group), strict=False):
        logits = task.selected_logits(model, ids.to(device), labels.to(device)).cpu()  # (n_selected, vocab)
        yield logits, labels[labels != -100]
        scored += len(ids)
        task.evaluated(scored, len(task.val["ids"]))


def masked_scores(task, model) -> tuple[dict[str, float], torch.Tensor]:
    """The held-out figures a masked-LM recipe reports (mean loss, top-1 and top-5 accuracy at the masked positions,
    how many), and every masked position's true token, for the baselines a recipe adds."""
    n = top1 = top5 = 0
    loss_sum = 0.0
    targets = []
    for logits, target in masked_batches(task, model):
        loss_sum += float(mlm_loss(logits, target, reduction="sum"))
        best = logits.topk(5, dim=-1).indices  # (n_selected, 5)
        top1 += int((best[:, 0] == target).sum())
        top5 += int((best == target[:, None]).any(-1).sum())
        n += len(target)
        targets.append(target)
    return ({"val_loss": loss_sum / n, "masked_top1": top1 / n, "masked_top5": top5 / n, "masked_positions": n},
            torch.cat(targets))


def selected_logits(model, ids, labels):
    """Vocabulary logits at the selected positions only: (n_selected, vocab). The head runs on those rows, not
    on every position: a 30,522-word projection of every token would cost as much as MiniLM's encoder."""
    h = model.run(model.tokens(ids))  # (batch, seq, d_model)
    return model.lm_head(h[labels != -100]).float()


class MaskedLMTask(CorpusTask, ClsSepMasking):
    """BERT's objective: 15% of the real tokens are selected; of those 80% -> [MASK], 10% -> a random token,
    10% unchanged; only selected positions are predicted. The rule is attnlab.data.collators.apply_mlm_rule
    (through MLMCollator), the same function the explorer's masking view draws with."""

    def __init__(self, p, source, batch_size, scan=None, start: Start | None = None):
        self.p, self.start = p, start
        if start is not None:  # init_from=: the loaded encoder's own vocabulary
            self.tokenizer = tok = start.tokenizer
            missing = [name for name in ("cls", "sep", "mask") if getattr(tok, f"{name}_id") is None]
            if missing:
                raise ConfigError(f"init_from={start.spec}: its tokenizer has no {', '.join(missing)} token; a "
                                  "masked LM needs [CLS], [SEP] and [MASK] (a BERT-family WordPiece tokenizer)")
        else:
            # WordPiece training breaks frequency ties differently from run to run: a resumed run reuses the
            # checkpoint's tokenizer (run_train passes it as p["tokenizer"]) so token ids stay the same
            self.tokenizer = tok = trained_tokenizer(
                p, "bert-mlm", "WordPiece",
                lambda: tokenizers.train_wordpiece(paragraphs_of(source.blocks()), p["vocab_size"], min_frequency=2))
        self.cls, self.sep, self.mask_id, self.pad = tok.cls_id, tok.sep_id, tok.mask_id, tok.pad_id
        # special ids ([PAD] [UNK] [CLS] [SEP] [MASK]) are never selected nor drawn as random replacements
        self.collator = MLMCollator(tok, mlm_probability=p["mask_prob"])
        self.inner = p["seq_len"] - 2
        self.data = self.tokenize_corpus(p, source, tok, {"train": self.inner + batch_size, "val": self.inner},
                                         f"windows of seq_len={p['seq_len']} ([CLS] + {self.inner} tokens + [SEP])",
                                         scan)
        val = self._wrap(self.data.tiles("val", self.inner, p["eval_windows"] or None))
        self.val = self.mask(val, torch.Generator().manual_seed(1234))  # fixed masking: comparable evaluations
        counts = sum(torch.bincount(piece, minlength=tok.vocab_size) for piece in split_pieces(self.data, "train"))
        self.unigram_top = int(counts.argmax())
        if start is not None:
            self.model = start.model
            if "lm_head.bias" in start.new:  # a fresh head starts as the unigram model (add-one smoothed log
                # frequencies of the train split), as minilm-mlm's does: AdamW moves a bias ~lr a step, far too
                # slowly to learn "the" from "aardvark" from zero in a short run
                with torch.no_grad():
                    self.model.lm_head.bias.copy_(torch.log((counts + 1.0) / (counts.sum() + tok.vocab_size)))
                start.head_note = "; its output bias starts at the train split's log unigram frequencies"
        else:
            config = ModelConfig(topology="encoder", vocab_size=tok.vocab_size, d_model=p["d_model"],
                                 n_heads=p["n_heads"], d_ff=p["d_ff"], n_layers=p["n_layers"], max_len=p["seq_len"],
                                 position="learned", activation="gelu", norm_placement="pre", head="lm",
                                 dropout=p["dropout"], pad_token_id=self.pad, name="bert-mlm")
            self.model = build_model(config)

    def eval_summary(self) -> str:
        return self.windows_scope(len(self.val["ids"]), len(self.data.tokens("val")) // self.inner)

    def train_batch(self, generator, batch_size):
        windows = self._wrap(self.data.sample("train", batch_size, self.inner, generator))  # (batch, seq_len)
        return self.mask(windows, generator)

    def loss(self, model, batch):
        labels = batch["labels"]
        if self.start is not None:  # a loaded vocabulary is large: the head runs on the selected positions only
            return mlm_loss(selected_logits(model, batch["ids"], labels), labels[labels != -100]), labels.numel()
        logits = model(batch["ids"]).logits.float()  # (batch, seq, vocab)
        return mlm_loss(logits, labels), batch["ids"].numel()

    def evaluate(self, model):
        device = next(model.parameters()).device
        correct = total = 0
        loss_sum = 0.0
        unigram = rest_correct = rest_total = scored = 0
        for ids, labels in zip(self.val["ids"].split(64), self.val["labels"].split(64), strict=False):
            sel = labels != -100
            if self.start is not None:  # (n_selected, vocab), as in loss()
                picked = selected_logits(model, ids.to(device), labels.to(device)).cpu()
            else:
                picked = model(ids.to(device)).logits.float().cpu()[sel]
            loss_sum += float(mlm_loss(picked, labels[sel], reduction="sum"))  # selected positions only
            correct += int((picked.argmax(-1) == labels[sel]).sum())
            unigram += int((labels[sel] == self.unigram_top).sum())
            total += int(sel.sum())
            rest = labels[sel] != self.unigram_top  # where the unigram baseline is always wrong
            rest_correct += int((picked.argmax(-1) == labels[sel])[rest].sum())
            rest_total += int(rest.sum())
            scored += len(ids)
            self.evaluated(scored, len(self.val["ids"]))
        return {"val_loss": loss_sum / total, "masked_top1": correct / total, "unigram_top1": unigram / total,
                "masked_top1_other_tokens": rest_correct / max(1, rest_total)}


def build_bert_mlm(p):
    if not p["init_from"]:
        refuse_without_start(p)
    start = load_start(p, "bert-mlm", "encoder") if p["init_from"] else None
    source, scan = open_corpus(p)  # bad input is refused before the tokenizer trains
    return MaskedLMTask(p, source, p["batch_size"], scan, start=start)


BERT_MLM = Recipe("bert-mlm", "encoder masked-LM with a trained WordPiece on the CPython docs (or data=FILE)",
                  build_bert_mlm,
                  dict(data="", text_field="text", vocab_size=2048, d_model=128, n_heads=4, d_ff=512, n_layers=4,
                       seq_len=64, dropout=0.0, mask_prob=0.15, val_fraction=0.1, eval_windows=200, init_from="",
                       freeze=0),
                  dict(steps=3000, batch_size=16, lr=1e-3, warmup=100, eval_every=500))
