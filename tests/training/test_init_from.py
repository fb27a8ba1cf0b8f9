"""init_from=NAME|PATH: fine-tuning starts from the loaded weights, with the loaded tokenizer, and freeze=k holds.

The "pretrained" models are tiny and saved into tmp_path: an attnlab decoder with a character tokenizer, the same
decoder kept quantized (int8), and a Hugging Face BertModel directory written by transformers itself (no LM head:
the masked-LM recipe adds a fresh one). Each run is a few steps on a few KB of seeded text.
"""

import json
import random

import pytest
import torch
from safetensors.torch import load_file

import attnlab
from attnlab import ModelConfig, build_model
from attnlab.data.tokenizers import char_tokenizer_from_chars
from attnlab.errors import ConfigError
from attnlab.storage import save_model
from attnlab.training.recipes import get_recipe
from attnlab.training.recipes.masked import selected_logits
from attnlab.training.run import run_train
from attnlab.training.settings import resolve_params

WORDS = ("the cat sat on a mat and the dog ran to the red house while birds sang in green trees near old "
         "stone walls").split()
QUICK = dict(steps=3, batch_size=4, seq_len=16, eval_every=0, eval_windows=8, report="none", plot=False, lr=1e-2,
             warmup=0, threads=1)


def quick(recipe: str) -> dict:
    """A run of a few steps on a few windows; the text recipes write no samples."""
    return {**QUICK, **({"sample_tokens": 0} if recipe.startswith("gpt") else {})}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """~6 KB of seeded sentences over a small vocabulary, one paragraph per line pair."""
    rng = random.Random(0)
    text = "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(12)) + "." for _ in range(100))
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def tiny_decoder(tmp_path_factory, corpus):
    """An attnlab decoder saved with its character tokenizer: the stand-in for a pretrained model."""
    tokenizer = char_tokenizer_from_chars(sorted(set(corpus.read_text())), ["[UNK]"])
    torch.manual_seed(7)
    model = build_model(ModelConfig(topology="decoder", vocab_size=tokenizer.vocab_size, d_model=32, n_heads=2,
                                    d_ff=64, n_layers=3, max_len=32, name="tiny-pretrained"))
    return save_model(model, tmp_path_factory.mktemp("pretrained") / "tiny", tokenizer=tokenizer)


def build_task(recipe, corpus, tmp_path, **given):
    """The recipe's task as `attnlab train` builds it, with `given` as the person's keys."""
    overrides = {"data": str(corpus), **quick(recipe), **given}
    _, params = resolve_params(get_recipe(recipe), overrides)
    return get_recipe(recipe).build({**params, "batch_size": 4, "out_dir": str(tmp_path / "build"),
                                     "given": frozenset(overrides)})


def test_the_loaded_weights_and_tokenizer_are_the_start(tiny_decoder, corpus, tmp_path):
    saved = load_file(tiny_decoder / "model.safetensors")
    task = build_task("gpt-char", corpus, tmp_path, init_from=str(tiny_decoder))
    state = task.model.state_dict()
    assert saved.keys() <= state.keys()
    for name, tensor in saved.items():
        assert torch.equal(state[name], tensor), name  # the loaded weights, not a fresh initialisation
    vocab = attnlab.load(tiny_decoder)[1]
    assert [task.tokenizer.id_to_token(i) for i in range(vocab.vocab_size)] == [vocab.id_to_token(i) for i in
                                                                                 range(vocab.vocab_size)]
    assert task.start.new == []  # the decoder's LM head continues
    lines = "\n".join(task.start.lines())
    assert f"init_from={tiny_decoder}" in lines and "none: the loaded LM head continues" in lines


def test_fine_tuning_moves_only_the_unfrozen_weights(tiny_decoder, corpus, tmp_path):
    out = tmp_path / "run"
    keys = {"data": str(corpus), **quick("gpt-char"), "init_from": str(tiny_decoder), "freeze": 2}
    result = run_train("gpt-char", out=str(out), quiet=True, overrides=keys)
    before = load_file(tiny_decoder / "model.safetensors")
    model, tokenizer = attnlab.load(out)  # the run folder loads back, with the tokenizer it was trained with
    after = model.state_dict()
    # the LM head's projection is the token embedding (tied), frozen with it
    frozen = [n for n in before if n.startswith(("tokens.", "positions.", "blocks.0.", "blocks.1.", "lm_head.proj."))]
    moving = [n for n in before if n not in frozen]
    assert frozen and moving
    for name in frozen:
        assert torch.equal(after[name], before[name]), f"{name} is frozen (freeze=2) but moved"
    for name in moving:
        assert not torch.equal(after[name], before[name]), f"{name} trains but did not move"
    assert result["start"]["freeze"] == 2
    assert result["start"]["trained_parameters"] == sum(before[n].numel() for n in moving)
    assert model.config.tie_embeddings
    # step 0 scored the loaded weights: the same number a task scoring the saved model gives
    task = build_task("gpt-char", corpus, tmp_path, init_from=str(tiny_decoder))
    loaded = attnlab.load(tiny_decoder)[0]
    with torch.no_grad():
        expected = task.evaluate(loaded)["val_loss"]
    assert result["start_eval"]["val_loss"] == pytest.approx(expected, rel=1e-5)
    ids = tokenizer.encode("the cat", add_special_tokens=False)
    generated = attnlab.generate(model, [ids], max_new_tokens=4, temperature=0.0)
    assert len(generated.sequences[0]) == len(ids) + 4
    assert_opens_in_the_explorer(out)


def assert_opens_in_the_explorer(run):
    """`attnlab explore RUN`: the run folder is a model of the explorer, and its attention view answers."""
    testclient = pytest.importorskip("fastapi.testclient")
    from attnlab.explorer.server.app import create_app
    from attnlab.explorer.server.registry import build_registry

    registry = build_registry([run], shipped=False, pretrained=False)
    with testclient.TestClient(create_app(registry), base_url="http://localhost") as client:
        answer = client.post("/api/attention", json={"model": "path", "text": "the cat sat"})
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["weights"]) == len("the cat sat")  # one row per character of the text


def test_a_resumed_fine_tuning_run_keeps_its_start(tiny_decoder, corpus, tmp_path):
    keys = {"data": str(corpus), **quick("gpt-char"), "init_from": str(tiny_decoder), "steps": 2}
    first = run_train("gpt-char", out=str(tmp_path / "run"), quiet=True, overrides=keys)
    more = run_train("gpt-char", out=str(tmp_path / "run"), quiet=True, resume=True, overrides={**keys, "steps": 3})
    assert more["step"] == 3 and more["start_eval"] == first["start_eval"]  # step 0 is not scored again
    records = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(r)["step"] for r in records] == [0, 1, 2, 3]


def test_a_kept_quantized_model_is_expanded_to_float(tiny_decoder, corpus, tmp_path):
    model, tokenizer = attnlab.load(tiny_decoder)
    attnlab.quantize(model.eval(), "int8")
    quantized = save_model(model, tmp_path / "int8", tokenizer=tokenizer)
    task = build_task("gpt-char", corpus, tmp_path, init_from=str(quantized))
    assert "expanded to float32" in task.start.expanded and "INT8" in task.start.expanded
    weight = task.model.blocks[0].attn.out.weight
    assert isinstance(weight, torch.nn.Parameter) and weight.dtype == torch.float32 and weight.requires_grad
    assert torch.equal(weight.detach(), model.blocks[0].attn.out.weight)  # the codes' values, dequantized


def test_an_encoder_gets_a_fresh_masked_lm_head(corpus, tmp_path):
    transformers = pytest.importorskip("transformers")
    words = sorted(set(corpus.read_text().replace(".", " . ").split()))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    folder = tmp_path / "bert"
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    hf = transformers.BertModel(config).eval()
    hf.save_pretrained(folder)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    task = build_task("bert-mlm", corpus, tmp_path, init_from=str(folder), freeze=1)
    assert torch.equal(task.model.tokens.weight, hf.embeddings.word_embeddings.weight)  # transformers' own tensor
    assert torch.equal(task.model.blocks[1].ffn.up.weight, hf.encoder.layer[1].intermediate.dense.weight)
    assert task.start.new and all(n.startswith("lm_head.") for n in task.start.new)
    lines = "\n".join(task.start.lines())
    assert "a fresh LM head" in lines and "the LM head's projection, tied to them" in lines
    counts = torch.bincount(task.train_ids, minlength=len(vocab)).double()  # the bias is the unigram model
    assert torch.allclose(task.model.lm_head.bias.double(), ((counts + 1) / (counts.sum() + len(vocab))).log())
    trains = {n for n, p in task.model.named_parameters() if p.requires_grad}
    assert set(task.start.new) <= trains and not any(n.startswith(("tokens.", "blocks.0.")) for n in trains)
    assert any(n.startswith("blocks.1.") for n in trains)
    # the head runs on the masked positions only: the same logits as the whole forward's there
    batch = task.train_batch(torch.Generator().manual_seed(0), 4)
    selected = batch["labels"] != -100
    task.model.eval()
    with torch.no_grad():
        whole = task.model(batch["ids"]).logits[selected]
        assert torch.allclose(selected_logits(task.model, batch["ids"], batch["labels"]), whole, atol=1e-5)
    loss, _ = task.loss(task.model, batch)
    assert torch.isfinite(loss)


@pytest.mark.parametrize(("recipe", "keys", "message"), [
    ("gpt-char", {"d_model": 64}, "d_model=64 conflicts with init_from="),
    ("gpt-bpe", {"vocab_size": 2048}, "vocab_size=2048 conflicts with init_from="),
    ("gpt-char", {"freeze": 4}, "freeze=4: allowed 0..3"),
    ("gpt-char", {"seq_len": 64}, "seq_len=64: init_from="),
    ("bert-mlm", {}, "is a decoder model; bert-mlm fine-tunes an encoder"),
])
def test_bad_keys_are_refused_in_one_line(tiny_decoder, corpus, tmp_path, recipe, keys, message):
    with pytest.raises(ConfigError, match=message) as caught:
        run_train(recipe, out=str(tmp_path / "run"), quiet=True,
                  overrides={"data": str(corpus), **quick(recipe), "init_from": str(tiny_decoder), **keys})
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def test_a_model_without_a_tokenizer_or_freeze_without_a_start_is_refused(tiny_decoder, corpus, tmp_path):
    bare = save_model(attnlab.load(tiny_decoder)[0], tmp_path / "bare")  # no tokenizer saved
    with pytest.raises(ConfigError, match="has no tokenizer: the data is encoded with the model's own"):
        run_train("gpt-char", out=str(tmp_path / "a"), quiet=True,
                  overrides={"data": str(corpus), **quick("gpt-char"), "init_from": str(bare)})
    with pytest.raises(ConfigError, match="freeze=1 keeps loaded weights as they are, and this run loads none"):
        run_train("gpt-char", out=str(tmp_path / "b"), quiet=True,
                  overrides={"data": str(corpus), **quick("gpt-char"), "freeze": 1})
