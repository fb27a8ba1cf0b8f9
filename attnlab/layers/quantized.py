"""Linear layers (and the tied token embedding) whose weights stay quantized in memory.

Formats (every one stores codes + scales as buffers, so state_dict, saving and `.to()` see them; a bias stays
float):
- "int8": attnlab's own, symmetric per output channel: w[n, k] = scale[n] * q[n, k], q in [-127, 127].
- "q8_0": GGUF's Q8_0, blocks of 32 along the input dimension: w = d[n, b] * q[n, k] (d float16).
- "q4_1": GGUF's Q4_1, blocks of 32: w = d[n, b] * q[n, k] + m[n, b], q in [0, 15], two codes per byte.
- "q4_0": GGUF's Q4_0, blocks of 32: w = d[n, b] * (q[n, k] - 8); stored as q4_1 with m = -8 d, which gives the
  same float32 numbers (d * q and 8 d are exact in float32, and so is their difference); its kernel's tiles hold
  the codes and d only, the file's 18 bytes per 32 weights (layers/q4_0_kernel.py).
- "int4": attnlab's own 4-bit scheme, which is Q4_1's (groups of 32, float16 scale and min): one layout, one kernel.
- "q4_k": GGUF's Q4_K, as Q4_1's layout with float32 scale d sc and min -dmin m per 32 inputs (exact; layers/kquants.py,
  layers/q4_k_kernel.py).
- "q6_k": GGUF's Q6_K, codes q - 32 as int8 with a float32 scale d sc per 16 inputs (exact; layers/q6_k_kernel.py).
- "q5_0": GGUF's Q5_0, each block's 20 code bytes as the file holds them and its float16 d (layers/q5_0_kernel.py;
  where that kernel cannot run, GGUF's Q5_0 loads as "q8_0", the same numbers).
- "q5_1", "q5_k": GGUF's Q5_1 (float16 d and m per 32) and Q5_K (float32 d sc and -dmin m per 32, exact), codes as
  "q5_0"'s: w = d q + m, q in 0..31 (layers/q5_1_kernel.py, q5_k_kernel.py).
Codes inside a 4-bit block are laid out like GGUF's (byte j holds value j in its low nibble, value j + 16 in its
high one), so a GGUF file's bytes become this module's buffers by a reshape.

The int8 product: which kernel, and why (measured on the project's Intel Xeon Sapphire Rapids, one thread,
768 x 3072, one row, 40 different matrices cycled so they come from memory; attnlab/benchmarks/quantized.py):
- float32 F.linear 0.88 ms (11 GB/s); int8 codes read at that bandwidth would take 0.21 ms (the floor);
- torch's weight-only int8 kernel `aten._weight_int8pack_mm` 2.9 ms (0.3x: it is slower than float32 here);
- a torch.compile'd dequantise-and-multiply 0.50 ms (1.7x; inductor emits one serial vector accumulator per row,
  latency-bound), and ~18 s of compilation per shape;
- fbgemm's dynamically quantized product (`torch.ops.quantized.linear_dynamic` on a weight prepacked by
  `linear_prepack`; both ops are in torch core, unlike the deprecated torch.ao Python API) 0.28 ms, 3.1x faster
  than float32 and 1.1-1.4x of the floor, plus ~15 us of fixed cost per call. It rounds the activation row to
  uint8 too (W8A8) with one scale per call, which LLaMA-like activations do not survive: SmolLM2's rows span
  100-400x their median magnitude (outlier channels), and a single 8-bit pass gave logits 4-16% off float32
  (relative L2; weight-only int8: 2-6%). So each row is its own call (its own scale), and a row whose range
  exceeds RESIDUAL_RATIO x its mean |x| also multiplies its rounding residual (at most half a step per channel)
  in a second call: ~16-bit activations at twice the time for those rows (most of SmolLM2's). LLM.int8()'s split
  of outlier columns was tried first: SmolLM2 has too many outlier channels for a 16-column split to help.
- attnlab's own kernel (layers/int8_kernel.py: AVX512-VNNI, ~60 lines of C++ built once into attnlab's private
  cache folder by layers/kernel_build.py) 0.94-1.13x of the floor, 1.3 us fixed cost per call, and it rounds x
  to two 8-bit pieces (~15 bits) in every call, so outlier rows need no second pass. Shipped where the CPU has
  VNNI, and its AVX2 variant where it has AVX2 (faster than fbgemm there too: int8_kernel's docstring); fbgemm
  elsewhere.
So few-row products (<= FAST_ROWS rows, no autograd, CPU, float32) use that kernel (or fbgemm) with a packed
weight made on first use and cached like Linear's decode copy (not a buffer; +1 byte per weight while kept);
more rows (prefill) and other devices multiply by the dequantized float weight (weight-only, exact to float32
rounding of w). On CUDA that is F.linear in the activation's dtype (untested here: no GPU was lent).

The 4-bit products of few rows run attnlab's 4-bit kernel (layers/int4_kernel.py: AVX-512 VNNI 0.99-1.05x of the
weight-reading floor, 5.6-6.5x faster than float32 per matrix; an AVX2 variant on CPUs without AVX-512, 3.7-5.3x
faster than float32 on an AMD Zen 3), and Q8_0's (SmolLM2's tied embedding / head) run layers/q8_0_kernel.py,
built the same way. 4-bit and Q8_0 products of more rows (a prompt's prefill, the explorer's sweeps and logit
lens at SmolLM2's tied head; up to MANY_ROWS) go through the same tiles with the kernel's rows_product, each tile
read once for 16 rows and every row rounded as a decoding step rounds it (~15 bits), instead of dequantizing the
whole matrix to float32 per call. int8 products of up to ROW_BY_ROW rows call the one-row kernel once per row,
for the same reason: 2-10x faster than writing the dequantized matrix first, and each row
rounded as a decoding step rounds it. Elsewhere few-row products dequantize
CHUNK weights (whole output rows, 1 MB of float32) at a time into a
reused buffer and multiply each chunk while it is still in L2 (its codes are read once): correct and bounded
in memory, but 3-3.5x SLOWER than float32 on this CPU (the unpacking passes cost more than the bytes they
save; torch's `_weight_int4pack_mm_for_cpu` was 5.3 ms at 768 x 3072 against float32's 0.85 ms).

While attnlab's kernels are being built apart (a user's first `attnlab generate`: layers/kernel_build.py, DEFER),
the few-row and prefill products of the layers without their kernel multiply by a dequantized float32 weight made
once per layer and kept for the process (the stand-in, _stand_in), up to KEPT_LIMIT bytes in all; past it, and in
every other process without a kernel, they dequantize in chunks as above. Why: chunked dequantization rewrites every
weight at every step, 10x F.linear's time on the kept weight (SmolLM2's 1536 x 576 Q4_1 up projection, one row,
one thread, AMD EPYC Zen 5: 0.75 ms against 0.07; torch's `_weight_int4pack_mm_for_cpu` 1.5 ms, 2026-12-07), and
was most of a first run's CPU time; the kept weights cost 4 bytes per weight while the process lives (SmolLM2:
~0.5 GB), for that one run.
"""

from __future__ import annotations

import functools
import math
import weakref

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.layers import (
    int4_kernel,
    int8_kernel,
    kernel_build,
    kernel_threads,
    kernel_variants,
    kquants,
    q4_0_kernel,
    q4_k_kernel,
    q5_0_kernel,
    q5_1_kernel,
    q5_k_kernel,
    q6_k_kernel,
    q8_0_kernel,
)

BLOCK = 32  # values per GGUF block / attnlab int4 group
FORMATS = ("int8", "q8_0", "int4", "q4_0", "q4_1", "q4_k", "q6_k", "q5_0", "q5_1", "q5_k")
ROWS_FORMATS = tuple(f for f in FORMATS if f != "int8")  # prefill products by their kernel's rows_product
KEPT = [0]  # bytes of stand-in weights (QuantizedLinear._stand_in) alive in this process
KERNELS = {"int8": int8_kernel, "int4": int4_kernel, "q4_0": q4_0_kernel, "q4_1": int4_kernel,  # one-row products
           "q8_0": q8_0_kernel, "q4_k": q4_k_kernel, "q6_k": q6_k_kernel, "q5_0": q5_0_kernel,
           "q5_1": q5_1_kernel, "q5_k": q5_k_kernel}
NO_MIN = ("int8", "q8_0", "q6_k", "q5_0")  # formats of codes and scales only


def _zeros(n: int, k: int, fmt: str, device=None) -> dict[str, torch.Tensor]:
    """Empty buffers of one format for an (n, k) weight."""
    if fmt == "int8":
        return {"qweight": torch.zeros(n, k, dtype=torch.int8, device=device),
                "scale": torch.zeros(n, dtype=torch.float32, device=device)}
    blocks = k // BLOCK
    if fmt in ("q5_0", "q5_1", "q5_k"):  # per block: 16 nibble bytes and 4 bytes of fifth bits
        dtype = torch.float32 if fmt == "q5_k" else torch.float16
        out = {"qweight": torch.zeros(n, blocks * 20, dtype=torch.uint8, device=device),
               "scale": torch.zeros(n, blocks, dtype=dtype, device=device)}
        if fmt != "q5_0":
            out["min"] = torch.zeros(n, blocks, dtype=dtype, device=device)
        return out
    if fmt in ("q8_0", "q6_k"):  # Q6_K: a float32 scale per 16 inputs
        per, dtype = (BLOCK, torch.float16) if fmt == "q8_0" else (BLOCK // 2, torch.float32)
        return {"qweight": torch.zeros(n, k, dtype=torch.int8, device=device),
                "scale": torch.zeros(n, k // per, dtype=dtype, device=device)}
    dtype = torch.float32 if fmt == "q4_k" else torch.float16
    return {"qweight": torch.zeros(n, k // 2, dtype=torch.uint8, device=device),
            "scale": torch.zeros(n, blocks, dtype=dtype, device=device),
            "min": torch.zeros(n, blocks, dtype=dtype, device=device)}


def check_format(fmt: str, in_features: int) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"unknown quantized format {fmt!r}; known: {', '.join(FORMATS)}")
    if fmt != "int8" and in_features % BLOCK:
        raise ValueError(f"format {fmt!r} needs an input width divisible by {BLOCK}, got {in_features}")


# ------------------------------------------------------------------------------------ quantize / dequantize
def quantize_weight(w: torch.Tensor, fmt: str) -> dict[str, torch.Tensor]:
    """float (n, k) -> the buffers of `fmt` ("int8": symmetric per row; "int4": groups of 32 with scale + min)."""
    w = w.detach().float()
    n, k = w.shape
    check_format(fmt, k)
    if fmt == "int8":
        scale = w.abs().amax(dim=1) / 127  # (n,)
        q = torch.round(w / torch.where(scale > 0, scale, 1)[:, None]).clamp(-127, 127).to(torch.int8)
        return {"qweight": q, "scale": scale}
    if fmt != "int4":
        raise ValueError(f"attnlab quantizes to 'int8' or 'int4'; {fmt!r} comes from GGUF files only")
    g = w.reshape(n, k // BLOCK, BLOCK)
    lo, hi = g.amin(dim=-1), g.amax(dim=-1)  # (n, blocks)
    scale = ((hi - lo) / 15).half()
    low = lo.half()
    d = scale.float()
    q = torch.round((g - low.float()[..., None]) / torch.where(d > 0, d, 1)[..., None]).clamp(0, 15).to(torch.uint8)
    packed = q[..., : BLOCK // 2] | (q[..., BLOCK // 2:] << 4)  # (n, blocks, 16): GGUF's nibble order
    return {"qweight": packed.reshape(n, k // 2), "scale": scale, "min": low}


def unpack4(codes: torch.Tensor) -> torch.Tensor:
    """(n, k/2) uint8, GGUF nibble order -> (n, k/32, 32) uint8 codes in [0, 15]."""
    n = codes.shape[0]
    b = codes.reshape(n, -1, BLOCK // 2)
    return torch.cat((b & 0xF, b >> 4), dim=-1)


def dequantize(fmt: str, buffers: dict[str, torch.Tensor], dtype=torch.float32, out=None) -> torch.Tensor:
    """The (n, k) float weight `buffers` of `fmt` stand for (rows of them: the buffers may be row slices)."""
    q, scale = buffers["qweight"], buffers["scale"]
    n = q.shape[0]
    if fmt == "int8":
        w = q.to(dtype) * scale.to(dtype)[:, None]
    elif fmt == "q5_0":
        w = (kquants.q5_0_codes(q).reshape(n, -1, BLOCK).to(dtype) * scale.to(dtype)[..., None]).reshape(n, -1)
    elif fmt in ("q5_1", "q5_k"):
        codes = kquants.q5_codes(q).reshape(n, -1, BLOCK).to(dtype)
        w = torch.addcmul(buffers["min"].to(dtype)[..., None], codes, scale.to(dtype)[..., None]).reshape(n, -1)
    elif fmt in ("q8_0", "q6_k"):
        w = (q.reshape(n, scale.shape[1], -1).to(dtype) * scale.to(dtype)[..., None]).reshape(n, -1)
    else:
        codes = unpack4(q).to(dtype)
        w = torch.addcmul(buffers["min"].to(dtype)[..., None], codes, scale.to(dtype)[..., None]).reshape(n, -1)
    if out is not None:
        out.copy_(w)
        return out
    return w


def from_gguf_rows(raw: torch.Tensor, fmt: str) -> dict[str, torch.Tensor]:
    """GGUF row bytes (n, blocks * bytes_per_block) uint8 of Q8_0 / Q4_0 / Q4_1 -> this module's buffers; of Q4_K,
    Q6_K and Q5_0 (fmt "q4_k", "q6_k", "q5_0") -> those of kquants.MODULE_FORMAT[fmt] (layers/kquants.py)."""
    if fmt in kquants.DECODERS:
        return kquants.DECODERS[fmt](raw)
    n = raw.shape[0]
    per_block = {"q8_0": 34, "q4_0": 18, "q4_1": 20}[fmt]
    b = raw.reshape(n, -1, per_block)
    d = b[..., 0:2].contiguous().view(torch.float16)[..., 0]  # (n, blocks)
    if fmt == "q8_0":
        return {"qweight": b[..., 2:].contiguous().view(torch.int8).reshape(n, -1), "scale": d.contiguous()}
    if fmt == "q4_0":
        return {"qweight": b[..., 2:].reshape(n, -1).contiguous(), "scale": d.contiguous(),
                "min": (d.float() * -8).half()}
    m = b[..., 2:4].contiguous().view(torch.float16)[..., 0]
    return {"qweight": b[..., 4:].reshape(n, -1).contiguous(), "scale": d.contiguous(), "min": m.contiguous()}


# --------------------------------------------------------------------------------------------- modules
class QuantizedLinear(nn.Module):
    """y = x W^T + b with W kept as codes + scales (buffers) of one format; see the module docstring."""

    FAST_ROWS = 4  # up to this many rows: fbgemm (int8, a call per row) or chunked dequantization; more: one
    #                dequantized product (prefill)
    CHUNK = 1 << 18  # weights dequantized at a time (whole rows) for few-row products of the block formats:
    #                  1 MB of float32, so a chunk is still in the core's L2 cache when its product reads it
    use_kernel = True  # few rows: attnlab's VNNI kernels where available (False: fbgemm / chunked, to compare)
    MANY_ROWS = 512  # 4-bit and Q8_0 products of FAST_ROWS+1 .. this many rows: their kernel's rows_product (4-bit,
    #                  AVX2: 3.5-10x faster than dequantize + F.linear at 32 rows, 1.0-1.3x at 512, AMD Zen 3; VNNI:
    #                  ~3x the AVX2 one; Q8_0, VNNI: 1.4-5.7x faster than ROW_BY_ROW's calls from 5 to 512 rows, AMD
    #                  Zen 5, bench/results/q8_0-rows-2026-12-07/rows.log); more: the dequantized weight
    ROW_BY_ROW = 64  # int8 products of FAST_ROWS+1 .. this many rows: the one-row kernel once per row, 2-10x faster
    #                  there than dequantizing the whole matrix for one F.linear (int8 768 x 3072: 64 rows 5 ms
    #                  against 17; SmolLM2's Q8_0 head, 49152 x 576, before Q8_0 had rows_product: 27 rows 108 ms
    #                  against 234; AMD Zen 3)
    RESIDUAL_RATIO = 16.0  # int8: a row whose range exceeds this x its mean |x| also multiplies its rounding residual
    KEPT_LIMIT = 1 << 30  # bytes of dequantized stand-in weights all layers of a process may keep while kernels are
    #                       built apart (_stand_in); past it, the chunked path (SmolLM2 keeps ~0.5 GB)

    def __init__(self, in_features: int, out_features: int, fmt: str, bias: bool = False, device=None):
        super().__init__()
        check_format(fmt, in_features)
        self.in_features, self.out_features, self.format = in_features, out_features, fmt
        for name, t in _zeros(out_features, in_features, fmt, device).items():
            self.register_buffer(name, t)
        self.bias = nn.Parameter(torch.zeros(out_features, device=device), requires_grad=False) if bias else None
        self._packed: tuple | None = None  # (weakref to qweight, its state, fbgemm packed weight)
        self._buffer: torch.Tensor | None = None  # reused (CHUNK, in) float32 rows for the block formats
        self._traced: tuple | None = None  # (kernel, its packed arguments) for kernel_ops (prepare_traced)
        self._layer: int | None = None  # its place among its model's quantized layers (attnlab::quantized_rows)
        self._kept: tuple | None = None  # (weakref to qweight, its state, the dequantized weight): _stand_in

    @classmethod
    def from_float(cls, linear: nn.Linear, fmt: str) -> QuantizedLinear:
        module = cls(linear.in_features, linear.out_features, fmt, bias=linear.bias is not None,
                     device=linear.weight.device)
        module.load_buffers(quantize_weight(linear.weight, fmt))
        if linear.bias is not None:
            module.bias.data.copy_(linear.bias.detach())
        return module

    def load_buffers(self, buffers: dict[str, torch.Tensor]) -> None:
        with torch.no_grad():
            for name, t in buffers.items():
                getattr(self, name).copy_(t)

    def buffers_dict(self) -> dict[str, torch.Tensor]:
        names = ("qweight", "scale", "min") if self.format not in NO_MIN else ("qweight", "scale")
        return {n: getattr(self, n) for n in names}

    def __getstate__(self):  # copy.deepcopy / pickle: the prepacked weight and the scratch buffer are caches
        state = self.__dict__.copy()
        state["_packed"], state["_buffer"], state["_traced"], state["_layer"], state["_kept"] = (None,) * 5
        return state

    def prepare_traced(self, place: int) -> bool:
        """Ready this layer for the kernel operator (layers/kernel_ops.py) that a compiled decoding step calls:
        `place`, the number the graph names it by (its place among the model's quantized layers), and its
        kernel's packed arguments; False where the kernel does not run here (the traced step then multiplies by
        the dequantized weight).

        Why packed ahead: the operator's one-row call skips the check that keeps the eager packing fresh
        (_packed_for reads tensor versions and addresses: ~5 us a product), so it reads this snapshot of the
        codes. A quantized model is not trained; change its codes after compiling and call this again."""
        from attnlab.layers import kernel_ops

        kernel_ops.PREPARED[0] += 1  # the C++ operator's tables (kernel_ops_native.table) are rebuilt after this
        kernel = self._one_row_kernel() if self.qweight.device.type == "cpu" else None
        if kernel is None:
            self._traced = None
            return False
        self._traced = (kernel, self._kernel_packed(kernel, self.bias))
        self._layer = place
        return True

    def _traced_product(self, x: torch.Tensor) -> torch.Tensor:
        """x (..., in) through attnlab::quantized_rows: one node of the compiled graph per product."""
        from attnlab.layers.kernel_ops import quantized_rows

        y = quantized_rows(x.reshape(-1, self.in_features), self._layer, self.out_features)  # (rows, out)
        return y.reshape(*x.shape[:-1], self.out_features)

    @property
    def weight(self) -> torch.Tensor:
        """The dequantized float32 (out, in) weight (a new tensor: for inspection, not for training)."""
        return dequantize(self.format, self.buffers_dict())

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.buffers_dict().values())

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, format={self.format}, " \
               f"bias={self.bias is not None}"

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        if self._traced is not None and bias is None and torch.compiler.is_compiling():
            return self._traced_product(x)
        bias = self.bias if bias is None else bias
        rows = x.numel() // self.in_features
        if rows <= self.FAST_ROWS and x.device.type == "cpu" and not (torch.is_grad_enabled() and x.requires_grad):
            eager_float = x.dtype == torch.float32 and not torch.compiler.is_compiling()
            if (kernel := self._one_row_kernel() if eager_float else None) is not None:
                return self._kernel_product(kernel, x, bias)
            if self.format == "int8" and eager_float:
                return self._fbgemm(x, bias)
            if self.format != "int8":
                return self._chunked(x, bias)
        elif self._rows_kernel(x, rows):
            return self._rows_product(x, bias)
        elif (kernel := self._row_by_row(x, rows)) is not None:
            return self._kernel_product(kernel, x, bias)
        return self._float_product(x, bias)

    def _one_row_kernel(self):
        """This layer's one-row kernel module (int8_kernel, int4_kernel or q8_0_kernel) where it runs here (kernels
        on, this input width fits, built for this CPU), else None: what decoding steps, row-by-row products and
        the compiled step's operator all ask before calling it."""
        kernel = KERNELS.get(self.format) if self.use_kernel else None
        return kernel if kernel is not None and self.in_features <= kernel.MAX_K and kernel.available() else None

    def runs_kernel(self, rows: int) -> bool:
        """Does an eager float32 CPU product of `rows` rows run one of attnlab's kernels (forward's choice): the
        one-row kernel up to FAST_ROWS rows, then its rows_product (4-bit formats and Q8_0, up to MANY_ROWS) or the
        one-row kernel row by row (int8, up to ROW_BY_ROW)? attnlab.threads asks it to know whether a
        forward's products are all the kernels' (then torch's own pool can stay at one thread)."""
        if rows <= self.FAST_ROWS:
            return self._one_row_kernel() is not None
        if self.format in ROWS_FORMATS:
            kernel = self._one_row_kernel()
            return rows <= self.MANY_ROWS and kernel is not None and kernel.rows_available()
        return rows <= self.ROW_BY_ROW and self._one_row_kernel() is not None

    def _eager_cpu_float(self, x: torch.Tensor) -> bool:
        """float32 on CPU, outside torch.compile and autograd: where attnlab's kernels may replace F.linear."""
        return (x.dtype == torch.float32 and x.device.type == "cpu" and not torch.compiler.is_compiling()
                and not (torch.is_grad_enabled() and x.requires_grad))

    def _row_by_row(self, x: torch.Tensor, rows: int):
        """The one-row kernel for an int8 product of at most ROW_BY_ROW rows (a short prompt, a sweep's rows), or
        None: each row reads the codes once, where the float product would first write the whole dequantized
        matrix."""
        if self.format in ROWS_FORMATS or not self._eager_cpu_float(x) or not self.runs_kernel(rows):
            return None
        return self._one_row_kernel()

    def _rows_kernel(self, x: torch.Tensor, rows: int) -> bool:
        """Do these rows (a prefill) go through rows_product: 4-bit or Q8_0 codes, MANY_ROWS rows at most,
        eager float32 on CPU without autograd, and the kernel built (runs_kernel)?"""
        return self.format in ROWS_FORMATS and self._eager_cpu_float(x) and self.runs_kernel(rows)

    def _rows_product(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        """Many rows through the 4-bit or Q8_0 kernel's tiles (each tile read once per 16 rows; every row rounded
        as a decoding step rounds it); a row holding NaN or inf sends all rows to the dequantized weight."""
        y = self._kernel_rows(x.reshape(-1, self.in_features).contiguous(), bias)  # (rows, in) -> (rows, out)
        return self._float_product(x, bias) if y is None else y.reshape(*x.shape[:-1], self.out_features)

    def _kernel_rows(self, flat: torch.Tensor, bias: torch.Tensor | None, gated: bool = False) -> torch.Tensor | None:
        """flat (rows, in, or 2 in when gated) through this format's rows_product (int4_kernel or q8_0_kernel: it
        reads the one-row kernel's tiles) -> (rows, out), or None where the kernel refuses (see rows_product)."""
        kernel = KERNELS[self.format]
        tiles, kbias = self._kernel_packed(kernel, bias)
        return kernel.rows_product(flat, tiles, kbias, self.out_features, kernel_threads.count(), gated=gated)

    def swiglu_product(self, h: torch.Tensor) -> torch.Tensor | None:
        """This layer applied to silu(gate) * up for h = [gate | up] (..., 2 in_features): a SwiGLU feed-forward's
        W_2 on a prompt, with silu(gate) * up made inside the rows kernel by the job that rounds each chunk of rows
        (kernel_source.tile_rows), so two threads make it at once and no (rows, d_ff) tensor is written and read
        back. None where that does not run (few rows, too many, no kernel, autograd, a variant without it, a row
        that is not finite): then the caller makes silu(gate) * up itself and calls the layer."""
        rows = h.numel() // (2 * self.in_features)
        if h.shape[-1] != 2 * self.in_features or rows <= self.FAST_ROWS or not self._rows_kernel(h, rows):
            return None
        flat = h.reshape(rows, 2 * self.in_features).contiguous()  # (rows, 2 in): each row [gate | up]
        y = self._kernel_rows(flat, self.bias, gated=True)
        return None if y is None else y.reshape(*h.shape[:-1], self.out_features)

    # ------------------------------------------------------------ attnlab's VNNI kernels (int8, 4-bit, Q8_0)
    def _packed_for(self, kernel: str, bias: torch.Tensor | None, make):
        """The kernel's own layout of this layer's buffers (and bias), make() on first use and again whenever the
        codes, the scales, the mins or the bias change (in place or replaced), or another kernel asks. A cache
        like Linear's decode copy: not a buffer; +1 byte per int8 weight, +0.6 per 4-bit one, while kept."""
        state = self._state(kernel, bias)
        cached, q = self._packed, self.qweight
        if cached is not None and cached[1] == state and cached[0]() is q:
            return cached[2]
        # ordinary tensors in any mode, on one torch thread: a pack is a few dozen small memory-bound operators, and
        # at two threads each waits for both threads of the pool. On a quiet 2-core AMD EPYC (Zen 5) SmolLM2's 121
        # layers packed in 0.058 s at one thread; with the other core busy, at two threads they took 7.3 s (one
        # process, the same layers, 2026-11-28, not logged)
        with torch.inference_mode(False), torch.no_grad(), _quiet(), kernel_threads.one_torch_thread():
            packed = make()
        self._packed = (weakref.ref(q), state, packed)
        return packed

    def _state(self, kernel: str, bias: torch.Tensor | None) -> list:
        """What a cache made from this layer's buffers (and bias) for `kernel` depends on: their versions and
        addresses (a list built in a loop: this check runs once per product, ~49 times per GPT-2 token)."""
        state = [kernel]
        for t in self._buffers.values():  # qweight, scale (, min)
            state += (t._version, t.data_ptr())
        if bias is not None:
            state += (bias._version, bias.data_ptr())
        return state

    def _kernel_packed(self, kernel, bias: torch.Tensor | None) -> tuple:
        """`kernel`'s packed form of this layer (its pack_layer), made once and kept (see _packed_for)."""
        return self._packed_for(kernel.__name__, bias, lambda: kernel.pack_layer(self.buffers_dict(), bias))

    def _kernel_product(self, kernel, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        """x (..., in) through int8_kernel, int4_kernel or q8_0_kernel, one row per call: each row gets its own
        activation scale inside the kernel."""
        flat = x.reshape(-1, self.in_features).contiguous()  # (rows, in)
        packed = self._kernel_packed(kernel, bias)
        n, threads = self.out_features, kernel_threads.count()
        y = self._kernel_row(kernel, flat, packed, bias, n, threads) if flat.shape[0] == 1 \
            else torch.cat([self._kernel_row(kernel, row[None], packed, bias, n, threads) for row in flat])
        return y.reshape(*x.shape[:-1], self.out_features)

    def _kernel_row(self, kernel, row: torch.Tensor, packed: tuple, bias, n: int, threads: int) -> torch.Tensor:
        """(1, in) -> (1, out). A row holding NaN or inf (the kernel refuses it: rounding would make it finite)
        is multiplied by the dequantized weight, so it gives float32's NaN / inf outputs."""
        y = kernel.gemv(row, *packed, n, threads)
        return self._float_product(row, bias) if y is None else y

    def _float_product(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        """x W^T + b with W dequantized to x's dtype: the prefill path, and what a float model computes (the kept
        stand-in weight while the kernels are built apart)."""
        kept = self._stand_in(x)
        return F.linear(x, dequantize(self.format, self.buffers_dict(), x.dtype) if kept is None else kept, bias)

    # ------------------------------------------------------------ while the kernels are being built apart
    def _stand_in(self, x: torch.Tensor) -> torch.Tensor | None:
        """The dequantized float32 weight, made on first use and kept, for products of eager float32 rows on the CPU
        while this process runs without kernels that are being built apart (kernel_build.DEFERRED: a first
        `attnlab generate`), or None (kernels off by choice, another dtype or device, autograd, KEPT_LIMIT
        reached). The same numbers as dequantize(); made again when the codes, scales or mins change (_state)."""
        if not (kernel_build.DEFERRED and self.use_kernel and self._eager_cpu_float(x)):
            return None
        state, cached, q = self._state("kept", None), self._kept, self.qweight
        if cached is not None and cached[1] == state and cached[0]() is q:
            return cached[2]
        size = 4 * self.out_features * self.in_features
        if KEPT[0] + size > self.KEPT_LIMIT:
            return None
        with torch.inference_mode(False), torch.no_grad():  # an ordinary tensor, as _chunked's buffers (see there)
            w = self._dequantized()
        KEPT[0] += size
        weakref.finalize(w, _release, size)
        self._kept = (weakref.ref(q), state, w)
        return w

    def _dequantized(self) -> torch.Tensor:
        """The (out, in) float32 weight, written CHUNK weights at a time by _dequantize_rows (4.5x faster than
        dequantize() on a 1536 x 576 Q4_1 matrix; the same numbers); int8 through dequantize()."""
        if self.format == "int8":
            return dequantize(self.format, self.buffers_dict())
        w = torch.empty(self.out_features, self.in_features)
        rows = min(max(1, self.CHUNK // self.in_features), self.out_features)
        codes = torch.empty(rows, self.in_features, dtype=torch.uint8)
        for start in range(0, self.out_features, rows):
            stop = min(start + rows, self.out_features)
            self._dequantize_rows(start, stop, w[start:stop], codes[: stop - start])
        return w

    # ------------------------------------------------------------------------------------ int8: fbgemm
    def _prepacked(self, bias: torch.Tensor | None):
        """fbgemm's packed weight with `bias` folded in (its output stage adds it: one op less per call)."""
        def make():
            scale = self.scale
            positive = torch.where(scale > 0, scale, torch.finfo(torch.float32).tiny).double()
            qt = torch._make_per_channel_quantized_tensor(self.qweight.detach(), positive,
                                                          torch.zeros_like(positive, dtype=torch.long), 0)
            return torch.ops.quantized.linear_prepack(qt, None if bias is None else bias.detach().float().clone())
        return self._packed_for("fbgemm", bias, make)

    def _fbgemm(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features)  # (rows, in)
        packed = self._prepacked(bias)
        # one call per row: fbgemm rounds its whole input with one scale, and rows differ in range (a first
        # token's activations can be 100x the others')
        y = self._fbgemm_row(flat.contiguous(), packed, bias) if flat.shape[0] == 1 \
            else torch.cat([self._fbgemm_row(row[None], packed, bias) for row in flat])
        return y.reshape(*x.shape[:-1], self.out_features)

    def _fbgemm_row(self, row: torch.Tensor, packed, bias: torch.Tensor | None) -> torch.Tensor:
        """(1, in) -> (1, out), bias included. fbgemm rounds the row to 8 bits (step = range / 255); when the
        row's range is RESIDUAL_RATIO x its mean magnitude or more (outlier channels) that step drowns the other
        channels, so the rounding residual, at most half a step per channel, goes through a second product:
        ~16-bit activations. A row holding NaN or inf goes to the dequantized weight (fbgemm raises on it; float32
        answers NaN / inf). The test reads three numbers back (3 us; the tensor arithmetic it replaced took 7 us,
        and a GPT-2 step makes 49 of these calls)."""
        lo, hi = torch.aminmax(row)
        low, high = float(lo), float(hi)
        if not (math.isfinite(low) and math.isfinite(high)):  # NaN or inf: fbgemm raises; float32 answers NaN/inf
            return self._float_product(row, bias)
        levels = fbgemm_levels()
        y = torch.ops.quantized.linear_dynamic(row, packed, levels < 255)
        if high - low <= self.RESIDUAL_RATIO / self.in_features * float(torch.linalg.vector_norm(row, 1)):
            return y  # range <= RESIDUAL_RATIO x mean |x| (Gaussian rows: ~8)
        step = (max(high, 0.0) - min(low, 0.0)) / levels  # fbgemm's range includes 0
        zero = round(-min(low, 0.0) / step)
        rounded = (torch.clamp(torch.round(row / step) + zero, 0, levels) - zero) * step
        y += torch.ops.quantized.linear_dynamic(row - rounded, packed, levels < 255)
        return y if bias is None else y.sub_(bias)  # the residual's product added the bias a second time

    # ------------------------------------------------------------------------- block formats: chunked
    def _chunked(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        kept = self._stand_in(x)
        if kept is not None:
            return F.linear(x, kept, bias)
        flat = x.reshape(-1, self.in_features)
        rows = min(max(1, self.CHUNK // self.in_features), self.out_features)
        if self._buffer is None or self._buffer[0].shape[0] != rows or self._buffer[0].dtype != x.dtype:
            # ordinary tensors even when the first call runs under torch.inference_mode (generate's): an inference
            # tensor kept as state could not be written in place outside that mode (no_grad, plain calls, after
            # generate: "Inplace update to inference tensor outside InferenceMode"); ordinary ones work in both
            with torch.inference_mode(False):
                self._buffer = (torch.empty(rows, self.in_features, dtype=x.dtype),  # the chunk's float weights
                                torch.empty(rows, self.in_features, dtype=torch.uint8))  # its unpacked codes
        wbuf, cbuf = self._buffer
        outs = []
        for start in range(0, self.out_features, rows):
            stop = min(start + rows, self.out_features)
            w = self._dequantize_rows(start, stop, wbuf[: stop - start], cbuf[: stop - start])
            outs.append(flat @ w.t())  # (rows_x, chunk)
        y = torch.cat(outs, dim=-1) if len(outs) > 1 else outs[0]  # (rows_x, out)
        if bias is not None:
            y = y + bias
        return y.reshape(*x.shape[:-1], self.out_features)

    def _dequantize_rows(self, start: int, stop: int, w: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
        """Rows start:stop of the float weight, written into w (rows, in) with codes (rows, in) uint8 as scratch:
        each pass writes its result in place, no temporaries (the same numbers as dequantize())."""
        n = stop - start
        scale = self.scale[start:stop].to(w.dtype)[..., None]  # (n, blocks, 1)
        blocks = w.view(n, -1, BLOCK)
        if self.format in ("q5_0", "q5_1", "q5_k"):
            rows = {name: t[start:stop] for name, t in self.buffers_dict().items()}
            return w.copy_(dequantize(self.format, rows, w.dtype))
        if self.format in ("q8_0", "q6_k"):  # Q6_K: a scale per 16 inputs
            blocks = w.view(n, scale.shape[1], -1)
            blocks.copy_(self.qweight[start:stop].view(n, scale.shape[1], -1))
            return blocks.mul_(scale).view(n, -1)
        # four codes per int32 op: a block's 16 bytes as 4 words; masking each byte's low nibble gives values
        # 0..15 in order, shifting the word by 4 first gives values 16..31 (1.7x faster than bytewise ops)
        words = self.qweight[start:stop].view(torch.int32).view(n, -1, BLOCK // 8)  # (n, blocks, 4)
        unpacked = codes.view(torch.int32).view(n, -1, BLOCK // 4)  # (n, blocks, 8) words = 32 codes
        torch.bitwise_and(words, 0x0F0F0F0F, out=unpacked[..., : BLOCK // 8])
        torch.bitwise_and(words >> 4, 0x0F0F0F0F, out=unpacked[..., BLOCK // 8:])
        blocks.copy_(codes.view(n, -1, BLOCK))
        return blocks.mul_(scale).add_(self.min[start:stop].to(w.dtype)[..., None]).view(n, -1)


def _release(size: int) -> None:
    """A stand-in weight was freed: its bytes no longer count against KEPT_LIMIT."""
    KEPT[0] -= size


@functools.cache
def fbgemm_levels() -> int:
    """The activation levels fbgemm's dynamic int8 product rounds x to: 255 where the CPU has AVX-512 VNNI (vpdpbusd
    sums u8 x s8 products in int32), 127 elsewhere ("reduce_range": without VNNI fbgemm multiplies with AVX2's
    vpmaddubsw, which adds two u8 x s8 products into a SATURATING int16; with 8-bit x those sums overflow, and one
    row's error reached 17x the rounding bound on an AMD Zen 3, tests/test_quantize.py)."""
    flags, _ = kernel_variants.cpu_flags()
    return 255 if "avx512_vnni" in flags else 127


def parts_of(spec: str) -> list[tuple[str, int]] | None:
    """A mixed matrix's format, "q5_1:768+q8_0:192" (each row group's format and row count, in row order) ->
    [("q5_1", 768), ("q8_0", 192)]; None for a plain format name or anything that is not such a list."""
    if not isinstance(spec, str) or "+" not in spec:
        return None
    out = []
    for piece in spec.split("+"):
        fmt, _, rows = piece.partition(":")
        if fmt not in FORMATS or not rows.isdigit() or int(rows) < 1:
            return None
        out.append((fmt, int(rows)))
    return out


def parts_spec(parts: list[tuple[str, int]]) -> str:
    """parts_of's inverse: [("q5_1", 768), ("q8_0", 192)] -> "q5_1:768+q8_0:192"."""
    return "+".join(f"{fmt}:{rows}" for fmt, rows in parts)


class QuantizedParts(nn.Module):
    """A fused matrix (Q/K/V, gate+up) whose row groups are kept in different formats: a GGUF file's attn_q, attn_k
    and attn_v (or ffn_gate and ffn_up) of different types, as llama.cpp's Q5_K_M writes SmolLM2's Q/K/V (Q5_1, Q5_1,
    Q8_0). Each group is a QuantizedLinear of its own (self.parts: its own blocks, kernels, rows kernel and compiled
    step's operator, found by every walk over a model's QuantizedLinear modules); y = [x W_1^T | x W_2^T | ...] + b.
    Exact: each part multiplies by its own format's numbers, the same weights as the fused float matrix. `format`
    is parts_spec's string, what formats_of records and replace() reads back."""

    def __init__(self, in_features: int, parts: list[tuple[str, int]], bias: bool = False, device=None):
        super().__init__()
        if not parts or any(fmt not in FORMATS or rows < 1 for fmt, rows in parts):
            raise ValueError(f"QuantizedParts needs (format, rows) pairs of formats {', '.join(FORMATS)}; got {parts}")
        self.parts = nn.ModuleList(QuantizedLinear(in_features, rows, fmt, device=device) for fmt, rows in parts)
        self.in_features, self.out_features = in_features, sum(rows for _, rows in parts)
        self.format = parts_spec(parts)
        self.bias = nn.Parameter(torch.zeros(self.out_features, device=device), requires_grad=False) if bias \
            else None

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        y = torch.cat([part(x) for part in self.parts], dim=-1)  # (..., out)
        bias = self.bias if bias is None else bias
        return y if bias is None else y + bias

    @property
    def weight(self) -> torch.Tensor:
        """The dequantized float32 (out, in) weight (a new tensor, as QuantizedLinear.weight)."""
        return torch.cat([part.weight for part in self.parts], dim=0)

    @property
    def nbytes(self) -> int:
        return sum(part.nbytes for part in self.parts)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, format={self.format}, " \
               f"bias={self.bias is not None}"


def quantized_module(in_features: int, out_features: int, spec: str, bias: bool = False, device=None) -> nn.Module:
    """An empty QuantizedLinear of format `spec`, or a QuantizedParts where `spec` is a parts_spec string (whose row
    counts must add up to out_features)."""
    parts = parts_of(spec)
    if parts is None:
        return QuantizedLinear(in_features, out_features, spec, bias=bias, device=device)
    if sum(rows for _, rows in parts) != out_features:
        raise ValueError(f"the parts {spec!r} hold {sum(r for _, r in parts)} rows; the matrix has {out_features}")
    return QuantizedParts(in_features, parts, bias=bias, device=device)


class QuantizedEmbedding(nn.Module):
    """Token embedding over a QuantizedLinear's codes (the tied LM head's): gather rows, then dequantize them."""

    def __init__(self, linear: QuantizedLinear):
        super().__init__()
        self.num_embeddings, self.embedding_dim, self.format = linear.out_features, linear.in_features, linear.format
        for name, t in linear.buffers_dict().items():  # the same tensors: one copy of the codes for both uses
            self.register_buffer(name, t)

    def buffers_dict(self) -> dict[str, torch.Tensor]:
        names = ("qweight", "scale", "min") if self.format not in NO_MIN else ("qweight", "scale")
        return {n: getattr(self, n) for n in names}

    @property
    def weight(self) -> torch.Tensor:
        return dequantize(self.format, self.buffers_dict())

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, format={self.format}"

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        flat = ids.reshape(-1)
        rows = {k: v.index_select(0, flat) for k, v in self.buffers_dict().items()}
        return dequantize(self.format, rows).reshape(*ids.shape, self.embedding_dim)  # (..., d_model)


class _quiet:
    """Silence torch's deprecation warning for quantized tensor creation (the ops we use are not deprecated)."""

    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.filterwarnings("ignore", message=".*quantized tensor creation.*")
        warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)
