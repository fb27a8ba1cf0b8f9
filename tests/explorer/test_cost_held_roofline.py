"""The Cost tab counts the weights at the precision the model holds them, and places a prefill and a decoding step on
this machine's roofline. References: the formats' layouts written out from the float model's own matrix shapes
(int8: a byte a weight + a float32 scale per output row; int4: half a byte a weight + a float16 scale and minimum
per 32), and the roofline's definition min(peak, bandwidth x FLOPs / bytes). Byte counts are integers: exact."""

from __future__ import annotations

import math

import pytest
from torch import nn

import attnlab
from attnlab.cost.analytic import cost_table, matmul_parameters
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.views.cost.held import held_weights
from attnlab.explorer.views.cost.roofline import roofline
from attnlab.layers.quantized import QuantizedLinear
from attnlab.quantization import quantize

LAYOUT = {"int8": lambda n, k: n * k + 4 * n, "int4": lambda n, k: n * k // 2 + 2 * 2 * n * (k // 32)}


def _decoder(path, scheme=None):
    """The tiny decoder, quantized by `scheme`; -> (model, tokenizer, the float model's matrix shapes, the bytes
    its matrices take by the layout of the format each was given: the int4 scheme keeps the LM head in int8)."""
    model, tok = attnlab.load(path)
    model.eval()
    shapes = [(m.out_features, m.in_features) for m in model.modules() if isinstance(m, nn.Linear)]
    if scheme:
        quantize(model, scheme)
    formats = [m.format for m in model.modules() if isinstance(m, QuantizedLinear)]
    layout = sum(LAYOUT[f](n, k) for f, (n, k) in zip(formats, shapes, strict=True)) if scheme else None
    return model, tok, shapes, layout


@pytest.mark.parametrize("scheme", ["int8", "int4"])
def test_held_bytes_are_the_formats_layouts_of_the_models_matrices(tiny_paths, scheme):
    model, _, shapes, layout = _decoder(tiny_paths["decoder"], scheme)
    assert sum(n * k for n, k in shapes) == matmul_parameters(model.config)  # every matrix a step reads
    held = held_weights(model)
    assert held["matmul"] == {"weights": matmul_parameters(model.config), "bytes": layout}
    assert held["bytes"] == sum(f["bytes"] for f in held["formats"]) < held["float32_bytes"]
    assert {f["format"] for f in held["formats"]} == {scheme, "int8", "float32"}  # + the norms' gains in float


def test_a_float32_model_holds_four_bytes_a_weight(tiny_paths):
    model, _, _, _ = _decoder(tiny_paths["decoder"])
    held = held_weights(model)
    params = sum(p.numel() for p in model.parameters())
    assert held["formats"] == [{"format": "float32", "weights": params, "bytes": 4 * params, "bits_per_weight": 32}]


def test_the_roofline_places_the_work_with_the_held_bytes(tiny_paths):
    model, tok, _, held = _decoder(tiny_paths["decoder"], "int4")
    lm = Loaded("tiny", "tiny", model, tok)
    peak, bandwidth = 2e10, 5e9
    r = roofline(lm, 16, peak=peak, bandwidth=bandwidth)
    assert r["ridge"] == peak / bandwidth
    step = cost_table(model.config, 1, 16, mode="decode_step", cached=True)
    float32_bytes = step.bytes_read + step.bytes_written
    prefill, decode, as_float = r["points"]
    assert decode["bytes"] == float32_bytes - 4 * matmul_parameters(model.config) + held
    assert as_float["bytes"] == float32_bytes and decode["flops"] == as_float["flops"] == step.flops
    for p in r["points"]:
        assert p["intensity"] == pytest.approx(p["flops"] / p["bytes"], rel=1e-12)
        assert p["attainable"] == pytest.approx(min(peak, bandwidth * p["intensity"]), rel=1e-12)
        assert p["bound"] == ("memory" if p["intensity"] < peak / bandwidth else "compute")
    assert decode["intensity"] > as_float["intensity"]  # fewer bytes for the same FLOPs
    assert prefill["intensity"] > decode["intensity"]  # every weight read serves 16 tokens


def test_the_routes_measure_this_machine_and_count_held_bytes(client):
    r = client.get("/api/cost/path/roofline?n=8")
    assert r.status_code == 200, r.text
    body = r.json()
    assert math.isfinite(body["peak"]) and body["peak"] > 1e6 and body["bandwidth"] > 1e6
    assert [p["name"].split(",")[0] for p in body["points"]] == ["prefill", "decoding step at token 8"]
    cost = client.get("/api/cost/path?n=8").json()
    assert cost["held"]["formats"][0]["format"] == "float32" and cost["decode"]["held"] is None
    assert client.get("/api/cost/nothing/roofline").status_code == 404
