"""Seed 002: is a head's attention weight on a key an explanation of what that key does?

For one head and one query position, attnlab.explorer.api.attention_vs_ablation gives, per key j, the
head's attention weight on j and the drop in log P(target) when that one weight is set to zero (the others
kept, through attnlab.interventions). If weights explained, the two would rank the keys alike. Per (sentence,
head): Spearman's rank correlation over the keys, and whether the most-attended key is also the key whose
removal hurts most. Over every head of two trained models: the shipped gpt-char (4 x 4 heads; windows of its
validation text, target the true next character) and the shipped minilm-mlm (6 x 12 heads; sentences with one
word masked, target that word). No training; deterministic (no random draw).

The most-attended key removes the most weight, so it would often hurt most even if weights said nothing about
what keys carry. --null measures it against a null that keeps that mechanical effect (`mass_null`): the same
total weight taken from the other keys at random, many draws per (text, head). Results go to their own file.

    python docs/experiments/attention_explanation.py [--windows 24 --jsonl FILE]
    python docs/experiments/attention_explanation.py --null [--draws 200 --seed 0 --jsonl FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch
from common import shipped_models, write_jsonl
from scipy.stats import spearmanr

MLM_SENTENCES = [  # (text with [MASK], the masked word)
    ("The capital of France is [MASK].", "paris"), ("She drank a cup of hot [MASK].", "tea"),
    ("The cat chased the [MASK] across the yard.", "mouse"), ("He opened the door with a [MASK].", "key"),
    ("Water freezes at zero [MASK].", "degrees"), ("They went to the [MASK] to buy bread.", "bakery"),
    ("The sun rises in the [MASK].", "east"), ("I wrote the letter with a [MASK].", "pen"),
    ("The baby is sleeping in her [MASK].", "bed"), ("We watched a [MASK] at the cinema.", "movie"),
    ("The doctor gave him some [MASK] for the pain.", "medicine"), ("Birds can [MASK] high in the sky.", "fly"),
    ("He plays the [MASK] in a rock band.", "guitar"), ("The library lends [MASK] to its members.", "books"),
    ("Snow is cold and [MASK].", "white"), ("She paid for the meal with her credit [MASK].", "card"),
]


def head_rows(lm, cases) -> list[dict]:
    """cases: (text, target id or None). One row per (case, layer, head): rho and top-key agreement."""
    from attnlab.explorer.api import attention_vs_ablation

    cfg = lm.model.config
    rows = []
    for c, (text, target) in enumerate(cases):
        for layer in range(cfg.n_layers):
            for head in range(cfg.n_heads):
                out = attention_vs_ablation(lm, text, layer, head, target=target)
                keys = [r for r in out["rows"] if r["effect"] is not None]
                w, e = [r["weight"] for r in keys], [r["effect"] for r in keys]
                rho = spearmanr(w, e).statistic if len(set(w)) > 1 and len(set(e)) > 1 else float("nan")
                rows.append({"case": c, "layer": layer, "head": head, "keys": len(keys), "rho": float(rho),
                             "top_agree": max(range(len(w)), key=w.__getitem__) == max(range(len(e)),
                                                                                        key=e.__getitem__)})
    return rows


def q(v, p: float) -> float | None:
    """The p-quantile of v (the nearest rank, no interpolation), to 3 decimals; None for no values."""
    v = sorted(v)
    return round(v[min(len(v) - 1, int(round(p * (len(v) - 1))))], 3) if v else None


def summary(model: str, rows: list[dict]) -> list[dict]:
    out = []
    heads = sorted({(r["layer"], r["head"]) for r in rows})
    per_head = []
    for layer, head in heads:
        rhos = [r["rho"] for r in rows if (r["layer"], r["head"]) == (layer, head) and r["rho"] == r["rho"]]
        agree = [r["top_agree"] for r in rows if (r["layer"], r["head"]) == (layer, head)]
        per_head.append({"model": model, "layer": layer, "head": head, "cases": len(agree),
                         "rho_median": q(rhos, 0.5), "rho_p10": q(rhos, 0.1), "rho_p90": q(rhos, 0.9),
                         "top_agree": round(sum(agree) / len(agree), 3)})
    out += per_head
    rhos = [r["rho"] for r in rows if r["rho"] == r["rho"]]
    medians = [h["rho_median"] for h in per_head]
    out.append({"model": model, "summary": True, "heads": len(per_head), "cases": len({r["case"] for r in rows}),
                "pairs": len(rows), "rho_median": q(rhos, 0.5), "rho_p10": q(rhos, 0.1), "rho_p90": q(rhos, 0.9),
                "head_median_min": min(medians), "head_median_max": max(medians),
                "heads_median_above_0.5": sum(m > 0.5 for m in medians),
                "top_agree": round(statistics.mean(r["top_agree"] for r in rows), 3)})
    return out


def matched_removal(weights: torch.Tensor, top: int, draws: int, generator: torch.Generator) -> torch.Tensor:
    """(draws, keys): the share of each key's weight one null draw removes. Each draw walks the keys other than
    `top` in a random order and removes their whole weight until the removed mass reaches weights[top]; the key
    where it is reached is removed in part, so the mass matches exactly. Where the other keys hold less than
    weights[top] (top above 1/2) the draw removes them all: callers leave such pairs out of the comparison."""
    others = torch.tensor([j for j in range(len(weights)) if j != top])
    order = torch.argsort(torch.rand(draws, len(others), generator=generator), dim=1)  # (draws, others)
    keys = others[order]
    w = weights[keys].double()
    before = w.cumsum(1) - w  # mass removed before reaching this key
    share = ((float(weights[top]) - before) / w.clamp_min(1e-30)).clamp(0, 1)
    return torch.zeros(draws, len(weights), dtype=torch.float64).scatter(1, keys, share)


class _ScaleWeights:
    """At one head's attention weights from query `position`: batch row r keeps (1 - removed[r, j]) of key j's
    weight (the others' weights unchanged, no renormalising: as attention_vs_ablation zeroes one)."""

    def __init__(self, head: int, position: int, removed: torch.Tensor):
        self.head, self.position, self.removed = head, position, removed

    def __call__(self, weights: torch.Tensor, name: str) -> torch.Tensor:  # (rows, heads, q, k)
        out = weights.clone()
        keys = self.removed.shape[1]
        out[:, self.head, self.position, :keys] *= (1 - self.removed).to(out.dtype)
        return out


def mass_null(lm, text: str, layer: int, head: int, target: int, draws: int, generator: torch.Generator) -> dict:
    """One (text, head): the drop in log P(target) when the most-attended key's weight is set to zero, beside
    `draws` drops when the same mass is taken from the other keys instead (matched_removal), all in one batched
    forward through attnlab.interventions; and each other key's own knock-out drop (attention_vs_ablation)."""
    from attnlab.explorer.api import attention_vs_ablation
    from attnlab.explorer.server.common import encode
    from attnlab.interventions import clean_run, intervene, logprobs_at

    single = attention_vs_ablation(lm, text, layer, head, target=target)
    position = single["position"]
    ids = torch.tensor([encode(lm, text)[0]])  # an MLM's text holds its [MASK] at `position` already
    keys = [r for r in single["rows"] if r["effect"] is not None]
    name = f"blocks.{layer}.attn.weights"
    weights = clean_run(lm.model, ids, position, names=[name]).recorded[name][0, head, position, :len(keys)]
    top = int(weights.argmax())
    removed = torch.cat([torch.zeros(1, len(keys), dtype=torch.float64),
                         torch.eye(len(keys), dtype=torch.float64)[top:top + 1],
                         matched_removal(weights, top, draws, generator)])  # rows: clean, top key, null draws
    with intervene(lm.model, {name: _ScaleWeights(head, position, removed)}):
        logp = logprobs_at(lm.model, ids.expand(len(removed), -1), position)[:, target].double()
    drops = logp[0] - logp[1:]
    others = [r["effect"] for j, r in enumerate(keys) if j != top]
    return {"top_weight": float(weights[top]), "matched": float(weights[top]) <= 0.5, "top_drop": float(drops[0]),
            "null_drops": drops[1:].tolist(), "other_max": max(others) if others else float("-inf"),
            "top_agree": keys[top]["effect"] >= max(others, default=float("-inf"))}


def null_rows(lm, cases, draws: int, seed: int) -> list[dict]:
    """One row per (case, layer, head) of mass_null, reduced to what the summary needs."""
    cfg = lm.model.config
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for c, (text, target) in enumerate(cases):
        for layer in range(cfg.n_layers):
            for head in range(cfg.n_heads):
                m = mass_null(lm, text, layer, head, target, draws, generator)
                null = torch.tensor(m["null_drops"])
                rows.append({"case": c, "layer": layer, "head": head, "matched": m["matched"],
                             "top_weight": m["top_weight"], "top_agree": m["top_agree"],
                             "beat_share": float((m["top_drop"] > null).double().mean()),  # draws below the top
                             "above_null_median": m["top_drop"] > float(null.median()),
                             "null_top_agree": float((null >= m["other_max"]).double().mean()),
                             "top_drop": m["top_drop"], "null_median": float(null.median())})
        print(f"{lm.id}: text {c + 1} of {len(cases)}", flush=True)
    return rows


def null_summary(model: str, rows: list[dict], settings: dict) -> list[dict]:
    """Per head and per model, on the pairs whose top weight is at most 1/2 (the null can match its mass):
    how often the top key's drop beats the null's, and how often the top key or a null draw would be the
    single most harmful knock-out. Pairs the null cannot match are counted, with their own top_agree."""
    def share(v):
        return round(statistics.mean(v), 3) if v else None

    def stats(group: list[dict]) -> dict:
        m = [r for r in group if r["matched"]]
        u = [r for r in group if not r["matched"]]
        return {"pairs": len(group), "matched_pairs": len(m), "unmatched_pairs": len(u),
                "top_agree": share([r["top_agree"] for r in group]),
                "above_null_median": share([r["above_null_median"] for r in m]),
                "beat_share_median": q([r["beat_share"] for r in m], 0.5),
                "beat_share_p10": q([r["beat_share"] for r in m], 0.1),
                "beat_share_p90": q([r["beat_share"] for r in m], 0.9),
                "top_agree_matched": share([r["top_agree"] for r in m]),
                "null_top_agree_matched": share([r["null_top_agree"] for r in m]),
                "top_agree_unmatched": share([r["top_agree"] for r in u]),
                "top_drop_median": q([r["top_drop"] for r in m], 0.5),
                "null_median_drop_median": q([r["null_median"] for r in m], 0.5),
                "top_weight_median": q([r["top_weight"] for r in group], 0.5)}

    heads = sorted({(r["layer"], r["head"]) for r in rows})
    out = [{"model": model, "layer": layer, "head": head,
            **stats([r for r in rows if (r["layer"], r["head"]) == (layer, head)])} for layer, head in heads]
    per_head = [h["above_null_median"] for h in out if h["above_null_median"] is not None]
    out.append({"model": model, "summary": True, "heads": len(heads), "cases": len({r["case"] for r in rows}),
                **stats(rows), "head_above_null_median_min": min(per_head), "head_above_null_median_max":
                max(per_head), **settings})
    return out


def cases_of(registry, windows: int, length: int) -> dict[str, list[tuple[str, int]]]:
    """model id -> its (text, target id): gpt-char's validation windows (target: the true next character) and
    minilm-mlm's masked sentences (target: the masked word)."""
    from attnlab.data.corpora import python_docs

    gpt = registry.get("gpt-char")
    text = python_docs()
    val = text[int(0.9 * len(text)):]  # the recipe's held-out last 10%
    step = len(val) // windows
    gpt_cases = []
    for i in range(windows):
        window = val[i * step:i * step + length + 1]
        gpt_cases.append((window[:-1], gpt.tokenizer.encode(window[-1], add_special_tokens=False)[0]))
    mlm = registry.get("minilm-mlm")
    return {"gpt-char": gpt_cases,
            "minilm-mlm": [(s, mlm.tokenizer.encode(w, add_special_tokens=False)[0]) for s, w in MLM_SENTENCES]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--windows", type=int, default=24, help="gpt-char validation windows")
    ap.add_argument("--length", type=int, default=40, help="characters per window")
    ap.add_argument("--null", action="store_true", help="measure the top key against the mass-matched null")
    ap.add_argument("--draws", type=int, default=200, help="null draws per (text, head)")
    ap.add_argument("--seed", type=int, default=0, help="the null draws' seed")
    args, registry = shipped_models(ap, pretrained=False)

    lines = []
    for model, cases in cases_of(registry, args.windows, args.length).items():
        lm = registry.get(model)
        if args.null:
            from heads_cost import machine

            settings = {"draws": args.draws, "seed": args.seed, **machine()}
            rows = null_summary(model, null_rows(lm, cases, args.draws, args.seed), settings)
        else:
            rows = summary(model, head_rows(lm, cases))
        lines += [json.dumps(row) for row in rows]
    write_jsonl(lines, args.jsonl)


if __name__ == "__main__":
    main()
