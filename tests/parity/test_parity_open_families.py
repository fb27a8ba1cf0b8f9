"""Open decoder families from a Hugging Face directory: Qwen2, Qwen3, Mistral, OLMo 2, Phi-3, Gemma 2, Gemma 3
(text), GPT-NeoX (Pythia), LLaMA with scaled RoPE and Phi-3 with LongRoPE.

Each case is a tiny random model built from the transformers config class, written by `save_pretrained` to a
temporary folder and read back by `attnlab.load`. Proven equal to transformers:
- logits: max |difference| <= 1e-5 in float32 on a right-padded batch, at real tokens;
- greedy generation with attnlab's KV cache gives the very same tokens as transformers' generate (weights drawn
  peaked, std 0.15, so that an argmax is never a near-tie between two float32 roundings).
Several settings of each option: grouped-query attention on and off, an explicit head_dim, a sliding window
shorter than the prompt and than the generated text, each RoPE scaling type, partial RoPE, parallel and sequential
residuals.
"""

from __future__ import annotations

import pytest
import torch
from conftest import hf_inputs, max_diff, real, run_ours

import attnlab
from attnlab.errors import CheckpointError

transformers = pytest.importorskip("transformers")

TOL = 1e-5
VOCAB = 99
_SHAPE = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
              max_position_embeddings=64, attn_implementation="eager")
_LLAMA3 = {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
           "high_freq_factor": 4.0, "original_max_position_embeddings": 16}
_PHI3_IDS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)  # Phi-3's defaults lie outside a tiny vocabulary

# name -> (HF model class name, HF config class name, config keywords)
CASES = {
    "qwen2-gqa": ("Qwen2ForCausalLM", "Qwen2Config", dict(num_attention_heads=4, num_key_value_heads=2)),
    "qwen2-mha-tied": ("Qwen2ForCausalLM", "Qwen2Config", dict(num_attention_heads=4, num_key_value_heads=4,
                                                              tie_word_embeddings=True)),
    "qwen3-gqa-head_dim": ("Qwen3ForCausalLM", "Qwen3Config", dict(num_attention_heads=4, num_key_value_heads=2,
                                                                  head_dim=12)),
    "qwen3-mha": ("Qwen3ForCausalLM", "Qwen3Config", dict(num_attention_heads=4, num_key_value_heads=4, head_dim=8)),
    "mistral-window4-gqa": ("MistralForCausalLM", "MistralConfig", dict(num_attention_heads=4, num_key_value_heads=2,
                                                                       sliding_window=4)),
    "mistral-window3-mha": ("MistralForCausalLM", "MistralConfig", dict(num_attention_heads=4, num_key_value_heads=4,
                                                                       sliding_window=3, head_dim=16)),
    "mistral-no-window": ("MistralForCausalLM", "MistralConfig", dict(num_attention_heads=4, num_key_value_heads=2,
                                                                     sliding_window=None)),
    "qwen2-all-layers-window": ("Qwen2ForCausalLM", "Qwen2Config", dict(
        num_attention_heads=4, num_key_value_heads=2, use_sliding_window=True, sliding_window=3,
        max_window_layers=0)),
    "llama3-rope": ("LlamaForCausalLM", "LlamaConfig", dict(num_attention_heads=2, num_key_value_heads=1,
                                                           rope_parameters=_LLAMA3)),
    "linear-rope": ("LlamaForCausalLM", "LlamaConfig", dict(num_attention_heads=2, num_key_value_heads=2,
                                                           rope_parameters={"rope_type": "linear", "factor": 3.0,
                                                                            "rope_theta": 10000.0})),
    "yarn-rope": ("LlamaForCausalLM", "LlamaConfig", dict(num_attention_heads=2, num_key_value_heads=1,
                                                         rope_parameters={"rope_type": "yarn", "factor": 4.0,
                                                                          "rope_theta": 10000.0,
                                                                          "original_max_position_embeddings": 16})),
    "yarn-mscale-rope": ("Qwen2ForCausalLM", "Qwen2Config", dict(
        num_attention_heads=2, num_key_value_heads=1, rope_parameters={
            "rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0, "original_max_position_embeddings": 16,
            "mscale": 2.0, "mscale_all_dim": 1.0, "beta_fast": 16.0, "beta_slow": 2.0, "truncate": False})),
    # dynamic NTK changes nothing up to max_position_embeddings: 8 here, shorter than the batch and the generation
    "dynamic-rope": ("LlamaForCausalLM", "LlamaConfig", dict(num_attention_heads=2, num_key_value_heads=2,
                                                            max_position_embeddings=8,
                                                            rope_parameters={"rope_type": "dynamic", "factor": 2.0,
                                                                             "rope_theta": 10000.0})),
    # OLMo 2: RMSNorm on each sub-layer's output (not its input), q/k norm over all heads' features at once
    "olmo2-gqa": ("Olmo2ForCausalLM", "Olmo2Config", dict(num_attention_heads=4, num_key_value_heads=2)),
    "olmo2-mha-tied": ("Olmo2ForCausalLM", "Olmo2Config", dict(num_attention_heads=4, num_key_value_heads=4,
                                                              tie_word_embeddings=True, rms_norm_eps=1e-6)),
    # Phi-3: q | k | v and gate | up stored fused; a sliding window; partial RoPE
    "phi3-gqa-window": ("Phi3ForCausalLM", "Phi3Config", dict(num_attention_heads=4, num_key_value_heads=2,
                                                             sliding_window=5, **_PHI3_IDS)),
    "phi3-mha-partial": ("Phi3ForCausalLM", "Phi3Config", dict(num_attention_heads=4, num_key_value_heads=4,
                                                              partial_rotary_factor=0.5, **_PHI3_IDS)),
    # Phi-3's long-context RoPE (longrope): per-pair divisors, the short list while the sequence stays within
    # original_max_position_embeddings (8 here), the long one beyond it; cos and sin times sqrt(1 + ln 8 / ln 8)
    # (factor = max_position_embeddings / original). The batch (9 tokens) runs long; a generation from 6 tokens
    # crosses over at its third step, where transformers (and attnlab) turn only the new positions the long way
    "phi3-longrope": ("Phi3ForCausalLM", "Phi3Config", dict(
        num_attention_heads=4, num_key_value_heads=2, original_max_position_embeddings=8, **_PHI3_IDS,
        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 8,
                         "short_factor": [1.0, 1.5, 2.0, 3.0], "long_factor": [2.0, 4.0, 8.0, 16.0]})),
    "phi3-longrope-partial-short": ("Phi3ForCausalLM", "Phi3Config", dict(
        num_attention_heads=4, num_key_value_heads=4, original_max_position_embeddings=32, **_PHI3_IDS,
        rope_parameters={"rope_type": "longrope", "rope_theta": 500.0, "original_max_position_embeddings": 32,
                         "partial_rotary_factor": 0.5, "short_factor": [1.25, 3.0], "long_factor": [5.0, 9.0],
                         "attention_factor": 1.3})),
    # Gemma 2: sandwich norms with (1 + w) gains, GELU-tanh gated feed-forward, embeddings times sqrt(d_model),
    # soft-capped scores and logits (caps far below 50 and 30, so that capping matters at these sizes),
    # query_pre_attn_scalar,
    # a sliding window on layers 0, 2 (of 4), on every layer, or longer than the text
    "gemma2-alternating": ("Gemma2ForCausalLM", "Gemma2Config", dict(
        num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=8, sliding_window=3,
        attn_logit_softcapping=0.05, final_logit_softcapping=0.5, query_pre_attn_scalar=12)),
    "gemma2-mha-all-windowed": ("Gemma2ForCausalLM", "Gemma2Config", dict(
        num_attention_heads=4, num_key_value_heads=4, head_dim=12, sliding_window=4, attn_logit_softcapping=0.1,
        final_logit_softcapping=None, layer_types=["sliding_attention"] * 2)),
    "gemma2-no-caps-long-window": ("Gemma2ForCausalLM", "Gemma2Config", dict(
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=64,
        attn_logit_softcapping=None, final_logit_softcapping=None)),
    # Gemma 3 (text): Gemma 2's block with a q/k norm per head ((1 + w) gains), no caps by default, the sliding
    # layers' own RoPE base (rope_local_theta; far from the global one, so that mixing them up shows), the global
    # layers' RoPE scaled or not, five sliding layers to one global (the default pattern) or one to one
    "gemma3-default-pattern": ("Gemma3ForCausalLM", "Gemma3TextConfig", dict(
        num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=2, head_dim=8, sliding_window=3,
        query_pre_attn_scalar=12, rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                                                   "sliding_attention": {"rope_type": "default", "rope_theta": 10.0}})),
    "gemma3-alternating-linear-rope": ("Gemma3ForCausalLM", "Gemma3TextConfig", dict(
        num_attention_heads=4, num_key_value_heads=4, head_dim=12, sliding_window=4,
        layer_types=["sliding_attention", "full_attention"], final_logit_softcapping=0.5,
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 100.0}})),
    "gemma3-mqa-all-windowed": ("Gemma3ForCausalLM", "Gemma3TextConfig", dict(
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=5, query_pre_attn_scalar=16,
        layer_types=["sliding_attention"] * 2)),
    # GPT-NeoX: RoPE on the first quarter (default rotary_pct) or half of each head, attention and feed-forward in
    # parallel (default) or one after the other; q, k, v fused head by head
    "neox-parallel-quarter": ("GPTNeoXForCausalLM", "GPTNeoXConfig", dict(num_attention_heads=4)),
    "neox-sequential-half": ("GPTNeoXForCausalLM", "GPTNeoXConfig", dict(
        num_attention_heads=2, use_parallel_residual=False,
        rope_parameters={"rope_type": "default", "rope_theta": 500.0, "partial_rotary_factor": 0.5})),
    "neox-tied-linear-rope": ("GPTNeoXForCausalLM", "GPTNeoXConfig", dict(
        num_attention_heads=4, tie_word_embeddings=True, hidden_act="gelu_new",
        rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0, "partial_rotary_factor": 0.5})),
}


def _hf_model(case: str, std: float = 0.05, peaked: bool = False):
    """The case's tiny HF model in eval mode, every trainable tensor perturbed with a fixed seed (so that a
    mapping that drops or swaps a norm gain or a bias changes the outputs); `peaked`: matrices redrawn at std 0.15."""
    torch.manual_seed(0)
    model_class, config_class, keywords = CASES[case]
    config = getattr(transformers, config_class)(**{**_SHAPE, **keywords})
    model = getattr(transformers, model_class)(config).eval()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if peaked and p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.15)
            else:
                p.add_(torch.randn(p.shape, generator=gen) * std)
    return model


def _saved(case: str, tmp_path, **kwargs):
    """(HF model, attnlab model read from the directory the HF model was saved to)."""
    hf = _hf_model(case, **kwargs)
    hf.save_pretrained(tmp_path)
    ours, _ = attnlab.load(tmp_path)
    return hf, ours


@pytest.mark.parametrize("case", CASES)
def test_logits_equal_transformers(case, tmp_path):
    hf, ours = _saved(case, tmp_path)
    inputs = hf_inputs("llama")  # (3, 9), rows 1 and 2 right-padded
    with torch.no_grad():
        expected = hf(**inputs).logits
    got = run_ours(ours, inputs).logits
    assert max_diff(expected, got, real(inputs)) <= TOL
    assert float(got.std()) > 1e-2  # the comparison means something: logits vary


@pytest.mark.parametrize("case", CASES)
def test_greedy_generation_with_cache_equals_transformers(case, tmp_path):
    hf, ours = _saved(case, tmp_path, peaked=True)
    prompts = torch.tensor([[5, 17, 3, 44, 9, 12], [21, 8, 33, 2, 71, 90]])
    with torch.no_grad():
        expected = hf.generate(prompts, attention_mask=torch.ones_like(prompts), max_new_tokens=8, do_sample=False,
                               eos_token_id=None, pad_token_id=0)
    got = attnlab.generate(ours, prompts, max_new_tokens=8, eos_token_id=None)
    assert got.sequences.tolist() == expected.tolist()


@pytest.mark.parametrize("case", ["gemma3-default-pattern", "gemma3-alternating-linear-rope", "mistral-window3-mha"])
def test_a_left_padded_batch_generates_what_its_rows_do_alone(case, tmp_path):
    """Prompts of 7 and 3 tokens in one left-padded batch, 8 greedy tokens with the cache, well past the window:
    each row's tokens and step logits are those of the row alone (the local layers' RoPE counts a row's real tokens,
    the window its real keys)."""
    _, ours = _saved(case, tmp_path, peaked=True)
    prompts = [[5, 17, 3, 44, 9, 12, 60], [21, 8, 33]]
    batch = attnlab.generate(ours, prompts, max_new_tokens=8, eos_token_id=None, keep_logits=True)
    for row, prompt in enumerate(prompts):
        alone = attnlab.generate(ours, [prompt], max_new_tokens=8, eos_token_id=None, keep_logits=True)
        assert alone.tokens[0] == batch.tokens[row]
        for step_alone, step_batch in zip(alone.logits, batch.logits, strict=True):
            assert float((step_alone[0] - step_batch[row]).abs().max()) <= TOL


@pytest.mark.parametrize("case, window", [("mistral-window3-mha", 3), ("gemma3-default-pattern", 3),
                                          ("gemma2-alternating", 3)])
def test_the_sliding_window_bounds_the_cache(case, window, tmp_path, monkeypatch):
    """Generating 12 tokens after 6 (17 positions run through the cache), each sliding-window layer's cache holds
    `window` positions, never more, and each global layer all 17; the tokens are transformers' own."""
    from attnlab.cache import KVCache

    hf, ours = _saved(case, tmp_path, peaked=True)
    made = []
    for_model = KVCache.for_model.__func__

    def keep(cls, *args, **kwargs):
        made.append(for_model(cls, *args, **kwargs))
        return made[-1]

    monkeypatch.setattr(KVCache, "for_model", classmethod(keep))
    prompts = torch.tensor([[5, 17, 3, 44, 9, 12], [21, 8, 33, 2, 71, 90]])
    got = attnlab.generate(ours, prompts, max_new_tokens=12, eos_token_id=None)
    with torch.no_grad():
        expected = hf.generate(prompts, attention_mask=torch.ones_like(prompts), max_new_tokens=12, do_sample=False,
                               eos_token_id=None, pad_token_id=0)
    assert got.sequences.tolist() == expected.tolist()
    (cache,) = made
    every = ours.config.global_every
    for i, layer in enumerate(cache.layers):
        sliding = every is None or (i + 1) % every != 0
        assert (layer.capacity, layer.length, layer.seen) == ((window, window, 17) if sliding else (18, 17, 17)), i


@pytest.mark.parametrize("case", ["qwen2-gqa", "qwen3-gqa-head_dim", "mistral-window4-gqa", "qwen2-all-layers-window",
                                  "olmo2-gqa", "phi3-gqa-window", "phi3-mha-partial", "gemma2-alternating",
                                  "gemma2-mha-all-windowed", "gemma3-default-pattern",
                                  "gemma3-alternating-linear-rope", "neox-parallel-quarter", "neox-sequential-half",
                                  "llama3-rope", "yarn-mscale-rope", "dynamic-rope", "phi3-longrope",
                                  "phi3-longrope-partial-short"])
def test_written_back_for_transformers(case, tmp_path):
    """attnlab writes the family's layout back (model.save(d, format="hf")): transformers' from_pretrained computes
    the original's logits from it, and attnlab reads the same config and the very same tensors back."""
    hf, ours = _saved(case, tmp_path / "original")
    ours.save(tmp_path / "written", format="hf")
    reread = getattr(transformers, CASES[case][0]).from_pretrained(tmp_path / "written").eval()
    inputs = hf_inputs("llama")
    with torch.no_grad():
        assert max_diff(hf(**inputs).logits, reread(**inputs).logits, real(inputs)) <= TOL
    back, _ = attnlab.load(tmp_path / "written")
    assert back.config.replace(name="", extra={}) == ours.config.replace(name="", extra={})
    state = back.state_dict()
    assert all(torch.equal(tensor, state[name]) for name, tensor in ours.state_dict().items())


def test_options_reach_the_config(tmp_path):
    """What each family turns on, read from the directory (so a translation that drops an option fails here even
    where the tiny model's logits would hide it)."""
    expected = {"qwen2-gqa": dict(bias=False, qkv_bias=True, qk_norm="none", sliding_window=None),
                "qwen3-gqa-head_dim": dict(bias=False, qkv_bias=None, qk_norm="head", d_head=12),
                "mistral-window4-gqa": dict(bias=False, sliding_window=4, n_kv_heads=2),
                "qwen2-all-layers-window": dict(sliding_window=3),
                "llama3-rope": dict(rope_scaling={"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                  "high_freq_factor": 4.0, "original_max_len": 16}),
                "dynamic-rope": dict(rope_scaling={"type": "dynamic", "factor": 2.0, "original_max_len": 8}),
                "olmo2-gqa": dict(qk_norm="all", norm_placement="output", bias=False, final_norm=None),
                "phi3-gqa-window": dict(sliding_window=5, n_kv_heads=2, rotary_dim=None),
                "phi3-mha-partial": dict(rotary_dim=4, sliding_window=None),
                "gemma2-alternating": dict(norm_placement="sandwich", sliding_window=3, global_every=2,
                                           attn_softcap=0.05, logit_softcap=0.5, attn_scale=12 ** -0.5,
                                           scale_embeddings=True, activation="geglu_tanh", tie_embeddings=True),
                "gemma2-no-caps-long-window": dict(sliding_window=64, global_every=2, attn_softcap=None,
                                                   logit_softcap=None, attn_scale=256 ** -0.5),
                "gemma3-default-pattern": dict(norm_placement="sandwich", qk_norm="head", sliding_window=3,
                                               global_every=6, rope_theta=1e6, rope_local_theta=10.0,
                                               attn_scale=12 ** -0.5, attn_softcap=None, logit_softcap=None,
                                               scale_embeddings=True, activation="geglu_tanh"),
                "gemma3-alternating-linear-rope": dict(global_every=2, rope_local_theta=100.0, logit_softcap=0.5,
                                                       rope_scaling={"type": "linear", "factor": 8.0}),
                "neox-parallel-quarter": dict(rotary_dim=2, parallel_residual=True, bias=True, norm="layernorm"),
                "neox-sequential-half": dict(rotary_dim=8, parallel_residual=False, rope_theta=500.0)}
    for case, fields in expected.items():
        _hf_model(case).save_pretrained(tmp_path / case)
        config = attnlab.load(tmp_path / case)[0].config
        assert {k: getattr(config, k) for k in fields} == fields, case


@pytest.mark.parametrize("case, change, message", [
    ("qwen2-gqa", dict(use_sliding_window=True, sliding_window=3, max_window_layers=1),
     "use_sliding_window=True on some layers only"),
    ("qwen3-mha", dict(attention_bias=True), "qwen3: attention_bias=True"),
    ("llama3-rope", dict(rope_parameters={"rope_type": "proportional", "rope_theta": 10000.0}),
     "rope_type='proportional' is not supported; supported: default, linear, dynamic, llama3, yarn, longrope"),
    ("gemma2-alternating", dict(layer_types=["sliding_attention", "full_attention", "full_attention",
                                             "sliding_attention"]), "layer_types is not a periodic pattern"),
    ("olmo2-gqa", dict(attention_bias=True), "olmo2: attention_bias=True"),
    ("neox-parallel-quarter", dict(attention_bias=False), "gpt_neox: attention_bias=False"),
    ("qwen2-gqa", dict(rope_parameters={"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5}),
     "qwen2: a partial_rotary_factor below 1 is not supported for this family"),
])
def test_unsupported_options_are_refused_in_one_line(case, change, message, tmp_path):
    model_class, config_class, keywords = CASES[case]
    config = getattr(transformers, config_class)(**{**_SHAPE, **keywords, **change})
    getattr(transformers, model_class)(config).save_pretrained(tmp_path)
    with pytest.raises(CheckpointError, match=message) as info:
        attnlab.load(tmp_path)
    assert "\n" not in str(info.value)


def test_gemma3_multimodal_is_refused_by_name(tmp_path):
    """Gemma 3's image-and-text checkpoints (model_type gemma3, a vision tower beside the text decoder) are named and
    refused; its text-only one (gemma3_text) is what attnlab reads."""
    (tmp_path / "config.json").write_text('{"model_type": "gemma3", "text_config": {"vocab_size": 99}, '
                                          '"vision_config": {"hidden_size": 8}}')
    with pytest.raises(CheckpointError, match=r"model_type='gemma3' is not supported \(multimodal: vision_config, "
                       r"a tower beside the text model\); supported families: .*gemma3") as info:
        attnlab.load(tmp_path)
    assert "\n" not in str(info.value)


def test_mixture_of_experts_is_refused_by_name(tmp_path):
    """An MoE sibling (its own model_type) is named and refused before any tensor is read."""
    (tmp_path / "config.json").write_text('{"model_type": "qwen2_moe", "vocab_size": 99}')
    with pytest.raises(CheckpointError, match="model_type='qwen2_moe' is not supported; supported families: .*qwen3"):
        attnlab.load(tmp_path)


def measured_figures(directory) -> list[tuple[str, float, str]]:
    """(case, max |logits difference| at real tokens, greedy tokens equal?) for every case here and every family of
    conftest.py, each read back from a directory transformers wrote: the figures of docs/interop.md's table."""
    from conftest import FAMILIES, hf_logits, make_hf

    rows = []
    for family in FAMILIES:
        hf = make_hf(family)
        hf.save_pretrained(directory / family)
        ours, _ = attnlab.load(directory / family)
        inputs = hf_inputs(family)
        with torch.no_grad():
            expected = hf_logits(hf(**inputs))
        where = None if family == "vit" else real(inputs)
        rows.append((family, max_diff(expected, run_ours(ours, inputs).logits, where), "not run here"))
    for case in CASES:
        hf, ours = _saved(case, directory / case)
        inputs = hf_inputs("llama")
        with torch.no_grad():
            expected = hf(**inputs).logits
        diff = max_diff(expected, run_ours(ours, inputs).logits, real(inputs))
        hf, ours = _saved(case, directory / f"{case}-peaked", peaked=True)
        prompts = torch.tensor([[5, 17, 3, 44, 9, 12], [21, 8, 33, 2, 71, 90]])
        with torch.no_grad():
            theirs = hf.generate(prompts, attention_mask=torch.ones_like(prompts), max_new_tokens=8,
                                 do_sample=False, eos_token_id=None, pad_token_id=0)
        same = attnlab.generate(ours, prompts, max_new_tokens=8, eos_token_id=None).sequences.tolist() == \
            theirs.tolist()
        rows.append((case, diff, "identical" if same else "DIFFERENT"))
    return rows


if __name__ == "__main__":  # python tests/parity/test_parity_open_families.py: the figures, one line per case
    import sys
    import tempfile
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    with tempfile.TemporaryDirectory() as tmp:
        for case, diff, tokens in measured_figures(Path(tmp)):
            print(f"{case:28s} max |logits diff| {diff:.1e}   greedy tokens (8 new, KV cache): {tokens}")


@pytest.mark.parametrize("case", ["qwen2-gqa", "phi3-gqa-window", "gemma2-alternating", "gemma3-default-pattern",
                                  "olmo2-gqa", "neox-parallel-quarter", "neox-tied-linear-rope"])
def test_the_model_in_memory_equals_transformers(case):
    """from_hf_model on the transformers model object (its state_dict's names, not the saved file's: transformers 5
    calls GPT-NeoX's head lm_head in memory and embed_out on disk) computes its logits."""
    from attnlab.interop import from_hf_model

    hf = _hf_model(case)
    ours = from_hf_model(hf)
    inputs = hf_inputs("llama")
    with torch.no_grad():
        expected = hf(**inputs).logits
    assert max_diff(expected, run_ours(ours, inputs).logits, real(inputs)) <= TOL
