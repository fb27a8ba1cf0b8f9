"""The notebook's Experiments views: show(model, text, view="ablate" | "logit-lens" | "attention-ablation") answers
the explorer's own data (checked here against a copy with a head's W_O slice zeroed and the model's own logits)
and a static page that shows those numbers with no script and no URL."""

from __future__ import annotations

import copy
import html
import re

import pytest
import torch

import attnlab
from attnlab.errors import InputError
from attnlab.explorer.notebook import EXPERIMENT_VIEWS, show
from attnlab.presets import get as get_preset


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(3)
    m = attnlab.build_model(get_preset("tiny-decoder", vocab_size=256, d_model=32, d_ff=64)).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return m


def _logp(m, text):
    with torch.no_grad():
        return m(torch.tensor([[ord(c) for c in text]])).logits[0, -1].log_softmax(-1)


def test_ablate_view_equals_a_copy_with_the_head_zeroed(model):
    view = show(model, "the cat", view="ablate", layer=1, head=2)
    twin = copy.deepcopy(model)
    d = model.config.head_dim
    with torch.no_grad():
        twin.blocks[1].attn.out.weight[:, 2 * d:3 * d] = 0
    before, after = _logp(model, "the cat"), _logp(twin, "the cat")
    t = int(before.argmax())
    assert view.data["heads"] == [[1, 2]] and view.data["target"]["id"] == t
    assert view.data["target"]["prob_after"] == pytest.approx(float(after[t].exp()), abs=1e-6)
    assert [r["id"] for r in view.data["after"]] == after.topk(5).indices.tolist()
    page = view.page
    assert "<script" not in page and not re.findall(r"https?://", page)
    assert "layer 2 head 3" in page  # shown 1-based, as the explorer does
    p0, p1 = float(before[t].exp()), float(after[t].exp())
    percent = [f"{100 * p:.1f}%" if p >= 0.1 else f"{100 * p:.2f}%" for p in (p0, p1)]
    assert f"{percent[0]} → {percent[1]}" in page


def test_logit_lens_and_attention_views(model):
    lens = show(model, "the cat", view="logit-lens")
    assert len(lens.data["rows"]) == model.config.n_layers + 1
    assert [c["id"] for c in lens.data["rows"][-1]["top"]] == _logp(model, "the cat").topk(5).indices.tolist()
    for c in lens.data["rows"][-1]["top"]:
        shown = {" ": "␣ (space)", "\n": "↵ (new line)"}.get(c["token"], c["token"])
        assert html.escape(shown) in lens.page
    aa = show(model, "the cat", view="attention-ablation", layer=0, head=1, query=4)
    assert (aa.data["layer"], aa.data["head"], aa.data["position"]) == (0, 1, 4)
    assert sum(r["weight"] for r in aa.data["rows"]) == pytest.approx(1.0, abs=1e-5)
    assert [r["effect"] is None for r in aa.data["rows"]] == [False] * 5 + [True] * 2  # position 4 sees 0..4


def test_unknown_views_name_the_allowed_ones(model):
    with pytest.raises(InputError, match="'ablate', 'logit-lens', 'attention-ablation'"):
        show(model, "the cat", view="patch-everything")
    assert EXPERIMENT_VIEWS == ("ablate", "logit-lens", "attention-ablation")
