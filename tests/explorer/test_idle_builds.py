"""The Generation tab's compiled step is built only when the explorer is idle, at the lowest CPU priority, and
never with --no-compile (explorer/server/idle_builds.py). The waiting is driven by hand: a stand-in runner
says how long it has been quiet and the test calls `poll`; nothing is timed."""

import os
import threading

import pytest
import torch

import attnlab
from attnlab.explorer.server import idle_builds
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.views.generation import compute as generation
from attnlab.generation import compiled


class _Runner:
    """What idle_builds reads of a runner: how long it has been quiet, and whether it may compile."""

    def __init__(self, compile_steps: bool = True):
        self.quiet, self.compile_steps = 0.0, compile_steps

    def quiet_for(self) -> float:
        return self.quiet


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.fixture
def builds(monkeypatch):
    """A fresh IdleBuilds without its waiting thread, and compiled.build_in_background replaced by a recorder of
    the priority it was started at (the model is float: auto() is forced, so the view asks for a build)."""
    fresh = idle_builds.IdleBuilds(idle_seconds=10.0, poll_seconds=None)
    monkeypatch.setattr(idle_builds, "BUILDS", fresh)
    monkeypatch.setattr(compiled, "auto", lambda model: True)
    started = []
    monkeypatch.setattr(compiled, "build_in_background",
                        lambda model, rows=1, dtype=None: started.append(_nice()) or "building")
    fresh.started = started
    return fresh


def _lm() -> Loaded:
    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.presets["tiny-llama"].replace(n_layers=1)).eval()
    return Loaded("f", "f", model, None, kind="shipped")


def test_a_step_served_by_a_busy_explorer_waits_for_idle_then_builds_at_low_priority(builds):
    runner, lm = _Runner(), _lm()
    with idle_builds.serving(runner):
        out = generation.generation_step(lm, "abc", [], temperature=0.0)
    assert (out["step_path"], out["step_path_reason"]) == ("eager", idle_builds.WAITING)
    assert builds.started == []  # nothing built while a request runs
    runner.quiet = 9.0
    assert builds.poll() and builds.started == []  # not idle long enough yet
    runner.quiet = 10.0
    assert builds.poll() is False  # started, nothing left to wait for
    assert builds.started == [19]  # at the lowest priority
    assert _nice() == 0  # the thread that asked keeps its own
    with idle_builds.serving(runner):
        out = generation.generation_step(lm, "abc", out["generated"], temperature=0.0)
    assert out["step_path_reason"].startswith("compiling the step in the background at low priority")
    assert builds.started == [19, 0]  # the request's thread only asks how far the build is


def test_no_compile_never_builds_and_says_so(builds):
    with idle_builds.serving(_Runner(compile_steps=False)):
        out = generation.generation_step(_lm(), "abc", [], temperature=0.0)
    assert (out["step_path"], out["step_path_reason"]) == ("eager", idle_builds.OFF)
    assert builds.poll() is False and builds.started == []


def test_outside_a_server_the_build_starts_at_once_at_low_priority(builds):
    out = generation.generation_step(_lm(), "abc", [], temperature=0.0)
    assert out["step_path_reason"].startswith("compiling the step in the background at low priority")
    assert builds.started == [19, 0]  # started niced, then asked how far it is from this thread
    assert _nice() == 0


def test_explore_no_compile_reaches_the_app(monkeypatch):
    import uvicorn

    from attnlab.cli import build_parser

    seen = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, log_level: seen.update(app=app))
    for argv, compiles in (([], True), (["--no-compile"], False)):
        args = build_parser().parse_args(["explore", "--no-browser", *argv])
        assert args.run(args) == 0
        assert seen["app"].state.runner.compile_steps is compiles
