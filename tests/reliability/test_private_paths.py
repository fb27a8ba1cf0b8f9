"""No folder another local user can write decides what attnlab compiles, loads or trains on.

Two holes, closed by one check of the whole folder chain (layers/kernel_build.py, make_private_dir):
- torch.compile builds and loads inductor's shared libraries in its cache folder, by default
  `torchinductor_$USER` in the shared temporary folder, which another user can create first (mode 0777) and
  fill. Every compile in the package goes through kernel_build.torch_compile, which points inductor at a private
  folder first; a scan of the package's source fails on any call that bypasses it.
- the token store (<cache>/tokens) holds the ids a run trains on. Checking the `tokens` folder alone is not
  enough: whoever can write a folder above it can rename it away and put their own in its place. A refused
  store is said once, in one warning line, and the build goes to a new private temporary folder.

The attacker is a second user id (54321, no account needed); those tests need root to switch to it.
"""

from __future__ import annotations

import ast
import os
import shutil
import stat
import tempfile
import warnings
from pathlib import Path

import pytest
import torch

from attnlab.data import token_file
from attnlab.data.token_file import TokenFile
from attnlab.data.tokenizers import char_tokenizer
from attnlab.errors import InputError
from attnlab.files import CacheWarning
from attnlab.layers import kernel_build

PACKAGE = Path(kernel_build.__file__).resolve().parents[1]  # attnlab/
ATTACKER = 54321
TEXT = "".join(f"line {i}: the quick brown fox jumps over {i % 7} lazy dogs.\n" for i in range(60))
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="switching to a second user id needs root (run as root to test the attack)")


def _sources():
    """(path relative to the repository, parsed module) for every Python file of the package."""
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE.parent), ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _dotted(node: ast.AST) -> str:
    """`torch._dynamo.optimize` for that attribute chain; '' when it does not end in a plain name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


# ------------------------------------------------------------------------------ one way to compile
COMPILERS = {"compile", "aot_compile", "compile_fx", "compile_fx_inner"}  # torch's, dynamo's, inductor's


def _torch_names(tree: ast.Module) -> set[str]:
    """The names a module binds to torch or to anything imported from it (`torch`, `import torch._dynamo as d`,
    `from torch import _dynamo`)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] == "torch"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
            names |= {a.asname or a.name for a in node.names}
    return names


def _compile_uses(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, what) for every use of torch's compilers outside kernel_build.torch_compile: an attribute chain
    from torch (however imported) ending in compile, aot_compile, compile_fx(_inner) or _dynamo.optimize, and
    importing any of those by name."""
    allowed = {id(node) for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) and fn.name == "torch_compile"
               for node in ast.walk(fn)}
    torch_names = _torch_names(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in allowed:
            continue
        if isinstance(node, ast.Attribute):
            name = _dotted(node)
            if name.split(".")[0] in torch_names and (node.attr in COMPILERS or name.endswith("_dynamo.optimize")):
                found.append((node.lineno, name))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
            found += [(node.lineno, f"from {node.module} import {a.name}") for a in node.names
                      if a.name in COMPILERS | {"optimize"}]
    return found


def test_every_torch_compile_in_the_package_goes_through_the_private_entry_point():
    """A new call of torch.compile that forgets the private inductor folder fails here. The scan is tried first
    on a module that calls torch's compilers in each way it knows (and once inside torch_compile, allowed)."""
    sample = ("import torch as t\nimport re\nfrom torch import compile\nfrom torch._dynamo import optimize\n"
              "import torch._dynamo\nfrom torch import _inductor as ind\n"
              "a = t.compile(m)\nb = torch._dynamo.optimize('inductor')(m)\nc = ind.compile_fx.compile_fx(g, x)\n"
              "d = re.compile('x')\ne = options.compile\n"
              "def torch_compile(m):\n    return torch.compile(m)\n")
    assert sorted({line for line, _ in _compile_uses(ast.parse(sample))}) == [3, 4, 7, 8, 9]
    bypasses = [f"{path}:{line}: {what}" for path, tree in _sources() for line, what in _compile_uses(tree)]
    assert bypasses == [], "use attnlab.layers.kernel_build.torch_compile instead:\n" + "\n".join(bypasses)


def test_no_module_reaches_into_the_kernel_builders_private_names():
    """The folder checks other modules rely on are public (check_private_dir, make_private_dir)."""
    private = [f"{path}:{node.lineno}: {_dotted(node)}" for path, tree in _sources()
               if path.name != "kernel_build.py" for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and _dotted(node).startswith("kernel_build._")]
    assert private == []
    for name in ("check_private_dir", "make_private_dir", "torch_compile"):
        assert getattr(kernel_build, name).__doc__


@pytest.fixture
def inductor_env(monkeypatch, tmp_path):
    """A fresh private_inductor_cache() with ATTNLAB_CACHE_DIR in tmp_path; inductor's settings restored after."""
    import torch._inductor.config as inductor_config

    monkeypatch.setattr(inductor_config, "cpp_cache_precompile_headers", True, raising=False)
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache"))
    kernel_build.private_inductor_cache.cache_clear()
    yield inductor_config
    kernel_build.private_inductor_cache.cache_clear()


def _inductor_folder() -> Path:
    """Where inductor would build and load now (its cache_dir(), without creating the folder)."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    return Path(os.path.abspath(os.environ.get("TORCHINDUCTOR_CACHE_DIR") or default_cache_dir()))


def _compile_in_benchmark(which: str):
    """The benchmark's own compile of a tiny model (lazy: nothing is built until the first call)."""
    model = torch.nn.Linear(4, 4)
    if which == "forward":
        from attnlab.benchmarks.forward import make_call

        return make_call(None, "attnlab", model, {}, compile_backend="inductor")
    from attnlab.benchmarks.train import make_step

    return make_step(None, "attnlab", model, {}, compile_backend="inductor")


@pytest.mark.parametrize("which", ["forward", "train"])
def test_the_benchmarks_compile_into_the_private_folder(tmp_path, inductor_env, which):
    _compile_in_benchmark(which)
    assert _inductor_folder() == tmp_path / "cache" / "inductor"
    assert stat.S_IMODE(os.lstat(tmp_path / "cache" / "inductor").st_mode) == 0o700
    assert inductor_env.cpp_cache_precompile_headers is False


@pytest.fixture
def shared():
    """A folder like /tmp: everyone may write, sticky (tmp_path's parents are root's own, closed to others)."""
    folder = Path(tempfile.mkdtemp(prefix="attnlab-shared-tmp-", dir="/tmp"))
    os.chmod(folder, 0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _as_attacker(*folders: Path, mode: int = 0o777) -> None:
    """Create `folders` (in order) as the attacker's user id, with `mode`."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(ATTACKER)
            os.setuid(ATTACKER)
            os.umask(0)
            for folder in folders:
                folder.mkdir(mode=mode)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert all(folder.stat().st_uid == ATTACKER for folder in folders)


def _victims_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.lstat().st_uid != ATTACKER]


@needs_root
@pytest.mark.parametrize("which", ["forward", "train"])
def test_a_planted_torchinductor_folder_is_never_used(tmp_path, monkeypatch, inductor_env, shared, which):
    """The attacker makes `torchinductor_<victim>` in the shared temporary folder first (0777): the benchmark's
    compile must build elsewhere, so nothing it loads can come from there."""
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    planted = Path(default_cache_dir())
    assert planted.parent == shared
    _as_attacker(planted)
    _compile_in_benchmark(which)
    folder = _inductor_folder()
    assert folder == tmp_path / "cache" / "inductor" and planted not in (folder, *folder.parents)
    assert _victims_files(shared) == []


# ------------------------------------------------------------------------------------ the token store
@pytest.fixture
def store_env(tmp_path, monkeypatch):
    """Fallback stores under tmp_path (so they go with it), each refusal said afresh, one process (no ranks)."""
    (tmp_path / "tmp").mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    _say_refusals_afresh()
    yield tmp_path / "tmp"
    _say_refusals_afresh()


def _say_refusals_afresh() -> None:
    fallback = getattr(token_file, "_private_temporary_store", None)  # (absent before the chain check)
    if fallback is not None:
        fallback.cache_clear()


def _prepare(cache: Path, run: Path, monkeypatch) -> tuple[TokenFile, list[str]]:
    """TokenFile.prepare of TEXT with the cache folder `cache`; returns it and the CacheWarnings said."""
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(cache))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made, reused = TokenFile.prepare(TEXT, char_tokenizer(TEXT), run, 0.1, progress=False)
    assert not reused
    return made, [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


def _assert_trains_on_text(made: TokenFile) -> None:
    ids = made.tokens("train").tolist() + made.tokens("val").tolist()
    assert char_tokenizer(TEXT).decode(ids) == TEXT


def _assert_refused_once(messages: list[str], expected: str, fallback_root: Path) -> None:
    assert len(messages) == 1 and expected in messages[0] and "new private temporary folder" in messages[0]
    assert "\n" not in messages[0]
    (store,) = fallback_root.iterdir()  # where the build went instead: this user's alone
    info = os.lstat(store)
    assert info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o700


@pytest.mark.parametrize("case", ["cache 0777", "parent 0777", "cache a link"])
def test_a_token_store_under_a_folder_others_can_write_is_refused(tmp_path, monkeypatch, store_env, case):
    """The `tokens` folder itself would be fine (made 0700); a folder above it is not."""
    cache = tmp_path / "parent" / "cache"
    cache.mkdir(parents=True, mode=0o700)
    if case == "cache 0777":
        cache.chmod(0o777)
        expected = f"{cache} can be written by other users (mode 0777)"
    elif case == "parent 0777":
        cache.parent.chmod(0o777)  # not sticky: anyone may rename `cache` away and put their own there
        expected = f"{cache.parent} can be written by other users (mode 0777)"
    else:
        (tmp_path / "link").symlink_to(cache)
        cache = tmp_path / "link"
        expected = f"{cache} is a symbolic link"
    made, messages = _prepare(cache, tmp_path / "run", monkeypatch)
    _assert_trains_on_text(made)
    _assert_refused_once(messages, expected, store_env)
    assert not (cache / "tokens").exists()  # nothing made, read or left in the refused folder


def test_ranks_started_together_get_a_one_line_error(tmp_path, monkeypatch, store_env):
    """Each rank's own temporary store would race the others when linking into the run's folder: refused."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    cache.chmod(0o777)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(InputError, match=r"can be written by other users \(mode 0777\).*ATTNLAB_CACHE_DIR") as info:
        _prepare(cache, tmp_path / "run", monkeypatch)
    assert "\n" not in str(info.value) and not (tmp_path / "run").exists()


@needs_root
@pytest.mark.parametrize("case", ["owns the cache folder", "owns a folder above it"])
def test_a_token_store_in_the_attackers_folder_is_refused(tmp_path, monkeypatch, store_env, shared, case):
    """The attacker made the victim's cache folder (0777), or a folder above it, first: the victim's
    `tokens` inside would be theirs to replace. The victim writes nothing there and trains on its own text."""
    if case == "owns the cache folder":
        cache = shared / "cache"
        _as_attacker(cache)
    else:
        _as_attacker(shared / "home", mode=0o755)  # the attacker can rename what the victim makes inside
        cache = shared / "home" / "cache"
        cache.mkdir(mode=0o700)
    made, messages = _prepare(cache, tmp_path / "run", monkeypatch)
    _assert_trains_on_text(made)
    owner = cache if case == "owns the cache folder" else cache.parent
    _assert_refused_once(messages, f"{owner} belongs to user id {ATTACKER}", store_env)
    assert not (cache / "tokens").exists()
    assert [p for p in _victims_files(shared) if p != cache] == []
