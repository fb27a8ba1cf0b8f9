"""The masked-LM view opens with a masked example already predicted (Chromium, 1440 and 390 px, keyboard, axe):
the sentence's last whole word is [MASK] and the model's top-5 for it are on the page before any click, equal to
what the view's own function answers for that one mask."""

from __future__ import annotations

import pytest
from browser_pages import DESKTOP, PHONE, at_size, axe_violations, open_view

pytestmark = pytest.mark.browser

VIEWPORT = DESKTOP
TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module")
def server(serve):
    from attnlab.explorer.server.registry import build_registry

    registry = build_registry(pretrained=False)  # the shipped masked-LM model bert-mlm
    with serve(registry) as url:
        yield {"url": url, "registry": registry}


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_one_word_is_masked_and_predicted_before_any_click(page, server, viewport):
    from attnlab.explorer import api

    with at_size(page, viewport):
        open_view(page, server["url"], model="bert-mlm", tab="selfsup", text=TEXT)
        page.wait_for_selector("#mlm-loss")  # no click: the first look has its prediction
        description = next(m["description"] for m in server["registry"].list() if m["id"] == "bert-mlm")
        assert description in page.text_content("#mlm-model"), "the page says what the model was trained on"
        masked = page.eval_on_selector_all("#mlm-chips .chip[data-action='mask']", "els => els.map(e => "
                                           "Number(e.dataset.index))")
        lm = server["registry"].get("bert-mlm")
        tokens = api.mlm_draw(lm, TEXT, seed=0)["tokens"]
        assert masked == [tokens.index("mat")], "the last whole word is the one masked"
        expected = api.mlm_predict(lm, TEXT, [{"position": masked[0], "action": "mask"}])
        assert float(page.get_attribute("#mlm-loss", "data-loss")) == pytest.approx(expected["loss"], abs=1e-3)
        shown = page.eval_on_selector_all("#mlm-out .pred", "els => els.map(e => e.dataset.token)")
        assert shown == [p["token"] for p in expected["rows"][0]["top5"]]
        page.focus(f"#mlm-chips .chip[data-index='{masked[0]}']")
        page.keyboard.press(" ")  # unmask it by keyboard: the page asks for a selection again
        page.wait_for_function("!document.querySelector('#mlm-loss')")
        page.keyboard.press(" ")
        page.wait_for_selector("#mlm-loss")
        page.wait_for_timeout(300)  # the page makes a table that scrolls a keyboard stop once it is drawn
        assert axe_violations(page, viewport["width"], "#tab") == []
