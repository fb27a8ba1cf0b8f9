"""Layers against independent references: closed-form math, HF's T5 bucketing, torch's own modules."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import attnlab
from attnlab.layers.feedforward import FeedForward
from attnlab.layers.linear import Linear
from attnlab.layers.masks import attention_bias, causal_mask
from attnlab.layers.positions import ALiBi, Rotary, T5RelativeBias, apply_rotary, sinusoid_table
from attnlab.models.heads import LMHead


def test_sinusoid_table_matches_the_formula():
    table = sinusoid_table(50, 16)
    for pos in (0, 1, 7, 49):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    halves = sinusoid_table(50, 16, "halves")
    assert torch.equal(halves[:, :8], table[:, 0::2]) and torch.equal(halves[:, 8:], table[:, 1::2])


def test_rope_scores_depend_only_on_the_offset():
    rotary = Rotary(8)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)

    def score(i, j):
        cos_i, sin_i = rotary(torch.tensor([[i]]))
        cos_j, sin_j = rotary(torch.tensor([[j]]))
        return (apply_rotary(q, cos_i, sin_i) * apply_rotary(k, cos_j, sin_j)).sum().item()

    assert score(5, 2) == pytest.approx(score(13, 10), abs=1e-5)
    assert score(5, 2) != pytest.approx(score(5, 3), abs=1e-3)
    # rotation keeps the norm
    cos, sin = rotary(torch.tensor([[7]]))
    assert apply_rotary(q, cos, sin).norm().item() == pytest.approx(q.norm().item(), rel=1e-6)


def test_alibi_slopes_and_bias():
    alibi = ALiBi(8)
    assert torch.allclose(alibi.slopes, torch.tensor([2.0 ** -(h + 1) for h in range(8)]))
    bias = alibi(torch.arange(4), torch.arange(4))
    assert bias.shape == (8, 4, 4)
    assert bias[0, 3, 0].item() == pytest.approx(-0.5 * 3)
    assert torch.all(torch.diagonal(bias, dim1=1, dim2=2) == 0)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_buckets_match_huggingface(bidirectional):
    from transformers.models.t5.modeling_t5 import T5Attention

    relative = torch.arange(-300, 300)[None, :]
    ours = T5RelativeBias(4, 32, 128, bidirectional).bucket(relative)
    theirs = T5Attention._relative_position_bucket(relative, bidirectional=bidirectional, num_buckets=32,
                                                   max_distance=128)
    assert torch.equal(ours, theirs)


def test_causal_mask_is_bottom_right_aligned():
    keep = causal_mask(2, 5)  # two new queries after three cached keys
    assert keep.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]
    assert torch.equal(causal_mask(4, 4), torch.ones(4, 4, dtype=torch.bool).tril())


def test_fully_masked_rows_are_finite():
    mask = torch.tensor([[0, 0, 0]])
    bias, _ = attention_bias(q_len=3, k_len=3, causal=False, attention_mask=mask)
    q = k = v = torch.randn(1, 2, 3, 4)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("activation, reference", [
    ("relu", lambda g, u: F.relu(g)), ("gelu", lambda g, u: F.gelu(g)),
    ("gelu_tanh", lambda g, u: F.gelu(g, approximate="tanh")), ("silu", lambda g, u: F.silu(g)),
    ("swiglu", lambda g, u: F.silu(g) * u), ("geglu", lambda g, u: F.gelu(g) * u),
    ("reglu", lambda g, u: F.relu(g) * u),
])
def test_feedforward_variants(activation, reference):
    config = attnlab.ModelConfig(d_model=8, n_heads=2, d_ff=12, activation=activation)
    ffn = FeedForward(config)
    x = torch.randn(2, 3, 8)
    w, b = ffn.up.weight, ffn.up.bias
    if config.gated:
        g, u = x @ w[:12].T + b[:12], x @ w[12:].T + b[12:]
    else:
        g, u = x @ w.T + b, None
    expected = reference(g, u) @ ffn.down.weight.T + ffn.down.bias
    assert torch.allclose(ffn(x), expected, atol=1e-6)
    assert ffn.up.out_features == (24 if config.gated else 12)


def test_explicit_path_equals_fast_path():
    """Recording switches attention to explicit math; its outputs must equal the SDPA path."""
    for name in ["tiny-llama", "tiny-encoder", "tiny-t5"]:
        model = attnlab.build_model(attnlab.presets[name]).eval()
        ids = torch.randint(0, 1000, (2, 9))
        mask = torch.tensor([[1] * 9, [1] * 6 + [0] * 3])
        args = (ids, ids[:, :5]) if model.config.topology == "encoder-decoder" else (ids,)
        kwargs = {"attention_mask": mask}
        with torch.no_grad():
            fast = model(*args, **kwargs).logits
            with attnlab.recording.capture(model) as store:
                slow = model(*args, **kwargs).logits
        assert any(k.endswith("attn.weights") for k in store)
        assert torch.allclose(fast, slow, atol=1e-5), name


# ------------------------------------------------------------------------------------- decode-time tricks
# Layers that speed up decoding change how numbers are laid out and multiplied, never the numbers: each is
# checked against the plain product (F.linear on the parameter itself) to float32 rounding.
def _linear(d_in=16, d_out=48, bias=True, seed=0):
    torch.manual_seed(seed)
    return Linear(d_in, d_out, bias=bias)


def test_linear_decode_copy_is_made_after_min_calls_and_gives_the_plain_product():
    layer = _linear()
    one_row = torch.randn(1, 1, 16)
    with torch.no_grad():
        for _ in range(Linear.MIN_CALLS - 1):
            torch.testing.assert_close(layer(one_row), F.linear(one_row, layer.weight, layer.bias))
        assert layer.decode_copy_bytes == 0  # short uses never pay for the copy
        out = layer(one_row)  # the MIN_CALLS-th one-row product makes it
        assert layer.decode_copy_bytes == 16 * 48 * 4
        assert layer.weight_for(one_row).stride() == (1, 48)  # an (out, in) view of (in, out) storage
        torch.testing.assert_close(out, F.linear(one_row, layer.weight, layer.bias), atol=1e-6, rtol=0)
        rows = torch.randn(2, Linear.MAX_ROWS, 16)  # more rows than MAX_ROWS: the parameter itself
        assert layer.weight_for(rows) is layer.weight
    assert set(layer.state_dict()) == {"weight", "bias"}  # neither a parameter nor a buffer
    narrow = _linear(48, 16)
    with torch.no_grad():
        for _ in range(Linear.MIN_CALLS + 1):
            narrow(torch.randn(1, 48))
    assert narrow.decode_copy_bytes == 0  # out <= in: faster as (out, in), never copied


def test_linear_decode_copy_follows_every_weight_change_and_is_dropped_by_training(monkeypatch):
    monkeypatch.setattr(Linear, "MIN_CALLS", 1)
    layer = _linear()
    x = torch.randn(1, 16)

    def check():
        with torch.no_grad():
            got = layer(x)
        assert layer.decode_copy_bytes > 0
        torch.testing.assert_close(got, F.linear(x, layer.weight, layer.bias), atol=1e-5, rtol=1e-5)

    check()
    with torch.no_grad():
        layer.weight.mul_(-2.0)  # in place (an optimizer step, load_state_dict)
    check()
    layer.weight = nn.Parameter(torch.randn(48, 16))  # replaced (tying, reassignment)
    check()
    layer.double()
    x = x.double()
    check()
    assert layer.weight_for(x).dtype == torch.float64
    out = layer(x)  # autograd on a trainable weight: training uses the parameter and frees the copy
    assert layer.decode_copy_bytes == 0
    out.sum().backward()
    torch.testing.assert_close(layer.weight.grad, x.expand(48, 16))


def test_linear_decode_copy_made_in_inference_mode_is_an_ordinary_tensor(monkeypatch):
    monkeypatch.setattr(Linear, "MIN_CALLS", 1)
    layer = _linear()
    with torch.inference_mode():
        layer(torch.randn(1, 16))
    assert layer.decode_copy_bytes > 0 and not layer._copy[2].is_inference()
    frozen = layer.requires_grad_(False)
    x = torch.randn(1, 16, requires_grad=True)  # gradients through a frozen layer never meet the copy
    frozen(x).sum().backward()
    torch.testing.assert_close(x.grad, layer.weight.sum(0, keepdim=True))


@pytest.mark.parametrize("bias", [False, True])
def test_lm_head_slices_and_copy_equal_the_plain_product(bias, monkeypatch):
    """4-16 rows, one thread: CHUNK vocabulary rows per product (97 = 9 slices of 10 + 7); one row: the copy."""
    config = attnlab.ModelConfig(d_model=8, n_heads=2, vocab_size=97, lm_head_bias=bias)
    torch.manual_seed(1)
    head = LMHead(config)
    if bias:
        nn.init.normal_(head.bias)
    monkeypatch.setattr(LMHead, "CHUNK", 10)
    monkeypatch.setattr(Linear, "MIN_CALLS", 1)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    products = []
    linear = F.linear
    monkeypatch.setattr(F, "linear", lambda *a: products.append(a[1].shape) or linear(*a))

    def plain(h):
        return linear(h, head.proj.weight, head.bias)

    h = torch.randn(2, 3, 8)  # 6 rows
    with torch.no_grad():
        torch.testing.assert_close(head(h), plain(h), atol=1e-6, rtol=0)
    assert len(products) == 10 and products[0] == (10, 8)
    one = torch.randn(1, 1, 8)
    with torch.no_grad():
        torch.testing.assert_close(head(one), plain(one), atol=1e-6, rtol=0)
    assert head.proj.decode_copy_bytes == 97 * 8 * 4
    products.clear()
    many = torch.randn(2, 9, 8)  # 18 rows: one product, as in training
    with torch.no_grad():
        torch.testing.assert_close(head(many), plain(many), atol=1e-6, rtol=0)
    assert products == [(97, 8)]
