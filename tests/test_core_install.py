"""A core-only install (no extras): attnlab imports, builds, trains and generates, and each face that needs an
extra says which one in one line.

A real core-only virtual environment costs a torch download; here a fresh interpreter gets an import blocker
(None in sys.modules for every package of the extras: the import system's own way to say absent) and runs the commands.
The measured install of a real venv is in docs/performance.md (An install).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCKED = ("fastapi", "uvicorn", "starlette", "pydantic", "matplotlib", "gguf", "num2words", "PIL", "transformers",
           "sklearn", "skimage", "httpx", "yaml")

# None in sys.modules is how the import system spells "not installed": `import x` raises ModuleNotFoundError
# (name "x") and importlib.util.find_spec("x") returns None, as for an absent package
BLOCKER = textwrap.dedent(f"""
    import sys

    BLOCKED = {BLOCKED!r}
    sys.modules.update(dict.fromkeys(BLOCKED))
""")


def run(tmp_path: Path, code: str) -> subprocess.CompletedProcess:
    (tmp_path / "core_only.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]), "PYTHONWARNINGS": "default"}
    script = "import core_only\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=600)


def test_blocker_blocks(tmp_path):
    done = run(tmp_path, """
        for name in core_only.BLOCKED:
            try:
                __import__(name)
            except ImportError:
                continue
            raise SystemExit(f"{name} imported")
    """)
    assert done.returncode == 0, done.stdout + done.stderr


def test_core_imports_builds_trains_and_generates(tmp_path):
    done = run(tmp_path, """
        import sys
        import torch
        import attnlab
        from attnlab.cli import main

        torch.manual_seed(0)
        model = attnlab.build_model(attnlab.presets["tiny-llama"]).eval()
        out = attnlab.generate(model, [[1, 2, 3]], max_new_tokens=4, eos_token_id=None)
        assert len(out.tokens[0]) == 4
        code = main(["train", "gpt-char", "--out", "run", "steps=3", "d_model=32", "n_layers=1", "n_heads=2",
                     "d_ff=64", "seq_len=16", "batch_size=2", "eval_every=0", "sample_tokens=4", "log_every=1",
                     "threads=1"])
        assert code == 0, code
        trained, tokenizer = attnlab.load("run")
        assert tokenizer is not None
        ids = tokenizer.encode("def ")
        out = attnlab.generate(trained.eval(), [ids], max_new_tokens=5, eos_token_id=None)
        print("GENERATED", repr(tokenizer.decode(out.tokens[0])))
        for name in core_only.BLOCKED:
            assert sys.modules[name] is None and not any(m.startswith(name + ".") for m in sys.modules), name
    """)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "GENERATED" in done.stdout
    assert (tmp_path / "run").is_dir() and not (tmp_path / "run" / "loss.png").exists()
    # the run's picture is what a core install lacks, said once with the extra that draws it
    assert "pip install 'attnlab[plots]'" in done.stderr


def test_each_face_names_its_extra(tmp_path):
    (tmp_path / "x.gguf").write_bytes(b"GGUF" + bytes(60))
    done = run(tmp_path, """
        import attnlab
        from attnlab.extras import MissingExtra

        def says(call, extra):
            try:
                call()
            except MissingExtra as exc:
                message = str(exc)
                assert f"pip install 'attnlab[{extra}]'" in message and "\\n" not in message, message
                print("OK", extra, message)
                return
            raise SystemExit(f"{call} did not refuse")

        from attnlab.interop.gguf import save_gguf
        from attnlab.training.plots import plot_comparison
        from attnlab.data.pairs import _converter

        says(lambda: attnlab.load("x.gguf"), "interop")
        says(lambda: save_gguf(attnlab.build_model(attnlab.presets["tiny-llama"]), "y.gguf"), "interop")
        says(lambda: plot_comparison({}, "p.png"), "plots")
        says(lambda: _converter("fr"), "data")

        from attnlab.cli import main
        assert main(["explore", "--no-browser"]) == 2
    """)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert done.stdout.count("OK") == 4
    lines = [line for line in done.stderr.splitlines() if line.startswith("attnlab explore: error")]
    assert lines == ["attnlab explore: error: attnlab explore needs fastapi, which is not installed: "
                     "pip install 'attnlab[explorer]'"], done.stderr
    assert "Traceback" not in done.stderr
