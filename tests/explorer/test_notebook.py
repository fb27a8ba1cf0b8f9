"""The notebook view: self-contained HTML (no scripts, no URLs) carrying the api's numbers."""

from __future__ import annotations

import re

import pytest

import attnlab
from attnlab.explorer import api
from attnlab.explorer.notebook import MAX_CELLS, show
from attnlab.presets import get as get_preset


def test_toy_view_shows_the_2_34_score_and_no_network():
    view = show("toy", "the cat sat on the mat", head=0, query=1)
    page = view._repr_html_()
    assert "<script" not in page and "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    raw = [float(v) for v in re.findall(r'data-raw-score="([-0-9.e]+)"', page)]
    assert raw[2] == pytest.approx(2.34, abs=1e-5)
    weights = [float(v) for v in re.findall(r'data-weight="([-0-9.e]+)"', page)]
    assert sum(weights) == pytest.approx(1.0, abs=1e-5)
    assert "Illustration" in page


def test_decoder_view_marks_masked_scores_and_matches_api():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = attnlab.build_model(get_preset("tiny-decoder", vocab_size=256, d_model=32, d_ff=64)).eval()
    view = show(model, "abcd", layer=1, head=2, query=1)
    page = view._repr_html_()
    assert page.count('data-raw-score="masked"') == 2  # keys 2 and 3 are in the future of query 1
    expected = api.attention(api.wrap(model), "abcd", 1, 2)
    weights = [float(v) for v in re.findall(r'data-weight="([-0-9.e]+)"', page)]
    assert weights == pytest.approx(expected["weights"][1], abs=1e-9)


def test_long_inputs_are_pooled_and_architecture_view_counts(tmp_path):
    view = show("toy", " ".join(["the cat sat"] * 40), head=1, query=0)  # 120 tokens > MAX_CELLS
    assert view._repr_html_().count("<rect") < (MAX_CELLS + 2) ** 2 + 2 * 120 + 10
    model = attnlab.build_model(get_preset("tiny-encoder", d_model=32, d_ff=64))
    model.save(tmp_path / "enc")
    arch = show(tmp_path / "enc", "hello", view="architecture")
    counts = [int(v) for v in re.findall(r'data-params="(\d+)"', arch._repr_html_())]
    head = arch.data["head"]["params"]
    assert sum(counts) + head == sum(p.numel() for p in model.parameters())
