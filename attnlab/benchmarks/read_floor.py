"""The memory floor under decoding: how fast this machine reads memory on one and on two cores, and how many bytes
of weights one decoding step reads, so that a tokens/s figure can be set against what the memory allows.

Why: a decoding step of a small quantized model reads every weight once (SmolLM2's Q4_1 file: ~96 MB a token)
and does little arithmetic on each byte, so no program decodes faster than read rate / bytes per token. Printing
each contestant's fraction of that floor says how much room is left, which a ratio against llama.cpp alone hides.
The read rate is torch's sum over a float32 tensor far larger than the caches (256 MB), the median of a few
rounds (decode_step.read_bandwidth, which the decode-step benchmark's floor uses too).
"""

from __future__ import annotations

import time

import torch

MEGABYTES = 256
ROUNDS = 5


def read_rate(threads: int, megabytes: int = MEGABYTES, rounds: int = ROUNDS) -> float:
    """GB/s that torch.sum reads a `megabytes` float32 tensor at `threads` threads: decode_step's read pass (the
    median of `rounds`) under that thread count."""
    from attnlab.benchmarks.decode_step import read_bandwidth
    from attnlab.threads import using_threads

    with using_threads(threads):
        return read_bandwidth(time.perf_counter, megabytes * 2**20, rounds)


def weight_bytes_per_token(model) -> int:
    """Bytes of weights one decoding step reads: every parameter and quantized buffer, except the token embedding
    tables (a step reads one row of them; a tied head is counted as the head's own quantized copy, or as the
    float table the head multiplies by). A matrix in one of GGUF's block formats counts the bytes of its blocks
    (`matrix_bytes`), not attnlab's buffers."""
    from attnlab.layers.quantized import QuantizedEmbedding, QuantizedLinear

    head = getattr(model, "lm_head", None)
    tied_float = head is not None and not any(isinstance(m, QuantizedLinear) for m in head.modules()) and \
        getattr(model.config, "tie_embeddings", False)
    total = 0
    for module in model.modules():
        if isinstance(module, QuantizedLinear):
            total += matrix_bytes(module) + (module.bias.nbytes if module.bias is not None else 0)
        elif isinstance(module, (torch.nn.Embedding, QuantizedEmbedding)):
            total += sum(p.nbytes for p in module.parameters(recurse=False)) if tied_float else 0
        else:
            total += sum(p.nbytes for p in module.parameters(recurse=False))
    return total


def matrix_bytes(layer) -> int:
    """A QuantizedLinear's weight bytes for the floor: in a GGUF block format (interop.gguf.ROW_BYTES), its blocks'
    bytes, which a GGUF file holds and any program decoding it must read: Q4_K 144 bytes per 256 weights, where
    attnlab's buffers keep float32 scales and mins (0.75 bytes a weight) and its kernel reads tiles of 0.578 (Q6_K:
    0.82 in the file, 1.25 in the buffers and tiles). Counting the buffers made the floor of a K-quant file lower
    than what the bytes allow, and every contestant's fraction of it higher. attnlab's own formats (int8, int4):
    their buffers. A Q5_0 matrix that attnlab reads as Q8_0 rows (beside Q8_0 parts of a fused matrix) counts as
    Q8_0: 34 bytes per 32 weights where the file holds 22."""
    from attnlab.interop.gguf import ROW_BYTES

    if layer.format not in ROW_BYTES:
        return layer.nbytes
    per, size = ROW_BYTES[layer.format]
    return layer.out_features * (-(-layer.in_features // per)) * size


def floor_line(model, threads: tuple[int, ...]) -> tuple[str, dict[int, float]]:
    """(a line naming each thread count's read rate and the tokens/s floor it sets, {threads: floor tokens/s})."""
    per_token = weight_bytes_per_token(model)
    rates = {t: read_rate(t) for t in threads}
    floors = {t: rates[t] * 1e9 / per_token for t in threads}
    parts = ", ".join(f"{t} core{'s' if t > 1 else ''} {rates[t]:.1f} GB/s -> {floors[t]:.0f} tokens/s"
                      for t in threads)
    return (f"memory floor: a step reads {per_token / 1e6:.1f} MB of weights; this machine reads ({MEGABYTES} MB "
            f"torch.sum, median of {ROUNDS}) {parts}"), floors
