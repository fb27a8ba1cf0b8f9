"""Every performance figure that README.md, docs/ and bench/RESULTS.md print beside a machine-readable log is
read back from that log here: the page must still print the figure, the log must exist, and the log's value
must round to the printed one. A re-run that changes a log, or an edit that changes a figure, fails here until
the two agree again. Only files are read (no benchmark runs), so this is cheap. The logs: the benchmark runs kept
under bench/results/, docs/cost.md's sweeps (docs/img/cost-*/sweep.txt) and the shipped checkpoints' trained.json
(command, date and wall time of the run that trained them).

Each row of CLAIMS is (page, printed text, log, where the value is in the log):
- printed text: as the page prints it, with the figure itself in braces: "{1.37}x llama.cpp's rate". The page
  may wrap the text over lines (runs of whitespace compare equal).
- where: a regular expression whose first group is the value (searched line by line, `re.M`), or
  "json:" and a dotted key path into the log (list positions as numbers), times `scale`
  (a JSON in seconds, a page in ms: 1000).

Figures the pages print that no log can check, and why (the pages mark them "(not logged)" or name the
write-up they come from):
- docs/performance.md's install times and sizes (venv 11 s + torch 71 s + attnlab 67 s, 1.1 GB, 44 packages) and
  the disk sizes of `.[test]`: measured by hand in a fresh clone; no log was kept.
- docs/performance.md's earlier test rows (1,734 tests shuffled, 10 m 39 s loaded): pytest's own summary, not saved. The
  current rows are checked against bench/results/ci-2026-12-07/ci-run.log and the 2026-12-06 shuffled logs.
- docs/explorer.md's "84 sweeps, 82 finished": sums of keys of the class log (finished per model), read back by
  tests/experiments_trace/figures.py (its SOURCE_PLACES), which binds every other number of the user docs too.
- The other figures of docs/*.md (explorer latency tables, quantized decode steps, training and data-pipeline
  timings, test-file times): their runs were written up in bench/RESULTS.md or in the page itself and their
  raw output was not kept; the pages say "(not logged)".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LLAMA = "bench/results/llama-cpp-sapphire-rapids-2026-11-28"
GPU = "bench/results/gpu-h200"
CLASS = "bench/results/explorer-class"
QUICK = "bench/results/bench-quick-2026-11-28"
BABY = "bench/results/baby-gpt-sapphire-rapids-2026-11-28"
CI = "bench/results/ci-2026-12-06"
CI_RUN = "bench/results/ci-2026-12-07/ci-run.log"
ZEN = "bench/results/llama-cpp-zen5-2026-11-28"
NATIVE_QUICK = "bench/results/bench-quick-native-2026-11-28"
NIGHT_QUICK = "bench/results/bench-quick-startup-2026-11-28"
GGUF_STEP = r"^\| GGUF kept \(Q4_1 \+ Q8_0\) \| ([\d.]+) ms"
Q8P = "bench/results/q8_0-prefill-2026-11-28"
KEPT = "bench/results/kept-blocks-2026-12-07/kept-vs-float32.log"  # P3: the kept-blocks figures, re-run
QUALITY = "bench/results/quality-2026-12-07/quality.log"  # P3: python -m attnlab.benchmarks.quality, re-run
ATTENTION = "bench/results/long-prompts-2026-12-07/kernel-vs-sdpa.log"  # kernel vs SDPA: 100 fresh / padded / cached
COMPILED_CUT = "bench/results/kept-blocks-2026-12-07/compiled-2-blocks.log"  # P3: SmolLM2's 2-block cut
QUICK_Q = "bench/results/quantized-2026-12-07/quick.log"  # P3: python -m attnlab.benchmarks.quantized --quick ...
GEN_TESTS = "bench/results/generation-2026-12-07/tests-cpu.log"  # P3: the generation tests' CPU time
QUICK_TABLES = {"gpt2": r"^\| GPT-2-small shape \(random\), batch 1 \| step \|",
                "smollm2": r"^\| SmolLM2-135M, batch 1 \| step \|"}


def _quick(table: str, variant: str, what: str) -> str:
    """The quantized quick log: in `table`'s table, `variant`'s row: "ms" its step, "x" its speed over float32's,
    "load" / "after" its resident growth on load / after decoding (SmolLM2's table)."""
    row = QUICK_TABLES[table] + r"[^\n]*\n(?:.*\n)*?\| " + re.escape(variant) + r" \| "
    return row + {"ms": r"([\d.]+) ms \|", "x": r"[\d.]+ ms \| ([\d.]+)x \|", "load": r".* \| (\d+) / \d+ MiB \|",
                  "after": r".* \| \d+ / (\d+) MiB \|"}[what]


QUICK_ROWS = (  # docs/quantization.md's speed table, figures in [brackets], and (table, variant, what) for each
    ("| GPT-2-small shape, float32 | [34.9] | [1.00]x |", (("gpt2", "float32", "ms"), ("gpt2", "float32", "x"))),
    ("| GPT-2-small shape, `int8` (attnlab's VNNI kernel) | [8.0] | **[4.38]x** |",
     (("gpt2", "int8", "ms"), ("gpt2", "int8", "x"))),
    ("| GPT-2-small shape, `int8` through fbgemm (CPUs without VNNI) | [16.0] | [2.18]x |",
     (("gpt2", "int8 via fbgemm", "ms"), ("gpt2", "int8 via fbgemm", "x"))),
    ("| GPT-2-small shape, `int4` (attnlab's 4-bit VNNI kernel) | [6.2] | **[5.64]x** |",
     (("gpt2", "int4", "ms"), ("gpt2", "int4", "x"))),
    ("| GPT-2-small shape, `int4` unpacked in torch (CPUs without VNNI) | [81.6] | [0.43]x |",
     (("gpt2", "int4 chunked (no kernel)", "ms"), ("gpt2", "int4 chunked (no kernel)", "x"))),
    ("| SmolLM2-135M, float32 (the GGUF expanded) | [47.9] | [1.00]x | 538 MB | [723] / [728] MiB |",
     tuple(("smollm2", "float32", w) for w in ("ms", "x", "load", "after"))),
    ("| SmolLM2-135M, GGUF blocks kept (Q4_1 + Q8_0) | [7.4] | **[6.47]x** | 96 MB | **[147] / [426] MiB** |",
     tuple(("smollm2", "GGUF kept (Q4_1 + Q8_0)", w) for w in ("ms", "x", "load", "after"))),
    ("| SmolLM2-135M, GGUF blocks kept, unpacked in torch | [123.7] | [0.39]x |",
     (("smollm2", "GGUF kept, chunked (no kernel)", "ms"), ("smollm2", "GGUF kept, chunked (no kernel)", "x"))),
    ("| SmolLM2-135M, `int8` (attnlab's VNNI kernel) | [11.2] | [4.29]x |",
     (("smollm2", "int8", "ms"), ("smollm2", "int8", "x"))),
    ("| SmolLM2-135M, `int8` through fbgemm | [37.6] | [1.27]x |",
     (("smollm2", "int8 via fbgemm (residual pass where needed)", "ms"),
      ("smollm2", "int8 via fbgemm (residual pass where needed)", "x"))),
)
DSTEP = "bench/results/decode-step-2026-12-07/gpt2.log"  # P3: python -m attnlab.benchmarks.decode_step, re-run
GPT2_STEP = r"^\| GPT-2-small shape \(random\) \| 1 \|"  # its first table's row: ms/step, ratios
GPT2_PARTS = r"^\| GPT-2-small shape \(random\) \|(?= [\d.]+ \| [\d.]+ \| [\d.]+x)"  # its step-parts row


def _quality(variant: str, col: int, k: int = 0) -> str:
    """The quality log's table: the k-th number of the col-th cell after `variant`'s name (0: its matrices, 1: MiB,
    2: ppl es, 3: change es (change, low, high), 4: ppl fr, 5: change fr, 6: top-1 es / fr, 7: decode path es / fr,
    8: greedy agreement)."""
    return (rf"^\| {re.escape(variant)} \|" + r"[^|]+\|" * col + r"[^\d|+-]*" + r"[+-]?[\d.]+[^\d|+-]+" * k
            + r"([+-]?[\d.]+)")


QUALITY_DECODE_TOKENS = r"decode path: the first (\d+) tokens of each"
QUALITY_ROWS = (  # docs/quantization.md's rows, figures in [brackets], and where each is in the log
    ("| float32 | float32 | 513 | [39.896] | [27.218] | [100]% | [0] | [100]% |",
     tuple(_quality("float32", c) for c in (2, 4, 6, 7, 8))),
    ("| int8 | int8 | 129 | [39.983] ([+0.22]%, [-0.42]..[+0.86]) | [27.121] ([-0.36]%, [-0.93]..[+0.22]) | [94.8]% / "
     "[94.2]% | [-0.95]% / [+2.66]% ([64] tokens each) | [81.2]% |",
     (*(_quality("int8", c, k) for c, k in ((2, 0), (3, 0), (3, 1), (3, 2), (4, 0), (5, 0), (5, 1), (5, 2), (6, 0),
                                            (6, 1), (7, 0), (7, 1))), QUALITY_DECODE_TOKENS, _quality("int8", 8))),
    ("| int4 (LM head int8, as shipped) | uint8 + float16, head int8 | 91 | [39.870] ([-0.07]%, [-0.33]..[+0.20]) | "
     "[27.264] ([+0.17]%, [-0.08]..[+0.42]) | [96.5]% / [97.5]% | [-0.58]% / [+0.58]% | [93.8]% |",
     tuple(_quality("int4", c, k) for c, k in ((2, 0), (3, 0), (3, 1), (3, 2), (4, 0), (5, 0), (5, 1), (5, 2), (6, 0),
                                               (6, 1), (7, 0), (7, 1), (8, 0)))),
    ("| GGUF blocks kept | int8, uint8 + float16 | 92 | [39.896] ([0]) | [27.218] ([0]) | [100]% | [-0.04]% / "
     "[+0.04]% | [100]% |",
     tuple(_quality("gguf", c, k) for c, k in ((2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (7, 1), (8, 0)))),
)
STARTUP = "bench/results/startup-zen5-2026-11-28/startup.log"
EVENING = "bench/results/startup-zen5-2026-11-28/startup-evening.log"  # after the start-up work of that evening
INSTALL, COSTS, GGUF_HOWTO = "docs/howto/install.md", "docs/performance.md", "docs/howto/gguf.md"
GPT_CHAR_WALL = r"^attnlab generate gpt-char --prompt \"The \"\s+([\d.]+)"  # the start-up table's wall column


def _ratio_column(threads: str, column: int) -> str:
    """The llama.cpp log's table: the row of `threads` ("1", "2 (compile=True)"), the column-th cell after it
    (2: decode ratio, 5: prefill ratio), a number followed by x."""
    return r"^\| " + re.escape(threads) + r" \|" + r"[^|]+\|" * column + r" ([\d.]+)x"


DECODE_1, DECODE_2 = _ratio_column("1 (compile=True)", 2), _ratio_column("2 (compile=True)", 2)
PREFILL_1, PREFILL_2 = _ratio_column("1 (compile=True)", 5), _ratio_column("2 (compile=True)", 5)
EAGER_1, EAGER_2 = _ratio_column("1", 2), _ratio_column("2", 2)
# the benchmark's table since the compiled step became the default: a path's row at a thread count
PATH_DECODE = {(p, t): _ratio_column(f"{p} | {t}", 2) for p in ("default (compiled step)", "eager (--no-compile)")
               for t in (1, 2)}
PATH_PREFILL = {t: _ratio_column(f"default (compiled step) | {t}", 7) for t in (1, 2)}
FLOOR = {t: r"^\| default \(compiled step\) \| " + str(t) + r" \|" + r"[^|]+\|" * 3 + r" ([\d.]+) \|"
         for t in (1, 2)}  # the fraction of the memory floor attnlab's decode reaches
LLAMA_FLOOR = {t: r"^\| default \(compiled step\) \| " + str(t) + r" \|" + r"[^|]+\|" * 4 + r" ([\d.]+) \|"
               for t in (1, 2)}  # the fraction of the memory floor llama.cpp's decode reaches
FRESH = {(n, side): r"^\| " + str(n) + r" \|" + r"[^|]+\|" * side + r" ([\d.]+) s \|"
         for n in (1, 16) for side in (0, 1)}  # fresh processes: attnlab's wall (side 0), llama-completion's (1)
LATE_QUICK = "bench/results/bench-quick-night-2026-11-28"  # the prompt attention / SwiGLU / one pool work
PREFILL_RATE_2 = r"^\| default \(compiled step\) \| 2 \|" + r"[^|]+\|" * 5 + r" ([\d.]+) \|"  # prefill tokens/s
DEFAULT_1, DEFAULT_2 = PATH_DECODE["default (compiled step)", 1], PATH_DECODE["default (compiled step)", 2]
NO_COMPILE_1, NO_COMPILE_2 = PATH_DECODE["eager (--no-compile)", 1], PATH_DECODE["eager (--no-compile)", 2]
# the train benchmark's table: an implementation's row, its MFU (the first "N%") or its ratio to attnlab
MFU = r"^\s+{}\s.*?\s(\d+)%"
VS_ATTNLAB = r"^\s+{}\s.*?\s([\d.]+)x"
PAIRED = r"^\s+{}\s.*?\s[\d.]+x\s+([\d.]+)x \("  # the paired ratio's median, before its IQR
# the generate benchmark's summary line: "... batch 1: attnlab 37.2 tok/s, HF 33.0 tok/s, x1.13 (CPU time x2.12)"
GEN_WALL = r"batch {}: .*?, x([\d.]+) "
GEN_CPU = r"batch {}: .*?\(CPU time x([\d.]+)\)"
# the decode_step benchmark's second table (ten cells; the generate table's ratio row has six): @256 / @16
STEP_256_16 = r"^\| GPT-2-small shape \(random\) \|[^|]+\|[^|]+\| ([\d.]+)x \|(?:[^|\n]+\|){5}"


def _baby_cell(n: int) -> str:
    """The baby-GPT log's run 1, the first number of its n-th cell after the run's (1: load average, 2: attnlab peak
    MB, 3: nanoGPT's, 4: their ratio, 5 and 6: the wall seconds, 7 and 8: the val losses)."""
    return r"^\| 1 \|" + r"[^|]+\|" * (n - 1) + r" ([\d.]+)"


FINE_TUNE = "bench/results/fine-tune-2026-12-06"


def _one_figure_each(cells: str, keys: tuple[str, ...]) -> list[tuple[str, str]]:
    """A table row whose figures are marked [like this], once per figure: (the row with that one figure in braces
    and the others plain, the log key of that figure), in the order the figures stand."""
    parts = re.split(r"\[([^]]*)\]", cells)  # text, figure, text, figure, ..., text
    figures = parts[1::2]
    assert len(figures) == len(keys), cells
    rows = []
    for i, key in enumerate(keys):
        shown = [f"{{{fig}}}" if j == i else fig for j, fig in enumerate(figures)]
        rows.append(("".join(t + f for t, f in zip(parts[::2], [*shown, ""], strict=True)), key))
    return rows


KQ_LOG = "bench/results/llama-cpp-agreement-kquants-2026-12-07/kquants.log"  # llama_cpp_agreement --kquants
# docs/interop.md's table: preset -> its cells, figures in [brackets], in the order of KQ_COLUMNS
KQ_ROWS = {"Q4_K_M": "[1.31] | [1.33] | [0.036] | [1.55] | [1.39] | [1.70] | [8] of 8 | [0]",
           "Q4_K_S": "[1.57] | [1.58] | [0.032] | [1.60] | [2.19] | [1.40] | [8] of 8 | [4]",
           "Q5_K_M": "[1.66] | [1.67] | [0.033] | [1.18] | [1.46] | [1.42] | [8] of 8 | [14]",
           "Q5_K_S": "[1.48] | [1.47] | [0.030] | [1.42] | [1.43] | [1.27] | [8] of 8 | [0]",
           "Q6_K": "[1.65] | [1.64] | [0.027] | [1.47] | [1.02] | [1.18] | [7] of 8 | [0]",
           "Q5_0": "[0.90] | [0.92] | [0.031] | [0.90] | [1.13] | [0.93] | [7] of 8 | [0]",
           "Q5_1": "[1.35] | [1.33] | [0.032] | [1.24] | [1.03] | [0.96] | [8] of 8 | [0]",
           "Q4_0": "[2.11] | [2.09] | [0.057] | [1.87] | [1.36] | [2.71] | [5] of 8 | [0]",
           "Q4_1": "[0.99] | [0.99] | [0.038] | [1.02] | [1.09] | [0.98] | [8] of 8 | [0]",
           "Q8_0": "[0.78] | [0.78] | [0.024] | [1.34] | [1.16] | [1.26] | [8] of 8 | [0]"}
KQ_COLUMNS = (1, 2, 5, 6, 3, 4, 8, None)  # the log row's fields after the preset; None: the expanded count


def _kq0(preset: str, tensor: str, name: str) -> str:
    """The --kquants log's "layer 0" line of `preset`: the figure after `name` in the part of `tensor`."""
    return rf"^  {preset} layer 0,.*{tensor}: [^;\n]*\b{name} ([\d.]+)"


def _kq(preset: str, column: int | None) -> str:
    """The --kquants log's row of `preset`: its column-th field after the name, or (None) the count of matrices
    attnlab expanded, in parentheses at the end."""
    if column is None:
        return rf"^{preset}\s.*\((\d+)\)$"
    return rf"^{preset}\s+" + r"\S+\s+" * column + r"([\d.e+-]+)"


THREADS_SHORT = "bench/results/threads-2026-12-07"  # python -m attnlab.benchmarks.threads --only gpt-char,short ...
THREADS_SHORT_ROWS = ("[1.36] | [0.91] | [1.00]", "[1.36] | [1.03] | [0.99]", "[1.05] | [0.95] | [1.04]",
                      "[0.89] | [0.94] | [1.08]", "[1.12] | [0.97] | [0.96]", "[0.89] | [1.02] | [1.21]",
                      "[0.94] | [1.04] | [0.95]", "[1.01] | [1.16] | [1.02]", "[1.03] | [1.09] | [0.97]",
                      "[1.01] | [0.99] | [1.08]")

GPT2_PARAMS = "docs/experiments/results/gpt2_params.jsonl"  # counted by docs/experiments/gpt2_params.py

NEWCOMER = "bench/results/newcomer-2026-12-06/newcomer.json"
FIRST_RUN = "bench/results/first-run-2026-12-06/after.log"
QWEN2_SHAPE = "bench/results/qwen2-shape-llama-cpp-2026-12-07/llama-cpp.log"
QWEN2_ROW = r"^\| default \(compiled step\) \| 1 \|"  # the default path at one thread
DATA_PREP = "bench/results/data-prep-2026-12-07/gpt-bpe-30mb-after.log"  # newcomer --recipe gpt-bpe, 30 MB
DATA_PREP_2 = "bench/results/data-prep-2026-12-07/gpt-bpe-30mb-after-2.log"  # the same, a second run
DATA_PREP_BEFORE = "bench/results/data-prep-2026-12-07/gpt-bpe-30mb-before.log"  # freed heap kept
PHASES = "bench/results/data-prep-2026-12-07/phases-gpt-bpe-{}.log"  # data --prep-phases gpt-bpe; before, after
PREP_ROW = r"^tokenizer\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(\d+)"  # the newcomer table's preparation row
WHOLE_PEAK = r"^peak resident memory of the training process: (\d+) MB"
PREP_END = r"^resident when the preparation ends: (\d+) MB"
FIRST_RUN_7 = "bench/results/first-run-2026-12-07"
# round 1 of the interleaved first runs: the first line of `what` in the before (or after) tree's run
ROUND_1 = r"## round 1: {side}.*\n(?:.*\n)*?.*{what} ([\d.]+) {unit}"
QUIET = "bench/results/first-run-2026-12-07/quiet.log"
LONG = "bench/results/long-prompts-2026-12-07/q4_1.log"
LONG_AFTER = "bench/results/long-prompts-2026-12-07/q4_1-second-turn.log"  # with the attention kernel at any length
Q4_K_COMPACT = "bench/results/q4-k-compact-2026-12-07"  # Q4_K's compact tiles: the kernels, SmolLM2, TinyLlama
Q4_0_TILES = "bench/results/q4_0-tiles-2026-12-07/quiet.log"
Q4_0_LLAMA = "bench/results/q4_0-tiles-2026-12-07/llama-cpp-q4_0.log"
CONFIRM = "bench/results/first-run-2026-12-07/quiet-confirm.log"
AGAIN = "bench/results/first-run-2026-12-07/quiet-again.log"  # the same code, the next morning, quieter
CPU = r" \|.*\| [\d.]+ s \| ([\d.]+) s \|$"  # a first_run row's CPU time
WALL = r" \|.*\| ([\d.]+) s \| [\d.]+ s \|$"  # a first_run row's wall time
NANO = "bench/results/nanogpt-repo-2026-12-07/quiet.log"
NANO_LOADED = "bench/results/nanogpt-repo-2026-12-07/no-compiler-import-loaded.log"  # AdamW without torch._dynamo
NANO_CPU = r"^round 1, attnlab {} / nanoGPT: .*CPU ([\d.]+)x"  # a variant's CPU-time ratio in the summary lines
NANO_QUIET = "bench/results/nanogpt-repo-2026-12-07/no-compiler-import-quiet.log"  # the same pair, quiet
NANO_QUIET_3 = "bench/results/nanogpt-repo-2026-12-07/quiet-3-rounds.log"  # three more quiet rounds
NANO_WALL = r"^round 1, attnlab same / nanoGPT: wall ([\d.]+)x"
NANO_PEAK = r"^round 1, attnlab same / nanoGPT: .*peak memory ([\d.]+)x"
NANO_SAME = "bench/results/nanogpt-repo-2026-12-07/no-compiler-import-loaded-same.log"  # a second run, same work only
NANO_NO_BIAS = "bench/results/nanogpt-repo-2026-12-07/same-no-bias-loaded.log"  # "same" without biases, 3 rounds
NANO_CPU_ROUND = r"^round {}, attnlab {} / nanoGPT: .*CPU ([\d.]+)x"  # a round's CPU-time ratio
def NANO_ROW(side: str, skip: int) -> str:  # noqa: N802 (read like the other patterns)
    """The pattern of one column of a contestant's row in nanogpt_repo's table: after `skip` columns past the seed."""
    return rf"^\| 1 \| {side} \| \d+ \|" + r"[^|]+\|" * skip + r" ([\d.]+) (?:s |MB )?\|"
QWEN2_QUIET = "bench/results/qwen2-shape-llama-cpp-2026-12-07/quiet.log"


def QWEN2_COL(threads: int, col: int, path: str = "default \\(compiled step\\)") -> str:  # noqa: N802
    """A column of the quiet Qwen2-shape table: `col` cells after the threads cell, a number (x or not)."""
    return rf"^\| {path} \| {threads} \|" + r"[^|]+\|" * col + r" ([\d.]+)x? \|"


COST_RUN = "bench/results/cost-2026-12-07/cost-gpt2.log"  # attnlab cost gpt2 --seq 1024, three runs timed
COST_TESTS = "bench/results/cost-2026-12-07/test-cost.log"  # python -m pytest -q tests/test_cost.py, timed
SWEEP_GPT2, SWEEP_NARROW = "docs/img/cost-gpt2/sweep.txt", "docs/img/cost-narrow/sweep.txt"  # attnlab cost --measure


def SWEEP_ROW(series: str, n: int, column: int) -> str:  # noqa: N802 (read like the other patterns)
    """A sweep table's cell: the row of `series` at `n`, column 0 predicted FLOPs, 1 ms, 2 GFLOP/s, 3 MFU %."""
    return rf"^{series}\s+{n}\s+" + r"\S+\s+" * column + r"([\d.]+)"


def SWEEP_EXP(series: str, which: int) -> str:  # noqa: N802
    """A sweep's fitted growth exponent of `series`: 0 measured, 1 predicted (all n), 2 measured, 3 predicted (upper
    half of n), the which-th number of its line."""
    return rf"^  {series}\s+measured[^\d\n]*" + r"(?:[\d.]+[^\d\n]+)" * which + r"([\d.]+)"


CLAIMS = [
    ("docs/interop.md", "decode {1.07}x at one thread", QWEN2_QUIET, QWEN2_COL(1, 2), 1),
    ("docs/interop.md", "and {0.90}x\nat two", QWEN2_QUIET, QWEN2_COL(2, 2), 1),
    ("docs/interop.md", "prefill {1.89}x and 1.73x", QWEN2_QUIET, QWEN2_COL(1, 7), 1),
    ("docs/interop.md", "prefill 1.89x and {1.73}x", QWEN2_QUIET, QWEN2_COL(2, 7), 1),
    ("bench/RESULTS.md", "decode {32.1} against 29.9 tokens/s", QWEN2_QUIET, QWEN2_COL(1, 0), 1),
    ("bench/RESULTS.md", "decode 32.1 against {29.9} tokens/s", QWEN2_QUIET, QWEN2_COL(1, 1), 1),
    ("bench/RESULTS.md", "one thread ({1.07}x)", QWEN2_QUIET, QWEN2_COL(1, 2), 1),
    ("bench/RESULTS.md", "{39.1} against 43.4 at two", QWEN2_QUIET, QWEN2_COL(2, 0), 1),
    ("bench/RESULTS.md", "39.1 against {43.4} at two", QWEN2_QUIET, QWEN2_COL(2, 1), 1),
    ("bench/RESULTS.md", "at two ({0.90}x)", QWEN2_QUIET, QWEN2_COL(2, 2), 1),
    ("bench/RESULTS.md", "| nanoGPT (seed 1337) | {170.8} s |", NANO, NANO_ROW("nanogpt", 0), 1),
    ("bench/RESULTS.md", "| attnlab typed (seed 0) | {199.8} s |", NANO, NANO_ROW("typed", 0), 1),
    ("bench/RESULTS.md", "| attnlab same (seed 0) | {171.8} s |", NANO, NANO_ROW("same", 0), 1),
    ("bench/RESULTS.md", "| 170.6 s | {366} MB |", NANO, NANO_ROW("nanogpt", 2), 1),
    ("bench/RESULTS.md", "| 198.8 s | {410} MB |", NANO, NANO_ROW("typed", 2), 1),
    ("bench/RESULTS.md", "| 171.4 s | {384} MB |", NANO, NANO_ROW("same", 2), 1),
    ("bench/RESULTS.md", "attnlab takes nanoGPT's time ({1.005}x)", NANO,
     r"^round 1, attnlab same / nanoGPT: wall ([\d.]+)x", 1),
    ("bench/RESULTS.md", "with its defaults {1.169}x the\ntime", NANO,
     r"^round 1, attnlab typed / nanoGPT: wall ([\d.]+)x", 1),
    ("bench/RESULTS.md", "attnlab's model is lower by {0.015} at seed 0", NANO,
     r"^round 1, attnlab same / nanoGPT: .*same windows -([\d.]+)\d", 1),
    ("bench/RESULTS.md", "| nanoGPT (seed 1337) | {441.3} s |", NANO_LOADED, NANO_ROW("nanogpt", 0), 1),
    ("bench/RESULTS.md", "| attnlab typed (seed 0) | {419.2} s |", NANO_LOADED, NANO_ROW("typed", 0), 1),
    ("bench/RESULTS.md", "| attnlab same (seed 0) | {408.4} s |", NANO_LOADED, NANO_ROW("same", 0), 1),
    ("bench/RESULTS.md", "| 155.5 s | {366} MB |", NANO_LOADED, NANO_ROW("nanogpt", 2), 1),
    ("bench/RESULTS.md", "| 441.3 s | {155.5} s |", NANO_LOADED, NANO_ROW("nanogpt", 1), 1),
    ("bench/RESULTS.md", "| 419.2 s | {173.7} s |", NANO_LOADED, NANO_ROW("typed", 1), 1),
    ("bench/RESULTS.md", "| 408.4 s | {160.6} s |", NANO_LOADED, NANO_ROW("same", 1), 1),
    ("bench/RESULTS.md", "| 173.7 s | {340} MB |", NANO_LOADED, NANO_ROW("typed", 2), 1),
    ("bench/RESULTS.md", "| 160.6 s | {317} MB |", NANO_LOADED, NANO_ROW("same", 2), 1),
    ("bench/RESULTS.md", "attnlab's peak is {0.866}x nanoGPT's", NANO_LOADED,
     r"^round 1, attnlab same / nanoGPT: .*peak memory ([\d.]+)x", 1),
    ("bench/RESULTS.md", "and {0.929}x with gpt-char's defaults\n(matplotlib", NANO_LOADED,
     r"^round 1, attnlab typed / nanoGPT: .*peak memory ([\d.]+)x", 1),
    ("bench/RESULTS.md", "CPU\ntime {1.032}x (same work)", NANO_LOADED, NANO_CPU.format("same"), 1),
    ("bench/RESULTS.md", "and {1.117}x (defaults)", NANO_LOADED, NANO_CPU.format("typed"), 1),
    ("bench/RESULTS.md", "doing the same work: {0.951}x the wall time", NANO_QUIET, NANO_WALL, 1),
    ("bench/RESULTS.md", "in rounds 1-3, wall {0.987}x", NANO_QUIET_3,
     r"^round 1, attnlab same / nanoGPT: .*wall ([\d.]+)x", 1),
    ("bench/RESULTS.md", "wall 0.987x, {1.015}x, 0.948x", NANO_QUIET_3,
     r"^round 2, attnlab same / nanoGPT: .*wall ([\d.]+)x", 1),
    ("bench/RESULTS.md", "wall 0.987x, 1.015x, {0.948}x", NANO_QUIET_3,
     r"^round 3, attnlab same / nanoGPT: .*wall ([\d.]+)x", 1),
    ("bench/RESULTS.md", "CPU time {0.986}x, 1.014x and 0.947x", NANO_QUIET_3,
     r"^round 1, attnlab same / nanoGPT: .*CPU ([\d.]+)x", 1),
    ("bench/RESULTS.md", "CPU time 0.986x, {1.014}x and 0.947x", NANO_QUIET_3,
     r"^round 2, attnlab same / nanoGPT: .*CPU ([\d.]+)x", 1),
    ("bench/RESULTS.md", "CPU time 0.986x, 1.014x and {0.947}x", NANO_QUIET_3,
     r"^round 3, attnlab same / nanoGPT: .*CPU ([\d.]+)x", 1),
    ("bench/RESULTS.md", "peak memory {0.867}x, 0.912x, 0.926x", NANO_QUIET_3,
     r"^round 1, attnlab same / nanoGPT: .*peak memory ([\d.]+)x", 1),
    ("bench/RESULTS.md", "peak memory 0.867x, {0.912}x, 0.926x", NANO_QUIET_3,
     r"^round 2, attnlab same / nanoGPT: .*peak memory ([\d.]+)x", 1),
    ("bench/RESULTS.md", "peak memory 0.867x, 0.912x, {0.926}x", NANO_QUIET_3,
     r"^round 3, attnlab same / nanoGPT: .*peak memory ([\d.]+)x", 1),
    ("bench/RESULTS.md", "0.951x the wall time, {0.950}x the CPU time, 0.863x the peak memory, one quiet", NANO_QUIET,
     NANO_CPU.format("same"), 1),
    ("bench/RESULTS.md", "0.950x the CPU time, {0.863}x the peak memory, one quiet", NANO_QUIET, NANO_PEAK, 1),
    ("bench/RESULTS.md", "under load (15-19): CPU {1.032}x,", NANO_LOADED, NANO_CPU.format("same"), 1),
    ("bench/RESULTS.md", "CPU 1.032x, \nmemory {0.866}x", NANO_LOADED, NANO_PEAK, 1),
    ("bench/RESULTS.md", "gpt-char's defaults {1.117}x / 0.929x", NANO_LOADED, NANO_CPU.format("typed"), 1),
    ("bench/RESULTS.md", "gpt-char's defaults 1.117x / {0.929}x", NANO_LOADED,
     r"^round 1, attnlab typed / nanoGPT: .*peak memory ([\d.]+)x", 1),
    ("bench/RESULTS.md", "nanoGPT {150.0} s wall, 149.9 s CPU",
     NANO_QUIET, r"^\| 1 \| nanogpt \| \d+ \| ([\d.]+) \|", 1),
    ("bench/RESULTS.md", "attnlab doing the same work {142.6} s, 142.5 s, 316 MB", NANO_QUIET,
     r"^\| 1 \| same \| \d+ \| ([\d.]+) \|", 1),
    ("bench/RESULTS.md", "142.6 s, 142.5 s, {316} MB",
     NANO_QUIET, r"^\| 1 \| same \|[^|]+\|[^|]+\|[^|]+\| (\d+) \|", 1),
    ("bench/RESULTS.md", "**0.951x the wall time, {0.950}x the CPU time, 0.863x\nthe peak memory**", NANO_QUIET,
     NANO_CPU.format("same"), 1),
    ("bench/RESULTS.md", "held-out loss {0.0152} lower on the same 1,742 windows", NANO_QUIET,
     r"^round 1, attnlab same / nanoGPT: .*same windows -([\d.]+)", 1),
    ("bench/RESULTS.md", "load 12-15: CPU {1.021}x, peak", NANO_SAME, NANO_CPU.format("same"), 1),
    ("bench/RESULTS.md", "load 12-15: CPU 1.021x, peak {0.865}x", NANO_SAME,
     r"^round 1, attnlab same / nanoGPT: .*peak memory ([\d.]+)x", 1),
    ("bench/RESULTS.md", "| 1 (19) | 158.0 s | 150.8 s | {0.954}x |", NANO_NO_BIAS,
     NANO_CPU_ROUND.format(1, "same"), 1),
    ("bench/RESULTS.md", "| 150.8 s | 0.954x | 150.1 s | {0.950}x |", NANO_NO_BIAS,
     NANO_CPU_ROUND.format(1, "same-bias"), 1),
    ("bench/RESULTS.md", "| 2 (20 -> 5) | 145.8 s | 152.5 s | {1.045}x |", NANO_NO_BIAS,
     NANO_CPU_ROUND.format(2, "same"), 1),
    ("bench/RESULTS.md", "| 152.5 s | 1.045x | 149.3 s | {1.024}x |", NANO_NO_BIAS,
     NANO_CPU_ROUND.format(2, "same-bias"), 1),
    ("bench/RESULTS.md", "| 3 (5 -> 3) | 145.4 s | 142.6 s | {0.981}x |", NANO_NO_BIAS,
     NANO_CPU_ROUND.format(3, "same"), 1),
    ("bench/RESULTS.md", "| 142.6 s | 0.981x | 138.6 s | {0.953}x |", NANO_NO_BIAS,
     NANO_CPU_ROUND.format(3, "same-bias"), 1),
    ("bench/RESULTS.md", "CPU {0.954}x, 1.045x, 0.981x (with gpt-char's biases 0.950x, 1.024x, 0.953x)", NANO_NO_BIAS,
     NANO_CPU_ROUND.format(1, "same"), 1),
    ("bench/RESULTS.md", "CPU 0.954x, {1.045}x, 0.981x (with gpt-char's biases 0.950x, 1.024x, 0.953x)", NANO_NO_BIAS,
     NANO_CPU_ROUND.format(2, "same"), 1),
    ("bench/RESULTS.md", "CPU 0.954x, 1.045x, {0.981}x (with gpt-char's biases 0.950x, 1.024x, 0.953x)", NANO_NO_BIAS,
     NANO_CPU_ROUND.format(3, "same"), 1),
    ("bench/RESULTS.md", "CPU 0.954x, 1.045x, 0.981x (with gpt-char's biases {0.950}x, 1.024x, 0.953x)", NANO_NO_BIAS,
     NANO_CPU_ROUND.format(1, "same-bias"), 1),
    ("bench/RESULTS.md", "CPU 0.954x, 1.045x, 0.981x (with gpt-char's biases 0.950x, {1.024}x, 0.953x)", NANO_NO_BIAS,
     NANO_CPU_ROUND.format(2, "same-bias"), 1),
    ("bench/RESULTS.md", "CPU 0.954x, 1.045x, 0.981x (with gpt-char's biases 0.950x, 1.024x, {0.953}x)", NANO_NO_BIAS,
     NANO_CPU_ROUND.format(3, "same-bias"), 1),
    ("docs/training.md", "attnlab's peak is {0.929}x nanoGPT's with", NANO_LOADED,
     r"^round 1, attnlab typed / nanoGPT: .*peak memory ([\d.]+)x", 1),
    ("docs/training.md", "and {0.866}x doing the same work", NANO_LOADED,
     r"^round 1, attnlab same / nanoGPT: .*peak memory ([\d.]+)x", 1),
    ("bench/RESULTS.md", "| first (empty caches) | {3.32} s |", QUIET, r"^\| first \(empty cache\)" + WALL, 1),
    ("bench/RESULTS.md", "| second | {2.39} s |", QUIET, r"^\| second" + WALL, 1),
    ("bench/RESULTS.md", "| third | {2.01} s |", QUIET, r"^\| third" + WALL, 1),
    ("bench/RESULTS.md", "| one-token prompt \"The\" | {2.00} s |", QUIET,
     r"^\| one-token prompt, the build perhaps still at work" + WALL, 1),
    ("bench/RESULTS.md", "made it wait {0.50} s for a core", "bench/results/first-run-2026-12-07/quiet-before-hold.log",
     r"^    \[phases, .*waited for a core ([\d.]+) s", 1),
    ("bench/RESULTS.md", "({3.32} s;\n3.08 s in a", QUIET, r"^\| first \(empty cache\)" + WALL, 1),
    ("bench/RESULTS.md", "(3.32 s;\n{3.08} s in a", "bench/results/first-run-2026-12-07/quiet-hold.log",
     r"^\| first \(empty cache\)" + WALL, 1),
    ("bench/RESULTS.md", "| first (empty caches) | {2.21} s | 3.01 s |", AGAIN, r"^\| first \(empty cache\)" + WALL, 1),
    ("bench/RESULTS.md", "| first (empty caches) | 2.21 s | {3.01} s |", AGAIN, r"^\| first \(empty cache\)" + CPU, 1),
    ("bench/RESULTS.md", "| second | {1.83} s |", AGAIN, r"^\| second" + WALL, 1),
    ("bench/RESULTS.md", "| third | {1.78} s |", AGAIN, r"^\| third" + WALL, 1),
    ("bench/RESULTS.md", "| one-token prompt \"The\" | {1.73} s |", AGAIN,
     r"^\| one-token prompt, the build perhaps still at work" + WALL, 1),
    ("bench/RESULTS.md", "| after the compiled step's build | {1.65} s |", AGAIN, r"^\| after the build" + WALL, 1),
    ("bench/RESULTS.md", "| again | {1.98} s |", AGAIN, r"^\| after the build, again" + WALL, 1),
    ("bench/RESULTS.md", "| \"The\" again | {1.59} s |", AGAIN, r"^\| one-token prompt, after the build" + WALL, 1),
    ("bench/RESULTS.md", "the first token {0.37} s wall / 0.72 s CPU,\nthe seven", AGAIN,
     r"^    \[phases, .*first token ([\d.]+) / ", 1),
    ("bench/RESULTS.md", "The first run's phases: imports {1.06} s", AGAIN,
     r"^    \[phases, wall / CPU: imports ([\d.]+) / ", 1),
    ("bench/RESULTS.md", "| pp512 | 1 | {492.0} | 168.4 | 2.92x |", LONG, r"^\| pp512 \| 1 \| ([\d.]+) \|", 1),
    ("bench/RESULTS.md", "| pp512 | 1 | 492.0 | {168.4} | 2.92x |", LONG,
     r"^\| pp512 \| 1 \| [\d.]+ \| ([\d.]+) \|", 1),
    ("bench/RESULTS.md", "| pp512 | 2 | 612.5 | 329.1 | {1.86}x |", LONG, r"^\| pp512 \| 2 \|.* ([\d.]+)x \|$", 1),
    ("bench/RESULTS.md", "| 1 | 390.6 | 149.6 | {2.61}x |", LONG, r"^\| pp512 after .*\| 1 \|.* ([\d.]+)x \|$", 1),
    ("bench/RESULTS.md", "| 2 | 559.6 | 289.5 | {1.93}x |", LONG, r"^\| pp512 after .*\| 2 \|.* ([\d.]+)x \|$", 1),
    ("bench/RESULTS.md", "a whole decoding step takes {8.66} ms", Q4_0_TILES, r"^\| Q4_0 tiles \| ([\d.]+) ms", 1),
    ("bench/RESULTS.md", "takes 8.66 ms against {8.77} ms", Q4_0_TILES, r"^\| Q4_1 tiles \(before\) \| ([\d.]+) ms", 1),
    ("bench/RESULTS.md", "(qkv {1.25}x, out", Q4_0_TILES, r"^\| qkv .*\| ([\d.]+)x \| \d+ / ", 1),
    ("bench/RESULTS.md", "load average 0.9-1.0): decode {0.81}x at one thread", Q4_0_LLAMA,
     r"^\| default \(compiled step\) \| 1 \|[^|]+\|[^|]+\| ([\d.]+)x", 1),
    ("bench/RESULTS.md", "0.81x at one thread and {0.76}x at two", Q4_0_LLAMA,
     r"^\| default \(compiled step\) \| 2 \|[^|]+\|[^|]+\| ([\d.]+)x", 1),
    ("bench/RESULTS.md", "one core was 42.3 GB/s then and {18.7} GB/s now", Q4_0_LLAMA, r"1 core ([\d.]+) GB/s", 1),
    ("bench/RESULTS.md", "the first run {2.47} s wall, every later run", CONFIRM,
     r"^\| first \(empty cache\)" + WALL, 1),
    ("docs/performance.md", "the first run {2.47} s and every later one", CONFIRM,
     r"^\| first \(empty cache\)" + WALL, 1),
    ("docs/performance.md", "the first {2.21} s wall", AGAIN, r"^\| first \(empty cache\)" + WALL, 1),
    ("docs/performance.md", "the second 1.83 s,\nthe third {1.78} s", AGAIN, r"^\| third" + WALL, 1),
    ("docs/performance.md", "the one-token prompt {1.73} s", AGAIN,
     r"^\| one-token prompt, the build perhaps still at work" + WALL, 1),
    ("docs/performance.md", "the first run {3.32} s wall", QUIET, r"^\| first \(empty cache\)" + WALL, 1),
    ("docs/performance.md", "the second {2.39} s", QUIET, r"^\| second" + WALL, 1),
    ("docs/performance.md", "the third {2.01} s", QUIET, r"^\| third" + WALL, 1),
    ("docs/performance.md", "the one-token prompt\n{2.00} s", QUIET,
     r"^\| one-token prompt, the build perhaps still at work" + WALL, 1),
    ("docs/training.md", "the bigram baseline) peaks at {443} MB resident", DATA_PREP, PREP_ROW, 1),
    ("docs/training.md", "from {231} MB at\nstart-up", DATA_PREP,
     r"^start-up \(before any line\)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(\d+)", 1),
    ("docs/training.md", "{422} MB\nin a second run", DATA_PREP_2, PREP_ROW, 1),
    ("docs/training.md", "{471} MB the same day before", DATA_PREP_BEFORE, PREP_ROW, 1),
    ("docs/training.md", "the preparation ends at {388} MB", PHASES.format("after"), PREP_END, 1),
    ("docs/training.md", "where it ended at {480} MB", PHASES.format("before"), PREP_END, 1),
    ("docs/training.md", "the whole run's peak fell from {547}", DATA_PREP_BEFORE, WHOLE_PEAK, 1),
    ("docs/training.md", "fell from 547 to {456} MB", DATA_PREP, WHOLE_PEAK, 1),
    # bench/RESULTS.md and docs/performance.md: the first run on 2026-12-07 (a busy machine)
    ("bench/RESULTS.md", "a\n  fixed loop took {0.58} s alone", f"{FIRST_RUN_7}/priority.log",
     r"^\| alone \| ([\d.]+) s", 1),
    ("bench/RESULTS.md", "{0.97} s beside four detached processes at nice 19", f"{FIRST_RUN_7}/priority.log",
     r"^\| beside 4 detached processes at nice 19 \| ([\d.]+) s", 1),
    ("bench/RESULTS.md", "and {0.52} s beside four that also", f"{FIRST_RUN_7}/priority.log",
     r"^\| beside 4 detached processes at lowest_priority \| ([\d.]+) s", 1),
    ("bench/RESULTS.md", "priority.log`, load {14.6})", f"{FIRST_RUN_7}/priority.log",
     r"load average at the end: ([\d.]+)", 1),
    ("bench/RESULTS.md", "the first {2.58} s of CPU", f"{FIRST_RUN_7}/loaded.log",
     r"^\| first \(empty cache\) \|.*\| ([\d.]+) s \|$", 1),
    ("bench/RESULTS.md", "({7.83} s wall, 5.25 s of it waiting", f"{FIRST_RUN_7}/loaded.log",
     r"^\| first \(empty cache\) \|.*\| ([\d.]+) s \| [\d.]+ s \|$", 1),
    ("bench/RESULTS.md", "(7.83 s wall, {5.25} s of it waiting", f"{FIRST_RUN_7}/loaded.log",
     r"waited for a core ([\d.]+) s", 1),
    ("bench/RESULTS.md", "the others {2.52}-3.19 s", f"{FIRST_RUN_7}/loaded.log",
     r"^\| after the build, again \|.*\| ([\d.]+) s \|$", 1),
    ("bench/RESULTS.md", "the others 2.52-{3.19} s", f"{FIRST_RUN_7}/loaded.log", r"^\| third \|.*\| ([\d.]+) s \|$",
     1),
    ("bench/RESULTS.md", "seven tokens after the first took {1.05} s of CPU before",
     f"{FIRST_RUN_7}/first-runs-before-after.log",
     ROUND_1.format(side="before", what=r"the other tokens [\d.]+ /", unit="s"), 1),
    ("bench/RESULTS.md", "and {0.47} s after (round 1", f"{FIRST_RUN_7}/first-runs-before-after.log",
     ROUND_1.format(side="after", what=r"the other tokens [\d.]+ /", unit="s"), 1),
    ("bench/RESULTS.md", "makes the kept weights, {0.23} s before", f"{FIRST_RUN_7}/first-runs-before-after.log",
     ROUND_1.format(side="before", what=r"first token [\d.]+ /", unit="s"), 1),
    ("bench/RESULTS.md", "0.23 s before and {0.49} s after; peak", f"{FIRST_RUN_7}/first-runs-before-after.log",
     ROUND_1.format(side="after", what=r"first token [\d.]+ /", unit="s"), 1),
    ("bench/RESULTS.md", "peak memory {506} MB\n  before", f"{FIRST_RUN_7}/first-runs-before-after.log",
     ROUND_1.format(side="before", what=r"peak memory", unit="MB"), 1),
    ("bench/RESULTS.md", "before, {871} MB after", f"{FIRST_RUN_7}/first-runs-before-after.log",
     ROUND_1.format(side="after", what=r"peak memory", unit="MB"), 1),
    ("bench/RESULTS.md", "the imports {1.25} s (torch's", f"{FIRST_RUN_7}/loaded.log",
     r"imports [\d.]+ / ([\d.]+) s", 1),
    ("bench/RESULTS.md", "the GGUF model and tokenizer {0.34} s", f"{FIRST_RUN_7}/loaded.log",
     r"model and tokenizer loaded [\d.]+ / ([\d.]+) s", 1),
    ("bench/RESULTS.md", "the first token {0.41} s, the seven after it 0.49 s", f"{FIRST_RUN_7}/loaded.log",
     r"first token [\d.]+ / ([\d.]+) s", 1),
    ("bench/RESULTS.md", "the first token 0.41 s, the seven after it {0.49} s", f"{FIRST_RUN_7}/loaded.log",
     r"the other tokens [\d.]+ / ([\d.]+) s", 1),
    (COSTS, "the first run took {2.58} s of CPU", f"{FIRST_RUN_7}/loaded.log",
     r"^\| first \(empty cache\) \|.*\| ([\d.]+) s \|$", 1),
    (COSTS, "the imports {1.25} s, the model", f"{FIRST_RUN_7}/loaded.log", r"imports [\d.]+ / ([\d.]+) s", 1),
    (COSTS, "the model and tokenizer {0.34} s, the first", f"{FIRST_RUN_7}/loaded.log",
     r"model and tokenizer loaded [\d.]+ / ([\d.]+) s", 1),
    (COSTS, "the first token {0.41} s and the seven", f"{FIRST_RUN_7}/loaded.log",
     r"first token [\d.]+ / ([\d.]+) s", 1),
    (COSTS, "the seven after it {0.49} s, with a", f"{FIRST_RUN_7}/loaded.log", r"the other tokens [\d.]+ / ([\d.]+) s",
     1),
    (COSTS, "peak of {870} MB", f"{FIRST_RUN_7}/loaded.log", r"peak memory (\d+) MB", 1),
    (COSTS, "its {7.83} s of wall time", f"{FIRST_RUN_7}/loaded.log",
     r"^\| first \(empty cache\) \|.*\| ([\d.]+) s \| [\d.]+ s \|$", 1),
    (COSTS, "a wait for a core ({5.25} s)", f"{FIRST_RUN_7}/loaded.log", r"waited for a core ([\d.]+) s", 1),
    (COSTS, "the same path ({2.52}-3.19 s of CPU)", f"{FIRST_RUN_7}/loaded.log",
     r"^\| after the build, again \|.*\| ([\d.]+) s \|$", 1),
    (COSTS, "the same path (2.52-{3.19} s of CPU)", f"{FIRST_RUN_7}/loaded.log", r"^\| third \|.*\| ([\d.]+) s \|$", 1),
    ("bench/RESULTS.md", "decodes at {0.90}x llama.cpp's rate", QWEN2_SHAPE,
     QWEN2_ROW + r"[^|]+\|" * 2 + r" ([\d.]+)x", 1),
    ("bench/RESULTS.md", "reads the 32-token prompt {1.47}x as fast", QWEN2_SHAPE,
     QWEN2_ROW + r"[^|]+\|" * 7 + r" ([\d.]+)x", 1),
    ("docs/interop.md", "decodes at {0.90}x llama.cpp's rate at one thread", QWEN2_SHAPE,
     QWEN2_ROW + r"[^|]+\|" * 2 + r" ([\d.]+)x", 1),
    ("docs/interop.md", "reads a prompt {1.47}x as fast", QWEN2_SHAPE, QWEN2_ROW + r"[^|]+\|" * 7 + r" ([\d.]+)x", 1),
    ("bench/RESULTS.md", "first run {2.21} s (3.01 s CPU)", AGAIN, r"^\| first \(empty cache\)" + WALL, 1),
    ("bench/RESULTS.md", "first run 2.21 s ({3.01} s CPU)", AGAIN, r"^\| first \(empty cache\)" + CPU, 1),
    ("bench/RESULTS.md", "second {1.83} s, third", AGAIN, r"^\| second" + WALL, 1),
    ("bench/RESULTS.md", "third {1.78} s, the one-token", AGAIN, r"^\| third" + WALL, 1),
    ("bench/RESULTS.md", "the one-token prompt \"The\" {1.73} s, after", AGAIN,
     r"^\| one-token prompt, the build perhaps still at work" + WALL, 1),
    (COSTS, "data preparation and\nmodel build {12.1} s", NEWCOMER,
     "json:training.totals.data preparation and model build", 1),
    (COSTS, "2,000 steps 7 m 48 s, four evaluations {75.5} s", NEWCOMER, "json:training.totals.evaluations", 1),
    (COSTS, "Peak resident memory {491} MB for the whole run", NEWCOMER, "json:training.peak_mb", 1),
    (COSTS, "The longest wait\nwith nothing printed was {24.4} s", NEWCOMER, "json:training.longest_wait.seconds", 1),
    ("bench/RESULTS.md", "peak resident memory {491} MB", NEWCOMER, "json:training.peak_mb", 1),
    ("bench/RESULTS.md", "the longest wait with nothing printed {24.4} s", NEWCOMER,
     "json:training.longest_wait.seconds", 1),
    # docs/howto/install.md: the GPU run
    (INSTALL, "GPT-2 small trains {1.60}x faster than HF eager", f"{GPU}/train_eager.log", VS_ATTNLAB.format("hf"),
     1),
    (INSTALL, "(bf16, {40}% MFU;", f"{GPU}/train_eager.log", MFU.format("attnlab"), 1),
    (INSTALL, "40% MFU; {51}% compiled)", f"{GPU}/train_compiled.log", MFU.format("attnlab"), 1),
    (INSTALL, "generates {1.56}-1.76x as many tokens", f"{GPU}/generate-fp32-after.log", GEN_WALL.format(1), 1),
    (INSTALL, "generates 1.56-{1.76}x as many tokens", f"{GPU}/generate-bf16-after.log", GEN_WALL.format(1), 1),
    # docs/performance.md and RESULTS: start-up
    (COSTS, "`attnlab models` answer in {0.06} s", f"{EVENING}", r"^attnlab models\s+([\d.]+)", 1),
    (COSTS, "--prompt \"The \"` in {0.80} s", f"{EVENING}", GPT_CHAR_WALL, 1),
    (COSTS, "--max-new-tokens 1` in {1.12} s", f"{EVENING}", r"--max-new-tokens 1\s+([\d.]+)", 1),
    (COSTS, "against {1.22} s for `python -c", f"{EVENING}", r"^python -c \"import torch\"\s+([\d.]+)", 1),
    ("bench/RESULTS.md", "`attnlab generate gpt-char` {0.80} s", f"{EVENING}", GPT_CHAR_WALL, 1),
    # docs/performance.md and README: the test suite's last run
    (COSTS, "of which pytest: {2,907} passed, 5 skipped", CI_RUN, r"^(\d+) passed, \d+ skipped",
     1),
    (COSTS, "of which pytest: 2,907 passed, {5} skipped", CI_RUN, r"^\d+ passed, (\d+) skipped",
     1),
    (COSTS, "1 xfailed (the masked LM's cloze target, not reached) | "
     "12 m {7} s", CI_RUN, r"passed, .* in \d+\.\d+s \(0:\d+:(\d+)\)", 1),
    (COSTS, "the documentation site, pytest) | 12 m {33} s", CI_RUN, r"the whole script: \d+ m (\d+) s", 1),
    (COSTS, "order dependence fixed the same evening (a command's held notes, a browser sequence split, the tour's "
     "quoted lines) | 15 m {9} s", f"{CI}/shuffled-1.log", r"passed, .* in \d+\.\d+s \(0:15:(\d+)\)", 1),
    (COSTS, "empty HOME and caches): {2,450} passed, 6 failed", f"{CI}/shuffled-1.log", r"(\d+) passed, \d+ skipped",
     1),
    (COSTS, "after those fixes (`bench/results/ci-2026-12-06/shuffled-2.log`): {2,457} passed", f"{CI}/shuffled-2.log",
     r"^(\d+) passed, \d+ skipped", 1),
    (COSTS, "2,457 passed, 5 skipped, 1 xfailed | 12 m {21} s", f"{CI}/shuffled-2.log",
     r"passed, .* in \d+\.\d+s \(0:12:(\d+)\)", 1),
    ("README.md", "in a fresh clone on the project's {2}-core AMD EPYC", CI_RUN,
     r"^# .* on the project's (\d+)-core ", 1),
    ("README.md", "2026-12-07: {2,907} passed, 5 skipped", CI_RUN, r"^(\d+) passed, \d+ skipped", 1),
    ("README.md", "2,907 passed, {5} skipped", CI_RUN, r"^\d+ passed, (\d+) skipped", 1),
    ("README.md", "pytest 12 m {7} s, the whole script", CI_RUN, r"passed, .* in \d+\.\d+s \(0:\d+:(\d+)\)", 1),
    ("README.md", "the whole script 12 m {33} s", CI_RUN, r"the whole script: \d+ m (\d+) s", 1),
    ("README.md", "5 skipped,\n{1} xfailed; pytest", CI_RUN, r"^\d+ passed, \d+ skipped, (\d+) xfailed", 1),
    ("README.md", "xfailed; pytest {12} m 7 s", CI_RUN, r"passed, .* in \d+\.\d+s \(0:(\d+):\d+\)", 1),
    ("README.md", "the whole script {12} m 33 s", CI_RUN, r"the whole script: (\d+) m \d+ s", 1),
    (COSTS, "1 xfailed (the masked LM's cloze target, not reached) | {12} m 7 s", CI_RUN,
     r"passed, .* in \d+\.\d+s \(0:(\d+):\d+\)", 1),
    (COSTS, "the documentation site, pytest) | {12} m 33 s", CI_RUN, r"the whole script: (\d+) m \d+ s", 1),
    (COSTS, "2,457 passed, 5 skipped, 1 xfailed | {12} m 21 s", f"{CI}/shuffled-2.log",
     r"passed, .* in \d+\.\d+s \(0:(\d+):\d+\)", 1),
    # docs/howto/gguf.md: llama.cpp beside attnlab
    (GGUF_HOWTO, "On the project's {2}-core AMD EPYC (Zen 5)", f"{ZEN}/q4_1-night.log",
     r"^# \S+ \S+ UTC \| AMD EPYC, (\d+) cores,", 1),
    (GGUF_HOWTO, "Q4_1 then decodes at {1.45}x llama.cpp's rate", f"{ZEN}/q4_1-night.log", DEFAULT_1, 1),
    (GGUF_HOWTO, "at one thread and {1.51}x\n  at two", f"{ZEN}/q4_1-night.log", DEFAULT_2, 1),
    (GGUF_HOWTO, "prompt at {4.96}x / 4.31x", f"{ZEN}/q4_1-night.log", PATH_PREFILL[1], 1),
    (GGUF_HOWTO, "prompt at 4.96x / {4.31}x", f"{ZEN}/q4_1-night.log", PATH_PREFILL[2], 1),
    (GGUF_HOWTO, "decodes at {0.82}x /\n  0.83x", f"{ZEN}/q4_1-night.log", NO_COMPILE_1, 1),
    (GGUF_HOWTO, "decodes at 0.82x /\n  {0.83}x", f"{ZEN}/q4_1-night.log", NO_COMPILE_2, 1),
    (GGUF_HOWTO, "--max-new-tokens 1` takes {1.02} s", f"{ZEN}/q4_1-night.log", FRESH[1, 0], 1),
    (GGUF_HOWTO, "takes 1.02 s against {0.26} s", f"{ZEN}/q4_1-night.log", FRESH[1, 1], 1),
    (GGUF_HOWTO, "Q8_0 decodes at {1.14}x / 1.09x", f"{ZEN}/q8_0-night.log", DEFAULT_1, 1),
    (GGUF_HOWTO, "Q8_0 decodes at 1.14x / {1.09}x", f"{ZEN}/q8_0-night.log", DEFAULT_2, 1),
    (GGUF_HOWTO, "reads its prompt at {2.81}x / 2.32x", f"{ZEN}/q8_0-night.log", PATH_PREFILL[1], 1),
    (GGUF_HOWTO, "reads its prompt at 2.81x / {2.32}x", f"{ZEN}/q8_0-night.log", PATH_PREFILL[2], 1),
    (GGUF_HOWTO, "Q4_0 at {1.03}x / 0.99x and", f"{ZEN}/q4_0-night.log", DEFAULT_1, 1),
    (GGUF_HOWTO, "Q4_0 at 1.03x / {0.99}x and", f"{ZEN}/q4_0-night.log", DEFAULT_2, 1),
    (GGUF_HOWTO, "and {1.16}x / 1.09x (q8_0", f"{ZEN}/q4_0-night.log", PATH_PREFILL[1], 1),
    (GGUF_HOWTO, "and 1.16x / {1.09}x (q8_0", f"{ZEN}/q4_0-night.log", PATH_PREFILL[2], 1),
    # bench/RESULTS.md: the night's table
    ("bench/RESULTS.md", "| Q4_0 | default (compiled step) | 2 | 0.99x | {1.09}x |", f"{ZEN}/q4_0-night.log",
     PATH_PREFILL[2], 1),
    ("bench/RESULTS.md", "| Q4_1 | default (compiled step) | 2 | {1.51}x | 4.31x |", f"{ZEN}/q4_1-night.log",
     DEFAULT_2, 1),
    # docs/generation.md
    ("docs/generation.md", "attnlab generates {1.56}-1.76x as many tokens", f"{GPU}/generate-fp32-after.log",
     GEN_WALL.format(1), 1),
    ("docs/generation.md", "attnlab generates 1.56-{1.76}x as many tokens", f"{GPU}/generate-bf16-after.log",
     GEN_WALL.format(1), 1),
    ("docs/generation.md", "(GPT-2: +{353} MB,", f"{QUICK}/after.log", r"decode copies hold (\d+) MB", 1),
    # docs/training.md: peak memory beside nanoGPT's baby GPT
    ("docs/training.md", "attnlab {430} MB against 379 MB (1.137x)", f"{BABY}/baby-2000-steps-same-init.log",
     _baby_cell(2), 1),
    ("docs/training.md", "attnlab 430 MB against {379} MB (1.137x)", f"{BABY}/baby-2000-steps-same-init.log",
     _baby_cell(3), 1),
    ("docs/training.md", "430 MB against 379 MB ({1.137}x)", f"{BABY}/baby-2000-steps-same-init.log",
     _baby_cell(4), 1),
    ("docs/training.md", "(1.137x), {114.5} s against 112.2 s", f"{BABY}/baby-2000-steps-same-init.log",
     _baby_cell(5), 1),
    ("docs/training.md", "(1.137x), 114.5 s against {112.2} s", f"{BABY}/baby-2000-steps-same-init.log",
     _baby_cell(6), 1),
    ("docs/training.md", "val loss {1.412} against 1.470", f"{BABY}/baby-2000-steps-same-init.log", _baby_cell(7), 1),
    ("docs/training.md", "val loss 1.412 against {1.470}", f"{BABY}/baby-2000-steps-same-init.log", _baby_cell(8), 1),
    # docs/training.md: the shipped recipes' wall time, from each checkpoint's trained.json
    *[("docs/training.md", printed, f"attnlab/assets/checkpoints/{recipe}/trained.json", "json:wall_s", 1)
      for recipe, printed in [("vit-mnist", "| **{8m02s}**: over"), ("gpt-char", "below bigram | {2m37s} |"),
                              ("clip-mnist", "| >= 90% | {1m03s} |"), ("bert-mlm", "above unigram | {6m41s} |"),
                              ("minilm-mlm", "| {16m16s} (load average 6-8.5)")]],
    ("docs/training.md", "(first run); {7m21s} for the retrain",
     "attnlab/assets/checkpoints/translate-numbers/trained.json", "json:wall_s", 1),
    # docs/quantization.md: llama.cpp beside attnlab
    ("docs/quantization.md", "SmolLM2 Q4_1\ndecodes at {1.15}x", f"{ZEN}/q4_1.log", DEFAULT_1, 1),
    ("docs/quantization.md", "at one thread and {1.05}x at two (eager", f"{ZEN}/q4_1.log", DEFAULT_2, 1),
    ("docs/quantization.md", "(eager: {0.79}x / 0.76x)", f"{ZEN}/q4_1.log", NO_COMPILE_1, 1),
    ("docs/quantization.md", "(eager: 0.79x / {0.76}x)", f"{ZEN}/q4_1.log", NO_COMPILE_2, 1),
    ("docs/quantization.md", "prompt at\n{4.24}x / 2.99x", f"{ZEN}/q4_1.log", PATH_PREFILL[1], 1),
    ("docs/quantization.md", "4.24x / {2.99}x. Both", f"{ZEN}/q4_1.log", PATH_PREFILL[2], 1),
    ("docs/quantization.md", "(attnlab {0.43} / 0.41", f"{ZEN}/q4_1.log", FLOOR[1], 1),
    ("docs/quantization.md", "(attnlab 0.43 / {0.41}", f"{ZEN}/q4_1.log", FLOOR[2], 1),
    ("docs/quantization.md", "Q4_0 decodes at {0.75}x / 0.81x", f"{Q8P}/after-q4_0.log", DEFAULT_1, 1),
    ("docs/quantization.md", "Q4_0 decodes at 0.75x / {0.81}x", f"{Q8P}/after-q4_0.log", DEFAULT_2, 1),
    ("docs/quantization.md", "prefills at {1.04}x / 0.82x", f"{Q8P}/after-q4_0.log", PATH_PREFILL[1], 1),
    ("docs/quantization.md", "prefills at 1.04x / {0.82}x", f"{Q8P}/after-q4_0.log", PATH_PREFILL[2], 1),
    ("docs/quantization.md", "Q8_0 decodes at {0.84}x / 0.86x", f"{Q8P}/after-q8_0.log", DEFAULT_1, 1),
    ("docs/quantization.md", "Q8_0 decodes at 0.84x / {0.86}x", f"{Q8P}/after-q8_0.log", DEFAULT_2, 1),
    ("docs/quantization.md", "prefills at {2.52}x / 1.69x", f"{Q8P}/after-q8_0.log", PATH_PREFILL[1], 1),
    ("docs/quantization.md", "prefills at 2.52x / {1.69}x", f"{Q8P}/after-q8_0.log", PATH_PREFILL[2], 1),
    ("docs/quantization.md", "the same run gave {1.43}x / 1.38x", f"{ZEN}/q4_1-startup.log", DEFAULT_1, 1),
    ("docs/quantization.md", "the same run gave 1.43x / {1.38}x", f"{ZEN}/q4_1-startup.log", DEFAULT_2, 1),
    ("docs/quantization.md", "decode, {4.63}x / 3.46x prefill", f"{ZEN}/q4_1-startup.log", PATH_PREFILL[1], 1),
    ("docs/quantization.md", "decode, 4.63x / {3.46}x prefill", f"{ZEN}/q4_1-startup.log", PATH_PREFILL[2], 1),
    ("docs/quantization.md", "a first token in {1.16} s against", f"{ZEN}/q4_1-startup.log", FRESH[1, 0], 1),
    ("docs/quantization.md", "in 1.16 s against {0.28} s", f"{ZEN}/q4_1-startup.log", FRESH[1, 1], 1),
    ("docs/quantization.md", "Q8_0 {1.19}x / 1.17x decode", f"{ZEN}/q8_0-startup.log", DEFAULT_1, 1),
    ("docs/quantization.md", "Q8_0 1.19x / {1.17}x decode", f"{ZEN}/q8_0-startup.log", DEFAULT_2, 1),
    ("docs/quantization.md", "and {2.58}x / 1.86x prefill, Q4_0", f"{ZEN}/q8_0-startup.log", PATH_PREFILL[1], 1),
    ("docs/quantization.md", "and 2.58x / {1.86}x prefill, Q4_0", f"{ZEN}/q8_0-startup.log", PATH_PREFILL[2], 1),
    ("docs/quantization.md", "Q4_0 {0.88}x / 0.96x and", f"{ZEN}/q4_0-startup.log", DEFAULT_1, 1),
    ("docs/quantization.md", "Q4_0 0.88x / {0.96}x and", f"{ZEN}/q4_0-startup.log", DEFAULT_2, 1),
    ("docs/quantization.md", "and {1.10}x / 0.93x\n(q8_0", f"{ZEN}/q4_0-startup.log", PATH_PREFILL[1], 1),
    ("docs/quantization.md", "and 1.10x / {0.93}x\n(q8_0", f"{ZEN}/q4_0-startup.log", PATH_PREFILL[2], 1),
    ("docs/quantization.md", "decoded at {1.33}x /\n1.34x llama.cpp's", f"{ZEN}/q4_1-native.log", DEFAULT_1, 1),
    ("docs/quantization.md", "decoded at 1.33x /\n{1.34}x llama.cpp's", f"{ZEN}/q4_1-native.log", DEFAULT_2, 1),
    ("docs/quantization.md", "decoded at\n{1.06}x / 1.08x", f"{ZEN}/q4_1-final.log", DEFAULT_1, 1),
    ("docs/quantization.md", "1.06x / {1.08}x: the one-thread", f"{ZEN}/q4_1-final.log", DEFAULT_2, 1),
    ("docs/quantization.md", "--max-new-tokens 1` takes {1.27} s", f"{ZEN}/q4_1-fresh.log", FRESH[1, 0], 1),
    ("docs/quantization.md", "takes 1.27 s against {0.27} s", f"{ZEN}/q4_1-fresh.log", FRESH[1, 1], 1),
    ("docs/quantization.md", "and 16 tokens {3.43} s against 0.39 s", f"{ZEN}/q4_1-fresh.log", FRESH[16, 0], 1),
    ("docs/quantization.md", "and 16 tokens 3.43 s against {0.39} s", f"{ZEN}/q4_1-fresh.log", FRESH[16, 1], 1),
    ("docs/quantization.md", "and gave {1.53} s and 3.57 s", f"{ZEN}/q4_1-final.log", FRESH[1, 0], 1),
    ("docs/quantization.md", "and gave 1.53 s and {3.57} s", f"{ZEN}/q4_1-final.log", FRESH[16, 0], 1),
    # docs/explorer.md: a class at once
    ("docs/explorer.md", "{598} light answers, p95 402 ms", f"{CLASS}/30-students-240s.json", "json:light.all.answers",
     1),
    ("docs/explorer.md", "598 light answers, p95 {402} ms", f"{CLASS}/30-students-240s.json", "json:light.all.p95_s",
     1000),
    ("docs/explorer.md", "(SmolLM2's {612} ms,", f"{CLASS}/30-students-240s.json", "json:light.smollm2.p95_s", 1000),
    ("docs/explorer.md", "gpt-char's {98} ms)", f"{CLASS}/30-students-240s.json", "json:light.gpt-char.p95_s", 1000),
    ("docs/explorer.md", "({668} to 682 MiB", f"{CLASS}/30-students-240s.json", "json:rss_series_mib.3.1", 1),
    ("docs/explorer.md", "(668 to {682} MiB", f"{CLASS}/30-students-240s.json", "json:rss_mib.end", 1),
    ("docs/explorer.md", "{1,103} light answers, p95 66 ms", f"{CLASS}/30-students-240s-after-fix.json",
     "json:light.all.answers", 1),
    ("docs/explorer.md", "1,103 light answers, p95 {66} ms", f"{CLASS}/30-students-240s-after-fix.json",
     "json:light.all.p95_s", 1000),
    ("docs/explorer.md", "(SmolLM2's {76} ms,", f"{CLASS}/30-students-240s-after-fix.json",
     "json:light.smollm2.p95_s", 1000),
    ("docs/explorer.md", "gpt-char's {14} ms), every one", f"{CLASS}/30-students-240s-after-fix.json",
     "json:light.gpt-char.p95_s", 1000),
    ("docs/explorer.md", "the students' light answers p95 {556} ms", f"{CLASS}/30-students-90s-flood-rotate.json",
     "json:light.all.p95_s", 1000),
    ("docs/explorer.md", "({45} ms without the two", f"{CLASS}/30-students-90s-no-abusers.json",
     "json:light.all.p95_s", 1000),
    ("docs/explorer.md", "after at most {1} job of any other client", f"{CLASS}/30-students-90s-flood-rotate.json",
     "json:heavy.ran_before_an_honest_sweep.most_jobs_of_one_other_client_before_it", 1),
    ("docs/howto/class.md", "within {556} ms at the 95th percentile", f"{CLASS}/30-students-90s-flood-rotate.json",
     "json:light.all.p95_s", 1000),
    # docs/cost.md: the measured sweep of gpt2
    # docs/cost.md: GPT-2's parameters, the same count as docs/experiments.md's section 10
    *[("docs/cost.md", printed, GPT2_PARAMS, r'^\{"name": "gpt2 as released.*?"' + key + r'": (\d+)', 1)
      for printed, key in (("For gpt2: {124,318,464} by the formula", "closed_form"),
                           ("by the formula + {82,944} biases", "biases"), ("+ {38,400} norm gains", "norms"),
                           ("norm gains = {124,439,808} measured", "measured"))],
    ("docs/cost.md", "float32 matmul: **{89.3} GFLOP/s**", "docs/img/cost-gpt2/sweep.txt",
     r"measured matmul peak: ([\d.]+) GFLOP/s", 1),
    ("docs/cost.md", "gpt2 reaches {62}% of the measured peak at n = 64", "docs/img/cost-gpt2/sweep.txt",
     r"^forward\s+64\s.*\s([\d.]+)%$", 1),
    ("docs/cost.md", "and {88}% at n = 1024", "docs/img/cost-gpt2/sweep.txt", r"^forward\s+1024\s.*\s([\d.]+)%$", 1),
    ("docs/cost.md", "all-position logits, {98}%)", "docs/img/cost-gpt2/sweep.txt",
     r"^decode_uncached\s+1024\s.*\s([\d.]+)%$", 1),
    ("docs/cost.md", "cached step costs {46}-57 ms", "docs/img/cost-gpt2/sweep.txt",
     r"^\s+decode_cached\s+n=128\s+([\d.]+) ms", 1),
    ("docs/cost.md", "cached step costs 46-{57} ms", "docs/img/cost-gpt2/sweep.txt",
     r"^\s+decode_cached\s+n=1024\s+([\d.]+) ms", 1),
    ("docs/cost.md", "grows from {196} ms to 2.4 s", "docs/img/cost-gpt2/sweep.txt",
     r"^\s+decode_uncached\s+n=64\s+([\d.]+) ms", 1),
    ("docs/cost.md", "grows from 196 ms to {2.4} s", "docs/img/cost-gpt2/sweep.txt",
     r"^\s+decode_uncached\s+n=1024\s+([\d.]+) ms", 0.001),
    ("docs/cost.md", "| gpt2 forward, n 64..1024 | {0.93} \\| 1.00 |", "docs/img/cost-gpt2/sweep.txt",
     r"^\s+forward\s+measured\s+([\d.]+)", 1),
    ("docs/cost.md", "| gpt2 forward, n 64..1024 | 0.93 \\| {1.00} |", "docs/img/cost-gpt2/sweep.txt",
     r"^\s+forward\s+measured.*\|\s+measured\s+([\d.]+)", 1),
    ("docs/cost.md", "| gpt2 decoding step with cache | {0.09} \\| 0.11 |", "docs/img/cost-gpt2/sweep.txt",
     r"^\s+decode_cached\s+measured\s+([\d.]+)", 1),
    ("docs/cost.md", "| narrow-long (d = 128, L = 4, RoPE) forward, n 256..4096 | {1.37} \\| 1.50 |",
     "docs/img/cost-narrow/sweep.txt", r"^\s+forward\s+measured\s+([\d.]+)", 1),
    ("docs/cost.md", "| narrow-long attention core, causal / dense | 1.76 / **{2.00}** \\| 1.79 / **2.02** |",
     "docs/img/cost-narrow/sweep.txt", r"^\s+attention_dense\s+measured\s+([\d.]+)", 1),
    ("docs/cost.md", "| narrow-long attention core, causal / dense | 1.76 / **2.00** \\| 1.79 / **{2.02}** |",
     "docs/img/cost-narrow/sweep.txt", r"^\s+attention_dense\s+measured.*\|\s+measured\s+([\d.]+)", 1),
    # docs/cost.md's "What matched" and "What did not match": the two sweeps' own lines (derived figures, a ratio or
    # a range's ends, are recomputed from the same files by tests/experiments_trace/figures.py's COMPUTED)
    ("docs/cost.md", "grows as n²**: {2.00} measured over", SWEEP_NARROW, SWEEP_EXP("attention_dense", 0), 1),
    ("docs/cost.md", "measured over {256}..4096", SWEEP_NARROW, r"n in \[(\d+),", 1),
    ("docs/cost.md", "measured over 256..{4096}", SWEEP_NARROW, r"n in \[[\d, ]*?(\d+)\]", 1),
    ("docs/cost.md", "({2.02} over the upper half)", SWEEP_NARROW, SWEEP_EXP("attention_dense", 2), 1),
    ("docs/cost.md", "dense series, {1.91}, is noisier", SWEEP_GPT2, SWEEP_EXP("attention_dense", 0), 1),
    ("docs/cost.md", "the measured times follow at {1.37} overall", SWEEP_NARROW, SWEEP_EXP("forward", 0), 1),
    ("docs/cost.md", "follow at 1.37 overall and {1.50} over the upper half", SWEEP_NARROW, SWEEP_EXP("forward", 2), 1),
    ("docs/cost.md", "from n = 64 to {1024} (predicted", SWEEP_GPT2, r"n in \[[\d, ]*?(\d+)\]", 1),
    ("docs/cost.md", "FLOP/byte says**: {5} GFLOP/s", SWEEP_GPT2, SWEEP_ROW("decode_cached", 1024, 2), 1),
    ("docs/cost.md", "GFLOP/s, {6}% of the peak", SWEEP_GPT2, SWEEP_ROW("decode_cached", 1024, 3), 1),
    ("docs/cost.md", "weights and cache in {57} ms", SWEEP_GPT2, SWEEP_ROW("decode_cached", 1024, 1), 1),
    ("docs/cost.md", "causal SDPA measures n^1.76-{1.84}", SWEEP_GPT2, SWEEP_EXP("attention", 0), 1),
    ("docs/cost.md", "causal SDPA measures n^{1.76}-1.84", SWEEP_NARROW, SWEEP_EXP("attention", 0), 1),
    ("docs/cost.md", "beats\" the peak ({109}-130% MFU)", SWEEP_GPT2, SWEEP_ROW("attention", 1024, 3), 1),
    ("docs/cost.md", "beats\" the peak (109-{130}% MFU)", SWEEP_NARROW, SWEEP_ROW("attention", 4096, 3), 1),
    ("docs/cost.md", "forward exponent from {1.71} predicted", SWEEP_NARROW, SWEEP_EXP("forward", 3), 1),
    ("docs/cost.md", "1.71 predicted to {1.50} measured", SWEEP_NARROW, SWEEP_EXP("forward", 2), 1),
    ("docs/cost.md", "cached step ({1.0} ms at n = 256", SWEEP_NARROW, SWEEP_ROW("decode_cached", 256, 1), 1),
    ("docs/cost.md", "its measured exponent {0.36} is below", SWEEP_NARROW, SWEEP_EXP("decode_cached", 0), 1),
    ("docs/cost.md", "is below the\n  predicted {0.55}", SWEEP_NARROW, SWEEP_EXP("decode_cached", 1), 1),
    ("docs/cost.md", "well short of the one-thread sweep's {89} above", SWEEP_GPT2,
     r"measured matmul peak: ([\d.]+) GFLOP/s", 1),
    # docs/cost.md: the command's and the test file's times, 2026-12-07 (bench/results/cost-2026-12-07/)
    ("docs/cost.md", "in {1.5}-1.7 s of wall time over three runs", COST_RUN, r"^time: ([\d.]+) s wall", 1),
    ("docs/cost.md", "in 1.5-{1.7} s of wall time over three runs", COST_RUN,
     r"^time: [\d.]+ s wall.*\ntime: ([\d.]+) s wall", 1),
    ("docs/cost.md", "test_cost.py` ({77} tests; 29.0 s of user CPU time", COST_TESTS, r"^(\d+) passed", 1),
    ("docs/cost.md", "77 tests; {29.0} s of user CPU time", COST_TESTS, r"^time: .* ([\d.]+) s user", 1),
    ("docs/cost.md", "{30.8} s of wall time on 2 cores", COST_TESTS, r"^time: ([\d.]+) s wall", 1),
    ("docs/cost.md", "at a load of {4.0}-4.2,", COST_TESTS, r"^# before: .*load average: ([\d.]+),", 1),
    ("docs/cost.md", "at a load of 4.0-{4.2},", COST_TESTS, r"^# after: .*load average: ([\d.]+),", 1),
    # docs/quantization.md: the llama.cpp section's other logged figures
    ("docs/quantization.md", "q4_1.log, load average {0.7}-1.0)", f"{ZEN}/q4_1.log",
     r"load average ([\d.]+) -> [\d.]+ on", 1),
    ("docs/quantization.md", "q4_1.log, load average 0.7-{1.0})", f"{ZEN}/q4_1.log",
     r"load average [\d.]+ -> ([\d.]+) on", 1),
    ("docs/quantization.md", "row by row they were {1.19}x / 0.74x", f"{Q8P}/before-q8_0-backtoback.log",
     PATH_PREFILL[1], 1),
    ("docs/quantization.md", "row by row they were 1.19x / {0.74}x", f"{Q8P}/before-q8_0-backtoback.log",
     PATH_PREFILL[2], 1),
    ("docs/quantization.md", "(median of {5} rounds in the user's environment", f"{ZEN}/q4_1-fresh.log",
     r"median of (\d+) interleaved rounds", 1),
    ("docs/quantization.md", "that machine's rounds: {1.37}x / 1.05x then", f"{LLAMA}/q4_1-e.log", DECODE_1, 1),
    ("docs/quantization.md", "that machine's rounds: 1.37x / {1.05}x then", f"{LLAMA}/q4_1-e.log", DECODE_2, 1),
    ("docs/quantization.md", "llama.cpp {0.37} / 0.39)", f"{ZEN}/q4_1.log", LLAMA_FLOOR[1], 1),
    ("docs/quantization.md", "llama.cpp 0.37 / {0.39})", f"{ZEN}/q4_1.log", LLAMA_FLOOR[2], 1),
    ("docs/quantization.md", "this machine reads {40.2} GB/s on one core", f"{ZEN}/q4_1.log",
     r"1 core ([\d.]+) GB/s", 1),
    ("docs/quantization.md", "and {42.3} GB/s on two", f"{ZEN}/q4_1.log", r"2 cores ([\d.]+) GB/s", 1),
    ("docs/quantization.md", "interleaved rows and reaches {0.63} of the floor", f"{Q8P}/after-q4_0.log",
     LLAMA_FLOOR[1], 1),
    # ---- P3: docs/quantization.md's kept-blocks figures, re-run 2026-12-07 (tests/test_claims_quantized.py's __main__
    # without the 30-block compile; the log holds the script)
    *(("docs/quantization.md", printed, KEPT, where, 1) for printed, where in (
        ("{1.1e-5} at one token", r"^1 tokens: .* kernels off ([\d.e-]+);"),
        ("over the vocabulary was {0.031} at 1 token", r"^1 tokens: .* no_grad ([\d.]+),"),
        ("was 0.031 at {1} token", r"^(1) tokens: .* no_grad"),
        ("0.031 at 1 token, {0.031} at 6", r"^6 tokens: .* no_grad ([\d.]+),"),
        ("0.031 at 1 token, 0.031 at {6}", r"^(6) tokens: .* no_grad"),
        ("{0.031} at 64 and 0 at 600", r"^64 tokens: .* no_grad ([\d.]+),"),
        ("0.031 at {64} and 0 at 600", r"^(64) tokens: .* no_grad"),
        ("at 64 and {0} at 600", r"^600 tokens: .* no_grad ([\d.]+),"),
        ("at 64 and 0 at {600}", r"^(600) tokens: .* no_grad"),
        ("1-6 tokens): {0.031} for the kept Q4_1 file", r"^1 tokens: .* no_grad vs grad ([\d.]+)$"),
        ("grad, {1}-6 tokens): 0.031", r"^(1) tokens: .* no_grad vs grad"),
        ("grad, 1-{6} tokens): 0.031", r"^(6) tokens: .* no_grad vs grad [\d.]+$"),
        ("{0.029} for `int8`", r"^int8, no_grad vs grad: ([\d.]+) at 1 tokens"),
        ("0.032-{0.036} for `int4`", r"^int4, no_grad vs grad: ([\d.]+) at 1 tokens"),
        ("{0.032}-0.036 for `int4`", r"^int4, no_grad vs grad: [\d.]+ at 1 tokens, ([\d.]+) at 6"),
        ("torch 2.13, one thread, load average {2.5}", r"load average ([\d.]+) "),
        ("`attnlab.interop.gguf.load_gguf(path, keep_quantized=False)`; {25} s of CPU", r"^# CPU time (\d+) s"),
    )),
    ("docs/interop.md", "differ by up to {0.031} in log-probabilities", KEPT, r"^64 tokens: .* no_grad ([\d.]+),", 1),
    # docs/quantization.md's quality table, re-run 2026-12-07 (python -m attnlab.benchmarks.quality ...): each figure
    # from its variant's row of the log's table (_quality: the k-th number of the col-th cell after the variant)
    *(("docs/quantization.md", printed, QUALITY, key, 1) for row, keys in QUALITY_ROWS for printed, key in
      _one_figure_each(row, keys)),
    *(("docs/quantization.md", printed, QUALITY, where, 1) for printed, where in (
        ("at nice 10\non the shared machine (load average {0.6} before", r"^# before: [^;]*load average: ([\d.]+),"),
        ("(load average 0.6 before, {5.5} after)", r"; after: .*load average: ([\d.]+),"),
        ("quality.log; {2047} scored tokens per language", r", (\d+) scored per language"),
        ("greedy: {4} prompts x 8 new tokens", r"greedy: (\d+) prompts x \d+ new tokens"),
        ("greedy: 4 prompts x {8} new tokens", r"greedy: \d+ prompts x (\d+) new tokens"),
        ("The {64}-token figures in the table are", QUALITY_DECODE_TOKENS),
    )),
    ("docs/quantization.md", "scored tokens per language; +{-2} standard errors", QUALITY,
     r"with \+-(\d+) standard errors", -1),  # the log writes "+-2"
    ("docs/quantization.md", "whose figures at {6} and 64 tokens differed", KEPT, r"^(6) tokens:", 1),
    # the speed table and the page's opening, re-run 2026-12-07 (python -m attnlab.benchmarks.quantized --quick ...)
    *(("docs/quantization.md", printed, QUICK_Q, _quick(*key), 1) for row, keys in QUICK_ROWS
      for printed, key in _one_figure_each(row, keys)),
    *(("docs/quantization.md", printed, QUICK_Q, where, 1) for printed, where in (
        ("a GPT-2-small step is {4.4}x faster in int8", _quick("gpt2", "int8", "x")),
        ("faster in int8, {5.6}x in int4", _quick("gpt2", "int4", "x")),
        ("on the shared machine (load average {4.9} before, 10.6 after)", r"^# before: .*load average: ([\d.]+),"),
        ("(load average 4.9 before, {10.6} after)", r"^# after: .*load average: ([\d.]+),"),
    )),
    *(("docs/generation.md", printed, GEN_TESTS, where, 1) for printed, where in (
        ("({40.2} s user and 1.6 s system", r"^time: .* ([\d.]+) s user"),
        ("(40.2 s user and {1.6} s system", r", ([\d.]+) s system"),
        ("{227} s of wall time at a load average of 9.0", r"^time: ([\d.]+) s wall"),
        ("at a load average of {9.0} before and 10.8 after, 2026-12-07", r"^# before: .*load average: ([\d.]+),"),
        ("9.0 before and {10.8} after, 2026-12-07", r"^# after: .*load average: ([\d.]+),"),
    )),
    *(("docs/quantization.md", printed, ATTENTION, where, 1) for printed, where in (
        ("(on\n{100} seeded random cases", r"^shapes: (\d+);"),
        ("cases of up to {512} query tokens", r"; up to (\d+) query tokens$"),
        ("larger in {41} and smaller", r"larger than SDPA's in (\d+),"),
        ("larger in 41 and smaller\nin {38}", r", smaller in (\d+),"),
        ("the worst {2.8e-6} of max |v|", r"^worst error / max \|v\|: kernel ([\d.e-]+),"),
        ("against SDPA's {2.8e-6}", r"SDPA float32 ([\d.e-]+)$"),
    )),
    # docs/generation.md's "Measured": the decode_step benchmark re-run 2026-12-07 (GPT-2-small shape, batch 1)
    *(("docs/generation.md", printed, DSTEP, where, 1) for printed, where in (
        ("at a load average of {9.3} before", r"^# before: .*load average: ([\d.]+),"),
        ("9.3 before and {5.8} after", r"^# after: .*load average: ([\d.]+),"),
        ("attnlab {32.0} ms, HF 40.2 ms", GPT2_STEP + r" ([\d.]+) \|"),
        ("attnlab 32.0 ms, HF {40.2} ms", GPT2_STEP + r"(?:[^|]+\|){2} ([\d.]+) \|"),
        ("so **{1.26}x HF's", GPT2_STEP + r"(?:[^|]+\|){3} ([\d.]+)x"),
        ("A step takes {1.15}x the time of a plain read", GPT2_PARTS + r"(?:[^|]+\|){7} ([\d.]+)x"),
        ("A step at {256} cached positions", r"\| step @\d+ ms \| step @(\d+) ms \|"),
        ("cached positions costs {1.11}x one at 16", GPT2_PARTS + r"(?:[^|]+\|){2} ([\d.]+)x"),
        ("costs 1.11x one at {16}.", r"\| step @(\d+) ms \| step @\d+ ms \|"),
        ("the step takes {7.9} ms", r"attnlab int8 ([\d.]+) ms/step"),
        ("**{5.08}x HF's float32", r"HF \(float32\) / attnlab int8 ([\d.]+)x"),
        ("498 MB per token, {19.0} ms at the 26.2 GB/s", r"([\d.]+) ms at the stream over \d+ MB"),
        ("19.0 ms at the {26.2} GB/s", r"at the stream over \d+ MB \(([\d.]+) GB/s\)"),
    )),
    ("docs/generation.md", "GPT-2-small shape at batch {1}, attnlab and Hugging Face", DSTEP,
     r"^# command: .*--batches (\d+)", 1),
    *(("docs/generation.md", printed, COMPILED_CUT, where, 1) for printed, where in (
        ("Over SmolLM2's first {2} blocks the compiled steps", r"first (\d+) blocks, \d+ prompts x 32"),
        ("a difference of {0} over 5 prompts", r"first 2 blocks, \d+ prompts x 32 new tokens: max ([\d.e-]+) of"),
        ("a difference of 0 over {5} prompts", r"first \d+ blocks, (\d+) prompts x 32"),
        ("over 5 prompts x {32} greedy steps, every step", r"first \d+ blocks, \d+ prompts x (32) new tokens: max 0 "),
        ("one thread, load average {8.4}; log", r"load average ([\d.]+) "),
    )),
    *(("docs/generation.md", printed, f"{GPU}/generate-bf16-after.log", where, 1) for printed, where in (
        ("(GPT-2 small, batch {1} and 8, bf16", r"^# command: .*--batches (\d+),\d+"),
        ("(GPT-2 small, batch 1 and {8}, bf16", r"^# command: .*--batches \d+,(\d+)"),
    )),
    # ---- P3: end
    # docs/quantization.md: the night's runs
    ("docs/quantization.md", "the same runs gave Q4_1 {1.45}x / 1.51x decode", f"{ZEN}/q4_1-night.log", DEFAULT_1, 1),
    ("docs/quantization.md", "Q4_1 1.45x / {1.51}x decode", f"{ZEN}/q4_1-night.log", DEFAULT_2, 1),
    ("docs/quantization.md", "decode and {4.96}x /\n4.31x prefill", f"{ZEN}/q4_1-night.log", PATH_PREFILL[1], 1),
    ("docs/quantization.md", "decode and 4.96x /\n{4.31}x prefill", f"{ZEN}/q4_1-night.log", PATH_PREFILL[2], 1),
    ("docs/quantization.md", "Q8_0 {1.14}x / 1.09x and 2.81x", f"{ZEN}/q8_0-night.log", DEFAULT_1, 1),
    ("docs/quantization.md", "Q8_0 1.14x / {1.09}x and 2.81x", f"{ZEN}/q8_0-night.log", DEFAULT_2, 1),
    ("docs/quantization.md", "1.09x and {2.81}x / 2.32x, Q4_0", f"{ZEN}/q8_0-night.log", PATH_PREFILL[1], 1),
    ("docs/quantization.md", "1.09x and 2.81x / {2.32}x, Q4_0", f"{ZEN}/q8_0-night.log", PATH_PREFILL[2], 1),
    ("docs/quantization.md", "Q4_0 {1.03}x / 0.99x and 1.16x", f"{ZEN}/q4_0-night.log", DEFAULT_1, 1),
    ("docs/quantization.md", "Q4_0 1.03x / {0.99}x and 1.16x", f"{ZEN}/q4_0-night.log", DEFAULT_2, 1),
    ("docs/quantization.md", "0.99x and {1.16}x / 1.09x: every", f"{ZEN}/q4_0-night.log", PATH_PREFILL[1], 1),
    ("docs/quantization.md", "0.99x and 1.16x / {1.09}x: every", f"{ZEN}/q4_0-night.log", PATH_PREFILL[2], 1),
    # bench/RESULTS.md: the night's bench --quick, before and after
    ("bench/RESULTS.md", "prefill at two threads {1622} -> 1953 tokens/s", f"{LATE_QUICK}/before.log",
     PREFILL_RATE_2, 1),
    ("bench/RESULTS.md", "prefill at two threads 1622 -> {1953} tokens/s", f"{LATE_QUICK}/after.log",
     PREFILL_RATE_2, 1),
    ("bench/RESULTS.md", "decode at two threads {248.7} -> 274.2", f"{LATE_QUICK}/before.log",
     r"^\| default \(compiled step\) \| 2 \| ([\d.]+) \|", 1),
    ("bench/RESULTS.md", "decode at two threads 248.7 -> {274.2}", f"{LATE_QUICK}/after.log",
     r"^\| default \(compiled step\) \| 2 \| ([\d.]+) \|", 1),
    # bench/RESULTS.md: the current figures
    ("bench/RESULTS.md", "llama.cpp: decode {1.45}x at one thread", f"{ZEN}/q4_1-night.log", DEFAULT_1, 1),
    ("bench/RESULTS.md", "thread, {1.51}x at two; prefill 4.96x", f"{ZEN}/q4_1-night.log", DEFAULT_2, 1),
    ("bench/RESULTS.md", "at two; prefill {4.96}x / 4.31x; eager", f"{ZEN}/q4_1-night.log", PATH_PREFILL[1], 1),
    ("bench/RESULTS.md", "at two; prefill 4.96x / {4.31}x; eager", f"{ZEN}/q4_1-night.log", PATH_PREFILL[2], 1),
    ("bench/RESULTS.md", "eager decode {0.82}x / 0.83x; a fresh", f"{ZEN}/q4_1-night.log", NO_COMPILE_1, 1),
    ("bench/RESULTS.md", "eager decode 0.82x / {0.83}x; a fresh", f"{ZEN}/q4_1-night.log", NO_COMPILE_2, 1),
    ("bench/RESULTS.md", "first token 1.02 s against llama-completion's {0.26} s", f"{ZEN}/q4_1-night.log",
     FRESH[1, 1], 1),
    ("bench/RESULTS.md", "to its first token {1.02} s against", f"{ZEN}/q4_1-night.log", FRESH[1, 0], 1),
    ("bench/RESULTS.md", "with 5 rounds (`q4_1-evening.log`, 717f7e2): decode {1.39}x / 1.33x",
     f"{ZEN}/q4_1-evening.log", DEFAULT_1, 1),
    ("bench/RESULTS.md", "decode 1.39x / {1.33}x\n  (llama.cpp's", f"{ZEN}/q4_1-evening.log", DEFAULT_2, 1),
    ("bench/RESULTS.md", "tg64 at two threads read {175.6} tokens/s", f"{ZEN}/q4_1-evening.log",
     r"^\| default \(compiled step\) \| 2 \|[^|]+\| ([\d.]+) \|", 1),
    ("bench/RESULTS.md", "against {162.5} in the run above", f"{ZEN}/q4_1-startup.log",
     r"^\| default \(compiled step\) \| 2 \|[^|]+\| ([\d.]+) \|", 1),
    ("bench/RESULTS.md", "a fresh first token {1.09} s against\n  0.27 s", f"{ZEN}/q4_1-evening.log", FRESH[1, 0], 1),
    ("bench/RESULTS.md", "Q8_0 decode {1.14}x / 1.09x, prefill", f"{ZEN}/q8_0-night.log", DEFAULT_1, 1),
    ("bench/RESULTS.md", "Q8_0 decode 1.14x / {1.09}x, prefill", f"{ZEN}/q8_0-night.log", DEFAULT_2, 1),
    ("bench/RESULTS.md", "prefill {2.81}x / 2.32x; Q4_0", f"{ZEN}/q8_0-night.log", PATH_PREFILL[1], 1),
    ("bench/RESULTS.md", "prefill 2.81x / {2.32}x; Q4_0", f"{ZEN}/q8_0-night.log", PATH_PREFILL[2], 1),
    ("bench/RESULTS.md", "Q4_0 decode {1.03}x / 0.99x, prefill", f"{ZEN}/q4_0-night.log", DEFAULT_1, 1),
    ("bench/RESULTS.md", "Q4_0 decode 1.03x / {0.99}x, prefill", f"{ZEN}/q4_0-night.log", DEFAULT_2, 1),
    ("bench/RESULTS.md", "prefill {1.16}x / 1.09x\n(`q8_0", f"{ZEN}/q4_0-night.log", PATH_PREFILL[1], 1),
    ("bench/RESULTS.md", "prefill 1.16x / {1.09}x\n(`q8_0", f"{ZEN}/q4_0-night.log", PATH_PREFILL[2], 1),
    # bench/RESULTS.md: the evening's work log
    ("bench/RESULTS.md", "| Q4_1 | default (compiled step) | 1 | {1.43}x | 4.63x |", f"{ZEN}/q4_1-startup.log",
     DEFAULT_1, 1),
    ("bench/RESULTS.md", "| Q4_1 | default (compiled step) | 2 | {1.38}x | 3.46x |", f"{ZEN}/q4_1-startup.log",
     DEFAULT_2, 1),
    ("bench/RESULTS.md", "| Q4_1 | eager (--no-compile) | 1 | 0.82x | {4.56}x |", f"{ZEN}/q4_1-startup.log",
     _ratio_column("eager (--no-compile) | 1", 7), 1),
    ("bench/RESULTS.md", "| Q4_0 | default (compiled step) | 2 | 0.96x | {0.93}x |", f"{ZEN}/q4_0-startup.log",
     PATH_PREFILL[2], 1),
    ("bench/RESULTS.md", "--max-new-tokens 1` 1.16 s against\n  `llama-completion -n 1` {0.28} s",
     f"{ZEN}/q4_1-startup.log", FRESH[1, 1], 1),
    ("bench/RESULTS.md", "16\n  tokens {2.98} s against 0.39 s", f"{ZEN}/q4_1-startup.log", FRESH[16, 0], 1),
    ("bench/RESULTS.md", "16\n  tokens 2.98 s against {0.39} s", f"{ZEN}/q4_1-startup.log", FRESH[16, 1], 1),
    ("bench/RESULTS.md", "generate gpt-char` {0.80} s and", f"{EVENING}", GPT_CHAR_WALL, 1),
    ("bench/RESULTS.md", "`attnlab generate smollm2 --max-new-tokens 1` {1.12} s, against", f"{EVENING}",
     r"--max-new-tokens 1\s+([\d.]+)", 1),
    ("bench/RESULTS.md", "one step {4.51} ->\n  4.38 ms", f"{NIGHT_QUICK}/before.log", GGUF_STEP, 1),
    ("bench/RESULTS.md", "one step 4.51 ->\n  {4.38} ms", f"{NIGHT_QUICK}/after.log", GGUF_STEP, 1),
    ("bench/RESULTS.md", "in C++: decode {1.15}x / 1.05x", f"{ZEN}/q4_1.log", DEFAULT_1, 1),
    ("bench/RESULTS.md", "in C++: decode 1.15x / {1.05}x", f"{ZEN}/q4_1.log", DEFAULT_2, 1),
    # bench/RESULTS.md: the work log of the C++ operators
    ("bench/RESULTS.md", "| default (compiled step) | 1 | 204.5 | 153.3 | {1.33}x |", f"{ZEN}/q4_1-native.log",
     DEFAULT_1, 1),
    ("bench/RESULTS.md", "| default (compiled step) | 2 | 223.5 | 166.9 | {1.34}x |", f"{ZEN}/q4_1-native.log",
     DEFAULT_2, 1),
    ("bench/RESULTS.md", "16 tokens {3.35} s against 0.37 s", f"{ZEN}/q4_1-native.log", FRESH[16, 0], 1),
    ("bench/RESULTS.md", "16 tokens 3.35 s against {0.37} s", f"{ZEN}/q4_1-native.log", FRESH[16, 1], 1),
    ("bench/RESULTS.md", "one step {5.54} ->\n  5.13 ms", f"{NATIVE_QUICK}/before.log", GGUF_STEP, 1),
    ("bench/RESULTS.md", "one step 5.54 ->\n  {5.13} ms", f"{NATIVE_QUICK}/after.log", GGUF_STEP, 1),
    ("bench/RESULTS.md", "decode {1.07}x / 1.18x -> 1.40x", f"{NATIVE_QUICK}/before.log", DEFAULT_1, 1),
    ("bench/RESULTS.md", "decode 1.07x / {1.18}x -> 1.40x", f"{NATIVE_QUICK}/before.log", DEFAULT_2, 1),
    ("bench/RESULTS.md", "-> {1.40}x / 1.34x at 1 / 2 threads", f"{NATIVE_QUICK}/after.log", DEFAULT_1, 1),
    ("bench/RESULTS.md", "-> 1.40x / {1.34}x at 1 / 2 threads", f"{NATIVE_QUICK}/after.log", DEFAULT_2, 1),
    ("bench/RESULTS.md", "bf16: eager attnlab {1.60}x HF, 0.95x nanoGPT", f"{GPU}/train_eager.log",
     VS_ATTNLAB.format("hf"), 1),
    ("bench/RESULTS.md", "bf16: eager attnlab 1.60x HF, {0.95}x nanoGPT", f"{GPU}/train_eager.log",
     VS_ATTNLAB.format("nanogpt"), 1),
    ("bench/RESULTS.md", "all compiled {1.07}x HF, 0.90x nanoGPT", f"{GPU}/train_compiled.log", PAIRED.format("hf"), 1),
    ("bench/RESULTS.md", "all compiled 1.07x HF, {0.90}x nanoGPT", f"{GPU}/train_compiled.log",
     VS_ATTNLAB.format("nanogpt"), 1),
    ("bench/RESULTS.md", "batch 1: {1.76}x HF (bf16), 1.56x (float32)", f"{GPU}/generate-bf16-after.log",
     GEN_WALL.format(1), 1),
    ("bench/RESULTS.md", "batch 1: 1.76x HF (bf16), {1.56}x (float32)", f"{GPU}/generate-fp32-after.log",
     GEN_WALL.format(1), 1),
    ("bench/RESULTS.md", "attnlab / HF tokens/s: batch 1 {1.13}x wall (2.12x CPU time)", f"{QUICK}/after.log",
     GEN_WALL.format(1), 1),
    ("bench/RESULTS.md", "batch 1 1.13x wall ({2.12}x CPU time)", f"{QUICK}/after.log", GEN_CPU.format(1), 1),
    ("bench/RESULTS.md", "(2.12x CPU time), batch 8 {1.05}x", f"{QUICK}/after.log", GEN_WALL.format(8), 1),
    ("bench/RESULTS.md", "batch 1: HF / attnlab {1.18}x", f"{QUICK}/after.log",
     r"^\| GPT-2-small shape \(random\) \| 1 \|[^|]+\|[^|]+\|[^|]+\| ([\d.]+)x", 1),
    ("bench/RESULTS.md", "worst case of the run: {0.96}", f"{QUICK}/after.log", r"worst default / best: ([\d.]+)", 1),
    ("bench/RESULTS.md", "honest light answers p95 {556} ms (target <= 1 s; 45 ms without",
     f"{CLASS}/30-students-90s-flood-rotate.json", "json:light.all.p95_s", 1000),
    ("bench/RESULTS.md", "(target <= 1 s; {45} ms without the two", f"{CLASS}/30-students-90s-no-abusers.json",
     "json:light.all.p95_s", 1000),
    ("bench/RESULTS.md", "| honest light answers | {471}, p50 119 ms", f"{CLASS}/30-students-90s-flood-rotate.json",
     "json:light.all.answers", 1),
    ("bench/RESULTS.md", "gave honest light p95 {1,197}", f"{CLASS}/30-students-90s-flood-rotate-before-one-light.json",
     "json:light.all.p95_s", 1000),
    ("bench/RESULTS.md", "peak RSS {430} MB against nanoGPT's 379 MB (1.137x)", f"{BABY}/baby-2000-steps-same-init.log",
     _baby_cell(2), 1),
    ("bench/RESULTS.md", "peak RSS 430 MB against nanoGPT's {379} MB (1.137x)", f"{BABY}/baby-2000-steps-same-init.log",
     _baby_cell(3), 1),
    ("bench/RESULTS.md", "against nanoGPT's 379 MB ({1.137}x)", f"{BABY}/baby-2000-steps-same-init.log",
     _baby_cell(4), 1),
    ("bench/RESULTS.md", "quiet, 2026-11-22: {1.01}x HF, 0.99x TransformerEncoder",
     "bench/results/forward-quiet-2026-11-22.json", "json:cases.0.paired_ratios.hf.median", 1),
    ("bench/RESULTS.md", "quiet, 2026-11-22: 1.01x HF, {0.99}x TransformerEncoder",
     "bench/results/forward-quiet-2026-11-22.json", "json:cases.1.paired_ratios.torch.median", 1),
    # bench/RESULTS.md: `attnlab bench --quick` before and after, 2026-11-28
    ("bench/RESULTS.md", "batch 1 (wall; CPU) | {1.12}x; 2.11x |", f"{QUICK}/before-f6cc462.log", GEN_WALL.format(1),
     1),
    ("bench/RESULTS.md", "batch 1 (wall; CPU) | 1.12x; {2.11}x |", f"{QUICK}/before-f6cc462.log", GEN_CPU.format(1), 1),
    ("bench/RESULTS.md", "(wall; CPU) | 1.12x; 2.11x | {1.13}x; 2.12x |", f"{QUICK}/after.log", GEN_WALL.format(1), 1),
    ("bench/RESULTS.md", "(wall; CPU) | 1.12x; 2.11x | 1.13x; {2.12}x |", f"{QUICK}/after.log", GEN_CPU.format(1), 1),
    ("bench/RESULTS.md", "| generate, batch 8 (wall) | {1.10}x | 1.05x |", f"{QUICK}/before-f6cc462.log",
     GEN_WALL.format(8), 1),
    ("bench/RESULTS.md", "| generate, batch 8 (wall) | 1.10x | {1.05}x |", f"{QUICK}/after.log", GEN_WALL.format(8), 1),
    ("bench/RESULTS.md", "| decode step, HF / attnlab, batch 1 | {1.15}x | 1.18x |", f"{QUICK}/before-f6cc462.log",
     r"^\| GPT-2-small shape \(random\) \| 1 \|[^|]+\|[^|]+\|[^|]+\| ([\d.]+)x", 1),
    ("bench/RESULTS.md", "| decode step, HF / attnlab, batch 1 | 1.15x | {1.18}x |", f"{QUICK}/after.log",
     r"^\| GPT-2-small shape \(random\) \| 1 \|[^|]+\|[^|]+\|[^|]+\| ([\d.]+)x", 1),
    ("bench/RESULTS.md", "| step @256 / step @16 | {0.98}x | 1.05x |", f"{QUICK}/before-f6cc462.log",
     STEP_256_16, 1),
    ("bench/RESULTS.md", "| step @256 / step @16 | 0.98x | {1.05}x |", f"{QUICK}/after.log",
     STEP_256_16, 1),
    ("bench/RESULTS.md", "| threads: worst default / best | {0.58} (training as found) | 0.96 |",
     f"{QUICK}/before-f6cc462.log", r"worst default / best: ([\d.]+)", 1),
    ("bench/RESULTS.md", "| threads: worst default / best | 0.58 (training as found) | {0.96} |", f"{QUICK}/after.log",
     r"worst default / best: ([\d.]+)", 1),
    # docs/interop.md and bench/RESULTS.md: kept K-quant files against llama.cpp's first-step logits (2026-12-07)
    *[("docs/interop.md", row, KQ_LOG, _kq(preset, column), 1)
      for preset, cells in KQ_ROWS.items()
      for row, column in _one_figure_each(f"| {preset} | {cells} |", KQ_COLUMNS)],
    ("bench/RESULTS.md", "is {0.78} (Q8_0) to 2.11", KQ_LOG, _kq("Q8_0", 1), 1),
    ("bench/RESULTS.md", "is 0.78 (Q8_0) to {2.11}", KQ_LOG, _kq("Q4_0", 1), 1),
    ("bench/RESULTS.md", "as far (0.78 to {2.09})", KQ_LOG, _kq("Q4_0", 2), 1),
    ("bench/RESULTS.md", "lies\n{0.024}-0.057 from that expansion", KQ_LOG, _kq("Q8_0", 5), 1),
    ("bench/RESULTS.md", "0.024-{0.057} from that expansion", KQ_LOG, _kq("Q4_0", 5), 1),
    ("bench/RESULTS.md", "moves the logits by {0.90}-1.87", KQ_LOG, _kq("Q5_0", 6), 1),
    ("bench/RESULTS.md", "moves the logits by 0.90-{1.87}", KQ_LOG, _kq("Q4_0", 6), 1),
    ("bench/RESULTS.md", "within {0.013}-0.019 of llama.cpp's", KQ_LOG, _kq0("Q4_1", "Qcur-0", "asllama"), 1),
    ("bench/RESULTS.md", "within 0.013-{0.019} of llama.cpp's", KQ_LOG, _kq0("Q4_0", "Qcur-0", "asllama"), 1),
    ("bench/RESULTS.md", "({0.53}-0.78 without it)", KQ_LOG, _kq0("Q4_K_M", "Qcur-0", "float"), 1),
    ("bench/RESULTS.md", "(0.53-{0.78} without it)", KQ_LOG, _kq0("Q5_1", "Qcur-0", "float"), 1),
    ("docs/interop.md", "The one exception, Q5_K_M ({0.51})", KQ_LOG, _kq0("Q5_K_M", "Qcur-0", "asllama"), 1),
    ("docs/interop.md", "under float32 noise\n({0.06}-0.11)", KQ_LOG, _kq0("Q4_K_M", "Qcur-0", "floor"), 1),
    ("docs/interop.md", "under float32 noise\n(0.06-{0.11})", KQ_LOG, _kq0("Q5_1", "Qcur-0", "floor"), 1),
    ("docs/interop.md", "output sum by {1.2}-4.0", KQ_LOG, _kq0("Q4_0", "ffn_out-0", "floor"), 1),
    ("docs/interop.md", "output sum by 1.2-{4.0}", KQ_LOG, _kq0("Q4_K_M", "ffn_out-0", "floor"), 1),
    ("bench/RESULTS.md", "(its logits move by up to {2.71})", KQ_LOG, _kq("Q4_0", 4), 1),
    # bench/RESULTS.md: the short requests' thread default, ten runs under two busy processes (2026-12-07)
    *[("bench/RESULTS.md", row, f"{THREADS_SHORT}/busy-run{run}.json", f"json:{key}", 1)
      for run, cells in enumerate(THREADS_SHORT_ROWS, 1)
      for row, key in _one_figure_each(f"| {run} | {cells} |", tuple(f"{i}.default_over_best" for i in range(3)))],
    ("bench/RESULTS.md", "`attnlab.threads.choose` {0.056} ms", f"{THREADS_SHORT}/choose-cost.log",
     r"^choose\(\): a snapshot within 10 s: median ([\d.]+) ms", 1),
    ("bench/RESULTS.md", "{0.138} ms without one", f"{THREADS_SHORT}/choose-cost.log",
     r"^choose\(\): no snapshot within 10 s: median ([\d.]+) ms", 1),
    ("bench/RESULTS.md", "40 interleaved pairs: {1.003}x the CPU time", f"{THREADS_SHORT}/choose-cost.log",
     r"CPU time ([\d.]+)\)", 1),
    # docs/fine-tuning.md: init_from= runs on the shared 2-core machine (python -m attnlab.benchmarks.fine_tune)
    *[("docs/fine-tuning.md", row, f"{FINE_TUNE}/{name}.json", f"json:{key}", 1)
      for name, cells in (("smollm2", "| [2.930] | [2.864] | 40 | [168] s | [1,463] MB | [4.13] (3.7-4.4) |"),
                          ("smollm2-200-steps",
                           "| [2.930] | [2.795] | 200 | [774] s | [1,457] MB | [3.72] (3.1-4.3) |"),
                          ("minilm", "| [8.218] | [6.766] | 200 | [188] s | [787] MB | [2.93] (1.6-4.0) |"))
      for row, key in _one_figure_each(cells, ("val_loss_before", "val_loss_after", "wall_s", "peak_rss_mb",
                                               "machine.load_during.mean"))],
    ("docs/fine-tuning.md", "through {2.81} at step 100", f"{FINE_TUNE}/smollm2-200-steps.log",
     r"^step 100/200 .* val_loss ([\d.]+)", 1),
    ("docs/fine-tuning.md", "took {12.9} minutes with the machine shared", f"{FINE_TUNE}/smollm2-200-steps.json",
     "json:wall_s", 1 / 60),
    ("docs/fine-tuning.md", "from {4.9}% at step 0", f"{FINE_TUNE}/minilm.json", "json:eval_before.masked_top1", 100),
    ("docs/fine-tuning.md", "to {9.7}% after 200 steps", f"{FINE_TUNE}/minilm.json", "json:eval_after.masked_top1",
     100),
    ("docs/fine-tuning.md", "against {5.3}% for always guessing", f"{FINE_TUNE}/minilm.json",
     "json:eval_after.unigram_top1", 100),
]


# docs/interop.md: the logs of its own sections. PARITY: `python tests/parity/test_parity_open_families.py`, one line
# per case ("case max |logits diff| 3.0e-07 ..."); the table's rows (family, settings) -> the case they show
PARITY = "bench/results/parity-open-families-2026-12-07/open-families.log"
PARITY_ROWS = (
    ("BERT", "BertForPreTraining, 4 heads", "3.0e-07", "bert"),
    ("GPT-2", "GPT2LMHeadModel", "3.6e-07", "gpt2"),
    ("ViT", "ViTForImageClassification", "1.5e-07", "vit"),
    ("BART", "BartForConditionalGeneration", "1.8e-07", "bart"),
    ("Marian", "MarianMTModel", "4.8e-07", "marian"),
    ("T5", "T5ForConditionalGeneration, untied, gated-gelu", "1.8e-07", "t5"),
    ("LLaMA", "grouped-query (4 heads, 2 K/V)", "2.4e-07", "llama"),
    ("LLaMA", "`llama3` RoPE scaling (factor 8, L0 = 16), multi-query", "3.0e-07", "llama3-rope"),
    ("LLaMA", "`linear` RoPE scaling (factor 3)", "2.7e-07", "linear-rope"),
    ("LLaMA", "`yarn` RoPE scaling (factor 4, L0 = 16)", "2.4e-07", "yarn-rope"),
    ("LLaMA", "`dynamic` RoPE scaling (factor 2, beyond max_position_embeddings = 8)", "2.4e-07", "dynamic-rope"),
    ("Qwen2", "grouped-query", "2.7e-07", "qwen2-gqa"),
    ("Qwen2", "plain multi-head, tied embeddings", "2.4e-07", "qwen2-mha-tied"),
    ("Qwen2", "sliding window 3 on every layer", "3.3e-07", "qwen2-all-layers-window"),
    ("Qwen2", "`yarn` with mscale / mscale_all_dim, beta 16 / 2, no truncation", "2.4e-07", "yarn-mscale-rope"),
    ("Qwen3", "grouped-query, head_dim 12 (not d_model / n_heads)", "3.7e-07", "qwen3-gqa-head_dim"),
    ("Qwen3", "plain multi-head, head_dim 8", "3.6e-07", "qwen3-mha"),
    ("Mistral", "grouped-query, sliding window 4 (shorter than prompt and generation)", "3.6e-07",
     "mistral-window4-gqa"),
    ("Mistral", "sliding window 3, plain multi-head, head_dim 16", "3.6e-07", "mistral-window3-mha"),
    ("Mistral", "no window", "3.6e-07", "mistral-no-window"),
    ("OLMo 2", "grouped-query", "6.0e-07", "olmo2-gqa"),
    ("OLMo 2", "plain multi-head, tied embeddings, eps 1e-6", "7.2e-07", "olmo2-mha-tied"),
    ("Phi-3", "grouped-query, sliding window 5", "2.4e-07", "phi3-gqa-window"),
    ("Phi-3", "plain multi-head, partial_rotary_factor 0.5", "2.7e-07", "phi3-mha-partial"),
    ("Phi-3", "LongRoPE (short and long factors, L0 = 8, factor 8 from max / original), grouped-query; the batch runs "
     "long, the generation switches at its third step", "2.4e-07", "phi3-longrope"),
    ("Phi-3", "LongRoPE within L0 = 32 (short factors), partial_rotary_factor 0.5, attention_factor 1.3, theta 500",
     "3.0e-07", "phi3-longrope-partial-short"),
    ("Gemma 2", "4 layers, window 3 on layers 0 and 2, score cap 0.05, logit cap 0.5, query_pre_attn_scalar 12, "
     "grouped-query", "5.7e-07", "gemma2-alternating"),
    ("Gemma 2", "window 4 on every layer, score cap 0.1, no logit cap, plain multi-head, head_dim 12", "4.8e-07",
     "gemma2-mha-all-windowed"),
    ("Gemma 2", "no caps, window longer than the text, multi-query", "3.6e-07", "gemma2-no-caps-long-window"),
    ("Gemma 3", "the default pattern on 6 layers (window 3 on layers 0-4, layer 5 global), local RoPE base 10 against "
     "global 1e6, query_pre_attn_scalar 12, grouped-query", "1.1e-06", "gemma3-default-pattern"),
    ("Gemma 3", "2 layers, window 4 on layer 0, layer 1 global (one to one), `linear` RoPE scaling (factor 8) on the "
     "global layer, local base 100, logit cap 0.5, plain multi-head, head_dim 12", "3.2e-07",
     "gemma3-alternating-linear-rope"),
    ("Gemma 3", "window 5 on every layer, multi-query, head_dim 16", "4.4e-07", "gemma3-mqa-all-windowed"),
    ("GPT-NeoX", "parallel residual, RoPE on a quarter of each head (the default)", "3.0e-07", "neox-parallel-quarter"),
    ("GPT-NeoX", "sequential residual, RoPE on half, theta 500", "3.6e-07", "neox-sequential-half"),
    ("GPT-NeoX", "tied embeddings, gelu_new, `linear` RoPE scaling on half", "2.4e-07", "neox-tied-linear-rope"),
)
OWN_DATA = "bench/results/own-data-2026-12-07"  # docs/howto/own-data.md's table, one run per row
DIGITS = f"{OWN_DATA}/digits.log"  # attnlab train vit-mnist dataset=digits ...
AGREE = "bench/results/llama-cpp-agreement-families-2026-12-07/families.log"  # llama_cpp_agreement --families


def AGREE_CELL(case: str, column: int) -> str:  # noqa: N802 (read like the other patterns)
    """A cell of the --families table: `column` cells after the case's name (0 arch, 1 tokens, 2 max|al-lc|,
    3 relative, 4 argmax, 5 fa auto, 6 ggml gelu, 7 its floor, 8 max|al-hf|)."""
    return rf"^{re.escape(case)}\s+" + r"\S+\s+" * column + r"([\d.e+-]+)"


CLAIMS += [
    *[("docs/interop.md", f"| {family} | {settings} | {{{figure}}} |", PARITY,
       rf"^{re.escape(case)}\s+max \|logits diff\| ([\d.e+-]+)", 1) for family, settings, figure, case in PARITY_ROWS],
    ("docs/interop.md", "log: `bench/results/parity-open-families-2026-12-07/open-families.log`, {48} s on",
     PARITY, r"; 0:([\d.]+) wall", 1),
    ("docs/interop.md", "open-families.log`, 48 s on {2} shared cores", PARITY, r"\((\d+) cores, shared\)", 1),
    # the walk of tests/parity/test_parity_model_types.py over transformers' model types, run as a script
    *[("docs/interop.md", printed, "bench/results/parity-model-types-2026-12-07/walk.log", where, 1)
      for printed, where in (
        ("whose config builds with its\ndefaults, {829} of 831 in 5.25", r"built with their defaults: (\d+);"),
        ("defaults, 829 of {831} in 5.25", r": (\d+) model types in CONFIG_MAPPING"),
        ("defaults, 829 of 831 in {5.25}, through", r"^transformers (\d+\.\d+)\.\d+:"),
        ("in one line; {16} read and 813", r"read by attnlab: (\d+);"),
        ("{813}\nrefused on 2026-12-07", r"refused in one line: (\d+);"))],
    # SmolLM2's GGUF, kept and expanded (the fine-tuning run's expand line)
    ("docs/interop.md", "then holds {97} MB of tensors", f"{FINE_TUNE}/smollm2.log", r"\((\d+) MB -> \d+ MB of weights",
     1),
    ("docs/interop.md", "instead of {538} MB (the `expand` line", f"{FINE_TUNE}/smollm2.log",
     r"\(\d+ MB -> (\d+) MB of weights", 1),
    # llama.cpp's logits on the files attnlab writes
    ("docs/interop.md", "load\naverage {13.14}, 11.16, 7.36 at the start", AGREE,
     r"load average: ([\d.]+), [\d.]+, [\d.]+", 1),
    ("docs/interop.md", "load\naverage 13.14, {11.16}, 7.36 at the start", AGREE,
     r"load average: [\d.]+, ([\d.]+), [\d.]+", 1),
    ("docs/interop.md", "load\naverage 13.14, 11.16, {7.36} at the start", AGREE,
     r"load average: [\d.]+, [\d.]+, ([\d.]+)", 1),
    ("docs/interop.md", "runs a {42}-token prompt", AGREE, AGREE_CELL("llama", 1), 1),
    ("docs/interop.md", "computes attnlab's logits to float32 rounding (<= {9.5e-7})", AGREE, AGREE_CELL("olmo2", 2),
     1),
    ("docs/interop.md", "rounds the queries to float16: ~{1e-3} in every family", AGREE, AGREE_CELL("llama", 5), 1),
    ("docs/interop.md", "Gemma 2 and GPT-NeoX agree to {6e-7} to 5e-6", AGREE, AGREE_CELL("gemma2", 6), 1),
    ("docs/interop.md", "Gemma 2 and GPT-NeoX agree to 6e-7 to {5e-6}", AGREE, AGREE_CELL("gpt-neox-sequential", 6),
     1),
    ("docs/interop.md", "Gemma 3 keeps\n  {2.3e-4}, which is the table's own sensitivity", AGREE,
     AGREE_CELL("gemma3", 6), 1),
    ("docs/interop.md", "the same model's logits move by {2.3e-4} when every weight", AGREE, AGREE_CELL("gemma3", 7),
     1),
    ("docs/interop.md", "multiplied by `1 + {1e-7} * torch.randn(p.shape)` (the log's", AGREE,
     r"multiplied by 1 \+ ([\d.e-]+) N\(0, 1\)", 1),
    ("docs/interop.md", "llama.cpp PR {13676}", AGREE, r"llama\.cpp/pull/(\d+)", 1),
    ("docs/interop.md", "families-2026-12-07/families.log`; {2}-core AMD EPYC", AGREE, r"\((\d+) cores, shared\)",
     1),
    ("docs/interop.md", "kquants-2026-12-07/kquants.log`; {2}-core AMD EPYC", KQ_LOG, r"\((\d+) cores, shared\)",
     1),
    # the --families table: (case, the row's first two cells, its figures in [brackets]); the brackets' log columns
    # are 2 (flash attention off), 5 (-fa auto), 6 (ggml gelu, where the row has one) and 8 (vs transformers)
    *[("docs/interop.md", printed, AGREE, AGREE_CELL(case, column), 1)
      for case, head, cells in (
          ("llama", "LLaMA (the reference row) | llama", "[4.77e-07] | [9.47e-04] | - | [4.17e-07]"),
          ("qwen2", "Qwen2 | qwen2", "[5.66e-07] | [1.22e-03] | - | [5.96e-07]"),
          ("qwen3", "Qwen3 (head_dim 24) | qwen3", "[5.36e-07] | [9.25e-04] | - | [5.07e-07]"),
          ("gemma2", "Gemma 2 (window 4, caps 5 and 3) | gemma2", "[2.79e-04] | [1.47e-03] | [5.96e-07] | [5.96e-07]"),
          ("gemma3", "Gemma 3 (6 layers, window 4) | gemma3", "[7.75e-04] | [1.46e-03] | [2.28e-04] | [9.54e-07]"),
          ("gemma3-linear", "Gemma 3, `linear` RoPE scaling 8 | gemma3",
           "[7.76e-04] | [1.17e-03] | [2.49e-04] | [1.13e-06]"),
          ("phi3", "Phi-3 | phi3", "[5.36e-07] | [1.68e-03] | - | [5.96e-07]"),
          ("phi3-partial", "Phi-3, partial RoPE 0.5 | phi3", "[4.77e-07] | [1.33e-03] | - | [5.36e-07]"),
          ("phi3-window", "Phi-3, window 6 (shorter than the prompt) | phi3",
           "[1.27] (argmax differs) | [1.27] | - | [4.77e-07]"),
          ("gpt-neox", "GPT-NeoX (parallel residual) | gptneox", "[4.58e-04] | [8.24e-04] | [7.00e-07] | [2.98e-07]"),
          ("gpt-neox-sequential", "GPT-NeoX, sequential residual | gptneox",
           "[4.28e-04] | [8.19e-04] | [4.68e-06] | [3.58e-07]"),
          ("olmo2", "OLMo 2 | olmo2", "[9.54e-07] | [1.17e-03] | - | [4.77e-07]"))
      for printed, column in _one_figure_each(f"| {head} | {cells} |",
                                              (2, 5, 8) if "| - |" in cells else (2, 5, 6, 8))],
    # llama.cpp's logits on quantized files: the same log as the table above (KQ_LOG)
    ("docs/interop.md", "load\naverage {13}-15, which changes", KQ_LOG, r"^# done .*load average: ([\d.]+)", 1),
    ("docs/interop.md", "load\naverage 13-{15}, which changes", KQ_LOG,
     r"^# 2026.*load average: [\d.]+ [\d.]+ ([\d.]+)", 1),
    ("docs/interop.md", "runs the token ids llama.cpp ran for {8} prompts", KQ_LOG, r"; (\d+) prompts, the last", 1),
    ("docs/interop.md", "over the\nvocabulary and the {8} prompts", KQ_LOG, r"; (\d+) prompts, the last", 1),
    ("docs/interop.md", "the logits reach {30}-32 in magnitude", KQ_LOG, _kq("Q5_0", 11), 1),
    ("docs/interop.md", "the logits reach 30-{32} in magnitude", KQ_LOG, _kq("Q4_0", 11), 1),
    ("docs/interop.md", "(steps of about max |x| / {32,000})", KQ_LOG, r"~1/([\d,]+) of max\|x\|", 1),
    ("docs/interop.md", "the kept path lies {0.024}-0.057 from the file", KQ_LOG, _kq("Q8_0", 5), 1),
    ("docs/interop.md", "the kept path lies 0.024-{0.057} from the file", KQ_LOG, _kq("Q4_0", 5), 1),
    ("docs/interop.md", "against the float32 expansion: {0.90}-1.87, the size", KQ_LOG, _kq("Q5_0", 6), 1),
    ("docs/interop.md", "against the float32 expansion: 0.90-{1.87}, the size", KQ_LOG, _kq("Q4_0", 6), 1),
    ("docs/interop.md", "is within {0.013}-0.019 of llama.cpp's", KQ_LOG, _kq0("Q4_1", "Qcur-0", "asllama"), 1),
    ("docs/interop.md", "is within 0.013-{0.019} of llama.cpp's", KQ_LOG, _kq0("Q4_0", "Qcur-0", "asllama"), 1),
    ("docs/interop.md", "presets, against {0.53}-0.78 without the rounding", KQ_LOG, _kq0("Q4_K_M", "Qcur-0", "float"),
     1),
    ("docs/interop.md", "presets, against 0.53-{0.78} without the rounding", KQ_LOG, _kq0("Q5_1", "Qcur-0", "float"),
     1),
    ("docs/interop.md", "and the logits by up to {2.71} (the", KQ_LOG, _kq("Q4_0", 4), 1),
    ("docs/interop.md", "multiplying every norm's gain `p` by `1 + {1e-7} * torch.randn(p.shape)`", KQ_LOG,
     r"multiplied by 1 \+ ([\d.e-]+) N\(0, 1\)", 1),
    ("docs/interop.md", "(Q5_K_M, {14} of 30 layers)", KQ_LOG, _kq("Q5_K_M", None), 1),
    ("docs/interop.md", "Q5_0 beside Q5_1 (Q4_K_S, {4} layers)", KQ_LOG, _kq("Q4_K_S", None), 1),
    # the table's prompts per preset: the "of 8" of its top-1 column
    *[("docs/interop.md", f"| {preset} | {cells.replace('[', '').replace(']', '')} |".replace(" of 8 |", " of {8} |"),
       KQ_LOG, rf"^{preset}\s+" + r"\S+\s+" * 8 + r"\d+/(\d+)", 1) for preset, cells in KQ_ROWS.items()],
    # docs/performance.md: the loads of the runs it quotes, and the ranges the paragraph reads off their tables
    (COSTS, "(Zen 5; load average {0.7}; 2026-11-28", EVENING, r"\| load average ([\d.]+)$", 1),
    (COSTS, "busy (load {15}-18; `python", FIRST_RUN_7 + "/loaded.log",
     r"^\| first \(empty cache\) \|[^|]+\| ([\d.]+) \|", 1),
    (COSTS, "busy (load 15-{18}; `python", FIRST_RUN_7 + "/loaded.log",
     r"^\| 3 \| llama-completion -p 'The capital' -n 8 \| ([\d.]+) \|", 1),
    (COSTS, "(load average {0.8}-1.0; `bench/results/first-run-2026-12-07/quiet.log`)", QUIET,
     r"^\| first \(empty cache\) \|[^|]+\| ([\d.]+) \|", 1),
    (COSTS, "(load average 0.8-{1.0}; `bench/results/first-run-2026-12-07/quiet.log`)", QUIET,
     r"^\| 3 \| llama-completion -p 'The' -n 8 \| ([\d.]+) \|", 1),
    (COSTS, "2.00 s, after the compiled step's build {2.10}-2.75 s", QUIET, r"^\| after the build" + WALL, 1),
    (COSTS, "2.00 s, after the compiled step's build 2.10-{2.75} s", QUIET, r"^\| after the build, again" + WALL, 1),
    (COSTS, "2.10-2.75 s; llama-completion {0.41}-0.54 s", QUIET,
     r"^\| 3 \| llama-completion -p 'The' -n 8 \|[^|]+\| ([\d.]+) s", 1),
    (COSTS, "2.10-2.75 s; llama-completion 0.41-{0.54} s", QUIET,
     r"^\| 1 \| llama-completion -p 'The' -n 8 \|[^|]+\| ([\d.]+) s", 1),
    (COSTS, "(load average {0.5}-0.7, the same code and command", AGAIN,
     r"^\| first \(empty cache\) \|[^|]+\| ([\d.]+) \|", 1),
    (COSTS, "(load average 0.5-{0.7}, the same code and command", AGAIN,
     r"^\| 3 \| llama-completion -p 'The' -n 8 \| ([\d.]+) \|", 1),
    (COSTS, "1.73 s, after the compiled step's build {1.59}-1.98 s", AGAIN,
     r"^\| one-token prompt, after the build" + WALL, 1),
    (COSTS, "1.73 s, after the compiled step's build 1.59-{1.98} s", AGAIN, r"^\| after the build, again" + WALL, 1),
    (COSTS, "1.59-1.98 s; llama-completion\n{0.37}-0.41 s", AGAIN,
     r"^\| 2 \| llama-completion -p 'The' -n 8 \|[^|]+\| ([\d.]+) s", 1),
    (COSTS, "1.59-1.98 s; llama-completion\n0.37-{0.41} s", AGAIN,
     r"^\| 1 \| llama-completion -p 'The capital' -n 8 \|[^|]+\| ([\d.]+) s", 1),
    (COSTS, "two hours later (load average {1.5}-1.8,", CONFIRM, r"^\| first \(empty cache\) \|[^|]+\| ([\d.]+) \|", 1),
    (COSTS, "two hours later (load average 1.5-{1.8},", CONFIRM,
     r"^\| 3 \| llama-completion -p 'The' -n 8 \| ([\d.]+) \|", 1),
    (COSTS, "every later one {1.63}-2.17 s", CONFIRM, r"^\| one-token prompt, after the build" + WALL, 1),
    (COSTS, "every later one 1.63-{2.17} s", CONFIRM, r"^\| after the build, again" + WALL, 1),
    (COSTS, "one that needs pyarrow absent), {1} xfailed", CI_RUN, r"^\d+ passed, \d+ skipped, (\d+) xfailed", 1),
    (COSTS, "2,450 passed, {6} failed, each an order", f"{CI}/shuffled-1.log", r"^(\d+) failed, \d+ passed", 1),
    (COSTS, "2,457 passed, {5} skipped, 1 xfailed |", f"{CI}/shuffled-2.log", r"^\d+ passed, (\d+) skipped", 1),
    (COSTS, "the tour's quoted lines) | {15} m 9 s |", f"{CI}/shuffled-1.log",
     r"passed, .* in \d+\.\d+s \(0:(\d+):\d+\)", 1),
    (COSTS, "(the last lines name the {15} slowest tests)", CI_RUN, r"slowest (\d+) durations", 1),
    (COSTS, "the first 2.21 s wall, the second {1.83} s", AGAIN, r"^\| second" + WALL, 1),
    (COSTS, "data=FILE.jsonl` on a {40} MB corpus", NEWCOMER, "json:training.corpus.bytes", 1e-6),
    (COSTS, "(load average {5.9}-9.0 during the run", NEWCOMER, "json:load_during_training.min", 1),
    (COSTS, "(load average 5.9-{9.0} during the run", NEWCOMER, "json:load_during_training.max", 1),
    (COSTS, "during the run, median {7.5};", NEWCOMER, "json:load_during_training.median", 1),
    (COSTS, "model build 12.1 s, {2,000} steps", NEWCOMER.replace(".json", ".log"), r"\| +steps +([\d,]+);", 1),
    (COSTS, "samples {5.5} s", NEWCOMER, "json:training.totals.samples", 1),
    (COSTS, "({389} MB by the end of data preparation)", NEWCOMER.replace(".json", ".log"),
     r"^data preparation and model build +[\d.]+ +[\d.]+ +[\d.]+ +(\d+)", 1),
    ("docs/howto/class.md", "{30} simulated students", f"{CLASS}/30-students-90s-flood-rotate.json", "json:students",
     1),
    (COSTS, "2,457 passed, 5 skipped, {1} xfailed |", f"{CI}/shuffled-2.log",
     r"^\d+ passed, \d+ skipped, (\d+) xfailed", 1),
    # docs/fine-tuning.md: the runs' JSON and logs (bench/results/fine-tune-2026-12-06/)
    ("docs/fine-tuning.md", "Q4_1 and Q8_0 blocks ({97} MB)", f"{FINE_TUNE}/smollm2.log",
     r"\((\d+) MB -> \d+ MB of weights", 1),
    *[("docs/fine-tuning.md", printed, f"{FINE_TUNE}/smollm2.log", r"\(\d+ MB -> (\d+) MB of weights", 1)
      for printed in ("for training, {538} MB of weights for SmolLM2", "(SmolLM2: {538} MB)",
                      "holds the float32 model ({538} MB)")],
    ("docs/fine-tuning.md", "every {10}th paragraph", f"{FINE_TUNE}/smollm2.json", r"every (\d+)th English", 1),
    ("docs/fine-tuning.md", "up to {300} KB", f"{FINE_TUNE}/smollm2.json", "json:corpus.bytes", 1 / 1000),
    ("docs/fine-tuning.md", "({601} paragraphs;", f"{FINE_TUNE}/smollm2.json", "json:corpus.paragraphs", 1),
    *[("docs/fine-tuning.md", printed, f"{FINE_TUNE}/{name}.json", f"json:{key}", 1)
      for name, cells in (("smollm2", "| 2.930 | 2.864 | [40] | 168 s | 1,463 MB | 4.13 ([3.7]-[4.4]) |"),
                          ("smollm2-200-steps", "| 2.930 | 2.795 | [200] | 774 s | 1,457 MB | 3.72 ([3.1]-[4.3]) |"),
                          ("minilm", "| 8.218 | 6.766 | [200] | 188 s | 787 MB | 2.93 ([1.6]-[4.0]) |"))
      for printed, key in _one_figure_each(cells, ("steps", "machine.load_during.min", "machine.load_during.max"))],
    ("docs/fine-tuning.md", "| SmolLM2-135M, {200} steps |", f"{FINE_TUNE}/smollm2-200-steps.json", "json:steps", 1),
    ("docs/fine-tuning.md", "to 9.7% after {200} steps", f"{FINE_TUNE}/minilm.json", "json:steps", 1),
    ("docs/fine-tuning.md", "(step 0 at {2.930} nats per token", f"{FINE_TUNE}/smollm2-200-steps.json",
     "json:val_loss_before", 1),
    ("docs/fine-tuning.md", "against {9.461} for a bigram model", f"{FINE_TUNE}/smollm2-200-steps.json",
     "json:eval_before.bigram_val_loss", 1),
    ("docs/fine-tuning.md", "counted on the same {58,468}\ntraining tokens", f"{FINE_TUNE}/smollm2-200-steps.log",
     r"bigram baseline on ([\d,]+) training tokens", 1),
    ("docs/fine-tuning.md", "training tokens); {40} steps of 2 windows", f"{FINE_TUNE}/smollm2.json", "json:steps", 1),
    ("docs/fine-tuning.md", "training tokens); 40 steps of {2} windows", f"{FINE_TUNE}/smollm2.json",
     r'"batch_size=(\d+)"', 1),
    ("docs/fine-tuning.md", "blocks training, and {200} steps", f"{FINE_TUNE}/smollm2-200-steps.json", "json:steps", 1),
    ("docs/fine-tuning.md", "({44}% of an epoch)", f"{FINE_TUNE}/smollm2-200-steps.log", r"([\d.]+)% of an epoch", 1),
    ("docs/fine-tuning.md", "through 2.81 at step {100}.", f"{FINE_TUNE}/smollm2-200-steps.log",
     r"^step (\d+)/200 .* val_loss", 1),
    ("docs/fine-tuning.md", "The {200}-step run took", f"{FINE_TUNE}/smollm2-200-steps.json", "json:steps", 1),
    ("docs/fine-tuning.md", "(load average {3.7}, so about half", f"{FINE_TUNE}/smollm2-200-steps.json",
     "json:machine.load_during.mean", 1),
    ("docs/fine-tuning.md", "Its peak memory, {1.46} GB", f"{FINE_TUNE}/smollm2-200-steps.json", "json:peak_rss_mb",
     1 / 1000),
    ("docs/fine-tuning.md", "AdamW's state for the {21} M trained parameters", f"{FINE_TUNE}/smollm2-200-steps.json",
     "json:start.trained_parameters", 1e-6),
    # docs/howto/*.md (DIGITS: the digits row of own-data.md re-run, 2026-12-07)
    ("docs/howto/class.md", "every one answered (the shared {2}-core machine",
     f"{CLASS}/30-students-90s-flood-rotate.json", "json:cores", 1),
    ("docs/howto/class.md", "load average {6} to 9; 2026-12-06", f"{CLASS}/30-students-90s-flood-rotate.json",
     "json:load_before.0", 1),
    ("docs/howto/class.md", "load average 6 to {9}; 2026-12-06", f"{CLASS}/30-students-90s-flood-rotate.json",
     "json:load_after.0", 1),
    (GGUF_HOWTO, "for `llama-completion -n 1` (median of {5} rounds, same log)", f"{ZEN}/q4_1-night.log",
     r"^fresh processes, median of (\d+) interleaved rounds", 1),
    (INSTALL, "(GPT-2 small,\nbatch {1} and 8; logs:", f"{GPU}/generate-bf16-after.log", r"--batches (\d+),\d+ ", 1),
    (INSTALL, "(GPT-2 small,\nbatch 1 and {8}; logs:", f"{GPU}/generate-bf16-after.log", r"--batches \d+,(\d+) ", 1),
    ("docs/howto/own-data.md", "eval_every=500 threads=1` | **{96.4}%** on 359 held-out digits", DIGITS,
     r"eval +accuracy ([\d.]+), test_images", 100),
    ("docs/howto/own-data.md", "**96.4%** on {359} held-out digits", DIGITS, r"accuracy [\d.]+ test_images (\d+)$", 1),
    ("docs/howto/own-data.md", "on 359 held-out digits | {19} s |", DIGITS, r"steps in 0m(\d+)s", 1),
    ("docs/howto/own-data.md", "load average {4.3}-4.6 for the first row", DIGITS,
     r"load average ([\d.]+), [\d.]+, [\d.]+ before", 1),
    ("docs/howto/own-data.md", "load average 4.3-{4.6} for the first row", DIGITS,
     r"before, ([\d.]+), [\d.]+, [\d.]+ after", 1),
    *[("docs/howto/own-data.md", f"for the first row, {{{load}}} for the\nothers", f"{OWN_DATA}/{name}.log",
       where, 1)
      for name, where, load in (("png", r"load average ([\d.]+) [\d.]+ [\d.]+ before", "2.0"),
                                ("translate-es", r"before, ([\d.]+) [\d.]+ [\d.]+ after", "2.0"))],
    ("docs/howto/own-data.md", "**{96.7}%** on 359 (same stratified split", f"{OWN_DATA}/png.log",
     r"eval +accuracy ([\d.]+), test_images", 100),
    ("docs/howto/own-data.md", "**96.7%** on {359} (same stratified split", f"{OWN_DATA}/png.log",
     r"accuracy [\d.]+ test_images (\d+)$", 1),
    ("docs/howto/own-data.md", "pixels rounded to 8 bits) | {11} s |", f"{OWN_DATA}/png.log", r"steps in 0m(\d+)s", 1),
    ("docs/howto/own-data.md", "exact match **{100}%** on 200 held-out pairs", f"{OWN_DATA}/translate-es.log",
     r"^step 600/600 .* exact_match ([\d.]+) ", 100),
    ("docs/howto/own-data.md", "exact match **100%** on {200} held-out pairs", f"{OWN_DATA}/translate-es.log",
     r"^step 600/600 .* held_out (\d+) ", 1),
    ("docs/howto/own-data.md", "(already at step {200})", f"{OWN_DATA}/translate-es.log",
     r"^step (\d+)/600 .* exact_match 1 held_out", 1),
    ("docs/howto/own-data.md", "(already at step 200), `unseen_targets` {0} |", f"{OWN_DATA}/translate-es.log",
     r"^step 600/600 .* unseen_targets (\d+)", 1),
    ("docs/howto/own-data.md", "`unseen_targets` 0 | {46} s |", f"{OWN_DATA}/translate-es.log", r"steps in 0m(\d+)s",
     1),
    ("docs/howto/own-data.md", "exact match **{0}%**: all 200", f"{OWN_DATA}/translate-de.log",
     r"^step 200/200 .* exact_match ([\d.]+) ", 100),
    ("docs/howto/own-data.md", "exact match **0%**: all {200} held-out targets", f"{OWN_DATA}/translate-de.log",
     r"^step 200/200 .* held_out (\d+) ", 1),
    ("docs/howto/own-data.md", "(`unseen_targets` {200}) |", f"{OWN_DATA}/translate-de.log",
     r"^step 200/200 .* unseen_targets (\d+)", 1),
    ("docs/howto/own-data.md", "(`unseen_targets` 200) | {18} s |", f"{OWN_DATA}/translate-de.log",
     r"steps in 0m(\d+)s", 1),
    # the machine and the data each log's header describes
    ("docs/howto/own-data.md", "on the project's shared {2}-core AMD EPYC", DIGITS, r"; (\d+)-core AMD EPYC", 1),
    ("docs/howto/own-data.md", "pixels rounded to {8} bits)", f"{OWN_DATA}/png.log",
     r"^# data: .*, (\d+)-bit grayscale", 1),
    ("docs/howto/own-data.md", "en -> es number words (num2words {0}..1999)", f"{OWN_DATA}/translate-es.log",
     r"^# data: .* for n in (\d+)\.\.\d+$", 1),
]


# docs/interventions.md's agreement table, gpt-char's rows: `OMP_NUM_THREADS=1 nice python -m
# attnlab.benchmarks.attribution_agreement --models gpt-char` re-run 2026-12-07 (the SmolLM2 rows, from the
# 2026-11-28 run, were not logged). Per row: the page's pair cell, the log's pair (its repr's start), and the
# page's cells after the pair (cells, Spearman, without layer 0, top-10 overlap, top-10 real, worst layer),
# each read from the log's row: its cells after the pair are cells, metric, Spearman, without layer 0, top-10
# overlap, top-10 real, worst layer.
ATTRIBUTION = "bench/results/attribution-agreement-2026-12-07/gpt-char.log"
_ATTRIBUTION_ROWS = (
    ("And the king said to th / ... sh", "'And the king said", ("8", "0.17", "0.60", "8/8", "4/4", "0")),
    ("The king said to the queen th / The kind ...", "'The king said", ("88", "0.73", "0.78", "8/10", "4/6", "0")),
    ("def read(self): return self.rea / def seek...", "'def read(self)", ("124", "0.72", "0.79", "5/10", "3/4", "0")),
    ("import os⏎os.path.jo / import re⏎...", "'import os", ("52", "0.77", "0.89", "8/10", "5/5", "0")),
    ("x = None⏎if x is No / x = Nose⏎...", "'x = None", ("52", "0.99", "0.99", "10/10", "5/5", "0")),
    ("`for i in range(10): pri` / `... rangs(10) ...`", "'for i in range", ("56", "0.85", "0.82", "7/10", "2/2", "0")),
)
_ATTRIBUTION_LOG_CELL = (0, 2, 3, 4, 5, 6)  # the log's cell after the pair for each of the page's cells


def _attribution_claims(pair: str, key: str, cells: tuple[str, ...]) -> list[tuple]:
    out = []
    for k, cell in enumerate(cells):
        parts = cell.split("/")
        for j in range(len(parts)):
            shown = "/".join("{" + x + "}" if i == j else x for i, x in enumerate(parts))
            printed = "| gpt-char | " + pair + " | " + " | ".join((*cells[:k], shown)) + " |"
            value = r"(-?[\d.]+)" if len(parts) == 1 else (r"(\d+)/\d+" if j == 0 else r"\d+/(\d+)")
            where = r"^\| " + re.escape(key) + r"[^|]*\|" + r"[^|]*\|" * _ATTRIBUTION_LOG_CELL[k] + " " + value + " \\|"
            out.append(("docs/interventions.md", printed, ATTRIBUTION, where, 1))
    return out


CLAIMS += [c for row in _ATTRIBUTION_ROWS for c in _attribution_claims(*row)]


# bench/RESULTS.md's evening figures of 2026-12-07: second turns with the attention kernel at any length, and the
# Q4_K_M files with Q4_K's compact tiles beside llama.cpp (each figure its own row: the value is the first group)
def _llama_cpp_cells(name: str, threads: int) -> tuple[str, str, str]:
    """Patterns of the default path's decode, llama.cpp's tg64 and their ratio in llama_cpp's table of `name`."""
    head = rf"^{name}: (?:.*\n)*?\| default \(compiled step\) \| {threads} \| "
    return head + r"([\d.]+) \|", head + r"[\d.]+ \| ([\d.]+) \|", head + r"[\d.]+ \| [\d.]+ \| ([\d.]+)x"


def _shapes_cells(name: str, threads: int) -> tuple[str, str, str]:
    """The same three of shapes' table row of `name`."""
    head = rf"^\| {name} \| {threads} \| "
    return head + r"([\d.]+) \|", head + r"[\d.]+ \| ([\d.]+) \|", head + r"[\d.]+ \| [\d.]+ \| ([\d.]+)x"


def _peer_rows(name: str, cells, log, table: dict) -> list[tuple]:
    """bench/RESULTS.md's rows "| name | threads | ours / llama.cpp = ratio |" of each kind in `table` ({kind:
    {threads: (ours, peer, ratio)}}), each figure its own row: `name` formats the first cell from the kind,
    cells(kind, t) gives the log's three patterns, log(kind) the log's path."""
    out = []
    for kind, rows in table.items():
        for t, shown_cells in rows.items():
            for k, where in enumerate(cells(kind, t)):
                shown = ["{" + c + "}" if i == k else c for i, c in enumerate(shown_cells)]
                row = f"| {name.format(kind)} | {t} | {shown[0]} / {shown[1]} = {shown[2]}x |"
                out.append(("bench/RESULTS.md", row, log(kind), where, 1))
    return out


CLAIMS += _peer_rows("SmolLM2 {}", lambda kind, t: _llama_cpp_cells(rf"SmolLM2-135M-Instruct\.{kind}\.gguf", t),
                     lambda kind: f"{Q4_K_COMPACT}/smollm2-llama-cpp.log",
                     {"Q4_1": {1: ("147.2", "80.3", "1.83"), 2: ("152.1", "124.0", "1.23")},
                      "Q4_K_M": {1: ("123.7", "97.6", "1.27"), 2: ("128.4", "133.7", "0.96")}})
CLAIMS += _peer_rows("TinyLlama-1.1B shape, {}",
                     lambda kind, t: _shapes_cells(rf"tinyllama-1\.1b\.{kind}\.gguf", t),
                     lambda kind: f"{Q4_K_COMPACT}/tinyllama-q4_k_m.log",
                     {"Q4_K_M": {1: ("27.7", "29.7", "0.93"), 2: ("33.6", "42.5", "0.79")}})
CLAIMS += [
    ("bench/RESULTS.md", "{3.36}x / 3.15x at one thread", LONG_AFTER, r"^\| pp512 \| 1 \|.* ([\d.]+)x \|$", 1),
    ("bench/RESULTS.md", "3.36x / {3.15}x at one thread", LONG_AFTER, r"^\| pp512 after .*\| 1 \|.* ([\d.]+)x \|$", 1),
    ("bench/RESULTS.md", "{2.23}x / 2.25x at two", LONG_AFTER, r"^\| pp512 \| 2 \|.* ([\d.]+)x \|$", 1),
    ("bench/RESULTS.md", "2.23x / {2.25}x at two", LONG_AFTER, r"^\| pp512 after .*\| 2 \|.* ([\d.]+)x \|$", 1),
    ("bench/RESULTS.md", "0.76-0.84x the float32 layout's time, {0.771}x its bytes", f"{Q4_K_COMPACT}/kernels.log",
     r"bytes 1184 / 1536 = ([\d.]+)", 1),
    ("bench/RESULTS.md", "{0.76}-0.84x the float32 layout's time", f"{Q4_K_COMPACT}/kernels.log",
     r"^compact / float32 time: ([\d.]+)-", 1),
    ("bench/RESULTS.md", "0.76-{0.84}x the float32 layout's time", f"{Q4_K_COMPACT}/kernels.log",
     r"^compact / float32 time: [\d.]+-([\d.]+)x", 1),
]
# bench/RESULTS.md's night figures of 2026-12-07: the kernels' pool taking blocks from both ends (two_trees' rounds
# before and after; TinyLlama Q4_K_M beside llama.cpp again) and the floor counting a file's bytes
POOL_ENDS = "bench/results/pool-ends-2026-12-07"
_TWO_TREES = {"Q4_1": ("1.11", "0.94", "1.04-1.25", "0.89-1.02"), "Q4_K_M": ("1.15", "1.00", "1.13-1.29", "0.95-1.07")}


def _two_trees_claims(kind: str, cells: tuple[str, str, str, str]) -> list[tuple]:
    """The page's row of `kind`: the medians after / before at two and one thread (the summary line), and the
    second thread's range after and before (the lowest and highest of the rounds' "second thread" columns)."""
    log = f"{POOL_ENDS}/two-trees-smollm2.log"
    summary = rf"^SmolLM2-135M-Instruct\.{kind}\.gguf: after / before, median.*"
    out = []
    for k, where in enumerate((summary + r"two threads ([\d.]+)x", summary + r"one thread ([\d.]+)x")):
        shown = ["{" + c + "}" if i == k else c for i, c in enumerate(cells)]
        out.append(("bench/RESULTS.md", f"| {kind} | {shown[0]}x | {shown[1]}x | {shown[2]}x | {shown[3]}x |", log,
                    where, 1))
    return out


CLAIMS += [c for kind, cells in _TWO_TREES.items() for c in _two_trees_claims(kind, cells)]
_AGAIN = (f"{POOL_ENDS}/two-trees-smollm2-q4_1-again.log",
          r"^SmolLM2-135M-Instruct\.Q4_1\.gguf: after / before, median.*")
CLAIMS += [("bench/RESULTS.md", "gave one thread {0.99}x and two threads 1.12x", _AGAIN[0],
            _AGAIN[1] + r"one thread ([\d.]+)x", 1),
           ("bench/RESULTS.md", "gave one thread 0.99x and two threads {1.12}x", _AGAIN[0],
            _AGAIN[1] + r"two threads ([\d.]+)x", 1)]


CLAIMS += _peer_rows("{}", lambda kind, t: _llama_cpp_cells(rf"SmolLM2-135M-Instruct\.{kind}\.gguf", t),
                      lambda kind: f"{POOL_ENDS}/smollm2-q4_0-q8_0.log",
                      {"Q4_0": {1: ("184.8", "154.9", "1.19"), 2: ("187.6", "181.0", "1.04")},
                       "Q8_0": {1: ("137.6", "118.2", "1.16"), 2: ("144.6", "138.0", "1.05")}})
CLAIMS += _peer_rows("TinyLlama-1.1B shape, {}", lambda kind, t: _shapes_cells(rf"tinyllama-1\.1b\.{kind}\.gguf", t),
                      lambda kind: f"{POOL_ENDS}/tinyllama-{kind.lower()}.log",
                      {"Q4_K_M": {1: ("30.5", "30.1", "1.01"), 2: ("42.1", "45.1", "0.94")},
                       "Q4_0": {1: ("36.8", "30.2", "1.22"), 2: ("44.7", "48.0", "0.93")}})
CLAIMS += _peer_rows("Qwen2.5-0.5B shape, {}", lambda kind, t: _shapes_cells(rf"qwen2\.5-0\.5b\.{kind}\.gguf", t),
                      lambda kind: f"{POOL_ENDS}/qwen2.5-0.5b.log",
                      {"Q4_0": {1: ("59.4", "51.4", "1.16"), 2: ("72.5", "70.7", "1.03")},
                       "Q8_0": {1: ("35.8", "34.7", "1.03"), 2: ("47.5", "46.9", "1.01")},
                       "Q4_K_M": {1: ("45.3", "32.9", "1.38"), 2: ("58.4", "47.1", "1.24")}})
CLAIMS += [("bench/RESULTS.md", "attnlab decodes Q4_0 at {0.91} of the two-core floor",
            f"{POOL_ENDS}/tinyllama-q4_0.log",
            r"^\| tinyllama-1\.1b\.Q4_0\.gguf \| 2 \| [\d.]+ \| [\d.]+ \| [\d.]+x \| ([\d.]+) /", 1),
           ("bench/RESULTS.md", "(llama.cpp at {0.98}: torch.sum's read", f"{POOL_ENDS}/tinyllama-q4_0.log",
            r"^\| tinyllama-1\.1b\.Q4_0\.gguf \| 2 \| [\d.]+ \| [\d.]+ \| [\d.]+x \| [\d.]+ / ([\d.]+) \|", 1)]
CLAIMS += [
    ("bench/RESULTS.md", "(TinyLlama Q4_K_M: {869.2} MB a step", f"{POOL_ENDS}/tinyllama-q4_k_m-first.log",
     r"memory floor: a step reads ([\d.]+) MB", 1),
    ("bench/RESULTS.md", "It now counts a GGUF matrix's blocks as the file holds them ({630.2} MB;",
     f"{POOL_ENDS}/tinyllama-q4_k_m.log", r"memory floor: a step reads ([\d.]+) MB", 1),
]
CLAIMS += [("docs/interventions.md", "and on the {8}-cell gpt-char pair dominated by layer 0", ATTRIBUTION,
            r"^\| 'And the king said[^|]*\| (\d+) \|", 1)]

# docs/training.md's minilm-mlm trials of 2026-12-07 (bench/results/minilm-everyday-2026-12-07): the runs' step
# lines and cloze scores as the logs print them, rounded on the page
EVERYDAY = "bench/results/minilm-everyday-2026-12-07/runs.log"
FACTS = "bench/results/minilm-everyday-2026-12-07/facts-runs.log"


def _step(run: str, step: int, key: str) -> str:
    """A run's step line in facts-runs.log: the value after `key`."""
    return rf"^run {re.escape(run)}: step {step}/\d+ .* {key} ([\d.]+)"


def _cloze(run: str, step: int, which: str = "dev") -> str:
    return rf"^cloze runs/{re.escape(run)}/step-0*{step} {which} (\d+)/"


CLAIMS += [
    ("docs/training.md", "(val loss {2.94} against the pilot's 2.75)", FACTS, _step("lr2e4", 1000, "val_loss"), 1),
    ("docs/training.md", "(val loss 2.94 against the pilot's {2.75})", EVERYDAY,
     r"^run pilot-33 step 1000: val loss ([\d.]+)", 1),
    ("docs/training.md", "against the pilot's 2.75) and got {10} of 22", FACTS, _cloze("lr2e4", 1000), 1),
    ("docs/training.md", "reached a lower val loss ({2.68})", FACTS, _step("l6t5", 1000, "val_loss"), 1),
    ("docs/training.md", "reached a lower val loss (2.68) but {9} of 22", FACTS, _cloze("l6t5", 1000), 1),
    ("docs/training.md", "(132 in all, {399,298} words)", FACTS, r"^words: stories (\d+)", 1),
    ("docs/training.md", "held-out loss to {2.35} (top-5", FACTS, _step("s132", 4000, "val_loss"), 1),
    ("docs/training.md", "held-out loss to 2.35 (top-5 {72.5}%)", FACTS, _step("s132", 4000, "masked_top5"), 100),
    # "7-9 of 22 over steps 1,000-4,000": its least at step 1000, its most at 4000
    ("docs/training.md", "the development list stayed at {7}-9 of 22", FACTS, _cloze("s132", 1000), 1),
    ("docs/training.md", "the development list stayed at 7-{9} of 22", FACTS, _cloze("s132", 4000), 1),
    ("docs/training.md", "32 batches of facts ({6,804} sentences", FACTS, r"^assembled facts: .*'sentences': (\d+)", 1),
    ("docs/training.md", "32 batches of facts (6,804 sentences, {91,826} words)", FACTS, r"^words: .* facts (\d+)", 1),
    *(("docs/training.md", printed, FACTS, _step("mix-a", step, key), scale) for printed, step, key, scale in (
        ("| 14m12s | {3.18} / 61.6% at 500;", 500, "val_loss", 1),
        ("| 14m12s | 3.18 / {61.6}% at 500;", 500, "masked_top5", 100),
        ("61.6% at 500; {2.84} / 66.3% at 1000;", 1000, "val_loss", 1),
        ("61.6% at 500; 2.84 / {66.3}% at 1000;", 1000, "masked_top5", 100),
        ("66.3% at 1000; {2.61} / 69.5% at 1500;", 1500, "val_loss", 1),
        ("66.3% at 1000; 2.61 / {69.5}% at 1500;", 1500, "masked_top5", 100),
        ("69.5% at 1500; {2.50} / 71.1% at 2000", 2000, "val_loss", 1),
        ("69.5% at 1500; 2.50 / {71.1}% at 2000", 2000, "masked_top5", 100))),
    ("docs/training.md", "Chosen on the development list: mix-a at step 1,500 ({15} of 22", FACTS,
     _cloze("mix-a", 1500), 1),
    ("docs/training.md", "Scored once on the test list: **{19} of 40", FACTS, _cloze("mix-a", 1500, "test"), 1),
    ("docs/training.md", "Scored once on the test list: **19 of {40}", FACTS,
     r"^cloze runs/mix-a/step-0*1500 test \d+/(\d+)", 1),
    ("docs/training.md", "runs.log`): **{17} of 40 (42.5%)**", EVERYDAY, _cloze("big-a", 2000, "test"), 1),
    ("docs/training.md", "Chosen on the development list: mix-a at step {1,500} (15 of 22", FACTS,
     r"^cloze runs/mix-a/step-0*(\d+) test ", 1),
]
# ---- P1: docs/training.md's earlier minilm-mlm trials (2026-12-06 and 2026-12-07), read back from their run folders
# (bench/results/minilm-trials-2026-12-07: metrics.jsonl, result.json and console lines; the checkpoints' cloze
# scores counted again; the log holds the script). A template marks each figure [figure|key run step]; each mark
# becomes one CLAIMS row whose printed text is the template with that figure in braces and the others plain.
TRIALS = "bench/results/minilm-trials-2026-12-07/"
_TRIAL_LOG = {**dict.fromkeys(("l4-300", "l4", "six-words"), "words-only.log"),
              **dict.fromkeys(("wiki-l4t3", "everyday", "everyday-wiki50"), "everyday.log")}
_TRIAL_KEYS = {  # key: (where, scale); {run} and {step} filled in
    "val": (r"^run {run} step {step}: .* val loss ([\d.]+) \(", 1),
    "top5": (r"^run {run} step {step}: .* masked top-5 ([\d.]+) \(", 100),
    "uni5": (r"^run {run} step {step}: .* unigram top-5 ([\d.]+) \(", 100),
    "pos": (r"^run {run} step {step}: .* masked positions (\d+)$", 1),
    "train": (r"^run {run} step {step}: train loss ([\d.]+) ", 1),
    "step": (r"^run {run} step ({step}): ", 1),
    "dev": (r"^cloze {run}/step-0*{step} dev (\d+)/", 1),
    "devn": (r"^cloze {run}/step-0*{step} dev \d+/(\d+)$", 1),
    "devpct": (r"^cloze {run}/step-0*{step} dev (\d+)/22$", 100 / 22),
    "test": (r"^cloze {run}/step-0*{step} test (\d+)/", 1),
    "testn": (r"^cloze {run}/step-0*{step} test \d+/(\d+)$", 1),
    "time": (r"^run {run}: summary_s (\d+) ", 1),
    "steptime": (r"^run {run}: step {step} elapsed_s (\d+) ", 1),
    "epochs": (r"^run {run}: elapsed_s .* epochs covered ([\d.]+)$", 1),
    "traintok": (r"^run {run} \(.*'train_tokens': (\d+)", 1),
    "valtok": (r"^run {run} \(.*'val_tokens': (\d+)", 1),
    # distill.log only: the corpora, the generators' lines, the teacher's cache files
    "sent": (r"^corpus {run}: (\d+) sentences", 1),
    "words": (r"^corpus {run}: \d+ sentences, (\d+) words", 1),
    "gen": (r"^generator /tmp/{run}: batch {step}: (\d+) s$", 1),
    "genmin": (r"^generator /tmp/{run}: \d+ batches, (\d+) s in all$", 1 / 60),
    "cachemb": (r"^teacher cache {run}: (\d+) bytes$", 1e-6),
    "trainedmb": (r"^run {run}: opening line: .* trained bytes in float16 (\d+)$", 1e-6),
}
_MARK = re.compile(r"\[([^|\]]+)\|(\w+) (\S+) ?(\d*)\]")


def _trial_claims(template: str) -> list[tuple[str, str, str, str, float]]:
    out = []
    for mark in _MARK.finditer(template):
        printed = _MARK.sub(lambda m: "{" + m[1] + "}" if m.start() == mark.start() else m[1], template)  # noqa: B023
        where, scale = _TRIAL_KEYS[mark[2]]
        log = _TRIAL_LOG.get(mark[3], "distill.log") if mark[2] not in ("sent", "words") else "distill.log"
        out.append(("docs/training.md", printed, TRIALS + log, where.format(run=re.escape(mark[3]), step=mark[4]),
                    scale))
    return out


_TRIAL_TEXT = (
    # words-only.log: the 2026-12-06 table
    "| [11m14s|time l4-300] | val loss [5.13|val l4-300 150] / top-5 [40.8|top5 l4-300 150]% at step "
    "[150|step l4-300 150]; [4.73|val l4-300 300] / [45.0|top5 l4-300 300]% at [300|step l4-300 300] "
    "([3837|pos l4-300 300] positions) | [3|test l4-300 150] of [40|testn l4-300 150] at step [150|step l4-300 150], "
    "[7|test l4-300 300] of [40|testn l4-300 300] at [300|step l4-300 300] |",
    "| [13m47s|time l4] | val loss [4.58|val l4 500] / top-5 [46.2|top5 l4 500]% at step [500|step l4 500]; "
    "**[4.22|val l4 1000] / [49.7|top5 l4 1000]%** at [1000|step l4 1000] ([3837|pos l4 1000] positions) | "
    "[5|test l4 500] of [40|testn l4 500] at step [500|step l4 500], **[10|test l4 1000] of [40|testn l4 1000]** at "
    "[1000|step l4 1000] |",
    "| [17m18s|time six-words] | [4.93|val six-words 500] / [42.1|top5 six-words 500]% at step "
    "[500|step six-words 500]; [4.53|val six-words 1000] / [46.2|top5 six-words 1000]% at [1000|step six-words 1000] "
    "| [4|test six-words 500] of [40|testn six-words 500] at step [500|step six-words 500], "
    "[9|test six-words 1000] of [40|testn six-words 1000] at [1000|step six-words 1000] |",
    "The layers=4 head gets [10|test l4 1000] of [40|testn l4 1000] against",
    # everyday.log: Wikipedia only, SmolLM2's 6 batches, half and half
    "| [19m31s|steptime wiki-l4t3 300] to step [300|step wiki-l4t3 300] | val loss [4.77|val wiki-l4t3 300] / top-5 "
    "[45.9|top5 wiki-l4t3 300]% at step [300|step wiki-l4t3 300] ([1884|pos wiki-l4t3 300] positions) | "
    "[2|dev wiki-l4t3 300] of [22|devn wiki-l4t3 300] | [4|test wiki-l4t3 300] of [40|testn wiki-l4t3 300] |",
    "| [22m45s|time everyday] | [3.64|val everyday 250] / [59.3|top5 everyday 250]% at step [250|step everyday 250]; "
    "[3.43|val everyday 500] / [61.0|top5 everyday 500]% at [500|step everyday 500] ([546|pos everyday 500] "
    "positions; unigram top-5 [22.5|uni5 everyday 500]%) | [8|dev everyday 250] of [22|devn everyday 250] at "
    "[250|step everyday 250], [7|dev everyday 500] at [500|step everyday 500] | [8|test everyday 250] of "
    "[40|testn everyday 250] at [250|step everyday 250], [8|test everyday 500] at [500|step everyday 500] |",
    "| [22m36s|time everyday-wiki50] | [3.76|val everyday-wiki50 250] / [55.5|top5 everyday-wiki50 250]% at "
    "[250|step everyday-wiki50 250]; [3.48|val everyday-wiki50 500] / [58.6|top5 everyday-wiki50 500]% at "
    "[500|step everyday-wiki50 500] (unigram [20.9|uni5 everyday-wiki50 500]%) | [8|dev everyday-wiki50 250] of "
    "[22|devn everyday-wiki50 250] at [250|step everyday-wiki50 250], [9|dev everyday-wiki50 500] at "
    "[500|step everyday-wiki50 500] | [5|test everyday-wiki50 250] of [40|testn everyday-wiki50 250] at "
    "[250|step everyday-wiki50 250], [8|test everyday-wiki50 500] at [500|step everyday-wiki50 500] |",
    "But [8|test everyday 500] of [40|testn everyday 500] is far from 24",
    "(training loss [1.85|train everyday 500] against [3.43|val everyday 500] held out at step "
    "[500|step everyday 500], [25|epochs everyday] passes over it)",
    # distill.log: the corpora and their generators, the teacher's cache, the distillation runs
    "6 batches took [31|genmin everyday/gen1.log] minutes in two processes",
    "[391|gen everyday/gen0.log 0] to [750|gen everyday/gen1.log 5] s a batch, and left [1,491|sent everyday] "
    "sentences ([17,739|words everyday] words; [19,520|traintok distill-a] train and [2,335|valtok distill-a] "
    "held-out tokens)",
    "([5|cachemb smollm2-k32-0933f271ab63a6db.safetensors] MB for the 6-batch corpus)",
    "(`train_layers=3`: [11.0|trainedmb distill-a] MB with the head, in float16)",
    "[191|gen amlm/gen.log 11]-[406|gen amlm/gen.log 9] s a batch",
    "and leave [3,035|sent everyday-12] sentences ([36,431|words everyday-12] words; [40,235|traintok control-b] "
    "train and [4,427|valtok control-b] held-out tokens)",
    "| the loop [18m58s|time distill-a] (after the teacher's pass) | val loss [3.70|val distill-a 250] / top-5 "
    "[57.0|top5 distill-a 250]% at step [250|step distill-a 250]; [3.46|val distill-a 500] / "
    "[60.4|top5 distill-a 500]% at [500|step distill-a 500] ([546|pos distill-a 500] positions) | "
    "[5|dev distill-a 250] of [22|devn distill-a 250] at [250|step distill-a 250], [9|dev distill-a 500] at "
    "[500|step distill-a 500] |",
    "| [33m09s|time control-b] | [3.25|val control-b 500] / [62.1|top5 control-b 500]% at [500|step control-b 500]; "
    "[2.99|val control-b 1000] / [66.0|top5 control-b 1000]% at [1000|step control-b 1000] "
    "([1100|pos control-b 1000] positions; unigram top-5 [20.8|uni5 control-b 1000]%) | [8|dev control-b 500] of "
    "[22|devn control-b 500] at [500|step control-b 500], [9|dev control-b 1000] at [1000|step control-b 1000] |",
    "| the loop [25m16s|time distill-b] (after the teacher's pass) | [3.31|val distill-b 500] / "
    "[60.2|top5 distill-b 500]% at [500|step distill-b 500]; [3.05|val distill-b 1000] / "
    "[65.2|top5 distill-b 1000]% at [1000|step distill-b 1000] | [7|dev distill-b 500] of [22|devn distill-b 500] "
    "at [500|step distill-b 500], [9|dev distill-b 1000] at [1000|step distill-b 1000] |",
    "| [6m01s|time control-s2]-[7m19s|time control-s0] each | [3.17|val control-s0 500], [3.18|val control-s1 500], "
    "[3.16|val control-s2 500] / [64.0|top5 control-s0 500]%, [63.7|top5 control-s1 500]%, "
    "[63.2|top5 control-s2 500]% | [8|dev control-s0 500], [9|dev control-s1 500], [9|dev control-s2 500] of "
    "[22|devn control-s0 500] |",
    "| [6m13s|time distill-s2]-[7m32s|time distill-s0] each | [3.26|val distill-s0 500], [3.24|val distill-s1 500], "
    "[3.26|val distill-s2 500] / [63.1|top5 distill-s0 500]%, [61.4|top5 distill-s1 500]%, "
    "[61.2|top5 distill-s2 500]% | [5|dev distill-s0 500], [10|dev distill-s1 500], [9|dev distill-s2 500] of "
    "[22|devn distill-s0 500] |",
    "([7|dev everyday 500] of [22|devn everyday 500] at step [500|step everyday 500] on the 6 batches, in the table "
    "above; [8|dev control-b 500] and [9|dev control-b 1000] of [22|devn control-b 1000] on the 12)",
    "([5|dev distill-a 250] against [8|dev everyday 250] at step [250|step distill-a 250] and [9|dev distill-a 500] "
    "against [7|dev everyday 500] at [500|step distill-a 500] on the 6 batches; [7|dev distill-b 500] against "
    "[8|dev control-b 500] at [500|step distill-b 500] and [9|dev distill-b 1000] against [9|dev control-b 1000] at "
    "[1000|step distill-b 1000] on the 12)",
    "three seeds of [500|step control-s0 500] steps the development list gives [8|dev control-s0 500], "
    "[9|dev control-s1 500], [9|dev control-s2 500] without the teacher and [5|dev distill-s0 500], "
    "[10|dev distill-s1 500], [9|dev distill-s2 500] with it",
    "(the best, [10|dev distill-s1 500] of [22|devn distill-s1 500], is [45|devpct distill-s1 500]%)",
)
CLAIMS += [c for template in _TRIAL_TEXT for c in _trial_claims(template)]
_ANSWER = r"^answers {} \(.*\): {} -> .*?{} ([\d.]+)"
CLAIMS += [(("docs/training.md", printed, TRIALS + "answers.log",
             _ANSWER.format(re.escape(run), re.escape(sentence), word), 1)) for printed, run, sentence, word in (
    ("morning.\" with coffee ({0.26}), milk", "everyday", "she drank a cup of [MASK] in the morning.", "coffee"),
    ("-> tea {0.54}, coffee 0.35", "big-a", "she drank a cup of [MASK] in the morning.", "tea"),
    ("-> tea 0.54, coffee {0.35}", "big-a", "she drank a cup of [MASK] in the morning.", "coffee"),
    ("-> coffee {0.25}, tea 0.13", "mix-a", "She drank a glass of [MASK].", "coffee"),
    ("-> coffee 0.25, tea {0.13}", "mix-a", "She drank a glass of [MASK].", "tea"),
    ("-> london {0.20}", "mix-a", "paris is the capital of [MASK].", "london"))]
_PROBE = r"^# context probe on runs/big-a/step-00002000 .*"
CLAIMS += [
    # 12, 33 and 97 batches: each run's development score at its best step (control-b, pilot-33, big-a)
    ("docs/training.md", "the development score went {9}, 13, 14 of 22", TRIALS + "distill.log",
     r"^cloze control-b/step-0*1000 dev (\d+)/", 1),
    ("docs/training.md", "the development score went 9, {13}, 14 of 22", EVERYDAY, _cloze("pilot-33", 1000), 1),
    ("docs/training.md", "the development score went 9, 13, {14} of 22", EVERYDAY, _cloze("big-a", 2000), 1),
    # big-a's context probe (facts-runs.log): alone, and the least and most inside other text
    ("docs/training.md", "big-a scores {14} of 22 alone", FACTS, _PROBE + r": '\{s\}' (\d+)/22;", 1),
    ("docs/training.md", "big-a scores 14 of {22} alone", FACTS, _PROBE + r": '\{s\}' \d+/(\d+);", 1),
    ("docs/training.md", "alone and {11}-14 inside other text", FACTS,
     _PROBE + r"'it was a normal day\. \{s\}' (\d+);", 1),
    ("docs/training.md", "alone and 11-{14} inside other text", FACTS, _PROBE + r"'\{s\} \{s\}' (\d+)$", 1),
    *(("docs/training.md", printed, FACTS, _cloze("mix-b", step), 1) for printed, step in (
        ("scored {7}, 11, 12, 12 of 22", 500), ("scored 7, {11}, 12, 12 of 22", 1000),
        ("scored 7, 11, {12}, 12 of 22", 1500), ("scored 7, 11, 12, {12} of 22", 2000))),
    ("docs/training.md", "at steps 500-2,000, below mix-a's {15}, so", FACTS, _cloze("mix-a", 1500), 1),
    # tests/training/test_user_data.py timed (it had 16 tests and 4 s on the page, not logged)
    *(("docs/training.md", printed, "bench/results/user-data-tests-2026-12-07/pytest.log", where, 1)
      for printed, where in (
          ("`tests/training/test_user_data.py` ({29} tests,", r"^(\d+) passed in "),
          ("({29} tests, 8.86 s by pytest's count", r"^(\d+) passed in "),
          ("29 tests, {8.86} s by pytest's count", r"^\d+ passed in ([\d.]+)s"),
          ("s by pytest's count, {18.4} s for the whole command", r"^# wall ([\d.]+) s"),
          ("at a load average of {6}, 2026-12-07:\n`bench/results/user-data", r"load average ([\d.]+) at the start"))),
    # the recipes table's loads: the shipped runs' trained.json "machine" lines
    *(("docs/training.md", printed, f"attnlab/assets/checkpoints/{recipe}/trained.json", where, 1)
      for printed, recipe, where in (
          ("one-thread benchmark (load average {2}-3), so each run", "bert-mlm",
           r'"machine": .*load average ([\d.]+) '),
          ("one-thread benchmark (load average 2-{3}), so each run", "clip-mnist",
           r'"machine": .*load average ([\d.]+) '),
          ("7m21s for the retrain on a machine at load average ~{12}", "translate-numbers",
           r'"machine": .*load average ([\d.]+) '),
          ("other work on both cores, load average ~{3})", "vit-mnist", r'"machine": .*load average ([\d.]+) '),
          ("16m16s (load average {6}-8.5)", "minilm-mlm", r'"machine": .*load average ([\d.]+)-'),
          ("16m16s (load average 6-{8.5})", "minilm-mlm", r'"machine": .*load average [\d.]+-([\d.]+)\)'))),
    # the steps of the shipped runs' evaluations the page names (their trained.json's evals keys)
    *(("docs/training.md", printed, f"attnlab/assets/checkpoints/{recipe}/trained.json", rf'^    "({step})": \{{', 1)
      for printed, recipe, step in (
          ("(1.867 at step 500, 1.556 at {1000}) | >=", "gpt-char", 1000),
          ("93.1% at step {1000} | >= 90%", "clip-mnist", 1000),
          ("still improving at 3000 steps (44.4% at {1500},", "bert-mlm", 1500),
          ("(44.4% at 1500, 46.2% at {2000},", "bert-mlm", 2000),
          ("97.7, 97.1, 97.5% over steps {4500}-6000", "vit-mnist", 4500))),
    # translate-numbers' held-out numbers against num2words, re-run (the log holds the script)
    *(("docs/training.md", printed, "bench/results/translate-numbers-2026-12-07/held-out.log", where, 1)
      for printed, where in (
          ("held-out.log`): {1000}/1000 as num2words spells", r"^as num2words spells them: (\d+)/"),
          ("held-out.log`): 1000/{1000} as num2words spells", r"^as num2words spells them: \d+/(\d+) "),
          ("spells them and {1000}/1000 typed without", r"^typed: (\d+)/"),
          ("spells them and 1000/{1000} typed without", r"^typed: \d+/(\d+) "))),
]
# ---- P1: end
# ---- L: docs/explorer.md's SmolLM2 readouts, re-run 2026-12-07 (the log holds the script it ran)
SMOL_READ = "bench/results/explorer-smollm2-2026-12-07/readouts.log"


def _lens(after: str, group: str = r"rank ([\d,]+),") -> str:
    """The readouts log's logit-lens line after `after` ("the embeddings", "layer 24"): ' Paris''s rank or P."""
    return rf"^logit lens after {after}: ' Paris' " + group


def _writes(layer: int, head: int, sign: str) -> str:
    return rf"^name swap: layer {layer} head {head} writes \{sign}([\d.]+)"


CLAIMS += [
    ("docs/explorer.md", "is in the city of\" (P(\" Paris\") = {65.6}%, re-read", SMOL_READ,
     r"^eiffel: P\(' Paris'\) = ([\d.]+)%", 1),
    ("docs/explorer.md", "\" Paris\" first enters the top 5 at layer {28} (", SMOL_READ,
     r"^logit lens: ' Paris' first in the top 5 after layer (\d+)$", 1),
    ("docs/explorer.md", "first enters the top 5 at layer 28 ({4.1}%)", SMOL_READ,
     _lens("layer 28", r"rank \d+, P ([\d.]+)%"), 1),
    ("docs/explorer.md", "(4.1%) and ends at {65.6}%", SMOL_READ, _lens("layer 30", r"rank 1, P ([\d.]+)%"), 1),
    ("docs/explorer.md", "\" Mary\" − \" John\" = {4.6054}; the parts", SMOL_READ,
     r"logit difference ' Mary' - ' John' = ([\d.]+)", 1),
    ("docs/explorer.md", "the parts sum to {4.6053} (float32", SMOL_READ, r"parts sum to ([\d.]+)$", 1),
    ("docs/explorer.md", "layer 24 head 4 writes +{2.17}, layer 30", SMOL_READ, _writes(24, 4, "+"), 1),
    ("docs/explorer.md", "layer 30 head 2 +{1.69}, layer 30 head 1", SMOL_READ, _writes(30, 2, "+"), 1),
    ("docs/explorer.md", "layer 30 head 1 −{1.26} (2026-12-07", SMOL_READ, _writes(30, 1, "-"), 1),
    ("docs/explorer.md", "Eiffel sentence \" Paris\" ranks {2,861} after the embeddings", SMOL_READ,
     _lens("the embeddings"), 1),
    ("docs/explorer.md", "after the embeddings, {779} after layer 24", SMOL_READ, _lens("layer 24"), 1),
    ("docs/explorer.md", "779 after layer 24, {4} after layer 28", SMOL_READ, _lens("layer 28"), 1),
    ("docs/explorer.md", "4 after layer 28 and {1} from layer 29 on", SMOL_READ, _lens("layer 29"), 1),
]
SMOL_TOUR = "bench/results/explorer-smollm2-2026-12-07/tour.log"
_TOUR = r"^tour: the head that lowers P\(answer\) most: "
CLAIMS += [
    ("docs/explorer.md", "on SmolLM2 that is layer {12}, head 8", SMOL_TOUR, _TOUR + r"layer (\d+),", 1),
    ("docs/explorer.md", "on SmolLM2 that is layer 12, head {8}", SMOL_TOUR, _TOUR + r"layer \d+, head (\d+):", 1),
    ("docs/explorer.md", "head 8: P(\" Paris\") {77.1}% ->", SMOL_TOUR, _TOUR + r".*: P ([\d.]+)% ->", 1),
    ("docs/explorer.md", "77.1% -> {47.3}%", SMOL_TOUR, _TOUR + r".* -> ([\d.]+)%", 1),
]
SMOL_SWEEP = "bench/results/explorer-smollm2-2026-12-07/sweep.log"
SMOL_ATTN = "bench/results/explorer-smollm2-2026-12-07/attention-ablation.log"
SMOL_NAMES = "bench/results/explorer-smollm2-2026-12-07/name-swap.log"
_IFFEL, _OF = r"^patch: 'iffel' restores ", r"^patch: ' of' takes over from layer "
CLAIMS += [
    ("docs/explorer.md", "drops are layer 2 head 5 ({1.11} nats)", SMOL_SWEEP,
     r"^which heads matter: layer 2 head 5 drop ([\d.]+) nats", 1),
    ("docs/explorer.md", "and layer 2 head 6 ({0.74}); most heads", SMOL_SWEEP,
     r"^which heads matter: layer 2 head 6 drop ([\d.]+) nats", 1),
    ("docs/explorer.md", "(\"iffel\") restores {0.68}–1.12 from layer", SMOL_SWEEP, _IFFEL + r"([\d.]+)-", 1),
    ("docs/explorer.md", "(\"iffel\") restores 0.68–{1.12} from layer", SMOL_SWEEP, _IFFEL + r"[\d.]+-([\d.]+) ", 1),
    ("docs/explorer.md", "restores 0.68–1.12 from layer {4} to 24", SMOL_SWEEP, _IFFEL + r".* from layer (\d+) to", 1),
    ("docs/explorer.md", "from layer 4 to {24}, and", SMOL_SWEEP, _IFFEL + r".* to (\d+) \(", 1),
    ("docs/explorer.md", "(\"of\") takes over from layer {25} (0.47", SMOL_SWEEP, _OF + r"(\d+) ", 1),
    ("docs/explorer.md", "from layer 25 ({0.47}–0.66)", SMOL_SWEEP, _OF + r"\d+ \(([\d.]+)-", 1),
    ("docs/explorer.md", "from layer 25 (0.47–{0.66})", SMOL_SWEEP, _OF + r"\d+ \([\d.]+-([\d.]+),", 1),
    ("docs/explorer.md", "\"of\" takes {0.65} of the weight", SMOL_ATTN,
     r"^attention vs ablation: token ' of' weight ([\d.]+),", 1),
    ("docs/explorer.md", "P(\" Paris\") a little (−{0.055} nats", SMOL_ATTN,
     r"^attention vs ablation: token ' of' .*: -([\d.]+) nats", 1),
    ("docs/explorer.md", "On SmolLM2 ({14} tokens, clean", SMOL_NAMES, r"^name swap clean: (\d+) tokens", 1),
    ("docs/explorer.md", "(14 tokens, clean {4.61}, corrupted", SMOL_NAMES, r"^name swap clean: .* = ([\d.]+)$", 1),
    ("docs/explorer.md", "clean 4.61, corrupted −{5.48}:", SMOL_NAMES, r"^name swap corrupted: .* = -([\d.]+)$", 1),
]
# ---- L: end
# ---- P2: docs/explorer.md's Experiments views re-run 2026-12-07 by their own functions (the log holds the script)
VIEWS = "bench/results/explorer-experiments-2026-12-07/views.log"
_HEADS, _PATCH = r"^head attribution, Eiffel: ", r"^patch attribution, Eiffel / Colosseum: "
_COMP_E, _COMP_X = r"^components attribution: layer ", r"^components exact: layer "
CLAIMS += [("docs/explorer.md", printed, VIEWS, where, 1) for printed, where in (
    ("checked heads with ρ = {0.91} (top-10", _HEADS + r"\d+ checked, spearman ([\d.]+),"),
    ("(top-10 agreement {0.9}; layer 2", _HEADS + r".*top-10 agreement ([\d.]+)$"),
    ("agreement 0.9; layer {2} head 5 estimated", _HEADS + r"layer (\d+) head"),
    ("agreement 0.9; layer 2 head {5} estimated", _HEADS + r"layer \d+ head (\d+) exact"),
    ("head 5 estimated {0.53}, exact 1.11", _HEADS + r"layer \d+ head \d+ exact [\d.]+ estimate ([\d.]+)$"),
    ("estimated 0.53, exact {1.11} nats", _HEADS + r"layer \d+ head \d+ exact ([\d.]+)"),
    ("patch estimate with ρ = {0.68} (layer", _PATCH + r"\d+ checked, spearman ([\d.]+),"),
    ("(layer 12 at \"iffel\" estimated {3.3}, exact", _PATCH + r"layer 12 at 'iffel' exact [\d.]+ estimate ([\d.]+)$"),
    ("estimated 3.3, exact {8.5};", _PATCH + r"layer 12 at 'iffel' exact ([\d.]+)"),
    ("put layer {24} head 4 first", _COMP_E + r"(\d+) head"),
    ("put layer 24 head {4} first", _COMP_E + r"\d+ head (\d+) "),
    ("(contribution: estimate +{5.2}, exact", _COMP_E + r"\d+ head \d+ contribution \+([\d.]+)$"),
    ("estimate +5.2, exact +{7.0})", _COMP_X + r"\d+ head \d+ contribution \+([\d.]+)$"),
    ("and layer {30} head 2 next", _COMP_E + r".*\ncomponents attribution: layer (\d+) head"),
    ("and layer 30 head {2} next", _COMP_E + r".*\ncomponents attribution: layer \d+ head (\d+) "),
    ("layer 30 head 2 next (+{2.9} both;",
     _COMP_X + r".*\ncomponents exact: layer \d+ head \d+ contribution \+([\d.]+)$"),
    ("the sentences differ at position {3}", r"^walk 1: .* differ at position \[(\d+)\]"),
    ("from the stream entering layer {25} the last", r"^walk 1: .* from the stream entering layer (\d+)$"),
    ("restores half the {6.73}-nat gap", r"^walk 1: .* gap ([\d.]+) nats"),
    ("layer {24}'s attention output contributes most", r"^walk 2: .*; largest: layer (\d+) attention"),
    ("contributes most (+{5.96} logits", r"^walk 2: .*; largest: layer \d+ attention \+([\d.]+),"),
    ("switching off layer {1} head 5 costs", r"^walk 3: switching off layer (\d+) head"),
    ("switching off layer 1 head {5} costs", r"^walk 3: switching off layer \d+ head (\d+) "),
    ("head 5 costs {1.29} nats", r"^walk 3: .* costs ([\d.]+) nats"),
    ("(exact; estimated −{0.27}: the", r"^walk 3: .* estimated -([\d.]+)\)"),
    ("the estimate ranks the {16} checked heads with ρ = 0.53", r"^walk 3: .*; (\d+) checked"),
    ("checked heads with ρ = {0.53}); layer", r"^walk 3: .* spearman ([\d.]+)$"),
    ("layer {24} head 5 writes +3.01", r"^walk 4: .* largest direct writers: layer (\d+) head"),
    ("layer 24 head {5} writes +3.01", r"^walk 4: .* largest direct writers: layer \d+ head (\d+) "),
    ("head 5 writes +{3.01} logits", r"^walk 4: .* largest direct writers: layer \d+ head \d+ \+([\d.]+),"),
    ("steered after layer {24}, \"The capital", r"^walk 5: steered after layer (\d+):"),
    ("\" Paris\" ({78.8}%) instead of", r"^walk 5: .* -> ' Paris' ([\d.]+)%$"),
    ("instead of \" Rome\" ({37.9}%)", r"^walk 5: .* ' Rome' ([\d.]+)% ->"),
    ("each pair scores {0.56}–0.69", r"^meanings: the three paraphrase pairs .*: from ([\d.]+) to"),
    ("each pair scores 0.56–{0.69}", r"^meanings: the three paraphrase pairs .*: from [\d.]+ to ([\d.]+);"),
    ("scores between −{0.14} and 0.15", r"^meanings: .* every other pair from -([\d.]+) to"),
    ("scores between −0.14 and {0.15}", r"^meanings: .* every other pair from -?[\d.]+ to ([\d.]+)$"),
)]
# the sweep log's other lines: which heads drop most and how many stay within 0.1 (the sweep's own ranking)
CLAIMS += [("docs/explorer.md", printed, SMOL_SWEEP, where, 1) for printed, where in (
    ("the largest drops are layer {2} head 5", r"^which heads matter: layer (\d+) head"),
    ("the largest drops are layer 2 head {5}", r"^which heads matter: layer \d+ head (\d+) "),
    ("(1.11 nats) and layer {2} head 6", r"^which heads matter: layer .*\nwhich heads matter: layer (\d+) head"),
    ("(1.11 nats) and layer 2 head {6}", r"^which heads matter: layer .*\nwhich heads matter: layer \d+ head (\d+) "),
)]
# ---- P2: end
# ---- P2: docs/explorer.md's gpt-char timeline run, re-run 2026-12-07 (train.log: the run's output and GNU time's;
# timeline.log: its probe scored by the view's own previous_token_score, the log holds the script)
TIMELINE_RUN = "bench/results/explorer-timeline-2026-12-07/train.log"
TIMELINE = "bench/results/explorer-timeline-2026-12-07/timeline.log"
_L1 = r"^previous-token score, layer 1 head {}: .*step {} ([\d.]+)[,;]"
CLAIMS += [("docs/explorer.md", printed, TIMELINE_RUN, where, 1) for printed, where in (
    ("it took {112.2} s of CPU time", r"User time \(seconds\): ([\d.]+)$"),
    ("(and {2.7} s in the system)", r"System time \(seconds\): ([\d.]+)$"),
    ("but {8} min 38 s of wall time", r"Elapsed \(wall clock\) time .*: (\d+):[\d.]+$"),
    ("but 8 min {38} s of wall time", r"Elapsed \(wall clock\) time .*: \d+:([\d.]+)$"),
    ("(load average {0.9} when it started", r"^# load average before: ([\d.]+) "),
    ("{9.7} when it ended)", r"^# load average after: ([\d.]+) "),
)]
CLAIMS += [("docs/explorer.md", printed, TIMELINE, where, 1) for printed, where in (
    ("It kept {61} probe lines", r"^probe: (\d+) lines"),
    ("({35} characters, 4 layers × 4 heads)", r"^probe: .*\((\d+) characters\)"),
    ("(35 characters, {4} layers × 4 heads)", r"^probe: .* (\d+) layers x"),
    ("(35 characters, 4 layers × {4} heads)", r"^probe: .* layers x (\d+) heads"),
    ("{5.85} MB in all", r"^probe: \d+ lines, ([\d.]+) MB"),
    ("loss fell to {1.3886} nats", r"^result.json: val_loss ([\d.]+),"),
    ("against {2.3233} for the bigram", r"^result.json: .*bigram baseline ([\d.]+)$"),
    ("Layer {1}, head 4 turned", r"^highest at the last step: layer (\d+) head"),
    ("Layer 1, head {4} turned", r"^highest at the last step: layer \d+ head (\d+) "),
    ("(previous-token score {0.09}), it hardly", _L1.format(4, 1)),
    ("up to step 100 ({0.10})", _L1.format(4, 100)),
    ("steps 200 and 400 ({0.15} → 0.42)", _L1.format(4, 200)),
    ("steps 200 and 400 (0.15 → {0.42})", _L1.format(4, 400)),
    ("reaching {0.48} at step 1500", _L1.format(4, 1500)),
    ("head 1 ends at {0.43}", _L1.format(1, 1500)),
    ("head 3 at {0.36}", _L1.format(3, 1500)),
    ("head 2 ends at {0.23}", _L1.format(2, 1500)),
    ("ends at {0.19} at most", r"at the last step the highest is ([\d.]+)$"),
    ("({0.20} at most at any step", r"^layers 2-4: the highest is layer \d+ head \d+, ([\d.]+) at step"),
    ("any step: layer {4} head 3 at step", r"^layers 2-4: the highest is layer (\d+) head"),
    ("any step: layer 4 head {3} at step", r"^layers 2-4: the highest is layer \d+ head (\d+),"),
    ("head 3 at step {1375})", r"^layers 2-4: the highest is .* at step (\d+);"),
)]
# docs/explorer.md's class runs: the load average each log recorded before its run (as docs/howto/class.md reads it)
CLAIMS += [
    ("docs/explorer.md", "shared 2-core machine (load average {6} to 9; 2026-12-06",
     f"{CLASS}/30-students-90s-flood-rotate.json", "json:load_before.0", 1),
    ("docs/explorer.md", "shared 2-core machine (load average 6 to {9}; 2026-12-06",
     f"{CLASS}/30-students-90s-flood-rotate.json", "json:load_after.0", 1),
    ("docs/explorer.md", "(load average about {6}; 2026-11-28", f"{CLASS}/30-students-240s.json",
     "json:load_before.0", 1),
    ("docs/explorer.md", "otherwise quiet (load average {1.5};", f"{CLASS}/30-students-240s-after-fix.json",
     "json:load_before.0", 1),
]
CACHE_CHECK = "bench/results/explorer-experiments-2026-12-07/cache-check.log"
CLAIMS += [("docs/explorer.md", printed, CACHE_CHECK, where, 1) for printed, where in (
    ("per quantized product (SmolLM2: {121} products, 3.7e-3)", r"^quantized products: (\d+),"),
    ("(SmolLM2: 121 products, {3.7e-3})", r"^quantized products: \d+, relative tolerance ([\d.]+)$"),
    ("cache-check.log): {0.00635} to 0.0132", r"^8 steps: differences ([\d.]+) to"),
    ("cache-check.log): 0.00635 to {0.0132}", r"^8 steps: differences [\d.]+ to ([\d.]+),"),
    ("at scales of {16.2} to 34.3", r"^8 steps: .* scales ([\d.]+) to"),
    ("at scales of 16.2 to {34.3}", r"^8 steps: .* scales [\d.]+ to ([\d.]+),"),
    ("within its tolerance ({0.0599} to 0.127)", r"^8 steps: .* tolerances ([\d.]+) to"),
    ("within its tolerance (0.0599 to {0.127})", r"^8 steps: .* tolerances [\d.]+ to ([\d.]+);"),
)]
LENS = "bench/results/explorer-experiments-2026-12-07/lens.log"
CLAIMS += [
    ("docs/explorer.md", "mostly predict punctuation ({25} of their 26", LENS,
     r"^after layers 2-27: (\d+) of \d+ top-1", 1),
    ("docs/explorer.md", "mostly predict punctuation (25 of their {26} top-1", LENS,
     r"^after layers 2-27: \d+ of (\d+) top-1", 1),
]
# the sweep, attention-ablation and readouts logs' other figures: the threshold and token count they print, the head
# the view reads, the order of the name swap's direct writers
SMOL_READ_WRITES = r"^name swap: layer (\d+) head (\d+) writes"
CLAIMS += [("docs/explorer.md", printed, log, where, 1) for printed, log, where in (
    ("most heads are within ±{0.1} (2026-12-07", SMOL_SWEEP,
     r"^which heads matter: \d+ of \d+ heads within \+-([\d.]+)"),
    ("\"The Colosseum is in the city of\", {9} tokens each", SMOL_SWEEP, r"^patch: tokens (\d+) and"),
    ("On SmolLM2's layer {30} head 1, \"of\"", SMOL_ATTN, r"^attention vs ablation, layer (\d+) head"),
    ("On SmolLM2's layer 30 head {1}, \"of\"", SMOL_ATTN, r"^attention vs ablation, layer \d+ head (\d+) "),
    ("(float32 rounding); layer {24} head 4 writes", SMOL_READ, SMOL_READ_WRITES),
    ("(float32 rounding); layer 24 head {4} writes", SMOL_READ, r"^name swap: layer \d+ head (\d+) writes"),
    ("writes +2.17, layer {30} head 2 +1.69", SMOL_READ, r"^name swap: layer .*\nname swap: layer (\d+) head"),
    ("writes +2.17, layer 30 head {2} +1.69", SMOL_READ, r"^name swap: layer .*\nname swap: layer \d+ head (\d+) "),
    ("+1.69, layer {30} head 1 −1.26", SMOL_READ,
     r"^name swap: layer .*\nname swap: layer .*\nname swap: layer (\d+) "),
    ("+1.69, layer 30 head {1} −1.26", SMOL_READ,
     r"^name swap: layer .*\nname swap: layer .*\nname swap: layer \d+ head (\d+) "),
    ("Checked again on 2026-12-07 ({8} greedy steps", CACHE_CHECK, r"^(\d+) steps: differences"),
)]
RECORDING = "bench/results/explorer-experiments-2026-12-07/recording.log"
CLAIMS += [
    ("docs/explorer.md", "MiniLM at {128} tokens takes 14.2 MB", RECORDING, r"^tokens: (\d+)$", 1),
    ("docs/explorer.md", "MiniLM at 128 tokens takes {14.2} MB", RECORDING,
     r"recording of MiniLM .* holds ([\d.]+) MB", 1),
]
LONG_PROMPT = "bench/results/explorer-experiments-2026-12-07/long-prompt.log"
CLAIMS += [("docs/explorer.md", printed, LONG_PROMPT, where, 1) for printed, where in (
    ("a button opens a {163}-token prompt", r"LONG_PROMPT\): (\d+) tokens$"),
    ("without the cache took {0.63}–3.99 s of wall time", r"^steps 2-5: without the cache ([\d.]+)-"),
    ("without the cache took 0.63–{3.99} s of wall time", r"^steps 2-5: without the cache [\d.]+-([\d.]+) s"),
    ("against {0.03}–0.09 s with it", r"^steps 2-5: .* with it ([\d.]+)-"),
    ("against 0.03–{0.09} s with it", r"^steps 2-5: .* with it [\d.]+-([\d.]+) s$"),
    ("thread, load average {5.0} from other jobs", r"load average before: ([\d.]+)$"),
)]
# ---- P2: end (timeline)
# ---- P4: docs/reliability.md: `python -m pytest -q tests/reliability` re-run 2026-12-07 (its summary, /usr/bin/time's
# line and the load average at its start and end)
RELIABILITY_RUN = "bench/results/reliability-2026-12-07/pytest.log"
CLAIMS += [("docs/reliability.md", printed, RELIABILITY_RUN, where, 1) for printed, where in (
    ("The whole directory ran in {248} s of wall time", r"^\d+ passed, .* in ([\d.]+)s "),
    ("({234} tests, 71 s of user CPU)", r"^(\d+) passed, "),
    ("(234 tests, {71} s of user CPU)", r"^# wall [\d.]+ s, user ([\d.]+) s"),
    ("while its load average rose from {0.6} to 8.1", r"load average at start: ([\d.]+) "),
    ("while its load average rose from 0.6 to {8.1}", r"^# load average at end: ([\d.]+) "),
)]
# the load benchmark re-run 2026-12-07, --concurrent 1 and 2 alternated, two rounds (each log's summary line)
LOAD_RUN = "bench/results/reliability-2026-12-07/load-{}.log"
CLAIMS += [("docs/reliability.md", printed, LOAD_RUN.format(run), where, 1) for printed, run, where in (
    ("at a load average of {8.1}-10.6", "c1-r1", r"load average at start: ([\d.]+) "),
    ("at a load average of 8.1-{10.6}", "c1-r2", r"^# load average at end: ([\d.]+) "),
    ("but the last run (two at once) lost {1} of", "c2-r2", r"^\d+ requests .*, (\d+) lost valid answers"),
    ("lost 1 of its {1,118} valid answers", "c2-r2", r'^  "valid": (\d+),'),
    ("({33.8} and 43.6 requests/s one at a time", "c1-r1", r"([\d.]+) req/s$"),
    ("(33.8 and {43.6} requests/s one at a time", "c1-r2", r"([\d.]+) req/s$"),
    ("one at a time, {42.8} and 55.3 two at once)", "c2-r1", r"([\d.]+) req/s$"),
    ("one at a time, 42.8 and {55.3} two at once)", "c2-r2", r"([\d.]+) req/s$"),
)]
# the kept-blocks re-run that the "estimates and docs" rows now cite (another helper's logs of 2026-12-07)
KEPT = "bench/results/kept-blocks-2026-12-07/"
CLAIMS += [("docs/reliability.md", printed, KEPT + log, where, 1) for printed, log, where in (
    ("(no_grad up to 512 tokens: {0.031} in log-probabilities", "kept-vs-float32.log",
     r"^1 tokens: max \|log p kept - log p float32\| no_grad ([\d.]+),"),
    ("int8 and int4 models by {0.029}-0.036", "kept-vs-float32.log", r"^int8, no_grad vs grad: ([\d.]+) at 1 tokens"),
    ("int8 and int4 models by 0.029-{0.036}", "kept-vs-float32.log", r"^int4, no_grad vs grad: ([\d.]+) at 1 tokens"),
    ("not logged, and {0} when re-run 2026-12-07", "compiled-2-blocks.log",
     r"^compiled vs eager steps, first 2 blocks, 5 prompts x 32 new tokens: max (\d+) of"),
)]
# ---- P7: docs/reliability.md: the kill test timed alone (`nice -n 10 python -m pytest -q
# tests/reliability/test_crash_resume.py::test_sigkill_at_random_moments_then_resume_equals_uninterrupted`, 2026-12-07),
# the machine of the directory's run, and the token counts and cut of the kept-blocks re-run
KILL_RUN = "bench/results/reliability-2026-12-07/kill-test.log"
CLAIMS += [("docs/reliability.md", printed, log, where, 1) for printed, log, where in (
    ("on 2026-12-07, on the shared {2}-core machine", RELIABILITY_RUN, r"^# .*, shared (\d+)-core "),
    ("it took {10.94} s alone on 2026-12-07", KILL_RUN, r"^1 passed in ([\d.]+)s$"),
    ("it took 10.94 s alone on 2026-12-07 at a load average of {2.16}", KILL_RUN, r"load average at start: ([\d.]+) "),
    ("(marked slow: {10.94} s on 2026-12-07,", KILL_RUN, r"^1 passed in ([\d.]+)s$"),
    ("0.031 in log-probabilities at {1}, 6 and 64 tokens", KEPT + "kept-vs-float32.log",
     r"^(\d+) tokens: max \|log p kept - log p float32\| no_grad 0\.03"),
    ("0.031 in log-probabilities at 1, {6} and 64 tokens", KEPT + "kept-vs-float32.log",
     r"^1 tokens: .*\n(\d+) tokens: max \|log p kept - log p float32\| no_grad 0\.03"),
    ("0.031 in log-probabilities at 1, 6 and {64} tokens", KEPT + "kept-vs-float32.log",
     r"^6 tokens: .*\n(\d+) tokens: max \|log p kept - log p float32\| no_grad 0\.03"),
    ("when re-run 2026-12-07 at {5} prompts x 32 new tokens", KEPT + "compiled-2-blocks.log",
     r"^compiled vs eager steps, first \d+ blocks, (\d+) prompts x 32 new tokens"),
    ("when re-run 2026-12-07 at 5 prompts x {32} new tokens", KEPT + "compiled-2-blocks.log",
     r"^compiled vs eager steps, first \d+ blocks, 5 prompts x (\d+) new tokens: max 0 of .*\(4 s wall"),
)]
# ---- P7: end
# ---- P7: docs/quantization.md: the machine each logged run names, the quality run's int8 agreement and text length
CLAIMS += [("docs/quantization.md", printed, log, where, 1) for printed, log, where in (
    ("Measured 2026-12-07 on the project's {2}-core AMD EPYC (Zen 5, AVX512-VNNI), one torch thread", QUALITY,
     r"shared (\d+)-core AMD EPYC"),
    ("(top-1 agreement {94.8}% / 94.2%)", QUALITY,
     r"^\| int8 \| int8 \| \d+ \| [\d.]+ \| [^|]+\| [\d.]+ \| [^|]+\| ([\d.]+)% / "),
    ("(top-1 agreement 94.8% / {94.2}%)", QUALITY,
     r"^\| int8 \| int8 \| \d+ \| [\d.]+ \| [^|]+\| [\d.]+ \| [^|]+\| [\d.]+% / ([\d.]+)% \|"),
    ("perplexity within the noise of {2048} tokens", QUALITY, r"^text: (\d+) tokens per language"),
    ("Measured 2026-12-07 on the project's {2}-core AMD EPYC (Zen 5, AVX512-VNNI), one thread, process CPU time",
     QUICK_Q, r"AMD EPYC, (\d+) cores"),
    ("(resident growth: on load / after decoding {8} tokens)", QUICK_Q, r"after decoding (\d+) tokens \|"),
    ("Measured 2026-11-28 on the project's {2}-core AMD EPYC (Zen 5, AVX-512 VNNI; log: "
     "bench/results/llama-cpp-zen5-2026-11-28/q4_1.log", f"{ZEN}/q4_1.log", r"AMD EPYC, (\d+) cores"),
)]
# docs/quantization.md's decode path over 512 tokens, re-run 2026-12-07 (the gguf and int4 rows' decode-path cells)
DECODE_512 = "bench/results/quality-2026-12-07/decode-512.log"


def _decode_cell(variant: str, i: int) -> str:
    """The i-th figure (0, 1: change es / fr; 2, 3: top-1 es / fr) of a quality log row's decode-path cell."""
    groups = ["([+-][\\d.]+)", "([+-][\\d.]+)", "([\\d.]+)", "([\\d.]+)"]
    cells = [g if j == i else g[1:-1] for j, g in enumerate(groups)]
    return (rf"^\| {variant} \|(?:[^|]*\|){{7}} {cells[0]}% / {cells[1]}% \({cells[2]}% / {cells[3]}%\) \|")


CLAIMS += [("docs/quantization.md", printed, DECODE_512, where, 1) for printed, where in (
    ("over 512 tokens per language, perplexity changed by {+0.00}% / -0.00%", _decode_cell("gguf", 0)),
    ("perplexity changed by +0.00% / {-0.00}% and top-1", _decode_cell("gguf", 1)),
    ("and top-1 agreed {100.0}% / 99.8%; int4 there", _decode_cell("gguf", 2)),
    ("and top-1 agreed 100.0% / {99.8}%; int4 there", _decode_cell("gguf", 3)),
    ("int4 there: {-0.20}% / +0.45%", _decode_cell("int4", 0)),
    ("int4 there: -0.20% / {+0.45}%", _decode_cell("int4", 1)),
    ("load average {4.1} before;\n  log: bench/results/quality-2026-12-07/decode-512.log", r"load average: ([\d.]+) "),
    ("Decoding one token at a time, the 4-bit kernel rounds each activation row to ~15 bits: over {512} tokens",
     r"the first (\d+) tokens of each fed one at a time"),
)]
# docs/performance.md: the machine of the logged runs it quotes, and the installed sizes (du -sm, dpkg-query)
DISK = "bench/results/disk-2026-12-07/sizes.log"
CLAIMS += [("docs/performance.md", printed, log, where, 1) for printed, log, where in (
    ("Fresh processes on the project's {2}-core AMD EPYC (Zen 5; load average 0.7",
     "bench/results/startup-zen5-2026-11-28/startup-evening.log", r"AMD EPYC, (\d+) cores"),
    ("Measured 2026-12-07 on the project's {2}-core AMD EPYC (Zen 5), in a fresh clone", CI_RUN,
     r"on the project's (\d+)-core AMD EPYC"),
    ("with every extra of `.[test]`, take {2647} MiB", DISK, r"^site-packages: (\d+) MiB"),
    *((f"{before}{{{mib}}} MiB", DISK, rf"^{name}: (\d+) MiB") for before, mib, name in (
        ("(torch ", "754", "torch"), ("pyarrow ", "170", "pyarrow"), ("Playwright ", "167", "playwright"),
        ("transformers ", "131", "transformers"), ("scipy ", "113", "scipy"), ("pandas ", "84", "pandas"))),
    ("`chromium-common` take {284} MiB and 65 MiB installed", DISK, r"^chromium \S+: \d+ KiB \((\d+) MiB\)"),
    ("`chromium-common` take 284 MiB and {65} MiB installed", DISK, r"^chromium-common \S+: \d+ KiB \((\d+) MiB\)"),
)]
# docs/quantization.md's int8 decode path over 1024 tokens, re-run 2026-12-07
DECODE_1024 = "bench/results/quality-2026-12-07/decode-1024.log"
CLAIMS += [("docs/quantization.md", printed, DECODE_1024, where, 1) for printed, where in (
    ("fed one token at a time over the first {1024} tokens per language", r"decode path: the first (\d+) tokens"),
    ("+{0.23}% (es)\nand +0.39% (fr), top-1 agreement", _decode_cell("int8", 0)),
    ("and {+0.39}% (fr), top-1 agreement 95.8%", _decode_cell("int8", 1)),
    ("top-1 agreement {95.8}% / 94.1%, through attnlab's VNNI kernel", _decode_cell("int8", 2)),
    ("top-1 agreement 95.8% / {94.1}%, through attnlab's VNNI kernel", _decode_cell("int8", 3)),
    ("at nice 10, load average {4.5} before; log: bench/results/quality-2026-12-07/decode-1024.log",
     r"load average: ([\d.]+) "),
)]
# ---- P7: end
# docs/interventions.md's agreement table, SmolLM2's rows: `OMP_NUM_THREADS=1 nice python -m
# attnlab.benchmarks.attribution_agreement --models smollm2` re-run 2026-12-07 (the same cells as gpt-char's rows)
ATTRIBUTION_SMOLLM2 = "bench/results/attribution-agreement-2026-12-07/smollm2.log"
SMOLLM2_ATTRIBUTION_ROWS = (
    ("The Eiffel Tower / The Colosseum is in the city of", "'The Eiffel Tower",
     ("240", "0.71", "0.74", "1/10", "9/10", "0")),
    ("When John and Mary ..., John / Mary gave a drink to", "'When John and Mary",
     ("150", "0.93", "0.93", "0/10", "10/10", "0")),
    ("The capital of France / Italy is", "'The capital of France", ("60", "0.82", "0.81", "1/10", "10/10", "12")),
    ("The opposite of hot / big is", "'The opposite of hot", ("60", "0.73", "0.73", "0/10", "7/10", "2")),
    ("The sun rises / sets in the", "'The sun rises", ("90", "0.83", "0.83", "6/10", "8/10", "10")),
    ("Monday, Tuesday, Wednesday / Friday,", "'Monday, Tuesday, Wednesday",
     ("60", "-0.45", "-0.44", "2/10", "5/10", "15")),
)
CLAIMS += [(page, printed.replace("| gpt-char |", "| SmolLM2 |", 1), ATTRIBUTION_SMOLLM2, where, scale)
           for row in SMOLLM2_ATTRIBUTION_ROWS for page, printed, _, where, scale in _attribution_claims(*row)]
CLAIMS += [("docs/interventions.md", printed, ATTRIBUTION_SMOLLM2, where, 1) for printed, where in (
    ("with `--models smollm2` (load average {8.1}-9.4", r"load average ([\d.]+) "),
    ("with `--models smollm2` (load average 8.1-{9.4}", r"^# load average at end: ([\d.]+) "),
)]
# docs/tutorials/first-hour.md: its head-sweep block run as written 2026-12-07 (the log holds the block)
FIRST_HOUR = "bench/results/first-hour-2026-12-07/head-sweep.log"
CLAIMS += [("docs/tutorials/first-hour.md", printed, FIRST_HOUR, where, 1) for printed, where in (
    ("print(round(p_e(), 3)) # {0.874}", r"^(\d\.\d+)$"),
    ("print(layer, head) # {0} 2", r"^(\d+) \d+$"),
    ("print(layer, head) # 0 {2}", r"^\d+ (\d+)$"),
    ("print(round(p_e(), 3)) # {0.277}", r"^\d+ \d+\n(\d\.\d+)$"),
)]
FIRST_HOUR_RUN = "bench/results/first-hour-2026-12-07/train-{}.log"
CLAIMS += [("docs/tutorials/first-hour.md", printed, FIRST_HOUR_RUN.format(run), where, 1) for printed, run, where in (
    ("| `rope` | {1.7836} |", "rope", r"^  val_loss   ([\d.]+),"),
    ("| `none` | {2.1739} |", "none", r"^  val_loss   ([\d.]+),"),
    ("beats the bigram baseline ({2.3233}:", "none", r"against ([\d.]+) for the bigram baseline"),
)]
# ---- P4: end
# docs/tutorials/first-hour.md: the machine and the load its logs' headers give, the head its block prints
CLAIMS += [
    ("docs/tutorials/first-hour.md", "on a shared {2}-core CPU (AMD EPYC, no GPU)", FIRST_HOUR_RUN.format("first"),
     r"shared (\d+)-core AMD EPYC", 1),
    ("docs/tutorials/first-hour.md", "kept its load average\nnear {10}, with the same losses",
     FIRST_HOUR_RUN.format("rope"), r"load average at start: ([\d.]+) ", 1),
    ("docs/tutorials/first-hour.md", "Head {2} of the first layer is a previous-token head", FIRST_HOUR,
     r"^\d+ (\d+)$", 1),
]


# ---- P5: docs/training.md (issue 54): the smollm2-mlm runs' steps, times, sums and loads as their logs give them;
# the minilm-mlm trials' and the everyday corpus's counts; the machine and loads of the recipes table from the
# shipped trained.json files, and vit-mnist's and translate-numbers' 2026-11-22 runs from their trained.json as
# shipped then (commit ac809e6; bench/results/shipped-2026-11-22/, a comment line then the file)
P5_SMOL = "bench/results/smollm2-mlm-2026-12-07"
P5_TRIALS = "bench/results/minilm-trials-2026-12-07"
P5_EVERYDAY = "bench/results/minilm-everyday-2026-12-07"
P5_OLD = "bench/results/shipped-2026-11-22"
P5_CK = "attnlab/assets/checkpoints"
P5_FIRST = "bench/results/watching-a-run-2026-12-07/first-seconds.log"
P5_200 = "bench/results/watching-a-run-2026-12-07/gpt-char-200.log"
P5_TB = "bench/results/tensorboard-cost-2026-12-07/tb-cost.log"
P5_DATA = "bench/results/data-benchmark-2026-12-07/data.log"
P5_DIST = "bench/results/distributed-tests-2026-12-07/pytest.log"


def _p5_cell(size: str, tokenizer: str, column: int) -> str:
    """A cell of the data benchmark's table: the row of size and tokenizer, the column after them (0: attnlab MB/s,
    1: tokenizers MB/s, 2: wall ratio, 3: attnlab MB per CPU-s, 4: CPU ratio, 5-7: RSS before, peak, growth)."""
    return rf"^\| {re.escape(size)} \| {tokenizer} \| " + r"[^|]*\| " * column + r"([\d.]+)"


CLAIMS += [("docs/training.md", printed, log, where, scale) for printed, log, where, scale in (
    ("measured on this project's {2}-core CPU", f"{P5_CK}/gpt-char/trained.json", r'"machine": "(\d+)-core', 1),
    ("UTC on this project's {2}-core AMD EPYC (AVX-512)", f"{P5_CK}/gpt-char/trained.json", r'"machine": "(\d+)-core',
     1),
    ("one-thread benchmark (load average {2}-3), so each", f"{P5_OLD}/vit-mnist-trained.log",
     r"load average ([\d.]+) at start", 1),
    ("one-thread benchmark (load average 2-{3}), so each", f"{P5_CK}/gpt-char/trained.json",
     r"load average ([\d.]+) at start", 1),
    ("97.3% (seed 0, shipped until 2026-11-24, {3m07s})", f"{P5_OLD}/vit-mnist-trained.log", r'"wall_s": (\d+),', 1),
    ("threads=1`) gave {97.3}% (seed 0", f"{P5_OLD}/vit-mnist-trained.log", r'"accuracy": ([\d.]+)', 100),
    ("the defaults took {3m07s} |", f"{P5_OLD}/vit-mnist-trained.log", r'"wall_s": (\d+),', 1),
    ("over the 5-min target ({2}-core Intel Xeon", f"{P5_CK}/vit-mnist/trained.json", r'"machine": "(\d+)-core Intel',
     1),
    ("other work on both cores, load average ~{3})", f"{P5_CK}/vit-mnist/trained.json",
     r"load average ([\d.]+) at start", 1),
    ("| {1m19s} (first run);", f"{P5_OLD}/translate-numbers-trained.log", r'"wall_s": (\d+),', 1),
    ("over steps 3500-{6000} of the patch-7 run", f"{P5_OLD}/vit-mnist-trained.log", r'"steps": (\d+),', 1),
    # smollm2-mlm
    ("(stopped after step {101}; wiki-300-stopped.log)", f"{P5_SMOL}/wiki-300-stopped.log",
     r"stopped after step (\d+):", 1),
    ("| {22}m56s to step 100 |", f"{P5_SMOL}/wiki-300-stopped.log", r"^step 100/300 .* elapsed (\d+)m\d\ds ", 1),
    ("| 22m56s to step {100} |", f"{P5_SMOL}/wiki-300-stopped.log", r"^step (\d+)/300 .* val_loss ", 1),
    ("57.2% at step {100} (1154 positions) | 21", f"{P5_SMOL}/wiki-300-stopped.log", r"^step (\d+)/300 .* val_loss ",
     1),
    ("| 21 + 51 = {72} of 80", f"{P5_SMOL}/wiki-300-stopped.log", r"^cloze .* all (\d+)/80", 1),
    ("72 of 80 at step {100} |", f"{P5_SMOL}/wiki-300-stopped.log", r"^cloze runs/smol-wiki/step-0*(\d+) ", 1),
    ("| 236 s of CPU to step {100} |", f"{P5_SMOL}/prototype.log", r"^step (\d+) cloze_dev", 1),
    ("67 of 80 at step {100} |", f"{P5_SMOL}/prototype.log", r"^step (\d+) cloze_dev", 1),
    ("| {17}m27s (18m41s with", f"{P5_SMOL}/run.log", r"\(training (\d+)m\d\ds,", 1),
    ("17m27s ({18}m41s with the evaluations", f"{P5_SMOL}/run.log", r"^smollm2-mlm: \d+ steps in (\d+)m\d\ds ", 1),
    ("top-5 54.2% at step {50}; 3.670", f"{P5_SMOL}/run.log", r"^step (\d+)/100 .* val_loss ", 1),
    ("3.670 / 56.2% at step {100} (1154", f"{P5_SMOL}/run.log", r"^smollm2-mlm: (\d+) steps in ", 1),
    ("| 20 + 50 = {70} of 80", f"{P5_SMOL}/run.log", r"^cloze .*step-00000050 .* all (\d+)/80", 1),
    ("70 of 80 at step {50},", f"{P5_SMOL}/run.log", r"^cloze runs/smollm2-mlm/step-0*(\d+) ", 1),
    ("**22 + 51 = {73} of 80** at", f"{P5_SMOL}/run.log", r"^cloze .*step-00000100 .* all (\d+)/80", 1),
    ("**22 + 51 = 73 of 80** at {100}", f"{P5_SMOL}/run.log",
     r"^cloze runs/smollm2-mlm/step-0*(\d+) dev \d+/22 more \d+/58 all 73/80", 1),
    ("the step from 0 to {73} of 80", f"{P5_SMOL}/run.log", r"^cloze .*step-00000100 .* all (\d+)/80", 1),
    ("the best MiniLM variant's {19}:", f"{P5_EVERYDAY}/facts-runs.log", r"^cloze runs/mix-a/step-\d+ test (\d+)/40",
     1),
    ("| 18m42s (load average {6}-9) |", f"{P5_SMOL}/run.log", r"load average (\d+)-\d+,", 1),
    ("| 18m42s (load average 6-{9}) |", f"{P5_SMOL}/run.log", r"load average \d+-(\d+),", 1),
    ("shared with other work (load average {6}-9); the first", f"{P5_SMOL}/run.log", r"load average (\d+)-\d+,", 1),
    ("shared with other work (load average 6-{9}); the first", f"{P5_SMOL}/run.log", r"load average \d+-(\d+),", 1),
    ("the first trial's {100} steps of the same size", f"{P5_SMOL}/prototype.log", r"^step (\d+) cloze_dev", 1),
    ("steps of the same size took {236} s of CPU", f"{P5_SMOL}/prototype.log", r"^step 100 loss \S+ cpu (\d+)s", 1),
    # the minilm-mlm trials and the everyday corpus
    ("Measured (2026-12-06, the {2}-core AMD EPYC shared", f"{P5_TRIALS}/words-only.log", r"the shared (\d+)-core", 1),
    ("hash ({5} MB for the 6-batch", f"{P5_TRIALS}/distill.log",
     r"^teacher cache smollm2-k32-0933f271ab63a6db\.safetensors: (\d+) bytes", 1e-6),
    ("For more text, SmolLM2 wrote {6} more batches", f"{P5_TRIALS}/distill.log",
     r"^generator /tmp/amlm/gen\.log: (\d+) batches", 1),
    ("the everyday corpus (batches {6}-11,", f"{P5_TRIALS}/distill.log", r"^generator /tmp/amlm/gen\.log: batch (\d+):",
     1),
    ("coffee (distill-b at {500};", f"{P5_TRIALS}/answers.log", r"^answers distill-b \(.*step-0*(\d+)\)", 1),
    ("100,149 words) | {9}m12s |", f"{P5_EVERYDAY}/runs.log", r"^run pilot-33: last step line: .* elapsed (\d+)m\d\ds",
     1),
    ("beside other work, load average {2}-4.5;", f"{P5_EVERYDAY}/runs.log", r"load average (\d+)-[\d.]+\)", 1),
    ("batches of facts ({86} in all,", f"{P5_EVERYDAY}/facts-runs.log", r"\+ facts \((\d+)\), joined", 1),
    ("(86 in all, {249,969} words;", f"{P5_EVERYDAY}/facts-runs.log", r"^words: facts (\d+),", 1),
    ("the same {2,000}-step run on them", f"{P5_EVERYDAY}/facts-runs.log", r"^run mix-b: data=.* steps=(\d+) ", 1),
    ("12 of 22 at steps {500}-2,000", f"{P5_EVERYDAY}/facts-runs.log", r"^cloze runs/mix-b/step-0*(\d+) ", 1),
    ("12 of 22 at steps 500-{2,000}", f"{P5_EVERYDAY}/facts-runs.log", r"^run mix-b: data=.* steps=(\d+) ", 1),
    ("paragraphs ({295,625} words;", f"{P5_EVERYDAY}/corpus-words.log", r"^everyday-97\.txt: (\d+) words", 1),
    ("`attnlab.data.everyday.assemble`: {100,149} words)", f"{P5_EVERYDAY}/corpus-words.log",
     r"^everyday-33\.txt: (\d+) words", 1),
    # "Watching a run", re-run 2026-12-07 (nice 10, loaded): the first seconds with empty caches, the 200-step run
    ("Measured 2026-12-07 on the project's {2}-core machine under load", P5_FIRST, r"the shared (\d+)-core", 1),
    ("(load average {11.4}-11.7, `nice -n 10`)", P5_FIRST, r"^# load average at start: ([\d.]+)", 1),
    ("(load average 11.4-{11.7}, `nice -n 10`)", P5_FIRST, r"load average at end: ([\d.]+);", 1),
    ("first-seconds.log`): {4.6} s loading Python", P5_FIRST, r"^\[\s*([\d.]+) s\] gpt-char: preparing", 1),
    ("`OUT/data` took {0.0} s and `build_model`", P5_FIRST, r"tokenizing the corpus .*: ([\d.]+) s$", 1),
    ("and `build_model` {0.0} s (a run of", P5_FIRST, r"gpt-char: building the model: ([\d.]+) s$", 1),
    ("(the {200}-step run of the final summary below:", P5_200, r"gpt-char: (\d+) steps in ", 1),
    ("of the final summary below: step {33} at 14.6 s", P5_200, r"step 1/200 .*\n\[\s*[\d.]+ s\] step (\d+)/200", 1),
    ("step 33 at {14.6} s, step 50", P5_200, r"step 1/200 .*\n\[\s*([\d.]+) s\] step \d+/200", 1),
    ("step 50 at {18.9} s)", P5_200, r"^\[\s*([\d.]+) s\] step 50/200", 1),
    ("`gpt-char: sampling 2 texts of 300 tokens into samples.txt: {6.4} s`", P5_200,
     r"into samples\.txt: ([\d.]+) s$", 1),
    ("2026-12-07, {1} thread of the 2-core machine", P5_200, r"device  cpu, (\d+) thread", 1),
    ("1 thread of the {2}-core machine at load", P5_200, r"the shared (\d+)-core", 1),
    ("at load average {11.8}-12.9 under", P5_200, r"load average at end: ([\d.]+);", 1),
    ("at load average 11.8-{12.9} under", P5_200, r"^# load average at start: ([\d.]+)", 1),
    ("gpt-char: {200} steps in 1m02s", P5_200, r"gpt-char: (\d+) steps in ", 1),
    ("(the {200}-step run above: two", P5_200, r"gpt-char: (\d+) steps in ", 1),
    ("on one thread of the project's shared {2}-core machine under load (the 200-step run above", P5_200,
     r"the shared (\d+)-core", 1),
    ("evaluations of all {726} windows in", P5_200, r"on all (\d+) validation windows", 1),
    ("all 726 windows in {0}m09s, its", P5_200, r"evaluations (\d+)m\d\ds\)", 1),
    ("its {200} training steps in 0m50s", P5_200, r"gpt-char: (\d+) steps in ", 1),
    ("training steps in {0}m50s;", P5_200, r"\(training (\d+)m\d\ds,", 1),
    # TensorBoard's cost beside a training step, re-run 2026-12-07 (its log holds the script)
    ("logging one step's record took {0.13} ms of CPU time", P5_TB, r"^one step's record .*: ([\d.]+) ms", 1),
    ("ms of CPU time against {66} ms for a default", P5_TB, r"^training step: ([\d.]+) ms", 1),
    ("training step ({0.20}%; one thread", P5_TB, r"^record / step: ([\d.]+)%", 1),
    ("2026-12-07 at load average {12} under", P5_TB, r"load average ([\d.]+) at start", 1),
    # the data-preparation benchmark, re-run 2026-12-07 (three invocations in one log)
    ("`nice -n 10` on the shared {2}-core machine at a load average of 15-20", P5_DATA, r"the shared (\d+)-core", 1),
    ("tokenizers library on {1} thread, CPython docs", P5_DATA, r"RAYON_NUM_THREADS\) = (\d+) of", 1),
    ("load average of {15}-20 (so wall rates", P5_DATA, r"^# --quick: start \S+ load ([\d.]+)", 1),
    ("load average of 15-{20} (so wall rates", P5_DATA, r"^# end 15:38:26 load ([\d.]+)", 1),
    ("(library not run: {0.6} MB/s at 50 MB)", P5_DATA, _p5_cell("50MB", "char", 1), 1),
    ("(library not run: 0.6 MB/s at {50} MB)", P5_DATA, r"^\| (\d+)MB \| char \| [\d.]+ \| [\d.]+ \|", 1),
    *(("| {} | {} | {} | {} | {}x / {}x | {} MB |".format(size, name, *(f"{{{v}}}" if i == k else v
                                                                     for i, v in enumerate(cells))),
       P5_DATA, _p5_cell(size.replace(" ", ""), tok, (0, 3, 2, 4, 7)[k]), 1)
      for size, name, tok, cells in (
          ("1.1 MB", "characters", "char", ("7.2", "31.6", "12.22", "18.05", "12")),
          ("50 MB", "characters", "char", ("12.8", "38.9", "22.85", "19.02", "22")),
          ("1.1 MB", "byte-level BPE (2048)", "bpe", ("1.0", "2.8", "1.02", "1.04", "75")),
          ("50 MB", "byte-level BPE (2048)", "bpe", ("0.4", "3.1", "0.90", "0.98", "87")))
      for k in range(5)),
    ("| 1 GB | characters | {12.9} | 51.5 | (library", P5_DATA, _p5_cell("1GB", "char", 0), 1),
    ("| 1 GB | characters | 12.9 | {51.5} | (library", P5_DATA, _p5_cell("1GB", "char", 3), 1),
    ("| 1 GB | characters | 12.9 | 51.5 | (library not run: 0.6 MB/s at 50 MB) | {22} MB |", P5_DATA,
     _p5_cell("1GB", "char", 7), 1),
    # the slow distributed tests, timed 2026-12-07 (pytest's own count)
    ("marked slow: {102} s for the three together", P5_DIST, r" passed, \d+ deselected in ([\d.]+)s ", 1),
    ("together on the {2}-core machine at a load", P5_DIST, r"the shared (\d+)-core", 1),
    ("at a load average of {24}-26 under `nice -n 10`, 2026-12-07", P5_DIST, r"^# load average at start: ([\d.]+)", 1),
    ("at a load average of 24-{26} under `nice -n 10`, 2026-12-07", P5_DIST, r"load average at end: ([\d.]+)", 1),
    ("2.75 / 67.4% at 1000 | {9} of 22 at 500", f"{P5_EVERYDAY}/runs.log",
     r"^cloze runs/pilot-33/step-0*500 dev (\d+)/", 1),
)]
# ---- P5: end


# docs/training.md: smollm2-mlm, SmolLM2 read both ways (the first trials, the stopped 300-step run, the shipped run)
SMOL = "bench/results/smollm2-mlm-2026-12-07"
SMOL_SHIPPED = "attnlab/assets/checkpoints/smollm2-mlm/trained.json"
CLAIMS += [(("docs/training.md",) + c) for c in [
    ("next words for {53} of the 80 development", f"{SMOL}/prototype.log", r"^left only .*: (\d+) / 80", 1),
    ("{2,027,520} trained numbers against", f"{SMOL}/prototype.log", r"^lora params (\d+)", 1),
    ("(0 of 22 + {0} of 58", f"{SMOL}/prototype.log", r"^zero-shot .* cloze_dev_more.tsv (\d+)/58", 1),
    ("({0} of 22 + 0 of 58", f"{SMOL}/prototype.log", r"^zero-shot cloze_dev.tsv (\d+)/22", 1),
    ("came from, {11} + 37 with", f"{SMOL}/prototype.log", r"^causal .* cloze_dev.tsv (\d+)/22", 1),
    ("came from, 11 + {37} with", f"{SMOL}/prototype.log", r"^causal .* cloze_dev_more.tsv (\d+)/58", 1),
    ("| {236} s of CPU to step 100 |", f"{SMOL}/prototype.log", r"^step 100 loss .* cpu (\d+)s", 1),
    ("| {19} + 48 = 67 of 80 at step 100 |", f"{SMOL}/prototype.log", r"^step 100 cloze_dev.tsv (\d+)/22", 1),
    ("| 19 + {48} = 67 of 80 at step 100 |", f"{SMOL}/prototype.log",
     r"^step 100 cloze_dev.tsv .* cloze_dev_more.tsv (\d+)/58", 1),
    ("val loss {3.599} / top-5 57.2%", f"{SMOL}/wiki-300-stopped.log", r"^step 100/300 .* val_loss ([\d.]+)", 1),
    ("val loss 3.599 / top-5 {57.2}%", f"{SMOL}/wiki-300-stopped.log", r"^step 100/300 .* masked_top5 ([\d.]+)", 100),
    ("57.2% at step 100 ({1154} positions)", f"{SMOL}/wiki-300-stopped.log",
     r"^step 100/300 .* masked_positions (\d+)", 1),
    ("| {21} + 51 = 72 of 80", f"{SMOL}/wiki-300-stopped.log", r"^cloze .* dev (\d+)/22", 1),
    ("| 21 + {51} = 72 of 80", f"{SMOL}/wiki-300-stopped.log", r"^cloze .* more (\d+)/58", 1),
    ("val loss {3.875} / top-5 54.2% at step 50", f"{SMOL}/run.log", r"^step 50/100 .* val_loss ([\d.]+)", 1),
    ("val loss 3.875 / top-5 {54.2}% at step 50", f"{SMOL}/run.log", r"^step 50/100 .* masked_top5 ([\d.]+)", 100),
    ("{3.670} / 56.2% at step 100 (1154", f"{SMOL}/run.log", r"^step 100/100 .* val_loss ([\d.]+)", 1),
    ("3.670 / {56.2}% at step 100 (1154", f"{SMOL}/run.log", r"^step 100/100 .* masked_top5 ([\d.]+)", 100),
    ("56.2% at step 100 ({1154} positions)", f"{SMOL}/run.log", r"^step 100/100 .* masked_positions (\d+)", 1),
    ("| {20} + 50 = 70 of 80 at step 50", f"{SMOL}/run.log", r"^cloze .*step-00000050 dev (\d+)/22", 1),
    ("| 20 + {50} = 70 of 80 at step 50", f"{SMOL}/run.log", r"^cloze .*step-00000050 .* more (\d+)/58", 1),
    ("**{22} + 51 = 73 of 80** at 100", f"{SMOL}/run.log", r"^cloze .*step-00000100 dev (\d+)/22", 1),
    ("**22 + {51} = 73 of 80** at 100", f"{SMOL}/run.log", r"^cloze .*step-00000100 .* more (\d+)/58", 1),
    ("(run.log): **{34} of 40 (85%)**", f"{SMOL}/run.log", r"^cloze smollm2-mlm \(shipped\) test (\d+)/40", 1),
    ("coffee {0.46}, tea 0.30", f"{SMOL}/answers.log",
     r"^She drank a cup of \[MASK\] in the morning\. -> coffee \(([\d.]+)\)", 1),
    ("coffee 0.46, tea {0.30}", f"{SMOL}/answers.log",
     r"^She drank a cup of \[MASK\] in the morning\. -> .* tea \(([\d.]+)\)", 1),
    ("-> France {0.71}", f"{SMOL}/answers.log",
     r"^paris is the capital of \[MASK\]\. -> France \(([\d.]+)\)", 1),
    ("French {0.36}, English 0.13", f"{SMOL}/answers.log",
     r"^People in France speak \[MASK\]\. -> French \(([\d.]+)\)", 1),
    ("French 0.36, English {0.13}", f"{SMOL}/answers.log",
     r"^People in France speak \[MASK\]\. -> .* English \(([\d.]+)\)", 1),
    ("-> mat {0.29}, floor, body", f"{SMOL}/answers.log", r"purred\. -> mat \(([\d.]+)\)", 1),
    ("masked top-1 **{34.5}%**, top-5", SMOL_SHIPPED, "json:final_eval.masked_top1", 100),
    ("masked top-1 **34.5%**, top-5 **{56.2}%** on 1154", SMOL_SHIPPED, "json:final_eval.masked_top5", 100),
    ("on {1154} masked words of held-out articles; the right", SMOL_SHIPPED, "json:final_eval.masked_positions", 1),
    ("its top 5 for **{34} of 40** everyday", f"{SMOL}/run.log", r"^cloze smollm2-mlm \(shipped\) test (\d+)/40", 1),
    ("| {18m42s} (load average 6-9) |", SMOL_SHIPPED, "json:wall_s", 1),
]]

# ---- P6: docs/explorer.md's two latency tables, re-run 2026-12-07 (python -m attnlab.benchmarks.explorer_latency
# --rounds 3 --json latency.json at nice 10; run.log its output, latency.json its figures unrounded, in ms)
LATENCY_LOG = "bench/results/explorer-latency-2026-12-07/run.log"
LATENCY = "bench/results/explorer-latency-2026-12-07/latency.json"
_EXP = "json:cases.experiments {}.{}_ms.{}"
CLAIMS += [("docs/explorer.md", printed, LATENCY, where, scale) for printed, where, scale in (
    ("| one plain forward (the peer) | {18} / 18 ms |", _EXP.format("minilm-mlm", "cpu", "forward"), 1),
    ("| one plain forward (the peer) | 18 / {18} ms |", _EXP.format("minilm-mlm", "wall", "forward"), 1),
    ("| one plain forward (the peer) | 18 / 18 ms | {39} / 67 ms |", _EXP.format("smollm2", "cpu", "forward"), 1),
    ("| one plain forward (the peer) | 18 / 18 ms | 39 / {67} ms |", _EXP.format("smollm2", "wall", "forward"), 1),
    ("| ablation answer | {32} / 33 ms |", _EXP.format("minilm-mlm", "cpu", "ablation"), 1),
    ("| ablation answer | 32 / {33} ms |", _EXP.format("minilm-mlm", "wall", "ablation"), 1),
    ("| ablation answer | 32 / 33 ms | {62} / 73 ms |", _EXP.format("smollm2", "cpu", "ablation"), 1),
    ("| ablation answer | 32 / 33 ms | 62 / {73} ms |", _EXP.format("smollm2", "wall", "ablation"), 1),
    ("| one patched run | {19} / 21 ms |", _EXP.format("minilm-mlm", "cpu", "patch"), 1),
    ("| one patched run | 19 / {21} ms |", _EXP.format("minilm-mlm", "wall", "patch"), 1),
    ("| one patched run | 19 / 21 ms | {45} / 87 ms |", _EXP.format("smollm2", "cpu", "patch"), 1),
    ("| one patched run | 19 / 21 ms | 45 / {87} ms |", _EXP.format("smollm2", "wall", "patch"), 1),
    ("heads) | {0.33} / 0.54 s |", _EXP.format("minilm-mlm", "cpu", "head sweep"), 0.001),
    ("heads) | 0.33 / {0.54} s |", _EXP.format("minilm-mlm", "wall", "head sweep"), 0.001),
    ("heads) | 0.33 / 0.54 s | {5.4} / 15.9 s |", _EXP.format("smollm2", "cpu", "head sweep"), 0.001),
    ("heads) | 0.33 / 0.54 s | 5.4 / {15.9} s |", _EXP.format("smollm2", "wall", "head sweep"), 0.001),
    ("| logit lens | | {68} / 118 ms |", _EXP.format("smollm2", "cpu", "logit lens"), 1),
    ("| logit lens | | 68 / {118} ms |", _EXP.format("smollm2", "wall", "logit lens"), 1),
    ("cells) | {0.52} / 0.86 s |", _EXP.format("minilm-mlm", "cpu", "patch grid"), 0.001),
    ("cells) | 0.52 / {0.86} s |", _EXP.format("minilm-mlm", "wall", "patch grid"), 0.001),
    ("cells) | 0.52 / 0.86 s | {8.9} / 25.7 s |", _EXP.format("smollm2", "cpu", "patch grid"), 0.001),
    ("cells) | 0.52 / 0.86 s | 8.9 / {25.7} s |", _EXP.format("smollm2", "wall", "patch grid"), 0.001),
    ("within its target on the CPU clock ({5.4} s), not", _EXP.format("smollm2", "cpu", "head sweep"), 0.001),
    ("not on this run's loaded wall clock ({15.9} s)", _EXP.format("smollm2", "wall", "head sweep"), 0.001),
    ("nor SmolLM2's head sweep ({15.9} s against 10", _EXP.format("smollm2", "wall", "head sweep"), 0.001),
    ("rose from {0.45} to 7.06,\nso the CPU time", "json:machine.load_average.0", 1),
    ("run at nice 10\nwhile the load average rose from {0.45} to", "json:machine.load_average.0", 1),
    # the generation, layer/head and first-paint rows
    ("generation step, gpt-char ({35} positions)", "json:cases.step gpt-char.positions", 1),
    ("timed beside it) | ≤ 30 ms | {47.4} ms (17.9 ms)", "json:cases.step gpt-char.session_ms", 1),
    ("timed beside it) | ≤ 30 ms | 47.4 ms ({17.9} ms)", "json:cases.step gpt-char.cpu_ms.session", 1),
    ("| 47.4 ms (17.9 ms) | {51.6} ms (19.8 ms)", "json:cases.step gpt-char.uncached_ms", 1),
    ("| 47.4 ms (17.9 ms) | 51.6 ms ({19.8} ms)", "json:cases.step gpt-char.cpu_ms.recompute", 1),
    ("(`compare: false`; model step {0.8} ms)", "json:cases.step gpt-char.model_step_ms", 1),
    ("model step 0.8 ms) | | {22.4} ms (9.5 ms)", "json:cases.step gpt-char.session_no_compare_ms", 1),
    ("model step 0.8 ms) | | 22.4 ms ({9.5} ms)", "json:cases.step gpt-char.cpu_ms.lean", 1),
    ("SmolLM2-135M ({15} positions;", "json:cases.step smollm2.positions", 1),
    ("(15 positions; model step {45.1} ms wall)", "json:cases.step smollm2.model_step_ms", 1),
    ("≤ 150 ms | {95.9} ms (42.5 ms)", "json:cases.step smollm2.session_ms", 1),
    ("≤ 150 ms | 95.9 ms ({42.5} ms)", "json:cases.step smollm2.cpu_ms.session", 1),
    ("(42.5 ms) | {305.2} ms (109.0 ms)", "json:cases.step smollm2.uncached_ms", 1),
    ("(42.5 ms) | 305.2 ms ({109.0} ms)", "json:cases.step smollm2.cpu_ms.recompute", 1),
    ("`/api/attention` alone | | {27.3} ms (8.7 ms)", "json:cases.layer/head.view_ms", 1),
    ("`/api/attention` alone | | 27.3 ms ({8.7} ms)", "json:cases.layer/head.cpu_ms.view", 1),
    ("(8.7 ms) | {43.9} ms (18.8 ms)", "json:cases.layer/head.view_uncached_ms", 1),
    ("(8.7 ms) | 43.9 ms ({18.8} ms)", "json:cases.layer/head.cpu_ms.view uncached", 1),
    ("≤ 100 ms | {46.1} ms (19.2 ms)", "json:cases.layer/head.tab_ms", 1),
    ("≤ 100 ms | 46.1 ms ({19.2} ms)", "json:cases.layer/head.cpu_ms.tab", 1),
    ("(19.2 ms) | {209.9} ms (89.3 ms)", "json:cases.layer/head.tab_uncached_ms", 1),
    ("(19.2 ms) | 209.9 ms ({89.3} ms)", "json:cases.layer/head.cpu_ms.tab uncached", 1),
    ("toy's numbers on the page) | ≤ 1 s | {337} ms", "json:cases.first paint.first_paint_ms", 1),
    ("it ({47.4} ms\nagainst 30) is not", "json:cases.step gpt-char.session_ms", 1),
)]
# the ratios the page prints, as run.log prints them (x uncached over cached), and the load after the run
CLAIMS += [("docs/explorer.md", printed, LATENCY_LOG, where, 1) for printed, where in (
    ("(19.8 ms) | ×{1.1} |", r"^step gpt-char: .* without \(x([\d.]+)\)"),
    ("(109.0 ms) | ×{3.2} |", r"^step smollm2: .* without \(x([\d.]+)\)"),
    ("(18.8 ms) | ×{1.6} |", r"^layer/head minilm: view .* uncached \(x([\d.]+)\)"),
    ("(89.3 ms) | ×{4.6} |", r"^layer/head minilm: .* whole tab .* \(x([\d.]+)\);"),
    ("rose from 0.45 to {7.06},\nso the CPU time", r"load average after: ([\d.]+) "),
    ("rose from 0.45 to {7.06} (other jobs)", r"load average after: ([\d.]+) "),
    ("torch 2.13 with {1} thread (`OMP_NUM_THREADS=1`), run at nice 10", r'"torch_threads": (\d+),'),
    ("project's shared {2}-core AMD EPYC, torch 2.13 with 1 thread", r'"cores": (\d+),'),
    ("(`OMP_NUM_THREADS=1`), run at nice {10}", r"nice -n (\d+) python"),
    ("2026-12-07 on the shared {2}-core AMD EPYC, run at nice 10", r'"cores": (\d+),'),
    ("2026-12-07 on the shared 2-core AMD EPYC, run at nice {10}", r"nice -n (\d+) python"),
    ("(other jobs), {3} interleaved rounds", r"^first paint: .*\(median of (\d+)\)"),
    ("through the app's HTTP layer, medians of\n{3} rounds", r"^first paint: .*\(median of (\d+)\)"),
)]
# docs/explorer.md's Experiments views' timings, from the views' own run of 2026-12-07 (views.log, P2's log): the
# name swap's head grid both ways, the steering defaults; the long prompt's steps and the lens's layers (their logs)
_VIEWS_LOG = "bench/results/explorer-experiments-2026-12-07/views.log"
_GRID = r"^components, name swap, head grid, {}: .*; {}"
_CPU, _WALL = r"([\d.]+) s CPU", r"[\d.]+ s CPU, ([\d.]+) s wall"
CLAIMS += [("docs/explorer.md", printed, _VIEWS_LOG, where, 1) for printed, where in (
    ("the estimate took {0.6} s of CPU (4.5 s of wall time)", _GRID.format("attribution", _CPU)),
    ("the estimate took 0.6 s of CPU ({4.5} s of wall time)", _GRID.format("attribution", _WALL)),
    ("the exact head grid {3.7} s of CPU", _GRID.format("exact", _CPU)),
    ("the exact head grid 3.7 s of CPU\n  ({26.0} s of wall time)", _GRID.format("exact", _WALL)),
    ("(one torch thread, load average {6.8} before and 8.2 after;\n  2026-12-07",
     r"^# Load average ([\d.]+) before"),
    ("(one torch thread, load average 6.8 before and {8.2} after;\n  2026-12-07",
     r"^# Load average [\d.]+ before, ([\d.]+) after"),
    ("one torch thread, load average {6.8} before and 8.2 after) an answer", r"^# Load average ([\d.]+) before"),
    ("one torch thread, load average 6.8 before and {8.2} after) an answer",
     r"^# Load average [\d.]+ before, ([\d.]+) after"),
    ("an answer took {0.5} s of CPU (3.2 s of wall time) for SmolLM2",
     r"^steer SmolLM2 after layer 4, alpha 1: .*; ([\d.]+) s CPU"),
    ("an answer took 0.5 s of CPU ({3.2} s of wall time) for SmolLM2",
     r"^steer SmolLM2 after layer 4, alpha 1: .* ([\d.]+) s wall$"),
    ("and {0.1} s (0.6 s) for gpt-char", r"^steer gpt-char after layer 3, alpha 1: .*; ([\d.]+) s CPU"),
    ("and 0.1 s ({0.6} s) for gpt-char", r"^steer gpt-char after layer 3, alpha 1: .* ([\d.]+) s wall$"),
)]
_P2_LOGS = "bench/results/explorer-experiments-2026-12-07/"
CLAIMS += [
    ("docs/explorer.md", "0.03–0.09 s with it (steps {2} to 5", _P2_LOGS + "long-prompt.log",
     r"^steps (\d+)-\d+: without", 1),
    ("docs/explorer.md", "0.03–0.09 s with it (steps 2 to {5}", _P2_LOGS + "long-prompt.log",
     r"^steps \d+-(\d+): without", 1),
    ("docs/explorer.md", "readouts.log, 2026-12-07); layers {2}–27 mostly", _P2_LOGS + "lens.log",
     r"^after layers (\d+)-\d+: ", 1),
    ("docs/explorer.md", "readouts.log, 2026-12-07); layers 2–{27} mostly", _P2_LOGS + "lens.log",
     r"^after layers \d+-(\d+): ", 1),
]
# docs/explorer.md's kept-vs-expanded table, re-run 2026-12-07 (the one-off explorer_gguf_ab.py --experiments of
# ccc1a98; experiments.log: one line per arm, process CPU ms)
KEPT_AB = "bench/results/explorer-kept-2026-12-07/experiments.log"
_KEPT_CASES = (("one forward", "forward", "50", "141", "ms"), ("ablation", "ablation", "75", "186", "ms"),
               ("patched run", "patch", "51", "133", "ms"), ("logit lens", "logit lens", "73", "192", "ms"),
               ('"which heads matter"', "head sweep", "5.1", "9.3", "s"),
               ("patch grid", "patch grid", "8.6", "17.6", "s"))
CLAIMS += [c for case, key, kept, expanded, unit in _KEPT_CASES for c in (
    ("docs/explorer.md", f"| {case} | {{{kept}}} {unit} |", KEPT_AB, rf"^kept:(?:.*,)? {key} (\d+) ms",
     0.001 if unit == "s" else 1),
    ("docs/explorer.md", f"| {case} | {kept} {unit} | {{{expanded}}} {unit} |", KEPT_AB,
     rf"^expanded:(?:.*,)? {key} (\d+) ms", 0.001 if unit == "s" else 1))]
CLAIMS += [("docs/explorer.md", printed, KEPT_AB, where, 1) for printed, where in (
    ("while the load average stood at {12.5}-14.7 from", r"load average before: ([\d.]+) "),
    ("while the load average stood at 12.5-{14.7} from", r"load average after: ([\d.]+) "),
    ("one torch thread, at nice {10} while the load average stood", r"nice -n (\d+) python"),
)]
# docs/interventions.md's reading of SmolLM2's name-pair grids, re-run 2026-12-07 (name-pair-grid.log: the exact and
# estimated resid_pre grids of attribution_agreement's name pair; the log holds the script)
NAME_GRID = "bench/results/attribution-agreement-2026-12-07/name-pair-grid.log"
_JOHN, _TO = r"^  position 9 ' John': ", r"^  position 13 ' to': "
_NEAR = r"^cells with an exact effect of at least "
CLAIMS += [("docs/interventions.md", printed, NAME_GRID, where, 1) for printed, where in (
    ("exact patching gives {24} cells at least 0.9", _NEAR + r"[\d.]+ of the largest: (\d+)$"),
    ("gives 24 cells at least {0.9} of the full effect", _NEAR + r"([\d.]+) of the largest"),
    ("stream at layers\n{0}-19 restores", _JOHN + r"layers (\d+)-"),
    ("stream at layers\n0-{19} restores", _JOHN + r"layers \d+-(\d+) "),
    ("restores {10.99}-11.08 of the logit", _JOHN + r".* exact ([\d.]+)-"),
    ("restores 10.99-{11.08} of the logit", _JOHN + r".* exact [\d.]+-([\d.]+), "),
    ("of the logit difference's {11.08}, the last", r"^logit difference .* restores ([\d.]+)$"),
    ("stream at layers {26}-29 10.26", _TO + r"layers (\d+)-"),
    ("stream at layers 26-{29} 10.26", _TO + r"layers \d+-(\d+) "),
    ("at layers 26-29 {10.26}-10.63;", _TO + r".* exact ([\d.]+)-"),
    ("at layers 26-29 10.26-{10.63};", _TO + r".* exact [\d.]+-([\d.]+), "),
    ("those early cells ({0.50}-3.48 where", _JOHN + r".* estimate ([\d.]+)-"),
    ("those early cells (0.50-{3.48} where", _JOHN + r".* estimate [\d.]+-([\d.]+)$"),
    ("where exact patching gives {10.99}-11.08: the", _JOHN + r".* exact ([\d.]+)-"),
    ("where exact patching gives 10.99-{11.08}: the", _JOHN + r".* exact [\d.]+-([\d.]+), "),
    ("first ({6} of its top 10, layers", r"^  of them at the last position: (\d+),"),
    ("(6 of its top {10}, layers", r"^the estimate's top (\d+): "),
    ("top 10, layers {24}-29)", r"^  of them at the last position: \d+, layers (\d+)-"),
    ("top 10, layers 24-{29})", r"^  of them at the last position: \d+, layers \d+-(\d+),"),
    ("which are real ({9.49}-10.63", r"^  of them at the last position: .* exact ([\d.]+)-"),
    ("which are real (9.49-{10.63}", r"^  of them at the last position: .* exact [\d.]+-([\d.]+)$"),
)]
# the generation step kept against expanded, the same script's step mode re-run 2026-12-07 (step.log)
KEPT_STEP = "bench/results/explorer-kept-2026-12-07/step.log"
CLAIMS += [("docs/explorer.md", printed, KEPT_STEP, where, 1) for printed, where in (
    ("with the load average at {11.0}-11.5 from other", r"load average after: ([\d.]+) "),
    ("with the load average at 11.0-{11.5} from other", r"load average before: ([\d.]+) "),
    ("it took\n{52.4} ms of this process's CPU with the blocks kept", r"^kept: ([\d.]+) ms of process CPU"),
    ("with the blocks kept against {114.4} ms expanded", r"^expanded: ([\d.]+) ms of process CPU"),
    ("ms expanded ({2.18}x, medians of 9", r"^expanded / kept CPU: ([\d.]+)x"),
    ("(2.18x, medians of {9} interleaved", r"^kept: .*\(median of (\d+)\)"),
    ("interleaved\nrounds, the same {8} greedy tokens)", r"the same (\d+) greedy tokens: True$"),
    ("at nice {10} with the load average at 11.0", r"nice -n (\d+) python"),
)]
# docs/generation.md: the busy runs' machine (each log's header names its cores)
CLAIMS += [("docs/generation.md", "slow path. On the shared {2}-core machine with a busy competitor",
            "bench/results/threads-2026-12-07/busy-run1.log", r"^# .* \| AMD EPYC, (\d+) cores,", 1)]
# ---- P6: end

# ---- P8: docs/explorer.md (issue 54): the machine each logged run names, the timeline's heads, the step's build
_LAYER1_AT_END = r"^previous-token score, layer 1 head (\d+): .*step 1500 {};"
CLAIMS += [("docs/explorer.md", printed, log, where, 1) for printed, log, where in (
    ("else compiled: {18} s for SmolLM2 on a quiet machine", "bench/results/llama-cpp-zen5-2026-11-28/q4_1-final.log",
     r"^\[attnlab: compiled in (\d+) s\]$"),
    ("on a quiet machine, load average {0.84}, 2026-11-28", "bench/results/llama-cpp-zen5-2026-11-28/q4_1-final.log",
     r"load average: ([\d.]+),"),
    ("on the loaded {2}-core machine (one torch thread, load average 6.8", VIEWS, r"the shared (\d+)-core AMD EPYC"),
    ("In the same run (the loaded {2}-core machine,", VIEWS, r"the shared (\d+)-core AMD EPYC"),
    ("because the {2}-core machine was\nshared with other jobs", TIMELINE_RUN, r"the shared (\d+)-core AMD EPYC"),
    ("turned\ninto a previous-token head: at step {1} it spreads", TIMELINE,
     r"^previous-token score, layer 1 head 4: step (\d+) "),
    ("Two other heads of layer {1} learn the same habit", TIMELINE,
     r"^previous-token score, layer (\d+) head \d+: .*step 1500 0.43;"),
    ("learn the same habit: head {1} ends at 0.43", TIMELINE, _LAYER1_AT_END.format("0.43")),
    ("and head {3} at 0.36, while", TIMELINE, _LAYER1_AT_END.format("0.36")),
    ("while head {2} ends at 0.23", TIMELINE, _LAYER1_AT_END.format("0.23")),
    ("Every head in layers {2}–4 ends at", TIMELINE, r"^layers (\d+)-\d+: every head"),
    ("Every head in layers 2–{4} ends at", TIMELINE, r"^layers \d+-(\d+): every head"),
    ("On the\nshared {2}-core machine (load average 6 to 9", f"{CLASS}/30-students-90s-flood-rotate.json",
     "json:cores"),
    ("On\nthe shared {2}-core machine (load average about 6", f"{CLASS}/30-students-240s.json", "json:cores"),
    ("Re-run on\n2026-12-07 (the shared {2}-core AMD EPYC, one torch thread, at nice 10 with", KEPT_STEP,
     r"on the shared (\d+)-core AMD EPYC"),
    ("Re-run on\n2026-12-07 (the shared {2}-core AMD EPYC, one torch thread, at nice 10 while", KEPT_AB,
     r"on the shared (\d+)-core AMD EPYC"),
)]
PROBE_RUN = "bench/results/explorer-probe-2026-12-07/"  # the shipped gpt-char's recipe made again, and its check
CLAIMS += [("docs/explorer.md", printed, PROBE_RUN + log, where, 1) for printed, log, where in (
    ("and again on 2026-12-07 ({148.7} s of CPU", "train.log", r"User time \(seconds\): ([\d.]+)$"),
    ("s of CPU on the shared {2}-core machine,", "train.log", r"the shared (\d+)-core AMD EPYC"),
    ("its validation loss, {1.3166}, is 0.0008", "probe-check.log", r"^re-run: .* val_loss ([\d.]+);"),
    ("its validation loss, 1.3166, is {0.0008} from the", "probe-check.log", r"^re-run: .*; difference ([\d.]+)$"),
    ("are within {0.011} of the shipped", "probe-check.log", r"largest difference ([\d.]+)$"),
)]
GALLERY = "bench/results/gallery-2026-12-07/gallery.log"  # python docs/gallery.py --out /tmp/..., timed
CLAIMS += [("docs/explorer.md", printed, GALLERY, where, 1) for printed, where in (
    ("`python docs/gallery.py` ({41} s of wall time", r"^wall ([\d.]+) s, "),
    ("s of wall time at a load average of {3.7} on the shared", r"^# load average before: ([\d.]+) "),
    ("on the shared\n{2}-core machine, 2026-12-07, bench/results/gallery", r"the shared (\d+)-core AMD EPYC"),
)]
# ---- P8: end

# ---- P8: docs/training.md (issue 54): the data-preparation logs' load averages and phase ends, the nanoGPT run's cores
_TRAINER_END = r"^gpt-bpe: training a .*?\s+\d+\s+\d+\s+(\d+)\s"
_PREP_BUILD = r"^data preparation and model build\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(\d+)\s"
CLAIMS += [("docs/training.md", printed, log, where, 1) for printed, log, where in (
    ("2026-12-07, load average {22}-26: `bench/results/data-prep", DATA_PREP, r"during the training: ([\d.]+)-"),
    ("2026-12-07, load average 22-{26}: `bench/results/data-prep", DATA_PREP, r"during the training: [\d.]+-([\d.]+),"),
    ("--corpus-mb 30`, load average {21}: `phases-gpt-bpe-after.log`", PHASES.format("after"),
     r"\| load average ([\d.]+) \|"),
    ("(the trainer's phase ends at {268} MB", PHASES.format("after"), _TRAINER_END),
    ("ends at 268 MB where it ended\nat {361}) and", PHASES.format("before"), _TRAINER_END),
    ("gpt-char's preparation is\nunchanged ({324} and 325 MB",
     "bench/results/data-prep-2026-12-07/gpt-char-30mb-before.log", _PREP_BUILD),
    ("unchanged (324 and {325} MB", "bench/results/data-prep-2026-12-07/gpt-char-30mb-after.log", _PREP_BUILD),
    ("--same-eval`, 2026-12-07, {2}-core AMD EPYC, heavily loaded", NANO_LOADED, r"^# .* \| (\d+) cores \|"),
)]
CLAIMS += [  # docs/cost.md: the machine each timed run's log names
    ("docs/cost.md", "over three runs on the shared {2}-core machine, 2026-12-07", COST_RUN,
     r"^# .* \| AMD EPYC, (\d+) cores \|", 1),
    ("docs/cost.md", "30.8 s of wall time on {2} cores shared", COST_TESTS, r"^# .* \| AMD EPYC ?, (\d+) cores \|", 1),
]
CLAIMS += [("docs/interventions.md", "2026-11-28, AMD EPYC ({2} cores shared), one torch", ATTRIBUTION,
            r"; (\d+)-core AMD EPYC shared", 1)]  # the agreement log's machine
TEACHER_ROWS = "bench/results/teacher-rows-2026-12-07/rows.log"  # attnlab.data.teacher.teacher_topk on two sentences
CLAIMS += [("docs/training.md", printed, TEACHER_ROWS, where, 1) for printed, where in (
    ("says cow ({0.32} of its row), cows", r"^teacher row at 'cow' .*\): cow ([\d.]+),"),
    ("towel ({0.53}), cloth, soft", r"^teacher row at 'towel' .*\): towel ([\d.]+),"),
)]
# ---- P8: end


# ---- T: docs/training.md (issue 54): the threads benchmark's training row beside busy competitors (the auto thread
# count's reason), the everyday generator's rate before and after 52a06d4 (attnlab/benchmarks/everyday_rate.py), the
# start of a
# run on a 44.5 MB corpus (attnlab/benchmarks/big_corpus_start.py)
_THREADS_TRAIN = (r"^\| training gpt-char \(short run\) \| 2 busy competitors \| [\d,]+ \| ([\d,]+) \| "
                  r"(?:[\d,]+) \|")
CLAIMS += [("docs/training.md", printed, "bench/results/threads-small/all-cases.log", where, 1) for printed, where in (
    ("a short gpt-char training run at `threads=2` made {81} tokens/s",
     r"^\| training gpt-char \(short run\) \| 2 busy competitors \| [\d,]+ \| [\d,]+ \| ([\d,]+) \|"),
    ("made 81 tokens/s against {1,303} at `threads=1`", _THREADS_TRAIN),
)]
_GEN_RATE = r"^tokens per CPU-second: (\d+)$"  # attnlab/benchmarks/everyday_rate.py's last line
CLAIMS += [("docs/training.md", printed, f"bench/results/everyday-generator-2026-12-07/{log}.log", _GEN_RATE, 1)
           for printed, log in (("one thread: {85}\ntokens per CPU-second before", "before"),
                                ("tokens per CPU-second before, {132} after", "after"))]
CLAIMS += [("docs/training.md", "and {97.2}% with `seed=1` (re-run 2026-12-07",
            "bench/results/vit-mnist-seed1-2026-12-07/train.log", r"^  eval       accuracy ([\d.]+)$", 100)]
# ---- T: end

# ---- G: docs/generation.md (issue 54): the decode layouts' re-run (attnlab/benchmarks/decode_layout.py, 2026-12-07:
# its niceness
# and loads), SmolLM2's first-run peak memory (python -m attnlab.benchmarks.first_run), the compiled step's build time
# on the quiet and the busy machine (the llama.cpp benchmark's "[attnlab: compiled in N s]" lines)
_MATVEC = "bench/results/decode-layout-2026-12-07/matvec.log"
_FIRST_RUN = "bench/results/first-run-2026-12-07/quiet.log"
_BUILD_QUIET = "bench/results/llama-cpp-zen5-2026-11-28/q4_1-night.log"
_BUILD_BUSY = "bench/results/llama-cpp-kquant-2026-12-07/compare.log"
_BUILD = r"for 1 row at {} threads?, .*\n\[attnlab: compiled in (\d+) s\]"
CLAIMS += [("docs/generation.md", printed, log, where, 1) for printed, log, where in (
    ("AMD EPYC (Zen 5) at nice {10}, load average", _MATVEC, r"; niceness (\d+);"),
    ("load average {2.13} at the start and 3.65 at the end", _MATVEC, r"load average ([\d.]+) at the start"),
    ("load average 2.13 at the start and {3.65} at the end", _MATVEC, r"load average ([\d.]+) at the end"),
    ("SmolLM2's first run peaked at {873} MB of memory", _FIRST_RUN,
     r"^\| first \(empty cache\) \|.*\n.*\n.*\n.*peak memory (\d+) MB\]$"),
    ("against {474} MB once every kernel was built", _FIRST_RUN,
     r"^\| after the build, again \|.*\n.*\n.*peak memory (\d+) MB\]$"),
    ("(SmolLM2: {13} s at one thread", _BUILD_QUIET, _BUILD.format(1)),
    ("13 s at one thread and {10} s at two", _BUILD_QUIET, _BUILD.format(2)),
    ("on the quiet machine, load average {0.53}, 2026-11-28", _BUILD_QUIET, r"load average: ([\d.]+),"),
    ("{152} s and 76 s on the busy machine", _BUILD_BUSY, _BUILD.format(1)),
    ("152 s and {76} s on the busy machine", _BUILD_BUSY, _BUILD.format(2)),
    ("on the busy machine, load average {10.3}", _BUILD_BUSY, r"load average ([\d.]+) -> [\d.]+ on"),
    ("load average 10.3\nrising to {21.0}", _BUILD_BUSY, r"load average [\d.]+ -> ([\d.]+) on"),
)]
# docs/quantization.md: int8's prefill perplexity over 8192 tokens per language, re-run 2026-12-07
_INT8_8192 = "bench/results/quality-8192-2026-12-07/int8-prefill-8192.log"
_INT8_ROW = r"^\| int8 \| int8 \| \d+ \| [\d.]+ \| ([+-][\d.]+)% \([^)]*\) \| [\d.]+ \| ([+-][\d.]+)% "
CLAIMS += [("docs/quantization.md", printed, _INT8_8192, where, 1) for printed, where in (
    ("at nice 10, load average {3.27} before and", r"^# before: [^;]*load average: ([\d.]+),"),
    ("load average 3.27 before and\n{4.02} after", r"; after: [^;(]*load average: ([\d.]+),"),
    ("int8-prefill-8192.log; {8191} scored tokens per language", r", (\d+) scored per language"),
    ("changed by {+0.56}% (es)", _INT8_ROW),
    ("(es) and\n{-0.23}% (fr)", _INT8_ROW.replace(r"([+-][\d.]+)% \(", r"[+-][\d.]+% \(", 1)),
)]
# ---- G: end

# ---- E: docs/explorer.md (issue 54): the Q8_0 multi-row kernel against row-by-row calls, re-run 2026-12-07
# (OMP_NUM_THREADS=1 nice -n 10 python -m attnlab.benchmarks.q8_0_rows: its range, load, machine and niceness)
Q8_ROWS = "bench/results/q8_0-rows-2026-12-07/rows.log"
CLAIMS += [("docs/explorer.md", printed, Q8_ROWS, where, 1) for printed, where in (
    ("(`q8_0_kernel.rows_product`, {1.4}-5.7x faster", r"every shape and row count: ([\d.]+)-[\d.]+x "),
    ("(`q8_0_kernel.rows_product`, 1.4-{5.7}x faster", r"every shape and row count: [\d.]+-([\d.]+)x "),
    ("on the shared {2}-core AMD EPYC at nice 10, load average 3.4", r"\| AMD EPYC, (\d+) cores \|"),
    ("on the shared 2-core AMD EPYC at nice {10}, load average 3.4", r"nice -n (\d+) python bench/q8_0_rows\.py"),
    ("at nice 10, load average {3.4} from other jobs", r"load average at start ([\d.]+) "),
)]
# ---- E: end

# ---- E: docs/interop.md (issue 54): the recording benchmark re-run 2026-12-07 (OMP_NUM_THREADS=1 nice -n 10
# python -m attnlab.benchmarks.recording --threads 1): each arm's median and least round, the plain arm's slowest, the
# machine and its load at the start and the end
RECORDING_RUN = "bench/results/recording-2026-12-07/recording.log"


def _arm(name: str, which: str) -> str:
    """The recording log's line of one arm: its median, min or max (ms) as the first group."""
    value = {k: r"([\d.]+)" if k == which else r"[\d.]+" for k in ("median", "min", "max")}
    return rf"^  {re.escape(name)} +median +{value['median']} ms  \(min {value['min']}, max {value['max']}\)"


_A, _B, _C = "A plain", "B recorder, nothing kept", "C recorder, blocks.0.attn.weights"
CLAIMS += [("docs/interop.md", printed, RECORDING_RUN, where, 1) for printed, where in (
    ("on the shared {2}-core AMD EPYC\n(Zen 5)", r"shared (\d+)-core AMD EPYC"),
    ("load average {1.05} at the start", r"load average at start: ([\d.]+) "),
    ("and {3.50} at the end from other jobs", r"^# load average at end: ([\d.]+) "),
    ("a plain\nforward {601} ms (351 ms)", _arm(_A, "median")),
    ("a plain\nforward 601 ms ({351} ms)", _arm(_A, "min")),
    ("\"nothing.matches\"])` {637} ms (380 ms)", _arm(_B, "median")),
    ("\"nothing.matches\"])` 637 ms ({380} ms)", _arm(_B, "min")),
    ("(explicit path for that layer only) {702} ms (352 ms)", _arm(_C, "median")),
    ("(explicit path for that layer only) 702 ms ({352} ms)", _arm(_C, "min")),
    ("own rounds ran from {351} to 864 ms", _arm(_A, "min")),
    ("own rounds ran from 351 to {864} ms", _arm(_A, "max")),
)]
# ---- E: end


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _figure(printed: str) -> str:
    found = re.search(r"\{([^}]*)\}", printed)
    assert found, f"no figure in braces in {printed!r}"
    return found[1]


def _number(figure: str) -> tuple[float, int]:
    """The printed figure as a number and its decimals: "1,103" -> 1103, "0.96" -> 0.96, "8m02s" -> 482 seconds."""
    minutes = re.fullmatch(r"(\d+)m(\d\d)s", figure)
    if minutes:
        return int(minutes[1]) * 60 + int(minutes[2]), 0
    mantissa, _, exponent = figure.replace(",", "").partition("e")  # "3.0e-07": 8 decimals, "1e-7": 7
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return float(figure.replace(",", "")), decimals - int(exponent or 0)


def _value(log: Path, where: str) -> float:
    text = log.read_text()
    if where.startswith("json:"):
        value = json.loads(text)
        for key in where[len("json:"):].split("."):
            value = value[int(key)] if isinstance(value, list) else value[key]
        return float(value)
    found = re.search(where, text, re.M)
    assert found, f"{where!r} finds nothing in {log}"
    return float(found[1].replace(",", ""))


@pytest.mark.parametrize(("page", "printed", "log", "where", "scale"), CLAIMS,
                         ids=[f"{c[0]}:{_figure(c[1])}:{i}" for i, c in enumerate(CLAIMS)])
def test_the_page_prints_what_the_log_says(page, printed, log, where, scale):
    """The page still prints the figure; the log exists and its value (times scale) rounds to it."""
    shown = _squash(printed.replace("{", "").replace("}", ""))
    assert shown in _squash((ROOT / page).read_text()), f"{page} no longer prints {shown!r}"
    assert (ROOT / log).is_file(), f"{page} cites {log}, which is not there"
    figure = _figure(printed)
    printed_value, decimals = _number(figure)
    logged = _value(ROOT / log, where)
    assert abs(logged * scale - printed_value) <= 0.5 * 10 ** -decimals + 1e-9, \
        f"{page} prints {figure}, {log} says {logged * scale:g}"


PAGES = ["README.md", "bench/RESULTS.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")
                                                   if "api" not in p.relative_to(ROOT / "docs").parts)]
CITED = re.compile(r"bench/results/[\w.*/-]*[\w*/]")


def test_every_cited_results_path_exists():
    """A results folder renamed or a log removed leaves no page pointing at nothing (globs: at least one match)."""
    missing = []
    for page in PAGES:
        for cited in sorted(set(CITED.findall((ROOT / page).read_text()))):
            if not list(ROOT.glob(cited.rstrip("/"))):
                missing.append(f"{page}: {cited}")
    assert missing == []


def test_results_are_named_for_what_they_measured():
    """Folders and files under bench/results name the run (what, machine, date), not a working-session number."""
    numbered = [str(p.relative_to(ROOT)) for p in (ROOT / "bench" / "results").rglob("*")
                if re.search(r"(^|-)s\d+($|[.-])", p.stem)]
    assert numbered == []

