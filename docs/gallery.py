"""Regenerate the explorer's screenshot gallery in docs/img (shown in docs/explorer.md).

    python docs/gallery.py                 # every tab on the shipped models, desktop + two phone shots
    python docs/gallery.py --only attention,vision --out /tmp/shots

Starts the explorer in this process (create_app + uvicorn in a thread on a free 127.0.0.1 port), drives Debian's
Chromium with Playwright (`apt-get install chromium`; no browser download), blocks every request that is not
to that server, and writes docs/img/explorer_<tab>.png (1200 px wide, the top of the tab: what a visitor sees
first; taller for Attention, down to its heatmap), explorer_<tab>_phone.png (390 x 844) for two tabs, and
explorer_notebook.png: the notebook view (attnlab.explorer.notebook.show) opened as a file. PNGs are reduced
to a 256-colour palette when Pillow is installed, which keeps the whole gallery well under 2 MB.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's attnlab, not an installed one

DESKTOP = {"width": 1200, "height": 1000}
PHONE = {"width": 390, "height": 844}
TOY_TEXT = "the cat sat on the mat"
TALL = {"attention": 1650, "notebook": 1500}  # px: down to the heatmap, the view's main picture
# (name, the view in the URL, what to do once the tab is ready) on the models attnlab ships
SHOTS = [
    ("architecture", {"model": "translate-numbers", "tab": "architecture", "text": "forty-two"}, None),
    ("attention", {"model": "toy", "tab": "attention", "text": TOY_TEXT, "token": 1, "key": 2}, None),
    ("selfsup", {"model": "bert-mlm", "tab": "selfsup"}, "draw"),
    ("vision", {"model": "vit-mnist", "tab": "vision"}, None),
    ("generation", {"model": "gpt-char", "tab": "generation"}, "generate"),
    ("cost", {"model": "gpt-char", "tab": "cost"}, None),
]
PHONE_SHOTS = ("attention", "vision")


def _act(page, action: str | None) -> None:
    if action == "draw":  # BERT's random 15%, then the model's predictions at the picked positions
        page.click("#draw")
        page.wait_for_selector("#mlm-loss", timeout=60_000)
    elif action == "generate":  # ten greedy-ish steps so the cache and the timing chart have something to show
        page.click("#step10")
        page.wait_for_function("document.querySelector('#step10') && !document.querySelector('#step10').disabled "
                               "&& document.querySelector('#cache-entries')", timeout=120_000)


def _shoot(page, path: Path, viewport: dict, height: int) -> None:
    """The top of the page: the viewport, or `height` px of it when the view's main picture sits lower."""
    if height:
        page.screenshot(path=str(path), full_page=True, clip={"x": 0, "y": 0, "width": viewport["width"],
                                                              "height": height})
    else:
        page.screenshot(path=str(path))


def _small(path: Path) -> None:
    """Palette PNG (256 colours): the UI's flat colours survive, the file shrinks about 3x."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as im:
        im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def _notebook_page(out: Path) -> Path:
    from attnlab.explorer.notebook import show

    html = show("toy", TOY_TEXT, head=0, query=1)._repr_html_()
    path = out / "notebook.html"
    path.write_text("<!doctype html><html><head><meta charset='utf-8'><title>a notebook</title></head>"
                    "<body style='font-family:sans-serif;margin:16px'><pre style='background:#f6f6f6;padding:8px'>"
                    "from attnlab.explorer.notebook import show\nshow(\"toy\", \"the cat sat on the mat\", head=0, "
                    f"query=1)</pre>{html}</body></html>", encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "img"), help="folder for the PNGs (default docs/img)")
    parser.add_argument("--only", default="", help="comma-separated tab names (default: all, and the notebook)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from attnlab.benchmarks.explorer import serve
    from attnlab.explorer.server.app import create_app
    from attnlab.explorer.server.registry import build_registry

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("gallery: Debian's chromium is not installed (apt-get install chromium)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    registry = build_registry(shipped=True, pretrained=False)
    missing = [m for _, view, _ in SHOTS if (e := registry.entries.get(view["model"])) is None or not e.available
               for m in [view["model"]]]
    if missing:
        sys.exit(f"gallery: shipped checkpoints missing: {', '.join(sorted(set(missing)))} (train their recipes)")
    written: list[Path] = []
    outside: list[str] = []
    with serve(create_app(registry)) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync"])

        def guard(route):
            u = urlparse(route.request.url)
            if u.scheme in ("file", "blob", "data") or (u.hostname == "127.0.0.1" and url.endswith(f":{u.port}")):
                return route.continue_()
            outside.append(route.request.url)
            return route.abort()

        for label, viewport, names in (("", DESKTOP, [s[0] for s in SHOTS]), ("_phone", PHONE, PHONE_SHOTS)):
            context = browser.new_context(viewport=viewport, device_scale_factor=1)
            context.route("**/*", guard)
            context.add_init_script("try { localStorage.setItem('attnlab.tour', 'done') } catch (e) {}")
            page = context.new_page()
            for name, view, action in SHOTS:
                if name not in names or (only and name not in only):
                    continue
                started = time.perf_counter()
                page.goto(url + "/?" + "&".join(f"{k}={quote(str(v))}" for k, v in view.items()))
                page.wait_for_selector("#tab[data-ready='1']", timeout=120_000)
                _act(page, action)
                page.wait_for_timeout(300)  # let canvases and layout settle
                path = out / f"explorer_{name}{label}.png"
                _shoot(page, path, viewport, 0 if label else TALL.get(name, 0))
                _small(path)
                written.append(path)
                print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: "
                      f"{path.stat().st_size / 1024:.0f} KiB ({time.perf_counter() - started:.1f} s)")
            context.close()
        if not only or "notebook" in only:
            with tempfile.TemporaryDirectory() as tmp:
                context = browser.new_context(viewport=DESKTOP, device_scale_factor=1)
                context.route("**/*", guard)
                page = context.new_page()
                page.goto(_notebook_page(Path(tmp)).as_uri())
                page.frame_locator("iframe").locator("#tab[data-ready='1']").wait_for(timeout=60_000)
                page.wait_for_timeout(300)
                path = out / "explorer_notebook.png"
                _shoot(page, path, DESKTOP, TALL["notebook"])
                _small(path)
                written.append(path)
                print(f"{path.name}: {path.stat().st_size / 1024:.0f} KiB")
                context.close()
        browser.close()
    if outside:
        sys.exit(f"gallery: the page asked for addresses outside the local server: {outside}")
    total = sum(p.stat().st_size for p in written)
    print(f"{len(written)} images, {total / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
