"""A GGUF file of llama.cpp's K-quant presets read and written again keeps its tensors' types and bytes.

llama.cpp's Q4_K_M and Q5_K_M files mix Q4_K / Q5_K with Q6_K (and, where a width is not a multiple of 256, Q5_0,
Q5_1 and Q8_0), often inside one fused matrix of attnlab's (Q/K/V, gate+up: a QuantizedParts). load_gguf keeps
them; save_gguf writes each part back in its own type: Q4_K / Q5_K / Q6_K super-blocks are rebuilt from the kept
codes and the exact float32 products d * sc, Q5_0 read as Q8_0 rows is written as Q5_0 again.

The files are made here (no downloads): a tiny LLaMA exported by save_gguf, its matrices replaced by blocks of the
types below. The gguf package cannot quantize to K-quants, so their blocks are random bytes laid out as llama.cpp's
quantizers lay them out: the largest sub-block scale code of a super-block is 63 (Q4_K / Q5_K: d = max scale / 63)
or -128 (Q6_K: d = -max scale / 128). References, independent of the code under test: the source file's own bytes
and types as the `gguf` package (llama.cpp's Python reader) reads them, and its dequantize for the numbers.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from attnlab.layers.quantized import QuantizedLinear, QuantizedParts

gguf = pytest.importorskip("gguf")
from tests.test_kquants import random_blocks  # noqa: E402  (after the skip: it needs gguf too)

# blk.N.<name> -> GGUF type: block 0 as llama-quantize's Q4_K_M writes a model whose widths are multiples of 256,
# block 1 as its Q5_K_M, block 2 as its fall-backs on SmolLM2 (Q5_1 / Q8_0 Q/K/V of Q5_K_M; Q5_0 beside Q8_0, which
# attnlab reads as Q8_0 rows, of Q4_K_M)
TYPES = {0: {"attn_q": "Q4_K", "attn_k": "Q4_K", "attn_v": "Q6_K", "ffn_gate": "Q4_K", "ffn_up": "Q4_K",
             "ffn_down": "Q6_K", "attn_output": "Q4_K"},
         1: {"attn_q": "Q5_K", "attn_k": "Q5_K", "attn_v": "Q6_K", "ffn_gate": "Q5_K", "ffn_up": "Q5_K",
             "ffn_down": "Q6_K", "attn_output": "Q5_K"},
         2: {"attn_q": "Q5_1", "attn_k": "Q5_1", "attn_v": "Q8_0", "ffn_gate": "Q5_0", "ffn_up": "Q8_0",
             "ffn_down": "Q5_0", "attn_output": "Q4_0"}}
EMBEDDING = "Q6_K"  # tied: the output head too (llama-quantize's choice for a Q4_K_M embedding)
FILE_TYPE = 15  # general.file_type: llama.cpp's MOSTLY_Q4_K_M
IDS = torch.tensor([[1, 5, 9, 2, 7, 3, 3, 8]])


def llama_like(kind: str, n: int, k: int, seed: int) -> np.ndarray:
    """Random `kind` blocks whose scale codes follow llama.cpp's quantizers: in each super-block the first
    sub-block's scale (and min) code is the largest, 63 (Q4_K, Q5_K), or -128 with every other in -127..127 (Q6_K).
    Their float16 d and dmin are positive (llama.cpp's are)."""
    raw = random_blocks(kind.lower(), n, k, seed=seed, scale=2e-3)
    b = raw.reshape(n, -1, raw.shape[1] * 256 // k)
    if kind in ("Q4_K", "Q5_K"):
        b[..., 4] |= 63  # sc_0 = low 6 bits of scale byte 0
        b[..., 8] |= 63  # m_0 = low 6 bits of scale byte 4
    else:  # Q6_K: int8 scales at bytes 192..207
        scales = b[..., 192:208]
        scales[scales == 0x80] = 0x81
        scales[..., 0] = 0x80
    return raw


def _file(folder, blocks_of=llama_like):
    from tests.gguf_files import typed_gguf

    return typed_gguf(folder, "k.gguf", TYPES, EMBEDDING, 3, blocks_of, more=lambda w: w.add_file_type(FILE_TYPE))


def _every_format_kept(model) -> bool:
    return not [n for n, m in model.named_modules() if isinstance(m, nn.Linear)]


def _tensors(path) -> dict:
    return {t.name: (t.tensor_type.name, np.array(t.data)) for t in gguf.GGUFReader(str(path)).tensors}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    from attnlab.interop import gguf as G

    path = _file(tmp_path_factory.mktemp("k"))
    model, _ = G.load_gguf(path)
    if not _every_format_kept(model):
        pytest.skip("Q5_1 / Q5_K / Q6_K are kept only where AVX-512 VNNI runs their kernels")
    return path, model


def test_written_again_every_tensor_keeps_its_type_and_bytes(source, tmp_path):
    """Read by the gguf package, the written file holds every tensor of the source in the same type with the same
    bytes: the K-quant super-blocks, the parts of the mixed fused matrices (Q4_K / Q6_K, Q5_K / Q6_K, Q5_1 / Q8_0),
    the Q5_0 gate read as Q8_0 rows beside its Q8_0 up, the tied Q6_K embedding; the norms as F32 values."""
    from attnlab.interop import gguf as G

    path, model = source
    assert isinstance(model.get_submodule("blocks.0.attn.qkv"), QuantizedParts)
    assert model.get_submodule("blocks.2.ffn.up").format == "q8_0"  # Q5_0 beside Q8_0: Q8_0 rows
    written = G.save_gguf(model, tmp_path / "again.gguf")
    before, after = _tensors(path), _tensors(written)
    assert list(after) == list(before)
    for name, (kind, data) in before.items():
        assert after[name][0] == kind, name
        assert after[name][1].shape == data.shape and np.array_equal(after[name][1], data), name
    assert gguf.GGUFReader(str(written)).fields["general.file_type"].contents() == FILE_TYPE  # the source's preset


def test_written_again_loads_to_the_same_model(source, tmp_path):
    """The written file loads to the same modules, buffers and logits (bit for bit: the same bytes)."""
    from attnlab.interop import gguf as G
    from attnlab.quantization import formats_of

    _, model = source
    again, _ = G.load_gguf(G.save_gguf(model, tmp_path / "again.gguf"))
    assert formats_of(again) == formats_of(model)
    sa, sb = model.state_dict(), again.state_dict()
    assert list(sa) == list(sb) and all(torch.equal(sa[k], sb[k]) for k in sa)
    with torch.no_grad():
        assert torch.equal(model(IDS).logits, again(IDS).logits)


def test_other_k_quant_blocks_keep_their_types_and_numbers(tmp_path):
    """Blocks laid out otherwise (arbitrary scale codes: d * sc is then not one pair) come back in their types with
    the same numbers, as the gguf package dequantizes them, if not always the same bytes."""
    from attnlab.interop import gguf as G

    path = _file(tmp_path, lambda kind, n, k, seed: random_blocks(kind.lower(), n, k, seed=seed, scale=2e-3))
    model, _ = G.load_gguf(path)
    if not _every_format_kept(model):
        pytest.skip("Q5_1 / Q5_K / Q6_K are kept only where AVX-512 VNNI runs their kernels")
    written = G.save_gguf(model, tmp_path / "again.gguf")
    before, after = _tensors(path), _tensors(written)
    for name, (kind, data) in before.items():
        assert after[name][0] == kind, name
        if kind in ("F32", "F16"):
            continue
        kind = gguf.GGMLQuantizationType[kind]
        assert np.array_equal(gguf.quants.dequantize(after[name][1], kind), gguf.quants.dequantize(data, kind)), name


def test_a_k_quant_whose_scales_are_not_its_formats_is_written_as_float(source, tmp_path):
    """A kept Q4_K part whose float32 scales no float16 d times 6-bit codes make (changed after loading) is written
    as float: the matrix's numbers, not other ones in Q4_K's bytes."""
    from attnlab.interop import gguf as G

    _, model = source
    qkv = model.get_submodule("blocks.0.attn.qkv")
    part = qkv.parts[0]
    assert part.format == "q4_k"
    kept = part.scale.clone()
    try:
        with torch.no_grad():
            part.scale[0, 0] = kept[0, 0] * (1 + 2 ** -20)  # no float16 d has this product
        written = G.save_gguf(model, tmp_path / "changed.gguf")
        types = _tensors(written)
        assert {types[f"blk.0.attn_{p}.weight"][0] for p in "qkv"} == {"F32"}
        again, _ = G.load_gguf(written, keep_quantized=False)
        assert torch.equal(again.get_submodule("blocks.0.attn.qkv").weight, qkv.weight)
        assert types["blk.0.ffn_up.weight"][0] == "Q4_K"  # the other matrices keep their blocks
    finally:
        with torch.no_grad():
            part.scale.copy_(kept)


def _low_k_file(folder):
    """A tiny LLaMA whose block matrices are Q2_K (block 0) and Q3_K (block 1) blocks (random bytes, small positive
    float16 d, dmin)."""
    from tests.gguf_files import typed_gguf

    sizes = {"Q2_K": 84, "Q3_K": 110}  # bytes per 256 inputs; d at 80 (dmin 82) and at 108

    def low_k(kind, n, k, seed):
        rng = np.random.default_rng(5 + seed)
        raw = rng.integers(0, 256, size=(n, k // 256, sizes[kind]), dtype=np.uint8)
        halves = (rng.uniform(0.25, 1, size=(n, k // 256, 2)) * 1e-3).astype(np.float16).view(np.uint8)
        if kind == "Q2_K":
            raw[..., 80:84] = halves.reshape(n, k // 256, 4)
        else:
            raw[..., 108:110] = halves[..., :2]
        return raw.reshape(n, -1)
    matrices = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
    types = {0: dict.fromkeys(matrices, "Q2_K"), 1: dict.fromkeys(matrices, "Q3_K")}
    return typed_gguf(folder, "low.gguf", types, None, 2, low_k)


def test_q2_k_and_q3_k_load_as_the_gguf_packages_float(tmp_path):
    """Q2_K and Q3_K matrices are dequantized at load (no kernel of attnlab's reads them): float Linear layers whose
    weights are the gguf package's dequantized values bit for bit (Q/K un-permuted as any llama file's rows), and
    save_gguf writes them as float."""
    from attnlab.interop import gguf as G

    path = _low_k_file(tmp_path)
    model, _ = G.load_gguf(path)
    reader = gguf.GGUFReader(str(path))
    ref = {t.name: torch.from_numpy(np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32))
           for t in reader.tensors if t.tensor_type.name in ("Q2_K", "Q3_K")}
    assert {t.tensor_type.name for t in reader.tensors} >= {"Q2_K", "Q3_K"}
    for i in (0, 1):
        for ours, theirs in (("attn.out", "attn_output"), ("ffn.down", "ffn_down")):
            module = model.get_submodule(f"blocks.{i}.{ours}")
            assert not isinstance(module, (QuantizedLinear, QuantizedParts))
            assert torch.equal(module.weight, ref[f"blk.{i}.{theirs}.weight"])
        v = model.get_submodule(f"blocks.{i}.attn.qkv").weight[-ref[f"blk.{i}.attn_v.weight"].shape[0]:]
        assert torch.equal(v, ref[f"blk.{i}.attn_v.weight"])
        up = model.get_submodule(f"blocks.{i}.ffn.up").weight
        assert torch.equal(up, torch.cat((ref[f"blk.{i}.ffn_gate.weight"], ref[f"blk.{i}.ffn_up.weight"])))
    types = _tensors(G.save_gguf(model, tmp_path / "again.gguf"))
    assert {types[name][0] for name in ref} == {"F32"}


def test_the_read_floor_counts_a_files_blocks_not_attnlabs_buffers(source):
    """The benchmarks' memory floor (attnlab.benchmarks.read_floor) divides the read rate by the bytes a decoding
    step must read: for a GGUF file, its tensors' bytes as the gguf package reads them (the tied embedding once, as
    the head), not attnlab's buffers, whose float32 scales make Q4_K 0.75 bytes a weight and Q6_K 1.25. The one
    exception is attnlab's own: block 2's Q5_0 gate beside its Q8_0 up is held (and read) as Q8_0 rows, 34 bytes
    per 32 weights where the file has 22."""
    from attnlab.benchmarks.read_floor import weight_bytes_per_token

    path, model = source
    tensors = gguf.GGUFReader(str(path)).tensors
    file_bytes = sum(int(t.n_bytes) * 34 // 22 if t.name == "blk.2.ffn_gate.weight" else int(t.n_bytes)
                     for t in tensors)
    assert weight_bytes_per_token(model) == file_bytes
    buffers = sum(m.nbytes for m in model.modules() if isinstance(m, QuantizedLinear))
    assert buffers > weight_bytes_per_token(model)  # what the old count was made of
