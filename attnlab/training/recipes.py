"""Named recipes: a model, its data, its loss and its evaluation, with defaults that meet the documented targets.

Every recipe key (and every TrainSettings key) can be overridden from a config file or `key=value` on the
command line; `attnlab train RECIPE --help-keys` lists them. Each recipe's build() returns a Task for the Trainer.

Data come from the general data layer (attnlab.data): corpora for text, tokenizers built there, a memory-mapped
TokenFile under OUT/data/ (tokenized once, reused by --resume) for the text recipes, MLMCollator's masking rule
for bert-mlm, mnist_5k for the image recipes. Every random draw of a training batch uses the trainer's
checkpointed generator, so a resumed run continues with exactly the batches an uninterrupted one would draw.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.build import build_model
from attnlab.config import ModelConfig
from attnlab.data import tokenizers
from attnlab.data.collators import MLMCollator
from attnlab.data.corpora import python_docs, read_text
from attnlab.data.images import image_folder, mnist_5k, sklearn_digits, train_test_split
from attnlab.data.packages import MissingDataError
from attnlab.data.pairs import digit_words, read_pairs_tsv
from attnlab.data.token_file import TokenFile
from attnlab.errors import ConfigError, InputError
from attnlab.training.trainer import Task, TrainSettings


@dataclass
class Recipe:
    name: str
    help: str
    build: Callable[[dict[str, Any]], Task]
    params: dict[str, Any]  # recipe-specific keys and their defaults (model size, data, evaluation)
    train: dict[str, Any] = field(default_factory=dict)  # TrainSettings defaults for this recipe

    def defaults(self) -> dict[str, Any]:
        base = {k: getattr(TrainSettings, k) for k in TrainSettings.keys()}
        return {**base, **self.train, **self.params}


RECIPES: dict[str, Recipe] = {}


def recipe(name: str, help: str, params: dict[str, Any], train: dict[str, Any]):
    def register(fn):
        RECIPES[name] = Recipe(name, help, fn, params, train)
        return fn
    return register


def get_recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise ConfigError(f"unknown recipe {name!r}; recipes: {', '.join(sorted(RECIPES))}")
    return RECIPES[name]


def coerce(key: str, value: Any, default: Any) -> Any:
    """Bring a value from the command line (a string) or a config file to the type of the default."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{key}={value!r}: expected true or false")
    if isinstance(default, int):
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}={value!r}: expected an integer") from None
        if not number.is_integer() or isinstance(value, bool):
            raise ConfigError(f"{key}={value!r}: expected an integer")
        return int(number)
    if isinstance(default, float):
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}={value!r}: expected a number") from None
    return str(value)


def resolve_params(recipe_: Recipe, *layers: dict[str, Any]) -> tuple[TrainSettings, dict[str, Any]]:
    """Defaults, then each layer (config file, then command line) on top. Unknown keys are refused by name."""
    defaults = recipe_.defaults()
    merged = dict(defaults)
    for layer in layers:
        unknown = sorted(set(layer) - set(defaults))
        if unknown:
            raise ConfigError(f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} for recipe "
                              f"{recipe_.name!r}; valid keys: {', '.join(sorted(defaults))}")
        for key, value in layer.items():
            merged[key] = coerce(key, value, defaults[key])
    train_keys = set(TrainSettings.keys())
    settings = TrainSettings(**{k: v for k, v in merged.items() if k in train_keys})
    return settings, {k: v for k, v in merged.items() if k not in train_keys}


# ============================================================== text data
def read_corpus(path: str | None) -> str:
    """The text of `path` (a UTF-8 file or a folder of .txt files), or the CPython docs when path is empty."""
    if not path:
        return python_docs()
    try:
        return read_text(path)
    except MissingDataError:
        raise
    except InputError as exc:
        raise InputError(f"data={path}: {exc} (or leave data= empty to train on the CPython documentation)") from None


def corpus_token_file(task: Task, p: dict[str, Any], text: str, tokenizer, min_tokens: dict[str, int],
                      purpose: str) -> TokenFile:
    """The corpus tokenized once into OUT/data/ (train = first 1 - val_fraction of the ids, val = the rest).

    A run resumed with the same corpus and tokenizer reuses the ids on disk (task.data_reused says which);
    without an output directory (a task built outside `attnlab train`) a temporary directory holds them.
    """
    if p.get("out_dir"):
        directory = Path(p["out_dir"]) / "data"
    else:
        task._scratch = tempfile.TemporaryDirectory(prefix="attnlab-tokens-")  # removed with the task
        directory = Path(task._scratch.name)
    data, task.data_reused = TokenFile.prepare(text, tokenizer, directory, p["val_fraction"], min_tokens=min_tokens,
                                               purpose=purpose)
    return data


def split_ids(data: TokenFile, split: str) -> torch.Tensor:
    """A whole split as an int64 tensor (copied out of the memory map)."""
    return torch.from_numpy(data.tokens(split).astype(np.int64))


# ============================================================== language models
class CausalLMTask(Task):
    """Next-token prediction on windows of one long token stream (N-1 targets from N tokens)."""

    def __init__(self, p: dict[str, Any], tokenizer, text: str, batch_size: int, name: str):
        self.tokenizer, self.p = tokenizer, p
        seq = p["seq_len"]
        self.data = corpus_token_file(self, p, text, tokenizer, {"train": batch_size * seq + 1, "val": seq + 1},
                                      f"one batch of {batch_size} windows of seq_len={seq} (+1 target)")
        inputs, targets = self.data.windows("val", seq, p["eval_windows"] or None)  # (n, seq) each
        self.val_windows = torch.cat([inputs, targets[:, -1:]], dim=1)  # (n, seq + 1): every val transition once
        self.train_ids = split_ids(self.data, "train")
        config = ModelConfig(topology="decoder", vocab_size=tokenizer.vocab_size, d_model=p["d_model"],
                             n_heads=p["n_heads"], d_ff=p["d_ff"], n_layers=p["n_layers"], max_len=p["seq_len"],
                             position=p["position"], activation=p["activation"], norm=p["norm"],
                             norm_placement=p["norm_placement"], dropout=p["dropout"], name=name)
        self.model = build_model(config)
        self.bigram = bigram_loss(self.train_ids, self.val_windows, tokenizer.vocab_size)  # the same split

    def flops_per_item(self):
        from attnlab.cost.analytic import training_flops_per_token

        return training_flops_per_token(self.model.config, self.p["seq_len"])

    def train_batch(self, generator, batch_size):
        inputs, targets = self.data.get_batch("train", batch_size, self.p["seq_len"], generator)  # (batch, seq)
        return {"inputs": inputs, "targets": targets}

    def loss(self, model, batch):
        targets = batch["targets"]  # (batch, seq): the inputs shifted by one
        logits = model(batch["inputs"]).logits  # (batch, seq, vocab)
        return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten()), targets.numel()

    def evaluate(self, model):
        device = next(model.parameters()).device
        total, count = 0.0, 0
        for chunk in self.val_windows.split(64):
            chunk = chunk.to(device)
            logits = model(chunk[:, :-1]).logits.float()
            total += float(F.cross_entropy(logits.flatten(0, 1), chunk[:, 1:].flatten(), reduction="sum"))
            count += chunk[:, 1:].numel()
        return {"val_loss": total / count, "bigram_val_loss": self.bigram}

    def report(self, model, out: Path) -> dict[str, Any]:
        """Samples from the trained model, written to samples.txt."""
        model.eval()
        g = torch.Generator().manual_seed(0)
        prompts = ["def ", "The "]
        samples = []
        for prompt in prompts:
            ids = torch.tensor([self.tokenizer.encode(prompt, add_special_tokens=False)])
            out_ids = sample(model, ids, self.p["sample_tokens"], temperature=0.8, generator=g)
            samples.append(self.tokenizer.decode(out_ids[0].tolist()))
        (out / "samples.txt").write_text("\n\n-----\n\n".join(samples) + "\n")
        return {"samples": samples}


def bigram_loss(train_ids: torch.Tensor, val_windows: torch.Tensor, vocab_size: int) -> float:
    """Cross-entropy (nats/token) of an add-one-smoothed bigram model counted on train, scored on exactly the
    targets the transformer is scored on (each window's tokens 1.. given the previous token)."""
    counts = torch.ones(vocab_size, vocab_size, dtype=torch.float64)  # add-one (Laplace) smoothing
    pair = train_ids[:-1] * vocab_size + train_ids[1:]
    counts.view(-1).index_add_(0, pair, torch.ones(len(pair), dtype=torch.float64))
    log_p = (counts / counts.sum(1, keepdim=True)).log()
    prev, nxt = val_windows[:, :-1].flatten(), val_windows[:, 1:].flatten()
    return float(-log_p[prev, nxt].mean())


@torch.no_grad()
def sample(model, ids: torch.Tensor, n_new: int, temperature: float = 1.0, generator=None) -> torch.Tensor:
    """Ancestral sampling, recomputing the (short) window each step: small models, no cache needed."""
    limit = model.config.max_len
    for _ in range(n_new):
        logits = model(ids[:, -limit:]).logits[:, -1].float() / temperature
        nxt = torch.multinomial(logits.softmax(-1), 1, generator=generator)
        ids = torch.cat([ids, nxt], dim=1)
    return ids


_LM_PARAMS = dict(data="", d_model=128, n_heads=4, d_ff=512, n_layers=4, seq_len=64, position="learned",
                  activation="gelu", norm="layernorm", norm_placement="pre", dropout=0.0, val_fraction=0.1,
                  eval_windows=0, sample_tokens=300)


@recipe("gpt-char", "decoder, one token per character, on the CPython docs (or data=FILE)", _LM_PARAMS,
        dict(steps=2000, batch_size=12, lr=2e-3, warmup=100, eval_every=500, weight_decay=0.1))
def build_gpt_char(p):
    text = read_corpus(p["data"])
    tokenizer = p.get("tokenizer") or tokenizers.char_tokenizer(text, ["[UNK]"])  # resume: the saved one
    return CausalLMTask(p, tokenizer, text, p["batch_size"], "gpt-char")


@recipe("gpt-bpe", "decoder with a byte-level BPE trained on the CPython docs (or data=FILE)",
        dict(_LM_PARAMS, vocab_size=2048, sample_tokens=80),
        dict(steps=2000, batch_size=12, lr=1e-3, warmup=100, eval_every=500))
def build_gpt_bpe(p):
    text = read_corpus(p["data"])
    tokenizer = p.get("tokenizer") or tokenizers.train_bpe(paragraphs(text), p["vocab_size"])  # resume: the saved one
    return CausalLMTask(p, tokenizer, text, p["batch_size"], "gpt-bpe")


def paragraphs(text: str) -> list[str]:
    """What the tokenizer trainers read: one string per blank-line-separated paragraph."""
    return [part for part in text.split("\n\n") if part.strip()]


# ============================================================== masked LM
class MaskedLMTask(Task):
    """BERT's objective: 15% of the real tokens are selected; of those 80% -> [MASK], 10% -> a random token,
    10% unchanged; only selected positions are predicted. The rule is attnlab.data.collators.apply_mlm_rule
    (through MLMCollator), the same function the explorer's masking view draws with."""

    def __init__(self, p, text, batch_size):
        self.p = p
        # WordPiece training breaks frequency ties differently from run to run: a resumed run reuses the
        # checkpoint's tokenizer (run_train passes it as p["tokenizer"]) so token ids stay the same
        self.tokenizer = tok = p.get("tokenizer") or tokenizers.train_wordpiece(paragraphs(text), p["vocab_size"],
                                                                               min_frequency=2)
        self.cls, self.sep, self.mask_id, self.pad = tok.cls_id, tok.sep_id, tok.mask_id, tok.pad_id
        # special ids ([PAD] [UNK] [CLS] [SEP] [MASK]) are never selected nor drawn as random replacements
        self.collator = MLMCollator(tok, mlm_probability=p["mask_prob"])
        self.inner = p["seq_len"] - 2
        self.data = corpus_token_file(self, p, text, tok, {"train": self.inner + batch_size, "val": self.inner},
                                      f"windows of seq_len={p['seq_len']} ([CLS] + {self.inner} tokens + [SEP])")
        val = self._wrap(self.data.tiles("val", self.inner, p["eval_windows"] or None))
        self.val = self.mask(val, torch.Generator().manual_seed(1234))  # fixed masking: comparable evaluations
        self.train_ids = split_ids(self.data, "train")
        counts = torch.bincount(self.train_ids, minlength=tok.vocab_size)
        self.unigram_top = int(counts.argmax())
        config = ModelConfig(topology="encoder", vocab_size=tok.vocab_size, d_model=p["d_model"],
                             n_heads=p["n_heads"], d_ff=p["d_ff"], n_layers=p["n_layers"], max_len=p["seq_len"],
                             position="learned", activation="gelu", norm_placement="pre", head="lm",
                             dropout=p["dropout"], pad_token_id=self.pad, name="bert-mlm")
        self.model = build_model(config)

    def _wrap(self, windows):  # (n, inner) -> (n, inner + 2) as [CLS] ... [SEP]
        n = windows.shape[0]
        return torch.cat([torch.full((n, 1), self.cls), windows, torch.full((n, 1), self.sep)], dim=1)

    def mask(self, ids, generator):
        """(batch, seq) ids -> inputs, labels (-100 where not selected), drawn from `generator`."""
        out = self.collator.mask_tokens(ids, generator=generator)
        return {"ids": out["input_ids"], "labels": out["labels"]}

    def train_batch(self, generator, batch_size):
        windows = self._wrap(self.data.sample("train", batch_size, self.inner, generator))  # (batch, seq_len)
        return self.mask(windows, generator)

    def loss(self, model, batch):
        logits = model(batch["ids"]).logits.float()  # (batch, seq, vocab)
        return F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten()), batch["ids"].numel()

    def evaluate(self, model):
        device = next(model.parameters()).device
        correct = total = 0
        loss_sum = 0.0
        unigram = rest_correct = rest_total = 0
        for ids, labels in zip(self.val["ids"].split(64), self.val["labels"].split(64), strict=False):
            logits = model(ids.to(device)).logits.float().cpu()
            sel = labels != -100
            loss_sum += float(F.cross_entropy(logits[sel], labels[sel], reduction="sum"))
            correct += int((logits[sel].argmax(-1) == labels[sel]).sum())
            unigram += int((labels[sel] == self.unigram_top).sum())
            total += int(sel.sum())
            rest = labels[sel] != self.unigram_top  # where the unigram baseline is always wrong
            rest_correct += int((logits[sel].argmax(-1) == labels[sel])[rest].sum())
            rest_total += int(rest.sum())
        return {"val_loss": loss_sum / total, "masked_top1": correct / total, "unigram_top1": unigram / total,
                "masked_top1_other_tokens": rest_correct / max(1, rest_total)}


@recipe("bert-mlm", "encoder masked-LM with a trained WordPiece on the CPython docs (or data=FILE)",
        dict(data="", vocab_size=2048, d_model=128, n_heads=4, d_ff=512, n_layers=4, seq_len=64, dropout=0.0,
             mask_prob=0.15, val_fraction=0.1, eval_windows=200),
        dict(steps=3000, batch_size=16, lr=1e-3, warmup=100, eval_every=500))
def build_bert_mlm(p):
    return MaskedLMTask(p, read_corpus(p["data"]), p["batch_size"])


# ============================================================== translation
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

    def __init__(self, p):
        from num2words import num2words

        self.p = p
        self.from_file = bool(p.get("pairs"))
        if self.from_file:
            pairs, n_test = tsv_pairs(p, p.get("batch_size", 1))
            vocabulary_pairs, extra = pairs[n_test:], {"pairs": Path(p["pairs"]).name}
        else:
            numbers = torch.randperm(p["max_number"] + 1,
                                     generator=torch.Generator().manual_seed(p["split_seed"]))
            n_test = int(len(numbers) * p["test_fraction"])
            if n_test < 1 or len(numbers) - n_test < 1:
                raise InputError(f"max_number={p['max_number']} with test_fraction={p['test_fraction']} leaves an "
                                 "empty train or test set")
            pairs = [(num2words(int(n), lang=p["source_lang"]), num2words(int(n), lang=p["target_lang"]))
                     for n in numbers.tolist()]
            vocabulary_pairs, extra = pairs, {"source_lang": p["source_lang"], "target_lang": p["target_lang"]}
        words = [w for s, t in vocabulary_pairs for w in tokenizers.split_words(s) + tokenizers.split_words(t)]
        self.tokenizer = tok = tokenizers.word_tokenizer(words, list(NUMBER_SPECIAL.values()))
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
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten()), int((labels != -100).sum())

    @torch.no_grad()
    def greedy(self, model, src):
        """Greedy decoding: the encoder runs once, the decoder re-reads its (short) prefix each step."""
        mask = (src != self.pad).long()
        memory = model.encode(src, mask)
        out = torch.full((src.shape[0], 1), self.bos, dtype=torch.long, device=src.device)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        for _ in range(self.max_len):
            _, logits = model.decode(out, memory, attention_mask=mask, last_only=True)
            nxt = logits[:, -1].argmax(-1).masked_fill(done, self.pad)
            out = torch.cat([out, nxt[:, None]], dim=1)
            done |= nxt == self.eos
            if bool(done.all()):
                break
        return out[:, 1:]

    def _strip(self, row):
        row = row.tolist()
        return row[: row.index(self.eos)] if self.eos in row else [t for t in row if t != self.pad]

    def evaluate(self, model):
        device = next(model.parameters()).device
        correct = 0
        n = min(len(self.test_idx), self.p["eval_examples"]) if self.p["eval_examples"] else len(self.test_idx)
        unk, unseen = self.tokenizer.unk_id, 0
        for idx in self.test_idx[:n].split(500):
            pred = self.greedy(model, self.src[idx].to(device)).cpu()
            for p_row, t_row in zip(pred, self.tgt[idx], strict=False):
                reference = self._strip(t_row)
                if self.from_file and unk in reference:  # a word never seen in training: cannot be matched
                    unseen += 1
                    continue
                correct += self._strip(p_row) == reference
        if not self.from_file:
            return {"exact_match": correct / n}
        return {"exact_match": correct / n, "held_out": n, "unseen_targets": unseen}

    def report(self, model, out: Path) -> dict[str, Any]:
        model.eval()
        idx = self.test_idx[:8]
        pred = self.greedy(model, self.src[idx].to(next(model.parameters()).device)).cpu()
        lines = [f"{s}  ->  {self.tokenizer.decode(self._strip(p))}   (reference: {t})"
                 for (s, t), p in zip(self.test_pairs[:8], pred, strict=False)]
        (out / "samples.txt").write_text("\n".join(lines) + "\n")
        return {"samples": lines}


@recipe("translate-numbers", "encoder-decoder: English number words -> French (num2words), or pairs=TSV; "
        "greedy exact match", dict(pairs="", max_number=9999, test_fraction=0.1, split_seed=0, source_lang="en",
                                   target_lang="fr", d_model=128,
             n_heads=4, d_ff=256, n_layers=3, dropout=0.0, eval_examples=0),
        dict(steps=600, batch_size=64, lr=1e-3, warmup=100, eval_every=200))
def build_translate_numbers(p):
    return TranslateNumbersTask(p)


# ============================================================== images
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


def split_images(p, batch_size):
    pixels, labels = mnist_5k()
    pixels = (pixels - MNIST_MEAN) / MNIST_STD
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(p["split_seed"]))
    n_test = p["test_size"]
    if not 0 < n_test < len(labels) - batch_size:
        raise InputError(f"test_size={n_test}: must leave at least one batch ({batch_size}) of the "
                         f"{len(labels)} images for training")
    test, train = order[:n_test], order[n_test:]
    return pixels[train], labels[train], pixels[test], labels[test]


def shift_images(images: torch.Tensor, max_shift: int, generator: torch.Generator,
                 fill: float | None = -MNIST_MEAN / MNIST_STD) -> torch.Tensor:
    """Random translations by up to max_shift pixels: the augmentation small-data ViTs need.

    The uncovered border takes `fill` (MNIST's normalised black background by default) or, with fill=None,
    repeats the edge pixels (user images have no known background colour).
    """
    if max_shift <= 0:
        return images
    n, _, h, w = images.shape
    if fill is None:
        padded = F.pad(images, (max_shift,) * 4, mode="replicate")
    else:
        padded = F.pad(images, (max_shift,) * 4, value=fill)  # pad with the background value
    dx = torch.randint(0, 2 * max_shift + 1, (n,), generator=generator).tolist()
    dy = torch.randint(0, 2 * max_shift + 1, (n,), generator=generator).tolist()
    return torch.stack([padded[i, :, dy[i]: dy[i] + h, dx[i]: dx[i] + w] for i in range(n)])


def vit_config(p, head: str, n_classes: int, name: str, image_size: int = 28, n_channels: int = 1,
               extra: dict[str, Any] | None = None) -> ModelConfig:
    return ModelConfig(topology="vit", image_size=image_size, patch_size=p["patch_size"], n_channels=n_channels,
                       d_model=p["d_model"], n_heads=p["n_heads"], d_ff=p["d_ff"], n_layers=p["n_layers"],
                       position="learned", activation="gelu", norm_placement="pre", head=head,
                       n_classes=n_classes, vocab_size=1, dropout=p["dropout"], name=name, extra=extra or {})


IMAGE_DATASETS = ("mnist", "digits")


@dataclass
class ImageData:
    """A normalised train/test split of a user image folder or scikit-learn's digits, with what a checkpoint
    must remember to be used later: class names and the per-channel pixel statistics inputs were normalised by."""

    train_x: torch.Tensor  # (n_train, channels, size, size)
    train_y: torch.Tensor  # (n_train,)
    test_x: torch.Tensor
    test_y: torch.Tensor
    labels: list[str]
    mean: list[float]
    std: list[float]
    source: str


def user_images(p, batch_size) -> ImageData:
    """images=FOLDER or dataset=digits: loaded, validated, split by class (test_fraction, split_seed) and
    normalised with the training part's per-channel mean and std. Every check runs before anything is written."""
    size = p["image_size"] or None
    if size is not None and size < 1:
        raise ConfigError(f"image_size={size}: give a positive size, or 0 to keep the data's own size")
    if p["images"]:
        folder = Path(p["images"]).expanduser()
        try:
            pixels, labels, names = image_folder(folder, size=size, channels=None)
        except InputError as exc:
            raise InputError(f"images={p['images']}: {exc}") from None
        counts = torch.bincount(labels, minlength=len(names)).tolist()
        empty = [name for name, count in zip(names, counts, strict=True) if count == 0]
        if empty:
            raise InputError(f"images={p['images']}: class folder(s) {', '.join(empty)} hold no images; "
                             "remove them or add images")
        if len(names) < 2:
            raise InputError(f"images={p['images']}: found one class ({names[0]}); a classifier needs at least "
                             "two class subfolders")
        source = folder.resolve().name or "images"
    else:
        pixels, labels = sklearn_digits(size or 8)
        names, source = [str(d) for d in range(10)], "digits"
    patch, side = p["patch_size"], pixels.shape[-1]
    if patch < 1:
        raise ConfigError(f"patch_size={patch}: must be a positive divisor of the image size")
    if pixels.shape[-2] != side:
        raise InputError(f"images are {side}x{pixels.shape[-2]}; a ViT needs square images: set image_size=N")
    if side % patch:
        allowed = [d for d in range(1, side + 1) if side % d == 0]
        raise ConfigError(f"patch_size={patch} does not divide the {side}x{side} images; allowed patch sizes: "
                          f"{', '.join(map(str, allowed))} (or set image_size to a multiple of {patch})")
    train_x, train_y, test_x, test_y = train_test_split(pixels, labels, p["test_fraction"], p["split_seed"])
    if len(test_y) < 1 or len(train_y) < batch_size:
        raise InputError(f"{len(labels)} images split by test_fraction={p['test_fraction']} give "
                         f"{len(train_y)} train and {len(test_y)} test images; need at least one batch "
                         f"(batch_size={batch_size}) to train on and one test image")
    mean = train_x.mean(dim=(0, 2, 3))  # (channels,)
    std = train_x.std(dim=(0, 2, 3)).clamp_min(1e-6)
    scale = (lambda x: (x - mean.view(-1, 1, 1)) / std.view(-1, 1, 1))
    return ImageData(scale(train_x), train_y, scale(test_x), test_y, names, mean.tolist(), std.tolist(), source)


class VitMnistTask(Task):
    """A ViT classifier on MNIST-5k by default; on a user folder (images=) or scikit-learn's digits
    (dataset=digits) the image size, channels and classes come from the data and the class names are saved in
    the checkpoint's config (extra.labels, with extra.pixel_mean / pixel_std) for attnlab.load and the explorer."""

    def __init__(self, p, batch_size):
        self.p = p
        dataset = p.get("dataset", "mnist")
        if dataset not in IMAGE_DATASETS:
            raise ConfigError(f"dataset={dataset!r}: allowed {', '.join(IMAGE_DATASETS)} "
                              "(or images=FOLDER for your own images)")
        if p.get("images") and dataset != "mnist":
            raise ConfigError(f"images={p['images']} and dataset={dataset}: give one of them")
        self.fill = -MNIST_MEAN / MNIST_STD
        if not p.get("images") and dataset == "mnist":  # the shipped checkpoint's path, unchanged
            if p.get("image_size", 0) not in (0, 28):
                raise ConfigError(f"image_size={p['image_size']}: MNIST images are 28x28 (leave image_size=0)")
            self.train_x, self.train_y, self.test_x, self.test_y = split_images(p, batch_size)
            self.model = build_model(vit_config(p, "classifier", 10, "vit-mnist"))
            return
        data = user_images(p, batch_size)
        self.train_x, self.train_y, self.test_x, self.test_y = data.train_x, data.train_y, data.test_x, data.test_y
        self.labels, self.fill = data.labels, None
        extra = {"labels": data.labels, "pixel_mean": data.mean, "pixel_std": data.std, "data": data.source}
        self.model = build_model(vit_config(p, "classifier", len(data.labels), f"vit-{data.source}",
                                            image_size=self.train_x.shape[-1], n_channels=self.train_x.shape[1],
                                            extra=extra))

    def train_batch(self, generator, batch_size):
        pick = torch.randint(0, len(self.train_y), (batch_size,), generator=generator)
        return {"pixels": shift_images(self.train_x[pick], self.p["max_shift"], generator, self.fill),
                "labels": self.train_y[pick]}

    def loss(self, model, batch):
        logits = model(batch["pixels"]).logits.float()  # (batch, 10) from the [CLS] output
        return F.cross_entropy(logits, batch["labels"], label_smoothing=self.p["label_smoothing"]), len(logits)

    def evaluate(self, model):
        device = next(model.parameters()).device
        correct, loss = 0, 0.0
        for x, y in zip(self.test_x.split(250), self.test_y.split(250), strict=False):
            logits = model(x.to(device)).logits.float().cpu()
            loss += float(F.cross_entropy(logits, y, reduction="sum"))
            correct += int((logits.argmax(-1) == y).sum())
        metrics = {"val_loss": loss / len(self.test_y), "accuracy": correct / len(self.test_y)}
        if self.fill is None:  # user data: say how many images the accuracy is over
            metrics["test_images"] = len(self.test_y)
        return metrics


_VIT_PARAMS = dict(patch_size=7, d_model=64, n_heads=4, d_ff=128, n_layers=4, dropout=0.0, max_shift=1,
                   test_size=1000, split_seed=0, label_smoothing=0.0)


@recipe("vit-mnist", "ViT on MNIST-5k (4000 train / 1000 test images), or images=FOLDER / dataset=digits",
        dict(_VIT_PARAMS, images="", dataset="mnist", image_size=0, test_fraction=0.2),
        dict(steps=6000, batch_size=64, lr=3e-3, warmup=100, eval_every=500, weight_decay=0.05))
def build_vit_mnist(p):
    return VitMnistTask(p, p["batch_size"])


# ============================================================== contrastive
def build_dual_encoder(vit: ModelConfig, text: ModelConfig, embed_dim: int):
    from attnlab.config import DualEncoderConfig

    return build_model(DualEncoderConfig(vit, text, embed_dim=embed_dim, pool="cls", name=vit.name))


def load_dual_encoder(directory: str | Path):
    """(DualEncoder, tokenizer) saved by clip-mnist: attnlab.load reads dual encoders like any model."""
    from attnlab.loading import load

    return load(directory)


class ClipMnistTask(Task):
    """Images vs their label written as words in several languages; InfoNCE where every caption of the same
    digit counts as a positive (a batch of 64 holds each digit several times)."""

    def __init__(self, p, batch_size):
        self.p = p
        self.train_x, self.train_y, self.test_x, self.test_y = split_images(p, batch_size)
        self.languages = [lang.strip() for lang in p["languages"].split(",") if lang.strip()]
        self.captions = [digit_words(lang) for lang in self.languages]  # [lang][digit]
        chars = sorted({c for row in self.captions for cap in row for c in cap})
        self.tokenizer = tokenizers.char_tokenizer("".join(chars), ["[UNK]", "[PAD]", "[CLS]"])
        self.pad, self.cls = self.tokenizer.pad_id, self.tokenizer.cls_id
        encoded = [[[self.cls, *self.tokenizer.encode(c, add_special_tokens=False)] for c in row]
                   for row in self.captions]
        self.text_len = max(len(c) for row in encoded for c in row)
        self.caption_ids = torch.full((len(self.languages), 10, self.text_len), self.pad, dtype=torch.long)
        for i, row in enumerate(encoded):
            for d, c in enumerate(row):
                self.caption_ids[i, d, : len(c)] = torch.tensor(c)
        vit = vit_config(p, "none", 0, "clip-mnist")
        text = ModelConfig(topology="encoder", vocab_size=self.tokenizer.vocab_size, d_model=p["text_d_model"],
                           n_heads=p["n_heads"], d_ff=2 * p["text_d_model"], n_layers=p["text_layers"],
                           max_len=self.text_len, position="learned", norm_placement="pre", head="none",
                           pad_token_id=self.pad, name="clip-mnist-text")
        self.model = build_dual_encoder(vit, text, p["embed_dim"])

    def train_batch(self, generator, batch_size):
        pick = torch.randint(0, len(self.train_y), (batch_size,), generator=generator)
        labels = self.train_y[pick]
        lang = torch.randint(0, len(self.languages), (batch_size,), generator=generator)
        return {"pixels": shift_images(self.train_x[pick], self.p["max_shift"], generator),
                "text": self.caption_ids[lang, labels], "labels": labels}

    def loss(self, model, batch):
        text = batch["text"]
        logits = model(batch["pixels"], text, None, (text != self.pad).long()).float()  # (batch, batch)
        same = (batch["labels"][:, None] == batch["labels"][None, :]).float()
        targets = same / same.sum(1, keepdim=True)  # several positives per row: spread the target over them
        loss = 0.5 * (F.cross_entropy(logits, targets) + F.cross_entropy(logits.T, targets))
        return loss, len(logits)

    def evaluate(self, model):
        device = next(model.parameters()).device
        images = torch.cat([model.embed_a(x.to(device)) for x in self.test_x.split(250)]).cpu()  # (n, embed)
        metrics, mean_text = {}, 0
        for i, lang in enumerate(self.languages):
            ids = self.caption_ids[i].to(device)
            text = model.embed_b(ids, (ids != self.pad).long()).cpu()  # (10, embed)
            mean_text = mean_text + text
            metrics[f"zero_shot_{lang}"] = float(((images @ text.T).argmax(-1) == self.test_y).float().mean())
        metrics["zero_shot"] = sum(metrics.values()) / len(self.languages)  # mean over languages
        return metrics


@recipe("clip-mnist", "dual encoder: MNIST images vs digit names in several languages, zero-shot accuracy",
        dict(_VIT_PARAMS, languages="en,fr,de,es,it", text_d_model=64, text_layers=2, embed_dim=64,
             label_smoothing=0.0),
        dict(steps=1500, batch_size=64, lr=3e-3, warmup=100, eval_every=500, weight_decay=0.05))
def build_clip_mnist(p):
    return ClipMnistTask(p, p["batch_size"])


def describe() -> str:
    return "\n".join(f"  {r.name:18s} {r.help}" for r in sorted(RECIPES.values(), key=lambda r: r.name))

