"""Compile and load attnlab's C++ kernels from a folder only this user can write; say once why one is missing.

Why this module (and not torch._inductor's code cache, which built the kernels before): that cache lives in
`torchinductor_$USER` in the system's temporary folder, and its precompiled header in
`torchinductor_$USER/precompiled_headers` there even when TORCHINDUCTOR_CACHE_DIR points elsewhere. The names are
predictable and torch does not check who made the folders: another local user who creates them first (mode 0777)
can plant a shared library at the kernel's hashed name (loaded, so it runs as the victim) or a header (compiled
into the victim's kernel). Each build also left a 155 MB `.gch` there.

What this module does instead:
- The kernels are plain C++ (<immintrin.h>, <cstdint>) plus a few lines of CPython binding (Python.h, from this
  Python's own installation): no torch headers, nothing precompiled, nothing from a temporary folder. The
  compiler reads the source on its stdin and writes the extension module straight into the private folder,
  which is imported from there by its path.
- The private folder is `<cache>/kernels`, cache = $ATTNLAB_CACHE_DIR or ~/.cache/attnlab (what the matmul peak
  and thread probes use), made with mode 0700. Before every build and every load each path component is checked
  with lstat: `<cache>` and `kernels` must be real directories (not symbolic links) owned by this user and
  writable by nobody else; the folders above `<cache>` (after resolving links) must belong to this user or root
  and be writable by nobody else unless sticky (as /tmp is); the library must be a regular file of this user's
  that nobody else can write.
- A folder that fails is refused with one warning naming it and why, and the kernel is built in a fresh
  `tempfile.mkdtemp` folder (0700, an unguessable name) that is deleted as soon as the library is loaded.
- A kernel that cannot run (no AVX512-VNNI, no compiler, a failed build, ATTNLAB_INT8_KERNEL=fbgemm) is said
  once per process, in one line with the reason (`warn_unavailable`); the layers then take their fallbacks.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
import warnings
from pathlib import Path

# -O3: the kernels' loops; -fno-strict-aliasing: they read 4 bytes of an int8 array as one int32; -pthread: their
# output blocks go to POOL's helper threads (no OpenMP: see POOL); no -march=native:
# each kernel names the instruction sets it needs in a `#pragma GCC target`, and a cache in a home folder may be
# shared by machines with different CPUs
FLAGS = ("-O3", "-std=c++17", "-shared", "-fPIC", "-pthread", "-fno-strict-aliasing", "-pipe")
VERSION = 2  # part of every library's name: bump when the calling convention of the kernels changes
# DEFER[0] (set by `attnlab generate`, the process's own command): a library not built yet is built by a detached
# compiler at nice 19 for later runs, and load() raises Deferred at once: this run takes the operators torch has
# (SmolLM2's 8 tokens: ~0.9 s of CPU instead of ~0.1 s, where the five kernels' builds take ~6-18 s of waiting)
DEFER = [False]
DEFERRED: list[str] = []  # the kernels this process left to a detached build (the command says so in one line)
# HOLD[0] (also `attnlab generate`): the detached builds start when the command has given its tokens
# (start_held), not when load() first asks: even at nice 19, with their group lowered, seven compilers starting
# beside a first run took ~0.5 s of its cores (it waited that long for one: first-run-2026-12-07/quiet.log)
HOLD = [False]
HELD: list[tuple] = []  # (compiler, source, library, extra flags) of the builds held until start_held()
STALE_S = 3600.0  # a detached build's marker this old is taken over even when its process id names a live process
#                   (the id may have been reused): nice 19 on a busy machine may hold a build back for many minutes
STARTING_S = 60.0  # a marker without a process id this old was left by a process killed while starting its builder


class Deferred(RuntimeError):
    """load() under DEFER: the library is being built apart; this process runs without it."""


# Each kernel's output blocks are shared by the calling thread and at most threads - 1 persistent helper threads (one
# small pool for the process, shared by every kernel library, started on first use, asleep when idle). Why not OpenMP
# (what the kernels used before): its parallel region ends in a barrier that waits for every thread of the team, and
# libgomp's waiting thread spins: on a loaded machine a helper that is not scheduled holds the caller at the barrier
# while the caller's spinning takes the core the helper needs. Measured (SmolLM2's Q8_0 head, 49152 x 576, load ~7 on 2
# cores): 1.5 ms at 1 thread, 7.9 ms at 2, with 7.9 ms of CPU. Here the blocks are claimed one at a time from an atomic
# counter, and the caller claims too: a helper that is not running claims nothing and the caller does every block
# itself; the caller waits only for blocks a helper has claimed and is working on (one block: a few microseconds) and
# for helpers to leave the job. Correctness never depends on a helper (after a fork there are none, and the caller does
# the whole job).
POOL = r"""
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <immintrin.h>
namespace attnlab_pool {
struct Pool {
    std::mutex owner;      // held by the one caller whose job the helpers serve (run: try_lock)
    std::mutex m;
    std::condition_variable wake, left;
    void (*fn)(void*, int64_t) = nullptr;
    void* ctx = nullptr;
    int64_t n = 0;
    int helpers = 0;       // wanted for this job
    int started = 0;       // helper threads made (ids 0 .. started - 1)
    std::atomic<int> inside{0};  // helpers inside the current job (changed under m, watched without it)
    uint64_t job = 0;      // bumped for every job
    bool open = false;     // a job is on
    std::atomic<uint64_t> ends{0};  // blocks claimed: from the back << 32 | from the front (see claim)
    std::atomic<int64_t> done{0};
    std::atomic<uint64_t> posted{0};  // job, readable without the lock: what a spinning helper watches
};
// After a job a helper watches for the next one for up to SPIN_NS before it sleeps: a decoding step runs a product
// every few tens (compiled) to a few hundred (eager) microseconds, and waking a sleeping thread (a futex) costs
// about as much as a small product, so with sleeping helpers two threads were no faster than one on SmolLM2's
// block matrices. Timed by the clock, not by a count of pauses: a pause takes 11 ns on a Sapphire Rapids and
// several times that on other CPUs. Measured there (eager SmolLM2 steps, torch at one thread, kernels at two, vs
// one thread): 2048 pauses (~22 us) gained nothing, ~90 us 1.17x, ~360 us 1.26x (bench/RESULTS.md, 2026-11-28).
static constexpr int64_t SPIN_NS = 400000;
// Never destroyed: at exit a static Pool's condition_variable destructor (pthread_cond_destroy) waits for the
// helpers asleep in it, which never wake, and the process hangs after main returns. Leaked on purpose; the
// detached helpers end with the process.
// One pool for the process, not one per library: with GCC an inline variable is a GNU "unique" symbol, which the
// dynamic loader binds to a single object across every library that defines it (each kernel library holds this
// same text), so the products', the head's and the attention's jobs share one set of helpers instead of each
// library's helper spinning for a core another library's job needs. A compiler without such symbols (clang) gives
// each library its own pool, as before: the same answers, only less sharing.
inline Pool& pool = *new Pool();
// The next block for a thread that takes blocks from the front (0, 1, ...) or from the back (n - 1, n - 2, ...),
// false when none is left. Why two ends: at two threads each thread then reads one sequential stream through the
// weights, as a split into halves would, and still takes whatever the other leaves (a helper that is not
// scheduled claims nothing). With one counter the two threads took alternate blocks (an output block of SmolLM2's
// matrices is 20-60 KB), and each thread's stream jumped a block ahead after every block: SmolLM2's second thread
// added 0.89-1.07x to its decoding rate, from the two ends 1.04-1.29x; two threads decode 1.11x (Q4_1) and 1.15x
// (Q4_K_M) as fast as before (`python -m attnlab.benchmarks.two_trees --before TREE --rounds 6`, fresh processes in
// turn, 2-core AMD EPYC, 2026-12-07: bench/results/pool-ends-2026-12-07/two-trees-smollm2.log).
static inline bool claim(bool back, int64_t& i) {
    uint64_t e = pool.ends.load(std::memory_order_relaxed);
    for (;;) {
        const int64_t front = (int64_t)(e & 0xffffffffu), behind = (int64_t)(e >> 32);
        if (front + behind >= pool.n) return false;
        if (pool.ends.compare_exchange_weak(e, e + (back ? (uint64_t)1 << 32 : 1), std::memory_order_relaxed)) {
            i = back ? pool.n - 1 - behind : front;
            return true;
        }
    }
}
static void work(bool back) {
    for (int64_t i; claim(back, i);) {
        pool.fn(pool.ctx, i);
        pool.done.fetch_add(1, std::memory_order_release);
    }
}
static void helper(int id) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(pool.m);
    for (;;) {
        if (!(pool.open && pool.job != seen)) {  // watch for the next job a while (the decision stays under the lock)
            lock.unlock();
            const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(SPIN_NS);
            for (int spin = 1; pool.posted.load(std::memory_order_acquire) == seen; ++spin) {
                _mm_pause();
                if (spin % 64 == 0 && std::chrono::steady_clock::now() >= until) break;
            }
            lock.lock();
        }
        pool.wake.wait(lock, [&] { return pool.open && pool.job != seen && id < pool.helpers; });
        seen = pool.job;
        pool.inside.fetch_add(1, std::memory_order_relaxed);
        lock.unlock();
        work(id % 2 == 0);  // the first helper from the back, the caller from the front, and so on alternately
        lock.lock();
        // the last one out wakes the caller (no system call unless it sleeps: it watches first, see run)
        if (pool.inside.fetch_sub(1, std::memory_order_release) == 1) pool.left.notify_all();
    }
}
// fn(ctx, i) for i in 0 .. n - 1 on the caller and up to threads - 1 helpers. One caller at a time owns the
// helpers: another OS thread calling while a job is on (two explorer requests, two Python threads) does its whole
// job alone instead of waiting, since the pool's fields describe one job (two at once crashed the process).
static void run(void (*fn)(void*, int64_t), void* ctx, int64_t n, int64_t threads) {
    std::unique_lock<std::mutex> owning(pool.owner, std::defer_lock);
    if (threads <= 1 || n <= 1 || n > INT32_MAX || !owning.try_lock()) {  // (claim counts in 32 bits)
        for (int64_t i = 0; i < n; ++i) fn(ctx, i);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(pool.m);
        const int want = (int)(threads - 1 < 63 ? threads - 1 : 63);
        try {
            while (pool.started < want) { std::thread(helper, pool.started).detach(); ++pool.started; }
        } catch (...) {}  // no thread to be had: the caller does the blocks alone
        pool.fn = fn; pool.ctx = ctx; pool.n = n; pool.helpers = want;
        pool.ends.store(0, std::memory_order_relaxed);
        pool.done.store(0, std::memory_order_relaxed);
        ++pool.job;
        pool.open = true;
        pool.posted.store(pool.job, std::memory_order_release);
    }
    pool.wake.notify_all();
    work(false);
    for (int spin = 0; pool.done.load(std::memory_order_acquire) < n; ++spin) {  // blocks helpers are on
        if (spin < 4096) _mm_pause(); else std::this_thread::yield();
    }
    // the helpers leaving work(), a few hundred nanoseconds after the last block: watched a moment first, then
    // slept on. Always asleep (as before), the caller paid a futex wake-up per product: a 32-row product of a 576 x
    // 576 Q4_0 matrix took 41.5 us at two threads against 32.7 with the watch (59 at one; AMD EPYC Zen 5,
    // 2026-11-28). Not watched without end: on a loaded machine a helper that lost its core leaves only when it
    // gets one back, which a caller spinning on the other core would delay.
    for (int spin = 0; spin < 2048 && pool.inside.load(std::memory_order_acquire) != 0; ++spin) _mm_pause();
    std::unique_lock<std::mutex> lock(pool.m);
    pool.open = false;  // no helper joins after this
    pool.left.wait(lock, [] { return pool.inside.load(std::memory_order_acquire) == 0; });  // nobody reads fn / ctx
}
template <typename F> static void for_blocks(int64_t n, int64_t threads, F&& body) {
    run([](void* c, int64_t i) { (*static_cast<F*>(c))(i); }, (void*)&body, n, threads);
}
}  // namespace attnlab_pool
"""


class KernelWarning(UserWarning):
    """A kernel is not available (the product falls back), or the kernel folder was refused."""


# ------------------------------------------------------------------------------------------ messages
@functools.cache
def warn_unavailable(reason: str, fallback: str) -> None:
    """The one line that says a kernel is not available, at most once per process for each reason."""
    warnings.warn(f"attnlab: kernel not available: {reason}; {fallback}", KernelWarning, stacklevel=3)


@functools.cache
def _warn_refused(why: str) -> None:
    warnings.warn(f"attnlab: not building kernels there: {why}; building in a new private temporary folder "
                  "instead", KernelWarning, stacklevel=4)


# ------------------------------------------------------------------------------------- the private folder
def cache_root() -> Path:
    root = os.environ.get("ATTNLAB_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "attnlab"


def kernel_dir() -> Path:
    return cache_root() / "kernels"


@functools.cache
def private_inductor_cache() -> Path:
    """Point torch.compile's inductor at a folder only this user can write; call before anything compiles.

    Why: inductor writes the C++ it generates, and the shared libraries it then loads, to `torchinductor_$USER`
    in the system's temporary folder (the hole this module's docstring describes), and its precompiled headers
    there even when TORCHINDUCTOR_CACHE_DIR points elsewhere. So: no precompiled headers, and
    TORCHINDUCTOR_CACHE_DIR = `<cache>/inductor`, checked like the kernels' folder (a fresh private temporary
    folder, with one warning, when it fails). A TORCHINDUCTOR_CACHE_DIR the user set is theirs and is kept; the
    default that inductor writes into the variable itself counts as unset."""
    import torch._inductor.config as inductor_config
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    inductor_config.cpp_cache_precompile_headers = False
    current = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if current and os.path.abspath(current) != os.path.abspath(default_cache_dir()):
        return Path(current)
    directory = cache_root() / "inductor"
    problem = make_private_dir(directory)
    if problem:
        _warn_refused(problem)
        directory = Path(tempfile.mkdtemp(prefix="attnlab-inductor-"))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(directory)
    return directory


def torch_compile(target, **options):
    """torch.compile(target, **options) behind private_inductor_cache(): the one way attnlab compiles a model or
    a function (tests/reliability/test_private_paths.py fails on any other call of torch.compile in the package).

    Why one entry point: a call that forgot private_inductor_cache() first would let inductor build in, and load
    shared libraries from, `torchinductor_$USER` in the shared temporary folder, which another user can create
    first and fill. The folder is set now, before torch.compile returns: inductor reads it when the first call
    compiles, so it holds however late that call comes."""
    import torch

    private_inductor_cache()
    return torch.compile(target, **options)


def _problem(path: Path, info: os.stat_result, ours: bool) -> str | None:
    """Why `path` (lstat `info`) is not safe to build in or load from, or None. ours: a folder attnlab makes or
    owns (this user's, nobody else may write); else an ancestor (this user's or root's, sticky if shared)."""
    uid = os.geteuid()
    if stat.S_ISLNK(info.st_mode):
        return f"{path} is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a directory"
    owners = (uid,) if ours else (uid, 0)
    if info.st_uid not in owners:
        return f"{path} belongs to user id {info.st_uid}, not to this user ({uid})"
    if info.st_mode & 0o022 and (ours or not info.st_mode & stat.S_ISVTX):
        return f"{path} can be written by other users (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def _chain(directory: Path) -> list[tuple[Path, bool]]:
    """(folder, ours) from the root down to `directory`: the folders above its parent after resolving links (as
    ancestors), then its parent (<cache>) and itself as this user's own (lstat: a link there is refused)."""
    directory = Path(os.path.abspath(directory))
    above = Path(os.path.realpath(directory.parent.parent))
    return [(p, False) for p in reversed((above, *above.parents))] + [(directory.parent, True), (directory, True)]


def check_private_dir(directory: Path) -> str | None:
    """Why `directory` is not a folder only this user can write, or None: the whole chain from the root down is
    checked, because whoever can write a folder above can rename `directory` away and put their own in its place.
    `directory` and its parent must be this user's real folders (not links) that nobody else can write; the
    folders above, this user's or root's and writable by nobody else unless sticky (as /tmp is). The kernel and
    inductor folders, the token store and the llama.cpp build all go through this check (or make_private_dir)."""
    try:
        for path, ours in _chain(directory):
            problem = _problem(path, os.lstat(path), ours)
            if problem:
                return problem
    except OSError as e:
        return f"{directory} cannot be checked ({e.strerror or e})"
    return None


def make_private_dir(directory: Path) -> str | None:
    """check_private_dir(directory), creating the missing folders on the way with mode 0700 (a umask can only
    remove bits): each folder is checked before anything is made inside it. Why not, or None when the whole
    chain is safe (then `directory` exists)."""
    for path, ours in _chain(directory):
        try:
            if not os.path.lexists(path):
                os.mkdir(path, 0o700)
        except FileExistsError:
            pass  # already there (or made by a concurrent process): judged below like any other
        except OSError as e:
            return f"{path} cannot be created ({e.strerror or e})"
        try:
            problem = _problem(path, os.lstat(path), ours)
        except OSError as e:
            return f"{path} cannot be checked ({e.strerror or e})"
        if problem:
            return problem
    return None


def check_file(path: Path) -> str | None:
    """Why `path` (a library to load, a binary to run) is not a regular file of this user's that nobody else can
    write, or None."""
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        return f"{path} is not a regular file"
    if info.st_uid != os.geteuid() or info.st_mode & 0o022:
        return f"{path} belongs to another user or can be written by one"
    return None


# ------------------------------------------------------------------------------------ compile and load
def compiler() -> str | None:
    """The C++ compiler: $CXX, else g++ / c++ / clang++ on PATH (the user's own environment)."""
    for name in filter(None, (os.environ.get("CXX"), "g++", "c++", "clang++")):
        found = shutil.which(name)
        if found:
            return found
    return None


def _compile(cxx: str, source: str, lib: Path, what: str, kept: bool = True,
             extra: tuple[str, ...] = ()) -> None:
    """source -> the shared library `lib`, written as a temporary name in lib's folder and renamed (a concurrent
    process never loads half a file). The compiler's own temporary files go to that folder too.

    A build takes seconds (tens on a busy machine) while the user sees nothing else, so it says what it does on
    one stderr line, where it keeps it and how long it took: `kept` (in the cache folder) builds happen once per
    kernel and CPU, and a later process that loads the kept library says nothing. What the command printed
    before goes out first (stdout flushed), so the line comes where the wait is."""
    once = f"once, kept in {lib.parent} for later runs" if kept else "in a temporary folder"
    try:
        sys.stdout.flush()
    except (AttributeError, OSError, ValueError):  # no stdout, or a closed one: nothing to put first
        pass
    print(f"attnlab: building the {what} kernel for this CPU ({once}) ...", end="", file=sys.stderr, flush=True)
    start = time.perf_counter()
    try:
        _run_compiler(cxx, source, lib, extra)
    finally:
        print(f" {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)


def lowest_priority() -> None:
    """This process, and every process it starts, at the lowest CPU priority: nice 19, and, for a process that leads
    its own session (a detached builder), its session's scheduling group too.

    Why both: Linux's autogroup (on by default: /proc/sys/kernel/sched_autogroup_enabled) puts each session in a
    group of its own and shares the CPU between groups first, so nice only orders the processes inside one group.
    A builder started in a session of its own (start_new_session, so that Ctrl-C leaves it running) at nice 19 alone
    took a core's full share from the run that started it: on the shared 2-core AMD EPYC (Zen 5), a 0.6 s loop took
    2.5 s beside four such processes and 1.3 s once their group was at nice 19 as well (2026-12-07). Writing the
    group's nice is allowed for raising it, and leaves a process that is not its session's leader (a shell's group)
    alone."""
    try:
        os.nice(19)
    except OSError:
        pass
    if os.getsid(0) == os.getpid():
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write("19")
        except OSError:  # no autogroup (another OS, a kernel without it): nice alone
            pass


# the detached build: lowest priority (lowest_priority's lines: this runs without attnlab on its path), the compiler
# on the source file, the library renamed into place when whole; the source, a partial library and the marker
# removed whatever happened
_APART = """
import json, os, subprocess, sys
os.nice(19)
try:
    with open("/proc/self/autogroup", "w") as f:
        f.write("19")
except OSError:
    pass
for marker, source, tmp, lib, *command in json.loads(sys.argv[1]):  # one library after another
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, cwd=os.path.dirname(lib),
                              env=dict(os.environ, TMPDIR=os.path.dirname(lib)))
        if done.returncode == 0:
            os.chmod(tmp, 0o700)
            os.replace(tmp, lib)
    finally:
        for path in (source, tmp, marker):
            if os.path.lexists(path):
                os.unlink(path)
"""


def start_held() -> int:
    """Start the detached builds held under HOLD (once each; HOLD ends) in ONE detached process that builds them
    one after another: `attnlab generate` calls it when its tokens are out, whatever way the command ends (seven
    processes started at the end cost the command ~0.15 s of its exit). Returns how many were held."""
    HOLD[0] = False
    held, HELD[:] = list(dict.fromkeys(HELD)), []
    jobs = [job for job in (_prepare_apart(*h) for h in held) if job is not None]
    if jobs:
        _launch_apart(jobs)
    return len(held)


def _compile_apart(cxx: str, source: str, lib: Path, extra: tuple[str, ...] = ()) -> None:
    """Start the build of `lib` in a detached process at nice 19 (its own session, no stream of ours held open),
    unless one is at work (its marker `.<lib>.building`: at_work); under HOLD only note it for start_held().
    Every file it writes is in lib's private folder, checked by the caller; the library appears there whole
    (renamed) or not at all."""
    if HOLD[0]:
        HELD.append((cxx, source, lib, tuple(extra)))
        return
    job = _prepare_apart(cxx, source, lib, extra)
    if job is not None:
        _launch_apart([job])


def _prepare_apart(cxx: str, source: str, lib: Path, extra: tuple[str, ...] = ()) -> list[str] | None:
    """Take `lib`'s marker and write its source beside it: the job [marker, source, partial library, final
    library, *compiler command] of a detached build, or None when a build of it is at work already."""
    marker = lib.parent / f".{lib.stem}.building"
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0)
    try:
        os.close(os.open(marker, flags, 0o600))
    except FileExistsError:
        if at_work(marker):
            return None
        try:
            marker.unlink()
            os.close(os.open(marker, flags, 0o600))
        except OSError:
            return None
    fd, tmp = tempfile.mkstemp(prefix=f".{lib.stem}-", suffix=".so", dir=lib.parent)
    os.close(fd)
    fd, src = tempfile.mkstemp(prefix=f".{lib.stem}-", suffix=".cc", dir=lib.parent)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    return [str(marker), src, tmp, str(lib), cxx, *FLAGS, "-I", _include(), "-x", "c++", src, *extra, "-o", tmp]


def _launch_apart(jobs: list[list[str]]) -> None:
    """One detached process at nice 19 builds `jobs` in turn; each job's marker then holds its process id."""
    try:
        child = subprocess.Popen([sys.executable, "-c", _APART, json.dumps(jobs)],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True, close_fds=True)
        for job in jobs:
            Path(job[0]).write_text(str(child.pid))  # who builds it (removed by the build itself when it ends)
    except OSError:
        for job in jobs:
            for path in job[:3]:
                Path(path).unlink(missing_ok=True)


def alive(pid: int) -> bool:
    """Whether `pid` names a process of this user's that is still running."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or the id now belongs to another user's process
        return False
    return True


def at_work(marker: Path, stale_s: float = STALE_S) -> bool:
    """Whether the detached builder `marker` names is still at work: the process id it holds is alive (and the
    marker younger than `stale_s`), or it holds none yet and is younger than STARTING_S (its starter is starting
    it). Why the id and not the marker's age alone: at nice 19 a busy machine may hold a build back for longer
    than any fixed age, and a second build of the same library would only compete with the first."""
    try:
        text = marker.read_text().strip()
        age = time.time() - marker.lstat().st_mtime
    except OSError:
        return False
    if age >= stale_s:
        return False
    return alive(int(text)) if text.isdigit() else age < STARTING_S


COMPILE_TIMEOUT_S = 300  # one compiler run, at most; a build stopped here is a failed build (RuntimeError)


def _run_compiler(cxx: str, source: str, lib: Path, extra: tuple[str, ...] = ()) -> None:
    """extra: flags after the source (a later -std wins; -L / -l link after it). A compiler that fails or runs past
    COMPILE_TIMEOUT_S raises RuntimeError, so that every caller's fallback (torch's own operators) catches it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{lib.stem}-", suffix=".so", dir=lib.parent)
    os.close(fd)
    try:
        env = dict(os.environ, TMPDIR=str(lib.parent))
        try:
            done = subprocess.run([cxx, *FLAGS, "-I", _include(), "-x", "c++", "-", *extra, "-o", tmp],
                                  input=source.encode(),
                                  env=env, capture_output=True, timeout=COMPILE_TIMEOUT_S, cwd=lib.parent)
        except subprocess.TimeoutExpired:  # a RuntimeError, as load() promises: its callers fall back on that
            raise RuntimeError(f"{Path(cxx).name} ran past {COMPILE_TIMEOUT_S} s (a busy machine?) and was stopped; "
                               "the next run builds again") from None
        if done.returncode != 0:
            lines = done.stderr.decode(errors="replace").strip().splitlines()
            error = next((x for x in lines if "error" in x), lines[-1] if lines else "")
            raise RuntimeError(f"{Path(cxx).name} exited with {done.returncode}: {error.strip()[:200]}")
        os.chmod(tmp, 0o700)
        os.replace(tmp, lib)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


_BINDING = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <tuple>
#include <type_traits>
#include <utility>
// One Python function, call(*args), for FUNCTION: each argument a Python int (an address for a pointer
// parameter, e.g. tensor.data_ptr(), else the integer), converted after the parameter's type; the kernel's int
// result returned. METH_FASTCALL: ~0.1 us per call, where ctypes took ~2 us (a GPT-2 step makes 49 calls).
template <typename T> static T attnlab_arg(PyObject* o) {
    if constexpr (std::is_pointer_v<T>) return reinterpret_cast<T>(PyLong_AsVoidPtr(o));
    else return static_cast<T>(PyLong_AsLongLong(o));
}
template <typename... A, size_t... I>
static PyObject* attnlab_invoke(int (*f)(A...), PyObject* const* args, Py_ssize_t nargs, std::index_sequence<I...>) {
    if (nargs != (Py_ssize_t)sizeof...(A)) {
        PyErr_Format(PyExc_TypeError, "the kernel takes %d arguments, got %zd", (int)sizeof...(A), nargs);
        return NULL;
    }
    std::tuple<A...> a{attnlab_arg<A>(args[I])...};  // braces: converted left to right, all before the call
    if (PyErr_Occurred()) return NULL;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = std::apply(f, a);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(r);
}
template <typename... A>
static PyObject* attnlab_call(int (*f)(A...), PyObject* const* args, Py_ssize_t nargs) {
    return attnlab_invoke(f, args, nargs, std::index_sequence_for<A...>{});
}
static PyObject* call(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return attnlab_call(FUNCTION, args, nargs);
}
// address(): FUNCTION's own address, for C++ that calls the kernel without Python (layers/kernel_ops_native.py)
static PyObject* address(PyObject*, PyObject*) { return PyLong_FromVoidPtr((void*)&FUNCTION); }
static PyMethodDef methods[] = {{"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL, NULL},
                                {"address", (PyCFunction)address, METH_NOARGS, NULL},
                                {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "MODULE", NULL, -1, methods};
PyMODINIT_FUNC PyInit_MODULE(void) { return PyModule_Create(&module); }
"""


def _include() -> str:
    """Python.h's folder: part of this Python installation (as trusted as the interpreter running this)."""
    return sysconfig.get_paths()["include"]


def _module_name(name: str, cxx: str, source: str, extra: tuple[str, ...] = ()) -> str:
    key = hashlib.sha256("\0".join((str(VERSION), os.path.realpath(cxx), _include(), sys.version, *FLAGS, *extra,
                                     source)).encode()).hexdigest()
    return f"attnlab_{name}_{key[:20]}"


def _import(module: str, lib: Path):
    spec = importlib.util.spec_from_loader(module, importlib.machinery.ExtensionFileLoader(module, str(lib)))
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded.call


def openmp_runtimes() -> set[str]:
    """The OpenMP runtimes (libgomp / libiomp / libomp files) mapped into this process (Linux; empty elsewhere).

    Why: the kernels bring no OpenMP runtime of their own (their threads are POOL's), so only torch's is mapped.
    Were a second runtime mapped (a kernel built with the system compiler's -fopenmp under another soname), two
    pools of spinning threads would fight over the cores and two threads would run slower than one; load() says
    so once."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[-1].strip() for line in f if "/lib" in line}
    except OSError:
        return set()
    return {p for p in paths if Path(p).name.split(".so")[0] in ("libgomp", "libiomp5", "libomp")}


@functools.cache
def _check_one_openmp() -> None:
    runtimes = openmp_runtimes()
    if len(runtimes) > 1:
        warnings.warn(f"attnlab: {len(runtimes)} OpenMP runtimes are loaded ({', '.join(sorted(runtimes))}): the "
                      "kernels' threads and torch's are two pools; use one thread (torch.set_num_threads(1)) or "
                      "load torch's runtime first", KernelWarning, stacklevel=3)


def _library(name: str, cxx: str, source: str, function: str, extra: tuple[str, ...]) -> tuple[str, str]:
    """(the library's module name, the full source with its binding) for load() and built()."""
    module = _module_name(name, cxx, source, extra)
    return module, source + _BINDING.replace("FUNCTION", function).replace("MODULE", module)


def built(name: str, source: str, function: str, extra: tuple[str, ...] = ()) -> bool:
    """Whether load() with these arguments would find its library already built in the private folder, so that no
    compiler runs (a caller that must not wait for one asks first: generation/compiled.py)."""
    cxx = compiler()
    if cxx is None:
        return False
    module, _ = _library(name, cxx, source, function, extra)
    return os.path.lexists(kernel_dir() / f"{module}.so")


def load(name: str, source: str, function: str, extra: tuple[str, ...] = ()):
    """A Python callable running `source`'s extern "C" `function` (int parameters and pointers, an int result;
    call it with ints: tensor.data_ptr() for a pointer; `call.__self__.address()` is the function's address):
    compiled into the private folder unless it is there already; the folder is checked before the build and again
    before the load. `extra`: more compiler flags, after the source (include folders, libraries to link). Raises
    RuntimeError (no compiler, a failed build) or OSError with a one-line reason."""
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler found (set CXX or install g++)")
    module, full = _library(name, cxx, source, function, extra)
    directory = kernel_dir()
    refused = make_private_dir(directory)
    if refused is None:
        lib = directory / f"{module}.so"
        if not os.path.lexists(lib) and DEFER[0]:
            _compile_apart(cxx, full, lib, extra)
            DEFERRED.append(name)
            raise Deferred(f"the {name} kernel is being built apart for later runs")
        if not os.path.lexists(lib):
            _compile(cxx, full, lib, name, extra=extra)
        refused = check_private_dir(directory) or check_file(lib)
        if refused is None:
            call = _import(module, lib)
            _check_one_openmp()
            return call
    _warn_refused(refused)
    private = Path(tempfile.mkdtemp(prefix="attnlab-kernels-"))  # 0700, a name nobody can guess
    try:
        lib = private / f"{module}.so"
        _compile(cxx, full, lib, name, kept=False, extra=extra)
        call = _import(module, lib)  # mapped: the file can go
        _check_one_openmp()
        return call
    finally:
        shutil.rmtree(private, ignore_errors=True)
