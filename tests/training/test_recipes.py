"""Every recipe trains for a few steps at a tiny size and leaves a checkpoint attnlab can load (so no recipe can
rot), plus the baselines the documented targets are measured against."""

import json
import math
from collections import Counter

import pytest
import torch

from attnlab import load
from attnlab.training.cli import run_train
from attnlab.training.recipes import bigram_loss

TEXT = "".join(f"def function_{i}(x):\n    return x * {i} + {i % 7}  # a comment about item {i}\n\n"
               for i in range(400))
COMMON = {"steps": "3", "eval_every": "0", "log_every": "1", "plot": "false", "warmup": "1", "threads": "1"}
SMALL_TEXT = {"d_model": "32", "n_heads": "2", "d_ff": "64", "n_layers": "1", "seq_len": "32", "batch_size": "4"}
SMALL_VIT = {"d_model": "32", "n_heads": "2", "d_ff": "64", "n_layers": "1", "patch_size": "7", "batch_size": "8"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "code.txt"
    path.write_text(TEXT)
    return str(path)


def _finite(out):
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(records) == 3
    assert all(math.isfinite(r["loss"]) for r in records)
    return records[-1]


@pytest.mark.parametrize("name,extra", [
    ("gpt-char", {"sample_tokens": "20"}),
    ("gpt-bpe", {"vocab_size": "300", "sample_tokens": "5"}),
    ("bert-mlm", {"vocab_size": "300", "eval_windows": "20"}),
])
def test_text_recipes_smoke(tmp_path, corpus, name, extra):
    out = tmp_path / name
    result = run_train(name, out=str(out), quiet=True, overrides={**COMMON, **SMALL_TEXT, **extra, "data": corpus})
    last = _finite(out)
    assert "val_loss" in last and math.isfinite(last["val_loss"])
    model, tokenizer = load(out / "step-00000003")
    assert tokenizer is not None and model.config.vocab_size == tokenizer.vocab_size
    if name == "bert-mlm":
        assert 0.0 <= result["eval"]["masked_top1"] <= 1.0 and "unigram_top1" in result["eval"]
    else:
        assert len(result["samples"]) == 2


def test_translate_numbers_smoke(tmp_path):
    out = tmp_path / "tn"
    result = run_train("translate-numbers", out=str(out), quiet=True,
                       overrides={**COMMON, "max_number": "120", "d_model": "32", "n_heads": "2", "d_ff": "64",
                                  "n_layers": "1", "batch_size": "8"})
    _finite(out)
    assert 0.0 <= result["eval"]["exact_match"] <= 1.0
    model, tokenizer = load(out / "step-00000003")
    assert model.config.topology == "encoder-decoder"
    assert tokenizer.tokens("ninety-nine", add_special_tokens=False) == ["ninety", "-", "nine"]


def test_vit_mnist_smoke(tmp_path):
    out = tmp_path / "vit"
    result = run_train("vit-mnist", out=str(out), quiet=True, overrides={**COMMON, **SMALL_VIT})
    _finite(out)
    assert 0.0 <= result["eval"]["accuracy"] <= 1.0
    model, _ = load(out / "step-00000003")
    assert model(torch.zeros(2, 1, 28, 28)).logits.shape == (2, 10)


def test_clip_mnist_smoke(tmp_path):
    out = tmp_path / "clip"
    result = run_train("clip-mnist", out=str(out), quiet=True,
                       overrides={**COMMON, **SMALL_VIT, "text_d_model": "32", "text_layers": "1",
                                  "embed_dim": "16", "languages": "en,fr"})
    _finite(out)
    assert {"zero_shot", "zero_shot_en", "zero_shot_fr"} <= set(result["eval"])
    model, tokenizer = load(out / "step-00000003")  # attnlab.load dispatches on extra.dual_encoder
    assert type(model).__name__ == "DualEncoder"
    ids = torch.tensor([[tokenizer.cls_id, *tokenizer.encode("sept", add_special_tokens=False)]])
    assert model.embed_b(ids).shape == (1, 16)


def test_bigram_baseline_matches_direct_counting():
    """add-one smoothed bigram cross-entropy, recomputed with plain Python counters."""
    g = torch.Generator().manual_seed(0)
    train = torch.randint(0, 5, (300,), generator=g)
    val = torch.randint(0, 5, (4, 9), generator=g)
    pairs = Counter(zip(train[:-1].tolist(), train[1:].tolist(), strict=False))
    firsts = Counter(train[:-1].tolist())
    expected = []
    for row in val.tolist():
        for a, b in zip(row[:-1], row[1:], strict=False):
            expected.append(-math.log((pairs[(a, b)] + 1) / (firsts[a] + 5)))
    assert bigram_loss(train, val, 5) == pytest.approx(sum(expected) / len(expected), rel=1e-12)


def test_resumed_bert_mlm_keeps_its_trained_tokenizer(tmp_path, corpus, monkeypatch):
    """WordPiece training is not bit-reproducible; a resumed run must reuse the checkpoint's tokenizer."""
    from attnlab.data import tokenizers

    out = tmp_path / "mlm"
    keys = {**COMMON, **SMALL_TEXT, "vocab_size": "300", "eval_windows": "10", "data": corpus, "steps": "2"}
    run_train("bert-mlm", out=str(out), quiet=True, overrides=keys)
    saved = (out / "step-00000002" / "tokenizer.json").read_text()

    def refuse(*args, **kwargs):
        raise AssertionError("the tokenizer was retrained on resume")

    monkeypatch.setattr(tokenizers, "train_wordpiece", refuse)
    result = run_train("bert-mlm", out=str(out), resume=True, quiet=True, overrides={**keys, "steps": "4"})
    assert result["step"] == 4
    assert (out / "step-00000004" / "tokenizer.json").read_text() == saved
