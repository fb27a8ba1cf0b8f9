"""Token-file preparation: peak memory and throughput against the tokenizers library called directly.

The corpus is real text repeated to size: CPython's documentation (what gpt-char and gpt-bpe train on by default,
present on every install) written to a .txt file of 1.1 MB, 50 MB and (not with --quick) 1 GB. For each size and
tokenizer (gpt-char's character vocabulary, gpt-bpe's byte-level BPE with 2048 ids), two fresh processes:

- attnlab: `TokenFile.prepare(CorpusSource(file), tokenizer, folder)`: the scan pass (fingerprint, bad input),
  the streaming encode, the shards and the split into train.bin / val.bin, from a cold token store;
- tokenizers: the same file read line by line into the same chunk and batch sizes, `encode_batch_fast` per
  batch, the ids counted (nothing written): the library's own speed in bounded batches.

Reported: MB of text per second (wall time), the ratio attnlab / tokenizers (target >= 0.8; for the character
vocabulary attnlab uses a table lookup, target >= 50 MB/s; the library's own character run is skipped past 50 MB,
it runs at ~1 MB/s), the same per CPU-second of the process (what a free core would give on a loaded machine),
the process's resident size before preparation and its peak during it (VmHWM reset just before; target:
peak - before <= 300 MB at every size). RAYON_NUM_THREADS sets the tokenizers library's threads: 1 by default
(the comparison), `--threads N` for more (the count is printed).

`--baby-gpt` adds nanoGPT's baby GPT comparison: `attnlab train gpt-char` at nanoGPT README's CPU settings
(4 layers, 4 heads, width 128, block 64, batch 12: gpt-char's defaults; 1 step) on the 1.1 MB text beside
nanoGPT's prepare.py and one step of its train.py (the nano-gpt package's GPT, np.memmap batches): the resident
size of each process at its start, after its imports and at its peak.

    python -m attnlab.benchmarks.data              # 1.1 MB, 50 MB, 1 GB; both tokenizers; about 20 minutes on 1 core
    python -m attnlab.benchmarks.data --quick      # 1.1 MB both, 50 MB characters only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = {"1.1MB": 1_100_000, "50MB": 50_000_000, "1GB": 1_000_000_000}
BUDGET_MB = 300


def _status(field: str) -> int:
    """A VmRSS / VmHWM figure of this process in bytes (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        return True
    except OSError:
        return False


def make_corpus(path: Path, size: int) -> int:
    """CPython's docs repeated (whole copies, then lines) to about `size` bytes; returns the bytes written."""
    from attnlab.data.corpora import python_docs

    text = python_docs().encode("utf-8")
    written = 0
    with open(path, "wb") as f:
        while written + len(text) <= size:
            f.write(text)
            written += len(text)
        rest = text[: size - written]
        rest = rest[: rest.rfind(b"\n") + 1]
        f.write(rest)
        written += len(rest)
    return written


def make_tokenizers(folder: Path) -> dict[str, Path]:
    from attnlab.data.corpora import python_docs
    from attnlab.data.streaming import paragraphs_of
    from attnlab.data.tokenizers import char_tokenizer, train_bpe

    text = python_docs()
    out = {"char": folder / "char", "bpe": folder / "bpe"}
    char_tokenizer(text, ["[UNK]"]).save(out["char"])  # what gpt-char builds
    train_bpe(paragraphs_of([text]), 2048).save(out["bpe"])  # what gpt-bpe builds
    return out


# ------------------------------------------------------------------------------------------------ children
def child_attnlab(corpus: str, tokenizer: str, work: str) -> dict:
    from attnlab.data.sources import CorpusSource
    from attnlab.data.token_file import TokenFile
    from attnlab.data.tokenizers import load_tokenizer

    os.environ["ATTNLAB_CACHE_DIR"] = str(Path(work) / "cache")
    tok = load_tokenizer(tokenizer)
    before = _status("VmRSS")
    reset = _reset_peak()
    start, cpu = time.perf_counter(), time.process_time()
    tf, _ = TokenFile.prepare(CorpusSource(corpus), tok, Path(work) / "data", 0.1, progress=False)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "cpu": time.process_time() - cpu, "before": before, "peak": _status("VmHWM"),
            "reset": reset, "n_tokens": tf.n_tokens("train") + tf.n_tokens("val")}


def child_tokenizers(corpus: str, tokenizer: str, work: str) -> dict:
    """The library on its own: lines joined into CHUNK_CHARS chunks, BATCH_CHARS per encode_batch_fast call."""
    from tokenizers import Tokenizer

    from attnlab.data import streaming

    hf = Tokenizer.from_file(str(Path(tokenizer) / "tokenizer.json"))
    encode = getattr(hf, "encode_batch_fast", None) or hf.encode_batch
    before = _status("VmRSS")
    reset = _reset_peak()
    start, cpu = time.perf_counter(), time.process_time()
    n_tokens, chunk, chunk_len, batch, batch_len = 0, [], 0, [], 0
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            chunk.append(line)
            chunk_len += len(line)
            if chunk_len >= streaming.CHUNK_CHARS:
                batch.append("".join(chunk))
                batch_len += chunk_len
                chunk, chunk_len = [], 0
                if batch_len >= streaming.BATCH_CHARS:
                    n_tokens += sum(len(e.ids) for e in encode(batch, add_special_tokens=False))
                    batch, batch_len = [], 0
    if chunk:
        batch.append("".join(chunk))
    if batch:
        n_tokens += sum(len(e.ids) for e in encode(batch, add_special_tokens=False))
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "cpu": time.process_time() - cpu, "before": before, "peak": _status("VmHWM"),
            "reset": reset, "n_tokens": n_tokens}


def _child(kind: str, *args: str, threads: int = 1) -> dict:
    env = {**os.environ, "RAYON_NUM_THREADS": str(threads), "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "true"}
    proc = subprocess.run([sys.executable, "-m", "attnlab.benchmarks.data", "--child", kind, *args],
                          capture_output=True, text=True, env=env)
    if proc.returncode:
        raise RuntimeError(f"{kind} child failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------------ baby GPT
# nanoGPT README's CPU "baby GPT" (shakespeare_char on a laptop): --block_size=64 --batch_size=12 --n_layer=4
# --n_head=4 --n_embd=128 --dropout=0.0; gpt-char's defaults are the same shape
BABY = dict(n_layers=4, n_heads=4, d_model=128, seq_len=64, batch_size=12)


def baby_attnlab(corpus: str, work: str, stage: str = "train") -> dict:
    """`attnlab train gpt-char` at the baby-GPT settings for one step, in this process; stage "build": only the
    recipe's build (corpus scan, tokenizer, token file, model, baselines), no training."""
    before = _status("VmRSS")
    from attnlab.training.run import run_train  # noqa: I001 (timed import)
    import torch

    torch.set_num_threads(1)
    after_imports = _status("VmRSS")
    os.environ["ATTNLAB_CACHE_DIR"] = str(Path(work) / "cache")
    keys = {"data": corpus, "steps": "1", "eval_every": "0", "plot": "false", "threads": "1", "sample_tokens": "1",
            "d_ff": str(4 * BABY["d_model"]), "dropout": "0.0", **{k: str(v) for k, v in BABY.items()}}
    if stage == "build":
        from attnlab.training.recipes import get_recipe
        from attnlab.training.settings import resolve_params

        recipe = get_recipe("gpt-char")
        settings, params = resolve_params(recipe, keys)
        recipe.build({**params, "batch_size": settings.batch_size, "tokenizer": None,
                      "out_dir": str(Path(work) / "run-build")})
    else:
        run_train("gpt-char", out=str(Path(work) / "run-train"), quiet=True, overrides=keys)
    return {"start": before, "after_imports": after_imports, "peak": _status("VmHWM")}


def baby_nanogpt(corpus: str, work: str, stage: str = "train") -> dict:
    """nanoGPT's shakespeare-char in its two processes: stage "prepare" is prepare.py (the whole text, stoi, a list
    of ids, uint16 train.bin / val.bin), stage "train" one step of train.py: np.memmap batches (get_batch), the
    model (the nano-gpt package's GPT, nanoGPT's model.py), AdamW."""
    before = _status("VmRSS")
    import numpy as np
    import torch

    from attnlab.benchmarks import peers

    torch.set_num_threads(1)
    # nano-gpt imports transformers (for from_pretrained), datasets and tiktoken (its data tools) at import time;
    # nanoGPT's own model.py and train.py import only torch and numpy, so they are left out here
    for name in ("transformers", "datasets", "tiktoken"):
        sys.modules.setdefault(name, peers._Absent(name))
    GPT, GPTConfig = peers._import_nanogpt()
    after_imports = _status("VmRSS")
    if stage == "prepare":
        data = Path(corpus).read_text(encoding="utf-8")
        chars = sorted(set(data))
        stoi = {ch: i for i, ch in enumerate(chars)}
        n = len(data)
        train_ids = [stoi[c] for c in data[: int(n * 0.9)]]
        val_ids = [stoi[c] for c in data[int(n * 0.9):]]
        np.array(train_ids, dtype=np.uint16).tofile(Path(work) / "train.bin")
        np.array(val_ids, dtype=np.uint16).tofile(Path(work) / "val.bin")
        (Path(work) / "vocab_size").write_text(str(len(chars)))
        return {"start": before, "after_imports": after_imports, "peak": _status("VmHWM")}
    if not (Path(work) / "train.bin").is_file():
        baby_nanogpt(corpus, work, "prepare")  # its own process in nanoGPT; here only when called alone
        _reset_peak()
    train = np.memmap(Path(work) / "train.bin", dtype=np.uint16, mode="r")
    block, batch = BABY["seq_len"], BABY["batch_size"]
    ix = torch.randint(len(train) - block, (batch,))
    x = torch.stack([torch.from_numpy(train[i:i + block].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(train[i + 1:i + 1 + block].astype(np.int64)) for i in ix])
    config = GPTConfig(block_size=block, vocab_size=int((Path(work) / "vocab_size").read_text()),
                       n_layer=BABY["n_layers"], n_head=BABY["n_heads"], n_embd=BABY["d_model"])
    model = GPT(config, tokenizer=None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    _, loss = model(x, y)
    loss.backward()
    optimizer.step()
    return {"start": before, "after_imports": after_imports, "peak": _status("VmHWM")}


def _baby_rows(corpus: Path, tmp: Path) -> None:
    print("\n# nanoGPT's baby GPT (4 layers, 4 heads, width 128, block 64, batch 12: nanoGPT README's CPU run, "
          "gpt-char's defaults), one training step on 1.1 MB, 1 thread; each row a fresh process")
    print("| process | RSS at start MB | after imports MB | peak MB |")
    print("|---|---|---|---|")
    attnlab_work, nano_work = Path(tempfile.mkdtemp(dir=tmp)), Path(tempfile.mkdtemp(dir=tmp))
    rows = [("attnlab: recipe build only (scan, tokenizer, token file, model, bigram)", "baby-attnlab",
             [str(Path(tempfile.mkdtemp(dir=tmp))), "build"]),
            ("attnlab train gpt-char steps=1 (whole command, token file already built)", "baby-attnlab",
             [str(attnlab_work), "train"]),
            ("attnlab train gpt-char steps=1 (whole command, cold)", "baby-attnlab",
             [str(Path(tempfile.mkdtemp(dir=tmp))), "train"]),
            ("nanoGPT prepare.py", "baby-nanogpt", [str(nano_work), "prepare"]),
            ("nanoGPT train.py, one step", "baby-nanogpt", [str(nano_work), "train"])]
    _child("baby-attnlab", str(corpus), str(attnlab_work), "build")  # warms attnlab_work's token store
    for label, kind, rest in rows:
        r = _child(kind, str(corpus), *rest)
        print(f"| {label} | {_mb(r['start'])} | {_mb(r['after_imports'])} | {_mb(r['peak'])} |", flush=True)


# ------------------------------------------------------------------------------------------------ report
def _mb(n: float) -> str:
    return f"{n / 1e6:,.0f}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.data", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1.1 MB for both tokenizers, 50 MB for characters only")
    p.add_argument("--sizes", default="", help=f"comma-separated subset of {', '.join(SIZES)}")
    p.add_argument("--tokenizers", default="char,bpe", help="comma-separated subset of char, bpe")
    p.add_argument("--threads", type=int, default=1, help="RAYON_NUM_THREADS for both sides (default 1)")
    p.add_argument("--baby-gpt", action="store_true", help="also nanoGPT's baby-GPT peak-RSS comparison")
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        fn = {"attnlab": child_attnlab, "tokenizers": child_tokenizers, "baby-attnlab": baby_attnlab,
              "baby-nanogpt": baby_nanogpt}[kind]
        print(json.dumps(fn(*rest)))
        return 0
    sizes = [s for s in args.sizes.split(",") if s] or (["1.1MB", "50MB"] if args.quick else list(SIZES))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"# token-file preparation; tokenizers threads (RAYON_NUM_THREADS) = {args.threads} of {cores} allowed "
          f"cores; corpus: CPython docs repeated; wall time; fresh process per row", flush=True)
    with tempfile.TemporaryDirectory(prefix="attnlab-bench-data-") as tmp:
        tmp = Path(tmp)
        toks = make_tokenizers(tmp / "tok")
        print("| corpus | tokenizer | attnlab MB/s | tokenizers MB/s | ratio | attnlab MB per CPU-s | "
              "ratio per CPU-s | RSS before MB | peak MB | peak - before MB | tokens (attnlab / tokenizers) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for size in sizes:
            corpus = tmp / f"corpus-{size}.txt"
            n_bytes = make_corpus(corpus, SIZES[size])
            for name in [t for t in ("char", "bpe") if t in args.tokenizers.split(",")]:
                if args.quick and name == "bpe" and size != "1.1MB":
                    continue
                work = Path(tempfile.mkdtemp(dir=tmp))
                ours = _child("attnlab", str(corpus), str(toks[name]), str(work), threads=args.threads)
                # the library's character vocabulary runs at ~1 MB/s: past 50 MB its row would take most of an hour,
                # and the character target is absolute (>= 50 MB/s)
                skip_peer = name == "char" and SIZES[size] > SIZES["50MB"]
                peer = None if skip_peer else _child("tokenizers", str(corpus), str(toks[name]), str(work),
                                                     threads=args.threads)
                ours_rate = n_bytes / ours["seconds"]
                peer_rate = n_bytes / peer["seconds"] if peer else None
                grow = ours["peak"] - ours["before"]
                peer_tokens = f"{peer['n_tokens']:,}" if peer else "-"
                cpu_ratio = f"{peer['cpu'] / ours['cpu']:.2f}x" if peer else "-"  # >1: attnlab needs less CPU
                print(f"| {size} | {name} | {ours_rate / 1e6:.1f} | "
                      f"{f'{peer_rate / 1e6:.1f}' if peer else 'not run'} | "
                      f"{f'{ours_rate / peer_rate:.2f}x' if peer else '-'} | {n_bytes / ours['cpu'] / 1e6:.1f} | "
                      f"{cpu_ratio} | "
                      f"{_mb(ours['before'])} | "
                      f"{_mb(ours['peak'])} | "
                      f"{_mb(grow)}{'' if grow <= BUDGET_MB * 1e6 else ' (over ' + str(BUDGET_MB) + ')'} | "
                      f"{ours['n_tokens']:,} / {peer_tokens} |", flush=True)
                subprocess.run(["rm", "-rf", str(work)], check=False)
            corpus.unlink()
        if args.baby_gpt:
            corpus = tmp / "baby.txt"
            make_corpus(corpus, SIZES["1.1MB"])
            _baby_rows(corpus, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
