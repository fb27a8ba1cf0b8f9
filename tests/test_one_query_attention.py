"""The bf16 / fp16 decoding step's attention (one query position) against torch's own SDPA."""

import pytest
import torch
import torch.nn.functional as F

import attnlab
from attnlab.layers.attention import one_query_attention


@pytest.mark.parametrize("groups", [1, 3, 9])  # grouped-query (3, 9 query heads each), and multi-query (1)
def test_one_query_attention_equals_sdpa_in_float32_with_padding_and_per_head_bias(groups):
    gen = torch.Generator().manual_seed(groups)
    q = torch.randn(4, 9, 1, 16, generator=gen)
    k, v = torch.randn(2, 4, groups, 11, 16, generator=gen)
    pad = torch.zeros(4, 1, 1, 11)
    pad[1, ..., :3] = float("-inf")  # a left-padded row
    per_head = torch.randn(1, 9, 1, 11, generator=gen)  # ALiBi-like: one bias row per head
    for bias in (None, pad, pad + per_head):
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=0.3, enable_gqa=groups != 9)
        torch.testing.assert_close(one_query_attention(q, k, v, bias, 0.3), ref, rtol=0, atol=2e-6)
    keep = pad == 0  # a boolean mask means "may attend", as in SDPA
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=0.3, enable_gqa=groups != 9)
    torch.testing.assert_close(one_query_attention(q, k, v, keep, 0.3), ref, rtol=0, atol=2e-6)


def test_bfloat16_padded_decoding_takes_it_and_stays_within_bfloat16_rounding_of_float32(monkeypatch):
    """Greedy decoding of a padded batch in bfloat16 follows the float32 model's logits to bf16's precision."""
    from attnlab.layers import attention

    calls = []
    monkeypatch.setattr(attention, "one_query_attention",
                        lambda *a: calls.append(a[0].dtype) or one_query_attention(*a))
    model = attnlab.build_model(attnlab.presets["tiny-llama"]).eval()
    prompts = [[5, 6, 7, 8, 9], [10, 11]]
    full = attnlab.generate(model, prompts, max_new_tokens=4, keep_logits=True)
    half = attnlab.generate(model.to(torch.bfloat16), prompts, max_new_tokens=4, keep_logits=True)
    first = torch.stack([s.float() for s in half.logits])  # (steps, batch, vocab)
    ref = torch.stack(list(full.logits))
    scale = ref.abs().max()
    assert calls and set(calls) == {torch.bfloat16}  # only the bf16 steps, each with one query position
    assert (first - ref).abs().max() <= 0.05 * scale  # bf16 keeps 8 bits: ~0.4% a rounding, over a few layers
