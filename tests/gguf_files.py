"""GGUF files for tests, written with the `gguf` package itself: a copy of a file with some tensors changed,
dropped or quantized, and a tiny LLaMA whose matrices are Q4_0 / Q4_1 / Q8_0 blocks (and a tied Q8_0 embedding).
Shared by tests/test_quantize.py, tests/test_quantized_checkpoints.py, tests/parity/test_parity_bad_input.py,
tests/parity/test_parity_gguf.py and tests/reliability/test_untrusted_files.py; typed_gguf (a tiny LLaMA of given
GGUF types, K-quants included) by tests/test_gguf_round_trip.py and tests/test_gguf_mixed_parts.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

import attnlab

KINDS = {"attn_q": "Q4_0", "attn_k": "Q4_0", "attn_v": "Q4_0", "ffn_gate": "Q4_1", "ffn_up": "Q4_1",
         "ffn_down": "Q4_1", "attn_output": "Q8_0", "token_embd": "Q8_0"}


def config():
    return attnlab.presets["tiny-llama"].replace(d_ff=128, n_layers=2, tie_embeddings=True)


def rewrite_gguf(source: Path, path: Path, tensor: Callable[[str, np.ndarray], object] = lambda name, values: values,
                 *, fields: dict | None = None, more: Callable[[object], None] | None = None) -> Path:
    """Copy source's LLaMA fields and tensors to path; tensor(name, values) gives each tensor's new contents:
    None drops it, an array is written as it is, (raw bytes, GGMLQuantizationType) is written quantized. fields
    {"llama.key": value} replaces those fields' values (the shape a hostile file may claim); more(writer) adds
    metadata after the LLaMA fields (a tokenizer, say)."""
    from gguf import GGUFReader, GGUFWriter

    reader = GGUFReader(str(source))
    writer = GGUFWriter(str(path), "llama")
    for key, field in reader.fields.items():
        if key.startswith("llama."):
            value = (fields or {}).get(key, field.contents())
            (writer.add_uint32 if isinstance(value, int) else writer.add_float32)(key, value)
    if more is not None:
        more(writer)
    for t in reader.tensors:
        new = tensor(t.name, np.array(t.data).reshape(tuple(int(n) for n in reversed(t.shape))))
        if isinstance(new, tuple):
            writer.add_tensor(t.name, new[0], raw_dtype=new[1])
        elif new is not None:
            writer.add_tensor(t.name, new)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_quantized_gguf(folder: Path, keep_float: str | None = None) -> Path:
    """folder/q.gguf from a seeded tiny LLaMA; tensors whose name contains `keep_float` stay F32."""
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize

    from attnlab.interop import gguf as G

    torch.manual_seed(0)
    plain = G.save_gguf(attnlab.build_model(config()).eval(), folder / "plain.gguf")

    def blocks(name, values):
        kind = next((k for part, k in KINDS.items() if part in name), None)
        if kind is None or values.ndim != 2 or (keep_float is not None and keep_float in name):
            return values
        return quantize(values, GGMLQuantizationType[kind]), GGMLQuantizationType[kind]
    return rewrite_gguf(plain, folder / "q.gguf", blocks)


def typed_gguf(folder: Path, name: str, types: dict[int, dict[str, str]], embedding: str | None, n_layers: int,
               kquant_blocks: Callable[[str, int, int, int], np.ndarray], *,
               more: Callable[[object], None] | None = None) -> Path:
    """folder/name: a seeded tiny LLaMA (d_model 256: K-quants need input widths of 256) whose tied embedding is of
    GGUF type `embedding` (None: float) and whose blk.N.<part> matrices are of types[N][part] (the others stay
    float). The gguf package quantizes the types it can; it cannot quantize to K-quants, so their blocks are
    kquant_blocks(kind, rows, cols, seed), raw bytes of that type (a new seed per tensor)."""
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize

    from attnlab.interop import gguf as G

    shape = attnlab.presets["tiny-llama"].replace(d_model=256, d_ff=512, n_layers=n_layers, tie_embeddings=True)
    torch.manual_seed(0)
    plain = G.save_gguf(attnlab.build_model(shape).eval(), folder / "plain.gguf")
    seeds = iter(range(1000))

    def blocks(tensor, values):
        parts = tensor.split(".")
        kind = embedding if tensor == "token_embd.weight" else \
            types[int(parts[1])].get(parts[2]) if parts[0] == "blk" and parts[-1] == "weight" else None
        if kind is None or values.ndim != 2:
            return values
        if kind.endswith("_K"):
            return kquant_blocks(kind, values.shape[0], values.shape[1], next(seeds)), GGMLQuantizationType[kind]
        return quantize(np.ascontiguousarray(values, dtype=np.float32), GGMLQuantizationType[kind]), \
            GGMLQuantizationType[kind]
    return rewrite_gguf(plain, folder / name, blocks, more=more)


def rewrite_metadata(source: Path, path: Path, changes: dict) -> Path:
    """Copy source to path with every metadata key kept in its order and type, and its tensors' bytes as they are,
    except changes: {key: None} drops a key, {key: (value, GGUFValueType[, sub type])} sets or adds one (an array
    needs its sub type)."""
    from gguf import GGUFReader, GGUFValueType, GGUFWriter

    reader = GGUFReader(str(source))
    writer = GGUFWriter(str(path), str(reader.fields["general.architecture"].contents()))
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture" or key in changes:
            continue  # the header's own counts, and the key the writer adds itself
        kind = field.types[0]
        writer.add_key_value(key, field.contents(), kind, sub_type=field.types[-1] if kind == GGUFValueType.ARRAY
                             else None)
    for key, change in changes.items():
        if change is not None:
            writer.add_key_value(key, *change)
    for t in reader.tensors:
        data = np.array(t.data)
        writer.add_tensor(t.name, data, raw_shape=data.shape, raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
