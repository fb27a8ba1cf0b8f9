"""Models up to 1B beside llama.cpp: random-weight models at Qwen2.5-0.5B's and TinyLlama-1.1B's shapes, written by
attnlab as F16 GGUF files, quantized by llama.cpp's llama-quantize to Q4_0, Q8_0 and Q4_K_M, then timed on each
file against llama.cpp's llama-bench in the same script: decoding (tg64) and prompts (pp128, pp512) at 1 and 2
threads, each beside the machine's read floor.

    python -m attnlab.benchmarks.shapes                       # both shapes, the three presets, 2 rounds
    python -m attnlab.benchmarks.shapes --shapes qwen2.5-0.5b --kinds Q8_0 --rounds 3
    python -m attnlab.benchmarks.shapes --write-only          # make (or find) the files, time nothing
    python -m attnlab.benchmarks.shapes --where               # also: each matrix kind's one-row time vs a read
    python -m attnlab.benchmarks.shapes --where-only --rounds 5   # that alone (no llama-bench)

The shapes are the models' config.json: Qwen2.5-0.5B (d_model 896, 24 blocks, 14 query heads sharing 2 K/V heads,
d_ff 4864, a vocabulary of 151,936 tied to the head, Q/K/V biases; 494,032,768 parameters) and TinyLlama-1.1B
(d_model 2048, 22 blocks, 32 query heads sharing 4 K/V heads, d_ff 5632, a vocabulary of 32,000, an untied head;
1,100,048,384 parameters). The weights are attnlab's random initialisation (seeded): a step's speed depends on the
shape and the block formats, not on the values, so nothing is downloaded and nothing is claimed about the text the
models write. The tokenizer is a byte-level BPE trained here on a few sentences (the rows past it are llama.cpp's
unused [PAD] tokens), as qwen2_shape writes it.

The files live in <cache>/llama.cpp/models (a private folder, as the other llama.cpp files):
<shape>.<PRESET>.gguf, each beside a .json holding the shape, the seed and the file's sha256; a file is made once
and reused while its .json names the same shape and seed and its sha256 still matches. One shape is built at a time
(a float32 TinyLlama is 4.4 GB), exported as F16 (save_gguf dtype="float16"), quantized to every preset missing,
then the F16 file is deleted.

What is timed, per file, round by round: one llama-bench run (-p 128,512 -n 64 -t 1,2 -r 1) and then attnlab's
runs, with llama-bench once more after attnlab's last round (the peer before and after attnlab; the median of all
its runs is the figure). attnlab loads the file with its blocks kept (attnlab.load's default) and runs its default
path: decoding is generate(threads=N) making 64 greedy tokens after a 32-token prompt (the compiled step), its 63
one-token steps timed (as llama-bench's tg64); a prompt is the model's forward over 128 or 512 tokens into an empty
KV cache, the last position's logits only (what generate runs for a prompt; long_prompts.attnlab_seconds). Rates
are tokens per second of wall time; a ratio is attnlab / llama.cpp (above 1: attnlab is faster). The floor:
read_floor's bytes of weights one step reads, over this machine's measured read rate at 1 and 2 cores; each
decode rate is also given as a fraction of it. "Resident growth" is VmRSS after attnlab.load less before.

--where adds, per file, where attnlab's decoding step spends its time at one thread (CPU clock, interleaved): each
kind of matrix of the blocks (all blocks' copies cycled, so the weights come from memory) and the head, one row
through its layer, against a plain read (torch.sum) of a float32 buffer of the same bytes; the products' sum
against the whole step, and what is left (attention, norms, the step's own overhead).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from attnlab.benchmarks.qwen2_shape import QWEN25_05B
from attnlab.heap import release_freed_memory
from attnlab.storage import file_sha256

TINYLLAMA_11B = dict(topology="decoder", vocab_size=32000, d_model=2048, n_heads=32, n_kv_heads=4, d_ff=5632,
                     n_layers=22, max_len=2048, position="rope", rope_theta=10000.0, activation="swiglu",
                     norm="rmsnorm", norm_eps=1e-5, bias=False, tie_embeddings=False,
                     name="random TinyLlama-1.1B shape")
SHAPES = {"qwen2.5-0.5b": QWEN25_05B, "tinyllama-1.1b": TINYLLAMA_11B}
KINDS = ("Q4_0", "Q8_0", "Q4_K_M")
SEED = 0
THREADS = (1, 2)
PROMPTS = (128, 512)
NEW_TOKENS = 64  # quantized.NEW_TOKENS: llama-bench's tg64


# ------------------------------------------------------------------------------------------------ the files
def models_dir() -> Path:
    from attnlab.benchmarks.llama_files import llama_dir, private_folder

    folder = llama_dir() / "models"
    private_folder(folder)
    return folder


def build(shape: dict, seed: int = SEED):
    """The random-weight model of `shape` (a ModelConfig's fields), seeded, in eval mode."""
    import attnlab
    from attnlab.config import ModelConfig

    torch.manual_seed(seed)
    return attnlab.build_model(ModelConfig(**shape)).eval()


def tokenizer():
    from attnlab.benchmarks.llama_cpp_agreement import CORPUS
    from attnlab.data.tokenizers import train_bpe

    return train_bpe(CORPUS, 300)


def write_f16(shape: dict, path: Path, seed: int = SEED) -> Path:
    """`shape`'s random model written by save_gguf as an F16 GGUF (norms float32, as llama.cpp writes them); the
    float32 model is freed before returning."""
    from attnlab.interop.gguf import save_gguf

    model = build(shape, seed)
    try:
        with torch.no_grad():
            return save_gguf(model, path, tokenizer(), dtype="float16")
    finally:
        del model
        gc.collect()


def _record(path: Path) -> Path:
    return path.with_suffix(".json")


def reusable(path: Path, shape: dict, seed: int) -> bool:
    """Whether `path` is there and its .json names this shape and seed and the file's own sha256."""
    try:
        record = json.loads(_record(path).read_text())
    except (OSError, ValueError):
        return False
    return path.is_file() and record.get("shape") == shape and record.get("seed") == seed and \
        record.get("sha256") == file_sha256(path)


def quantize_file(tool: Path, source: Path, out: Path, kind: str) -> None:
    """llama-quantize `source` (F16) into `out` as `kind`; raise with its last line when it fails."""
    partial = out.with_suffix(".partial")
    done = subprocess.run([str(tool), str(source), str(partial), kind], capture_output=True, text=True,
                          timeout=3600)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise SystemExit(f"llama-quantize {kind} of {source.name} failed ({done.returncode}): "
                         f"{done.stderr.strip().splitlines()[-1:]}")
    partial.rename(out)


def files(name: str, kinds=KINDS, seed: int = SEED, folder: Path | None = None, tool: Path | None = None,
          shape: dict | None = None) -> dict[str, Path]:
    """{preset: GGUF} of shape `name` in `folder` (default: <cache>/llama.cpp/models), each made once by
    llama-quantize from attnlab's F16 export and reused while its record matches. `shape` overrides SHAPES[name]
    (the tests' tiny shape). Raises SystemExit naming what is missing when llama-quantize is not built."""
    from attnlab.benchmarks.llama_files import find_tool

    shape = dict(SHAPES[name] if shape is None else shape)
    folder = models_dir() if folder is None else Path(folder)
    wanted = {kind: folder / f"{name}.{kind}.gguf" for kind in kinds}
    missing = [kind for kind, path in wanted.items() if not reusable(path, shape, seed)]
    if not missing:
        return wanted
    tool = tool or find_tool("llama-quantize", os.environ.get("ATTNLAB_LLAMA_QUANTIZE"))
    if tool is None:
        raise SystemExit("llama-quantize is not built: python -m attnlab.benchmarks.llama_cpp --build")
    f16 = folder / f"{name}.F16.partial.gguf"
    start = time.perf_counter()
    write_f16(shape, f16, seed)
    print(f"[{name}: F16 written by save_gguf, {f16.stat().st_size / 2**20:.0f} MB, "
          f"{time.perf_counter() - start:.0f} s]", flush=True)
    try:
        source_sha = file_sha256(f16)
        for kind in missing:
            start = time.perf_counter()
            quantize_file(tool, f16, wanted[kind], kind)
            record = {"shape": shape, "seed": seed, "sha256": file_sha256(wanted[kind]), "f16_sha256": source_sha,
                      "preset": kind}
            _record(wanted[kind]).write_text(json.dumps(record, indent=1) + "\n")
            print(f"[{name}: {kind} by llama-quantize, {wanted[kind].stat().st_size / 2**20:.0f} MB, "
                  f"{time.perf_counter() - start:.0f} s]", flush=True)
    finally:
        f16.unlink(missing_ok=True)
    return wanted


def tensor_types(path: Path) -> str:
    """The file's matrices by block type, e.g. "Q4_0 x 154, Q6_K x 1, F32 x 45" (norms included)."""
    from gguf import GGUFReader

    counts: dict[str, int] = {}
    for t in GGUFReader(str(path)).tensors:
        counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + 1
    return ", ".join(f"{k} x {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


# ------------------------------------------------------------------------------------------------ timing
def attnlab_prompts(model, prompts, threads) -> dict[tuple[int, int], float]:
    """{(tokens, threads): wall seconds} of one prompt forward each (long_prompts.attnlab_seconds, one turn)."""
    from attnlab.benchmarks.long_prompts import attnlab_seconds

    ids = torch.randint(0, model.config.vocab_size, (1, max(prompts)), generator=torch.Generator().manual_seed(0))
    return {(n, t): attnlab_seconds(model, ids, n, t, turns=1)[0] for n in prompts for t in threads}


def time_file(path: Path, rounds: int, threads=THREADS, prompts=PROMPTS, where: bool = False) -> list[str]:
    """The rows of one file (see the module's docstring): a dict per thread count is printed as a table row."""
    import attnlab
    from attnlab.benchmarks.common import status_kib
    from attnlab.benchmarks.llama_cpp import find_llama_bench, llama_bench
    from attnlab.benchmarks.quantized import decode_rounds
    from attnlab.benchmarks.read_floor import floor_line

    binary = find_llama_bench()
    if binary is None:
        raise SystemExit("llama-bench is not built: python -m attnlab.benchmarks.llama_cpp --build")
    gc.collect()
    release_freed_memory()  # else a file after another reuses the freed model's pages and seems to grow less
    before = status_kib("VmRSS")
    model, _ = attnlab.load(path)
    model.eval()
    grown = (status_kib("VmRSS") - before) / 1024 if before is not None else float("nan")
    load_start = os.getloadavg()
    floor_text, floors = floor_line(model, threads)
    tests = ("-p", ",".join(map(str, prompts)), "-n", str(NEW_TOKENS))
    peers, ours_decode, ours_prompt = [], {t: [] for t in threads}, {}
    with torch.no_grad():
        decode_rounds(model, threads, 0, model.config.vocab_size, warm=True, fixed=True,
                      modes=(("_default", None),))  # warm-up: packed tiles, the compiled step
        attnlab_prompts(model, prompts, threads)
        for _ in range(rounds):
            peers.append(llama_bench(binary, path, threads, 1, tests)[0])
            got = decode_rounds(model, threads, 1, model.config.vocab_size, warm=False, fixed=True,
                                modes=(("_default", None),))
            for t in threads:
                ours_decode[t].extend(got[t]["decode_default"])
            for key, seconds in attnlab_prompts(model, prompts, threads).items():
                ours_prompt.setdefault(key, []).append(seconds)
        peers.append(llama_bench(binary, path, threads, 1, tests)[0])  # the peer after attnlab's last round
    peer = {key: statistics.median(p[key] for p in peers) for key in peers[0]}
    load_end = os.getloadavg()
    result = {"file": path.name, "mb": path.stat().st_size / 2**20, "types": tensor_types(path), "grown": grown,
              "floor": floor_text, "load": (load_start[0], load_end[0]), "rows": [],
              "peer_tg": {t: (peers[0][f"tg{NEW_TOKENS}", t], peers[-1][f"tg{NEW_TOKENS}", t]) for t in threads}}
    for t in threads:
        decode = (NEW_TOKENS - 1) / statistics.median(ours_decode[t])
        tg = peer[f"tg{NEW_TOKENS}", t]
        row = {"threads": t, "decode": decode, "tg": tg, "floor_ours": decode / floors[t], "floor_peer": tg / floors[t]}
        for n in prompts:
            row[f"pp{n}"] = n / statistics.median(ours_prompt[n, t])
            row[f"peer_pp{n}"] = peer[f"pp{n}", t]
        result["rows"].append(row)
    lines = file_rows(result, prompts)
    print("\n".join(lines), flush=True)
    if where:
        more = where_time_goes(model, rounds=5)
        print("\n".join(more), flush=True)
        lines += more
    del model
    gc.collect()
    return lines


def file_rows(result: dict, prompts=PROMPTS) -> list[str]:
    """The table rows of one file's result, and the lines under them (floor, peer before/after, load, types)."""
    rows = []
    for r in result["rows"]:
        pp = " | ".join(f"{r[f'pp{n}']:.1f} / {r[f'peer_pp{n}']:.1f} = {r[f'pp{n}'] / r[f'peer_pp{n}']:.2f}x"
                        for n in prompts)
        rows.append(f"| {result['file']} | {r['threads']} | {r['decode']:.1f} | {r['tg']:.1f} | "
                    f"{r['decode'] / r['tg']:.2f}x | {r['floor_ours']:.2f} / {r['floor_peer']:.2f} | {pp} | "
                    f"{result['grown']:.0f} MB ({result['mb']:.0f} MB file) |")
    before_after = ", ".join(f"{t} thread{'s' if t > 1 else ''} {a:.1f} -> {b:.1f}"
                             for t, (a, b) in result["peer_tg"].items())
    rows.append(f"  {result['file']}: {result['types']}; {result['floor']}; llama.cpp tg{NEW_TOKENS} before "
                f"attnlab's first round and after its last: {before_after}; load average {result['load'][0]:.1f} "
                f"-> {result['load'][1]:.1f}")
    return rows


def table_head(prompts=PROMPTS) -> list[str]:
    pp = " | ".join(f"pp{n}: attnlab / llama.cpp (tokens/s)" for n in prompts)
    return [f"| file | threads | decode attnlab tokens/s | llama.cpp tg{NEW_TOKENS} | decode ratio | floor fraction: "
            f"attnlab / llama.cpp | {pp} | resident growth on load |",
            "|---" * (7 + len(prompts)) + "|"]


# ------------------------------------------------------------------------------------------------ where it goes
def where_time_goes(model, rounds: int = 5) -> list[str]:
    """Per matrix kind of the blocks (and the head), one row through its layer at one thread on the CPU clock,
    every block's copy cycled, interleaved with a torch.sum read of float32 buffers of the same bytes; then
    the products' sum per step against a whole decoding step (generate(1 + 16) - generate(1), over 16)."""
    from attnlab.benchmarks.common import interleaved
    from attnlab.benchmarks.quantized import step_costs
    from attnlab.layers.quantized import QuantizedLinear, QuantizedParts

    kinds: dict[str, list] = {}  # "up (q4_k)": every block's copy; a QuantizedParts once, not its parts
    taken: list[str] = []
    for name, m in model.named_modules():
        if not isinstance(m, (QuantizedLinear, QuantizedParts, torch.nn.Linear)) or \
                any(name.startswith(t + ".") for t in taken):
            continue
        taken.append(name)
        short = name.rsplit(".", 1)[-1] if name.startswith("blocks.") else name
        kinds.setdefault(f"{short} ({getattr(m, 'format', 'float32')})", []).append(m)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    rows = ["where attnlab's decoding step goes, one thread, CPU clock, median of "
            f"{rounds} interleaved rounds; per matrix, every block's copy cycled",
            "| matrix (format) | in x out | copies | layer call, one row | read of the same bytes | call / read |",
            "|---|---|---|---|---|---|"]
    total = 0.0
    try:
        with torch.no_grad():
            for key, layers in kinds.items():
                k, n = layers[0].in_features, layers[0].out_features
                nbytes = [m.nbytes if hasattr(m, "nbytes") else m.weight.nbytes for m in layers]
                reads = [torch.ones(max(1, b // 4)) for b in nbytes]
                x = torch.randn(1, k)
                times = interleaved({"call": lambda x=x, layers=layers: [m(x) for m in layers],
                                     "read": lambda reads=reads: [r.sum() for r in reads]},
                                    warmup=1, repeats=rounds, clock="cpu")
                call = statistics.median(times["call"]) / len(layers)
                read = statistics.median(times["read"]) / len(layers)
                total += call * len(layers)
                rows.append(f"| {key} | {k} x {n} | {len(layers)} | {call * 1e6:.0f} us | {read * 1e6:.0f} us | "
                            f"{call / read:.2f}x |")
            step = step_costs({"step": model}, model.config.vocab_size, 16, rounds)["step"]
    finally:
        torch.set_num_threads(before)
    rows.append(f"one decoding step (default path, one thread, CPU clock): {step * 1e3:.1f} ms; the products above "
                f"one row each: {total * 1e3:.1f} ms ({total / step:.0%}); the rest (attention, norms, embedding, "
                f"the step's own work): {(step - total) * 1e3:.1f} ms")
    return rows


# ------------------------------------------------------------------------------------------------ main
def main(argv=None) -> int:
    from attnlab.benchmarks.common import header

    p = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.shapes", description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES)}")
    p.add_argument("--kinds", default=",".join(KINDS), help="llama-quantize presets, comma-separated "
                   f"(default {','.join(KINDS)})")
    p.add_argument("--rounds", type=int, default=2, help="rounds per file (llama-bench runs once more after them)")
    p.add_argument("--write-only", action="store_true", help="make (or find) the files and stop")
    p.add_argument("--where", action="store_true", help="also time each matrix kind against a read of its bytes")
    p.add_argument("--where-only", action="store_true", help="only that (no llama-bench, no table)")
    args = p.parse_args(argv)
    shapes = [s for s in args.shapes.split(",") if s]
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown or not shapes or not kinds or args.rounds < 1:
        p.error(f"--shapes takes {', '.join(SHAPES)} (got {', '.join(unknown) or 'none'}); --kinds at least one "
                "preset; --rounds at least 1")
    from attnlab.benchmarks.llama_files import find_tool

    if find_tool("llama-quantize", os.environ.get("ATTNLAB_LLAMA_QUANTIZE")) is None:
        print("llama-quantize is not built here (python -m attnlab.benchmarks.llama_cpp --build): nothing to time")
        return 0
    print(header("python -m attnlab.benchmarks.shapes " + " ".join(argv if argv is not None else sys.argv[1:])),
          flush=True)
    lines = []
    for name in shapes:
        made = files(name, kinds)
        if args.write_only:
            for path in made.values():
                print(f"{path}: {path.stat().st_size / 2**20:.0f} MB; {tensor_types(path)}", flush=True)
            continue
        if args.where_only:
            for path in made.values():
                import attnlab

                model, _ = attnlab.load(path)
                print(f"{path.name}: {tensor_types(path)}", flush=True)
                print("\n".join(where_time_goes(model.eval(), rounds=args.rounds)), flush=True)
                del model
                gc.collect()
            continue
        for path in made.values():
            if not lines:
                print("\n".join(table_head()), flush=True)
            lines += time_file(path, args.rounds, where=args.where)
    if lines:
        print("\nall files:\n" + "\n".join(table_head() + [x for x in lines if x.startswith("| ") and ".gguf" in x]),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
