"""A quantized model works the same before and after it generates, in every grad mode, at every input length and
every kernel setting (issue 28.1).

The bug this walks: `attnlab.generate` runs under torch.inference_mode, and a scratch buffer QuantizedLinear keeps
between calls (the chunked dequantization's) was first made there, as an inference tensor; a later call with 1-4
tokens (the few-row paths) under torch.no_grad() or in attnlab.record wrote into it in place: "Inplace update to
inference tensor outside InferenceMode". More tokens multiply the decoded weight and never touched it.

Grid: model (int8 and int4 by attnlab.quantize of a tiny random LLaMA, and a GGUF file whose Q4_0 / Q4_1 / Q8_0
blocks are kept) x kernel setting (attnlab's VNNI kernels where the CPU has them: int8, 4-bit and Q8_0, the last
checked to have run on the GGUF file's Q8_0 layers and tied head; use_kernel=False: fbgemm for int8, chunked
dequantization for the 4-bit formats and Q8_0) x phase (a fresh model; a fresh model after
`generate`) x mode (plain, torch.no_grad(), torch.inference_mode()) x input length 1..6 x operation (forward,
attnlab.record, a head ablated and the residual stream edited through attnlab.intervene, the logit lens). Every
cell must run; a cell after generate must equal the same cell before it bit for bit (the
same code on the same numbers), and every cell must agree with a float32 model holding the decoded weights (the
independent reference) within the activation rounding of the path.
"""

from __future__ import annotations

import contextlib

import gguf_files
import pytest
import torch

import attnlab
from attnlab.layers import int8_kernel, q8_0_kernel
from attnlab.layers.quantized import QuantizedLinear
from attnlab.quantization import float_state_dict
from attnlab.storage import materialize

MODES = {"plain": contextlib.nullcontext, "no_grad": torch.no_grad, "inference_mode": torch.inference_mode}
LENGTHS = range(1, 7)  # 1..4 rows: the few-row paths (QuantizedLinear.FAST_ROWS); 5, 6: the decoded weight
IDS = torch.tensor([[5, 17, 30, 2, 9, 11]])
pytestmark = pytest.mark.usefixtures("one_thread_per_module")  # tests/conftest.py

# |logits - reference| / max |reference|: the few-row paths round activations, the VNNI kernels to ~15 bits
# (measured at most 4.0e-5 on this grid), fbgemm to 8 bits per row (9.5e-3; 5.2e-3 for int4, whose int8 head is
# the fbgemm product); chunked dequantization and more rows multiply the decoded weight (float32 summation order)
TOLERANCE = {"VNNI kernels": 5e-4, "fbgemm / chunked": 3e-2}

OPERATIONS = {  # what a person does with a model: each gives the logits of `ids`
    "forward": lambda model, ids: model(ids).logits,
    "record": lambda model, ids: attnlab.record(model, ids)["logits"],
    "ablate a head": lambda model, ids: _intervened(model, ids, attnlab.ablate_heads(model, {0: [1]})),
    "edit the residual stream": lambda model, ids: _intervened(
        model, ids, {"blocks.*.resid_post": lambda t, name: t * 0.5}),
    "logit lens": lambda model, ids: attnlab.logit_lens(model, ids)[-1],
}


def _intervened(model, ids, edits) -> torch.Tensor:
    with attnlab.intervene(model, edits):
        return model(ids).logits


def _make(kind: str, folder) -> torch.nn.Module:
    """A fresh quantized model of `kind` (its caches and scratch buffers not yet made)."""
    if kind == "gguf":
        path = folder / "q.gguf"
        if not path.exists():
            gguf_files.write_quantized_gguf(folder)
        model, _ = attnlab.load(path)
        return model
    torch.manual_seed(0)
    return attnlab.quantize(attnlab.build_model(gguf_files.config()).eval(), kind)


def _sweep(model) -> dict[tuple, torch.Tensor | str]:
    """Every (mode, operation, length) cell: its logits, or the error it raised as one line."""
    cells = {}
    for mode, context in MODES.items():
        for op, run in OPERATIONS.items():
            for n in LENGTHS:
                try:
                    with context():
                        cells[mode, op, n] = run(model, IDS[:, :n]).detach().clone()
                except Exception as e:  # noqa: BLE001 - every cell is reported, not only the first failure
                    cells[mode, op, n] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    return cells


@pytest.fixture(scope="module")
def gguf_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("grid-gguf")


@pytest.mark.parametrize("setting", ["VNNI kernels", "fbgemm / chunked"])
@pytest.mark.parametrize("kind", ["int8", "int4", "gguf"])
def test_every_cell_works_before_and_after_generate(kind, setting, gguf_folder):
    if setting == "VNNI kernels" and not int8_kernel.available():
        pytest.skip(f"attnlab's kernels are unavailable here: {int8_kernel.unavailable_reason()}")
    phases = {}
    for phase in ("before", "after generate"):
        model = _make(kind, gguf_folder)
        layers = [m for m in model.modules() if isinstance(m, QuantizedLinear)]
        assert layers
        for m in layers:
            m.use_kernel = setting == "VNNI kernels"
        if phase == "after generate":
            out = attnlab.generate(model, IDS[:, :3], max_new_tokens=4)
            assert out.sequences.shape == (1, 7)
        phases[phase] = _sweep(model)
        q8_0 = [m for m in layers if m.format == "q8_0"]
        assert (kind == "gguf") == bool(q8_0)  # the file's attention outputs and tied head
        if setting == "VNNI kernels":  # the Q8_0 kernel ran on them (its packed tiles are cached on first use)
            assert all(m._packed is not None and m._packed[1][0] == q8_0_kernel.__name__ for m in q8_0)
    reference = materialize(model.config, float_state_dict(model), "reference")  # the decoded weights, float32

    failures = [f"{phase} / {mode} / {op} / {n} tokens: {got}" for phase, cells in phases.items()
                for (mode, op, n), got in cells.items() if isinstance(got, str)]
    assert failures == [], f"{len(failures)} cells failed:\n" + "\n".join(failures[:12])
    for cell, before in phases["before"].items():
        assert torch.equal(phases["after generate"][cell], before), cell
        with torch.no_grad():  # the same operation on the float32 model of the decoded weights
            expected = OPERATIONS[cell[1]](reference, IDS[:, :cell[2]])
        tolerance = TOLERANCE[setting] * float(expected.abs().max())
        assert float((before - expected).abs().max()) <= tolerance, (cell, float((before - expected).abs().max()))
