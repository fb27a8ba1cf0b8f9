"""The decode-speed paths change how the numbers are laid out and multiplied, never the numbers.

- decode layout (generation/layout.py): wide block weights stored (in, out) during a call; checked against the
  same call with the layout switched off and against one plain forward pass, and the model must come back
  bit-for-bit and storage-for-storage;
- decode head (generation/head.py): vocabulary logits cut into slices for steps of many rows; checked against
  the model's own LMHead.
Tolerance: logits within 1e-5 (float32 rounding of another summation order).
"""

from __future__ import annotations

import pytest
import torch

import attnlab
from attnlab.generation import generate_stream, layout
from attnlab.generation import head as decode_head

ATOL = 1e-5
PROMPTS = [[5, 17, 3, 44, 9, 12, 60], [21, 8], [33, 2, 71, 90]]


def _decoder(**overrides):
    config = attnlab.presets["tiny-decoder"].replace(vocab_size=97, max_len=64, n_kv_heads=2, **overrides)
    model = attnlab.build_model(config)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.08)  # varied, peaked logits (not one token forever)
    return model.eval()


def _snapshot(model):
    return {name: (p.data_ptr(), p.stride(), p.detach().clone()) for name, p in model.named_parameters()}


def _assert_restored(model, before):
    for name, p in model.named_parameters():
        ptr, stride, values = before[name]
        assert (p.data_ptr(), p.stride()) == (ptr, stride), name
        assert torch.equal(p.detach(), values), name


def _strides_seen(model):
    """Record the QKV weight's strides at every forward of block 0's attention."""
    seen = []
    qkv = model.blocks[0].attn.qkv
    handle = qkv.register_forward_pre_hook(lambda module, args: seen.append(module.weight.stride()))
    return seen, handle


@pytest.mark.parametrize("rows", [1, 3])
def test_layout_gives_the_same_logits_and_restores_the_model(rows, monkeypatch):
    model = _decoder(position="rope", activation="swiglu", norm="rmsnorm", d_ff=96)  # LLaMA-like: gate+up fused
    prompts = PROMPTS[:rows]
    before = _snapshot(model)
    seen, handle = _strides_seen(model)
    fast = attnlab.generate(model, prompts, max_new_tokens=20, keep_logits=True, eos_token_id=None)
    handle.remove()
    qkv = model.blocks[0].attn.qkv
    assert seen and all(s == (1, qkv.out_features) for s in seen)  # (in, out) storage during the call
    _assert_restored(model, before)

    monkeypatch.setattr(layout, "ENABLED", False)
    plain = attnlab.generate(model, prompts, max_new_tokens=20, keep_logits=True, eos_token_id=None)
    assert torch.equal(fast.sequences, plain.sequences)
    for a, b in zip(fast.logits, plain.logits, strict=True):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0)
    # and both equal ONE plain forward over the finished sequence (left-padded: positions count real tokens)
    width = max(len(p) for p in prompts)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * (len(p) + 20) for p in prompts])
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        reference = model(fast.sequences, attention_mask=mask, position_ids=positions).logits
    for step, logits in enumerate(fast.logits):
        torch.testing.assert_close(logits, reference[:, width - 1 + step], atol=ATOL, rtol=0)


@pytest.mark.parametrize("rows, new_tokens, use_cache", [(4, 20, True), (1, 8, True), (1, 20, False)])
def test_layout_is_not_used_where_it_does_not_pay(rows, new_tokens, use_cache):
    model = _decoder()
    seen, handle = _strides_seen(model)
    prompts = [PROMPTS[i % 3] for i in range(rows)]
    attnlab.generate(model, prompts, max_new_tokens=new_tokens, use_cache=use_cache, eos_token_id=None)
    handle.remove()
    assert seen and all(s == (model.config.d_model, 1) for s in seen)  # nn.Linear's own (out, in) storage


def test_beam_rows_count_towards_the_layout_limit():
    model = _decoder()
    seen, handle = _strides_seen(model)
    attnlab.generate(model, [PROMPTS[0]], max_new_tokens=20, num_beams=4, eos_token_id=None)  # 4 rows per step
    handle.remove()
    assert seen and all(s == (model.config.d_model, 1) for s in seen)


def test_stream_closed_early_restores_the_model_and_keeps_in_place_updates():
    model = _decoder()
    before = _snapshot(model)
    stream = generate_stream(model, [PROMPTS[0]], max_new_tokens=20, eos_token_id=None)
    next(stream)
    assert model.blocks[0].attn.qkv.weight.stride() == (1, model.blocks[0].attn.qkv.out_features)
    stream.close()
    _assert_restored(model, before)

    stream = generate_stream(model, [PROMPTS[0]], max_new_tokens=20, eos_token_id=None)
    next(stream)
    up = model.blocks[1].ffn.up.weight
    expected = before["blocks.1.ffn.up.weight"][2] * -2.0
    with torch.no_grad():
        up.mul_(-2.0)  # e.g. a training step between streamed tokens: must survive the restore
    stream.close()
    assert up.data_ptr() == before["blocks.1.ffn.up.weight"][0] and up.is_contiguous()
    assert torch.equal(up.detach(), expected)


def test_model_still_trains_after_a_call_with_the_layout():
    model = _decoder().train()
    result = attnlab.generate(model, [PROMPTS[0]], max_new_tokens=20, eos_token_id=None)
    assert all(not p.is_inference() and p.is_contiguous() for p in model.parameters())
    model(result.sequences).logits.logsumexp(-1).mean().backward()
    assert model.blocks[0].attn.qkv.weight.grad is not None


@pytest.mark.parametrize("bias", [False, True])
def test_decode_head_in_slices_equals_the_model_head(bias, monkeypatch):
    """Steps of more than MAX_ROWS rows take the sliced product; 97 = 9 slices of 10 + a remainder of 7."""
    monkeypatch.setattr(decode_head, "CHUNK", 10)
    monkeypatch.setattr(decode_head, "SLICE_MAX_THREADS", torch.get_num_threads())  # slices whatever the threads
    model = _decoder(lm_head_bias=bias)
    if bias:
        with torch.no_grad():
            model.lm_head.bias.copy_(torch.randn(97, generator=torch.Generator().manual_seed(1)))
    rows = decode_head.MAX_ROWS + 2
    h = torch.randn(rows, model.config.d_model, generator=torch.Generator().manual_seed(2))
    head = decode_head.DecodeHead(model.lm_head, rows)
    assert head.weight_t is None  # no transposed copy is made for a batch of many rows
    with torch.no_grad():
        torch.testing.assert_close(head(h), model.lm_head(h), atol=ATOL, rtol=0)
    few = decode_head.DecodeHead(model.lm_head, 1)
    with torch.no_grad():
        torch.testing.assert_close(few(h[:1]), model.lm_head(h[:1]), atol=ATOL, rtol=0)


def test_batch_of_many_rows_generates_what_each_prompt_generates_alone():
    model = _decoder()
    prompts = [PROMPTS[i % 3] + [i + 1] for i in range(6)]  # 6 rows: sliced head, no layout
    together = attnlab.generate(model, prompts, max_new_tokens=6, eos_token_id=None)
    for row, prompt in enumerate(prompts):
        alone = attnlab.generate(model, [prompt], max_new_tokens=6, eos_token_id=None)
        assert together.tokens[row] == alone.tokens[0]


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_layout_tokens_equal_hugging_face(kind):
    """Independent reference: HF `generate` on the weights attnlab converted, 24 greedy tokens with the layout on."""
    transformers = pytest.importorskip("transformers")
    from attnlab.interop.hf import from_hf_model

    torch.manual_seed(0)
    if kind == "gpt2":
        hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=4,
                                                                  n_positions=64))
    else:
        hf = transformers.LlamaForCausalLM(transformers.LlamaConfig(
            vocab_size=99, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=False))
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for p in hf.parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.15)  # peaked logits: no near-ties to flip
    hf.eval()
    ours = from_hf_model(hf)
    seen, handle = _strides_seen(ours)
    for prompt in PROMPTS:
        ids = torch.tensor([prompt])
        with torch.no_grad():
            expected = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=24, do_sample=False,
                                   num_beams=1, eos_token_id=None, pad_token_id=0)
        got = attnlab.generate(ours, ids, max_new_tokens=24, eos_token_id=None)
        assert torch.equal(got.sequences, expected)
    handle.remove()
    assert seen and seen[0][0] == 1  # the layout was on: (in, out) storage
