"""Render the JSON results of `attnlab bench` (OUT/train.json, OUT/forward.json, ...) as markdown tables.

    python -m attnlab.benchmarks.report train forward --dir OUT          # print the tables
    python -m attnlab.benchmarks.report train-quick --dir bench/results  # a run kept in the repository
    python -m attnlab.benchmarks.report train forward --dir OUT --write bench/RESULTS.md

--write FILE replaces only the text between FILE's `speed:results` markers (the training and forward tables of
RESULTS.md's history), so every other section stays as it is.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

START, END = "<!-- speed:results:start -->", "<!-- speed:results:end -->"


def table(data: dict) -> str:
    m = data["machine"]
    lines = [f"**{m['date']}** | {m['cpu']}, {m['cores']} cores, {m['threads']} torch threads ({m['cpu_capability']}) "
             f"| torch {m['torch']} | `{data['command']}`", "",
             "| case | impl | median ms (IQR) | tokens/s | MFU | vs attnlab: ratio of medians | paired ratio (IQR) "
             "| step peak MiB |", "|---|---|---|---|---|---|---|---|"]
    for case in data["cases"]:
        peak = case["peak_flops"] / 1e9
        for impl, s in case["stats"].items():
            if impl == "matmul-peak":
                continue
            ratio = case["ratios"].get(impl)
            paired = case.get("paired_ratios", {}).get(impl)
            mem = case["memory"].get(impl, {}).get("step_peak_mib")
            pair = "-" if paired is None else f"{paired['median']:.2f}x ({paired['q1']:.2f}-{paired['q3']:.2f})"
            lines.append(
                f"| {case['case']} | {impl} | {s['median'] * 1e3:.0f} ({s['q1'] * 1e3:.0f}-{s['q3'] * 1e3:.0f}) "
                f"| {case['tokens'] / s['median']:.0f} | {case['mfu'][impl]:.0%} "
                f"| {'1.00 (self)' if ratio is None else f'{ratio:.2f}x'} "
                f"| {pair} "
                f"| {'-' if mem is None else f'{mem:.0f}'} |")
        lines.append(f"| {case['case']} | matmul peak | {peak:.0f} GFLOP/s | | | | | |")
    checks = [f"- {c['case']}: {c['check']}" for c in data["cases"] if c.get("check")]
    notes = [f"- {c['case']}: {c['notes']}" for c in data["cases"] if c.get("notes")]
    return "\n".join(lines + [""] + checks + notes)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.report", description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="+", help="result names under --dir (train, forward, train-quick, ...)")
    p.add_argument("--dir", required=True, help="folder of the JSON results (an `attnlab bench` run's --out)")
    p.add_argument("--write", default=None, metavar="FILE",
                   help="replace the section between FILE's speed:results markers instead of printing")
    p.add_argument("--intro", default="", help="text put before the tables (e.g. the load on the machine)")
    args = p.parse_args(argv)
    parts = [args.intro] if args.intro else []
    for name in args.names:
        data = json.loads((Path(args.dir) / f"{name}.json").read_text())
        parts.append(f"### {name}\n\n{table(data)}")
    text = "\n\n".join(parts)
    if not args.write:
        print(text)
        return 0
    path = Path(args.write)
    doc = path.read_text()
    if START not in doc or END not in doc:
        print(f"{path} has no {START} ... {END} section", file=sys.stderr)
        return 1
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{START}\n{text}\n{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
