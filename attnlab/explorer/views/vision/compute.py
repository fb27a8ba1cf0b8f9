"""The ViT view: prediction, a patch's attention, attention rollout, learned position similarity, and whether
the loaded checkpoint's position embeddings form a 2-D grid (measured, with a permutation test)."""

from __future__ import annotations

import threading
from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.server.common import (
    a_an,
    check_index,
    config_of,
    rounded,
)
from attnlab.explorer.server.registry import Loaded
from attnlab.recording import capture


# ----------------------------------------------------------------------------------------------- vision
def _vit_check(lm: Loaded):
    cfg = config_of(lm)
    if cfg.topology != "vit":
        raise InputError(f"model {lm.id!r} is {a_an(cfg.topology)}; the Vision tab needs a vision transformer")
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


def _average_ranks(x: torch.Tensor) -> torch.Tensor:
    """1-based ranks with ties given their average rank (what Spearman's rho is the Pearson correlation of)."""
    _, inverse, counts = torch.unique(x, return_inverse=True, return_counts=True)
    top = counts.cumsum(0).to(torch.float64)
    return (top - (counts.to(torch.float64) - 1) / 2)[inverse]


def _pearson_rows(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Pearson correlation of each row of a (k, m) with the vector b (m,); a constant row gives 0."""
    a = a - a.mean(-1, keepdim=True)
    b = b - b.mean()
    den = a.norm(dim=-1) * b.norm()
    return torch.where(den > 0, (a @ b) / den.clamp_min(1e-300), torch.zeros_like(den))


def grid_structure(positions: torch.Tensor, grid: int, permutations: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Do these learned position vectors form a 2-D grid? Measured, not assumed.

    `positions`: (grid * grid, d_model) patch position embeddings in raster order ([CLS] left out).
    Over all patch pairs i < j: Spearman's rho between cosine similarity and the negative Euclidean grid
    distance (rho > 0: nearer patches have more similar vectors). p is one-sided, from `permutations` random
    relabellings of which vector sits at which grid cell (seeded): (1 + #{rho_perm >= rho}) / (1 + permutations).
    Also: for how many patches the most similar other vector belongs to one of its 8 grid neighbours, the count
    chance would give (each patch's neighbour count / (n - 1), summed) and its own permutation p-value.
    """
    n = grid * grid
    if positions.ndim != 2 or positions.shape[0] != n:
        raise InputError(f"positions of shape {tuple(positions.shape)}: expected ({n}, d_model) for a "
                         f"{grid}x{grid} grid")
    if n < 4:
        raise InputError(f"grid={grid}: a position-structure test needs at least a 2x2 grid of patches")
    if permutations < 1:
        raise InputError(f"permutations={permutations}: give a positive number")
    p = torch.nn.functional.normalize(positions.detach().to(torch.float64), dim=-1)
    sim = p @ p.T  # (n, n) cosine similarities
    rows, cols = torch.arange(n) // grid, torch.arange(n) % grid
    d2 = (rows[:, None] - rows[None]) ** 2 + (cols[:, None] - cols[None]) ** 2  # squared grid distance, exact ties
    iu, ju = torch.triu_indices(n, n, 1)  # the n (n - 1) / 2 pairs i < j
    sim_ranks = _average_ranks(sim[iu, ju])
    near = torch.zeros(n, n, dtype=torch.float64)  # -distance ranks as a matrix, relabelled by each permutation
    near[iu, ju] = _average_ranks(-d2[iu, ju])
    near = near + near.T
    rho = float(_pearson_rows(near[iu, ju][None], sim_ranks)[0])
    neighbour = ((rows[:, None] - rows[None]).abs().maximum((cols[:, None] - cols[None]).abs()) == 1)
    masked = sim.clone().fill_diagonal_(-float("inf"))
    nearest = masked.argmax(-1)  # (n,) each patch's most similar other patch
    hits = int(neighbour[torch.arange(n), nearest].sum())
    chance = float((neighbour.sum(-1).to(torch.float64) / (n - 1)).sum())
    generator = torch.Generator().manual_seed(seed)
    perm_rhos, perm_hits = [], []
    chunk = max(1, 2_000_000 // len(iu))  # bounds memory at (chunk, pairs) for large grids
    for start in range(0, permutations, chunk):
        k = min(chunk, permutations - start)
        perms = torch.stack([torch.randperm(n, generator=generator) for _ in range(k)])  # (k, n)
        perm_rhos.append(_pearson_rows(near[perms[:, iu], perms[:, ju]], sim_ranks))
        perm_hits.append(neighbour[perms, perms[:, nearest]].sum(-1))
    perm_rho, perm_hit = torch.cat(perm_rhos), torch.cat(perm_hits)
    return {"grid": grid, "pairs": len(iu), "rho": round(rho, 6),
            "p": round((1 + int((perm_rho >= rho - 1e-12).sum())) / (1 + permutations), 6),
            "permutations": permutations, "seed": seed,
            "nearest_is_neighbour": hits, "patches": n, "chance_neighbours": round(chance, 3),
            "nearest_p": round((1 + int((perm_hit >= hits).sum())) / (1 + permutations), 6),
            "distance": "euclidean grid distance; neighbours are the 8 surrounding cells"}


_STRUCTURE: dict[tuple, dict[str, Any]] = {}  # per checkpoint: the statistic depends only on its weights
_STRUCTURE_LOCK = threading.Lock()
_STRUCTURE_MAX = 8


def position_structure(lm: Loaded) -> dict[str, Any] | None:
    """grid_structure of the loaded checkpoint's learned patch positions, cached per model (thread-safe,
    bounded); None when the model has no learned positions or fewer than 2x2 patches."""
    cfg = config_of(lm)
    g = cfg.image_size // cfg.patch_size
    if cfg.position != "learned" or g < 2:
        return None
    table = lm.model.positions.weight
    key = (lm.id, id(table), table._version)
    with _STRUCTURE_LOCK:
        if key in _STRUCTURE:
            return _STRUCTURE[key]
    n = g * g
    found = grid_structure(table.detach()[cfg.position_offset + 1:cfg.position_offset + 1 + n], g)
    with _STRUCTURE_LOCK:
        while len(_STRUCTURE) >= _STRUCTURE_MAX:
            _STRUCTURE.pop(next(iter(_STRUCTURE)))
        _STRUCTURE[key] = found
    return found


def vision(lm: Loaded, pixels: torch.Tensor, layer: int = 0, head: int = 0, patch: int = 0) -> dict[str, Any]:
    """A ViT on one image: prediction, the selected token's attention over the patch grid in one layer/head,
    the rollout from that token, and the cosine similarity of its learned position embedding to every other.

    `pixels`: (channels, size, size) float tensor as the model reads it (images.to_pixels makes one).
    `patch`: token index, 0 = [CLS], 1.. = patches in raster order.
    """
    cfg = _vit_check(lm)
    layer = check_index("layer", layer, cfg.n_layers)
    head = check_index("head", head, cfg.n_heads)
    n_tokens = cfg.n_patches + 1
    patch = check_index("patch", patch, n_tokens)
    g = cfg.image_size // cfg.patch_size
    names = [f"blocks.{i}.attn.weights" for i in range(cfg.n_layers)]
    with torch.no_grad(), capture(lm.model, names) as store:
        out = lm.model(pixels[None])
    weights = [store[nm][0] for nm in names]  # each (heads, n, n)
    roll = rollout(weights)
    row = weights[layer][head, patch]  # (n,)
    cls_row = weights[layer][head, 0]  # (n,) what [CLS], which the classifier reads, attends to
    probs = out.logits[0].softmax(-1) if out.logits is not None else None
    result = {"model": lm.id, "grid": g, "patch_size": cfg.patch_size, "layer": layer, "head": head,
              "patch": patch, "n_layers": cfg.n_layers, "n_heads": cfg.n_heads,
              "tokens": ["[CLS]"] + [f"p{i} (r{i // g}, c{i % g})" for i in range(cfg.n_patches)],
              "attention": rounded(row), "attention_row_sum": round(float(row.sum()), 6),
              "rollout": rounded(roll[patch]), "rollout_row_sums": rounded(roll.sum(-1)),
              "cls_attention": rounded(cls_row), "cls_rollout": rounded(roll[0])}
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
        result["position_similarity"] = rounded(p @ p[sel], 4)
        result["position_similarity_of"] = sel  # patch index (0 = top-left), i.e. token sel + 1
        # [CLS] has a position vector too but no place on the grid: its map shows the top-left patch, and says so
        result["position_similarity_for_cls"] = patch == 0
        result["position_structure"] = position_structure(lm)
    return result
