"""The compiled decoding step and the block options of the open families (generation/compiled_options.py).

Each option the step cannot trace (a sliding window, capped scores, dynamic NTK RoPE, a score bias) is named before
any compile starts: compiled.why_not says it in one line, generate(compile=True) refuses with that line, and the
default path (compile=None, for a quantized model where compiling pays) decodes eagerly, says why, and gives the
eager tokens. The options it does trace are checked compiled against eager once, together, on a tiny float
decoder (one compile for the file).
"""

from __future__ import annotations

import pytest
import torch

import attnlab
from attnlab.errors import InputError
from attnlab.generation import compiled

PROMPT = [[5, 17, 30, 2, 9, 11]]
BASE = dict(n_layers=2, d_model=64, n_heads=4, n_kv_heads=2, d_ff=128, vocab_size=96)  # widths for int4

REFUSED = {  # option -> (config change, what the refusal must say)
    "sliding_window": (dict(sliding_window=3), "sliding_window=3: the step is traced at one cache length"),
    "attn_softcap": (dict(attn_softcap=0.5), "attn_softcap=0.5: the step's attention kernel does not cap"),
    "dynamic rope": (dict(rope_scaling={"type": "dynamic", "factor": 2.0, "original_max_len": 8}),
                     "rope_scaling type 'dynamic'"),
    "alibi": (dict(position="alibi"), "position='alibi': a bias added to the scores"),
}


def _model(**changes):
    torch.manual_seed(0)
    return attnlab.build_model(attnlab.presets["tiny-llama"].replace(**BASE, **changes)).eval()


@pytest.mark.parametrize("option", REFUSED)
def test_an_option_the_step_cannot_trace_is_named_up_front(option):
    changes, said = REFUSED[option]
    model = _model(**changes)
    reason = compiled.why_not(model)
    assert reason is not None and said in reason and "\n" not in reason
    with pytest.raises(InputError, match="compile=True cannot compile here: the compiled step does not handle") as e:
        attnlab.generate(model, PROMPT, max_new_tokens=2, compile=True)
    assert said in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("option", ["sliding_window", "attn_softcap"])
def test_the_default_path_decodes_eagerly_and_says_why(option, monkeypatch, capsys):
    """A quantized model (where compile=None compiles) with the option: no compile is tried, one line names the
    option, and the tokens are those of compile=False."""
    monkeypatch.setenv("ATTNLAB_COMPILE", "1")
    monkeypatch.setattr(compiled, "_SAID", set())
    changes, said = REFUSED[option]
    model = attnlab.quantize(_model(**changes), "int4")
    assert not compiled.auto(model)
    assert f"decoding eagerly: the compiled step does not handle {said}" in capsys.readouterr().err
    before = dict(compiled.COUNTS)
    default = attnlab.generate(model, PROMPT, max_new_tokens=5, eos_token_id=None, threads=1)
    assert compiled.COUNTS["compiled"] == before["compiled"]
    eager = attnlab.generate(model, PROMPT, max_new_tokens=5, eos_token_id=None, threads=1, compile=False)
    assert default.tokens == eager.tokens


def test_the_options_it_traces_give_the_eager_tokens_and_logits():
    """Per-head q/k norm, sandwich norms, partial RoPE with yarn scaling, a logit cap, scaled embeddings and a query
    scale of its own (Gemma's and the open families' options, a window aside), compiled: every step through the
    graph, the eager tokens, logits to float32 rounding of the fused graph."""
    model = _model(qk_norm="head", norm="rmsnorm", norm_placement="sandwich", rotary_dim=8, logit_softcap=0.5,
                   scale_embeddings=True, attn_scale=0.3, activation="geglu_tanh",
                   rope_scaling={"type": "yarn", "factor": 4.0, "original_max_len": 16})
    with torch.no_grad():
        gen = torch.Generator().manual_seed(1)
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.1)
    assert compiled.why_not(model) is None or "compiler" in compiled.why_not(model)
    if compiled.why_not(model) is not None:
        pytest.skip(compiled.why_not(model))
    args = dict(max_new_tokens=5, keep_logits=True, threads=1, eos_token_id=None)
    eager = attnlab.generate(model, PROMPT, **args)
    before = dict(compiled.COUNTS)
    traced = attnlab.generate(model, PROMPT, compile=True, **args)
    assert compiled.COUNTS["compiled"] - before["compiled"] == 4
    assert traced.tokens == eager.tokens
    for e, c in zip(eager.logits, traced.logits, strict=True):
        assert float((c - e).abs().max()) <= 1e-4 * float(e.abs().max())
