"""GGUF files for tests, written with the `gguf` package itself: a copy of a file with some tensors changed,
dropped or quantized, and a tiny LLaMA whose matrices are Q4_0 / Q4_1 / Q8_0 blocks (and a tied Q8_0 embedding).
Shared by tests/test_quantize.py, tests/test_quantized_checkpoints.py and tests/parity/test_parity_bad_input.py."""

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


def rewrite_gguf(source: Path, path: Path, tensor: Callable[[str, np.ndarray], object]) -> Path:
    """Copy source's LLaMA fields and tensors to path; tensor(name, values) gives each tensor's new contents:
    None drops it, an array is written as it is, (raw bytes, GGMLQuantizationType) is written quantized."""
    from gguf import GGUFReader, GGUFWriter

    reader = GGUFReader(str(source))
    writer = GGUFWriter(str(path), "llama")
    for key, field in reader.fields.items():
        if key.startswith("llama."):
            value = field.contents()
            (writer.add_uint32 if isinstance(value, int) else writer.add_float32)(key, value)
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
