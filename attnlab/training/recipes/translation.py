"""Translation (translate-numbers): an encoder-decoder learns English number words -> French number words.

Pairs come from num2words for 0..max_number, split by number (a held-out number is never seen in training), or
from the user's TSV file (pairs=FILE). The evaluation is greedy exact match on the held-out pairs, decoded by
attnlab.generate. The number-words tokenizer (attnlab.data.pairs) normalises what it reads, so the shipped model
accepts "Forty-two" as well as num2words' "forty-two", and joins French hyphens when it writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from attnlab.build import build_model
from attnlab.config import ModelConfig
from attnlab.data import tokenizers
from attnlab.data.pairs import number_words_tokenizer, read_pairs_tsv
from attnlab.errors import ConfigError, InputError
from attnlab.extras import require
from attnlab.generation import generate
from attnlab.objectives import seq2seq_loss
from attnlab.storage import atomic_write
from attnlab.training.recipes.base import Recipe, eval_scope
from attnlab.training.trainer import Task

NUMBER_SPECIAL = {"pad": "[PAD]", "bos": "[BOS]", "eos": "[EOS]", "unk": "[UNK]"}


def tsv_pairs(p, batch_size: int) -> tuple[list[tuple[str, str]], int]:
    """pairs=FILE shuffled by split_seed -> (pairs, n_test): the first n_test pairs are held out."""
    try:
        pairs = read_pairs_tsv(p["pairs"])
    except InputError as exc:
        raise InputError(f"pairs={p['pairs']}: {exc}") from None
    if not (0.0 < p["test_fraction"] < 1.0):
        raise ConfigError(f"test_fraction={p['test_fraction']}: must be a number in (0, 1)")
    order = torch.randperm(len(pairs), generator=torch.Generator().manual_seed(p["split_seed"])).tolist()
    n_test = int(len(pairs) * p["test_fraction"])
    if n_test < 1 or len(pairs) - n_test < batch_size:
        raise InputError(f"pairs={p['pairs']}: {len(pairs)} pairs with test_fraction={p['test_fraction']} give "
                         f"{len(pairs) - n_test} train and {n_test} held-out pairs; need at least batch_size="
                         f"{batch_size} train pairs and one held-out pair")
    return [pairs[i] for i in order], n_test


class TranslateNumbersTask(Task):
    """English number words -> French number words (num2words), teacher forcing; held-out numbers are never
    seen in training, so exact match measures whether the model learned the composition rules.

    With pairs=FILE (source<TAB>target lines) the same model, loss and evaluation run on the user's pairs,
    split by test_fraction/split_seed. Their word vocabulary is built from the *training* pairs only (number
    words build it from every number: the set of words is closed). A held-out word never seen in training is
    [UNK], and a held-out target holding one counts as a miss: the model cannot write a word it never saw, so
    its exact match for that pair is 0 (the evaluation reports how many such targets, `unseen_targets`).
    """

    reports_val_loss = False  # exact match of greedy translations: no checkpoint ranks as "best", no patience=

    def __init__(self, p):
        num2words = require("num2words", "data", "the translate-numbers recipe").num2words

        self.p = p
        self.from_file = bool(p.get("pairs"))
        special = list(NUMBER_SPECIAL.values())
        if self.from_file:  # the user's own sentences: words as written, from the training pairs only
            pairs, n_test = tsv_pairs(p, p.get("batch_size", 1))
            words = [w for s, t in pairs[n_test:] for w in tokenizers.split_words(s) + tokenizers.split_words(t)]
            self.tokenizer = tok = tokenizers.word_tokenizer(words, special)
            extra = {"pairs": Path(p["pairs"]).name}
        else:
            numbers = torch.randperm(p["max_number"] + 1,
                                     generator=torch.Generator().manual_seed(p["split_seed"]))
            n_test = int(len(numbers) * p["test_fraction"])
            if n_test < 1 or len(numbers) - n_test < 1:
                raise InputError(f"max_number={p['max_number']} with test_fraction={p['test_fraction']} leaves an "
                                 "empty train or test set")
            pairs = [(num2words(int(n), lang=p["source_lang"]), num2words(int(n), lang=p["target_lang"]))
                     for n in numbers.tolist()]
            # number words: a closed vocabulary of every number's words; the tokenizer reads any spelling of a
            # number (case, hyphens, "and", commas) and writes French with its hyphens
            self.tokenizer = tok = number_words_tokenizer(pairs, special, p["source_lang"])
            extra = {"source_lang": p["source_lang"], "target_lang": p["target_lang"]}
        self.pad, self.bos, self.eos = tok.pad_id, tok.bos_id, tok.eos_id
        src = [tok.encode(s, add_special_tokens=False) for s, _ in pairs]
        tgt = [tok.encode(t, add_special_tokens=False) for _, t in pairs]
        self.max_len = max(len(x) for x in src + tgt) + 1
        self.src, self.tgt = self._pad(src, self.max_len), self._pad([t + [self.eos] for t in tgt], self.max_len)
        self.test_idx = torch.arange(n_test)
        self.train_idx = torch.arange(n_test, len(pairs))
        self.test_pairs = pairs[:n_test]
        config = ModelConfig(topology="encoder-decoder", vocab_size=tok.vocab_size, d_model=p["d_model"],
                             n_heads=p["n_heads"], d_ff=p["d_ff"], n_layers=p["n_layers"],
                             max_len=self.max_len + 1, position="learned", activation="gelu",
                             norm_placement="pre", dropout=p["dropout"], pad_token_id=self.pad,
                             bos_token_id=self.bos, eos_token_id=self.eos, decoder_start_token_id=self.bos,
                             name="translate-numbers", extra=extra)
        self.model = build_model(config)

    def _pad(self, rows, length):
        out = torch.full((len(rows), length), self.pad, dtype=torch.long)
        for i, r in enumerate(rows):
            out[i, : len(r)] = torch.tensor(r)
        return out

    def train_batch(self, generator, batch_size):
        pick = self.train_idx[torch.randint(0, len(self.train_idx), (batch_size,), generator=generator)]
        return {"src": self.src[pick], "tgt": self.tgt[pick]}

    def loss(self, model, batch):
        src, tgt = batch["src"], batch["tgt"]  # (batch, len); tgt ends with [EOS] then padding
        start = torch.full_like(tgt[:, :1], self.bos)
        decoder_in = torch.cat([start, tgt[:, :-1]], dim=1)  # teacher forcing: the right-shifted target
        labels = tgt.masked_fill(tgt == self.pad, -100)
        logits = model(src, decoder_in, attention_mask=(src != self.pad).long()).logits.float()
        return seq2seq_loss(logits, labels), int((labels != -100).sum())

    def greedy(self, model, src):
        """Greedy translations of right-padded sources (batch, len) -> (batch, new) ids, [EOS] then padding."""
        result = generate(model, src, attention_mask=(src != self.pad).long(), max_new_tokens=self.max_len,
                          eos_token_id=self.eos, pad_token_id=self.pad)
        return result.new_tokens

    def _strip(self, row):
        row = row.tolist()
        return row[: row.index(self.eos)] if self.eos in row else [t for t in row if t != self.pad]

    def _eval_count(self) -> int:
        """Held-out pairs scored: the first eval_examples (0 = all)."""
        limit = self.p["eval_examples"]
        return min(len(self.test_idx), limit) if limit else len(self.test_idx)

    def eval_summary(self) -> str:
        return eval_scope(self._eval_count(), len(self.test_idx), "held-out pairs", "eval_examples",
                          self.p["eval_examples"])

    def evaluate(self, model):
        device = next(model.parameters()).device
        correct = scored = 0
        n = self._eval_count()
        unk, unseen = self.tokenizer.unk_id, 0
        for idx in self.test_idx[:n].split(500):
            pred = self.greedy(model, self.src[idx].to(device)).cpu()
            for p_row, t_row in zip(pred, self.tgt[idx], strict=False):
                reference = self._strip(t_row)
                if self.from_file and unk in reference:  # a word never seen in training: cannot be matched
                    unseen += 1
                    continue
                correct += self._strip(p_row) == reference
            scored += len(idx)
            self.evaluated(scored, n, "pairs")
        if not self.from_file:
            return {"exact_match": correct / n}
        return {"exact_match": correct / n, "held_out": n, "unseen_targets": unseen}

    def report_what(self) -> str:
        return f"translating {min(8, len(self.test_idx))} held-out pairs into samples.txt"

    def report(self, model, out: Path) -> dict[str, Any]:
        model.eval()
        idx = self.test_idx[:8]
        pred = self.greedy(model, self.src[idx].to(next(model.parameters()).device)).cpu()
        lines = [f"{s}  ->  {self.tokenizer.decode(self._strip(p))}   (reference: {t})"
                 for (s, t), p in zip(self.test_pairs[:8], pred, strict=False)]
        atomic_write(out / "samples.txt", lambda tmp: Path(tmp).write_text("\n".join(lines) + "\n"))  # link replaced
        return {"samples": lines}


# held-out pairs scored at each evaluation: all of the default split (10,000 numbers, test_fraction 0.1), and a
# bound on a large pairs=FILE, where greedy decoding of every held-out pair would take longer than the training
EVAL_EXAMPLES = 1000


def build_translate_numbers(p):
    return TranslateNumbersTask(p)


TRANSLATE_NUMBERS = Recipe(
    "translate-numbers", "encoder-decoder: English number words -> French (num2words), or pairs=TSV; greedy exact "
    "match", build_translate_numbers,
    dict(pairs="", max_number=9999, test_fraction=0.1, split_seed=0, source_lang="en", target_lang="fr", d_model=128,
         n_heads=4, d_ff=256, n_layers=3, dropout=0.0, eval_examples=EVAL_EXAMPLES),
    dict(steps=600, batch_size=64, lr=1e-3, warmup=100, eval_every=200))
