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

`--baby-gpt` adds nanoGPT's baby GPT comparison (the target: attnlab's peak RSS <= 1.2x nanoGPT's):
`attnlab train gpt-char` at nanoGPT README's CPU settings (4 layers, 4 heads, width 128, block 64, batch 12:
gpt-char's defaults; nanoGPT's schedule: lr 1e-3 to 1e-4, warmup 100, beta2 0.99, evaluation every 250 steps,
where gpt-char's own lr is 2e-3; both models initialised as nanoGPT's model.py (nanogpt_init), so the two losses
compare) on the 1.1 MB text beside nanoGPT's prepare.py and
train.py's loop at that command's settings (the nano-gpt package's GPT, np.memmap batches, estimate_loss, ckpt.pt):
the resident size of each process at its start, after its imports and at its peak for one step, then
`--baby-runs` interleaved pairs of `--baby-steps` steps a side (2000: the README's full run) with each pair's
peak-RSS ratio, wall and CPU time and final val loss. `--only-baby-gpt` runs only that part.

    python -m attnlab.benchmarks.data              # 1.1 MB, 50 MB, 1 GB; both tokenizers; about 20 minutes on 1 core
    python -m attnlab.benchmarks.data --quick      # 1.1 MB both, 50 MB characters only
    python -m attnlab.benchmarks.data --only-baby-gpt                  # one step a side, 3 pairs: ~6 min on 1 core
    python -m attnlab.benchmarks.data --only-baby-gpt --baby-runs 1 --baby-steps 2000   # ~5 min on a quiet core
    python -m attnlab.benchmarks.data --prep-phases gpt-bpe --corpus-mb 30   # where the preparation peaks

`--prep-phases RECIPE` builds the recipe's task in this process (what `attnlab train` does before its first step:
reading and checking the corpus, training the tokenizer, tokenizing into an empty token store, the model, the
bigram baseline) on the newcomer benchmark's corpus of `--corpus-mb` MB, and gives each phase its own peak
resident memory (VmHWM reset as it starts), its resident memory at the start and end, and its CPU and wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import re
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
# the rest of that command and of config/train_shakespeare_char.py, as nanoGPT's train.py reads them
# (--max_iters=2000 --lr_decay_iters=2000 --eval_iters=20 --log_interval=1; eval_interval 250, lr 1e-3,
# min_lr 1e-4, beta2 0.99, warmup 100, weight decay 0.1, grad_clip 1.0, always_save_checkpoint False)
NANO = dict(eval_interval=250, eval_iters=20, lr=1e-3, min_lr=1e-4, beta2=0.99, warmup_iters=100,
            weight_decay=0.1, grad_clip=1.0)
# attnlab's settings for the same schedule (gpt-char's own default lr is 2e-3, its evaluation every 500 steps): the
# two runs then differ only in their code, so their losses can be compared (memory is compared "at the same loss")
SAME_AS_NANO = {"lr": str(NANO["lr"]), "min_lr_ratio": str(NANO["min_lr"] / NANO["lr"]), "beta2": str(NANO["beta2"]),
                "warmup": str(NANO["warmup_iters"]), "weight_decay": str(NANO["weight_decay"]),
                "grad_clip": str(NANO["grad_clip"]), "eval_every": str(NANO["eval_interval"]),
                "scaled_residual_init": "true"}  # nanoGPT model.py's init (see nanogpt_init)


def nanogpt_init(model, n_layer: int) -> None:
    """nanoGPT's model.py initialisation, applied to the nano-gpt package's GPT: every Linear N(0, 0.02) with zero
    bias, embeddings N(0, 0.02), the residual projections (c_proj) N(0, 0.02 / sqrt(2 n_layer)). Why: the package
    (a packaging of build-nanogpt) leaves its other Linear layers at torch's default (std ~0.051 at width 128) and
    scales c_proj by (2 n_layer)^-0.05 (std 0.018), so its baby GPT started from other weights than nanoGPT's and
    reached val 1.237 where attnlab, initialised as model.py, reached 1.379 on the same schedule
    (bench/RESULTS.md, 2026-11-28)."""
    import math

    import torch
    from torch import nn

    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            std = 0.02 / math.sqrt(2 * n_layer) if name.endswith("c_proj") else 0.02
            torch.nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)


def baby_attnlab(corpus: str, work: str, stage: str = "train", steps: str = "1") -> dict:
    """`attnlab train gpt-char` at the baby-GPT settings for `steps` steps, in this process, with the recipe's
    defaults otherwise (TensorBoard, the probe, evaluation every 500 steps and at the end, samples, loss.png, a
    checkpoint at the end); stage "build": only the recipe's build (corpus scan, tokenizer, token file, model,
    baselines), no training."""
    before = _status("VmRSS")
    from attnlab.training.run import run_train  # noqa: I001 (timed import)
    import torch

    torch.set_num_threads(1)
    after_imports = _status("VmRSS")
    os.environ["ATTNLAB_CACHE_DIR"] = str(Path(work) / "cache")
    keys = {"data": corpus, "steps": steps, "threads": "1", "d_ff": str(4 * BABY["d_model"]), "dropout": "0.0",
            **{k: str(v) for k, v in BABY.items()}, **SAME_AS_NANO}
    start, cpu = time.perf_counter(), time.process_time()
    result: dict = {}
    if stage == "build":
        from attnlab.training.recipes import get_recipe
        from attnlab.training.settings import resolve_params

        recipe = get_recipe("gpt-char")
        settings, params = resolve_params(recipe, keys)
        recipe.build({**params, "batch_size": settings.batch_size, "tokenizer": None,
                      "out_dir": str(Path(work) / "run-build")})
    else:  # the token file comes from the token store under `work` when an earlier child built it
        result = run_train("gpt-char", out=str(Path(work) / "run-train"), quiet=True, overwrite=True, overrides=keys)
    return {"start": before, "after_imports": after_imports, "peak": _status("VmHWM"),
            "seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu,
            "val_loss": result.get("eval", {}).get("val_loss")}


def baby_nanogpt(corpus: str, work: str, stage: str = "train", steps: str = "1") -> dict:
    """nanoGPT's shakespeare-char in its two processes: stage "prepare" is prepare.py (the whole text, stoi, a list
    of ids, uint16 train.bin / val.bin), stage "train" train.py's loop at the README's CPU settings with
    max_iters = lr_decay_iters = `steps`: np.memmap batches (get_batch), the model (the nano-gpt package's GPT,
    nanoGPT's model.py), AdamW in two groups, warmup + cosine, estimate_loss (eval_iters batches of each split)
    every eval_interval iterations from iteration 0, a ckpt.pt when the val loss improves after iteration 0,
    loss.item() every iteration; like train.py it runs iterations 0..max_iters."""
    before = _status("VmRSS")
    import math

    import numpy as np
    import torch

    from attnlab.benchmarks import peers

    torch.set_num_threads(1)
    # nano-gpt imports transformers (for from_pretrained), datasets and tiktoken (its data tools) at import time;
    # nanoGPT's own model.py and train.py import only torch and numpy, so they are left out here
    for name in ("transformers", "datasets", "tiktoken"):
        sys.modules.setdefault(name, peers.Absent(name))
    GPT, GPTConfig = peers.import_nanogpt()
    after_imports = _status("VmRSS")
    work_dir = Path(work)
    if stage == "prepare":
        data = Path(corpus).read_text(encoding="utf-8")
        chars = sorted(set(data))
        stoi = {ch: i for i, ch in enumerate(chars)}
        n = len(data)
        train_ids = [stoi[c] for c in data[: int(n * 0.9)]]
        val_ids = [stoi[c] for c in data[int(n * 0.9):]]
        np.array(train_ids, dtype=np.uint16).tofile(work_dir / "train.bin")
        np.array(val_ids, dtype=np.uint16).tofile(work_dir / "val.bin")
        (work_dir / "vocab_size").write_text(str(len(chars)))
        return {"start": before, "after_imports": after_imports, "peak": _status("VmHWM")}
    if not (work_dir / "train.bin").is_file():
        baby_nanogpt(corpus, work, "prepare")  # its own process in nanoGPT; here only when called alone
        _reset_peak()
    start, cpu = time.perf_counter(), time.process_time()
    block, batch, max_iters, c = BABY["seq_len"], BABY["batch_size"], int(steps), NANO

    def get_batch(split):  # train.py's: a fresh memmap per batch (its note: avoids a memory leak)
        data = np.memmap(work_dir / f"{split}.bin", dtype=np.uint16, mode="r")
        ix = torch.randint(len(data) - block, (batch,))
        x = torch.stack([torch.from_numpy(data[i:i + block].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block].astype(np.int64)) for i in ix])
        return x, y

    def get_lr(it):
        if it < c["warmup_iters"]:
            return c["lr"] * (it + 1) / (c["warmup_iters"] + 1)
        if it > max_iters:
            return c["min_lr"]
        ratio = (it - c["warmup_iters"]) / max(1, max_iters - c["warmup_iters"])
        return c["min_lr"] + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (c["lr"] - c["min_lr"])

    @torch.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for split in ("train", "val"):
            losses = torch.zeros(c["eval_iters"])
            for k in range(c["eval_iters"]):
                _, loss = model(*get_batch(split))
                losses[k] = loss.item()
            out[split] = losses.mean().item()
        model.train()
        return out

    config = GPTConfig(block_size=block, vocab_size=int((work_dir / "vocab_size").read_text()),
                       n_layer=BABY["n_layers"], n_head=BABY["n_heads"], n_embd=BABY["d_model"])
    model = GPT(config, tokenizer=None)
    nanogpt_init(model, BABY["n_layers"])
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": c["weight_decay"]},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=c["lr"], betas=(0.9, c["beta2"]))  # fused only on CUDA in train.py
    iter_num, best_val, losses = 0, 1e9, {}
    x, y = get_batch("train")
    while True:
        lr = get_lr(iter_num)
        for group in optimizer.param_groups:
            group["lr"] = lr
        if iter_num % c["eval_interval"] == 0:
            losses = estimate_loss()
            if losses["val"] < best_val:
                best_val = losses["val"]
                if iter_num > 0:
                    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                "iter_num": iter_num, "best_val_loss": best_val}, work_dir / "ckpt.pt")
        _, loss = model(x, y)
        x, y = get_batch("train")
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), c["grad_clip"])
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss.item()  # log_interval=1
        iter_num += 1
        if iter_num > max_iters:
            break
    return {"start": before, "after_imports": after_imports, "peak": _status("VmHWM"),
            "seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu, "val_loss": losses.get("val")}


def _baby_rows(corpus: Path, tmp: Path) -> None:
    print("\n# nanoGPT's baby GPT (4 layers, 4 heads, width 128, block 64, batch 12: nanoGPT README's CPU run, "
          "gpt-char's defaults), 1 thread; each row a fresh process; one step (nanoGPT: train.py's loop with "
          "max_iters=1: estimate_loss at iteration 0, iterations 0 and 1)")
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
            ("nanoGPT train.py, max_iters=1", "baby-nanogpt", [str(nano_work), "train"])]
    _child("baby-attnlab", str(corpus), str(attnlab_work), "build")  # warms attnlab_work's token store
    for label, kind, rest in rows:
        r = _child(kind, str(corpus), *rest)
        print(f"| {label} | {_mb(r['start'])} | {_mb(r['after_imports'])} | {_mb(r['peak'])} |", flush=True)


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _baby_compare(corpus: Path, tmp: Path, runs: int, steps: int) -> list[float]:
    """`runs` interleaved pairs (attnlab first in odd runs, nanoGPT first in even ones), each side in a fresh
    process with its data already prepared (attnlab: the token store; nanoGPT: prepare.py's files); returns the
    peak-RSS ratios attnlab / nanoGPT."""
    attnlab_work, nano_work = Path(tempfile.mkdtemp(dir=tmp)), Path(tempfile.mkdtemp(dir=tmp))
    _child("baby-attnlab", str(corpus), str(attnlab_work), "build")
    _child("baby-nanogpt", str(corpus), str(nano_work), "prepare")
    print(f"\n# baby GPT, {steps} step(s) a side, interleaved, 1 thread, peak RSS (VmHWM) of each process; "
          "attnlab: `attnlab train gpt-char` at this shape with nanoGPT's schedule (lr 1e-3 -> 1e-4, warmup 100, "
          "beta2 0.99, weight decay 0.1, clip 1.0, evaluation every 250 steps); nanoGPT: train.py's loop, "
          f"max_iters={steps}; time: the training call (data ready, imports done)")
    print("| run | load 1/5/15 min | attnlab peak MB | nanoGPT peak MB | ratio | attnlab wall s / CPU s | "
          "nanoGPT wall s / CPU s | attnlab val loss | nanoGPT val loss |")
    print("|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for run in range(1, runs + 1):
        load = _load()
        order = ["attnlab", "nanogpt"] if run % 2 else ["nanogpt", "attnlab"]
        got = {side: _child(f"baby-{side}", str(corpus), str(attnlab_work if side == "attnlab" else nano_work),
                            "train", str(steps)) for side in order}
        a, n = got["attnlab"], got["nanogpt"]
        ratios.append(a["peak"] / n["peak"])
        loss = {side: "-" if got[side]["val_loss"] is None else f"{got[side]['val_loss']:.4f}" for side in got}
        print(f"| {run} | {load} | {_mb(a['peak'])} | {_mb(n['peak'])} | {ratios[-1]:.3f}x | "
              f"{a['seconds']:.1f} / {a['cpu']:.1f} | {n['seconds']:.1f} / {n['cpu']:.1f} | {loss['attnlab']} | "
              f"{loss['nanogpt']} |", flush=True)
    print(f"ratio: max {max(ratios):.3f}x, min {min(ratios):.3f}x over {runs} runs (target <= 1.2x)")
    return ratios


# ------------------------------------------------------------------------------------------------ report
def _mb(n: float) -> str:
    return f"{n / 1e6:,.0f}"


# ------------------------------------------------------------------------------------------------ phases
def _status_mb() -> dict[str, float]:
    """VmRSS, VmHWM, RssAnon, RssFile of this process in MB (Linux /proc)."""
    with open("/proc/self/status") as f:
        text = f.read()
    return {key: int(re.search(rf"{key}:\s+(\d+)", text).group(1)) / 1024
            for key in ("VmRSS", "VmHWM", "RssAnon", "RssFile")}


def prep_phases(recipe_name: str, corpus_mb: float, tmp: Path) -> None:
    """--prep-phases: a text recipe's task built in this process on the newcomer benchmark's corpus (installed
    texts repeated to corpus_mb MB of .jsonl, in tmp, with an empty token store there), each phase of the build
    (reading and checking, the tokenizer, tokenizing, the model, the bigram baseline) with its own peak: VmHWM
    reset through /proc/self/clear_refs as it starts; resident memory at its start and end (anonymous and
    file-backed: the memory-mapped token file is file-backed) and its CPU time (every thread) beside the wall
    time. Linux only."""
    if not os.path.exists("/proc/self/clear_refs"):
        raise SystemExit("--prep-phases needs Linux's /proc/self/clear_refs to reset the peak per phase")
    os.environ["ATTNLAB_CACHE_DIR"] = str(tmp / "cache")  # an empty token store: nothing reused
    import torch  # noqa: F401  (imported before the first phase, as `attnlab train` has it)

    from attnlab.benchmarks.newcomer import write_corpus
    from attnlab.training.recipes.registry import get_recipe

    load = os.getloadavg()[0]
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} | load average {load:.1f} | "
          f"{os.cpu_count()} cores | {recipe_name}, {corpus_mb:g} MB corpus, empty token store", flush=True)
    corpus = write_corpus(tmp / "corpus.jsonl", int(corpus_mb * 1e6))
    print(f"corpus: {corpus['bytes'] / 1e6:.1f} MB, {corpus['records']:,} records", flush=True)
    rows = []

    @contextlib.contextmanager
    def phase(what: str):
        gc.collect()
        start = _status_mb()["VmRSS"]
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # VmHWM := VmRSS: the peak read at the end is this phase's own
        cpu, wall = time.process_time(), time.perf_counter()
        yield
        now = _status_mb()
        rows.append((what, start, now["VmHWM"], now["VmRSS"], now["RssAnon"], now["RssFile"],
                     time.process_time() - cpu, time.perf_counter() - wall))

    recipe = get_recipe(recipe_name)
    p = {**recipe.defaults(), "data": str(tmp / "corpus.jsonl"), "out_dir": str(tmp / "run"), "phase": phase,
         "status": lambda text: None, "tokenizer": None}
    before = _status_mb()["VmRSS"]
    task = recipe.build(p)
    print(f"resident after imports: {before:.0f} MB; bigram baseline {task.bigram:.6f}\n")
    print(f"{'phase':<58} {'start MB':>8} {'peak MB':>8} {'end MB':>7} {'anon':>6} {'file':>6} {'CPU s':>6} "
          f"{'wall s':>7}")
    for what, start, peak, end, anon, file, cpu, wall in rows:
        print(f"{what[:58]:<58} {start:8.0f} {peak:8.0f} {end:7.0f} {anon:6.0f} {file:6.0f} {cpu:6.1f} {wall:7.1f}")
    top = max(rows, key=lambda row: row[2])
    print(f"\npeak of the preparation: {top[2]:.0f} MB resident ({top[2] - before:.0f} MB above the {before:.0f} MB "
          f"after imports), in: {top[0]}")
    print(f"resident when the preparation ends: {rows[-1][3]:.0f} MB | load average now {os.getloadavg()[0]:.1f}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.data", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1.1 MB for both tokenizers, 50 MB for characters only")
    p.add_argument("--sizes", default="", help=f"comma-separated subset of {', '.join(SIZES)}")
    p.add_argument("--tokenizers", default="char,bpe", help="comma-separated subset of char, bpe")
    p.add_argument("--threads", type=int, default=1, help="RAYON_NUM_THREADS for both sides (default 1)")
    p.add_argument("--baby-gpt", action="store_true", help="also nanoGPT's baby-GPT peak-RSS comparison")
    p.add_argument("--only-baby-gpt", action="store_true", help="only the baby-GPT comparison (no token-file rows)")
    p.add_argument("--baby-runs", type=int, default=3, help="interleaved attnlab / nanoGPT pairs (default 3)")
    p.add_argument("--baby-steps", type=int, default=1,
                   help="training steps a side in those pairs (default 1; nanoGPT README's CPU run is 2000)")
    p.add_argument("--prep-phases", choices=["gpt-char", "gpt-bpe"], default=None,
                   help="only this: the recipe's data preparation phase by phase in one process, each phase's "
                        "own peak resident memory (the newcomer benchmark's corpus of --corpus-mb MB)")
    p.add_argument("--corpus-mb", type=float, default=30.0, help="--prep-phases' corpus size (default 30)")
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.prep_phases:
        with tempfile.TemporaryDirectory(prefix="attnlab-prep-phases-") as tmp:
            prep_phases(args.prep_phases, args.corpus_mb, Path(tmp))
        return 0
    if args.child:
        kind, *rest = args.child
        fn = {"attnlab": child_attnlab, "tokenizers": child_tokenizers, "baby-attnlab": baby_attnlab,
              "baby-nanogpt": baby_nanogpt}[kind]
        print(json.dumps(fn(*rest)))
        return 0
    if args.only_baby_gpt:
        with tempfile.TemporaryDirectory(prefix="attnlab-bench-baby-") as tmp:
            corpus = Path(tmp) / "baby.txt"
            make_corpus(corpus, SIZES["1.1MB"])
            print(f"# load average at start {_load()}; corpus: CPython docs, 1.1 MB", flush=True)
            if args.baby_steps == 1:
                _baby_rows(corpus, Path(tmp))
            _baby_compare(corpus, Path(tmp), args.baby_runs, args.baby_steps)
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
            _baby_compare(corpus, tmp, args.baby_runs, args.baby_steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
