"""The run folder holds one run: --resume needs a checkpoint, a previous run is never silently mixed with a new one
(refused without --resume or --overwrite), and --overwrite deletes only what the old run wrote."""

import json

import pytest
from tiny_runs import with_corpus

from attnlab.errors import ConfigError
from attnlab.training.checkpoint import latest_checkpoint
from attnlab.training.run import run_train

KEYS = {"steps": "3", "eval_every": "0", "log_every": "1", "plot": "false", "warmup": "1", "threads": "1",
        "d_model": "16", "n_heads": "2", "d_ff": "32", "n_layers": "1", "seq_len": "16", "batch_size": "2",
        "sample_tokens": "1", "save_every": "1", "keep": "5"}


@pytest.fixture()
def keys(tmp_path):
    return with_corpus(tmp_path, KEYS)


def _snapshot(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_resume_without_a_checkpoint_is_refused_and_writes_nothing(tmp_path, keys):
    with pytest.raises(ConfigError, match="--resume: .* has no checkpoint"):
        run_train("gpt-char", out=str(tmp_path / "new"), resume=True, quiet=True, overrides=keys)
    assert not (tmp_path / "new").exists()
    crashed = tmp_path / "crashed"  # a run killed before its first checkpoint: metrics but no `latest`
    crashed.mkdir()
    (crashed / "metrics.jsonl").write_text('{"step": 1, "loss": 3.0}\n')
    before = _snapshot(crashed)
    with pytest.raises(ConfigError, match=r"holds metrics\.jsonl, but no checkpoint.*--overwrite"):
        run_train("gpt-char", out=str(crashed), resume=True, quiet=True, overrides=keys)
    assert _snapshot(crashed) == before


def test_a_previous_run_is_refused_without_resume_or_overwrite(tmp_path, keys):
    out = tmp_path / "run"
    run_train("gpt-char", out=str(out), quiet=True, overrides=keys)
    before = _snapshot(out)
    with pytest.raises(ConfigError, match="holds a previous run .*--resume.*--overwrite"):
        run_train("gpt-char", out=str(out), quiet=True, overrides=keys)
    assert _snapshot(out) == before  # nothing replaced, appended or deleted
    with pytest.raises(ConfigError, match="give one of them"):
        run_train("gpt-char", out=str(out), resume=True, overwrite=True, quiet=True, overrides=keys)


def test_overwrite_deletes_the_old_run_first_and_keeps_other_files(tmp_path, keys):
    out = tmp_path / "run"
    run_train("gpt-char", out=str(out), quiet=True, overrides=keys)  # steps 1, 2, 3 kept
    (out / "notes.txt").write_text("mine")
    result = run_train("gpt-char", out=str(out), overwrite=True, quiet=True, overrides={**keys, "steps": "2"})
    assert result["step"] == 2
    assert sorted(p.name for p in out.glob("step-*")) == ["step-00000001", "step-00000002"]  # old step 3 gone
    assert latest_checkpoint(out).name == "step-00000002"
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()] == [1, 2]
    assert json.loads((out / "result.json").read_text())["step"] == 2
    assert (out / "notes.txt").read_text() == "mine"  # not a run file: left alone


def test_resume_continues_a_finished_run_to_more_steps(tmp_path, keys):
    out = tmp_path / "run"
    run_train("gpt-char", out=str(out), quiet=True, overrides=keys)
    result = run_train("gpt-char", out=str(out), resume=True, quiet=True, overrides={**keys, "steps": "4"})
    assert result["step"] == 4
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3, 4]
