"""attnlab's C++ operators for the compiled decoding step (layers/kernel_ops_native.py).

References: attnlab::decode_attention against torch's own scaled_dot_product_attention over the same cache
positions (float32; the sums run in another order, so |difference| <= 1e-5 max|reference|); the C++ kernel of
attnlab::quantized_rows against the Python kernel it replaces (the same gemv on the same tiles: equal bits), and a
row holding NaN handed on to float32's product, as the Python kernel does.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnlab.layers import int4_kernel, kernel_ops, kernel_ops_native
from attnlab.layers.quantized import QuantizedLinear


@pytest.fixture(scope="module", autouse=True)
def native():
    if not kernel_ops.ready():
        pytest.skip("attnlab's C++ operators could not be built here (no compiler or no torch headers)")


@pytest.mark.parametrize("heads, kv_heads, d_head", [(6, 2, 64), (4, 4, 40), (3, 1, 16)])
@pytest.mark.parametrize("length", [1, 7, 33])
def test_decode_attention_is_sdpa_over_the_stored_positions(heads, kv_heads, d_head, length):
    g = torch.Generator().manual_seed(length + heads)
    batch, capacity = 2, 40
    q = torch.randn(batch, heads, 1, d_head, generator=g)
    kv = torch.randn(2, batch, kv_heads, capacity, d_head, generator=g)
    scale = d_head ** -0.5
    got = kernel_ops.decode_attention(q, kv, torch.tensor([length - 1]), scale)  # the slot: the last position
    want = F.scaled_dot_product_attention(q, kv[0, :, :, :length], kv[1, :, :, :length], scale=scale,
                                          enable_gqa=kv_heads != heads)
    assert got.shape == want.shape
    assert float((got - want).abs().max()) <= 1e-5 * float(want.abs().max())


def test_decode_attention_refuses_a_slot_past_the_capacity():
    q, kv = torch.randn(1, 2, 1, 8), torch.randn(2, 1, 2, 5, 8)
    with pytest.raises(RuntimeError, match="0 <= slot < capacity"):
        kernel_ops.decode_attention(q, kv, torch.tensor([5]), 1.0)


@pytest.fixture(scope="module")
def layer():
    if not int4_kernel.available():
        pytest.skip(f"the 4-bit kernel does not run here: {int4_kernel.unavailable_reason()}")
    torch.manual_seed(0)
    module = QuantizedLinear.from_float(nn.Linear(64, 96), "int4")
    module.prepare_traced(0)
    return module


def _through_operator(layer, x, table):
    with kernel_ops.serving([layer], table):
        return kernel_ops.quantized_rows(x, 0, layer.out_features)


@pytest.mark.parametrize("rows", [1, 3])
def test_the_cpp_kernel_gives_the_python_kernels_bits(layer, rows):
    x = torch.randn(rows, 64, generator=torch.Generator().manual_seed(rows))
    before = kernel_ops.PRODUCTS[0]
    native = _through_operator(layer, x, kernel_ops_native.table([layer]))
    assert kernel_ops.PRODUCTS[0] - before == 1  # the C++ kernel took it
    python = _through_operator(layer, x, None)  # no table: handed to the Python kernel
    assert kernel_ops.PRODUCTS[0] - before == 1
    assert torch.equal(native, python)
    assert torch.allclose(native, F.linear(x, layer.weight, layer.bias), rtol=0, atol=2e-3)


def test_a_nan_row_gets_float32s_answer(layer):
    x = torch.randn(2, 64)
    x[1, 5] = float("nan")
    y = _through_operator(layer, x, kernel_ops_native.table([layer]))
    assert torch.isnan(y[1]).all() and not torch.isnan(y[0]).any()


def test_a_call_outside_serving_says_what_is_missing(layer):
    with pytest.raises(RuntimeError, match="no quantized layer 0 is being served"):
        kernel_ops.quantized_rows(torch.randn(1, 64), 0, 96)


FALLBACK_CHILD = r"""
import json, torch, attnlab
from attnlab.generation.compiled import COUNTS
from attnlab.layers import kernel_ops, kernel_ops_native

def refused():
    raise RuntimeError("no torch headers here")

kernel_ops_native.load = refused  # as where the C++ operators cannot be built
torch.manual_seed(0)
config = attnlab.presets["tiny-llama"].replace(n_layers=1, d_ff=96)
model = attnlab.quantize(attnlab.build_model(config).eval(), "int4")
compiled = attnlab.generate(model, [[5, 17, 30, 2]], max_new_tokens=4, threads=1, compile=True)
eager = attnlab.generate(model, [[5, 17, 30, 2]], max_new_tokens=4, threads=1, compile=False)
print(json.dumps({"tokens": compiled.tokens, "eager": eager.tokens, "steps": dict(COUNTS),
                  "native": kernel_ops.decodes_natively()}))
"""


def test_without_the_cpp_operators_the_compiled_step_runs_the_python_kernel():
    """Where the C++ library cannot be built, one warning names why, the operator's CPU kernel is the Python one,
    attention stays torch's, and the compiled steps give the eager tokens (a fresh process: the registration is
    process-wide)."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FALLBACK_CHILD], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["native"] is False
    assert got["steps"]["compiled"] == 3 and got["tokens"] == got["eager"]
    assert "the C++ kernel of attnlab::quantized_rows: RuntimeError: no torch headers here" in done.stderr
