"""The interventions' readouts on a masked LM that predicts from the previous position (smollm2-mlm's
predict_from_previous): every readout of "the prediction at position i" must equal the model's own logits at i,
which read the stream's row i - 1. Reference: the model's forward (Encoder.head_input); a readout that applied the
head to row i would differ by a whole prediction, not by rounding."""

import pytest
import torch

import attnlab
from attnlab.build import build_model
from attnlab.config import ModelConfig
from attnlab.interventions import clean_run, direct_logit_attribution, logit_lens, logprobs_at
from attnlab.interventions.attribution import site_gradients
from attnlab.interventions.readouts import logprobs_from

TINY = dict(topology="encoder", head="lm", vocab_size=40, d_model=16, n_heads=4, n_kv_heads=2, d_ff=24,
            n_layers=2, position="rope", norm="rmsnorm", activation="swiglu", bias=False, max_len=32,
            predict_from_previous=True)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(3)
    m = build_model(ModelConfig(**TINY)).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.3)
    return m


@pytest.fixture(scope="module")
def ids():
    return torch.randint(0, 40, (1, 7), generator=torch.Generator().manual_seed(4))


def own(model, ids):
    with torch.no_grad():
        return model(ids).logits.float().log_softmax(-1)  # (1, seq, vocab)


@pytest.mark.parametrize("position", [0, 3, -1])
def test_logprobs_at_and_clean_run_read_what_the_head_reads(model, ids, position):
    expected = own(model, ids)[:, position]
    assert torch.allclose(logprobs_at(model, ids, position), expected, atol=1e-5)  # float32 rounding
    assert torch.allclose(clean_run(model, ids, position).logprobs, expected, atol=1e-5)


def test_logprobs_from_a_recorded_stream_reads_the_previous_row(model, ids):
    streams = attnlab.record(model, ids, names=["blocks.1.resid_pre"])
    got = logprobs_from(model, ids, streams, start=1, rows=2, position=4)
    assert torch.allclose(got, own(model, ids)[:, 4].expand(2, -1), atol=1e-5)


def test_logit_lens_last_entry_is_the_models_own_output(model, ids):
    lens = logit_lens(model, ids)  # (layers + 1, 1, seq, vocab)
    assert torch.allclose(lens[-1], own(model, ids), atol=1e-5)
    picked = logit_lens(model, ids, positions=[5, 0])
    assert torch.allclose(picked[-1], own(model, ids)[:, [5, 0]], atol=1e-5)


def test_direct_logit_attribution_adds_up_to_the_models_own_difference(model, ids):
    dla = direct_logit_attribution(model, ids, answer=7, contrast=9, position=4)
    assert abs(float(dla["total"] - dla["logit_diff"])) < 1e-4  # float64 sums of float32 parts


def test_attribution_gradients_are_those_of_the_models_own_prediction(model, ids):
    name = "blocks.1.resid_pre"
    values, grads = site_gradients(model, ids, 4, [name], target=7, contrast=None)
    zero = torch.zeros_like(values[name], requires_grad=True)
    with torch.enable_grad(), attnlab.intervene(model, {name: lambda t, n: t + zero}):
        metric = model(ids).logits[0, 4].float().log_softmax(-1)[7]  # the forward's own (shifted) reading
        (reference,) = torch.autograd.grad(metric, [zero])
    assert reference.abs().max() > 1e-3  # a gradient that is there to compare
    assert torch.allclose(grads[name], reference, atol=1e-6)  # the same float32 backward
