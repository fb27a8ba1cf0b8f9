"""A GGUF file's fused Q/K/V or gate+up whose parts have different block types, kept quantized: a QuantizedParts
(layers/quantized.py) of row groups, each a QuantizedLinear in its own format, multiplied by its own kernel.

llama.cpp's presets write such matrices: Q5_K_M's SmolLM2 has Q/K/V of Q5_1, Q5_1 and Q8_0 on 14 of 30 layers,
Q4_K_S's Q5_0, Q5_0 and Q5_1, Q3_K_M's Q4_0, Q4_0 and Q5_0; a model whose widths fit K-quants mixes Q4_K and Q6_K.
The tiny file here holds each of these mixes (d_model 256, so K-quants fit), with Q8_0 / Q4_0 / Q5_0 / Q5_1 blocks
quantized by the `gguf` package from the float weights and Q4_K / Q6_K blocks of random bytes.

References, independent of the code under test:
- the weights: the same file loaded with keep_quantized=False, every tensor dequantized by the `gguf` package and
  stacked by the float path: the kept parts' weights must equal its fused matrix bit for bit (every format's numbers
  are exact in float32, tests/test_kquants.py);
- the logits: that float model's. The kept products round each input row to two 8-bit pieces (half a step of
  max|x| / 127 / 254 per input, ~2^-16 of the row's largest |x|) and sum in float32; over two blocks and the tied
  head that stays far below 1e-3 of the logits' spread (the bound tests/test_kquants.py holds a K-quant file to),
  while a part multiplied by the wrong rows or scales would move logits by the spread itself;
- the memory: each part's buffers hold the bytes its format's layout says per weight (below), not float32's 4.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import attnlab
from attnlab.layers import q5_0_kernel
from attnlab.layers.quantized import QuantizedLinear, QuantizedParts

gguf = pytest.importorskip("gguf")
from tests.test_kquants import random_blocks  # noqa: E402  (after the skip: it needs gguf too)

# GGUF type of each tensor of the tiny file; blk.N.<name>
TYPES = {0: {"attn_q": "Q5_1", "attn_k": "Q5_1", "attn_v": "Q8_0",  # Q5_K_M's Q/K/V
             "ffn_gate": "Q4_K", "ffn_up": "Q6_K", "ffn_down": "Q6_K", "attn_output": "Q5_1"},
         1: {"attn_q": "Q5_0", "attn_k": "Q5_0", "attn_v": "Q5_1",  # Q4_K_S's Q/K/V
             "ffn_gate": "Q4_0", "ffn_up": "Q5_0", "ffn_down": "Q4_K", "attn_output": "Q5_0"}}  # Q3_K_M-like gate+up
# bytes per weight of each kept layout (layers/quantized.py): Q8_0 34 per 32; Q5_0 20 code bytes + a float16 d per
# 32; Q5_1 also a float16 min; Q4_0 kept as Q4_1's layout (16 + 2 + 2 per 32); Q4_K as Q4_1's with float32 scale and
# min; Q6_K int8 codes with a float32 scale per 16
LAYOUT_BYTES = {"q8_0": 34 / 32, "q5_0": 22 / 32, "q5_1": 24 / 32, "q4_0": 20 / 32, "q4_k": 24 / 32, "q6_k": 40 / 32}
IDS = torch.tensor([[1, 5, 9, 2, 7, 3, 3, 8]])  # 8 rows: more than FAST_ROWS, so the prompt runs the rows kernels


def _mixed_file(folder):
    from tests.gguf_files import typed_gguf

    def random_kquant(kind, rows, cols, seed):  # the gguf package cannot quantize to K-quants: random blocks
        return random_blocks(kind.lower(), rows, cols, seed=seed, scale=2e-4)
    return typed_gguf(folder, "mixed.gguf", TYPES, "Q8_0", 2, random_kquant)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    from attnlab.interop import gguf as G

    path = _mixed_file(tmp_path_factory.mktemp("mixed"))
    kept, _ = G.load_gguf(path)
    full, _ = G.load_gguf(path, keep_quantized=False)
    return path, kept, full


def _every_kernel_runs() -> bool:
    from attnlab.interop.gguf import VNNI_ONLY

    return all(kernel.runs_here() for kernel in VNNI_ONLY.values()) and q5_0_kernel.runs_here()


def test_mixed_fused_matrices_stay_quantized_in_parts(mixed):
    """Each fused matrix of mixed types is a QuantizedParts whose row groups keep their file's formats (equal
    neighbours merged); no matrix of the blocks is float; each part holds its layout's bytes."""
    _, kept, _ = mixed
    if not _every_kernel_runs():
        pytest.skip("Q5_1 / Q5_K / Q6_K are kept only where AVX-512 VNNI runs their kernels")
    d, kv = kept.config.d_model, kept.config.kv_heads * kept.config.head_dim
    expected = {"blocks.0.attn.qkv": f"q5_1:{d + kv}+q8_0:{kv}", "blocks.1.attn.qkv": f"q5_0:{d + kv}+q5_1:{kv}",
                "blocks.0.ffn.up": "q4_k:512+q6_k:512", "blocks.1.ffn.up": "q4_0:512+q5_0:512"}
    for name, spec in expected.items():
        module = kept.get_submodule(name)
        assert isinstance(module, QuantizedParts) and module.format == spec, (name, module)
        for part in module.parts:
            assert isinstance(part, QuantizedLinear)
            assert part.nbytes == part.out_features * part.in_features * LAYOUT_BYTES[part.format], part
        assert module.nbytes < module.out_features * module.in_features * 1.25
    floats = [n for n, m in kept.named_modules() if isinstance(m, nn.Linear)]
    assert not floats, f"expanded to float32: {floats}"
    assert kept.get_submodule("blocks.1.attn.out").format == "q5_0"


def test_parts_hold_the_float_loads_weights_and_give_its_logits(mixed):
    """The parts' weights stacked are the float load's fused matrix bit for bit (rows in place: Q and K of a llama
    file are un-permuted as float rows are); the prompt (rows kernels) and a decoding step (one-row kernels) give
    the float model's logits within the activations' rounding (1e-3 of their spread; module docstring)."""
    _, kept, full = mixed
    floats = dict(full.named_parameters())
    for name, module in kept.named_modules():
        if isinstance(module, QuantizedParts):
            assert torch.equal(module.weight, floats[f"{name}.weight"]), name
    with torch.no_grad():
        a, b = kept(IDS).logits, full(IDS).logits
        step = kept(IDS[:, :1]).logits
    spread = float(b.std())
    assert spread > 0.1  # the bound below is not vacuous
    torch.testing.assert_close(a, b, rtol=0, atol=1e-3 * spread)
    torch.testing.assert_close(step, b[:, :1], rtol=0, atol=1e-3 * spread)


def test_the_prompt_runs_each_parts_own_rows_kernel(mixed):
    """A prompt of 8 rows goes through every part's rows kernel (where they are built here), not a dequantized
    float product: counted by replacing each part's float fallback with one that fails."""
    _, kept, _ = mixed
    parts = [p for m in kept.modules() if isinstance(m, QuantizedParts) for p in m.parts]
    if not parts or not all(p.runs_kernel(IDS.shape[1]) for p in parts):
        pytest.skip("the rows kernels of these formats do not run here")

    def refuse(*args, **kwargs):
        raise AssertionError("a part multiplied by its dequantized weight")

    for p in parts:
        p._float_product = refuse
    try:
        with torch.no_grad():
            kept(IDS)
            kept(IDS[:, :1])
    finally:
        for p in parts:
            del p._float_product


def test_q5_0_beside_q4_0_is_widened_to_q8_0_where_its_kernel_cannot_run(tmp_path, monkeypatch):
    """Without q5_0_kernel (no AVX-512 VNNI) a Q5_0 part is read as Q8_0 rows of the same numbers: blk.1's gate+up
    (Q4_0 beside Q5_0) is then Q4_0 beside Q8_0 parts, rows of two widths split apart again, the weights those of
    the float load."""
    from attnlab.interop import gguf as G

    monkeypatch.setattr(q5_0_kernel, "runs_here", lambda: False)
    path = _mixed_file(tmp_path)
    kept, _ = G.load_gguf(path)
    full, _ = G.load_gguf(path, keep_quantized=False)
    up = kept.get_submodule("blocks.1.ffn.up")
    assert isinstance(up, QuantizedParts) and up.format == "q4_0:512+q8_0:512"
    assert torch.equal(up.weight, full.get_submodule("blocks.1.ffn.up").weight)


def test_saved_and_loaded_again(mixed, tmp_path):
    """An attnlab checkpoint records a QuantizedParts by its parts string and loads the same bytes back; save_gguf
    writes each part of a mixed fused matrix in its own type (GGUF's Q, K, V, gate and up are tensors of their own),
    the source file's types, and loaded again they are the same weights."""
    from attnlab.interop import gguf as G
    from attnlab.quantization import formats_of

    _, kept, _ = mixed
    table = formats_of(kept)
    assert not any(".parts." in name for name in table)
    folder = kept.save(tmp_path / "ckpt")
    again, _ = attnlab.load(folder)
    assert formats_of(again) == table
    sa, sb = kept.state_dict(), again.state_dict()
    assert list(sa) == list(sb) and all(torch.equal(sa[k], sb[k]) for k in sa)
    with torch.no_grad():
        assert torch.equal(kept(IDS).logits, again(IDS).logits)
    path, _, _ = mixed
    written = G.save_gguf(kept, tmp_path / "again.gguf")
    types = {t.name: t.tensor_type.name for t in gguf.GGUFReader(str(written)).tensors}
    mixed_parts = [n for n, m in kept.named_modules() if isinstance(m, QuantizedParts)]
    source = {t.name: t.tensor_type.name for t in gguf.GGUFReader(str(path)).tensors}
    for name in mixed_parts:
        i, what = name.split(".")[1], ("attn_q", "attn_k", "attn_v") if "attn" in name else ("ffn_gate", "ffn_up")
        assert [types[f"blk.{i}.{p}.weight"] for p in what] == [source[f"blk.{i}.{p}.weight"] for p in what]
    assert types["blk.1.attn_output.weight"] == "Q5_0"  # a plain kept matrix keeps its blocks
    back, _ = G.load_gguf(written)
    for name in mixed_parts:
        assert torch.equal(back.get_submodule(name).weight, kept.get_submodule(name).weight), name


def test_the_compiled_step_gives_the_eager_tokens(mixed):
    """generate(compile=True): the parts are QuantizedLinear modules like any other, each a node of the compiled
    graph (attnlab::quantized_rows); tokens equal to eager decoding, logits within the fused graph's float32
    reordering (1e-4 of their largest, as tests/test_decode_compiled.py)."""
    from attnlab.generation import compiled

    _, kept, _ = mixed
    reason = compiled.why_not(kept)
    if reason:
        pytest.skip(reason)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        args = dict(max_new_tokens=5, keep_logits=True, threads=1)
        eager = attnlab.generate(kept, IDS.tolist(), **args)
        traced = attnlab.generate(kept, IDS.tolist(), compile=True, **args)
    finally:
        torch.set_num_threads(before)
    assert traced.tokens == eager.tokens
    for e, c in zip(eager.logits, traced.logits, strict=True):
        assert float((c - e).abs().max()) <= 1e-4 * float(e.abs().max())
    parts = [p for m in kept.modules() if isinstance(m, QuantizedParts) for p in m.parts]
    assert all(p._layer is not None for p in parts if p._one_row_kernel() is not None)


def test_a_bias_is_added_once_after_the_parts():
    """A fused Q/K/V with biases (Qwen2's) in parts: the bias lives on the QuantizedParts and is added once to the
    side-by-side outputs; against float64 x . w + b of the parts' dequantized weights, within the kernels' rounding
    of x (tests/test_kquants.py's bound)."""
    from attnlab.layers import quantized
    from tests.test_kquants import _bound

    module = QuantizedParts(256, [("q5_1", 64), ("q8_0", 32)], bias=True)
    q8 = gguf.quants.quantize(np.random.default_rng(1).normal(size=(32, 256)).astype(np.float32) * 0.02,
                              gguf.GGMLQuantizationType.Q8_0)
    module.parts[0].load_buffers(quantized.from_gguf_rows(torch.from_numpy(random_blocks("q5_1", 64, 256)), "q5_1"))
    module.parts[1].load_buffers(quantized.from_gguf_rows(torch.from_numpy(q8), "q8_0"))
    with torch.no_grad():
        module.bias.copy_(torch.linspace(-1, 1, 96))
    w = module.weight
    x = torch.randn(6, 256, generator=torch.Generator().manual_seed(2))
    expected = x.double() @ w.double().t() + module.bias.double()
    with torch.no_grad():
        for rows in (x[:1], x):  # a decoding step's row, a prompt's rows
            got = module(rows)
            assert bool(((got.double() - expected[: len(rows)]).abs() <= _bound(rows, w)).all())


def test_a_checkpoints_parts_must_add_up_to_the_matrix(tmp_path):
    """A saved table whose parts do not hold the matrix's rows is refused naming the module and both counts."""
    from attnlab.quantization import check_formats

    model = attnlab.build_model(attnlab.presets["tiny-llama"].replace(n_layers=1), device="meta")
    rows = model.blocks[0].attn.qkv.out_features
    with pytest.raises(ValueError, match=rf"blocks\.0\.attn\.qkv has parts 'q5_1:1\+q8_0:1' of 2 rows; the "
                                         rf"model's matrix has {rows}"):
        check_formats(model, {"blocks.0.attn.qkv": "q5_1:1+q8_0:1"}, "ckpt")
    with pytest.raises(ValueError, match="unknown quantized format 'q5_1:1\\+q9_9:2'"):
        check_formats(model, {"blocks.0.attn.qkv": "q5_1:1+q9_9:2"}, "ckpt")
