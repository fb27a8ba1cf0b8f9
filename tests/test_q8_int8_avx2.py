"""The AVX2 variants of attnlab's Q8_0 and int8 one-row kernels (layers/q8_0_kernel.py, layers/int8_kernel.py).

They run where AVX-512 VNNI is missing (AMD Zen 2-3, Intel Haswell to Ice Lake client). Here they are built with
ATTNLAB_INT8_KERNEL=avx2, so a CPU that has AVX-512 VNNI tests them too; only a CPU without AVX2 / FMA / F16C skips.
Each is checked against a float64 product of the same codes: the error must stay within the rounding of x to two
8-bit pieces (step = max|x| / 127 / 254, so |y - x W^T| <= step / 2 * sum_k |W[n, k]|) plus float32 accumulation.
The cases that broke AVX2 int8 products before (fbgemm's saturating vpmaddubsw, layers/quantized.fbgemm_levels):
codes at the ends of their range (-128 and 127 for Q8_0, -127 and 127 for int8) against x's pieces at +-127.
"""

from __future__ import annotations

import pytest
import torch

from attnlab.layers import int8_kernel, q8_0_kernel
from attnlab.layers.quantized import dequantize

KERNELS = {"q8_0": (q8_0_kernel, "attnlab_q8_0_gemv"), "int8": (int8_kernel, "attnlab_int8_gemv")}


@pytest.fixture(scope="module")
def avx2():
    """The AVX2 builds of both kernels, swapped in as the modules' own (their gemv() and available() use them)."""
    flags, why = int8_kernel._cpu_flags()
    missing = [f for f in int8_kernel.AVX2 if f not in flags]
    if why or missing:
        pytest.skip(f"the AVX2 kernels need {', '.join(int8_kernel.AVX2)}: "
                    f"{why or 'the CPU lacks ' + ', '.join(missing)}")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNLAB_INT8_KERNEL", "avx2")
        for name, (module, function) in KERNELS.items():
            mp.setitem(int8_kernel.CHOSEN, name, int8_kernel.CHOSEN.get(name))  # build() records avx2: undone after
            built = int8_kernel.build(name, module.SOURCES, function, "the test fails")
            assert built[1] is None, built[1]  # this CPU has the flags: the build itself must work
            assert int8_kernel.CHOSEN[name] == "avx2"
            mp.setattr(module, "_compiled", lambda built=built: built)
        yield


def _bound(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Rounding x to two 8-bit pieces (half a step of max|x| / 127 / 254 per input) plus float32 accumulation."""
    big = float(x.abs().max())
    return big / 127 / 254 / 2 * w.abs().sum(1) + 1e-5 * (1 + big * w.abs().sum(1))


def test_the_switch_picks_the_avx2_source(monkeypatch):
    """ATTNLAB_INT8_KERNEL=avx2 passes over the AVX-512 variant of both kernels to their AVX2 one."""
    monkeypatch.setenv("ATTNLAB_INT8_KERNEL", "avx2")
    flags, _ = int8_kernel._cpu_flags()
    for module, _function in KERNELS.values():
        variant, source, reason = int8_kernel._pick(module.SOURCES)
        if all(f in flags for f in int8_kernel.AVX2):
            assert (variant, source, reason) == ("avx2", module._SOURCE_AVX2, None)
        else:
            assert variant is None and "lacks" in reason


def _q8_0_codes(n: int, k: int, gen: torch.Generator) -> torch.Tensor:
    q = torch.randint(-128, 128, (n, k), dtype=torch.int8, generator=gen)
    q[0], q[1], q[2, ::2], q[2, 1::2], q[4, :32] = -128, 127, -128, 127, 0  # the ends of the range; an empty block
    q[3] = torch.tensor([127, 127, -128, -128]).repeat(k // 4)  # against x's + + - - (the tests'): all products max
    return q


@pytest.mark.parametrize("n,k", [(70, 64), (130, 96), (64, 32), (1000, 256)])
def test_q8_0_avx2_against_float64(avx2, n, k):
    """Odd output counts (not a multiple of the 64-output tiles), codes at -128 and 127 against x at +-max (x's
    high piece at +-127: the products vpmaddubsw would saturate), an outlier channel, bias or none, and 1 and 2
    threads giving the same bits (1000 x 256 is large enough to be split)."""
    gen = torch.Generator().manual_seed(n + k)
    q = _q8_0_codes(n, k, gen)
    d = (torch.rand(n, k // 32, generator=gen) * 0.02).half()
    buffers = {"qweight": q, "scale": d}
    w = dequantize("q8_0", buffers).double()
    x = torch.randn(1, k, generator=gen)
    x[0, :2], x[0, 2:4] = 40.0, -40.0  # outlier channels at the row's +-max side by side: X = +-32258 in pairs
    bias = torch.randn(n, generator=gen)
    for b in (None, bias):
        packed = q8_0_kernel.pack_layer(buffers, b)
        expected = x.double() @ w.t() + (0 if b is None else b.double())
        one = q8_0_kernel.gemv(x, *packed, n, 1)
        assert one.shape == (1, n) and one.dtype == torch.float32
        assert bool(((one.double() - expected).abs() <= _bound(x, w)).all())
        assert torch.equal(q8_0_kernel.gemv(x, *packed, n, 2), one)  # a 64-output block is one thread's: same bits


def _int8_codes(n: int, k: int, gen: torch.Generator) -> torch.Tensor:
    q = torch.randint(-127, 128, (n, k), dtype=torch.int8, generator=gen)
    q[0], q[1], q[2, ::2], q[2, 1::2] = -127, 127, -127, 127  # attnlab's int8 codes span -127..127
    q[3] = torch.tensor([127, 127, -127, -127]).repeat(k // 4 + 1)[:k]  # against x's + + - -: all products max
    return q


@pytest.mark.parametrize("n,k", [(65, 33), (200, 7), (64, 96), (130, 1100), (2000, 512)])
def test_int8_avx2_against_float64(avx2, n, k):
    """As the Q8_0 test: input counts that are not a multiple of 4 or 8 (x's tail), 1100 inputs (the kernel adds
    its exact int32 sums into float every 256 inputs), and 2000 x 512, split across threads."""
    gen = torch.Generator().manual_seed(n + k)
    q = _int8_codes(n, k, gen)
    scale = torch.rand(n, generator=gen) * 0.01
    w = q.double() * scale.double()[:, None]
    x = torch.randn(1, k, generator=gen)
    x[0, :2], x[0, 2:4] = 40.0, -40.0  # as in the Q8_0 test; k = 7 keeps 3 of them
    bias = torch.randn(n, generator=gen)
    for b in (None, bias):
        packed = int8_kernel.pack_layer({"qweight": q, "scale": scale}, b)
        expected = x.double() @ w.t() + (0 if b is None else b.double())
        one = int8_kernel.gemv(x, *packed, n, 1)
        assert one.shape == (1, n) and one.dtype == torch.float32
        assert bool(((one.double() - expected).abs() <= _bound(x, w)).all())
        assert torch.equal(int8_kernel.gemv(x, *packed, n, 2), one)


@pytest.mark.parametrize("fmt", ["q8_0", "int8"])
def test_avx2_rows_at_the_edges(avx2, fmt):
    """A row of zeros gives the bias; a row holding NaN or an infinity gives None (the caller then multiplies it
    in float32); a row far smaller than 1 keeps its relative precision (the step follows max|x|)."""
    gen = torch.Generator().manual_seed(7)
    n, k = 70, 64
    if fmt == "q8_0":
        buffers = {"qweight": _q8_0_codes(n, k, gen), "scale": (torch.rand(n, k // 32, generator=gen) * 0.02).half()}
    else:
        buffers = {"qweight": _int8_codes(n, k, gen), "scale": torch.rand(n, generator=gen) * 0.01}
    module = q8_0_kernel if fmt == "q8_0" else int8_kernel
    w = dequantize(fmt, buffers).double()
    bias = torch.randn(n, generator=gen)
    packed = module.pack_layer(buffers, bias)
    assert torch.equal(module.gemv(torch.zeros(1, k), *packed, n), bias[None])
    for bad in (float("nan"), float("inf"), -float("inf")):
        x = torch.randn(1, k, generator=gen)
        x[0, 9] = bad
        assert module.gemv(x, *packed, n) is None
    x = torch.randn(1, k, generator=gen) * 1e-6
    got = module.gemv(x, *module.pack_layer(buffers, None), n).double()
    assert bool(((got - x.double() @ w.t()).abs() <= _bound(x, w) - 1e-5 + 1e-12).all())  # no float32 slack needed
