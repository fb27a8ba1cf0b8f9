"""The bytes a loaded model's weights take as it holds them: kept GGUF blocks (Q4_1, Q8_0), attnlab's int8 and int4,
or plain floats, each tensor counted once (a tied embedding and head share their codes).

Why: attnlab.cost counts every number at the dtype it is given (float32 by default), but SmolLM2 as the explorer
loads it keeps its file's 4-bit and 8-bit blocks: a decoding step reads 4.5-8.5 bits per weight, not 32, and the
roofline places it from those bytes. The formats' layouts are attnlab/layers/quantized.py's: per 32 weights Q4_1
and int4 hold 16 bytes of codes + a float16 scale and min (5 bits per weight), Q8_0 32 bytes + a float16 scale
(8.5), int8 one byte per weight + one float32 scale per output row.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from attnlab.layers.quantized import QuantizedEmbedding, QuantizedLinear


def _add(rows: dict[str, list[int]], fmt: str, numbers: int, size: int) -> None:
    row = rows.setdefault(fmt, [0, 0])
    row[0] += numbers
    row[1] += size


def held_weights(model: nn.Module) -> dict[str, Any]:
    """{"formats": [{"format", "weights", "bytes", "bits_per_weight"}], "bytes", "weights", "float32_bytes",
    "matmul": {"weights", "bytes"}}: every parameter and weight buffer by the format it is held in; "matmul"
    the weight matrices a decoding step multiplies by (every Linear, kept-quantized or not, and a tied head's
    matrix read through the embedding), the bytes a step reads for its weights."""
    seen: set[int] = set()
    rows: dict[str, list[int]] = {}
    matmul = [0, 0]
    linear_ptrs: set[int] = set()
    for module in model.modules():
        if isinstance(module, (QuantizedLinear, QuantizedEmbedding)):
            buffers = module.buffers_dict()
            ptr = buffers["qweight"].data_ptr()
            if isinstance(module, QuantizedLinear):
                numbers = module.in_features * module.out_features
                if ptr not in linear_ptrs:
                    linear_ptrs.add(ptr)
                    matmul[0] += numbers
                    matmul[1] += sum(b.nbytes for b in buffers.values())
            else:
                numbers = module.num_embeddings * module.embedding_dim
            if ptr in seen:
                continue
            seen.update(b.data_ptr() for b in buffers.values())
            _add(rows, module.format, numbers, sum(b.nbytes for b in buffers.values()))
        elif isinstance(module, nn.Linear) and module.weight.data_ptr() not in linear_ptrs:
            linear_ptrs.add(module.weight.data_ptr())
            matmul[0] += module.weight.numel()
            matmul[1] += module.weight.nbytes
    for p in model.parameters():
        if p.data_ptr() in seen:
            continue
        seen.add(p.data_ptr())
        _add(rows, str(p.dtype).replace("torch.", ""), p.numel(), p.nbytes)
    weights = sum(r[0] for r in rows.values())
    formats = [{"format": fmt, "weights": n, "bytes": size, "bits_per_weight": round(8 * size / n, 3) if n else None}
               for fmt, (n, size) in sorted(rows.items(), key=lambda kv: -kv[1][1])]
    return {"formats": formats, "weights": weights, "bytes": sum(r[1] for r in rows.values()),
            "float32_bytes": 4 * weights, "matmul": {"weights": matmul[0], "bytes": matmul[1]}}
