"""How many torch threads a piece of work gets: never more than the cores free now, never more than measured best.

Why: torch starts with one OpenMP thread per core. When other processes keep those cores busy, each parallel
region ends in a barrier that waits for the thread the scheduler has parked, so a decoding step of a few rows
that takes 1.4 ms alone took 11-64 ms on a shared 2-core machine (10x slower than one thread), and training
ran 6x slower. More threads than free cores (oversubscription) is the slow path; fewer threads than the work
can use costs at most the missing cores. So the policy only ever lowers the thread count:

    threads = min(the caller's torch.get_num_threads(), cores free now, the best count measured for the shape)

- `free_cores()`: the allowed cores (os.sched_getaffinity, a cgroup quota) minus what other processes used
  over a short window (/proc/stat per CPU, this process's own CPU time subtracted). Off Linux: the allowed cores.
- `best_threads(model, rows)`: a decoding step multiplies a few rows by every weight matrix and opens a parallel
  region for each op big enough; whether a second thread gains on that depends on the machine and the shapes,
  so it is timed once (a cached decoding step of `rows` rows through the model itself, each thread count
  interleaved, the fastest sample of several steps kept; a decoder whose matrices are quantized (a GGUF's
  kept blocks) too, since attnlab's kernels split their rows over the same count; models other than decoders:
  their weight matrices;
  more threads win only when GAIN faster) and cached in
  threads.json beside the matmul peak (~/.cache/attnlab or $ATTNLAB_CACHE_DIR) under the CPU, core count,
  torch version, dtype, weight shapes and row class. It is timed only when at least two cores are free (the
  only time the answer matters); an entry timed while the machine got busy is timed again after
  RETRY_BUSY_S, any entry after MAX_AGE_S.
- `using_threads(n)`: torch.set_num_threads(n) inside the block, the caller's count restored on exit (also on
  an exception). torch's OpenMP count is per OS thread (a worker thread starts from the global value), so
  concurrent scopes in several threads of one process each set their own.
- `choose(...)`: the three combined; an explicit count (threads=N) is taken as given. A request too short to
  measure (`steps` given, request_seconds guessed under SHORT_S: a 56-token gpt-char generation runs 25 ms) pays
  for no measuring: no 30 ms sample, no probe; it takes a recent snapshot and a probe on file, else one thread.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import torch
from torch import nn

from attnlab.errors import InputError
from attnlab.files import CacheWarning, finite_number, read_cache, warn_cache, write_json_atomic
from attnlab.layers import kernel_build, kernel_threads

WINDOW_S = 0.03  # a fresh sample of other processes' CPU use spans this long (3 ticks per core at USER_HZ=100)
REUSE_S = 10.0  # a snapshot younger than this is the start of the next window (no sleep)
ROUND_UP = 0.4  # 1.6 free cores count as 2: a little background noise does not cost a quiet machine a core
MAX_DECODE_ROWS = 64  # more rows than this is not a decoding step: free cores decide alone
MAX_AGE_S = 30 * 24 * 3600.0  # a probe older than this is timed again (a new BIOS, a noisier neighbour ...)
RETRY_BUSY_S = 600.0  # a probe the machine disturbed is timed again after this
GAIN = 1.02  # more threads must be this much faster to be chosen: ties go to fewer threads (less to contend)
PAST = 32  # cached positions behind the probe's decoding step
SAMPLE_S = 0.004  # one timed sample runs the work this long at least (a 0.6 ms step alone is timer noise)
PROBE_BUDGET_S = 0.25  # a probe repeats at least this long (a GPT-2-small-sized model needs ~1 s for its repeats)
MAX_ENTRIES = 256  # threads.json keeps the newest this many probes
THREADS_PER_CPU = 4  # check_threads refuses more than this many threads per logical CPU
PROBE_LIMIT_S = 2.0  # ... and stops after this even short of its repeats (a machine that got busy: timed again)
SHORT_S = PROBE_BUDGET_S  # a request guessed shorter than its own probe neither probes nor waits for a sample
ELEMENTS_PER_S = 1e9  # the guess: a one-row product streams float32 weights at 4 GB/s (slower than measured)
MATRIX_S = 30e-6  # ... plus this per weight matrix a step (gpt-char, 17 matrices: 0.36-0.43 ms a step, AMD EPYC)


# ------------------------------------------------------------------------------------------ validation
def check_threads(value, name: str = "threads") -> int | None:
    """None, 0 or "auto" -> None (the policy decides); a positive integer -> itself; anything else refused."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "auto":
            return None
        if text.isdigit():
            value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{name}={value!r}: allowed a positive integer (torch threads), or 0 / 'auto' "
                         "(as many as are free and useful)")
    limit = thread_limit()
    if value > limit:  # a billion threads aborts inside libgomp; thousands only slow everything down
        raise InputError(f"{name}={value}: more threads than {THREADS_PER_CPU} per logical CPU (this machine has "
                         f"{os.cpu_count() or 1}) only slows the work down; allowed a positive integer up to "
                         f"{limit}, or 0 / 'auto' (as many as are free and useful)")
    return value or None


def thread_limit() -> int:
    """The most torch threads anyone may ask for: THREADS_PER_CPU per logical CPU of the machine (oversubscribing
    on purpose stays possible, to see what it costs; a count OpenMP cannot even start does not)."""
    return THREADS_PER_CPU * (os.cpu_count() or 1)


# ------------------------------------------------------------------------------------------ cores
def allowed_cores() -> int:
    """Cores this process may run on: its CPU affinity, capped by a cgroup v2 CPU quota when one is set."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            n = min(n, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, n)


def _busy_seconds() -> float | None:
    """CPU seconds spent on the allowed CPUs so far (all processes), from /proc/stat; None off Linux."""
    try:
        cpus = os.sched_getaffinity(0)
        with open("/proc/stat") as f:
            lines = f.read().splitlines()
    except (AttributeError, OSError):
        return None
    ticks = 0
    for line in lines:
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *values = line.split()
        if not name[3:].isdigit() or int(name[3:]) not in cpus or len(values) < 8:
            continue
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in values[:8])
        ticks += user + nice + system + irq + softirq + steal  # steal: the hypervisor gave the core away
    return ticks / os.sysconf("SC_CLK_TCK")


class _Sampler:
    """Other processes' CPU use between two snapshots; the last snapshot starts the next window."""

    def __init__(self):
        self.lock = threading.Lock()
        self.last: tuple[float, float, float] | None = None  # (monotonic, busy s, own process s)
        self.value: float | None = None  # the last measured cores used by others

    def others(self, window: float = WINDOW_S) -> float | None:
        with self.lock:
            now, busy, own = time.monotonic(), _busy_seconds(), time.process_time()
            if busy is None:
                return None
            last = self.last
            if window <= 0:  # never wait: the window since the last snapshot, however long (none yet: nothing known)
                if last is None:
                    self.last = (now, busy, own)
                    return self.value
            elif last is None or now - last[0] > REUSE_S:
                time.sleep(window)  # no recent snapshot: sample a short window now
                last = (now, busy, own)
                now, busy, own = time.monotonic(), _busy_seconds(), time.process_time()
            elif now - last[0] < window:
                if self.value is not None:
                    return self.value  # asked again within one window: the last answer still stands
                time.sleep(window - (now - last[0]))
                now, busy, own = time.monotonic(), _busy_seconds(), time.process_time()
            return self._measure(last, (now, busy, own))

    def recent(self, window: float = WINDOW_S) -> float | None:
        """Never waits (a request shorter than the sample must not pay for it): others' use since the last
        snapshot when that is at least `window` and at most REUSE_S old, the last answer within one window, and
        None when nothing recent is known (a snapshot is taken then, so the next request knows)."""
        with self.lock:
            now, busy, own = time.monotonic(), _busy_seconds(), time.process_time()
            if busy is None:
                return None
            last = self.last
            if last is None or now - last[0] > REUSE_S:
                self.last, self.value = (now, busy, own), None  # an old average says nothing about now
                return None
            if now - last[0] < window:
                return self.value  # a span of a few clock ticks is noise: the last answer stands (None if none)
            return self._measure(last, (now, busy, own))

    def _measure(self, last: tuple[float, float, float], now: tuple[float, float, float]) -> float:
        """Cores others used between two snapshots (all CPU time on the allowed cores less this process's)."""
        span = max(now[0] - last[0], 1e-6)
        self.value = max(0.0, ((now[1] - last[1]) - (now[2] - last[2])) / span)
        self.last = now
        return self.value


_SAMPLER = _Sampler()
_SAMPLER.others(window=0)  # the first snapshot at import: the first choice (after a model loads) need not wait
_SCOPES: dict[int, int] = {}  # OS thread id -> threads its innermost using_threads scope set
_SCOPES_LOCK = threading.Lock()


def free_cores(window: float = WINDOW_S) -> float:
    """Allowed cores minus those other processes used lately (and those other scopes of this process hold).

    window: the shortest span sampled; with no snapshot in the last REUSE_S a fresh one waits that long.
    window=0 never waits (a server answering requests): the span since the previous call, whatever its length.
    """
    n = allowed_cores()
    others = _SAMPLER.others(window)
    me = threading.get_ident()
    with _SCOPES_LOCK:
        held = sum(t for ident, t in _SCOPES.items() if ident != me)  # concurrent requests in this process
    return max(0.0, n - (others or 0.0) - held)


def age_last_snapshot(seconds: float) -> None:
    """Move the last load snapshot `seconds` into the past (benchmarks.threads times choose() when a request finds
    no snapshot within REUSE_S, the path a first request of a while takes)."""
    with _SAMPLER.lock:
        if _SAMPLER.last is not None:
            _SAMPLER.last = (_SAMPLER.last[0] - seconds, *_SAMPLER.last[1:])


def recent_free_cores(window: float = WINDOW_S) -> float | None:
    """free_cores without waiting for a sample; None when no snapshot of the last REUSE_S tells (_Sampler.recent)."""
    others = _SAMPLER.recent(window)
    if others is None:
        return None
    me = threading.get_ident()
    with _SCOPES_LOCK:
        held = sum(t for ident, t in _SCOPES.items() if ident != me)
    return max(0.0, allowed_cores() - others - held)


# ------------------------------------------------------------------------------------------ the scope
class ThreadScope:
    """What using_threads yields: the count in force, and retune(n) for long work that re-checks now and then."""

    def __init__(self, threads: int):
        self.threads = threads

    def retune(self, threads: int) -> None:
        if threads != self.threads:
            torch.set_num_threads(threads)
            self.threads = threads
            with _SCOPES_LOCK:
                _SCOPES[threading.get_ident()] = threads


@contextlib.contextmanager
def using_threads(threads: int | None) -> Iterator[ThreadScope]:
    """torch.set_num_threads(threads) inside the block (None: leave it); the caller's count comes back after."""
    threads = check_threads(threads)
    before = torch.get_num_threads()
    me = threading.get_ident()
    with _SCOPES_LOCK:
        outer = _SCOPES.get(me)
    scope = ThreadScope(threads or before)
    if threads and threads != before:
        torch.set_num_threads(threads)
    with _SCOPES_LOCK:
        _SCOPES[me] = scope.threads
    try:
        yield scope
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
        with _SCOPES_LOCK:
            if outer is None:
                _SCOPES.pop(me, None)
            else:
                _SCOPES[me] = outer


# ------------------------------------------------------------------------------------------ the probe
def cache_file() -> Path:
    root = os.environ.get("ATTNLAB_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "attnlab") / "threads.json"


@functools.cache
def cpu_name() -> str:
    from attnlab.cost.peak import cpu_name as name

    return name()


def _row_class(rows: int) -> int:
    return 1 << max(0, int(rows) - 1).bit_length()  # 1, 2, 4, 8, ...: products of 3 and 4 rows behave alike


def decode_weights(model: nn.Module) -> dict[tuple[int, int], tuple[torch.Tensor, int]]:
    """(out, in) -> (one CPU floating-point Linear weight of that shape, how many the model holds)."""
    return _matrices(model)[0]


def _matrices(model: nn.Module) -> tuple[dict, dict]:
    """decode_weights and kept_blocks in one walk over the modules: a short request asks for both, and each walk
    costs ~0.1-0.4 ms on gpt-char (nn.Module attribute lookups), 1-2% of its whole 56-token generation."""
    from attnlab.layers.quantized import QuantizedLinear

    found: dict[tuple[int, int], tuple[torch.Tensor, int]] = {}
    blocks: dict[tuple[int, int, str], int] = {}
    seen: set[int] = set()
    for module in model.modules():
        if isinstance(module, QuantizedLinear):
            shape = (module.out_features, module.in_features, module.format)
            blocks[shape] = blocks.get(shape, 0) + 1
            continue
        w = getattr(module, "weight", None) if isinstance(module, nn.Linear) else None
        if w is None or w.dim() != 2 or not w.is_floating_point() or w.device.type != "cpu" or id(w) in seen:
            continue
        seen.add(id(w))
        shape = tuple(w.shape)
        found[shape] = (found[shape][0] if shape in found else w, found.get(shape, (None, 0))[1] + 1)
    return found, blocks


def _lm_decoder(model: nn.Module) -> bool:
    config = getattr(model, "config", None)
    return getattr(config, "topology", None) == "decoder" and getattr(config, "head", None) == "lm"


def _decoding_step(model: nn.Module, rows: int):
    """A real cached decoding step for a decoder with an LM head: `rows` sequences of one new token after PAST
    cached positions (every block product, cache write, attention over the cache, norm and small op: the
    parallel regions a generation step opens, whose count sets a loaded machine's time more than their work).
    The cache is rewound to PAST before each call, so every call does the same work. None for other models."""
    if not _lm_decoder(model):
        return None
    from attnlab.cache import KVCache

    config = model.config

    past = min(PAST, max(1, int(getattr(config, "max_len", 0) or PAST) - 1))
    cache = KVCache.for_model(model, rows, capacity=past + 1)
    ids = torch.zeros((rows, 1), dtype=torch.long)
    with torch.inference_mode():
        # one position first: it asks for the one-row kernels, and where a detached build is still making them
        # (kernel_build.DEFER), it ran torch's stand-ins: nothing here is worth timing, and the fill of PAST
        # positions through the stand-ins was half of a first run's time
        model(ids, validate=False)
        _no_stand_ins()
        model(torch.zeros((rows, past), dtype=torch.long), cache=cache, validate=False)  # fill the cache once
    _no_stand_ins()  # the fill asked for the prompt kernels (rows), which may still be being built

    apart = kernels_only(model, rows, rows)

    def step():
        for layer in cache.layers:
            layer.length = past
        with kernels_apart(apart):  # as Stepper runs a step
            model(ids, cache=cache, last_only=True, validate=False)
    return step


def _matmul_pass(weights: dict, rows: int):
    """(rows, in) @ W^T over the model's matrices, each shape as often as the model holds it (up to 4 timed)."""
    numbers = torch.Generator().manual_seed(0)  # its own generator: the global RNG stream is the caller's
    inputs = {shape: torch.randn(rows, shape[1], generator=numbers).to(w.dtype) for shape, (w, _) in weights.items()}

    def run():
        for shape, (w, n) in weights.items():
            for _ in range(min(n, 4)):
                torch.nn.functional.linear(inputs[shape], w)
    return run


def kept_blocks(model: nn.Module) -> dict[tuple[int, int, str], int]:
    """(out, in, format) -> how many quantized matrices (layers/quantized.py: int8, int4, a GGUF's kept Q8_0 /
    Q4_0 / Q4_1 blocks) of that shape the model holds. Their products run attnlab's kernels, which split their
    output rows over torch's thread count, so a second thread may gain or lose there as on float weights."""
    return _matrices(model)[1]


def kernels_only(model: nn.Module, rows: int, head_rows: int | None = None) -> bool:
    """Does a forward of `rows` token rows through this decoder multiply through attnlab's kernels alone: every
    matrix quantized and running a kernel at that row count (QuantizedLinear.runs_kernel; the LM head at
    `head_rows`, the rows it sees: generation asks for the last position's logits only), and no float Linear
    weight on the CPU (torch's pool multiplies those)? Such a forward runs with torch's pool at one thread and
    the kernels' at the caller's count (kernels_apart): measured on SmolLM2 (Sapphire Rapids, 2 cores) both a
    decoding step (26.1 -> 20.3 ms against 32.0 with both pools at two threads) and a 32-token prefill (148.6 ->
    92.8 ms against 128.5) are faster that way (bench/RESULTS.md, 2026-11-28)."""
    from attnlab.layers.quantized import QuantizedLinear

    if not _lm_decoder(model):
        return False
    head = getattr(model, "lm_head", None)
    heads = {id(m) for m in head.modules()} if isinstance(head, nn.Module) else set()
    layers = []
    for m in model.modules():
        if isinstance(m, QuantizedLinear):
            layers.append(m)
        elif isinstance(m, nn.Linear) and m.weight is not None and m.weight.is_floating_point() \
                and m.weight.device.type == "cpu":
            return False  # a float matrix (decode_weights would hold it): torch's pool multiplies; asked per request
    return bool(layers) and all(m.runs_kernel(head_rows if id(m) in heads and head_rows else rows) for m in layers)


def kernels_apart(on: bool):
    """The context a forward runs in at the caller's torch.get_num_threads() = n: where kernels_only holds (`on`)
    and n > 1, torch at one thread and the kernels at n (layers/kernel_threads.py says why); otherwise as is."""
    threads = torch.get_num_threads()
    return kernel_threads.apart(threads) if on and threads > 1 else contextlib.nullcontext()


def probe_key(model: nn.Module, weights: dict, rows: int, blocks: dict | None = None) -> str:
    """The cache entry's name: CPU, cores, torch, dtype, row class, the step's kind and every matrix shape.
    blocks: kept_blocks(model) when the caller has it already."""
    blocks = kept_blocks(model) if blocks is None else blocks
    dtype = str(next(iter(weights.values()))[0].dtype).replace("torch.", "") if weights else "blocks"
    shapes = ",".join([f"{o}x{i}*{n}" for (o, i), (_, n) in sorted(weights.items())]
                      + [f"{o}x{i}:{fmt}*{n}" for (o, i, fmt), n in sorted(blocks.items())])
    kind = ("cached step, kernels apart" if kernels_only(model, rows, rows) else "cached step") if _lm_decoder(model) \
        else "matmul"
    return (f"cpu:{cpu_name()}|cores {allowed_cores()}|torch {torch.__version__}|{dtype}|rows {_row_class(rows)}"
            f"|{kind}|{shapes}")


def time_decode(model: nn.Module, rows: int, counts: list[int], budget_s: float = PROBE_BUDGET_S) -> dict[int, float]:
    """Seconds of one cached decoding step of `rows` rows (decoders; other models: one pass over their weight
    matrices) per thread count: every repeat times each count in turn (an untimed call after each switch, then
    enough calls for SAMPLE_S), and the fastest repeat of each is kept (a repeat another process disturbed is
    slower, never faster). The first probe timed an uncached one-token forward and saw 1 and 2 threads tie
    where generation ran 4-8% faster on 2. Enough repeats run for the layers' one-row
    (in, out) weight copies to exist (layers/linear.py: after Linear.MIN_CALLS calls), as in a real generation;
    the model runs in eval mode (no dropout, no draw from the RNG) and is given back in its own mode."""
    from attnlab.layers.linear import Linear

    rows = _row_class(rows)
    was_training = model.training
    model.eval()
    try:
        work = _decoding_step(model, rows) or _matmul_pass(decode_weights(model), rows)
        best = {t: math.inf for t in counts}
        least = max(3, math.ceil((Linear.MIN_CALLS + 3) / len(counts)))
        with torch.inference_mode():
            inner = 1
            for t in counts:  # warm-up: OpenMP starts its threads, MKL picks its kernels
                with using_threads(t):
                    start = time.perf_counter()
                    work()
                    inner = max(inner, math.ceil(SAMPLE_S / max(time.perf_counter() - start, 1e-6)))
                _no_stand_ins()
            inner = min(inner, 64)
            started, repeats = time.perf_counter(), 0
            while repeats < 30:
                spent = time.perf_counter() - started
                if repeats >= 3 and spent >= budget_s and (repeats >= least or spent >= PROBE_LIMIT_S):
                    break
                for t in counts:
                    with using_threads(t):
                        if inner > 1:  # a short step: the first call after a thread-count change wakes the pool
                            work()  # untimed
                        start = time.perf_counter()
                        for _ in range(inner):
                            work()
                        best[t] = min(best[t], (time.perf_counter() - start) / inner)
                repeats += 1
    finally:
        model.train(was_training)
    return best


def _read_cache(path: Path) -> dict:
    """threads.json as attnlab.files.read_cache reads any cache: a bad file is {} with one warning."""
    return read_cache(path, "thread-count cache")


def _write_cache(path: Path, key: str, entry: dict) -> None:
    with warnings.catch_warnings():  # read a moment ago by best_threads, which warned already
        warnings.simplefilter("ignore", CacheWarning)
        data = _read_cache(path)
    data[key] = entry
    if len(data) > MAX_ENTRIES:  # one entry per model shape and row class: keep the newest

        def measured(k):
            try:
                return float(data[k]["measured"])
            except (TypeError, KeyError, ValueError):
                return -math.inf
        data = {k: data[k] for k in sorted(data, key=measured)[-MAX_ENTRIES:]}
    write_json_atomic(path, data, tag=f".{threading.get_ident()}")  # a read-only home: answered, not cached


def _well_formed(entry) -> bool:
    """An entry as _write_cache writes it: {"best": count, "seconds": {count: s}, "measured": time, "quiet": bool},
    every count a positive integer no larger than thread_limit() and every number finite (the file may hold
    anything: Infinity, strings, true, a billion threads)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("seconds"), dict) or not entry["seconds"]:
        return False
    best = entry.get("best")
    if isinstance(best, bool) or not isinstance(best, int) or not 1 <= best <= thread_limit():
        return False
    if not finite_number(entry.get("measured")) or not isinstance(entry.get("quiet", False), bool):
        return False
    for count, seconds in entry["seconds"].items():
        if not (isinstance(count, str) and count.isdigit() and 1 <= int(count) <= thread_limit()
                and finite_number(seconds)):
            return False
    return True


def _usable(entry, up_to: int, now: float) -> bool:
    """A cached entry answers when it is well formed, not stale, and tested as many threads as may be used."""
    if not _well_formed(entry):
        return False
    age = now - float(entry["measured"])
    tested = max(int(t) for t in entry["seconds"])
    if not 0 <= age <= MAX_AGE_S:
        return False
    if not entry.get("quiet", False) and age > RETRY_BUSY_S:
        return False
    return tested >= up_to or age <= RETRY_BUSY_S  # more free cores than were tested: time them (not too often)


_MEMO: dict[str, dict] = {}
_PROBE_LOCK = threading.Lock()


def best_threads(model: nn.Module, rows: int, up_to: int, *, refresh: bool = False, steps: int | None = None) -> int:
    """The measured best thread count (<= up_to) for a decoding step of `rows` rows through `model`'s weights.
    steps: the request's positions per row, when known; a request guessed shorter than SHORT_S (_guess) never
    pays for a probe: any well-formed entry answers, however old, and with none, one thread (the count that
    cannot be the slow path)."""
    if up_to <= 1:
        return 1
    weights, blocks = _matrices(model)
    if not weights and not (blocks and _lm_decoder(model)):
        return up_to  # nothing to time (no float Linear weights on CPU, no decoder step to run): free cores decide
    short = not refresh and steps is not None and _guess(weights, blocks, rows, steps) < SHORT_S
    key = probe_key(model, weights, rows, blocks)
    path, now = cache_file(), time.time()
    with _PROBE_LOCK:
        entry = _MEMO.get(key)
        if short and _well_formed(entry):
            return _fitting(entry, up_to)  # however old: not even the file is read again
        if refresh or not _usable(entry, up_to, now):
            entry = _cached_entry(path, key, entry)
        if short:
            if not _well_formed(entry):
                return 1
        elif refresh or not _usable(entry, up_to, now):
            entry = _probe(model, rows, up_to, path, key, now)
        _MEMO[key] = entry
    return _fitting(entry, up_to)


def _cached_entry(path: Path, key: str, memo):
    """The file's entry for `key` (a malformed one warned about and dropped); the memo's where the file has none."""
    entry = _read_cache(path).get(key)
    if entry is not None and not _well_formed(entry):
        warn_cache(f"{path}: the entry for this model's decoding step is not a thread count with finite "
                   "timings; ignored, measured again")
        entry = None
    return memo if entry is None and _well_formed(memo) else entry


class StandIns(RuntimeError):
    """The probe's first step ran torch's own operators in place of attnlab kernels that a detached build is still
    making (a user's first `attnlab generate`: layers/kernel_build.py, DEFER)."""


def _no_stand_ins() -> None:
    """Raise StandIns when a forward of this process has run torch's stand-ins for kernels still being built
    (kernel_build.DEFERRED): nothing after it is worth timing."""
    if kernel_build.DEFERRED:
        raise StandIns(sorted(set(kernel_build.DEFERRED)))


def _probe(model: nn.Module, rows: int, up_to: int, path: Path, key: str, now: float) -> dict:
    """Time every count up to `up_to`, keep the fastest (ties to fewer threads) and write the entry. Where the step
    runs stand-ins for kernels still being built, nothing is timed or written: timing them cost a quiet machine's
    first run 5 s of its 8 tokens' 7 s, and would tell later runs, which have the kernels, nothing true; this
    run takes every count it may (`up_to`) and the next run measures."""
    counts = sorted({t for t in (1, 2, 4, 8, 16, 32, 64) if t < up_to} | {up_to})
    try:
        seconds = time_decode(model, rows, counts)
    except StandIns:
        return {"best": up_to, "seconds": {str(up_to): 0.0}, "measured": now, "quiet": False}
    best = counts[0]
    for t in counts[1:]:
        if seconds[t] * GAIN < seconds[best]:
            best = t
    quiet = free_cores() + ROUND_UP >= up_to  # nobody took the cores while it was timed
    entry = {"best": best, "seconds": {str(t): s for t, s in seconds.items()}, "measured": now, "quiet": quiet}
    _write_cache(path, key, entry)
    return entry


def _fitting(entry: dict, up_to: int) -> int:
    """The entry's best count, or where it was tested with more threads than are free now, the best of those that
    fit."""
    best = int(entry["best"])
    if best > up_to:
        fitting = {int(t): s for t, s in entry["seconds"].items() if int(t) <= up_to}
        best = min(fitting, key=lambda t: (fitting[t], t)) if fitting else 1
    return max(1, best)


def request_seconds(model: nn.Module, rows: int, steps: int) -> float:
    """A deliberately slow guess at a generation's time, before anything is timed (see _guess)."""
    return _guess(*_matrices(model), rows, steps)


def _guess(weights: dict, blocks: dict, rows: int, steps: int) -> float:
    """`steps` positions (prompt + new tokens, each counted as a step) of `rows` rows, each streaming every weight
    matrix once (ELEMENTS_PER_S) plus MATRIX_S of dispatch per matrix. It only has to tell a 25 ms request on
    gpt-char (guess: 79 ms for 4 + 56 positions) from a GPT-2-sized one (guess: 0.13 s a step): a request guessed
    shorter than SHORT_S is short. Guessing too slow costs a short request a probe once; guessing too fast would
    run a long one unprobed at one thread, so the guess errs slow."""
    shapes = [(o * i, n) for (o, i), (_, n) in weights.items()] + [(o * i, n) for (o, i, _), n in blocks.items()]
    elements = sum(size * n for size, n in shapes)
    matrices = sum(n for _, n in shapes)
    return max(1, int(steps)) * (max(1, int(rows)) * elements / ELEMENTS_PER_S + matrices * MATRIX_S)


# ------------------------------------------------------------------------------------------ the policy
def choose(requested=None, *, model: nn.Module | None = None, rows: int | None = None,
           cap: int | None = None, window: float = WINDOW_S, steps: int | None = None) -> int:
    """Threads for the work about to run: `requested` (a positive integer) as given; otherwise `cap` (default:
    the caller's torch.get_num_threads()), lowered to the cores free now and, for a decoding step of `rows`
    rows through `model`, to the count measured best for that shape. 0 / None / 'auto' ask for the policy.
    window: see free_cores. steps: the positions each row of the request will run (prompt + new tokens), when
    known: a request guessed shorter than SHORT_S (request_seconds) pays for no measuring. The 30 ms sample of
    other processes (when no snapshot is recent) and the 0.25-2 s probe took longer than a 56-token gpt-char
    generation (25 ms) itself; such a request waits for neither: with no recent snapshot, or no probe on file for
    its shape, it runs at one thread (the count that cannot be the slow path: a second thread gains a small model
    little and loses it 2x and more on a busy machine), and the snapshot it took starts the next one's window."""
    explicit = check_threads(requested)
    if explicit:
        return explicit
    cap = min(torch.get_num_threads() if cap is None else cap, allowed_cores())
    if cap <= 1:
        return 1  # nothing to lower (OMP_NUM_THREADS=1, one core): no sampling, no probe
    free = None
    if steps is not None and model is not None and rows is not None and window > 0:
        free = recent_free_cores(window)  # never waits: free_cores' own answer whenever a snapshot is recent
        if free is None and request_seconds(model, rows, steps) < SHORT_S:
            return 1  # too short to wait for a sample: the count that cannot be the slow path
    if free is None:
        free = free_cores(window)
    limit = max(1, min(cap, int(free + ROUND_UP)))
    if limit == 1 or model is None or rows is None or rows > MAX_DECODE_ROWS:
        return limit
    return min(limit, best_threads(model, rows, limit, steps=steps))
