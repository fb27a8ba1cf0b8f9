"""The Generation tab's sampling sliders, the Vision tab's step-by-step walk and four small fixes, in a real browser
(one Chromium session for the file) on the tiny random decoder (characters), encoder (BERT's specials) and ViT.

Sampling: moving temperature, top-k or top-p (by keyboard too) redraws the step's distribution with no request,
and every drawn probability equals filtered_probs on the model's own logits from an independent full forward
(tolerance 1e-5: float32 probabilities, and the cached step's logits differ from a full forward by ~1e-6).
The walk: keyboard-steppable through its seven steps, each drawing the walk's numbers. axe finds no violation of
any impact in either at 1440 and 390 px. Screenshots go to test-artifacts/explorer/sampling-*.png, walk-*.png.
"""

from __future__ import annotations

import re

import pytest
import torch
from browser_pages import DESKTOP, PHONE, artifact, at_size, axe_violations, floats, open_view

pytestmark = pytest.mark.browser

VIEWPORT = DESKTOP
PROMPT = "abc"
DECODER, ENCODER, VIT = "path1", "path2", "path3"


@pytest.fixture(scope="module")
def server(serve, tiny_paths):
    from attnlab.explorer.server.registry import build_registry

    registry = build_registry([tiny_paths[k] for k in ("decoder", "encoder", "vit")], shipped=False,
                              pretrained=False)
    with serve(registry) as url:
        yield {"url": url, "registry": registry}


def _reference(server, temperature, top_k, top_p):
    from attnlab.explorer import api

    model = server["registry"].get(DECODER).model
    with torch.no_grad():  # a full forward of the prompt plus the sampled token: no cache, no page
        logits = model(torch.tensor([[ord(c) for c in PROMPT]])).logits[0, -1]  # the decoder reads characters
    return api.filtered_probs(logits.float(), temperature, top_k, top_p)


def test_sliders_redraw_at_once_without_a_request_and_equal_filtered_probs(page, server):
    open_view(page, server["url"], model=DECODER, tab="generation", text=PROMPT)
    page.fill("#top-k", "20")
    page.click("#step")
    page.wait_for_selector("#sampling-table")
    generated = [int(page.get_attribute("#sampled", "data-token-id"))]
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if "/api/" in r.url else None)
    settings = [("0.5", "0", "0.8"), ("1.5", "5", "1"), ("2", "0", "0.3"), ("0.05", "0", "0.95"), ("0", "0", "1"),
                ("1", "50", "0.5")]
    for t, k, p in settings:
        page.fill("#temperature", t)
        page.fill("#top-k", k)
        page.fill("#top-p", p)
        ids = [int(v) for v in floats(page, "#sampling-table tbody tr[data-token-id]", "data-token-id")]
        after = floats(page, "#sampling-table tbody tr[data-token-id]", "data-after")
        before = floats(page, "#sampling-table tbody tr[data-token-id]", "data-before")
        ref = _reference(server, float(t), int(k), float(p))
        assert after == pytest.approx([float(ref[i]) for i in ids], abs=1e-5), (t, k, p)
        chosen = int(page.get_attribute("#sample-stage", "data-token-id"))
        assert chosen == generated[0]
        assert float(page.get_attribute("#sample-stage", "data-after")) == pytest.approx(float(ref[chosen]), abs=1e-5)
        if float(t) > 0:  # before the cut: the plain softmax of z / T over the whole vocabulary
            soft = _reference(server, float(t), 0, 1.0)
            assert before == pytest.approx([float(soft[i]) for i in ids], abs=1e-5)
    # by keyboard: the temperature slider's arrow keys move it a step and redraw
    page.focus("#temperature-range")
    page.keyboard.press("ArrowLeft")
    assert page.input_value("#temperature") == "0.95"
    ref = _reference(server, 0.95, 50, 0.5)
    ids = [int(v) for v in floats(page, "#sampling-table tbody tr[data-token-id]", "data-token-id")]
    assert floats(page, "#sampling-table tbody tr[data-token-id]", "data-after") == pytest.approx(
        [float(ref[i]) for i in ids], abs=1e-5)
    assert requests == [], f"moving the sliders sent requests: {requests}"
    page.screenshot(path=artifact("sampling-1440"), full_page=True)
    assert axe_violations(page, 1440, "#sampling", ".sampling-controls") == []
    with at_size(page, PHONE):
        page.screenshot(path=artifact("sampling-390"), full_page=True)
        assert axe_violations(page, 390, "#sampling", ".sampling-controls") == []


def test_vision_walk_steps_by_keyboard_with_the_models_numbers(page, server):
    from attnlab.explorer import api
    from attnlab.explorer.views.vision import images

    open_view(page, server["url"], model=VIT, tab="vision", token=7)
    page.wait_for_selector("#vit-walk")
    walk = api.vision_walk(server["registry"].get(VIT), images.to_pixels(server["registry"].get(VIT).model.config,
                                                                         {"mnist": 0})[0], 7)
    page.click("#vw-steps button[data-step='0']")
    assert page.get_attribute("#vw-step-title", "data-step") == "0"
    page.focus("#vw-next")
    seen = []
    for _ in range(6):
        page.keyboard.press("Enter")
        seen.append(page.get_attribute("#vw-step-title", "data-step"))
        if seen[-1] == "2":
            values = page.eval_on_selector("#vw-projected", "e => JSON.parse(e.dataset.values)")
            assert values == pytest.approx(walk["projected"], abs=1e-9)
    assert seen == ["1", "2", "3", "4", "5", "6"]
    assert page.is_disabled("#vw-next")
    page.keyboard.press("ArrowLeft")  # the arrow keys step too
    assert page.get_attribute("#vw-step-title", "data-step") == "5"
    page.keyboard.press("ArrowRight")
    probs = floats(page, "#vw-classes tbody tr", "data-prob")
    assert probs == pytest.approx(walk["probs"], abs=1e-9) and sum(probs) == pytest.approx(1, abs=1e-4)
    for k in (0, 3):
        page.click(f"#vw-steps button[data-step='{k}']")
        page.locator("#vit-walk").screenshot(path=artifact(f"walk-{k}-1440"))
        assert axe_violations(page, 1440, "#vit-walk") == []
    with at_size(page, PHONE):
        page.locator("#vit-walk").screenshot(path=artifact("walk-3-390"))
        assert axe_violations(page, 390, "#vit-walk") == []


def test_dla_readout_quotes_its_tokens(page, server):
    open_view(page, server["url"], wait_ms=180_000, model=DECODER, tab="experiments")
    page.wait_for_selector("#dla-summary", timeout=60_000)
    page.click("#dla-grid button.cell >> nth=0")
    text = page.text_content("#dla-read")
    assert re.search(r"logit\(“[^”]+”\) − logit\(“[^”]+”\)", text), text


def test_lens_names_a_no_break_space(page, server):
    open_view(page, server["url"], wait_ms=180_000, model=DECODER, tab="experiments")
    page.wait_for_selector("#x-lens[data-ready='1']", timeout=60_000)
    page.fill("#lens-text", "a\u00a0b")
    page.click("#lens-run")
    page.wait_for_selector("#x-lens[data-ready='1'] #lens-grid", timeout=60_000)
    page.click("#lens-chips button >> nth=1")  # the no-break space's position
    page.wait_for_selector("#x-lens[data-ready='1'] #lens-grid", timeout=60_000)
    lens = page.text_content("#x-lens")
    assert "<U+00A0>" not in lens and "no-break space" in lens


def test_attention_note_states_the_decimals_shown(page, server):
    open_view(page, server["url"], model=DECODER, tab="attention", text="abcd")
    page.wait_for_selector("#row-sum")
    note = page.text_content("#row-sum")
    stated = int(re.search(r"to (\d) decimals", note).group(1))
    shown = page.eval_on_selector_all("#weight-bars text.value", "els => els.map(e => e.textContent)")
    places = [len(s.split(".")[1]) if "." in s and "e" not in s else 0 for s in shown]
    assert max(places) == stated, (note, shown)  # the bars show what the note says they show


def test_hide_specials_only_where_the_tokenizer_added_some(page, server):
    open_view(page, server["url"], model=DECODER, tab="attention", text="abcd")
    page.wait_for_selector("#row-sum")
    assert page.query_selector("#hide-special") is None  # characters: no [CLS]/[SEP] to hide
    open_view(page, server["url"], model=ENCODER, tab="attention", text="the cat sat")
    page.wait_for_selector("#row-sum")
    assert page.query_selector("#hide-special") is not None  # BERT's tokenizer adds [CLS] and [SEP]
