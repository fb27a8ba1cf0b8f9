"""attnlab's C++ kernels are compiled and loaded only from a folder this user alone can write (layers/kernel_build.py).

The attack (issue 23.1): another local user creates the predictable folders first (torch's compile cache
`torchinductor_<victim>` in the temporary folder and its `precompiled_headers`, or a cache folder the victim
names in ATTNLAB_CACHE_DIR) and plants a shared library at the kernel's name (loaded: its code runs as the victim)
or a header (compiled into the kernel). The names are learned the way an attacker learns them: by running the
same attnlab elsewhere and listing what it wrote. Each planted file's code would create a marker file; the
marker must never appear, and the kernels must still work (built in a fresh private folder instead).

Also: folders that are writable by others, belong to someone else or are symbolic links are refused with one
warning and the build goes to a new private folder; a kernel that cannot run says so once, in one line.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pytest

from attnlab.layers import int8_kernel, kernel_build

ROOT = Path(__file__).resolve().parents[2]
_SAY_REFUSED = kernel_build._warn_refused.__wrapped__  # every time, not once per process (for the tests below)
_SAY_UNAVAILABLE = kernel_build.warn_unavailable.__wrapped__
ATTACKER = 54321  # a user id with no account: all the attacker needs is to own files in the temporary folder

# a tiny kernel for the folder checks: compiles in well under a second (only Python.h)
PROBE = 'extern "C" int attnlab_probe(long long a, long long b) { return (int)(a + 2 * b); }'

# the victim: quantize tiny models (int8 and int4; available() builds or loads the Q8_0 kernel), check the products of
# one row against float64 on the decoded weights, and print what ran
VICTIM = r"""
import json, sys, torch, torch.nn.functional as F
import attnlab
from attnlab.layers import int4_kernel, int8_kernel, q8_0_kernel
from attnlab.layers.quantized import QuantizedLinear
torch.manual_seed(0)
config = attnlab.presets["tiny-llama"].replace(d_ff=128)
result = {}
for scheme in ("int8", "int4"):
    model = attnlab.quantize(attnlab.build_model(config).eval(), scheme)
    layer = model.blocks[0].ffn.down
    assert isinstance(layer, QuantizedLinear)
    x = torch.randn(1, layer.in_features)
    with torch.no_grad():
        got = layer(x).double()
        w = layer.weight.double()
        expected = x.double() @ w.T
    step = float(x.abs().max()) / 127 / 254  # the kernels' activation rounding (layers/int8_kernel.py)
    bound = step / 2 * w.abs().sum(1) + 1e-5 * (1 + float(x.abs().max()) * w.abs().sum(1))
    result[scheme] = {"within": bool(((got - expected).abs() <= bound).all()),
                      "rounded": not torch.equal(got, expected)}  # the kernel ran: it rounds x
result["available"] = [int8_kernel.available(), int4_kernel.available(), q8_0_kernel.available()]
print(json.dumps(result))
"""

MALICIOUS_C = r"""
#include <stdio.h>
__attribute__((constructor)) static void attnlab_planted(void) {
    FILE* f = fopen("MARKER", "w");
    if (f) { fputs("planted code ran", f); fclose(f); }
}
"""


def _needs_kernels():
    reason = int8_kernel._pick(int8_kernel.SOURCES)[2] or (None if kernel_build.compiler() else "no C++ compiler")
    if reason:  # any variant (AVX-512 VNNI or AVX2) that runs here will do
        pytest.skip(f"attnlab's kernels cannot run here: {reason}")


def _run(env: dict, script: str = VICTIM, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def _files(folder: Path) -> list[Path]:
    return sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())


# ------------------------------------------------------------------------------------------ two users
@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="switching to a second user id needs root (run as root to test the two-user attack)")
def test_planted_libraries_and_headers_never_run(tmp_path):
    _needs_kernels()
    marker = tmp_path / "marker"
    shared = Path(tempfile.mkdtemp(prefix="attnlab-shared-tmp-", dir="/tmp"))  # a temporary folder like /tmp:
    os.chmod(shared, 0o1777)  # everyone writes, sticky (tmp_path's parents are root's own 0700)
    try:
        # what an attacker learns by running the same attnlab in the victim's setting (names may hash the
        # temporary folder's path): every file it leaves in the temporary folder (torch's compile cache) and in
        # its kernel cache. Then the folder is emptied again, for the attacker to create first.
        scout = _run({"TMPDIR": str(shared), "ATTNLAB_CACHE_DIR": str(shared / "scout-cache")})
        assert scout.returncode == 0, scout.stderr[-2000:]
        user = os.environ.get("USER") or "root"
        planted_tmp = shared / f"torchinductor_{user}"
        planted_cache = shared / "attnlab-cache"  # the victim's ATTNLAB_CACHE_DIR, made first by the attacker
        learned_tmp = _files(planted_tmp) if planted_tmp.exists() else []
        learned_cache = _files(shared / "scout-cache")
        for entry in shared.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

        # the planted code: a library whose loading, or a header whose compilation into a kernel, makes the marker
        evil_c = MALICIOUS_C.replace("MARKER", str(marker))
        evil_so = tmp_path / "evil.so"
        subprocess.run(["gcc", "-shared", "-fPIC", "-x", "c", "-", "-o", str(evil_so)], input=evil_c.encode(),
                       check=True, capture_output=True)
        evil = evil_so.read_bytes()
        pid = os.fork()
        if pid == 0:  # the attacker: another user id, creating the predictable folders first, mode 0777
            try:
                os.setgid(ATTACKER)
                os.setuid(ATTACKER)
                os.umask(0)
                for folder in (planted_tmp, planted_tmp / "precompiled_headers", planted_cache,
                               planted_cache / "kernels"):
                    folder.mkdir(mode=0o777, exist_ok=True)
                for rel in learned_tmp + [Path("precompiled_headers/attnlab.h")]:
                    if rel.suffix not in (".so", ".h"):
                        continue
                    target = planted_tmp / rel
                    target.parent.mkdir(mode=0o777, parents=True, exist_ok=True)
                    target.write_bytes(evil_c.encode() if rel.suffix == ".h" else evil)
                for rel in learned_cache:
                    target = planted_cache / rel
                    target.parent.mkdir(mode=0o777, parents=True, exist_ok=True)
                    target.write_bytes(evil)
                    target.chmod(0o755)
                os._exit(0)
            except BaseException:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert (planted_cache / "kernels").stat().st_uid == ATTACKER

        victim = _run({"TMPDIR": str(shared), "ATTNLAB_CACHE_DIR": str(planted_cache)})
        assert victim.returncode == 0, victim.stderr[-2000:]
        assert not marker.exists(), "planted code ran inside the victim's process"
        assert learned_cache, "the kernels were not built into the cache folder"
        assert not [p for p in learned_tmp if p.suffix in (".gch", ".so", ".h")], learned_tmp  # nothing in tmp
        result = __import__("json").loads(victim.stdout.strip().splitlines()[-1])
        assert result["available"] == [True, True, True]  # the kernels still run ...
        assert all(result[s]["within"] and result[s]["rounded"] for s in ("int8", "int4")), result
        refused = [line for line in victim.stderr.splitlines() if "not building kernels there" in line]
        assert len(refused) == 1 and f"belongs to user id {ATTACKER}" in refused[0], victim.stderr[-2000:]
        # ... built in a private folder that is gone again: nothing of the victim's is left in the shared folder
        leftovers = [p for p in shared.rglob("*") if p.stat().st_uid != ATTACKER]
        assert leftovers == [], leftovers
        assert not [p for p in shared.rglob("*.gch")]
    finally:
        shutil.rmtree(shared, ignore_errors=True)


# ------------------------------------------------------------------------------------ folder checks
def _load(monkeypatch, cache: Path):
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(cache))
    monkeypatch.setattr(kernel_build, "_warn_refused", _SAY_REFUSED)
    if kernel_build.compiler() is None:
        pytest.skip("no C++ compiler here")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call = kernel_build.load("probe", PROBE, "attnlab_probe")
    assert call(3, 4) == 11  # the kernel works wherever it was built
    return [str(w.message) for w in caught if issubclass(w.category, kernel_build.KernelWarning)]


def test_a_private_cache_folder_is_made_0700_and_reused(tmp_path, monkeypatch):
    cache = tmp_path / "new" / "cache"  # two missing levels
    assert _load(monkeypatch, cache) == []
    for folder in (tmp_path / "new", cache, cache / "kernels"):
        info = os.lstat(folder)
        assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.geteuid()
    (lib,) = (cache / "kernels").iterdir()
    assert stat.S_IMODE(lib.stat().st_mode) & 0o022 == 0
    built = lib.stat().st_mtime_ns
    assert _load(monkeypatch, cache) == []
    assert lib.stat().st_mtime_ns == built  # loaded, not compiled again


@pytest.mark.parametrize("case", ["mode 0777", "group-writable kernels", "symbolic link", "another owner"])
def test_unsafe_cache_folders_are_refused_and_the_build_goes_elsewhere(tmp_path, monkeypatch, case):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    if case == "mode 0777":
        cache.chmod(0o777)
        expected = "can be written by other users (mode 0777)"
    elif case == "group-writable kernels":
        (cache / "kernels").mkdir()
        (cache / "kernels").chmod(0o770)
        expected = "can be written by other users (mode 0770)"
    elif case == "symbolic link":
        real, cache = cache, tmp_path / "link"
        cache.symlink_to(real)
        expected = "is a symbolic link"
    else:
        if os.geteuid() != 0:
            pytest.skip("giving a folder to another user needs root")
        os.chown(cache, ATTACKER, ATTACKER)
        expected = f"belongs to user id {ATTACKER}"
    before = _files(tmp_path)
    messages = _load(monkeypatch, cache)
    assert len(messages) == 1 and expected in messages[0] and "new private temporary folder" in messages[0]
    assert _files(tmp_path) == before  # nothing built or left in the refused folder


def test_a_planted_library_in_a_refused_folder_is_not_loaded(tmp_path, monkeypatch):
    """A library already at the kernel's name in a folder others can write is never opened."""
    if kernel_build.compiler() is None:
        pytest.skip("no C++ compiler here")
    marker = tmp_path / "marker"
    evil_so = tmp_path / "evil.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-x", "c", "-", "-o", str(evil_so)],
                   input=MALICIOUS_C.replace("MARKER", str(marker)).encode(), check=True, capture_output=True)
    cache = tmp_path / "cache"
    (cache / "kernels").mkdir(parents=True)
    name = kernel_build._module_name("probe", kernel_build.compiler(), PROBE)
    shutil.copy(evil_so, cache / "kernels" / f"{name}.so")
    (cache / "kernels").chmod(0o777)
    messages = _load(monkeypatch, cache)
    assert len(messages) == 1 and "can be written by other users" in messages[0]
    assert not marker.exists()


# ------------------------------------------------------------------------------ saying it once
SCRIPT_ONCE = r"""
import torch, attnlab
config = attnlab.presets["tiny-llama"].replace(d_ff=128)
for scheme in ("int8", "int4"):
    model = attnlab.quantize(attnlab.build_model(config).eval(), scheme)
    with torch.no_grad():
        for n in (1, 2, 1, 7):
            model(torch.randint(0, 100, (1, n)))
print("done")
"""


@pytest.mark.parametrize("setting,reason", [
    ({"ATTNLAB_INT8_KERNEL": "fbgemm"}, "ATTNLAB_INT8_KERNEL=fbgemm"),
    ({"CXX": "", "PATH": "/nonexistent"}, "no C++ compiler found"),
])
def test_an_unavailable_kernel_is_said_once_in_one_line(tmp_path, setting, reason):
    """Both kernels off, many products on both fallbacks: one line naming the reason and what runs instead."""
    done = _run({**setting, "ATTNLAB_CACHE_DIR": str(tmp_path), "PYTHONWARNINGS": "default"}, SCRIPT_ONCE)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if "kernel not available" in line]
    assert len(lines) == 1, done.stderr[-2000:]
    assert f"kernel not available: {reason}" in lines[0] and "fbgemm" in lines[0]


def test_a_failed_build_is_said_once_with_the_compilers_error(tmp_path, monkeypatch):
    """A kernel whose source does not compile: available() is False, the reason names the compiler's error."""
    if int8_kernel._cpu_reason(int8_kernel.AVX2) or kernel_build.compiler() is None:
        pytest.skip("the kernels cannot run here")
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel_build, "warn_unavailable", _SAY_UNAVAILABLE)
    with pytest.warns(kernel_build.KernelWarning, match=r"kernel not available: building the broken kernel failed: "
                                                        r"RuntimeError: .*exited with 1: .*error"):
        fn, reason = int8_kernel.build("broken", ((int8_kernel.AVX2, 'extern "C" int f(int a) { return a +; }'),), "f",
                                       "fallback")
    assert fn is None and "building the broken kernel failed" in reason


@pytest.fixture
def inductor_env(monkeypatch):
    """private_inductor_cache() run afresh, with inductor's config and TORCHINDUCTOR_CACHE_DIR restored after."""
    import torch._inductor.config as inductor_config

    monkeypatch.setattr(inductor_config, "cpp_cache_precompile_headers", True, raising=False)
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    kernel_build.private_inductor_cache.cache_clear()
    yield inductor_config
    kernel_build.private_inductor_cache.cache_clear()


def test_torch_compile_builds_in_the_private_folder_without_shared_headers(tmp_path, monkeypatch, inductor_env):
    """torch.compile (generate(compile=True), train compile=true) must not build or load inductor's libraries in
    `torchinductor_$USER` under the shared temporary folder: the cache goes to <cache>/inductor (0700) and
    precompiled headers (which inductor puts in the shared folder whatever the variable says) are off."""
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", kernel_build.KernelWarning)
        folder = kernel_build.private_inductor_cache()
    assert folder == tmp_path / "cache" / "inductor"
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(folder)
    assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700
    assert inductor_env.cpp_cache_precompile_headers is False


def test_an_unsafe_inductor_folder_is_refused_for_a_fresh_private_one(tmp_path, monkeypatch, inductor_env):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    cache.chmod(0o777)
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(cache))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel_build._warn_refused.cache_clear()
        folder = kernel_build.private_inductor_cache()
    messages = [str(w.message) for w in caught if issubclass(w.category, kernel_build.KernelWarning)]
    assert len(messages) == 1 and "can be written by other users (mode 0777)" in messages[0]
    assert not (cache / "inductor").exists() and cache not in folder.parents
    assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700 and os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(folder)
    shutil.rmtree(folder)


def test_a_users_own_inductor_folder_is_kept(tmp_path, monkeypatch, inductor_env):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    assert kernel_build.private_inductor_cache() == tmp_path / "mine"
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")


def test_a_build_says_what_it_builds_once_and_how_long_it_took(tmp_path, monkeypatch, capfd):
    """A first kernel build takes seconds (tens on a busy machine) with nothing else on the screen: it says so on
    one stderr line with its duration; loading the kept library later says nothing."""
    cache = tmp_path / "cache"
    assert _load(monkeypatch, cache) == []
    said = capfd.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith("attnlab: building the probe kernel for this CPU (once, kept"), said
    assert said[0].endswith(" s") and float(said[0].split()[-2]) >= 0
    assert _load(monkeypatch, cache) == []
    assert capfd.readouterr().err == ""


def test_a_command_that_must_not_wait_builds_a_missing_kernel_apart(tmp_path, monkeypatch):
    """kernel_build.DEFER (`attnlab generate`, its own command line): a kernel not built yet is built by a detached
    compiler at nice 19 and load() raises Deferred at once (the run takes torch's operators); a second load
    meanwhile starts no second build; the library then appears whole in the private folder and loads from there."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(cache))
    if kernel_build.compiler() is None:
        pytest.skip("no C++ compiler here")
    monkeypatch.setattr(kernel_build, "DEFER", [True])
    monkeypatch.setattr(kernel_build, "DEFERRED", [])
    with pytest.raises(kernel_build.Deferred, match="the probe kernel is being built apart"):
        kernel_build.load("probe", PROBE, "attnlab_probe")
    (marker,) = (cache / "kernels").glob(".*.building")
    pid = int(marker.read_text())
    try:
        with pytest.raises(kernel_build.Deferred):
            kernel_build.load("probe", PROBE, "attnlab_probe")
        assert [m.name for m in (cache / "kernels").glob(".*.building")] in ([marker.name], [])  # no second build
        deadline = time.monotonic() + 120  # a second or two on a quiet machine; nice 19 waits for busy cores
        while marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not marker.exists(), "the detached build did not end"
    finally:
        if marker.exists():
            os.kill(pid, 9)  # only the build this test started, by its id
    (lib,) = (cache / "kernels").glob("*.so")
    assert stat.S_IMODE(lib.stat().st_mode) & 0o022 == 0
    assert [p.name for p in (cache / "kernels").iterdir()] == [lib.name]  # its source and partial files gone
    assert kernel_build.load("probe", PROBE, "attnlab_probe")(3, 4) == 11
    assert kernel_build.DEFERRED == ["probe", "probe"]


def test_held_builds_start_only_when_the_command_releases_them(tmp_path, monkeypatch):
    """kernel_build.HOLD (`attnlab generate` until its tokens are out): a kernel asked for under DEFER is still
    refused at once (Deferred) but no compiler starts, so nothing competes with the run for its cores; the same
    kernel asked for twice is one build; start_held() starts each held build once and ends the hold."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(cache))
    if kernel_build.compiler() is None:
        pytest.skip("no C++ compiler here")
    monkeypatch.setattr(kernel_build, "DEFER", [True])
    monkeypatch.setattr(kernel_build, "HOLD", [True])
    monkeypatch.setattr(kernel_build, "HELD", [])
    monkeypatch.setattr(kernel_build, "DEFERRED", [])
    for _ in range(2):
        with pytest.raises(kernel_build.Deferred, match="the probe kernel is being built apart"):
            kernel_build.load("probe", PROBE, "attnlab_probe")
    assert not list((cache / "kernels").glob(".*")), "a build started while held"
    launched = []
    monkeypatch.setattr(kernel_build, "_launch_apart", launched.append)
    assert kernel_build.start_held() == 1
    (jobs,) = launched  # one detached process for every held build
    ((marker, source, partial, lib, *command),) = jobs
    assert Path(lib).parent == cache / "kernels" and lib.endswith(".so") and Path(marker).exists()
    assert Path(source).read_text().count("attnlab_probe") >= 1 and command[-2:] == ["-o", partial]
    assert kernel_build.HOLD == [False] and kernel_build.HELD == []
    assert kernel_build.start_held() == 0 and len(launched) == 1  # nothing held twice
