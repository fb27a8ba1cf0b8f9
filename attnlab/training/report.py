"""Where a run's numbers go besides metrics.jsonl: TensorBoard event files, a CSV table, Weights & Biases.

`report=` takes a comma-separated list, like Hugging Face's `report_to`: tensorboard (the default: event files in
the run folder, so `tensorboard --logdir runs` shows every run), csv (metrics.csv in the run folder), wandb (a
W&B run; `WANDB_MODE=offline` keeps it on disk, `wandb sync` uploads it later) or none. metrics.jsonl is always
written: it is what resume, plots and the tests read.

Why one small fan-out class and not a framework: each backend needs three calls (numbers at a step, text at a
step, close) and must cost nothing when not chosen. Backends import their package only when chosen, and only
on rank 0 (the trainer builds a Reporter there and nowhere else). TensorBoard missing at run time is not fatal
(said once, metrics.jsonl remains); wandb missing when asked for is refused before the run writes anything.
"""

from __future__ import annotations

import csv
import difflib
import importlib.util
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnlab.errors import ConfigError
from attnlab.storage import atomic_write

BACKENDS = ("tensorboard", "csv", "wandb")
ALLOWED = (*BACKENDS, "none")
CSV_NAME = "metrics.csv"
EVENT_PREFIX = "events.out.tfevents."  # what SummaryWriter names its files (RUN_FILES in run.py lists them)
PERF_KEYS = ("tokens_per_s", "train_flops_per_s", "mfu")


def parse_report(value: str) -> tuple[str, ...]:
    """'tensorboard,csv' -> ('tensorboard', 'csv'); 'none' or '' -> (). Unknown names refused with a suggestion."""
    names = [part.strip().lower() for part in str(value).split(",") if part.strip()]
    for name in names:
        if name not in ALLOWED:
            close = difflib.get_close_matches(name, ALLOWED, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(f"report={value!r}: unknown {name!r}{hint}; allowed: {', '.join(ALLOWED)}, "
                              "several separated by commas")
    if "none" in names and len(names) > 1:
        raise ConfigError(f"report={value!r}: none means no reporting and cannot be combined with "
                          f"{', '.join(n for n in names if n != 'none')}")
    return tuple(dict.fromkeys(n for n in names if n != "none"))  # order kept, duplicates dropped


def check_installed(names: tuple[str, ...]) -> None:
    """wandb asked for but not installed: one line, before anything is written (TensorBoard only warns later)."""
    if "wandb" in names and importlib.util.find_spec("wandb") is None:
        raise ConfigError("report=wandb needs the wandb package, which is not installed: pip install wandb "
                          "(WANDB_MODE=offline keeps runs on disk), or choose report=tensorboard, csv or none")


def tag(key: str) -> str:
    """A metrics.jsonl key as a TensorBoard / W&B name, grouped: train/loss, eval/val_loss, perf/tokens_per_s."""
    if key.startswith("eval_"):
        return f"eval/{key[len('eval_'):]}"
    if key.startswith("val"):
        return f"eval/{key}"
    return f"perf/{key}" if key in PERF_KEYS else f"train/{key}"


S3_MODULES = ("boto3", "botocore")  # what tensorboard's file layer imports, when installed, for s3:// paths


def import_summary_writer():
    """torch's SummaryWriter, imported without boto3 / botocore.

    Why: tensorboard's file layer (tensorboard.compat.tensorflow_stub.io.gfile) imports boto3 whenever it is
    installed, only to read and write s3:// paths; that import alone is ~9 MB of the process's memory (of ~15 MB
    for the whole SummaryWriter import; measured on nanoGPT's baby GPT, where it was a fifth of attnlab's excess
    peak RSS over nanoGPT's train.py). The trainer writes event files to a local run folder, so the two are kept
    out while tensorboard loads (a module set to None in sys.modules raises ImportError on import; tensorboard
    then leaves S3 off and keeps its local and fsspec file systems). A process that already imported them keeps
    them; afterwards `import boto3` works as usual."""
    blocked = [name for name in S3_MODULES if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        from torch.utils.tensorboard import SummaryWriter
    finally:
        for name in blocked:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
    return SummaryWriter


class TensorBoardLog:
    """Event files in the run folder, written by torch's SummaryWriter (which needs the tensorboard package).

    purge_step: a run resumed from the checkpoint of step k logs again from step k + 1; TensorBoard drops what an
    earlier file logged from there on (the steps an interrupted run did after its last checkpoint, now redone)."""

    def __init__(self, out: Path, start_step: int, config: dict[str, Any]):
        SummaryWriter = import_summary_writer()
        self.writer = SummaryWriter(log_dir=str(out), purge_step=start_step + 1 if start_step else None)
        if not start_step:
            self.writer.add_text("settings", _code_block(json.dumps(config, indent=2, default=str)), 0)

    def scalars(self, step: int, record: dict[str, float]) -> None:
        for key, value in record.items():
            self.writer.add_scalar(tag(key), value, step)

    def text(self, step: int, name: str, texts: list[str]) -> None:
        # TensorBoard renders text as Markdown: a code block keeps a sample's spacing and line breaks as written
        self.writer.add_text(name, "\n\n".join(_code_block(t) for t in texts), step)

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class CsvLog:
    """metrics.csv: one row per step, one column per metric (columns added as evaluations first appear)."""

    def __init__(self, out: Path, start_step: int):
        self.path = out / CSV_NAME
        self.rows: list[dict[str, Any]] = []
        # a resumed run keeps the rows up to its checkpoint; a link is not read (it may lead anywhere) but replaced
        if start_step and self.path.is_file() and not self.path.is_symlink():
            with open(self.path, newline="") as f:
                self.rows = [row for row in csv.DictReader(f) if _int(row.get("step")) <= start_step]
        self.columns: list[str] = list(dict.fromkeys(k for row in self.rows for k in row)) or ["step"]
        self._rewrite()

    def scalars(self, step: int, record: dict[str, float]) -> None:
        row = {"step": step, **{k: v for k, v in record.items() if k != "step"}}
        self.rows.append(row)
        new = [k for k in row if k not in self.columns]
        if new:  # a new column: the header changes, so the file is written again (runs are thousands of rows)
            self.columns += new
            self._rewrite()
        else:
            with open(self.path, "a", newline="") as f:
                csv.DictWriter(f, self.columns).writerow(row)

    def _rewrite(self) -> None:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, self.columns)
        writer.writeheader()
        writer.writerows(self.rows)
        # replaced, never written through: a metrics.csv linked to a file elsewhere leaves that file as it was (the
        # appends of scalars() then go to the run folder's own file)
        atomic_write(self.path, lambda tmp: Path(tmp).write_text(buffer.getvalue()))

    def text(self, step: int, name: str, texts: list[str]) -> None:
        """Text has no place in a table of numbers (samples.txt holds the samples)."""

    def flush(self) -> None:
        """Every row is written as it comes."""

    close = flush


class WandbLog:
    """A Weights & Biases run (imported only when report=wandb; WANDB_MODE=offline writes it under OUT/wandb)."""

    def __init__(self, out: Path, start_step: int, config: dict[str, Any]):
        import wandb

        self.wandb = wandb
        self.run = wandb.init(project="attnlab", name=out.name, dir=str(out), config=config,
                              resume="allow" if start_step else None)

    def scalars(self, step: int, record: dict[str, float]) -> None:
        self.run.log({tag(k): v for k, v in record.items() if k != "step"}, step=step)

    def text(self, step: int, name: str, texts: list[str]) -> None:
        table = self.wandb.Table(columns=["text"], data=[[t] for t in texts])
        self.run.log({name: table}, step=step)

    def flush(self) -> None:
        """wandb sends in the background."""

    def close(self) -> None:
        self.run.finish()


class Reporter:
    """The chosen backends behind one interface; `say` gets the one line about a backend that cannot be used."""

    def __init__(self, names: tuple[str, ...], out: str | Path, *, start_step: int = 0,
                 config: dict[str, Any] | None = None, say: Callable[[str], None] = print):
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        self.logs: list[Any] = []
        self.names: list[str] = []
        for name in names:
            if name == "tensorboard" and importlib.util.find_spec("tensorboard") is None:
                say("report=tensorboard: the tensorboard package is not installed (pip install tensorboard); "
                    "continuing with metrics.jsonl only")
                continue
            if name == "tensorboard":
                self.logs.append(TensorBoardLog(out, start_step, config or {}))
            elif name == "csv":
                self.logs.append(CsvLog(out, start_step))
            elif name == "wandb":
                check_installed(("wandb",))
                self.logs.append(WandbLog(out, start_step, config or {}))
            self.names.append(name)

    def scalars(self, step: int, record: dict[str, Any]) -> None:
        numbers = {k: float(v) for k, v in record.items()
                   if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool)}
        for log in self.logs:
            log.scalars(step, numbers)

    def text(self, step: int, name: str, texts: list[str]) -> None:
        for log in self.logs:
            log.text(step, name, texts)

    def flush(self) -> None:
        for log in self.logs:
            log.flush()

    def close(self) -> None:
        for log in self.logs:
            log.close()
        self.logs = []


def _code_block(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines()) or "    "


def _int(text: Any) -> int:
    try:
        return int(float(text))
    except (TypeError, ValueError):
        return 0
