"""GGUF: llama.cpp's Q/K row permutation undone, names mapped, transformers' own GGUF reader agrees.

A tiny LLaMA (random, seeded) is written as a float32 GGUF by attnlab; attnlab reads it back exactly, and
transformers (which implements the permutation independently) computes the original model's logits from it.
"""

from __future__ import annotations

import pytest
import torch
from conftest import hf_inputs, make_hf, max_diff, real, run_hf, run_ours

import attnlab
from attnlab.interop import from_hf_model
from attnlab.interop.gguf import permute, save_gguf, unpermute


def test_permutation_inverts_and_moves_rows():
    torch.manual_seed(0)
    w = torch.randn(2 * 8, 5)  # 2 heads of d_head 8
    assert torch.equal(unpermute(permute(w, 2), 2), w)
    # llama.cpp interleaves each head's halves: new row 2j is old row j, new row 2j+1 is old row j + d_head/2
    p = permute(w, 2)
    assert torch.equal(p[0], w[0]) and torch.equal(p[1], w[4]) and torch.equal(p[2], w[1])
    assert torch.equal(p[8 + 1], w[8 + 4])


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    hf = make_hf("llama")
    ours = from_hf_model(hf)
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    save_gguf(ours, path)
    return hf, ours, path


def test_gguf_round_trip_exact(tiny_gguf):
    _, ours, path = tiny_gguf
    loaded, tokenizer = attnlab.load(path)
    assert tokenizer is None  # the file carries no tokenizer metadata
    for name, tensor in ours.state_dict().items():
        assert torch.equal(tensor, loaded.state_dict()[name]), name


def test_transformers_reads_our_gguf(tiny_gguf):
    pytest.importorskip("accelerate")
    from transformers import AutoModelForCausalLM

    hf, _, path = tiny_gguf
    reread = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32).eval()
    loaded, _ = attnlab.load(path)
    inputs = hf_inputs("llama")
    where = real(inputs)
    expected = run_hf(hf, inputs).logits
    assert max_diff(expected, run_hf(reread, inputs).logits, where) <= 1e-5
    assert max_diff(expected, run_ours(loaded, inputs).logits, where) <= 1e-5
