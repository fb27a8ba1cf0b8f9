"""The trained checkpoints shipped as package data still do what docs/training.md says, after float16 storage,
checked against independent references (num2words, the MNIST labels, an add-one bigram model)."""

import functools
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import attnlab

ASSETS = Path(attnlab.__file__).parent / "assets" / "checkpoints"
SHIPPED = sorted(p.name for p in ASSETS.iterdir() if p.is_dir()) if ASSETS.is_dir() else []


def _need(name):
    if name not in SHIPPED:
        pytest.skip(f"{name} is not shipped yet")
    return ASSETS / name


def test_shipped_checkpoints_are_small_loadable_and_documented():
    assert SHIPPED, "no checkpoints under attnlab/assets/checkpoints"
    total = sum(f.stat().st_size for f in ASSETS.rglob("*") if f.is_file())
    assert total <= 20 * 10**6  # the project's rule for checkpoints shipped as package data: 20 MB in all
    for name in SHIPPED:
        info = json.loads((ASSETS / name / "trained.json").read_text())
        assert info["command"].startswith(f"attnlab train {name}")
        model, tokenizer = attnlab.load(ASSETS / name)
        assert all(p.dtype == torch.float32 for p in model.parameters())  # float16 on disk, float32 in memory
        if name not in ("vit-mnist",):
            assert tokenizer is not None


@pytest.mark.slow
def test_translate_numbers_checkpoint_translates_held_out_numbers():
    from num2words import num2words

    from attnlab.data.tokenizers import load_tokenizer
    from attnlab.training.recipes import get_recipe
    from attnlab.training.recipes.translation import TranslateNumbersTask
    from attnlab.training.settings import resolve_params

    path = _need("translate-numbers")
    _, params = resolve_params(get_recipe("translate-numbers"), {})
    task = TranslateNumbersTask(params)  # rebuilds the same seeded split (and a throwaway model)
    model, _ = attnlab.load(path)
    assert load_tokenizer(path).hf.get_vocab() == task.tokenizer.hf.get_vocab()
    idx = task.test_idx[:200]
    predicted = task.greedy(model, task.src[idx])
    correct = 0
    for (english, _), row in zip(task.test_pairs[:200], predicted, strict=True):
        words = task.tokenizer.decode(task._strip(row)).replace(" - ", "-").replace(" ,", ",")
        number = task_number(english)
        correct += words == num2words(number, lang="fr")
    assert correct / 200 >= 0.95


@functools.lru_cache(maxsize=1)
def _english_to_number() -> dict[str, int]:
    from num2words import num2words

    return {num2words(n): n for n in range(10000)}


def task_number(english: str) -> int:
    """Invert num2words(n, lang='en') for 0..9999 by lookup (independent of the model and its tokenizer)."""
    return _english_to_number()[english]


def _mnist_test():
    from attnlab.data.images import split_images
    from attnlab.training.recipes.vision import VIT_PARAMS

    _, _, x, y = split_images(VIT_PARAMS["test_size"], VIT_PARAMS["split_seed"], 64)
    return x, y


@pytest.mark.slow
def test_vit_mnist_checkpoint_accuracy():
    model, _ = attnlab.load(_need("vit-mnist"))
    x, y = _mnist_test()
    with torch.no_grad():
        predicted = torch.cat([model(chunk).logits.argmax(-1) for chunk in x.split(250)])
    assert float((predicted == y).float().mean()) >= 0.95


@pytest.mark.slow
def test_clip_mnist_checkpoint_zero_shot():
    from num2words import num2words

    model, tokenizer = attnlab.load(_need("clip-mnist"))
    x, y = _mnist_test()
    captions = [[tokenizer.cls_id, *tokenizer.encode(num2words(d), add_special_tokens=False)] for d in range(10)]
    width = max(map(len, captions))
    ids = torch.tensor([c + [tokenizer.pad_id] * (width - len(c)) for c in captions])
    with torch.no_grad():
        text = model.embed_b(ids, (ids != tokenizer.pad_id).long())  # (10, embed)
        images = torch.cat([model.embed_a(chunk) for chunk in x.split(250)])
    assert float(((images @ text.T).argmax(-1) == y).float().mean()) >= 0.90


@pytest.mark.slow
def test_gpt_char_checkpoint_beats_bigram_by_half_a_nat():
    from attnlab.data.corpora import python_docs
    from attnlab.training.recipes.text import bigram_loss

    model, tokenizer = attnlab.load(_need("gpt-char"))
    ids = torch.tensor(tokenizer.encode(python_docs(), add_special_tokens=False))  # the recipe's default corpus
    n_val = round(len(ids) * 0.1)  # the recipe's split: the last 10% of the ids is validation
    train, val = ids[:-n_val], ids[-n_val:]
    windows = val[: 200 * 65].view(200, 65)
    with torch.no_grad():
        logits = model(windows[:, :-1]).logits
    loss = float(F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten()))
    assert loss <= bigram_loss(train, windows, tokenizer.vocab_size) - 0.5


@pytest.mark.slow
def test_translate_numbers_reads_what_people_type_and_writes_french_hyphens():
    """The explorer's examples as typed, and every held-out number typed without num2words' hyphens, commas and
    'and', translated through attnlab.generate and the checkpoint's own tokenizer: num2words is the reference."""
    from num2words import num2words

    from attnlab.generation import generate
    from attnlab.training.recipes import get_recipe
    from attnlab.training.recipes.translation import TranslateNumbersTask
    from attnlab.training.settings import resolve_params

    model, tokenizer = attnlab.load(_need("translate-numbers"))
    room = model.config.max_len - 1  # the decoder start token takes one position

    def translate(texts):
        ids = [tokenizer.encode(text) for text in texts]
        width = max(map(len, ids))
        src = torch.tensor([row + [tokenizer.pad_id] * (width - len(row)) for row in ids])
        out = generate(model, src, attention_mask=(src != tokenizer.pad_id).long(), max_new_tokens=room)
        return [tokenizer.decode(row) for row in out.new_tokens.tolist()]

    examples = {"Forty-two": 42, "nine thousand nine hundred": 9900, "Three hundred AND seven": 307,
                "ninety nine": 99, "  Seven   thousand, two hundred and Eighty-One ": 7281}
    assert translate(list(examples)) == [num2words(n, lang="fr") for n in examples.values()]
    _, params = resolve_params(get_recipe("translate-numbers"), {})
    task = TranslateNumbersTask(params)  # the recipe's own seeded split: these numbers were never trained on
    numbers = [task_number(english) for english, _ in task.test_pairs]
    typed = [num2words(n).replace("-", " ").replace(",", "").replace(" and ", " ").capitalize() for n in numbers]
    predicted = translate(typed)
    correct = sum(p == num2words(n, lang="fr") for p, n in zip(predicted, numbers, strict=True))
    assert correct / len(numbers) >= 0.95
