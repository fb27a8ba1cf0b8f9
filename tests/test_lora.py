"""LoRA pairs, predict_from_previous and the masked LM's tokenizer (the parts smollm2-mlm is made of), on tiny
random models: each checked against the plain computation it stands for."""

import pytest
import torch
import torch.nn.functional as F

from attnlab.build import build_model
from attnlab.config import ModelConfig
from attnlab.data.tokenizers import MASK_TOKEN, train_bpe, with_mask_token
from attnlab.errors import ConfigError, InputError
from attnlab.layers.lora import block_linears, lora_names, merge

TINY = dict(topology="encoder", vocab_size=40, d_model=16, n_heads=4, n_kv_heads=2, d_ff=24, n_layers=2,
            position="rope", norm="rmsnorm", activation="swiglu", bias=False, max_len=32)


def randomized(config: ModelConfig, seed: int = 0):
    """A model of `config` whose every weight, the LoRA pairs' B included (zero at the start), is random."""
    torch.manual_seed(seed)
    model = build_model(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    return model


def test_lora_weight_is_w0_plus_scaled_b_a_and_only_the_pairs_train():
    model = randomized(ModelConfig(**TINY, lora_rank=3, lora_alpha=6.0))
    linear = model.blocks[0].attn.qkv
    pair = linear.parametrizations.weight[0]
    w0 = linear.parametrizations.weight.original
    by_hand = w0 + (6.0 / 3) * pair.lora_b @ pair.lora_a  # (out, in)
    x = torch.randn(5, 16)
    assert torch.allclose(linear(x), F.linear(x, by_hand), atol=1e-5)  # float32 rounding of one product
    assert len(block_linears(model.blocks)) == 2 * 4  # W_QKV, W_O, W_1 (gate+up), W_2 in each of 2 blocks
    names = lora_names(model.state_dict())
    assert len(names) == 2 * 4 * 2 and all(n.endswith((".lora_a", ".lora_b")) for n in names)
    for n, p in model.named_parameters():
        p.requires_grad_(n in names)
    model(torch.randint(0, 40, (2, 7))).logits.sum().backward()
    assert w0.grad is None and model.tokens.weight.grad is None
    assert pair.lora_a.grad is not None and pair.lora_a.grad.abs().sum() > 0


def test_a_fresh_lora_model_equals_the_model_without_it():
    """B starts at zero: before training the adapted model computes what W_0 alone computes."""
    torch.manual_seed(1)
    adapted = build_model(ModelConfig(**TINY, lora_rank=4))
    plain = build_model(ModelConfig(**TINY))
    state = {n.replace(".parametrizations.weight.original", ".weight"): t for n, t in adapted.state_dict().items()
             if not n.endswith((".lora_a", ".lora_b"))}
    plain.load_state_dict(state)
    ids = torch.randint(0, 40, (2, 9))
    assert torch.equal(adapted(ids).logits, plain(ids).logits)


def test_merge_folds_the_pairs_into_plain_weights():
    model = randomized(ModelConfig(**TINY, lora_rank=2))
    ids = torch.randint(0, 40, (3, 8))
    with torch.no_grad():
        before = model(ids).logits
        assert merge(model.blocks) == 8
        after = model(ids).logits
    assert not lora_names(model.state_dict())
    assert torch.allclose(before, after, atol=1e-5)  # B A added once instead of at every product: rounding only


def test_predict_from_previous_reads_each_position_from_the_one_before():
    shifted = randomized(ModelConfig(**TINY, predict_from_previous=True), seed=2)
    plain = build_model(ModelConfig(**TINY)).eval()
    plain.load_state_dict(shifted.state_dict())
    ids = torch.randint(0, 40, (2, 6))
    with torch.no_grad():
        own, previous = plain(ids).logits, shifted(ids).logits  # (batch, seq, vocab)
    assert torch.equal(previous[:, 1:], own[:, :-1])
    assert torch.equal(previous[:, 0], own[:, 0])  # the first position has no previous one: its own


@pytest.mark.parametrize("changes, key", [
    (dict(topology="decoder", predict_from_previous=True), "predict_from_previous"),
    (dict(head="none", predict_from_previous=True), "predict_from_previous"),
    (dict(topology="decoder", lora_rank=4), "lora_rank"),
    (dict(lora_rank=-1), "lora_rank"),
    (dict(lora_rank=4, lora_alpha=0.0), "lora_alpha"),
])
def test_config_refuses_adapter_options_where_they_have_no_meaning(changes, key):
    with pytest.raises(ConfigError, match=key):
        ModelConfig(**{**TINY, **changes})


def test_with_mask_token_adds_mask_and_a_first_token_and_leaves_the_original_alone():
    tok = train_bpe(["the cat sat on the mat. the dog sat on the log."] * 20, vocab_size=300)
    masked = with_mask_token(tok, "<|endoftext|>")
    assert masked.mask_id == tok.vocab_size and masked.vocab_size == tok.vocab_size + 1
    ids = masked.encode("the cat [MASK] on the mat")
    plain = tok.encode("the cat sat on the mat", add_special_tokens=False)
    assert ids[0] == masked.cls_id == tok.hf.token_to_id("<|endoftext|>")
    sat = tok.encode(" sat", add_special_tokens=False)
    assert len(sat) == 1  # " sat" is one token here, so [MASK] takes exactly its place, space included
    assert ids[1:] == [masked.mask_id if t == sat[0] else t for t in plain]
    assert tok.mask_id is None and tok.encode("a [MASK]") != masked.encode("a [MASK]")[1:]
    with pytest.raises(InputError, match="not in the vocabulary"):
        with_mask_token(tok, "<nope>")
    assert MASK_TOKEN == "[MASK]"
