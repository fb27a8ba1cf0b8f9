"""The training timeline on first launch and the heavy-job queue's place, in a real browser (one Chromium session,
the shipped models as a plain `attnlab explore` has them, no pretrained packages): gpt-char's timeline draws from
its shipped probe with the heads that formed named and ticked on the slider, axe-clean at 1440 and 390 px; and a
sweep that waits behind the same browser's running sweep says its place in the queue. Screenshots:
test-artifacts/explorer/."""

from __future__ import annotations

import threading

import pytest
from browser_pages import artifact, axe_violations

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1440, "height": 1000}


@pytest.fixture(scope="module")
def server(serve):
    from attnlab.explorer.server.registry import build_registry

    with serve(build_registry(shipped=True, pretrained=False)) as url:
        yield url


@pytest.mark.parametrize("width", [1440, 390])
def test_the_shipped_gpt_char_timeline_names_the_heads_that_formed(page, server, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{server}?model=gpt-char&tab=experiments")
    page.wait_for_selector("#x-timeline[data-ready='1'] #timeline-formed", timeout=60_000)
    assert page.query_selector("#timeline-none") is None  # no "train one first": the probe ships
    formed = page.text_content("#timeline-formed")
    assert "Previous-token heads: layer 1 head 4 from step 300" in formed
    assert "Induction heads: none formed (the highest score at any step is 0.11)" in formed
    assert page.input_value("#timeline-head") == "0:3"
    ticks = page.eval_on_selector_all("#timeline-marks option", "os => os.map(o => [o.value, o.label])")
    assert ticks == [["6", "previous-token head from step 300"]]  # step 300 is the 7th kept step
    assert page.eval_on_selector_all("#timeline-score-chart polyline", "ps => ps.length") == 4  # + the formed step
    assert page.text_content("#timeline-head option:checked") == ("layer 1 head 4 (previous-token score 0.47, from "
                                                                   "step 300)")
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # the longer menu still fits
    page.focus("#timeline-step")
    page.keyboard.press("Home")
    assert "step 1 of 2000" in page.text_content("#timeline-step-text")
    page.locator("#x-timeline").screenshot(path=artifact(f"timeline-shipped-{width}"))
    assert axe_violations(page, width, "#x-timeline") == []


def test_a_sweep_waiting_behind_its_own_browsers_sweep_shows_its_place(page, server, monkeypatch):
    from attnlab.explorer.views.experiments.sweeps import compute as experiments

    started, release = threading.Event(), threading.Event()
    real = experiments.head_sweep_grid

    def blocking(*a, **kw):
        started.set()
        release.wait(30)
        return real(*a, **kw)

    monkeypatch.setattr(experiments, "head_sweep_grid", blocking)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{server}?model=gpt-char&tab=experiments")
    page.wait_for_selector("#x-ablate[data-ready='1']", timeout=60_000)
    try:
        page.evaluate("""() => { window.firstSweep = fetch('/api/experiments/head-sweep', {method: 'POST',
            headers: {'Content-Type': 'application/json'}, body: JSON.stringify({model: 'gpt-char',
            text: 'the cat sat'})}).then(r => r.text()); }""")  # this browser's first sweep: held by the fake
        for _ in range(600):  # Playwright's loop (and the page's route guard) runs on this thread: wait inside it
            if started.is_set():
                break
            page.wait_for_timeout(50)
        assert started.is_set()
        page.click("#abl-sweep-exact")
        page.wait_for_function("() => (document.getElementById('abl-sweep-queue') || {}).textContent"
                               "?.includes('place 1 of 1')", timeout=20_000)
        text = page.text_content("#abl-sweep-queue")
        assert "waiting for its turn: place 1 of 1 in the queue for heavy jobs, 1 running" in text
        page.click("#abl-sweep-cancel")  # Cancel while queued: the page lets go and the queue drops the job
        page.wait_for_function("() => fetch('/api/queue').then(r => r.json()).then(q => q.waiting === 0)",
                               timeout=20_000)
        assert "cancelled" in page.text_content("#abl-sweep-out")
    finally:
        release.set()
    assert page.evaluate("window.firstSweep").count('"result"') == 1  # the running one finishes
    assert page.evaluate("fetch('/api/queue').then(r => r.json())")["running"] == 0
