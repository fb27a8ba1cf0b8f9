"""What a transformer costs: the analytic tables against torch's FlopCounterMode, the parameter formula against
the built model, the KV-cache formula against a real KVCache, and the command's errors.

FlopCounterMode counts the matrix products torch actually runs. On CPU the fused SDPA kernel is not in its
table, so the counting runs force SDPA's math backend, which performs attention as two batched products.
"""

import json
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

import attnlab
from attnlab.build import build_model
from attnlab.cache import KVCache
from attnlab.cli import main
from attnlab.cost import (
    closed_form_training_flops_per_token,
    cost_table,
    forward_flops,
    kv_cache_bytes,
    matmul_parameters,
    measure,
    peak,
    training_flops,
    training_flops_per_token,
)
from attnlab.cost.check import flop_counter_check
from attnlab.counting import closed_form, formula_gap
from attnlab.errors import InputError

B, N, M = 2, 12, 9  # batch, target length, source length (m != n catches a swapped n and m)


def counted(fn) -> int:
    """Matrix-product FLOPs torch performs inside fn(), attention included (math backend)."""
    counter = FlopCounterMode(display=False)
    with sdpa_kernel(SDPBackend.MATH), counter:
        fn()
    return counter.get_total_flops()


def run_forward(model, config):
    gen = torch.Generator().manual_seed(0)
    if config.topology == "vit":
        return model(torch.randn(B, config.n_channels, config.image_size, config.image_size, generator=gen))
    ids = torch.randint(0, config.vocab_size, (B, N), generator=gen)
    if config.topology == "encoder-decoder":
        return model(ids[:, :M], ids)
    return model(ids)


def sizes(config):
    return (None if config.topology == "vit" else N), (M if config.topology == "encoder-decoder" else None)


TOPOLOGIES = ["tiny-encoder", "tiny-decoder", "tiny-llama", "tiny-encoder-decoder", "tiny-t5", "tiny-vit"]


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_forward_matmul_flops_equal_flop_counter(name):
    # tiny-llama is the grouped-query decoder (n_kv_heads=2 of 4); the spec asks for 2%, the count is exact
    config = attnlab.presets[name]
    model = build_model(config).eval()
    with torch.no_grad():
        actual = counted(lambda: run_forward(model, config))
    n, m = sizes(config)
    assert forward_flops(config, B, n, m) == actual
    assert abs(forward_flops(config, B, n, m) - actual) <= 0.02 * actual


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_configs_match_the_flop_counter(data):
    """Any mix of topology, GQA, head width, gating, biases, positions and heads: forward and cached step exact."""
    topology = data.draw(st.sampled_from(["encoder", "decoder", "encoder-decoder"]))
    n_heads = data.draw(st.sampled_from([2, 4]))
    d_head = data.draw(st.sampled_from([4, 8]))
    head = data.draw(st.sampled_from(["lm", "classifier", "token_classifier", "none"])) \
        if topology == "encoder" else "lm"
    config = attnlab.ModelConfig(
        topology=topology, vocab_size=50, n_heads=n_heads, d_head=d_head,
        n_kv_heads=data.draw(st.sampled_from([h for h in (1, 2, 4) if n_heads % h == 0])),
        d_model=data.draw(st.sampled_from([12, 16])), d_ff=data.draw(st.sampled_from([8, 20])),
        n_layers=data.draw(st.integers(1, 2)), n_decoder_layers=data.draw(st.sampled_from([None, 1, 3])),
        activation=data.draw(st.sampled_from(["relu", "gelu", "swiglu", "geglu"])), bias=data.draw(st.booleans()),
        position=data.draw(st.sampled_from(["learned", "sinusoidal", "rope", "alibi", "t5", "none"])),
        head=head, n_classes=3, pooler=topology == "encoder" and data.draw(st.booleans()),
        lm_head_transform=data.draw(st.booleans()), tie_embeddings=data.draw(st.booleans()),
        type_vocab_size=data.draw(st.sampled_from([0, 2])), max_len=32)
    b, n, m = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9))
    torch.manual_seed(0)
    model = build_model(config).eval()
    ids = torch.randint(0, 50, (b, n))
    src = torch.randint(0, 50, (b, m))
    with torch.no_grad():
        if topology == "encoder-decoder":
            assert counted(lambda: model(src, ids)) == forward_flops(config, b, n, m)
        else:
            assert counted(lambda: model(ids)) == forward_flops(config, b, n)
        if topology != "encoder" and n > 1:
            cache = KVCache.for_model(model, batch=b, capacity=n)
            if topology == "encoder-decoder":
                model.decode(ids[:, :-1], model.encode(src), cache=cache)
                step = counted(lambda: model.decode(ids[:, -1:], None, cache=cache, last_only=True))
            else:
                model(ids[:, :-1], cache=cache)
                step = counted(lambda: model(ids[:, -1:], cache=cache, last_only=True))
            mm = m if topology == "encoder-decoder" else None
            assert step == cost_table(config, b, n, mm, mode="decode_step").matmul_flops


def test_real_size_t5_counted_on_the_meta_device():
    """Full-size shapes cost nothing on the meta device: FlopCounterMode only reads the shapes."""
    checks = flop_counter_check(attnlab.presets["t5-small"], 2, 300, 120)
    assert [c.what for c in checks] == ["forward", "training step (forward + backward)", "decoding step, KV cache",
                                        "decoding step, no cache"]
    for c in checks:
        assert c.counted > 0 and c.counted == c.predicted and c.ok, c


@pytest.mark.parametrize("name", ["tiny-encoder", "tiny-llama", "tiny-encoder-decoder", "tiny-vit"])
def test_training_step_is_forward_plus_backward_counted(name):
    config = attnlab.presets[name]
    model = build_model(config)
    holder = {}
    fwd = counted(lambda: holder.setdefault("out", run_forward(model, config)))
    out = holder["out"]
    loss = out.logits.float().sum() + (out.pooled.sum() if out.pooled is not None else 0)  # every head trains
    bwd = counted(loss.backward)
    n, m = sizes(config)
    assert training_flops(config, B, n, m) == fwd + bwd
    # the convention: backward = 2x forward (ViT: the patch product needs no gradient for the pixels)
    if config.topology != "vit":
        assert bwd == 2 * fwd


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-decoder", "tiny-encoder-decoder"])
def test_cached_and_uncached_decoding_step_equal_flop_counter(name):
    config = attnlab.presets[name]
    model = build_model(config).eval()
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (B, N), generator=gen)
    src = torch.randint(0, config.vocab_size, (B, M), generator=gen)
    cache = KVCache.for_model(model, batch=B, capacity=N)
    with torch.no_grad():
        if config.topology == "encoder-decoder":
            hidden = model.encode(src)
            model.decode(ids[:, : N - 1], hidden, cache=cache)  # prefill: N-1 tokens, cross K/V projected once
            step = counted(lambda: model.decode(ids[:, N - 1:], None, cache=cache, last_only=True))
            uncached = counted(lambda: model.decode(ids, hidden, last_only=True))
        else:
            model(ids[:, : N - 1], cache=cache)
            step = counted(lambda: model(ids[:, N - 1:], cache=cache, last_only=True))
            uncached = counted(lambda: model(ids, last_only=True))
    m = M if config.topology == "encoder-decoder" else None
    assert cache.length == N
    assert cost_table(config, B, N, m, mode="decode_step", cached=True).matmul_flops == step
    assert cost_table(config, B, N, m, mode="decode_step", cached=False).matmul_flops == uncached


def test_a_cached_step_drops_one_power_of_n():
    """The seeds: with the cache every n^2 of the forward becomes n and every n becomes 1."""
    config = attnlab.presets["gpt2"]
    n = 512
    full = cost_table(config, 1, n, mode="forward")
    step = cost_table(config, 1, n, mode="decode_step", cached=True)
    for op in ("Q K^T", "P V", "softmax", "Q,K,V projections", "output projection", "FFN up", "FFN down"):
        assert step.flops_of(op) * n == full.flops_of(op), op
    assert full.flops_of("Q K^T") == 12 * 2 * n * n * 768  # L * 2 n^2 d for b=1, h*d_k = d
    doubled = cost_table(config, 1, 2 * n, mode="decode_step", cached=True)
    assert doubled.flops_of("Q K^T") == 2 * step.flops_of("Q K^T")  # linear in n with the cache
    assert cost_table(config, 1, 2 * n).flops_of("Q K^T") == 4 * full.flops_of("Q K^T")  # quadratic without


def test_bytes_and_intensity_of_one_product_in_closed_form():
    # Q,K,V projection of gpt2, fp32, b=1, n=1024: (n x d)(d x 3d) + bias, written n x 3d, 12 layers
    n, d, e = 1024, 768, 4
    row = next(r for r in cost_table(attnlab.presets["gpt2"], 1, n).rows if "Q,K,V" in r.name)
    assert row.flops == 12 * 2 * n * d * 3 * d
    assert row.bytes_read == 12 * e * (n * d + d * 3 * d + 3 * d)
    assert row.bytes_written == 12 * e * n * 3 * d
    step = next(r for r in cost_table(attnlab.presets["gpt2"], 1, n, mode="decode_step").rows if "Q,K,V" in r.name)
    # one token re-reads all the weights for 2 FLOPs each: under 1 FLOP per byte in fp32, memory-bound
    assert step.intensity < 0.6 < 100 < row.intensity
    bf16 = cost_table(attnlab.presets["gpt2"], 1, n, dtype="bfloat16")
    assert bf16.bytes_read * 2 == cost_table(attnlab.presets["gpt2"], 1, n).bytes_read


@pytest.mark.parametrize("name, dtype", [("tiny-llama", torch.bfloat16), ("tiny-decoder", torch.float32),
                                         ("tiny-encoder-decoder", torch.float16)])
def test_kv_cache_bytes_equal_a_filled_cache(name, dtype):
    config = attnlab.presets[name]
    model = build_model(config).eval()
    cache = KVCache.for_model(model, batch=B, capacity=N + 5, dtype=dtype)
    model = model.to(dtype)
    ids = torch.randint(0, config.vocab_size, (B, N))
    with torch.no_grad():
        if config.topology == "encoder-decoder":
            model.decode(ids, model.encode(ids[:, :M]), cache=cache)
        else:
            model(ids, cache=cache)
    m = M if config.topology == "encoder-decoder" else None
    predicted = kv_cache_bytes(config, B, N, m, dtype=str(dtype))
    assert predicted["self"] == cache.nbytes  # 2 * n * g * d_k * L * bytes * b
    cross = sum(c.k.nbytes + c.v.nbytes for c in cache.cross) if cache.cross else 0
    assert predicted["cross"] == cross


@pytest.mark.parametrize("window, every", [(5, None), (5, 3), (20, 2)])
def test_kv_cache_bytes_of_a_windowed_model_equal_generations_cache(window, every):
    """With a sliding window (on every layer, or all but every 3rd; one longer than the text) the prediction is what
    a bounded cache, generation's, holds after the prompt and the steps: min(n, window) positions per windowed
    layer, n per global one."""
    config = attnlab.presets["tiny-llama"].replace(n_layers=3, sliding_window=window, global_every=every)
    model = build_model(config).eval()
    cache = KVCache.for_model(model, batch=B, capacity=N + 3, bounded=True)
    ids = torch.randint(0, config.vocab_size, (B, N + 3))
    with torch.no_grad():
        model(ids[:, :N], cache=cache)
        for i in range(N, N + 3):  # three decoding steps: a full window's cache slides
            model(ids[:, i:i + 1], cache=cache)
    assert kv_cache_bytes(config, B, N + 3)["self"] == cache.nbytes
    if every is None and window < N:
        assert cache.nbytes < kv_cache_bytes(config.replace(sliding_window=None), B, N + 3)["self"]


@pytest.mark.parametrize("name, n", [("gpt2", 1024), ("tiny-llama", 100), ("gpt-char", 64)])
def test_training_flops_per_token_is_six_n_plus_attention(name, n):
    config = attnlab.presets[name]
    assert training_flops_per_token(config, n) == closed_form_training_flops_per_token(config, n)
    layers, width = config.n_layers, config.n_heads * config.head_dim
    assert training_flops_per_token(config, n) == 6 * matmul_parameters(config) + 12 * layers * n * width
    if name == "gpt2":  # N = block matrices + the (tied) LM head matrix: 85M + 38.6M
        assert matmul_parameters(config) == 12 * 12 * 768**2 + 50257 * 768


VARIANTS = [
    dict(n_kv_heads=1, activation="swiglu", tie_embeddings=False),
    dict(bias=False, norm="rmsnorm", d_head=24, lm_head_bias=True),
    dict(position="t5", type_vocab_size=3, d_ff=100),
    dict(position="learned", position_offset=2, embedding_norm=True, norm_placement="post"),
]


@pytest.mark.parametrize("name", list(attnlab.presets))
def test_parameter_formula_plus_itemised_gap_is_the_exact_count(name):
    config = attnlab.presets[name]
    model = build_model(config, device="meta")
    gap = dict(formula_gap(config))
    assert closed_form(config) + sum(gap.values()) == model.num_parameters()
    norms = sum(p.numel() for mod in model.modules() if isinstance(mod, (torch.nn.LayerNorm, torch.nn.RMSNorm))
                for p in mod.parameters())
    assert gap.get("norms", 0) == norms
    biases = sum(p.numel() for n, p in model.named_parameters()
                 if n.endswith("bias") and (".attn." in n or ".cross_attn." in n or ".ffn." in n))
    assert gap.get("biases", 0) == biases


@pytest.mark.parametrize("topology", ["decoder", "encoder-decoder", "encoder"])
@pytest.mark.parametrize("changes", VARIANTS)
def test_parameter_gap_on_variants(topology, changes):
    base = dict(topology=topology, vocab_size=97, d_model=48, n_heads=4, d_ff=64, n_layers=2, max_len=40)
    if topology == "encoder-decoder":
        base["n_decoder_layers"] = 3
    config = attnlab.ModelConfig(**{**base, **changes})
    model = build_model(config, device="meta")
    assert closed_form(config) + sum(c for _, c in formula_gap(config)) == model.num_parameters()


def test_params_command_itemises_the_gap(capsys):
    assert main(["params", "tiny-llama"]) == 0
    out = capsys.readouterr().out
    assert "attention shapes" in out and "LM head: untied" in out


# ----------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("kwargs, words", [
    (dict(batch=0, seq=8), ["batch=0", "positive"]),
    (dict(batch=1, seq=-3), ["seq=-3", "positive"]),
    (dict(batch=1, seq=8, dtype="float8"), ["float8", "float32, bfloat16, float16"]),
    (dict(batch=1, seq=8, mode="backward"), ["backward", "forward, train, decode_step"]),
    (dict(batch=1, seq=8, src_seq=4), ["src_seq", "encoder-decoder"]),
    (dict(batch=1, seq=129), ["max_len=128", "learned", "rope"]),
])
def test_bad_input_names_what_is_wrong(kwargs, words):
    with pytest.raises(InputError) as info:
        cost_table(attnlab.presets["tiny-decoder"], **kwargs)
    for word in words:
        assert word in str(info.value)


def test_limits_follow_the_position_scheme():
    assert cost_table(attnlab.presets["tiny-llama"], 1, 100_000).seq == 100_000  # rope: no table, no limit
    with pytest.raises(InputError, match="src_seq=200 exceeds"):
        cost_table(attnlab.presets["tiny-encoder-decoder"], 1, 8, 200)
    with pytest.raises(InputError, match="decoder or encoder-decoder"):
        cost_table(attnlab.presets["tiny-encoder"], 1, 8, mode="decode_step")
    with pytest.raises(InputError, match="fixed by image_size/patch_size"):
        cost_table(attnlab.presets["tiny-vit"], 1, 20)


def test_cost_command_check_counts_with_torch(capsys):
    assert main(["cost", "tiny-encoder-decoder", "--seq", "10", "--src-seq", "7", "--check"]) == 0
    out = capsys.readouterr().out
    assert "FlopCounterMode (meta device)" in out and "decoding step, KV cache" in out and "> 2%" not in out


def test_cost_command_prints_every_table(capsys):
    assert main(["cost", "tiny-llama", "--batch", "2", "--seq", "32", "--dtype", "bfloat16"]) == 0
    out = capsys.readouterr().out
    for words in ("one full forward", "one training step", "with the KV cache", "without a cache", "Q K^T",
                  "softmax", "FFN up W_1 (gate + up)", "LM head", "KV cache (bfloat16)", "6N + 12·L·n·(h·d_k)"):
        assert words in out, words
    kv = kv_cache_bytes(attnlab.presets["tiny-llama"], 2, 32, dtype="bfloat16")["self"]
    assert f"{kv:,} B" in out


@pytest.mark.parametrize("argv, words", [
    (["cost", "gpt2", "--seq", "2000"], "exceeds max_len=1024"),
    (["cost", "gpt2", "--seq", "0"], "seq=0"),
    (["cost", "gpt2", "--seq", "8", "--dtype", "int3"], "unknown dtype"),
    (["cost", "gpt2", "--seq", "abc"], "comma-separated"),
    (["cost", "tiny-t5", "--seq", "8", "--src-seq", "-1"], "src_seq=-1"),
    (["cost", "tiny-vit", "--mode", "decode_step"], "decoder or encoder-decoder"),
])
def test_cost_command_errors_exit_2(capsys, argv, words):
    assert main(argv) == 2
    assert words in capsys.readouterr().err


# -------------------------------------------------------------------------------------- peak and measure
def test_peak_is_measured_once_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path))
    first = peak.measured_peak_flops("cpu", torch.float32, size=128)
    assert first > 0
    stored = json.loads((tmp_path / "peak.json").read_text())
    assert list(stored.values()) == [first] and "float32" in next(iter(stored)) and torch.__version__ in next(
        iter(stored))

    def no_timing(*args, **kwargs):
        raise AssertionError("a cached peak must not be measured again")

    monkeypatch.setattr(peak, "time_matmul", no_timing)
    assert peak.measured_peak_flops("cpu", "float32") == first
    assert peak.mfu(first / 4, "cpu", torch.float32) == pytest.approx(0.25)
    with pytest.raises(InputError):
        peak.mfu(-1.0)


def test_corrupt_peak_cache_is_measured_again(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path))
    (tmp_path / "peak.json").write_text("{not json")
    monkeypatch.setattr(peak, "time_matmul", lambda size, device, dtype: 1.5e9)
    assert peak.measured_peak_flops("cpu", torch.float32) == 1.5e9
    assert json.loads((tmp_path / "peak.json").read_text())


def test_fit_exponent_recovers_known_powers():
    ns = [64, 128, 256, 512]
    assert measure.fit_exponent(ns, [3.0 * n**2 for n in ns]) == pytest.approx(2.0, abs=1e-12)
    assert measure.fit_exponent(ns, [n**1 + 0.0 for n in ns]) == pytest.approx(1.0, abs=1e-12)
    assert measure.fit_exponent(ns, [7.0 for _ in ns]) == pytest.approx(0.0, abs=1e-12)


def test_sweep_times_every_series_and_saves_plots(tmp_path):
    config = attnlab.presets["tiny-llama"]
    points = measure.sweep(config, [8, 16], batch=1, budget_s=0.0, clock="cpu")
    assert {p.series for p in points} == set(measure.SERIES)
    for p in points:
        assert p.seconds > 0 and p.runs >= 2
        if p.series == "forward":
            assert p.flops == forward_flops(config, 1, p.n)
    # predicted exponents are closed form: the attention core is exactly n^2, its cached step exactly n
    fits = {f.series: f for f in measure.fits(points)}
    assert fits["attention"].predicted == fits["attention_dense"].predicted == pytest.approx(2.0)
    assert fits["attention_step"].predicted == pytest.approx(1.0)
    assert fits["decode_uncached"].predicted > fits["decode_cached"].predicted
    paths = measure.plot(points, tmp_path, title="tiny-llama")
    assert [p.name for p in paths] == ["cost_forward.png", "cost_decode_cached.png", "cost_decode_uncached.png"]
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "growth exponents" in measure.render(points, peak=1e10)


def test_measure_command_quick(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path))
    threads = torch.get_num_threads()
    assert main(["cost", "tiny-decoder", "--measure", "--seq", "8,16", "--budget", "0.001",
                 "--out", str(tmp_path / "plots")]) == 0
    assert torch.get_num_threads() == threads  # the sweep's --threads 1 is undone
    out = capsys.readouterr().out
    assert "measured matmul peak" in out and "decode_cached" in out and "MFU" in out
    assert (tmp_path / "plots" / "cost_forward.png").is_file()
    assert main(["cost", "tiny-decoder", "--measure", "--seq", "8,500"]) == 2  # beyond max_len=128
    assert main(["cost", "tiny-vit", "--measure"]) == 2
    assert main(["cost", "tiny-decoder", "--measure", "--seq", "8,16", "--clock", "sundial"]) == 2
    assert main(["cost", "tiny-decoder", "--measure", "--seq", "8,16", "--threads", "2", "--clock", "cpu"]) == 2
    assert "allowed cpu, wall" in capsys.readouterr().err


def test_measured_flops_are_finite_and_match_the_table():
    config = attnlab.presets["tiny-encoder-decoder"]
    points = measure.sweep(config, [8, 16], src_seq=M, budget_s=0.0, series=["decode_cached"])
    assert [p.flops for p in points] == [cost_table(config, 1, n, M, mode="decode_step").matmul_flops
                                         for n in (8, 16)]
    assert all(math.isfinite(p.flops_per_second) for p in points)
    encoder = attnlab.presets["tiny-encoder"]
    points = measure.sweep(encoder, [8, 16], budget_s=0.0)  # encoders have no decoding series
    assert {p.series for p in points} == {"forward", "attention", "attention_dense"}
    attn = [p.flops for p in points if p.series == "attention"]
    assert attn == [2 * 2 * 2 * 4 * n * n * 16 for n in (8, 16)]  # L * (Q K^T + P V) * h * n^2 * d_k, b = 1
    assert measure.fits(points)[1].predicted == pytest.approx(2.0)
