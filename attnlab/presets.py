"""Named model configurations, as data.

The famous ones reproduce the shapes of the seeds' table (BERT-base/large, GPT-2, GPT-3) and of the
models the seeds name (Vaswani et al. 2017, T5, BART, ViT); the tiny ones are for tests and CPU training.
"""

from __future__ import annotations

from typing import Any

from attnlab.config import ModelConfig
from attnlab.errors import ConfigError
from attnlab.spelling import did_you_mean

_BERT = dict(topology="encoder", vocab_size=30522, max_len=512, position="learned", activation="gelu",
             norm="layernorm", norm_eps=1e-12, norm_placement="post", embedding_norm=True, type_vocab_size=2,
             tie_embeddings=True, lm_head_bias=True, lm_head_transform=True, pooler=True, dropout=0.1,
             pad_token_id=0)
_GPT2 = dict(topology="decoder", vocab_size=50257, max_len=1024, position="learned", activation="gelu_tanh",
             norm="layernorm", norm_eps=1e-5, norm_placement="pre", tie_embeddings=True, dropout=0.1,
             bos_token_id=50256, eos_token_id=50256)
_LLAMA = dict(topology="decoder", position="rope", activation="swiglu", norm="rmsnorm", norm_eps=1e-5,
              norm_placement="pre", bias=False)

_SPECS: dict[str, dict[str, Any]] = {
    "bert-base": dict(_BERT, d_model=768, n_heads=12, d_ff=3072, n_layers=12),
    "bert-large": dict(_BERT, d_model=1024, n_heads=16, d_ff=4096, n_layers=24),
    "gpt2": dict(_GPT2, d_model=768, n_heads=12, d_ff=3072, n_layers=12),
    "gpt2-medium": dict(_GPT2, d_model=1024, n_heads=16, d_ff=4096, n_layers=24),
    "gpt3-175b": dict(_GPT2, d_model=12288, n_heads=96, d_ff=49152, n_layers=96, max_len=2048),
    # Vaswani et al. 2017, base model: shared 37k BPE vocabulary, post-LN, sinusoidal positions, ReLU.
    "transformer-base": dict(topology="encoder-decoder", vocab_size=37000, d_model=512, n_heads=8, d_ff=2048,
                             n_layers=6, max_len=512, position="sinusoidal", activation="relu",
                             norm_placement="post", scale_embeddings=True, dropout=0.1, pad_token_id=0,
                             bos_token_id=1, eos_token_id=2, decoder_start_token_id=1),
    "t5-small": dict(topology="encoder-decoder", vocab_size=32128, d_model=512, n_heads=8, d_ff=2048,
                     n_layers=6, max_len=512, position="t5", activation="relu", norm="rmsnorm", norm_eps=1e-6,
                     norm_placement="pre", bias=False, attn_scale=1.0, logit_scale=512 ** -0.5, dropout=0.1,
                     pad_token_id=0, eos_token_id=1, decoder_start_token_id=0),
    "bart-base": dict(topology="encoder-decoder", vocab_size=50265, d_model=768, n_heads=12, d_ff=3072,
                      n_layers=6, max_len=1024, position="learned", position_offset=2, activation="gelu",
                      norm_placement="post", embedding_norm=True, lm_head_bias=True, dropout=0.1,
                      pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2),
    "vit-base-16": dict(topology="vit", image_size=224, patch_size=16, n_channels=3, d_model=768, n_heads=12,
                        d_ff=3072, n_layers=12, position="learned", activation="gelu", norm_eps=1e-12,
                        norm_placement="pre", head="classifier", n_classes=1000, vocab_size=1),
    # The shape of SmolLM2-135M: LLaMA family (RoPE, RMSNorm, SwiGLU, grouped-query attention, no biases).
    "llama-style": dict(_LLAMA, vocab_size=49152, d_model=576, n_heads=9, n_kv_heads=3, d_ff=1536, n_layers=30,
                        max_len=8192, rope_theta=100000.0, tie_embeddings=True, bos_token_id=1, eos_token_id=2),
    # ---- tiny presets: tests and CPU training
    "tiny-encoder": dict(_BERT, vocab_size=1000, d_model=64, n_heads=4, d_ff=128, n_layers=2, max_len=128,
                         dropout=0.0),
    "tiny-decoder": dict(_GPT2, vocab_size=1000, d_model=64, n_heads=4, d_ff=256, n_layers=2, max_len=128,
                         dropout=0.0, bos_token_id=None, eos_token_id=None),
    "tiny-llama": dict(_LLAMA, vocab_size=1000, d_model=64, n_heads=4, n_kv_heads=2, d_ff=176, n_layers=2,
                       max_len=256, tie_embeddings=False),
    "tiny-encoder-decoder": dict(topology="encoder-decoder", vocab_size=1000, d_model=64, n_heads=4, d_ff=128,
                                 n_layers=2, max_len=128, position="sinusoidal", activation="relu",
                                 norm_placement="post", scale_embeddings=True, pad_token_id=0, bos_token_id=1,
                                 eos_token_id=2, decoder_start_token_id=1),
    "tiny-t5": dict(topology="encoder-decoder", vocab_size=1000, d_model=64, n_heads=4, d_ff=128, n_layers=2,
                    max_len=128, position="t5", activation="relu", norm="rmsnorm", norm_eps=1e-6, bias=False,
                    attn_scale=1.0, logit_scale=64 ** -0.5, pad_token_id=0, eos_token_id=1,
                    decoder_start_token_id=0),
    "tiny-vit": dict(topology="vit", image_size=28, patch_size=7, n_channels=1, d_model=64, n_heads=4, d_ff=128,
                     n_layers=2, position="learned", activation="gelu", head="classifier", n_classes=10,
                     vocab_size=1),
    # nanoGPT's shakespeare-char shape: 4 layers, 4 heads, width 128, block 64
    "gpt-char": dict(_GPT2, vocab_size=128, d_model=128, n_heads=4, d_ff=512, n_layers=4, max_len=64,
                     dropout=0.0, bos_token_id=None, eos_token_id=None),
}


def names() -> list[str]:
    return sorted(_SPECS)


def get(name: str, **overrides: Any) -> ModelConfig:
    """The preset called `name`, with optional field overrides."""
    if name not in _SPECS:
        raise ConfigError(f"unknown preset {name!r}{did_you_mean(name, names())}; presets: {', '.join(names())}")
    return ModelConfig(**{**_SPECS[name], "name": name, **overrides})


class _Presets(dict):
    """`attnlab.presets[name]` -> a fresh ModelConfig (configs are mutable, so never hand out a shared one)."""

    def __getitem__(self, name: str) -> ModelConfig:
        return get(name)

    def __contains__(self, name: object) -> bool:
        return name in _SPECS

    def __iter__(self):
        return iter(names())

    def __len__(self) -> int:
        return len(_SPECS)

    def keys(self):  # type: ignore[override]
        return names()

    def items(self):  # type: ignore[override]
        return [(n, get(n)) for n in names()]

    def values(self):  # type: ignore[override]
        return [get(n) for n in names()]


presets = _Presets()
"""Every named ModelConfig, by name: `attnlab.presets["tiny-llama"]` is a fresh copy (change it with
`.replace(...)`); `list(attnlab.presets)` lists the names: tiny ones for tests and demos, and the published
shapes of GPT-2, GPT-3, BERT, BART, T5, ViT, LLaMA-style and the original Transformer."""
