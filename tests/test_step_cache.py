"""The compiled decoding step kept on disk (generation/step_cache.py): the default path for a quantized model.

What must hold: a second process loads the step the first compiled (no tracing, the same tokens as the first and as
eager decoding); a folder or file another user could write is never loaded from; another model, row count or thread
count gets another file, and a padded batch never compiles. The processes run a tiny int4 model (2 blocks, ~15-30 s
for the first compile on a loaded 2-core machine) whose config no other test uses, so the first process compiles.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

import attnlab
from attnlab.generation import step_cache

CHILD = r"""
import json, sys, time, torch, attnlab
from torch._dynamo.utils import counters
from attnlab.generation.compiled import COUNTS
torch.manual_seed(0)
model = MODEL
started = time.process_time()
default = attnlab.generate(model, [[5, 17, 30, 2, 9, 11]], max_new_tokens=5, threads=1COMPILE)
seconds = time.process_time() - started
eager = attnlab.generate(model, [[5, 17, 30, 2, 9, 11]], max_new_tokens=5, threads=1, compile=False)
print(json.dumps({"tokens": default.tokens, "eager": eager.tokens, "graphs": counters["stats"]["unique_graphs"],
                  "steps": dict(COUNTS), "cpu_seconds": seconds}))
"""


# (model, generate's compile argument): an int4 model on the default path, and a float model in gpt-char's layout
# (learned positions, tied embeddings) asked with compile=True. The float one failed to load in every later process
# (AttributeError: the key order of its blocks' dict, kept in the file without the model to read it from).
CHILDREN = {
    "int4 tiny-llama, default": ('attnlab.quantize(attnlab.build_model(attnlab.presets["tiny-llama"].replace('
                                 'n_layers=2, d_ff=160)).eval(), "int4")', ""),
    "float gpt-char, compile=True": ('attnlab.build_model(attnlab.presets["gpt-char"].replace(n_layers=1, '
                                     'd_ff=200)).eval()', ", compile=True"),
}


def _child(which: str) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if k != "ATTNLAB_COMPILE"}  # the default path, as a user has it
    model, compile_argument = CHILDREN[which]
    code = CHILD.replace("MODEL", model).replace("COMPILE", compile_argument)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.mark.parametrize("which", CHILDREN)
def test_a_second_process_loads_the_step_the_first_compiled(which):
    first, said_first = _child(which)
    second, said_second = _child(which)
    assert "could not be loaded" not in said_second
    assert "compiling the decoding step" in said_first and first["graphs"] >= 1
    assert "compiling" not in said_second and second["graphs"] == 0  # loaded: nothing traced in this process
    assert first["tokens"] == second["tokens"] == first["eager"] == second["eager"]
    assert first["steps"] == second["steps"] == {"compiled": 4, "eager": 0}  # 5 tokens: a prefill, 4 steps
    print(f"process time of the default generate: {first['cpu_seconds']:.1f} s compiling, "
          f"{second['cpu_seconds']:.1f} s loading")


def _tiny(d_ff: int = 96):
    torch.manual_seed(0)
    config = attnlab.presets["tiny-llama"].replace(n_layers=1, d_ff=d_ff)
    return attnlab.quantize(attnlab.build_model(config).eval(), "int4")


def test_another_model_rows_or_threads_get_another_file():
    same = step_cache.key(_tiny(), 1, (1, 1))
    assert step_cache.key(_tiny(), 1, (1, 1)) == same  # the same model built anew: the same file
    others = {step_cache.key(_tiny(128), 1, (1, 1)), step_cache.key(_tiny().train(), 1, (1, 1)),
              step_cache.key(_tiny(), 2, (1, 1)), step_cache.key(_tiny(), 1, (1, 2)),
              step_cache.key(_tiny(), 1, (2, 1))}
    assert same not in others and len(others) == 5


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(root))
    monkeypatch.setattr(step_cache, "_WARNED", set())
    return root


def test_a_folder_others_can_write_is_not_used(cache_dir):
    (cache_dir / "compiled").mkdir(mode=0o700)
    (cache_dir / "compiled").chmod(0o777)
    with pytest.warns(UserWarning, match="not kept on disk: .* can be written by other users"):
        assert step_cache.load("0" * 40) is None
    assert step_cache.save("0" * 40, object()) is None


def test_a_file_others_can_write_is_not_loaded(cache_dir):
    assert step_cache.place() == cache_dir / "compiled"
    planted = cache_dir / "compiled" / f"{'1' * 40}.step"
    planted.write_bytes(b"not a compiled step")
    planted.chmod(0o666)
    with pytest.warns(UserWarning, match="not loading the compiled decoding step .* can be written"):
        assert step_cache.load("1" * 40) is None
    assert planted.exists()  # not ours to remove: only refused


def test_a_damaged_file_is_removed_and_compiled_anew(cache_dir):
    step_cache.place()
    damaged = cache_dir / "compiled" / f"{'2' * 40}.step"
    damaged.write_bytes(b"cut short")
    damaged.chmod(0o600)
    with pytest.warns(UserWarning, match="could not be loaded .* compiling anew"):
        assert step_cache.load("2" * 40) is None
    assert not damaged.exists()


def _counted(monkeypatch):
    from attnlab.generation import compiled

    counts = {"compiled": 0, "eager": 0}
    monkeypatch.setattr(compiled, "COUNTS", counts)
    return compiled, counts


def test_a_padded_batch_decodes_eagerly_with_the_default(monkeypatch):
    """Rows of different lengths: the attention bias reads the mask's values, which one graph cannot; the default
    path gives those steps to the eager forward instead of failing (and compiles nothing)."""
    compiled, counts = _counted(monkeypatch)
    monkeypatch.setattr(step_cache, "compile_step", lambda *a: pytest.fail("a padded batch must not compile"))
    model = _tiny()
    prompts = [[5, 17, 30, 2, 9, 11], [7, 8, 9]]
    default = attnlab.generate(model, prompts, max_new_tokens=4, compile=True, threads=1)
    eager = attnlab.generate(model, prompts, max_new_tokens=4, compile=False, threads=1)
    assert default.tokens == eager.tokens and counts == {"compiled": 0, "eager": 3}


def test_a_step_that_cannot_be_traced_decodes_eagerly_with_one_warning(monkeypatch, cache_dir):
    compiled, counts = _counted(monkeypatch)

    def untraceable(step, example):
        raise RuntimeError("a data-dependent branch")

    monkeypatch.setattr(step_cache, "compile_step", untraceable)
    model = _tiny(64)
    with pytest.warns(UserWarning, match="could not be compiled \\(RuntimeError\\); decoding eagerly"):
        default = attnlab.generate(model, [[5, 17, 30]], max_new_tokens=4, compile=True, threads=1)
    eager = attnlab.generate(model, [[5, 17, 30]], max_new_tokens=4, compile=False, threads=1)
    assert default.tokens == eager.tokens and counts == {"compiled": 0, "eager": 3}
    assert not list((cache_dir / "compiled").glob("*.step"))  # nothing kept


def test_a_refused_folder_is_not_said_to_keep_the_step(monkeypatch, cache_dir, capsys):
    (cache_dir / "compiled").mkdir(mode=0o700)
    (cache_dir / "compiled").chmod(0o777)  # others can write it: refused
    compiled, _ = _counted(monkeypatch)
    monkeypatch.setattr(compiled, "_STEPS", {})

    def compile_fails(step, example):  # stands for the compile: only what is said before it is checked here
        raise RuntimeError("not compiled")

    monkeypatch.setattr(step_cache, "compile_step", compile_fails)
    with pytest.warns(UserWarning):  # the refused folder, and the compile that did not happen
        attnlab.generate(_tiny(72), [[5, 17, 30]], max_new_tokens=3, compile=True, threads=1)
    said = [line for line in capsys.readouterr().err.splitlines() if "compiling the decoding step" in line]
    assert len(said) == 1 and "not kept: its folder was refused" in said[0] and "kept in" not in said[0]
