"""Seed 002: sparse and linear attention against full attention - the quality side (section 13 measured the cost).

The same small causal decoder (the gpt-char recipe: the CPython docs, one token per character) is trained with
four attention cores swapped into every block by a subclass of attnlab's Attention (the library is unchanged):
  full     softmax attention over every earlier key (attnlab's own path)
  local    softmax over the last `window` keys only (a causal sliding window)
  strided  softmax over the earlier keys j with j = i (mod stride) (a causal fixed stride)
  linear   phi(q_i) S_i / (phi(q_i) z_i), S_i = sum_{j<=i} phi(k_j) v_j^T and z_i = sum_{j<=i} phi(k_j) kept as
           running sums, phi = elu + 1 (Katharopoulos et al. 2020); trained through the same weights written out
           as an n x n matrix (linear_weights), the cheaper form at n 256 on a CPU, same numbers
Per seed every variant starts from the same initial weights and draws the same batches (common.paired_arm), so
the differences to full attention are paired. The local and strided cores here are attnlab's attention under a
sparse mask: they compute what the sparse variants compute, not at their cost (section 13 has the cost).

    python docs/experiments/efficient_attention_quality.py \
        --jsonl docs/experiments/results/efficient_attention_quality.jsonl
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from attnlab.layers.attention import Attention
from attnlab.layers.positions import apply_rotary
from attnlab.recording import active

sys.path.insert(0, str(Path(__file__).parent))
from common import evals, keep, paired_arm, swap_attention  # noqa: E402
from heads_cost import machine  # noqa: E402

MODEL = {"n_layers": 2, "d_model": 64, "n_heads": 4, "d_ff": 256, "seq_len": 256}
WINDOW, STRIDE = 64, 8  # section 13's window and stride


def sparse_bias(n: int, variant: str) -> torch.Tensor:
    """(n, n) additive mask: 0 where query i may read key j, -inf elsewhere. Both variants keep j <= i (causal)
    and the diagonal (every query has a key)."""
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    allowed = (j <= i) & ((i - j < WINDOW) if variant == "local" else ((i - j) % STRIDE == 0))
    return torch.zeros(n, n).masked_fill(~allowed, float("-inf"))


def causal_linear(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal linear attention with running sums over the positions: (b, h, n, d) each -> (b, h, n, d)."""
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    state = torch.cumsum(fk[..., :, None] * v[..., None, :], dim=2)  # (b, h, n, d, d): S_i
    norm = torch.cumsum(fk, dim=2)  # (b, h, n, d): z_i
    num = (fq[..., None, :] @ state).squeeze(-2)  # (b, h, n, d)
    return num / (fq * norm).sum(-1, keepdim=True)


def linear_weights(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """The (b, h, n, n) weights causal linear attention puts on each key, written out. Training uses them: at
    n 256 and d_head 16 they give causal_linear's outputs at a third of its CPU time (its (n, d, d) running
    states cost more than the n x n matrix at this length), and the trainer's attention probe reads them."""
    scores = torch.tril((F.elu(q) + 1) @ (F.elu(k) + 1).transpose(-2, -1))
    return scores / scores.sum(-1, keepdim=True)


class VariantAttention(Attention):
    """attnlab's self-attention (W_QKV, W_O, its recording) around another core: local and strided as attnlab's
    own attention under a sparse additive mask, linear as its weights written out (equal to its running sums)."""

    variant = "full"

    def forward(self, x, *, bias=None, is_causal=False, rope=None, context=None, cache=None):
        if self.variant == "full":
            return super().forward(x, bias=bias, is_causal=is_causal, rope=rope, context=context, cache=cache)
        assert cache is None and context is None and bias is None, "a training forward only"
        n = x.shape[1]
        if self.variant != "linear":
            return super().forward(x, bias=sparse_bias(n, self.variant).to(x.device), rope=rope)
        q, k, v = (t.view(x.shape[0], n, self.n_heads, self.d_head).transpose(1, 2)
                   for t in self.qkv(x).split(self.q_width, dim=-1))  # (batch, heads, n, d_head) each
        if rope is not None:
            q, k = apply_rotary(q, *rope), apply_rotary(k, *rope)
        weights = linear_weights(q, k)  # the same numbers as causal_linear's running sums (the test checks)
        rec = active()
        if rec is not None:
            rec.keep(self, "weights", weights, head_axis=1)  # what the trainer's attention probe reads
        out = weights @ v  # (batch, heads, n, d_head)
        return self.out(out.transpose(1, 2).reshape(x.shape[0], n, self.q_width))


def variant_class(name: str) -> type[VariantAttention]:
    return type(f"{name.title()}Attention", (VariantAttention,), {"variant": name})


VARIANTS = ("full", "local", "strided", "linear")


def use(name: str):
    """The change paired_arm applies to the model: the variant's core swapped into every block."""
    return lambda model: swap_attention(model, variant_class(name))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    ap.add_argument("--out", default="/tmp/exp/efficient_attention_quality")
    ap.add_argument("--jsonl", default="", help="append one JSON line per finished run to this file")
    args = ap.parse_args()
    torch.set_num_threads(1)
    results: list[dict] = []
    for seed in args.seeds:
        for name in args.variants:
            start = time.process_time()
            task, history = paired_arm(f"{args.out}/data", seed, use(name), **MODEL, steps=args.steps,
                                       eval_every=args.steps)
            row = {"variant": name, "seed": seed, "steps": args.steps, **MODEL, "window": WINDOW, "stride": STRIDE,
                   "val_loss": round(evals(history)[-1][1], 4), "train_loss_last": round(history[-1]["loss"], 4),
                   "val_windows": len(task.val_windows), "cpu_s": round(time.process_time() - start, 1),
                   **machine()}
            keep(row, results, args.jsonl)


if __name__ == "__main__":
    main()
