"""Files from strangers: configs, weights, pickles, GGUF. Each is built here in tmp_path and must be refused with
an attnlab CheckpointError that names the file (and the bad field or tensors), never executed or half-loaded."""

from __future__ import annotations

import json
import os
import pickle
import re
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from gguf_files import rewrite_gguf
from safetensors.torch import load_file, save_file

import attnlab
from attnlab import ModelConfig, build_model
from attnlab.errors import CheckpointError

pytestmark = pytest.mark.timeout(120)
ROOT = Path(attnlab.__file__).resolve().parent

TINY = ModelConfig(topology="decoder", vocab_size=40, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16)


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    torch.manual_seed(0)
    return build_model(TINY).save(tmp_path / "ckpt")


# ----------------------------------------------------------------------------------------- the code base
def test_every_torch_load_in_the_code_base_is_weights_only():
    """Static guard: no pickle loader anywhere but torch.load(..., weights_only=True)."""
    calls, offenders = 0, []
    for path in ROOT.rglob("*.py"):
        text = path.read_text()
        for match in re.finditer(r"torch\.load\(", text):
            calls += 1
            call = text[match.start(): text.find("\n", text.find(")", match.start()))]
            if "weights_only=True" not in call:
                offenders.append(f"{path.relative_to(ROOT)}: {call}")
        for pattern in (r"\bpickle\.loads?\(", r"\bdill\b", r"\bjoblib\.load", r"allow_pickle\s*=\s*True",
                        r"Unpickler\(", r"(?<![.\w])eval\(", r"(?<![.\w])exec\("):
            for match in re.finditer(pattern, text):
                offenders.append(f"{path.relative_to(ROOT)}: {pattern} at {text[match.start():match.start() + 60]!r}")
    assert calls >= 2  # the HF .bin reader and the training-state reader exist and were checked
    assert not offenders, offenders


# ----------------------------------------------------------------------------------------- malicious pickles
class _Payload:
    """Unpickling this creates `marker`: proof that code ran."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _hf_dir(tmp_path: Path) -> Path:
    torch.manual_seed(0)
    config = attnlab.presets["tiny-encoder"]
    return build_model(config).save(tmp_path / "hf", format="hf")


@pytest.mark.parametrize("container", ["zip", "legacy"])
def test_malicious_pickle_as_pytorch_model_bin_is_refused_without_running(tmp_path, container):
    directory = _hf_dir(tmp_path)
    marker = tmp_path / "pwned"
    weights = directory / "model.safetensors"
    weights.unlink()
    bin_path = directory / "pytorch_model.bin"
    payload = {"bert.embeddings.word_embeddings.weight": _Payload(marker)}
    if container == "zip":
        torch.save(payload, bin_path)  # torch's own zip container, with the payload's reduce inside
    else:
        bin_path.write_bytes(pickle.dumps(payload))  # a bare pickle stream
    with pytest.raises(CheckpointError) as info:
        attnlab.load(directory)
    assert str(directory) in str(info.value)
    assert not marker.exists(), "unpickling ran the payload"


def test_malicious_training_state_is_refused_without_running(tmp_path, checkpoint):
    from attnlab.training.checkpoint import read_training_state

    marker = tmp_path / "pwned"
    torch.save({"step": 1, "optimizer": _Payload(marker)}, checkpoint / "training_state.pt")
    with pytest.raises(CheckpointError, match="training_state.pt"):
        read_training_state(checkpoint)
    assert not marker.exists()


def test_weights_only_pickle_of_plain_tensors_still_loads(tmp_path):
    """The positive control: a .bin with only tensors (what HF writes) loads through the same door."""
    directory = _hf_dir(tmp_path)
    tensors = load_file(directory / "model.safetensors")
    (directory / "model.safetensors").unlink()
    torch.save(tensors, directory / "pytorch_model.bin")
    model, _ = attnlab.load(directory)
    assert torch.equal(model.tokens.weight, tensors["bert.embeddings.word_embeddings.weight"])


def test_sharded_index_cannot_point_outside_the_checkpoint(tmp_path):
    directory = _hf_dir(tmp_path)
    outside = tmp_path / "outside.safetensors"
    (directory / "model.safetensors").rename(outside)
    index = {"metadata": {}, "weight_map": {"bert.embeddings.word_embeddings.weight": "../outside.safetensors"}}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match="outside.safetensors"):
        attnlab.load(directory)
    index["weight_map"] = {"x": str(outside)}  # an absolute path
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match="outside.safetensors"):
        attnlab.load(directory)


# ----------------------------------------------------------------------------------------- config.json
@pytest.mark.parametrize("change, named", [
    ({"d_modle": 16}, "d_modle"),
    ({"__class__": "os.system"}, "__class__"),
    ({"d_model": "16"}, "d_model"),
    ({"n_layers": 1.5}, "n_layers"),
    ({"bias": "false"}, "bias"),
    ({"dropout": None}, "dropout"),
    ({"activation": "eval"}, "activation"),
    ({"d_model": 10**9}, "GiB"),
    ({"n_layers": 10**9}, "GiB"),
    ({"vocab_size": 10**15}, "GiB"),
])
def test_bad_config_json_is_refused_naming_file_and_field(checkpoint, change, named):
    path = checkpoint / "config.json"
    data = json.loads(path.read_text())
    data.update(change)
    path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError if named != "GiB" else attnlab.AttnlabError) as info:
        attnlab.load(checkpoint)
    assert named in str(info.value)
    if named != "GiB":
        assert str(path) in str(info.value)


_PEAK = textwrap.dedent("""
    import json, sys
    import attnlab
    import attnlab.loading, attnlab.storage, attnlab.build  # `import attnlab` is lazy: count torch before `before`
    def peak():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    before = peak()
    try:
        attnlab.load(sys.argv[1])
        outcome = "loaded"
    except attnlab.AttnlabError as exc:
        outcome = type(exc).__name__
    print(json.dumps({"outcome": outcome, "growth": peak() - before}))
""")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc for peak memory")
def test_absurd_config_is_refused_before_memory_grows(checkpoint):
    """d_model=10**9 with n_layers=10**9: refused from the config alone; peak RSS grows by under 50 MB."""
    path = checkpoint / "config.json"
    data = json.loads(path.read_text())
    data.update(d_model=10**9, n_heads=1, d_ff=10**9, n_layers=10**9, max_len=10**9)
    path.write_text(json.dumps(data))
    out = subprocess.run([sys.executable, "-c", _PEAK, str(checkpoint)], capture_output=True, text=True, timeout=100)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["outcome"] == "ConfigError"
    assert result["growth"] < 50 * 2**20, result


# ----------------------------------------------------------------------------------------- weights vs config
def _rewrite(checkpoint: Path, edit) -> None:
    tensors = load_file(checkpoint / "model.safetensors")
    edit(tensors)
    save_file(tensors, checkpoint / "model.safetensors")


@pytest.mark.parametrize("edit, names", [
    (lambda t: t.pop("blocks.0.ffn.up.weight"), ["missing", "blocks.0.ffn.up.weight"]),
    (lambda t: t.update(extra=torch.zeros(3)), ["unexpected", "extra"]),
    (lambda t: t.update({"blocks.0.attn.out.weight": torch.zeros(16, 8)}),
     ["shape", "blocks.0.attn.out.weight", "(16, 8)", "(16, 16)"]),
    (lambda t: t.update(renamed=t.pop("lm_head.proj.weight")), ["missing", "tokens.weight", "unexpected", "renamed"]),
])
def test_tensors_that_disagree_with_the_config_are_named(checkpoint, edit, names):
    _rewrite(checkpoint, edit)
    with pytest.raises(CheckpointError) as info:
        attnlab.load(checkpoint)
    message = str(info.value)
    assert str(checkpoint / "model.safetensors") in message
    for name in names:
        assert name in message


def test_config_that_disagrees_with_the_tensors_is_named(checkpoint):
    path = checkpoint / "config.json"
    data = json.loads(path.read_text())
    data["d_ff"] = 48  # the file holds d_ff=32 matrices
    path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match=r"blocks\.0\.ffn\.up\.weight.*\(32, 16\) vs model \(48, 16\)"):
        attnlab.load(checkpoint)


# ----------------------------------------------------------------------------------------- damaged files
def _truncate(path: Path, keep: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


@pytest.mark.parametrize("damage", ["half", "header", "empty", "huge_header", "garbage", "json_header"])
def test_damaged_safetensors_is_refused_with_its_path(checkpoint, damage):
    path = checkpoint / "model.safetensors"
    data = path.read_bytes()
    if damage == "half":
        _truncate(path, 0.5)
    elif damage == "header":
        _truncate(path, 0.002)
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "huge_header":  # claims a 2**60-byte header
        path.write_bytes(struct.pack("<Q", 2**60) + data[8:])
    elif damage == "garbage":
        path.write_bytes(os.urandom(len(data)))
    else:  # header length intact, header JSON corrupted
        n = struct.unpack("<Q", data[:8])[0]
        path.write_bytes(data[:8] + b"{" * n + data[8 + n:])
    with pytest.raises(CheckpointError) as info:
        attnlab.load(checkpoint)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("text", ['{"topology": "decoder", "d_mod', "", "\x00\xff\xfe", "[1, 2]", "null"])
def test_damaged_config_json_is_refused_with_its_path(checkpoint, text):
    path = checkpoint / "config.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(CheckpointError) as info:
        attnlab.load(checkpoint)
    assert str(path) in str(info.value) or str(checkpoint) in str(info.value)


def test_truncated_gguf_is_refused_with_its_path(tmp_path):
    from attnlab.interop.gguf import save_gguf

    torch.manual_seed(0)
    path = save_gguf(build_model(attnlab.presets["tiny-llama"].replace(n_layers=1)), tmp_path / "tiny.gguf")
    for keep in (0.5, 0.01):
        _truncate(path, keep)
        with pytest.raises(CheckpointError) as info:
            attnlab.load(path)
        assert str(path) in str(info.value)


def test_truncated_training_state_is_refused_with_its_path(checkpoint):
    from attnlab.training.checkpoint import read_training_state

    state = checkpoint / "training_state.pt"
    torch.save({"step": 3, "weights": torch.zeros(1000)}, state)
    _truncate(state, 0.5)
    with pytest.raises(CheckpointError, match=re.escape(str(state))):
        read_training_state(checkpoint)


@pytest.mark.parametrize("name", ["tokenizer.json", "attnlab_tokenizer.json"])
@pytest.mark.parametrize("damage", [b"", b"\xff\x00garbage", b"[1, 2]", b'{"special": {"pad": 5}}', b"half"])
def test_damaged_tokenizer_files_are_refused_with_their_path(tmp_path, name, damage):
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers.models import WordLevel

    from attnlab.data.tokenizers import Tokenizer

    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "a", "b"])}
    tokenizer = Tokenizer(HFTokenizer(WordLevel(vocab, unk_token="[UNK]")), {"pad": "[PAD]", "unk": "[UNK]"})
    torch.manual_seed(0)
    directory = build_model(TINY).save(tmp_path / "ckpt", tokenizer=tokenizer)
    path = directory / name
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2] if damage == b"half" else damage)
    try:
        attnlab.load(directory)
    except CheckpointError as exc:
        assert str(path) in str(exc)
        return
    # the only damage allowed to load is one the file format itself permits (none of these is)
    pytest.fail(f"{name} damaged as {damage!r} was accepted")


# ----------------------------------------------------------------------------------------- HF config.json
_HF_VALUES = [None, True, -1, 0, 3, 10**9, 10**12, 1.5, float("nan"), "64", "gelu", "", [], [1], {}, {"a": 1}]


@pytest.fixture(scope="module")
def hf_checkpoint(tmp_path_factory) -> Path:
    torch.manual_seed(0)
    return build_model(attnlab.presets["tiny-encoder"]).save(tmp_path_factory.mktemp("hf") / "bert", format="hf")


def test_hf_config_json_fields_of_any_value(hf_checkpoint):
    """Every key of a Hugging Face config.json, set to each of 16 hostile values: a CheckpointError/ConfigError
    naming the checkpoint (or the memory it would need), or a model that loads. 10**9 layers or widths are
    refused before any tensor is mapped."""
    from _cases import tally

    path = hf_checkpoint / "config.json"
    original = json.loads(path.read_text())
    try:
        for key in sorted(original):
            for value in _HF_VALUES:
                path.write_text(json.dumps({**original, key: value}))
                try:
                    model, _ = attnlab.load(hf_checkpoint)
                except (CheckpointError, attnlab.ConfigError) as exc:
                    assert str(hf_checkpoint) in str(exc) or "GiB" in str(exc), str(exc)  # names the checkpoint
                    tally("Hugging Face config.json (key x value)", "refused")
                    continue
                assert isinstance(model, torch.nn.Module)
                tally("Hugging Face config.json (key x value)", "loaded")
    finally:
        path.write_text(json.dumps(original))


GGUF_KEYS = [b"llama.block_count", b"llama.embedding_length", b"llama.attention.head_count",
             b"llama.feed_forward_length", b"llama.context_length", b"llama.attention.head_count_kv"]
GGUF_SIZES = (0, 10**9, 2**32 - 1)


@pytest.mark.parametrize("key", GGUF_KEYS)
def test_gguf_metadata_of_any_size(tmp_path, key):
    """A GGUF whose header claims 0, 10**9 or 2**32-1 for a size: refused naming the file (or, for a context
    length, which allocates nothing up front, loaded), never a raw error or a loop over 10**9 layers."""
    from _cases import tally

    from attnlab.interop.gguf import save_gguf

    torch.manual_seed(0)
    path = save_gguf(build_model(attnlab.presets["tiny-llama"].replace(n_layers=1)), tmp_path / "tiny.gguf")
    data = path.read_bytes()
    at = data.index(key) + len(key)
    assert struct.unpack("<I", data[at:at + 4])[0] == 4  # GGUF value type 4: uint32
    for value in GGUF_SIZES:
        path.write_bytes(data[:at + 4] + struct.pack("<I", value) + data[at + 8:])
        try:
            model, _ = attnlab.load(path)
        except attnlab.AttnlabError as exc:
            assert str(path) in str(exc), str(exc)
            tally("GGUF header sizes", "refused")
            continue
        assert key == b"llama.context_length" and value > 0 and model.config.max_len == value
        tally("GGUF header sizes", "loaded")


# ------------------------------------------------------------------------ files that are not what they claim
DEEP = "[" * 100_000 + "]" * 100_000  # nested past the JSON parser's recursion limit


@pytest.mark.parametrize("name", ["config.json", "attnlab_tokenizer.json", "tokenizer.json"])
def test_deeply_nested_json_is_a_checkpoint_error(checkpoint, name):
    from attnlab.data.tokenizers import char_tokenizer

    char_tokenizer("abc").save(checkpoint)
    (checkpoint / name).write_text(DEEP)
    with pytest.raises(CheckpointError) as info:
        attnlab.load(checkpoint)
    assert str(checkpoint / name) in str(info.value)


def test_deeply_nested_hf_config_is_a_checkpoint_error(tmp_path):
    directory = _hf_dir(tmp_path)
    (directory / "config.json").write_text('{"model_type": "bert", "x": ' + DEEP + "}")
    with pytest.raises(CheckpointError, match="too deeply"):
        attnlab.load(directory)


@pytest.mark.parametrize("index, says", [([1, 2], "must hold a JSON object"), ({"weight_map": ["a"]}, "weight_map"),
                                         ({"weight_map": "model.safetensors"}, "weight_map"),
                                         ({"weight_map": {}}, "weight_map"), ({"metadata": {}}, "weight_map")])
def test_malformed_sharded_index_is_a_checkpoint_error(tmp_path, index, says):
    directory = _hf_dir(tmp_path)
    (directory / "model.safetensors").unlink()
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=says) as info:
        attnlab.load(directory)
    assert "model.safetensors.index.json" in str(info.value)


@pytest.mark.parametrize("where", ["checkpoint", "config.json", "model.safetensors", "tokenizer.json"])
def test_symlink_loops_are_a_checkpoint_error(tmp_path, checkpoint, where):
    from attnlab.data.tokenizers import char_tokenizer

    char_tokenizer("abc").save(checkpoint)
    if where == "checkpoint":
        target = tmp_path / "loop"
        os.symlink(tmp_path / "loop2", target)
        os.symlink(target, tmp_path / "loop2")
    else:
        target = checkpoint
        (checkpoint / where).unlink()
        os.symlink(checkpoint / f"{where}.2", checkpoint / where)
        os.symlink(checkpoint / where, checkpoint / f"{where}.2")
    with pytest.raises(CheckpointError, match="symbolic links|cannot be opened"):
        attnlab.load(target)


_LOAD = textwrap.dedent("""
    import sys
    import attnlab
    try:
        attnlab.load(sys.argv[1])
    except attnlab.CheckpointError as exc:
        print("refused:", exc)
""")


@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "tokenizer.json", "attnlab_tokenizer.json"])
def test_a_fifo_in_a_checkpoint_is_refused_without_blocking(checkpoint, name):
    """Opening a FIFO for reading waits for a writer forever; it is refused from its file type instead."""
    from attnlab.data.tokenizers import char_tokenizer

    char_tokenizer("abc").save(checkpoint)
    (checkpoint / name).unlink()
    os.mkfifo(checkpoint / name)
    out = subprocess.run([sys.executable, "-c", _LOAD, str(checkpoint)], capture_output=True, text=True, timeout=100)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "refused:" in out.stdout and "FIFO" in out.stdout and name in out.stdout


def test_the_explorer_registry_does_not_block_on_a_fifo_or_crash_on_a_loop(tmp_path, checkpoint):
    from attnlab.explorer.server.registry import build_registry

    (checkpoint / "config.json").unlink()
    os.mkfifo(checkpoint / "config.json")
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    code = ("import sys; from attnlab.explorer.server.registry import build_registry; "
            "r = build_registry(sys.argv[1:], shipped=False, pretrained=False); print(len(r.entries))")
    out = subprocess.run([sys.executable, "-c", code, str(checkpoint), str(tmp_path / "a")], capture_output=True,
                         text=True, timeout=100)
    assert out.returncode == 0 and out.stdout.strip() == "3", out.stderr[-2000:]
    assert build_registry  # imported in-process too: the module itself is importable


@pytest.mark.parametrize("name", ["config.json", "attnlab_tokenizer.json"])
def test_oversized_json_is_refused_before_reading(checkpoint, name):
    from attnlab.files import MAX_JSON_BYTES

    with open(checkpoint / name, "wb") as f:
        f.truncate(MAX_JSON_BYTES + 1)  # sparse: no disk used, and nothing is read
    with pytest.raises(CheckpointError, match="at most") as info:
        attnlab.load(checkpoint)
    assert name in str(info.value)


def test_pickle_refusal_is_one_line(tmp_path):
    directory = _hf_dir(tmp_path)
    (directory / "model.safetensors").unlink()
    payload = {"bert.embeddings.word_embeddings.weight": _Payload(tmp_path / "pwned")}
    torch.save(payload, directory / "pytorch_model.bin")
    with pytest.raises(CheckpointError) as info:
        attnlab.load(directory)
    assert "\n" not in str(info.value) and "pickled code" in str(info.value)
    assert not (tmp_path / "pwned").exists()


# ------------------------------------------------------------------- a config much larger than its weights file
_PEAK_RSS = textwrap.dedent("""
    import json, resource, sys
    import attnlab
    import attnlab.build, attnlab.loading, attnlab.storage  # torch and the loaders: what any load costs first
    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    before = peak()
    try:
        attnlab.load(sys.argv[1])
        outcome = "loaded"
    except attnlab.AttnlabError as exc:
        outcome = type(exc).__name__ + ": " + str(exc)
    print(json.dumps({"outcome": outcome, "peak": peak(), "growth": peak() - before}))
""")


def _peak_of_load(path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _PEAK_RSS, str(path)], capture_output=True, text=True, timeout=100)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_3_gb_config_beside_a_small_file_is_refused_within_the_files_size(checkpoint):
    """d_model 2048 and 14 layers (a 2.8 GB model) beside a 60 KB file: the shapes are checked against the
    safetensors header on the meta device; the process never grows past ~what importing torch costs."""
    path = checkpoint / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "d_model": 2048, "n_heads": 16, "d_ff": 8192,
                                "n_layers": 14, "max_len": 1024}))
    result = _peak_of_load(checkpoint)
    assert result["outcome"].startswith("CheckpointError") and "does not match its config" in result["outcome"]
    # growth beyond what importing torch costs (that alone varies with the environment: ~220-590 MB here)
    assert result["growth"] < 200 * 2**20, result


def test_a_gguf_whose_metadata_claims_a_3_gb_model_is_refused_before_dequantizing(tmp_path):
    from attnlab.interop.gguf import save_gguf

    torch.manual_seed(0)
    plain = tmp_path / "plain.gguf"
    save_gguf(build_model(attnlab.presets["tiny-llama"].replace(n_layers=1)), plain)
    claims = {"llama.embedding_length": 2048, "llama.block_count": 14, "llama.feed_forward_length": 8192,
              "llama.attention.head_count": 16, "llama.attention.head_count_kv": 16, "llama.attention.key_length": 128,
              "llama.attention.value_length": 128, "llama.rope.dimension_count": 128}
    result = _peak_of_load(rewrite_gguf(plain, tmp_path / "claims-more.gguf", fields=claims))
    assert result["outcome"].startswith("CheckpointError"), result
    assert "lacks tensors" in result["outcome"] or "disagree" in result["outcome"]
    # growth beyond what importing torch costs (that alone varies with the environment: ~220-590 MB here)
    assert result["growth"] < 200 * 2**20, result
