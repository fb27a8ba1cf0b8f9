"""Every model_type transformers knows is either read by attnlab or refused in one line.

The walk builds only configs: each model_type's default config object from transformers' CONFIG_MAPPING, its
dict read by attnlab.interop.hf.config_from_hf (what attnlab.load does with config.json before any tensor). A
translation that crashes (a KeyError, a TypeError), a refusal over several lines, or a family that stopped
loading fails here. A mixture of experts and a multimodal model are told apart in the refusal by what their
config holds (experts, a vision or audio tower).
"""

from __future__ import annotations

import pytest

from attnlab.errors import CheckpointError, ConfigError
from attnlab.interop.families import BY_MODEL_TYPE
from attnlab.interop.hf import config_from_hf

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def walked():
    """{model_type: ModelConfig or the refusal's text} for every model_type whose config class builds with its
    defaults (a few need sub-configs passed in: nothing to walk there)."""
    from transformers import CONFIG_MAPPING

    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # default configs warn about their own token ids
    out = {}
    try:
        for model_type in CONFIG_MAPPING:
            try:
                hf = CONFIG_MAPPING[model_type]().to_dict()
            except Exception:
                continue
            try:
                out[model_type] = config_from_hf(hf)
            except (ConfigError, CheckpointError) as e:
                out[model_type] = str(e)
    finally:
        transformers.logging.set_verbosity(verbosity)
    return out


def test_each_model_type_is_read_or_refused_in_one_line(walked):
    assert len(walked) > 500  # the walk reached transformers' catalogue (831 types in 5.25)
    refusals = {t: r for t, r in walked.items() if isinstance(r, str)}
    assert all("\n" not in r and r for r in refusals.values())
    read = {t for t, r in walked.items() if not isinstance(r, str)}
    assert set(BY_MODEL_TYPE) <= read  # every family attnlab reads, from transformers' own defaults
    for model_type, refusal in refusals.items():  # another model_type: refused by it (a family's: by an option)
        assert model_type in BY_MODEL_TYPE or " is not supported" in refusal, refusal


@pytest.mark.parametrize("model_type, says", [
    ("mixtral", "(a mixture of experts: num_local_experts=8)"),
    ("qwen2_moe", "(a mixture of experts: num_experts=60)"),
    ("qwen3_moe", "(a mixture of experts: num_local_experts=128)"),
    ("gemma3", "(multimodal: vision_config, a tower beside the text model)"),
    ("qwen2_vl", "(multimodal: vision_config, a tower beside the text model)"),
    ("llava", "(multimodal: vision_config, a tower beside the text model)"),
])
def test_experts_and_towers_are_named(walked, model_type, says):
    assert says in walked[model_type] and "supported families: " in walked[model_type]
