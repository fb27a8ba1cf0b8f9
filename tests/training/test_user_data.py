"""The recipes train on the user's own data: a folder of images (vit-mnist images=), scikit-learn's digits
(vit-mnist dataset=digits) and a TSV of sentence pairs (translate-numbers pairs=). Held-out counts are computed
here from the files we wrote, bad input raises an attnlab error before anything is written to OUT."""

import json

import numpy as np
import pytest
import torch

from attnlab import load
from attnlab.errors import ConfigError, InputError
from attnlab.training.recipes import get_recipe
from attnlab.training.recipes.translation import TranslateNumbersTask
from attnlab.training.run import run_train
from attnlab.training.settings import resolve_params

COMMON = {"steps": "3", "eval_every": "0", "log_every": "1", "plot": "false", "warmup": "1", "threads": "1"}
SMALL_VIT = {"d_model": "16", "n_heads": "2", "d_ff": "32", "n_layers": "1", "patch_size": "4", "batch_size": "4"}
SMALL_SEQ2SEQ = {"d_model": "16", "n_heads": "2", "d_ff": "32", "n_layers": "1", "batch_size": "8"}
CLASS_COUNTS = {"circle": 6, "cross": 9, "square": 12}  # test_fraction=0.2 -> round(1.2, 1.8, 2.4) = 1 + 2 + 2
DIGITS_EN = "zero one two three four five six seven eight nine".split()
DIGITS_FR = "zéro un deux trois quatre cinq six sept huit neuf".split()


def _write_images(root, counts, size=8, mode="L", seed=0):
    from PIL import Image

    rng = np.random.default_rng(seed)
    for label, (name, count) in enumerate(counts.items()):
        (root / name).mkdir(parents=True)
        for i in range(count):
            pixels = rng.integers(0, 60, (size, size, 3), dtype=np.uint8)
            pixels[label::3, :, :] = 255  # each class has its own stripe pattern
            image = Image.fromarray(pixels, "RGB").convert(mode)
            image.save(root / name / f"{i:02d}.png")
    return root


def _number_pairs(numbers):
    """'one two' -> 'un deux': the digits of n, word by word."""
    return [(" ".join(DIGITS_EN[int(d)] for d in str(n)), " ".join(DIGITS_FR[int(d)] for d in str(n)))
            for n in numbers]


def _write_tsv(path, pairs):
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return path


def test_vit_trains_on_an_image_folder_and_saves_class_names(tmp_path):
    folder = _write_images(tmp_path / "shapes", CLASS_COUNTS)
    out = tmp_path / "run"
    result = run_train("vit-mnist", out=str(out), quiet=True,
                       overrides={**COMMON, **SMALL_VIT, "images": str(folder)})
    n_test = sum(round(count * 0.2) for count in CLASS_COUNTS.values())  # stratified: per class
    assert n_test == 5
    assert result["eval"]["test_images"] == n_test
    assert result["eval"]["accuracy"] * n_test == pytest.approx(round(result["eval"]["accuracy"] * n_test), abs=1e-9)
    model, _ = load(out / "step-00000003")
    config = model.config
    assert config.extra["labels"] == sorted(CLASS_COUNTS)  # class names from the folder names
    assert (config.n_classes, config.n_channels, config.image_size) == (3, 1, 8)  # grayscale PNGs: one channel
    assert len(config.extra["pixel_mean"]) == len(config.extra["pixel_std"]) == 1
    assert model(torch.zeros(2, 1, 8, 8)).logits.shape == (2, 3)
    saved = json.loads((out / "step-00000003" / "config.json").read_text())
    assert saved["extra"]["labels"] == ["circle", "cross", "square"]


def test_vit_resizes_mixed_size_rgb_images_with_image_size(tmp_path):
    folder = _write_images(tmp_path / "a", {"cat": 5, "dog": 5}, size=12, mode="RGB")
    _write_images(tmp_path / "b", {"cat": 5, "dog": 5}, size=10, mode="RGB", seed=1)
    for name in ("cat", "dog"):  # same folder, two image sizes
        for f in (tmp_path / "b" / name).iterdir():
            f.rename(folder / name / f"b{f.name}")
    with pytest.raises(InputError, match="image_size|size="):
        run_train("vit-mnist", out=str(tmp_path / "no"), quiet=True,
                  overrides={**COMMON, **SMALL_VIT, "images": str(folder)})
    assert not (tmp_path / "no").exists()
    out = tmp_path / "run"
    result = run_train("vit-mnist", out=str(out), quiet=True,
                       overrides={**COMMON, **SMALL_VIT, "images": str(folder), "image_size": "8", "steps": "1"})
    assert result["eval"]["test_images"] == 2 * round(10 * 0.2)
    model, _ = load(out / "step-00000001")
    assert (model.config.n_channels, model.config.image_size, model.config.extra["labels"]) == (3, 8, ["cat", "dog"])


def test_vit_trains_on_sklearn_digits_and_refuses_a_patch_size_that_does_not_divide(tmp_path):
    from sklearn.datasets import load_digits  # independent of attnlab's reader of the same file

    counts = np.bincount(load_digits().target)
    out = tmp_path / "digits"
    result = run_train("vit-mnist", out=str(out), quiet=True,
                       overrides={**COMMON, **SMALL_VIT, "dataset": "digits", "steps": "2", "batch_size": "8"})
    assert result["eval"]["test_images"] == sum(round(c * 0.2) for c in counts)
    model, _ = load(out / "step-00000002")
    assert model.config.extra["labels"] == [str(d) for d in range(10)] and model.config.image_size == 8
    with pytest.raises(ConfigError, match="allowed patch sizes: 1, 2, 4, 8"):
        run_train("vit-mnist", out=str(tmp_path / "bad"), quiet=True,
                  overrides={**COMMON, **SMALL_VIT, "dataset": "digits", "patch_size": "7"})
    assert not (tmp_path / "bad").exists()


def test_translate_trains_on_a_tsv_of_pairs(tmp_path):
    pairs = _number_pairs(range(10, 70))  # 60 pairs
    tsv = _write_tsv(tmp_path / "pairs.tsv", pairs)
    out = tmp_path / "run"
    result = run_train("translate-numbers", out=str(out), quiet=True,
                       overrides={**COMMON, **SMALL_SEQ2SEQ, "pairs": str(tsv), "test_fraction": "0.2"})
    assert result["eval"]["held_out"] == int(60 * 0.2)
    assert result["eval"]["unseen_targets"] == 0  # every digit word occurs in the 48 training pairs
    assert 0.0 <= result["eval"]["exact_match"] <= 1.0
    assert len(result["samples"]) == 8 and all(line.split("  ->  ")[0] in dict(pairs) for line in result["samples"])
    model, tokenizer = load(out / "step-00000003")
    assert model.config.topology == "encoder-decoder" and model.config.extra["pairs"] == "pairs.tsv"
    assert tokenizer.tokens("un deux", add_special_tokens=False) == ["un", "deux"]


def test_a_held_out_target_with_an_unseen_word_cannot_match():
    """Every target holds a word of its own: none is in the training vocabulary, so exact match must be 0."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        tsv = _write_tsv(Path(tmp) / "p.tsv", [(f"a b {i % 3}", f"word{i}") for i in range(40)])
        _, params = resolve_params(get_recipe("translate-numbers"),
                                   {**{k: v for k, v in SMALL_SEQ2SEQ.items() if k != "batch_size"},
                                    "pairs": str(tsv), "test_fraction": "0.25"})
        torch.manual_seed(0)
        task = TranslateNumbersTask({**params, "batch_size": 8})
    vocabulary = task.tokenizer.hf.get_vocab()
    assert len(task.test_pairs) == 10 and not any(target in vocabulary for _, target in task.test_pairs)
    metrics = task.evaluate(task.model.eval())
    assert metrics == {"exact_match": 0.0, "held_out": 10, "unseen_targets": 10}


@pytest.mark.parametrize("case,error,match", [
    ("missing", InputError, "not a folder"),
    ("no_classes", InputError, "no images in class subfolders"),
    ("one_class", InputError, "one class"),
    ("empty_class", InputError, "hold no images"),
    ("unreadable", InputError, "not a readable image"),
    ("both", ConfigError, "give one of them"),
    ("unknown_dataset", ConfigError, "allowed mnist, digits"),
    ("patch_zero", ConfigError, "patch_size=0: must be a positive divisor"),
])
def test_bad_image_input_is_refused_before_writing(tmp_path, case, error, match):
    folder = tmp_path / "images"
    overrides = {**COMMON, **SMALL_VIT, "images": str(folder)}
    if case == "no_classes":
        folder.mkdir()
        _write_images(tmp_path / "tmp", {"x": 1})
        (tmp_path / "tmp" / "x" / "00.png").rename(folder / "loose.png")
    elif case == "one_class":
        _write_images(folder, {"only": 10})
    elif case == "empty_class":
        _write_images(folder, {"a": 10, "b": 10})
        (folder / "empty").mkdir()
    elif case == "unreadable":
        _write_images(folder, {"a": 10, "b": 10})
        (folder / "b" / "broken.png").write_bytes(b"not a png at all")
    elif case == "both":
        _write_images(folder, {"a": 10, "b": 10})
        overrides["dataset"] = "digits"
    elif case == "unknown_dataset":
        overrides = {**COMMON, **SMALL_VIT, "dataset": "cifar"}
    elif case == "patch_zero":
        overrides = {**COMMON, **SMALL_VIT, "dataset": "digits", "patch_size": "0"}
    out = tmp_path / "out"
    with pytest.raises(error, match=match):
        run_train("vit-mnist", out=str(out), quiet=True, overrides=overrides)
    assert not out.exists()


@pytest.mark.parametrize("case,match", [
    ("missing", "does not exist"),
    ("malformed", r"p\.tsv:3: expected 'source<TAB>target'"),
    ("too_small", "6 pairs with test_fraction=0.2 give 5 train and 1 held-out pairs; need at least batch_size=8"),
])
def test_bad_pairs_are_refused_before_writing(tmp_path, case, match):
    tsv = tmp_path / "p.tsv"
    if case == "malformed":
        tsv.write_text("one\tun\ntwo\tdeux\nthree un trois\n", encoding="utf-8")
    elif case == "too_small":
        _write_tsv(tsv, _number_pairs(range(6)))
    out = tmp_path / "out"
    with pytest.raises(InputError, match=match):
        run_train("translate-numbers", out=str(out), quiet=True,
                  overrides={**COMMON, **SMALL_SEQ2SEQ, "pairs": str(tsv), "test_fraction": "0.2"})
    assert not out.exists()


# ------------------------------------------------------------------ settings, devices, files: refused in one line
TINY_TEXT = {**COMMON, "d_model": "16", "n_heads": "2", "d_ff": "32", "n_layers": "1", "seq_len": "16",
             "batch_size": "2", "sample_tokens": "1"}


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(200)))
    return str(path)


@pytest.mark.parametrize("key,value,match", [
    ("threads", "-3", "threads=-3 must be 0 or a positive integer"),
    ("device", "tpu", "device='tpu': allowed cpu, cuda, cuda:N"),
    ("seed", "-1", "seed=-1: allowed 0 .. 4294967295"),
    ("log_every", "-1", "log_every=-1 must be 0 or a positive integer"),
])
def test_bad_settings_are_refused_before_writing(tmp_path, corpus, key, value, match):
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match=match):
        run_train("gpt-char", out=str(out), quiet=True, overrides={**TINY_TEXT, "data": corpus, key: value})
    assert not out.exists()


def test_cuda_without_cuda_is_refused_before_writing(tmp_path, corpus):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match="device='cuda' but torch sees no CUDA device"):
        run_train("gpt-char", out=str(out), quiet=True, overrides={**TINY_TEXT, "data": corpus, "device": "cuda"})
    assert not out.exists()


def test_a_config_file_that_is_not_utf8_or_not_a_file_is_refused(tmp_path, corpus):
    import os

    bad = tmp_path / "run.toml"
    bad.write_bytes(b"steps = 3\nname = \"\xff\xfe\"\n")
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match=r"run\.toml is not UTF-8 text"):
        run_train("gpt-char", config=str(bad), out=str(out), quiet=True, overrides={"data": corpus})
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="is not a regular file"):  # never opened: reading it would block
        run_train("gpt-char", config=str(fifo), out=str(out), quiet=True, overrides={"data": corpus})
    assert not out.exists()


def test_out_naming_a_file_is_refused(tmp_path, corpus):
    taken = tmp_path / "results.txt"
    taken.write_text("keep me")
    for out in (taken, taken / "run"):
        with pytest.raises(ConfigError, match="is a file"):
            run_train("gpt-char", out=str(out), quiet=True, overrides={**TINY_TEXT, "data": corpus})
    assert taken.read_text() == "keep me"


@pytest.mark.parametrize("kind", ["dev_zero", "fifo"])
def test_data_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path, kind):
    import os

    if kind == "dev_zero":
        data, match = "/dev/zero", "not a regular file"
    else:
        data, match = str(tmp_path / "pipe.txt"), "not a regular file"
        os.mkfifo(data)  # nobody writes to it: opening it would block forever
    out = tmp_path / "out"
    with pytest.raises(InputError, match=match):
        run_train("gpt-char", out=str(out), quiet=True, overrides={**TINY_TEXT, "data": data})
    assert not out.exists()


@pytest.mark.parametrize("case", ["missing field", "too small"])
def test_a_data_error_leaves_nothing_that_refuses_the_corrected_rerun(tmp_path, case):
    """issue 23.7: a data error used to leave OUT/data/.lock, and the rerun was refused as "a previous run"."""
    data = tmp_path / "corpus.jsonl"
    good = "".join(json.dumps({"text": f"def f{i}(x):\n    return x\n"}) + "\n" for i in range(100))
    if case == "missing field":
        data.write_text(good + '{"body": "no text"}\n')
        match = r"corpus\.jsonl line 101: no 'text' field"
    else:
        data.write_text("".join(good.splitlines(keepends=True)[:3]))
        match = r"too small for one batch"
    out = tmp_path / "out"
    with pytest.raises(InputError, match=match):
        run_train("gpt-char", out=str(out), quiet=True, overrides={**TINY_TEXT, "data": str(data)})
    assert not (out / "data").exists()
    data.write_text(good)
    result = run_train("gpt-char", out=str(out), quiet=True, overrides={**TINY_TEXT, "data": str(data)})
    assert result["recipe"] == "gpt-char" and (out / "step-00000003").is_dir()
    assert (out / "data" / "meta.json").is_file()


def test_a_corpus_above_the_in_memory_cap_streams(tmp_path, corpus, monkeypatch):
    """Training streams its corpus: the cap on text read into memory (read_text) does not apply to data=."""
    from attnlab.data import corpora

    monkeypatch.setattr(corpora, "MAX_TEXT_BYTES", 1000)
    size = len(open(corpus, "rb").read())
    assert size > 1000
    run_train("gpt-char", out=str(tmp_path / "out"), quiet=True, overrides={**TINY_TEXT, "data": corpus})
    meta = json.loads((tmp_path / "out" / "data" / "meta.json").read_text())
    assert meta["n_tokens"]["train"] + meta["n_tokens"]["val"] == size  # ASCII: one character, one token


def test_a_full_disk_during_a_checkpoint_keeps_the_previous_one(tmp_path, corpus, monkeypatch):
    import errno

    from attnlab import storage as checkpoint
    from attnlab.errors import CheckpointError
    from attnlab.training.checkpoint import latest_checkpoint

    real, calls = checkpoint._save_safetensors, []

    def disk_fills_at_the_second_save(model, path):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(model, path)

    monkeypatch.setattr(checkpoint, "_save_safetensors", disk_fills_at_the_second_save)
    out = tmp_path / "out"
    with pytest.raises(CheckpointError, match=r"could not save the step 2 checkpoint .*No space left on device; "
                                              r"the previous checkpoint .*step-00000001 is intact"):
        run_train("gpt-char", out=str(out), quiet=True,
                  overrides={**TINY_TEXT, "data": corpus, "steps": "2", "save_every": "1"})
    assert latest_checkpoint(out).name == "step-00000001"
    assert sorted(p.name for p in out.iterdir() if p.name.startswith((".step", "step"))) == ["step-00000001"]
    model, _ = load(out / "step-00000001")  # whole and loadable
    assert model.config.name == "gpt-char"
