"""The AVX2 variant of attnlab's one-row 4-bit kernel (layers/int4_kernel.py `_SOURCE_AVX2`), forced with
ATTNLAB_INT8_KERNEL=avx2 so it runs (and is checked) on CPUs with AVX-512 VNNI as well as on AVX2-only ones.

Reference: float64 x . w on the dequantized weight w = d q + m, built here from the codes (not by the kernel's
pack()), within the bound of rounding x to two 8-bit pieces (step = max|x| / 127 / 254: |error| <= step / 2 *
sum_k |w[n, k]|) plus float32 accumulation slack.
"""

from __future__ import annotations

import pytest
import torch

from attnlab.layers import int4_kernel, int8_kernel


@pytest.fixture
def avx2(monkeypatch):
    """int4_kernel with its AVX2 variant loaded, whatever else the CPU runs; CHOSEN restored afterwards."""
    monkeypatch.setenv("ATTNLAB_INT8_KERNEL", "avx2")
    reason = int8_kernel._cpu_reason(int8_kernel.AVX2)
    if reason is not None:
        pytest.skip(f"the AVX2 variant cannot run here: {reason}")
    monkeypatch.setitem(int8_kernel.CHOSEN, "int4", int8_kernel.CHOSEN.get("int4"))
    built = int4_kernel._compiled.__wrapped__()  # a fresh pick under the switch (the cached one may be AVX-512)
    if built[0] is None:
        pytest.skip(f"the AVX2 variant was not built: {built[1]}")
    assert int8_kernel.CHOSEN["int4"] == "avx2"
    monkeypatch.setattr(int4_kernel, "_compiled", lambda: built)
    return int4_kernel


def _layer(n: int, k: int, gen: torch.Generator, codes: torch.Tensor | None = None):
    """Random 4-bit codes (or `codes`), d > 0 and m < 0 in float16 as Q4_1 has them -> (GGUF nibble bytes, d, m,
    the float64 weight d q + m)."""
    q = torch.randint(0, 16, (n, k), dtype=torch.uint8, generator=gen) if codes is None else codes
    d = (torch.rand(n, k // 32, generator=gen) * 0.02 + 1e-3).half()
    m = (-torch.rand(n, k // 32, generator=gen) * 0.1).half()
    blocks = q.reshape(n, k // 32, 32)
    qweight = (blocks[..., :16] | (blocks[..., 16:] << 4)).reshape(n, k // 2)  # GGUF: j low, 16 + j high nibble
    w = (q.double().reshape(n, k // 32, 32) * d.double()[..., None] + m.double()[..., None]).reshape(n, k)
    return qweight, d, m, w


def _bound(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """(n,) allowed |error|: half a step of the rounded x against |w|, plus float32 accumulation."""
    big = float(x.abs().max())
    return big / 127 / 254 / 2 * w.abs().sum(1) + 1e-5 * (1 + big * w.abs().sum(1))


@pytest.mark.parametrize("n,k", [(70, 96), (130, 160), (517, 384)])  # 517 x 384: 108 tiles, split over 2 threads
def test_avx2_variant_against_float64(avx2, n, k):
    gen = torch.Generator().manual_seed(n + k)
    qweight, d, m, w = _layer(n, k, gen)
    bias = torch.randn(n, generator=gen)
    x = torch.randn(1, k, generator=gen)
    x[0, k // 3] = -45.0  # an outlier channel: the small ones live in the lo piece
    tiles, = avx2.pack(qweight, d, m)
    for b in (None, bias):
        expected = x.double() @ w.T + (0 if b is None else b.double())
        runs = [avx2.gemv(x, tiles, b, n, threads) for threads in (1, 2)]
        assert runs[0].shape == (1, n) and runs[0].dtype == torch.float32
        assert torch.equal(runs[0], runs[1])  # each 64-output block is computed whole by one thread
        error = (runs[0].double() - expected).abs()
        assert bool((error <= _bound(x, w)).all()), float((error / _bound(x, w)).max())
        # the rounding shows (the kernel ran and rounded x), far below what 8-bit x alone would give
        assert float(error.max()) > 0


def test_avx2_variant_takes_the_largest_sums(avx2):
    """Codes all 15 and every |x| at its maximum: each 16-bit partial sum reaches 8 * 2 * 15 * 127 = 30480, the
    most the kernel's s16 accumulation holds (a wider sum would wrap and be off by 65536 steps)."""
    gen = torch.Generator().manual_seed(7)
    n, k = 72, 128
    qweight, d, m, w = _layer(n, k, gen, codes=torch.full((n, k), 15, dtype=torch.uint8))
    tiles, = avx2.pack(qweight, d, m)
    for sign in (1.0, -1.0):
        x = torch.full((1, k), 3.0 * sign)
        x[0, 1::2] *= 126.6 / 127  # lo pieces near +-127 too
        got = avx2.gemv(x, tiles, None, n, 1)
        error = (got.double() - x.double() @ w.T).abs()
        assert bool((error <= _bound(x, w)).all()), float((error / _bound(x, w)).max())


def test_avx2_variant_refuses_rows_that_are_not_finite(avx2):
    gen = torch.Generator().manual_seed(3)
    n, k = 70, 96
    qweight, d, m, _ = _layer(n, k, gen)
    tiles, = avx2.pack(qweight, d, m)
    for value in (float("nan"), float("inf"), -float("inf")):
        x = torch.randn(1, k, generator=gen)
        x[0, 37] = value
        assert avx2.gemv(x, tiles, None, n, 1) is None
    assert avx2.gemv(torch.zeros(1, k), tiles, None, n, 1) is not None  # all zero: finite, scale 1


@pytest.mark.parametrize("rows,n,k", [(1, 70, 96), (37, 130, 160), (5, 517, 384)])
def test_rows_product_gives_each_row_what_the_one_row_kernel_gives(avx2, rows, n, k):
    """rows_product (prefill: each tile read once for up to 16 rows; 37 rows = 16 + 16 + 5) gives every row the
    one-row kernel's bits, on 1 and 2 threads, and each row is within its own rounding bound of float64 x . w."""
    if not avx2.rows_available():
        pytest.skip(f"rows_product's kernel is unavailable here: {avx2._compiled_rows()[1]}")
    gen = torch.Generator().manual_seed(rows + n + k)
    qweight, d, m, w = _layer(n, k, gen)
    bias = torch.randn(n, generator=gen)
    x = torch.randn(rows, k, generator=gen) * torch.logspace(-2, 1, rows)[:, None]  # rows of different ranges
    x[:, k // 3] = 25.0
    tiles, = avx2.pack(qweight, d, m)
    for b in (None, bias):
        runs = [avx2.rows_product(x, tiles, b, n, threads) for threads in (1, 2)]
        assert runs[0].shape == (rows, n) and torch.equal(runs[0], runs[1])
        assert torch.equal(runs[0], torch.cat([avx2.gemv(row[None], tiles, b, n, 1) for row in x]))
        expected = x.double() @ w.T + (0 if b is None else b.double())
        for i in range(rows):
            error = (runs[0][i].double() - expected[i]).abs()
            assert bool((error <= _bound(x[i], w)).all()), (i, float((error / _bound(x[i], w)).max()))


def test_rows_product_refuses_a_row_that_is_not_finite(avx2):
    if not avx2.rows_available():
        pytest.skip(f"rows_product's kernel is unavailable here: {avx2._compiled_rows()[1]}")
    gen = torch.Generator().manual_seed(11)
    qweight, d, m, _ = _layer(70, 96, gen)
    tiles, = avx2.pack(qweight, d, m)
    x = torch.randn(20, 96, generator=gen)
    assert avx2.rows_product(x, tiles, None, 70) is not None
    x[17, 3] = float("nan")
    assert avx2.rows_product(x, tiles, None, 70) is None
    assert avx2.rows_product(torch.zeros(0, 96), tiles, None, 70).shape == (0, 70)
