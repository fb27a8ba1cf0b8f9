"""Seed 004: add the position embedding to the token embedding, or concatenate the two?

The seed asks why positions are added rather than concatenated and projected: the latter is more general and
has more parameters, yet the sum works fine in practice. Three ways into the same decoder (the gpt-char
recipe at 2 layers, d_model 64, 4 heads, d_ff 256; the blocks are identical in every arm):

  add            attnlab's learned positions: x = E_tok[id] + P[t], both of width 64 (the LM head shares E_tok)
  concat, split  x = [E_tok[id]; P[t]] with widths 32 + 32: d_model unchanged, token and position each own half
                 of the residual stream at the start (the LM head is its own 104 x 64 matrix, since E_tok is
                 now 32 wide)
  concat, proj.  x = W [E_tok[id]; P[t]], widths 64 + 64 and W a 64 x 128 matrix (the LM head shares E_tok)

A linear projection of a concatenation is itself a sum, W [a; b] = W_a a + W_b b, so "concat, proj." can express
exactly what "add" can (W_a E_tok and W_b P are just other embeddings): the comparison is one of parameterisation
and training, not of what the model can represent. "concat, split" is the sum with the two embeddings confined to
orthogonal halves. The new embeddings start as attnlab's do (Normal(0, 0.02)); W starts at std 1/sqrt(128) so
that x starts at the same scale as the add arm's. Protocol as in heldout.py: the learning rate of each arm
chosen on the validation half with one tuning seed, then seeds 0, 1, 2 scored on the test half.

    python docs/experiments/position_concat.py --jsonl docs/experiments/results/position_concat.jsonl
    python docs/experiments/position_concat.py --arms "add, own head" --lr 1e-2 \
        --jsonl docs/experiments/results/position_concat_untied.jsonl   # the untied-head control, at add's rate
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).parent))
from common import recipe_task, seed_all  # noqa: E402
from heldout import protocol_arguments, sweep_as_asked  # noqa: E402

MODEL = {"n_layers": 2, "d_model": 64, "n_heads": 4, "d_ff": 256}


class ConcatPositions(nn.Module):
    """Token ids -> [token embedding; position embedding], optionally projected to d_model.

    It stands in for the decoder's token embedding in a model built with position="none", so the stack adds
    nothing more; positions are 0 .. seq - 1 of each input (training and evaluation only, no cache)."""

    def __init__(self, vocab_size: int, max_len: int, d_token: int, d_position: int, d_model: int | None):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, d_token)
        self.positions = nn.Embedding(max_len, d_position)
        nn.init.normal_(self.tokens.weight, std=0.02)
        nn.init.normal_(self.positions.weight, std=0.02)
        self.proj = None
        if d_model is not None:
            self.proj = nn.Linear(d_token + d_position, d_model, bias=False)
            nn.init.normal_(self.proj.weight, std=1 / math.sqrt(d_token + d_position))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # (batch, seq) -> (batch, seq, d_model)
        pos = self.positions(torch.arange(ids.shape[1], device=ids.device))  # (seq, d_position)
        x = torch.cat([self.tokens(ids), pos.expand(ids.shape[0], -1, -1)], dim=-1)  # (batch, seq, d_tok + d_pos)
        return self.proj(x) if self.proj is not None else x


ARMS = {"add": None, "concat, split": (32, 32, None), "concat, proj.": (64, 64, 64), "add, own head": None}
DEFAULT_ARMS = ["add", "concat, split", "concat, proj."]
# "add, own head": the add arm with an LM head of its own (as "concat, split" has), not sharing the token table;
# the control that separates the split's concatenation from its untied head


def untie_head(model) -> None:
    """Give the LM head its own (vocab, d_model) matrix, drawn as attnlab draws matrices (std 0.02)."""
    weight = torch.empty_like(model.lm_head.proj.weight)
    model.lm_head.proj.weight = nn.Parameter(nn.init.normal_(weight, std=0.02))


def builder(arm: str, out: str):
    def build(lr: float, seed: int, steps: int):
        position = "learned" if ARMS[arm] is None else "none"
        task, s = recipe_task("gpt-char", out, **MODEL, position=position, lr=lr, steps=steps, eval_every=steps,
                              seed=seed)
        if arm == "add, own head":
            seed_all(seed)
            untie_head(task.model)
        if ARMS[arm] is not None:
            model = task.model
            d_token, d_position, d_model = ARMS[arm]
            seed_all(seed)
            model.tokens = ConcatPositions(model.config.vocab_size, model.config.max_len, d_token, d_position,
                                           d_model)
            if d_token == model.config.d_model:  # tie the head to the new token table, as in the add arm
                model.lm_head.proj.weight = model.tokens.tokens.weight
            # else the head keeps the (vocab, d_model) matrix it was built with, now its own
        return task, s
    return build


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arms", nargs="+", default=DEFAULT_ARMS, choices=list(ARMS))
    args = protocol_arguments(ap, "/tmp/exp26/position_concat")
    sweep_as_asked([({"arm": a, **MODEL}, builder(a, args.out)) for a in args.arms], args)


if __name__ == "__main__":
    main()
