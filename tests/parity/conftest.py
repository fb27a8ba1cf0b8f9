"""Tiny random Hugging Face models of every family attnlab reads, and padded inputs for them.

Nothing is downloaded: each model is built from a small config with a fixed seed. transformers initialises
LayerNorm gains to 1 and biases to 0; a seeded perturbation of every trainable tensor makes sure a mapping that
swaps, drops or transposes such a tensor changes the outputs (a test that could not fail proves nothing).
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

FAMILIES = ("bert", "gpt2", "vit", "bart", "marian", "t5", "llama")
VOCAB = 99


def _tiny_config(family: str):
    t = transformers
    common_s2s = dict(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                      decoder_attention_heads=4, encoder_ffn_dim=40, decoder_ffn_dim=40, max_position_embeddings=64,
                      attn_implementation="eager")
    return {
        "bert": lambda: (t.BertForPreTraining, t.BertConfig(
            vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
            max_position_embeddings=64, attn_implementation="eager")),
        "gpt2": lambda: (t.GPT2LMHeadModel, t.GPT2Config(
            vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=1, eos_token_id=2,
            attn_implementation="eager")),
        "vit": lambda: (t.ViTForImageClassification, t.ViTConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40, image_size=16,
            patch_size=4, num_channels=3, num_labels=5, attn_implementation="eager")),
        "bart": lambda: (t.BartForConditionalGeneration, t.BartConfig(**common_s2s)),
        "marian": lambda: (t.MarianMTModel, t.MarianConfig(
            **common_s2s, pad_token_id=VOCAB - 1, decoder_start_token_id=VOCAB - 1, eos_token_id=0,
            scale_embedding=True, activation_function="swish")),
        "t5": lambda: (t.T5ForConditionalGeneration, t.T5Config(
            vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=40, num_layers=2, num_decoder_layers=3, num_heads=4,
            feed_forward_proj="gated-gelu", tie_word_embeddings=False, initializer_factor=0.2,
            attn_implementation="eager")),  # factor 0.2 keeps logits O(1), where an absolute 1e-5 is meaningful
        "llama": lambda: (t.LlamaForCausalLM, t.LlamaConfig(
            vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=40, max_position_embeddings=64, attn_implementation="eager")),
    }[family]()


def make_hf(family: str, seed: int = 0, **overrides):
    """A tiny HF model of `family` in eval mode, every trainable tensor perturbed with a fixed seed."""
    torch.manual_seed(seed)
    cls, config = _tiny_config(family)
    for key, value in overrides.items():
        setattr(config, key, value)
    model = cls(config).eval()
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.requires_grad:
                p.add_(torch.randn_like(p) * 0.05)
    return model


def hf_inputs(family: str, seed: int = 1) -> dict[str, torch.Tensor]:
    """A padded batch: row 0 full, rows 1 and 2 padded on the right (mask 0 on pads)."""
    g = torch.Generator().manual_seed(seed)
    if family == "vit":
        return {"pixel_values": torch.randn(3, 3, 16, 16, generator=g)}

    def ids(seq):
        x = torch.randint(3, VOCAB - 1, (3, seq), generator=g)
        mask = torch.ones(3, seq, dtype=torch.long)
        mask[1, seq - 2:] = 0
        mask[2, 3:] = 0
        return x, mask

    x, mask = ids(9)
    out = {"input_ids": x, "attention_mask": mask}
    if family in ("bart", "marian", "t5"):
        y, ymask = ids(6)
        out.update(decoder_input_ids=y, decoder_attention_mask=ymask)
    return out


def run_hf(model, inputs, **kwargs):
    with torch.no_grad():
        return model(**inputs, output_hidden_states=True, **kwargs)


def run_ours(model, inputs):
    """The same call on an attnlab model (its argument names follow HF's where they mean the same)."""
    with torch.no_grad():
        if "pixel_values" in inputs:
            return model(inputs["pixel_values"])
        if "decoder_input_ids" in inputs:
            return model(inputs["input_ids"], inputs["decoder_input_ids"], attention_mask=inputs["attention_mask"],
                         decoder_attention_mask=inputs["decoder_attention_mask"])
        return model(inputs["input_ids"], attention_mask=inputs["attention_mask"])


def hf_logits(out):
    return out.prediction_logits if hasattr(out, "prediction_logits") else out.logits


def hf_last_hidden(out):
    return out.decoder_hidden_states[-1] if getattr(out, "decoder_hidden_states", None) else out.hidden_states[-1]


def real(inputs) -> torch.Tensor | None:
    """(batch, seq) bool of the positions whose outputs are compared (the real tokens of the output side)."""
    mask = inputs.get("decoder_attention_mask", inputs.get("attention_mask"))
    return None if mask is None else mask.bool()


def max_diff(a: torch.Tensor, b: torch.Tensor, where: torch.Tensor | None = None) -> float:
    assert a.shape == b.shape, (a.shape, b.shape)
    d = (a - b).abs()
    return float((d[where] if where is not None else d).max())


@pytest.fixture(params=FAMILIES)
def family(request) -> str:
    return request.param
