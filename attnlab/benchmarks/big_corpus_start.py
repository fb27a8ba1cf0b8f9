"""The start of a gpt-char run on a large `.jsonl` (docs/training.md, "Watching a run"): the preparation's timed
lines and the opening summary's `epoch` line, on the newcomer benchmark's corpus (attnlab.benchmarks.newcomer's
write_corpus: the installed Wikipedia summaries and CPython docs, one {"id", "text"} record per paragraph, repeated
until the file holds --mb MB).

    OMP_NUM_THREADS=1 nice -n 10 python -m attnlab.benchmarks.big_corpus_start --mb 44.5 --dir /tmp/big

In --dir it writes big.jsonl, then runs the page's command there twice (`python -m attnlab train gpt-char --data
big.jsonl steps=1 eval_every=0 sample_tokens=0`; the first fills the token store, the second is the one printed,
its token file already in the store), removing runs/ before each; then the same command at the recipe's default
steps, stopped with Ctrl-C (SIGINT) once its summary is out, for the summary's `epoch` line. Prints the corpus's
size, the machine's load average before and after each run, and each run's output as it came.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(argv: list[str], cwd: Path, stop_after: str | None = None) -> list[str]:
    """Run argv in cwd (runs/ removed first); the lines it printed (stdout and stderr together). With stop_after,
    send SIGINT once a line starting with it has come, and wait for the run to save and exit."""
    shutil.rmtree(cwd / "runs", ignore_errors=True)
    # SIGINT back to its default in the child: a shell's background job starts with it ignored, and Python then
    # leaves it ignored (no KeyboardInterrupt, no saved step)
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if stop_after and line.strip().startswith(stop_after) and proc.poll() is None:
            time.sleep(1.0)
            proc.send_signal(signal.SIGINT)
            stop_after = None
    proc.wait(timeout=600)
    lines.append(f"(exit status {proc.returncode})")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=float, default=44.5, help="corpus size in MB of 10^6 bytes (default 44.5)")
    p.add_argument("--dir", type=Path, default=Path("/tmp/big"))
    a = p.parse_args()
    from attnlab.benchmarks.newcomer import write_corpus

    a.dir.mkdir(parents=True, exist_ok=True)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} | {os.cpu_count()} cores | "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')} | python {sys.version.split()[0]}")
    print(f"# command: python -m attnlab.benchmarks.big_corpus_start --mb {a.mb:g} --dir {a.dir}")
    info = write_corpus(a.dir / "big.jsonl", int(a.mb * 1e6))
    size = (a.dir / "big.jsonl").stat().st_size
    print(f"corpus big.jsonl: {size / 1e6:.1f} MB ({size:,} bytes, {info['records']:,} records, "
          f"{info['passes']} passes over {', '.join(info['sources'])})")
    page = [sys.executable, "-m", "attnlab", "train", "gpt-char", "--data", "big.jsonl"]
    for name, extra, stop in (("first run (fills the token store)", ["steps=1", "eval_every=0", "sample_tokens=0"],
                               None),
                              ("second run (token file already in the store)",
                               ["steps=1", "eval_every=0", "sample_tokens=0"], None),
                              ("default steps, stopped after the summary", ["eval_every=0", "sample_tokens=0"],
                               "watch")):
        print(f"\n## {name}: python -m attnlab train gpt-char --data big.jsonl {' '.join(extra)}")
        print(f"# load average before: {load()}")
        start = time.perf_counter()
        for line in run(page + extra, a.dir, stop):
            print(line)
        print(f"# {time.perf_counter() - start:.1f} s of wall time; load average after: {load()}")


if __name__ == "__main__":
    main()
