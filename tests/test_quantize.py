"""Quantized weights: each format decodes like an independent reference, products match F.linear on the decoded
weight, quantized models generate like their float32 selves, GGUF files stay quantized in memory.

References: the `gguf` package's own numpy quantizer and dequantizer for Q8_0 / Q4_0 / Q4_1; plain torch / numpy
expressions for attnlab's int8 and int4.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import gguf_files
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from gguf_files import write_quantized_gguf

import attnlab
from attnlab.layers import int4_kernel, int8_kernel, q8_0_kernel
from attnlab.layers.quantized import (
    QuantizedEmbedding,
    QuantizedLinear,
    dequantize,
    fbgemm_levels,
    from_gguf_rows,
    quantize_weight,
)
from attnlab.quantization import QuantizedLMHead

GGUF_TYPES = {"q8_0": "Q8_0", "q4_0": "Q4_0", "q4_1": "Q4_1"}
CHECKPOINTS = Path(attnlab.__file__).parent / "assets" / "checkpoints"


def _gguf_bytes(w: torch.Tensor, fmt: str) -> np.ndarray:
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize

    return quantize(w.numpy(), GGMLQuantizationType[GGUF_TYPES[fmt]])  # (rows, bytes per row) uint8


# -------------------------------------------------------------------------------- decoding = reference
@pytest.mark.parametrize("fmt", sorted(GGUF_TYPES))
def test_gguf_blocks_decode_like_the_gguf_package(fmt):
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize as gguf_dequantize

    torch.manual_seed(0)
    w = torch.randn(6, 96) * torch.logspace(-3, 1, 6)[:, None]  # rows of very different magnitudes
    raw = _gguf_bytes(w, fmt)
    expected = torch.from_numpy(gguf_dequantize(raw, GGMLQuantizationType[GGUF_TYPES[fmt]]).reshape(6, 96).copy())
    got = dequantize(fmt, from_gguf_rows(torch.from_numpy(raw.copy()), fmt))
    assert torch.equal(got, expected)  # the same float32 products: exact


def test_int8_is_per_output_channel_symmetric():
    torch.manual_seed(0)
    w = torch.randn(5, 40) * torch.tensor([1e-3, 1e-1, 1.0, 10.0, 0.0])[:, None]  # an all-zero row too
    b = quantize_weight(w, "int8")
    assert b["qweight"].dtype == torch.int8 and b["scale"].shape == (5,)
    assert torch.equal(dequantize("int8", b), b["qweight"].float() * b["scale"][:, None])
    assert torch.equal(b["scale"], w.abs().amax(1) / 127)
    err = (dequantize("int8", b) - w).abs()
    assert bool((err <= b["scale"][:, None] / 2 * 1.0001 + 1e-12).all())  # rounding: at most half a step


def test_int4_decodes_like_a_plain_expression():
    torch.manual_seed(0)
    w = torch.randn(3, 64)
    b = quantize_weight(w, "int4")
    assert b["qweight"].shape == (3, 32) and b["scale"].shape == (3, 2)  # two codes per byte, groups of 32
    raw = b["qweight"].numpy()
    expected = np.empty((3, 64), dtype=np.float32)
    for r in range(3):
        for g in range(2):
            d, m = float(b["scale"][r, g]), float(b["min"][r, g])
            for j in range(16):  # GGUF's order: byte j = value j (low nibble) and value j + 16 (high nibble)
                byte = int(raw[r, g * 16 + j])
                expected[r, g * 32 + j] = np.float32(d) * np.float32(byte & 15) + np.float32(m)
                expected[r, g * 32 + j + 16] = np.float32(d) * np.float32(byte >> 4) + np.float32(m)
    got = dequantize("int4", b)
    assert torch.allclose(got, torch.from_numpy(expected), rtol=0, atol=1e-6)
    step = b["scale"].float().repeat_interleave(32, dim=1)
    assert bool(((got - w).abs() <= step / 2 + 1e-3).all())  # half a step (+ float16 rounding of scale and min)


# --------------------------------------------------------------------------------- products = F.linear
def _module(fmt: str, out_f=72, in_f=96, bias=True) -> QuantizedLinear:
    torch.manual_seed(1)
    module = QuantizedLinear(in_f, out_f, fmt, bias=bias)
    w = torch.randn(out_f, in_f) * 0.05
    module.load_buffers(quantize_weight(w, fmt) if fmt in ("int8", "int4")
                        else from_gguf_rows(torch.from_numpy(_gguf_bytes(w, fmt)), fmt))
    if bias:
        module.bias.data.normal_()
    return module


@pytest.mark.parametrize("fmt", ["int4", "q8_0", "q4_0", "q4_1"])
@pytest.mark.parametrize("rows", [1, 3, 20])
def test_block_formats_multiply_like_f_linear_on_the_decoded_weight(fmt, rows):
    """The chunked path (few rows without the VNNI kernels) and prefill (more rows) multiply the
    decoded weight: F.linear's numbers up to float32 summation order."""
    module = _module(fmt)
    module.CHUNK = 16 * 96  # 16 rows a chunk: several chunks even at this size
    module.use_kernel = False
    x = torch.randn(rows, 96)
    with torch.no_grad():
        expected = F.linear(x, module.weight, module.bias)
        assert torch.allclose(module(x[None])[0], expected, rtol=1e-5, atol=1e-5)  # float32 summation order


@pytest.mark.parametrize("fmt", ["int4", "q4_0", "q4_1", "q8_0"])
@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("n", [96, 130])
def test_block_kernels_are_within_the_activation_rounding_bound(fmt, rows, n):
    """attnlab's 4-bit and Q8_0 VNNI kernels (few rows) round each row x to two 8-bit pieces (step =
    max|x| / 127 / 254): |y - x W^T| <= step / 2 * sum_k |W[n, k]| (+ float32 rounding), on 1 and 2 threads,
    with an outlier channel, and an output count that is not a multiple of its 64-output tiles."""
    kernel = q8_0_kernel if fmt == "q8_0" else int4_kernel
    if not kernel.available():
        pytest.skip(f"attnlab's {fmt} kernel is unavailable here: {kernel.unavailable_reason()}")
    module = _module(fmt, out_f=n)
    x = torch.randn(rows, 96)
    x[:, 5] = 30.0
    before = torch.get_num_threads()
    with torch.no_grad():
        w = module.weight
        expected = F.linear(x.double(), w.double(), module.bias.double())
        one = None
        for threads in (1, 2):
            torch.set_num_threads(threads)
            try:
                got = module(x)
            finally:
                torch.set_num_threads(before)
            one = got if one is None else one
            assert torch.equal(got, one)  # each 64-output block is computed whole by one thread: same bits
            step = x.abs().amax(dim=1, keepdim=True) / 127 / 254  # (rows, 1)
            bound = step / 2 * w.abs().sum(1) + 1e-5 * (1 + float(x.abs().max()) * w.abs().sum(1))
            assert bool(((got.double() - expected).abs() <= bound).all())
            assert not torch.equal(got, F.linear(x, w, module.bias))  # the kernel ran (it rounds x)
    with pytest.raises(ValueError, match="divisible by 32"):
        int4_kernel.pack(torch.zeros(2, 24, dtype=torch.uint8), torch.zeros(2, 1).half(), torch.zeros(2, 1).half())
    with pytest.raises(ValueError, match="divisible by 32"):
        q8_0_kernel.pack(torch.zeros(2, 48, dtype=torch.int8), torch.zeros(2, 1).half())


def test_q8_0_kernel_takes_the_whole_code_range():
    """Q8_0 codes span -128..127 (the kernel stores q + 128 as an unsigned byte): the extremes, and a row of x at
    its own extremes, still give x_rounded . w within the rounding bound of x (float64 reference)."""
    if not q8_0_kernel.available():
        pytest.skip(f"attnlab's q8_0 kernel is unavailable here: {q8_0_kernel.unavailable_reason()}")
    torch.manual_seed(4)
    n, k = 70, 64
    q = torch.randint(-128, 128, (n, k), dtype=torch.int8)
    q[0], q[1], q[2, ::2] = -128, 127, -128
    d = (torch.rand(n, k // 32) * 0.02).half()
    w = dequantize("q8_0", {"qweight": q, "scale": d}).double()
    x = torch.randn(1, k)
    x[0, 3], x[0, 40] = 50.0, -50.0
    got = q8_0_kernel.gemv(x, *q8_0_kernel.pack_layer({"qweight": q, "scale": d}, None), n).double()
    step = float(x.abs().max()) / 127 / 254
    bound = step / 2 * w.abs().sum(1) + 1e-5 * (1 + float(x.abs().max()) * w.abs().sum(1))
    assert bool(((got - x.double() @ w.t()).abs() <= bound).all())


@pytest.fixture(params=["vnni", "fbgemm"])
def int8_path(request, monkeypatch):
    """The one-row int8 product runs attnlab's VNNI kernel where the CPU has it, fbgemm elsewhere: test both."""
    if request.param == "vnni" and not int8_kernel.available():
        pytest.skip(f"attnlab's int8 kernel is unavailable here: {int8_kernel.unavailable_reason()}")
    if request.param == "fbgemm":
        monkeypatch.setattr(int8_kernel, "available", lambda: False)
    return request.param


@pytest.mark.parametrize("rows", [1, 3, 20, 80])
def test_int8_product_is_within_the_activation_rounding_bound(rows, int8_path):
    """Few rows round x per row: fbgemm to 8 bits (step = range / 255), the VNNI kernel to two 8-bit pieces
    (step = max|x| / 127 / 254). |y - x W^T| <= step / 2 * sum_k |W[n, k]| (+ float32 rounding) bounds the
    error. The kernel takes up to ROW_BY_ROW rows (20 here); more rows (80), or 20 without the kernel, multiply
    the decoded weight exactly."""
    module = _module("int8")
    x = torch.randn(rows, 96)
    with torch.no_grad():
        w = module.weight
        expected = F.linear(x, w, module.bias)
        got = module(x)
    levels = fbgemm_levels()  # 255, or 127 where fbgemm must avoid int16 saturation (no VNNI)
    step = float(x.max() - x.min()) / levels if int8_path == "fbgemm" else float(x.abs().max()) / 127 / 254
    bound = step / 2 * w.abs().sum(1) + 1e-5
    assert bool(((got - expected).abs() <= bound).all())
    assert QuantizedLinear.FAST_ROWS < 20 <= QuantizedLinear.ROW_BY_ROW < 80  # the cases mean what they say
    if rows <= QuantizedLinear.FAST_ROWS or (int8_path == "vnni" and rows <= QuantizedLinear.ROW_BY_ROW):
        assert not torch.equal(got, expected)  # the fast path did run (it rounds x)
    else:
        assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bias", [False, True])
def test_int8_rows_with_outliers_keep_their_small_channels(bias, int8_path):
    """One channel 1000x the others makes an 8-bit step (range / 255) useless for them. fbgemm's path then also
    multiplies the rounding residual; the VNNI kernel always rounds x to two pieces: either way the error is
    that of a ~16-bit activation (step / 255), far below one 8-bit pass's. The bias is folded into the packed
    weight, so the residual's product must not add it twice."""
    module = _module("int8", bias=bias)
    torch.manual_seed(2)
    x = torch.randn(2, 96)
    x[:, 7] = 1000.0
    single = copy.deepcopy(module)
    single.RESIDUAL_RATIO = float("inf")
    with torch.no_grad():
        w = module.weight
        expected = F.linear(x, w, module.bias)
        err = (module(x) - expected).abs()
        with pytest.MonkeyPatch.context() as mp:  # one plain 8-bit pass: fbgemm without its residual
            mp.setattr(int8_kernel, "available", lambda: False)
            single_err = (single(x) - expected).abs()
    levels = fbgemm_levels()  # 255 (VNNI) or 127 (reduce_range)
    step = float(x.max() - x.min()) / levels
    assert bool((err <= 2 * step / levels * w.abs().sum(1) + 1e-4).all())
    assert float(err.max()) * 20 < float(single_err.max())


def test_the_kernel_switch_names_its_values(monkeypatch):
    """ATTNLAB_INT8_KERNEL=fbgemm turns attnlab's kernels off (with that as the reason); a value it does not know
    is named in a warning with the allowed ones, and the default stands."""
    monkeypatch.setenv("ATTNLAB_INT8_KERNEL", "fbgemm")
    assert int8_kernel._cpu_reason() == "ATTNLAB_INT8_KERNEL=fbgemm"
    monkeypatch.setenv("ATTNLAB_INT8_KERNEL", "off")
    with pytest.warns(UserWarning, match=r"ATTNLAB_INT8_KERNEL='off' is not one of auto, avx2, fbgemm"):
        reason = int8_kernel._cpu_reason()
    monkeypatch.delenv("ATTNLAB_INT8_KERNEL")
    assert reason == int8_kernel._cpu_reason()  # as if unset


@pytest.mark.parametrize("n,k", [(64, 96), (65, 33), (200, 7)])
def test_vnni_kernel_against_float64(n, k):
    """attnlab's VNNI kernel on shapes that are not multiples of its blocks (64 outputs, 4 inputs), with and
    without bias, on 1 and 2 threads, against float64 on the same codes: within the bound of rounding x to
    two 8-bit pieces (step = max|x| / 127 / 254) plus float32 accumulation."""
    if not int8_kernel.available():
        pytest.skip(f"attnlab's int8 kernel is unavailable here: {int8_kernel.unavailable_reason()}")
    gen = torch.Generator().manual_seed(n + k)
    q = torch.randint(-127, 128, (n, k), dtype=torch.int8, generator=gen)
    scale = torch.rand(n, generator=gen) * 0.01
    bias = torch.randn(n, generator=gen)
    x = torch.randn(1, k, generator=gen)
    x[0, k // 2] = -40.0  # an outlier channel
    w = q.double() * scale.double()[:, None]
    packed, rowsum = int8_kernel.pack(q)
    bound = float(x.abs().max()) / 127 / 254 / 2 * w.abs().sum(1) + 1e-5 * (1 + w.abs().sum(1) * float(x.abs().max()))
    for b in (None, bias):
        expected = x.double() @ w.T + (0 if b is None else b.double())
        for threads in (1, 2):
            got = int8_kernel.gemv(x, packed, rowsum, scale, b, n, threads)
            assert got.shape == (1, n) and got.dtype == torch.float32
            assert bool(((got.double() - expected).abs() <= bound).all())
    with pytest.raises(ValueError, match="at most 8192"):
        int8_kernel.pack(torch.zeros(2, 8193, dtype=torch.int8))


def test_int8_fast_path_follows_changes_to_its_bias_and_codes(int8_path):
    """The packed fbgemm weight (bias folded in) is a cache: an in-place change of the bias, the codes or the
    scales must reach the next product."""
    module = _module("int8")
    x = torch.randn(1, 96)
    with torch.no_grad():
        before = module(x)
        module.bias.add_(1.0)
        assert torch.allclose(module(x), before + 1.0, atol=1e-5)
        module.scale.mul_(2.0)
        assert torch.allclose(module(x), 2 * (before - module.bias + 1.0) + module.bias, rtol=1e-4, atol=1e-4)
        module.qweight.neg_()
        assert torch.allclose(module(x), -2 * (before - module.bias + 1.0) + module.bias, rtol=1e-4, atol=1e-4)


def test_the_benchmarks_count_each_quantized_byte_once(gpt_char):
    """benchmarks/quantized.weight_bytes: the bytes a decoding step reads (a quantized LM head is an LMHead
    too, and its .weight property would count a dequantized float32 copy)."""
    from attnlab.benchmarks.quantized import weight_bytes

    quantized = attnlab.quantize(_load_gpt_char(), "int8")
    codes = sum(m.qweight.nbytes + m.scale.nbytes for m in quantized.modules() if isinstance(m, QuantizedLinear))
    assert weight_bytes(quantized) == codes
    floats = sum(m.weight.nbytes for n, m in gpt_char.named_modules()
                 if isinstance(m, torch.nn.Linear) and (".blocks." in f".{n}" or n.startswith("lm_head")))
    assert weight_bytes(gpt_char) == floats


def test_embedding_gathers_the_heads_codes():
    module = _module("q8_0", out_f=50, in_f=64, bias=False)
    emb = QuantizedEmbedding(module)
    assert emb.qweight is module.qweight  # one copy of the codes
    ids = torch.tensor([[3, 0, 49], [7, 7, 1]])
    assert torch.equal(emb(ids), F.embedding(ids, module.weight))


# ------------------------------------------------------------------------------------------ the model API
@pytest.fixture(scope="module")
def gpt_char():
    model, _ = attnlab.load(CHECKPOINTS / "gpt-char")
    return model


def _load_gpt_char():
    return attnlab.load(CHECKPOINTS / "gpt-char")[0]


@pytest.mark.parametrize("scheme,agree", [("int8", 0.9), ("int4", 0.6)])
def test_quantized_model_generates_like_float32(gpt_char, scheme, agree, one_thread):
    ids = torch.tensor([[5, 17, 30, 2, 9, 11]])
    quantized = attnlab.quantize(_load_gpt_char(), scheme)
    assert isinstance(quantized.lm_head, QuantizedLMHead) and isinstance(quantized.tokens, QuantizedEmbedding)
    assert isinstance(quantized.blocks[0].attn.qkv, QuantizedLinear)
    assert not any(isinstance(m, torch.nn.Linear) for n, m in quantized.named_modules() if ".blocks." in f".{n}")
    expected = attnlab.generate(gpt_char, ids, max_new_tokens=30).sequences[0, 6:]
    got = attnlab.generate(quantized, ids, max_new_tokens=30).sequences[0, 6:]
    assert float((got == expected).float().mean()) >= agree


def test_int4_keeps_the_lm_head_at_int8(gpt_char):
    quantized = attnlab.quantize(_load_gpt_char(), "int4")
    assert quantized.blocks[0].ffn.down.format == "int4" and quantized.lm_head.proj.format == "int8"
    assert quantized.tokens.format == "int8"  # the tied embedding reads the head's codes: the same tensor
    assert quantized.tokens.qweight.data_ptr() == quantized.lm_head.proj.qweight.data_ptr()


def test_quantized_state_dict_round_trip(gpt_char):
    source = attnlab.quantize(_load_gpt_char(), "int4")
    target = attnlab.build_model(gpt_char.config).eval()
    attnlab.quantize(target, "int4")
    target.load_state_dict(source.state_dict())
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        assert torch.equal(target(ids).logits, source(ids).logits)
    names = source.state_dict()
    assert "blocks.0.attn.qkv.qweight" in names and names["blocks.0.attn.qkv.qweight"].dtype == torch.uint8
    assert "blocks.0.attn.qkv.weight" not in names


def test_bad_quantize_calls_are_refused(gpt_char):
    with pytest.raises(attnlab.InputError, match="int8, int4"):
        attnlab.quantize(_load_gpt_char(), "int3")
    with pytest.raises(attnlab.InputError, match="eval"):
        attnlab.quantize(attnlab.build_model(gpt_char.config), "int8")  # built models start in training mode
    model = attnlab.quantize(_load_gpt_char(), "int8")
    with pytest.raises(attnlab.InputError, match="already quantized"):
        attnlab.quantize(model, "int8")


# ------------------------------------------------------------------------------------------------- GGUF
def test_gguf_q_blocks_stay_quantized_and_compute_like_the_dequantized_file(tmp_path):
    from gguf import GGUFReader

    from attnlab.interop import gguf as G

    config = gguf_files.config()
    write_quantized_gguf(tmp_path, keep_float="blk.1.attn_v")  # one fused qkv of mixed types
    loaded, _ = attnlab.load(tmp_path / "q.gguf")
    blocks = loaded.blocks
    assert blocks[0].attn.qkv.format == "q4_0" and blocks[0].ffn.up.format == "q4_1"
    assert blocks[0].attn.out.format == "q8_0" and loaded.lm_head.proj.format == "q8_0"
    assert loaded.tokens.qweight is loaded.lm_head.proj.qweight  # tied: one copy of the codes
    assert isinstance(blocks[1].attn.qkv, torch.nn.Linear)  # Q4_0 q/k with an F32 v: dequantized, not mixed
    # the reference: the same file read the float32 way (every tensor dequantized by the gguf package)
    q_reader = GGUFReader(str(tmp_path / "q.gguf"))
    state, _ = G.to_ours(G.llama_table(config), config, G.read_gguf_tensors(q_reader))
    reference = G.materialize(config, state, "ref")
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    with torch.no_grad():
        kernels = int4_kernel.available() or q8_0_kernel.available()  # x rounded to ~15 bits per row
        rounding = 5e-4 if kernels else 1e-5  # as tests/test_quantized_grid.py's TOLERANCE
        full, expected_full = loaded(ids).logits, reference(ids).logits
        if int4_kernel.rows_available() and int4_kernel.available():  # prefill: 4-bit rows through the kernel
            assert float((full - expected_full).abs().max()) <= 5e-4 * float(expected_full.abs().max())
        else:
            assert torch.equal(full, expected_full)  # prefill: the decoded weights themselves
        step = loaded(ids[:, :1]).logits  # one row: the kernels (x rounded to ~15 bits), else chunked
        expected = reference(ids[:, :1]).logits  # products (float32 summation order only)
        assert float((step - expected).abs().max()) <= rounding * float(expected.abs().max())
        plain, _ = G.load_gguf(tmp_path / "q.gguf", keep_quantized=False)  # the float32 way, on request
        assert isinstance(plain.blocks[0].attn.qkv, torch.nn.Linear)
        assert torch.equal(plain(ids).logits, reference(ids).logits)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none on this machine)")
def test_int8_on_cuda_matches_the_decoded_weight():
    module = _module("int8").cuda()
    x = torch.randn(2, 96, device="cuda")
    with torch.no_grad():
        assert torch.allclose(module(x), F.linear(x, module.weight.cuda(), module.bias), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------- NaN and inf activations
PATHS = {  # a product of few rows: format, use_kernel; "prefill": more rows than FAST_ROWS (the decoded weight)
    "int8 VNNI kernel": ("int8", True), "int8 fbgemm": ("int8", False), "int4 VNNI kernel": ("int4", True),
    "int4 chunked": ("int4", False), "q8_0 VNNI kernel": ("q8_0", True), "q8_0 chunked": ("q8_0", False),
    "prefill": ("int8", True)}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_nan_and_inf_activations_give_float32s_answer(path):
    """A row of x holding NaN or inf gives what F.linear on the decoded weight gives (NaN / inf outputs, exactly),
    on every path: the VNNI kernels would round it to finite garbage and fbgemm raises, so such a row is
    multiplied by the decoded weight. Finite rows beside it still take the fast path."""
    fmt, use_kernel = PATHS[path]
    kernel = {"int8": int8_kernel, "int4": int4_kernel, "q8_0": q8_0_kernel}.get(fmt)
    if "VNNI" in path and not kernel.available():
        pytest.skip(f"attnlab's {fmt} kernel is unavailable here: {kernel.unavailable_reason()}")
    module = _module(fmt)
    module.use_kernel = use_kernel
    torch.manual_seed(3)
    x = torch.randn(6 if path == "prefill" else 4, 96)
    x[1, 5] = float("nan")
    x[2, 7] = float("inf")
    x[3, 9] = -float("inf")
    with torch.no_grad():
        expected = F.linear(x, module.weight, module.bias)
        for got in (module(x), torch.cat([module(row[None]) for row in x])):  # several rows, and one at a time
            torch.testing.assert_close(got[1:4], expected[1:4], rtol=0, atol=0, equal_nan=True)
            assert bool(torch.isnan(got[1]).all()) and not bool(torch.isfinite(got[2:4]).any())
            assert torch.allclose(got[0], expected[0], rtol=1e-2, atol=1e-2)  # the finite row: rounded x at most
            if "VNNI" in path or "fbgemm" in path:
                assert not torch.equal(got[0], expected[0])  # ... and it did take the fast path (it rounds x)


@pytest.mark.parametrize("setting", ["VNNI kernels", "fbgemm / chunked"])
@pytest.mark.parametrize("scheme", ["int8", "int4"])
def test_a_nan_inside_a_quantized_model_gives_nan_logits_like_float(gpt_char, scheme, setting, monkeypatch):
    """A NaN reaching a quantized layer (here from a norm weight) gives NaN logits, as the float model's: not the
    finite garbage the VNNI kernels made of it, nor fbgemm's raw error. One token (the few-row paths) and eight
    (prefill)."""
    if setting == "VNNI kernels" and not int8_kernel.available():
        pytest.skip(f"attnlab's kernels are unavailable here: {int8_kernel.unavailable_reason()}")
    models = {"float": _load_gpt_char(), "quantized": attnlab.quantize(_load_gpt_char(), scheme)}
    for model in models.values():
        norm = next(m for m in model.blocks[1].modules() if isinstance(m, (torch.nn.LayerNorm, torch.nn.RMSNorm))
                    or type(m).__name__.endswith("Norm"))
        with torch.no_grad():
            norm.weight[0] = float("nan")
        for m in model.modules():
            if isinstance(m, QuantizedLinear):
                m.use_kernel = setting == "VNNI kernels"
    for ids in (torch.tensor([[5]]), torch.tensor([[5, 17, 30, 2, 9, 11, 3, 4]])):
        with torch.no_grad():
            logits = {name: model(ids).logits for name, model in models.items()}
        assert bool(torch.isnan(logits["float"]).all())
        assert bool(torch.isnan(logits["quantized"]).all()), (scheme, setting, ids.shape)


def test_the_kernels_bring_no_second_openmp_runtime():
    """The kernels' threads are their own small pool (kernel_build.POOL, issue 25.2): after they load, one OpenMP
    runtime is mapped, torch's; a second (the system's libgomp under another name) would be a competing pool."""
    from attnlab.layers import kernel_build

    if not q8_0_kernel.available() or not int4_kernel.available():
        pytest.skip(f"attnlab's kernels are unavailable here: {int8_kernel.unavailable_reason()}")
    assert len(kernel_build.openmp_runtimes()) == 1, kernel_build.openmp_runtimes()


@pytest.mark.parametrize("fmt", ["int8", "int4", "q8_0"])
def test_kernels_split_large_products_across_threads_to_the_same_bits(fmt):
    """A product large enough to be split (>= 64 KB of weights per thread) gives the same bits at 1, 2 and 3
    threads (kernel_build.POOL: each 64-output block is computed whole by one thread, the caller or a helper), and
    the 1-thread result is x W^T within the activation rounding (float64 reference)."""
    kernel = {"int8": int8_kernel, "int4": int4_kernel, "q8_0": q8_0_kernel}[fmt]
    if not kernel.available():
        pytest.skip(f"attnlab's {fmt} kernel is unavailable here: {kernel.unavailable_reason()}")
    torch.manual_seed(5)
    n, k = 2000, 512
    w = torch.randn(n, k) * 0.05
    buffers = quantize_weight(w, fmt) if fmt != "q8_0" else from_gguf_rows(torch.from_numpy(_gguf_bytes(w, fmt)), fmt)
    packed = kernel.pack_layer(buffers, None)
    x = torch.randn(1, k)
    runs = [kernel.gemv(x, *packed, n, threads) for threads in (1, 2, 3)]
    assert all(torch.equal(r, runs[0]) for r in runs[1:])
    wd = dequantize(fmt, buffers).double()
    bound = float(x.abs().max()) / 127 / 254 / 2 * wd.abs().sum(1) + 1e-5 * (1 + float(x.abs().max()) * wd.abs().sum(1))
    assert bool(((runs[0].double() - x.double() @ wd.t()).abs() <= bound).all())


def test_a_process_whose_kernels_used_helper_threads_exits(tmp_path):
    """kernel_build.POOL's helpers sleep in a condition variable for the life of the process. A static Pool's
    destructor ran at exit, and pthread_cond_destroy waited for those sleepers forever: every process that had run
    a split product hung after its last line (the test suite itself, at its end). The pool is never destroyed now."""
    if not int8_kernel.available():
        pytest.skip(f"attnlab's kernels are unavailable here: {int8_kernel.unavailable_reason()}")
    script = (
        "import torch\n"
        "from attnlab.layers import int8_kernel\n"
        "from attnlab.layers.quantized import quantize_weight\n"
        "w = torch.randn(2000, 512) * 0.05\n"
        "packed = int8_kernel.pack_layer(quantize_weight(w, 'int8'), None)\n"
        "y = int8_kernel.gemv(torch.randn(1, 512), *packed, 2000, 2)\n"
        "print('done', y.shape[-1])\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    try:
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env,
                             cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail("the process did not exit after using the kernels' helper threads")
    assert run.returncode == 0 and "done 2000" in run.stdout, run.stderr[-2000:]


def test_the_finite_check_of_float16_scales_agrees_with_torchs_isfinite():
    """check_finite reads float16 scales by their exponent bits (quicker than torch's isfinite there): every
    special value of float16 and every bit pattern must get isfinite's answer."""
    from attnlab.quantization import _all_finite

    every = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.float16)  # all 65,536 patterns
    finite = torch.isfinite(every)
    assert int((~finite).sum()) == 2 * 1024  # exponent bits all ones: 2 signs x 1,024 mantissas (+-inf, the rest NaN)
    for pattern in every.view(torch.int16)[~finite].tolist():  # each alone beside a finite value
        assert not _all_finite(torch.tensor([0x3C00, pattern], dtype=torch.int16).view(torch.float16))
    assert _all_finite(every[finite])
    assert _all_finite(torch.tensor([0.0, -0.0, 65504.0, -65504.0, 6e-8], dtype=torch.float16))
    assert not _all_finite(torch.tensor([1.0, float("nan")])) and _all_finite(torch.tensor([1.0, -2.0]))
