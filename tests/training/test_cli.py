"""`attnlab train`: key layering (recipe defaults < config file < command line) and clear errors."""

import pytest

from attnlab.errors import ConfigError, InputError
from attnlab.training.recipes import RECIPES, get_recipe
from attnlab.training.run import run_train
from attnlab.training.settings import parse_overrides, read_config_file, resolve_params


def test_command_line_overrides_config_file_which_overrides_defaults(tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text('steps = 50\nlr = 0.01\n[model]\nd_model = 48\nposition = "rope"\n')
    recipe = get_recipe("gpt-char")
    settings, params = resolve_params(recipe, read_config_file(cfg), parse_overrides(["lr=2e-4", "bf16=true"]))
    assert settings.steps == 50  # from the file
    assert settings.lr == 2e-4  # the command line wins over the file
    assert settings.bf16 is True
    assert params["d_model"] == 48 and params["position"] == "rope"  # tables are flattened
    assert settings.batch_size == recipe.train["batch_size"]  # the recipe's own default
    assert params["n_layers"] == recipe.params["n_layers"]


def test_unknown_key_lists_the_valid_keys():
    with pytest.raises(ConfigError) as err:
        resolve_params(get_recipe("vit-mnist"), {"stepz": "3"})
    message = str(err.value)
    assert "stepz" in message and "valid keys" in message
    for key in ("steps", "lr", "patch_size", "max_shift"):
        assert key in message


def test_bad_values_and_unknown_recipe_are_refused():
    with pytest.raises(ConfigError, match="steps='many'"):
        resolve_params(get_recipe("gpt-char"), {"steps": "many"})
    with pytest.raises(ConfigError, match="expected true or false"):
        resolve_params(get_recipe("gpt-char"), {"plot": "maybe"})
    with pytest.raises(ConfigError, match="gpt-char"):
        get_recipe("gpt-wrong")
    with pytest.raises(ConfigError, match="valid keys"):
        run_train("vit-mnist", out="/nonexistent/x", overrides={"nonsense": "1"})
    with pytest.raises(ConfigError, match="key=value"):
        parse_overrides(["steps"])


def test_bad_data_files_are_refused_by_name(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        run_train("gpt-char", out=str(tmp_path / "a"), overrides={"data": str(tmp_path / "missing.txt")})
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    with pytest.raises(InputError, match="empty"):
        run_train("gpt-char", out=str(tmp_path / "b"), overrides={"data": str(empty)})
    small = tmp_path / "small.txt"
    small.write_text("just a few characters, not one batch of 64-character windows")
    with pytest.raises(InputError, match="too small"):
        run_train("gpt-char", out=str(tmp_path / "c"), overrides={"data": str(small)})
    assert not (tmp_path / "a").exists()  # nothing was created for a refused run


def test_every_documented_recipe_exists():
    assert {"gpt-char", "gpt-bpe", "bert-mlm", "translate-numbers", "vit-mnist", "clip-mnist"} <= set(RECIPES)
