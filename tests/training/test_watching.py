"""Training you can watch: the opening summary, plain lines in a log and a bar on a terminal, TensorBoard / CSV /
W&B logs (read back with TensorBoard's own reader), report= refused by name, rank 0 alone speaking under torchrun,
Ctrl-C saving the last step and printing the command that resumes it, and sample_tokens checked before training."""

import csv
import fcntl
import io
import json
import os
import shlex
import signal
import struct
import subprocess
import sys
import termios
import types

import pytest
import torch
from conftest import TinyLMTask
from tiny_runs import PROSE, with_corpus

import attnlab
from attnlab.cli import main
from attnlab.errors import ConfigError
from attnlab.training import Trainer, TrainSettings, latest_checkpoint
from attnlab.training.progress import Console
from attnlab.training.report import parse_report
from attnlab.training.run import run_train
from attnlab.training.trainer import TrainingInterrupted

KEYS = {"steps": "4", "batch_size": "2", "d_model": "16", "n_heads": "2", "d_ff": "32", "n_layers": "1",
        "seq_len": "16", "eval_every": "2", "log_every": "2", "threads": "1", "plot": "false", "warmup": "1",
        "sample_tokens": "6"}


@pytest.fixture()
def keys(tmp_path):
    return with_corpus(tmp_path, KEYS, PROSE)


def _argv(keys):
    return [f"{k}={v}" for k, v in keys.items()]


def _metrics(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def _events(out):
    return sorted(p.name for p in out.iterdir() if p.name.startswith("events.out.tfevents."))


def _env():
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.getcwd()}


# ------------------------------------------------------------------------------------------ TensorBoard and csv
def test_tensorboard_reads_back_the_scalars_and_the_samples(tmp_path, keys):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    result = run_train("gpt-char", out=str(out), quiet=True, overrides=keys)  # report=tensorboard by default
    assert len(_events(out)) == 1
    events = EventAccumulator(str(out), size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()
    records = _metrics(out)

    def series(tag):
        return [(e.step, e.value) for e in events.Scalars(tag)]

    for tag, key in [("train/loss", "loss"), ("train/lr", "lr"), ("train/grad_norm", "grad_norm")]:
        expected = [(r["step"], r[key]) for r in records]
        assert [s for s, _ in series(tag)] == [1, 2, 3, 4]
        # TensorBoard stores float32: agreement to float32's rounding (2**-24 relative)
        torch.testing.assert_close(torch.tensor([v for _, v in series(tag)]),
                                   torch.tensor([v for _, v in expected], dtype=torch.float32), rtol=2**-23, atol=0)
    assert [s for s, _ in series("perf/tokens_per_s")] == [r["step"] for r in records if "tokens_per_s" in r]
    assert [s for s, _ in series("eval/val_loss")] == [2, 4]
    assert series("eval/val_loss")[-1][1] == pytest.approx(result["eval"]["val_loss"], rel=2**-23)
    texts = {tag: events.Tensors(tag) for tag in events.Tags()["tensors"]}
    samples = texts["samples/text_summary"]
    assert [e.step for e in samples] == [4]
    shown = samples[0].tensor_proto.string_val[0].decode()
    for sample in result["samples"]:
        assert all(line in shown for line in sample.splitlines())
    assert '"steps": 4' in texts["settings/text_summary"][0].tensor_proto.string_val[0].decode()


def test_report_none_writes_no_event_file_and_csv_writes_the_metrics_table(tmp_path, keys):
    quiet = tmp_path / "none"
    run_train("gpt-char", out=str(quiet), quiet=True, overrides={**keys, "report": "none"})
    assert _events(quiet) == [] and not (quiet / "metrics.csv").exists() and len(_metrics(quiet)) == 4
    table = tmp_path / "csv"
    run_train("gpt-char", out=str(table), quiet=True, overrides={**keys, "report": "csv"})
    assert _events(table) == []
    with open(table / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    records = _metrics(table)
    assert [int(r["step"]) for r in rows] == [r["step"] for r in records]
    assert [float(r["loss"]) for r in rows] == [r["loss"] for r in records]  # csv writes repr: exact
    assert [r["val_loss"] for r in rows][::2] == ["", ""] and float(rows[3]["val_loss"]) == records[3]["val_loss"]
    # --overwrite removes the old run's metrics.csv and event files with the rest of it
    run_train("gpt-char", out=str(table), quiet=True, overwrite=True, overrides={**keys, "report": "tensorboard"})
    assert not (table / "metrics.csv").exists() and len(_events(table)) == (1 if _has("tensorboard") else 0)


def _has(package):
    import importlib.util

    return importlib.util.find_spec(package) is not None


@pytest.mark.parametrize("value, words", [
    ("tensorbord", ["did you mean tensorboard?", "allowed: tensorboard, csv, wandb, none"]),
    ("csv,wnadb", ["'wnadb'", "did you mean wandb?"]),
    ("mlflow", ["unknown 'mlflow'", "allowed: tensorboard, csv, wandb, none"]),
    ("none,csv", ["cannot be combined with csv"]),
])
def test_an_unknown_report_is_refused_in_one_line_before_anything_is_written(tmp_path, keys, value, words, capsys):
    out = tmp_path / "run"
    code = main(["train", "gpt-char", "--out", str(out), *_argv({**keys, "report": value})])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("attnlab train: error: report="), err
    assert all(w in err for w in words), err
    assert not out.exists()


def test_report_lists_are_parsed_like_report_to():
    assert parse_report("tensorboard, CSV,tensorboard") == ("tensorboard", "csv")
    assert parse_report("none") == parse_report("") == ()


def test_wandb_chosen_but_not_installed_is_one_line_before_anything_is_written(tmp_path, keys, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "wandb", None)  # importlib.util.find_spec then answers None: not installed
    out = tmp_path / "run"
    code = main(["train", "gpt-char", "--out", str(out), *_argv({**keys, "report": "tensorboard,wandb"})])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "pip install wandb" in err and "WANDB_MODE=offline" in err, err
    assert not out.exists()


def test_wandb_gets_every_step_and_the_samples(tmp_path, keys, monkeypatch):
    """A stand-in wandb module records what the logger sends (wandb itself is not a test dependency)."""
    calls = []

    class Run:
        def log(self, data, step):
            calls.append(("log", step, data))

        def finish(self):
            calls.append(("finish",))

    class Table:
        def __init__(self, columns, data):
            self.columns, self.data = columns, data

    def init(**kwargs):
        calls.append(("init", kwargs))
        return Run()

    fake = types.ModuleType("wandb")
    fake.init, fake.Table = init, Table
    fake.__spec__ = types.SimpleNamespace(name="wandb")  # find_spec reads a loaded module's __spec__
    monkeypatch.setitem(sys.modules, "wandb", fake)
    out = tmp_path / "run"
    result = run_train("gpt-char", out=str(out), quiet=True, overrides={**keys, "report": "wandb"})
    assert calls[0][0] == "init" and calls[0][1]["dir"] == str(out) and calls[0][1]["config"]["train"]["steps"] == 4
    assert calls[-1] == ("finish",)
    logged = [c for c in calls if c[0] == "log"]
    losses = [(step, data["train/loss"]) for _, step, data in logged if "train/loss" in data]
    assert losses == [(r["step"], r["loss"]) for r in _metrics(out)]
    (table,) = [data["samples"] for _, step, data in logged if "samples" in data]
    assert table.data == [[s] for s in result["samples"]]


# ------------------------------------------------------------------------------------------ what is printed
class _Terminal(io.StringIO):
    """A terminal: writes are kept here, its size is a pseudo-terminal's (`columns` wide, 0 = a 0x0 terminal)."""

    def __init__(self, columns: int = 80):
        super().__init__()
        self._master, self._slave = os.openpty()
        rows = 24 if columns else 0
        fcntl.ioctl(self._slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def isatty(self):
        return True

    def fileno(self):
        return self._slave

    def close(self):
        for fd in (self._master, self._slave):
            os.close(fd)
        super().close()


def test_a_terminal_gets_a_progress_bar_with_loss_and_tokens_per_second(tmp_path):
    pytest.importorskip("tqdm")
    screen = _Terminal()
    settings = TrainSettings(steps=6, batch_size=2, eval_every=3, log_every=1, plot=False, warmup=1, report="none")
    Trainer(TinyLMTask(), settings, tmp_path, console=Console(stream=screen)).fit()
    shown = screen.getvalue()
    assert "\r" in shown and "6/6" in shown and "tok/s" in shown
    last = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[-1])
    assert f"loss {last['loss']:.4f}" in shown
    kept = [line for line in shown.replace("\r", "\n").splitlines() if line.startswith("step ")]
    assert [line.split()[1] for line in kept] == ["3/6", "6/6"]  # with a bar, only evaluations stay as lines
    screen.close()


def test_the_bars_elapsed_time_runs_from_the_start_of_training_across_evaluations(tmp_path, monkeypatch):
    """The bar is set aside during each evaluation and drawn again after it; its elapsed time goes on from the
    start of training (it used to restart at 00:00). tqdm's clock is a fake one that only the evaluations move:
    125 s each, at steps 2 and 4, so the last frame shows 04:10 (00:00 when the bar restarts)."""
    tqdm_std = pytest.importorskip("tqdm.std")
    now = [1000.0]
    monkeypatch.setattr(tqdm_std, "time", lambda: now[0])

    class SlowEvaluation(TinyLMTask):
        def evaluate(self, model):
            now[0] += 125.0
            return super().evaluate(model)

    screen = _Terminal()
    settings = TrainSettings(steps=4, batch_size=2, eval_every=2, log_every=1, plot=False, warmup=1, report="none")
    Trainer(SlowEvaluation(), settings, tmp_path, console=Console(stream=screen)).fit()
    frames = [f for f in screen.getvalue().replace("\n", "\r").split("\r") if f.startswith("train:")]
    screen.close()
    assert frames and "4/4 [04:10<" in frames[-1], frames


def test_a_terminal_of_size_0x0_gets_plain_lines(tmp_path):
    """A new tmux pane or an IDE console can report 0 columns: tqdm would draw a bar of width zero and each
    status line would be erased by the next, so nothing was seen for minutes. Such a terminal gets a log's lines."""
    screen = _Terminal(columns=0)
    settings = TrainSettings(steps=4, batch_size=2, eval_every=0, log_every=2, plot=False, warmup=1, report="none")
    Trainer(TinyLMTask(), settings, tmp_path, console=Console(stream=screen)).fit()
    shown = screen.getvalue()
    screen.close()
    assert "\r" not in shown and "\x1b" not in shown, shown
    assert [line.split()[1] for line in shown.splitlines() if line.startswith("step ")] == ["1/4", "2/4", "4/4"]


def test_a_log_gets_a_line_when_the_run_has_been_quiet_too_long(tmp_path, monkeypatch):
    """On a log or a pipe, lines come every log_every steps, and also once QUIET_S seconds have passed without one
    (a busy machine took 24 s for 50 steps of gpt-char: a reader could not tell slow from hung). With the quiet
    limit at 0 every step prints; with it out of reach only log_every's lines do; log_every=0 stays silent."""
    from attnlab.training import trainer as trainer_module

    def shown_steps(quiet_s: float, log_every: int) -> list[str]:
        monkeypatch.setattr(trainer_module, "QUIET_S", quiet_s)
        log = io.StringIO()
        settings = TrainSettings(steps=5, batch_size=2, eval_every=0, log_every=log_every, plot=False, warmup=1,
                                 report="none")
        Trainer(TinyLMTask(), settings, tmp_path / f"{quiet_s}-{log_every}", console=Console(stream=log)).fit()
        return [line.split()[1] for line in log.getvalue().splitlines() if line.startswith("step ")]

    assert shown_steps(0.0, 100) == ["1/5", "2/5", "3/5", "4/5", "5/5"]
    assert shown_steps(1e9, 100) == ["1/5", "5/5"]
    assert shown_steps(0.0, 0) == shown_steps(1e9, 0)


# ------------------------------------------------------------------------------------------ torchrun
@pytest.mark.slow
def test_under_torchrun_only_rank_0_prints_and_writes_event_files(tmp_path, keys):
    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "attnlab",
           "train", "gpt-char", "--out", str(out), *_argv({**keys, "report": "tensorboard,csv"})]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=_env())
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count("train gpt-char: ") == 1 and done.stderr.count("step 4/4") == 1, done.stderr
    assert "split over 2 processes" in done.stderr
    assert done.stdout.count("gpt-char: 4 steps in ") == 1, done.stdout  # the final summary, printed once
    assert len(_events(out)) == (1 if _has("tensorboard") else 0)
    assert len((out / "metrics.csv").read_text().splitlines()) == 1 + 4  # header + one row per step, not two


# ------------------------------------------------------------------------------------------ Ctrl-C
class _InterruptAt(TinyLMTask):
    """Ctrl-C arrives while step `at` computes its loss (a real SIGINT, delivered to this process)."""

    def __init__(self, at):
        super().__init__()
        self.at = at

    def loss(self, model, batch):
        if self.calls + 1 == self.at:
            signal.raise_signal(signal.SIGINT)
        return super().loss(model, batch)


@pytest.fixture()
def python_sigint():
    """SIGINT handled as Python does by default for the test, whatever this process started with (a runner
    started under `nohup` or by a shell in the background ignores it), and the disposition put back after."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _sigint_as_default():
    """preexec_fn for a child that must take Ctrl-C: an ignored SIGINT is inherited, and Python then installs no
    handler of its own (the child would never stop)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_finishes_the_step_saves_it_and_resuming_equals_an_uninterrupted_run(tmp_path, python_sigint):
    settings = TrainSettings(steps=6, batch_size=4, lr=3e-3, warmup=2, eval_every=0, plot=False, report="none")
    Trainer(TinyLMTask(), settings, tmp_path / "whole", quiet=True).fit()
    with pytest.raises(TrainingInterrupted) as stop:
        Trainer(_InterruptAt(3), settings, tmp_path / "cut", quiet=True).fit()
    assert stop.value.step == 3 and stop.value.checkpoint == tmp_path / "cut" / "step-00000003"
    assert latest_checkpoint(tmp_path / "cut") == stop.value.checkpoint
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is put back
    Trainer(TinyLMTask(), settings, tmp_path / "cut", quiet=True).fit(resume=True)
    assert [r["loss"] for r in _metrics(tmp_path / "cut")] == [r["loss"] for r in _metrics(tmp_path / "whole")]


def test_a_pipe_gets_the_summary_plain_lines_and_on_ctrl_c_the_checkpoint_and_the_resume_command(tmp_path, keys,
                                                                                              monkeypatch):
    """One `attnlab train` through a pipe (not a terminal), interrupted by SIGINT once training is under way."""
    out = tmp_path / "run"
    run_keys = {**keys, "steps": "100000", "eval_every": "0"}
    cmd = [sys.executable, "-m", "attnlab", "train", "gpt-char", "--out", str(out), *_argv(run_keys)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                            preexec_fn=_sigint_as_default)
    try:
        seen = []
        for line in proc.stderr:  # Ctrl-C once the second progress line is out
            seen.append(line)
            if line.startswith("step 2/"):
                break
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=120)
    finally:
        proc.kill()
    err = "".join(seen) + rest
    assert proc.returncode == 130, err[-2000:]
    assert "\r" not in err and "\x1b" not in err and "Traceback" not in err, err[-2000:]  # plain lines, no bar
    # the opening summary
    checkpoint = latest_checkpoint(out)
    model, _ = attnlab.load(checkpoint)
    lines = err.splitlines()
    head = lines.index(f"train gpt-char: {sum(p.numel() for p in model.parameters()):,} parameters")
    assert lines[head + 1].startswith("  model   Decoder (decoder): 1 layer, d_model 16, 2 heads")
    assert "  batch   2 examples x 16 positions = 32 tokens per step" in lines
    assert "  device  cpu, 1 thread" in lines
    assert f"  output  {out}  (metrics.jsonl, TensorBoard)" in lines
    assert any(line.startswith("  data    ") and "train /" in line and "val tokens" in line for line in lines)
    # plain periodic lines: the first step at once, then every log_every=2 steps
    steps = [int(line.split()[1].split("/")[0]) for line in lines if line.startswith("step ")]
    assert steps[:2] == [1, 2] and all(s % 2 == 0 for s in steps[1:]), steps
    # the interrupted step was finished, logged and saved, and the message names it
    step = int(checkpoint.name.split("-")[1])
    assert len(_metrics(out)) == step >= 2
    assert f"interrupted; last checkpoint {checkpoint}\n" in err, err[-2000:]
    (command,) = [line.split("resume with: ", 1)[1] for line in lines if "resume with: " in line]
    argv = shlex.split(command)
    assert argv[:2] == ["attnlab", "train"]
    # the printed command, given to the attnlab command line, continues this run with the same settings
    from attnlab.training import run as training_run

    calls = []
    monkeypatch.setattr(training_run, "run_train", lambda recipe, **kw: calls.append((recipe, kw)) or {})
    assert main(argv[1:]) == 0
    assert calls == [("gpt-char", dict(config=None, out=str(out), resume=True, overwrite=False,
                                       overrides=run_keys))]


# ------------------------------------------------------------------------------------------ sample_tokens
@pytest.mark.parametrize("value", ["-3", "1000000"])
def test_sample_tokens_out_of_range_is_refused_before_training(tmp_path, keys, value, capsys):
    out = tmp_path / "run"
    with pytest.raises(ConfigError, match=f"sample_tokens={value}: allowed 0 .. 100,000"):
        run_train("gpt-char", out=str(out), quiet=True, overrides={**keys, "sample_tokens": value})
    assert not out.exists()  # refused before the data, the model or a step
    code = main(["train", "gpt-char", "--out", str(out), *_argv({**keys, "sample_tokens": value})])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "sample_tokens" in err and not out.exists(), err


def test_sample_tokens_0_trains_and_samples_nothing(tmp_path, keys):
    """`attnlab train --keys` documents 0 as "none": the run finishes, and no sample text is generated or saved."""
    out = tmp_path / "run"
    result = run_train("gpt-char", out=str(out), quiet=True, overrides={**keys, "sample_tokens": "0"})
    assert result["samples"] == [] and not (out / "samples.txt").exists()


# ------------------------------------------------------------------------------------------ bench and cost
def test_bench_shows_a_sections_lines_while_its_process_still_runs(tmp_path, monkeypatch):
    """A benchmark run in its own process writes into a pipe; each line must reach the screen as it is printed,
    not when the process ends. The child prints one line, then waits (up to 60 s) for a file that the screen
    creates when that line arrives: a buffered child would print nothing until after the wait."""
    from attnlab.benchmarks import run_all

    flag = tmp_path / "seen"
    (tmp_path / "fake_bench.py").write_text(
        "import pathlib, time\n"
        "print('case one done')\n"
        f"flag = pathlib.Path({str(flag)!r})\n"
        "deadline = time.monotonic() + 20\n"
        "while not flag.exists() and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "print('case two done', 'after the first was seen' if flag.exists() else 'but the first was held back')\n")

    class Screen(io.StringIO):
        def write(self, text):
            if "case one done" in text:
                flag.touch()
            return super().write(text)

    screen = Screen()
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # as in a user's shell (some CI images set it)
    monkeypatch.setattr(sys, "stdout", screen)
    assert run_all._run_other("fake", "fake_bench", [], tmp_path) == 0
    assert screen.getvalue() == "case one done\ncase two done after the first was seen\n"
    assert (tmp_path / "fake.txt").read_text() == screen.getvalue()


def test_cost_measure_shows_which_point_it_times_on_a_terminal(monkeypatch):
    from attnlab.config import ModelConfig
    from attnlab.cost import measure

    config = ModelConfig(topology="decoder", vocab_size=32, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=32)
    screen = _Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    seen = []
    points = measure.sweep(config, [8, 16], series=("attention",), budget_s=0.001,
                           progress=lambda p: seen.append(screen.getvalue()))
    assert [(p.series, p.n) for p in points] == [("attention", 8), ("attention", 16)]
    assert "[1/2] timing attention n=8" in seen[0] and seen[0].endswith("\r\x1b[K")  # cleared before each point
    assert "[2/2] timing attention n=16, about " in seen[1] and " s left" in seen[1]
    quiet = io.StringIO()  # not a terminal: nothing besides the points
    monkeypatch.setattr(sys, "stderr", quiet)
    measure.sweep(config, [8, 16], series=("attention",), budget_s=0.001)
    assert quiet.getvalue() == ""


def test_a_resumed_run_shows_each_step_once_in_tensorboard(tmp_path):
    """A run that went on past its last checkpoint (steps 4-6 logged, checkpoint at 3) is resumed from step 3:
    TensorBoard shows steps 1..6 once each, with the resumed run's values (which equal the first run's: the
    resume is exact)."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    settings = TrainSettings(steps=6, batch_size=4, lr=3e-3, warmup=2, eval_every=0, save_every=3, keep=5,
                             plot=False)
    first = Trainer(TinyLMTask(), settings, tmp_path, quiet=True)
    first.fit()
    first.close()
    first_losses = [r["loss"] for r in _metrics(tmp_path)]
    (tmp_path / "latest").write_text("step-00000003\n")  # as if the run had died after step 6's log, before its save
    second = Trainer(TinyLMTask(), settings, tmp_path, quiet=True)
    second.fit(resume=True)
    second.close()
    assert len(_events(tmp_path)) == 2
    events = EventAccumulator(str(tmp_path), size_guidance={"scalars": 0})
    events.Reload()
    logged = [(e.step, e.value) for e in events.Scalars("train/loss")]
    assert [step for step, _ in logged] == [1, 2, 3, 4, 5, 6]
    torch.testing.assert_close(torch.tensor([v for _, v in logged]),
                               torch.tensor(first_losses, dtype=torch.float32), rtol=2**-23, atol=0)


def test_without_tensorboard_the_run_says_so_once_and_keeps_metrics_jsonl(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # find_spec answers None: not installed
    screen = io.StringIO()
    settings = TrainSettings(steps=3, batch_size=2, eval_every=0, plot=False, warmup=1)
    trainer = Trainer(TinyLMTask(), settings, tmp_path, console=Console(stream=screen))
    trainer.fit()
    trainer.report_text("samples", ["abc"])
    trainer.close()
    assert screen.getvalue().count("tensorboard package is not installed") == 1
    assert _events(tmp_path) == [] and len(_metrics(tmp_path)) == 3


def test_without_matplotlib_the_run_says_so_and_draws_no_plot(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # find_spec answers None: not installed
    screen = io.StringIO()
    settings = TrainSettings(steps=2, batch_size=2, eval_every=0, plot=True, warmup=1, report="none")
    Trainer(TinyLMTask(), settings, tmp_path, console=Console(stream=screen)).fit()
    said = screen.getvalue()
    assert "needs matplotlib, which is not installed" in said and "attnlab[plots]" in said
    assert said.count("needs matplotlib") == 1 and not (tmp_path / "loss.png").exists()
    assert len(_metrics(tmp_path)) == 2
