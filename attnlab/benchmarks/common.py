"""What every benchmark shares: the interleaved timer, the matmul-peak probe, peak memory and the report table.

Why interleaved: on a shared 2-core machine the speed drifts by up to 1.5x within an hour, so two numbers
taken minutes apart mean little. Every contestant runs once per round (A B C, then B C A, ...) after warm-up,
and only ratios of medians from the same rounds are reported. The matmul peak is one more contestant in the
same rounds, so MFU is measured against the machine as it was while the model ran.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from attnlab.benchmarks.output import default_out
from attnlab.heap import release_freed_memory


# ----------------------------------------------------------------------------- timing
@dataclass
class Stats:
    """Seconds per call over the timed rounds."""

    median: float
    q1: float
    q3: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, times: list[float]) -> Stats:
        ordered = sorted(times)
        if len(ordered) >= 4:
            q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
        else:
            q1, q3 = ordered[0], ordered[-1]
        return cls(statistics.median(ordered), q1, q3, ordered[0], ordered[-1], len(ordered))

    @property
    def spread(self) -> float:
        """Inter-quartile range relative to the median (0.05 = the middle half lies within 5%)."""
        return (self.q3 - self.q1) / self.median if self.median else 0.0


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def interleaved(contestants: dict[str, Callable[[], object]], *, warmup: int = 2, repeats: int = 10,
                sync: Callable[[], None] | None = None, clock: str = "wall") -> dict[str, list[float]]:
    """Run each contestant `warmup` rounds untimed, then `repeats` timed rounds, rotating the order each round.

    Returns name -> seconds per call. `sync` (e.g. torch.cuda.synchronize) runs before every clock read so that
    asynchronous devices are timed for their work, not for the launch. clock="cpu" reads this process's CPU
    time instead of the wall clock: with one torch thread it counts only the work done, not the time other
    processes held the core, which keeps ratios steady on a shared machine (with more threads it also counts
    OpenMP's spin-waiting, so use it with --threads 1).
    """
    now = CLOCKS[clock]
    names = list(contestants)
    sync = sync or (lambda: None)
    for _ in range(warmup):
        for name in names:
            contestants[name]()
    sync()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            start = now()
            contestants[name]()
            sync()
            times[name].append(now() - start)
    return times


# ----------------------------------------------------------------------------- the machine's matmul peak
def matmul_probe(n: int = 2048, dtype: torch.dtype = torch.float32, device: str = "cpu") -> tuple[Callable, float]:
    """(call, flops): one n x n @ n x n matmul, 2 n^3 FLOPs. Large enough to reach the BLAS plateau on CPU."""
    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(device=device, dtype=dtype)
    b = torch.randn(n, n, generator=gen).to(device=device, dtype=dtype)
    out = torch.empty(n, n, dtype=dtype, device=device)
    return (lambda: torch.mm(a, b, out=out)), 2.0 * n**3


def cost_module_peak() -> float | None:
    """The cost engineer's measured peak (FLOP/s), when attnlab.cost.peak exists; a cross-check only."""
    try:
        from attnlab.cost.peak import measured_peak_flops
    except ImportError:
        return None
    try:
        return float(measured_peak_flops())
    except Exception:  # a cross-check must never break a benchmark
        return None


# ----------------------------------------------------------------------------- FLOPs
def count_flops(fn: Callable[[], object], *, saw_attention: list[bool] | None = None) -> float:
    """FLOPs torch actually dispatches in one call of fn (matmuls, convolutions, attention), forward + backward.

    `saw_attention`, when given, gets one entry: whether the counter saw a fused attention kernel. It counts
    CUDA's flash / memory-efficient kernels but not the CPU one, so a caller adds attention by hand only then."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    if saw_attention is not None:
        ops = counter.get_flop_counts().get("Global", {})
        saw_attention.append(any("scaled_dot_product" in str(op) for op in ops))
    return float(counter.get_total_flops())


# ----------------------------------------------------------------------------- memory
def status_kib(key: str, pid: int | str = "self") -> int | None:
    """A field of /proc/<pid>/status in KiB (VmRSS, VmHWM), or None where it cannot be read (not Linux, or the
    process has exited)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    """Linux: writing 5 to clear_refs resets VmHWM (peak RSS) to the current RSS."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def step_peak_memory(step: Callable[[], object], steps: int = 3) -> dict:
    """Peak resident memory while `step` runs, above what was resident just before (model, inputs, imports).

    tracemalloc cannot see torch's allocator, so this reads the kernel's own high-water mark: VmHWM after a
    reset through /proc/self/clear_refs. Where that is not allowed it falls back to the ru_maxrss delta,
    which undercounts when an earlier phase (imports, conversion) had already set a higher peak.
    """
    gc.collect()
    release_freed_memory()
    if _reset_peak_rss():
        method = "VmHWM after clear_refs reset"
        before = status_kib("VmRSS") or 0
        for _ in range(steps):
            step()
        peak = status_kib("VmHWM") or 0
    else:
        method = "ru_maxrss delta"
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for _ in range(steps):
            step()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"step_peak_mib": max(0, peak - before) / 1024, "process_peak_mib": peak / 1024, "method": method}


def memory_in_subprocess(module: str, case: str, impl: str, extra: list[str] | None = None,
                         timeout: float = 600) -> dict | None:
    """Run `python -m module --memory-case CASE --memory-impl IMPL` in a fresh process and read its JSON line.

    One process per (case, implementation): heaps do not share freed pages, and one high-water mark cannot
    leak into another's number.
    """
    cmd = [sys.executable, "-m", module, "--memory-case", case, "--memory-impl", impl, *(extra or [])]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    print(f"  memory run failed for {case}/{impl}: {done.stderr.strip().splitlines()[-1:] }", file=sys.stderr)
    return None


# ----------------------------------------------------------------------------- reports
@dataclass
class CaseResult:
    case: str
    unit: str  # what one call does ("train step", "forward")
    tokens: int  # tokens (or patches) processed per call
    flops: float  # FLOPs per call, counted by FlopCounterMode on attnlab's call
    peak_flops: float  # FLOP/s of the interleaved matmul probe (median)
    stats: dict[str, Stats] = field(default_factory=dict)
    times: dict[str, list[float]] = field(default_factory=dict)  # seconds per round, in round order
    memory: dict[str, dict] = field(default_factory=dict)
    check: str = ""  # how the contestants were shown to compute the same thing
    notes: str = ""
    clock: str = "wall"

    def ratio(self, peer: str, ours: str = "attnlab") -> float:
        """Speed of ours relative to peer: > 1 means attnlab is faster."""
        return self.stats[peer].median / self.stats[ours].median

    def paired(self, peer: str, ours: str = "attnlab") -> Stats:
        """peer / attnlab within each round (the two ran seconds apart), over the rounds: robust to the load
        drifting during the run, which the ratio of medians is not."""
        return Stats.of([p / o for p, o in zip(self.times[peer], self.times[ours], strict=True)])

    def mfu(self, name: str) -> float:
        return self.flops / self.stats[name].median / self.peak_flops

    def render(self) -> str:
        lines = [f"## {self.case} ({self.unit}; {self.tokens} tokens/call; {self.flops / 1e9:.2f} GFLOP/call; "
                 f"matmul peak {self.peak_flops / 1e9:.0f} GFLOP/s; {self.clock} clock)"]
        if self.check:
            lines.append(f"   check: {self.check}")
        lines.append(f"   {'impl':<22}{'median ms':>10}{'IQR ms':>16}{'min-max ms':>18}{'tok/s':>10}{'MFU':>7}"
                     f"{'vs attnlab':>11}{'paired (IQR)':>20}{'step MiB':>10}")
        for name, s in self.stats.items():
            if name == "matmul-peak":
                continue
            mem = self.memory.get(name, {}).get("step_peak_mib")
            lines.append(
                f"   {name:<22}{s.median * 1e3:>10.1f}{f'{s.q1 * 1e3:.1f}-{s.q3 * 1e3:.1f}':>16}"
                f"{f'{s.min * 1e3:.1f}-{s.max * 1e3:.1f}':>18}{self.tokens / s.median:>10.0f}"
                f"{self.mfu(name):>7.0%}{self.ratio(name):>10.2f}x{self._paired_text(name):>20}"
                f"{(f'{mem:.0f}' if mem is not None else '-'):>10}")
        if self.notes:
            lines.append(f"   note: {self.notes}")
        return "\n".join(lines)

    def _paired_text(self, name: str) -> str:
        if name == "attnlab" or name not in self.times:
            return "-"
        p = self.paired(name)
        return f"{p.median:.2f}x ({p.q1:.2f}-{p.q3:.2f})"

    def to_dict(self) -> dict:
        data = asdict(self)
        data["stats"] = {k: asdict(v) for k, v in self.stats.items()}
        data["ratios"] = {k: self.ratio(k) for k in self.stats if k not in ("attnlab", "matmul-peak")}
        data["paired_ratios"] = {k: asdict(self.paired(k)) for k in data["ratios"] if k in self.times}
        data["mfu"] = {k: self.mfu(k) for k in self.stats if k != "matmul-peak"}
        return data


def run_case(case: str, unit: str, tokens: int, contestants: dict[str, Callable[[], object]], *, flops: float,
             warmup: int, repeats: int, probe_size: int = 2048, check: str = "", notes: str = "",
             device: str = "cpu", clock: str = "wall", probe_dtype: torch.dtype = torch.float32) -> CaseResult:
    """Time the contestants and the matmul probe in the same interleaved rounds.

    probe_dtype: the matmul peak's precision; bfloat16 when the contestants run under bf16 autocast, so that
    MFU on a GPU is against its bf16 tensor-core rate rather than its far lower float32 one."""
    probe, probe_flops = matmul_probe(probe_size, dtype=probe_dtype, device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else None
    times = interleaved({**contestants, "matmul-peak": probe}, warmup=warmup, repeats=repeats, sync=sync,
                        clock=clock)
    stats = {name: Stats.of(t) for name, t in times.items()}
    peak = probe_flops / stats["matmul-peak"].median
    return CaseResult(case, unit, tokens, flops, peak, stats, times, check=check, notes=notes, clock=clock)


def machine() -> dict:
    """What the numbers were measured on."""
    model = platform.processor() or "unknown"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {"cpu": model, "cores": os.cpu_count(), "threads": torch.get_num_threads(), "torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "python": platform.python_version()}


def header(command: str) -> str:
    m = machine()
    return (f"# {m['date']} | {m['cpu']}, {m['cores']} cores, {m['threads']} torch threads, {m['cpu_capability']} | "
            f"torch {m['torch']} | python {m['python']}\n# command: {command}")


def save_results(name: str, results: list[CaseResult], command: str, out: str | Path | None = None) -> Path:
    """OUT/<name>.json: the machine, the command and every case, for RESULTS.md (copy a run you cite into
    bench/results/ and render it with `python -m attnlab.benchmarks.report`) and later diffs."""
    folder = Path(out) if out else default_out()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), "command": command,
                                "cases": [r.to_dict() for r in results]}, indent=1) + "\n")
    print(f"results written to {path}", flush=True)
    return path


def seed_all(seed: int = 0) -> None:
    torch.manual_seed(seed)


def run_selected(cases: dict, run_case: Callable, args, module: str, command: str,
                 measure_memory_of: Callable[[str], bool] = lambda impl: impl != "matmul-peak") -> list[CaseResult]:
    """Run the chosen cases of a bench script, add each implementation's peak memory (fresh subprocess per
    implementation, CPU only, skipped by --quick/--no-memory), print and optionally save the results."""
    selected = [c for c in args.cases.split(",") if c] or [n for n, c in cases.items() if c.in_quick or not args.quick]
    results = []
    for number, name in enumerate(selected, 1):
        if name not in cases:
            raise SystemExit(f"unknown case {name!r}; cases: {', '.join(cases)}")
        started = time.perf_counter()
        # a case takes from seconds to minutes: say which one runs, so the wait is never silent
        print(f"-- case {number}/{len(selected)}: {name} ...", flush=True)
        result = run_case(cases[name], args)
        if not (args.no_memory or args.quick or args.device != "cpu"):
            for impl in result.stats:
                if measure_memory_of(impl):
                    extra = ["--threads", str(args.threads)] if args.threads else []
                    mem = memory_in_subprocess(module, name, impl, extra)
                    if mem:
                        result.memory[impl] = mem
        print(result.render(), flush=True)
        print(f"-- case {number}/{len(selected)}: {name} done in {time.perf_counter() - started:.0f} s", flush=True)
        results.append(result)
    if args.save:
        save_results(args.save + ("-quick" if args.quick else ""), results, command, args.out)
    return results
