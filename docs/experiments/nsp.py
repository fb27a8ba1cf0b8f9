"""BERT's next-sentence prediction (NSP): does adding it to masked LM change what MLM learns?

Seed 002 describes BERT's pretraining as two objectives, masked LM and NSP; RoBERTa (2019) found that dropping
NSP does not hurt (and slightly helps) downstream results. Here both arms see the same batches: pairs
"[CLS] A [SEP] B [SEP]" of sentences from Wikipedia lead paragraphs (attnlab.data.next_sentence: B is the true
next sentence for half the pairs, a sentence of another paragraph for the rest), segment ids 0 / 1, BERT's
15/80/10/10 masking on top. The model is the same (pooler and NSP head included, same initial weights per
seed); only the loss differs: MLM alone, or MLM + NSP (their sum, as BERT's).

Measured on held-out paragraphs (pairs and masks drawn once with fixed seeds, the same for every run):
- MLM loss and top-1 accuracy on the masked positions;
- NSP accuracy of the model's NSP head (untrained in the MLM-only arm: its chance level, about 0.5);
- a probe: logistic regression on frozen features [u, v, |u - v|, u * v] (u, v: mean last hidden vectors of A's
  and of B's tokens, no masking) fitted on 2,000 held-out pairs and scored on 1,000 others: whether the token
  vectors carry what tells a true next sentence from a random one, whichever loss trained them.

    PYTHONPATH=$PWD nice -n 5 python docs/experiments/nsp.py --seeds 0 1 2 --jsonl docs/experiments/results/nsp.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import attnlab
from attnlab.data import tokenizers
from attnlab.data.collators import MLMCollator
from attnlab.data.corpora import wiki_summaries
from attnlab.data.next_sentence import SEGMENT_B, NextSentenceCollator, documents_of, draw_pairs
from attnlab.objectives import mlm_loss, next_sentence_loss
from attnlab.training import Task

sys.path.insert(0, str(Path(__file__).parent))
from common import seed_all, settings, train, write_jsonl  # noqa: E402
from heads_cost import machine  # noqa: E402

ARMS = ("mlm", "mlm+nsp")
HELD_OUT_FRACTION = 0.1  # of the paragraphs, chosen by a fixed permutation: no held-out sentence is trained on
EVAL_SEED, PROBE_SEED, SPLIT_SEED = 1234, 4321, 0
N_EVAL, N_PROBE_FIT, N_PROBE_TEST = 1000, 2000, 1000


def pretraining_loss(out, batch: dict[str, torch.Tensor], nsp: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(the loss an arm trains on, the NSP loss or None): MLM alone, or MLM + NSP as BERT sums them."""
    mlm = mlm_loss(out.logits.float(), batch["labels"])
    if not nsp:
        return mlm, None
    nsp_part = next_sentence_loss(out.nsp_logits.float(), batch["next_sentence_label"])
    return mlm + nsp_part, nsp_part


def forward(model, batch: dict[str, torch.Tensor]):
    return model(batch["input_ids"], attention_mask=batch["attention_mask"], token_type_ids=batch["token_type_ids"])


class PairTask(Task):
    """Pairs drawn from the training paragraphs each step; evaluation on fixed held-out pairs."""

    def __init__(self, model, train_docs, collator: NextSentenceCollator, held_out: dict[str, torch.Tensor],
                 nsp: bool):
        self.model, self.train_docs, self.collator, self.held_out, self.nsp = model, train_docs, collator, held_out, nsp

    def train_batch(self, generator, batch_size):
        return self.collator(draw_pairs(self.train_docs, batch_size, generator), generator)

    def loss(self, model, batch):
        loss, _ = pretraining_loss(forward(model, batch), batch, self.nsp)
        return loss, int(batch["attention_mask"].sum())

    @torch.no_grad()
    def evaluate(self, model):
        return held_out_scores(model, self.held_out)


@torch.no_grad()
def held_out_scores(model, held_out: dict[str, torch.Tensor], chunk: int = 200) -> dict[str, float]:
    """MLM loss and accuracy over every masked position, NSP loss and accuracy over every pair."""
    mlm_sum = nsp_sum = 0.0
    mlm_right = nsp_right = masked = 0
    n = len(held_out["input_ids"])
    for start in range(0, n, chunk):
        batch = {k: v[start:start + chunk] for k, v in held_out.items()}
        out = forward(model, batch)
        logits, labels = out.logits.float(), batch["labels"]
        sel = labels != -100
        mlm_sum += float(mlm_loss(logits[sel], labels[sel], reduction="sum"))
        mlm_right += int((logits[sel].argmax(-1) == labels[sel]).sum())
        masked += int(sel.sum())
        nsp_sum += float(next_sentence_loss(out.nsp_logits.float(), batch["next_sentence_label"], reduction="sum"))
        nsp_right += int((out.nsp_logits.argmax(-1) == batch["next_sentence_label"]).sum())
    return {"val_loss": mlm_sum / masked, "mlm_accuracy": mlm_right / masked, "nsp_loss": nsp_sum / n,
            "nsp_accuracy": nsp_right / n}


@torch.no_grad()
def pair_features(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """[u, v, |u - v|, u * v] per pair, u and v the mean last hidden vectors of segment A's and B's tokens
    ([CLS] and [SEP] included with their segment)."""
    h = forward(model, batch).hidden.float()  # (n, seq, d)
    real = batch["attention_mask"].bool()
    in_b = (batch["token_type_ids"] == SEGMENT_B) & real
    in_a = real & ~in_b

    def mean(where):
        w = where[..., None].float()
        return (h * w).sum(1) / w.sum(1).clamp(min=1)

    u, v = mean(in_a), mean(in_b)
    return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)


def probe_accuracy(model, fit: dict[str, torch.Tensor], test: dict[str, torch.Tensor], steps: int = 300) -> float:
    """Logistic regression (standardised features, L2 1e-3, L-BFGS) fitted on `fit`, accuracy on `test`."""
    x_fit, x_test = pair_features(model, fit), pair_features(model, test)
    mu, sd = x_fit.mean(0), x_fit.std(0).clamp(min=1e-6)
    x_fit, x_test = (x_fit - mu) / sd, (x_test - mu) / sd
    y = fit["next_sentence_label"]
    probe = torch.nn.Linear(x_fit.shape[1], 2)
    opt = torch.optim.LBFGS(probe.parameters(), max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(probe(x_fit), y) + 1e-3 * probe.weight.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return float((probe(x_test).argmax(-1) == test["next_sentence_label"]).float().mean())


def prepare(vocab_size: int, max_len: int):
    """(tokenizer, train documents, held-out documents) as token ids; the tokenizer trains on training text only."""
    docs = documents_of(wiki_summaries("en"))
    order = torch.randperm(len(docs), generator=torch.Generator().manual_seed(SPLIT_SEED)).tolist()
    n_held = int(len(docs) * HELD_OUT_FRACTION)
    held, kept = [docs[i] for i in order[:n_held]], [docs[i] for i in order[n_held:]]
    tok = tokenizers.train_wordpiece((s for d in kept for s in d), vocab_size, min_frequency=2)

    def ids(documents):
        flat = tok.encode_batch([s for d in documents for s in d], add_special_tokens=False)
        out, at = [], 0
        for d in documents:
            out.append([row[:max_len] for row in flat[at:at + len(d)]])
            at += len(d)
        return out

    return tok, ids(kept), ids(held)


def fixed_batch(collator: NextSentenceCollator, docs, n: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return collator(draw_pairs(docs, n, g), g)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--vocab-size", type=int, default=2048)
    ap.add_argument("--max-len", type=int, default=48)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--n-layers", type=int, default=4)
    ap.add_argument("--jsonl", default="", help="write the JSON lines here (the committed results file)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    start = time.time()
    tok, train_docs, held_docs = prepare(args.vocab_size, args.max_len)
    print(f"data: {len(train_docs)} train / {len(held_docs)} held-out paragraphs, vocab {tok.vocab_size} "
          f"({time.time() - start:.0f}s)", flush=True)
    # WordPiece may break frequency ties differently from process to process: the fingerprint says whether two
    # runs (both arms of a seed share one tokenizer) had the same vocabulary
    vocab_sha = hashlib.sha256(json.dumps(sorted(tok.hf.get_vocab().items())).encode()).hexdigest()[:12]
    mlm = MLMCollator(tok)
    collator = NextSentenceCollator.from_tokenizer(tok, args.max_len, mlm)
    plain = NextSentenceCollator.from_tokenizer(tok, args.max_len)  # probe features: no masking
    held_out = fixed_batch(collator, held_docs, N_EVAL, EVAL_SEED)
    probe_pairs = fixed_batch(plain, held_docs, N_PROBE_FIT + N_PROBE_TEST, PROBE_SEED)
    probe_fit = {k: v[:N_PROBE_FIT] for k, v in probe_pairs.items()}
    probe_test = {k: v[N_PROBE_FIT:] for k, v in probe_pairs.items()}
    config = attnlab.ModelConfig(
        topology="encoder", vocab_size=tok.vocab_size, d_model=args.d_model, n_heads=4, d_ff=4 * args.d_model,
        n_layers=args.n_layers, max_len=args.max_len, position="learned", activation="gelu", norm_placement="pre",
        head="lm", pooler=True, nsp=True, type_vocab_size=2, dropout=0.0, pad_token_id=tok.pad_id, name="nsp-exp")
    lines: list[str] = []
    for seed in args.seeds:
        for arm in args.arms:
            seed_all(seed)
            model = attnlab.build_model(config)  # the same initial weights in both arms of a seed
            model.eval()
            probe_init = probe_accuracy(model, probe_fit, probe_test)
            model.train()
            s, _ = settings(steps=args.steps, batch_size=args.batch_size, lr=args.lr, warmup=100,
                            eval_every=max(1, args.steps // 2), seed=seed, report="none")
            cpu = time.process_time()
            history = train(PairTask(model, train_docs, collator, held_out, nsp=arm == "mlm+nsp"), s)
            model.eval()
            final = held_out_scores(model, held_out)
            row = {"arm": arm, "seed": seed, "steps": args.steps, "batch_size": args.batch_size, "lr": args.lr,
                   "d_model": args.d_model, "n_layers": args.n_layers, "max_len": args.max_len,
                   "vocab_size": tok.vocab_size, "vocab_sha": vocab_sha, "params": model.num_parameters(),
                   "train_paragraphs": len(train_docs), "held_out_paragraphs": len(held_docs),
                   "eval_pairs": N_EVAL, "masked_positions": int((held_out["labels"] != -100).sum()),
                   "mlm_loss": round(final["val_loss"], 4), "mlm_accuracy": round(final["mlm_accuracy"], 4),
                   "nsp_accuracy": round(final["nsp_accuracy"], 4), "nsp_loss": round(final["nsp_loss"], 4),
                   "probe_accuracy": round(probe_accuracy(model, probe_fit, probe_test), 4),
                   "probe_accuracy_init": round(probe_init, 4),
                   "curve": [(r["step"], round(r["val_loss"], 4), round(r["eval_nsp_accuracy"], 4))
                             for r in history if "val_loss" in r],
                   "cpu_s": round(time.process_time() - cpu, 1), **machine()}
            lines.append(json.dumps(row))
            print(lines[-1], flush=True)
            write_jsonl(lines, args.jsonl or None, echo=False)  # rewritten after every run: a cut-off run keeps them


if __name__ == "__main__":
    main()
