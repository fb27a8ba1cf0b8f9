"""The fused decode step: fused QKV split by one view, K and V written to the cache in one copy, no host reads.

A decoding step runs every layer on one token, so attnlab trims its small kernels (attention.py, cache.py,
block.py, generation/loop.py). Those paths rearrange views and copies, never the numbers, so each is checked
against an independent computation: attention written out from the weight matrices by hand, the cache
contents against K and V projected by hand, cached decoding against one full forward pass. Float32; the
tolerance 1e-5 is float32 rounding of differently ordered sums.
"""

from __future__ import annotations

import math
import time

import pytest
import torch
import torch.nn.functional as F

import attnlab
from attnlab.benchmarks.decode_step import cached_step, matvec_step, step_parts, tiny_twin, without_products
from attnlab.cache import KVCache, LayerCache
from attnlab.errors import InputError
from attnlab.layers.attention import Attention

ATOL = 1e-5


def _config(position: str, kv_heads: int | None = None):
    return attnlab.presets["tiny-decoder"].replace(position=position, n_kv_heads=kv_heads, vocab_size=97, max_len=64)


def _by_hand(attn: Attention, x: torch.Tensor, rope=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Causal multi-head attention from the weight matrices: -> output, K, V (K rotated when rope is given)."""
    batch, seq, _ = x.shape
    h, dh = attn.n_heads, attn.d_head
    w, b = attn.qkv.weight, attn.qkv.bias
    q, k, v = (F.linear(x, w[i * h * dh:(i + 1) * h * dh], b[i * h * dh:(i + 1) * h * dh]) for i in range(3))
    q, k, v = (t.reshape(batch, seq, h, dh).permute(0, 2, 1, 3) for t in (q, k, v))  # (batch, heads, seq, dh)
    if rope is not None:
        cos, sin = rope

        def rotate(t):
            half = dh // 2
            return t * cos + torch.cat((-t[..., half:], t[..., :half]), dim=-1) * sin
        q, k = rotate(q), rotate(k)
    scores = q @ k.transpose(-2, -1) / math.sqrt(dh)
    scores = scores.masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), float("-inf"))
    out = (scores.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(batch, seq, h * dh)
    return F.linear(out, attn.out.weight, attn.out.bias), k, v


@pytest.mark.parametrize("position", ["learned", "rope"])
def test_fused_qkv_view_and_one_copy_cache_write_equal_attention_by_hand(position):
    torch.manual_seed(0)
    config = _config(position)
    attn = Attention(config).eval()
    x = torch.randn(2, 7, config.d_model)
    rope = None
    if position == "rope":
        from attnlab.layers.positions import Rotary
        rope = Rotary(config.head_dim)(torch.arange(7).expand(2, 7))
    expected, k, v = _by_hand(attn, x, rope)
    cache = LayerCache(2, config.n_heads, 10, config.head_dim, torch.float32, None)
    with torch.no_grad():
        whole = attn(x, is_causal=True, rope=rope)
        # prompt of 4 through the cache, then one token at a time: the decoding pattern
        first = attn(x[:, :4], is_causal=True, rope=None if rope is None else tuple(r[:, :, :4] for r in rope),
                     cache=cache)
        steps = [attn(x[:, i:i + 1], rope=None if rope is None else tuple(r[:, :, i:i + 1] for r in rope),
                      cache=cache) for i in range(4, 7)]
    torch.testing.assert_close(whole, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(torch.cat([first, *steps], dim=1), expected, atol=ATOL, rtol=0)
    assert cache.length == 7
    torch.testing.assert_close(cache.k[:, :, :7], k, atol=ATOL, rtol=0)  # keys after rotation
    torch.testing.assert_close(cache.v[:, :, :7], v, atol=ATOL, rtol=0)


def test_append_kv_writes_both_halves_in_place_and_refuses_past_capacity():
    one, two = (LayerCache(2, 3, 5, 4, torch.float32, None) for _ in range(2))
    kv = torch.randn(2, 2, 3, 4, 4)
    pointer = one.kv.data_ptr()
    k1, v1 = one.append_kv(kv[:, :, :, :3])
    k2, v2 = two.append(kv[0, :, :, :3], kv[1, :, :, :3])
    assert torch.equal(k1, k2) and torch.equal(v1, v2) and torch.equal(k1, kv[0, :, :, :3])
    # a strided view (as attention passes it: a slice of the permuted QKV projection) is copied correctly
    qkv = torch.randn(2, 1, 3, 3, 4).permute(2, 0, 3, 1, 4)  # (3, batch, heads, 1, d_head), not contiguous
    k1, v1 = one.append_kv(qkv[1:])
    assert one.length == 4 and torch.equal(k1[:, :, 3:], qkv[1]) and torch.equal(v1[:, :, 3:], qkv[2])
    assert k1.data_ptr() == pointer and one.k.data_ptr() == pointer  # views of the one preallocated buffer
    one.append_kv(kv[:, :, :, :1])  # fills the 5th and last position
    with pytest.raises(InputError, match="KV cache is full: it holds 5 positions, 6 needed"):
        one.append_kv(kv[:, :, :, :1])
    with pytest.raises(InputError, match="KV cache is full"):
        one.append(kv[0, :, :, :1], kv[1, :, :, :1])


@pytest.mark.parametrize("position", ["learned", "rope", "alibi"])
def test_multi_head_cached_decoding_equals_one_full_forward(position):
    """test_generation.py covers grouped-query models; plain multi-head attention takes the fused-view path."""
    torch.manual_seed(1)
    model = attnlab.build_model(_config(position)).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0, 0.08)
    ids = torch.tensor([[5, 17, 3, 44, 9], [21, 8, 2, 71, 90]])
    result = attnlab.generate(model, ids, max_new_tokens=8, keep_logits=True, eos_token_id=None)
    with torch.no_grad():
        reference = model(result.sequences).logits
    for step, logits in enumerate(result.logits):
        torch.testing.assert_close(logits, reference[:, 4 + step], atol=ATOL, rtol=0)


def test_without_eos_every_row_runs_to_max_new_tokens_and_with_eos_it_stops():
    """The loop skips its per-step stop check (a host read) when nothing can stop a sequence."""
    torch.manual_seed(2)
    model = attnlab.build_model(_config("learned")).eval()
    free = attnlab.generate(model, [[5, 6, 7]], max_new_tokens=6, eos_token_id=None)
    assert len(free.tokens[0]) == 6 and free.finished == [False]
    eos = free.tokens[0][2]
    stopped = attnlab.generate(model, [[5, 6, 7]], max_new_tokens=6, eos_token_id=eos)
    assert stopped.tokens[0] == free.tokens[0][: free.tokens[0].index(eos) + 1] and stopped.finished == [True]


def test_benchmark_step_parts_run_the_models_own_step():
    torch.manual_seed(3)
    model = attnlab.build_model(_config("learned").replace(max_len=512)).eval()
    twin = tiny_twin(model)
    assert (twin.config.n_layers, twin.config.n_heads, twin.config.position) == (2, 4, "learned")
    assert twin.config.d_model < model.config.d_model
    step = cached_step(model, 16)
    step()
    step()  # the benchmark calls it repeatedly: the token's slot is reused, the cache stays at 16
    products = matvec_step(model)
    products()
    real = torch.nn.functional.linear
    without_products(step)()
    assert torch.nn.functional.linear is real  # the swap is undone
    parts = step_parts(model, reps=1, clock=time.process_time, warmup=1, read_bytes=2**20)
    assert set(parts) == {"step @16", "step @256", "matvecs only", "all but matvecs", "fixed cost (tiny twin)",
                          "floor (read stream)"}
    assert all(seconds > 0 for seconds in parts.values())


def test_cache_buffers_are_one_allocation_per_layer():
    model = attnlab.build_model(_config("rope", kv_heads=2))
    cache = KVCache.for_model(model, batch=3, capacity=11)
    layer = cache.layers[0]
    assert layer.kv.shape == (2, 3, 2, 11, model.config.head_dim)
    assert layer.v.data_ptr() == layer.kv.data_ptr() + layer.kv[0].nbytes  # V is the second half
    assert cache.allocated_bytes == sum(x.kv.nbytes for x in cache.layers)
