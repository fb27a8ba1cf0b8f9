"""The explorer's Generation tab decodes through the compiled step where attnlab.generate would (a quantized model
with its blocks kept), without making the learner wait for the compile (explorer/views/generation/compute.py,
_step_path).

The first step finds the step not built in this process: it starts building it in a background thread
(compiled.build_in_background) and runs eagerly, saying so; once the build is done every one-token step runs
compiled ("step_path": "compiled", compiled.COUNTS["compiled"] grows), with the eager steps' tokens and logits
within cache_tolerance of them. ATTNLAB_COMPILE=0 (the suite's setting) keeps it eager and says so, as do float
weights and translators. While the step builds, the eager forward beside it (in the test's thread) gives its usual
logits and still records: the build must not switch other threads to the layers' traced paths.
One small model, built once for the file (loaded from the run's cache folder where tests/test_decode_compiled.py
compiled the same step, else compiled: ~10-30 s on a loaded 2-core machine).
"""

from __future__ import annotations

import weakref

import pytest
import torch

import attnlab
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.server.sessions import GenerationSessions
from attnlab.explorer.views.generation import compute as generation
from attnlab.generation import compiled
from attnlab.recording import capture
from attnlab.threads import using_threads

PROMPT = "abc"  # no tokenizer: ids are code points
STEPS = 5
_LAST: list = [None]  # the logits of the last one-token forward (the `spy` fixture)


def _quantized_lm() -> Loaded:
    torch.manual_seed(0)
    config = attnlab.presets["tiny-llama"].replace(n_layers=2, d_ff=128)  # every width a multiple of 32: all int4
    model = attnlab.quantize(attnlab.build_model(config).eval(), "int4")
    return Loaded("tiny-int4", "tiny-llama, int4", model, None, kind="shipped")


@pytest.fixture(scope="module")
def lm():
    lm = _quantized_lm()
    reason = compiled.why_not(lm.model)
    if reason is not None:
        pytest.skip(f"the decoding step cannot be compiled here: {reason}")
    if not compiled.pays(lm.model):
        pytest.skip("attnlab's 4-bit kernel does not run here, so generate would not compile this model either")
    return lm


@pytest.fixture
def fresh(monkeypatch):
    """No step built in this process yet (another test file may have built this one): the first step must find
    none. The compiled folder stays the run's own (conftest's ATTNLAB_CACHE_DIR), so nothing leaks out."""
    monkeypatch.setattr(compiled, "_STEPS", {})
    monkeypatch.setattr(compiled, "_BACKGROUND", weakref.WeakKeyDictionary())
    yield
    assert compiled.wait_for_builds(timeout=600)


def _steps(lm, count: int, logits: list, **settings) -> list[dict]:
    """`count` greedy steps of one session; the logits of each timed one-token step appended to `logits`."""
    sessions, answers, generated, session = GenerationSessions(max_sessions=4), [], [], None
    for _ in range(count):
        out = generation.generation_step(lm, PROMPT, generated, temperature=0.0, session=session,
                                         sessions=sessions, **settings)
        logits.append(_LAST[0])
        answers.append(out)
        generated, session = out["generated"], out["session"]
    return answers



@pytest.fixture
def spy(monkeypatch):
    """Keep the logits of the last one-token forward of each step (the timed step's, compiled or eager)."""
    forward = generation._sequence_forward

    def kept(model, ids, cache, enc_dec, encoder_hidden, path=None):
        out = forward(model, ids, cache, enc_dec, encoder_hidden, path)
        if len(ids) == 1:
            _LAST[0] = out.clone()
        return out

    monkeypatch.setattr(generation, "_sequence_forward", kept)


def _eager_meanwhile(model, ids, reference, recorded) -> int:
    """The eager forward, with a recording, while the step builds in the background: the same logits and the same
    recorded weights as before it started (a compile must not switch other threads to the traced paths)."""
    runs = 0
    while not compiled.wait_for_builds(timeout=0.05):
        with torch.no_grad(), capture(model, ["blocks.0.attn.weights"]) as rec:
            out = model(ids).logits
        assert torch.equal(out, reference)
        assert torch.equal(rec["blocks.0.attn.weights"], recorded)
        runs += 1
    return runs


def test_steps_run_compiled_once_built_in_the_background(lm, fresh, spy, monkeypatch):
    model = lm.model
    with using_threads(1):
        monkeypatch.setenv("ATTNLAB_COMPILE", "0")
        eager_logits: list = []
        eager = _steps(lm, STEPS, eager_logits)
        assert [a["step_path"] for a in eager] == ["eager"] * STEPS
        assert {a["step_path_reason"] for a in eager} == {"ATTNLAB_COMPILE=0"}
        assert compiled._BACKGROUND == {}  # nothing was built

        monkeypatch.delenv("ATTNLAB_COMPILE")
        ids = torch.tensor([[ord(c) for c in PROMPT]])
        with torch.no_grad(), capture(model, ["blocks.0.attn.weights"]) as rec:
            reference = model(ids).logits
        before = dict(compiled.COUNTS)
        sessions, got_logits = GenerationSessions(max_sessions=4), []
        first = generation.generation_step(lm, PROMPT, [], temperature=0.0, session=None, sessions=sessions)
        got_logits.append(_LAST[0])
        assert first["step_path"] == "eager"
        assert first["step_path_reason"].startswith("compiling the step in the background")
        assert compiled.COUNTS == before  # the first step did not even call the compiled step
        assert len(compiled._BACKGROUND) == 1

        _eager_meanwhile(model, ids, reference, rec["blocks.0.attn.weights"])
        assert compiled.wait_for_builds(timeout=600)
        assert list(compiled._STEPS.values()) != [None], "the background build failed (see its warning)"

        answers, generated, session = [first], first["generated"], first["session"]
        for _ in range(STEPS - 1):
            before = dict(compiled.COUNTS)
            out = generation.generation_step(lm, PROMPT, generated, temperature=0.0, session=session,
                                             sessions=sessions)
            got_logits.append(_LAST[0])
            assert out["step_path"] == "compiled" and out["step_path_reason"] is None
            assert compiled.COUNTS["compiled"] - before["compiled"] == 3  # best of 3 timed runs, each compiled
            assert compiled.COUNTS["eager"] == before["eager"]
            assert out["cache_matches"] is True  # against the eager full recompute, within cache_tolerance
            answers.append(out)
            generated, session = out["generated"], out["session"]

    assert [a["token_id"] for a in answers] == [a["token_id"] for a in eager]
    for e, c in zip(eager_logits, got_logits, strict=True):
        assert float((c - e).abs().max()) <= generation.cache_tolerance(model, e)

    # the step is keyed by the model's shapes, not the object: another model of this kind readies its layers in
    # the background (its first step eager), then uses the step built above, with no second build
    other, built = _quantized_lm(), dict(compiled._STEPS)
    with using_threads(1):
        first = generation.generation_step(other, PROMPT, [], temperature=0.0)
        assert compiled.wait_for_builds(timeout=600)
        second = generation.generation_step(other, PROMPT, first["generated"], temperature=0.0)
    assert first["step_path"] == "eager" and second["step_path"] == "compiled"
    assert compiled._STEPS == built
    assert [first["token_id"], second["token_id"]] == [a["token_id"] for a in eager[:2]]


def test_float_weights_and_encoder_decoders_say_why_they_run_eagerly(monkeypatch):
    monkeypatch.delenv("ATTNLAB_COMPILE", raising=False)
    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.presets["tiny-llama"].replace(n_layers=1)).eval()
    out = generation.generation_step(Loaded("f", "f", model, None, kind="shipped"), PROMPT, [], temperature=0.0)
    assert (out["step_path"], out["step_path_reason"]) == ("eager", "float weights: eager is as fast")
    seq2seq = attnlab.build_model(attnlab.presets["tiny-encoder-decoder"]).eval()
    out = generation.generation_step(Loaded("s", "s", seq2seq, None, kind="shipped"), "12", [], temperature=0.0)
    assert (out["step_path"], out["step_path_reason"]) == ("eager", "an encoder-decoder's steps run eagerly")
