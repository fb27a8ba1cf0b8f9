"""Qwen2, Qwen3, Phi-3, OLMo 2, GPT-NeoX, Gemma 2 and Gemma 3 GGUF files (llama.cpp's architectures of those
names) read by attnlab.load, and written by save_gguf.

Each file is written here with the `gguf` package from a tiny random Hugging Face model, under llama.cpp's names
and metadata keys, as its converter writes them: W_Q and W_K in their Hugging Face row order (llama.cpp rotates
these architectures rotate-half), Qwen2's Q/K/V biases, Qwen3's per-head q/k norms, Phi-3's fused q | k | v and
gate | up, its sliding window and partial RoPE, OLMo 2's output norms and q/k norms over all heads, GPT-NeoX's
q | k | v regrouped from head by head, its biases, LayerNorms and parallel residual, Gemma's gains stored as 1 + w,
its caps and windows (Gemma 3: the default five-to-one pattern, with and without linear RoPE scaling). Proven:
- the GGUF and the same weights' Hugging Face directory give one config and the very same tensors, and logits
  within 1e-5 of transformers on a right-padded batch (float32);
- transformers' own GGUF reader, an independent one, computes the same logits from the file, for Qwen2, Qwen3 and
  Phi-3 (it reads no OLMo 2 or GPT-NeoX file, and a Gemma one with Gemma's default query_pre_attn_scalar: for
  those the layout rests on this file's reading of llama.cpp's tensor names and keys, written here);
- Q8_0 matrices stay quantized (attnlab's blocks, not expanded) and compute what the dequantized file does.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import hf_inputs, max_diff, real, run_ours

import attnlab
from attnlab.layers.quantized import QuantizedLinear

transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

TOL = 1e-5
SHAPE = dict(vocab_size=99, hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64, attn_implementation="eager")
CASES = {"qwen2": ("Qwen2ForCausalLM", "Qwen2Config", {}),
         "qwen3": ("Qwen3ForCausalLM", "Qwen3Config", dict(head_dim=12)),
         "phi3": ("Phi3ForCausalLM", "Phi3Config", dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)),
         "olmo2": ("Olmo2ForCausalLM", "Olmo2Config", {}),
         "gpt_neox": ("GPTNeoXForCausalLM", "GPTNeoXConfig", dict(num_key_value_heads=None)),
         # Gemma: query_pre_attn_scalar = head_dim, as llama.cpp computes every Gemma but the 27B ones (no GGUF key)
         "gemma2": ("Gemma2ForCausalLM", "Gemma2Config", dict(head_dim=8, query_pre_attn_scalar=8, sliding_window=3,
                                                             attn_logit_softcapping=0.5, final_logit_softcapping=2.0)),
         "gemma3": ("Gemma3ForCausalLM", "Gemma3TextConfig", dict(num_hidden_layers=6, head_dim=8,
                                                                 query_pre_attn_scalar=8, sliding_window=3))}
GEMMA3_LINEAR = dict(rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                                      "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
GEMMA_NORMS = {"post_attention_layernorm": "post_attention_norm", "pre_feedforward_layernorm": "ffn_norm",
               "post_feedforward_layernorm": "post_ffw_norm"}  # Gemma's four norms per block
NEOX = {"gpt_neox.embed_in.weight": "token_embd.weight", "gpt_neox.final_layer_norm": "output_norm",
        "embed_out.weight": "output.weight", "lm_head.weight": "output.weight", "input_layernorm": "attn_norm",
        "post_attention_layernorm": "ffn_norm",
        "attention.query_key_value": "attn_qkv", "attention.dense": "attn_output", "mlp.dense_h_to_4h": "ffn_up",
        "mlp.dense_4h_to_h": "ffn_down"}
# Phi-3's options a GGUF says too (transformers' GGUF reader reads neither: only the HF directory compares)
PHI3_OPTIONS = dict(sliding_window=5, partial_rotary_factor=0.5)
NAMES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
         "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
         "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
         "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down", "self_attn.qkv_proj": "attn_qkv",
         "mlp.gate_up_proj": "ffn_up", "post_feedforward_layernorm": "post_ffw_norm"}
OUTPUT_NORMS = {"post_attention_layernorm": "post_attention_norm"}  # OLMo 2: its norms sit after each sub-layer


def _hf_model(arch: str, **changes):
    torch.manual_seed(0)
    model_class, config_class, keywords = CASES[arch]
    config = getattr(transformers, config_class)(**{**SHAPE, **keywords, **changes})
    model = getattr(transformers, model_class)(config).eval()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    return model


def _neox_tensor(hf, name: str, tensor: torch.Tensor) -> tuple[str, torch.Tensor]:
    """A GPT-NeoX tensor under llama.cpp's name, query_key_value regrouped from head by head to q | k | v as its
    converter does (GPTNeoXModel.modify_tensors)."""
    if name in NEOX:
        return NEOX[name], tensor
    if name.startswith("gpt_neox.final_layer_norm."):
        return f"output_norm.{name.rsplit('.', 1)[1]}", tensor
    _, _, i, rest = name.split(".", 3)  # gpt_neox.layers.N.<module>.<weight|bias>
    module, kind = rest.rsplit(".", 1)
    if module == "attention.query_key_value":
        h, d = hf.config.num_attention_heads, hf.config.hidden_size
        tensor = tensor.reshape(h, 3, d // h, *tensor.shape[1:]).transpose(0, 1).reshape(tensor.shape)
    return f"blk.{i}.{NEOX[module]}.{kind}", tensor


def _gguf_name(hf_name: str, arch: str) -> str:
    if hf_name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf_name == "model.norm.weight":
        return "output_norm.weight"
    if hf_name == "lm_head.weight":
        return "output.weight"
    _, _, i, rest = hf_name.split(".", 3)  # model.layers.N.<module>.<weight|bias>
    module, kind = rest.rsplit(".", 1)
    names = {**NAMES, **(OUTPUT_NORMS if arch == "olmo2" else GEMMA_NORMS if "gemma" in arch else {})}
    return f"blk.{i}.{names[module]}.{kind}"


def write_gguf(hf, path, quantized: str | None = None):
    """`hf`'s weights as llama.cpp's converter writes a Qwen2 / Qwen3 file (no tokenizer); `quantized`: the 2-D
    matrices of the blocks in that type (Q8_0), the rest F32."""
    c = hf.config
    arch = c.model_type.removesuffix("_text")  # llama.cpp names Gemma 3's text model gemma3
    writer = gguf.GGUFWriter(str(path), "gptneox" if arch == "gpt_neox" else arch)
    if arch == "gpt_neox":  # the keys llama.cpp's converter writes (GPTNeoXModel.set_gguf_parameters)
        writer.add_context_length(c.max_position_embeddings)
        writer.add_embedding_length(c.hidden_size)
        writer.add_block_count(c.num_hidden_layers)
        writer.add_feed_forward_length(c.intermediate_size)
        head_dim = c.hidden_size // c.num_attention_heads
        writer.add_rope_dimension_count(int(c.rope_parameters["partial_rotary_factor"] * head_dim))
        writer.add_head_count(c.num_attention_heads)
        writer.add_parallel_residual(c.use_parallel_residual)
        writer.add_layer_norm_eps(c.layer_norm_eps)
        for name, tensor in hf.state_dict().items():
            gguf_name, values = _neox_tensor(hf, name, tensor.detach())
            _add_tensor(writer, gguf_name, values.numpy().astype(np.float32), quantized)
        return _close(writer, path)
    writer.add_block_count(c.num_hidden_layers)
    writer.add_context_length(c.max_position_embeddings)
    writer.add_embedding_length(c.hidden_size)
    writer.add_feed_forward_length(c.intermediate_size)
    writer.add_head_count(c.num_attention_heads)
    writer.add_head_count_kv(c.num_key_value_heads)
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    if arch == "phi3":  # as llama.cpp's converter: the rotated features, the window; no key_length
        writer.add_rope_dimension_count(int(head_dim * c.rope_parameters.get("partial_rotary_factor", 1.0)))
        if c.sliding_window:
            writer.add_sliding_window(c.sliding_window)
        writer.add_pad_token_id(c.pad_token_id)  # else transformers' reader takes Phi3Config's 32000: past 99
    else:
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    if "gemma" in arch:  # as Gemma2Model / Gemma3Model.set_gguf_parameters write them
        writer.add_sliding_window(c.sliding_window)
        if c.attn_logit_softcapping:
            writer.add_attn_logit_softcapping(c.attn_logit_softcapping)
        if c.final_logit_softcapping:
            writer.add_final_logit_softcapping(c.final_logit_softcapping)
    rope = c.rope_parameters.get("full_attention", c.rope_parameters)  # Gemma 3: the global layers'
    writer.add_rope_freq_base(rope["rope_theta"])
    if rope.get("rope_type") == "linear":
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(rope["factor"])
    writer.add_layer_norm_rms_eps(c.rms_norm_eps)
    writer.add_vocab_size(c.vocab_size)
    for name, tensor in hf.state_dict().items():
        if name == "lm_head.weight" and c.tie_word_embeddings:
            continue
        values = tensor.detach().numpy().astype(np.float32)
        gguf_name = _gguf_name(name, arch)
        if "gemma" in arch and name.endswith("norm.weight"):
            values = values + 1  # llama.cpp's converter stores Gemma's gains as 1 + w
        if "gemma" in arch and name == "lm_head.weight":
            continue  # tied, and skipped by the converter
        _add_tensor(writer, gguf_name, values, quantized)
    return _close(writer, path)


def _add_tensor(writer, gguf_name: str, values: np.ndarray, quantized: str | None) -> None:
    """A block's matrix in the `quantized` type when one is asked; every other tensor (norms, biases, the
    embedding table) as float32 in these test files."""
    if quantized and values.ndim == 2 and gguf_name.startswith("blk."):
        kind = getattr(gguf.GGMLQuantizationType, quantized)
        writer.add_tensor(gguf_name, gguf.quants.quantize(values, kind), raw_dtype=kind)
    else:
        writer.add_tensor(gguf_name, values)


def _close(writer, path):
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize("arch, options", [("qwen2", {}), ("qwen3", {}), ("phi3", {}), ("phi3", PHI3_OPTIONS),
                                           ("olmo2", {}), ("gpt_neox", {}),
                                           ("gpt_neox", dict(use_parallel_residual=False)), ("gemma2", {}),
                                           ("gemma3", {}), ("gemma3", GEMMA3_LINEAR)])
def test_the_gguf_is_the_hf_directory(arch, options, tmp_path):
    hf = _hf_model(arch, **options)
    hf.save_pretrained(tmp_path / "hf")
    from_dir, _ = attnlab.load(tmp_path / "hf")
    from_gguf, _ = attnlab.load(write_gguf(hf, tmp_path / f"{arch}.gguf"))
    keep = ("topology", "d_model", "n_heads", "n_kv_heads", "d_head", "d_ff", "n_layers", "rope_theta", "bias",
            "qkv_bias", "qk_norm", "tie_embeddings", "activation", "norm", "sliding_window", "rotary_dim",
            "norm_placement", "parallel_residual", "global_every", "attn_scale", "attn_softcap", "logit_softcap",
            "rope_scaling", "rope_local_theta", "scale_embeddings")
    assert {k: getattr(from_gguf.config, k) for k in keep} == {k: getattr(from_dir.config, k) for k in keep}
    assert from_gguf.config.norm_eps == pytest.approx(from_dir.config.norm_eps, rel=1e-7)  # a float32 in GGUF
    ours, theirs = from_gguf.state_dict(), from_dir.state_dict()
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)
    inputs = hf_inputs("llama")
    with torch.no_grad():
        expected = hf(**inputs).logits
    assert max_diff(expected, run_ours(from_gguf, inputs).logits, real(inputs)) <= TOL


@pytest.mark.parametrize("arch", ["qwen2", "qwen3", "phi3"])  # transformers 5.25 reads no olmo2 GGUF
def test_transformers_reads_the_same_file_to_the_same_logits(arch, tmp_path):
    """transformers' GGUF reader (its own name table and row order) on the file attnlab reads: an independent check
    that the file is what llama.cpp's converter writes, Q/K rows unpermuted. Qwen3 with head_dim 128 here:
    transformers 5.25's reader does not read qwen3.attention.key_length and builds Qwen3Config's default, 128."""
    hf = _hf_model(arch, head_dim=128) if arch == "qwen3" else _hf_model(arch)
    path = write_gguf(hf, tmp_path / f"{arch}.gguf")
    reread = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file=path.name,
                                                               dtype=torch.float32).eval()
    ours, _ = attnlab.load(path)
    inputs = hf_inputs("llama")
    with torch.no_grad():
        expected = reread(**inputs).logits
    assert max_diff(expected, run_ours(ours, inputs).logits, real(inputs)) <= TOL


@pytest.mark.parametrize("arch", CASES)
def test_q8_0_blocks_stay_quantized(arch, tmp_path):
    """The blocks' Q8_0 matrices (Q, K, V fused with their biases; O; the feed-forward) load as attnlab's q8_0
    layers, and compute the logits of the same file dequantized to float32 (the kernel rounds each row it
    multiplies to 8 bits as llama.cpp does: 1e-2 of the logits' range)."""
    widths = dict(intermediate_size=64, **(dict(head_dim=8) if arch == "qwen3" else {}))  # inputs: 32-wide blocks
    path = write_gguf(_hf_model(arch, **widths), tmp_path / f"{arch}-q8.gguf", quantized="Q8_0")
    kept, _ = attnlab.load(path)
    floats, _ = attnlab.load(path, keep_quantized=False)
    layers = {name for name, m in kept.named_modules() if isinstance(m, QuantizedLinear)}
    assert {f"blocks.{i}.{m}" for i in range(2) for m in ("attn.qkv", "attn.out", "ffn.up", "ffn.down")} <= layers
    inputs = hf_inputs("llama")
    expected = run_ours(floats, inputs).logits
    diff = max_diff(expected, run_ours(kept, inputs).logits, real(inputs))
    assert diff <= 1e-2 * float(expected.abs().max())


@pytest.mark.parametrize("arch", ["qwen2", "qwen3"])
def test_written_back_as_their_own_architecture(arch, tmp_path):
    """save_gguf writes a Qwen2 model as a qwen2 file and a Qwen3 one as qwen3 (a llama file has no key for their
    biases or norms): transformers' GGUF reader computes the Hugging Face model's logits from it (Qwen3 with
    head_dim 128, the only one that reader builds), and attnlab reads back the same tensors."""
    hf = _hf_model(arch, head_dim=128) if arch == "qwen3" else _hf_model(arch)
    ours, path = _written_by_attnlab(hf, tmp_path)
    assert gguf.GGUFReader(str(path)).fields["general.architecture"].contents() == arch
    back, _ = attnlab.load(path)
    state, written = ours.state_dict(), back.state_dict()
    assert state.keys() == written.keys() and all(torch.equal(state[k], written[k]) for k in state)
    assert _transformers_reads_back(hf, tmp_path, path) <= TOL


@pytest.mark.parametrize("arch", CASES)
def test_kept_blocks_are_written_back_as_they_were(arch, tmp_path):
    """A Q8_0 file loaded with its blocks kept and written again holds the very same blocks (no expansion)."""
    from attnlab.interop.gguf import save_gguf

    widths = dict(intermediate_size=64, **(dict(head_dim=8) if arch == "qwen3" else {}))
    source = write_gguf(_hf_model(arch, **widths), tmp_path / "q8.gguf", quantized="Q8_0")
    kept, _ = attnlab.load(source)
    written = save_gguf(kept, tmp_path / "again.gguf")
    before = {t.name: bytes(t.data) for t in gguf.GGUFReader(str(source)).tensors if t.tensor_type.name == "Q8_0"}
    after = {t.name: bytes(t.data) for t in gguf.GGUFReader(str(written)).tensors if t.tensor_type.name == "Q8_0"}
    assert before and before == after


# GGUF out for the other families: written by save_gguf from the Hugging Face directory, read back by attnlab
WRITTEN = [("phi3", {}), ("phi3", PHI3_OPTIONS), ("olmo2", {}), ("gpt_neox", {}),
           ("gpt_neox", dict(use_parallel_residual=False)), ("gemma2", {}), ("gemma3", {}), ("gemma3", GEMMA3_LINEAR)]
ARCHITECTURES = {"gpt_neox": "gptneox"}  # llama.cpp's name where it differs from transformers'


@pytest.mark.parametrize("arch, options", WRITTEN)
def test_the_other_families_are_written_as_their_own_architecture(arch, options, tmp_path):
    """save_gguf writes Phi-3, OLMo 2, GPT-NeoX, Gemma 2 and Gemma 3 models as llama.cpp's phi3, olmo2, gptneox,
    gemma2 and gemma3 files; attnlab reads back the same config and tensors, hence the same logits, which are
    transformers' on the original model. The file's names and keys are checked against the ones write_gguf above
    gives the same weights (llama.cpp's converter's), and each tensor's values too: the writer and the reader
    cannot share a mistake that the independent writer does not make."""
    from attnlab.interop.gguf import save_gguf

    hf = _hf_model(arch, **options)
    hf.save_pretrained(tmp_path / "hf")
    ours, _ = attnlab.load(tmp_path / "hf")
    path = save_gguf(ours, tmp_path / "written.gguf")
    written = gguf.GGUFReader(str(path))
    assert written.fields["general.architecture"].contents() == ARCHITECTURES.get(arch, arch)
    reference = gguf.GGUFReader(str(write_gguf(hf, tmp_path / "reference.gguf")))
    theirs = {t.name: np.array(t.data) for t in reference.tensors}
    mine = {t.name: np.array(t.data) for t in written.tensors}
    assert mine.keys() == theirs.keys() and all(np.array_equal(mine[k], theirs[k]) for k in mine)
    keys = {k: f.contents() for k, f in reference.fields.items() if not k.startswith(("GGUF.", "tokenizer."))}
    assert {k: written.fields[k].contents() for k in keys} == keys  # each key llama.cpp's converter writes
    back, _ = attnlab.load(path)
    aside = dict(name="", extra={}, norm_eps=0.0, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    assert back.config.to_dict() | aside == ours.config.to_dict() | aside  # token ids: no tokenizer written here
    assert back.config.norm_eps == pytest.approx(ours.config.norm_eps, rel=1e-7)  # a float32 in GGUF
    state, again = ours.state_dict(), back.state_dict()
    assert state.keys() == again.keys() and all(torch.equal(state[k], again[k]) for k in state)
    inputs = hf_inputs("llama")
    with torch.no_grad():
        expected = hf(**inputs).logits
    assert max_diff(expected, run_ours(back, inputs).logits, real(inputs)) <= TOL


def test_phi3_written_is_read_by_transformers(tmp_path):
    """transformers' own GGUF reader computes the Hugging Face Phi-3 model's logits from the file save_gguf wrote
    (Phi-3's own vocabulary size: a file without a tokenizer has no padding id, and that reader then takes
    Phi3Config's, 32000)."""
    assert _transformers_reads_back(_hf_model("phi3", vocab_size=32064), tmp_path) <= TOL


def _written_by_attnlab(hf, folder):
    """(attnlab's load of the Hugging Face model `hf` saved in folder/hf, the GGUF file save_gguf wrote from it)."""
    from attnlab.interop.gguf import save_gguf

    hf.save_pretrained(folder / "hf")
    ours, _ = attnlab.load(folder / "hf")
    return ours, save_gguf(ours, folder / "written.gguf")


def _transformers_reads_back(hf, folder, path=None) -> float:
    """Max |logit difference| between the Hugging Face model `hf` and transformers' own GGUF reader on the file
    `path` in `folder` (by default the one _written_by_attnlab writes there), over hf_inputs("llama")'s real
    positions."""
    path = _written_by_attnlab(hf, folder)[1] if path is None else path
    reread = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=path.name,
                                                               dtype=torch.float32).eval()
    inputs = hf_inputs("llama")
    with torch.no_grad():
        return max_diff(hf(**inputs).logits, reread(**inputs).logits, real(inputs))


@pytest.mark.parametrize("change, named", [
    (dict(logit_softcap=None), "logit_softcap"),  # llama.cpp's gemma2 assumes a cap of 30 without the key
    (dict(attn_scale=0.3), "attn_scale"),
    (dict(global_every=3), "global_every"),
    (dict(rope_scaling={"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_len": 16}), "rope_scaling")])
def test_what_a_gemma2_file_cannot_say_is_refused(change, named, tmp_path):
    from attnlab.errors import CheckpointError
    from attnlab.interop.gguf import save_gguf

    hf = _hf_model("gemma2")
    hf.save_pretrained(tmp_path / "hf")
    ours, _ = attnlab.load(tmp_path / "hf")
    ours.config = ours.config.replace(**change)
    with pytest.raises(CheckpointError, match=named):
        save_gguf(ours, tmp_path / "refused.gguf")
    assert not (tmp_path / "refused.gguf").exists()


@pytest.mark.parametrize("arch", ["gemma2", "gemma3"])
def test_gemma_written_is_read_by_transformers(arch, tmp_path):
    """transformers' GGUF reader on the gemma2 / gemma3 file save_gguf wrote computes the Hugging Face model's logits.
    That reader takes the soft caps, the query scale (query_pre_attn_scalar) and Gemma 3's local RoPE base from the
    config class's defaults, not from the file: the model here uses those defaults (head_dim 256 = the scalar; Gemma
    2's caps 50 and 30), so that the comparison is of the weights and the keys the reader does read."""
    defaults = dict(head_dim=256, query_pre_attn_scalar=256, sliding_window=3)
    hf = _hf_model(arch, **defaults, **(dict(attn_logit_softcapping=50.0, final_logit_softcapping=30.0)
                                        if arch == "gemma2" else {}))
    assert _transformers_reads_back(hf, tmp_path) <= TOL
