"""What the browser test files share, so each keeps only what is its own (its models, its viewport, its
checks): the explorer served by uvicorn in a thread on a free loopback port, Debian's Chromium launched with the
flags this machine needs, a route guard that aborts (and then fails the module for) any request that leaves
127.0.0.1, and an init script that marks the guided tour as seen.

Every fixture here but `phone` is module-scoped: one server and one browser session per test file. A file defines
its own `server` fixture (it builds the registry it needs, from `tiny_paths` or `trained_run` say, and serves it
with `serve`, or returns `shipped_server`), or takes the default one (the tiny decoder alone), and a `VIEWPORT`
constant; the `page` fixture below opens one Chromium page at that size on that server. Helpers that act on a
page: browser_pages.py.
"""

from __future__ import annotations

import importlib.util
import shutil
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import pytest
from browser_pages import PHONE

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# no sandbox (root in a container), no GPU, and nothing that phones home: the guard must see no outside request
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
# the guided tour starts on a first visit; the tests drive the tabs directly, so mark it as seen
# (a tab's sessionStorage flag "keep-tour" lets the tour tests see a first visit)
TOUR_SEEN = ("try { if (!sessionStorage.getItem('keep-tour')) "
             "localStorage.setItem('attnlab.tour', 'done') } catch (e) {}")


@pytest.fixture(scope="module", autouse=True)
def _chromium_available():
    """Skip the file, before its server is built, where Playwright or Debian's Chromium is missing."""
    pytest.importorskip("playwright.sync_api", reason="pip install playwright (the `test` extra)")
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium); "
                    "playwright cannot download browsers here")


@pytest.fixture(scope="module")
def tiny_models():
    """tests/explorer/tiny_models.py (tiny random checkpoints of each topology), loaded by path (no package)."""
    spec = importlib.util.spec_from_file_location(
        "explorer_tiny_models", Path(__file__).resolve().parents[1] / "explorer" / "tiny_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tiny_paths(tiny_models, tmp_path_factory):
    """The tiny random checkpoints (decoder, encoder, encoder-decoder, vit, ...) built once for the file."""
    return tiny_models.build_all(tmp_path_factory.mktemp("tiny-models"))


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """A 6-step gpt-char run on a small corpus (its probe feeds the timeline), trained once for the file."""
    from tiny_runs import train_gpt_char

    keys = {"steps": "6", "eval_every": "3", "log_every": "2", "plot": "false", "warmup": "1", "threads": "1",
            "d_model": "16", "n_heads": "2", "d_ff": "32", "n_layers": "2", "seq_len": "16", "batch_size": "2",
            "sample_tokens": "1", "save_every": "0"}
    return train_gpt_char(tmp_path_factory.mktemp("trained-run"), keys)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _serve(registry):
    """The explorer app on `registry`, served by uvicorn in a daemon thread; yields its base URL."""
    import uvicorn

    from attnlab.explorer.server.app import create_app

    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(create_app(registry), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not srv.started and time.time() < deadline:
        time.sleep(0.05)
    assert srv.started, "the explorer server did not start"
    yield f"http://127.0.0.1:{port}/"
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def serve():
    """`with serve(registry) as url:` starts the explorer for a file's own `server` fixture."""
    return _serve


@pytest.fixture(scope="module")
def server(serve, tiny_paths):
    """The tiny random decoder alone ("path", characters), for a file that defines no `server` of its own."""
    from attnlab.explorer.server.registry import build_registry

    registry = build_registry([tiny_paths["decoder"]], shipped=False, pretrained=False)
    with serve(registry) as url:
        yield {"url": url, "registry": registry}


@pytest.fixture(scope="module")
def shipped_server(serve):
    """The shipped models (gpt-char among them) and nothing pretrained: a file whose views run on them takes it as
    its `server` (`def server(shipped_server): return shipped_server`)."""
    from attnlab.explorer.server.registry import build_registry

    registry = build_registry(shipped=True, pretrained=False)
    with serve(registry) as url:
        yield {"url": url, "registry": registry}


@pytest.fixture(scope="module")
def page(server, request):
    """One Chromium page for the whole file, at the file's VIEWPORT. On teardown the module fails if the page
    asked for any address outside 127.0.0.1 or raised a JavaScript error (also readable as `page.errors`)."""
    from playwright.sync_api import sync_playwright

    outside: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport=request.module.VIEWPORT)

        def guard(route):
            url = urlparse(route.request.url)
            if url.scheme in ("http", "https", "ws", "wss") and url.hostname != "127.0.0.1":
                outside.append(route.request.url)
                return route.abort()
            return route.continue_()

        context.route("**/*", guard)
        context.add_init_script(TOUR_SEEN)
        pg = context.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.errors = errors
        yield pg
        context.close()
        browser.close()
    assert not outside, f"the page requested addresses outside 127.0.0.1: {outside}"
    assert not errors, f"JavaScript errors: {errors}"


@pytest.fixture
def phone(page, request):
    """The file's page at a phone's size for one test, back at the file's VIEWPORT afterwards."""
    page.set_viewport_size(PHONE)
    yield page
    page.set_viewport_size(request.module.VIEWPORT)
