"""attention_flow: each head's sum w.V through its slice of W_O, added up with b_O, is the attention output the
model itself produced (caught with a torch forward hook on W_O, not through attnlab's recorder), and the residual
add matches the recorded stream after the sub-layer."""

import pytest
import torch

import attnlab
from attnlab.errors import InputError
from attnlab.explorer.server.common import wrap
from attnlab.explorer.views.experiments.flow.compute import attention_flow, head_contributions
from attnlab.explorer.views.experiments.toy import compute as toy
from attnlab.presets import get


def _attn_output(model, ids, layer):
    """(seq, d_model) output of block `layer`'s self-attention, taken from W_O's own forward."""
    seen = {}
    handle = model.blocks[layer].attn.out.register_forward_hook(lambda m, i, o: seen.setdefault("out", o))
    try:
        with torch.no_grad():
            model(torch.tensor([ids]))
    finally:
        handle.remove()
    return seen["out"][0]


CASES = {
    "decoder-pre-ln-bias": dict(preset="tiny-decoder", vocab_size=256, d_model=32, d_ff=64, max_len=64),
    "decoder-gqa-rope": dict(preset="tiny-decoder", vocab_size=256, d_model=32, d_ff=64, max_len=64, n_heads=4,
                             n_kv_heads=2, position="rope", bias=False),
    "encoder-post-ln": dict(preset="tiny-encoder", vocab_size=256, d_model=32, d_ff=64, max_len=64,
                            norm_placement="post"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_heads_sum_to_the_attention_output(case):
    spec = dict(CASES[case])
    torch.manual_seed(7)
    model = attnlab.build_model(get(spec.pop("preset"), **spec)).eval()
    lm = wrap(model, None, model_id="tiny")
    text = "heads add up"
    ids = [ord(c) for c in text]
    layer = model.config.n_layers - 1
    out = _attn_output(model, ids, layer)  # (seq, d_model)
    for token in (0, 5, len(ids) - 1):
        r = attention_flow(lm, text, layer, token)
        assert r["channels_shown"] == model.config.d_model  # tiny: every channel is sent
        total = torch.tensor(r["contribution"], dtype=torch.float64).sum(0)
        if r["bias"] is not None:
            total = total + torch.tensor(r["bias"], dtype=torch.float64)
        # each contribution is rounded to 4 decimals: n_heads roundings of 5e-5 at most, plus float32 error
        torch.testing.assert_close(total, out[token].double(), atol=r["n_heads"] * 5e-5 + 1e-5, rtol=0)
        shown = torch.tensor(r["output"], dtype=torch.float64)
        torch.testing.assert_close(shown, out[token].double(), atol=5e-5 + 1e-5, rtol=0)
        x = torch.tensor(r["residual_in"], dtype=torch.float64)
        if model.config.norm_placement == "pre":
            after = torch.tensor(r["residual_out"], dtype=torch.float64)
            torch.testing.assert_close(after, x + out[token].double(), atol=2e-4, rtol=0)
        weights = torch.tensor(r["weights"])  # (heads, seq)
        torch.testing.assert_close(weights.sum(-1), torch.ones(r["n_heads"], dtype=weights.dtype), atol=1e-3,
                                   rtol=0)
        if model.config.topology == "decoder":  # causal: nothing from later tokens
            assert weights[:, token + 1:].abs().max().item() == 0 if token + 1 < len(ids) else True


@pytest.mark.parametrize("case", list(CASES))
def test_unrounded_sum_within_float32(case):
    """head_contributions on the recorded V and weights: the heads' sum + b_O is W_O's own output to float32
    rounding (a sum of n_heads * d_head products of values of order 1)."""
    spec = dict(CASES[case])
    torch.manual_seed(8)
    model = attnlab.build_model(get(spec.pop("preset"), **spec)).eval()
    ids = [ord(c) for c in "float32 sum"]
    out = _attn_output(model, ids, 0)
    rec = attnlab.record(model, torch.tensor([ids]), names=["blocks.0.attn.v", "blocks.0.attn.weights"])
    w_o = model.blocks[0].attn.out
    for token in range(len(ids)):
        _, c = head_contributions(rec["blocks.0.attn.v"][0], rec["blocks.0.attn.weights"][0], w_o.weight.detach(),
                                  token)
        total = c.sum(0) + (w_o.bias.detach() if w_o.bias is not None else 0)
        torch.testing.assert_close(total, out[token], atol=1e-5, rtol=1e-5)


def test_per_head_numbers_against_numpy_on_the_toy():
    """The toy's "cat" in layer 0: z and each head's W_O share recomputed with numpy from the weights alone."""
    import numpy as np

    model, tok = toy.build()
    lm = wrap(model, tok, model_id="toy")
    r = attention_flow(lm, "the cat sat on the mat", 0, 1)
    emb = toy.embedding_table().numpy()
    ids = tok.encode("the cat sat on the mat", add_special_tokens=False)
    x = emb[ids]  # (seq, 8): post-LN, no positions: attention reads the raw embeddings
    w_q, w_k, w_v = (w.numpy() for w in toy.projections())
    w_o = model.blocks[0].attn.out.weight.detach().numpy()  # (8, 16)
    for h in range(4):
        s = (x @ w_q[h]) @ (x @ w_k[h]).T / 2.0
        w = np.exp(s[1] - s[1].max())
        w /= w.sum()
        z = w @ (x @ w_v[h])
        np.testing.assert_allclose(r["weights"][h], w, atol=5e-5)
        np.testing.assert_allclose(r["z"][h], z, atol=5e-5)
        np.testing.assert_allclose(r["contribution"][h], w_o[:, 4 * h:4 * h + 4] @ z, atol=5e-5)
    assert r["dims"] == list(toy.DIMS)
    # head 1 (subject -> verb) sends "cat" mostly to "sat": its z holds sat's values, its share is the largest
    assert int(np.argmax(r["weights"][0])) == 2


def test_refusals():
    model, tok = toy.build()
    lm = wrap(model, tok, model_id="toy")
    with pytest.raises(InputError, match="layer 3 does not exist"):
        attention_flow(lm, "the cat", 3, 0)
    with pytest.raises(InputError, match="token 9 does not exist"):
        attention_flow(lm, "the cat", 0, 9)
    torch.manual_seed(0)
    encdec = wrap(attnlab.build_model(get("tiny-encoder-decoder", vocab_size=256, d_model=32, d_ff=64)), None)
    with pytest.raises(InputError, match="encoder-decoder"):
        attention_flow(encdec, "abc", 0, 0)


def test_head_detail_is_the_w_o_slice_and_the_sent_v_mixes_to_z():
    """The detail view's numbers hang together: W_O's slice is the model's, and the sent weights times the sent V
    give the sent sum w.V (each rounded to 4 decimals)."""
    torch.manual_seed(9)
    model = attnlab.build_model(get("tiny-decoder", vocab_size=256, d_model=32, d_ff=64, max_len=64)).eval()
    lm = wrap(model, None, model_id="tiny")
    r = attention_flow(lm, "slice of W_O", 1, 4, head=2)
    d_head = r["d_head"]
    expected = model.blocks[1].attn.out.weight.detach()[:, 2 * d_head:3 * d_head]
    torch.testing.assert_close(torch.tensor(r["w_o_head"], dtype=torch.float64), expected.double(), atol=5e-5,
                               rtol=0)
    w, v = torch.tensor(r["weights"][2], dtype=torch.float64), torch.tensor(r["v"][2], dtype=torch.float64)
    torch.testing.assert_close(w @ v, torch.tensor(r["z"][2], dtype=torch.float64), atol=5e-4, rtol=0)
    default = attention_flow(lm, "slice of W_O", 1, 4)
    assert default["head"] == max(range(default["n_heads"]), key=lambda h: default["contribution_norm"][h])
    with pytest.raises(InputError, match="head 9 does not exist"):
        attention_flow(lm, "abc", 0, 0, head=9)
