"""Direct logit attribution (attnlab.interventions.logit_attribution), against the model's own logits and a hand
computation.

- the parts (heads, W_O biases, MLPs, embedding, the norm's beta and the head's bias) add up to the model's
  logit difference, float32 models to float32 rounding: LayerNorm and RMSNorm (tiny-llama: RoPE, GQA), tied and
  untied heads, a vocabulary bias, with and without a contrast token;
- each head's value equals its recorded head_out, centred, divided by the full stream's scale, times gamma and
  W_U[answer] - W_U[contrast], written out here from the norm's definition;
- blocks that normalise each sub-layer's output before adding it (OLMo 2's "output", Gemma 2's "sandwich"):
  each head's share through that norm, its scale held at the attention's whole output, against a hand computation
  and the recorded residual stream;
- models that do not decompose are refused with one InputError naming why.
"""

from __future__ import annotations

import pytest
import torch

import attnlab
from attnlab.errors import InputError
from attnlab.interventions.logit_attribution import direct_logit_attribution

ANSWER, CONTRAST = 5, 9


def _model(preset: str = "tiny-decoder", **overrides):
    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.presets[preset].replace(vocab_size=64, **overrides)).eval()
    with torch.no_grad():  # move biases and norms off their zero/one init, so a wrong gamma or beta shows
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return model


def _ids(seq: int = 6) -> torch.Tensor:
    return torch.randint(0, 64, (1, seq), generator=torch.Generator().manual_seed(1))


def _logit_diff(model, ids, position, contrast) -> float:
    with torch.no_grad():
        logits = model(ids).logits[0, position].double()
    return float(logits[ANSWER] - (logits[contrast] if contrast is not None else 0))


@pytest.mark.parametrize("preset,overrides", [
    ("tiny-decoder", {}),
    ("tiny-decoder", {"norm": "rmsnorm", "bias": False}),
    ("tiny-decoder", {"tie_embeddings": False, "lm_head_bias": True}),
    ("tiny-llama", {}),
])
@pytest.mark.parametrize("contrast", [CONTRAST, None])
def test_parts_add_up_to_the_models_logit_difference(preset, overrides, contrast):
    model, ids = _model(preset, **overrides), _ids()
    for position in (-1, 2):
        dla = direct_logit_attribution(model, ids, ANSWER, contrast=contrast, position=position)
        want = _logit_diff(model, ids, position, contrast)
        assert dla["heads"].shape == (model.config.n_layers, model.config.n_heads)
        assert dla["mlp"].shape == dla["attn_bias"].shape == (model.config.n_layers,)
        assert float(dla["logit_diff"]) == pytest.approx(want, abs=1e-5)
        parts = dla["heads"].sum() + dla["attn_bias"].sum() + dla["mlp"].sum() + dla["embed"] + dla["constant"]
        assert float(parts) == pytest.approx(want, abs=2e-5 * max(1.0, abs(want)))
        assert float(dla["total"]) == pytest.approx(float(parts), abs=1e-12)
        assert dla["heads"].abs().sum() > 1e-3  # the heads do contribute: a zero grid would pass the sum check


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_each_head_equals_its_recorded_output_read_through_the_frozen_norm(norm):
    model, ids = _model(norm=norm), _ids()
    names = ["blocks.*.attn.head_out", f"blocks.{model.config.n_layers - 1}.resid_post"]
    rec = attnlab.record(model, ids, names=names)
    resid = rec[f"blocks.{model.config.n_layers - 1}.resid_post"][0, -1].double()
    fn = model.final_norm
    if norm == "layernorm":
        scale = torch.sqrt(((resid - resid.mean()) ** 2).mean() + fn.eps)
    else:
        scale = torch.sqrt((resid ** 2).mean() + fn.eps)
    w_u = model.lm_head.proj.weight.detach().double()
    read = fn.weight.detach().double() * (w_u[ANSWER] - w_u[CONTRAST]) / scale
    dla = direct_logit_attribution(model, ids, ANSWER, contrast=CONTRAST)
    for layer in range(model.config.n_layers):
        for head in range(model.config.n_heads):
            out = rec[f"blocks.{layer}.attn.head_out"][0, head, -1].double()  # (d_model,)
            if norm == "layernorm":
                out = out - out.mean()
            assert float(dla["heads"][layer, head]) == pytest.approx(float(out @ read), abs=1e-6)


@pytest.mark.parametrize("placement", ["output", "sandwich"])
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_output_and_sandwich_norms_give_each_heads_share_of_what_its_layer_added(placement, norm):
    """OLMo 2's norm_placement="output" and Gemma 2's "sandwich" normalise each sub-layer's output before adding
    it: the parts still add up to the logit difference, a layer's heads and bias add up to what its attention
    added to the stream (resid_mid - resid_pre, recorded), and each head's share is its head_out through the
    output norm with that norm's scale held at the attention's whole output, written out here."""
    model, ids = _model(norm=norm, norm_placement=placement), _ids()
    dla = direct_logit_attribution(model, ids, ANSWER, contrast=CONTRAST)
    want = _logit_diff(model, ids, -1, CONTRAST)
    assert float(dla["total"]) == pytest.approx(want, abs=2e-5 * max(1.0, abs(want)))
    assert dla["heads"].abs().sum() > 1e-3
    last = model.config.n_layers - 1
    rec = attnlab.record(model, ids, names=["blocks.*.attn.head_out", "blocks.*.resid_pre", "blocks.*.resid_mid",
                                            f"blocks.{last}.resid_post"])
    resid = rec[f"blocks.{last}.resid_post"][0, -1].double()
    fn = model.final_norm
    centre = (lambda v: v - v.mean(-1, keepdim=True)) if norm == "layernorm" else (lambda v: v)
    scale = torch.sqrt((centre(resid) ** 2).mean() + fn.eps)
    w_u = model.lm_head.proj.weight.detach().double()
    read = fn.weight.detach().double() * (w_u[ANSWER] - w_u[CONTRAST]) / scale
    for layer, block in enumerate(model.blocks):
        out_norm = block.norm1 if placement == "output" else block.norm1.after
        heads = rec[f"blocks.{layer}.attn.head_out"][0, :, -1].double()  # (heads, d_model)
        bias = block.attn.out.bias.detach().double() if block.attn.out.bias is not None else 0 * heads[0]
        whole = heads.sum(0) + bias  # the attention's output, what the output norm reads
        s_out = torch.sqrt((centre(whole) ** 2).mean() + out_norm.eps)
        shares = out_norm.weight.detach().double() * centre(heads) / s_out  # (heads, d_model)
        beta = out_norm.bias.detach().double() if getattr(out_norm, "bias", None) is not None else 0
        added = rec[f"blocks.{layer}.resid_mid"][0, -1].double() - rec[f"blocks.{layer}.resid_pre"][0, -1].double()
        torch.testing.assert_close(shares.sum(0) + out_norm.weight.detach().double() * centre(bias) / s_out + beta,
                                   added, atol=2e-5, rtol=1e-4)  # float32 model, float64 sums
        for head in range(model.config.n_heads):
            assert float(dla["heads"][layer, head]) == pytest.approx(float(centre(shares[head]) @ read), abs=1e-6)


@pytest.mark.parametrize("overrides,words", [({"norm_placement": "post"}, "norm_placement 'pre', 'output'"),
                                             ({"lm_head_transform": True}, "not linear")])
def test_models_that_do_not_decompose_are_refused(overrides, words):
    model = _model(**overrides)
    with pytest.raises(InputError, match=words):
        direct_logit_attribution(model, _ids(), ANSWER, contrast=CONTRAST)


def test_bad_tokens_and_positions_name_the_allowed_range():
    model = _model()
    with pytest.raises(InputError, match=r"contrast=64: allowed a token id in \[0, 64\)"):
        direct_logit_attribution(model, _ids(), ANSWER, contrast=64)
    with pytest.raises(InputError, match="position=6"):
        direct_logit_attribution(model, _ids(), ANSWER, position=6)
    with pytest.raises(InputError, match="one sentence"):
        direct_logit_attribution(model, _ids().repeat(2, 1), ANSWER)


def test_exported_lazily_from_the_package():
    assert attnlab.direct_logit_attribution is direct_logit_attribution
