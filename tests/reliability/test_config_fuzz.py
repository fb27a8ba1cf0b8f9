"""Property tests for ModelConfig and build_model: any field value is either refused by name or builds a model
whose forward pass is finite.

Values mix valid ones, wrong types, NaN/inf, negatives and absurd sizes (10**12, 2**62). Absurd sizes must be
refused by build_model before anything is allocated, so the test never needs more than a few MB.
"""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
import torch
from _cases import cases, tally
from hypothesis import given
from hypothesis import strategies as st

from attnlab import ModelConfig, build_model
from attnlab.config import ACTIVATIONS, HEADS, NORM_PLACEMENTS, NORMS, POSITIONS, SINUSOIDAL_LAYOUTS, TOPOLOGIES
from attnlab.errors import AttnlabError, ConfigError

pytestmark = pytest.mark.timeout(120)

FIELDS = [f.name for f in dataclasses.fields(ModelConfig) if f.name not in ("name", "extra")]
CHOICES = {"topology": TOPOLOGIES, "position": POSITIONS, "sinusoidal_layout": SINUSOIDAL_LAYOUTS,
           "activation": ACTIVATIONS, "norm": NORMS, "norm_placement": NORM_PLACEMENTS, "head": HEADS}

TEXT_BASE = dict(vocab_size=50, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16)
VIT_BASE = dict(topology="vit", head="classifier", n_classes=3, vocab_size=1, image_size=8, patch_size=4,
                n_channels=1, d_model=16, n_heads=2, d_ff=32, n_layers=1)

ABSURD = (10**12, 2**62)
numbers = st.one_of(
    st.integers(-2, 40),
    st.sampled_from(ABSURD + (-(10**12),)),
    st.sampled_from([0.0, 0.1, 0.5, 0.99, 1.0, 1.5, 2.0, 1e-6, -0.5, math.nan, math.inf, -math.inf, 1e300]),
)
junk = st.one_of(st.none(), st.booleans(), st.text(max_size=6), st.lists(st.integers(0, 3), max_size=2),
                 st.dictionaries(st.text(max_size=3), st.integers(0, 3), max_size=1))


def value_for(field: str):
    if field in CHOICES:
        return st.one_of(st.sampled_from(CHOICES[field]), st.text(max_size=8), numbers, junk)
    return st.one_of(numbers, numbers, junk)


@st.composite
def mutated_configs(draw):
    base = dict(draw(st.sampled_from([TEXT_BASE, TEXT_BASE, VIT_BASE])))
    if base.get("topology") != "vit":
        base["topology"] = draw(st.sampled_from(("encoder", "decoder", "encoder-decoder")))
    keys = draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3, unique=True))
    changes = {k: draw(value_for(k)) for k in keys}
    return base, changes


def inputs_for(config: ModelConfig) -> tuple[tuple, dict]:
    """A small valid batch for `config`'s topology."""
    gen = torch.Generator().manual_seed(0)
    if config.topology == "vit":
        s = config.image_size
        return (torch.randn(2, config.n_channels, s, s, generator=gen),), {}
    seq = min(5, config.seq_limit or 5, config.max_len)
    ids = torch.randint(0, config.vocab_size, (2, seq), generator=gen)
    if config.topology == "encoder-decoder":
        return (ids,), {"decoder_input_ids": ids[:, :3]}
    return (ids,), {}


def check_refusal(exc: Exception, keys) -> None:
    message = str(exc)
    assert isinstance(exc, AttnlabError) and message
    # names the field it refuses (a mutated one, or the field it conflicts with) or the size it cannot fit
    assert any(k in message for k in keys) or re.search(r"ModelConfig\.\w+=", message) or "parameters" in message, \
        message


def check_forward(config: ModelConfig) -> None:
    try:
        model = build_model(config).eval()
    except ConfigError as exc:  # too large for memory: refused with the size
        assert "parameters" in str(exc) and "GiB" in str(exc)
        return
    args, kwargs = inputs_for(config)
    with torch.no_grad():
        out = model(*args, **kwargs)
    tensor = out.logits if out.logits is not None else out.hidden
    assert tensor.shape[0] == 2
    assert torch.isfinite(tensor).all(), f"non-finite output for {config}"


@cases(250)
@given(mutated_configs())
def test_any_field_value_is_refused_by_name_or_builds_a_finite_model(case):
    base, changes = case
    try:
        config = ModelConfig.from_dict({**base, **changes})
    except ConfigError as exc:
        check_refusal(exc, changes)
        tally("ModelConfig.from_dict (JSON values)", "refused")
        return
    check_forward(config)
    tally("ModelConfig.from_dict (JSON values)", "ok")


@cases(200)
@given(mutated_configs())
def test_python_constructor_is_as_strict(case):
    """ModelConfig(**kwargs) from Python: same promise without the JSON type check in front."""
    base, changes = case
    try:
        config = ModelConfig(**{**base, **changes})
    except ConfigError as exc:
        check_refusal(exc, changes)
        tally("ModelConfig(**kwargs) + build_model", "refused")
        return
    for key, value in changes.items():  # an accepted value must mean what it says
        if isinstance(value, (str, list, dict)) and key not in CHOICES:
            pytest.fail(f"ModelConfig accepted {key}={value!r}")
    check_forward(config)
    tally("ModelConfig(**kwargs) + build_model", "ok")


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 10**13), st.floats(allow_nan=True), st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)


@cases(150)
@given(st.one_of(json_values, st.dictionaries(st.sampled_from(FIELDS + ["d_modle", "__class__", ""]), json_values,
                                              max_size=4)))
def test_arbitrary_json_documents(data):
    try:
        config = ModelConfig.from_dict(data)
    except ConfigError as exc:
        assert str(exc)
        tally("ModelConfig.from_dict (any JSON)", "refused")
        return
    assert isinstance(config, ModelConfig)
    tally("ModelConfig.from_dict (any JSON)", "ok")


@pytest.mark.parametrize("field, value", [
    ("d_model", 10**9), ("n_layers", 10**9), ("vocab_size", 10**12), ("d_ff", 10**12), ("max_len", 10**12),
    ("n_heads", 10**12), ("t5_num_buckets", 10**12), ("type_vocab_size", 10**12), ("n_decoder_layers", 10**9),
])
def test_absurd_sizes_refused_without_constructing(field, value, monkeypatch):
    """Refused from the closed-form bound: no module constructor runs, not even on the meta device."""
    extra = {"d_head": 4} if field == "n_heads" else {}
    if field == "t5_num_buckets":
        extra["position"] = "t5"
    if field == "n_decoder_layers":
        extra["topology"] = "encoder-decoder"
    if field == "max_len":
        extra["position"] = "sinusoidal"  # a buffer, not a parameter: counted all the same
    config = ModelConfig(**{**TEXT_BASE, **extra, field: value})
    import attnlab.layers.block as block_module

    def boom(*args, **kwargs):
        raise AssertionError("a Block was constructed for an absurd config")

    monkeypatch.setattr(block_module.Block, "__init__", boom)
    with pytest.raises(ConfigError, match="GiB"):
        build_model(config)
