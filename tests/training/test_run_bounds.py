"""What a run says about its own length and keeps along the way: each preparation phase named with its time (the
bigram count on the training loop's threads), a checkpoint at every evaluation (the latest and the best by
val_loss, resumable), epochs= and patience= (early stopping on val_loss), the share of an epoch a run covers, the
closing summary in words (the JSON in result.json) and the data formats `attnlab train --help` names."""

import json
import math
import shlex

import pytest
import torch
from cli_calls import run_cli
from conftest import TinyLMTask
from safetensors.torch import load_file
from tiny_runs import PROSE, with_corpus

from attnlab.data.sources import FORMATS
from attnlab.data.token_file import TokenFile
from attnlab.errors import ConfigError
from attnlab.threads import using_threads
from attnlab.training import Trainer, TrainSettings
from attnlab.training.run import run_train

KEYS = {"steps": "4", "batch_size": "2", "d_model": "16", "n_heads": "2", "d_ff": "32", "n_layers": "1",
        "seq_len": "16", "eval_every": "2", "log_every": "2", "threads": "1", "plot": "false", "warmup": "1",
        "sample_tokens": "6", "report": "none"}


@pytest.fixture()
def keys(tmp_path):
    return with_corpus(tmp_path, KEYS, PROSE)


def _argv(keys):
    return [f"{k}={v}" for k, v in keys.items()]


def _steps(out):
    return [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]


class ScriptedValLoss(TinyLMTask):
    """TinyLMTask whose evaluations report the given val_loss values, in order (training stays real)."""

    def __init__(self, values):
        super().__init__()
        self.values = list(values)

    def evaluate(self, model):
        return {"val_loss": self.values.pop(0)}


def _settings(**kw):
    base = dict(steps=8, batch_size=2, lr=3e-3, warmup=1, eval_every=2, plot=False, report="none")
    return TrainSettings(**{**base, **kw})


# ------------------------------------------------------------------------------------------ preparation
def test_the_bigram_count_runs_on_one_thread_whatever_the_callers_count(monkeypatch):
    """On two threads the count's small ops each wait on a barrier (205-309 s of wall time against 0.9 s of CPU
    on a busy 2-core machine); one thread is never slower for it. Its value is that of plain Python counters."""
    from collections import Counter

    from attnlab.training.recipes import text

    seen = []
    count = text._count_wanted
    monkeypatch.setattr(text, "_count_wanted", lambda *a: seen.append(torch.get_num_threads()) or count(*a))
    g = torch.Generator().manual_seed(0)
    train, val = torch.randint(0, 11, (3000,), generator=g), torch.randint(0, 11, (3, 9), generator=g)
    with using_threads(2):
        loss = text.bigram_loss(train, val, 11)
        assert torch.get_num_threads() == 2  # the caller's count comes back
    assert seen and set(seen) == {1}
    pairs = Counter(zip(train[:-1].tolist(), train[1:].tolist(), strict=True))
    firsts = Counter(train[:-1].tolist())
    scored = [(a, b) for row in val.tolist() for a, b in zip(row[:-1], row[1:], strict=True)]
    expected = -sum(math.log((pairs[p] + 1) / (firsts[p[0]] + 11)) for p in scored) / len(scored)
    assert loss == pytest.approx(expected, rel=1e-12)  # float64 throughout


def test_the_data_is_prepared_on_the_training_loops_threads(tmp_path, keys, monkeypatch):
    """threads=0: the build's torch work gets what attnlab.threads chooses for the loop, not torch's own count."""
    from attnlab.training import trainer
    from attnlab.training.recipes import text

    monkeypatch.setattr(trainer, "choose", lambda requested=None, **kw: requested or 1)  # "one core is free"
    seen = []
    build = text.build_model
    monkeypatch.setattr(text, "build_model", lambda config: seen.append(torch.get_num_threads()) or build(config))
    with using_threads(2):
        run_train("gpt-char", out=str(tmp_path / "run"), quiet=True, overrides={**keys, "threads": "0"})
    assert seen == [1]


def test_each_preparation_phase_is_printed_with_its_time(tmp_path, keys, capsys):
    run_train("gpt-char", out=str(tmp_path / "run"), overrides=keys)
    err = capsys.readouterr().err.splitlines()
    head = next(i for i, line in enumerate(err) if line.startswith("train gpt-char: "))
    timed = [line for line in err[:head] if line.endswith(" s") and ": " in line]
    said = " | ".join(timed)
    for phase in (f"reading and checking {keys['data']}", "tokenizing the corpus into", "gpt-char: building the model",
                  "gpt-char: counting the bigram baseline on ", "gpt-char: setting up the optimizer"):
        assert phase in said, err[:head]
    for line in timed:  # "WHAT: 0.0 s", each announced first by "WHAT ..."
        what, seconds = line.rsplit(": ", 1)
        assert float(seconds.removesuffix(" s")) >= 0 and f"{what} ..." in err[:head]
    # the closing line names what this recipe's report does (samples), nothing it does not (translations)
    assert any(line.startswith("gpt-char: sampling 2 texts of 6 tokens into samples.txt: ") for line in err)
    assert not any("translations" in line for line in err)


# ------------------------------------------------------------------------------------------ checkpoints
def test_each_evaluation_saves_the_latest_and_keeps_the_best_by_val_loss(tmp_path):
    """val_loss 3.0, 2.0, 2.5, 2.6 at steps 2, 4, 6, 8 with keep=1: step 4 (the best) and step 8 (the latest)
    stay; the best one holds the weights an independent run stopped at step 4 has."""
    out = tmp_path / "run"
    trainer = Trainer(ScriptedValLoss([3.0, 2.0, 2.5, 2.6]), _settings(keep=1), out, quiet=True)
    result = trainer.fit()
    assert sorted(p.name for p in out.glob("step-*")) == ["step-00000004", "step-00000008"]
    assert (out / "latest").read_text() == "step-00000008\n" and (out / "best").read_text() == "step-00000004\n"
    assert (result["best_step"], result["best_val_loss"]) == (4, 2.0)
    assert result["best_checkpoint"] == str(out / "step-00000004")
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no temporary file left behind
    reference = tmp_path / "reference"
    Trainer(ScriptedValLoss([3.0, 2.0]), _settings(), reference, quiet=True).fit(stop_at=4)
    best, at_4 = load_file(out / "step-00000004" / "model.safetensors"), load_file(
        reference / "step-00000004" / "model.safetensors")
    assert best.keys() == at_4.keys() and all(torch.equal(best[k], at_4[k]) for k in best)


def test_a_crash_after_an_evaluation_resumes_from_its_checkpoint_with_the_best_so_far(tmp_path):
    """The run dies after step 5 (stop_at, as Ctrl-C would): the evaluation at step 4 had saved; resumed, the run
    ends as the uninterrupted one: the same losses, the same best step and value, the same `best`."""
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    settings = _settings(keep=5)
    expected = Trainer(TinyLMTask(), settings, whole, quiet=True).fit()
    Trainer(TinyLMTask(), settings, cut, quiet=True).fit(stop_at=5)
    assert {"step-00000002", "step-00000004"} <= {p.name for p in cut.glob("step-*")}  # saved at each evaluation
    resumed = Trainer(TinyLMTask(), settings, cut, quiet=True).fit(resume=True)
    assert resumed["losses"][-3:] == expected["losses"][-3:]
    assert (resumed["best_step"], resumed["best_val_loss"]) == (expected["best_step"], expected["best_val_loss"])
    assert (cut / "best").read_text() == (whole / "best").read_text()


def test_a_run_folders_best_link_is_replaced_not_written_through(tmp_path):
    out, outside = tmp_path / "run", tmp_path / "elsewhere"
    out.mkdir()
    outside.write_text("someone else's file\n")
    (out / "best").symlink_to(outside)
    Trainer(ScriptedValLoss([1.0, 2.0, 3.0, 4.0]), _settings(), out, quiet=True).fit()
    assert outside.read_text() == "someone else's file\n"
    assert not (out / "best").is_symlink() and (out / "best").read_text() == "step-00000002\n"


# ------------------------------------------------------------------------------------------ patience, epochs
def test_patience_stops_after_k_evaluations_without_a_lower_val_loss(tmp_path):
    out = tmp_path / "run"
    values = [3.0, 2.0, 2.5, 2.6, 1.0]  # no improvement at steps 6 and 8: patience=2 stops at step 8
    result = Trainer(ScriptedValLoss(values), _settings(steps=10, patience=2), out, quiet=True).fit()
    assert (result["step"], result["stopped_early"], result["best_step"]) == (8, True, 4)
    assert _steps(out) == list(range(1, 9)) and (out / "latest").read_text() == "step-00000008\n"
    assert (out / "best").read_text() == "step-00000004\n"
    # equal is no improvement (a lower val_loss is); patience=0 never stops
    flat = Trainer(ScriptedValLoss([2.0, 2.0, 1.0, 1.0, 1.0]), _settings(steps=10, patience=1), tmp_path / "f",
                   quiet=True).fit()
    assert (flat["step"], flat["best_step"]) == (4, 2)
    never = Trainer(ScriptedValLoss(values), _settings(steps=10), tmp_path / "n", quiet=True).fit()
    assert never["step"] == 10 and "stopped_early" not in never
    # patience reached at the last step: the run simply ends, it did not stop early
    ended = Trainer(ScriptedValLoss([2.0, 2.5, 3.0]), _settings(steps=6, patience=2), tmp_path / "e", quiet=True).fit()
    assert (ended["step"], ended["stopped_early"]) == (6, False)


@pytest.mark.parametrize("overrides, words", [
    ({"patience": "-1"}, "patience=-1 must be 0 or a positive integer"),
    ({"patience": "2", "eval_every": "0"}, "give eval_every=N"),
    ({"epochs": "-1"}, "epochs=-1.0: allowed a number of passes"),
    ({"epochs": "nan"}, "epochs=nan: allowed"),
    ({"epochs": "1e9"}, "at most 10,000"),
    ({"epochs": "2", "steps": "10"}, "steps= and epochs= both set how long to train: give one of them"),
])
def test_bad_epochs_and_patience_are_refused_in_one_line_before_anything_is_written(tmp_path, keys, overrides,
                                                                                     words, capsys):
    out = tmp_path / "run"
    if "epochs" in overrides:
        keys = {k: v for k, v in keys.items() if k != "steps"}
    code, _, err = run_cli(["train", "gpt-char", "--out", out, *_argv({**keys, **overrides})], capsys)
    assert code == 2 and err.count("\n") == 1 and words in err, err
    assert not out.exists()


def test_patience_on_a_task_without_val_loss_is_refused(tmp_path):
    class Accuracy(TinyLMTask):
        reports_val_loss = False

    with pytest.raises(ConfigError, match="does not report; allowed here: patience=0"):
        Trainer(Accuracy(), _settings(patience=1), tmp_path, quiet=True)

    class Unknown(TinyLMTask):  # says nothing up front: refused at its first evaluation
        def evaluate(self, model):
            return {"accuracy": 0.5}

    with pytest.raises(ConfigError, match=r"reports none \(it reports accuracy\); allowed here: patience=0"):
        Trainer(Unknown(), _settings(patience=1), tmp_path / "u", quiet=True).fit()


def test_epochs_sets_the_steps_from_the_training_data(tmp_path, keys, capsys):
    """epochs=0.02 of 16-token windows in batches of 2: ceil(0.02 x windows / 2) steps, windows counted from the
    run's own token file; the summaries say the run covers 2% of an epoch."""
    out = tmp_path / "run"
    run_keys = {k: v for k, v in keys.items() if k != "steps"}
    result = run_train("gpt-char", out=str(out), overrides={**run_keys, "epochs": "0.02", "eval_every": "5"})
    windows = len(TokenFile.open(out / "data").tokens("train")) // 16
    steps = math.ceil(0.02 * windows / 2)
    assert result["step"] == steps == _steps(out)[-1]
    err = capsys.readouterr().err
    assert f"  steps   {steps}; checkpoint at each evaluation" in err
    assert f"  epoch   {steps * 2 / windows:.1%} of an epoch ({steps * 2:,} of {windows:,} windows of 16 tokens" in err
    assert "from epochs=0.02" in err
    assert result["epoch"]["covered"] == pytest.approx(steps * 2 / windows, rel=1e-12)
    with pytest.raises(ConfigError, match="give steps=N instead"):  # a task that does not know its data's size
        Trainer(TinyLMTask(), _settings(epochs=1.0), tmp_path / "tiny", quiet=True)


# ------------------------------------------------------------------------------------------ the closing words
def test_the_final_summary_is_words_with_the_next_commands_and_the_json_is_in_result_json(tmp_path, keys, capsys,
                                                                                          monkeypatch):
    out = tmp_path / "run"
    code, stdout, err = run_cli(["train", "gpt-char", "--out", out, *_argv(keys)], capsys)
    assert code == 0, err
    saved = json.loads((out / "result.json").read_text())
    with pytest.raises(json.JSONDecodeError):
        json.loads(stdout)
    lines = stdout.splitlines()
    windows = len(TokenFile.open(out / "data").tokens("train")) // 16
    assert lines[0].startswith("gpt-char: 4 steps in ")
    assert (f"  val_loss   {saved['eval']['val_loss']:.4f}, against {saved['eval']['bigram_val_loss']:.4f} for the "
            "bigram baseline") in stdout
    assert f"  best       val_loss {saved['best_val_loss']:.4f} at step {saved['best_step']}: " in stdout
    assert (f"  data       {8 / windows:.1%} of an epoch (8 of {windows:,} windows of 16 tokens drawn); more: steps=N, "
            f"or epochs=1 ({math.ceil(windows / 2):,} steps)") in lines
    assert f"  saved      {out / 'step-00000004'} (the latest); every number in {out}/result.json" in lines
    assert saved["checkpoint"] == str(out / "step-00000004") and saved["step"] == 4
    # the opening summary said the same share up front
    assert f"  epoch   {8 / windows:.1%} of an epoch (8 of {windows:,} windows of 16 tokens drawn); more: " in err
    nexts = lines[lines.index("next:") + 1:lines.index("---")]
    assert nexts[0] == f"  attnlab generate {shlex.quote(str(out))} --prompt 'The '"
    assert nexts[1] == f"  attnlab explore {shlex.quote(str(out))}"
    # the third trains on from the checkpoint: run as printed, it continues to step 8
    command = shlex.split(nexts[2].split("   #")[0])
    assert command[-2:] == ["steps=8", "--resume"]
    code, _, err = run_cli(command[1:], capsys)
    assert code == 0, err
    assert _steps(out) == list(range(1, 9))


def test_an_early_stop_is_said_in_the_final_summary(tmp_path):
    from attnlab.training.final_summary import final_summary

    out = tmp_path / "run"
    result = Trainer(ScriptedValLoss([2.0, 2.5, 3.0]), _settings(patience=2), out, quiet=True).fit()
    result.update(out=str(out), recipe="tiny", checkpoint=str(out / "step-00000006"))
    lines = final_summary(result, more="attnlab train tiny --resume")
    assert ("  stopped    early at step 6 of 8: no lower val_loss in 2 evaluations (patience=2)") in lines
    assert not any("--resume" in line for line in lines)  # stopped on purpose: no "train on" offered


def test_a_small_share_of_an_epoch_keeps_two_significant_digits():
    """A 44.5 MB corpus at gpt-char's defaults: 12 of 595,491 windows per step; 2,000 steps cover 4.0%."""
    from attnlab.training.final_summary import epoch_words

    record = {"examples": 595_491, "unit": "windows of 64 tokens", "per_step": 12}
    assert epoch_words({**record, "covered": 12 / 595_491}).startswith("0.002% of an epoch (12 of 595,491 windows")
    assert epoch_words({**record, "covered": 24_000 / 595_491}) == (
        "4.0% of an epoch (24,000 of 595,491 windows of 64 tokens drawn); more: steps=N, or epochs=1 (49,625 steps)")
    assert epoch_words({**record, "covered": 2.5}).startswith("2.50 epochs (1,488,728 of 595,491 windows")


# ------------------------------------------------------------------------------------------ --help
def test_train_help_names_every_data_format_the_reader_dispatches(capsys):
    code, stdout, _ = run_cli(["train", "--help"], capsys)
    assert code == 0
    data_help = " ".join(stdout.split("\n  --data DATA", 1)[1].split("\n  --keys", 1)[0].split())
    for fmt in FORMATS:
        assert f".{fmt}" in data_help, data_help
    assert "`datasets`" in data_help and "text file for" not in data_help
