"""Bad checkpoints get a clear attnlab error naming what was wrong and what is allowed; nothing is half-loaded."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import make_hf

import attnlab
from attnlab.errors import CheckpointError, ConfigError
from attnlab.interop import config_from_hf, from_hf_model, save_hf
from attnlab.interop.gguf import save_gguf


@pytest.fixture
def bert_dir(tmp_path):
    save_hf(from_hf_model(make_hf("bert")), tmp_path)
    return tmp_path


def test_unsupported_family_names_the_supported_ones(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mamba", "hidden_size": 8}))
    with pytest.raises(CheckpointError) as info:
        attnlab.load(tmp_path)
    message = str(info.value)
    assert "'mamba'" in message
    for family in ("bert", "gpt2", "vit", "bart", "marian", "t5", "llama"):
        assert family in message


def test_unsupported_architecture_in_a_supported_family():
    with pytest.raises(ConfigError, match="BertForQuestionAnswering.*BertForMaskedLM"):
        config_from_hf({"model_type": "bert", "architectures": ["BertForQuestionAnswering"], "vocab_size": 10,
                        "hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 16,
                        "num_hidden_layers": 1})


def test_missing_weights(bert_dir):
    (bert_dir / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="no weights.*model.safetensors.*pytorch_model.bin"):
        attnlab.load(bert_dir)


def test_missing_tensor_is_named(bert_dir):
    from safetensors.torch import load_file, save_file

    tensors = load_file(bert_dir / "model.safetensors")
    del tensors["bert.encoder.layer.1.output.dense.weight"]
    save_file(tensors, bert_dir / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"missing tensors: \['bert.encoder.layer.1.output.dense.weight'\]"):
        attnlab.load(bert_dir)


def test_shapes_disagreeing_with_config_are_named(bert_dir):
    config = json.loads((bert_dir / "config.json").read_text())
    config["intermediate_size"] += 8  # the file's feed-forward matrices no longer fit
    (bert_dir / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError) as info:
        attnlab.load(bert_dir)
    message = str(info.value)
    assert "shapes disagree with config.json" in message
    assert "bert.encoder.layer.0.intermediate.dense.weight: " in message and "(40, 32)" in message
    assert "(48, 32)" in message


def test_pytorch_bin_is_read_weights_only(bert_dir):
    """pytorch_model.bin is accepted (torch.load(weights_only=True)) and gives the same model."""
    from safetensors.torch import load_file

    torch.save(load_file(bert_dir / "model.safetensors"), bert_dir / "pytorch_model.bin")
    reference, _ = attnlab.load(bert_dir)
    (bert_dir / "model.safetensors").unlink()
    model, _ = attnlab.load(bert_dir)
    for name, tensor in reference.state_dict().items():
        assert torch.equal(tensor, model.state_dict()[name])


def test_corrupted_weights(bert_dir):
    (bert_dir / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(CheckpointError, match="cannot be read"):
        attnlab.load(bert_dir)


# ------------------------------------------------------------------------------------------------- GGUF
def _tiny_llama():
    torch.manual_seed(0)
    return attnlab.build_model(attnlab.presets["tiny-llama"].replace(n_layers=1)).eval()


def test_gguf_unknown_architecture(tmp_path):
    from gguf import GGUFWriter

    path = tmp_path / "mamba.gguf"
    writer = GGUFWriter(str(path), "mamba")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(CheckpointError, match="architecture 'mamba' is not supported; supported: llama"):
        attnlab.load(path)


def test_gguf_unknown_quantization_type(tmp_path):
    """A tensor stored as Q8_1 (llama.cpp's intermediate type, not a storage type) is refused by name,
    before any tensor is dequantized."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFReader, GGUFWriter

    plain = tmp_path / "plain.gguf"
    save_gguf(_tiny_llama(), plain)
    reader = GGUFReader(str(plain))
    path = tmp_path / "q8_1.gguf"
    writer = GGUFWriter(str(path), "llama")
    for key, field in reader.fields.items():
        if key.startswith("llama."):
            value = field.contents()
            if isinstance(value, int):
                writer.add_uint32(key, value)
            else:
                writer.add_float32(key, float(value))
    block, size = GGML_QUANT_SIZES[GGMLQuantizationType.Q8_1]
    for t in reader.tensors:
        shape = tuple(int(n) for n in reversed(t.shape))
        if t.name == "blk.0.ffn_down.weight":
            raw = np.zeros((shape[0], shape[1] // block * size), dtype=np.uint8)
            writer.add_tensor(t.name, raw, raw_dtype=GGMLQuantizationType.Q8_1)
        else:
            writer.add_tensor(t.name, np.array(t.data).reshape(shape))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(CheckpointError, match=r"blk.0.ffn_down.weight: Q8_1.*supported: F32, F16, BF16, Q4_0"):
        attnlab.load(path)


def test_gguf_not_a_gguf(tmp_path):
    path = tmp_path / "junk.gguf"
    path.write_bytes(b"GGUF" + bytes(range(60)))
    with pytest.raises(CheckpointError, match="not a readable GGUF file"):
        attnlab.load(path)


def test_gguf_missing_tensor(tmp_path):
    from gguf_files import rewrite_gguf

    plain = tmp_path / "plain.gguf"
    save_gguf(_tiny_llama(), plain)
    path = rewrite_gguf(plain, tmp_path / "partial.gguf",
                        lambda name, values: None if name == "blk.0.attn_k.weight" else values)
    with pytest.raises(CheckpointError, match=r"lacks tensors \['blk.0.attn_k.weight'\]"):
        attnlab.load(path)
