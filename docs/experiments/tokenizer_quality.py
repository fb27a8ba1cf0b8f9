"""Seed 001: coarser tokens make shorter, cheaper sequences - the quality side (section 11 measured the cost).

The same small decoder (2 layers, d_model 64, 4 heads, d_ff 256, learned positions, windows of 64 tokens; the
gpt-char recipe's training: batch 12, lr 2e-3, warmup 100, weight decay 0.1) is trained on the same text, the
CPython documentation, twice: with one token per character (the gpt-char recipe) and with a 2,048-token
byte-level BPE trained on the first 90% of the characters (the gpt-bpe recipe's tokenizer, given the training
text only). Both runs get the same training FLOPs: the character run takes --steps steps and the BPE run as many
steps as the same FLOPs buy, counted by attnlab.cost (batch x window x training FLOPs per token; the BPE model's
larger LM head costs more per token).

Losses in nats per token cannot be compared across tokenizers, so both models are scored on the same held-out
text in bits per character: the total nats of every token of that text (each token predicted from the ones
before it in consecutive windows of 64 tokens; the first token of the text is not scored) / the characters of
the scored tokens / ln 2. The held-out text is the end of the corpus that neither run trained on: each recipe
splits its own token stream 90 / 10, so it starts where the later of the two training splits ends.

    python docs/experiments/tokenizer_quality.py --jsonl docs/experiments/results/tokenizer_quality.jsonl
    python docs/experiments/tokenizer_quality.py --steps 4000 --jsonl docs/experiments/results/tokenizer_quality.jsonl
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from attnlab.cost.analytic import training_flops_per_token
from attnlab.data import corpora, tokenizers
from attnlab.data.sources import CorpusSource
from attnlab.data.streaming import paragraphs_of
from attnlab.training.recipes import get_recipe

sys.path.insert(0, str(Path(__file__).parent))
from common import evals, keep, seed_all, settings, train  # noqa: E402
from heads_cost import machine  # noqa: E402

MODEL = {"n_layers": 2, "d_model": 64, "n_heads": 4, "d_ff": 256}  # sections 16-19's size
TRAIN = {**MODEL, "lr": 2e-3, "warmup": 100, "weight_decay": 0.1, "batch_size": 12}  # gpt-char's, for both arms
BPE_VOCAB = 2048  # the gpt-bpe recipe's
TRAIN_FRACTION = 0.9  # of the characters: the BPE tokenizer's training text (the recipes' val_fraction is 0.1)


def build(recipe: str, out: str | Path, tokenizer=None, **overrides):
    """(task, settings) of a recipe as common.recipe_task builds it, with `tokenizer` given (None: the recipe's)."""
    s, params = settings(recipe, **overrides)
    seed_all(s.seed)
    return get_recipe(recipe).build({**params, "batch_size": s.batch_size, "tokenizer": tokenizer,
                                     "out_dir": str(out)}), s


def flops_per_step(task, s) -> float:
    seq = task.p["seq_len"]
    return s.batch_size * seq * training_flops_per_token(task.model.config, seq)


def trained_chars(task) -> int:
    """Characters of the corpus that the task's training split covers (it starts at the corpus's start)."""
    return len(task.tokenizer.decode(task.data.tokens("train").tolist()))


@torch.no_grad()
def bits_per_char(model, tokenizer, text: str, seq_len: int, batch: int = 64) -> dict:
    """The model's loss on `text` in bits per character: every token after the first predicted from the tokens
    before it in its window of seq_len (consecutive windows, each one token into the next), total nats / the
    characters those tokens spell / ln 2."""
    model.eval()
    ids = torch.tensor(tokenizer.encode(text, add_special_tokens=False))
    starts = list(range(0, len(ids) - 1, seq_len))
    full = [s for s in starts if s + seq_len + 1 <= len(ids)]
    windows = torch.stack([ids[s:s + seq_len + 1] for s in full]) if full else ids[:0].view(0, seq_len + 1)
    pieces = list(windows.split(batch)) + [ids[s:][None] for s in starts[len(full):]]  # the short last window
    nats = 0.0
    for chunk in pieces:
        logits = model(chunk[:, :-1]).logits.float()
        nats += float(F.cross_entropy(logits.flatten(0, 1), chunk[:, 1:].flatten(), reduction="sum"))
    chars = len(text) - len(tokenizer.decode(ids[:1].tolist()))
    return {"bits_per_char": nats / chars / math.log(2), "nats": nats, "chars": chars, "tokens": len(ids)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000, help="the character run's steps")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--lr", type=float, default=TRAIN["lr"])
    ap.add_argument("--out", default="/tmp/exp/tokenizer_quality")
    ap.add_argument("--jsonl", default="", help="append one JSON line per finished run to this file")
    args = ap.parse_args()
    torch.set_num_threads(1)
    text = corpora.python_docs()
    cut = int(len(text) * TRAIN_FRACTION)
    bpe = tokenizers.train_bpe(paragraphs_of(CorpusSource.from_text(text[:cut]).blocks()), BPE_VOCAB)
    arms = {"character": ("gpt-char", None), "BPE 2048": ("gpt-bpe", bpe)}
    tasks = {name: build(recipe, f"{args.out}/{recipe}", tok, **{**TRAIN, "lr": args.lr}, seed=0)
             for name, (recipe, tok) in arms.items()}
    per_step = {name: flops_per_step(*ts) for name, ts in tasks.items()}
    steps = {name: round(args.steps * per_step["character"] / per_step[name]) for name in arms}
    start = max([cut] + [trained_chars(task) for task, _ in tasks.values()])  # no arm trained on what follows
    held_out = text[start:]
    print(f"steps at equal FLOPs {steps}; held-out text: the last {len(held_out):,} characters", flush=True)
    results: list[dict] = []
    for seed in args.seeds:
        for name, (recipe, tok) in arms.items():
            clock = time.process_time()
            task, s = build(recipe, f"{args.out}/{recipe}", tok, **{**TRAIN, "lr": args.lr}, seed=seed,
                            steps=steps[name], eval_every=steps[name])
            history = train(task, s)
            score = bits_per_char(task.model, task.tokenizer, held_out, task.p["seq_len"])
            row = {"tokenizer": name, "recipe": recipe, "seed": seed, "steps": steps[name], "lr": args.lr, **MODEL,
                   "vocab": task.tokenizer.vocab_size, "params": sum(p.numel() for p in task.model.parameters()),
                   "flops_per_step": per_step[name], "train_flops": per_step[name] * steps[name],
                   "held_out_start": start, "bits_per_char": round(score["bits_per_char"], 5),
                   "held_out_chars": score["chars"], "held_out_tokens": score["tokens"],
                   "chars_per_token": round(len(held_out) / score["tokens"], 3),
                   "val_loss_nats_per_token": round(evals(history)[-1][1], 5),
                   "cpu_s": round(time.process_time() - clock, 1), **machine()}
            keep(row, results, args.jsonl)


if __name__ == "__main__":
    main()
