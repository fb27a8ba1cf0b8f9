"""The Experiments tab read as one (one Chromium session, gpt-char as shipped): the same head has the same colour in
the ablation grid and the component grid when both say it helped the answer; the circuit walk runs its five steps
by keyboard, each conclusion naming the numbers its own grid or list shows; "Show the code" drops the ablation's
snippet once every head is back on, shows the estimate (not the exact sweep) for the estimate grid, never shows
one snippet twice and never another section's request; axe finds nothing in these views at 1440 and 390 px."""

from __future__ import annotations

import json
import math
import re

import httpx
import pytest
from browser_pages import PHONE, axe_violations, open_view

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1440, "height": 1000}
PAIR = ("def f(x, y", "def f[x, y")  # gpt-char: “)” after “(”, “]” after “[”
STEPS = ("positions", "layers", "heads", "writers", "steer")


@pytest.fixture(scope="module")
def server(shipped_server):
    return shipped_server


@pytest.fixture()
def opened(page, server):
    """The Experiments tab opened afresh: the other tests of this file take the same browser page elsewhere."""
    open_view(page, server["url"], 120_000, model="gpt-char", tab="experiments")
    page.wait_for_selector("#x-walk[data-ready='1']", timeout=120_000)
    return page


def _orange(rgb: str) -> bool:
    """The page's scale: orange (230, 97, 0) for toward the answer, blue (0, 114, 178) against it."""
    r, _, b = (int(x) for x in re.findall(r"\d+", rgb)[:3])
    assert r != b, f"a white cell says nothing: {rgb}"
    return r > b


def _background(page, selector: str) -> str:
    return page.eval_on_selector(selector, "e => getComputedStyle(e).backgroundColor")


def _a_head_that_helped_is_orange_in_ablation_and_in_components(page, server):
    api = httpx.Client(base_url=server["url"], timeout=120)
    # independent of the page: the exact drop of each head switched off (clean - ablated log P) and the exact
    # change of the logit difference when its z is zeroed (replaced - clean); both say "helped" with opposite signs
    def result(path, body):  # the streamed routes' last line
        lines = api.post(path, json=body).text.splitlines()
        return [json.loads(line) for line in lines if '"result"' in line][-1]["result"]

    drops = result("api/experiments/head-sweep", {"model": "gpt-char", "text": PAIR[0]})["grid"]
    change = result("api/experiments/components", {"model": "gpt-char", "clean": PAIR[0], "corrupted": PAIR[1],
                                                   "mode": "zero", "method": "exact", "grids": ["head"]})
    change = change["grids"]["head"]
    both = [(drops[i][j] - change[i][j], i, j) for i in range(len(drops)) for j in range(len(drops[0]))
            if drops[i][j] > 0.05 and change[i][j] < -0.05]
    assert both, "gpt-char has a head that both views say helped"
    _, i, j = max(both)
    page.click("#abl-sweep-exact")
    page.wait_for_selector("#x-ablate[data-sweep-ready='1'] #abl-sweep-grid", timeout=120_000)
    page.select_option("#comp-mode", "zero")
    page.select_option("#comp-method", "exact")
    page.fill("#comp-clean", PAIR[0])
    page.fill("#comp-corrupted", PAIR[1])
    page.click("#comp-run")
    page.wait_for_selector("#x-components[data-ready='1'] #comp-grid-head", timeout=120_000)
    cell = f"td[data-row='{i}'][data-col='{j}']"
    ablation, component = _background(page, f"#abl-sweep-grid {cell}"), _background(page, f"#comp-grid-head {cell}")
    assert _orange(ablation) and _orange(component), (i, j, ablation, component)
    # the numbers the component grid shows read the same way: positive, the contribution toward the answer
    assert float(page.get_attribute(f"#comp-grid-head {cell}", "data-value")) == pytest.approx(-change[i][j])
    legends = page.locator("#x-ablate .answer-legend, #x-components .answer-legend")
    assert legends.count() == 2 and "toward the answer" in legends.nth(1).inner_text()
    # the lens on the same scale: each layer's change in log P(answer), orange where it rose
    lens = api.post("api/experiments/logit-lens", json={"model": "gpt-char", "text": page.input_value("#lens-text")})
    probs = lens.json()["answer"]["prob"]
    page.wait_for_selector("#x-lens[data-ready='1'] #lens-answer-grid")
    for i in range(1, len(probs)):
        cell = f"#lens-answer-grid td[data-row='{i}'][data-col='2']"
        want = math.log(probs[i]) - math.log(probs[i - 1])
        assert float(page.get_attribute(cell, "data-value")) == pytest.approx(want, abs=1e-6)
        if abs(want) > 0.05:
            assert _orange(_background(page, cell)) == (want > 0), (i, want)


def _the_walk_runs_by_keyboard_and_concludes_from_its_own_numbers(page):
    page.fill("#walk-clean", PAIR[0])
    page.fill("#walk-corrupted", PAIR[1])
    for k, step in enumerate(STEPS):
        if k:
            assert page.is_disabled(f"#walk-{STEPS[k]}-run") is False  # the previous step opened it
        page.focus(f"#walk-{step}-run")
        page.keyboard.press("Enter")
        page.wait_for_selector(f"#walk-{step}-conclusion[data-done='1']", timeout=120_000)
    said = {step: page.inner_text(f"#walk-{step}-conclusion") for step in STEPS}
    # step 1 names the cell that restores most, with its value: the largest number the patching grid shows
    cells = page.eval_on_selector_all("#walk-patch-grid td[data-value]", "els => els.map(e => [e.dataset.row, "
                                      "e.dataset.col, Number(e.dataset.exact ?? e.dataset.value)])")
    row, col, best = max(cells, key=lambda c: c[2])
    assert f"position {col} " in said["positions"] and f"entering layer {int(row) + 1}:" in said["positions"]
    assert f"{best:.2f} nats" in said["positions"]
    # step 4 names the largest direct writer the grid shows
    dla = page.eval_on_selector_all("#walk-dla-grid td[data-value]", "els => els.map(e => [Number(e.dataset.row), "
                                    "Number(e.dataset.col), Number(e.dataset.value)])")
    heads = max(c[1] for c in dla)
    i, j, v = max(dla, key=lambda c: c[2])
    name = f"layer {i + 1} MLP" if j == heads else f"layer {i + 1} head {j + 1}"
    assert f"{name} (+{v:.2f} logits)" in said["writers"]
    # step 5: the steered list's first token and its probability are the ones the conclusion names
    first = page.inner_text("#walk-steer-steered li >> nth=0")
    assert first.split(" ")[-1] in said["steer"] and "gives back the clean answer" in said["steer"]
    assert first.startswith("“)”")


def _show_the_code_follows_the_page(page):
    page.click("#x-ablate-code summary")
    page.wait_for_selector("#x-ablate-code[data-ready='1'] pre", timeout=60_000)
    page.click("#abl-sweep")  # the estimate grid, then its exact check
    page.wait_for_selector("#x-ablate[data-sweep-ready='1'] #abl-est-grid", timeout=120_000)
    page.wait_for_selector("#x-ablate-code[data-ready='1']", timeout=60_000)
    codes = page.eval_on_selector_all("#x-ablate-code pre", "els => els.map(e => e.textContent)")
    assert len(codes) == len(set(codes)), "no snippet twice"
    estimate = [c for c in codes if "attribution_patch" in c]
    assert estimate and "head_sweep" not in estimate[0]
    assert any("ablate_heads" in c and "p_after" in c for c in codes)  # the head switched off above
    page.click("#abl-clear")
    page.wait_for_selector("#x-ablate[data-ready='1']")
    page.wait_for_selector("#x-ablate-code[data-ready='1']", timeout=60_000)
    codes = page.eval_on_selector_all("#x-ablate-code pre", "els => els.map(e => e.textContent)")
    assert not any("p_after" in c for c in codes), "every head is on: no ablated run is shown, nor its code"
    assert any("attribution_patch" in c for c in codes)  # the estimate grid is still on the page
    # the walk's requests (run in the test above, or now) show in the walk's code only
    page.click("#x-walk-code summary")
    page.wait_for_selector("#x-walk-code[data-ready='1'] pre", timeout=60_000)
    walk = page.eval_on_selector_all("#x-walk-code pre", "els => els.map(e => e.textContent)")
    assert any("direct_logit_attribution" in c for c in walk)
    page.click("#x-patch-code summary")  # its section never ran: the walk's patching is not its
    page.wait_for_selector("#x-patch-code[data-ready='1']", timeout=60_000)
    assert page.locator("#x-patch-code pre").count() == 0


def _axe_finds_nothing_at_both_sizes(page):
    views = ("#x-walk", "#x-ablate", "#x-components")
    found = axe_violations(page, 1440, *views)
    page.set_viewport_size(PHONE)
    try:
        page.wait_for_timeout(300)
        found += axe_violations(page, 390, *views)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"] + 1, f"the page scrolls sideways at 390 px ({width} px)"
    finally:
        page.set_viewport_size(VIEWPORT)
    assert found == []


def test_a_learners_session_on_the_experiments_page(opened, server):
    """One session in the order a learner meets it, each part building on the one before (the code shown reads the
    requests the earlier parts made): a head that helped is orange in ablation and components, the circuit walk by
    keyboard, Show the code following the page, then axe at both sizes with all of it drawn. One test, because
    the parts share one page's state and must run in this order (a shuffled run split them)."""
    _a_head_that_helped_is_orange_in_ablation_and_in_components(opened, server)
    _the_walk_runs_by_keyboard_and_concludes_from_its_own_numbers(opened)
    _show_the_code_follows_the_page(opened)
    _axe_finds_nothing_at_both_sizes(opened)


def _axe_both(page, *views) -> list[str]:
    found = axe_violations(page, 1440, *views)
    page.set_viewport_size(PHONE)
    try:
        page.wait_for_timeout(300)
        found += axe_violations(page, 390, *views)
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"] + 1
    finally:
        page.set_viewport_size(VIEWPORT)
    return found


def test_attention_overlays_heads_in_their_colours_and_puts_two_side_by_side(page, server):
    text = "The module"
    open_view(page, server["url"], 60_000, model="gpt-char", tab="attention", text=text, layer=1)
    page.wait_for_selector("#compare-heads")
    page.focus("#compare-heads summary")
    page.keyboard.press("Enter")  # opened by keyboard
    page.wait_for_selector("#compare-heads[data-ready='1'] #heads-lines", timeout=60_000)
    page.select_option("#heads-query", "1")
    api = httpx.Client(base_url=server["url"], timeout=60)
    want = {h: api.post("api/attention", json={"model": "gpt-char", "text": text, "layer": 1, "head": h,
                                              "part": None, "target": None}).json()["weights"][1] for h in range(4)}
    lines = page.eval_on_selector_all("#heads-lines line.head-line", "els => els.map(e => [Number(e.dataset.head), "
                                      "Number(e.dataset.key), Number(e.getAttribute('stroke-opacity')), "
                                      "e.getAttribute('stroke')])")
    assert {h for h, *_ in lines} == {0, 1, 2, 3}  # the first four heads drawn
    assert len({c for *_, c in lines}) == 4  # one colour per head
    for h, key, opacity, _ in lines:  # each line as strong as the head's weight on that key
        assert opacity == pytest.approx(min(1, want[h][key]), abs=1e-6)
    assert all(want[h][j] < 0.01 for h in range(4) for j in range(len(want[h]))
               if (h, j) not in {(x[0], x[1]) for x in lines})  # and only the weak ones left out
    # the legend is the toggle: head 2 off by keyboard, its lines gone, its button says so
    page.focus("#heads-toggles button[data-head='1']")
    page.keyboard.press("Enter")
    assert page.get_attribute("#heads-toggles button[data-head='1']", "aria-pressed") == "false"
    assert page.locator("#heads-lines line[data-head='1']").count() == 0
    page.select_option("#heads-b", "3")
    assert "head 4" in page.inner_text("#heads-right h5") and "head 1" in page.inner_text("#heads-left h5")
    assert page.locator("#heads-lines-right line[data-head='3']").count() > 0
    assert _axe_both(page, "#compare-heads") == []


def test_cost_places_a_prefill_and_a_decoding_step_on_a_labelled_roofline(page, server):
    open_view(page, server["url"], 60_000, model="gpt-char", tab="cost")
    page.wait_for_selector("#roofline", timeout=60_000)
    labels = page.inner_text("#roofline-panel")
    assert "arithmetic intensity (FLOPs per byte moved), log scale" in page.text_content("#roofline")
    assert "attainable FLOP/s, log scale" in page.text_content("#roofline") and "peak" in labels
    points = page.eval_on_selector_all("#roofline .roof-point", "els => els.map(e => [Number(e.dataset.intensity), "
                                       "Number(e.dataset.attainable)])")
    r = httpx.get(f"{server['url']}api/cost/gpt-char/roofline?n=64", timeout=60).json()
    assert points == [pytest.approx([p["intensity"], min(r["peak"], r["bandwidth"] * p["intensity"])], rel=1e-9)
                      for p in r["points"]]
    assert "memory-bound" in page.inner_text("#roofline-says")  # a decoding step of gpt-char, said in words
    assert page.locator("#held-weights .held-bytes").count() >= 1
    assert _axe_both(page, "#roofline-panel", "#held-weights") == []
