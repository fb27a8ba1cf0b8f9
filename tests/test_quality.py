"""Measuring quality: attnlab.evaluation's windowed perplexity against Hugging Face's own loss on the same weights,
and the `--quantize` option of `attnlab generate` / `attnlab explore` (refusals, and that it quantizes)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import attnlab
from attnlab.evaluation import perplexity, score_tokens, windows

VOCAB = 64


@pytest.fixture(scope="module")
def llama_pair():
    """A tiny random Hugging Face LLaMA with weights large enough that its perplexity is far from uniform (a
    token scored against the wrong target, or with the wrong context, changes it), and attnlab's conversion."""
    transformers = pytest.importorskip("transformers")
    from attnlab.interop.hf import from_hf_model

    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, intermediate_size=40, max_position_embeddings=256,
                                      attn_implementation="eager")
    hf = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return hf, from_hf_model(hf)


def hf_windowed_nll(hf, ids: torch.Tensor, window: int, stride: int) -> tuple[float, int]:
    """The recipe of Hugging Face's perplexity guide, written independently of attnlab.evaluation: windows end
    every `stride` tokens; labels before the window's new tokens are -100; HF's loss is the mean over the rest."""
    n, total, count, prev_end = ids.numel(), 0.0, 0, 1
    for end in range(1 + stride, n + stride, stride):
        end = min(end, n)
        begin = max(0, end - window)
        chunk = ids[begin:end][None]
        labels = chunk.clone()
        labels[:, : prev_end - begin] = -100  # context only: scored by an earlier window (or never, token 0)
        with torch.no_grad():
            loss = hf(chunk, labels=labels).loss  # mean over (labels[1:] != -100), HF shifts internally
        scored = int((labels[:, 1:] != -100).sum())
        total, count, prev_end = total + float(loss) * scored, count + scored, end
        if end == n:
            break
    return total, count


@pytest.mark.parametrize("n, window, stride", [(100, 32, 31), (100, 32, 8), (33, 32, None), (7, 32, None)])
def test_perplexity_equals_hugging_face_loss(llama_pair, n, window, stride):
    """Same weights, same windows: attnlab's perplexity == exp(HF's summed loss / tokens), within 1e-5 relative
    (float32 forward passes; the sums are float64 on both sides)."""
    hf, ours = llama_pair
    ids = torch.randint(0, VOCAB, (n,), generator=torch.Generator().manual_seed(n))
    total, count = hf_windowed_nll(hf, ids, window, window - 1 if stride is None else stride)
    scores = score_tokens(ours, ids, window, stride)
    assert scores.tokens == count == n - 1  # every token but the first, once
    expected = math.exp(total / count)
    assert abs(math.log(expected / VOCAB)) > 0.5  # far from uniform: a wrong target or window would show
    assert perplexity(ours, ids, window, stride) == pytest.approx(expected, rel=1e-5)


def test_one_window_is_the_written_out_cross_entropy(llama_pair):
    """A sequence inside one window: PPL = exp(cross_entropy(logits[:-1], ids[1:])), and top-1 = argmax."""
    _, ours = llama_pair
    ids = torch.randint(0, VOCAB, (40,), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits = ours(ids[None]).logits[0]
    scores = score_tokens(ours, ids, window=64)
    assert scores.perplexity == pytest.approx(math.exp(float(F.cross_entropy(logits[:-1], ids[1:]))), rel=1e-5)
    assert torch.equal(scores.top1, logits[:-1].argmax(-1))


@pytest.mark.parametrize("n, window, stride", [(2, 2, None), (10, 3, 1), (100, 16, 15), (101, 16, 5), (5, 64, 63)])
def test_windows_tile_the_scored_tokens_once(n, window, stride):
    spans = windows(n, window, stride)
    scored = [t for _, first, end in spans for t in range(first, end)]
    assert scored == list(range(1, n))
    assert all(end - start <= window and start < first for start, first, end in spans)


@pytest.mark.parametrize("n, window, stride, words", [
    (10, 1, None, "window=1"), (10, 8, 8, "stride=8"), (10, 8, 0, "stride=0"), (1, 8, None, "at least 2"),
])
def test_impossible_windows_are_refused(n, window, stride, words):
    with pytest.raises(attnlab.InputError, match=words):
        windows(n, window, stride)


def test_a_window_past_the_positions_is_refused():
    model = attnlab.build_model(attnlab.presets["tiny-decoder"].replace(max_len=16))
    with pytest.raises(attnlab.InputError, match="exceeds the model's 16 positions"):
        perplexity(model, torch.zeros(40, dtype=torch.long), window=32)
