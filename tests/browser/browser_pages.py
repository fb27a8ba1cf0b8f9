"""What the browser test files do to a page alike: the two sizes they judge a layout at, opening a view from its
address parameters, reading numbers off data- attributes, and where screenshots go (test-artifacts/explorer/)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "explorer"
DESKTOP, PHONE = {"width": 1440, "height": 900}, {"width": 390, "height": 844}


def open_view(page, url: str, wait_ms: int = 60_000, **state) -> None:
    """Go to the explorer at `url` with `state` as its address parameters (model=, tab=, text=, ...) and wait
    until the tab says it is ready."""
    query = "&".join(f"{k}={quote(str(v))}" for k, v in state.items())
    page.goto(url + "?" + query)
    page.wait_for_selector("#tab[data-ready='1']", timeout=wait_ms)


def floats(page, selector: str, attr: str) -> list[float]:
    """The numbers in attribute `attr` of every element `selector` matches, in document order."""
    return [float(v) for v in page.eval_on_selector_all(selector, f"els => els.map(e => e.getAttribute('{attr}'))")]


def artifact(name: str, folder: Path = ARTIFACTS) -> str:
    """The path a screenshot called `name` is saved at (folder/name.png), its folder made if missing."""
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / f"{name}.png")


def axe_violations(page, width: int, *sections: str) -> list[str]:
    """axe's violations of any impact inside `sections` (CSS selectors), one line each naming the width; skips
    the test, at this point, where axe-playwright-python is not installed."""
    found = new_axe().run(page, context={"include": [[s] for s in sections]}).response["violations"]
    return [f"@{width} {v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:5]}" for v in found]


@contextmanager
def at_size(page, viewport: dict, back: dict = DESKTOP):
    """The page at `viewport` inside the block, at `back` afterwards (the size the file's other tests expect),
    whether the block passed or failed."""
    page.set_viewport_size(viewport)
    try:
        yield page
    finally:
        page.set_viewport_size(back)


def new_axe():
    """An axe-core runner; skips the test, at this point, where axe-playwright-python is not installed."""
    import pytest

    axe_mod = pytest.importorskip("axe_playwright_python.sync_playwright",
                                  reason="pip install axe-playwright-python (the `test` extra)")
    return axe_mod.Axe()
