"""GGUF block types that attnlab keeps by converting their bytes at load (layers/quantized.py's formats):

- Q4_K -> "q4_k": each 32-input sub-block of a 256-input super-block becomes a Q4_1-like block, codes in Q4_1's
  nibble order (byte j: input j low, input j + 16 high; Q4_K's 64-input chunks hold one sub-block in the low
  nibbles of 32 bytes and the next in their high nibbles), scale d sc_j and min -dmin m_j as float32 (exact: a
  float16 times a 6-bit integer). layers/q4_k_kernel.py multiplies them.
- Q6_K -> "q6_k": codes q - 32 as int8, scale d sc_j per 16 inputs as float32 (exact: a float16 times an int8).
  layers/q6_k_kernel.py multiplies them.
- Q5_0 -> "q5_0": its blocks' code bytes as they are and d (layers/q5_0_kernel.py, AVX-512 VNNI). Where that
  kernel cannot run, and in a fused matrix beside Q8_0 parts (llama-quantize's Q4_K_M mixes them in Q/K/V), the
  GGUF reader turns Q5_0 rows into Q8_0 rows of the same numbers (q5_0_as_q8_0_rows: w = d (q - 16), codes q - 16
  as int8), which Q8_0's kernels serve (1.0625 bytes a weight against Q5_0's 0.6875).

Each decoder takes a tensor's raw rows (n, bytes per row) uint8 and gives the buffers; tests/test_kquants.py checks
the weights they stand for against the `gguf` package's own dequantize, bit for bit.
"""

from __future__ import annotations

import torch

SUPER = 256  # inputs per K-quant super-block
BYTES = {"q4_k": 144, "q6_k": 210, "q5_0": 22, "q5_1": 24, "q5_k": 176}  # per block (K-quants: 256 inputs, else 32)
MODULE_FORMAT = {"q4_k": "q4_k", "q6_k": "q6_k", "q5_0": "q5_0", "q5_1": "q5_1", "q5_k": "q5_k"}  # the module's


def _blocks(raw: torch.Tensor, kind: str) -> torch.Tensor:
    n, width = raw.shape
    if width % BYTES[kind]:
        raise ValueError(f"{kind}: rows of {width} bytes are not whole blocks of {BYTES[kind]}")
    return raw.reshape(n, width // BYTES[kind], BYTES[kind])


def _half(b: torch.Tensor) -> torch.Tensor:
    """(..., 2) uint8 -> (...) float16 (little-endian bytes)."""
    return b.contiguous().view(torch.float16)[..., 0]


def q4_k(raw: torch.Tensor) -> dict[str, torch.Tensor]:
    """Q4_K rows -> {"qweight": (n, k/2) uint8, "scale": (n, k/32) float32, "min": (n, k/32) float32}."""
    b = _blocks(raw, "q4_k")
    n, nsb = b.shape[:2]
    scale, minimum = _k_scales(b)  # exact in float32
    qs = b[..., 16:].reshape(n, nsb, 4, 32)  # 4 chunks of 64 inputs: sub-block 2c low nibbles, 2c + 1 high
    first, second = qs[..., :16], qs[..., 16:]  # bytes holding inputs j and j + 16 of each sub-block
    lo = (first & 15) | ((second & 15) << 4)  # sub-block 2c in Q4_1's order
    hi = (first >> 4) | (second & 0xF0)  # sub-block 2c + 1
    codes = torch.stack((lo, hi), dim=3)  # (n, nsb, 4, 2, 16)
    return {"qweight": codes.reshape(n, -1), "scale": scale.reshape(n, -1).contiguous(),
            "min": minimum.reshape(n, -1).contiguous()}


def q6_k(raw: torch.Tensor) -> dict[str, torch.Tensor]:
    """Q6_K rows -> {"qweight": (n, k) int8 q - 32, "scale": (n, k/16) float32 d sc}."""
    b = _blocks(raw, "q6_k")
    n, nsb = b.shape[:2]
    ql = b[..., :128].reshape(n, nsb, 2, 64)  # per 128 inputs: input v's low 4 bits in byte v % 64, nibble v // 64
    qh = b[..., 128:192].reshape(n, nsb, 2, 32)  # its high 2 bits in byte v % 32, bits 2 (v // 32)
    sc = b[..., 192:208].contiguous().view(torch.int8)  # (n, nsb, 16)
    d = _half(b[..., 208:210]).float()
    low = torch.stack((ql & 15, ql >> 4), dim=3).reshape(n, nsb, 2, 128)
    high = torch.stack([(qh >> s) & 3 for s in (0, 2, 4, 6)], dim=3).reshape(n, nsb, 2, 128)
    q = ((low | (high << 4)).view(torch.int8) - 32).reshape(n, -1)  # 0..63 fits int8
    scale = (d[..., None] * sc.float()).reshape(n, -1)  # exact in float32
    return {"qweight": q.contiguous(), "scale": scale.contiguous()}


def q5_0(raw: torch.Tensor) -> dict[str, torch.Tensor]:
    """Q5_0 rows -> Q8_0's buffers {"qweight": (n, k) int8 q - 16, "scale": (n, k/32) float16 d}."""
    b = _blocks(raw, "q5_0")
    n, nb = b.shape[:2]
    d = _half(b[..., 0:2])
    qh = b[..., 2:6].long()
    bits = qh[..., 0] | (qh[..., 1] << 8) | (qh[..., 2] << 16) | (qh[..., 3] << 24)  # little-endian uint32
    fifth = ((bits[..., None] >> torch.arange(32)) & 1).to(torch.uint8)  # (n, nb, 32): input j's bit 4
    qs = b[..., 6:22]
    q = torch.cat((qs & 15, qs >> 4), dim=-1) | (fifth << 4)  # inputs 0-15 low nibbles, 16-31 high
    return {"qweight": (q.view(torch.int8) - 16).reshape(n, -1).contiguous(), "scale": d.contiguous()}


def q5_0_kept(raw: torch.Tensor) -> dict[str, torch.Tensor]:
    """Q5_0 rows -> the "q5_0" format's buffers: {"qweight": (n, k/32 * 20) uint8, each block's 16 nibble bytes and
    its 4 bytes of fifth bits as the file holds them, "scale": (n, k/32) float16 d}."""
    b = _blocks(raw, "q5_0")
    n = b.shape[0]
    codes = torch.cat((b[..., 6:22], b[..., 2:6]), dim=-1)  # nibbles, then fifth bits
    return {"qweight": codes.reshape(n, -1).contiguous(), "scale": _half(b[..., 0:2]).contiguous()}


def q5_codes(qweight: torch.Tensor) -> torch.Tensor:
    """A 5-bit format's qweight (n, k/32 * 20: per block 16 nibble bytes, then 4 bytes of fifth bits) -> its codes
    q in 0..31, (n, k) uint8."""
    n = qweight.shape[0]
    b = qweight.reshape(n, -1, 20)
    h = b[..., 16:].long()
    bits = h[..., 0] | (h[..., 1] << 8) | (h[..., 2] << 16) | (h[..., 3] << 24)
    fifth = ((bits[..., None] >> torch.arange(32)) & 1).to(torch.uint8)
    return (torch.cat((b[..., :16] & 15, b[..., :16] >> 4), dim=-1) | (fifth << 4)).reshape(n, -1)


def q5_0_codes(qweight: torch.Tensor) -> torch.Tensor:
    """The "q5_0" format's qweight (n, k/32 * 20) -> its codes q - 16 (n, k) int8."""
    return q5_codes(qweight).view(torch.int8) - 16


def q5_1(raw: torch.Tensor) -> dict[str, torch.Tensor]:
    """Q5_1 rows (per block: float16 d, float16 m, 4 bytes of fifth bits, 16 nibble bytes) -> {"qweight": (n, k/32
    * 20) uint8 nibbles then fifth bits, "scale": (n, k/32) float16 d, "min": float16 m}."""
    b = _blocks(raw, "q5_1")
    n = b.shape[0]
    codes = torch.cat((b[..., 8:24], b[..., 4:8]), dim=-1)
    return {"qweight": codes.reshape(n, -1).contiguous(), "scale": _half(b[..., 0:2]).contiguous(),
            "min": _half(b[..., 2:4]).contiguous()}


def _k_scales(b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Q4_K / Q5_K super-blocks (n, nsb, bytes) -> (d sc, -dmin m), each (n, nsb, 8) float32 (exact)."""
    n, nsb = b.shape[:2]
    d, dmin = _half(b[..., 0:2]).float(), _half(b[..., 2:4]).float()  # (n, nsb)
    s = b[..., 4:16].reshape(n, nsb, 3, 4)
    low, mins, high = s[..., 0, :], s[..., 1, :], s[..., 2, :]  # bytes 0-3, 4-7, 8-11
    sc = torch.cat((low & 63, (high & 15) | ((low >> 2) & 0x30)), dim=-1)  # (n, nsb, 8): 6-bit scales
    m = torch.cat((mins & 63, (high >> 4) | ((mins >> 2) & 0x30)), dim=-1)  # 6-bit mins
    return d[..., None] * sc.float(), -(dmin[..., None] * m.float())


def q5_k(raw: torch.Tensor) -> dict[str, torch.Tensor]:
    """Q5_K rows -> {"qweight": (n, k/32 * 20) uint8 as "q5_1"'s, "scale": (n, k/32) float32 d sc, "min": float32
    -dmin m}. A super-block: d, dmin, 12 bytes of 6-bit scales and mins, 32 bytes qh (input l of sub-block j: bit
    j of qh[l]), 128 bytes qs (sub-block 2c: low nibbles of bytes 32c..32c+31, 2c + 1: their high nibbles)."""
    b = _blocks(raw, "q5_k")
    n, nsb = b.shape[:2]
    scale, minimum = _k_scales(b)
    qs = b[..., 48:].reshape(n, nsb, 4, 32)
    first, second = qs[..., :16], qs[..., 16:]
    lo = (first & 15) | ((second & 15) << 4)
    hi = (first >> 4) | (second & 0xF0)
    nibbles = torch.stack((lo, hi), dim=3).reshape(n, nsb, 8, 16)
    qh = b[..., 16:48]  # (n, nsb, 32)
    fifth = torch.stack([(qh >> j) & 1 for j in range(8)], dim=2)  # (n, nsb, 8 sub-blocks, 32 inputs)
    packed = (fifth.reshape(n, nsb, 8, 4, 8) << torch.arange(8, dtype=torch.uint8)).sum(-1, dtype=torch.uint8)
    codes = torch.cat((nibbles, packed), dim=-1)  # (n, nsb, 8, 20)
    return {"qweight": codes.reshape(n, -1).contiguous(), "scale": scale.reshape(n, -1).contiguous(),
            "min": minimum.reshape(n, -1).contiguous()}


def q5_0_as_q8_0_rows(raw: torch.Tensor) -> torch.Tensor:
    """Q5_0 rows -> Q8_0 rows of the same numbers (n, blocks * 34) uint8: read so at load, a fused matrix whose
    parts are Q5_0 and Q8_0 (llama-quantize's Q4_K_M falls back to both where a width is not a multiple of 256)
    concatenates as Q8_0 bytes and stays kept."""
    b = q5_0(raw)
    n = raw.shape[0]
    d = b["scale"].view(torch.uint8).reshape(n, -1, 2)
    return torch.cat((d, b["qweight"].view(torch.uint8).reshape(n, -1, 32)), dim=-1).reshape(n, -1)


DECODERS = {"q4_k": q4_k, "q6_k": q6_k, "q5_0": q5_0_kept, "q5_1": q5_1, "q5_k": q5_k}
