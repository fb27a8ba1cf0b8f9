"""Interventions (attnlab.interventions), each against a computation that does not use them.

- an identity edit is bit-identical (on the fast path, and on attention's explicit path against a recording);
- ablating head h equals the same model with that head's slice of W_O zeroed (a copy, its weights edited);
  mean ablation equals moving the head's mean contribution into W_O's bias; decoder, GQA, MLM encoder and an
  encoder-decoder's decoder;
- per-head outputs: z equals weights @ v; head_out summed over heads + W_O's bias equals the attention output
  (resid_mid - resid_pre); opt-in;
- patching the last block's output with a clean run's reproduces the clean logits; a patch at chosen positions;
- zeroing every layer's attention weights makes the last position's logits independent of earlier tokens;
- the logit lens: last entry == log_softmax(logits), entry i == the model cut after block i (a copy);
- edits during cached generation equal the same edits on full forwards without the cache;
- a recording inside or around an intervention records the edited values;
- another thread sees no edit; copy_context().run does; nothing is left after an exception;
- head_sweep == one weight-zeroed copy per head; trace_residual == one patch per cell; progress and cancel;
- bad input: one InputError naming what is allowed, before the forward.
"""

from __future__ import annotations

import contextvars
import copy
import threading

import pytest
import torch

import attnlab
from attnlab import interventions
from attnlab.errors import InputError
from attnlab.interventions import Cancelled, sweeps
from attnlab.layers import attention_kernel
from attnlab.recording import active, sites

TOL = 1e-5  # float32 results of a few matmuls over d_model <= 64, compared across different summation orders


def _model(preset: str, **fields):
    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.presets[preset].replace(**fields)).eval()
    with torch.no_grad():  # move biases and norms off their zero/one init, so a bug there shows
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model


@pytest.fixture(scope="module")
def decoder():
    return _model("tiny-decoder", n_layers=3)


@pytest.fixture(scope="module")
def gqa():
    return _model("tiny-llama")  # 4 query heads, 2 key/value heads, RoPE, RMSNorm, SwiGLU


@pytest.fixture(scope="module")
def mlm():
    return _model("tiny-encoder")  # post-LN BERT with an MLM head


def _ids(batch: int = 2, seq: int = 7, seed: int = 1, vocab: int = 1000) -> torch.Tensor:
    return torch.randint(3, vocab, (batch, seq), generator=torch.Generator().manual_seed(seed))


def _without_head(model, layer: int, head: int, part=None, mean_z=None):
    """A copy of `model` whose head (layer, head) writes nothing through W_O (or only its mean, into the bias)."""
    twin = copy.deepcopy(model)
    stack = twin if part is None else getattr(twin, part)
    out = stack.blocks[layer].attn.out
    d_head = stack.config.head_dim
    cols = slice(head * d_head, (head + 1) * d_head)
    with torch.no_grad():
        if mean_z is not None:
            out.bias += out.weight[:, cols] @ mean_z
        out.weight[:, cols] = 0
    return twin


# ------------------------------------------------------------------------------------------------ identity
def test_identity_edit_is_bit_identical(decoder, gqa):
    for model in (decoder, gqa):
        ids = _ids()
        with torch.no_grad():
            plain = model(ids).logits
            fast = ["embed", "blocks.*.resid_pre", "blocks.*.resid_mid", "blocks.*.resid_post", "blocks.*.ffn.hidden",
                    "blocks.*.attn.z", "final", "logits"]
            with attnlab.intervene(model, {name: (lambda t, n: t) for name in fast}):
                assert torch.equal(model(ids).logits, plain)
            explicit = ["blocks.*.attn.q", "blocks.*.attn.k", "blocks.*.attn.v", "blocks.*.attn.raw_scores",
                        "blocks.*.attn.weights"]
            recorded = attnlab.record(model, ids, names=explicit + ["logits"])["logits"]  # the same explicit path
            with attnlab.intervene(model, {name: (lambda t, n: t) for name in explicit}):
                assert torch.equal(model(ids).logits, recorded)
            assert (recorded - plain).abs().max() < TOL  # and that path computes the same numbers


def test_a_replacement_tensor_and_the_name_passed_to_functions(decoder):
    ids = _ids()
    rec = attnlab.record(decoder, ids, names=["blocks.1.resid_post"])
    seen = []
    zeros = torch.zeros_like(rec["blocks.1.resid_post"])
    with torch.no_grad(), attnlab.intervene(decoder, [{"blocks.1.resid_post": zeros},
                                                      {"blocks.*.resid_post": lambda t, n: seen.append(n) or t}]):
        got = decoder(ids).logits
    assert seen == ["blocks.0.resid_post", "blocks.1.resid_post", "blocks.2.resid_post"]
    # independent: block 2 run by hand on a zero residual stream, then the final norm and the tied head
    with torch.no_grad():
        h = decoder.final_norm(decoder.blocks[2](torch.zeros(2, 7, 64), is_causal=True))
        want = h @ decoder.tokens.weight.T
    assert (got - want).abs().max() < TOL


# ------------------------------------------------------------------------------------------------ heads
@pytest.mark.parametrize("which", ["decoder", "gqa", "mlm"])
def test_ablating_a_head_equals_zeroing_its_slice_of_w_o(which, request):
    model = request.getfixturevalue(which)
    ids = _ids()
    for layer, head in ((0, 1), (1, 3)):
        with torch.no_grad():
            want = _without_head(model, layer, head)(ids).logits
            with attnlab.intervene(model, attnlab.ablate_heads(model, {layer: head})):
                got = model(ids).logits
            plain = model(ids).logits
        assert (got - want).abs().max() < TOL
        assert (got - plain).abs().max() > 100 * TOL  # the head did matter


def test_mean_ablation_moves_the_heads_mean_into_the_bias(decoder):
    ids, reference = _ids(), _ids(batch=4, seq=9, seed=5)
    z = attnlab.record(decoder, reference, names=["blocks.1.attn.z"])["blocks.1.attn.z"]  # (4, 9, heads, d_head)
    mean_z = z.mean(dim=(0, 1))[2]
    with torch.no_grad():
        want = _without_head(decoder, 1, 2, mean_z=mean_z)(ids).logits
        with attnlab.intervene(decoder, attnlab.ablate_heads(decoder, {1: [2]}, mode="mean", reference=reference)):
            got = decoder(ids).logits
    assert (got - want).abs().max() < TOL


def test_ablation_in_an_encoder_decoders_decoder():
    model = _model("tiny-encoder-decoder")
    src, tgt = _ids(seq=6), _ids(seq=5, seed=2)
    with torch.no_grad():
        want = _without_head(model, 1, 0, part="decoder")(src, tgt).logits
        with attnlab.intervene(model, attnlab.ablate_heads(model, {1: 0}, part="decoder")):
            got = model(src, tgt).logits
    assert (got - want).abs().max() < TOL


def test_ablating_some_rows_only(decoder):
    ids = _ids(batch=3)
    with torch.no_grad():
        plain = decoder(ids).logits
        want = _without_head(decoder, 0, 0)(ids).logits
        with attnlab.intervene(decoder, attnlab.ablate_heads(decoder, {0: 0}, rows=[1])):
            got = decoder(ids).logits
    assert torch.equal(got[[0, 2]], plain[[0, 2]])
    assert (got[1] - want[1]).abs().max() < TOL


@pytest.mark.parametrize("which", ["decoder", "gqa"])
def test_per_head_outputs_add_up_to_the_attention_output(which, request):
    model = request.getfixturevalue(which)
    ids = _ids()
    names = ["blocks.*.attn.z", "blocks.*.attn.head_out", "blocks.*.resid_pre", "blocks.*.resid_mid",
             "blocks.*.attn.weights", "blocks.*.attn.v"]
    rec = attnlab.record(model, ids, names=names)
    cfg = model.config
    for i, block in enumerate(model.blocks):
        z, head_out = rec[f"blocks.{i}.attn.z"], rec[f"blocks.{i}.attn.head_out"]
        assert z.shape == (2, 7, cfg.n_heads, cfg.head_dim) and head_out.shape == (2, cfg.n_heads, 7, cfg.d_model)
        # z: each head's weights @ v (v per query head: with GQA each K/V head serves n_heads / n_kv_heads)
        assert (z - (rec[f"blocks.{i}.attn.weights"] @ rec[f"blocks.{i}.attn.v"]).transpose(1, 2)).abs().max() < TOL
        bias = block.attn.out.bias if block.attn.out.bias is not None else 0
        attention_output = rec[f"blocks.{i}.resid_mid"] - rec[f"blocks.{i}.resid_pre"]  # pre-LN: x + attn(norm x)
        assert (head_out.sum(dim=1) + bias - attention_output).abs().max() < TOL
    # opt-in: a full recording leaves them out (they cost heads x d_model per position)
    assert not any(name.endswith((".z", ".head_out")) for name in attnlab.record(model, ids))


def test_head_out_is_editable_and_head_record_keeps_one_head(decoder):
    ids = _ids()
    with torch.no_grad():
        want = _without_head(decoder, 2, 1)(ids).logits
        with attnlab.intervene(decoder, {"blocks.2.attn.head_out":
                                         lambda t, n: torch.cat([t[:, :1], 0 * t[:, 1:2], t[:, 2:]], dim=1)}):
            got = decoder(ids).logits
    assert (got - want).abs().max() < TOL
    full = attnlab.record(decoder, ids, names=["blocks.0.attn.z"])["blocks.0.attn.z"]
    one = attnlab.record(decoder, ids, names=["blocks.0.attn.z"], head=2)["blocks.0.attn.z"]
    assert torch.equal(one, full[:, :, 2:3])


# ------------------------------------------------------------------------------------------------ patching
@pytest.mark.parametrize("which", ["decoder", "gqa", "mlm"])
def test_patching_the_last_blocks_output_reproduces_the_clean_logits(which, request):
    model = request.getfixturevalue(which)
    clean, corrupted = _ids(seed=1), _ids(seed=2)
    last = f"blocks.{len(model.blocks) - 1}.resid_post"
    source = attnlab.record(model, clean, names=[last, "logits"])
    with torch.no_grad(), attnlab.intervene(model, attnlab.patch(model, source, names=last)):
        got = model(corrupted).logits
    assert (got - source["logits"]).abs().max() < TOL
    assert (model(corrupted).logits - source["logits"]).abs().max() > 100 * TOL


def test_patch_at_chosen_positions_and_rows(decoder):
    clean, corrupted = _ids(seed=1), _ids(seed=2)
    source = attnlab.record(decoder, clean, names=["blocks.1.resid_pre"])
    src = source["blocks.1.resid_pre"]

    def by_hand(t, name):  # an independent writing of the same edit
        t = t.clone()
        t[1, 2] = src[1, 2]
        t[1, 5] = src[1, 5]
        return t

    with torch.no_grad():
        with attnlab.intervene(decoder, {"blocks.1.resid_pre": by_hand}):
            want = decoder(corrupted).logits
        with attnlab.intervene(decoder, attnlab.patch(decoder, {"blocks.1.resid_pre": src[1:2]}, positions=[2, 5],
                                                      rows=[1])):
            got = decoder(corrupted).logits
    assert torch.equal(got, want)


def test_zeroed_attention_makes_the_last_position_ignore_earlier_tokens(decoder, gqa, mlm):
    for model in (decoder, gqa, mlm):
        a = _ids(batch=1, seq=6, seed=1)
        b = _ids(batch=1, seq=6, seed=2)
        b[0, -1] = a[0, -1]  # same last token, different earlier ones
        with torch.no_grad():
            assert (model(a).logits[0, -1] - model(b).logits[0, -1]).abs().max() > 100 * TOL
            with attnlab.intervene(model, {"blocks.*.attn.weights": lambda w, n: torch.zeros_like(w)}):
                la, lb = model(a).logits[0, -1], model(b).logits[0, -1]
        assert (la - lb).abs().max() < TOL


def test_steering_adds_the_vector_where_asked(decoder):
    ids = _ids()
    v = torch.randn(64, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        with attnlab.intervene(decoder, {"blocks.0.resid_post": lambda t, n: torch.cat(
                [t[:, :3], t[:, 3:4] + 2.5 * v, t[:, 4:]], dim=1)}):
            want = decoder(ids).logits
        with attnlab.intervene(decoder, attnlab.steer(decoder, "blocks.0.resid_post", v, alpha=2.5, positions=[3])):
            got = decoder(ids).logits
    assert torch.equal(got, want)


# ------------------------------------------------------------------------------------------------ logit lens
@pytest.mark.parametrize("which", ["decoder", "gqa", "mlm"])
def test_logit_lens_ends_at_the_models_output_and_entry_i_is_the_model_cut_after_block_i(which, request):
    model = request.getfixturevalue(which)
    ids = _ids()
    lens = attnlab.logit_lens(model, ids)
    n = len(model.blocks)
    assert lens.shape == (n + 1, 2, 7, model.config.vocab_size)
    with torch.no_grad():
        assert (lens[-1] - model(ids).logits.log_softmax(-1)).abs().max() < TOL
        for i in range(1, n):
            cut = copy.deepcopy(model)
            cut.blocks = cut.blocks[:i]  # the same model stopped after block i - 1: its own final norm and head
            assert (lens[i] - cut(ids).logits.log_softmax(-1)).abs().max() < TOL
    assert (attnlab.logit_lens(model, ids, positions=[6, 2]) - lens[:, :, [6, 2]]).abs().max() < TOL


def test_logit_lens_refuses_models_without_an_lm_head():
    for model in (_model("tiny-encoder", head="classifier", n_classes=3), _model("tiny-encoder-decoder")):
        with pytest.raises(InputError, match="decoder language model or an encoder with an MLM head"):
            attnlab.logit_lens(model, _ids())


# ------------------------------------------------------------------------------------------------ generation
def _greedy_by_full_forwards(model, ids, steps):
    seq = ids
    logits = []
    with torch.no_grad():
        for _ in range(steps):
            last = model(seq).logits[:, -1]
            logits.append(last)
            seq = torch.cat([seq, last.argmax(-1, keepdim=True)], dim=1)
    return seq, logits


@pytest.mark.parametrize("which", ["decoder", "gqa"])
def test_an_edit_during_cached_generation_equals_the_edit_on_full_forwards(which, request):
    model = request.getfixturevalue(which)
    ids = _ids(batch=2, seq=5)
    v = torch.randn(64, generator=torch.Generator().manual_seed(4))
    edits = [attnlab.ablate_heads(model, {0: [1], 1: [0]}),
             attnlab.steer(model, "blocks.0.resid_post", v, alpha=3.0, positions=[1, 6]),  # a prompt and a new one
             {"blocks.1.attn.weights": lambda w, n: w * 0.5}]
    with attnlab.intervene(model, edits):
        want, want_logits = _greedy_by_full_forwards(model, ids, 4)
        cached = model.generate(ids, max_new_tokens=4, use_cache=True, keep_logits=True)
    plain = model.generate(ids, max_new_tokens=4, use_cache=True)
    assert torch.equal(cached.sequences, want)
    for got, ref in zip(cached.logits, want_logits, strict=True):
        assert (got - ref).abs().max() < TOL
    assert not torch.equal(plain.sequences, want)  # the edits changed what was generated


# ------------------------------------------------------------------------------------------------ composition
def test_recordings_inside_and_around_an_intervention_record_the_edited_values(decoder):
    ids = _ids()
    plain = attnlab.record(decoder, ids, names=["blocks.0.resid_post"])["blocks.0.resid_post"]
    double = {"blocks.0.resid_post": lambda t, n: 2 * t}
    with attnlab.intervene(decoder, double):
        inside = attnlab.record(decoder, ids, names=["blocks.0.resid_post"])["blocks.0.resid_post"]
    with torch.no_grad(), attnlab.recording.capture(decoder, ["blocks.0.resid_post"]) as around:
        with attnlab.intervene(decoder, double):
            decoder(ids)
    assert torch.equal(inside, 2 * plain) and torch.equal(around["blocks.0.resid_post"], 2 * plain)
    with attnlab.intervene(decoder, double), attnlab.intervene(decoder, {"blocks.0.resid_post": lambda t, n: t + 1}):
        nested = attnlab.record(decoder, ids, names=["blocks.0.resid_post"])["blocks.0.resid_post"]
    assert torch.equal(nested, 2 * (plain + 1))  # the inner edit first, then the outer one


def test_fast_attention_stays_unless_an_attention_tensor_is_edited(decoder, monkeypatch):
    calls = []  # the fast attention: torch's SDPA, or for a short causal prompt attnlab's kernel
    sdpa = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda *a, **k: calls.append(1) or sdpa(*a, **k))
    attend = attention_kernel.attend
    monkeypatch.setattr(attention_kernel, "attend", lambda *a: calls.append(1) or attend(*a))
    ids = _ids()
    with torch.no_grad():
        with attnlab.intervene(decoder, {"blocks.*.resid_post": lambda t, n: t, "blocks.1.attn.z": lambda t, n: t}):
            decoder(ids)
        assert len(calls) == 3
        with attnlab.intervene(decoder, {"blocks.1.attn.weights": lambda t, n: t}):
            decoder(ids)
        assert len(calls) == 5  # block 1 took the explicit path


def test_another_thread_sees_no_edit_and_copy_context_does(decoder):
    ids = _ids()
    with torch.no_grad():
        plain = decoder(ids).logits
        results = {}
        with attnlab.intervene(decoder, attnlab.ablate_heads(decoder, {0: [0, 1, 2, 3]})):
            edited = decoder(ids).logits
            def in_thread():  # grad mode is per thread: no_grad again, as the forwards compared with
                with torch.no_grad():
                    results.update(thread=decoder(ids).logits)

            thread = threading.Thread(target=in_thread)
            thread.start()
            thread.join()
            results["copied"] = contextvars.copy_context().run(lambda: decoder(ids).logits)
    assert torch.equal(results["thread"], plain)
    assert torch.equal(results["copied"], edited) and not torch.equal(edited, plain)


def test_nothing_is_left_after_an_exception_inside_the_context(decoder):
    ids = _ids()
    with torch.no_grad():
        plain = decoder(ids).logits
        with pytest.raises(RuntimeError, match="boom"), attnlab.intervene(decoder, {"logits": lambda t, n: t * 0}):
            assert torch.equal(decoder(ids).logits, torch.zeros_like(plain))
            raise RuntimeError("boom")
        assert active() is None
        assert torch.equal(decoder(ids).logits, plain)
        with pytest.raises(InputError), attnlab.intervene(decoder, {"logits": lambda t, n: t[:, :1]}):
            decoder(ids)  # the shape error raised inside the forward leaves nothing behind either
        assert active() is None and torch.equal(decoder(ids).logits, plain)
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in decoder.modules())


# ------------------------------------------------------------------------------------------------ sweeps
@pytest.mark.parametrize("which", ["decoder", "mlm"])
def test_head_sweep_equals_one_zeroed_copy_per_head(which, request):
    model = request.getfixturevalue(which)
    ids = _ids(batch=1, seq=6)
    target, position = 17, 3
    seen = []
    grid = attnlab.head_sweep(model, ids, target, position=position, batch_size=3,
                              progress=lambda done, total: seen.append((done, total)))
    n_layers, n_heads = len(model.blocks), model.config.n_heads
    assert grid.shape == (n_layers, n_heads)
    with torch.no_grad():
        clean = model(ids).logits[0, position].log_softmax(-1)[target]
        for layer in range(n_layers):
            for head in range(n_heads):
                ablated = _without_head(model, layer, head)(ids).logits[0, position].log_softmax(-1)[target]
                assert abs(float(grid[layer, head]) - float(clean - ablated)) < 1e-4, (layer, head)
    cells = n_layers * n_heads
    assert seen[-1] == (cells, cells) and len(seen) == 2 * n_layers  # per layer: 3 heads, then 1 (batch_size 3)


@pytest.mark.parametrize("which", ["decoder", "mlm"])
def test_before_after_rows_equal_the_plain_model_and_a_zeroed_copy(which, request):
    """One batched forward (row 0 plain, row 1 ablated, the text run once up to the ablated layer) == two
    separate forwards: the model itself and a copy with that head's W_O slice zeroed."""
    model = request.getfixturevalue(which)
    ids, position, layer, head = _ids(batch=1, seq=6), 3, 1, 1
    for start in (0, layer):
        edits = attnlab.ablate_heads(model, {layer: head}, rows=[1])
        both = interventions.before_after(model, ids, position, edits, start=start)
        with torch.no_grad():
            plain = model(ids).logits[0, position].log_softmax(-1)
            ablated = _without_head(model, layer, head)(ids).logits[0, position].log_softmax(-1)
        assert both.shape == (2, model.config.vocab_size)
        assert (both[0] - plain).abs().max() < TOL and (both[1] - ablated).abs().max() < TOL, start


@pytest.mark.parametrize("which", ["decoder", "mlm"])
def test_clean_run_reads_the_models_output_and_records_in_the_same_forward(which, request):
    model = request.getfixturevalue(which)
    ids, position = _ids(batch=1, seq=6), 3
    run = interventions.clean_run(model, ids, position, names=["blocks.*.resid_pre"])
    with torch.no_grad():
        assert (run.logprobs[0] - model(ids).logits[0, position].log_softmax(-1)).abs().max() < TOL
    full = attnlab.record(model, ids, names=["blocks.*.resid_pre"])
    kept = position + 1 if model.causal else ids.shape[1]  # a decoder stops at the read position
    assert sorted(run.recorded) == sorted(full)
    for name, value in full.items():
        assert (run.recorded[name] - value[:, :kept]).abs().max() < TOL, name


def test_a_cancelled_sweep_raises_with_the_cells_done(decoder):
    asked = []
    with pytest.raises(Cancelled) as caught:
        attnlab.head_sweep(decoder, _ids(batch=1), 5, batch_size=4, cancelled=lambda: asked.append(1) or len(asked) > 2)
    partial = caught.value.partial
    assert int(torch.isnan(partial).logical_not().sum()) == 8  # two forwards of 4 heads ran


@pytest.mark.parametrize("which", ["decoder", "mlm"])
def test_trace_residual_equals_one_patch_per_cell(which, request):
    model = request.getfixturevalue(which)
    clean, corrupted = _ids(batch=1, seq=5, seed=1), _ids(batch=1, seq=5, seed=2)
    target, position = 11, 3
    grid = attnlab.trace_residual(model, clean, corrupted, target, position=position, batch_size=4)
    n = len(model.blocks)
    source = attnlab.record(model, clean, names=["blocks.*.resid_pre"])
    with torch.no_grad():
        for layer in range(n):
            for p in range(5):
                with attnlab.intervene(model, attnlab.patch(model, source, names=f"blocks.{layer}.resid_pre",
                                                            positions=[p])):
                    want = model(corrupted).logits[0, position].softmax(-1)[target]
                assert abs(float(grid[layer, p]) - float(want)) < 1e-6, (layer, p)
    # the last block's output patched at the read position restores the clean probability exactly
    post = attnlab.trace_residual(model, clean, corrupted, target, position=position, site="resid_post")
    with torch.no_grad():
        clean_p = model(clean).logits[0, position].softmax(-1)[target]
    assert abs(float(post[n - 1, position]) - float(clean_p)) < 1e-6


@pytest.mark.parametrize("which", ["decoder", "gqa"])
def test_trace_residual_started_at_each_position_equals_one_patch_per_cell(which, request, monkeypatch):
    """12 tokens: a decoder's layer runs its cells in forwards by position, each from its first position on with
    the earlier keys and values cached (learned positions; RoPE with grouped-query attention)."""
    model = request.getfixturevalue(which)
    seq, target, position = 12, 11, 10
    assert seq > interventions.MIN_SPLIT
    clean, corrupted = _ids(batch=1, seq=seq, seed=1), _ids(batch=1, seq=seq, seed=2)
    started = []
    real = sweeps._logprobs_after
    monkeypatch.setattr(sweeps, "_logprobs_after", lambda *a: started.append(a[5]) or real(*a))
    grid = attnlab.trace_residual(model, clean, corrupted, target, position=position, batch_size=64)
    layers = len(model.blocks)
    assert sorted(started) == sorted([4, 8] * (layers - 1))  # layers 1.. run positions 0-3, 4-7 and 8-10 apart
    source = attnlab.record(model, clean, names=["blocks.*.resid_pre", "blocks.*.resid_post"])
    with torch.no_grad():
        corrupted_p = model(corrupted).logits[0, position].softmax(-1)[target]
        for layer in range(len(model.blocks)):
            for p in range(seq):
                with attnlab.intervene(model, attnlab.patch(model, source, names=f"blocks.{layer}.resid_pre",
                                                            positions=[p])):
                    want = model(corrupted).logits[0, position].softmax(-1)[target]
                assert abs(float(grid[layer, p]) - float(want)) < 1e-6, (layer, p)
        assert float(grid[1, position + 1]) == pytest.approx(float(corrupted_p), abs=1e-6)  # after: not run
    post = attnlab.trace_residual(model, clean, corrupted, target, position=position, site="resid_post")
    layer, p = 1, 5
    with torch.no_grad(), attnlab.intervene(model, attnlab.patch(model, source, names=f"blocks.{layer}.resid_post",
                                                                 positions=[p])):
        want = model(corrupted).logits[0, position].softmax(-1)[target]
    assert abs(float(post[layer, p]) - float(want)) < 1e-6


# ------------------------------------------------------------------------------------------------ bad input
def test_bad_input_is_one_clear_error_before_the_forward(decoder, gqa):
    source = attnlab.record(decoder, _ids(), names=["blocks.0.resid_post"])
    ran = []
    decoder.register_forward_pre_hook(lambda *a: ran.append(1))
    try:
        with pytest.raises(InputError, match=r"blocks\.\*\.attn\.weights") as caught:
            with attnlab.intervene(decoder, {"blocks.0.attn.weight": lambda t, n: t}):
                decoder(_ids())
        assert "blocks.*.resid_post" in str(caught.value) and "Traceback" not in str(caught.value)
        with pytest.raises(InputError, match=r"head index \(n_heads=4\)"):
            attnlab.ablate_heads(decoder, {0: [4]})
        with pytest.raises(InputError, match=r"layer index \(this model has 3 layers\)"):
            attnlab.ablate_heads(decoder, {3: 0})
        with pytest.raises(InputError, match="allowed a function"):
            with attnlab.intervene(decoder, {"logits": 3}):
                decoder(_ids())
        with pytest.raises(InputError, match="mode='max'"):
            attnlab.ablate_heads(decoder, {0: 0}, mode="max")
        with pytest.raises(InputError, match="reference="):
            attnlab.ablate_heads(decoder, {0: 0}, mode="mean")
        with pytest.raises(InputError, match=r"shape \(d_model=64,\)"):
            attnlab.steer(decoder, "blocks.0.resid_post", torch.zeros(63))
        with pytest.raises(InputError, match="residual-stream"):
            attnlab.steer(decoder, "blocks.0.attn.weights", torch.zeros(64))
        with pytest.raises(InputError, match=r"positions in \[0, 7\)"):
            attnlab.patch(decoder, source, positions=[7])
        with pytest.raises(InputError, match="one sentence"):
            attnlab.head_sweep(decoder, _ids(batch=2), 5)
        with pytest.raises(InputError, match="same length"):
            attnlab.trace_residual(decoder, _ids(batch=1, seq=5), _ids(batch=1, seq=6), 5)
        assert ran == []  # none of them ran a forward
        with pytest.raises(InputError, match=r"must keep the value's shape \(2, 7, 64\)"):
            with attnlab.intervene(decoder, {"blocks.0.resid_post": lambda t, n: t[:, :3]}):
                decoder(_ids())
    finally:
        decoder._forward_pre_hooks.clear()
    with pytest.raises(InputError, match=r"head index \(n_heads=4\)"):
        attnlab.ablate_heads(gqa, {0: [-1]})


def test_sites_list_every_name_a_model_records():
    model = _model("tiny-encoder-decoder")
    names = sites(model)
    assert "decoder.blocks.0.cross_attn.z" in names and "decoder.blocks.0.resid_cross" in names
    assert "encoder.blocks.0.resid_cross" not in names and "logits" in names
    recorded = attnlab.record(model, _ids(seq=6), _ids(seq=5), names=["*"])
    assert set(recorded) <= set(names)


# ------------------------------------------------------------------------------------------------ the docs
def test_every_example_in_docs_interventions_runs():
    """docs/interventions.md's python blocks run in order, in one namespace; their asserts check the claims."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "interventions.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 9
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/interventions.md", "exec"), namespace)  # noqa: S102
    assert active() is None


def test_a_stack_run_from_a_recorded_stream_reproduces_the_rest_of_the_forward(decoder, mlm):
    """Stack.run(start=l) on resid_pre[l] (what the sweeps use) gives the forward's final hidden state."""
    for model in (decoder, mlm):
        ids = _ids()
        rec = attnlab.record(model, ids, names=["blocks.1.resid_pre", "final"])
        with torch.no_grad():
            assert torch.equal(model.run(rec["blocks.1.resid_pre"], start=1), rec["final"])
        with pytest.raises(InputError, match=r"start=7: allowed a block index in \[0, "):
            model.run(rec["blocks.1.resid_pre"], start=7)


# ------------------------------------------------------------------------------------------------ padded batches
def _padded(short, long):
    """A left-padded batch of two prompts: (ids, mask, token positions) as generation numbers them."""
    width = long.shape[1]
    ids = torch.zeros(2, width, dtype=torch.long)
    ids[0, width - short.shape[1]:], ids[1] = short[0], long[0]
    mask = torch.ones(2, width, dtype=torch.long)
    mask[0, : width - short.shape[1]] = 0
    return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)


@pytest.mark.parametrize("which", ["decoder", "gqa"])
def test_positions_in_a_left_padded_batch_are_each_rows_token_positions(which, request):
    model = request.getfixturevalue(which)
    short, long = _ids(batch=1, seq=5, seed=5), _ids(batch=1, seq=8, seed=6)
    ids, mask, positions = _padded(short, long)
    v = torch.randn(64, generator=torch.Generator().manual_seed(7))
    source = attnlab.record(model, _ids(batch=1, seq=8, seed=8), names=["blocks.1.resid_pre"])
    for edits in (attnlab.steer(model, "blocks.0.resid_post", v, alpha=3.0, positions=[1, 3]),
                  attnlab.patch(model, source, positions=[2])):
        with torch.no_grad(), attnlab.intervene(model, edits):
            batch = model(ids, attention_mask=mask, position_ids=positions).logits
            alone = [model(short).logits[0], model(long).logits[0]]
        assert (batch[0, 3:] - alone[0]).abs().max() < TOL  # the short row: token p sits in column 3 + p
        assert (batch[1] - alone[1]).abs().max() < TOL
        with torch.no_grad():
            assert (model(short).logits[0] - alone[0]).abs().max() > 100 * TOL  # the edit did something


def test_generate_with_a_steer_gives_a_padded_row_its_own_tokens(decoder):
    short, long = _ids(batch=1, seq=4, seed=9), _ids(batch=1, seq=7, seed=10)
    v = torch.randn(64, generator=torch.Generator().manual_seed(11))
    with attnlab.intervene(decoder, attnlab.steer(decoder, "blocks.0.resid_post", v, alpha=6.0, positions=[2, 5])):
        both = decoder.generate([short[0].tolist(), long[0].tolist()], max_new_tokens=6)
        alone = [decoder.generate(short, max_new_tokens=6), decoder.generate(long, max_new_tokens=6)]
    plain = decoder.generate(short, max_new_tokens=6)
    assert torch.equal(both.new_tokens[0], alone[0].new_tokens[0])
    assert torch.equal(both.new_tokens[1], alone[1].new_tokens[0])
    assert not torch.equal(plain.new_tokens[0], alone[0].new_tokens[0])  # the steer changed the short row's text
