"""AdamW groups and the warmup + cosine schedule, checked against closed-form values."""

import copy
import math

import pytest
import torch
from torch import nn

from attnlab import ModelConfig, build_model
from attnlab.training.optim import WarmupCosine, build_optimizer, build_scheduler, param_groups


def test_schedule_shape_matches_closed_form():
    peak, warmup, total, floor = 1e-3, 10, 110, 0.1
    model = nn.Linear(2, 2)
    opt = build_optimizer(model, lr=peak)
    sched = build_scheduler(opt, warmup, total, floor)
    lrs = []
    for _ in range(130):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    # linear warmup: (s + 1) / warmup of the peak
    for s in range(warmup):
        assert lrs[s] == pytest.approx(peak * (s + 1) / warmup, rel=1e-12)
    # cosine: 1 at the end of warmup, the midpoint of (1 + floor) / 2 halfway, the floor at the end and after
    assert lrs[warmup] == pytest.approx(peak, rel=1e-12)
    assert lrs[warmup + 50] == pytest.approx(peak * (floor + (1 - floor) * 0.5), rel=1e-12)
    assert lrs[warmup + 25] == pytest.approx(peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi / 4))),
                                             rel=1e-12)
    assert lrs[total] == pytest.approx(peak * floor, rel=1e-12)
    assert lrs[-1] == pytest.approx(peak * floor, rel=1e-12)
    assert all(a >= b for a, b in zip(lrs[warmup:], lrs[warmup + 1:], strict=False))  # never rises after warmup
    assert WarmupCosine(0, 10)(0) == pytest.approx(1.0)  # no warmup starts at the peak


@pytest.mark.parametrize("config", [
    ModelConfig(topology="decoder", vocab_size=40, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=8),
    ModelConfig(topology="encoder", vocab_size=40, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=8,
                pooler=True, type_vocab_size=2, lm_head_transform=True, lm_head_bias=True, embedding_norm=True),
    ModelConfig(topology="vit", image_size=8, patch_size=4, n_channels=1, d_model=16, n_heads=2, d_ff=32,
                n_layers=1, head="classifier", n_classes=3, vocab_size=1),
    ModelConfig(topology="decoder", vocab_size=40, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=8,
                norm="rmsnorm", position="rope", activation="swiglu", bias=False, tie_embeddings=False),
], ids=["gpt-tied", "bert", "vit", "llama"])
def test_weight_decay_only_on_projection_matrices(config):
    """Behavioural check: with zero gradients one AdamW step multiplies decayed weights by exactly (1 - lr*wd)
    and leaves every norm gain, bias and embedding untouched."""
    torch.manual_seed(0)
    model = build_model(config)
    lr, wd = 0.1, 0.5
    opt = build_optimizer(model, lr=lr, weight_decay=wd)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    modules = dict(model.named_modules())
    embedding_ids = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    for name, p in model.named_parameters():
        owner = modules[name.rsplit(".", 1)[0]] if "." in name else model
        is_matrix = isinstance(owner, (nn.Linear, nn.Conv2d)) and name.endswith("weight") and id(p) not in embedding_ids
        if is_matrix:
            torch.testing.assert_close(p.detach(), before[name] * (1 - lr * wd), rtol=1e-6, atol=0)
        else:
            assert torch.equal(p.detach(), before[name]), f"{name} was decayed"
    # every parameter is in exactly one group, tied matrices once
    grouped = [id(p) for g in param_groups(model, wd) for p in g["params"]]
    assert sorted(grouped) == sorted({id(p) for p in model.parameters()})


def test_fused_adamw_is_the_default_and_matches_the_per_tensor_update():
    """The trainer's AdamW runs torch's fused kernel on CPU; its steps must equal torch's own per-tensor
    (for-loop) AdamW with the same groups within float32 rounding (measured ~1e-8 after 5 steps)."""
    torch.manual_seed(0)
    config = ModelConfig(topology="decoder", vocab_size=20, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=8)
    fused_model = build_model(config)
    plain_model = build_model(config)
    plain_model.load_state_dict(fused_model.state_dict())
    fused = build_optimizer(fused_model, lr=1e-2, weight_decay=0.1)
    assert fused.defaults["fused"] is True
    plain = torch.optim.AdamW(param_groups(plain_model, 0.1), lr=1e-2, betas=(0.9, 0.95), eps=1e-8, foreach=False)
    ids = torch.randint(0, 20, (3, 8), generator=torch.Generator().manual_seed(1))
    for _ in range(5):
        for model, opt in ((fused_model, fused), (plain_model, plain)):
            opt.zero_grad()
            model(ids).logits.square().mean().backward()
            opt.step()
    for (name, a), b in zip(fused_model.named_parameters(), plain_model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)
    assert build_optimizer(fused_model, lr=1e-2, fused=False).defaults["fused"] is False


def test_attnlab_adamw_is_torchs_update_and_state_without_the_compiler():
    """build_optimizer's AdamW skips torch.optim's compiler wrappers (tests/training/test_memory.py checks the
    import); the update must be torch's own fused AdamW bit for bit (the same kernel, the same arguments), under
    the warmup + cosine schedule, and its state_dict the same, so a checkpoint resumes the same either way."""
    from attnlab.training.optim import AdamW

    torch.manual_seed(0)
    config = ModelConfig(topology="decoder", vocab_size=20, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=8)
    ours_model, torch_model = build_model(config), build_model(config)
    torch_model.load_state_dict(ours_model.state_dict())
    ours = build_optimizer(ours_model, lr=1e-2, weight_decay=0.1, betas=(0.9, 0.99))
    assert type(ours) is AdamW and isinstance(ours, torch.optim.AdamW) and ours.defaults["fused"] is True
    theirs = torch.optim.AdamW(param_groups(torch_model, 0.1), lr=1e-2, betas=(0.9, 0.99), eps=1e-8, fused=True)
    schedules = [build_scheduler(opt, 2, 8, 0.1) for opt in (ours, theirs)]
    ids = torch.randint(0, 20, (3, 8), generator=torch.Generator().manual_seed(1))

    def steps(n):
        for _ in range(n):
            for model, opt, schedule in zip((ours_model, torch_model), (ours, theirs), schedules, strict=True):
                opt.zero_grad(set_to_none=True)
                model(ids).logits.square().mean().backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
                opt.step()
                schedule.step()

    steps(4)
    for (name, a), b in zip(ours_model.named_parameters(), torch_model.parameters(), strict=True):
        assert torch.equal(a, b), name
    mine, reference = ours.state_dict(), theirs.state_dict()
    assert mine["param_groups"] == reference["param_groups"]
    assert mine["state"].keys() == reference["state"].keys()
    for key, state in mine["state"].items():
        for name, value in state.items():
            assert torch.equal(value, reference["state"][key][name]), (key, name)
    # a resume: a fresh AdamW loads torch's state and goes on exactly as torch's optimizer does
    ours = build_optimizer(ours_model, lr=1e-2, weight_decay=0.1, betas=(0.9, 0.99))
    schedules[0] = build_scheduler(ours, 2, 8, 0.1)  # the trainer's order: both built, then both loaded
    ours.load_state_dict(copy.deepcopy(reference))  # a copy: a loaded state keeps the tensors it is given
    schedules[0].load_state_dict(schedules[1].state_dict())
    steps(3)
    for (name, a), b in zip(ours_model.named_parameters(), torch_model.parameters(), strict=True):
        assert torch.equal(a, b), name
    assert ours.param_groups[0]["lr"] == theirs.param_groups[0]["lr"]
