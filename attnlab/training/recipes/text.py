"""Text language models (gpt-char, gpt-bpe): a decoder learns next-token prediction on one long token stream.

The corpus is the CPython documentation unless data=PATH names the user's own text (a file or folder of .txt,
.txt.gz, .jsonl(.gz) or .parquet with text_field=, or a saved `datasets` folder). It is tokenized once, streaming, into
OUT/data/ (a memory-mapped TokenFile, reused by --resume); training windows are drawn from the first
1 - val_fraction of the ids with the trainer's checkpointed generator; the evaluation reads eval_windows
windows of the rest, evenly spaced over it (the same ones every time; 0 = all of them), and compares with an
add-one bigram model counted on the same training ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from attnlab.build import build_model
from attnlab.config import ModelConfig
from attnlab.data import tokenizers
from attnlab.data.streaming import paragraphs_of
from attnlab.generation import generate
from attnlab.objectives import next_token_loss
from attnlab.storage import atomic_write
from attnlab.threads import using_threads
from attnlab.training.recipes.base import (
    EVAL_WINDOWS,
    CorpusTask,
    Recipe,
    open_corpus,
    phase,
    split_pieces,
    trained_tokenizer,
)
from attnlab.training.recipes.pretrained import Start, load_start, refuse_without_start

SAMPLE_PROMPTS = ("def ", "The ")
SAMPLE_TEMPERATURE = 0.8


class CausalLMTask(CorpusTask):
    """Next-token prediction on windows of one long token stream (N-1 targets from N tokens)."""

    def __init__(self, p: dict[str, Any], tokenizer, source, batch_size: int, name: str, scan=None,
                 start: Start | None = None):
        self.tokenizer, self.p, self.start = tokenizer, p, start
        seq = p["seq_len"]
        self.data = self.tokenize_corpus(p, source, tokenizer, {"train": batch_size * seq + 1, "val": seq + 1},
                                         f"one batch of {batch_size} windows of seq_len={seq} (+1 target)", scan)
        # evenly spaced over the split when eval_windows bounds it: a corpus of several sources is scored on all
        inputs, targets = self.data.windows("val", seq, p["eval_windows"] or None, spread=True)  # (n, seq) each
        self.val_windows = torch.cat([inputs, targets[:, -1:]], dim=1)  # (n, seq + 1): every val transition once
        if start is not None:  # init_from=: the loaded model, its weights as they came
            self.model = start.model
        else:
            config = ModelConfig(topology="decoder", vocab_size=tokenizer.vocab_size, d_model=p["d_model"],
                                 n_heads=p["n_heads"], d_ff=p["d_ff"], n_layers=p["n_layers"], max_len=p["seq_len"],
                                 position=p["position"], activation=p["activation"], norm=p["norm"],
                                 norm_placement=p["norm_placement"], dropout=p["dropout"],
                                 scaled_residual_init=p["scaled_residual_init"], bias=p["bias"], name=name)
            with phase(p, f"{name}: building the model"):
                self.model = build_model(config)
        train_tokens = len(self.data.tokens("train"))
        with phase(p, f"{name}: counting the bigram baseline on {train_tokens:,} training tokens"):
            self.bigram = bigram_loss(split_pieces(self.data, "train", overlap=1), self.val_windows,
                                      tokenizer.vocab_size)  # the same split, counted piece by piece
        # the evaluation runs windows in groups of the training batch: a no-grad forward of that many windows
        # holds less than a training step does, so evaluating never raises the run's peak memory (64 at a time
        # raised the baby GPT's peak by ~15-20 MB)
        self.eval_batch = batch_size

    def flops_per_item(self):
        from attnlab.cost.analytic import training_flops_per_token

        return training_flops_per_token(self.model.config, self.p["seq_len"])

    def train_batch(self, generator, batch_size):
        inputs, targets = self.data.get_batch("train", batch_size, self.p["seq_len"], generator)  # (batch, seq)
        return {"inputs": inputs, "targets": targets}

    def loss(self, model, batch):
        targets = batch["targets"]  # (batch, seq): the inputs shifted by one
        logits = model(batch["inputs"]).logits  # (batch, seq, vocab)
        return next_token_loss(logits, targets), targets.numel()

    def eval_summary(self) -> str:
        return self.windows_scope(len(self.val_windows), max(0, len(self.data.tokens("val")) - 1) // self.p["seq_len"],
                                  "evenly spaced over the split")

    def evaluate(self, model):
        device = next(model.parameters()).device
        total, count, scored = 0.0, 0, 0
        for chunk in self.val_windows.split(self.eval_batch):  # (<=batch_size, seq + 1)
            chunk = chunk.to(device)
            logits = model(chunk[:, :-1]).logits.float()
            total += float(next_token_loss(logits, chunk[:, 1:], reduction="sum"))
            count += chunk[:, 1:].numel()
            scored += len(chunk)
            self.evaluated(scored, len(self.val_windows))
        return {"val_loss": total / count, "bigram_val_loss": self.bigram}

    def report_what(self) -> str:
        return (f"sampling {len(SAMPLE_PROMPTS)} texts of {self.p['sample_tokens']} tokens into samples.txt"
                if self.p["sample_tokens"] else "sample_tokens=0: no samples to write")

    def report(self, model, out: Path) -> dict[str, Any]:
        """Samples from the trained model (attnlab.generate, temperature 0.8), written to samples.txt;
        sample_tokens=0: none, and no samples.txt."""
        if self.p["sample_tokens"] == 0:
            return {"samples": []}
        samples = sample_texts(model, self.tokenizer, SAMPLE_PROMPTS, self.p["sample_tokens"])
        text = "\n\n-----\n\n".join(samples) + "\n"
        atomic_write(out / "samples.txt", lambda tmp: Path(tmp).write_text(text))  # a link there is replaced
        return {"samples": samples}


def sample_texts(model, tokenizer, prompts, n_new: int, seed: int = 0) -> list[str]:
    """Each prompt continued by n_new sampled tokens, decoded with the prompt; one generator for all prompts.

    A sample longer than the model's position limit continues with a sliding window (the last max_len tokens)."""
    generator = torch.Generator().manual_seed(seed)
    limit = model.config.max_len
    texts = []
    for prompt in prompts:
        ids = tokenizer.encode(prompt, add_special_tokens=False)
        # beyond the position limit each new token sees the last `limit` tokens (attnlab.generate's sliding window)
        window = {"sliding_window": True} if limit and len(ids) + n_new > limit else {}
        result = generate(model, [ids], max_new_tokens=n_new, temperature=SAMPLE_TEMPERATURE, eos_token_id=None,
                          generator=generator, **window)
        texts.append(tokenizer.decode(result.sequences[0].tolist()))
    return texts


BIGRAM_CHUNK = 1 << 16  # ids counted at a time: each temporary of the count stays at 512 KB


def bigram_loss(train_ids, val_windows: torch.Tensor, vocab_size: int) -> float:
    """Cross-entropy (nats/token) of an add-one-smoothed bigram model counted on train, scored on exactly the
    targets the transformer is scored on (each window's tokens 1.. given the previous token).

    train_ids: one int64 tensor, or consecutive pieces of one that each repeat the previous piece's last id
    (split_pieces(..., overlap=1)), so every adjacent pair is counted once without the split in memory.
    Memory: only what the score needs is counted: the train count of each distinct val pair and of each id as the
    first of a pair (V numbers), plus temporaries of BIGRAM_CHUNK ids. A V x V table of counts would be 312 MB for
    a 6,245-character vocabulary and 20 GB for 50k tokens. The numbers are those of the V x V table: every count
    is an integer held exactly in float64, so (pair + 1) / (first + V) is the same division.
    Threads: one, whatever the caller's count. The count is many small searchsorted / gather / index_add_ calls
    (64 Ki ids each) where a second thread adds a barrier per call and no speed. On the shared 2-core machine
    (2026-12-06), 4M random ids over a 200-token vocabulary took 0.7 s on one thread and 2.4-2.7 s on two with
    the other core idle; a 44.5 MB .jsonl's 38.1M training ids, load average 6, 2.7 s on one and 23.2 s on two
    (the same loss). The training loop's rule (attnlab.threads): never more threads than measured best."""
    with using_threads(1):
        return _bigram_loss(train_ids, val_windows, vocab_size)


def _bigram_loss(train_ids, val_windows: torch.Tensor, vocab_size: int) -> float:
    """bigram_loss's count, on the caller's threads."""
    prev, nxt = val_windows[:, :-1].flatten(), val_windows[:, 1:].flatten()  # (n,) each: the scored pairs
    wanted, which = torch.unique(prev * vocab_size + nxt, return_inverse=True)  # (u,) sorted pair ids; (n,)
    pairs = torch.zeros(len(wanted), dtype=torch.float64)  # train count of each wanted pair
    firsts = torch.zeros(vocab_size, dtype=torch.float64)  # train count of each id followed by another
    ones = torch.ones(BIGRAM_CHUNK, dtype=torch.float64)
    for piece in [train_ids] if isinstance(train_ids, torch.Tensor) else train_ids:
        for start in range(0, len(piece) - 1, BIGRAM_CHUNK):
            part = piece[start:start + BIGRAM_CHUNK + 1]  # a view; its last id starts the next part's first pair
            firsts.index_add_(0, part[:-1], ones[: len(part) - 1])
            _count_wanted(pairs, wanted, part[:-1] * vocab_size + part[1:], ones)
    return float(-((pairs[which] + 1) / (firsts[prev] + vocab_size)).log().mean())


def _count_wanted(counts: torch.Tensor, wanted: torch.Tensor, pair: torch.Tensor, ones: torch.Tensor) -> None:
    """Add to counts[j] the occurrences of wanted[j] among `pair` (pair ids not wanted are skipped)."""
    if not len(wanted):
        return
    slot = torch.searchsorted(wanted, pair).clamp_(max=len(wanted) - 1)  # (chunk,) where each pair would sit
    found = wanted[slot] == pair
    counts.index_add_(0, slot[found], ones[: int(found.sum())])


LM_PARAMS = dict(data="", text_field="text", d_model=128, n_heads=4, d_ff=512, n_layers=4, seq_len=64,
                 position="learned", activation="gelu", norm="layernorm", norm_placement="pre", dropout=0.0, bias=True,
                 scaled_residual_init=False, val_fraction=0.1, eval_windows=EVAL_WINDOWS, sample_tokens=300,
                 init_from="", freeze=0)


def fine_tune(p, name: str):
    """init_from=NAME|PATH: the loaded decoder continues on the corpus, encoded with its own tokenizer (no
    tokenizer is trained, no model built)."""
    start = load_start(p, name, "decoder")
    source, scan = open_corpus(p)
    return CausalLMTask(p, start.tokenizer, source, p["batch_size"], name, scan, start=start)


def build_gpt_char(p):
    if p["init_from"]:
        return fine_tune(p, "gpt-char")
    refuse_without_start(p)
    source, scan = open_corpus(p, chars=p.get("tokenizer") is None)  # one pass: bad input, fingerprint, characters
    tokenizer = p.get("tokenizer") or tokenizers.char_tokenizer_from_chars(scan.chars, ["[UNK]"])  # resume: saved
    return CausalLMTask(p, tokenizer, source, p["batch_size"], "gpt-char", scan)


def build_gpt_bpe(p):
    if p["init_from"]:
        return fine_tune(p, "gpt-bpe")
    refuse_without_start(p)
    source, scan = open_corpus(p)  # bad input is refused before the tokenizer trains
    tokenizer = trained_tokenizer(p, "gpt-bpe", "BPE",
                                  lambda: tokenizers.train_bpe(paragraphs_of(source.blocks()), p["vocab_size"]))
    return CausalLMTask(p, tokenizer, source, p["batch_size"], "gpt-bpe", scan)


GPT_CHAR = Recipe("gpt-char", "decoder, one token per character, on the CPython docs (or data=FILE)", build_gpt_char,
                  LM_PARAMS, dict(steps=2000, batch_size=12, lr=2e-3, warmup=100, eval_every=500, weight_decay=0.1))
GPT_BPE = Recipe("gpt-bpe", "decoder with a byte-level BPE trained on the CPython docs (or data=FILE)", build_gpt_bpe,
                 dict(LM_PARAMS, vocab_size=2048, sample_tokens=80),
                 dict(steps=2000, batch_size=12, lr=1e-3, warmup=100, eval_every=500))
