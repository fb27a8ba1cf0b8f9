"""The header, metadata and tensor table of a GGUF file (llama.cpp's format), read with a memory map and struct.

Why not gguf.GGUFReader: it makes numpy views for every value and every string, and a tokenizer's arrays hold ~100k
strings (SmolLM2: 49,152 tokens and 48,900 merges), so it spent ~1.8 s on SmolLM2's metadata, most of attnlab.load's
time to a first token. Here a string array is one loop of struct.unpack_from over the map (~10 ms for SmolLM2's
tokens), its strings kept as bytes and decoded when the value is asked for (a file whose tokens are not UTF-8 is
refused by whoever reads its tokens, not by a reader of its config); tensors are numpy views into the map (no copy),
of the dtype and shape gguf.GGUFReader gives them: float and integer types as their elements in numpy order
(slowest dimension first), the others (quantized blocks, BF16) as uint8 rows of bytes.

The layout (the GGUF spec, ggml's docs/gguf.md): "GGUF", uint32 version (2 or 3; the byte order is the one in which
it reads so), uint64 tensor count, uint64 key count; each key: a string name, a uint32 value type, the value
(a string is a uint64 length and its bytes; an array a uint32 type, a uint64 count and its entries); each tensor:
a string name, a uint32 dimension count, that many uint64 sizes (fastest-varying first), a uint32 ggml type and a
uint64 offset into the data, which starts at the first multiple of general.alignment (default 32) after the table.

A GGUF file may come from anyone: every read is bounds-checked, and the caller's Caps (keys, entries of one array,
strings in all arrays together, bytes of one string of an array) are checked as the walk reaches them, before
anything is allocated for them. Whatever is wrong is one CheckpointError naming the file and, when it looks like
one, the key or tensor (a name is the file's content: a hostile one is not quoted).
"""

from __future__ import annotations

import math
import mmap
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from attnlab.errors import CheckpointError

# GGUF value types (gguf.GGUFValueType), by number: the walk needs no gguf import (~0.1 s)
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
SCALARS = {UINT8: "B", INT8: "b", UINT16: "H", INT16: "h", UINT32: "I", INT32: "i", FLOAT32: "f", BOOL: "?",
           UINT64: "Q", INT64: "q", FLOAT64: "d"}  # struct format of each fixed-size type
FIXED = {kind: struct.calcsize(fmt) for kind, fmt in SCALARS.items()}  # bytes per value
NUMPY = {kind: np.dtype(fmt) for kind, fmt in SCALARS.items()}  # an array of numbers is read as these in one go
TYPE_NAMES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array",
              "uint64", "int64", "float64")
VERSIONS = (2, 3)
MAX_DEPTH = 4  # arrays of arrays nested deeper than this are refused (no real metadata nests at all)
DEFAULT_ALIGNMENT = 32
SAFE_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")

# ggml's tensor types: number -> (name, values per block, bytes per block), as ggml.h and ggml-common.h define them
# (gguf-py's table agrees except Q8_1, which it sizes at 40 bytes; ggml's block_q8_1 is two halves and 32 int8: 36)
GGML_TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17)}
ELEMENTS = {"F32": "f4", "F16": "f2", "F64": "f8", "I8": "i1", "I16": "i2", "I32": "i4", "I64": "i8"}  # else bytes


class Caps(NamedTuple):
    """How much metadata a reader accepts: keys of the file, entries of one array, strings in all arrays together,
    bytes of one string of an array (the caller's policy: see gguf_tokenizer.py's MAX_*)."""

    keys: int
    array: int
    strings: int
    string_bytes: int


def safe_name(name) -> str:
    """A key or tensor name as it may appear in a message: itself when it looks like a GGUF name, else a neutral
    phrase (a name is the file's content, and a hostile one may be long or hold control characters)."""
    if isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    return name if isinstance(name, str) and SAFE_NAME.fullmatch(name) else "a metadata key"


def spelled(types) -> str:
    """A field's value types in words: "uint32", "an array of string" ..."""
    names = [TYPE_NAMES[int(t)] if 0 <= int(t) < len(TYPE_NAMES) else "unknown" for t in types]
    return "an array of " + names[-1] if names and names[0] == "array" else (names[0] if names else "untyped")


@dataclass(frozen=True)
class Field:
    """One metadata key. types: (kind,) for a single value, (ARRAY, sub) for an array, (ARRAY, ARRAY, ...) for
    arrays of arrays; count: an array's entries (1 for a single value); raw: bytes for a string, a list of bytes
    for an array of strings, a numpy array for an array of numbers, a list of Fields for arrays of arrays (None
    where a gguf.GGUFReader gave them), else the value itself."""

    key: str
    types: tuple[int, ...]
    count: int
    raw: Any

    def value(self):
        """The value as Python (str, int, float, bool, lists of them); UnicodeDecodeError for text not in UTF-8."""
        kind = self.types[0]
        if kind == STRING:
            return self.raw.decode("utf-8")
        if kind != ARRAY:
            return self.raw
        if self.raw is None:
            return None
        sub = self.types[1]
        if sub == STRING:
            return [s.decode("utf-8") for s in self.raw]
        if sub == ARRAY:
            return [f.value() for f in self.raw]
        return self.raw.tolist()

    @property
    def longest(self) -> int:
        """Bytes of the longest string of an array of strings; 0 for anything else."""
        return max(map(len, self.raw), default=0) if self.types[:2] == (ARRAY, STRING) else 0


@dataclass(frozen=True)
class Tensor:
    """One entry of the tensor table. dims: the sizes as GGUF lists them (fastest-varying first); offset: where its
    bytes start in the file; data: a read-only numpy view of them (see the module's docstring for its dtype)."""

    name: str
    type: int
    dims: tuple[int, ...]
    offset: int
    n_bytes: int
    data: np.ndarray

    @property
    def type_name(self) -> str:
        return GGML_TYPES[self.type][0] if self.type in GGML_TYPES else str(self.type)

    @property
    def shape(self) -> tuple[int, ...]:
        """The sizes in numpy's and torch's order (slowest first): a matrix is (out, in)."""
        return self.dims[::-1]


@dataclass
class GGUFFile:
    """A GGUF file's metadata (fields, in the file's order) and tensor table (in the file's order)."""

    fields: dict[str, Field]
    tensors: list[Tensor]
    version: int = 3
    alignment: int = DEFAULT_ALIGNMENT


# ------------------------------------------------------------------------------------------------ the walk
class _Unreadable(Exception):
    """Inside the walk: why the file is not GGUF (worded for a message); open_gguf adds the file's name."""


class _Cursor:
    """A little-endian or big-endian cursor over a GGUF file's bytes (a memory map: nothing is read twice); every
    read past the end raises EOFError."""

    def __init__(self, data, order: str):
        self.data, self.pos, self.order = data, 0, order
        self.u32, self.u64 = struct.Struct(order + "I").unpack_from, struct.Struct(order + "Q").unpack_from
        self.scalars = {kind: struct.Struct(order + fmt).unpack_from for kind, fmt in SCALARS.items()}

    def take(self, n: int) -> int:
        """Move past n bytes; -> where they start."""
        start = self.pos
        if n > len(self.data) - start:
            raise EOFError
        self.pos = start + n
        return start

    def uint(self, size: int) -> int:
        start = self.take(size)
        return (self.u32 if size == 4 else self.u64)(self.data, start)[0]

    def string(self) -> bytes:
        n = self.uint(8)
        start = self.take(n)
        return self.data[start:start + n]

    def scalar(self, kind: int):
        return self.scalars[kind](self.data, self.take(FIXED[kind]))[0]

    def numbers(self, kind: int, count: int) -> np.ndarray:
        start = self.take(FIXED[kind] * count)
        return np.frombuffer(self.data, NUMPY[kind].newbyteorder(self.order), count, start)

    def strings(self, count: int, cap: int, key: str, source: str) -> list[bytes]:
        """count strings of at most `cap` bytes each, in one loop (the hot path: ~100k tokens and merges)."""
        data, pos, unpack = self.data, self.pos, self.u64
        out = []
        append = out.append
        try:
            for _ in range(count):
                n = unpack(data, pos)[0]
                if n > cap:
                    raise CheckpointError(f"{source}: {key} holds a string of {n:,} bytes; at most {cap:,} per "
                                          "entry (real tokens are a few hundred at most)")
                pos += 8
                append(data[pos:pos + n])  # a slice past the end comes back short: the check below sees it
                pos += n
        except struct.error:
            raise EOFError from None
        if pos > len(data):
            raise EOFError
        self.pos = pos
        return out


class _Walk:
    """One pass over the metadata, checking the caps as it goes (strings: the running count over all arrays)."""

    def __init__(self, cursor: _Cursor, caps: Caps, source: str):
        self.c, self.caps, self.source, self.strings = cursor, caps, source, 0

    def value(self, key: str, kind: int, depth: int = 0) -> Field:
        c = self.c
        if kind in SCALARS:
            return Field(key, (kind,), 1, c.scalar(kind))
        if kind == STRING:
            return Field(key, (kind,), 1, c.string())
        if kind != ARRAY:
            raise _Unreadable(f"{safe_name(key)} has value type {kind}, which GGUF does not define")
        if depth >= MAX_DEPTH:
            raise _Unreadable(f"{safe_name(key)} nests arrays more than {MAX_DEPTH} deep")
        sub, count = c.uint(4), c.uint(8)
        name = safe_name(key)
        if count > self.caps.array:
            raise CheckpointError(f"{self.source}: {name} is an array of {count:,} entries; attnlab reads at most "
                                  f"{self.caps.array:,} (the largest real vocabularies have ~260,000 tokens)")
        if sub in SCALARS:
            return Field(key, (ARRAY, sub), count, c.numbers(sub, count))
        if sub == STRING:
            self.strings += count
            if self.strings > self.caps.strings:
                raise CheckpointError(f"{self.source}: its metadata arrays hold more than {self.caps.strings:,} "
                                      f"strings (at {name}); attnlab reads at most that many")
            return Field(key, (ARRAY, STRING), count, c.strings(count, self.caps.string_bytes, name, self.source))
        if sub != ARRAY:
            raise _Unreadable(f"{name} is an array of value type {sub}, which GGUF does not define")
        if count * 12 > len(c.data) - c.pos:  # an array takes 12 bytes at least: a count the file cannot hold
            raise EOFError
        items = [self.value(key, ARRAY, depth + 1) for _ in range(count)]
        return Field(key, (ARRAY, *(items[0].types if items else (ARRAY,))), count, items)


def _tensor(c: _Cursor, data_start: int, info) -> Tensor:
    """A tensor's view into the map, after checking its type, its sizes and that its bytes lie in the file."""
    raw_name, dims, kind, offset = info
    try:
        name = raw_name.decode("utf-8")
    except UnicodeDecodeError:
        raise _Unreadable("a tensor's name is not UTF-8 text") from None
    if kind not in GGML_TYPES:
        raise _Unreadable(f"tensor {safe_name(name)} has type {kind}, which ggml does not define")
    type_name, block, size = GGML_TYPES[kind]
    if dims and dims[0] % block:
        raise _Unreadable(f"tensor {safe_name(name)}'s rows of {dims[0]} values are not whole {type_name} blocks "
                          f"of {block}")
    n = math.prod(int(d) for d in dims)  # Python ints: no overflow, and ~100x quicker than numpy's for a few
    n_bytes = n // block * size
    start = data_start + offset
    if start + n_bytes > len(c.data):
        raise _Unreadable(f"tensor {safe_name(name)} ends past the end of the file (cut short?)")
    shape = dims[::-1]
    if type_name in ELEMENTS:
        dtype, count = np.dtype(ELEMENTS[type_name]).newbyteorder(c.order), n
    else:
        dtype, count = np.dtype(np.uint8), n_bytes
        shape = (*shape[:-1], shape[-1] // block * size) if shape else (n_bytes,)
    data = np.frombuffer(c.data, dtype, count, start).reshape(shape)
    return Tensor(name, kind, dims, start, n_bytes, data)


def _parse(data, caps: Caps, source: str) -> GGUFFile:
    if len(data) < 24 or data[:4] != b"GGUF":
        raise _Unreadable("no GGUF magic at its start")
    orders = [o for o in "<>" if struct.unpack_from(o + "I", data, 4)[0] in VERSIONS]
    if not orders:
        raise _Unreadable(f"version {struct.unpack_from('<I', data, 4)[0]}; attnlab reads GGUF versions 2 and 3")
    c = _Cursor(data, orders[0])
    c.pos = 4
    version, n_tensors, n_keys = c.uint(4), c.uint(8), c.uint(8)
    if n_keys * 13 > len(data):  # a key takes 13 bytes at least
        raise _Unreadable(f"its header declares {n_keys:,} metadata keys, more than its size can hold")
    if n_keys > caps.keys:
        raise CheckpointError(f"{source}: its header declares {n_keys:,} metadata keys; attnlab reads at most "
                              f"{caps.keys:,}")
    walk, fields = _Walk(c, caps, source), {}
    for _ in range(n_keys):
        raw = c.string()
        try:
            key = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _Unreadable("a metadata key is not UTF-8 text") from None
        if key in fields:
            raise _Unreadable(f"the key {safe_name(key)} appears twice")
        fields[key] = walk.value(key, c.uint(4))
    if n_tensors * 24 > len(data) - c.pos:  # a tensor's entry takes 24 bytes at least
        raise _Unreadable(f"its header declares {n_tensors:,} tensors, more than its size can hold")
    infos = []
    for _ in range(n_tensors):
        name, n_dims = c.string(), c.uint(4)
        if n_dims * 8 > len(data) - c.pos:
            raise EOFError
        infos.append((name, tuple(c.uint(8) for _ in range(n_dims)), c.uint(4), c.uint(8)))
    alignment = fields.get("general.alignment")
    if alignment is not None:
        if alignment.types != (UINT32,):
            raise _Unreadable(f"general.alignment is {spelled(alignment.types)}; GGUF stores it as uint32")
        if alignment.raw == 0 or alignment.raw & (alignment.raw - 1):
            raise _Unreadable(f"general.alignment is {alignment.raw}, not a power of two")
    align = alignment.raw if alignment is not None else DEFAULT_ALIGNMENT
    data_start = -(-c.pos // align) * align
    tensors, names = [], set()
    for info in infos:
        t = _tensor(c, data_start, info)
        if t.name in names:
            raise _Unreadable(f"the tensor {safe_name(t.name)} appears twice")
        names.add(t.name)
        tensors.append(t)
    return GGUFFile(fields, tensors, version, align)


def open_gguf(path, caps: Caps, source: str | None = None) -> GGUFFile:
    """The metadata and tensor table of the GGUF file at `path` (a memory map the tensors' views keep open);
    one CheckpointError naming the file (`source`) for a file that is not GGUF, is cut short, or exceeds `caps`."""
    source = source or str(path)
    with open(Path(path), "rb") as f:
        try:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            raise CheckpointError(f"{source} is not a readable GGUF file (it is empty)") from None
    try:
        return _parse(data, caps, source)
    except _Unreadable as exc:
        raise CheckpointError(f"{source} is not a readable GGUF file ({exc})") from None
    except EOFError:
        raise CheckpointError(f"{source} is not a readable GGUF file (it ends inside its header: cut short?)"
                              ) from None


# ------------------------------------------------------------------------------------------------ gguf.GGUFReader
def as_gguf_file(reader) -> GGUFFile:
    """A GGUFFile as it is, or the same view of a gguf.GGUFReader (which benchmarks and tests pass in): its fields
    (less the header's own GGUF.* entries) and tensors in this module's form."""
    if isinstance(reader, GGUFFile):
        return reader
    fields = {}
    for key, f in reader.fields.items():
        if key.startswith("GGUF.") and f.offset < 24:  # the version and counts, which are no keys of the file
            continue
        types = tuple(int(t) for t in f.types)
        count = len(f.data) if types[0] == ARRAY else 1
        if types[0] == STRING:
            raw = bytes(f.parts[-1])
        elif types[0] != ARRAY:
            raw = f.parts[-1].tolist()[0]
        elif len(types) == 1:  # an empty array: gguf.GGUFReader does not keep its entries' type
            types, raw = (ARRAY, ARRAY), []
        elif types[1] == STRING:
            raw = [bytes(f.parts[i]) for i in f.data]
        elif types[1] == ARRAY:
            raw = None
        else:
            raw = np.array([f.parts[i][0] for i in f.data], dtype=NUMPY[types[1]])
        fields[key] = Field(key, types, count, raw)
    tensors = [Tensor(t.name, int(t.tensor_type), tuple(int(n) for n in t.shape), int(t.data_offset),
                      int(t.n_bytes), t.data) for t in reader.tensors]
    return GGUFFile(fields, tensors, int(reader.fields["GGUF.version"].parts[0][0]), int(reader.alignment))
