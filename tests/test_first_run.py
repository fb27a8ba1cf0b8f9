"""A user's first `attnlab generate` on a fresh machine: what runs while attnlab's kernels are being built apart.

- The stand-in for a kernel being built apart (QuantizedLinear._stand_in): each layer dequantizes its weight once and
  keeps it, where the chunked path dequantized every row of every matrix at every step; it gives the numbers of
  F.linear on the dequantized weight (the eager reference) and the kernel path's tokens.
- The detached builders run at the lowest priority, their session's scheduling group included
  (kernel_build.lowest_priority): nice 19 alone let each one take a core's full share from the run.
- The first run asks for every kernel a later run may call (cli/generate._ready_kernels), not only the ones its own
  prompt needs.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import attnlab
from attnlab.layers import int4_kernel, kernel_build, quantized
from attnlab.layers.quantized import QuantizedLinear

CHECKPOINTS = Path(attnlab.__file__).parent / "assets" / "checkpoints"
PROMPT = torch.tensor([[5, 17, 30, 2, 9, 11]])
NEW = 6


def _int4_model():
    return attnlab.quantize(attnlab.load(CHECKPOINTS / "gpt-char")[0], "int4").eval()


def _layers(model) -> list[QuantizedLinear]:
    """The 4-bit layers (gpt-char's int4 quantization keeps its tied head at int8, whose kernel is not deferred)."""
    return [m for m in model.modules() if isinstance(m, QuantizedLinear) and m.format == "int4"]


def _tokens(model) -> list[int]:
    result = attnlab.generate(model, PROMPT, max_new_tokens=NEW, compile=False, threads=1)
    return [int(t) for t in result.tokens[0]]


@pytest.fixture
def built_apart(monkeypatch):
    """This process as a first run sees it: the 4-bit kernels are being built apart (their builds answer what
    kernel_build.load's Deferred says, and DEFERRED names them); counts the weight rows dequantized."""
    reason = "the int4 kernel is being built apart for later runs"
    monkeypatch.setattr(int4_kernel, "_compiled", lambda: (None, reason))
    monkeypatch.setattr(int4_kernel, "_compiled_rows", lambda: (None, reason))
    monkeypatch.setattr(kernel_build, "DEFERRED", ["int4", "int4_rows"])
    rows = [0]
    dequantize_rows = QuantizedLinear._dequantize_rows

    def counted(self, start, stop, w, codes):
        rows[0] += stop - start
        return dequantize_rows(self, start, stop, w, codes)

    monkeypatch.setattr(QuantizedLinear, "_dequantize_rows", counted)
    return rows


def test_while_kernels_are_built_apart_each_weight_is_dequantized_once_and_kept(built_apart):
    """The first run's stand-in: the first forward dequantizes every layer's weight once (every output row of every
    int4 matrix, counted), and the decoding steps after it dequantize nothing more; the chunked path this replaces
    dequantized every row again at every step (counted the same way with the stand-in off)."""
    model = _int4_model()
    layers = _layers(model)
    assert layers and all(m._one_row_kernel() is None for m in layers)
    weights = sum(m.out_features for m in layers)
    tokens = _tokens(model)
    assert built_apart[0] == weights, "each weight dequantized once for the whole generation"
    assert all(m._kept is not None for m in layers)
    assert quantized.KEPT[0] >= 4 * sum(m.out_features * m.in_features for m in layers)
    built_apart[0] = 0
    for m in layers:  # what ran before: kernels off by choice take the chunked path, which keeps nothing
        m.use_kernel = False
        m._kept = None
    assert _tokens(model) == tokens
    # the prompt's rows multiply by dequantize()'s whole weight, then each of the NEW - 1 steps dequantizes every row
    assert built_apart[0] == (NEW - 1) * weights, "the chunked path dequantizes every row at every step"
    assert all(m._kept is None for m in layers)


def test_the_stand_in_gives_the_eager_references_numbers(built_apart):
    """Kept or not, the stand-in's product is F.linear on dequantize()'s weight: float32's numbers up to the
    summation order (one row, a prompt's rows, with a bias), and it follows codes changed in place."""
    torch.manual_seed(1)
    layer = QuantizedLinear.from_float(torch.nn.Linear(96, 200, bias=True), "int4")
    layer.CHUNK = 16 * 96  # several chunks even at this size
    for rows in (1, 3, 9):
        x = torch.randn(rows, 96)
        with torch.no_grad():
            expected = F.linear(x, quantized.dequantize("int4", layer.buffers_dict()), layer.bias)
            torch.testing.assert_close(layer(x), expected, rtol=1e-5, atol=1e-5)
    assert layer._kept is not None and torch.equal(layer._kept[2], layer.weight)
    with torch.no_grad():
        layer.qweight[:7] ^= 0x5A  # other codes in place: the kept weight is made again
        x = torch.randn(1, 96)
        expected = F.linear(x, layer.weight, layer.bias)
        torch.testing.assert_close(layer(x), expected, rtol=1e-5, atol=1e-5)


def test_the_kept_weights_stop_at_their_limit_and_are_counted_out_when_freed(built_apart, monkeypatch):
    """Past KEPT_LIMIT bytes a layer takes the chunked path (the same numbers, nothing kept), and a model's kept
    weights no longer count once the model is gone."""
    start = quantized.KEPT[0]
    model = _int4_model()
    layers = _layers(model)
    sizes = sorted(4 * m.out_features * m.in_features for m in layers)
    monkeypatch.setattr(QuantizedLinear, "KEPT_LIMIT", start + sizes[0])  # room for one matrix at most
    tokens = _tokens(model)
    kept = [m for m in layers if m._kept is not None]
    assert len(kept) == 1 and quantized.KEPT[0] == start + 4 * kept[0].out_features * kept[0].in_features
    monkeypatch.setattr(QuantizedLinear, "KEPT_LIMIT", 1 << 40)
    for m in layers:
        m._kept = None  # freed: counted out at once
    assert quantized.KEPT[0] == start
    assert _tokens(model) == tokens
    assert quantized.KEPT[0] == start + sum(sizes)
    del model, layers, kept, m
    gc.collect()
    assert quantized.KEPT[0] == start


def test_the_stand_in_gives_the_kernel_paths_tokens(monkeypatch):
    """Greedy tokens of the int4 model: the first run's stand-in (kernels being built apart) gives the ones the next
    run's kernels give, and its logits are the eager reference's (F.linear on the dequantized weights, the path
    kernels off by choice take) within float32's summation order, where the kernel path's rounding of each row's
    activations (~15 bits) makes them differ."""
    if not int4_kernel.available():
        pytest.skip(f"attnlab's int4 kernel is unavailable here: {int4_kernel.unavailable_reason()}")
    model = _int4_model()
    kernel_tokens = _tokens(model)
    assert all(m._kept is None for m in _layers(model))
    with torch.no_grad():
        kernel_logits = model(PROMPT[:, :1]).logits
    reason = "the int4 kernel is being built apart for later runs"
    monkeypatch.setattr(int4_kernel, "_compiled", lambda: (None, reason))
    monkeypatch.setattr(int4_kernel, "_compiled_rows", lambda: (None, reason))
    monkeypatch.setattr(kernel_build, "DEFERRED", ["int4", "int4_rows"])
    first_run = _int4_model()
    assert _tokens(first_run) == kernel_tokens
    assert all(m._kept is not None for m in _layers(first_run))
    with torch.no_grad():
        stand_in = first_run(PROMPT[:, :1]).logits
        for m in _layers(first_run):  # the eager reference: F.linear on the dequantized weights, chunk by chunk
            m.use_kernel = False
        expected = first_run(PROMPT[:, :1]).logits
    torch.testing.assert_close(stand_in, expected, rtol=1e-5, atol=1e-5)
    assert not torch.equal(kernel_logits, stand_in), "the kernel path rounds activations: it did run"


# --------------------------------------------------------------------------------- the builders' priority
def _priority_of(code: str, new_session: bool) -> tuple[str, int]:
    """(the /proc/self/autogroup line, the nice value) a child process reports after running `code`."""
    probe = code + textwrap.dedent("""
        import os
        try:
            group = open("/proc/self/autogroup").read().strip()
        except OSError:
            group = ""
        print(group + "|" + str(os.getpriority(os.PRIO_PROCESS, 0)))
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          start_new_session=new_session, check=True)
    group, nice = done.stdout.strip().rsplit("|", 1)
    return group, int(nice)


def test_a_detached_builder_runs_at_the_lowest_priority_with_its_sessions_group():
    """kernel_build.lowest_priority: nice 19, and a session leader's scheduling group at nice 19 (Linux's autogroup
    shares the CPU between sessions before nice orders a session's processes); a process inside another's session
    leaves that session's group as it is."""
    code = "from attnlab.layers.kernel_build import lowest_priority\nlowest_priority()\n"
    group, nice = _priority_of(code, new_session=True)
    assert nice == 19
    if group:
        assert group.endswith("nice 19"), group
    try:
        ours = Path("/proc/self/autogroup").read_text().strip()
    except OSError:
        ours = ""
    group, nice = _priority_of(code, new_session=False)
    assert nice == 19 and group == ours


def test_a_deferred_kernel_build_compiles_at_the_lowest_priority_with_its_sessions_group(tmp_path):
    """The detached build kernel_build._compile_apart starts (kernel_build._APART, run as a session of its own):
    its compiler runs at nice 19 in a scheduling group at nice 19. The compiler here is a stand-in that writes what
    it runs at."""
    said = tmp_path / "said"
    compiler = ("import os\ntry:\n    group = open('/proc/self/autogroup').read().strip()\nexcept OSError:\n"
                "    group = ''\n"
                f"open({str(said)!r}, 'w').write(group + '|' + str(os.getpriority(os.PRIO_PROCESS, 0)))\n")
    marker, source, tmp, lib = (tmp_path / name for name in (".probe.building", "probe.cc", "probe.tmp", "probe.so"))
    for path in (marker, source, tmp):
        path.write_text("")
    job = [str(marker), str(source), str(tmp), str(lib), sys.executable, "-c", compiler]
    subprocess.run([sys.executable, "-c", kernel_build._APART, json.dumps([job])], start_new_session=True,
                   timeout=120, check=True)
    group, nice = said.read_text().rsplit("|", 1)
    assert int(nice) == 19
    if group:
        assert group.endswith("nice 19"), group
    assert lib.exists() and not marker.exists() and not source.exists()


# --------------------------------------------------------------------------------- what the first run asks for
def test_the_first_run_asks_for_every_kernel_a_later_run_may_call(monkeypatch):
    """Under kernel_build.DEFER (the command's own process) a one-token prompt still asks for the prompt kernels
    (the 4-bit rows kernel, the causal attention), so that their detached builds start with the first run's;
    without DEFER it asks only for what its prompt calls."""
    from attnlab.cli import generate
    from attnlab.layers import attention_kernel, norm_kernel, rope_kernel

    asked: list[str] = []
    for module, name in ((int4_kernel, "available"), (int4_kernel, "rows_available"), (norm_kernel, "available"),
                         (rope_kernel, "available"), (attention_kernel, "available")):
        label = f"{module.__name__.rsplit('.', 1)[-1]}.{name}"
        monkeypatch.setattr(module, name, lambda label=label: asked.append(label) or False)
    model = _int4_model()
    monkeypatch.setattr(kernel_build, "DEFER", [False])
    generate._ready_kernels(model, 1)
    assert "int4_kernel.rows_available" not in asked and "attention_kernel.available" not in asked
    asked.clear()
    monkeypatch.setattr(kernel_build, "DEFER", [True])
    generate._ready_kernels(model, 1)
    assert {"int4_kernel.available", "int4_kernel.rows_available", "attention_kernel.available"} <= set(asked)



def test_a_build_marker_is_taken_over_only_when_its_builder_is_gone(tmp_path):
    """kernel_build.at_work: a marker holding a live process id is at work however old it is within STALE_S (nice 19
    on a busy machine may hold a build back for many minutes, and a second build would compete with it); one whose
    process has ended is not, nor one older than STALE_S; one without an id yet is at work for STARTING_S."""
    marker = tmp_path / ".lib.building"
    marker.write_text(str(os.getpid()))
    old = time.time() - 1000  # older than the fixed age the markers had before (600 s)
    os.utime(marker, (old, old))
    assert kernel_build.at_work(marker)
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    marker.write_text(ended.stdout.strip())
    assert not kernel_build.at_work(marker)
    marker.write_text(str(os.getpid()))
    older = time.time() - kernel_build.STALE_S - 1
    os.utime(marker, (older, older))
    assert not kernel_build.at_work(marker)
    marker.write_text("")
    assert kernel_build.at_work(marker)
    before = time.time() - kernel_build.STARTING_S - 1
    os.utime(marker, (before, before))
    assert not kernel_build.at_work(marker)
    assert not kernel_build.at_work(tmp_path / "missing")


def test_a_short_request_neither_loads_nor_builds_the_compiled_step(monkeypatch):
    """`attnlab generate` offers the compiled step (a thread loads the kept one, or a separate process builds it)
    only to requests of COMPILED_FROM new tokens or more, where it pays (a model whose products are attnlab's
    kernels): loading it costs more than a short request saves. A shorter one decodes eagerly (compile=False) and
    starts nothing; the default request (64 tokens) keeps it; --compile is taken as asked."""
    from attnlab.cli import build_parser, generate
    from attnlab.generation import compiled

    model = _int4_model()
    monkeypatch.setattr(generate, "_load", lambda spec: (model, None))
    monkeypatch.setattr(generate, "_ready_kernels", lambda model, prompt_len: None)
    monkeypatch.setattr(compiled, "pays", lambda model: True)  # as where the 4-bit kernel runs
    monkeypatch.setattr(compiled, "HOLD_NOTES", [False])
    offered: list[int] = []
    monkeypatch.setattr(compiled, "build_apart_with", lambda model, command: offered.append(command))
    assert 8 < generate.COMPILED_FROM <= generate.DEFAULT_NEW_TOKENS
    for tokens in (8, generate.COMPILED_FROM - 1, generate.COMPILED_FROM, None):
        argv = ["generate", "gpt-char", "--ids", "5 17 30", "--no-echo"]
        args = build_parser().parse_args(argv + ([] if tokens is None else ["--max-new-tokens", str(tokens)]))
        kwargs = generate._prepared(args)[3]
        short = tokens is not None and tokens < generate.COMPILED_FROM
        assert kwargs.get("compile", None) is (False if short else None), (tokens, kwargs)
    assert len(offered) == 2 and "attnlab.generation.step_builder" in offered[0]
    args = build_parser().parse_args(["generate", "gpt-char", "--ids", "5", "--max-new-tokens", "8", "--compile"])
    assert generate._prepared(args)[3]["compile"] is True  # asked for: as asked


def test_the_command_starts_its_held_builds_after_its_tokens(tmp_path):
    """`attnlab generate` as a process's own command (an empty kernel cache): the kernels it asks for are refused
    at once and held (kernel_build.HOLD), and their detached builds start only after the text is printed, so no
    compiler competes with the run. Popen is replaced in the child by a recorder that prints and starts nothing."""
    child = textwrap.dedent("""
        import subprocess, sys
        from attnlab.cli import main
        from attnlab.layers import kernel_build

        class Recorder:
            def __init__(self, argv, **kwargs):
                print("BUILD", argv[-1].rsplit("/", 1)[-1], "held" if kernel_build.HOLD[0] else "released",
                      flush=True)
                self.pid = 0

        kernel_build.subprocess.Popen = Recorder
        sys.argv = ["attnlab", "generate", sys.argv[1], "--quantize", "int4", "--prompt", "the",
                    "--max-new-tokens", "3", "--seed", "0", "--threads", "1"]
        main()  # the process's own command line: what a user's `attnlab generate` runs
    """)
    env = {**os.environ, "ATTNLAB_CACHE_DIR": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    if kernel_build.compiler() is None:
        pytest.skip("no C++ compiler here")
    done = subprocess.run([sys.executable, "-c", child, str(CHECKPOINTS / "gpt-char")], capture_output=True,
                          text=True, env=env, timeout=300)
    lines = done.stdout.splitlines()
    builds = [i for i, line in enumerate(lines) if line.startswith("BUILD ")]
    assert builds, (done.stdout, done.stderr[-2000:])
    assert all(lines[i].endswith(" released") for i in builds)
    text = [i for i, line in enumerate(lines) if line.startswith("the")]  # the prompt echoed, then its tokens
    assert text and max(text) < min(builds), lines
