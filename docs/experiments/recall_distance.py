"""Path length O(1) (attention) vs O(n) (recurrence) vs O(n / kernel) or O(log n)
(convolutions), on recalling a token seen k steps earlier.

Each sequence is k + 9 tokens: random values (0..15) with one marker token at a random position p in [0, 8);
the value right after the marker must be output at the last position (a query token), so the distance to
bridge is k + 7 - p, between k and k + 7. Attention can read it in one hop from any distance; a GRU/LSTM must
carry it through every step in between; a stack of causal convolutions reaches back (kernel - 1) * dilation per
layer, so 6 plain layers of kernel 3 reach 12 tokens back and 6 dilated ones (dilations 1..32) reach 126.

Models of similar size (~100-115k parameters): an attnlab decoder (2 layers, d_model 64, learned positions),
torch.nn.GRU / LSTM (one layer, hidden 160 / 136) and two CNNs with identical parameters (6 residual causal
Conv1d layers of width 76, kernel 3; plain: dilation 1, dilated: 1, 2, 4, .., 32), all read out at the last
position and trained with attnlab's Trainer (AdamW, warmup + cosine, clipping at 1.0), a seed fixing both the
initial weights and the batches. The learning rate of the GRU, LSTM and CNNs is chosen per distance from
--lrs by the first seed's accuracy on 2,048 validation sequences (the budget allows no full sweep per seed); the
other seeds then train at the chosen rate; the transformer keeps one rate (--transformer-lr). Only the chosen
runs are scored on 2,048 test sequences (a different fixed draw). CPU time: one training step (forward + backward,
batch 32, one thread, time.process_time), median of 10.

    PYTHONPATH=$PWD python docs/experiments/recall_distance.py --ks 8 32 --steps 1000 --seeds 0 1 2 \
        --jsonl docs/experiments/results/recall_distance.jsonl --png docs/img/exp_recall.png

New seeds at the rates the first seeds chose (no sweep; each summary names the file it took them from):

    python docs/experiments/recall_distance.py --ks 8 32 --steps 1000 --seeds 3 4 5 \
        --tuned-from docs/experiments/results/recall_distance.jsonl \
        --jsonl docs/experiments/results/recall_distance_seeds345.jsonl
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import attnlab
from attnlab.training import Task

sys.path.insert(0, str(Path(__file__).parent))
from common import earlier_runs, figure, save_figure, seed_all, settings, train, write_jsonl  # noqa: E402

VALUES, MARK, QUERY = 16, 16, 17  # tokens 0..15 are values
VALIDATION_SEED, TEST_SEED = 54321, 12345  # two fixed sets of 2,048 sequences; training batches come from `seed`


def recall_batch(k: int, batch: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    seq = torch.randint(0, VALUES, (batch, k + 9), generator=generator)  # (batch, k + 9)
    p = torch.randint(0, 8, (batch,), generator=generator)
    rows = torch.arange(batch)
    seq[rows, p] = MARK
    seq[:, -1] = QUERY
    return seq, seq[rows, p + 1]  # the value after the marker


class Transformer(nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.net = attnlab.build_model(attnlab.ModelConfig(topology="decoder", vocab_size=18, d_model=64, n_heads=4,
                                                           d_ff=256, n_layers=2, max_len=k + 9))

    def forward(self, ids):  # (batch, seq) -> (batch, vocab) at the query position
        return self.net(ids).logits[:, -1]


class Recurrent(nn.Module):
    def __init__(self, cell: str, hidden: int):
        super().__init__()
        self.embed = nn.Embedding(18, 64)
        self.rnn = (nn.GRU if cell == "gru" else nn.LSTM)(64, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 18)

    def forward(self, ids):
        out, _ = self.rnn(self.embed(ids))  # (batch, seq, hidden)
        return self.head(out[:, -1])


class Convolutional(nn.Module):
    """Residual causal convolutions: layer i sees (kernel - 1) * dilation_i tokens further back, so the last
    position's receptive field is 1 + sum of those; dilation doubles per layer in the dilated net."""

    def __init__(self, dilated: bool, width: int = 76, layers: int = 6, kernel: int = 3):
        super().__init__()
        self.embed = nn.Embedding(18, width)
        self.dilations = [2 ** i if dilated else 1 for i in range(layers)]
        self.convs = nn.ModuleList(nn.Conv1d(width, width, kernel, dilation=d) for d in self.dilations)
        self.kernel = kernel
        self.head = nn.Linear(width, 18)

    def forward(self, ids):
        x = self.embed(ids).transpose(1, 2)  # (batch, width, seq)
        for d, conv in zip(self.dilations, self.convs, strict=True):
            x = x + F.gelu(conv(F.pad(x, ((self.kernel - 1) * d, 0))))  # left padding only: causal
        return self.head(x[:, :, -1])

    def reach(self) -> int:
        return sum((self.kernel - 1) * d for d in self.dilations)


MODELS = {"transformer": Transformer, "GRU": lambda k: Recurrent("gru", 160), "LSTM": lambda k: Recurrent("lstm", 136),
          "CNN": lambda k: Convolutional(False), "dilated CNN": lambda k: Convolutional(True)}


class RecallTask(Task):
    def __init__(self, model: nn.Module, k: int):
        self.model, self.k = model, k
        self.validation = recall_batch(k, 2048, torch.Generator().manual_seed(VALIDATION_SEED))

    def train_batch(self, generator, batch_size):
        ids, target = recall_batch(self.k, batch_size, generator)
        return {"ids": ids, "target": target}

    def loss(self, model, batch):
        return F.cross_entropy(model(batch["ids"]), batch["target"]), len(batch["target"])

    def evaluate(self, model):  # during training: the validation sequences only
        return {"accuracy": accuracy(model, *self.validation)}


def accuracy(model: nn.Module, ids: torch.Tensor, target: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        out = float((model(ids).argmax(-1) == target).float().mean())
    model.train()
    return out


def step_seconds(model: nn.Module, k: int, repeats: int = 10) -> float:
    """Median CPU time of one forward + backward on a batch of 32."""
    ids, target = recall_batch(k, 32, torch.Generator().manual_seed(0))
    times = []
    for _ in range(repeats + 1):
        start = time.process_time()
        F.cross_entropy(model(ids), target).backward()
        times.append(time.process_time() - start)
    return sorted(times[1:])[repeats // 2]


def run(name: str, k: int, lr: float, seed: int, steps: int, finals: dict) -> dict:
    """Train one model; its (seed, final validation accuracy, weights) go to finals[lr], its record is returned."""
    seed_all(seed)
    model = MODELS[name](k)
    s, _ = settings(steps=steps, batch_size=32, lr=lr, warmup=100, weight_decay=0.0, eval_every=max(1, steps // 5),
                    seed=seed)
    start = time.process_time()
    history = train(RecallTask(model, k), s)
    val = [(r["step"], r["eval_accuracy"]) for r in history if "eval_accuracy" in r]
    finals.setdefault(lr, []).append((seed, val[-1][1], copy.deepcopy(model.state_dict())))
    return {"k": k, "model": name, "lr": lr, "seed": seed, "params": sum(p.numel() for p in model.parameters()),
            "steps": steps, "val_accuracy": val, "final_train_loss": round(history[-1]["loss"], 4),
            "cpu_s": round(time.process_time() - start, 1)}


def spread(values: list[float]) -> dict:
    return {"mean": round(statistics.fmean(values), 4), "min": min(values), "max": max(values)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--lrs", type=float, nargs="+", default=[1e-3, 3e-3, 1e-2],
                    help="swept (first seed) for every model but the transformer, chosen on the validation sequences")
    ap.add_argument("--transformer-lr", type=float, default=2e-3)
    ap.add_argument("--tuned-from", default="", metavar="JSONL",
                    help="take each (k, model)'s rate from this earlier results file's summary (its chosen_lr) instead "
                         "of sweeping: new seeds trained at the first seeds' rates")
    ap.add_argument("--jsonl", default="", help="write the JSON lines here (the committed results file)")
    ap.add_argument("--png", default="")
    ap.add_argument("--plot-only", nargs="+", default=[], metavar="JSONL", help="redraw --png from a results file")
    args = ap.parse_args()
    if args.plot_only:
        return plot([r for r in earlier_runs(args.plot_only) if "summary" in r], args.png)
    torch.set_num_threads(1)
    tuned = {}
    if args.tuned_from:
        tuned = {(r["k"], r["model"]): r["chosen_lr"] for r in earlier_runs([args.tuned_from]) if r.get("summary")}
        missing = [(k, m) for k in args.ks for m in args.models if (k, m) not in tuned]
        if missing:
            raise SystemExit(f"--tuned-from {args.tuned_from} has no summary line for (k, model) {missing}; "
                             f"it has {sorted(tuned)}")
    lines, summaries = [], []

    def emit(row: dict) -> None:
        lines.append(json.dumps(row))
        print(lines[-1], flush=True)
        write_jsonl(lines, args.jsonl or None, echo=False)  # rewritten after every run: a cut-off sweep keeps them

    for k in args.ks:
        test = recall_batch(k, 2048, torch.Generator().manual_seed(TEST_SEED))
        for name in args.models:
            seed_all(0)
            probe = MODELS[name](k)
            cpu = step_seconds(probe, k)
            params = sum(p.numel() for p in probe.parameters())
            lrs = [tuned[(k, name)]] if tuned else [args.transformer_lr] if name == "transformer" else args.lrs
            finals = {}  # lr -> [(seed, validation accuracy, final weights)]

            for lr in lrs:  # the sweep: the first seed only, scored on the validation sequences
                emit(run(name, k, lr, args.seeds[0], args.steps, finals))
            chosen = max(finals, key=lambda lr: finals[lr][0][1])
            for seed in args.seeds[1:]:  # the other seeds at the chosen rate
                emit(run(name, k, chosen, seed, args.steps, finals))
            tests = []
            for seed, _, state in finals[chosen]:
                model = MODELS[name](k)
                model.load_state_dict(state)
                tests.append(accuracy(model, *test))
                emit({"k": k, "model": name, "lr": chosen, "seed": seed, "chosen": True, "test_accuracy": tests[-1]})
            summary = {"summary": True, "k": k, "model": name, "params": params, "seeds": args.seeds,
                       "chosen_lr": chosen, "swept_lrs": lrs,
                       "sweep_seed": args.seeds[0],
                       "sweep_val_accuracy": {str(lr): finals[lr][0][1] for lr in lrs},
                       "val_accuracy": spread([v for _, v, _ in finals[chosen]]),
                       "test_accuracy": spread(tests), "cpu_ms_per_step": round(1e3 * cpu, 1)}
            if tuned:
                summary["tuned_from"] = Path(args.tuned_from).name  # the rate was carried over, not swept here
            if isinstance(probe, Convolutional):
                summary["reach"] = probe.reach()
            emit(summary)
            summaries.append(summary)
    plot(summaries, args.png)


def plot(summaries: list[dict], png: str) -> None:
    if not png:
        return
    fig, (left, right) = figure(9.5, 3.4, ncols=2)
    for i, name in enumerate(MODELS):
        rows = sorted((r for r in summaries if r["model"] == name), key=lambda r: r["k"])
        if not rows:
            continue
        ks = [r["k"] for r in rows]
        mean = [r["test_accuracy"]["mean"] for r in rows]
        low = [max(0.0, m - r["test_accuracy"]["min"]) for m, r in zip(mean, rows, strict=True)]
        high = [max(0.0, r["test_accuracy"]["max"] - m) for m, r in zip(mean, rows, strict=True)]
        left.errorbar(ks, mean, yerr=[low, high], fmt="o-", color=f"C{i}", capsize=3, alpha=0.85, label=name)
        right.plot(ks, [r["cpu_ms_per_step"] for r in rows], "o-", color=f"C{i}", label=name)
    left.axhline(1 / VALUES, color="grey", ls=":", label="chance")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("distance k (k..k+7)")
        ax.legend(fontsize=7)
    left.set_ylabel("test accuracy (mean, min-max over seeds)")
    right.set_ylabel("CPU ms per training step (batch 32)")
    save_figure(fig, [left, right], png)


if __name__ == "__main__":
    main()
