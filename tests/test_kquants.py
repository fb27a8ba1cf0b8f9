"""GGUF's Q4_K, Q6_K, Q5_0, Q5_1 and Q5_K kept quantized (layers/kquants.py and the kernels q4_k_kernel.py,
q6_k_kernel.py, q5_0_kernel.py, q5_1_kernel.py, q5_k_kernel.py).

References, each independent of the code under test:
- the weights: the `gguf` package's own `gguf.quants.dequantize` of the same bytes. The loaders' numbers are exact
  in float32 (a float16 times a 6- or 8-bit integer, times a 4- to 6-bit code, and one rounding for Q4_K's min), and
  so are gguf's (it computes in float32 the same products), so the test asks for equality, bit for bit.
- the products: float64 x . w of those dequantized weights, within the kernels' rounding of x (two int8 pieces: half
  a step of max|x| / 127 / 254 per input, times sum |w|) plus float32 accumulation (1e-5 relative); the same bound
  tests/test_q8_int8_avx2.py holds Q8_0 to. Multi-row products must give each row's one-row bits exactly.
The random blocks are random bytes (every code and 6-bit scale pattern, both nibble halves, signed Q6_K scales)
with float16 scales set to finite values: the `gguf` package cannot quantize to K-quants, so no float weight is
needed.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attnlab
from attnlab.layers import kquants, quantized
from attnlab.layers.quantized import QuantizedEmbedding, QuantizedLinear, QuantizedParts, dequantize

gguf = pytest.importorskip("gguf")

TYPES = {"q4_k": "Q4_K", "q6_k": "Q6_K", "q5_0": "Q5_0", "q5_1": "Q5_1", "q5_k": "Q5_K"}
PER_BLOCK = {"q4_k": 256, "q6_k": 256, "q5_0": 32, "q5_1": 32, "q5_k": 256}


def random_blocks(kind: str, n: int, k: int, seed: int = 0, scale: float = 1e-3) -> np.ndarray:
    """(n, bytes per row) uint8 of random `kind` blocks: random codes and sub-scales, float16 d (and dmin) near
    `scale`, of both signs for Q5_0's d; row 0 has every code at its largest, row 1 at 0."""
    rng = np.random.default_rng(seed)
    nb = k // PER_BLOCK[kind]
    raw = rng.integers(0, 256, size=(n, nb, kquants.BYTES[kind]), dtype=np.uint8)

    def half(sign=False):
        v = rng.uniform(0.25, 1, size=(n, nb)) * scale * (rng.choice([-1, 1], size=(n, nb)) if sign else 1)
        return v.astype(np.float16).view(np.uint8).reshape(n, nb, 2)

    if kind in ("q4_k", "q5_k"):
        raw[..., 0:2], raw[..., 2:4] = half(), half()
        raw[0, :, 16:], raw[1, :, 16:] = 0xFF, 0
    elif kind == "q5_1":
        raw[..., 0:2], raw[..., 2:4] = half(sign=True), half(sign=True)
        raw[0, :, 4:], raw[1, :, 4:] = 0xFF, 0
    elif kind == "q6_k":
        raw[..., 208:210] = half()
        raw[0, :, :192], raw[1, :, :192] = 0xFF, 0
    else:
        raw[..., 0:2] = half(sign=True)
        raw[0, :, 2:], raw[1, :, 2:] = 0xFF, 0
    return raw.reshape(n, -1)


def reference(kind: str, raw: np.ndarray, k: int) -> torch.Tensor:
    values = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType[TYPES[kind]])
    return torch.from_numpy(np.asarray(values, dtype=np.float32).reshape(raw.shape[0], k))


def layer(kind: str, n: int, k: int, seed: int = 0) -> tuple[QuantizedLinear, torch.Tensor]:
    raw = random_blocks(kind, n, k, seed)
    module = QuantizedLinear(k, n, kquants.MODULE_FORMAT[kind])
    module.load_buffers(quantized.from_gguf_rows(torch.from_numpy(raw), kind))
    return module, reference(kind, raw, k)


def _bound(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x rounded to two 8-bit pieces (half a step of max|x| / 127 / 254 per input), plus float32 accumulation."""
    big = x.abs().amax(dim=-1, keepdim=True).double()
    return big / 127 / 254 / 2 * w.abs().sum(1) + 1e-5 * (1 + big * w.abs().sum(1))


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_decoded_weights_equal_ggufs_dequantize(kind):
    """Every weight the kept buffers stand for equals the gguf package's dequantization of the file's bytes."""
    for n, k in ((3, 256), (70, 768)):
        raw = random_blocks(kind, n, k, seed=n)
        buffers = quantized.from_gguf_rows(torch.from_numpy(raw), kind)
        w = dequantize(kquants.MODULE_FORMAT[kind], buffers)
        assert torch.equal(w, reference(kind, raw, k))
        if kind == "q5_0":  # and as Q8_0 rows (where its kernel cannot run, or beside Q8_0 in a fused matrix)
            widened = quantized.from_gguf_rows(kquants.q5_0_as_q8_0_rows(torch.from_numpy(raw)), "q8_0")
            assert torch.equal(dequantize("q8_0", widened), reference(kind, raw, k))
    assert kquants.MODULE_FORMAT[kind] in quantized.FORMATS


def test_the_scales_are_float32_where_float16_would_round():
    """Q4_K's d * sc and Q6_K's d * sc need more than float16's 11 bits: the kept scales are float32, and a float16
    copy of them would change weights (the reason they are not float16)."""
    for kind in ("q4_k", "q6_k", "q5_k"):
        buffers = quantized.from_gguf_rows(torch.from_numpy(random_blocks(kind, 8, 512)), kind)
        scale = buffers["scale"]
        assert scale.dtype == torch.float32
        assert not torch.equal(scale.half().float(), scale)


@pytest.mark.parametrize("kind", sorted(TYPES))
@pytest.mark.parametrize("n,k", [(70, 256), (130, 768), (1000, 512)])
def test_products_against_float64(kind, n, k):
    """One row (the decoding step's kernel), 3 rows (FAST_ROWS: one-row calls) and 40 rows (rows_product), with
    an outlier channel and a bias, against float64 x . w of gguf's weights; rows_product gives each row the bits of
    the one-row kernel; the chunked path (use_kernel off) matches F.linear on the dequantized weight."""
    module, w = layer(kind, n, k, seed=k)
    kernel = quantized.KERNELS[module.format]
    if not kernel.available():
        pytest.skip(f"the {module.format} kernel is unavailable here: {kernel.unavailable_reason()}")
    gen = torch.Generator().manual_seed(n)
    bias = torch.randn(n, generator=gen)
    x = torch.randn(40, k, generator=gen) * torch.logspace(-2, 1, 40)[:, None]
    x[:, 5] *= 30  # an outlier channel
    expected = x.double() @ w.double().t() + bias.double()
    with torch.no_grad():
        one = torch.cat([module(row[None], bias) for row in x])
        few = module(x[:3], bias)
        many = module(x, bias)
        module.use_kernel = False
        chunked = module(x[:2], bias)
    assert bool(((one.double() - expected).abs() <= _bound(x, w)).all())
    assert torch.equal(few, one[:3])
    if kernel.rows_available():
        assert torch.equal(many, one)  # each row the one-row kernel's bits
    torch.testing.assert_close(chunked, F.linear(x[:2], w, bias), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["q4_k", "q6_k"])
def test_a_kernel_refusing_a_row_gives_floats_answer(kind):
    """A row holding inf goes to the dequantized weight: float32's inf / NaN, not a finite number."""
    module, w = layer(kind, 64, 256)
    x = torch.randn(1, 256)
    x[0, 3] = float("inf")
    with torch.no_grad():
        y = module(x)
    torch.testing.assert_close(y, F.linear(x, w), equal_nan=True)


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_tied_embedding_rows_are_the_weights_rows(kind):
    module, w = layer(kind, 50, 512)
    embedding = QuantizedEmbedding(module)
    ids = torch.tensor([[0, 1, 49], [7, 7, 3]])
    assert torch.equal(embedding(ids), w[ids])


def test_pack_refuses_float16_scales():
    from attnlab.layers import q4_k_kernel, q6_k_kernel

    q = torch.zeros(64, 128, dtype=torch.uint8)
    half = torch.zeros(64, 8, dtype=torch.float16)
    with pytest.raises(ValueError, match="float32"):
        q4_k_kernel.pack(q, half, half)
    with pytest.raises(ValueError, match="float32"):
        q6_k_kernel.pack(torch.zeros(64, 256, dtype=torch.int8), torch.zeros(64, 16, dtype=torch.float16))


def test_scale_and_min_packs_name_the_dtype_their_kernel_reads():
    from attnlab.layers import q4_k_kernel, q5_1_kernel, q5_k_kernel

    single, half = torch.zeros(64, 8), torch.zeros(64, 8, dtype=torch.float16)
    with pytest.raises(ValueError, match="the Q5_1 kernel takes float16 scales and mins, got float32 and float16"):
        q5_1_kernel.pack(torch.zeros(64, 160, dtype=torch.uint8), single, half)
    with pytest.raises(ValueError, match="the Q5_K kernel takes float32 scales and mins, got float16 and float16"):
        q5_k_kernel.pack_layer({"qweight": torch.zeros(64, 160, dtype=torch.uint8), "scale": half, "min": half}, None)
    with pytest.raises(ValueError, match="the Q4_K kernel takes float32 scales and mins, got float32 and float16"):
        q4_k_kernel.pack(torch.zeros(64, 128, dtype=torch.uint8), single, half)
    tiles, bias = q4_k_kernel.pack_layer({"qweight": torch.zeros(64, 128, dtype=torch.uint8), "scale": single,
                                          "min": single}, torch.ones(64, dtype=torch.float16))
    assert tiles.shape == (1, 8, q4_k_kernel.COMPACT_BYTES) and bias.dtype == torch.float32  # zeros: D 0, S 0


def _q4_k_variants(monkeypatch) -> list[str]:
    """The kernel variants this CPU runs for Q4_K: its first choice, and AVX2 as well where the first is VNNI
    (both layouts' builds swapped in for the test, as tests/test_q8_int8_avx2.py does)."""
    from attnlab.layers import int8_kernel, q4_k_kernel

    if not q4_k_kernel.available():
        pytest.skip(f"the q4_k kernel is unavailable here: {q4_k_kernel.unavailable_reason()}")
    variants = ["first"]
    flags, why = int8_kernel._cpu_flags()
    if not why and all(f in flags for f in int8_kernel.AVX2) and int8_kernel.CHOSEN.get("q4_k") != "avx2":
        variants.append("avx2")
    return variants


def _use_avx2(monkeypatch) -> None:
    from attnlab.layers import int8_kernel, kernel_variants, q4_k_kernel

    monkeypatch.setenv("ATTNLAB_INT8_KERNEL", "avx2")
    for name, sources, function in (("q4_k", q4_k_kernel.SOURCES, "gemv"), ("q4_kc", q4_k_kernel.COMPACT_SOURCES,
                                                                          "gemv"),
                                    ("q4_k_rows", q4_k_kernel.ROWS_SOURCES, "rows"),
                                    ("q4_kc_rows", q4_k_kernel.COMPACT_ROWS_SOURCES, "rows")):
        monkeypatch.setitem(int8_kernel.CHOSEN, name, int8_kernel.CHOSEN.get(name))
        base = name.removesuffix("_rows")
        built = kernel_variants.build(name, sources, f"attnlab_{base}_{function}", "the test fails")
        assert built[1] is None, built[1]
        attr = {"q4_k": "_compiled", "q4_kc": "_compiled_c", "q4_k_rows": "_compiled_rows",
                "q4_kc_rows": "_compiled_rows_c"}[name]
        monkeypatch.setattr(q4_k_kernel, attr, lambda built=built: built)


def test_q4_k_compact_tiles_read_the_files_bytes_and_give_the_float32_tiles_bits(monkeypatch):
    """A Q4_K file's buffers pack into the compact layout (S, M bytes and the super-block's float16 D, Dmin: 1184
    bytes per 2048 weights, 0.578 a weight, against 0.75 for float32 scales and the file's 0.5625); its products, one
    row and many, equal the float32 layout's bit for bit (S D is exact in float32), on each variant this CPU runs."""
    from attnlab.layers import int4_kernel, q4_k_kernel

    variants = _q4_k_variants(monkeypatch)
    module, w = layer("q4_k", 200, 512, seed=11)
    b = module.buffers_dict()
    compact, = q4_k_kernel.pack(b["qweight"], b["scale"], b["min"])
    wide, = int4_kernel.pack(b["qweight"], b["scale"], b["min"])
    assert compact.shape == (4, 16, q4_k_kernel.COMPACT_BYTES) and wide.shape[-1] == q4_k_kernel.TILE_BYTES
    assert compact.numel() / (256 * 512) == pytest.approx(0.578125)
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(20, 512, generator=gen)
    x[:, 3] *= 40
    for variant in variants:
        if variant == "avx2":
            _use_avx2(monkeypatch)
        one = torch.cat([q4_k_kernel.gemv(row[None].contiguous(), compact, None, 200) for row in x])
        assert torch.equal(one, torch.cat([q4_k_kernel.gemv(row[None].contiguous(), wide, None, 200) for row in x]))
        assert bool(((one.double() - x.double() @ w.double().t()).abs() <= _bound(x, w)).all())
        if q4_k_kernel.rows_available():
            assert torch.equal(q4_k_kernel.rows_product(x, compact, None, 200), one)
            assert torch.equal(q4_k_kernel.rows_product(x, wide, None, 200), one)


def test_q4_k_factor_finds_the_files_scales_and_refuses_others():
    """factor() recovers a D (float16) and whole S below 256 whose products are the buffers' exactly, for a file's
    d sc (whatever the largest sc); scales that are no float16 times a whole number (not from a file) give None,
    and pack() then keeps the float32 layout, whose products are the same numbers."""
    from attnlab.layers import q4_k_kernel

    gen = torch.Generator().manual_seed(2)
    d = (torch.rand(50, 3, generator=gen) * 1e-2 + 1e-4).half().float()
    sc = torch.randint(0, 64, (50, 3, 8), generator=gen).float()
    sc[:10] = sc[:10].clamp(max=17)  # a largest sc below 63: found at a later c
    v = d[..., None] * sc
    got = q4_k_kernel.factor(v)
    assert got is not None
    big_d, small = got
    assert big_d.dtype == torch.float16 and small.dtype == torch.uint8
    assert torch.equal(big_d.float()[..., None] * small.float(), v)
    assert torch.equal(q4_k_kernel.factor(-v)[0].float()[..., None] * q4_k_kernel.factor(-v)[1].float(), -v)
    odd = v.clone()
    odd[7, 1, 2] += 1e-7 * v[7, 1].amax()  # no longer d times a whole number
    assert q4_k_kernel.factor(odd) is None
    mixed = v.clone()
    mixed[0, 0, 0] = -1.0
    assert q4_k_kernel.factor(mixed) is None
    q = torch.randint(0, 256, (50, 384), dtype=torch.uint8, generator=gen)
    tiles, = q4_k_kernel.pack(q, odd.reshape(50, 24), -v.reshape(50, 24))
    assert tiles.shape[-1] == q4_k_kernel.TILE_BYTES


def test_decoders_refuse_partial_blocks():
    with pytest.raises(ValueError, match="whole blocks of 144"):
        kquants.q4_k(torch.zeros(2, 150, dtype=torch.uint8))


# ----------------------------------------------------------------------------------------- a K-quant file
KINDS = {"attn_q": "Q4_K", "attn_k": "Q4_K", "attn_v": "Q4_K", "ffn_gate": "Q4_K", "ffn_up": "Q4_K",
         "ffn_down": "Q6_K", "attn_output": "Q5_0", "token_embd": "Q6_K"}


def _kquant_file(folder, poison=None):
    """A tiny LLaMA (d_model 256: K-quants need input widths of 256) as a GGUF of Q4_K, Q6_K and Q5_0 blocks of
    random bytes, a Q4_K_M-like mix: blk.0's Q and K are Q5_0 and its V Q8_0 (a fused Q/K/V kept as Q8_0), blk.1's
    attn_v is Q6_K beside Q4_K (its fused Q/K/V mixes formats: kept in two parts), the tied embedding Q6_K,
    attn_output Q5_0 (blk.1's Q5_1), blk.1's gate and up Q5_K."""
    from attnlab.interop import gguf as G
    from tests.gguf_files import rewrite_gguf

    config = attnlab.presets["tiny-llama"].replace(d_model=256, d_ff=512, n_layers=2, tie_embeddings=True)
    torch.manual_seed(0)
    plain = G.save_gguf(attnlab.build_model(config).eval(), folder / "plain.gguf")
    seeds = iter(range(1000))

    def blocks(name, values):
        kind = next((t for part, t in KINDS.items() if part in name), None)
        if name == "blk.1.attn_v.weight":
            kind = "Q6_K"
        if name == "blk.1.attn_output.weight":
            kind = "Q5_1"
        if name in ("blk.1.ffn_gate.weight", "blk.1.ffn_up.weight"):
            kind = "Q5_K"
        if name in ("blk.0.attn_q.weight", "blk.0.attn_k.weight"):
            kind = "Q5_0"
        if kind is None or values.ndim != 2:
            return values
        if name == "blk.0.attn_v.weight":
            return gguf.quants.quantize(values, gguf.GGMLQuantizationType.Q8_0), gguf.GGMLQuantizationType.Q8_0
        fmt = kind.lower()
        raw = random_blocks(fmt, values.shape[0], values.shape[1], seed=next(seeds), scale=2e-4)
        if poison is not None:
            poison(name, raw)
        return raw, gguf.GGMLQuantizationType[kind]
    return rewrite_gguf(plain, folder / "k.gguf", blocks)


def test_a_kquant_file_loads_kept_and_computes_the_float_model(tmp_path):
    """load_gguf keeps Q4_K, Q6_K (the tied embedding / head too) and Q5_0 (as Q8_0) matrices; a fused Q/K/V of
    Q4_K and Q6_K parts is a QuantizedParts of the two; the kept model's weights are those of the float load
    (keep_quantized=False, gguf's dequantize) bit for bit, and its logits agree within the kernels' rounding of
    activations (each product ~2^-16 of its row's largest |x|: 1e-3 of the logits' spread allows that across two
    blocks and the head)."""
    from attnlab.interop import gguf as G

    path = _kquant_file(tmp_path)
    kept, _ = G.load_gguf(path)
    full, _ = G.load_gguf(path, keep_quantized=False)
    formats = {n: m.format for n, m in kept.named_modules() if isinstance(m, QuantizedLinear)}
    assert "q4_k" in formats.values()
    if all(kernel.runs_here() for kernel in G.VNNI_ONLY.values()):
        assert formats["lm_head.proj"] == "q6_k"
        assert isinstance(kept.tokens, QuantizedEmbedding) and kept.tokens.format == "q6_k"
        assert formats["blocks.0.attn.out"] == "q5_0"
        assert formats["blocks.1.attn.out"] == "q5_1" and formats["blocks.1.ffn.up"] == "q5_k"
        fused = {n: f for n, f in formats.items() if "qkv" in n}
        assert fused == {"blocks.0.attn.qkv": "q8_0", "blocks.1.attn.qkv.parts.0": "q4_k",
                         "blocks.1.attn.qkv.parts.1": "q6_k"}, \
            f"blk.0: Q5_0 + Q8_0 kept as Q8_0; blk.1: Q4_K + Q6_K kept in parts (test_gguf_mixed_parts.py): {fused}"
    else:  # without AVX-512 VNNI the formats of VNNI_ONLY expand to float32 (gguf.py's _kept says why)
        assert not set(formats.values()) & set(G.VNNI_ONLY), formats
    floats = dict(full.named_parameters())
    for name, module in kept.named_modules():
        if isinstance(module, (QuantizedLinear, QuantizedParts)) and ".parts." not in name:
            tied = "tokens.weight" if name == "lm_head.proj" else f"{name}.weight"
            assert torch.equal(module.weight, floats.get(f"{name}.weight", floats[tied])), name
    ids = torch.tensor([[1, 5, 9, 2, 7, 3, 3, 8]])
    with torch.no_grad():
        a, b = kept(ids).logits, full(ids).logits
        step = kept(ids[:, :1]).logits
    spread = float(b.std())
    torch.testing.assert_close(a, b, rtol=0, atol=1e-3 * spread)
    torch.testing.assert_close(step, b[:, :1], rtol=0, atol=1e-3 * spread)


def test_save_gguf_writes_kept_kquants_in_their_types(tmp_path):
    """save_gguf of a model with kept Q4_K / Q6_K / Q5_0 / Q5_1 matrices writes each file tensor in its source type
    (Q4_K beside Q6_K in a QuantizedParts too; tests/test_gguf_round_trip.py checks the bytes): the file read back
    holds the same weights."""
    from attnlab.interop import gguf as G

    source = _kquant_file(tmp_path)
    kept, tokenizer = G.load_gguf(source)
    path = G.save_gguf(kept, tmp_path / "again.gguf", tokenizer=tokenizer)
    types = {t.name: t.tensor_type.name for t in gguf.GGUFReader(str(path)).tensors}
    if all(kernel.runs_here() for kernel in G.VNNI_ONLY.values()):
        assert types == {t.name: t.tensor_type.name for t in gguf.GGUFReader(str(source)).tensors}
        assert types["blk.1.attn_q.weight"] == "Q4_K" and types["blk.1.attn_v.weight"] == "Q6_K"
    else:  # Q6_K, Q5_1, Q5_K were expanded on load (no AVX2 kernel), so they are written as float
        assert types["blk.0.attn_q.weight"] in ("Q5_0", "Q8_0") and "Q6_K" not in types.values()
    again, _ = G.load_gguf(path)
    for name, module in kept.named_modules():
        if isinstance(module, (QuantizedLinear, QuantizedParts)) and ".parts." not in name:
            other = again.get_submodule(name)
            assert torch.equal(module.weight, other.weight), name


def test_q5_0_is_read_as_q8_0_where_its_kernel_cannot_run(tmp_path, monkeypatch):
    """Without AVX-512 VNNI (q5_0_kernel.runs_here() False) every Q5_0 matrix is kept as Q8_0 rows of the same
    numbers, which Q8_0's AVX2 kernel multiplies: the weights are those of the float load still."""
    from attnlab.interop import gguf as G
    from attnlab.layers import q5_0_kernel

    path = _kquant_file(tmp_path)
    monkeypatch.setattr(q5_0_kernel, "runs_here", lambda: False)
    kept, _ = G.load_gguf(path)
    full, _ = G.load_gguf(path, keep_quantized=False)
    out = kept.get_submodule("blocks.0.attn.out")
    assert out.format == "q8_0"
    assert torch.equal(out.weight, full.get_submodule("blocks.0.attn.out").weight)


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_the_compiled_steps_operator_gives_the_eager_kernels_bits(kind):
    """attnlab::quantized_rows (what a compiled decoding step calls; its C++ kernel reads the layer's packed tiles
    through kernel_ops_native's table) gives each new format's eager one-row product bit for bit."""
    from attnlab.layers import kernel_ops, kernel_ops_native

    if not kernel_ops.ready() or not kernel_ops.decodes_natively():
        pytest.skip("the C++ operators of the compiled step are not built here")
    module, _ = layer(kind, 96, 256, seed=3)
    if not module.prepare_traced(0):
        pytest.skip(f"the {module.format} kernel does not run here")
    x = torch.randn(2, 256, generator=torch.Generator().manual_seed(1))
    before = kernel_ops.PRODUCTS[0]
    with kernel_ops.serving([module], kernel_ops_native.table([module])):
        traced = kernel_ops.quantized_rows(x, 0, module.out_features)
    assert kernel_ops.PRODUCTS[0] - before == 1  # the C++ kernel took it
    with torch.no_grad():
        eager = torch.cat([module(row[None]) for row in x])
    assert torch.equal(traced, eager)


def test_a_nan_kquant_scale_is_refused_by_name(tmp_path):
    """A Q4_K super-block whose float16 d is NaN: the kept float32 scales are NaN, and load_gguf refuses the file
    naming the matrix (check_finite), as it refuses a NaN Q8_0 scale."""
    from attnlab.errors import CheckpointError
    from attnlab.interop import gguf as G

    def poison(name, raw):
        if name == "blk.0.ffn_gate.weight":  # Q4_K: d of the first super-block of row 3
            raw[3, 0:2] = np.array([0x7E00], dtype=np.uint16).view(np.uint8)

    with pytest.raises(CheckpointError, match=r"blocks\.0\.ffn\.up\.scale holds [0-9]+ NaN"):
        G.load_gguf(_kquant_file(tmp_path, poison))
