"""The timeline reads a run folder's own files only: a probe.jsonl or metrics.jsonl that is a link leading outside
the folder (to a secret of the user running the explorer) is refused by its path, as `latest` is, and what it
leads to appears in no answer."""

import json

import pytest
from fastapi.testclient import TestClient

from attnlab.errors import InputError
from attnlab.explorer.server.app import create_app
from attnlab.explorer.server.registry import build_registry
from attnlab.explorer.views.experiments.timeline.compute import timeline

SECRET = "outside-secret-31337"


def _probe(text: str, loss: float) -> str:
    """A valid probe file: 1 layer, 1 head, two tokens, two steps."""
    header = {"kind": "attnlab-probe", "version": 1, "text": text, "tokens": [text[:1], text[1:]], "ids": [0, 1],
              "n_layers": 1, "n_heads": 1, "every": 1}
    lines = [{"step": s, "loss": loss, "weights": [[[[1.0, 0.0], [0.5, 0.5]]]]} for s in (1, 2)]
    return "".join(json.dumps(x) + "\n" for x in [header, *lines])


def _metrics(loss: float) -> str:
    return "".join(json.dumps({"step": s, "loss": loss}) + "\n" for s in (1, 2))


@pytest.fixture
def folders(tmp_path):
    """(run folder with its own files, a folder outside holding the secret probe and metrics)."""
    run, outside = tmp_path / "run", tmp_path / "outside"
    run.mkdir()
    outside.mkdir()
    (run / "probe.jsonl").write_text(_probe("ab", 2.0))
    (run / "metrics.jsonl").write_text(_metrics(2.0))
    (outside / "probe.jsonl").write_text(_probe(SECRET, 31337.0))
    (outside / "metrics.jsonl").write_text(_metrics(31337.0))
    return run, outside


def _entry(run):
    return build_registry([run], shipped=False, pretrained=False).entry("path")


def _get(run, url):
    with TestClient(create_app(build_registry([run], shipped=False, pretrained=False)),
                    base_url="http://localhost") as client:
        return client.get(url)


@pytest.mark.parametrize("name", ["probe.jsonl", "metrics.jsonl"])
def test_a_link_leading_outside_the_run_folder_is_refused(folders, name):
    run, outside = folders
    (run / name).unlink()
    (run / name).symlink_to(outside / name)
    with pytest.raises(InputError, match=rf"\({name}\) leads outside its run folder .*: refused") as info:
        timeline(_entry(run))
    assert SECRET not in str(info.value) and "31337" not in str(info.value)
    answer = _get(run, "/api/experiments/timeline/path")
    assert answer.status_code == 400 and "leads outside its run folder" in answer.json()["detail"]
    assert "31337" not in answer.text and str(outside) not in answer.text
    listed = _get(run, "/api/experiments/runs").json()["runs"]
    assert [r["id"] for r in listed] == ([] if name == "probe.jsonl" else ["path"])  # a refused probe: not offered


def test_a_link_loop_is_refused(folders):
    run, _ = folders
    (run / "probe.jsonl").unlink()
    (run / "probe.jsonl").symlink_to(run / "probe.jsonl")
    with pytest.raises(InputError, match="cannot be followed"):
        timeline(_entry(run))


def test_the_run_folders_own_files_and_links_inside_it_are_read(folders):
    run, _ = folders
    r = timeline(_entry(run))
    assert r["steps"] == [1, 2] and r["text"] == "ab" and [p["loss"] for p in r["curve"]] == [2.0, 2.0]
    (run / "kept.jsonl").write_text(_probe("cd", 1.0))
    (run / "probe.jsonl").unlink()
    (run / "probe.jsonl").symlink_to("kept.jsonl")  # a link within the run folder stays allowed
    assert timeline(_entry(run))["text"] == "cd"
