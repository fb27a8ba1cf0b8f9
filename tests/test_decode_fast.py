"""The fast path (one-row products through attnlab's VNNI kernels: int8, 4-bit, Q8_0) gives the plain forward's
logits within the format's activation rounding, on every family that can be quantized (issue 25: one forward
path, the speed from the model's own forward).

Reference: a float32 model holding the decoded weights (materialize(float_state_dict(model))), run on the whole
sequence at once: an independent forward through torch's float products, no kernel and no cache. The quantized
model runs the way generation does: decoders prefill 6 tokens (more than FAST_ROWS rows: the decoded weight) and
then decode 4 tokens one at a time through their KV cache (one row: the kernels); encoders and encoder-decoders,
whose products are few-row only for short inputs, run 3 tokens. ViT is left out: its inputs are 17 patches, more
than FAST_ROWS rows, so its products never take the fast path.

Tolerance: |logits - reference| <= 5e-4 max|reference| with the kernels (x rounded to ~15 bits per row; tests/
test_quantized_grid.py measured at most 4.0e-5), 3e-2 where the CPU lacks them (fbgemm rounds x to 8 bits).
"""

from __future__ import annotations

import gguf_files
import pytest
import torch

import attnlab
from attnlab.cache import KVCache
from attnlab.layers import int8_kernel
from attnlab.layers.quantized import KERNELS, QuantizedLinear
from attnlab.quantization import float_state_dict
from attnlab.storage import materialize

IDS = torch.tensor([[5, 17, 30, 2, 9, 11, 40, 3, 8, 21]])
PREFILL = 6
FAMILIES = ["tiny-decoder", "tiny-llama", "tiny-encoder", "tiny-encoder-decoder", "tiny-t5"]
pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py


def tolerance() -> float:
    return 5e-4 if int8_kernel.available() else 3e-2


def _close(got: torch.Tensor, expected: torch.Tensor, what) -> None:
    error = float((got - expected).abs().max())
    assert error <= tolerance() * float(expected.abs().max()), (what, error, float(expected.abs().max()))


def _decode_steps(model, reference) -> int:
    """Prefill, then one token at a time through the cache; each step's logits against the reference's logits at
    that position of the whole sequence. Returns the steps checked."""
    with torch.no_grad():
        expected = reference(IDS).logits  # (1, 10, vocab)
        cache = KVCache.for_model(model, batch=1, capacity=IDS.shape[1])
        out = model(IDS[:, :PREFILL], cache=cache).logits
        _close(out, expected[:, :PREFILL], "prefill")
        for t in range(PREFILL, IDS.shape[1]):
            step = model(IDS[:, t:t + 1], cache=cache).logits  # (1, 1, vocab): one row, the kernels
            _close(step, expected[:, t:t + 1], f"step {t}")
    return IDS.shape[1] - PREFILL


def _kernels_ran(model) -> None:
    """Every quantized layer whose format has a kernel on this CPU went through it at least once (its packed layout
    is cached on first use), so the comparison above was the fast path's. (On an AVX2 CPU the int8 and Q8_0 kernels
    can run while a 4-bit one has no AVX2 variant.)"""
    layers = [m for m in model.modules() if isinstance(m, QuantizedLinear) and KERNELS[m.format].available()]
    assert all(m._packed is not None and "kernel" in m._packed[1][0] for m in layers), \
        [(m.format, m._packed and m._packed[1][0]) for m in layers]


def _quantized(name: str, scheme: str):
    torch.manual_seed(0)
    model = attnlab.quantize(attnlab.build_model(attnlab.presets[name]).eval(), scheme)
    return model, materialize(model.config, float_state_dict(model), "reference")


@pytest.mark.filterwarnings("ignore:int4 needs input widths divisible by 32")  # tiny-llama's d_ff: kept float
@pytest.mark.parametrize("scheme", ["int8", "int4"])
@pytest.mark.parametrize("name", FAMILIES)
def test_fast_path_logits_equal_the_plain_forward(name, scheme):
    model, reference = _quantized(name, scheme)
    assert any(isinstance(m, QuantizedLinear) for m in model.modules())
    topology = model.config.topology
    if topology == "decoder":
        assert _decode_steps(model, reference) == 4
        _kernels_ran(model)
        return
    ids = IDS[:, :3]  # 3 rows: the few-row path
    with torch.no_grad():
        if topology == "encoder-decoder":
            got, expected = model(ids, decoder_input_ids=ids).logits, reference(ids, decoder_input_ids=ids).logits
        else:
            got, expected = model(ids).logits, reference(ids).logits
    _close(got, expected, name)
    _kernels_ran(model)


def test_gguf_blocks_kept_decode_like_the_plain_forward(tmp_path):
    """A GGUF file's Q4_0 / Q4_1 / Q8_0 blocks (and Q8_0 tied head) kept: the same decode against the file's
    decoded weights."""
    model, _ = attnlab.load(gguf_files.write_quantized_gguf(tmp_path))
    formats = {m.format for m in model.modules() if isinstance(m, QuantizedLinear)}
    assert formats == {"q4_0", "q4_1", "q8_0"}, formats
    reference = materialize(model.config, float_state_dict(model), "reference")
    assert _decode_steps(model, reference) == 4
    _kernels_ran(model)
