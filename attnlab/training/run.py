"""The whole `attnlab train` as one function: settings, run folder, data, model, training loop, report.

A run folder holds one run. Starting a run where another one left files (checkpoints, metrics.jsonl, ...)
is refused unless the caller says what to do with them: resume=True continues from the newest checkpoint,
overwrite=True deletes the old run's files first. Every setting, the device and the folder are checked before
anything is written; the command line (attnlab.cli) is a thin layer over run_train.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from attnlab.data.streaming import PreparationInterrupted
from attnlab.data.tokenizers import load_tokenizer
from attnlab.errors import ConfigError
from attnlab.storage import atomic_write
from attnlab.training import distributed
from attnlab.training.checkpoint import BEST, LATEST, latest_checkpoint
from attnlab.training.progress import Console
from attnlab.training.recipes import get_recipe
from attnlab.training.report import CSV_NAME, EVENT_PREFIX, check_installed, parse_report
from attnlab.training.settings import read_config_file, resolve_params, seed_everything
from attnlab.training.trainer import Trainer, resolve_device, thread_scope

# besides step-* folders and TensorBoard's event files (EVENT_PREFIX...); wandb: report=wandb's local folder
RUN_FILES = (LATEST, BEST, "metrics.jsonl", CSV_NAME, "result.json", "samples.txt", "loss.png", "probe.jsonl", "data",
             "wandb")


def run_folder(recipe_name: str, out: str | None = None) -> Path:
    """Where a run of `recipe_name` writes: `out`, or runs/RECIPE by default."""
    return Path(out or f"runs/{recipe_name}")


def previous_run(out: Path) -> list[str]:
    """The names of the files and folders in `out` that a run writes (sorted); [] for a new or unrelated folder."""
    if not out.is_dir():
        return []
    return sorted(p.name for p in out.iterdir()
                  if p.name in RUN_FILES or p.name.startswith(("step-", ".step-", f".{LATEST}.", f".{BEST}.",
                                                               EVENT_PREFIX)))


def clear_run(out: Path) -> list[str]:
    """Delete what a previous run wrote in `out` (and nothing else there); returns the names deleted."""
    names = previous_run(out)
    for name in names:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    return names


def check_run_folder(out: Path, *, resume: bool, overwrite: bool) -> Path | None:
    """Refuse a run folder that cannot hold this run; returns the checkpoint to resume from (None for a fresh run)."""
    if resume and overwrite:
        raise ConfigError("--resume continues the run in the folder and --overwrite deletes it: give one of them")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the run (created when missing)")
    ancestor = out
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ConfigError(f"--out {out}: {ancestor} is a file, so the run folder cannot be created under it")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ConfigError(f"--out {out}: {ancestor} is not writable; give a folder you can write to")
    found = previous_run(out)
    if resume:
        latest = latest_checkpoint(out)
        if latest is None:
            held = f" (it holds {', '.join(found)}, but no checkpoint)" if found else ""
            raise ConfigError(f"--resume: {out} has no checkpoint to continue from{held}; start the run without "
                              f"--resume{' and with --overwrite' if found else ''}")
        return latest
    if found and not overwrite:
        raise ConfigError(f"--out {out} holds a previous run ({', '.join(found)}); pass --resume to continue it or "
                          "--overwrite to delete it and start afresh")
    return None


def interruption_message(exc: BaseException) -> str | None:
    """What `attnlab train` says when Ctrl-C stopped the data preparation (how much of the corpus was encoded and
    kept, and that the same command goes on from there); None for an interruption anywhere else."""
    if not isinstance(exc, PreparationInterrupted):
        return None
    then = "continue from there" if exc.kept else "start over"
    return f"interrupted while preparing the data: {exc}; run the same command again to {then}"


def run_train(recipe_name: str, *, config: str | None = None, out: str | None = None, resume: bool = False,
              overwrite: bool = False, overrides: dict[str, Any] | None = None, quiet: bool = False) -> dict[str, Any]:
    """Train a named recipe into `out` (default runs/RECIPE) and return its result (also written to result.json).

    config: a TOML/YAML file of key = value settings; overrides: {key: value} on top of it (the command line).
    resume: continue from out/latest (refused when there is none); overwrite: delete a previous run in `out`
    first (without either, a folder holding a previous run is refused).
    """
    recipe = get_recipe(recipe_name)
    layers = [read_config_file(config)] if config else []
    layers.append(overrides or {})
    settings, params = resolve_params(recipe, *layers)
    device = resolve_device(settings.device)  # device=cuda without CUDA is refused before anything is written
    check_installed(parse_report(settings.report))  # report=wandb without wandb: refused now, not after the data
    out_dir = run_folder(recipe.name, out)
    latest = check_run_folder(out_dir, resume=resume, overwrite=overwrite)
    info = distributed.setup(settings.device)  # under torchrun: the ranks wait for rank 0 to clear the folder
    console = Console(enabled=info.is_main and not quiet)
    trainer = None
    try:
        if overwrite and info.is_main:
            clear_run(out_dir)
        distributed.barrier(info)
        seed_everything(settings.seed)  # the same seed gives the same initial weights in every process
        saved_tokenizer = None
        if latest is not None:  # trained tokenizers are not reproducible bit-for-bit: continue with the saved one
            saved_tokenizer = load_tokenizer(latest)
        # build checks the data covers one batch; text recipes keep their token file in OUT/data. This is the slow
        # part of starting (reading and tokenizing a corpus, building the model): a status line says so meanwhile,
        # and each slow step of the build prints its name, then the seconds it took (phase; status: a recipe's
        # own line). Its torch work takes threads as the training loop will (thread_scope: never more than the
        # free cores), not torch's one per core, which a busy machine turns into minutes of barrier waits.
        console.status(f"{recipe.name}: preparing the data and building the model ...")
        with thread_scope(settings.threads, device):
            # given: the keys the person set (a config file, the command line), which init_from= checks against
            # the loaded model's shape; a default is never a conflict
            task = recipe.build({**params, "batch_size": settings.batch_size, "tokenizer": saved_tokenizer,
                                 "out_dir": str(out_dir), "status": console.status, "phase": console.phase,
                                 "given": frozenset(key for layer in layers for key in layer)})
        console.clear()
        # the optimizer and the loop's setup, said like the build (torch.optim's AdamW imported torch's compiler
        # here, ~1.2 CPU-seconds and 72 MB; attnlab.training.optim.AdamW leaves it out)
        with console.phase(f"{recipe.name}: setting up the optimizer and the training loop"):
            trainer = Trainer(task, settings, out_dir, recipe={"name": recipe.name, **params}, quiet=quiet,
                              console=console)
        result = trainer.fit(resume=resume)
        result.pop("losses", None)
        if trainer.info.is_main:
            report = getattr(task, "report", None)
            if report is not None:
                what = getattr(task, "report_what", lambda: None)() or "the final report"
                with console.phase(f"{recipe.name}: {what}"):
                    result.update(report(trainer.model, out_dir))
            if result.get("samples"):
                trainer.report_text("samples", [str(text) for text in result["samples"]])
            result["recipe"] = recipe.name
            start = getattr(task, "start", None)
            if start is not None:
                result["start"] = start.record()
            result["out"] = str(out_dir)
            result["checkpoint"] = str(latest_checkpoint(out_dir))
            config = getattr(trainer.model, "config", None)
            if config is not None and hasattr(config, "topology"):
                result["topology"] = config.topology  # what `attnlab generate` can run (the final summary)
            text = json.dumps(result, indent=2, default=str) + "\n"
            atomic_write(out_dir / "result.json", lambda tmp: Path(tmp).write_text(text))  # a link is replaced
        return result
    finally:
        if trainer is not None:
            trainer.close()
        distributed.cleanup()
