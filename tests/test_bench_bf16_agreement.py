"""attnlab.benchmarks.bf16_agreement on a tiny random GPT-2 saved as an HF directory: it runs both libraries in
bf16 and float32 and reports a first-divergence position (or "none") for every prompt; --device cuda is refused
with a message where no GPU exists. The real measurement (SmolLM2, gpt-char) lives in bench/results/."""

from __future__ import annotations

import re

import pytest
import torch

import attnlab
from attnlab.benchmarks import bf16_agreement

transformers = pytest.importorskip("transformers")


@pytest.fixture
def tiny_hf_directory(tmp_path):
    """A 2-layer GPT-2 with random weights and gpt-char's 104-character tokenizer, in the HF layout."""
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=104, n_positions=32, n_embd=32, n_layer=2, n_head=2)
    transformers.GPT2LMHeadModel(config).save_pretrained(tmp_path)
    attnlab.load("gpt-char")[1].save(tmp_path)
    return tmp_path


def test_every_prompt_gets_a_first_divergence_position(tiny_hf_directory, capsys):
    code = bf16_agreement.main(["--models", str(tiny_hf_directory), "--prompts", "2", "--tokens", "4",
                                "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 0
    assert "# command: python -m attnlab.benchmarks.bf16_agreement" in out and "transformers" in out
    rows = [line.split("|")[1:-1] for line in out.splitlines() if re.match(r"\| \d+ \|", line)]
    assert [r[0].strip() for r in rows] == ["1", "2"]
    for row in rows:
        # bf16 across libraries, each side against its float32 run, float32 across libraries
        assert all(re.fullmatch(r"none|[0-3]", cell.strip()) for cell in row[3:7]), row
        assert row[6].strip() == "none"  # float32: the same weights give the same greedy tokens
    assert re.search(r"median first divergence \d+(\.5)? of 4 tokens.*, \d/2 agree fully", out)


def test_first_divergence_says_none_only_when_every_token_agrees():
    assert bf16_agreement.first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert bf16_agreement.first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert bf16_agreement.first_divergence([1, 2], [1, 2, 3]) == 2


def test_a_prompt_is_cut_to_what_the_positions_leave_for_the_new_tokens():
    class Chars:
        def encode(self, text):
            return [ord(c) for c in text]

    assert bf16_agreement.prompt_ids(Chars(), "abcdef", limit=8, tokens=4) == [ord(c) for c in "cdef"]
    assert bf16_agreement.prompt_ids(Chars(), "abcdef", limit=None, tokens=4) == [ord(c) for c in "abcdef"]


def test_cuda_without_a_gpu_is_refused_with_a_message(capsys):
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present here: --device cuda is allowed")
    assert bf16_agreement.main(["--device", "cuda", "--models", "gpt-char"]) == 2
    err = capsys.readouterr().err
    assert "--device 'cuda'" in err and "no CUDA device" in err and "--device cpu" in err
