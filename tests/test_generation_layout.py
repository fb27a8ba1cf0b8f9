"""The decode-time tricks, seen from generation: they change how numbers are laid out and multiplied, never the
numbers, and they live in the layers (their own tests: tests/test_layers.py), not in generation.

- (in, out) weight copies (layers/linear.py): the wide block weights and the LM head, for one-row steps, made
  once a layer has served Linear.MIN_CALLS such products; checked against the same call with the tricks
  switched off and against one plain forward pass, and the model's parameters are never touched;
- the LM head's vocabulary slices (models/heads.py) for steps of 4-16 rows.
Tolerance: logits within 1e-5 (float32 rounding of another summation order).
"""

from __future__ import annotations

import pytest
import torch

import attnlab
from attnlab.benchmarks.decode_step import decode_tricks as _tricks
from attnlab.generation import generate_stream
from attnlab.layers.linear import Linear
from attnlab.models.heads import LMHead

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


def _copies(model) -> dict[str, int]:
    return {name: m.decode_copy_bytes for name, m in model.named_modules() if isinstance(m, Linear)}


def _snapshot(model):
    return {name: (p.data_ptr(), p.stride(), p.detach().clone()) for name, p in model.named_parameters()}


def _assert_untouched(model, before):
    for name, p in model.named_parameters():
        ptr, stride, values = before[name]
        assert (p.data_ptr(), p.stride()) == (ptr, stride), name
        assert torch.equal(p.detach(), values), name


def test_copies_give_the_same_logits_and_leave_the_parameters_alone():
    model = _decoder(position="rope", activation="swiglu", norm="rmsnorm", d_ff=96)  # LLaMA-like: gate+up fused
    before = _snapshot(model)
    fast = attnlab.generate(model, [PROMPTS[0]], max_new_tokens=24, keep_logits=True, eos_token_id=None)
    copies = _copies(model)
    wide = {name for name, m in model.named_modules() if isinstance(m, Linear) and m.out_features > m.in_features}
    assert {name for name, nbytes in copies.items() if nbytes} == wide  # qkv, gate+up of every block, the head
    assert "lm_head.proj" in wide and "blocks.0.attn.qkv" in wide and "blocks.1.ffn.up" in wide
    _assert_untouched(model, before)

    _tricks(model, False)
    plain = attnlab.generate(model, [PROMPTS[0]], max_new_tokens=24, keep_logits=True, eos_token_id=None)
    assert torch.equal(fast.sequences, plain.sequences)
    for a, b in zip(fast.logits, plain.logits, strict=True):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0)
    with torch.no_grad():  # and both equal ONE plain forward over the finished sequence
        reference = model(fast.sequences).logits
    for step, logits in enumerate(fast.logits):
        torch.testing.assert_close(logits, reference[:, len(PROMPTS[0]) - 1 + step], atol=ATOL, rtol=0)


@pytest.mark.parametrize("rows, new_tokens, use_cache, copied", [
    (2, 24, True, set()), (1, Linear.MIN_CALLS - 2, True, set()),
    (1, 24, False, {"lm_head.proj"}),  # without cache the blocks see every row, the head still the last one
])
def test_copies_are_made_only_where_they_pay(rows, new_tokens, use_cache, copied):
    model = _decoder()
    prompts = [PROMPTS[i % 3] for i in range(rows)]
    attnlab.generate(model, prompts, max_new_tokens=new_tokens, use_cache=use_cache, eos_token_id=None)
    assert {name for name, nbytes in _copies(model).items() if nbytes} == copied


def test_beam_rows_count_as_rows():
    model = _decoder()
    attnlab.generate(model, [PROMPTS[0]], max_new_tokens=24, num_beams=2, eos_token_id=None)  # 2 rows per step
    assert not any(_copies(model).values())


def test_in_place_update_between_streamed_tokens_is_seen_by_the_next_step():
    model = _decoder(tie_embeddings=False)  # the head's weight is not the embedding: the cached K/V stay valid
    stream = generate_stream(model, [PROMPTS[0]], max_new_tokens=40, eos_token_id=None, keep_logits=True)
    steps = [next(stream) for _ in range(Linear.MIN_CALLS + 2)]
    assert model.blocks[1].ffn.up.decode_copy_bytes > 0
    with torch.no_grad():
        model.blocks[1].ffn.up.weight.mul_(-2.0)  # e.g. a training step between streamed tokens (the last
        # block's FFN and the head: the K/V cached so far do not depend on them)
        model.lm_head.proj.weight.mul_(1.5)
    following = next(stream)
    stream.close()
    sequence = torch.tensor([PROMPTS[0] + [int(s.tokens[0]) for s in steps]])
    with torch.no_grad():
        reference = model(sequence).logits[:, -1]
    torch.testing.assert_close(following.logits, reference, atol=ATOL, rtol=0)


def test_model_still_trains_after_a_call_with_copies():
    model = _decoder().train()
    result = attnlab.generate(model, [PROMPTS[0]], max_new_tokens=24, eos_token_id=None)
    assert any(_copies(model).values()) and model.training
    assert all(not p.is_inference() and p.is_contiguous() for p in model.parameters())
    model(result.sequences).logits.logsumexp(-1).mean().backward()
    assert model.blocks[0].attn.qkv.weight.grad is not None
    assert not any(_copies(model).values())  # training forward frees them


def test_batch_of_many_rows_generates_what_each_prompt_generates_alone(monkeypatch):
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)  # the sliced head whatever the threads
    monkeypatch.setattr(LMHead, "CHUNK", 10)
    model = _decoder()
    prompts = [PROMPTS[i % 3] + [i + 1] for i in range(6)]  # 6 rows: sliced head
    together = attnlab.generate(model, prompts, max_new_tokens=6, eos_token_id=None)
    for row, prompt in enumerate(prompts):
        alone = attnlab.generate(model, [prompt], max_new_tokens=6, eos_token_id=None)
        assert together.tokens[row] == alone.tokens[0]


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_tokens_with_copies_equal_hugging_face(kind):
    """Independent reference: HF `generate` on the weights attnlab converted, 24 greedy tokens with copies on."""
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
    for prompt in PROMPTS:
        ids = torch.tensor([prompt])
        with torch.no_grad():
            expected = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=24, do_sample=False,
                                   num_beams=1, eos_token_id=None, pad_token_id=0)
        got = attnlab.generate(ours, ids, max_new_tokens=24, eos_token_id=None)
        assert torch.equal(got.sequences, expected)
    assert ours.blocks[0].attn.qkv.decode_copy_bytes > 0  # the copies were on
