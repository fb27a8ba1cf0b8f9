"""Seed 000: do similar meanings land nearby? Checked on all-MiniLM-L6-v2, no training.

Two measurements, both through attnlab.explorer.views.experiments.meanings.compute (what the explorer's "Nearby
meanings" view shows):
  - sentences: 12 pairs of paraphrases that share few words; each sentence mean-pooled over MiniLM's last hidden
    states (as sentence-transformers does) and the cosine of every pair of sentences. Paraphrase cosines against
    the cosines of every other (unrelated) pair, and retrieval: is each sentence's nearest other sentence its
    paraphrase? The same on the shipped bert-mlm checkpoint (a tiny encoder trained only on masked-word
    prediction) as a control: is it the architecture or MiniLM's training that puts paraphrases together?
  - tokens: the nearest rows of MiniLM's input embedding table (cosine) for a few words, before any attention.

    python docs/experiments/meanings.py [--jsonl docs/experiments/results/meanings.jsonl]
"""

from __future__ import annotations

import json
import statistics

from common import shipped_models, write_jsonl

PAIRS = [
    ("A man is playing the guitar.", "Someone strums an acoustic instrument."),
    ("The stock market fell sharply today.", "Share prices dropped a lot this morning."),
    ("The kitten is asleep on the sofa.", "A young cat naps on the couch."),
    ("It is raining heavily outside.", "There is a downpour out there."),
    ("He bought a new car yesterday.", "Yesterday he purchased a brand-new automobile."),
    ("The children are laughing loudly.", "The kids giggle with noisy delight."),
    ("Please close the window.", "Could you shut the window, please?"),
    ("The meeting was postponed until Friday.", "They moved the appointment to the end of the week."),
    ("She is a talented violinist.", "Her skill with the fiddle is remarkable."),
    ("The train arrived late.", "The railway service was delayed."),
    ("I am very hungry.", "I could eat a horse right now."),
    ("The doctor examined the patient.", "The physician checked the sick person."),
]
WORDS = ["king", "cat", "happy", "paris", "three", "running", "blue", "doctor"]


def sentence_rows(lm) -> dict:
    from attnlab.explorer.views.experiments.meanings.compute import sentence_vectors

    sentences = [s for pair in PAIRS for s in pair]
    vectors = sentence_vectors(lm, sentences)  # (2P, d_model), unit length
    cos = vectors @ vectors.T
    n = len(sentences)
    partner = [i + 1 if i % 2 == 0 else i - 1 for i in range(n)]
    para = [float(cos[i, i + 1]) for i in range(0, n, 2)]
    other = [float(cos[i, j]) for i in range(n) for j in range(i + 1, n) if j != partner[i]]
    nearest = cos.clone().fill_diagonal_(-2).argmax(1).tolist()
    hits = sum(nearest[i] == partner[i] for i in range(n))
    return {"model": lm.id, "pairs": len(PAIRS), "paraphrase_mean": round(statistics.mean(para), 3),
            "paraphrase_min": round(min(para), 3), "paraphrase_max": round(max(para), 3),
            "unrelated_mean": round(statistics.mean(other), 3), "unrelated_max": round(max(other), 3),
            "unrelated_p90": round(sorted(other)[int(0.9 * (len(other) - 1))], 3),
            "paraphrases_above_every_unrelated": sum(p > max(other) for p in para),
            "nearest_is_paraphrase": hits, "sentences": n}


def token_rows(lm) -> list[dict]:
    from attnlab.explorer.views.experiments.meanings.compute import nearest_tokens

    rows = []
    for word in WORDS:
        out = nearest_tokens(lm, word, k=5)
        rows.append({"model": lm.id, "word": word, "query_token": out["query"]["token"],
                     "nearest": [(t["token"], t["cosine"]) for t in out["nearest"]]})
    return rows


def main() -> None:
    args, registry = shipped_models()
    rows = [sentence_rows(registry.get("minilm")), sentence_rows(registry.get("bert-mlm"))]
    rows += token_rows(registry.get("minilm"))
    lines = [json.dumps(r) for r in rows]
    write_jsonl(lines, args.jsonl)


if __name__ == "__main__":
    main()
