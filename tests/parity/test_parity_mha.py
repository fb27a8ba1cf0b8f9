"""attnlab's Attention equals torch.nn.MultiheadAttention on the same weights.

MHA packs W_Q, W_K, W_V as rows of in_proj_weight in that order, exactly attnlab's fused `qkv`; cross-attention
takes the first third for `q` and the rest for `kv`. Tolerance 1e-5 (float32; outputs of size ~5).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnlab.config import ModelConfig
from attnlab.layers.attention import Attention
from attnlab.layers.masks import attention_bias

D, HEADS, TOL = 32, 4, 1e-5


def _pair(cross: bool = False, bias: bool = True) -> tuple[Attention, nn.MultiheadAttention]:
    torch.manual_seed(0)
    config = ModelConfig(d_model=D, n_heads=HEADS, bias=bias)
    ours = Attention(config, cross=cross).eval()
    ref = nn.MultiheadAttention(D, HEADS, bias=bias, batch_first=True).eval()
    with torch.no_grad():
        for p in ref.parameters():
            p.normal_(0, 0.3)
        if cross:
            ours.q.weight.copy_(ref.in_proj_weight[:D])
            ours.kv.weight.copy_(ref.in_proj_weight[D:])
            if bias:
                ours.q.bias.copy_(ref.in_proj_bias[:D])
                ours.kv.bias.copy_(ref.in_proj_bias[D:])
        else:
            ours.qkv.weight.copy_(ref.in_proj_weight)
            if bias:
                ours.qkv.bias.copy_(ref.in_proj_bias)
        ours.out.weight.copy_(ref.out_proj.weight)
        if bias:
            ours.out.bias.copy_(ref.out_proj.bias)
    return ours, ref


def _padding() -> torch.Tensor:
    mask = torch.ones(3, 7, dtype=torch.long)
    mask[1, 5:] = 0
    mask[2, 2:] = 0
    return mask


def _gap(ours, ref, x, context=None, mask=None, causal=False) -> float:
    """max |MHA - ours| on the same inputs: attnlab's bias from attention_bias(mask, causal), MHA's from its own
    key_padding_mask (True = pad) and, when causal, a boolean future mask (True = may not attend)."""
    keys = x if context is None else context
    q_len, k_len = x.shape[1], keys.shape[1]
    bias, is_causal = attention_bias(q_len=q_len, k_len=k_len, causal=causal, attention_mask=mask)
    future = torch.triu(torch.ones(q_len, k_len, dtype=torch.bool), diagonal=1) if causal else None
    with torch.no_grad():
        expected, _ = ref(x, keys, keys, attn_mask=future, need_weights=False,
                          key_padding_mask=None if mask is None else ~mask.bool())
        got = ours(x, bias=bias, is_causal=is_causal, context=context)
    return float((expected - got).abs().max())


@pytest.mark.parametrize("bias", [True, False])
def test_self_attention_plain(bias):
    ours, ref = _pair(bias=bias)
    assert _gap(ours, ref, torch.randn(3, 7, D, generator=torch.Generator().manual_seed(1))) <= TOL


def test_self_attention_key_padding():
    ours, ref = _pair()
    x = torch.randn(3, 7, D, generator=torch.Generator().manual_seed(2))
    assert _gap(ours, ref, x, mask=_padding()) <= TOL


@pytest.mark.parametrize("padded", [False, True])
def test_self_attention_causal(padded):
    ours, ref = _pair()
    x = torch.randn(3, 7, D, generator=torch.Generator().manual_seed(3))
    # with right padding every query keeps at least its own (real) key or an earlier real one
    assert _gap(ours, ref, x, mask=_padding() if padded else None, causal=True) <= TOL


def test_cross_attention():
    ours, ref = _pair(cross=True)
    g = torch.Generator().manual_seed(4)
    x, context = torch.randn(3, 5, D, generator=g), torch.randn(3, 7, D, generator=g)
    assert _gap(ours, ref, x, context=context, mask=_padding()) <= TOL


def test_recorded_weights_equal_mha_weights():
    """The explicit (recording) path gives MHA's per-head attention weights too."""
    from attnlab.recording import capture

    ours, ref = _pair()
    x = torch.randn(3, 7, D, generator=torch.Generator().manual_seed(5))
    mask = _padding()
    bias, _ = attention_bias(q_len=7, k_len=7, causal=False, attention_mask=mask)
    with torch.no_grad(), capture(ours, ["weights"]) as store:  # the attention is the recorded root: no path
        ours(x, bias=bias)
        _, expected = ref(x, x, x, key_padding_mask=~mask.bool(), need_weights=True, average_attn_weights=False)
    assert (store["weights"] - expected).abs().max() <= TOL
