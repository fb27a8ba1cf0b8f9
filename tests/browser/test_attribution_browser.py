"""The estimate-first answers of "Which heads matter" and of patching in a real browser (one Chromium session for
the file, a tiny random decoder): the grid appears labelled as an estimate with its legend, then the exact cells
arrive, outlined, each equal to the library's exact sweep; the patch grid's cells take focus and say their numbers
in words; axe finds nothing in either section, at 1440 and 390 px. Screenshots: test-artifacts/explorer/."""

from __future__ import annotations

import pytest
from browser_pages import artifact, axe_violations

pytestmark = pytest.mark.browser
# `server`: conftest.py's default, the tiny random decoder alone ("path")

VIEWPORT = {"width": 1440, "height": 1000}  # the page fixture's size (conftest.py)
TOL = 2e-6  # the API's 6-decimal rounding of float32 log-probabilities


def _exact(page, grid: str) -> dict[tuple[int, int], float]:
    cells = page.eval_on_selector_all(f"{grid} td.checked", "els => els.map(e => [Number(e.dataset.row), "
                                      "Number(e.dataset.col), Number(e.dataset.exact)])")
    return {(i, j): v for i, j, v in cells}


@pytest.mark.parametrize("width", [1440, 390])
def test_estimate_appears_labelled_then_exact_cells_arrive(page, server, width):
    import attnlab
    from attnlab.explorer.views.experiments.pairs import prepare
    from attnlab.interventions import head_sweep, logprobs_at

    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{server['url']}?model=path&tab=experiments")
    for box in ("#x-ablate", "#x-patch"):
        page.wait_for_selector(f"{box}[data-ready='1']", timeout=60_000)
    lm = server["registry"].get("path")

    # Which heads matter, by keyboard: the estimate grid with its label and legend, then every head checked
    page.focus("#abl-sweep")
    page.keyboard.press("Enter")
    page.wait_for_selector("#abl-est-grid", timeout=30_000)
    why = page.text_content("#abl-est-why")
    assert "Estimate" in why and "first-order" in why and "approximation" in why
    assert "drop in log P" in page.text_content("#x-ablate .legend-box")
    page.wait_for_selector("#x-ablate[data-sweep-ready='1']", timeout=30_000)
    text = page.input_value("#abl-text")
    ids, _, position, _ = prepare(lm, text, None)
    target = logprobs_at(lm.model, ids, position)[0].argmax()
    want = head_sweep(lm.model, ids, int(target), position=position)
    got = _exact(page, "#abl-est-grid")
    assert len(got) == 8  # 2 layers x 4 heads: 12 top cells asked, all 8 checked
    for (i, j), v in got.items():
        assert v == pytest.approx(float(want[i, j]), abs=TOL)
    assert page.locator("#abl-est-checked tbody tr").count() == 8
    assert page.get_attribute("#abl-est-rho", "data-checked") == "8"

    # patching, by mouse: the layer x position estimate, then its top cells checked exactly
    clean = page.input_value("#patch-clean")
    corrupted = clean[:-1] + ("b" if clean[-1] != "b" else "c")  # one character changed: the same length
    page.fill("#patch-corrupted", corrupted)
    page.click("#patch-run")
    page.wait_for_selector("#patch-est-grid", timeout=30_000)
    assert "Estimate" in page.text_content("#patch-est-why")
    page.wait_for_selector("#patch-out[data-done='1']", timeout=30_000)
    clean_ids, _, position, _ = prepare(lm, clean, None)
    corrupted_ids, _, _, _ = prepare(lm, corrupted, None)
    t = int(logprobs_at(lm.model, clean_ids, position)[0].argmax())
    exact = attnlab.exact_patch(lm.model, clean_ids, corrupted_ids, t, position=position,
                                grids=["resid_pre"])["resid_pre"]
    got = _exact(page, "#patch-est-grid")
    assert len(got) == min(16, 2 * (position + 1))  # 12 top + 4 random, of the cells that reach the prediction
    for (i, j), v in got.items():
        assert v == pytest.approx(float(exact[i, j]), abs=TOL)
    # a cell takes focus and says its numbers in words (no hover needed)
    i, j = next(iter(got))
    page.focus(f"#patch-est-grid button.cell[data-row='{i}'][data-col='{j}']")
    page.keyboard.press("Enter")
    detail = page.text_content("#patch-est-detail")
    assert f"layer {i + 1}" in detail and "estimate" in detail and "exact" in detail

    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for sec in ("ablate", "patch"):
        page.locator(f"#x-{sec}").screenshot(path=artifact(f"attribution-{sec}-{width}"))
    bad = axe_violations(page, width, "#x-ablate", "#x-patch")
    assert not bad, "\n".join(bad)
