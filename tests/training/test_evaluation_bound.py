"""Evaluation a person can see coming: bounded by default (a large corpus's whole validation split took minutes
per evaluation, unannounced), stated in the opening summary, shown while it runs, counted in the ETA and left out
of tokens/s; eval_windows=0 still scores the whole split, and a tokenizer trained on the corpus is announced."""

import io

import pytest
import torch
from cli_calls import run_cli
from conftest import TinyLMTask

from attnlab.errors import ConfigError
from attnlab.training import Trainer, TrainSettings
from attnlab.training.progress import Console
from attnlab.training.recipes import RECIPES, get_recipe
from attnlab.training.recipes.base import EVAL_WINDOWS
from attnlab.training.run import run_train
from attnlab.training.settings import resolve_params
from attnlab.training.trainer import EvalStatus

# 4-character windows, half of the text held out: the validation split holds more windows than the default bound
TEXT = "".join(f"item {i}: the cat sat on mat {i % 11}.\n" for i in range(700))
SMALL = {"d_model": "16", "n_heads": "2", "d_ff": "32", "n_layers": "1", "seq_len": "4", "batch_size": "200",
         "val_fraction": "0.5", "steps": "2", "eval_every": "1", "log_every": "1", "warmup": "1", "threads": "1",
         "plot": "false", "report": "none", "sample_tokens": "0"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "text.txt"
    path.write_text(TEXT)
    return str(path)


def _task(tmp_path, corpus, **keys):
    recipe = get_recipe("gpt-char")
    settings, params = resolve_params(recipe, {**SMALL, "data": corpus, **keys})
    task = recipe.build({**params, "batch_size": settings.batch_size, "tokenizer": None, "out_dir": str(tmp_path)})
    return task, settings


def _windows_scored(task) -> int:
    """Rows the model is given during one evaluation (a forward hook counts them)."""
    rows = []
    handle = task.model.register_forward_pre_hook(lambda module, args: rows.append(args[0].shape[0]))
    with torch.no_grad():
        task.evaluate(task.model)
    handle.remove()
    return sum(rows)


def _available(task) -> int:
    return (len(task.data.tokens("val")) - 1) // 4  # 4-token windows, each with its next token as a target


def test_every_bounding_key_has_a_bound_by_default():
    bounded = {name: {k: v for k, v in recipe.params.items() if k in ("eval_windows", "eval_examples")}
               for name, recipe in RECIPES.items()}
    assert bounded["gpt-char"] == bounded["gpt-bpe"] == {"eval_windows": EVAL_WINDOWS}
    assert bounded["translate-numbers"]["eval_examples"] > 0
    assert all(v > 0 for keys in bounded.values() for v in keys.values()), bounded


def test_the_default_scores_eval_windows_windows_and_0_scores_the_whole_split(tmp_path, corpus):
    task, _ = _task(tmp_path / "a", corpus)
    assert _available(task) > EVAL_WINDOWS  # the split is larger than the bound
    assert _windows_scored(task) == EVAL_WINDOWS
    with torch.no_grad():
        first = task.evaluate(task.model)["val_loss"]
        assert task.evaluate(task.model)["val_loss"] == first  # the same windows every time
    whole, _ = _task(tmp_path / "b", corpus, eval_windows="0")
    assert _windows_scored(whole) == _available(whole)


def test_the_opening_summary_says_what_an_evaluation_scores(tmp_path, corpus):
    task, settings = _task(tmp_path, corpus)
    lines = Trainer(task, settings, tmp_path / "run", quiet=True).summary()
    assert (f"  eval    every 1 steps and at the end, on {EVAL_WINDOWS:,} of {_available(task):,} validation windows, "
            f"evenly spaced over the split, the same each time (eval_windows={EVAL_WINDOWS}; 0 = all)") in lines
    whole, settings = _task(tmp_path / "b", corpus, eval_windows="0")
    lines = Trainer(whole, settings, tmp_path / "run-b", quiet=True).summary()
    assert (f"  eval    every 1 steps and at the end, on all {_available(whole):,} validation windows "
            "(eval_windows=0 scores all)") in lines


def test_a_log_shows_the_evaluation_while_it_runs(tmp_path, corpus, monkeypatch):
    monkeypatch.setattr(EvalStatus, "LOG_EVERY", 0.0)  # a line for every group (a log's are 30 s apart)
    task, settings = _task(tmp_path, corpus)
    log = io.StringIO()
    Trainer(task, settings, tmp_path / "run", console=Console(stream=log)).fit()
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and "\x1b" not in log.getvalue()
    at_2 = lines.index("evaluating at step 2 ...")  # at once, before the first group is scored
    progress = [line.split(" (")[0] for line in lines[at_2 + 1:] if line.startswith("evaluating at step 2:")]
    assert progress == [f"evaluating at step 2: {n:,}/{EVAL_WINDOWS:,} windows" for n in range(200, 2401, 200)]
    assert lines[at_2 + len(progress) + 1].startswith("step 2/2 ")  # then the step's line with its val_loss


class _Clock:
    """Time that moves only when told: a training step takes 0.5 s, an evaluation 1000 s."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class _TimedTask(TinyLMTask):
    def __init__(self, clock):
        super().__init__()
        self.clock = clock

    def loss(self, model, batch):
        self.clock.now += 0.5
        return super().loss(model, batch)

    def evaluate(self, model):
        self.clock.now += 1000.0
        return super().evaluate(model)


def test_tokens_per_second_counts_training_and_the_eta_adds_the_evaluations(tmp_path):
    clock = _Clock()
    settings = TrainSettings(steps=4, batch_size=2, eval_every=2, log_every=1, plot=False, warmup=1, report="none")
    log = io.StringIO()
    trainer = Trainer(_TimedTask(clock), settings, tmp_path, console=Console(stream=log))
    trainer.clock = clock
    result = trainer.fit()
    per_step = 2 * 16  # 2 windows of 16 targets
    assert [r["tokens_per_s"] for r in trainer.history] == [per_step / 0.5] * 4  # evaluations left out
    assert (result["train_s"], result["eval_s"]) == (2.0, 2000.0)
    eta = {line.split()[1]: line.split("ETA ")[1].split(" val_loss")[0] for line in log.getvalue().splitlines()
           if line.startswith("step ")}
    # before the first evaluation its length is unknown: the count is said; after it, 1000 s each
    assert eta == {"1/4": "0m01s + 2 evaluations", "2/4": "16m41s", "3/4": "16m40s", "4/4": "0m00s"}


def test_a_bpe_tokenizer_trained_on_the_corpus_is_announced(tmp_path, corpus, capsys):
    keys = {**SMALL, "data": corpus, "vocab_size": "300", "seq_len": "8", "batch_size": "4", "steps": "1",
            "eval_windows": "4", "sample_tokens": "2"}
    run_train("gpt-bpe", out=str(tmp_path / "run"), overrides=keys)
    err = capsys.readouterr().err
    assert "gpt-bpe: training a 300-token BPE tokenizer on the corpus (once for this run; --resume reuses it)" in err


@pytest.mark.parametrize("recipe", [name for name, r in RECIPES.items() if "eval_windows" in r.defaults()])
def test_a_negative_eval_windows_is_refused_in_one_line(recipe, tmp_path, capsys):
    """eval_windows=-5 reached torch as a (-5, seq) shape: a traceback (invalid shape dimension -5) at the first
    evaluation. It is refused with the other settings, before anything is built."""
    with pytest.raises(ConfigError, match=r"^eval_windows=-5: allowed 0 \.\. 1,000,000,000 \(validation windows"):
        resolve_params(get_recipe(recipe), {"eval_windows": "-5"})
    code, _, err = run_cli(["train", recipe, "eval_windows=-5", f"--out={tmp_path / 'run'}"], capsys)
    assert code == 2 and err.count("\n") == 1 and "eval_windows=-5: allowed 0" in err
    assert not (tmp_path / "run").exists()
