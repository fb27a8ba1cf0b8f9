"""The multi-row products of the tiled formats (layers/q8_0_kernel.py, int4_kernel.py and q4_0_kernel.py
rows_product: a prompt's prefill through the one-row kernel's tiles) and the dispatch that sends a layer's
5..MANY_ROWS rows to them.

The promise checked: every row of rows_product is bit for bit the one-row kernel's (gemv) answer for that row, in
the variant this CPU picks (AVX-512 VNNI where it has it) and in the AVX2 one (forced with
ATTNLAB_INT8_KERNEL=avx2), so a prompt's rows and the decoding steps after it get the same numbers; a row holding
NaN or inf makes it answer None, and the layer then multiplies every row by the dequantized weight (float32's NaN /
inf).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlab.layers import int4_kernel, kernel_variants, q4_0_kernel, q8_0_kernel, quantized
from attnlab.layers.quantized import QuantizedLinear

MODULES = {"q8_0": (q8_0_kernel, "q8_0"), "q4_1": (int4_kernel, "int4"),  # format -> (kernel, its build name)
           "q4_0": (q4_0_kernel, "q4_0")}


@pytest.fixture(params=[(fmt, variant) for fmt in MODULES for variant in ("chosen", "avx2")],
                ids=lambda p: "-".join(p))
def case(request, monkeypatch):
    """(format, its kernel module) with both of the module's kernels (one-row and rows) from one variant: the one
    this CPU picks, or AVX2."""
    fmt, variant = request.param
    kernel, name = MODULES[fmt]
    if variant == "avx2":
        monkeypatch.setenv("ATTNLAB_INT8_KERNEL", "avx2")
        reason = kernel_variants.cpu_reason(kernel_variants.AVX2)
        if reason is not None:
            pytest.skip(f"the AVX2 variant cannot run here: {reason}")
        for built_name, attr in ((name, "_compiled"), (f"{name}_rows", "_compiled_rows")):
            monkeypatch.setitem(kernel_variants.CHOSEN, built_name, kernel_variants.CHOSEN.get(built_name))
            built = getattr(kernel, attr).__wrapped__()  # a fresh pick under the switch
            assert built[1] is None, built[1]  # the CPU has the flags: the build itself must work
            assert kernel_variants.CHOSEN[built_name] == "avx2"
            monkeypatch.setattr(kernel, attr, lambda built=built: built)
    if not (kernel.available() and kernel.rows_available()):
        pytest.skip(f"the {fmt} kernels are unavailable here: {kernel._compiled_rows()[1]}")
    return fmt, kernel


def _buffers(fmt: str, n: int, k: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Random buffers of `fmt` with codes at the ends of their range in the first two outputs."""
    scale = (torch.rand(n, k // 32, generator=gen) * 0.02).half()
    if fmt == "q8_0":
        q = torch.randint(-128, 128, (n, k), dtype=torch.int8, generator=gen)
        q[0], q[1] = -128, 127
        return {"qweight": q, "scale": scale}
    q = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, generator=gen)  # two 4-bit codes a byte
    q[0], q[1] = 0, 255
    if fmt == "q4_0":  # w = d (q - 8)
        return {"qweight": q, "scale": scale, "min": scale * -8}
    return {"qweight": q, "scale": scale, "min": (-torch.rand(n, k // 32, generator=gen) * 0.1).half()}


def _rows(rows: int, k: int, gen: torch.Generator) -> torch.Tensor:
    """Rows of different ranges, each with an outlier channel (a row's own scale must be its own)."""
    x = torch.randn(rows, k, generator=gen) * torch.logspace(-2, 1, rows)[:, None]
    x[:, k // 3] *= 40.0
    return x


@pytest.mark.parametrize("rows", [2, 5, 17, 64])
def test_rows_product_gives_each_row_the_one_row_kernels_bits(case, rows):
    """17 = 16 + 1 and 64 = 4 x 16 rows cross ROWS_CHUNK; 130 outputs are not a multiple of the 64-output tiles;
    1 and 2 threads give the same bits (a row's outputs are one thread's work)."""
    fmt, kernel = case
    n, k = 130, 96
    gen = torch.Generator().manual_seed(rows)
    buffers = _buffers(fmt, n, k, gen)
    x = _rows(rows, k, gen)
    for bias in (None, torch.randn(n, generator=gen)):
        tiles, kbias = kernel.pack_layer(buffers, bias)
        one_row = torch.cat([kernel.gemv(row[None], tiles, kbias, n, 1) for row in x])
        for threads in (1, 2):
            got = kernel.rows_product(x, tiles, kbias, n, threads)
            assert got.shape == (rows, n) and got.dtype == torch.float32
            assert torch.equal(got, one_row), (threads, bias is None)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_rows_product_refuses_a_row_that_is_not_finite(case, bad):
    fmt, kernel = case
    gen = torch.Generator().manual_seed(5)
    tiles, _ = kernel.pack_layer(_buffers(fmt, 70, 64, gen), None)
    x = torch.randn(40, 64, generator=gen)
    assert kernel.rows_product(x, tiles, None, 70) is not None
    for row in (3, 17, 39):  # in the first, second and last chunk of ROWS_CHUNK rows: each is rounded by its own job
        bad_x = x.clone()
        bad_x[row, 3] = bad
        for threads in (1, 2):
            assert kernel.rows_product(bad_x, tiles, None, 70, threads) is None, (row, threads)
    assert kernel.rows_product(torch.zeros(0, 64), tiles, None, 70).shape == (0, 70)


def _layer(fmt: str, n: int, k: int) -> QuantizedLinear:
    module = QuantizedLinear(k, n, fmt, bias=True)
    gen = torch.Generator().manual_seed(n + k)
    module.load_buffers(_buffers(fmt, n, k, gen))
    module.bias.data.copy_(torch.randn(n, generator=gen))
    return module


@pytest.mark.parametrize("rows", [QuantizedLinear.FAST_ROWS + 1, 33, QuantizedLinear.MANY_ROWS])
def test_a_layer_sends_its_prefill_rows_to_rows_product(case, rows, monkeypatch):
    """5 .. MANY_ROWS rows of a Q8_0 or 4-bit layer (eager float32 on CPU) go through rows_product, one call for
    all rows, with the layer's packed tiles; MANY_ROWS + 1 rows do not."""
    fmt, kernel = case
    module = _layer(fmt, 70, 64)
    calls, real = [], kernel.rows_product

    def spy(x, *args, **kwargs):
        calls.append(x.shape[0])
        return real(x, *args, **kwargs)

    monkeypatch.setattr(kernel, "rows_product", spy)
    x = torch.randn(1, rows, 64)
    with torch.no_grad():
        y = module(x)
    assert calls == [rows] and module.runs_kernel(rows)
    tiles, kbias = module._kernel_packed(kernel, module.bias)
    assert torch.equal(y[0], torch.cat([kernel.gemv(row[None], tiles, kbias, 70, 1) for row in x[0]]))
    assert not module.runs_kernel(QuantizedLinear.MANY_ROWS + 1)


def test_a_layer_multiplies_a_non_finite_prefill_in_float32(case):
    """A NaN in one row: rows_product refuses, and the layer answers what F.linear on the dequantized weight
    answers (NaN where float32 gives NaN, the other rows exact to float32 summation)."""
    fmt, _ = case
    module = _layer(fmt, 70, 64)
    x = torch.randn(9, 64)
    x[4, 7] = float("nan")
    with torch.no_grad():
        got = module(x)
        expected = F.linear(x, module.weight, module.bias)
    assert torch.equal(got.isnan(), expected.isnan()) and bool(got[4].isnan().all())
    assert torch.allclose(got[~got.isnan()], expected[~expected.isnan()], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [5, 40])
def test_gated_rows_product_multiplies_silu_gate_times_up(case, rows):
    """gated=True: each row [g | u] is multiplied as h = silu(g) u (the AVX-512 variants make h in the kernel),
    against the same kernel on torch's F.silu(g) * u. The two h differ by float32 roundings of silu (a unit or two
    in the last place), and one such difference can move a row's rounding by its lo step s2 = max|h| / (127 *
    254) per input, so the bound per output is sum_j |w_j| * 2 s2 of that row. The AVX2 variant has no SwiGLU and
    answers None (the layer then makes h in torch)."""
    fmt, kernel = case
    n, k = 130, 96
    gen = torch.Generator().manual_seed(k)
    buffers = _buffers(fmt, n, k, gen)
    hu = torch.randn(rows, 2 * k, generator=gen) * 3.0  # [g | u]: g over silu's curved part and its tails
    tiles, kbias = kernel.pack_layer(buffers, None)
    h = F.silu(hu[:, :k]) * hu[:, k:]
    if kernel_variants.CHOSEN.get(f"{MODULES[fmt][1]}_rows") == "avx2":
        assert kernel.rows_product(hu, tiles, kbias, n, 2, gated=True) is None
        return
    expected = kernel.rows_product(h, tiles, kbias, n, 2)
    w = quantized.dequantize(fmt, buffers)
    bound = w.abs().sum(dim=1)[None, :] * 2 * (h.abs().amax(dim=1, keepdim=True) / (127 * 254))
    for threads in (1, 2):
        got = kernel.rows_product(hu, tiles, kbias, n, threads, gated=True)
        assert got.shape == (rows, n) and bool(((got - expected).abs() <= bound).all()), threads
    hu[rows // 2, 3] = float("nan")  # in g: the kernel refuses, as for any row that is not finite
    assert kernel.rows_product(hu, tiles, kbias, n, 2, gated=True) is None


def test_a_swiglu_feed_forward_makes_its_hidden_row_inside_w2_on_a_prompt(monkeypatch):
    """FeedForward with a quantized W_2 on a prompt: W_2's swiglu_product answers (W_2 is not called on a torch
    h), the output as close to the torch path as the kernel test above allows; with a recorder (the "hidden"
    site) or in training the torch path runs."""
    from attnlab import recording
    from attnlab.config import ModelConfig
    from attnlab.layers.feedforward import FeedForward

    config = ModelConfig(d_model=64, d_ff=96, n_heads=4, activation="swiglu", bias=False)
    ffn = FeedForward(config).eval()
    torch.manual_seed(0)
    ffn.up = QuantizedLinear.from_float(ffn.up, "int4")
    ffn.down = QuantizedLinear.from_float(ffn.down, "int4")
    if not ffn.down._rows_kernel(torch.zeros(8, 96), 8):
        pytest.skip("the 4-bit rows kernel does not run here")
    x = torch.randn(1, 12, 64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        fused = ffn(x)
        monkeypatch.setattr(QuantizedLinear, "swiglu_product", lambda self, h: None)
        plain = ffn(x)
    assert fused.shape == plain.shape == (1, 12, 64)
    assert float((fused - plain).abs().max()) <= 1e-3 * float(plain.abs().max())
    monkeypatch.undo()
    calls = []
    real = QuantizedLinear.swiglu_product
    monkeypatch.setattr(QuantizedLinear, "swiglu_product", lambda self, h: calls.append(1) or real(self, h))
    with torch.no_grad():
        ffn(x)
        assert calls == [1]
        with recording.capture(ffn, ["hidden"]) as store:
            ffn(x)
        assert calls == [1] and store["hidden"].shape == (1, 12, 96)  # the recorded h: torch's path
        ffn.train()
        ffn(x)
        assert calls == [1]
