"""A run folder's files are replaced, never written through: a file in it that is a link to a file elsewhere (left
by a stranger in a shared folder, or by a copy) leaves that file as it was after a resumed run, and what the
link led to is not read into the run's own files."""

import json

import pytest

from attnlab.training.plots import plot_losses
from attnlab.training.report import CsvLog
from attnlab.training.run import run_train

TEXT = "".join(f"def function_{i}(x):\n    return x * {i} + {i % 7}\n\n" for i in range(120))
KEYS = {"eval_every": "0", "log_every": "2", "plot": "true", "warmup": "1", "threads": "1", "report": "csv",
        "d_model": "16", "n_heads": "2", "d_ff": "32", "n_layers": "1", "seq_len": "16", "batch_size": "2",
        "sample_tokens": "2"}
# what a stranger's files hold: lines a resumed run would keep, were they read (step 1 is before the checkpoint)
OUTSIDE = {
    "metrics.csv": "step,loss,secret\n1,0.5,outside-secret\n",
    "probe.jsonl": '{"kind": "attnlab-probe"}\n{"step": 1, "loss": 0.5, "weights": [], "secret": "outside-secret"}\n',
    "samples.txt": "outside-secret\n",
    "result.json": '{"secret": "outside-secret"}\n',
    "metrics.jsonl": '{"step": 1, "loss": 0.5, "secret": "outside-secret"}\n',
    "loss.png": "outside-secret\n",
}


def _link_outside(out, outside, names):
    """Replace each run file `name` by a link to outside/name holding OUTSIDE[name]."""
    outside.mkdir(exist_ok=True)
    for name in names:
        target = outside / name
        target.write_text(OUTSIDE[name])
        (out / name).unlink(missing_ok=True)
        (out / name).symlink_to(target)


def _assert_untouched(out, outside, names):
    for name in names:
        assert (outside / name).read_text() == OUTSIDE[name], f"{name}: the file the link led to was written"
        assert not (out / name).is_symlink(), f"{name}: still a link"
        if name != "loss.png":
            assert "outside-secret" not in (out / name).read_text(), f"{name}: the linked file's lines were kept"


def test_a_resumed_run_replaces_every_linked_run_file(tmp_path):
    corpus, out, outside = tmp_path / "corpus.txt", tmp_path / "run", tmp_path / "outside"
    corpus.write_text(TEXT)
    keys = {**KEYS, "data": str(corpus)}
    run_train("gpt-char", out=str(out), quiet=True, overrides={**keys, "steps": "3", "save_every": "3"})
    _link_outside(out, outside, OUTSIDE)
    result = run_train("gpt-char", out=str(out), resume=True, quiet=True, overrides={**keys, "steps": "5"})
    _assert_untouched(out, outside, OUTSIDE)
    assert json.loads((out / "result.json").read_text())["step"] == result["step"] == 5
    rows = (out / "metrics.csv").read_text().splitlines()
    assert rows[0].startswith("step,") and [r.split(",")[0] for r in rows[1:]] == ["4", "5"]
    probe_steps = [json.loads(line)["step"] for line in (out / "probe.jsonl").read_text().splitlines()[1:]]
    assert probe_steps == [4, 5]  # the run's own lines after the checkpoint; none from the linked file
    assert (out / "samples.txt").read_text().startswith("def ")
    assert (out / "loss.png").read_bytes().startswith(b"\x89PNG")


def test_writers_replace_a_link_when_called_directly(tmp_path):
    """CsvLog (a resumed one too) and plot_losses, without a training run."""
    out, outside = tmp_path / "run", tmp_path / "outside"
    out.mkdir()
    (out / "metrics.jsonl").write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.5}\n')
    _link_outside(out, outside, ["metrics.csv", "loss.png"])
    log = CsvLog(out, start_step=2)
    log.scalars(3, {"loss": 1.25})
    log.scalars(4, {"loss": 1.0})
    assert plot_losses(out / "metrics.jsonl", out / "loss.png") == out / "loss.png"
    _assert_untouched(out, outside, ["metrics.csv", "loss.png"])
    assert (out / "metrics.csv").read_text().splitlines() == ["step,loss", "3,1.25", "4,1.0"]


@pytest.mark.parametrize("start_step", [0, 2])
def test_a_csv_log_of_a_regular_file_keeps_its_rows(tmp_path, start_step):
    """The link check keeps the ordinary case: a resumed run keeps the rows up to its checkpoint."""
    (tmp_path / "metrics.csv").write_text("step,loss\n1,2.0\n2,1.5\n3,1.25\n")
    CsvLog(tmp_path, start_step=start_step)
    kept = ["1,2.0", "2,1.5"] if start_step else []
    assert (tmp_path / "metrics.csv").read_text().splitlines() == ["step" + (",loss" if start_step else ""), *kept]
