"""Properties every topology must have, checked on tiny seeded models."""

import pytest
import torch

import attnlab
from attnlab.errors import InputError

DECODERS = ["tiny-decoder", "tiny-llama", "gpt-char"]


def build(name, **changes):
    return attnlab.build_model(attnlab.presets[name].replace(**changes)).eval()


def ids_for(model, batch=2, seq=10):
    return torch.randint(0, model.config.vocab_size, (batch, seq))


def test_attention_rows_sum_to_one_and_masked_cells_are_zero():
    enc = build("tiny-encoder")
    ids, mask = ids_for(enc), torch.tensor([[1] * 10, [1] * 6 + [0] * 4])
    w = attnlab.record(enc, ids, attention_mask=mask, names="blocks.*.attn.weights")["blocks.1.attn.weights"]
    assert torch.allclose(w.sum(-1), torch.ones(2, 4, 10), atol=1e-6)
    assert torch.all(w[1, :, :, 6:] == 0)  # padded keys get exactly zero weight
    dec = build("tiny-llama")
    w = attnlab.record(dec, ids_for(dec), names="blocks.0.attn.weights")["blocks.0.attn.weights"]
    assert torch.allclose(w.sum(-1), torch.ones(2, 4, 10), atol=1e-6)
    assert torch.all(w.triu(diagonal=1) == 0)  # no weight on future keys


@pytest.mark.parametrize("position", ["learned", "sinusoidal", "rope", "alibi", "none"])
def test_causal_no_leakage(position):
    model = build("tiny-decoder", position=position)
    ids = ids_for(model)
    changed = ids.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % model.config.vocab_size
    with torch.no_grad():
        a, b = model(ids).logits, model(changed).logits
    assert torch.allclose(a[:, :6], b[:, :6], atol=1e-6)
    assert not torch.allclose(a[:, 6:], b[:, 6:], atol=1e-3)


def test_encoder_decoder_decoder_is_causal_and_sees_the_source():
    model = build("tiny-t5")
    src, tgt = ids_for(model, seq=7), ids_for(model, seq=6)
    changed = tgt.clone()
    changed[:, 4:] = (changed[:, 4:] + 1) % 1000
    with torch.no_grad():
        a, b = model(src, tgt).logits, model(src, changed).logits
        c = model((src + 1) % 1000, tgt).logits
    assert torch.allclose(a[:, :4], b[:, :4], atol=1e-6)
    assert not torch.allclose(a[:, :1], c[:, :1], atol=1e-3)  # cross-attention carries the source


@pytest.mark.parametrize("name", ["tiny-encoder", "tiny-decoder", "tiny-llama"])
def test_padding_leaves_real_tokens_unchanged(name):
    model = build(name, position="alibi") if name == "tiny-decoder" else build(name)
    ids = ids_for(model, batch=1, seq=6)
    padded = torch.cat([ids, torch.zeros(1, 4, dtype=torch.long)], dim=1)
    mask = torch.tensor([[1] * 6 + [0] * 4])
    with torch.no_grad():
        alone = model(ids).hidden
        with_pad = model(padded, attention_mask=mask).hidden
    assert torch.allclose(alone, with_pad[:, :6], atol=1e-5)


def test_encoder_padding_source_in_encoder_decoder():
    model = build("tiny-encoder-decoder")
    src, tgt = ids_for(model, batch=1, seq=5), ids_for(model, batch=1, seq=4)
    padded = torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    with torch.no_grad():
        a = model(src, tgt).logits
        b = model(padded, tgt, attention_mask=torch.tensor([[1] * 5 + [0] * 3])).logits
    assert torch.allclose(a, b, atol=1e-5)


def test_encoder_without_positions_is_permutation_equivariant():
    model = build("tiny-encoder", position="none", type_vocab_size=0)
    ids = ids_for(model, batch=1, seq=8)
    perm = torch.randperm(8)
    with torch.no_grad():
        h, hp = model(ids).hidden, model(ids[:, perm]).hidden
    assert torch.allclose(h[:, perm], hp, atol=1e-5)
    # with learned positions the same permutation changes the vectors
    pos = build("tiny-encoder")
    with torch.no_grad():
        assert not torch.allclose(pos(ids).hidden[:, perm], pos(ids[:, perm]).hidden, atol=1e-3)


def _loss(model):
    c = model.config
    if c.topology == "vit":
        return model(torch.randn(2, c.n_channels, c.image_size, c.image_size)).logits.square().mean()
    ids = torch.randint(0, c.vocab_size, (2, 6))
    if c.topology == "encoder-decoder":
        return model(ids, ids).logits.square().mean()
    out = model(ids)
    extra = out.pooled.square().mean() if out.pooled is not None else 0
    return out.logits.square().mean() + extra


@pytest.mark.parametrize("name", ["tiny-encoder", "tiny-decoder", "tiny-llama", "tiny-encoder-decoder", "tiny-t5",
                                  "tiny-vit"])
def test_every_parameter_gets_a_gradient(name):
    model = attnlab.build_model(attnlab.presets[name]).train()
    _loss(model).backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not torch.any(p.grad != 0)]
    assert missing == []


def test_dual_encoder_gradients_and_shape():
    vit = attnlab.presets["tiny-vit"].replace(head="none")
    text = attnlab.presets["tiny-encoder"].replace(head="none", pooler=False)
    dual = attnlab.build_model(attnlab.DualEncoderConfig(vit, text, embed_dim=16))
    logits = dual(torch.randn(3, 1, 28, 28), torch.randint(0, 1000, (3, 5)))
    assert logits.shape == (3, 3)
    torch.nn.functional.cross_entropy(logits, torch.arange(3)).backward()
    missing = [n for n, p in dual.named_parameters() if p.grad is None]
    assert missing == []


@pytest.mark.parametrize("name", ["tiny-encoder", "tiny-llama", "tiny-t5", "tiny-vit"])
def test_save_and_load_round_trip(tmp_path, name):
    model = build(name)
    model.save(tmp_path / name)
    loaded, tokenizer = attnlab.load(tmp_path / name)
    assert tokenizer is None
    assert loaded.config == model.config
    for (n, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert torch.equal(a, b), n


def test_tied_output_projection():
    model = build("tiny-decoder")
    assert model.lm_head.proj.weight is model.tokens.weight
    untied = build("tiny-llama")
    assert untied.lm_head.proj.weight is not untied.tokens.weight


def test_bad_inputs_get_clear_errors():
    model = build("tiny-decoder")
    with pytest.raises(InputError, match="outside \\[0, vocab_size=1000\\)"):
        model(torch.tensor([[1, 2, 1000]]))
    with pytest.raises(InputError, match="integer token ids"):
        model(torch.randn(1, 3))
    with pytest.raises(InputError, match="shape \\(batch, seq\\)"):
        model(torch.tensor([1, 2, 3]))
    with pytest.raises(InputError, match="empty"):
        model(torch.zeros(1, 0, dtype=torch.long))
    with pytest.raises(InputError, match="exceeds this model's limit of 128"):
        model(torch.zeros(1, 129, dtype=torch.long))
    with pytest.raises(InputError, match="attention_mask has shape"):
        model(torch.zeros(2, 4, dtype=torch.long), attention_mask=torch.ones(2, 5))
    vit = build("tiny-vit")
    with pytest.raises(InputError, match="expected \\(batch, 1, 28, 28\\)"):
        vit(torch.randn(1, 3, 28, 28))
    rope = build("tiny-llama")  # rope has no length limit
    assert rope(torch.zeros(1, 300, dtype=torch.long)).logits.shape == (1, 300, 1000)


def test_position_and_segment_ids_are_checked_against_their_own_limits():
    model = build("tiny-encoder")
    ids = torch.zeros(1, 4, dtype=torch.long)
    limit = model.config.max_len
    with pytest.raises(InputError, match=f"position_ids must lie in \\[0, {limit}\\)"):
        model(ids, position_ids=torch.tensor([[0, 1, 2, limit]]))
    with pytest.raises(InputError, match="position_ids has shape \\(1, 3\\), expected \\(1, 4\\)"):
        model(ids, position_ids=torch.tensor([[0, 1, 2]]))
    with pytest.raises(InputError, match="token_type_ids must be an integer torch.Tensor"):
        model(ids, token_type_ids=torch.zeros(1, 4))
