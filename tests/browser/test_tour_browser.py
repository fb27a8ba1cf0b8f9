"""The guided tour as one story, driven in Debian's Chromium at 1440 and 390 px, by mouse and by keyboard: every
stop of the main story stays on one model and one sentence, each stop outlines its subject on screen, the last stop
names the head /api/tour found (its numbers checked against a plain forward in tests/explorer/test_tour_story.py),
and the two short stories (an encoder, vision) open from it. One browser session for the file; axe at both sizes.
"""

from __future__ import annotations

import re

import pytest
from browser_pages import DESKTOP, PHONE, at_size, axe_violations

pytestmark = pytest.mark.browser

VIEWPORT = DESKTOP
STORY_MODEL, STORY_TEXT = "gpt-char", "The king said to his "  # the story here: SmolLM2 is not served in this file
MAIN_STOPS = 7


@pytest.fixture(scope="module")
def server(serve):
    from attnlab.explorer.server.registry import build_registry

    registry = build_registry(pretrained=False)  # the shipped checkpoints: gpt-char, bert-mlm, vit-mnist, ...
    with serve(registry) as url:
        yield {"url": url, "registry": registry}


def _start(page, server) -> None:
    page.goto(server["url"] + "?tour=1")
    page.wait_for_selector("#tour")


def _at(page, step: int) -> None:
    page.wait_for_function(f"document.querySelector('#tour') && document.querySelector('#tour').dataset.step == "
                           f"'{step}'")
    page.wait_for_selector("#tab .tour-target", timeout=120_000)


def _outlined_on_screen(page) -> dict:
    box = page.eval_on_selector("#tab .tour-target", "e => { const r = e.getBoundingClientRect(); "
                                "return {top: r.top, bottom: r.bottom, id: e.id}; }")
    height = page.evaluate("window.innerHeight")
    assert box["top"] < height and box["bottom"] > 0, f"the outlined {box['id']} is off screen"
    return box


def test_one_model_and_one_sentence_from_the_tokens_to_the_experiment(page, server):
    _start(page, server)
    story = page.evaluate(f"fetch('/api/tour/{STORY_MODEL}?text=' + encodeURIComponent({STORY_TEXT!r}))"
                          ".then(r => r.json())")
    titles = []
    for step in range(MAIN_STOPS):
        if step:
            page.click("#tour-next")
        _at(page, step)
        params = page.evaluate("Object.fromEntries(new URLSearchParams(location.search))")
        assert params["model"] == STORY_MODEL, f"stop {step + 1} left the story's model: {params}"
        assert params.get("text") == STORY_TEXT, f"stop {step + 1} left the story's sentence: {params}"
        assert page.text_content(".tour-count") == f"Tour · {step + 1} of {MAIN_STOPS}"
        _outlined_on_screen(page)
        titles.append(page.text_content("#tour-title"))
    assert titles[0] == "Your sentence becomes tokens" and "head" in titles[-1].lower()
    text = page.text_content("#tour-text")
    head = story["head"]
    if head is None:
        assert "No head checked here lowers" in text
    else:  # the head and both probabilities the story computed, as the page shows them (1-based, percent)
        assert f"layer {head['layer'] + 1}, head {head['head'] + 1}" in text
        shown = [float(x) for x in re.findall(r"(\d+\.\d)%", text)]
        assert shown == pytest.approx([100 * head["prob_before"], 100 * head["prob_after"]], abs=0.051)
        params = page.evaluate("Object.fromEntries(new URLSearchParams(location.search))")
        assert params["off"] == f"{head['layer']}.{head['head']}"
        on = page.eval_on_selector_all("#abl-heads .hchip[aria-pressed='true'], #abl-heads .hchip.on",
                                       "els => els.map(e => [Number(e.dataset.layer), Number(e.dataset.head)])")
        assert [head["layer"], head["head"]] in on, "the experiment opens with the story's head switched off"
    assert axe_violations(page, 1440, "#tour") == []


def _short_story(page, server, button: str) -> str:
    """Walk the main story to its last stop, open a short story there; -> the model its first stop shows."""
    _start(page, server)
    for _ in range(1, MAIN_STOPS):
        page.click("#tour-next")
    _at(page, MAIN_STOPS - 1)
    page.click(button)
    _at(page, 0)
    return page.evaluate("new URLSearchParams(location.search).get('model')")


def test_the_encoder_and_vision_stories_open_from_the_last_stop(page, server):
    assert _short_story(page, server, "#tour-encoder") in ("smollm2-mlm", "minilm-mlm", "bert-mlm")
    assert page.text_content(".tour-count") == "Tour · 1 of 2"
    page.click("#tour-next")
    _at(page, 1)
    assert page.text_content("#tour-next") == "Finish"
    page.click("#tour-next")
    assert page.locator("#tour").count() == 0
    assert _short_story(page, server, "#tour-vision") == "vit-mnist"
    page.keyboard.press("Escape")
    assert page.locator("#tour").count() == 0


def test_by_keyboard_on_a_phone(page, server):
    with at_size(page, PHONE):
        _start(page, server)
        _at(page, 0)
        assert page.evaluate("document.activeElement.id") == "tour-next"
        for step in range(1, 4):
            page.keyboard.press("Enter")  # Next keeps the focus: Enter walks the story
            _at(page, step)
            box = _outlined_on_screen(page)
            card_top = page.eval_on_selector("#tour", "e => e.getBoundingClientRect().top")
            assert box["top"] < card_top, "the outlined subject starts above the tour's card"
            assert page.evaluate("document.activeElement.id") == "tour-next"
        assert axe_violations(page, 390, "#tour") == []
        page.keyboard.press("Escape")
        assert page.locator("#tour").count() == 0
