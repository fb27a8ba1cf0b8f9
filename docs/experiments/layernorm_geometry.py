"""Seed 004: LayerNorm's geometry in attention, measured on trained models. No training.

The seed (after Brody et al. 2023): with LayerNorm, keys lie on the hyperplane orthogonal to the all-ones
vector 1, all at norm sqrt(d); queries sit close to 1 (so a query can attend to all keys equally); and no key is
"unselectable" (inside the convex hull of the others, so that no query can ever give it the highest score).
What is measured, per layer, on the vectors that enter attention (the LN output, gain and bias included: pre-LN
gpt-char's norm1(x); post-LN MiniLM's residual stream, itself an LN output):
  - keys: |cos(x, 1)| and |x| / sqrt(d_model) of the attention input (without the gain and bias the answers are
    0 and 1 by construction: (x - mean) / std is orthogonal to 1 with norm sqrt(d));
  - queries: in the paper's picture a query meets the keys in the input space as W_K^T q (per head);
    |cos(W_K^T q, 1)| against |cos| of a random direction with 1 (about sqrt(2 / (pi d)));
  - selectability, per head over the keys of one text: the keys no query of that text gives its largest weight
    to, the keys whose largest weight from any query stays below 0.1, and (a linear program) the keys that NO
    query at all could rank first: k_j is selectable iff some q has q.(k_j - k_m) > 0 for every other key m.
Texts: 8 windows of 64 characters of gpt-char's validation text; 8 Wikipedia lead sentences for MiniLM.

    python docs/experiments/layernorm_geometry.py [--jsonl docs/experiments/results/layernorm_geometry.jsonl]
"""

from __future__ import annotations

import json
import math
import statistics

import torch
from common import shipped_models, write_jsonl
from scipy.optimize import linprog

import attnlab


def selectable(k: torch.Tensor) -> list[bool]:
    """k: (n, d) keys. Key j is selectable iff some q gives it the strictly largest score: the LP
    q.(k_j - k_m) >= 1 for all m != j is feasible (scale q up from any strict solution)."""
    k = k.double()
    out = []
    for j in range(k.shape[0]):
        diff = k[j][None] - torch.cat([k[:j], k[j + 1:]])  # (n - 1, d)
        keep = diff.abs().sum(-1) > 1e-9  # an identical key (a repeated token) ties: leave it out
        if not keep.any():
            out.append(True)
            continue
        res = linprog(c=[0.0] * k.shape[1], A_ub=-diff[keep].numpy(), b_ub=[-1.0] * int(keep.sum()),
                      bounds=[(None, None)] * k.shape[1], method="highs")
        out.append(res.status == 0)
    return out


def layer_rows(model_id: str, model, batches: list[torch.Tensor]) -> list[dict]:
    cfg = model.config
    d = cfg.d_model
    ones = torch.ones(d) / math.sqrt(d)
    rows = []
    for i, block in enumerate(model.blocks):
        key_cos, key_norm, query_cos, rand_cos = [], [], [], []
        never_top = never_above = unselectable = total_keys = 0
        for ids in batches:
            rec = attnlab.record(model, ids, names=[f"blocks.{i}.resid_pre", f"blocks.{i}.attn.q",
                                                    f"blocks.{i}.attn.k", f"blocks.{i}.attn.weights"])
            x = rec[f"blocks.{i}.resid_pre"][0]  # (n, d)
            if cfg.norm_placement == "pre":
                with torch.no_grad():
                    x = block.norm1(x)
            key_cos += (x @ ones / x.norm(dim=-1)).abs().tolist()
            key_norm += (x.norm(dim=-1) / math.sqrt(d)).tolist()
            q, k = rec[f"blocks.{i}.attn.q"][0], rec[f"blocks.{i}.attn.k"][0]  # (h, n, d_head)
            w = rec[f"blocks.{i}.attn.weights"][0]  # (h, q, k)
            w_k = block.attn.qkv.weight[block.attn.q_width:block.attn.q_width + block.attn.q_width]  # (h*dh, d)
            for h in range(cfg.n_heads):
                rows_h = slice(h * block.attn.d_head, (h + 1) * block.attn.d_head)
                back = q[h] @ w_k[rows_h].detach()  # (n, d): W_K^T q in the input space
                query_cos += (back @ ones / back.norm(dim=-1)).abs().tolist()
                g = torch.Generator().manual_seed(i * 100 + h)
                r = torch.randn(back.shape, generator=g)
                rand_cos += (r @ ones / r.norm(dim=-1)).abs().tolist()
                top = w[h].argmax(-1)  # (q,) each query's most attended key
                n = w.shape[-1]
                never_top += n - len(set(top.tolist()))
                never_above += int((w[h].max(0).values < 0.1).sum())
                unselectable += sum(not s for s in selectable(k[h]))
                total_keys += n
        rows.append({"model": model_id, "layer": i, "d_model": d, "norm_placement": cfg.norm_placement,
                     "key_cos_ones_median": round(statistics.median(key_cos), 4),
                     "key_cos_ones_max": round(max(key_cos), 4),
                     "key_norm_over_sqrt_d_median": round(statistics.median(key_norm), 3),
                     "key_norm_over_sqrt_d_min": round(min(key_norm), 3),
                     "key_norm_over_sqrt_d_max": round(max(key_norm), 3),
                     "query_cos_ones_median": round(statistics.median(query_cos), 4),
                     "query_cos_ones_max": round(max(query_cos), 4),
                     "random_cos_ones_median": round(statistics.median(rand_cos), 4),
                     "head_keys": total_keys, "never_top": never_top, "never_above_0.1": never_above,
                     "unselectable_lp": unselectable})
    return rows


def main() -> None:
    args, registry = shipped_models()
    from attnlab.data.corpora import python_docs, wiki_summaries

    gpt = registry.get("gpt-char")
    val = python_docs()
    val = val[int(0.9 * len(val)):]
    step = len(val) // 8
    batches = [torch.tensor([gpt.tokenizer.encode(val[j * step:j * step + 64])]) for j in range(8)]
    rows = layer_rows("gpt-char", gpt.model, batches)
    mini = registry.get("minilm")
    wiki = [p.split(". ")[0] + "." for p in wiki_summaries("en").split("\n\n")[:400:50]]
    rows += layer_rows("minilm", mini.model, [torch.tensor([mini.tokenizer.encode(s)]) for s in wiki])
    lines = [json.dumps(r) for r in rows]
    write_jsonl(lines, args.jsonl)


if __name__ == "__main__":
    main()
