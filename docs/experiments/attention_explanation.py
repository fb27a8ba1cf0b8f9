"""Seed 002: is a head's attention weight on a key an explanation of what that key does?

For one head and one query position, attnlab.explorer.experiments.attention_vs_ablation gives, per key j, the
head's attention weight on j and the drop in log P(target) when that one weight is set to zero (the others
kept, through attnlab.interventions). If weights explained, the two would rank the keys alike. Per (sentence,
head): Spearman's rank correlation over the keys, and whether the most-attended key is also the key whose
removal hurts most. Over every head of two trained models: the shipped gpt-char (4 x 4 heads; windows of its
validation text, target the true next character) and the shipped minilm-mlm (6 x 12 heads; sentences with one
word masked, target that word). No training; deterministic (no random draw).

    python docs/experiments/attention_explanation.py [--windows 24 --jsonl FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics

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
    from attnlab.explorer.experiments import attention_vs_ablation

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


def summary(model: str, rows: list[dict]) -> list[dict]:
    def q(v, p):
        v = sorted(v)
        return round(v[min(len(v) - 1, int(round(p * (len(v) - 1))))], 3)

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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--windows", type=int, default=24, help="gpt-char validation windows")
    ap.add_argument("--length", type=int, default=40, help="characters per window")
    args, registry = shipped_models(ap, pretrained=False)
    from attnlab.data.corpora import python_docs

    lines = []
    gpt = registry.get("gpt-char")
    text = python_docs()
    val = text[int(0.9 * len(text)):]  # the recipe's held-out last 10%
    step = len(val) // args.windows
    cases = []
    for i in range(args.windows):
        window = val[i * step:i * step + args.length + 1]
        cases.append((window[:-1], gpt.tokenizer.encode(window[-1], add_special_tokens=False)[0]))
    for row in summary("gpt-char", head_rows(gpt, cases)):
        lines.append(json.dumps(row))
    mlm = registry.get("minilm-mlm")
    cases = [(s, mlm.tokenizer.encode(w, add_special_tokens=False)[0]) for s, w in MLM_SENTENCES]
    for row in summary("minilm-mlm", head_rows(mlm, cases)):
        lines.append(json.dumps(row))
    write_jsonl(lines, args.jsonl)


if __name__ == "__main__":
    main()
