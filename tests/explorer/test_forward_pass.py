"""The Architecture tab's forward pass (explorer/views/architecture/forward_pass.py) and the closed form's gap to the
real count (particulars.py).

The stage values are checked against a hand forward of block 0 in float64, written here from the weights alone
(no attnlab module runs it): a LLaMA-style tiny model (RMSNorm, RoPE, grouped-query attention, SwiGLU, pre-norm)
and a BERT-style one (LayerNorm, learned positions, segments, embedding norm, post-norm, no mask). Tolerance 1e-4
absolute: the page rounds to 4 decimals (at most 5e-5) and the model runs in float32 (~1e-6 at these sizes).
"""

from __future__ import annotations

import math

import pytest
import torch

import attnlab
from attnlab.explorer.server.common import wrap
from attnlab.explorer.views.architecture.code_lines import CODE, line_of
from attnlab.explorer.views.architecture.forward_pass import D_SHOWN, T_SHOWN, forward_pass
from attnlab.explorer.views.architecture.particulars import count_gap
from attnlab.presets import get, names

TOL = 1e-4
TEXT = "the cat sat"


def _model(preset: str, **overrides):
    torch.manual_seed(0)
    return wrap(attnlab.build_model(get(preset, **overrides)), model_id=preset)


def _stages(out: dict, level: str) -> dict[str, dict]:
    return {s["id"]: s for s in out["stages"] if s["level"] == level}


def _close(values, expected: torch.Tensor) -> None:
    got = torch.tensor(values, dtype=torch.float64)
    want = expected[:T_SHOWN, :D_SHOWN]
    assert got.shape == want.shape
    assert torch.allclose(got, want, atol=TOL, rtol=0), float((got - want).abs().max())


def _rms(x, g, eps):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def _layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * g + b


def _rope(x, theta):
    """(heads, seq, d_head): feature i and i + d/2 turned by pos * theta^(-2i/d), written from the paper."""
    n, d = x.shape[-2], x.shape[-1]
    inv = theta ** (-torch.arange(0, d // 2, dtype=torch.float64) * 2 / d)
    angle = torch.arange(n, dtype=torch.float64)[:, None] * inv[None]  # (seq, d/2)
    cos, sin = torch.cos(angle), torch.sin(angle)
    a, b = x[..., : d // 2], x[..., d // 2:]
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


def _attend(x, w, cfg, causal, head, rope):
    """One self-attention in float64 from the weights: -> per-stage tensors of `head` and the output."""
    h, g, dh = cfg.n_heads, cfg.kv_heads, cfg.head_dim
    n = x.shape[0]
    qkv = x @ w["qkv.weight"].T + (w["qkv.bias"] if "qkv.bias" in w else 0)
    q = qkv[:, : h * dh].view(n, h, dh).transpose(0, 1)
    k = qkv[:, h * dh: (h + g) * dh].view(n, g, dh).transpose(0, 1)
    v = qkv[:, (h + g) * dh:].view(n, g, dh).transpose(0, 1)
    if rope:
        q, k = _rope(q, cfg.rope_theta), _rope(k, cfg.rope_theta)
    k, v = k.repeat_interleave(h // g, 0), v.repeat_interleave(h // g, 0)
    scores = q @ k.transpose(-1, -2) / math.sqrt(dh)
    if causal:
        scores = scores.masked_fill(torch.ones(n, n).triu(1).bool(), -math.inf)
    weights = scores.softmax(-1)
    z = weights @ v  # (heads, seq, d_head)
    w_o = w["out.weight"]  # (d_model, heads * d_head)
    head_out = z[head] @ w_o[:, head * dh: (head + 1) * dh].T
    out = z.transpose(0, 1).reshape(n, h * dh) @ w_o.T + (w["out.bias"] if "out.bias" in w else 0)
    return {"q": q[head], "k": k[head], "v": v[head], "scores": scores[head], "weights": weights[head],
            "z": z[head], "head_out": head_out, "out": out}


def _weights(module, prefix: str) -> dict[str, torch.Tensor]:
    return {k[len(prefix):]: v.double() for k, v in module.state_dict().items() if k.startswith(prefix)}


def _scores_close(values, expected):
    got = torch.tensor([[-math.inf if v is None else v for v in row] for row in values], dtype=torch.float64)
    masked = torch.isinf(expected)
    assert torch.equal(torch.isinf(got), masked)
    assert torch.allclose(got[~masked], expected[~masked], atol=TOL, rtol=0)


def test_llama_style_block_and_head_equal_a_float64_hand_forward():
    lm = _model("tiny-llama")  # RMSNorm, RoPE, 4 query heads sharing 2 K/V heads, SwiGLU, untied, no biases
    cfg, model = lm.model.config, lm.model
    head = 3  # its K/V head is 1: query heads 2 and 3 share it
    out = forward_pass(lm, TEXT, layer=0, head=head)
    ids = torch.tensor([ord(c) for c in TEXT])
    w = {k: v.double() for k, v in model.state_dict().items()}
    x = w["tokens.weight"][ids]  # (seq, d_model): RoPE adds nothing to X
    blk = _weights(model, "blocks.0.")
    a_in = _rms(x, blk["norm1.weight"], cfg.norm_eps)
    att = _attend(a_in, _weights(model, "blocks.0.attn."), cfg, causal=True, head=head, rope=True)
    mid = x + att["out"]
    f_in = _rms(mid, blk["norm2.weight"], cfg.norm_eps)
    gate, up = (f_in @ blk["ffn.up.weight"].T).chunk(2, dim=-1)
    hidden = torch.nn.functional.silu(gate) * up
    ffn = hidden @ blk["ffn.down.weight"].T
    post = mid + ffn

    block = _stages(out, "block")
    for sid, want in (("resid_pre", x), ("norm1", a_in), ("attn_out", att["out"]), ("resid_mid", mid),
                      ("norm2", f_in), ("ffn.gate", torch.nn.functional.silu(gate)), ("ffn.up", up),
                      ("ffn.hidden", hidden), ("ffn.out", ffn), ("resid_post", post)):
        _close(block[sid]["picture"]["values"], want)
    assert block["attn.qkv"]["picture"]["groups"] == [[0, 1], [2, 3]]  # GQA drawn as shared K/V heads
    one = _stages(out, "head")
    for sid, key in (("attn.q", "q"), ("attn.k", "k"), ("attn.v", "v"), ("attn.weights", "weights"),
                     ("attn.z", "z"), ("attn.head_out", "head_out")):
        _close(one[sid]["picture"]["values"], att[key])  # a masked key's weight: exactly 0
    _scores_close(one["attn.raw_scores"]["picture"]["values"], att["scores"])
    # RoPE: Q before the turn is the plain projection; after it, what the scores used
    q_plain = (a_in @ blk["attn.qkv.weight"].T)[:, head * cfg.head_dim: (head + 1) * cfg.head_dim]
    _close(one["attn.rope"]["picture"]["values"], q_plain)
    _close(one["attn.rope"]["picture"]["after"], att["q"])
    assert "shared by query heads 3, 4" in one["attn.k"]["text"]
    # the model level ends with the next token: the argmax of the last row's logits
    logits = _stages(out, "model")["logits"]["picture"]
    nxt = _stages(out, "model")["next"]["picture"]
    assert nxt["id"] == int(model(ids[None]).logits[0, -1].argmax())
    assert logits["values"] == sorted(logits["values"], reverse=True)


def test_post_norm_encoder_block_equals_a_float64_hand_forward():
    lm = _model("tiny-encoder")  # BERT: learned positions + segments, embedding LayerNorm, post-norm, no mask
    cfg, model = lm.model.config, lm.model
    out = forward_pass(lm, TEXT, layer=0, head=1)
    ids = torch.tensor([ord(c) for c in TEXT])
    w = {k: v.double() for k, v in model.state_dict().items()}
    n = len(ids)
    x = w["tokens.weight"][ids] + w["positions.weight"][:n] + w["token_types.weight"][0]
    x = _layer_norm(x, w["embed_norm.weight"], w["embed_norm.bias"], cfg.norm_eps)
    blk = _weights(model, "blocks.0.")
    att = _attend(x, _weights(model, "blocks.0.attn."), cfg, causal=False, head=1, rope=False)
    mid = _layer_norm(x + att["out"], blk["norm1.weight"], blk["norm1.bias"], cfg.norm_eps)
    hidden = torch.nn.functional.gelu(mid @ blk["ffn.up.weight"].T + blk["ffn.up.bias"])
    ffn = hidden @ blk["ffn.down.weight"].T + blk["ffn.down.bias"]
    post = _layer_norm(mid + ffn, blk["norm2.weight"], blk["norm2.bias"], cfg.norm_eps)
    model_level = _stages(out, "model")
    _close(model_level["positions"]["picture"]["values"], w["positions.weight"][:n])  # the vectors added
    _close(model_level["positions"]["picture"]["after"], x)  # X entering block 1
    block = _stages(out, "block")
    assert "norm1" not in block  # post-norm: no norm before the sublayer
    for sid, want in (("resid_pre", x), ("attn_out", att["out"]), ("resid_mid", mid), ("ffn.hidden", hidden),
                      ("ffn.out", ffn), ("resid_post", post)):
        _close(block[sid]["picture"]["values"], want)
    one = _stages(out, "head")
    _scores_close(one["attn.raw_scores"]["picture"]["values"], att["scores"])  # no mask: every cell a number
    _close(one["attn.weights"]["picture"]["values"], att["weights"])
    _close(one["attn.z"]["picture"]["values"], att["z"])


def test_encoder_decoder_cross_attends_from_the_target_to_the_source_and_vit_reads_patches():
    lm = _model("tiny-encoder-decoder")
    out = forward_pass(lm, "forty", layer=1, head=0)
    assert out["part"] == "decoder" and out["parts"] == ["encoder", "decoder"]
    cross = _stages(out, "head")["cross_attn.weights"]["picture"]
    assert cross["rows"] == out["tokens"][:T_SHOWN] and cross["cols"] == list("forty")  # queries: target; keys: source
    for row in cross["values"]:
        assert sum(row) == pytest.approx(1, abs=5 * TOL)  # the rounded weights of a row sum to 1
    ids = [s["id"] for s in out["stages"] if s["level"] == "model"]
    assert ids.index("encoder.tokens") < ids.index("encoder_output") < ids.index("decoder.tokens") < ids.index("next")
    enc = forward_pass(lm, "forty", layer=0, head=0, part="encoder")
    assert not any(s["id"].startswith("cross_attn") for s in enc["stages"])

    vit = forward_pass(_model("tiny-vit"), "", layer=0, head=0)
    cfg = get("tiny-vit")
    assert vit["tokens"][0] == "[CLS]" and len(vit["tokens"]) == cfg.n_patches + 1
    model_level = _stages(vit, "model")
    assert model_level["input"]["picture"]["patch"] == cfg.patch_size
    assert model_level["probs"]["picture"]["unit"] == "probability"


@pytest.mark.parametrize("preset", names())
def test_the_count_gap_adds_up_exactly(preset):
    cfg = get(preset)
    measured = attnlab.counting.count_parameters(attnlab.build_model(cfg, device="meta"))
    gap = count_gap(cfg, measured)
    assert gap["closed_form"] + sum(r["params"] for r in gap["rows"]) == measured
    assert not any(r["term"].startswith("not itemised") for r in gap["rows"])


def test_smollm2s_gap_is_named_term_by_term():
    cfg = get("llama-style")  # the shape of SmolLM2-135M
    measured = attnlab.counting.count_parameters(attnlab.build_model(cfg, device="meta"))
    gap = count_gap(cfg, measured)
    d, n, ff, kv = 576, 30, 1536, 3 * 64
    assert gap["closed_form"] == 49152 * d + n * 12 * d * d == 147_750_912
    rows = {r["term"]: r["params"] for r in gap["rows"]}
    assert rows["grouped K/V: W_K and W_V narrower"] == n * 2 * d * (kv - d)
    assert rows["the gated FFN's third matrix (W_gate)"] == n * d * ff
    assert rows["d_ff ≠ 4 d_model"] == n * 2 * d * (ff - 4 * d)
    assert rows["norms (RMSNorm: γ only, no bias)"] == (2 * n + 1) * d
    assert rows["tied head (W_out = W_E^T)"] == 0 and rows["RoPE positions"] == 0
    assert measured == 134_515_008


def test_every_stage_names_a_line_that_exists():
    for stage, (_, path, start) in CODE.items():
        assert line_of(path, start) is not None, f"{stage}: {path} has no line starting {start!r}"


def test_the_route_answers_and_refuses_bad_input_in_one_line(client):
    ok = client.post("/api/architecture/forward", json={"model": "path", "text": "ab", "layer": 1, "head": 2})
    assert ok.status_code == 200
    body = ok.json()
    assert body["layer"] == 1 and body["head"] == 2 and {s["level"] for s in body["stages"]} == {"model", "block",
                                                                                                 "head"}
    assert all(":" in s["code"] and s["equation"] for s in body["stages"])
    cases = [({"model": "nope", "text": "ab"}, 404, "unknown model"),
             ({"model": "path", "text": "ab", "layer": 7}, 404, "layer 7 does not exist"),
             ({"model": "path", "text": "ab", "head": 9}, 404, "head 9 does not exist"),
             ({"model": "path", "text": "ab", "part": "cross"}, 404, "allowed: decoder"),
             ({"model": "path", "text": ""}, 400, "no tokens"),
             ({"model": "path", "text": "ab", "layer": -1}, 422, "layer"),
             ({"model": "path"}, 422, "text")]
    for body, status, words in cases:
        r = client.post("/api/architecture/forward", json=body)
        assert r.status_code == status, (body, r.text)
        message = r.json()["detail"] if isinstance(r.json().get("detail"), str) else r.text
        assert words in message and "\n" not in message and "Traceback" not in message, message


@pytest.mark.parametrize("overrides", [dict(sliding_window=2, global_every=2, rope_theta=1e6, rope_local_theta=10.0),
                                       dict(rotary_dim=4)])
def test_rope_positions_show_each_base_and_only_the_rotated_pairs(overrides):
    """Gemma 3's sliding-window layers turn at a base of their own: the positions stage draws the global layers'
    angles and, beside them, the local ones; a partial RoPE (GPT-NeoX, Phi-3) draws its rotated pairs only. Both
    against position * theta^(-2i/d) wrapped to ±π, written here."""
    lm = _model("tiny-llama", **overrides)
    cfg = lm.model.config
    picture = _stages(forward_pass(lm, TEXT, layer=0, head=0), "model")["positions"]["picture"]
    n, d = len(TEXT), cfg.rope_dim

    def wrapped(theta):
        angle = torch.arange(n, dtype=torch.float64)[:, None] * theta ** (-torch.arange(0, d, 2) / d)[None]
        return torch.atan2(torch.sin(angle), torch.cos(angle))  # (seq, rotated pairs)

    _close(picture["values"], wrapped(cfg.rope_theta))
    if cfg.rope_local_theta is not None:
        _close(picture["after"], wrapped(cfg.rope_local_theta))
        assert picture["captions"] == ["global layers (base 1e+06)", "sliding-window layers (base 10)"]
    else:
        assert picture["kind"] == "matrix" and len(picture["values"][0]) == d // 2
