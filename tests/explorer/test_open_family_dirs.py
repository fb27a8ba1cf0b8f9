"""A Hugging Face directory of each newer decoder family is offered by the explorer and answers its views: the
registry reads its model_type (no load), and the Architecture and Attention routes answer for it (tiny random
weights from transformers' own config classes, saved with save_pretrained; no download)."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

SHAPE = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64)
FAMILIES = {  # model_type -> (config class, model class, extra settings)
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": 2}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 8}),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 8}),
    "gemma3_text": ("Gemma3TextConfig", "Gemma3ForCausalLM", {"head_dim": 8, "sliding_window": 4,
                                                              "layer_types": ["sliding_attention", "full_attention"]}),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", {}),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {"pad_token_id": 0}),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", {}),
}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from fastapi.testclient import TestClient

    from attnlab.explorer.server.app import create_app
    from attnlab.explorer.server.registry import build_registry

    root = tmp_path_factory.mktemp("families")
    paths = {}
    for name, (config_cls, model_cls, extra) in FAMILIES.items():
        torch.manual_seed(0)
        shape = dict(SHAPE)
        if name == "gpt_neox":  # its own names for the same shape
            shape = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, max_position_embeddings=64)
        config = getattr(transformers, config_cls)(**shape, **extra)
        getattr(transformers, model_cls)(config).save_pretrained(root / name)
        paths[name] = root / name
    registry = build_registry(list(paths.values()), shipped=False, pretrained=False)
    ids = {e.source.name: e.id for e in registry.entries.values() if e.kind == "path"}
    with TestClient(create_app(registry), base_url="http://localhost") as c:
        c.ids = ids
        yield c


@pytest.mark.parametrize("family", list(FAMILIES))
def test_each_family_is_offered_and_its_views_answer(client, family):
    model_id = client.ids[family]
    listed = {m["id"]: m for m in client.get("/api/models").json()["models"]}
    assert listed[model_id]["available"] and listed[model_id]["topology"] == "decoder"
    arch = client.get(f"/api/architecture/{model_id}")
    assert arch.status_code == 200, arch.text
    att = client.post("/api/attention", json={"model": model_id, "text": "abc", "layer": 1, "head": 3})
    assert att.status_code == 200, att.text
    weights = att.json()["weights"]
    assert all(abs(sum(row) - 1) < 1e-4 for row in weights)  # softmax rows over the keys each query sees
