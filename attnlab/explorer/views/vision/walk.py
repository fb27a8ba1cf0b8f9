"""The ViT's forward, step by step, on the image in view: the numbers each step makes for one patch and for
[CLS], so the page can walk a learner from pixels to a class with the model's real values.

Patchify -> flatten -> linear projection -> + position -> [CLS] in front -> blocks -> [CLS] -> class, as
attnlab/models/vit.py computes it. The projection is the model's own PatchEmbedding run on the image (its
convolution with stride P is a linear map of each flattened patch); the residual stream entering the blocks,
after each block and at the end are the recorder's "embed", "blocks.{i}.resid_post" and "final", and the
class scores its "logits": one forward, nothing recomputed by a second path.
"""

from __future__ import annotations

from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.server.common import a_an, check_index, config_of, rounded
from attnlab.explorer.server.registry import Loaded
from attnlab.recording import capture

DECIMALS = 4  # the page shows 3 significant digits at most; 4 decimals keep the sums it quotes checkable


def patch_pixels(pixels: torch.Tensor, patch_size: int, index: int) -> torch.Tensor:
    """(channels, H, W) -> (channels, P, P): patch `index` (0 = top-left, raster order), as the model cuts it."""
    grid = pixels.shape[-1] // patch_size
    row, col = divmod(index, grid)
    return pixels[:, row * patch_size:(row + 1) * patch_size, col * patch_size:(col + 1) * patch_size]


def vision_walk(lm: Loaded, pixels: torch.Tensor, patch: int) -> dict[str, Any]:
    """The values of each step of the ViT's forward for token `patch` (1.. = a patch in raster order; 0 = [CLS],
    which has no pixels, follows the patch with the brightest mean: on a digit, one with ink) and for [CLS].
    `pixels`: (channels, size, size), as the model reads it."""
    cfg = config_of(lm)
    if cfg.topology != "vit":
        raise InputError(f"model {lm.id!r} is {a_an(cfg.topology)}; the Vision tab's walk needs a vision transformer")
    n_tokens = cfg.n_patches + 1
    model, size, c = lm.model, cfg.patch_size, cfg.n_channels
    grid = cfg.image_size // size
    brightness = pixels.mean(0).unfold(0, size, size).unfold(1, size, size).mean((-1, -2))  # (grid, grid)
    token = check_index("patch", patch, n_tokens) or 1 + int(brightness.flatten().argmax())
    names = ["embed", "final"] + [f"blocks.{i}.resid_post" for i in range(cfg.n_layers)]
    names += ["logits"] if model.classifier is not None else []
    with torch.no_grad():
        with capture(model, names) as store:
            model(pixels[None])
        projected = model.patches(pixels[None])[0]  # (n_patches, d_model): the model's own patch projection
    cut = patch_pixels(pixels, size, token - 1)  # (channels, P, P)
    weight = model.patches.proj.weight  # (d_model, channels, P, P): W_E, one row per output feature
    table = model.positions.weight if cfg.position == "learned" else None  # (offset + n_tokens, d_model)
    at = cfg.position_offset
    out = {"model": lm.id, "token": token, "patch_index": token - 1, "grid": grid, "followed_for_cls": patch == 0,
           "pixel_range": [round(float(pixels.min()), DECIMALS), round(float(pixels.max()), DECIMALS)],
           "patch_size": size, "channels": c, "image_size": cfg.image_size, "d_model": cfg.d_model,
           "n_patches": cfg.n_patches, "n_layers": cfg.n_layers, "position": cfg.position,
           "embedding_norm": bool(cfg.embedding_norm), "final_norm": model.final_norm is not None,
           "pixels": rounded(cut, DECIMALS),  # (channels, P, P)
           "flat": rounded(cut.flatten(), DECIMALS),  # (channels * P * P,) channel, then row, then column
           "weight_shape": [int(weight.shape[0]), int(weight[0].numel())],
           "projected": rounded(projected[token - 1], DECIMALS),  # (d_model,) = flat @ W_E^T + b
           "position_vector": rounded(table[at + token], DECIMALS) if table is not None else None,
           "embedded": rounded(store["embed"][0, token], DECIMALS),  # (d_model,) what block 1 reads there
           "cls_token": rounded(model.cls_token[0, 0], DECIMALS),
           "cls_position": rounded(table[at], DECIMALS) if table is not None else None,
           "cls_embedded": rounded(store["embed"][0, 0], DECIMALS),
           "blocks": [{"cls": rounded(store[f"blocks.{i}.resid_post"][0, 0], DECIMALS),
                       "patch": rounded(store[f"blocks.{i}.resid_post"][0, token], DECIMALS)}
                      for i in range(cfg.n_layers)],
           "final_cls": rounded(store["final"][0, 0], DECIMALS)}
    if "logits" in store:
        logits = store["logits"][0]  # (n_classes,) = W_c final_cls + b_c
        labels = cfg.extra.get("labels")
        out["logits"] = rounded(logits, DECIMALS)
        out["probs"] = rounded(logits.softmax(-1), 6)  # small probabilities keep 2 to 3 significant digits
        out["labels"] = [str(labels[i]) if labels else str(i) for i in range(logits.numel())]
    return out
