"""Mapping tables: how one checkpoint layout becomes another, written as data.

A table is a list of Rules. Each Rule says "this attnlab tensor is made of these foreign tensors, by this
transform" (copy, concatenate rows, transpose, drop a leading unit axis). `{i}` in a name stands for a layer
index and is expanded over the stack the attnlab name lives in (`decoder.` names over the decoder's layers).
The same table is read in both directions, so loading and exporting can never disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from attnlab.config import ModelConfig


class Transform:
    """How foreign tensors become one attnlab tensor (to_ours) and back (to_theirs)."""

    def to_ours(self, tensors: list[torch.Tensor], config: ModelConfig) -> torch.Tensor:
        return tensors[0]

    def to_theirs(self, tensor: torch.Tensor, config: ModelConfig) -> list[torch.Tensor]:
        return [tensor]


class Copy(Transform):
    pass


class Transpose(Transform):
    """GPT-2's Conv1D stores (in, out); torch's Linear stores (out, in)."""

    def to_ours(self, tensors, config):
        return tensors[0].t()

    def to_theirs(self, tensor, config):
        return [tensor.t()]


class Squeeze0(Transform):
    """A leading axis of size 1 that attnlab does not keep (ViT's position table, BART's final_logits_bias)."""

    def to_ours(self, tensors, config):
        return tensors[0][0]

    def to_theirs(self, tensor, config):
        return [tensor[None]]


@dataclass(frozen=True)
class Concat(Transform):
    """Separate matrices stacked row-wise into one fused matrix (q|k|v -> qkv, gate|up -> up).

    `sizes(config)` gives the row count of each part so the fused matrix can be split back.
    """

    sizes: Callable[[ModelConfig], list[int]]

    def to_ours(self, tensors, config):
        return torch.cat(tensors, dim=0)

    def to_theirs(self, tensor, config):
        return list(tensor.split(self.sizes(config), dim=0))


class HeadsQKV(Transform):
    """GPT-NeoX's fused query_key_value holds q, k and v head by head (q_0 k_0 v_0 q_1 k_1 v_1 ... rows of d_head
    each); attnlab's qkv holds all q heads, then all k heads, then all v heads. Rows are moved, nothing else (a
    weight (3 * heads * d_head, d_model) or a bias (3 * heads * d_head,))."""

    def to_ours(self, tensors, config):
        t = tensors[0]
        per_head = t.reshape(config.n_heads, 3, config.head_dim, *t.shape[1:])  # (heads, q|k|v, d_head, ...)
        return per_head.transpose(0, 1).reshape(t.shape).contiguous()

    def to_theirs(self, tensor, config):
        grouped = tensor.reshape(3, config.n_heads, config.head_dim, *tensor.shape[1:])  # (q|k|v, heads, ...)
        return [grouped.transpose(0, 1).reshape(tensor.shape).contiguous()]


class PlusOne(Transform):
    """Gemma's RMSNorm multiplies by (1 + w) and stores w; attnlab's multiplies by its gain, which is then 1 + w
    (the same float32 sum Gemma makes in every forward)."""

    def to_ours(self, tensors, config):
        return tensors[0] + 1

    def to_theirs(self, tensor, config):
        return [tensor - 1]


COPY, TRANSPOSE, SQUEEZE0, HEADS_QKV, PLUS_ONE = Copy(), Transpose(), Squeeze0(), HeadsQKV(), PlusOne()
QKV = Concat(lambda c: [c.n_heads * c.head_dim, c.kv_heads * c.head_dim, c.kv_heads * c.head_dim])
KV = Concat(lambda c: [c.kv_heads * c.head_dim, c.kv_heads * c.head_dim])
GATE_UP = Concat(lambda c: [c.d_ff, c.d_ff])


@dataclass(frozen=True)
class Rule:
    ours: str  # attnlab name, may hold {i}
    theirs: tuple[str, ...]  # foreign names, may hold {i}
    transform: Transform = COPY


def rule(ours: str, theirs: str | tuple[str, ...], transform: Transform = COPY) -> Rule:
    return Rule(ours, (theirs,) if isinstance(theirs, str) else tuple(theirs), transform)


def linear(ours: str, theirs: str, bias: bool = True, transform: Transform = COPY) -> list[Rule]:
    """weight (and bias) of one Linear/Norm: `ours`.weight <- `theirs`.weight."""
    rules = [rule(f"{ours}.weight", f"{theirs}.weight", transform)]
    if bias:
        rules.append(rule(f"{ours}.bias", f"{theirs}.bias"))  # a bias is a vector: never transposed
    return rules


def fused(ours: str, parts: list[str], bias: bool, transform: Concat) -> list[Rule]:
    """Several foreign Linears fused into one attnlab Linear (weights and biases concatenated alike)."""
    rules = [rule(f"{ours}.weight", tuple(f"{p}.weight" for p in parts), transform)]
    if bias:
        rules.append(rule(f"{ours}.bias", tuple(f"{p}.bias" for p in parts), transform))
    return rules


def _layers(config: ModelConfig, ours: str) -> int:
    return config.decoder_layers if ours.startswith("decoder.") else config.n_layers


def expand(rules: list[Rule], config: ModelConfig) -> list[tuple[str, tuple[str, ...], Transform]]:
    """Replace {i} by every layer index of the stack each rule belongs to."""
    out = []
    for r in rules:
        if "{i}" not in r.ours:
            out.append((r.ours, r.theirs, r.transform))
            continue
        for i in range(_layers(config, r.ours)):
            out.append((r.ours.format(i=i), tuple(t.format(i=i) for t in r.theirs), r.transform))
    return out


def to_ours(rules: list[Rule], config: ModelConfig, theirs: dict[str, torch.Tensor]
            ) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Foreign state -> attnlab state. Returns (state, names of foreign tensors the table needed but lacked)."""
    state, missing = {}, []
    for ours, names, transform in expand(rules, config):
        lacking = [n for n in names if n not in theirs]
        if lacking:
            missing.extend(lacking)
            continue
        state[ours] = transform.to_ours([theirs[n] for n in names], config)
    return state, missing


def to_theirs(rules: list[Rule], config: ModelConfig, ours: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """attnlab state -> foreign state (every rule's attnlab tensor must be present)."""
    state = {}
    for name, names, transform in expand(rules, config):
        for foreign, tensor in zip(names, transform.to_theirs(ours[name], config), strict=True):
            state[foreign] = tensor
    return state
