"""Every benchmark in one command: training, forward, and whatever other bench/bench_*.py scripts exist
(generation, explorer latency), each printing its own tables.

    python bench/run_all.py [--quick] [--only train,forward,generate] [--no-memory]

--quick keeps the whole run under about 3 minutes: the small training cases, the bert-base forward cases,
3 timed rounds, no memory subprocesses, and the other scripts with their own --quick.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))

from bench import bench_forward, bench_train  # noqa: E402

OURS = {"train": bench_train, "forward": bench_forward}


# micro-benchmarks run by hand (no peer library): bench_matvec.py times weight layouts against each other
MICRO = {"matvec"}

# scripts that are not bench_<name>.py, with their arguments for (--quick, full)
EXTRA = {"explorer": ("load_explorer.py", ["--clients", "4", "--requests", "10"], [])}


def other_scripts() -> dict[str, tuple[Path, list[str], list[str]]]:
    """name -> (path, quick args, full args) of the other benchmarks present: bench/bench_<name>.py (generation,
    ...) with their own --quick, and the explorer load test (request latency) with a small load for --quick."""
    found = {}
    for path in sorted(BENCH_DIR.glob("bench_*.py")):
        name = path.stem.removeprefix("bench_")
        if name not in OURS and name not in MICRO:
            found[name] = (path, ["--quick"], [])
    for name, (file, quick, full) in EXTRA.items():
        if (BENCH_DIR / file).is_file():
            found[name] = (BENCH_DIR / file, quick, full)
    return found


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="under ~3 minutes: small cases, few repeats")
    p.add_argument("--only", default="", help="comma-separated subset of train, forward and the other scripts")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocesses")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    others = other_scripts()
    wanted = [w for w in args.only.split(",") if w] or [*OURS, *others]
    unknown = [w for w in wanted if w not in OURS and w not in others]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; available: {', '.join([*OURS, *others])}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    failed = []
    for name in wanted:
        section_start = time.perf_counter()
        if name in OURS:
            flags = (["--quick"] if args.quick else []) + (["--no-memory"] if args.no_memory else [])
            print(f"\n######## {name} {' '.join(flags)}", flush=True)
            OURS[name].main(flags)
        else:
            path, quick, full = others[name]
            flags = quick if args.quick else full
            print(f"\n######## {name}: {path.name} {' '.join(flags)}", flush=True)
            done = subprocess.run([sys.executable, str(path), *flags], cwd=BENCH_DIR.parent)
            if done.returncode:
                failed.append(name)
        print(f"######## {name}: {time.perf_counter() - section_start:.0f} s", flush=True)
    print(f"\nall benchmarks done in {time.perf_counter() - started:.0f} s"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
