"""Seed 004: a decoder trained with no causal mask at all learns to copy the next token.

Without the mask, position i sees token i + 1, which is exactly its training target, so teacher-forced training
can drive the loss towards 0 by copying - and the model has learned nothing it can use when generating, where
no position i + 1 exists yet. The run: the gpt-char recipe at a small size (2 layers, d_model 64, 4 heads, 300
steps, one thread), trained twice from the same initial weights and batches per seed, once as usual and once with
every attention layer's mask removed (a subclass of attnlab's Attention passing is_causal=False; the library is
unchanged). Measured per arm and seed: the teacher-forced val loss (every position of a window), the honest
loss (the last position of windows cut to 16 and 64 characters: no future key exists, as in generation), and for
the unmasked model the attention mass each layer's most copy-like head puts on key i + 1.

    python docs/experiments/no_mask.py [--steps 300 --seeds 0 1 2 --jsonl docs/experiments/results/no_mask.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

import attnlab
from attnlab.layers.attention import Attention

sys.path.insert(0, str(Path(__file__).parent))
from common import evals, honest_loss, paired_arm, swap_attention, write_jsonl  # noqa: E402

MODEL = {"n_layers": 2, "d_model": 64, "n_heads": 4, "d_ff": 256}


class NoMask(Attention):
    """attnlab's attention with the causal mask switched off: every position sees every key."""

    def forward(self, x, *, is_causal=False, **kwargs):
        return super().forward(x, is_causal=False, **kwargs)


def remove_mask(model) -> None:
    swap_attention(model, NoMask)


@torch.no_grad()
def next_key_mass(model, windows: torch.Tensor) -> list[float]:
    """Per layer: the largest, over heads, mean attention weight of query i on key i + 1 (i < n - 1)."""
    n_layers = model.config.n_layers
    rec = attnlab.record(model, windows, names=[f"blocks.{i}.attn.weights" for i in range(n_layers)])
    out = []
    for i in range(n_layers):
        w = rec[f"blocks.{i}.attn.weights"]  # (batch, heads, q, k)
        nxt = w.diagonal(offset=1, dim1=-2, dim2=-1)  # (batch, heads, n - 1): weight of i on i + 1
        out.append(round(float(nxt.mean(dim=(0, 2)).max()), 4))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", default="/tmp/exp26/no_mask")
    ap.add_argument("--jsonl", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    lines = []
    for seed in args.seeds:
        for arm in ("causal mask", "no mask"):
            task, history = paired_arm(f"{args.out}/data", seed, remove_mask if arm == "no mask" else None, **MODEL,
                                       steps=args.steps, eval_every=args.steps, eval_windows=256)
            model = task.model.eval()
            windows = task.val_windows[:256]  # (256, 65)
            row = {"arm": arm, "seed": seed, "steps": args.steps, **MODEL,
                   "val_teacher_forced": round(evals(history)[-1][1], 4),
                   "train_loss_last": round(history[-1]["loss"], 4),
                   "honest_last_position": {str(n): round(honest_loss(model, windows, n), 4) for n in (16, 64)},
                   "next_key_mass": next_key_mass(model, windows[:64, :-1])}
            with torch.no_grad():
                ids = torch.tensor([task.tokenizer.encode("The ", add_special_tokens=False)])
                out = attnlab.generate(model, ids, max_new_tokens=60, temperature=0.0, eos_token_id=None,
                                       use_cache=False, sliding_window=True).sequences
            row["greedy_sample"] = task.tokenizer.decode(out[0].tolist())
            lines.append(json.dumps(row))
            print(lines[-1], flush=True)
    write_jsonl(lines, args.jsonl, echo=False)  # each line was printed as it came


if __name__ == "__main__":
    main()
