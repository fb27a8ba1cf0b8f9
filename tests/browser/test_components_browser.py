"""Patching by component, direct logit attribution and the logit lens's answer track in a real browser (one
Chromium session for the file), on the tiny random decoder ("path", characters): at 1440 and 390 px each view
draws its grids with a legend carrying values, its numbers equal the API's functions, the page does not scroll
sideways, the keyboard reaches the grid cells (Tab, arrows, Enter reads a cell), and axe finds no violation of
any impact in these three sections. Screenshots go to test-artifacts/explorer/components-*.png.
"""

from __future__ import annotations

import pytest
from browser_pages import artifact, new_axe, open_view

pytestmark = pytest.mark.browser
# `server`: conftest.py's default, the tiny random decoder alone ("path")

VIEWPORT = {"width": 1440, "height": 1000}  # the page fixture's size (conftest.py)
SECTIONS = ("#x-components", "#x-dla", "#x-lens")
CLEAN = "When John and Mary went to the store, John gave a drink to"
CORRUPTED = "When Mary and John went to the store, Mary gave a drink to"


def _values(page, selector: str) -> list[float | None]:
    return [None if v == "" else float(v) for v in page.eval_on_selector_all(
        selector, "els => els.map(e => e.dataset.value)")]


def _open(page, server) -> None:
    open_view(page, server["url"], model="path", tab="experiments")
    for box in SECTIONS:
        page.wait_for_selector(f"{box}[data-ready='1']", timeout=60_000)
    page.wait_for_selector("#dla-summary", timeout=60_000)


def _tab_to_grid(page, start: str, grid: str, presses: int = 60) -> None:
    """Tab from `start` until a cell of `grid` has the focus (the grid is one tab stop: its first cell)."""
    page.focus(start)
    for _ in range(presses):
        page.keyboard.press("Tab")
        if page.evaluate(f"!!document.activeElement.closest('{grid}') && "
                         "document.activeElement.classList.contains('cell')"):
            return
    raise AssertionError(f"Tab never reached a cell of {grid}")


@pytest.mark.parametrize("width", [1440, 390])
def test_views_draw_legends_numbers_and_answer_the_keyboard(page, server, width):
    from attnlab.explorer.api import logit_lens_top
    from attnlab.explorer.views.experiments.components import compute as components

    lm = server["registry"].get("path")
    page.set_viewport_size({"width": width, "height": 900})
    _open(page, server)
    assert page.input_value("#comp-clean") == CLEAN and page.input_value("#comp-corrupted") == CORRUPTED
    for mode in ("zero", "mean", "resample"):  # each replacement explained in one sentence
        assert page.text_content(f"#comp-modes li[data-mode='{mode}']").startswith(mode)

    # patching by component, exact: every cell equals the function's answer
    page.select_option("#comp-method", "exact")
    page.click("#comp-run")
    page.wait_for_selector("#x-components[data-ready='1'] #comp-summary", timeout=60_000)
    want = components.component_grid(lm, CLEAN, CORRUPTED, mode="resample", method="exact")
    for grid in ("attn", "mlp", "head"):  # the page shows the contribution: clean minus replaced
        flat = [v if v is None else -v for row in want["grids"][grid] for v in row]
        assert _values(page, f"#comp-grid-{grid} td") == pytest.approx(flat, abs=2e-6, nan_ok=True)
    legend = page.text_content("#x-components .legend-box")
    assert "logit difference" in legend and any(ch.isdigit() for ch in legend)

    # keyboard: Tab reaches the head grid's first cell, an arrow moves, Enter reads the value out
    _tab_to_grid(page, "#comp-run", "#comp-grid-head")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    value = want["grids"]["head"][0][1]
    assert "layer 1, head 2" in page.text_content("#comp-read")
    assert f"{abs(value):.3f}".rstrip("0").rstrip(".") in page.text_content("#comp-read")

    # direct logit attribution: the grid (heads + the MLP column), the sum check equal to the model's number
    dla = components.logit_attribution(lm, CLEAN)
    flat = [v for i, row in enumerate(dla["grid"]) for v in row + [dla["mlp"][i]]]
    assert _values(page, "#dla-grid td") == pytest.approx(flat, abs=2e-6)
    total, diff = (float(page.get_attribute("#dla-summary", f"data-{k}")) for k in ("total", "diff"))
    assert total == pytest.approx(diff, abs=1e-4) and diff == pytest.approx(dla["logit_diff"], abs=1e-6)
    assert "float rounding" in page.text_content("#dla-gap")
    assert any(ch.isdigit() for ch in page.text_content("#x-dla .legend-box"))
    _tab_to_grid(page, "#dla-contrast", "#dla-grid")
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    assert "layer 1 MLP" in page.text_content("#dla-read")

    # logit lens: the answer's rank and probability after every layer, and its line
    lens = logit_lens_top(lm, page.input_value("#lens-text"))
    probs = _values(page, "#lens-answer-grid td")[1::3]
    assert probs == pytest.approx(lens["answer"]["prob"], abs=1e-6)
    assert page.locator("#lens-answer-chart polyline").count() == 1

    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for box in SECTIONS:
        page.locator(box).screenshot(path=artifact(f"components-{box[3:]}-{width}"))


@pytest.mark.parametrize("width", [1440, 390])
def test_axe_finds_no_violation_in_these_views(page, server, width):
    axe = new_axe()
    page.set_viewport_size({"width": width, "height": 900})
    _open(page, server)
    page.click("#comp-run")  # the estimate: every grid drawn
    page.wait_for_selector("#x-components[data-ready='1'] #comp-summary", timeout=60_000)
    bad = []
    for box in SECTIONS:
        for v in axe.run(page, context=box).response["violations"]:
            bad.append(f"{box} @{width}: {v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:5]}")
    assert not bad, "\n".join(bad)
