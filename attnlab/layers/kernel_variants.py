"""Which variant of a one-row kernel this CPU runs, its build, and the Python calls every kernel format shares.

Why one place: the int8, 4-bit, Q8_0 and RMSNorm kernels (layers/int8_kernel.py, int4_kernel.py, q8_0_kernel.py,
norm_kernel.py) each come as C++ variants, AVX-512 VNNI first and AVX2 second, that compute the same numbers from
the same packed layout. Choosing among them (the CPU's flags, the ATTNLAB_INT8_KERNEL switch), building the chosen
one (layers/kernel_build.py: attnlab's private cache folder, checked), saying once why a kernel does not run, and
the small wrappers around the built function are the same for every format; a format module keeps its layout
(pack) and its inner product.

- `build(name, sources, function, fallback)`: the chosen variant, built or loaded; `cached_build` once per process.
- `status(compiled)`: a format's `available()` and `unavailable_reason()`.
- `tile_gemv(compiled)`: gemv() of a tiled format (4-bit, Q8_0): x, tiles, bias -> y, or None for a non-finite row.
- `tile_rows(compiled)`: rows_product() of a tiled format's multi-row kernel (prefill): many rows, each with gemv's
  bits.
- `tiled_builds(...)`, `tiled_calls(globals())`: a tiled format module's two builds and its five calls in one go.
- `cpu_flags()`, `cpu_reason(flags)`, `pick(sources)`, `choice()`: the checks behind build, for tests and fbgemm.
- ATTNLAB_INT8_KERNEL (CHOICES): "auto" the fastest variant the CPU runs, "avx2" the AVX2 one even where AVX-512
  VNNI is there (to compare, or test both), "fbgemm" none (the fallbacks run: int8 through fbgemm, 4-bit and Q8_0
  through chunked dequantization).
"""

from __future__ import annotations

import functools
import os
import platform
import struct
import subprocess
import warnings

import torch

from attnlab.layers import kernel_build

CHOICES = ("auto", "avx2", "fbgemm")  # ATTNLAB_INT8_KERNEL's values
VNNI = ("avx512f", "avx512bw", "avx512vl", "avx512_vnni")  # the flags of a kernel's AVX-512 VNNI variant
VNNI_F16C = (*VNNI, "f16c")  # ... of one that also converts float16 scales (vcvtph2ps)
AVX2 = ("avx2", "fma", "f16c")  # the flags of a kernel's AVX2 variant (AMD Zen 2-3, Intel Haswell to Ice Lake)
# what runs instead (layers/quantized.py), said with a reason that stops kernels: all of them (no AVX2, no compiler,
# ATTNLAB_INT8_KERNEL=fbgemm) or only those without an AVX2 variant (no AVX-512 VNNI)
FALLBACK = "products without their kernel fall back: int8 to fbgemm, 4-bit and Q8_0 to chunked dequantization"
CHOSEN: dict[str, str] = {}  # kernel name -> the variant loaded ("avx512_vnni" or "avx2"), for benchmarks and docs


def choice() -> str:
    """ATTNLAB_INT8_KERNEL, one of CHOICES ("auto", with a warning, for anything else)."""
    value = os.environ.get("ATTNLAB_INT8_KERNEL", "auto").strip().lower() or "auto"
    if value not in CHOICES:
        warnings.warn(f"ATTNLAB_INT8_KERNEL={value!r} is not one of {', '.join(CHOICES)}; using 'auto'",
                      stacklevel=3)
        return "auto"
    return value


def cpu_flags() -> tuple[set[str], str | None]:
    """(the CPU's flags, None) or (empty, why they cannot be known)."""
    if platform.system() != "Linux" or platform.machine().lower() not in ("x86_64", "amd64"):
        return set(), f"needs Linux on x86-64 (this is {platform.system()} on {platform.machine()})"
    try:
        with open("/proc/cpuinfo") as f:
            return set(next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])), None
    except OSError as e:
        return set(), f"cannot read /proc/cpuinfo ({e})"


def cpu_reason(flags: tuple[str, ...] = VNNI) -> str | None:
    """Why a kernel needing `flags` cannot run here (the switch, the OS, the CPU), or None."""
    if choice() == "fbgemm":
        return "ATTNLAB_INT8_KERNEL=fbgemm"
    have, why = cpu_flags()
    if why:
        return why
    missing = [f for f in flags if f not in have]
    return f"the CPU lacks {', '.join(missing)}" if missing else None


def pick(sources) -> tuple[str | None, str | None, str | None]:
    """(variant, source, None) for the first of `sources` ((flags, source) pairs, fastest first; a bare string is
    an AVX-512 VNNI source) this CPU runs, else (None, None, why not). ATTNLAB_INT8_KERNEL=avx2 skips the AVX-512
    ones."""
    if isinstance(sources, str):
        sources = ((VNNI, sources),)
    skip_512 = choice() == "avx2"
    reasons = []
    for flags, source in sources:
        if skip_512 and "avx512f" in flags:
            continue
        reason = cpu_reason(flags)
        if reason is None:
            return ("avx512_vnni" if "avx512f" in flags else "avx2" if "avx2" in flags else "plain"), source, None
        reasons.append(reason)
    return None, None, (reasons[0] if reasons else "ATTNLAB_INT8_KERNEL=avx2 and this kernel has no AVX2 variant")


def build(name: str, sources, function: str, fallback: str):
    """(a Python callable running the chosen source's extern "C" `function` on ints and addresses, None) or (None,
    why not). `sources`: one AVX-512 VNNI source, or (flags, source) pairs, fastest first: the first the CPU runs
    is built (every variant has the same function, arguments and packed layout), and CHOSEN[name] says which.
    The reason is said once per process (kernel_build.warn_unavailable): the CPU, the switch or the compiler once
    for all kernels, a failed build with its own `fallback` (what runs instead)."""
    variant, source, reason = pick(sources)
    if choice() != "fbgemm" and not kernel_build.compiler():  # one reason for every kernel, whatever its CPU needs
        variant, reason = None, "no C++ compiler found (set CXX or install g++)"
    if reason is not None:
        kernel_build.warn_unavailable(reason, FALLBACK)
        return None, reason
    try:
        call = kernel_build.load(name if variant == "avx512_vnni" else f"{name}_{variant}", source, function)
    except kernel_build.Deferred as e:  # built apart for later runs (`attnlab generate`): no fault, nothing to say
        return None, str(e)
    except (OSError, ImportError, RuntimeError, subprocess.SubprocessError) as e:  # an old compiler, a full disk
        text = str(e).strip().splitlines()
        reason = f"building the {name} kernel failed: {type(e).__name__}: {text[-1][:200] if text else ''}"
        kernel_build.warn_unavailable(reason, fallback)
        return None, reason
    CHOSEN[name] = variant
    return call, None


def cached_build(name: str, sources, function: str, fallback: str):
    """A format's `_compiled()`: build(...) on first use, once per process (its __wrapped__ builds afresh)."""
    return functools.cache(functools.partial(build, name, sources, function, fallback))


def status(compiled):
    """(available, unavailable_reason) of the kernel `compiled()` builds. `compiled` is called each time (a
    lambda over the format module's `_compiled`, so that a test that swaps in another build is followed)."""

    def available() -> bool:
        """Does the kernel run here (built, or loaded from attnlab's cache folder)?"""
        return compiled()[0] is not None

    def unavailable_reason() -> str | None:
        """Why not (the CPU, the switch, the compiler, a failed build), or None when it runs."""
        return compiled()[1]

    return available, unavailable_reason


@functools.cache
def float_bits(value: float) -> int:
    """A float32's bits as an int: the kernels' binding takes integers and addresses only (an eps, a scale)."""
    return struct.unpack("<I", struct.pack("<f", value))[0]


def layer_bias(bias: torch.Tensor | None) -> torch.Tensor | None:
    """A QuantizedLinear's bias as the kernels read it: float32, contiguous (or None)."""
    return None if bias is None else bias.float().contiguous()


def min_packs(label: str, dtype: torch.dtype, base_pack) -> tuple:
    """(pack, pack_layer) of a format kept as codes with a scale and a min per 32 inputs (Q4_K, Q5_1, Q5_K), whose
    tiles `base_pack(qweight, scale, min)` writes (the 4-bit or the 5-bit kernel's): one pair for the three formats,
    which differ only in the dtype the kernel reads their scales and mins in (`dtype`), named in the error."""

    def pack(qweight: torch.Tensor, scale: torch.Tensor, min: torch.Tensor) -> tuple[torch.Tensor]:
        """The format's buffers (qweight, (n, k/32) scale and min of `dtype`) -> (tiles,)."""
        if scale.dtype != dtype or min.dtype != dtype:
            dtypes = f"{str(scale.dtype).removeprefix('torch.')} and {str(min.dtype).removeprefix('torch.')}"
            raise ValueError(f"the {label} kernel takes {str(dtype).removeprefix('torch.')} scales and mins, "
                             f"got {dtypes}")
        return base_pack(qweight, scale, min)

    def pack_layer(buffers: dict[str, torch.Tensor], bias: torch.Tensor | None) -> tuple:
        """A QuantizedLinear's buffers and bias -> gemv's arguments between x and n."""
        tiles, = pack(buffers["qweight"], buffers["scale"], buffers["min"])
        return tiles, layer_bias(bias)

    return pack, pack_layer


def runs_on_this_cpu(sources) -> bool:
    """Does this CPU have what a kernel of `sources` needs (its flags and ATTNLAB_INT8_KERNEL; nothing built)?"""
    return pick(sources)[0] is not None


def tile_gemv(compiled):
    """gemv() of a tiled format (layers/int4_kernel.py, q8_0_kernel.py) whose kernel `compiled()` gives, as in
    status(); both have the same arguments: x, the packed tiles, bias, y and the sizes."""

    def gemv(x: torch.Tensor, tiles: torch.Tensor, bias: torch.Tensor | None, n: int,
             threads: int = 1) -> torch.Tensor | None:
        """x (1, k) float32 contiguous on CPU -> (1, n) float32, or None when x holds a NaN or an infinity (then
        multiply in float32, as int8_kernel.gemv). No checks (one call per matrix per token): the caller guarantees
        x float32 contiguous with k = 32 * tiles.shape[1] <= MAX_K, tiles from pack(), bias None or (n,) float32
        contiguous, and available()."""
        y = torch.empty(1, n)
        if compiled()[0](x.data_ptr(), tiles.data_ptr(), (x if bias is None else bias).data_ptr(), y.data_ptr(),
                         tiles.shape[0], tiles.shape[1], n, 0 if bias is None else 1, threads):
            return None
        return y

    return gemv


def tiled_builds(name: str, sources, rows_sources, what: str):
    """(_compiled, _compiled_rows) of a tiled format (4-bit, Q8_0): its one-row kernel `sources` (extern "C"
    attnlab_<name>_gemv) and its multi-row `rows_sources` (attnlab_<name>_rows), each a (flags, source) pair per
    variant, fastest first, built on first use (cached_build); `what` names the products in the fallback's
    message."""
    return (cached_build(name, sources, f"attnlab_{name}_gemv", f"{what} dequantize in chunks"),
            cached_build(f"{name}_rows", rows_sources, f"attnlab_{name}_rows",
                         f"{what} of many rows dequantize the weight"))


def tiled_calls(scope: dict) -> tuple:
    """available, unavailable_reason, gemv, rows_available, rows_product of the tiled format module whose
    globals() are `scope`: its _compiled and _compiled_rows (tiled_builds) are looked up there at each call, so
    a test that swaps in another build (monkeypatch.setattr(module, "_compiled", ...)) is followed."""
    def compiled():
        return scope["_compiled"]()

    def compiled_rows():
        return scope["_compiled_rows"]()

    available, unavailable_reason = status(compiled)
    return available, unavailable_reason, tile_gemv(compiled), status(compiled_rows)[0], tile_rows(compiled_rows)


def tile_rows(compiled):
    """rows_product() of a tiled format's multi-row kernel (kernel_source.tile_rows) that `compiled()` gives, as
    in status(): one wrapper for every format, since their kernels take the same arguments."""

    def rows_product(x: torch.Tensor, tiles: torch.Tensor, bias: torch.Tensor | None, n: int,
                     threads: int = 1, gated: bool = False) -> torch.Tensor | None:
        """x (rows, k) float32 contiguous on CPU -> (rows, n) float32: each row as gemv() would give it (the same
        rounding per row, the same tiles, the same bits), with each tile read once for ROWS_CHUNK rows instead of
        once per row (prefill). None when a row holds a NaN or an infinity, or its buffers cannot be allocated
        (then multiply all rows in float32). No checks, as gemv(); the caller guarantees rows_available().
        gated: x is (rows, 2 k), each row a SwiGLU's [g | u], and the product is of h = silu(g) u, made inside the
        kernel (kernel_source.tile_rows); None also where this variant has no SwiGLU (then do it in torch)."""
        rows = x.shape[0]
        y = torch.empty(rows, n)
        if rows == 0:
            return y
        if compiled()[0](x.data_ptr(), tiles.data_ptr(), (x if bias is None else bias).data_ptr(), y.data_ptr(),
                         rows, tiles.shape[0], tiles.shape[1], n, 0 if bias is None else 1, threads, int(gated)):
            return None
        return y

    return rows_product
