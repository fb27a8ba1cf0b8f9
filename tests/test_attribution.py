"""Attribution patching (attnlab.interventions.attribution), against exact patching written out cell by cell.

- exact_patch equals patching one cell per forward by hand (a plain edit function), every grid;
- with corrupted = clean + eps * d at the embeddings (a float64 model), the estimate equals exact patching to
  O(eps^2) in every cell of every grid, and halving eps divides the error by about 4;
- the grids have the shapes and cells of the exact sweeps (trace_residual, head_sweep);
- the estimate costs two forwards whatever the grid's size (the exact sweep's count grows);
- a kept-quantized model (its backward through the float path) gives the float-expanded model's estimate;
- bad input: one InputError naming what is allowed.
"""

from __future__ import annotations

import pytest
import torch

import attnlab
from attnlab.errors import InputError
from attnlab.interventions.attribution import GRIDS, attribution_patch, exact_patch, site_names
from attnlab.interventions.readouts import clean_run
from attnlab.models.stack import Stack

TARGET = 5


def _model(n_layers: int = 2, dtype=torch.float64):
    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.presets["tiny-decoder"].replace(n_layers=n_layers)).eval()
    with torch.no_grad():  # move biases and norms off their zero/one init, so a bug there shows
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model.to(dtype)


@pytest.fixture(scope="module")
def model():
    return _model()


def _ids(seq: int = 5, seed: int = 1) -> torch.Tensor:
    return torch.randint(3, 1000, (1, seq), generator=torch.Generator().manual_seed(seed))


def _by_hand(model, ids, clean: dict, position: int = -1) -> dict[str, torch.Tensor]:
    """Exact effects on log P(TARGET), one full forward per cell, the cell copied from `clean` by a plain edit."""
    def metric(edits):
        with torch.no_grad(), attnlab.intervene(model, edits):
            return float(model(ids).logits[0, position].log_softmax(-1)[TARGET])

    def copy(name, index):
        def edit(t, _):
            t = t.clone()
            t[index] = clean[name][index]
            return t
        return {name: edit}

    base = metric({})
    n_layers, n_heads, seq = len(model.blocks), model.config.n_heads, ids.shape[1]
    out = {g: torch.zeros(n_layers, n_heads if g == "head" else seq, dtype=torch.float64) for g in GRIDS}
    for layer in range(n_layers):
        for p in range(seq):
            out["resid_pre"][layer, p] = metric(copy(f"blocks.{layer}.resid_pre", (slice(None), p))) - base
            out["attn"][layer, p] = metric(copy(f"blocks.{layer}.attn.z", (slice(None), p))) - base
            out["mlp"][layer, p] = metric(copy(f"blocks.{layer}.ffn.hidden", (slice(None), p))) - base
        for h in range(n_heads):
            out["head"][layer, h] = metric(copy(f"blocks.{layer}.attn.z", (slice(None), slice(None), h))) - base
    return out


def _nudged(model, ids, eps: float):
    """(clean run, edits): the corrupted run is the clean tokens with eps * d added to their embeddings."""
    d = torch.randn(1, ids.shape[1], model.config.d_model, generator=torch.Generator().manual_seed(2),
                    dtype=torch.float64)
    return clean_run(model, ids, -1, names=site_names(model)), {"embed": lambda t, n: t + eps * d}


def test_exact_patch_equals_one_patched_forward_per_cell(model):
    ids = _ids()
    clean, nudge = _nudged(model, ids, 0.05)
    with attnlab.intervene(model, nudge):
        exact = exact_patch(model, ids, ids, TARGET, clean=clean, batch_size=5)  # chunks split a layer's cells
        want = _by_hand(model, ids, clean.recorded)
    for grid in GRIDS:
        assert want[grid].abs().max() > 1e-3  # the nudge moves every grid
        assert (exact[grid].double() - want[grid]).abs().max() < 1e-5, grid  # float32 log-probs of ~-7


def test_attribution_equals_exact_patching_to_second_order_in_eps(model):
    """Error bound: 100 * eps^2 (1e-4 at eps = 1e-3), while the largest effects are ~1e-3..4e-3 (~eps)."""
    ids = _ids()
    errors = {}
    for eps in (1e-3, 5e-4):
        clean, nudge = _nudged(model, ids, eps)
        with attnlab.intervene(model, nudge):
            estimate = attribution_patch(model, ids, ids, TARGET, clean=clean)
            exact = _by_hand(model, ids, clean.recorded)
        for grid in GRIDS:
            assert exact[grid].abs().max() > 5 * 100 * eps**2, grid  # the bound is far below the effects
            errors[grid, eps] = float((estimate[grid].double() - exact[grid]).abs().max())
            assert errors[grid, eps] < 100 * eps**2, (grid, eps, errors[grid, eps])
    for grid in GRIDS:  # second order: half the eps, a quarter of the error
        assert 3.0 < errors[grid, 1e-3] / errors[grid, 5e-4] < 5.0, (grid, errors)


def test_the_grids_have_the_exact_sweeps_shapes_and_cells():
    model = _model(dtype=torch.float32)
    clean_ids, corrupted_ids = _ids(6, seed=1), _ids(6, seed=1)
    corrupted_ids[0, 2] = 17  # read at position 4 of 6: position 5 comes after it
    estimate = attribution_patch(model, clean_ids, corrupted_ids, TARGET, position=4)
    exact = exact_patch(model, clean_ids, corrupted_ids, TARGET, position=4)
    traced = attnlab.trace_residual(model, clean_ids, corrupted_ids, TARGET, position=4)  # P(target), (layers, seq)
    heads = attnlab.head_sweep(model, clean_ids, TARGET)
    assert {g: t.shape for g, t in estimate.items()} == {g: t.shape for g, t in exact.items()}
    assert estimate["resid_pre"].shape == traced.shape == (2, 6) and estimate["head"].shape == (2, 4)
    assert estimate["resid_pre"].shape == traced.shape and estimate["head"].shape == heads.shape
    p_corrupted = float(traced[0, 0])  # position 0 is the same token in both: patching it changes nothing
    assert (exact["resid_pre"] - (traced.log() - torch.tensor(p_corrupted).log())).abs().max() < 1e-4
    for grid in ("resid_pre", "attn", "mlp"):  # positions before the change and after the read one: exactly 0
        assert torch.equal(estimate[grid][:, [0, 1, 5]], torch.zeros(2, 3)), grid
        assert exact[grid][:, [0, 1, 5]].abs().max() < 1e-5, grid  # batched rows vs one: float32 rounding
    assert estimate["resid_pre"][0, 2] != 0


def _forwards(monkeypatch) -> list[int]:
    calls = []
    run = Stack.run
    monkeypatch.setattr(Stack, "run", lambda self, *a, **k: calls.append(1) or run(self, *a, **k))
    return calls


def test_the_estimate_costs_two_forwards_whatever_the_grid_size(monkeypatch):
    calls = _forwards(monkeypatch)
    counts = {}
    for n_layers, seq in ((2, 4), (4, 12)):
        model = _model(n_layers, torch.float32)
        clean_ids, corrupted_ids = _ids(seq, 1), _ids(seq, 2)
        calls.clear()
        attribution_patch(model, clean_ids, corrupted_ids, TARGET, contrast=7)
        estimate = len(calls)
        calls.clear()
        exact_patch(model, clean_ids, corrupted_ids, TARGET, contrast=7, batch_size=4)
        counts[n_layers, seq] = estimate, len(calls)
    assert counts[2, 4][0] == counts[4, 12][0] == 2  # one clean forward, one corrupted (plus one backward)
    assert counts[4, 12][1] > counts[2, 4][1] > 2


def test_a_kept_quantized_model_gives_the_float_models_estimate(tmp_path):
    """The backward of kept-quantized layers runs their float path: the estimate equals that of the same file
    expanded to float32, up to the kernels' rounding in the clean run (~2e-5 on logits of ~1 here)."""
    from gguf_files import write_quantized_gguf

    path = write_quantized_gguf(tmp_path)
    kept, _ = attnlab.load(path)
    expanded, _ = attnlab.load(path, keep_quantized=False)
    clean_ids = torch.randint(3, kept.config.vocab_size, (1, 6), generator=torch.Generator().manual_seed(1))
    corrupted_ids = clean_ids.clone()
    corrupted_ids[0, 2] = 7
    got = attribution_patch(kept, clean_ids, corrupted_ids, TARGET, contrast=9)
    want = attribution_patch(expanded, clean_ids, corrupted_ids, TARGET, contrast=9)
    for grid in GRIDS:
        assert want[grid].abs().max() > 1e-2
        assert (got[grid] - want[grid]).abs().max() < 1e-4, grid


def test_bad_input_is_one_clear_error(model):
    ids = _ids()
    with pytest.raises(InputError, match="allowed a non-empty selection of resid_pre, head, attn, mlp"):
        attribution_patch(model, ids, ids, TARGET, grids=["heads"])
    with pytest.raises(InputError, match="must have the same length"):
        attribution_patch(model, ids, _ids(seq=4), TARGET)
    with pytest.raises(InputError, match="target"):
        attribution_patch(model, ids, ids, 10**6)
    with pytest.raises(InputError, match="contrast"):
        exact_patch(model, ids, ids, TARGET, contrast=-1)
