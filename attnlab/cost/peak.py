"""The machine's peak, measured: a large matmul timed once and cached, and MFU against it.

Model FLOPs utilisation (MFU) = achieved model FLOP/s / peak FLOP/s. A datasheet peak is the wrong
denominator on a laptop CPU (turbo, thread count, memory, other processes all move it), so the peak here is
what this machine reached on a large square matmul of the given dtype: the best a dense product can do,
which is what every transformer matmul aspires to. It is cached in ~/.cache/attnlab/peak.json (or
$ATTNLAB_CACHE_DIR/peak.json) under a key naming the device, the dtype, the torch version and, on CPU, the
thread count, so a change of any of them measures again.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

import torch

from attnlab.errors import InputError
from attnlab.files import finite_number, read_cache, warn_cache, write_json_atomic

# below this a cached "peak" is not a measurement (any machine torch runs on multiplies faster): `1` or `true` in
# peak.json would make every MFU a billion
MIN_PEAK_FLOPS = 1e6
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def cache_file() -> Path:
    root = os.environ.get("ATTNLAB_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "attnlab") / "peak.json"


def _dtype(dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        if dtype not in _DTYPES.values():
            raise InputError(f"dtype {dtype}: allowed {', '.join(_DTYPES)}")
        return dtype
    from attnlab.cost.analytic import dtype_name

    return _DTYPES[dtype_name(dtype)]


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_key(device, dtype) -> str:
    """What the cached peak depends on: device model, dtype, torch version (+ threads on CPU)."""
    device = torch.device(device)
    dt = str(_dtype(dtype)).replace("torch.", "")
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        return f"cuda:{name}|{dt}|torch {torch.__version__}"
    if device.type != "cpu":
        raise InputError(f"device {device}: peak measurement supports 'cpu' and 'cuda'")
    return f"cpu:{cpu_name()}|{dt}|torch {torch.__version__}|threads {torch.get_num_threads()}"


def time_matmul(size: int, device, dtype: torch.dtype, budget_s: float = 0.3) -> float:
    """Best FLOP/s of (size x size) @ (size x size) over repeats that fit in about `budget_s` seconds."""
    device = torch.device(device)
    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    # one CPU thread: its CPU time is what an idle machine's wall clock would read, and it does not count the
    # moments other processes hold the core (a peak measured on a crowded machine stays cached)
    clock = time.process_time if device.type == "cpu" and torch.get_num_threads() == 1 else time.perf_counter
    a @ b  # warm-up: first call pays for allocation and kernel selection
    sync()
    best, spent, runs = float("inf"), 0.0, 0
    while runs < 3 or (spent < budget_s and runs < 50):
        wall, start = time.perf_counter(), clock()
        a @ b
        sync()
        elapsed = clock() - start
        best, spent, runs = min(best, elapsed), spent + time.perf_counter() - wall, runs + 1
    return 2 * size ** 3 / max(best, 1e-9)


def measured_peak_flops(device="cpu", dtype=torch.float32, *, refresh: bool = False, size: int | None = None) -> float:
    """Peak FLOP/s of this machine for `dtype`, measured once on a large matmul and cached on disk.

    On CUDA pass dtype=torch.bfloat16 for the tensor-core peak that training MFU is quoted against.
    """
    torch_dtype = _dtype(dtype)
    key = device_key(device, torch_dtype)
    if size is None:
        size = 8192 if torch.device(device).type == "cuda" else 1024
    return _cached_measurement(key, "FLOP/s", refresh, lambda: time_matmul(size, device, torch_dtype))


def _cached_measurement(key: str, unit: str, refresh: bool, measure) -> float:
    """The number cached in peak.json under `key`; else (no entry, `refresh`, or an entry that is not a number of
    `unit` above MIN_PEAK_FLOPS: one warning) what measure() returns, stored there."""
    path = cache_file()
    cached = read_cache(path, "peak cache")  # a bad file: one warning, {}, measured again and overwritten
    if not refresh and key in cached:
        if finite_number(cached[key], MIN_PEAK_FLOPS):
            return float(cached[key])
        warn_cache(f"{path}: the entry for {key} is not a number of {unit} above {MIN_PEAK_FLOPS:g}; "
                   "ignored, measured again")
    value = measure()
    cached[key] = value
    write_json_atomic(path, cached)  # a read-only home still gets the number, just not cached
    return value


def mfu(flops_per_second: float, device="cpu", dtype=torch.float32) -> float:
    """Model FLOPs utilisation: achieved FLOP/s over the measured peak of `device` for `dtype` (0..1, can exceed
    1 slightly when the run beats the short peak measurement)."""
    if not isinstance(flops_per_second, (int, float)) or flops_per_second < 0:
        raise InputError(f"flops_per_second={flops_per_second!r}: must be a non-negative number")
    return flops_per_second / measured_peak_flops(device, dtype)


def time_copy(megabytes: int, device, budget_s: float = 0.2) -> float:
    """Best bytes/s of copying a float32 tensor of `megabytes` MB into another (bytes read + bytes written)."""
    device = torch.device(device)
    n = megabytes * 2**20 // 4
    a, b = torch.ones(n, device=device), torch.empty(n, device=device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    b.copy_(a)  # warm-up: the pages of b are touched once
    sync()
    best, spent, runs = float("inf"), 0.0, 0
    while runs < 3 or (spent < budget_s and runs < 20):
        start = time.perf_counter()
        b.copy_(a)
        sync()
        elapsed = time.perf_counter() - start
        best, spent, runs = min(best, elapsed), spent + elapsed, runs + 1
    return 2 * n * 4 / max(best, 1e-9)


def measured_bandwidth(device="cpu", *, refresh: bool = False, megabytes: int | None = None) -> float:
    """Memory bandwidth of this machine in bytes/s, measured once on a large copy and cached beside the peak.

    The roofline's slope: a kernel that does I FLOPs per byte it moves reaches at most bandwidth x I FLOP/s.
    Like the peak it is what this machine reached, not a datasheet figure; the copy is larger than any cache
    (128 MB on CPU, 1 GB on CUDA) so it is mostly the memory's speed that is timed."""
    key = "bandwidth|" + device_key(device, torch.float32)
    if megabytes is None:
        megabytes = 1024 if torch.device(device).type == "cuda" else 128
    return _cached_measurement(key, "bytes/s", refresh, lambda: time_copy(megabytes, device))
