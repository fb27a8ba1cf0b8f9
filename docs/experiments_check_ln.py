"""Is a stalled pre-LN run a bug in attnlab, or the setting? Train Hugging Face's GPT-2 beside it and see.

docs/experiments.md section 1 trains a 16-layer, d_model 64 pre-LN decoder on gpt-char without warmup. To rule
out a bug in attnlab's pre-LN path, this script trains, in lockstep on the very same batches, with the same
AdamW groups, warmup + cosine schedule and gradient clipping as `attnlab train gpt-char`:

  attnlab         the recipe's own model (seed 0, so its first step equals the CLI run's first step)
  hf-same-init    transformers' GPT2LMHeadModel (pre-LN, SDPA) holding a copy of those initial weights
  hf-own-init     GPT2LMHeadModel initialised by transformers itself: std 0.02, but the two residual
                  projections of each block (attn.c_proj, mlp.c_proj) at std 0.02 / sqrt(2 * n_layers)
  attnlab-scaled  attnlab's model with its residual projections (attn.out, ffn.down) re-drawn at that scale
  attnlab-nudged  attnlab's model with every weight multiplied by (1 + 1e-7 * noise): rounding-sized changes,
                  to show how far two float32 runs of one function drift apart (not run by default)

If attnlab and hf-same-init follow the same curve, the forward and backward pass are not the cause; comparing
them with the two scaled-init runs shows what the initialisation scale does. Each variant's metrics.jsonl is
written under --out in the trainer's format, so attnlab.training.trainer.plot_comparison can draw them.

    python docs/experiments_check_ln.py --steps 1500 --eval-every 250 --out /tmp/exp/check-ln \
        --jsonl docs/experiments/results/check_ln.jsonl
    python docs/experiments_check_ln.py --steps 1500 --eval-every 250 --variants attnlab-nudged \
        --out /tmp/exp/check-ln-nudge --reference /tmp/exp/check-ln/attnlab/metrics.jsonl \
        --jsonl docs/experiments/results/check_ln.jsonl

With --jsonl, one JSON line per variant is appended (evaluations only, no per-step dump): its val losses, its
first-step training loss and, against attnlab's run (the same invocation's, or --reference's metrics.jsonl), how
far the training losses drift apart: the largest |difference| over the first 30 steps, the first step where it
exceeds 1e-3 and 0.1, and the difference of the last val loss. This is a parity check on seed 0, not a verdict.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from attnlab.interop import hf_config_from, to_hf_state
from attnlab.training.optim import build_optimizer, build_scheduler
from attnlab.training.recipes import get_recipe
from attnlab.training.settings import resolve_params, seed_everything

VARIANTS = ("attnlab", "hf-same-init", "hf-own-init", "attnlab-scaled", "attnlab-nudged")


def build_task(overrides: dict[str, str], out: Path):
    """The gpt-char task exactly as `attnlab train gpt-char --out OUT key=value...` builds it (same seed order)."""
    recipe = get_recipe("gpt-char")
    settings, params = resolve_params(recipe, overrides)
    seed_everything(settings.seed)
    task = recipe.build({**params, "batch_size": settings.batch_size, "tokenizer": None, "out_dir": str(out)})
    return task, settings


def hf_model(config, state: dict[str, torch.Tensor] | None, seed: int):
    """GPT2LMHeadModel for attnlab's config; with `state` it holds those weights, else transformers' own init."""
    from transformers import GPT2Config, GPT2LMHeadModel

    hf_config = {k: v for k, v in hf_config_from(config).items() if k not in ("model_type", "architectures")}
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(**hf_config, attn_implementation="sdpa"))
    if state is not None:
        missing, unexpected = model.load_state_dict(state, strict=False)
        # the tied lm_head is written once (as wte); anything else missing would be a mapping error
        left = [k for k in missing if k != "lm_head.weight"]
        if left or unexpected:
            raise RuntimeError(f"weights did not map onto GPT2LMHeadModel: missing {left}, unexpected {unexpected}")
    if model.config._attn_implementation != "sdpa":
        raise RuntimeError(f"GPT-2 runs {model.config._attn_implementation!r} attention, expected 'sdpa'")
    return model


def scale_residual_projections(model, n_layers: int, seed: int) -> None:
    """GPT-2's depth-scaled init on attnlab's two residual projections per block (attn.out, ffn.down)."""
    std = 0.02 / math.sqrt(2 * n_layers)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for block in model.blocks:
            for linear in (block.attn.out, block.ffn.down):
                linear.weight.copy_(torch.randn(linear.weight.shape, generator=gen) * std)


def nudge(model, seed: int, scale: float = 1e-7) -> None:
    """Multiply every parameter by (1 + scale * N(0, 1)): a difference the size of float32 rounding."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.mul_(1 + scale * torch.randn(param.shape, generator=gen))


def summary(name: str, metrics: Path, reference: Path | None, s) -> dict:
    """One variant's JSON line: its evaluations and, against the reference run (attnlab), the drift."""
    rows = [json.loads(line) for line in open(metrics)]
    row = {"variant": name, "seed": s.seed, "steps": s.steps, "warmup": s.warmup, "lr": s.lr,
           "grad_clip": s.grad_clip, "first_loss": rows[0]["loss"],
           "val": [[r["step"], r["val_loss"]] for r in rows if "val_loss" in r]}
    if reference is None or name == "attnlab":
        return row
    ref = [json.loads(line) for line in open(reference)]
    diff = [abs(a["loss"] - b["loss"]) for a, b in zip(rows, ref, strict=True)]  # step i+1's training loss

    def first_above(threshold: float) -> int | None:
        return next((i + 1 for i, d in enumerate(diff) if d > threshold), None)

    ref_val = [r["val_loss"] for r in ref if "val_loss" in r]
    return {**row, "drift_vs_attnlab": {"max_abs_diff_first_30_steps": max(diff[:30]),
                                        "first_step_above_1e-3": first_above(1e-3),
                                        "first_step_above_0.1": first_above(0.1),
                                        "final_val_diff": row["val"][-1][1] - ref_val[-1]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--norm-placement", default="pre", choices=["pre"])  # GPT-2 is pre-LN only
    parser.add_argument("--variants", default=",".join(VARIANTS[:4]), help=f"comma-separated subset of {VARIANTS}")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="/tmp/exp/check-ln")
    parser.add_argument("--jsonl", default="", help="append one JSON line per variant (val losses, drift) here")
    parser.add_argument("--reference", default="", help="attnlab's metrics.jsonl from an earlier run, to measure "
                        "the drift against when attnlab is not among --variants")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    if unknown := sorted(set(names) - set(VARIANTS)):
        parser.error(f"unknown variants {unknown}; allowed: {', '.join(VARIANTS)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    overrides = dict(n_layers="16", d_model="64", n_heads="4", d_ff="256", norm_placement=args.norm_placement,
                     warmup=str(args.warmup), steps=str(args.steps), seed="0")
    task, s = build_task(overrides, out / "data-dir")
    config = task.model.config
    models = {}
    for name in names:
        if name == "attnlab":
            models[name] = task.model
        elif name == "hf-same-init":
            models[name] = hf_model(config, to_hf_state(task.model), seed=0)
        elif name == "hf-own-init":
            models[name] = hf_model(config, None, seed=0)
        else:  # a fresh copy of the recipe model, residual projections re-drawn or every weight nudged
            copy, _ = build_task(overrides, out / "data-dir")
            if name == "attnlab-scaled":
                scale_residual_projections(copy.model, config.n_layers, seed=1)
            else:
                nudge(copy.model, seed=1)
            models[name] = copy.model
    opts = {n: build_optimizer(m, s.lr, s.weight_decay, (s.beta1, s.beta2)) for n, m in models.items()}
    scheds = {n: build_scheduler(o, s.warmup, s.steps, s.min_lr_ratio) for n, o in opts.items()}
    logs = {n: (out / n).mkdir(exist_ok=True) or open(out / n / "metrics.jsonl", "w") for n in models}
    print(f"settings: lr {s.lr} warmup {s.warmup} steps {s.steps} clip {s.grad_clip} wd {s.weight_decay} "
          f"betas ({s.beta1}, {s.beta2}) batch {s.batch_size}; params {task.model.num_parameters():,}; "
          f"bigram val {task.bigram:.3f}", flush=True)

    generator = torch.Generator().manual_seed(s.seed)  # the trainer's batch generator, same seed
    started, last = time.perf_counter(), {}
    for step in range(1, s.steps + 1):
        batch = task.train_batch(generator, s.batch_size)  # one batch, every model sees it
        for name, model in models.items():
            model.train()
            logits = model(batch["inputs"]).logits  # (batch, seq, vocab)
            loss = F.cross_entropy(logits.flatten(0, 1).float(), batch["targets"].flatten())
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), s.grad_clip if s.grad_clip > 0 else math.inf)
            lr = opts[name].param_groups[0]["lr"]
            opts[name].step()
            scheds[name].step()
            opts[name].zero_grad(set_to_none=True)
            record = {"step": step, "loss": float(loss.detach()), "lr": lr, "grad_norm": float(norm)}
            if step % args.eval_every == 0 or step == s.steps:
                model.eval()
                with torch.no_grad():
                    record.update(task.evaluate(model))
            last[name] = record["loss"]
            logs[name].write(json.dumps(record) + "\n")
            logs[name].flush()
        if step == 1 or step % 50 == 0:
            losses = " ".join(f"{n} {value:.4f}" for n, value in last.items())
            print(f"step {step} ({time.perf_counter() - started:.0f}s): {losses}", flush=True)
    for log in logs.values():
        log.close()
    if args.jsonl:
        ref = out / "attnlab" / "metrics.jsonl" if "attnlab" in models else Path(args.reference) if args.reference \
            else None
        with open(args.jsonl, "a") as f:
            for name in models:
                f.write(json.dumps(summary(name, out / name / "metrics.jsonl", ref, s)) + "\n")
    print("val loss by step:")
    for name in models:
        rows = [json.loads(line) for line in open(out / name / "metrics.jsonl")]
        vals = " ".join(f"@{r['step']} {r['val_loss']:.3f}" for r in rows if "val_loss" in r)
        print(f"  {name:15s} {vals}")


if __name__ == "__main__":
    main()
