"""The Architecture tab's forward pass and count gap in a real browser (one Chromium session for the file; tiny
random models: a LLaMA-style decoder with grouped K/V heads, and the encoder-decoder): the learner's sentence
flows stage by stage at the model, block and head levels, every control works by keyboard (Tab reaches it; Enter,
the arrow keys, Home and End act), the closed form's gap adds up on the page, and axe finds nothing at 1440 and
390 px with each level drawn. Screenshots: test-artifacts/explorer/forward-*.png."""

from __future__ import annotations

import pytest
from browser_pages import DESKTOP, PHONE, artifact, at_size, axe_violations, open_view

pytestmark = pytest.mark.browser

VIEWPORT = DESKTOP
SENTENCE = "the cat sat"


@pytest.fixture(scope="module")
def server(serve, tiny_paths, tmp_path_factory):
    import torch

    import attnlab
    from attnlab.explorer.server.registry import build_registry
    from attnlab.presets import get

    torch.manual_seed(0)  # 4 query heads sharing 2 K/V heads, RoPE, RMSNorm, SwiGLU
    llama = attnlab.build_model(get("tiny-llama", vocab_size=256, d_model=32, d_ff=64, max_len=64)).eval()
    folder = llama.save(tmp_path_factory.mktemp("forward") / "llama")
    registry = build_registry([folder, tiny_paths["encoder-decoder"]], shipped=False, pretrained=False)
    with serve(registry) as url:
        yield {"url": url, "registry": registry}


def _current(page) -> str:
    return page.get_attribute("#fw-stage", "data-stage")


def _wait(page):
    page.wait_for_selector("#forward[data-ready='1'] #fw-stage", timeout=60_000)


def test_a_sentence_flows_by_keyboard_through_model_block_and_head(page, server):
    open_view(page, server["url"], model="path1", tab="architecture", text=SENTENCE)
    _wait(page)
    # the learner's own sentence: its tokens and ids are the first stage
    assert page.locator("#fw-stage .fw-token").count() == len(SENTENCE)
    assert page.get_attribute("#fw-stage", "data-level") == "model"

    # Tab reaches the sentence box, Run and the level buttons in order
    page.focus("#fw-text")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "fw-run"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "fw-level-model"

    # the stage strip: arrow keys and End walk the stages, the card follows
    page.focus(".fw-strip button[aria-current='step']")
    page.keyboard.press("ArrowRight")
    assert _current(page) == "embedding"
    # follow a token: the last one by default; Home + Enter on the chips follows the first, its numbers in a line
    assert page.get_attribute("#fw-stage .fw-row", "data-row") == str(len(SENTENCE) - 1)
    page.focus("#fw-follow button[tabindex='0']")
    page.keyboard.press("Home")
    page.keyboard.press("Enter")
    assert page.get_attribute("#fw-stage .fw-row", "data-row") == "0"
    assert page.evaluate("document.activeElement.closest('#fw-follow') !== null")
    line = page.eval_on_selector_all("#fw-stage .fw-row .fw-num", "els => els.map(e => Number(e.textContent))")
    table = page.eval_on_selector_all("#fw-stage .fw-numbers tbody tr:first-child td",
                                      "els => els.map(e => Number(e.textContent))")
    assert line == pytest.approx(table, abs=6e-4)  # the line rounds to 3 decimals, the table to 4
    page.focus(".fw-strip button[aria-current='step']")
    page.keyboard.press("End")
    assert _current(page) == "next"
    page.keyboard.press("Home")
    assert _current(page) == "tokens"
    page.focus("#fw-next")
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")  # the focus stays on Next: two presses, two stages
    assert _current(page) == "positions"
    assert "RoPE" in page.text_content("#fw-stage h3")
    page.keyboard.press("Enter")
    assert _current(page) == "blocks"
    # one key from the whole model into block 1
    page.focus("#fw-open-block")
    page.keyboard.press("Enter")
    assert page.get_attribute("#fw-stage", "data-level") == "block"
    # grouped K/V drawn as shared: 2 K/V heads, each over 2 query heads
    page.focus(".fw-strip button[aria-current='step']")
    while _current(page) != "attn.qkv":
        page.keyboard.press("ArrowRight")
    assert page.locator("#fw-stage .fw-group").count() == 2
    assert [page.locator("#fw-stage .fw-group").nth(k).locator("button").count() for k in (0, 1)] == [2, 2]
    page.keyboard.press("ArrowRight")
    assert _current(page) == "attn.weights"
    assert page.locator("#fw-stage .fw-thumb").count() == 4
    # a head's thumbnail opens that head (a new forward for head 3)
    page.focus("#fw-stage .fw-thumb[data-head='2']")
    page.keyboard.press("Enter")
    _wait(page)
    assert page.get_attribute("#fw-stage", "data-level") == "head"
    assert page.text_content("#fw-path").endswith("head 3 · the sentence as 11 tokens")
    assert page.evaluate("document.activeElement.closest('.fw-strip') !== null")
    page.keyboard.press("ArrowRight")
    assert _current(page) == "attn.k"
    assert "shared by query heads 3, 4" in page.text_content("#fw-stage")
    # the block picker by keyboard: block 2 of 2, a new forward, the focus back on the picker
    page.focus("#fw-layer")
    page.keyboard.press("ArrowDown")
    _wait(page)
    assert page.input_value("#fw-layer") == "1"
    assert page.evaluate("document.activeElement.id") == "fw-layer"
    for level in ("model", "block", "head"):
        page.focus(f"#fw-level-{level}")
        page.keyboard.press("Enter")
        assert page.get_attribute("#fw-stage", "data-level") == level
        page.locator("#forward").screenshot(path=artifact(f"forward-{level}-1440"))
        bad = axe_violations(page, 1440, "#forward", "#particulars")
        assert not bad, "\n".join(bad)
    # from watching to changing: the head's last stage switches that head off in the Experiments tab
    page.focus(".fw-strip button[aria-current='step']")
    page.keyboard.press("End")
    assert _current(page) == "attn.head_out"
    page.focus("#fw-ablate")
    page.keyboard.press("Enter")
    page.wait_for_url("**tab=experiments**")
    assert "off=1.2" in page.url and "text=the+cat+sat" in page.url


def test_the_count_gap_adds_up_on_the_page(page, server):
    import attnlab
    from attnlab.parameter_count import closed_form

    open_view(page, server["url"], model="path1", tab="architecture", text=SENTENCE)
    page.wait_for_selector("#count-gap")
    model = server["registry"].get("path1").model
    measured = attnlab.counting.count_parameters(model)
    gaps = [int(v) for v in page.eval_on_selector_all("#count-gap [data-gap]", "els => els.map(e => e.dataset.gap)")]
    assert closed_form(model.config) + sum(gaps) == measured == int(page.get_attribute("#gap-total", "data-total"))
    text = page.text_content("#particulars")
    assert "grouped-query attention" in text and "RMSNorm" in text and "RoPE" in text
    # the block diagram leads into the forward pass: a block, then "Watch it on your sentence", by keyboard
    _wait(page)
    for block, level, stage in (("decoder.ffn", "block", "ffn.hidden"), ("decoder.norm1", "block", "norm1"),
                                ("head", "model", "logits")):
        page.focus(f"g.block[data-block='{block}']")
        page.keyboard.press("Enter")
        page.focus("#detail-watch")
        page.keyboard.press("Enter")
        assert (page.get_attribute("#fw-stage", "data-level"), _current(page)) == (level, stage)
        assert page.evaluate("document.activeElement.closest('.fw-strip') !== null")


def test_phone_encoder_decoder_cross_attention_and_axe(page, server):
    with at_size(page, PHONE):
        open_view(page, server["url"], model="path2", tab="architecture", text="forty")
        _wait(page)
        page.focus("#fw-level-head")
        page.keyboard.press("Enter")
        page.focus(".fw-strip button[aria-current='step']")
        while _current(page) != "cross_attn.weights":
            page.keyboard.press("ArrowRight")
        # queries from the target, keys from the source: the numbers table's header holds the source's characters
        heads = page.eval_on_selector_all("#fw-stage .fw-numbers thead th", "els => els.map(e => e.textContent)")
        assert heads[1:] == list("forty")
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        for level in ("head", "block", "model"):
            page.focus(f"#fw-level-{level}")
            page.keyboard.press("Enter")
            page.locator("#forward").screenshot(path=artifact(f"forward-{level}-390"))
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
            bad = axe_violations(page, 390, "#forward", "#particulars")
            assert not bad, "\n".join(bad)
