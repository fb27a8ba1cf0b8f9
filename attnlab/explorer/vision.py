"""The ViT view: prediction, a patch's attention, attention rollout, learned position similarity."""

from __future__ import annotations

from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.common import (
    _check_index,
    _config,
    _round,
)
from attnlab.explorer.registry import Loaded
from attnlab.recording import capture


# ----------------------------------------------------------------------------------------------- vision
def _vit_check(lm: Loaded):
    cfg = _config(lm)
    if cfg.topology != "vit":
        raise InputError(f"model {lm.id!r} is a {cfg.topology}; the Vision tab needs a vision transformer")
    return cfg


def rollout(weights: list[torch.Tensor]) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020): average heads, add the residual as 0.5 I, renormalise rows,
    multiply through the layers. Each factor is row-stochastic, so the product's rows sum to 1."""
    result = None
    for w in weights:  # (heads, n, n)
        a = w.mean(0)
        a = 0.5 * a + 0.5 * torch.eye(a.shape[-1])
        a = a / a.sum(-1, keepdim=True)
        result = a if result is None else a @ result
    return result


def vision(lm: Loaded, pixels: torch.Tensor, layer: int = 0, head: int = 0, patch: int = 0) -> dict[str, Any]:
    """A ViT on one image: prediction, the selected token's attention over the patch grid in one layer/head,
    the rollout from that token, and the cosine similarity of its learned position embedding to every other.

    `pixels`: (channels, size, size) float tensor as the model reads it (images.to_pixels makes one).
    `patch`: token index, 0 = [CLS], 1.. = patches in raster order.
    """
    cfg = _vit_check(lm)
    layer = _check_index("layer", layer, cfg.n_layers)
    head = _check_index("head", head, cfg.n_heads)
    n_tokens = cfg.n_patches + 1
    patch = _check_index("patch", patch, n_tokens)
    g = cfg.image_size // cfg.patch_size
    names = [f"blocks.{i}.attn.weights" for i in range(cfg.n_layers)]
    with torch.no_grad(), capture(lm.model, names) as store:
        out = lm.model(pixels[None])
    weights = [store[nm][0] for nm in names]  # each (heads, n, n)
    roll = rollout(weights)
    row = weights[layer][head, patch]  # (n,)
    probs = out.logits[0].softmax(-1) if out.logits is not None else None
    result = {"model": lm.id, "grid": g, "patch_size": cfg.patch_size, "layer": layer, "head": head,
              "patch": patch, "n_layers": cfg.n_layers, "n_heads": cfg.n_heads,
              "tokens": ["[CLS]"] + [f"p{i} (r{i // g}, c{i % g})" for i in range(cfg.n_patches)],
              "attention": _round(row), "attention_row_sum": round(float(row.sum()), 6),
              "rollout": _round(roll[patch]), "rollout_row_sums": _round(roll.sum(-1))}
    if probs is not None:
        top = probs.topk(min(5, probs.numel()))
        labels = cfg.extra.get("labels")
        result["prediction"] = [{"class": int(i), "label": str(labels[int(i)]) if labels else str(int(i)),
                                 "prob": round(float(p), 6)} for p, i in zip(top.values, top.indices, strict=False)]
    if cfg.position == "learned":
        table = lm.model.positions.weight.detach()  # (offset + n_tokens, d_model)
        p = table[cfg.position_offset:cfg.position_offset + n_tokens][1:]  # patches only, (n_patches, d)
        p = torch.nn.functional.normalize(p, dim=-1)
        sel = patch - 1 if patch > 0 else 0
        result["position_similarity"] = _round(p @ p[sel], 4)
        result["position_similarity_of"] = sel
    return result
