"""The Vision tab's step-by-step walk: each step's numbers against a hand computation in float64 from the
checkpoint's own weights (patch cut by slicing, projection as a matrix product, positions added, the classifier
on [CLS]). The walk sends 4 decimals, so each comparison allows that rounding (5e-5 per number) plus float32's."""

from __future__ import annotations

import copy

import pytest
import torch

from attnlab.explorer import api
from attnlab.explorer.views.vision import images


@pytest.fixture(scope="module")
def vit(registry):
    return next(registry.get(e.id) for e in registry.entries.values() if e.kind == "path" and e.source.name == "vit")


@pytest.mark.parametrize("token", [0, 6])
def test_walk_values_follow_the_vit_equations(vit, token):
    cfg = vit.model.config
    pixels, _ = images.to_pixels(cfg, {"mnist": 3})
    w = api.vision_walk(vit, pixels, token)
    p, g = cfg.patch_size, cfg.image_size // cfg.patch_size
    means = [float(pixels[:, r * p:(r + 1) * p, c * p:(c + 1) * p].mean()) for r in range(g) for c in range(g)]
    index = token - 1 if token else means.index(max(means))  # [CLS] (token 0) follows the brightest patch
    row, col = divmod(index, g)
    cut = pixels.double()[:, row * p:(row + 1) * p, col * p:(col + 1) * p]  # (channels, P, P) by slicing
    assert w["token"] == index + 1 and w["grid"] == g
    assert torch.tensor(w["flat"]).double() == pytest.approx(cut.flatten(), abs=5e-5)
    conv = vit.model.patches.proj
    W = conv.weight.detach().double().reshape(cfg.d_model, -1)  # (d_model, channels * P * P)
    b = conv.bias.detach().double()
    projected = cut.flatten() @ W.T + b  # a patch's token: one matrix product, no convolution
    assert torch.tensor(w["projected"]) == pytest.approx(projected, abs=1e-4)
    positions = vit.model.positions.weight.detach().double()
    assert torch.tensor(w["embedded"]) == pytest.approx(projected + positions[index + 1], abs=2e-4)
    cls = vit.model.cls_token.detach().double()[0, 0]
    assert torch.tensor(w["cls_embedded"]) == pytest.approx(cls + positions[0], abs=1e-4)
    head = vit.model.classifier
    by_hand = torch.tensor(w["final_cls"]).double() @ head.weight.detach().double().T + head.bias.detach().double()
    # the final [CLS] arrives rounded to 4 decimals: each logit may move by sum_j |W_cj| * 5e-5
    slack = float(head.weight.detach().abs().sum(-1).max()) * 5e-5 + 1e-4
    assert torch.tensor(w["logits"]) == pytest.approx(by_hand, abs=slack)
    as_float64 = copy.deepcopy(vit.model).double()  # the whole forward again in float64
    with torch.no_grad():
        logits64 = as_float64(pixels.double()[None]).logits[0]
    assert torch.tensor(w["logits"]) == pytest.approx(logits64, abs=1e-4)
    assert len(w["blocks"]) == cfg.n_layers and len(w["blocks"][-1]["cls"]) == cfg.d_model
    assert sum(w["probs"]) == pytest.approx(1.0, abs=1e-3)


def test_walk_travels_with_the_vision_answer(client_vit):
    r = client_vit.post("/api/vision", json={"model": client_vit.vit_id, "image": {"mnist": 0}, "patch": 5})
    assert r.status_code == 200 and r.json()["walk"]["token"] == 5


def test_walk_refuses_a_text_model(registry):
    lm = next(registry.get(e.id) for e in registry.entries.values() if e.kind == "path" and
              e.source.name == "decoder")
    with pytest.raises(Exception, match="needs a vision transformer"):
        api.vision_walk(lm, torch.zeros(1, 28, 28), 0)


@pytest.fixture(scope="module")
def client_vit(tiny_paths):
    from fastapi.testclient import TestClient

    from attnlab.explorer.server.app import create_app
    from attnlab.explorer.server.registry import build_registry

    registry = build_registry([tiny_paths["vit"]], shipped=False, pretrained=False)
    with TestClient(create_app(registry), base_url="http://localhost") as c:
        c.vit_id = next(i for i, e in registry.entries.items() if e.kind == "path")
        yield c
