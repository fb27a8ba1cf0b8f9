"""benchmarks/shapes.py: the shapes it times are the models' own (their parameter counts against the published ones,
through attnlab.parameter_count and a built model), a file it writes holds the seeded model's weights in F16, and
the llama-quantize files are made once, reused while their record matches and remade when a byte changes (only
where llama-quantize is built; skipped otherwise). Nothing here is timed."""

from __future__ import annotations

import json
import os

import pytest
import torch

from attnlab.benchmarks import shapes
from attnlab.config import ModelConfig
from attnlab.parameter_count import exact_parameters

gguf = pytest.importorskip("gguf")

# the model cards' counts (Hugging Face: TinyLlama/TinyLlama-1.1B-Chat-v1.0 and Qwen/Qwen2.5-0.5B, the sum of their
# safetensors' tensor sizes), which the configs must reproduce
PUBLISHED = {"tinyllama-1.1b": 1_100_048_384, "qwen2.5-0.5b": 494_032_768}
TINY = dict(shapes.TINYLLAMA_11B, vocab_size=384, d_model=64, n_heads=4, n_kv_heads=2, d_ff=128, n_layers=1,
            max_len=64, name="tiny shape")


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_each_shape_has_its_models_parameter_count(name):
    config = ModelConfig(**shapes.SHAPES[name])
    assert exact_parameters(config) == PUBLISHED[name]
    assert config.d_model // config.n_heads == 64  # both models' head width


def test_the_tiny_shapes_built_count_is_parameter_counts():
    model = shapes.build(TINY)
    assert sum(p.numel() for p in model.parameters()) == exact_parameters(ModelConfig(**TINY))


def test_a_written_f16_file_holds_the_seeded_models_weights_rounded_to_float16(tmp_path):
    import attnlab

    path = shapes.write_f16(TINY, tmp_path / "tiny.F16.gguf", seed=3)
    reader = gguf.GGUFReader(str(path))
    kinds = {t.name: t.tensor_type.name for t in reader.tensors}
    assert {k for name, k in kinds.items() if name.endswith("norm.weight")} == {"F32"}
    assert {k for name, k in kinds.items() if not name.endswith("norm.weight")} == {"F16"}
    loaded, _ = attnlab.load(path)
    reference = shapes.build(TINY, seed=3).half().float()  # the same seed: the same weights, rounded as written
    other = shapes.build(TINY, seed=4).half().float()
    ids = torch.tensor([[1, 5, 9, 200, 7]])
    with torch.no_grad():
        got, want, far = (m(ids).logits for m in (loaded.eval(), reference.eval(), other.eval()))
    assert torch.allclose(got, want, atol=1e-5, rtol=1e-4), (got - want).abs().max()
    assert not torch.allclose(got, far, atol=1e-3)  # another seed's weights would not pass


def test_unknown_shapes_and_no_presets_are_refused(capsys):
    with pytest.raises(SystemExit):
        shapes.main(["--shapes", "gpt-5"])
    assert "--shapes takes qwen2.5-0.5b, tinyllama-1.1b (got gpt-5)" in capsys.readouterr().err


def test_presets_are_made_once_reused_and_remade_when_a_byte_changes(tmp_path, monkeypatch):
    from pathlib import Path

    from attnlab.benchmarks.llama_files import find_tool

    # the tests' cache is a fresh folder (conftest): the user's build, or the one $ATTNLAB_LLAMA_QUANTIZE names
    built = Path.home() / ".cache" / "attnlab" / "llama.cpp" / "build" / "bin" / "llama-quantize"
    tool = find_tool("llama-quantize", os.environ.get("ATTNLAB_LLAMA_QUANTIZE") or str(built))
    if tool is None:
        pytest.skip("llama-quantize is not built (python -m attnlab.benchmarks.llama_cpp --build)")
    made = shapes.files("tiny", ("Q8_0", "Q4_0"), folder=tmp_path, tool=tool, shape=TINY)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.Q4_0.gguf", "tiny.Q4_0.json", "tiny.Q8_0.gguf",
                                                          "tiny.Q8_0.json"]  # the F16 export is gone
    record = json.loads((tmp_path / "tiny.Q8_0.json").read_text())
    assert record["shape"] == TINY and record["seed"] == shapes.SEED
    assert record["sha256"] == shapes.file_sha256(made["Q8_0"])
    types = {t.name: t.tensor_type.name for t in gguf.GGUFReader(str(made["Q8_0"])).tensors}
    assert types["blk.0.ffn_up.weight"] == "Q8_0" and types["blk.0.attn_norm.weight"] == "F32"
    assert {t.tensor_type.name for t in gguf.GGUFReader(str(made["Q4_0"])).tensors} >= {"Q4_0"}

    written = []
    real = shapes.write_f16
    monkeypatch.setattr(shapes, "write_f16", lambda *a, **k: written.append(a[1].name) or real(*a, **k))
    assert shapes.files("tiny", ("Q8_0", "Q4_0"), folder=tmp_path, tool=tool, shape=TINY) == made
    assert written == []  # reused: nothing exported
    data = bytearray(made["Q4_0"].read_bytes())
    data[-1] ^= 1
    made["Q4_0"].write_bytes(bytes(data))
    shapes.files("tiny", ("Q8_0", "Q4_0"), folder=tmp_path, tool=tool, shape=TINY)
    assert written == ["tiny.F16.partial.gguf"]
    assert shapes.reusable(made["Q4_0"], TINY, shapes.SEED)
    assert not shapes.reusable(made["Q4_0"], dict(TINY, d_ff=256), shapes.SEED)  # another shape: not this file
