"""build_model on the default device builds without torch's device context (issue 25.6): that context routes
nn.init through torch._refs and imports torch._dynamo, sympy and mpmath (~5 s and ~77 MB at the start of every
`attnlab train`); the meta device still gives shapes only."""

from __future__ import annotations

import subprocess
import sys

import torch

from attnlab.build import build_model
from attnlab.config import ModelConfig

CONFIG = dict(topology="decoder", vocab_size=65, d_model=32, n_layers=2, n_heads=4, max_len=16, d_ff=64)


def test_cpu_build_imports_no_compiler_stack():
    code = ("import sys; from attnlab.build import build_model; from attnlab.config import ModelConfig; "
            f"m = build_model(ModelConfig(**{CONFIG!r})); "
            "print(sorted(n for n in ('torch._dynamo', 'sympy', 'mpmath') if n in sys.modules)); "
            "print({p.device.type for p in m.parameters()})")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]", out
    assert out[1] == "{'cpu'}", out


def test_meta_build_allocates_nothing_and_matches_the_cpu_shapes():
    torch.manual_seed(0)
    cpu = build_model(ModelConfig(**CONFIG))
    meta = build_model(ModelConfig(**CONFIG), device="meta")
    assert {p.device.type for p in meta.parameters()} == {"meta"}
    assert [(n, p.shape) for n, p in meta.named_parameters()] == [(n, p.shape) for n, p in cpu.named_parameters()]
