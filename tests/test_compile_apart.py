"""The default path never waits for the compiled step (generation/compiled.py, generation/apart.py): for a model
whose caller said how to load it again (the CLI does), generate(compile=None) decodes eagerly at once, and a
separate process builds the step for later runs. A stand-in builder that only sleeps shows that generate returns
while it is still at work (a build that made generate wait would leave it finished or killed), that one line says
so, and that a second call starts no second builder while the first one lives. The stand-in is ended by its pid.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

import pytest
import torch

import attnlab
from attnlab.cli import process
from attnlab.generation import compiled, step_cache
from attnlab.layers import kernel_build

PROMPT = [[5, 17, 30, 2, 9, 11]]
SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]  # the builder's arguments follow, unread


@pytest.fixture
def apart(monkeypatch, tmp_path):
    """The default path as a user has it (ATTNLAB_COMPILE unset), with this test's own compiled-step folder and
    the module's per-process state fresh; yields the folder, and ends any stand-in builder left."""
    if kernel_build.compiler() is None:
        pytest.skip("no C++ compiler: the default path decodes eagerly and builds nothing")
    monkeypatch.delenv("ATTNLAB_COMPILE", raising=False)
    folder = tmp_path / "compiled"
    monkeypatch.setattr(step_cache, "folder", lambda: folder)
    monkeypatch.setattr(compiled, "_STEPS", {})
    monkeypatch.setattr(compiled, "_SAID", set())
    yield folder
    for marker in folder.glob("*.building"):
        text = marker.read_text().strip()
        if text.isdigit():
            os.kill(int(text), signal.SIGTERM)  # only the stand-in this test started, by its id


def test_the_first_run_decodes_eagerly_while_the_step_is_built_apart(apart, capsys):
    torch.manual_seed(0)
    config = attnlab.presets["tiny-llama"].replace(n_layers=1, d_ff=96)  # a config no compiling test uses
    model = attnlab.quantize(attnlab.build_model(config).eval(), "int4")
    if not compiled.pays(model):
        pytest.skip("the 4-bit kernel does not run here: the default path decodes eagerly")
    compiled.build_apart_with(model, SLEEPER)
    eager = attnlab.generate(model, PROMPT, max_new_tokens=4, compile=False, threads=1)
    before = dict(compiled.COUNTS)
    out = attnlab.generate(model, PROMPT, max_new_tokens=4, threads=1)
    assert compiled.wait_for_builds(timeout=60)  # the thread that started the builder, not the builder
    assert out.tokens == eager.tokens
    assert compiled.COUNTS["compiled"] == before["compiled"] and compiled.COUNTS["eager"] > before["eager"]
    markers = list(apart.glob("*.building"))
    assert len(markers) == 1
    pid = int(markers[0].read_text())
    assert os.waitpid(pid, os.WNOHANG) == (0, 0)  # still at work: generate did not wait for it
    said = capsys.readouterr().err
    assert said.count("being built apart at low priority") == 1, said

    again = attnlab.generate(model, PROMPT, max_new_tokens=4, threads=1)  # the step is not in this process
    assert again.tokens == eager.tokens
    assert [m.read_text() for m in apart.glob("*.building")] == [str(pid)]  # no second builder


def test_a_command_may_end_while_only_the_step_loading_thread_runs():
    """cli/process.end ends the process at once (os._exit) with no other thread running, or only the compiled
    step's loading thread (it reads, and in a command never compiles: a step not kept is built apart)."""
    release = threading.Event()
    loader = threading.Thread(target=release.wait, daemon=True, name=process.READERS)
    other = threading.Thread(target=release.wait, daemon=True, name="something else")
    main = threading.current_thread()  # the list is given: pytest's process runs threads of its own
    assert process._only_readers_left([main])
    loader.start()
    try:
        assert process._only_readers_left([main, loader])
        other.start()
        assert not process._only_readers_left([main, loader, other])
        assert not process._only_readers_left([main, threading.Thread(name=process.READERS)])  # not a daemon
    finally:
        release.set()
        loader.join()
        other.join()
