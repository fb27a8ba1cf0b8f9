"""Quantized models saved and loaded: the same modules, formats and bits come back (int8, int4, a GGUF file kept
quantized); the tied embedding still reads its head's codes; mismatched files are refused by name; exports to
other formats (Hugging Face, GGUF, export_model) write what the quantized model computes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from gguf_files import write_quantized_gguf
from safetensors import safe_open
from safetensors.torch import load_file, save_file

import attnlab
from attnlab.errors import CheckpointError
from attnlab.layers import int4_kernel, int8_kernel
from attnlab.layers.quantized import QuantizedEmbedding, QuantizedLinear
from attnlab.quantization import formats_of

GPT_CHAR = Path(attnlab.__file__).parent / "assets" / "checkpoints" / "gpt-char"
IDS = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])


def _quantized(scheme):
    model, tokenizer = attnlab.load(GPT_CHAR)
    return attnlab.quantize(model.eval(), scheme), tokenizer


def _assert_same_model(a, b):
    assert formats_of(a) == formats_of(b) and formats_of(a)
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for name in sa:
        assert sa[name].dtype == sb[name].dtype and torch.equal(sa[name], sb[name]), name
    with torch.no_grad():
        assert torch.equal(a(IDS).logits, b(IDS).logits)  # prefill: the dequantized weights
        assert torch.equal(a(IDS[:, :1]).logits, b(IDS[:, :1]).logits)  # one row: fbgemm / chunked kernels


@pytest.mark.parametrize("scheme", ["int8", "int4"])
def test_quantized_model_round_trips_bit_for_bit(tmp_path, scheme):
    model, tokenizer = _quantized(scheme)
    folder = model.save(tmp_path / "q", tokenizer=tokenizer)
    saved = json.loads((folder / "config.json").read_text())["extra"]["quantization"]
    assert saved["lm_head"] == "int8" and saved["blocks.0.attn.qkv"] == scheme
    assert "quantization" not in model.config.extra  # the in-memory config is not changed by saving

    loaded, tok = attnlab.load(folder)
    assert tok is not None and not loaded.training
    assert isinstance(loaded.blocks[0].attn.qkv, QuantizedLinear) and loaded.blocks[0].attn.qkv.format == scheme
    assert "quantization" not in loaded.config.extra  # the config describes the float architecture
    _assert_same_model(model, loaded)
    prompt = torch.tensor([tokenizer.encode("the ")])
    assert attnlab.generate(model, prompt, max_new_tokens=12).tokens == \
        attnlab.generate(loaded, prompt, max_new_tokens=12).tokens
    again = loaded.save(tmp_path / "again")  # a loaded quantized model saves the same table again
    assert json.loads((again / "config.json").read_text())["extra"]["quantization"] == saved


def test_tied_embedding_shares_the_heads_codes_after_loading(tmp_path):
    model, _ = _quantized("int8")
    folder = model.save(tmp_path / "q")
    with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
        stored = set(f.keys())
    assert len({"tokens.qweight", "lm_head.proj.qweight"} & stored) == 1  # one copy in the file
    loaded, _ = attnlab.load(folder)
    assert isinstance(loaded.tokens, QuantizedEmbedding)
    for name in ("qweight", "scale"):
        assert getattr(loaded.tokens, name) is getattr(loaded.lm_head.proj, name)  # one copy in memory


def test_a_float_model_saves_no_quantization_table(tmp_path):
    model, _ = attnlab.load(GPT_CHAR)
    model.config.extra["quantization"] = {"blocks.0.attn.qkv": "int8"}  # a stale note does not reach the file
    folder = model.save(tmp_path / "f")
    assert "quantization" not in json.loads((folder / "config.json").read_text())["extra"]
    assert isinstance(attnlab.load(folder)[0].blocks[0].attn.qkv, torch.nn.Linear)


# ------------------------------------------------------------------------------------------ refusals
def _edit_config(folder, change):
    path = folder / "config.json"
    data = json.loads(path.read_text())
    change(data["extra"])
    path.write_text(json.dumps(data))


@pytest.fixture
def saved_int8(tmp_path):
    model, _ = _quantized("int8")
    return model.save(tmp_path / "q")


def test_a_format_that_disagrees_with_the_file_is_a_shape_mismatch(saved_int8):
    _edit_config(saved_int8, lambda extra: extra["quantization"].update({"blocks.0.attn.qkv": "int4"}))
    with pytest.raises(CheckpointError, match=r"shape mismatches \['blocks\.0\.attn\.qkv\.qweight"):
        attnlab.load(saved_int8)


def test_quantized_tensors_without_the_table_name_the_cause(saved_int8):
    _edit_config(saved_int8, lambda extra: extra.pop("quantization"))
    with pytest.raises(CheckpointError, match=r"unexpected tensors .*qweight.*extra\['quantization'\]"):
        attnlab.load(saved_int8)


@pytest.mark.parametrize("table, message", [
    ({"blocks.0.attn.qkv": "int3"}, "unknown quantized format 'int3'"),
    ({"positions": "int8"}, "'positions' is not a module that can be quantized"),
    ({"blocks.9.attn.qkv": "int8"}, "'blocks.9.attn.qkv' is not a module"),
    (["int8"], "must map module names"),
])
def test_a_malformed_table_is_refused_by_name(saved_int8, table, message):
    _edit_config(saved_int8, lambda extra: extra.update({"quantization": table}))
    with pytest.raises(CheckpointError, match=message):
        attnlab.load(saved_int8)


def test_codes_of_the_wrong_integer_type_are_refused(saved_int8):
    path = saved_int8 / "model.safetensors"
    tensors = load_file(path)
    tensors["blocks.0.attn.qkv.qweight"] = tensors["blocks.0.attn.qkv.qweight"].view(torch.uint8)  # same shape
    save_file(tensors, path)
    with pytest.raises(CheckpointError, match=r"blocks\.0\.attn\.qkv\.qweight: file dtype U8, I8 expected"):
        attnlab.load(saved_int8)


# ------------------------------------------------------------------------------------------------ GGUF
def test_a_gguf_model_kept_quantized_round_trips(tmp_path):
    model, _ = attnlab.load(write_quantized_gguf(tmp_path))
    assert {"q4_0", "q4_1", "q8_0"} <= set(formats_of(model).values())
    loaded, _ = attnlab.load(model.save(tmp_path / "saved"))
    assert loaded.blocks[0].attn.qkv.format == "q4_0" and loaded.lm_head.proj.format == "q8_0"
    assert loaded.tokens.qweight is loaded.lm_head.proj.qweight
    _assert_same_model(model, loaded)


# ---------------------------------------------------------------------------------------------- exports
def test_hugging_face_export_writes_the_dequantized_float_weights(tmp_path):
    model, tokenizer = _quantized("int4")
    folder = model.save(tmp_path / "hf", tokenizer=tokenizer, format="hf")
    with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
        assert not any(k.endswith((".qweight", ".scale", ".min")) for k in f.keys())
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"F32"}
    exported, _ = attnlab.load(folder)  # read back the Hugging Face way: a plain float model
    assert not formats_of(exported)
    assert torch.equal(exported.blocks[0].attn.qkv.weight, model.blocks[0].attn.qkv.weight)
    with torch.no_grad():
        ours, theirs = model(IDS).logits, exported(IDS).logits
    if int4_kernel.available() and int4_kernel.rows_available():  # prefill through the 4-bit tiles: x rounded
        assert float((ours - theirs).abs().max()) <= 5e-4 * float(theirs.abs().max())  # to ~15 bits per row
    else:  # prefill multiplies by the same dequantized weights
        assert torch.equal(ours, theirs)


def test_gguf_export_writes_the_dequantized_float_weights(tmp_path):
    from attnlab.interop.gguf import save_gguf

    config = attnlab.presets["tiny-llama"].replace(d_ff=128, n_layers=2)
    torch.manual_seed(0)
    model = attnlab.quantize(attnlab.build_model(config).eval(), "int8")
    exported, _ = attnlab.load(save_gguf(model, tmp_path / "q.gguf", keep_quantized=False))
    with torch.no_grad():
        ours, theirs = model(IDS).logits, exported(IDS).logits
    if int8_kernel.available():  # 8 rows go row by row through the int8 kernel (ROW_BY_ROW): x rounded
        assert float((ours - theirs).abs().max()) <= 5e-4 * float(theirs.abs().max())  # to ~15 bits per row
    else:  # they multiply by the same dequantized weights
        assert torch.allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_export_model_keeps_a_quantized_models_scales(tmp_path):
    from attnlab.training.checkpoint import export_model

    model, tokenizer = _quantized("int8")
    dest = export_model(model.save(tmp_path / "q", tokenizer=tokenizer), tmp_path / "served")  # half=True
    _assert_same_model(model, attnlab.load(dest)[0])


# ---------------------------------------------------------------------------------- NaN / inf scales
@pytest.mark.parametrize("scheme,tensor,value", [
    ("int8", "blocks.0.ffn.down.scale", float("nan")), ("int8", "lm_head.proj.scale", float("inf")),
    ("int4", "blocks.1.attn.qkv.scale", float("nan")), ("int4", "blocks.0.ffn.up.min", -float("inf")),
])
def test_nan_or_inf_scales_are_refused_at_load_by_name(tmp_path, scheme, tensor, value):
    """Every weight a NaN / inf scale stands for is NaN / inf: no quantizer writes that, the file is damaged. It is
    refused when loaded, naming the tensor (the kernels would have made finite garbage of it)."""
    model, _ = _quantized(scheme)
    folder = model.save(tmp_path / "q")
    path = folder / "model.safetensors"
    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata()
    tensors = load_file(path)
    tensors[tensor].view(-1)[3] = value
    save_file(tensors, path, metadata=metadata)
    with pytest.raises(CheckpointError, match=rf"{tensor.replace('.', '[.]')} holds 1 NaN or infinite value"):
        attnlab.load(folder)


def test_a_nan_scale_in_a_kept_gguf_block_is_refused_by_name(tmp_path):
    """The same for a GGUF file's Q8_0 block kept quantized; read the float32 way (keep_quantized=False) it is a
    float model with NaN weights, which loads and answers NaN, as any float model does."""
    import numpy as np
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize
    from gguf_files import rewrite_gguf

    write_quantized_gguf(tmp_path)  # also writes the float32 plain.gguf it quantized
    q8 = GGMLQuantizationType.Q8_0

    def one_nan_scale(name, values):
        if name != "blk.0.attn_output.weight":
            return values
        raw = quantize(values, q8).copy()
        raw[0, 0:2] = np.frombuffer(np.float16(np.nan).tobytes(), dtype=np.uint8)  # block 0's d: NaN
        return raw, q8

    bad = rewrite_gguf(tmp_path / "plain.gguf", tmp_path / "bad.gguf", one_nan_scale)
    with pytest.raises(CheckpointError, match=r"bad\.gguf: blocks\.0\.attn\.out\.scale holds 1 NaN"):
        attnlab.load(bad)
    plain, _ = attnlab.load(bad, keep_quantized=False)
    with torch.no_grad():
        assert bool(torch.isnan(plain(IDS[:, :2]).logits).all())
