"""Steering and "Show the code" in a real browser (one Chromium session, gpt-char as shipped): the slider fires one
generation once it rests and says so at once, a newer request aborts the running one, the plain and steered
columns agree at alpha 0 and differ at the default; "Show the code" opens by keyboard, holds the request's own
inputs, and its Copy button puts that code on the clipboard; axe finds nothing in these views at 1440 and 390.
"""

from __future__ import annotations

import pytest
from browser_pages import new_axe

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1440, "height": 1000}  # the page fixture's size (conftest.py); the last test narrows it
STEER = "/api/experiments/steer"


@pytest.fixture(scope="module")
def server(shipped_server):
    return shipped_server


@pytest.fixture(scope="module")
def opened(page, server):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sent, dropped = [], []
    page.on("request", lambda r: sent.append(r.url) if r.url.endswith(STEER) else None)
    page.on("requestfailed", lambda r: dropped.append(r.url) if r.url.endswith(STEER) else None)
    page.goto(f"{server['url']}?model=gpt-char&tab=experiments")
    page.wait_for_selector("#x-steer[data-ready='1']", timeout=120_000)
    return {"sent": sent, "dropped": dropped}


def _ready(page):
    page.wait_for_selector("#x-steer[data-ready='1']", timeout=60_000)


def _steer(page, prompt: str, alpha: int) -> None:
    """The view in a known state whatever ran before it (the tests may run in any order): a prompt, a strength,
    and the generation for them finished."""
    page.fill("#steer-prompt", prompt)
    page.fill("#steer-alpha", str(alpha))
    page.click("#steer-run")
    _ready(page)
    assert page.inner_text("#steer-alpha-value") == f"α = {alpha}"


def _continuation(page, column: str) -> str:
    return "".join(page.eval_on_selector_all(f"#{column} .steer-text .tok", "els => els.map(e => e.textContent)"))


def test_default_strength_changes_the_text_and_alpha_zero_does_not(page, opened):
    _steer(page, "The function ", 1)  # gpt-char's defaults
    assert _continuation(page, "steer-before") != _continuation(page, "steer-after")
    assert page.locator("#steer-after .tok.new").count() > 0  # the differing tokens are marked
    assert "after layer 3" in page.inner_text("#steer-summary")  # the view says what the direction is
    before = len(opened["sent"])
    page.focus("#steer-alpha")
    page.keyboard.press("ArrowLeft")
    assert "generating when the slider rests" in page.inner_text("#steer-status")  # said at once, no request yet
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
    _ready(page)
    assert page.inner_text("#steer-alpha-value") == "α = 0"
    assert len(opened["sent"]) == before + 1  # four key presses, one generation
    assert _continuation(page, "steer-before") == _continuation(page, "steer-after")
    assert page.locator("#steer-after .tok.new").count() == 0


def test_a_newer_request_aborts_the_running_one(page, opened):
    """The first request is held unanswered (a route that never replies), so it is still running, however fast
    the machine, when the second click comes: the page must abort it."""
    dropped = len(opened["dropped"])
    held = []

    def hold_the_first(route):
        if held:
            route.continue_()
        else:
            held.append(route)

    page.route(f"**{STEER}", hold_the_first)
    try:
        page.fill("#steer-prompt", "The value ")
        page.click("#steer-run")
        for _ in range(100):
            if held:
                break
            page.wait_for_timeout(50)
        assert held, "the first request never left the page"
        page.click("#steer-run")
        _ready(page)
        page.wait_for_timeout(200)
    finally:
        page.unroute(f"**{STEER}")
    assert len(opened["dropped"]) == dropped + 1
    assert page.inner_text("#steer-before .prompt-part") == "The value "


def test_show_the_code_opens_by_keyboard_and_copies(page, opened):
    page.set_viewport_size(VIEWPORT)
    page.evaluate("document.querySelectorAll('details.show-code').forEach(d => { d.open = false; })")
    _steer(page, "The value ", 0)
    summary = page.locator("#x-steer-code > summary")
    summary.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#x-steer-code[open][data-ready='1']", timeout=30_000)
    code = page.inner_text("#x-steer-code pre.code")
    assert "attnlab.steer(model, name, direction, alpha=0.0)" in code and "encode('The value ')" in code
    assert "last_state('list ') - last_state('string ')" in code
    page.keyboard.press("Tab")  # from the summary to the Copy button
    assert page.evaluate("document.activeElement.className") == "copy-code"
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('#x-steer-code .copy-status').textContent.length > 0")
    assert page.inner_text("#x-steer-code .copy-status") == "Copied to the clipboard."
    assert page.evaluate("navigator.clipboard.readText()").strip() == code.strip()
    # every other section has its own, with its own request's Python
    page.click("#x-lens-code > summary")
    page.wait_for_selector("#x-lens-code[data-ready='1']", timeout=30_000)
    assert "attnlab.logit_lens(model, ids" in page.inner_text("#x-lens-code")


@pytest.mark.parametrize("width", [1440, 390])
def test_axe_finds_nothing_in_steering_and_the_code_blocks(page, opened, width):
    axe = new_axe()
    page.set_viewport_size({"width": width, "height": 900})
    page.click("#steer-run")
    _ready(page)
    page.evaluate("document.querySelectorAll('details.show-code').forEach(d => { d.open = true; })")
    page.wait_for_selector("#x-steer-code[open][data-ready='1']", timeout=30_000)
    context = {"include": [["#x-steer"], ["details.show-code"]]}
    found = axe.run(page, context=context).response["violations"]
    assert not found, [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:4]}" for v in found]
    box = page.eval_on_selector("#x-steer", "e => [e.scrollWidth, e.clientWidth]")
    assert box[0] <= box[1], f"the steering section is wider than its box at {width} px: {box}"
    if width == 390:  # the columns stack on a phone
        before = page.eval_on_selector("#steer-before", "e => e.getBoundingClientRect().bottom")
        after = page.eval_on_selector("#steer-after", "e => e.getBoundingClientRect().top")
        assert after >= before
