"""GPT-2 small is "117M" in its paper and 124M when counted. Where do the 7M go?

No training: every count comes from attnlab.counting.parameter_table, which builds the model on the meta
device and counts its parameters (a tied matrix once), beside the seeds' closed form V*d + L*d + N*12*d^2.
Rows: the GPT-2 preset as released (tied head, biases, LayerNorms), the same without biases and norms (what
the closed form keeps), with an untied head (what a naive count of the head gives), and GPT-1's shape
(vocabulary 40,478, 512 positions, otherwise the same 12 x 768 stack), whose count is the paper's "117M",
and the largest GPT-2 (48 layers, d 1,600, 25 heads, d_ff 6,400), the "1.5B" of seed 002.

    python docs/experiments/gpt2_params.py [--jsonl docs/experiments/results/gpt2_params.jsonl]
"""

from __future__ import annotations

import argparse
import json

from common import write_jsonl

from attnlab.counting import parameter_table
from attnlab.presets import get

# Radford et al. 2018: 40,478 BPE tokens, 512 positions (GPT-2's token id 50256 does not exist there)
GPT1_SHAPE = {"vocab_size": 40478, "max_len": 512, "bos_token_id": None, "eos_token_id": None}
# Radford et al. 2019, the largest model: 48 layers of width 1,600 (25 heads of 64), same vocabulary and context
GPT2_XL_SHAPE = {"n_layers": 48, "d_model": 1600, "n_heads": 25, "d_ff": 6400}


def row(name: str, **overrides) -> dict:
    """One configuration's counts: measured total, closed form, and the measured parts the closed form omits."""
    table = parameter_table(get("gpt2", **overrides))
    parts = dict(table.rows)
    biases = parts.get("attention biases", 0) + parts.get("feed-forward biases", 0)
    norms = parts.get("norms", 0)
    head = parts.get("heads (LM/MLM/pooler/classifier)", 0)
    return {"name": name, **{k: v for k, v in overrides.items() if v is not None}, "measured": table.total,
            "closed_form": table.formula, "biases": biases, "norms": norms, "untied_head": head,
            "measured_without_biases_norms": table.total - biases - norms,
            "gap": dict(table.gap)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jsonl", default="")
    args = ap.parse_args()
    rows = [row("gpt2 as released (tied head)"),
            row("gpt2, untied LM head", tie_embeddings=False),
            row("GPT-1 shape: vocab 40478, 512 positions", **GPT1_SHAPE),
            row("GPT-2 1.5B shape: 48 layers x 1600", **GPT2_XL_SHAPE)]
    lines = [json.dumps(r) for r in rows]
    write_jsonl(lines, args.jsonl)


if __name__ == "__main__":
    main()
