"""Errors never quote a file's contents (issue 23.2): a training run's `latest` linked to a small secret file
gave `latest names 'TOP-SECRET-TOKEN=hunter2'`, and the explorer sent that over HTTP in /api/models."""

from __future__ import annotations

import json
import os

import pytest
import torch
from cli_calls import run_cli

import attnlab
from attnlab.errors import AttnlabError

SECRET = "TOP-SECRET-TOKEN=hunter2"
TINY = attnlab.ModelConfig(topology="decoder", vocab_size=40, d_model=16, n_heads=2, d_ff=32, n_layers=1,
                           max_len=16)


@pytest.fixture()
def run_with_secret_latest(tmp_path):
    secret = tmp_path / "token.txt"
    secret.write_text(SECRET + "\n")
    run = tmp_path / "runs" / "mine"
    torch.manual_seed(0)
    attnlab.build_model(TINY).save(run / "step-00000010")
    os.symlink(secret, run / "latest")
    return run


def test_the_explorer_never_sends_the_content_a_latest_links_to(run_with_secret_latest):
    from attnlab.explorer.server.registry import ModelUnavailable, build_registry

    registry = build_registry([run_with_secret_latest], shipped=False, pretrained=False)
    with pytest.raises(ModelUnavailable) as caught:
        registry.get("path")
    listed = json.dumps(registry.list())  # what /api/models answers
    for text in (str(caught.value), listed):
        assert "hunter2" not in text and "TOP-SECRET" not in text
    assert "latest" in str(caught.value) and "outside" in str(caught.value)


@pytest.mark.parametrize("command", [["generate", "{run}", "--prompt", "a"], ["params", "{run}"],
                                     ["cost", "{run}", "--seq", "8"]])
def test_the_command_line_never_prints_it(run_with_secret_latest, command, capsys):
    code, out, err = run_cli([a.replace("{run}", str(run_with_secret_latest)) for a in command], capsys)
    assert code == 2 and "hunter2" not in out + err, err
    assert "latest" in err and "outside" in err, err  # refused for the right reason, naming the pointer


def test_a_library_load_names_the_pointer_not_its_content(run_with_secret_latest):
    with pytest.raises(AttnlabError) as caught:
        attnlab.load(run_with_secret_latest)
    assert str(run_with_secret_latest / "latest") in str(caught.value) and "hunter2" not in str(caught.value)
