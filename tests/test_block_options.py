"""The block options of the open decoder families, each against an independent computation.

- RoPE scalings (llama3, YaRN, linear, dynamic NTK): the frequencies written out pair by pair in float64 from the
  published rules; tolerance 1e-6 relative (attnlab computes in float32, as Hugging Face does);
- the sliding window: the mask against a double loop; a one-layer model's last logits against the same model
  without a window reading only the last `window` tokens (RoPE is relative: the same scores); the KV cache
  against recomputing the whole sequence, well past the window;
- q/k norms (per head, over all heads), biases on W_Q, W_K, W_V only, partial RoPE and soft-capped scores: one
  attention layer in float64 against the textbook formula written out here;
- the parallel residual, sandwich and output norms against their formulas over the block's own sub-layers; windowed
  and global layers alternating (global_every) against the blocks run one by one on masks from a double loop;
  soft-capped logits against cap * tanh(logits / cap);
- GPT-NeoX's head-by-head q/k/v rows against indexing them one head at a time; parameter counts against the built
  model.
Models are tiny and seeded.
"""

from __future__ import annotations

import math

import pytest
import torch

import attnlab
from attnlab.build import build_model
from attnlab.cache import KVCache
from attnlab.config import ModelConfig
from attnlab.errors import ConfigError
from attnlab.layers.attention import Attention
from attnlab.layers.masks import causal_mask
from attnlab.layers.positions import Rotary, rope_frequencies
from attnlab.parameter_count import closed_form, exact_parameters, formula_gap

LLAMA3 = {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_len": 8192}


def _plain(d_head: int, theta: float) -> list[float]:
    return [theta ** (-2 * i / d_head) for i in range(d_head // 2)]


def test_llama3_frequencies_follow_the_three_bands():
    """Llama 3.1: wavelengths under L0/high kept, over L0/low divided by the factor, a linear blend in 1/wavelength
    between. theta and d_head of Llama 3.1 8B, so that all three bands hold pairs."""
    d_head, theta = 128, 500000.0
    got = rope_frequencies(d_head, theta, LLAMA3)[0].double()
    bands = {"kept": 0, "divided": 0, "blended": 0}
    expected = []
    for f in _plain(d_head, theta):
        wavelength = 2 * math.pi / f
        if wavelength < 8192 / 4.0:
            bands["kept"] += 1
            expected.append(f)
        elif wavelength > 8192 / 1.0:
            bands["divided"] += 1
            expected.append(f / 8.0)
        else:
            bands["blended"] += 1
            smooth = (8192 / wavelength - 1.0) / (4.0 - 1.0)
            expected.append((1 - smooth) * f / 8.0 + smooth * f)
    assert min(bands.values()) > 0, bands
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64), rtol=1e-6, atol=0)


@pytest.mark.parametrize("truncate", [True, False])
def test_yarn_frequencies_and_temperature(truncate):
    """YaRN: pair i keeps its speed above beta_fast turns in L0, is interpolated by the factor below beta_slow,
    a linear ramp between; cos and sin are multiplied by 0.1 ln(factor) + 1."""
    d_head, theta, factor, original = 64, 10000.0, 4.0, 2048
    scaling = {"type": "yarn", "factor": factor, "original_max_len": original, "truncate": truncate}
    inv_freq, attention_factor = rope_frequencies(d_head, theta, scaling)

    def pair_at(turns):  # the pair whose wavelength fits `turns` times into the original context
        return d_head * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(theta))

    low, high = pair_at(32), pair_at(1)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d_head - 1)
    expected = []
    for i, f in enumerate(_plain(d_head, theta)):
        interpolated = min(max((i - low) / (high - low), 0.0), 1.0)  # 0: kept, 1: divided by the factor
        expected.append(f * (1 - interpolated) + f / factor * interpolated)
    torch.testing.assert_close(inv_freq.double(), torch.tensor(expected, dtype=torch.float64), rtol=1e-6, atol=0)
    assert attention_factor == pytest.approx(0.1 * math.log(factor) + 1)
    kept = inv_freq.double() / torch.tensor(_plain(d_head, theta), dtype=torch.float64)
    assert float(kept[0]) == pytest.approx(1.0) and float(kept[-1]) == pytest.approx(1 / factor)


def test_linear_and_dynamic_frequencies():
    d_head, theta = 16, 10000.0
    plain = torch.tensor(_plain(d_head, theta), dtype=torch.float64)
    linear = rope_frequencies(d_head, theta, {"type": "linear", "factor": 4.0})[0].double()
    torch.testing.assert_close(linear, plain / 4, rtol=1e-6, atol=0)
    dynamic = {"type": "dynamic", "factor": 2.0, "original_max_len": 32}
    for length in (1, 32):  # up to the pre-training length nothing changes
        torch.testing.assert_close(rope_frequencies(d_head, theta, dynamic, length)[0].double(), plain,
                                   rtol=1e-6, atol=0)
    base = theta * (2.0 * 96 / 32 - 1.0) ** (d_head / (d_head - 2))  # NTK: theta grows with the length
    torch.testing.assert_close(rope_frequencies(d_head, theta, dynamic, 96)[0].double(),
                               torch.tensor(_plain(d_head, base), dtype=torch.float64), rtol=1e-6, atol=0)


def test_yarn_multiplies_cos_and_sin():
    rotary = Rotary(8, 10000.0, {"type": "yarn", "factor": 4.0, "original_max_len": 16})
    cos, sin = rotary(torch.arange(5)[None])
    assert torch.allclose(cos ** 2 + sin ** 2, torch.full_like(cos, (0.1 * math.log(4.0) + 1) ** 2))


@pytest.mark.parametrize("q_len, k_len, window", [(7, 7, 3), (1, 9, 4), (3, 10, 2), (5, 5, 5)])
def test_sliding_window_mask_by_double_loop(q_len, k_len, window):
    expected = torch.zeros(q_len, k_len, dtype=torch.bool)
    for i in range(q_len):
        position = i + k_len - q_len  # the query's place in the whole sequence (a cache holds the rest)
        for j in range(k_len):
            expected[i, j] = position - window < j <= position
    assert torch.equal(causal_mask(q_len, k_len, window=window), expected)


def _decoder(**changes) -> torch.nn.Module:
    torch.manual_seed(0)
    config = ModelConfig(**{**dict(topology="decoder", vocab_size=50, d_model=32, n_heads=4, n_kv_heads=2, d_ff=48,
                                   n_layers=2, position="rope", activation="swiglu", norm="rmsnorm", bias=False,
                                   tie_embeddings=False), **changes})
    model = attnlab.build_model(config).eval()
    with torch.no_grad():  # gains and biases away from 1 and 0, so that dropping one shows
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model


def test_one_layer_window_reads_only_the_last_window_tokens():
    window = 4
    ids = torch.randint(0, 50, (2, 11), generator=torch.Generator().manual_seed(1))
    model = _decoder(n_layers=1, sliding_window=window)
    with torch.no_grad():
        windowed = model(ids).logits[:, -1]
        model.config.sliding_window = None  # the same weights, no window, fed only the tokens the window keeps
        alone = model(ids[:, -window:]).logits[:, -1]
        everything = model(ids).logits[:, -1]
    assert (windowed - alone).abs().max() <= 1e-5
    assert (windowed - everything).abs().max() > 1e-2  # the window does hide something here


@pytest.mark.parametrize("changes", [dict(sliding_window=3), dict(sliding_window=3, n_kv_heads=4),
                                     dict(qk_norm="head", qkv_bias=True, d_head=12),
                                     dict(rotary_dim=4, parallel_residual=True, n_kv_heads=4),
                                     dict(rope_scaling={"type": "yarn", "factor": 4.0, "original_max_len": 8})])
def test_cache_equals_recompute_past_the_window(changes):
    """Step by step through the KV cache (prompt 5, then 9 single tokens: 14 positions, window 3) gives the logits
    of one forward over the whole sequence."""
    model = _decoder(**changes)
    ids = torch.randint(0, 50, (2, 14), generator=torch.Generator().manual_seed(2))
    cache = KVCache.for_model(model, batch=2, capacity=14)
    with torch.no_grad():
        whole = model(ids).logits
        steps = [model(ids[:, :5], cache=cache).logits]
        steps += [model(ids[:, t:t + 1], cache=cache).logits for t in range(5, 14)]
    assert (torch.cat(steps, dim=1) - whole).abs().max() <= 1e-5


def test_recording_path_equals_fast_path_with_every_option():
    model = _decoder(qk_norm="head", qkv_bias=True, sliding_window=3,
                     rope_scaling={"type": "llama3", **{k: v for k, v in LLAMA3.items() if k != "type"}})
    ids = torch.randint(0, 50, (2, 9), generator=torch.Generator().manual_seed(3))
    mask = torch.tensor([[1] * 9, [1] * 6 + [0] * 3])
    with torch.no_grad():
        fast = model(ids, attention_mask=mask).logits
        with attnlab.recording.capture(model) as store:
            slow = model(ids, attention_mask=mask).logits
    assert any(k.endswith("attn.weights") for k in store)
    assert (fast - slow)[mask.bool()].abs().max() <= 1e-5


@pytest.mark.parametrize("qk_norm, rotary_dim, softcap", [("head", None, None), ("none", 4, None), ("head", 2, None),
                                                        ("all", None, None), ("none", None, 0.7), ("all", 4, 0.7)])
def test_attention_options_by_hand(qk_norm, rotary_dim, softcap):
    """softmax(cap * tanh(q' k'^T / sqrt(d_head) / cap)) V W_O (no cap: the plain scores) with q' = RoPE(g_q * q /
    rms(q)) per head (qk_norm="head"), over all heads' q features of a position ("all"), or RoPE(q); RoPE turning
    pairs (i, i + r/2) of the first r = rotary_dim features only; biases on Q, K, V only. Written out in float64
    (the module run in float64 too)."""
    config = ModelConfig(topology="decoder", d_model=16, n_heads=4, n_kv_heads=2, d_head=6, position="rope",
                         norm="rmsnorm", norm_eps=1e-6, bias=False, qkv_bias=True, qk_norm=qk_norm,
                         rotary_dim=rotary_dim, attn_softcap=softcap)
    r = config.rope_dim
    torch.manual_seed(0)
    attn = Attention(config).double()
    assert attn.out.bias is None and attn.qkv.bias is not None
    with torch.no_grad():
        for p in attn.parameters():
            p.copy_(torch.randn_like(p) * 0.5)  # scores of a few units: float32 angles then err ~1e-7
    x = torch.randn(1, 5, 16, dtype=torch.float64)
    rope = Rotary(r)(torch.arange(5)[None])
    with torch.no_grad():
        got = attn(x, is_causal=True, rope=tuple(t.double() for t in rope))[0]

    w, b = attn.qkv.weight, attn.qkv.bias
    q_all, k_all, v_all = (x[0] @ w.T + b).split((24, 12, 12), dim=-1)  # (5, heads * 6) each
    if qk_norm == "all":  # every position's whole q (and k) row rescaled, before the heads are cut out
        q_all = q_all / torch.sqrt((q_all ** 2).mean(-1, keepdim=True) + 1e-6) * attn.q_norm.weight
        k_all = k_all / torch.sqrt((k_all ** 2).mean(-1, keepdim=True) + 1e-6) * attn.k_norm.weight
    freqs = [10000.0 ** (-2 * i / r) for i in range(r // 2)]

    def norm_and_rotate(vec, norm, pos):
        if qk_norm == "head":
            vec = vec / torch.sqrt((vec ** 2).mean() + 1e-6) * norm.weight
        out = vec.clone()  # features r.. are left as they are
        for i, f in enumerate(freqs):  # pair (i, i + r/2) turned by pos * f
            c, s = math.cos(pos * f), math.sin(pos * f)
            out[i], out[i + r // 2] = vec[i] * c - vec[i + r // 2] * s, vec[i + r // 2] * c + vec[i] * s
        return out

    heads = []
    for h in range(4):
        g = h // 2  # two query heads share each key/value head
        rows = []
        for t in range(5):
            q = norm_and_rotate(q_all[t, 6 * h:6 * h + 6], attn.q_norm, t)
            keys = [norm_and_rotate(k_all[j, 6 * g:6 * g + 6], attn.k_norm, j) for j in range(t + 1)]
            scores = torch.stack([q @ k for k in keys]) / math.sqrt(6)
            if softcap is not None:
                scores = softcap * torch.tanh(scores / softcap)
            weights = scores.softmax(0)
            rows.append(sum(weights[j] * v_all[j, 6 * g:6 * g + 6] for j in range(t + 1)))
        heads.append(torch.stack(rows))
    expected = torch.cat(heads, dim=-1) @ attn.out.weight.T
    # attnlab's rotary angles are float32 (as Hugging Face's): cos and sin agree with float64's to ~1e-7
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)


def test_options_round_trip_through_an_attnlab_checkpoint(tmp_path):
    model = _decoder(qk_norm="head", qkv_bias=True, sliding_window=3,
                     rope_scaling={"type": "yarn", "factor": 4.0, "original_max_len": 8, "beta_fast": 16.0})
    model.save(tmp_path)
    loaded, _ = attnlab.load(tmp_path)
    assert loaded.config == model.config
    ids = torch.randint(0, 50, (1, 12), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        assert torch.equal(loaded(ids).logits, model(ids).logits)


@pytest.mark.parametrize("changes, message", [
    (dict(qk_norm="rms"), "qk_norm='rms': unknown value; allowed: none, head, all"),
    (dict(qk_norm="head", norm="layernorm"), "qk_norm='head': q and k are normalised by an RMSNorm"),
    (dict(sliding_window=0), "sliding_window=0: must be a positive integer"),
    (dict(rope_scaling={"type": "ntk", "factor": 2.0}), "'type' must be one of linear, dynamic, llama3, yarn, "
                                                        "longrope"),
    (dict(rope_scaling={"type": "longrope", "factor": 2.0, "original_max_len": 8, "short_factor": [1.0] * 3,
                        "long_factor": [2.0] * 8}), "'short_factor' must be a list of 8 positive finite numbers"),
    (dict(rope_scaling={"type": "linear"}), "type 'linear' needs factor"),
    (dict(rope_scaling={"type": "linear", "factor": 2.0, "beta": 1}), r"unknown keys \['beta'\]"),
    (dict(rope_scaling={"type": "linear", "factor": -2.0}), "'factor' must be a positive finite number"),
    (dict(rope_scaling={**LLAMA3, "high_freq_factor": 0.5}), "'high_freq_factor' must exceed 'low_freq_factor'"),
    (dict(position="learned", rope_scaling={"type": "linear", "factor": 2.0}), "needs position='rope'"),
    (dict(rotary_dim=3), "rotary_dim=3: rotates pairs of RoPE features"),
    (dict(rotary_dim=32), "an even number up to d_head=16"),
    (dict(parallel_residual=True, norm_placement="post"), "parallel_residual=True: both sub-layers read"),
    (dict(attn_softcap=0.0), "attn_softcap=0.0: must be a positive finite number"),
    (dict(logit_softcap=float("inf")), "logit_softcap=inf: must be a positive finite number"),
    (dict(global_every=2), "global_every=2: picks the layers that see past the sliding window"),
    (dict(sliding_window=4, global_every=1), "a period of at least 2"),
])
def test_bad_options_are_refused_in_one_line(changes, message):
    base = dict(topology="decoder", position="rope")
    with pytest.raises(ConfigError, match=message) as info:
        ModelConfig(**{**base, **changes})
    assert "\n" not in str(info.value)


def test_sliding_window_needs_a_decoder():
    with pytest.raises(ConfigError, match="sliding_window=4: a sliding window is a causal decoder's option"):
        ModelConfig(topology="encoder", sliding_window=4)


@pytest.mark.parametrize("changes", [dict(qkv_bias=True), dict(qkv_bias=True, bias=True),
                                     dict(qkv_bias=False, bias=True), dict(qk_norm="head", d_head=12),
                                     dict(qk_norm="head", qkv_bias=True), dict(qk_norm="all"),
                                     dict(norm_placement="sandwich"), dict(norm_placement="output")])
def test_parameter_count_knows_the_options(changes):
    """The torch-free count (`attnlab models`, `attnlab params`) equals the built model's, and so does the seeds'
    closed form plus its itemised gap."""
    config = _decoder(**changes).config
    built = build_model(config, device="meta").num_parameters()
    assert exact_parameters(config) == built
    assert closed_form(config) + sum(count for _, count in formula_gap(config)) == built


def test_parallel_residual_is_its_formula():
    """x + Attn(Norm1(x)) + FFN(Norm2(x)): the feed-forward reads the block's input, not attention's output."""
    model = _decoder(parallel_residual=True, n_layers=1, norm="layernorm")
    block = model.blocks[0]
    x = torch.randn(2, 6, 32, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        got = block(x, is_causal=True)
        expected = x + block.attn(block.norm1(x), is_causal=True) + block.ffn(block.norm2(x))
        sequential = x + block.attn(block.norm1(x), is_causal=True)
        sequential = sequential + block.ffn(block.norm2(sequential))
    assert (got - expected).abs().max() <= 1e-6
    assert (got - sequential).abs().max() > 1e-3


def test_neox_head_by_head_qkv_rows():
    """HF GPT-NeoX's query_key_value rows are q_0 k_0 v_0 q_1 k_1 v_1 ...: attnlab's qkv is all q, all k, all v."""
    from attnlab.interop.mapping import HEADS_QKV

    config = ModelConfig(topology="decoder", d_model=12, n_heads=3, position="rope")
    theirs = torch.randn(3 * 12, 12)
    ours = HEADS_QKV.to_ours([theirs], config)
    for h in range(3):
        for part in range(3):  # q, k, v
            ours_rows = ours[part * 12 + 4 * h:part * 12 + 4 * h + 4]  # head h of part in attnlab's layout
            assert torch.equal(ours_rows, theirs[12 * h + 4 * part:12 * h + 4 * part + 4])
    assert torch.equal(HEADS_QKV.to_theirs(ours, config)[0], theirs)
    bias = torch.randn(36)
    assert torch.equal(HEADS_QKV.to_theirs(HEADS_QKV.to_ours([bias], config), config)[0], bias)


def test_sandwich_and_output_norms_are_their_formulas():
    """Gemma 2: x + Norm_after(F(Norm_before(x))) for each sub-layer; OLMo 2: x + Norm(F(x))."""
    x = torch.randn(2, 6, 32, generator=torch.Generator().manual_seed(6))
    sandwich = _decoder(norm_placement="sandwich", n_layers=1).blocks[0]
    output = _decoder(norm_placement="output", n_layers=1).blocks[0]
    with torch.no_grad():
        a = sandwich.norm1
        y = x + a.after(sandwich.attn(a.before(x), is_causal=True))
        expected = y + sandwich.norm2.after(sandwich.ffn(sandwich.norm2.before(y)))
        assert (sandwich(x, is_causal=True) - expected).abs().max() <= 1e-6
        y = x + output.norm1(output.attn(x, is_causal=True))
        expected = y + output.norm2(output.ffn(y))
        assert (output(x, is_causal=True) - expected).abs().max() <= 1e-6


def test_global_every_alternates_windowed_and_global_layers():
    """global_every=2 with a window of 2: layer 0 sees the last 2 keys, layer 1 every key. Against the blocks run one
    by one with masks built by a double loop."""
    model = _decoder(sliding_window=2, global_every=2, n_layers=2)
    ids = torch.randint(0, 50, (2, 7), generator=torch.Generator().manual_seed(7))

    def mask(window):
        keep = torch.tensor([[j <= i and (window is None or j > i - window) for j in range(7)] for i in range(7)])
        return torch.zeros(7, 7).masked_fill(~keep, torch.finfo(torch.float32).min)[None, None]

    with torch.no_grad():
        got = model(ids).hidden
        x = model.tokens(ids)
        rope = model.rotary(torch.arange(7)[None])
        x = model.blocks[0](x, bias=mask(2), rope=rope)
        x = model.blocks[1](x, bias=mask(None), rope=rope)
        expected = model.final_norm(x)
        assert (got - expected).abs().max() <= 1e-5
        model.config.global_every = None  # the window on both layers: something else
        assert (model(ids).hidden - expected).abs().max() > 1e-3


def test_logit_softcap_bounds_the_logits():
    model = _decoder()
    ids = torch.randint(0, 50, (2, 7), generator=torch.Generator().manual_seed(8))
    with torch.no_grad():
        plain = model(ids).logits
        model.config.logit_softcap = 0.3
        capped = model(ids).logits
    assert (capped - 0.3 * torch.tanh(plain / 0.3)).abs().max() <= 1e-6
    assert float(capped.abs().max()) < 0.3 < float(plain.abs().max())


@pytest.mark.parametrize("changes, named", [(dict(qk_norm="all"), "qk_norm"),  # per head: a qwen3 file
                                            (dict(sliding_window=4), "sliding_window"),
                                            (dict(norm_placement="output"), "norm_placement"),
                                            (dict(rope_scaling=LLAMA3), "rope_scaling")])
def test_llama_gguf_export_refuses_what_it_cannot_say(changes, named, tmp_path):
    """A LLaMA GGUF has no key for these options (nor the Qwen2 and Qwen3 files save_gguf also writes): written
    anyway, llama.cpp would compute another model."""
    pytest.importorskip("gguf")
    from attnlab.errors import CheckpointError
    from attnlab.interop.gguf import save_gguf

    with pytest.raises(CheckpointError, match=f"LLaMA-style decoders, .* only; this one sets {named}"):
        save_gguf(_decoder(**changes), tmp_path / "model.gguf")
    assert not (tmp_path / "model.gguf").exists()


def test_a_windowed_decoding_step_refuses_to_be_traced(monkeypatch):
    """A compiled decoding step is traced at one cache length and run without guards: a window would be decided
    once for every later length, so the trace stops (generation/compiled.py then decodes eagerly, with a warning)."""
    model = _decoder(sliding_window=3)
    cache = KVCache.for_model(model, batch=1, capacity=8)
    ids = torch.randint(0, 50, (1, 4), generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        model(ids, cache=cache)
        monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
        with pytest.raises(RuntimeError, match="a decoding step with a sliding window is not compiled"):
            model.run(model.tokens(ids[:, :1]), cache=cache)


def test_cost_table_counts_partial_rope_and_sandwich_norms():
    """The analytic cost (attnlab cost): RoPE turns rotary_dim features of each q and k head, a sandwich holds four
    norms per block (two adds), biases on W_Q, W_K, W_V alone are read with their matrix. By hand: 2 layers, 2 rows
    of 5 tokens, 4 query + 2 key heads."""
    from attnlab.cost.analytic import NORM_FLOPS, ROPE_FLOPS, cost_table

    config = _decoder(rotary_dim=4, norm_placement="sandwich", qkv_bias=True).config
    rows = {r.name: r for r in cost_table(config, batch=2, seq=5).rows}
    assert rows["self-attn rotary (RoPE)"].flops == 2 * ROPE_FLOPS * (2 * 5) * (4 + 2) * 4
    assert rows["rmsnorm (4 per block)"].flops == 2 * 4 * NORM_FLOPS["rmsnorm"] * (2 * 5) * 32
    assert rows["residual adds (2 per block)"].flops == 2 * 2 * (2 * 5) * 32
    plain = {r.name: r for r in cost_table(config.replace(qkv_bias=None), batch=2, seq=5).rows}
    qkv = "self-attn Q,K,V projections"
    assert rows[qkv].bytes_read - plain[qkv].bytes_read == 2 * 4 * (4 + 2 + 2) * 8  # 2 layers, float32 biases
