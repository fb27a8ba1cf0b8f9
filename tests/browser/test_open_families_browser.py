"""`attnlab explore DIR` on a Hugging Face directory of Qwen2, Gemma 2 and GPT-NeoX (tiny random weights from
transformers' own config classes, saved with save_pretrained; no download) in a real browser: every tab opens
without a JavaScript error, a console error or an error notice, and shows its main figure. The Architecture tab
lists what is particular to the family (the API's list, and the option that sets the family apart), and the
Generation tab takes two steps with the KV cache, its logits equal to a run without it.

One Chromium session for the file (tests/browser/conftest.py: the server thread, the route guard, `page`).
"""

from __future__ import annotations

import pytest
import torch
from browser_pages import artifact, open_view

pytestmark = pytest.mark.browser
transformers = pytest.importorskip("transformers")

VIEWPORT = {"width": 1400, "height": 1000}
SHAPE = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=64)
FAMILIES = {  # directory name -> (config class, model class, settings, a feature the Architecture tab must name)
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(num_key_value_heads=2), "biases on W_Q, W_K, W_V only"),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", dict(num_key_value_heads=2, head_dim=8, sliding_window=4),
               "sandwich norms"),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", {}, "parallel attention and feed-forward"),
}
# each tab's main figure: a selector that must match at least one element once the tab is ready
FIGURES = {
    "architecture": ["svg#diagram g.block", "#particulars li"],
    "attention": ["canvas#heatmap", "#weight-bars g[data-key]", "#thumbs canvas"],
    "selfsup": ["canvas#causal-mask", "#causal-loss"],
    "vision": [".notice.warn"],  # a decoder: the tab says it needs a vision transformer
    "generation": ["#step", "#gen-out"],
    "cost": ["svg#cost-plot", "svg#roofline", "#cost-table"],
    "experiments": ["svg#flow-svg", "svg#flow-resid"],
}
TEXT = "abc abd"
# error notices allowed per (family, tab), each a refusal by name: none since direct logit attribution reads
# sandwich-norm models too (Gemma's norms before and after each sub-layer; interventions/logit_attribution.py)
REFUSED: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="module")
def server(serve, tmp_path_factory):
    from attnlab.explorer.server.registry import build_registry

    root = tmp_path_factory.mktemp("open-families")
    for name, (config_class, model_class, settings, _) in FAMILIES.items():
        torch.manual_seed(0)
        config = getattr(transformers, config_class)(**SHAPE, **settings)
        getattr(transformers, model_class)(config).save_pretrained(root / name)
    registry = build_registry([root / name for name in FAMILIES], shipped=False, pretrained=False)
    ids = {e.source.name: e.id for e in registry.entries.values() if e.kind == "path"}
    with serve(registry) as url:
        yield {"url": url, "registry": registry, "ids": ids}


@pytest.fixture(scope="module")
def console(page):
    """Every console message of type error the page logs (a failed request, a view's caught exception)."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return errors


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("tab", list(FIGURES))
def test_every_tab_opens_on_the_family(page, console, server, family, tab):
    before = len(console)
    open_view(page, server["url"], model=server["ids"][family], tab=tab, text=TEXT)
    missing = [s for s in FIGURES[tab] if page.locator(f"#tab {s}").count() == 0]
    assert not missing, f"{family}, {tab}: no {missing}"
    errors = page.eval_on_selector_all("#tab .notice.error", "els => els.map(e => e.textContent)")
    refused = REFUSED.get((family, tab))
    assert [e for e in errors if not (refused and e.startswith(refused))] == [], f"{family}, {tab}: {errors}"
    assert len(errors) == (1 if refused else 0), errors
    # the refusal is the API's 400 answer, which Chromium logs as a failed resource
    expected = ["Failed to load resource: the server responded with a status of 400 (Bad Request)"] if refused else []
    assert console[before:] == expected, f"{family}, {tab}: console errors {console[before:]}"
    assert not page.errors, page.errors
    if tab == "vision":
        assert "needs a vision transformer" in page.text_content("#tab .notice.warn")
    page.screenshot(path=artifact(f"open-family-{family}-{tab}"), full_page=True)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_architecture_tab_says_what_is_particular_to_the_family(page, console, server, family):
    from attnlab.explorer import api

    model_id = server["ids"][family]
    open_view(page, server["url"], model=model_id, tab="architecture", text=TEXT)
    shown = page.eval_on_selector_all("#particulars li b", "els => els.map(e => e.textContent)")
    expected = [f["name"] for f in api.architecture(server["registry"].get(model_id), text=TEXT)["features"]]
    assert shown == expected
    assert FAMILIES[family][3] in shown


@pytest.mark.parametrize("family", list(FAMILIES))
def test_generation_steps_with_the_cache(page, console, server, family):
    """Two steps, each checked against the same sequence run without the cache ("same logits both ways")."""
    before = len(console)
    open_view(page, server["url"], model=server["ids"][family], tab="generation", text=TEXT)
    page.check("#compare")
    for steps in (1, 2):
        page.click("#step")
        page.wait_for_function(f"document.querySelectorAll('#sequence .chip').length >= {steps} && "
                               "document.querySelector('[data-matches]') !== null", timeout=60_000)
    assert page.get_attribute("[data-matches]", "data-matches") == "true"
    assert int(page.get_attribute("#cache-entries", "data-cache-entries")) > 0
    assert page.eval_on_selector_all("#tab .notice.error", "els => els.map(e => e.textContent)") == []
    assert console[before:] == [], f"{family}: console errors {console[before:]}"
