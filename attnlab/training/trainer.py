"""The training loop: one loop for every recipe, from a laptop CPU to torchrun on GPUs.

A recipe hands the trainer a Task: the model, a way to draw a training batch from a seeded generator, a loss,
and an evaluation. The trainer owns everything else: AdamW groups, warmup + cosine schedule, accumulation,
clipping, autocast, compile, device placement, distributed wrapping, metrics, plots and checkpoints, and what a
person watching sees: an opening summary, a progress bar or plain lines (progress.py), TensorBoard / CSV / W&B
logs (report.py), and on Ctrl-C a checkpoint of the last finished step (TrainingInterrupted says where).

Determinism is a feature: batches come from a torch.Generator whose state is checkpointed, dropout from the
global torch RNG (checkpointed too), so an interrupted and resumed run on CPU reproduces the uninterrupted
run's losses exactly.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import math
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from torch import nn

from attnlab.errors import AttnlabError, ConfigError
from attnlab.extras import MissingExtra, require
from attnlab.storage import atomic_write
from attnlab.threads import choose, using_threads
from attnlab.training import distributed as dist_utils
from attnlab.training import probe
from attnlab.training.checkpoint import latest_checkpoint, load_checkpoint, point_best, save_checkpoint, step_name
from attnlab.training.final_summary import epoch_words
from attnlab.training.optim import build_optimizer, build_scheduler
from attnlab.training.plots import plot_losses
from attnlab.training.progress import Console, duration
from attnlab.training.report import Reporter, parse_report
from attnlab.training.settings import TrainSettings

QUIET_S = 8.0  # at most this long without a line on a log or a pipe (a terminal's bar moves every step)


class NonFiniteLoss(AttnlabError):
    """The loss became NaN or infinite; training stopped before the bad step touched the weights."""


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped the run after a finished step, which was saved: `checkpoint` (None when nothing was saved)."""

    def __init__(self, step: int, checkpoint: Path | None):
        super().__init__(f"interrupted at step {step}")
        self.step, self.checkpoint = step, checkpoint


class Task:
    """What a recipe provides. Subclasses set `model` (and `tokenizer`) and implement the three methods."""

    model: nn.Module
    tokenizer = None
    # whether evaluate() returns a val_loss (what the best checkpoint and patience= go by): False lets patience=
    # be refused before the run starts; None (unknown, a task of your own) is checked at the first evaluation
    reports_val_loss: bool | None = None

    def train_batch(self, generator: torch.Generator, batch_size: int) -> dict[str, torch.Tensor]:
        """A global batch of `batch_size` examples drawn with `generator` (batch dimension first)."""
        raise NotImplementedError

    def loss(self, model: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
        """(mean loss over the batch, number of tokens or examples it covered, for tokens/s)."""
        raise NotImplementedError

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Held-out metrics; `val_loss` is plotted beside the training loss when present.

        A long evaluation calls self.evaluated(done, total) after each group it scores, so the run shows how far
        it is (a large validation split can take minutes, and nothing else moves on screen meanwhile)."""
        return {}

    # set by Trainer.evaluate for the length of an evaluation: shows (done, total, unit) to the person watching
    eval_progress: Callable[[int, int, str], None] | None = None

    def evaluated(self, done: int, total: int, unit: str = "windows") -> None:
        """Report an evaluation's progress: `done` of `total` `unit` scored (a no-op outside the trainer)."""
        if self.eval_progress is not None:
            self.eval_progress(done, total, unit)

    def eval_summary(self) -> str | None:
        """One line for the opening summary: what each evaluation scores and which key bounds it (None: not said).

        Said up front because the size of the evaluation, not the training, is what makes a run on a large
        corpus slow when nobody expects it."""
        return None

    def flops_per_item(self) -> float | None:
        """Training FLOPs per counted token/example (for FLOP/s and MFU), or None when unknown."""
        return None

    def report_what(self) -> str | None:
        """What the task's report(model, out) does after training, for the status line while it runs ("sampling
        2 texts of 300 tokens into samples.txt"); None: the line says "the final report". A task without a
        report() is never asked."""
        return None

    def epoch_size(self) -> tuple[int, str] | None:
        """(examples in one epoch of the training data, what an example is), or None when not known.

        An example is one row of a batch: a window of tokens, an image, a pair. Batches are drawn at random, so
        an epoch here is as many examples as the training split holds (a window per `seq_len` tokens), not a pass
        that sees each exactly once; it is what epochs= and the summaries' "of an epoch" count. The default reads
        what the built-in recipes keep: a TokenFile `data` or a `train_ids` tensor cut into windows of `inner`
        tokens (masked recipes: seq_len - 2 between [CLS] and [SEP]) or p["seq_len"], `train_x` images,
        `train_idx` pairs."""
        p = getattr(self, "p", None) or {}
        window = getattr(self, "inner", None) or p.get("seq_len")
        data = getattr(self, "data", None)
        ids = vars(self).get("train_ids")  # an instance's tensor (CorpusTask's property copies the whole split)
        tokens = None
        if data is not None and hasattr(data, "tokens"):
            try:
                tokens = len(data.tokens("train"))
            except (OSError, ValueError, KeyError):
                return None
        elif isinstance(ids, torch.Tensor):
            tokens = len(ids)
        if tokens is not None and isinstance(window, int) and window > 0:
            return max(1, tokens // window), f"windows of {window} tokens"
        for name, what in (("train_x", "images"), ("train_idx", "pairs")):
            examples = getattr(self, name, None)
            if examples is not None:
                return len(examples), what
        return None

    def data_summary(self) -> str | None:
        """One line for the opening summary: how much the task trains and evaluates on (None: not known).

        The default reads what the built-in recipes keep: a TokenFile `data` (tokens per split), image tensors
        `train_x` / `test_x`, or index tensors `train_idx` / `test_idx` (pairs); a task may say it better."""
        data = getattr(self, "data", None)
        if data is not None and hasattr(data, "tokens"):
            try:
                train, val = len(data.tokens("train")), len(data.tokens("val"))
            except (OSError, ValueError, KeyError):
                return None
            origin = getattr(data, "origin", None)  # TokenFile.prepare: "the run folder" or "the token store"
            reused = f" (reused from {origin})" if origin and getattr(self, "data_reused", False) else ""
            return f"{train:,} train / {val:,} val tokens{reused}"
        for train_name, test_name, what in (("train_x", "test_x", "images"), ("train_idx", "test_idx", "pairs")):
            train, test = getattr(self, train_name, None), getattr(self, test_name, None)
            if train is not None and test is not None:
                return f"{len(train):,} train / {len(test):,} held-out {what}"
        return None


def resolve_device(name: str) -> torch.device:
    """device=auto -> cuda or cpu; a CUDA device this machine lacks is refused (attnlab.devices: shared with
    `attnlab generate --device` and `attnlab explore --device`)."""
    from attnlab.devices import resolve_device as resolve

    return resolve(name, "device", ConfigError)


def _to_device(batch: dict[str, Any], device: torch.device) -> dict[str, Any]:
    if device.type == "cpu":
        return batch
    # pinned host memory lets the copy overlap with compute
    return {k: v.pin_memory().to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v
            for k, v in batch.items()}


class Trainer:
    def __init__(self, task: Task, settings: TrainSettings, out: str | Path, *, recipe: dict[str, Any] | None = None,
                 quiet: bool = False, console: Console | None = None):
        self.task, self.settings, self.out = task, settings, Path(out)
        self.recipe = recipe or {}
        self.quiet = quiet
        self.info = dist_utils.setup(settings.device)
        # only rank 0 speaks and logs: torchrun's other ranks would print the same lines N times
        self.console = console if console is not None else Console(enabled=self.info.is_main and not quiet)
        self.reporter: Reporter | None = None  # opened by fit on rank 0; close() ends it
        self._interrupted = False
        self.device = resolve_device(settings.device)
        if self.device.type == "cuda" and self.info.world > 1:
            self.device = torch.device("cuda", self.info.local_rank)
        self.model = task.model.to(self.device)  # the plain model (saved, evaluated)
        if settings.epochs:  # epochs=N: the steps that draw N times the training split's examples
            settings = dataclasses.replace(settings, steps=steps_for_epochs(task, settings))
            self.settings = settings
        if settings.patience and getattr(task, "reports_val_loss", None) is False:
            raise ConfigError(f"patience={settings.patience} stops on the validation loss, which "
                              f"{self.recipe.get('name') or type(task).__name__}'s evaluation does not report; "
                              "allowed here: patience=0")
        s = settings
        self.optimizer = build_optimizer(self.model, s.lr, s.weight_decay, (s.beta1, s.beta2))
        self.scheduler = build_scheduler(self.optimizer, s.warmup, s.steps, s.min_lr_ratio)
        self.generator = torch.Generator().manual_seed(s.seed)
        self.step = 0
        self.history: list[dict[str, Any]] = []
        self._full_model: nn.Module | None = None  # fsdp: rank 0's unsharded copy, written to checkpoints
        self._bar = None  # fit's progress bar (progress.Bar) while it runs
        # the checkpoint with the lowest val_loss so far (kept when pruning, named by OUT/best), and how many
        # evaluations have passed since it (patience=); all three travel in the checkpoint's data state
        self.best_val_loss: float | None = None
        self.best_step: int | None = None
        self.evals_since_best = 0
        self.stopped_early = False
        self.clock = time.perf_counter  # what the loop times steps and evaluations with (a test gives a fake one)
        self.start_eval: dict[str, float] | None = None  # a fine-tuning run's step 0 evaluation (evaluate_start)
        self._line_at = time.monotonic()  # when the trainer last printed a line (a log's quiet stretch, QUIET_S)

    # ------------------------------------------------------------------ helpers
    def log(self, text: str) -> None:
        if self.info.is_main and not self.quiet:
            self.console.line(text)
            self._line_at = time.monotonic()

    def _write_metrics(self, record: dict[str, Any]) -> None:
        self.history.append(record)
        if self.info.is_main:
            self.out.mkdir(parents=True, exist_ok=True)
            with open(self.out / "metrics.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")
            if self.reporter is not None:
                self.reporter.scalars(record["step"], record)

    def _open_reporter(self) -> None:
        """settings.report's backends, on rank 0, continuing at self.step (a resumed run drops later steps)."""
        if self.info.is_main and self.reporter is None:
            self.reporter = Reporter(parse_report(self.settings.report), self.out, start_step=self.step,
                                     config=self.settings_record(), say=self.log)

    def report_text(self, name: str, texts: list[str]) -> None:
        """Text for the loggers at the current step (the samples a text recipe writes after training)."""
        self._open_reporter()
        if self.reporter is not None:
            self.reporter.text(self.step, name, texts)
            self.reporter.flush()

    def close(self) -> None:
        """End the loggers (a W&B run finishes here); fit leaves them open so that report_text can follow."""
        if self.reporter is not None:
            self.reporter.close()
            self.reporter = None

    def summary(self) -> list[str]:
        """The opening lines: what trains on what, where, how much per step, and where the output goes."""
        s, model = self.settings, self.model
        n_params = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        config = getattr(model, "config", None)
        shape = ""
        if config is not None and hasattr(config, "n_layers"):
            shape = (f" ({config.topology}): {_count(config.n_layers, 'layer')}, d_model {config.d_model}, "
                     f"{_count(config.n_heads, 'head')}")
        frozen = f" ({trainable:,} trained)" if trainable != n_params else ""
        name = self.recipe.get("name") or type(model).__name__
        per_step = s.batch_size * s.accum
        seq_len = self.recipe.get("seq_len")
        tokens = f" x {seq_len} positions = {per_step * seq_len:,} tokens" if isinstance(seq_len, int) else ""
        tokens += " per step"
        accum = f" ({s.batch_size} x {s.accum} accumulated)" if s.accum > 1 else ""
        world = f", split over {self.info.world} processes" if self.info.world > 1 else ""
        threads = ""
        if self.device.type == "cpu":
            auto = "" if s.threads else " (threads=0: at most the free cores, re-checked)"
            threads = f", {_count(torch.get_num_threads(), 'thread')}{auto}"
        saves = "at each evaluation" + (f", every {s.save_every} steps" if s.save_every else "")
        best = getattr(self.task, "reports_val_loss", None) is not False  # a val_loss to rank checkpoints by
        saves += f" and at the end (the latest{' and the best by val_loss' if best else ''} kept)"
        evals = f"every {s.eval_every} steps and at the end" if s.eval_every else "at the end"
        scored = getattr(self.task, "eval_summary", None)  # a task written before the summary has none
        scored = scored and scored()
        logs = ["metrics.jsonl", *[{"tensorboard": "TensorBoard", "csv": "metrics.csv", "wandb": "W&B"}[b]
                                   for b in parse_report(s.report)]]
        summary = getattr(self.task, "data_summary", None)  # a task written before the summary has none
        lines = [f"train {name}: {n_params:,} parameters{frozen}",
                 f"  model   {type(model).__name__}{shape}",
                 f"  data    {(summary and summary()) or 'as the recipe draws it'}",
                 f"  batch   {per_step:,} examples{accum}{tokens}{world}",
                 f"  steps   {f'{self.step:,} -> ' if self.step else ''}{s.steps:,}; checkpoint {saves}",
                 *([f"  epoch   {line}"] if (line := self.epoch_line()) else []),
                 f"  eval    {evals}{f', on {scored}' if scored else ''}",
                 *([f"  stop    early after {_count(s.patience, 'evaluation')} without a lower val_loss "
                    f"(patience={s.patience})"] if s.patience else []),
                 f"  device  {self.device}{threads}{', bf16 autocast' if s.bf16 else ''}"
                 f"{', compiled' if s.compile else ''}",
                 f"  output  {self.out}  ({', '.join(logs)})"]
        start = getattr(self.task, "start", None)
        if start is not None:
            lines[1:1] = start.lines()
        if "tensorboard" in parse_report(s.report):
            lines.append(f"  watch   tensorboard --logdir {self.out}")
        return lines

    def epoch_record(self, step: int) -> dict[str, Any] | None:
        """How much of the training data `step` steps draw: {"examples": one epoch's, "unit", "per_step",
        "covered": epochs}, None when the task does not know its data's size (Task.epoch_size)."""
        size = self.task.epoch_size() if hasattr(self.task, "epoch_size") else None
        if not size:
            return None
        per_step = self.settings.batch_size * self.settings.accum
        return {"examples": size[0], "unit": size[1], "per_step": per_step, "covered": step * per_step / size[0]}

    def epoch_line(self) -> str | None:
        """The opening summary's "4.1% of an epoch (...); more: steps=N, or epochs=1 (48,973 steps)"."""
        record = self.epoch_record(self.settings.steps)
        if record is None:
            return None
        words = epoch_words(record)
        return f"{words.split(';')[0]}, from epochs={self.settings.epochs:g}" if self.settings.epochs else words

    def _autocast(self):
        if not self.settings.bf16:
            return contextlib.nullcontext()
        if self.device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise ConfigError("bf16=true but this GPU does not support bfloat16; use bf16=false")
        return torch.autocast(self.device.type, dtype=torch.bfloat16)

    def settings_record(self) -> dict[str, Any]:
        return {"train": asdict(self.settings), "recipe": self.recipe}

    def save(self) -> Path | None:
        path = None
        model, optimizer, optimizer_state = self.model, self.optimizer, None
        if dist_utils.is_sharded(self.model):  # every rank sends its shards; rank 0 writes the full tensors
            weights, optimizer_state = dist_utils.gather_full_state(self.model, self.optimizer)
            if self.info.is_main:
                self._full_model.load_state_dict(weights)
            model, optimizer = self._full_model, None
        if self.info.is_main:
            best = step_name(self.best_step) if self.best_step is not None else None
            path = save_checkpoint(self.out, self.step, model, optimizer=optimizer, optimizer_state=optimizer_state,
                                   scheduler=self.scheduler, tokenizer=self.task.tokenizer,
                                   data_state={"generator": self.generator.get_state(), "step": self.step,
                                               "best_val_loss": self.best_val_loss, "best_step": self.best_step,
                                               "evals_since_best": self.evals_since_best},
                                   settings=self.settings_record(), keep=self.settings.keep, protect=best)
            if self.best_step == self.step:
                point_best(self.out, path)
        dist_utils.barrier(self.info)
        return path

    def track_best(self, metrics: dict[str, float]) -> bool:
        """After an evaluation: whether its val_loss is the lowest so far (then this step is the best, and the
        checkpoint saved next is kept as such); otherwise one more evaluation without improvement (patience=).
        Under torchrun the ranks' val_loss is averaged first, so every rank decides the same."""
        value = metrics.get("val_loss")
        if value is None:
            if self.settings.patience:
                raise ConfigError(f"patience={self.settings.patience} stops on the validation loss, and this "
                                  f"evaluation reports none (it reports {', '.join(metrics) or 'nothing'}); "
                                  "allowed here: patience=0")
            return False
        value = float(dist_utils.mean_across(torch.tensor(float(value), device=self.device), self.info))
        if self.best_val_loss is None or value < self.best_val_loss:
            self.best_val_loss, self.best_step, self.evals_since_best = value, self.step, 0
            return True
        self.evals_since_best += 1
        return False

    def resume(self) -> bool:
        """Continue from out/latest if it exists; returns whether a checkpoint was loaded."""
        path = latest_checkpoint(self.out)
        if path is None:
            return False
        state = load_checkpoint(path, self.model, optimizer=self.optimizer, scheduler=self.scheduler)
        self.generator.set_state(state["data"]["generator"])
        self.step = int(state["step"])
        data = state["data"]  # a checkpoint written before the best was tracked has none of the three
        self.best_val_loss = data.get("best_val_loss")
        self.best_step = data.get("best_step")
        self.evals_since_best = int(data.get("evals_since_best") or 0)
        self._truncate_metrics()
        self.log(f"resumed from {path} at step {self.step}")
        return True

    def _truncate_metrics(self) -> None:
        """Drop records of steps after the checkpoint (done before a crash, about to be redone)."""
        path = self.out / "metrics.jsonl"
        if not self.info.is_main or not (path.is_file() or path.is_symlink()):
            return
        # a link (to a file elsewhere, or dangling) is not read but replaced, so the appends stay in the run folder;
        # a kill may cut the last line: only lines that parse are kept
        kept = [] if path.is_symlink() else [line for line in path.read_text().splitlines()
                                             if _parses(line) and json.loads(line).get("step", 0) <= self.step]
        atomic_write(path, lambda tmp: Path(tmp).write_text("".join(f"{line}\n" for line in kept)))

    def evaluate(self) -> dict[str, float]:
        """The task's held-out metrics; meanwhile a status line says how far the evaluation is (EvalStatus)."""
        self.model.eval()
        self.task.eval_progress = EvalStatus(self.console, self.clock, self.step) if self.info.is_main else None
        try:
            with torch.no_grad(), self._autocast():
                metrics = self.task.evaluate(self.model)
        finally:
            self.task.eval_progress = None
            self.model.train()
        return {k: float(v) for k, v in metrics.items()}

    def evaluate_start(self) -> None:
        """Score the loaded weights before the first step: metrics.jsonl's step 0 record and result["start_eval"],
        the number fine-tuning has to lower. A task whose model starts from a pretrained one sets `task.start`
        (init_from=: recipes/pretrained.Start, whose lines the opening summary adds). Not a candidate for the
        best checkpoint: step 0 is not saved (it is the init_from= model)."""
        metrics, seconds = self._evaluate_shown()
        self.start_eval = metrics
        self.log("step 0 (the loaded weights, before training): "
                 + " ".join(f"{k} {v:.4g}" for k, v in metrics.items()) + f" ({duration(seconds)})")
        self._write_metrics({"step": 0, **{f"eval_{k}" if not k.startswith("val") else k: v
                                           for k, v in metrics.items()}})

    def _read_start_eval(self) -> None:
        """A resumed fine-tuning run: the step 0 evaluation its first start wrote to metrics.jsonl, if any."""
        path = self.out / "metrics.jsonl"
        if not self.info.is_main or not path.is_file() or path.is_symlink():
            return
        for line in path.read_text().splitlines():
            record = json.loads(line) if _parses(line) else {}
            if record.get("step") == 0 and "loss" not in record:
                self.start_eval = {k[len("eval_"):] if k.startswith("eval_") else k: v
                                   for k, v in record.items() if k != "step"}
                return

    def _evaluate_shown(self) -> tuple[dict[str, float], float]:
        """evaluate() inside the loop: (metrics, seconds it took).

        A terminal's bar is closed for the evaluation and drawn again after it: under a bar, every status line
        would be kept as a line of its own, and the bar would stand still for the whole evaluation."""
        paused = self._bar is not None and self._bar.drawn
        started = self._bar.started if paused else None  # the new bar's elapsed time goes on from the first's
        if paused:
            self._bar.close()
        self.console.status(f"evaluating at step {self.step} ...")  # at once, before the task's first group
        start = self.clock()
        try:
            metrics = self.evaluate()
        finally:
            seconds = self.clock() - start
            self.console.clear()
            if paused:
                self._bar = self.console.bar(self.settings.steps, self.step, started=started)
        return metrics, seconds

    def _flops_per_item(self) -> float | None:
        try:
            return self.task.flops_per_item()
        except (ImportError, AttnlabError):  # attnlab.cost missing or the config outside its model
            return None

    def _mfu(self, flops_per_s: float) -> float | None:
        try:
            from attnlab.cost.peak import mfu
        except ImportError:
            return None
        return mfu(flops_per_s, self.device, torch.bfloat16 if self.settings.bf16 else torch.float32)

    def _shard(self) -> nn.Module:
        """strategy=fsdp: shard self.model in place and rebuild the optimizer and schedule over the shards.

        fully_shard swaps every parameter for a DTensor, so the optimizer built in __init__ (and any state a
        resume loaded into it, full and index-keyed) moves to a new one built over the sharded parameters. Rank 0
        keeps an unsharded CPU copy first: each checkpoint's gathered weights land in it so the usual writer
        saves them under the usual names, and after fit it is rank 0's `trainer.model` (for reports)."""
        s = self.settings
        resumed = self.optimizer.state_dict() if self.optimizer.state else None
        schedule = self.scheduler.state_dict()
        if self.info.is_main:
            self._full_model = copy.deepcopy(self.model).cpu()
        model = dist_utils.wrap(self.model, self.info, "fsdp", str(self.device))
        held = sum(p.to_local().numel() for p in model.parameters())
        total = sum(p.numel() for p in model.parameters())
        self.log(f"fsdp: {dist_utils.count_units(model)} sharded units over {self.info.world} ranks; rank 0 holds "
                 f"{held:,} of {total:,} parameters")
        self.optimizer = build_optimizer(model, s.lr, s.weight_decay, (s.beta1, s.beta2))
        self.scheduler = build_scheduler(self.optimizer, s.warmup, s.steps, s.min_lr_ratio)
        self.scheduler.load_state_dict(schedule)
        if resumed is not None:
            dist_utils.load_full_optimizer_state(model, self.optimizer, resumed)
        return model

    # ---------------------------------------------------------------- the loop
    RECHECK_S = 10.0  # threads=0 on CPU: the free cores are looked at again this often during a run

    def _threads(self):
        """threads=N: N for the run; threads=0 on CPU: attnlab.threads' choice (never more than the cores other
        processes leave free), re-checked every RECHECK_S; the caller's count comes back after fit."""
        self._thread_cap = torch.get_num_threads()
        return thread_scope(self.settings.threads, self.device)

    def _recheck_threads(self, scope, last: float) -> float:
        now = time.monotonic()
        if scope is None or self.settings.threads or now - last < self.RECHECK_S:
            return last
        scope.retune(choose(cap=self._thread_cap))
        return now

    def fit(self, resume: bool = False, stop_at: int | None = None) -> dict[str, Any]:
        """Train to settings.steps (or stop early at `stop_at`, saving, as if interrupted there).

        Ctrl-C (one process) finishes the step under way, saves it and raises TrainingInterrupted."""
        with self._threads() as scope, self._graceful_interrupt():
            try:
                return self._fit(resume, stop_at, scope)
            finally:
                if self.reporter is not None:
                    self.reporter.flush()

    @contextlib.contextmanager
    def _graceful_interrupt(self):
        """The first Ctrl-C sets a flag that the loop reads after each step; a second one stops at once.

        Only for one process in the main thread, under Python's own SIGINT handler: under torchrun each rank would
        see the signal at a different step and wait forever for the others inside the save."""
        previous = signal.getsignal(signal.SIGINT)
        if (self.info.world > 1 or threading.current_thread() is not threading.main_thread()
                or previous is not signal.default_int_handler):
            yield
            return

        def handler(signum, frame):
            self._interrupted = True
            signal.signal(signal.SIGINT, previous)  # a second Ctrl-C raises KeyboardInterrupt where it lands

        self._interrupted = False
        signal.signal(signal.SIGINT, handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def _fit(self, resume: bool, stop_at: int | None, scope) -> dict[str, Any]:
        s = self.settings
        if resume:
            self.resume()
        elif self.info.is_main and (self.out / "metrics.jsonl").exists():
            (self.out / "metrics.jsonl").unlink()  # a fresh run starts a fresh log
        if self.info.world > 1 and s.strategy == "fsdp":
            model = self._shard()
        else:
            model = dist_utils.wrap(self.model, self.info, s.strategy, str(self.device))
        if s.compile:
            from attnlab.layers import kernel_build

            model = kernel_build.torch_compile(model)  # inductor's libraries: from a folder only this user writes
        model.train()
        end = min(s.steps, stop_at) if stop_at is not None else s.steps
        self._open_reporter()
        for line in self.summary():
            self.log(line)
        if getattr(self.task, "start", None) is not None and self.step == 0:
            self.evaluate_start()
        elif getattr(self.task, "start", None) is not None:  # resumed: its step 0 as metrics.jsonl kept it
            self._read_start_eval()
        self._bar = self.console.bar(s.steps, self.step)  # replaced after each evaluation (_evaluate_shown)
        try:
            return self._loop(model, end, scope)
        finally:
            self._bar.close()
            self._bar = None

    def _loop(self, model: nn.Module, end: int, scope) -> dict[str, Any]:
        s = self.settings
        last_eval: dict[str, float] = {}
        timing = _Timing(self.clock())
        smooth_rate = None  # the bar's tokens/s: an exponential average over steps (evaluations and saves left out)
        threads_checked = time.monotonic()
        while self.step < end:
            step_start = self.clock()
            threads_checked = self._recheck_threads(scope, threads_checked)
            loss_sum = torch.zeros((), device=self.device)
            step_tokens = 0
            for micro in range(s.accum):
                batch = self.task.train_batch(self.generator, s.batch_size)
                batch = _to_device(dist_utils.shard(batch, self.info), self.device)
                sync = micro == s.accum - 1 or self.info.world == 1 or not hasattr(model, "no_sync")
                with (contextlib.nullcontext() if sync else model.no_sync()):
                    with self._autocast():
                        loss, n = self.task.loss(model, batch)
                    (loss / s.accum).backward()
                loss_sum += loss.detach().float() / s.accum
                step_tokens += int(n) * self.info.world
            loss_value = float(dist_utils.mean_across(loss_sum, self.info))
            if not math.isfinite(loss_value):
                self.optimizer.zero_grad(set_to_none=True)
                kept = latest_checkpoint(self.out) if self.out.exists() else None
                raise NonFiniteLoss(
                    f"loss became {loss_value} at step {self.step + 1}; stopped before updating the weights. "
                    f"Last good checkpoint: {kept if kept else 'none saved yet'}. Try a lower lr "
                    f"(now {s.lr}), a longer warmup (now {s.warmup}) or grad_clip (now {s.grad_clip}).")
            grad_norm = None
            if s.grad_clip > 0:
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), s.grad_clip)  # fsdp: global, a DTensor
                grad_norm = float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)
            lr = self.optimizer.param_groups[0]["lr"]
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.step += 1
            step_s = self.clock() - step_start
            timing.trained(step_tokens, step_s)
            step_rate = step_tokens / max(1e-9, step_s)
            smooth_rate = step_rate if smooth_rate is None else 0.9 * smooth_rate + 0.1 * step_rate
            self._bar.update(self.step, loss_value, smooth_rate)
            record = {"step": self.step, "loss": loss_value, "lr": lr}
            if grad_norm is not None:
                record["grad_norm"] = grad_norm
            eval_now = (s.eval_every and self.step % s.eval_every == 0) or self.step == s.steps
            if eval_now:
                last_eval, eval_s = self._evaluate_shown()
                timing.evaluated(eval_s)
                self.track_best(last_eval)  # the checkpoint saved below is then the best, and kept as such
                record.update({f"eval_{k}" if not k.startswith("val") else k: v for k, v in last_eval.items()})
            first = timing.steps == 1  # a line at once: nobody waits log_every steps for the first
            # a log or a pipe also gets a line when QUIET_S seconds have passed without one: on a busy machine
            # log_every steps of a small model took 24 s, and a reader could not tell a slow run from a hung one
            late = bool(s.log_every) and not self._bar.drawn and time.monotonic() - self._line_at >= QUIET_S
            if self.step % max(1, s.log_every) == 0 or eval_now or self.step == end or first or late:
                window_rate = timing.window_rate()  # tokens per second of training steps only
                record["tokens_per_s"] = window_rate
                flops = self._flops_per_item()
                if flops:
                    record["train_flops_per_s"] = window_rate * flops
                    if s.mfu:
                        record["mfu"] = self._mfu(window_rate * flops)
                extra = f" MFU {record['mfu']:.1%}" if record.get("mfu") is not None else ""
                extra += "".join(f" {k} {v:.4g}" for k, v in last_eval.items()) if eval_now else ""
                if not self._bar.drawn or eval_now or self.step == end:  # on a terminal the bar shows the rest
                    self.log(f"step {self.step}/{s.steps} loss {loss_value:.4f} lr {lr:.2e} "
                             f"tok/s {window_rate:,.0f} elapsed {duration(self.clock() - timing.started)} "
                             f"ETA {self._eta(timing)}" + extra)
            self._write_metrics(record)
            probe.after_step(self, record)  # attention of a fixed input every log_every steps (probe.py)
            saved = None
            # a checkpoint at each evaluation (nanoGPT's always_save_checkpoint): a crash loses at most eval_every
            # steps, and the best one by val_loss is kept beside the newest
            stop = bool(s.patience) and eval_now and self.evals_since_best >= s.patience and self.step < end
            if eval_now or (s.save_every and self.step % s.save_every == 0) or self.step == end or stop:
                saved = self.save()
            if stop:
                self.stopped_early = True
                self.log(f"stopping early at step {self.step}: val_loss has not improved for "
                         f"{_count(self.evals_since_best, 'evaluation')} (patience={s.patience}); the best, "
                         f"{self.best_val_loss:.4f}, was at step {self.best_step}")
                break
            if self._interrupted and self.step < end:  # at the last step the run is complete: it ends as usual
                raise TrainingInterrupted(self.step, saved if saved is not None else self.save())
        elapsed = self.clock() - timing.started
        if self._full_model is not None:  # fsdp: rank 0 continues with the unsharded copy, which the save at
            self.model = self._full_model  # the last step filled (or the resume did, when no step was left)
        if self.info.is_main and s.plot:
            try:  # an install without the plotting extra still trains; the picture is what it lacks
                require("matplotlib", "plots", "plot=true (loss.png)")
            except MissingExtra as exc:
                self.log(f"{exc}; metrics.jsonl holds the numbers")
            else:
                plot_losses(self.out / "metrics.jsonl", self.out / "loss.png")
        result = {"step": self.step, "steps": s.steps, "elapsed_s": elapsed, "train_s": timing.train_s,
                  "eval_s": timing.eval_s, "tokens": timing.tokens, "eval": last_eval,
                  "losses": [r["loss"] for r in self.history if "loss" in r]}  # step 0's record has none
        if self.start_eval is not None:
            result["start_eval"] = self.start_eval
        if self.best_step is not None:
            result.update(best_val_loss=self.best_val_loss, best_step=self.best_step,
                          best_checkpoint=str(self.out / step_name(self.best_step)))
        if s.patience:
            result.update(stopped_early=self.stopped_early, patience=s.patience)
        epoch = self.epoch_record(self.step)
        if epoch is not None:
            result["epoch"] = epoch
        return result

    def evaluations_left(self) -> int:
        """Evaluations still to come after the current step: every eval_every steps, and one at the last step."""
        s = self.settings
        if self.step >= s.steps:
            return 0
        if not s.eval_every:
            return 1
        return s.steps // s.eval_every - self.step // s.eval_every + (1 if s.steps % s.eval_every else 0)

    def _eta(self, timing: _Timing) -> str:
        """Time to settings.steps: the mean training step so far times the steps left, plus the evaluations left
        at the last one's duration (before the first, their number: their length is not known yet)."""
        left = timing.train_s / max(1, timing.steps) * (self.settings.steps - self.step)
        evals = self.evaluations_left()
        if evals and timing.last_eval_s is None:
            return f"{duration(left)} + {_count(evals, 'evaluation')}"
        return duration(left + evals * (timing.last_eval_s or 0.0))


def thread_scope(threads: int, device: torch.device):
    """The torch threads a run's CPU work gets, the rule the training loop follows: threads=N as given;
    threads=0 on CPU attnlab.threads' choice (never more than the cores other processes leave free); on a GPU
    with threads=0, torch's own count. `attnlab train` prepares its data under the same rule."""
    if not threads and device.type != "cpu":
        return contextlib.nullcontext(None)
    return using_threads(choose(threads or None))


def steps_for_epochs(task: Task, settings: TrainSettings) -> int:
    """epochs=N as optimizer steps: N times the task's training examples (Task.epoch_size) over the examples one
    step draws (batch_size x accum), rounded up; refused when the task does not know its data's size."""
    size = task.epoch_size() if hasattr(task, "epoch_size") else None
    if not size:
        raise ConfigError(f"epochs={settings.epochs:g}: this task does not say how large its training data is; "
                          "give steps=N instead")
    return max(1, math.ceil(settings.epochs * size[0] / (settings.batch_size * settings.accum)))


class _Timing:
    """Where a fit's time went, from `started` on: training steps (their tokens and seconds) apart from the
    evaluations, so that tokens/s counts training alone and the ETA adds the evaluations still to come."""

    def __init__(self, started: float):
        self.started = started
        self.steps, self.tokens, self.train_s = 0, 0, 0.0
        self.eval_s, self.last_eval_s = 0.0, None  # all evaluations; the latest one (None before the first)
        self._window_tokens, self._window_s = 0, 0.0  # since the last progress line

    def trained(self, tokens: int, seconds: float) -> None:
        self.steps += 1
        self.tokens += tokens
        self.train_s += seconds
        self._window_tokens += tokens
        self._window_s += seconds

    def evaluated(self, seconds: float) -> None:
        self.eval_s += seconds
        self.last_eval_s = seconds

    def window_rate(self) -> float:
        """Tokens per second of the training steps since the last call (evaluations, saves and logging left out)."""
        rate = self._window_tokens / max(1e-9, self._window_s)
        self._window_tokens, self._window_s = 0, 0.0
        return rate


class EvalStatus:
    """"evaluating at step 500: 1,200/2,400 windows (0m12s, about 0m12s left)" while an evaluation runs.

    On a terminal the status line is rewritten at most every TERMINAL_EVERY seconds; in a log (a pipe, a file)
    a kept line comes every LOG_EVERY seconds, so a long evaluation is seen without one line per batch."""

    TERMINAL_EVERY = 0.2
    LOG_EVERY = 30.0

    def __init__(self, console: Console, clock: Callable[[], float], step: int):
        self.console, self.clock, self.step = console, clock, step
        self.start = self.last = clock()

    def __call__(self, done: int, total: int, unit: str = "windows") -> None:
        now = self.clock()
        if now - self.last < (self.TERMINAL_EVERY if self.console.tty else self.LOG_EVERY):
            return
        self.last = now
        spent = now - self.start
        left = f", about {duration(spent / done * (total - done))} left" if 0 < done < total else ""
        self.console.status(f"evaluating at step {self.step}: {done:,}/{total:,} {unit} ({duration(spent)}{left})")


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _parses(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False
