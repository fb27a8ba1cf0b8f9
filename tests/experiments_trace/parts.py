"""The traced parts of docs/experiments.md and docs/experiments_vit_grid.md, and what each renders from results.

A traced part is a section (found by its heading), a row of the table at the top (found by its number) or a
paragraph. For each, a Trace names the results files (JSON lines in docs/experiments/results/), the table rows it
must contain verbatim (rendered here from the results), derived values its text quotes (ratios, gaps, means) and
the settings it prints that are not results, with why. Which value each printed number is, in order, is in
bindings.tsv beside this module (see check.py); this module only computes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
RESULTS = DOCS / "experiments" / "results"


@dataclass
class Trace:
    part: str  # "## 10." (a section heading's start), "| 10 |" (a row of the top table) or "**Re-measured"
    # (a paragraph's start: a traced paragraph inside a section whose other numbers are not yet traced)
    results: str | tuple[str, ...]  # file name(s) in docs/experiments/results/
    rows: Callable[[list[dict]], list[str]] | None = None  # lines the part must contain, rendered from results
    extra: Callable[[list[dict]], list[float]] | None = None  # derived values the part may print (ratios ...)
    allowed: dict[str, str] = field(default_factory=dict)  # number, or a phrase around it -> why it is no result
    doc: str = "experiments.md"  # the page in docs/ the part is in
    end: str = ""  # where the part ends instead (its first occurrence after the start): for a part of a section
    # that other, separately traced or untraced parts follow
    prefer_extra: bool = False  # bind.py binds a number to a derived value before a results value that prints
    # the same: for parts whose text quotes ranges (a min and a max over layers), not one line's value


def _load(names: str | tuple[str, ...]) -> list[dict]:
    names = (names,) if isinstance(names, str) else names
    return [json.loads(line) for name in names for line in (RESULTS / name).read_text().splitlines() if line.strip()]


END_OF_PAGE = "<end of page>"  # a Trace's end: the part runs to the last line of its page


def _part(text: str, start: str, stop: str = "") -> str:
    if start.startswith("|"):
        top = text[:text.index("\n## ")]  # the table at the top, before the first section
        rows = [line for line in top.splitlines() if line.startswith(start)]
        assert len(rows) == 1, f"table row {start!r}: found {len(rows)}"
        return rows[0]
    begin = text.index("\n" + start) + 1
    if stop == END_OF_PAGE:
        return text[begin:]
    end = text.find(stop or ("\n\n" if start.startswith("**") else "\n## "), begin)
    assert not stop or end != -1, f"part {start!r}: its end {stop!r} is not in the text after it"
    return text[begin:end if end != -1 else len(text)]


def _heads_cost_rows(rows: list[dict]) -> list[str]:
    by = {(r["n"], r["h"]): r for r in rows}
    out = []
    for h in (2, 4, 8, 16, 32):
        a, b = by[(256, h)], by[(1024, h)]

        def cell(r, path):
            q = r[f"ratio_{path}"]
            return f"{q['median']:.2f}x ({q['p10']:.2f}-{q['p90']:.2f})"

        out.append(f"| {h} | {256 // h} | {a['flops_explicit'] / 1e9:.3f} / {a['flops_sdpa'] / 1e9:.3f} "
                   f"| {cell(a, 'sdpa')} / {cell(b, 'sdpa')} | {cell(a, 'explicit')} / {cell(b, 'explicit')} |")
    return out


def _gpt2_rows(rows: list[dict]) -> list[str]:
    return [f"| {r['measured']:,} | {r['closed_form']:,} | {r['biases']:,} | {r['norms']:,} | {r['untied_head']:,} |"
            for r in rows]


def _gpt2_extra(rows: list[dict]) -> list[float]:
    share = [100 * (r["biases"] + r["norms"]) / r["measured"] for r in rows]  # what the closed form misses, %
    return [*share, rows[0]["measured"] / 1e6, rows[1]["measured"] / 1e6]


def _tokenizer_rows(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        out.append(f"| {r['vocab_size']} | {r['tokens_per_char']} | {r['tokens_per_word']} | {r['passage_tokens']} "
                   f"| {r['attn_flops'] / 1e9:.3f} | {r['proj_flops'] / 1e9:.3f} | {r['score_bytes'] / 2**20:.1f} "
                   f"| {r['attn_flops_vs_bpe']}x |")
    return out


def _meanings_rows(rows: list[dict]) -> list[str]:
    out = []
    for r in rows[:2]:
        out.append(f"| {r['paraphrase_mean']} ({r['paraphrase_min']}-{r['paraphrase_max']}) "
                   f"| {r['unrelated_mean']}, {r['unrelated_p90']}, {r['unrelated_max']} "
                   f"| {r['paraphrases_above_every_unrelated']} / {r['pairs']} "
                   f"| {r['nearest_is_paraphrase']} / {r['sentences']} |")
    return out


def _efficient_rows(rows: list[dict]) -> list[str]:
    by = {(r["n"], r["variant"]): r for r in rows}
    out = []
    for n in sorted({r["n"] for r in rows}):
        full = by[(n, "full")]
        cells = [f"{full['flops'] / 1e9:.3f}, {full['ms']['median']:.1f} ms"]
        for variant in ("local", "strided", "linear", "hierarchical", "multilevel"):
            r = by[(n, variant)]
            t = r["time_vs_full"]
            cells.append(f"{r['flops_vs_full']} / {t['median']:.3f} ({t['p10']:.3f}-{t['p90']:.3f})")
        out.append(f"| {n} | " + " | ".join(cells) + " |")
    return out


def _efficient_exponents(rows: list[dict]) -> list[float]:
    """The exponent p of FLOPs ~ n^p per variant: on each doubling of n, fitted over all n (least squares on
    log2-log2), and the share of full attention kept per doubling."""
    flops = {(r["n"], r["variant"]): r["flops"] for r in rows}
    shares = {(r["n"], r["variant"]): r["flops_vs_full"] for r in rows}
    ns = sorted({r["n"] for r in rows})
    xs = [math.log2(n) for n in ns]
    out = []
    for variant in sorted({r["variant"] for r in rows}):
        ys = [math.log2(flops[(n, variant)]) for n in ns]
        out += [y1 - y0 for y0, y1 in pairwise(ys)]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        out.append(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs))
        out += [shares[(b, variant)] / shares[(a, variant)] for a, b in pairwise(ns)]
    return out


def _ln_warmup_rows(rows: list[dict]) -> list[str]:
    def runs(placement: str) -> list[dict]:
        return sorted((r for r in rows if r["placement"] == placement and r["warmup"] == 0), key=lambda r: r["seed"])

    pre, post = runs("pre"), runs("post")
    return [" / ".join(f"{r['first_loss']:.4f}" for r in pre), " / ".join(f"{r['first_loss']:.4f}" for r in post),
            " / ".join(f"{r['grad_norm_median']:.3f}" for r in post),
            " / ".join(f"{100 * r['clipped_fraction']:.1f}%" for r in post),
            " / ".join(f"{r['grad_norm_median']:.3f}" for r in pre)]


def _ln_geometry_rows(rows: list[dict]) -> list[str]:
    return [f"| {r['model']} {r['layer']} | {r['key_cos_ones_median']} ({r['key_cos_ones_max']}) "
            f"| {r['key_norm_over_sqrt_d_median']} ({r['key_norm_over_sqrt_d_min']}-{r['key_norm_over_sqrt_d_max']}) "
            f"| {r['query_cos_ones_median']} ({r['query_cos_ones_max']}) | {r['random_cos_ones_median']} "
            f"| {r['head_keys']:,} | {r['never_top']:,} | {r['never_above_0.1']:,} | {r['unselectable_lp']} |"
            for r in rows]


def near_orthogonal(r: dict) -> bool:
    """A layer's keys are near-orthogonal to the all-ones direction when their median |cos| with it is below half
    a random direction's (gpt-char's layers: 0.0036-0.0053 against 0.0569-0.0605)."""
    return r["key_cos_ones_median"] < r["random_cos_ones_median"] / 2


def _ln_geometry_extra(rows: list[dict]) -> list[float]:
    """The ranges section 15 and row 15 quote, over a model's layers: gpt-char's key |cos| with 1 (min, max) and a
    random direction's (mean); MiniLM's near-orthogonal layers (how many, of how many); its other layers' key
    |cos| (min, max) and a random direction's there (min, max); key norm / sqrt(d), gpt-char's mean, MiniLM's
    (min, max); query |cos| with 1, gpt-char's median (min, max), MiniLM's median and largest (max); keys never
    any query's top key, gpt-char (min, max, of how many), MiniLM (min, max, of how many)."""
    gpt, mini = ([r for r in rows if r["model"] == m] for m in ("gpt-char", "minilm"))
    other = [r for r in mini if not near_orthogonal(r)]

    def span(rs, key):
        return [min(r[key] for r in rs), max(r[key] for r in rs)]

    return [*span(gpt, "key_cos_ones_median"), sum(r["random_cos_ones_median"] for r in gpt) / len(gpt),
            sum(near_orthogonal(r) for r in mini), len(mini),
            *span(other, "key_cos_ones_median"), *span(other, "random_cos_ones_median"),
            sum(r["key_norm_over_sqrt_d_median"] for r in gpt) / len(gpt), *span(mini, "key_norm_over_sqrt_d_median"),
            *span(gpt, "query_cos_ones_median"), max(r["query_cos_ones_median"] for r in mini),
            max(r["query_cos_ones_max"] for r in mini),
            *span(gpt, "never_top"), gpt[0]["head_keys"], *span(mini, "never_top"), mini[0]["head_keys"]]


def _explanation_rows(rows: list[dict]) -> list[str]:
    return [f"| {r['heads']} | {r['cases']} | {r['pairs']:,} | {r['rho_median']} ({r['rho_p10']} to {r['rho_p90']}) "
            f"| {r['head_median_min']} to {r['head_median_max']} | {r['heads_median_above_0.5']} | {r['top_agree']} |"
            for r in rows if r.get("summary") and "rho_median" in r] + _explanation_null_rows(rows)


_EXPLANATION_FILES = ("attention_explanation.jsonl", "attention_explanation_null.jsonl",
                      "attention_explanation_null_seed1.jsonl")  # section 14's measurement, its null's two seeds


def _explanation_null_rows(rows: list[dict]) -> list[str]:
    """Section 14's second table: the top key against the mass-matched null (attention_explanation_null.jsonl)."""
    lines = sorted((r for r in rows if r.get("summary") and "matched_pairs" in r),
                   key=lambda r: (r["model"], r["seed"]))
    return [f"| {r['model']} | {r['seed']} | {r['pairs']:,} | {r['matched_pairs']:,} | {r['above_null_median']} "
            f"| {r['beat_share_median']} ({r['beat_share_p10']} to {r['beat_share_p90']}) "
            f"| {r['top_agree_matched']} / {r['null_top_agree_matched']} "
            f"| {r['top_agree_unmatched']} ({r['unmatched_pairs']:,} pairs) |" for r in lines]


def _explanation_null_extra(rows: list[dict]) -> list[float]:
    """The binomial standard error of gpt-char's share of matched pairs above the null's median at chance 1/2
    (seed 0), 0.5 / sqrt(matched pairs), as section 14 prints it (two decimals)."""
    r = next(r for r in rows if r.get("summary") and r["model"] == "gpt-char" and r.get("seed") == 0)
    return [round(0.5 / r["matched_pairs"] ** 0.5, 2)]


def _no_mask_rows(rows: list[dict]) -> list[str]:
    """The 300- and 1,000-step table (one row per run), then the 2,000-step table (one row per seed, both arms)."""
    out = [f"| {r['steps']:,} | {r['arm']} ({r['seed']}) | {r['val_teacher_forced']} "
           f"| {r['honest_last_position']['16']} / {r['honest_last_position']['64']} "
           f"| {r['next_key_mass'][0]} / {r['next_key_mass'][1]} |" for r in rows if r["steps"] < 2000]
    by = {(r["arm"], r["seed"]): r for r in rows if r["steps"] == 2000}
    for seed in sorted({s for _, s in by}):
        m, u = by[("causal mask", seed)], by[("no mask", seed)]
        text = "spaces only" if set(u["greedy_sample"][len("The "):]) <= {" "} else "spaces and stray letters"
        out.append(f"| {seed} | {m['val_teacher_forced']} / {u['val_teacher_forced']} "
                   f"| {m['honest_last_position']['16']} / {u['honest_last_position']['16']} "
                   f"| {u['next_key_mass'][0]} | {text} |")
    return out


def _no_mask_extra(rows: list[dict]) -> list[float]:
    """How many seeds of the 2,000-step runs show the copy: no mask's teacher-forced loss near 0 (below 0.1) and
    below the causal mask's, its honest last-position loss above it."""
    by = {(r["arm"], r["seed"]): r for r in rows if r["steps"] == 2000}
    seeds = sorted({s for _, s in by})
    masked, unmasked = ({s: by[(arm, s)] for s in seeds} for arm in ("causal mask", "no mask"))
    copied = [s for s in seeds
              if unmasked[s]["val_teacher_forced"] < min(0.1, masked[s]["val_teacher_forced"])
              and unmasked[s]["honest_last_position"]["16"] > masked[s]["honest_last_position"]["16"]]
    return [len(copied)]


def _lr(lr: float) -> str:
    return f"{lr:.0e}".replace("e-0", "e-")  # 0.003 -> "3e-3"


def _arms(rows: list[dict], label: Callable[[dict], str]) -> dict[str, tuple[list[dict], list[dict]]]:
    """Arm label -> (its tuning runs by learning rate, its reported runs by seed), in the file's order; probes
    (runs at a fixed rate, e.g. longer ones) are left out."""
    rows = [r for r in rows if r["phase"] != "probe"]
    out: dict[str, tuple[list[dict], list[dict]]] = {}
    for arm in dict.fromkeys(label(r) for r in rows):
        runs = [r for r in rows if label(r) == arm]
        out[arm] = (sorted((r for r in runs if r["phase"] == "tune"), key=lambda r: r["lr"]),
                    sorted((r for r in runs if r["phase"] == "report"), key=lambda r: r["seed"]))
    return out


def _tuned_rows(label: Callable[[dict], str]) -> Callable[[list[dict]], list[str]]:
    """Rows of a heldout.py sweep: arm | parameters | val loss per tuned lr | lr chosen | test loss per seed |
    mean | largest gradient norm over the reported runs (min-max)."""
    def rows(results: list[dict]) -> list[str]:
        out = []
        for arm, (tune, report) in _arms(results, label).items():
            test = [r["test_loss"] for r in report]
            grad = [r["grad_norm_max"] for r in report]
            out.append(f"| {arm} | {report[0]['params']:,} | " + " / ".join(str(r["val_loss"]) for r in tune)
                       + f" | {_lr(report[0]['lr'])} | " + " / ".join(str(t) for t in test)
                       + f" | {sum(test) / len(test):.4f} | {min(grad)}-{max(grad)} |")
        return out
    return rows


def _tuned_extra(label: Callable[[dict], str]) -> Callable[[list[dict]], list[float]]:
    """Each arm's mean test loss over its seeds, and the differences between arms' means and between single
    runs of two arms with the same seed (the gaps the text quotes)."""
    def extra(results: list[dict]) -> list[float]:
        arms = _arms(results, label)
        means = {a: sum(r["test_loss"] for r in rep) / len(rep) for a, (_, rep) in arms.items()}
        gaps = [abs(means[a] - means[b]) for a in means for b in means if a < b]
        for _, rep_a in arms.values():
            for _, rep_b in arms.values():
                gaps += [abs(x["test_loss"] - y["test_loss"]) for x, y in zip(rep_a, rep_b, strict=True)]
        probes = [r for r in results if r["phase"] == "probe"]  # a probe against the reported run of its seed
        gaps += [abs(p["test_loss"] - r["test_loss"]) for p in probes for _, rep in arms.values() for r in rep
                 if r["seed"] == p["seed"]]
        gaps += [abs(p["test_loss"] - q["test_loss"]) for p in probes for q in probes if p["seed"] == q["seed"]]
        if probes:
            gaps.append(sum(p["test_loss"] for p in probes) / len(probes))
        return list(means.values()) + gaps
    return extra


def _heads_label(r: dict) -> str:
    return f"{r['n_heads']} | {r['d_head']}"


def _window_label(r: dict) -> str:
    if r["model"] == "transformer":
        return "transformer, context 64"
    return f"window MLP, w {r['window']}, hidden {r['hidden']}"


def _position_label(r: dict) -> str:
    return r["arm"]


POSITION_NAMES = {"learned": "learned", "sinusoidal": "sinusoidal", "rope": "RoPE", "none": "none"}
ACTIVATION_NAMES = {"gelu": "GELU", "relu": "ReLU", "swiglu": "SwiGLU, d_ff 170"}


def _final(r: dict) -> float:
    return r["val"][-1][1]


def _curve_row(label: str, r: dict) -> str:
    """| label (seed) | parameters | val loss at each evaluation |"""
    return f"| {label} ({r['seed']}) | {r['params']:,} | " + " | ".join(f"{v:.3f}" for _, v in r["val"]) + " |"


def _seed_row(label: str, runs: list[dict], reference: list[dict] | None) -> str:
    """| label | final val loss per seed | mean | max - min | minus the reference's final, same seed |"""
    final = [_final(r) for r in runs]
    against = "-" if reference is None else " / ".join(f"{_final(a) - _final(b):+.3f}"
                                                        for a, b in zip(runs, reference, strict=True))
    return (f"| {label} | " + " / ".join(f"{v:.3f}" for v in final)
            + f" | {sum(final) / len(final):.3f} | {max(final) - min(final):.3f} | {against} |")


def _group_gaps(groups: list[list[dict]]) -> list[float]:
    """Each group's mean and spread of final val losses, and between two groups (both signs) the same-seed
    differences and the difference of their means: the numbers a section's text quotes."""
    out = []
    for runs in groups:
        final = [_final(r) for r in runs]
        out += [sum(final) / len(final), max(final) - min(final)]
    for a in groups:
        for b in groups:
            if a is b:
                continue
            by_seed = {r["seed"]: _final(r) for r in b}
            out += [_final(r) - by_seed[r["seed"]] for r in a if r["seed"] in by_seed]
            out.append(sum(map(_final, a)) / len(a) - sum(map(_final, b)) / len(b))
    return out


def _positions(rows: list[dict]) -> dict[str, list[dict]]:
    return {p: sorted((r for r in rows if r.get("position") == p), key=lambda r: r["seed"]) for p in POSITION_NAMES}


def _positions_rows(rows: list[dict]) -> list[str]:
    runs = _positions(rows)
    return ([_curve_row(POSITION_NAMES[p], r) for p, rs in runs.items() for r in rs]
            + [_seed_row(POSITION_NAMES[p], rs, runs["learned"] if p != "learned" else None)
               for p, rs in runs.items()])


def _positions_extra(rows: list[dict]) -> list[float]:
    return _group_gaps(list(_positions(rows).values()))


def _positions_row_extra(rows: list[dict]) -> list[float]:
    """Row 2: _positions_extra over every seed it quotes, then how many seeds."""
    return [*_positions_extra(rows), len({r["seed"] for r in rows})]


ACTIVATION_ARMS = {  # label -> (lr, init, steps) of activations.py; section 3's setting is lr 2e-3, default, 1,500
    "lr 1e-3": (1e-3, "default", 1500), "lr 2e-3 (section 3)": (2e-3, "default", 1500),
    "lr 6e-3": (6e-3, "default", 1500), "4,500 steps": (2e-3, "default", 4500),
    "W_1 at std 1/sqrt(d_model)": (2e-3, "scaled", 1500)}


def _activation_runs(rows: list[dict]) -> dict[tuple, dict]:
    """(activation, lr, init, steps, seed) -> run. positions.py's learned runs are section 3's GELU runs (the same
    configuration); a run recorded in two files is merged (its val losses from the later file, the input std
    from the file that has it: activations.jsonl)."""
    runs: dict[tuple, dict] = {}
    for r in rows:
        if "position" in r:
            if r["position"] != "learned":
                continue
            r = {"activation": "gelu", "lr": 2e-3, "init": "default", **r}
        key = (r["activation"], r["lr"], r["init"], r["steps"], r["seed"])
        runs[key] = {**runs.get(key, {}), **r}
    return runs


def _arm_runs(rows: list[dict], arm: str, activation: str) -> list[dict]:
    lr, init, steps = ACTIVATION_ARMS[arm]
    return sorted((r for k, r in _activation_runs(rows).items() if k[:4] == (activation, lr, init, steps)),
                  key=lambda r: r["seed"])


def _activations_rows(rows: list[dict]) -> list[str]:
    """Section 3's curves and per-seed summary (against ReLU), then the subsection's table: per arm the final val
    loss per seed of each activation, GELU - ReLU per seed, and the input std of the activation at the end (seed 0)."""
    section3 = {a: _arm_runs(rows, "lr 2e-3 (section 3)", a) for a in ACTIVATION_NAMES}
    out = [_curve_row(ACTIVATION_NAMES[a], r) for a, rs in section3.items() for r in rs]
    out += [_seed_row(ACTIVATION_NAMES[a].split(",")[0], rs, section3["relu"] if a != "relu" else None)
            for a, rs in section3.items()]
    for arm in ACTIVATION_ARMS:
        runs = {a: _arm_runs(rows, arm, a) for a in ACTIVATION_NAMES}
        seeds = sorted({r["seed"] for rs in runs.values() for r in rs})

        def cell(rs: list[dict], seeds=seeds) -> str:
            by_seed = {r["seed"]: f"{_final(r):.3f}" for r in rs}
            return " / ".join(by_seed.get(s, "-") for s in seeds) if rs else "-"

        relu = {r["seed"]: _final(r) for r in runs["relu"]}
        gap = " / ".join(f"{_final(r) - relu[r['seed']]:+.3f}" if r["seed"] in relu else "-" for r in runs["gelu"])
        std = " / ".join(f"{rs[0]['preact_std_end']:.2f}" if rs and rs[0]["seed"] == 0 else "-" for rs in runs.values())
        out.append(f"| {arm} | {', '.join(map(str, seeds))} | {cell(runs['gelu'])} | {cell(runs['relu'])} "
                   f"| {cell(runs['swiglu'])} | {gap} | {std} |")
    return out


def _activations_extra(rows: list[dict]) -> list[float]:
    """Within each arm, the gaps between activations (means, same-seed); across arms, each activation's mean
    against section 3's; the parameter difference of SwiGLU, in percent."""
    arms = {arm: [rs for rs in (_arm_runs(rows, arm, a) for a in ACTIVATION_NAMES) if rs] for arm in ACTIVATION_ARMS}
    out = [v for groups in arms.values() for v in _group_gaps(groups)]
    for a in ACTIVATION_NAMES:
        base = _arm_runs(rows, "lr 2e-3 (section 3)", a)
        for arm in ACTIVATION_ARMS:
            other = _arm_runs(rows, arm, a)
            if other and arm != "lr 2e-3 (section 3)":
                out += _group_gaps([other, base])[4:]  # the differences only (each group's mean is in `arms`)
    relu, swiglu = (_arm_runs(rows, "lr 2e-3 (section 3)", a) for a in ("relu", "swiglu"))
    ahead = sum(_final(s) < _final(r) for s, r in zip(swiglu, relu, strict=True))  # SwiGLU ahead of ReLU, seeds
    return out + [100 * (relu[0]["params"] - swiglu[0]["params"]) / relu[0]["params"], ahead, len(relu)]


def _vit_grid_rows(rows: list[dict]) -> list[str]:
    """The per-run table, the per-setting summary (rho: mean +- sd, min to max) and the chosen setting's test rows."""
    out = []
    for r in rows:
        if r.get("run") == "shipped" or ("val_accuracy" in r and "summary" not in r):
            i = r["inner"]
            inside = f"{i['rho']:+.3f} ({i['p']:.4f})" if r["grid"] > 4 else "- (2 x 2 only)"
            acc = f"{r['val_accuracy'][-1][1]:.3f}" if "val_accuracy" in r else f"- (test {r['test_accuracy']:.3f})"
            out.append(f"| {r['run']} | {r.get('seed', 0)} | {acc} | {r['rho']:+.3f} | {r['p']:.4f} "
                       f"| {r['nearest_is_neighbour']} / {r['patches']} ({r['chance_neighbours']:.1f}) "
                       f"| {r['nearest_p']:.4f} | {inside} |")
        elif "summary" in r:
            v, rho = r["val_accuracy"], r["rho"]
            out.append(f"| {r['summary']} | {len(r['seeds'])} | {v['mean']:.3f} ({v['min']:.3f}-{v['max']:.3f}) "
                       f"| {rho['mean']:+.3f} ± {rho['sd']:.3f} ({rho['min']:+.3f} to {rho['max']:+.3f}) "
                       f"| {r['grid_runs']} / {len(r['seeds'])} | {'yes' if r['chosen'] else 'no'} |")
        elif r.get("chosen"):
            out.append(f"| {r['run']} | {r['seed']} | {r['test_accuracy']:.3f} |")
    return out


def _cpu_total(rows: list[dict]) -> list[float]:
    """The CPU seconds of all the runs of a results file together (the budget a page reports)."""
    return [sum(r.get("cpu_s", 0.0) for r in rows)]


def _recall_rows(rows: list[dict]) -> list[str]:
    tests = {(r["k"], r["model"], r["seed"]): r["test_accuracy"] for r in rows if r.get("chosen")}
    out = []
    for r in rows:
        if not r.get("summary"):
            continue
        sweep = " / ".join(f"{v:.3f}" for v in r["sweep_val_accuracy"].values()) if len(r["swept_lrs"]) > 1 \
            else "- (not swept)"
        acc = " / ".join(f"{tests[(r['k'], r['model'], s)]:.3f}" for s in r["seeds"])
        out.append(f"| {r['k']} | {r['model']} ({r['params']:,}) | {sweep} | {r['chosen_lr']:g} | {acc} "
                   f"(mean {r['test_accuracy']['mean']:.3f}) | {r['cpu_ms_per_step']:.1f} |")
    return out


def _variances(layers: list[dict]) -> str:
    """Softmax-input variances as the doc prints them: thousands separated from 10 up, one decimal below."""
    return ", ".join(f"{x['var_scaled']:,.0f}" if x["var_scaled"] >= 10 else f"{x['var_scaled']:.1f}" for x in layers)


def _attn_scale_runs(rows: list[dict]) -> dict[tuple[int, str], list[dict]]:
    """(d_k, arm) -> its part-2 runs, by seed."""
    out: dict[tuple[int, str], list[dict]] = {}
    for r in sorted((r for r in rows if "arm" in r), key=lambda r: r["seed"]):
        out.setdefault((r["d_k"], r["arm"]), []).append(r)
    return out


def _attn_scale_rows(rows: list[dict]) -> list[str]:
    """Part 1's table (random vectors, fresh weights), part 2's per-run tables and the step-600 summary."""
    out = [f"| {r['d_k']} | {r['unit_unscaled']:.2f} | {r['unit_scaled']:.3f} | {r['init_unscaled']:.3f} "
           f"| {r['init_scaled']:.4f} |" for r in rows if r.get("part") == "random"]
    runs = _attn_scale_runs(rows)
    for (_, arm), seeds in runs.items():
        for r in seeds:
            out.append(f"| {arm} ({r['seed']}) | " + " | ".join(f"{v:.3f}" for _, v in r["val"])
                       + f" | {_variances(r['layers'])} | " + ", ".join(f"{x['entropy']:.2f}" for x in r["layers"])
                       + " |")
    for d_k in sorted({d for d, _ in runs}):
        scaled, plain = runs[(d_k, "1/sqrt(d_k)")], runs[(d_k, "no scale")]
        a, b = [r["val"][-1][1] for r in scaled], [r["val"][-1][1] for r in plain]
        diff = [y - x for x, y in zip(a, b, strict=True)]
        out.append(f"| {d_k} | " + " / ".join(f"{v:.3f}" for v in a) + f" ({sum(a) / len(a):.3f}) | "
                   + " / ".join(f"{v:.3f}" for v in b) + f" ({sum(b) / len(b):.3f}) | "
                   + " / ".join(f"{v:+.3f}" for v in diff) + f" ({sum(diff) / len(diff):+.3f}) |")
    return out


def _attn_scale_extra(rows: list[dict]) -> list[float]:
    """Step-600 means, seed spreads (max - min) and paired differences (and their sizes) per d_k; the entropy of
    uniform causal attention over a 64-token window (the mean of log(i + 1), arithmetic)."""
    import math

    out = [sum(math.log(i + 1) for i in range(64)) / 64]
    runs = _attn_scale_runs(rows)
    for d_k in {d for d, _ in runs}:
        a, b = ([r["val"][-1][1] for r in runs[(d_k, arm)]] for arm in ("1/sqrt(d_k)", "no scale"))
        diff = [y - x for x, y in zip(a, b, strict=True)]
        for v in (a, b, diff):
            out += [sum(v) / len(v), max(v) - min(v)]
        out += diff + [abs(d) for d in diff]  # a difference quoted as a size
    for d_k in sorted({d for d, _ in runs}):  # per d_k: on how many seeds no scale is worse, of how many
        pairs = zip(runs[(d_k, "1/sqrt(d_k)")], runs[(d_k, "no scale")], strict=True)
        worse = [b["val"][-1][1] > a["val"][-1][1] for a, b in pairs]
        out += [sum(worse), len(worse)]
    return out


def _mask_rows(rows: list[dict]) -> list[str]:
    """Per-run rows (val every position @500 / @1000, last train loss, honest losses, future mass per layer), the
    per-arm summary over seeds (val @1000 and honest losses: seeds 0 / 1 / 2 (mean)), the count baselines' rows
    and the first 24 characters of each leaky run's sample."""
    out = []
    for r in sorted((r for r in rows if "arm" in r), key=lambda r: (r["arm"] == "mask after softmax", r["seed"])):
        val, h = dict(r["val_full_window"]), r["honest_last_position"]
        mass = ", ".join(f"{m:.2f}" for m in r["future_mass_mean"]) if "future_mass_mean" in r else "0 by construction"
        out.append(f"| {r['arm']} ({r['seed']}) | {val[500]:.3f} / {val[1000]:.3f} | {r['train_loss_last']:.3f} "
                   f"| {h['8']:.3f} / {h['16']:.3f} / {h['64']:.3f} | {mass} |")
        if "sample" in r:
            out.append(f"seed {r['seed']}: `{r['sample'][:24]!r}`")
    for arm in ("mask before softmax", "mask after softmax"):  # the summary over seeds: each value, then the mean
        runs = sorted((r for r in rows if r.get("arm") == arm), key=lambda r: r["seed"])
        cells = [[dict(r["val_full_window"])[1000] for r in runs]]
        cells += [[r["honest_last_position"][n] for r in runs] for n in ("8", "16", "64")]
        out.append(f"| {arm} | " + " | ".join(" / ".join(f"{v:.3f}" for v in c) + f" ({sum(c) / len(c):.3f})"
                                            for c in cells) + " |")
    for b in (r for r in rows if "baseline" in r):
        for name in ("unigram", "bigram"):
            h = b[f"{name}_last_position"]
            out.append(f"| add-one {name} counts | {b[f'{name}_every_position']:.3f} | - "
                       f"| {h['8']:.3f} / {h['16']:.3f} / {h['64']:.3f} | - |")
    return out


def _mask_extra(rows: list[dict]) -> list[float]:
    """Per arm: the mean and the range of each honest length and of the val loss @1000 over seeds; the mean future
    mass uniform weights would leave over the query positions 0-62 of a 64-token window (arithmetic)."""
    out = [sum((63 - i) / 64 for i in range(63)) / 63]
    for arm in ("mask before softmax", "mask after softmax"):
        runs = [r for r in rows if r.get("arm") == arm]
        for series in [[dict(r["val_full_window"])[1000] for r in runs]] + \
                [[r["honest_last_position"][n] for r in runs] for n in ("8", "16", "64")]:
            out += [sum(series) / len(series), min(series), max(series)]
    return out
VIT_CNN_FILES = ("vit_vs_cnn.jsonl", "vit_vs_cnn_half.jsonl", "vit_vs_cnn_probe.jsonl", "vit_vs_cnn_cpu_check.jsonl")
VIT_CNN_FULL = {"ViT": 6000, "CNN": 4000}  # the whole schedules of section 8's table; half of them: --half


def _vit_cnn_runs(rows: list[dict], size: int, model: str, cap: int | None = None) -> list[dict]:
    cap = VIT_CNN_FULL[model] if cap is None else cap
    return sorted((r for r in rows if r["train_images"] == size and r["model"] == model and r["cap"] == cap),
                  key=lambda r: r["seed"])


def _vit_cnn_sizes(rows: list[dict]) -> list[int]:
    return sorted({r["train_images"] for r in rows if r["cap"] == VIT_CNN_FULL[r["model"]]})


def _vit_cnn_main(rows: list[dict]) -> list[dict]:
    """The experiment's runs, without the rerun that checks another CPU's draw (vit_vs_cnn_cpu_check.jsonl)."""
    return [r for r in rows if "cpu_check" not in r]


def _vit_cnn_rows(rows: list[dict]) -> list[str]:
    """Per size: each model's test accuracy mean (min-max) over its seeds, the error ratio of the means, and each
    seed's best-validation step with how its run ended (p: patience, c: the step cap); then the doubling table
    (vit_vs_cnn.py's doubling(): half the schedule against the whole one, same seeds)."""
    rows = _vit_cnn_main(rows)
    out = []
    for size in _vit_cnn_sizes(rows):
        cells, errors, steps = [], [], []
        for model in ("ViT", "CNN"):
            runs = _vit_cnn_runs(rows, size, model)
            acc = [r["test_accuracy"] for r in runs]
            cells.append(f"{sum(acc) / len(acc):.3f} ({min(acc):.3f}-{max(acc):.3f})")
            errors.append(1 - sum(acc) / len(acc))
            steps.append(" / ".join(f"{r['best_step']:,} {r['stopped'][0]}" for r in runs))
        out.append(f"| {size:,} | {cells[0]} | {cells[1]} | {100 * errors[0]:.1f}% / {100 * errors[1]:.1f}% "
                   f"= {errors[0] / errors[1]:.2f}x | {steps[0]} | {steps[1]} |")
    for size in _vit_cnn_sizes(rows):
        for model in ("ViT", "CNN"):
            out.append(_doubling_line(_vit_cnn_runs(rows, size, model, VIT_CNN_FULL[model] // 2),
                                      _vit_cnn_runs(rows, size, model)))
    out += [_doubling_line(shorter, probe) for _, _, shorter, probe in _vit_cnn_probes(rows)]
    return out


def _vit_cnn_probes(rows: list[dict]):
    """(size, model, runs at k/2 times the whole schedule, runs at k times it) for k = 2, 4, ... wherever the probe
    file (vit_vs_cnn_probe.jsonl) has runs at k times the schedule: each doubling against the one before it."""
    longer = [r for r in rows if r["cap"] > VIT_CNN_FULL[r["model"]]]
    for size in sorted({r["train_images"] for r in longer}):
        for model in ("ViT", "CNN"):
            for k in sorted({r["cap"] // VIT_CNN_FULL[model] for r in longer if r["model"] == model}):
                probe = _vit_cnn_runs(rows, size, model, k * VIT_CNN_FULL[model])
                if probe:
                    yield size, model, _vit_cnn_runs(rows, size, model, k * VIT_CNN_FULL[model] // 2), probe


def _doubling_line(half: list[dict], full: list[dict]) -> str:
    """vit_vs_cnn.py's doubling() row: a schedule against twice it, same size, model and seeds."""
    before, after = (sum(r["test_accuracy"] for r in runs) / len(runs) for runs in (half, full))
    changes = [f["test_accuracy"] - h["test_accuracy"] for h, f in zip(half, full, strict=True)]
    return (f"| {full[0]['train_images']:,} | {full[0]['model']} | {half[0]['cap']:,} / {full[0]['cap']:,} | "
            f"{before:.3f} | {after:.3f} | {after - before:+.3f} | {min(changes):+.3f} to {max(changes):+.3f} |")


def _vit_cnn_extra(rows: list[dict]) -> list[float]:
    """Per size: the mean test accuracies, the error rates and their ratio, the gap of the means and each seed's
    gap (CNN - ViT), the half-schedule means and their changes; the whole-schedule runs' count and CPU minutes,
    and the longest-schedule probe's (vit_vs_cnn_probe.jsonl) means and changes against the whole schedule; last,
    the CPU check: the rerun's test accuracy and best step, and the original run's best step."""
    checks, rows = [r for r in rows if "cpu_check" in r], _vit_cnn_main(rows)
    out = []
    for size in _vit_cnn_sizes(rows):
        vit, cnn = (_vit_cnn_runs(rows, size, m) for m in ("ViT", "CNN"))
        means = [sum(r["test_accuracy"] for r in runs) / len(runs) for runs in (vit, cnn)]
        out += means + [1 - means[0], 1 - means[1], (1 - means[0]) / (1 - means[1]), means[1] - means[0]]
        out += [c["test_accuracy"] - v["test_accuracy"] for v, c in zip(vit, cnn, strict=True)]
        for model, full in (("ViT", vit), ("CNN", cnn)):
            half = _vit_cnn_runs(rows, size, model, VIT_CNN_FULL[model] // 2)
            before = sum(r["test_accuracy"] for r in half) / len(half)
            out += [before, sum(r["test_accuracy"] for r in full) / len(full) - before]
            out += [f["test_accuracy"] - h["test_accuracy"] for h, f in zip(half, full, strict=True)]
    whole = [r for r in rows if r["cap"] == VIT_CNN_FULL[r["model"]]]
    halves = [r for r in rows if 2 * r["cap"] == VIT_CNN_FULL[r["model"]]]
    params = {r["model"]: r["params"] for r in whole}
    out += [len(whole), sum(r["cpu_s"] for r in whole) / 60, len(halves),
            sum(r["stopped"] == "patience" for r in halves), params["CNN"] / params["ViT"]]
    longer = [r for r in rows if r["cap"] > VIT_CNN_FULL[r["model"]]]
    out += [sum(r["cpu_s"] for r in longer) / 60]
    for size in sorted({r["train_images"] for r in longer}):  # per size: the probes' CPU minutes, both models
        out.append(sum(r["cpu_s"] for r in longer if r["train_images"] == size) / 60)
    for _, _, shorter, probe in _vit_cnn_probes(rows):
        before = {r["seed"]: r for r in shorter}
        out += [sum(r["test_accuracy"] for r in probe) / len(probe), sum(r["cpu_s"] for r in probe) / 60]
        out += [r["test_accuracy"] - before[r["seed"]]["test_accuracy"] for r in probe]
    ahead, pairs = 0, 0  # at the longest schedule of each size: seed pairs where the CNN is ahead, of all
    for size in sorted({r["train_images"] for r in longer}):  # the two models at the longest probe, seed by seed
        vit, cnn = ({r["seed"]: r for r in _vit_cnn_runs(rows, size, m, max(
            r["cap"] for r in longer if r["model"] == m and r["train_images"] == size))} for m in ("ViT", "CNN"))
        means = [sum(r["test_accuracy"] for r in runs.values()) / len(runs) for runs in (vit, cnn)]
        out += means + [means[1] - means[0], (1 - means[0]) / (1 - means[1])]
        out += [cnn[seed]["test_accuracy"] - vit[seed]["test_accuracy"] for seed in vit]
        ahead += sum(cnn[seed]["test_accuracy"] > vit[seed]["test_accuracy"] for seed in vit)
        pairs += len(vit)
    for check in checks:
        original = next(r for r in _vit_cnn_runs(rows, check["train_images"], check["model"], check["cap"])
                        if r["seed"] == check["seed"])
        out += [check["test_accuracy"], check["best_step"], original["best_step"], check["cpu_s"] / 60]
    return out + [ahead, pairs]


# section 1, HF check and subsections: experiments_check_ln.py's variants and ln_warmup.py's 1,500-step runs
CHECK_LN_LABELS = {"attnlab": "attnlab", "hf-same-init": "HF GPT-2, same initial weights",
                   "hf-own-init": "HF GPT-2, its own init (scaled residual projections)",
                   "attnlab-scaled": "attnlab, residual projections at std 0.02/sqrt(32)",
                   "attnlab-nudged": "attnlab, every weight nudged by 1e-7 (relative)"}


def _val_cells(r: dict) -> str:
    return " | ".join(f"{v:.3f}" for _, v in r["val"])


def _check_ln_rows(rows: list[dict]) -> list[str]:
    """The HF check's val table, then its drift table (first 30 steps' largest |loss difference| in units of
    1e-7, the first steps past 1e-3 and 0.1, the last val loss's difference), every cell from the results."""
    rows = [r for r in rows if "variant" in r]  # the check's lines, not ln_1500.jsonl's runs beside them
    out = [f"| {CHECK_LN_LABELS[r['variant']]} | {_val_cells(r)} |" for r in rows]
    for r in rows:  # drift only for the runs that start from attnlab's weights (the others differ from step 1)
        if (d := r.get("drift_vs_attnlab")) and d["max_abs_diff_first_30_steps"] < 1e-3:
            above = d["first_step_above_0.1"]
            out.append(f"| {CHECK_LN_LABELS[r['variant']]} | {1e7 * d['max_abs_diff_first_30_steps']:.1f} "
                       f"| {d['first_step_above_1e-3']} | {'never' if above is None else above} "
                       f"| {d['final_val_diff']:+.3f} |")
    return out


def _sweep_extra(rows: list[dict]) -> list[float]:
    """The warmup sweep's text: how far each 600-step run fell from its first evaluation, and section 1's spreads."""
    drops = [r["val"][0][1] - r["val"][-1][1] for r in rows if r.get("steps") == 600 and "placement" in r]
    return drops + _ln_1500_extra([r for r in rows if "placement" in r])


def _check_ln_extra(rows: list[dict]) -> list[float]:
    """|last val difference| (the text quotes its size) and the 30-step maxima in units of 1e-7."""
    drift = [r["drift_vs_attnlab"] for r in rows if "drift_vs_attnlab" in r]
    runs = [r for r in rows if "placement" in r]  # ln_1500.jsonl's: the seed spread the text compares with
    return ([abs(d["final_val_diff"]) for d in drift] + [1e7 * d["max_abs_diff_first_30_steps"] for d in drift]
            + _ln_1500_extra(runs))


def _ln_key(r: dict) -> tuple:
    """One setting of ln_warmup.py's runs (lr and grad_clip are recorded only where they were given)."""
    return r["placement"], r["warmup"], r.get("lr"), r.get("grad_clip")


def _ln_runs_rows(label: Callable[[dict], str], keep: Callable[[dict], bool]) -> Callable[[list[dict]], list[str]]:
    """One table row per ln_warmup.py run that `keep` selects: label (seed) | val loss at each evaluation."""
    return lambda rows: [f"| {label(r)} ({r['seed']}) | {_val_cells(r)} |" for r in rows if keep(r)]


def _ln_runs_extra(rows: list[dict]) -> list[float]:
    """Per setting over its seeds: the mean and the range (max - min) of the last val loss; the gaps between the
    settings' means, and between the last val losses of two settings' runs with the same seed."""
    finals: dict[tuple, dict[int, float]] = {}
    for r in rows:
        finals.setdefault(_ln_key(r), {})[r["seed"]] = r["val"][-1][1]
    means = [sum(v.values()) / len(v) for v in finals.values()]
    ranges = [max(v.values()) - min(v.values()) for v in finals.values()]
    same_seed = [abs(a[s] - b[s]) for a in finals.values() for b in finals.values() for s in a if s in b]
    return means + ranges + [abs(a - b) for a in means for b in means] + same_seed
def _ln_runs(rows: list[dict], steps: int, placement: str, warmup: int = 0) -> list[dict]:
    """Section 1's runs at 16 layers x 64 of one length and setting, by seed."""
    return sorted((r for r in rows if (r["steps"], r["placement"], r["warmup"], r["n_layers"], r["d_model"])
                   == (steps, placement, warmup, 16, 64)), key=lambda r: r["seed"])


def _ln_table_row(name: str, r: dict) -> str:
    """A row of section 1's tables: val at each evaluation, gradient norm after step 20 (median, 10th-90th
    percentile), share clipped, the step the train loss leaves the plateau."""
    return (f"| {name} ({r['seed']}) | " + " | ".join(f"{v:.3f}" for _, v in r["val"])
            + f" | {r['grad_norm_median']:.2f} ({r['grad_norm_p10']:.2f}-{r['grad_norm_p90']:.2f}), "
            f"{100 * r['clipped_fraction']:.0f}% | {r['plateau_end'] or 'never'} |")


def _ln_1500_rows(rows: list[dict]) -> list[str]:
    """Section 1's table (val at each evaluation, gradient norm after step 20: median (10th-90th percentile),
    share clipped, the step the train loss leaves the plateau) and the per-seed lists its paragraphs quote."""
    out = []
    runs = {p: _ln_runs(rows, 1500, p) for p in ("pre", "post")}
    warm = _ln_runs(rows, 1500, "pre", 100)
    for name, rs in (("pre-LN", runs["pre"]), ("post-LN", runs["post"]), ("pre-LN, warmup 100", warm)):
        for r in rs:
            out.append(_ln_table_row(name, r))
    if warm:
        out.append(" / ".join(f"{r['val'][-1][1]:.3f}" for r in warm))
    for rs in runs.values():
        out += [" / ".join(f"{r['val'][-1][1]:.3f}" for r in rs),
                " / ".join(f"{r['grad_norm_median']:.2f}" for r in rs),
                " / ".join(f"{100 * r['clipped_fraction']:.0f}%" for r in rs)]
    out.append(" / ".join(f"{r['val'][0][1]:.3f}" for r in runs["post"]))  # post-LN at step 250: no better
    out.append(" / ".join(str(r["plateau_end"]) for r in runs["pre"]))
    out.append(f"first-step loss is {runs['pre'][0]['first_loss']:.3f}")
    for placement in ("pre", "post"):  # the 300-step reruns, if the part's files hold them
        out += [f"{placement}-LN " + " / ".join(f"{v:.3f}" for _, v in r["val"])
                for r in _ln_runs(rows, 300, placement)]
    return out


def _ln_probe_rows(rows: list[dict]) -> list[str]:
    """The size probes of section 1's sweep (post-LN, no warmup, seed 0): val at the last evaluation."""
    out = []
    for r in rows:
        if r["placement"] != "post" or r["seed"] != 0:
            continue
        size, val = (r["n_layers"], r["d_model"]), f"{r['val'][-1][1]:.2f}"
        if size == (16, 64):
            out.append(f"16 x 64 was at {val}")
        elif r["steps"] == 300:
            out.append(f"{val} at {size[0]} layers x {size[1]}")
        else:
            out.append(f"{val} after {r['steps']} steps at {size[0]} x {size[1]}")
    return out


def _ln_1500_extra(rows: list[dict]) -> list[float]:
    """The spread of pre-LN's final val loss over its seeds, and the gap from its worst seed to post-LN's best."""
    pre, post = ([r["val"][-1][1] for r in _ln_runs(rows, 1500, p)] for p in ("pre", "post"))
    return [max(pre) - min(pre), min(post) - max(pre)]


HEADS_HISTORY = {"7.3": "the audit's re-measurement (named as history)", "5.9": "the audit's re-measurement"}


AMBIGUITY_SHOWN = {"minilm": ("MiniLM", range(7)), "smollm2": ("SmolLM2", (0, 2, 4, 6, 8, 10, 15, 20, 25, 30))}


def _ambiguity_rows(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        name, shown = AMBIGUITY_SHOWN[r["model"]]
        if r["layer"] not in shown:
            continue
        words = r["words"]
        out.append(f"| {name}, {'embedding' if r['layer'] == 0 else 'block ' + str(r['layer'])} "
                   f"| {r['within_mean']} ({r['within_min']}-{r['within_max']}) "
                   f"| {r['across_mean']} ({r['across_min']}-{r['across_max']}) "
                   f"| {r['gap_mean']} ({r['gap_min']} to {r['gap_max']}), {r['words_gap_positive']} / {words} "
                   f"| {r['ordered_mean']} | {r['loo_accuracy_mean']} ({r['loo_accuracy_min']}), "
                   f"{r['words_loo_at_least_0.9']} / {words} "
                   f"| {r['control_gap_mean']} ({r['control_gap_min']} to {r['control_gap_max']}), "
                   f"{r['control_ordered_mean']}, {r['control_loo_accuracy_mean']} | {r['seed_pair_cos']} |")
    return out


def _ambiguity_layers(rows: list[dict], model: str) -> list[dict]:
    return sorted((r for r in rows if r["model"] == model), key=lambda r: r["layer"])


def _from_on(layers: list[dict], ok) -> int:
    """The first layer from which ok(line) holds at every layer to the last."""
    first = len(layers)
    for r in reversed(layers):
        if not ok(r):
            break
        first = r["layer"]
    return first


def _runs(layers: list[int]) -> list[int]:
    """[6, 7, 23, 24, ..., 30] -> [6, 7, 23, 30]: single layers, and the two ends of each longer run."""
    out, start = [], None
    for i, x in enumerate(layers):
        start = x if start is None else start
        if i + 1 == len(layers) or layers[i + 1] != x + 1:
            out += [start] if x == start else [start, x]
            start = None
    return out


def _ambiguity_extra(rows: list[dict]) -> list[float]:
    """What section 20 and row 20 derive from the per-layer lines, in the order the section first prints them."""
    mini, smol = _ambiguity_layers(rows, "minilm"), _ambiguity_layers(rows, "smollm2")
    blocks = mini[1:]  # MiniLM after each block
    good = _from_on(smol, lambda r: r["words_loo_at_least_0.9"] == r["words"])  # SmolLM2: every word at 0.9+
    weak = [r for r in smol[1:] if r["loo_accuracy_mean"] < 0.9]  # SmolLM2's first blocks, below 0.9 on average
    late = [r for r in smol if r["layer"] >= good]

    def span(layers, key):
        return [min(r[key] for r in layers), max(r[key] for r in layers)]

    water_top = _from_on(smol, lambda r: max(r["control_per_word"], key=lambda w: r["control_per_word"][w]["gap"])
                         == "water")
    overlap = [r["layer"] for r in late if r["control_gap_max"] > r["gap_min"]]
    apart = [r["layer"] for r in late if r["control_gap_max"] <= r["gap_min"]]
    return [min(r["words_gap_positive"] for r in blocks),  # 0: every MiniLM block, words with gap > 0
            *span(blocks, "gap_mean"), *span(blocks, "loo_accuracy_mean"),  # 1-4
            *span(blocks, "words_loo_at_least_0.9"),  # 5-6
            weak[0]["layer"], weak[-1]["layer"], *span(weak, "loo_accuracy_mean"),  # 7-10
            _from_on(smol, lambda r: r["words_gap_positive"] == r["words"]), good,  # 11-12
            _from_on(smol, lambda r: r["loo_accuracy_min"] == 1.0), smol[-1]["layer"],  # 13-14
            min(r["seed_pair_cos"] for r in smol),  # 15: the decoder's two seed apples, at every layer
            *span(blocks, "control_gap_mean"), *span(blocks, "gap_mean"),  # 16-19
            *span(late, "control_gap_mean"), good, smol[-1]["layer"], *span(late, "gap_mean"),  # 20-25
            *span(blocks, "control_ordered_mean"), *span(late, "control_ordered_mean"),  # 26-29
            *span(blocks, "ordered_mean"), *span(late, "ordered_mean"),  # 30-33
            *span(blocks, "control_loo_accuracy_mean"), *span(late, "control_loo_accuracy_mean"),  # 34-37
            water_top, smol[-1]["layer"], *_runs(overlap), *_runs(apart),  # 38-39, then the runs
            mini[0]["words"] + mini[0]["control_words"], 2 * mini[0]["sentences_per_sense"]]



# ---------------------------------------------------------------- section 11: tokenizer_quality.jsonl
def _token_budgets(rows: list[dict]) -> list[dict[str, list[dict]]]:
    """The runs per budget: each tokenizer's distinct step counts, sorted, paired by rank (the BPE run of a budget
    takes fewer steps than the character run of the same FLOPs); each list sorted by seed."""
    names = list(dict.fromkeys(r["tokenizer"] for r in rows))
    steps = {t: sorted({r["steps"] for r in rows if r["tokenizer"] == t}) for t in names}
    return [{t: sorted((r for r in rows if r["tokenizer"] == t and r["steps"] == steps[t][i]), key=lambda r: r["seed"])
             for t in names} for i in range(len(steps[names[0]]))]


def _tokenizer_quality_rows(rows: list[dict]) -> list[str]:
    """| budget | tokenizer | vocabulary | parameters | steps | training TFLOP | characters per token |
    bits per character, seeds 0 / 1 / 2 | mean |"""
    rows = [r for r in rows if "bits_per_char" in r]
    out = []
    for budget in _token_budgets(rows):
        char_steps = budget["character"][0]["steps"]
        for name, runs in budget.items():
            r = runs[0]
            bpc = [x["bits_per_char"] for x in runs]
            out.append(f"| {char_steps:,} character steps | {name} | {r['vocab']:,} | {r['params']:,} | {r['steps']:,} "
                       f"| {r['train_flops'] / 1e12:.3f} | {r['chars_per_token']} | "
                       + " / ".join(f"{b:.5f}" for b in bpc) + f" | {sum(bpc) / len(bpc):.4f} |")
    return out


def _tokenizer_quality_extra(rows: list[dict]) -> list[float]:
    """Per budget: character minus BPE bits per character for each seed, their mean, smallest and largest; the
    training TFLOP; on how many seeds BPE is lower; how many more characters the BPE run read (its steps x
    characters per token / the character run's steps). Then: the budgets' ratio, a BPE step's FLOPs over a
    character step's, the parameters' ratio, the characters a 64-token BPE window spans, the held-out text's
    length (the scored characters + the first, unscored, character)."""
    rows = [r for r in rows if "bits_per_char" in r]  # row 11 passes tokenizer_cost.jsonl's lines too
    out = []
    budgets = _token_budgets(rows)
    for budget in budgets:
        char, bpe = budget["character"], budget["BPE 2048"]
        gaps = [c["bits_per_char"] - b["bits_per_char"] for c, b in zip(char, bpe, strict=True)]
        out += gaps + [sum(gaps) / len(gaps), min(gaps), max(gaps), char[0]["train_flops"] / 1e12,
                       sum(g > 0 for g in gaps)]  # seeds on which BPE scores fewer bits per character
        out.append(bpe[0]["steps"] * bpe[0]["chars_per_token"] / char[0]["steps"])
    char, bpe = budgets[0]["character"][0], budgets[0]["BPE 2048"][0]
    out += [budgets[-1]["character"][0]["steps"] / char["steps"], bpe["flops_per_step"] / char["flops_per_step"],
            bpe["params"] / char["params"], bpe["seq_len"] * bpe["chars_per_token"] if "seq_len" in bpe
            else 64 * bpe["chars_per_token"], char["held_out_chars"] + 1]
    return out


# ---------------------------------------------------------------- section 13: efficient_attention_quality.jsonl
VARIANT_LABEL = {"full": "full (causal)", "local": "local (last 64 keys)", "strided": "strided (j = i mod 8)",
                 "linear": "linear (elu + 1, running sums)"}


def _eff_runs(rows):
    return {v: sorted((r for r in rows if r["variant"] == v), key=lambda r: r["seed"]) for v in VARIANT_LABEL}


def _efficient_quality_rows(rows: list[dict]) -> list[str]:
    """| variant | val loss, seeds 0 / 1 / 2 | mean | minus full, seeds 0 / 1 / 2 | worse than full on |"""
    runs = _eff_runs([r for r in rows if "val_loss" in r])
    full = [r["val_loss"] for r in runs["full"]]
    out = []
    for v, label in VARIANT_LABEL.items():
        loss = [r["val_loss"] for r in runs[v]]
        gap = [x - f for x, f in zip(loss, full, strict=True)]
        cells = " / ".join(str(x) for x in loss) + f" | {sum(loss) / len(loss):.4f}"
        if v == "full":
            out.append(f"| {label} | {cells} | - | - |")
        else:
            out.append(f"| {label} | {cells} | " + " / ".join(f"{g:+.4f}" for g in gap)
                       + f" | {sum(g > 0 for g in gap)} of {len(gap)} |")
    return out


def _efficient_quality_extra(rows: list[dict]) -> list[float]:
    """The seed spread (max - min) of full attention's val loss; per variant (local, strided, linear): the mean
    gap to full, the smallest and largest absolute seed gap, the largest gap as a percentage of full's loss,
    and on how many seeds it is worse than full."""
    runs = _eff_runs([r for r in rows if "val_loss" in r])
    full = [r["val_loss"] for r in runs["full"]]
    out = [max(full) - min(full)]
    for v in list(VARIANT_LABEL)[1:]:
        gap = [r["val_loss"] - f for r, f in zip(runs[v], full, strict=True)]
        size = [abs(g) for g in gap]
        out += [sum(gap) / len(gap), min(size), max(size), max(100 * g / f for g, f in zip(gap, full, strict=True)),
                sum(g > 0 for g in gap)]
    return out


def _efficient_row_extra(rows: list[dict]) -> list[float]:
    """Row 13 quotes the cost section's exponents and the quality part's gaps."""
    return _efficient_exponents([r for r in rows if "flops" in r]) + _efficient_quality_extra(rows)



# ---------------------------------------------------------------- section 21: nsp.jsonl
_NSP_LABEL = {"mlm": "MLM only", "mlm+nsp": "MLM + NSP"}
NSP_ALLOWED = {"002": "the seed text's number", "14.2": "the seed's section (a reference)", "2019": "RoBERTa's year",
               "0.5": "chance for a label drawn half and half (a setting)", "512": "BERT's span (compared with)",
               "2.13.0": "the torch version", "2026-11-28": "the date of the runs",
               "15": "BERT's masking rule, 15/80/10/10 (a setting)", "80": "BERT's masking rule (a setting)",
               "10": "BERT's masking rule (a setting)",
               "2,000": "the probe's fitting pairs (N_PROBE_FIT in nsp.py, a setting)"}


def _nsp_runs(rows: list[dict], arm: str) -> list[dict]:
    return sorted((r for r in rows if r["arm"] == arm), key=lambda r: r["seed"])


def _nsp_rows(rows: list[dict]) -> list[str]:
    """| arm | MLM loss, seeds 0 / 1 / 2 | mean | MLM accuracy | NSP accuracy | probe accuracy |"""
    out = []
    for arm in ("mlm", "mlm+nsp"):
        runs = _nsp_runs(rows, arm)

        def cells(key, runs=runs):
            return " / ".join(str(r[key]) for r in runs)

        mean = round(sum(r["mlm_loss"] for r in runs) / len(runs), 4)
        out.append(f"| {_NSP_LABEL[arm]} | {cells('mlm_loss')} | {mean} | {cells('mlm_accuracy')} | "
                   f"{cells('nsp_accuracy')} | {cells('probe_accuracy')} |")
    return out


def _nsp_extra(rows: list[dict]) -> list[float]:
    """Same-seed differences (MLM + NSP minus MLM only) in MLM loss (also as |d|), MLM accuracy and probe
    accuracy; each arm's seed spread of the MLM loss; min / max of the probe at initialisation."""
    a, b = _nsp_runs(rows, "mlm"), _nsp_runs(rows, "mlm+nsp")
    loss = [round(y["mlm_loss"] - x["mlm_loss"], 4) for x, y in zip(a, b, strict=True)]
    acc = [round(y["mlm_accuracy"] - x["mlm_accuracy"], 4) for x, y in zip(a, b, strict=True)]
    probe = [round(y["probe_accuracy"] - x["probe_accuracy"], 4) for x, y in zip(a, b, strict=True)]
    spread = [round(max(r["mlm_loss"] for r in runs) - min(r["mlm_loss"] for r in runs), 4) for runs in (a, b)]
    init = [r["probe_accuracy_init"] for r in a]
    lower = sum(d < 0 for d in loss)  # seeds on which MLM + NSP ends with the lower MLM loss
    return [*loss, *[abs(d) for d in loss], *acc, *probe, *spread, min(init), max(init), lower]



# ---------------------------------------------------------------- section 22: recurrence_vs_attention.jsonl
def _rva_runs(rows):
    """(n, call, threads, layer) -> its results line."""
    return {(r["n"], r["call"], r["threads"], r["layer"]): r for r in rows}


def _rva_rows(rows):
    """Per call (forward, train step) and n: | call | n | FLOPs per token, GRU / attention | 1 thread: wall ms GRU /
    attention (GRU / attention) | 2 threads: the same | GFLOP/s at 2 threads, GRU / attention | second thread's
    speed-up, GRU / attention |"""
    by = _rva_runs(rows)
    out = []
    for call in ("forward", "train step"):
        for n in sorted({r["n"] for r in rows}):
            g1, a1, g2, a2 = (by[(n, call, t, layer)] for t in (1, 2) for layer in ("GRU", "attention"))
            t1, t2 = (f"{g['wall_ms']['median']} / {a['wall_ms']['median']} ({g['wall_vs_attention']['median']}x)"
                      for g, a in ((g1, a1), (g2, a2)))
            out.append(f"| {call} | {n:,} | {g1['flops_per_token']:,} / {a1['flops_per_token']:,} | {t1} | {t2} "
                       f"| {g1['gflops_per_s']} / {a1['gflops_per_s']} "
                       f"| {g1['wall_ms']['median'] / g2['wall_ms']['median']:.2f}x / "
                       f"{a1['wall_ms']['median'] / a2['wall_ms']['median']:.2f}x |")
    return out


def _load_range(rows: list[dict]) -> list[float]:
    """The 1-minute load average the runs recorded (min, max): on this 2-core machine a load above the timing's own
    threads means other work shared the cores while it was timed."""
    loads = [r["loadavg_1min"] for r in rows if "loadavg_1min" in r]
    return [min(loads), max(loads)]


def _efficient_cost_extra(rows: list[dict]) -> list[float]:
    """Section 13's cost half: the FLOPs exponents (_efficient_exponents), then the load during the timings."""
    return _efficient_exponents(rows) + _load_range(rows)


def _rva_extra(rows):
    """The ranges the text quotes: GFLOP/s at one thread (GRU min, max; attention min, max); the second thread's
    speed-up (GRU min, max; attention min, max); the 1-minute load average while the runs were timed (min, max)."""
    one = [r for r in rows if r["threads"] == 1]
    by = _rva_runs(rows)
    ups = {layer: [by[(n, c, 1, layer)]["wall_ms"]["median"] / by[(n, c, 2, layer)]["wall_ms"]["median"]
                   for n in sorted({r["n"] for r in rows}) for c in ("forward", "train step")]
           for layer in ("GRU", "attention")}
    out = []
    for layer in ("GRU", "attention"):
        rates = [r["gflops_per_s"] for r in one if r["layer"] == layer]
        out += [min(rates), max(rates)]
    for layer in ("GRU", "attention"):
        out += [min(ups[layer]), max(ups[layer])]
    return out + _load_range(rows)  # the load while they were timed



# ---------------------------------------------------------------- section 23: residual_depth.jsonl
RESIDUAL_ARMS = ("both", "no residual", "no norm", "neither")
ARM_LABEL = {"both": "residual + LayerNorm (the block as it is)", "no residual": "no residual",
             "no norm": "no LayerNorm", "neither": "neither"}


def _residual_runs(rows):
    """(depth, arm) -> its runs sorted by seed."""
    out = {}
    for r in rows:
        out.setdefault((r["n_layers"], r["arm"]), []).append(r)
    order = sorted(out, key=lambda key: (key[0], RESIDUAL_ARMS.index(key[1])))
    return {key: sorted(out[key], key=lambda r: r["seed"]) for key in order}


def _residual_rows(rows):
    """| layers | arm | val loss at the last step, seeds 0 / 1 / 2 | left the unigram plateau at step | gradient-norm
    median | share of steps clipped |"""
    out = []
    for (depth, arm), runs in _residual_runs(rows).items():
        val = " / ".join(f"{r['val'][-1][1]:.3f}" for r in runs)
        left = " / ".join("never" if r["plateau_end"] is None else f"{r['plateau_end']:,}" for r in runs)
        norm = " / ".join(f"{r['grad_norm_median']:.2f}" for r in runs)
        clip = " / ".join(f"{r['clipped_fraction']:.2f}" for r in runs)
        out.append(f"| {depth} | {ARM_LABEL[arm]} | {val} | {left} | {norm} | {clip} |")
    return out


def _residual_extra(rows):
    """Per depth: the runs without a residual that never left the plateau, of how many; the runs without LayerNorm
    that left it; the largest gap, over seeds, of no-LayerNorm's final val loss above the full block's; the range of
    no-residual final val losses (min, max). Then over both depths: the final val loss without a residual (min, max)
    and of the block as it is (min, max); the step each left the plateau, the block as it is (min, max) and without
    LayerNorm (min, max); the share of steps clipped without LayerNorm (min, max); the largest no-LayerNorm gap;
    the share clipped for the block as it is (min, max)."""
    runs = _residual_runs(rows)
    out = []
    for depth in sorted({d for d, _ in runs}):
        full, nores, nonorm, neither = (runs[(depth, a)] for a in RESIDUAL_ARMS)
        stuck = [r for r in nores + neither if r["plateau_end"] is None]
        out += [len(stuck), len(nores + neither), sum(r["plateau_end"] is not None for r in nonorm), len(nonorm),
                max(n["val"][-1][1] - f["val"][-1][1] for n, f in zip(nonorm, full, strict=True)),
                min(r["val"][-1][1] for r in nores + neither), max(r["val"][-1][1] for r in nores + neither)]
    every = [r for key, rs in runs.items() for r in rs]

    def span(arms, key):
        values = [key(r) for r in every if r["arm"] in arms]
        return [min(values), max(values)]

    final = lambda r: r["val"][-1][1]  # noqa: E731
    out += span(("no residual", "neither"), final) + span(("both",), final)
    out += span(("both",), lambda r: r["plateau_end"]) + span(("no norm",), lambda r: r["plateau_end"])
    out += span(("no norm",), lambda r: r["clipped_fraction"]) + [max(out[4], out[11])]
    out += span(("both",), lambda r: r["clipped_fraction"])
    return out


# ---------------------------------------------------------------- re-runs on seeds the first runs did not use
# Each verdict row re-run on new seeds (row 20: on a second set of sentences). The first results file keeps its
# runs and the new runs have a file of their own; a row's figures, and its section's, are over both.
# the rows whose re-run is finished and on the page
RERUN_DONE = {"1", "2", "3", "5", "7", "8", "9", "6", "11", "13", "16", "17", "18", "19", "20", "21", "23"}


def _with(row: str, first: tuple[str, ...], new: tuple[str, ...]) -> tuple[str, ...]:
    return first + new if row in RERUN_DONE else first


NO_MASK_FILES = _with("16", ("no_mask.jsonl", "no_mask_1000.jsonl", "no_mask_2000.jsonl"),
                      ("no_mask_2000_seeds8910.jsonl",))
NSP_FILES = _with("21", ("nsp.jsonl",), ("nsp_seeds345.jsonl",))
RESIDUAL_FILES = _with("23", ("residual_depth.jsonl",), ("residual_depth_seeds345.jsonl",))
AMBIGUITY_FILES = _with("20", ("ambiguity.jsonl",), ("ambiguity_second.jsonl",))


def sentence_set(rows: list[dict], which: str = "first") -> list[dict]:
    """The ambiguity lines of one set of sentences: the first (section 20's) or the second (the re-run's)."""
    return [r for r in rows if r.get("sentence_set", "first") == which]


def _ambiguity_row_extra(rows: list[dict]) -> list[float]:
    """Row 20: section 20's derived values on the first set of sentences (_ambiguity_extra), then on the second:
    MiniLM's mean sense accuracy after its blocks (min, max), SmolLM2's from the block from which every sentence
    of the first set is right (min, max), the words with a positive gap after every MiniLM block, and how many
    sentences the second set has."""
    first, second = sentence_set(rows), sentence_set(rows, "second")
    derived = _ambiguity_extra(first)
    mini = _ambiguity_layers(second, "minilm")[1:]
    smol = [r for r in _ambiguity_layers(second, "smollm2") if r["layer"] >= derived[13]]
    return [*derived, min(r["loo_accuracy_mean"] for r in mini), max(r["loo_accuracy_mean"] for r in mini),
            min(r["loo_accuracy_mean"] for r in smol), max(r["loo_accuracy_mean"] for r in smol),
            min(r["words_gap_positive"] for r in mini), 2 * mini[0]["words"] * mini[0]["sentences_per_sense"]]


def _control_drift(rows: list[dict], model: str) -> float:
    """The largest difference between the two sets' runs in what both measure alike (the control words and the
    seed's pair, the same sentences in both runs), over the model's layers."""
    first = {r["layer"]: r for r in sentence_set(rows) if r["model"] == model}
    out = 0.0
    for r in sentence_set(rows, "second"):
        if r["model"] != model:
            continue
        a = first[r["layer"]]
        for key in [k for k in r if k.startswith("control_") or k == "seed_pair_cos"]:
            if isinstance(r[key], dict):
                out = max([out] + [abs(r[key][w][m] - a[key][w][m]) for w in r[key] for m in r[key][w]])
            else:
                out = max(out, abs(r[key] - a[key]))
    return round(out, 6)


def _ambiguity_second_extra(rows: list[dict]) -> list[float]:
    """Section 20's paragraph on the second set of sentences: _ambiguity_extra over the second set, SmolLM2's
    accuracy from the block on which the first set is right for every sentence (min, max) and that block, the
    largest difference of the control's figures between the two runs (MiniLM, SmolLM2), and the first set's lowest
    accuracy from that block on."""
    second = sentence_set(rows, "second")
    start = _ambiguity_extra(sentence_set(rows))[13]
    smol = [r["loo_accuracy_mean"] for r in _ambiguity_layers(second, "smollm2") if r["layer"] >= start]
    first = [r["loo_accuracy_mean"] for r in _ambiguity_layers(sentence_set(rows), "smollm2") if r["layer"] >= start]
    return [*_ambiguity_extra(second), min(smol), max(smol), start, _control_drift(rows, "minilm"),
            _control_drift(rows, "smollm2"), min(first)]


HEADS_FILES = _with("17", ("heads_quality.jsonl",), ("heads_quality_seeds345.jsonl",))
WINDOW_FILES = _with("18", ("window_mlp.jsonl",), ("window_mlp_seeds345.jsonl",))
POSITION_FILES = _with("19", ("position_concat.jsonl",), ("position_concat_seeds345.jsonl",))
UNTIED_FILES = _with("19", ("position_concat_untied.jsonl",), ("position_concat_untied_seeds345.jsonl",))
MASK_FILES = _with("6", ("mask_after_softmax.jsonl",), ("mask_after_softmax_seeds345.jsonl",))
TOKEN_QUALITY_FILES = _with("11", ("tokenizer_quality.jsonl",), ("tokenizer_quality_seeds345.jsonl",))
SCALE_FILES = _with("5", ("attn_scale.jsonl", "attn_scale_dk128.jsonl"),
                    ("attn_scale_seeds345.jsonl", "attn_scale_dk128_seeds345.jsonl"))
EFF_QUALITY_FILES = _with("13", ("efficient_attention_quality.jsonl",), ("efficient_attention_quality_seeds345.jsonl",))
# row 3's new GELU runs are row 2's new learned-positions runs (the same configuration), as its first ones are
ACTIVATION_FILES = _with("3", ("activations.jsonl", "positions.jsonl", "activations_1500.jsonl"),
                         ("positions_seeds345.jsonl", "activations_seeds345.jsonl"))
POSITIONS_FILES = _with("2", ("positions.jsonl",), ("positions_seeds345.jsonl",))
NEW_SEEDS = (3, 4, 5)  # the seeds the re-runs of rows 2, 3, 5, 6, 11's and 13's quality halves, 17-19, 21 and 23 added


def _new_seeds_start(row: str) -> str:
    """Where a section's paragraph on its re-run's seeds starts (a part of its own), once the re-run is done."""
    return f"**Section {row} on seeds 3, 4, 5**" if row in RERUN_DONE else ""


# ---- rows 1, 7, 8 and 9 on seeds 3, 4, 5: each section's new runs in a results file of their own
LN_FIRST = ("ln_1500.jsonl", "ln_1500_warmup100.jsonl", "ln_post_warmup.jsonl")  # section 1's 1,500-step runs
LN_FILES = _with("1", LN_FIRST, ("ln_1500_seeds345.jsonl", "ln_1500_warmup100_seeds345.jsonl",
                                 "ln_post_warmup_seeds345.jsonl"))
LN_GROUPS = (("pre-LN", "pre", 0), ("post-LN", "post", 0), ("pre-LN, warmup 100", "pre", 100),
             ("post-LN, warmup 100", "post", 100))
RECALL_FILES = _with("7", ("recall_distance.jsonl",), ("recall_distance_seeds345.jsonl",))
VIT_CNN_MAIN_FILES = _with("8", ("vit_vs_cnn.jsonl",), ("vit_vs_cnn_seeds345.jsonl",))
VIT_GRID_FILES = _with("9", ("vit_grid.jsonl",), ("vit_grid_seeds345.jsonl",))
GRID_NEW_START = "**On seeds 3, 4, 5**"  # the ViT grid page's paragraph on its re-run (the page has no section number)


def _ln_group(rows: list[dict], placement: str, warmup: int) -> list[dict]:
    """Section 1's 1,500-step runs of one placement and warmup at the recipe's lr and clipping (not ln_hot's)."""
    return [r for r in _ln_runs(rows, 1500, placement, warmup) if "lr" not in r]


def _ln_new_rows(rows: list[dict]) -> list[str]:
    """Section 1's paragraph on seeds 3, 4, 5: the first table's columns for each placement and warmup, new seeds
    only."""
    out = []
    for name, placement, warmup in LN_GROUPS:
        runs = [r for r in _ln_group(rows, placement, warmup) if r["seed"] in NEW_SEEDS]
        for r in runs:
            out.append(_ln_table_row(name, r))
    return out


def _ln_new_extra(rows: list[dict]) -> list[float]:
    """Row 1 and section 1's paragraph on seeds 3, 4, 5, over every seed of the four groups (LN_GROUPS): per group
    the final val loss (min, max); post-LN without warmup, its final val minus its val at step 250 (min, max); same
    seed: pre-LN with warmup 100 minus without (min, max), post-LN with warmup 100 minus pre-LN without (min, max);
    the new seeds' step at which pre-LN without warmup leaves the plateau (min, max); the post-LN runs without
    warmup that never leave the plateau: their gradient-norm median and share of steps clipped, in % (min, max);
    pre-LN's final val spread over all seeds and the gap from its worst seed to post-LN's best; how many post-LN runs
    without warmup never leave the plateau, of how many, and how many pre-LN runs without warmup do, of how many;
    the smallest drop 100 warmup steps give post-LN (its final val without warmup minus with, same seed); the final
    val of the post-LN runs that never leave the plateau (min, max)."""
    groups = {(p, w): {r["seed"]: r for r in _ln_group(rows, p, w)} for _, p, w in LN_GROUPS}
    out = []
    for _, p, w in LN_GROUPS:
        finals = [_final(r) for r in groups[(p, w)].values()]
        out += [min(finals), max(finals)]
    post, pre = groups[("post", 0)], groups[("pre", 0)]
    stay = [_final(r) - r["val"][0][1] for r in post.values()]
    warm_pre = [_final(r) - _final(pre[s]) for s, r in groups[("pre", 100)].items()]
    warm_post = [_final(r) - _final(pre[s]) for s, r in groups[("post", 100)].items()]
    leave = [r["plateau_end"] for s, r in pre.items() if s in NEW_SEEDS]
    stuck = [r for r in post.values() if r["plateau_end"] is None]
    grad = [r["grad_norm_median"] for r in stuck]
    clipped = [100 * r["clipped_fraction"] for r in stuck]
    pre_final = [_final(r) for r in pre.values()]
    post_final = [_final(r) for r in post.values()]
    rescue = [_final(post[s]) - _final(r) for s, r in groups[("post", 100)].items()]
    return out + [min(stay), max(stay), min(warm_pre), max(warm_pre), min(warm_post), max(warm_post), min(leave),
                  max(leave), min(grad), max(grad), min(clipped), max(clipped), max(pre_final) - min(pre_final),
                  min(post_final) - max(pre_final), len(stuck), len(post),
                  sum(r["plateau_end"] is not None for r in pre.values()), len(pre), min(rescue),
                  min(_final(r) for r in stuck), max(_final(r) for r in stuck)]


def _spread(values: list[float], fmt: str) -> str:
    """min-max as the page prints a range ("a to b" when a bound is negative or the format prints a sign); fmt ""
    prints the results' own rounding."""
    lo, hi = (format(v, fmt) if fmt else str(v) for v in (min(values), max(values)))
    return lo if lo == hi else f"{lo} to {hi}" if min(values) < 0 or "+" in fmt else f"{lo}-{hi}"


def recall_tests(rows: list[dict], model: str, k: int = 32) -> list[float]:
    """Test accuracy at distance k of the model's scored runs (each seed at its chosen rate), in file order."""
    return [r["test_accuracy"] for r in rows if r.get("chosen") and (r["k"], r["model"]) == (k, model)]


def _recall_new_rows(rows: list[dict]) -> list[str]:
    """Section 7's paragraph on seeds 3, 4, 5: per distance and model (the new file's summaries: rates carried over
    from the first seeds' sweep), the rate, the test accuracy of each new seed, and its range over all seeds."""
    tests = {(r["k"], r["model"], r["seed"]): r["test_accuracy"] for r in rows if r.get("chosen")}
    out = []
    for r in rows:
        if r.get("summary") and "tuned_from" in r:
            every = [v for (k, m, _), v in tests.items() if (k, m) == (r["k"], r["model"])]
            out.append(f"| {r['k']} | {r['model']} | {r['chosen_lr']:g} | "
                       + " / ".join(f"{tests[(r['k'], r['model'], s)]:.3f}" for s in r["seeds"])
                       + f" | {_spread(every, '.3f')} |")
    return out


def _recall_new_extra(rows: list[dict]) -> list[float]:
    """Section 7's paragraph on seeds 3, 4, 5 and row 7, over every seed: at k 32, how many runs the transformer,
    the dilated CNN and the GRU (at its chosen rate) solve (test accuracy >= 0.99), of how many; the LSTM's and the
    plain CNN's test accuracy (min, max); the new runs' CPU minutes."""
    at32 = {m: recall_tests(rows, m) for m in ("transformer", "dilated CNN", "GRU", "LSTM", "CNN")}
    out = []
    for m in ("transformer", "dilated CNN", "GRU"):
        out += [sum(v >= 0.99 for v in at32[m]), len(at32[m])]
    for m in ("LSTM", "CNN"):
        out += [min(at32[m]), max(at32[m])]
    new = [r for r in rows if r.get("seed") in NEW_SEEDS and "cpu_s" in r]
    return out + [sum(r["cpu_s"] for r in new) / 60]


def _vit_cnn_new_rows(rows: list[dict]) -> list[str]:
    """Section 8's paragraph on seeds 3, 4, 5 (whole schedules): per size each model's test accuracy on the new
    seeds, then both means over all seeds and the error ratio of those means."""
    rows = _vit_cnn_main(rows)
    out = []
    for size in _vit_cnn_sizes(rows):
        vit, cnn = (_vit_cnn_runs(rows, size, m) for m in ("ViT", "CNN"))
        new = [" / ".join(f"{r['test_accuracy']:.3f}" for r in runs if r["seed"] in NEW_SEEDS) for runs in (vit, cnn)]
        means = [sum(r["test_accuracy"] for r in runs) / len(runs) for runs in (vit, cnn)]
        out.append(f"| {size:,} | {new[0]} | {new[1]} | {means[0]:.3f} | {means[1]:.3f} "
                   f"| {(1 - means[0]) / (1 - means[1]):.2f}x |")
    return out


def _vit_cnn_new_extra(rows: list[dict]) -> list[float]:
    """Section 8's paragraph on seeds 3, 4, 5 and row 8, whole schedules: per size the CNN's lead over the ViT on
    the new seeds (min, max) and on all (min, max), the two means over all seeds and the error ratio; then the seed
    pairs where the CNN is ahead, of all, the worst CNN run minus the best ViT run at each size, and the new runs'
    CPU minutes."""
    rows = _vit_cnn_main(rows)
    out, ahead, pairs, worst_best = [], 0, 0, []
    for size in _vit_cnn_sizes(rows):
        vit, cnn = (_vit_cnn_runs(rows, size, m) for m in ("ViT", "CNN"))
        lead = {v["seed"]: round(c["test_accuracy"] - v["test_accuracy"], 3) for v, c in zip(vit, cnn, strict=True)}
        new = [g for seed, g in lead.items() if seed in NEW_SEEDS]
        means = [sum(r["test_accuracy"] for r in runs) / len(runs) for runs in (vit, cnn)]
        out += [min(new), max(new), min(lead.values()), max(lead.values()), *means,
                (1 - means[0]) / (1 - means[1])]
        ahead += sum(g > 0 for g in lead.values())
        pairs += len(lead)
        worst_best.append(min(r["test_accuracy"] for r in cnn) - max(r["test_accuracy"] for r in vit))
    new_runs = [r for r in rows if r["seed"] in NEW_SEEDS]
    return out + [ahead, pairs, *worst_best, sum(r["cpu_s"] for r in new_runs) / 60]


def _vit_grid_new_rows(rows: list[dict]) -> list[str]:
    """The ViT grid page's paragraph on seeds 3, 4, 5: its runs, its per-setting summary and the chosen setting's
    test lines, as the page's tables print them (_vit_grid_rows), from the new seeds' lines only."""
    return _vit_grid_rows([r for r in rows if r.get("seed") in NEW_SEEDS
                           or ("summary" in r and set(r["seeds"]) == set(NEW_SEEDS))])


def _vit_grid_new_extra(rows: list[dict]) -> list[float]:
    """Row 9 and the grid page's paragraph on seeds 3, 4, 5, over every seed: per setting (p7s1, p7s3, p4s3) rho's
    mean, standard deviation, min and max, the runs showing a grid (rho > 0, p < 0.01) and the mean validation
    accuracy; then p4s3's largest p, and the new runs' CPU minutes."""
    import statistics
    runs = [r for r in rows if "val_accuracy" in r and "summary" not in r and r.get("run") != "shipped"]
    out = []
    for name in ("p7s1", "p7s3", "p4s3"):
        mine = [r for r in runs if r["run"] == name]
        rho = [r["rho"] for r in mine]
        out += [statistics.fmean(rho), statistics.stdev(rho), min(rho), max(rho),
                sum(r["rho"] > 0 and r["p"] < 0.01 for r in mine),
                statistics.fmean(r["val_accuracy"][-1][1] for r in mine)]
    out.append(max(r["p"] for r in runs if r["run"] == "p4s3"))
    return out + [sum(r.get("cpu_s", 0.0) for r in runs if r["seed"] in NEW_SEEDS) / 60]


def _new_seed_rows(label: Callable[[dict], str]) -> Callable[[list[dict]], list[str]]:
    """Rows of a heldout.py sweep's new seeds: arm | test loss, seeds 3 / 4 / 5 | mean over all seeds | min-max
    over all seeds."""
    def rows(results: list[dict]) -> list[str]:
        out = []
        for arm, (_, report) in _arms(results, label).items():
            new = [r["test_loss"] for r in report if r["seed"] in NEW_SEEDS]
            every = [r["test_loss"] for r in report]
            out.append(f"| {arm} | " + " / ".join(str(t) for t in new) + f" | {sum(every) / len(every):.4f} "
                       f"| {min(every)}-{max(every)} |")
        return out
    return rows


def _only_new(render: Callable[[list[dict]], list[str]]) -> Callable[[list[dict]], list[str]]:
    """A section's table rendered from its re-run's seeds only (the paragraph's extra still reads every seed)."""
    return lambda rows: render([r for r in rows if r["seed"] in NEW_SEEDS])


def _positions_new_rows(rows: list[dict]) -> list[str]:
    """Section 2's paragraph on seeds 3, 4, 5: per scheme the final val loss per new seed, mean, spread and the
    difference from learned positions on the same seed (section 2's summary table, new seeds only)."""
    return _positions_rows([r for r in rows if r["seed"] in NEW_SEEDS])[-len(POSITION_NAMES):]


def _activations_new_rows(rows: list[dict]) -> list[str]:
    """Section 3's paragraph on seeds 3, 4, 5: per activation the final val loss per new seed, mean, spread and the
    difference from ReLU on the same seed (section 3's summary table, new seeds only)."""
    new = [r for r in rows if r["seed"] in NEW_SEEDS]
    runs = {a: _arm_runs(new, "lr 2e-3 (section 3)", a) for a in ACTIVATION_NAMES}
    return [_seed_row(ACTIVATION_NAMES[a].split(",")[0], rs, runs["relu"] if a != "relu" else None)
            for a, rs in runs.items()]


def _residual_new_extra(rows: list[dict]) -> list[float]:
    """Section 23's paragraph on seeds 3, 4, 5: _residual_extra over every seed, then the new seeds' smallest gap of
    no LayerNorm above the block, the first seeds' largest (both depths), and how many of all the no-LayerNorm runs
    end at most 0.1 above the block (the rule's threshold), of how many; the new runs without a residual that stayed
    on the plateau, of how many, and their final val loss (min, max); the new runs without LayerNorm that left it,
    of how many."""
    full = {(r["n_layers"], r["seed"]): r["val"][-1][1] for r in rows if r["arm"] == "both"}
    gaps = {(r["n_layers"], r["seed"]): r["val"][-1][1] - full[(r["n_layers"], r["seed"])]
            for r in rows if r["arm"] == "no norm"}
    new = [r for r in rows if r["seed"] in NEW_SEEDS]
    stuck = [r for r in new if r["arm"] in ("no residual", "neither")]
    trained = [r for r in new if r["arm"] == "no norm"]
    return [*_residual_extra(rows), min(g for (_, s), g in gaps.items() if s in NEW_SEEDS),
            max(g for (_, s), g in gaps.items() if s not in NEW_SEEDS), sum(g <= 0.1 for g in gaps.values()), len(gaps),
            sum(r["plateau_end"] is None for r in stuck), len(stuck), min(r["val"][-1][1] for r in stuck),
            max(r["val"][-1][1] for r in stuck), sum(r["plateau_end"] is not None for r in trained), len(trained)]


def _attn_scale_new_rows(rows: list[dict]) -> list[str]:
    """Section 5's paragraph on seeds 3, 4, 5: per d_k the step-600 val loss of each arm on the new seeds (mean) and
    the paired differences, as the section's summary table prints them."""
    new = [r for r in rows if r.get("seed") in NEW_SEEDS]
    return [line for line in _attn_scale_rows(new) if line.startswith(("| 32 |", "| 128 |"))]


def _mask_new_rows(rows: list[dict]) -> list[str]:
    """Section 6's paragraph on seeds 3, 4, 5: per run, val every position @1000, the honest losses and layer 0's
    mass on future keys; then the first 24 characters of each leaky run's sample."""
    out = []
    for r in sorted((r for r in rows if r.get("seed") in NEW_SEEDS),
                    key=lambda r: (r["arm"] == "mask after softmax", r["seed"])):
        h = r["honest_last_position"]
        mass = f"{r['future_mass_mean'][0]:.3f}" if "future_mass_mean" in r else "0 by construction"
        out.append(f"| {r['arm']} ({r['seed']}) | {dict(r['val_full_window'])[1000]:.3f} "
                   f"| {h['8']:.3f} / {h['16']:.3f} / {h['64']:.3f} | {mass} |")
        if "sample" in r:
            out.append(f"seed {r['seed']}: `{r['sample'][:24]!r}`")
    return out


def _heads_row_extra(rows: list[dict]) -> list[float]:
    """Row 17: _tuned_extra over every seed, then on how many seeds 16 heads score worse than 4, of how many."""
    arms = _arms(rows, _heads_label)
    four, sixteen = ([r["test_loss"] for r in arms[k][1]] for k in ("4 | 16", "16 | 4"))
    return [*_tuned_extra(_heads_label)(rows), sum(b > a for a, b in zip(four, sixteen, strict=True)), len(four)]


def _nsp_row_extra(rows: list[dict]) -> list[float]:
    """Row 21: _nsp_extra over every seed, then how many seeds."""
    return [*_nsp_extra(rows), len({r["seed"] for r in rows})]


def _rerun_rows(rows: list[dict]) -> list[str]:
    from experiments_trace.verdicts import rerun_rows  # the table compares verdict rules, which import this module

    return rerun_rows()


def _rerun_extra(rows: list[dict]) -> list[float]:
    from experiments_trace.verdicts import rerun_extra

    return rerun_extra()


ALL_ONES = {phrase: "the all-ones vector 1 (a name, not a value)" for phrase in
            ("vector 1", "orthogonal to 1", "with 1", "close to 1", "towards 1", "near 1")}
ALL_ONES["answers are 0 and"] = ALL_ONES["1 by construction"] = "what (x - mean) / std gives (arithmetic)"

TRACES = [
    Trace("## 4.", "heads_cost.jsonl", _heads_cost_rows,
          allowed={"2.13": "torch version", "1.00": "h = 1 is the reference of every ratio", **HEADS_HISTORY,
                   "gave 13-14x": "the earlier blocked timing (history)",
                   "about 10x": "how the page says to read the ratios",
                   "products as 0": "what FlopCounterMode counts for SDPA's attention products"}),
    Trace("| 4 |", "heads_cost.jsonl", allowed={"17.7": "the issue item the claim came from"}),
    Trace("## Learned ViT positions", "vit_grid.jsonl", _vit_grid_rows, _cpu_total, doc="experiments_vit_grid.md",
          end=GRID_NEW_START if "9" in RERUN_DONE else "",
          allowed={"2,000": "permutations per p-value (a setting)", "0.01": "the p threshold for a grid (a setting)",
                   "4,000": "the recipe's training images (a setting)",
                   "2001": "2,000 permutations + 1, the p-value's denominator (arithmetic)"}),
    Trace("| 9 |", VIT_GRID_FILES, extra=_vit_grid_new_extra if "9" in RERUN_DONE else None,
          allowed={"17.1": "the issue item the claim came from"}),
    Trace("## 7.", "recall_distance.jsonl", _recall_rows, _cpu_total, end=_new_seeds_start("7"),
          allowed={"2,048": "validation / test sequences (a setting)",
                   "0.53": "1/2 + 1/2 / 16: what a 12-token reach allows at k 8 (arithmetic)",
                   "(0-15)": "the task's values (a setting)", "distances 8-15": "k 8's distances (arithmetic)",
                   "1, 2, 4, ...": "the dilations (a setting)", "k + 7": "the task's farthest distance (a setting)",
                   "k..k+7": "the task's farthest distance (a setting)"}),
    Trace("| 7 |", RECALL_FILES, extra=_recall_new_extra if "7" in RERUN_DONE else None,
          allowed={"17.6": "the issue item the claim came from"}),
    Trace("## 10.", "gpt2_params.jsonl", _gpt2_rows, _gpt2_extra,
          allowed={"50,257": "GPT-2's vocabulary (a setting)", "1,024": "GPT-2's context (a setting)",
                   "40,478": "GPT-1's vocabulary (a setting)", "1.5": "seed 002's \"1.5B\" (the claim checked)",
                   "1,600": "the largest GPT-2's width (a setting)"}),
    Trace("**Quality at equal compute.**", "tokenizer_quality.jsonl", _tokenizer_quality_rows,
          _tokenizer_quality_extra, end=_new_seeds_start("11") or "\n## 12.",
          allowed={"90": "the share of the characters the BPE tokenizer is trained on (a setting)",
                   "1e-3": "the gpt-bpe recipe's own learning rate (a setting, not used here)"}),
    Trace("**Quality against full attention.**", "efficient_attention_quality.jsonl", _efficient_quality_rows,
          _efficient_quality_extra, end=_new_seeds_start("13") or "\n## 14."),
    Trace("## 11.", "tokenizer_cost.jsonl", _tokenizer_rows, end="**Quality at equal compute.**",
          allowed={"200,000": "characters tokenized (a setting)", "2,000": "characters per passage (a setting)",
                   "50,257": "GPT-2's vocabulary"}),
    Trace("## 12.", "meanings.jsonl", _meanings_rows, allowed={"→ 3 ": "the token \"3\" (a word asked about)"}),
    Trace("## 13.", "efficient_attention_cost.jsonl", _efficient_rows, _efficient_cost_extra,
          end="**Quality against full attention.**",
          allowed={"2.00": "p of an n² cost (arithmetic)", "1.00": "p of an n cost (arithmetic)",
                   "0.5": "the share per doubling of an n cost (arithmetic)"}),
    Trace("**Re-measured from `docs/experiments/results/ln_warmup.jsonl`**", "ln_warmup.jsonl", _ln_warmup_rows,
          allowed={"1.0": "the clipping threshold (a setting)"}),
    Trace("## 14.", _EXPLANATION_FILES, _explanation_rows, _explanation_null_extra,
          allowed={"0.5": "the threshold for a head's median (a setting)",
                   "1": "1/2: the most weight a matched null can take (the others hold the rest), and the chance "
                        "level of a median comparison (arithmetic)",
                   "2": "1/2 (arithmetic, as above)", "40": "uniform ranks over 40 keys (arithmetic)"}),
    Trace("| 14 |", _EXPLANATION_FILES,
          allowed={"0.5": "the threshold, and the chance level of a median comparison (a setting)",
                   "1": "1/2, as in section 14 (arithmetic)", "2": "1/2 (arithmetic)"}),
    Trace("## 15.", "layernorm_geometry.jsonl", _ln_geometry_rows, _ln_geometry_extra,
          allowed={"0.1": "the weight threshold (a setting)", "2023": "a year", **ALL_ONES}, prefer_extra=True),
    Trace("## 16.", NO_MASK_FILES, _no_mask_rows, _no_mask_extra,
          allowed={"0.016": "1/64, uniform attention over 64 keys (arithmetic)"}),
    Trace("| 16 |", NO_MASK_FILES, extra=_no_mask_extra),
    Trace("| 10 |", "gpt2_params.jsonl", allowed={"1.5": "seed 002's \"1.5B\" (the claim checked)"}),
    Trace("| 11 |", ("tokenizer_cost.jsonl", *TOKEN_QUALITY_FILES), extra=_tokenizer_quality_extra,
          allowed={"2,000": "characters per passage (a setting)"}),
    Trace("| 12 |", "meanings.jsonl"),
    Trace("| 13 |", ("efficient_attention_cost.jsonl", *EFF_QUALITY_FILES),
          extra=_efficient_row_extra),
    Trace("| 15 |", "layernorm_geometry.jsonl", extra=_ln_geometry_extra, allowed=ALL_ONES,
          prefer_extra=True),
    Trace("## 17.", "heads_quality.jsonl", _tuned_rows(_heads_label), _tuned_extra(_heads_label),
          end=_new_seeds_start("17")),
    Trace("| 17 |", HEADS_FILES, extra=_heads_row_extra),
    Trace("## 18.", ("window_mlp.jsonl", "window_mlp_2000.jsonl"), _tuned_rows(_window_label),
          _tuned_extra(_window_label), end=_new_seeds_start("18")),
    Trace("| 18 |", ("window_mlp.jsonl", "window_mlp_2000.jsonl", *WINDOW_FILES[1:]),
          extra=_tuned_extra(_window_label)),
    Trace("## 19.", ("position_concat.jsonl", "position_concat_untied.jsonl"), _tuned_rows(_position_label),
          _tuned_extra(_position_label), end=_new_seeds_start("19"),
          allowed={"0.02": "the std new embedding tables start at (a setting)",
                   "8,192": "64 x 128, the entries of W (arithmetic)",
                   "x 128": "64 + 64, the concatenated width (arithmetic)",
                   "sqrt(128)": "64 + 64, the concatenated width (arithmetic)"}),
    Trace("| 19 |", (*POSITION_FILES, *UNTIED_FILES), extra=_tuned_extra(_position_label)),
    # sections 5-6
    Trace("## 5.", ("attn_scale.jsonl", "attn_scale_dk128.jsonl"), _attn_scale_rows, _attn_scale_extra,
          end=_new_seeds_start("5"),
          allowed={"0.5": "the variance of tests/test_experiments.py's random q (a test's setting)",
                   "0.02": "attnlab's init std (a setting)", "2,000": "the shipped checkpoint's steps (a setting)"}),
    Trace("## 6.", "mask_after_softmax.jsonl", _mask_rows, _mask_extra, end=_new_seeds_start("6"),
          allowed={"1,000": "training steps (a setting)", "0.8": "the sampling temperature (a setting)",
                   "(63 - i)": "the last position of a 64-character window (arithmetic)",
                   "position, 63,": "the last position of a 64-character window (arithmetic)"}),
    Trace("| 5 |", SCALE_FILES, extra=_attn_scale_extra,
          allowed={"17.2": "the issue item the claim came from"}),
    Trace("| 6 |", MASK_FILES, extra=_mask_extra,
          allowed={"17.4": "the issue item the claim came from", "1,000": "training steps (a setting)"}),
    # section 8
    Trace("## 8.", VIT_CNN_FILES, _vit_cnn_rows, _vit_cnn_extra, end=_new_seeds_start("8"),
          allowed={"5,000": "MNIST-5k's images (the data set)", "4,000": "the recipe's training images (a setting)",
                   "6,000": "the recipe's steps (a setting)", "0.05": "weight decay (a setting)",
                   "1.0": "the clipping threshold (a setting)", "2.13": "torch version",
                   "3.5": "the machine's load average (not a result)"}),
    Trace("| 8 |", (*VIT_CNN_FILES, *VIT_CNN_MAIN_FILES[1:]),
          extra=lambda rows: _vit_cnn_extra([r for r in rows if r["seed"] not in NEW_SEEDS])
          + (_vit_cnn_new_extra(rows) if "8" in RERUN_DONE else []),
          allowed={"17.5": "the issue item the claim came from", "6,000": "the recipe's steps (a setting)",
                   "1,000": "the recipe's test images (a setting)"}),
    # sections 2-3
    Trace("## 2.", "positions.jsonl", _positions_rows, _positions_extra, end=_new_seeds_start("2"),
          allowed={"4,096": "64 x 64, the learned position table's entries (arithmetic)",
                   "0.02": "the std token embeddings start at (a setting)"}),
    Trace("## 3.", ("activations.jsonl", "positions.jsonl", "activations_1500.jsonl"), _activations_rows,
          _activations_extra, end=_new_seeds_start("3"),
          allowed={"0.02": "attnlab's init std (a setting)", "0.125": "1/sqrt(64), the scaled init's std (a setting)",
                   "0.5": "GELU's slope at 0 (arithmetic)", "0.4": "GELU's x² coefficient, 1/sqrt(2 pi) (arithmetic)",
                   "17.8": "the issue item the subsection answers"}),
    Trace("| 2 |", POSITIONS_FILES, extra=_positions_row_extra),
    Trace("| 3 |", ACTIVATION_FILES, extra=_activations_extra,
          allowed={"17.8": "the issue item the row's second half answers"}),
    # section 1, HF check and subsections
    Trace("### Without clipping, at a higher learning rate", ("ln_hot.jsonl", "ln_1500.jsonl"),
          _ln_runs_rows(lambda r: f"{r['placement']}-LN, lr 6e-3, no clipping", lambda r: r.get("lr") == 6e-3),
          _ln_runs_extra, allowed={"1.0": "the clipping threshold (a setting)",
                                   "2e-3": "the recipe's learning rate (a setting)"},
          end="\n### Post-LN with warmup"),
    Trace("### Post-LN with warmup", ("ln_post_warmup.jsonl", "ln_1500.jsonl"),
          _ln_runs_rows(lambda r: f"post-LN, warmup {r['warmup']}", lambda r: r["warmup"] > 0), _ln_runs_extra,
          allowed={"17.3": "the issue item", "1.0": "the clipping threshold (a setting)"}, end="\n### Warmup sweep"),
    # section 1
    Trace("## 1.", ("ln_1500.jsonl", "ln_1500_warmup100.jsonl", "ln_300.jsonl", "ln_warmup.jsonl"), _ln_1500_rows,
          _ln_1500_extra,
          end="**Re-measured from `docs/experiments/results/ln_warmup.jsonl`**",
          allowed={"26.1": "the issue item", "3.1": "the train loss that counts as off the plateau (a setting)",
                   "4.613": "the first-step loss of the old runs (history)"}),
    Trace("**Why this size.**", ("ln_probes.jsonl", "ln_300.jsonl"), _ln_probe_rows),
    Trace("**Is attnlab's pre-LN path right?", ("check_ln.jsonl", "ln_1500.jsonl"), _check_ln_rows, _check_ln_extra,
          end="\n### Without clipping", allowed={"0.02": "GPT-2's init std (a setting)",
                                                  "0.0035": "0.02 / sqrt(32), the scaled init's std (a setting)"}),
    Trace("### Warmup sweep", ("ln_warmup.jsonl", "ln_probes.jsonl", "ln_300.jsonl", "ln_1500.jsonl",
                               "ln_1500_warmup100.jsonl", "ln_post_warmup.jsonl"), extra=_sweep_extra,
          end=_new_seeds_start("1") or "\n## 2.",
          allowed={"17.3": "the issue item", "2,000": "the issue's longest warmup (a setting)"}),
    Trace("**Sections 1-3.**", "mask_after_softmax.jsonl",
          allowed={"0.99": "AdamW's beta 2 (a setting)", "1,500": "steps per run (a setting)"}),
    Trace("**Machine and date.** Sections 1-3", ("ln_1500.jsonl",), extra=_ln_1500_extra,
          allowed={"torch 2.13": "torch version"}),
    Trace("| 1 |", ("ln_1500.jsonl", "ln_1500_warmup100.jsonl", "ln_hot.jsonl", "ln_post_warmup.jsonl",
                    "ln_300.jsonl", "ln_probes.jsonl", "ln_warmup.jsonl", *LN_FILES[3:]),
          extra=lambda rows: _ln_1500_extra(rows) + (_ln_new_extra(rows) if "1" in RERUN_DONE else []),
          prefer_extra=True,
          allowed={"17.3": "the issue item the claim came from"}),
    Trace("**A second set of sentences**", AMBIGUITY_FILES, extra=_ambiguity_second_extra, end="\n\n",
          allowed={"0.9": "the accuracy threshold (a setting)", "2026-12-07": "the date of the re-run"}),
    Trace("## 20.", "ambiguity.jsonl", _ambiguity_rows, _ambiguity_extra, end="**A second set of sentences**",
          allowed={"0.862": "the outside check's cosine of two fruit apples (compared with, not measured here)",
                   "0.676": "the outside check's fruit-against-company cosine (compared with)",
                   "0.9": "the accuracy threshold (a setting)"}),
    Trace("| 20 |", AMBIGUITY_FILES, extra=_ambiguity_row_extra,
          allowed={"0.862": "the outside check's cosine of two fruit apples (compared with, not measured here)",
                   "0.676": "the outside check's fruit-against-company cosine (compared with)"}),
    Trace("## 21.", "nsp.jsonl", _nsp_rows, _nsp_extra, allowed=NSP_ALLOWED, end=_new_seeds_start("21")),
    Trace("| 21 |", NSP_FILES, extra=_nsp_row_extra, allowed=NSP_ALLOWED),
    Trace("## 22.", "recurrence_vs_attention.jsonl", _rva_rows, _rva_extra,
          allowed={"256": "the width d (a setting)", "4": "the batch and the heads (settings)",
                   "1-minute": "the load average's name (over 1 minute)"}),
    Trace("| 22 |", "recurrence_vs_attention.jsonl", extra=_rva_extra, allowed={"256": "the width d (a setting)"}),
    Trace("## 23.", "residual_depth.jsonl", _residual_rows, _residual_extra, end=_new_seeds_start("23"),
          allowed={"3.1": "the plateau's level (PLATEAU_END in ln_warmup.py, a setting)",
                   "10": "the steps a plateau mean covers (a setting)", "480": "validation windows (a setting)",
                   "2e-3": "the recipe's learning rate (a setting)", "1.0": "the clipping threshold (a setting)",
                   "100": "warmup steps (a setting)"}),
    Trace("| 23 |", RESIDUAL_FILES, extra=_residual_extra),
]

# The page's own prose around the sections: what it says about seeds, dates, machines and the test, each number a
# setting, a date or a count of the results files.
QUALITY_FILES = ("heads_quality.jsonl", "window_mlp.jsonl", "window_mlp_2000.jsonl", "position_concat.jsonl",
                 "position_concat_untied.jsonl")  # sections 17-19's runs, one line each


def _run_count(rows: list[dict]) -> list[float]:
    """How many runs the files hold (one line each)."""
    return [len(rows)]


SEED_NAMES = {"601-771": "the lecture's course number (a name)", "Transformers 0": "a seed text's title (a name)"}
TORCH = {"torch 2.13": "torch version"}
MUTATION_COUNT = "the mutation test's count (test_every_changed_number_and_verdict_is_caught checks it)"
TRACES += [
    Trace("The seed column names", (), end="\n\n", allowed=SEED_NAMES),
    Trace("Row 8 was rerun", (*VIT_CNN_FILES, "vit_grid.jsonl", "recall_distance.jsonl", *QUALITY_FILES), end="\n\n",
          allowed={"6,000": "the ViT recipe's steps (a setting)", "1e-2": "the top of the lr grid (a setting)",
                   "1,500": "row 9's steps (a setting)", "600 steps": "rows 17-19's steps (a setting)",
                   "d_model 64": "rows 17-19's width (a setting)"}),
    Trace("Sections 1-3 train the gpt-char recipe", (), end="\n\n", allowed={"13,647": MUTATION_COUNT}),
    Trace("History: an earlier version", ("ln_1500.jsonl",), end="\n\n",
          allowed={"300": "the earlier version's steps (history, a setting)", "1,500": "steps per run (a setting)"}),
    Trace("## Sections 4-8", ("heads_cost.jsonl",), allowed=TORCH),
    Trace("## Sections 10-16", ("tokenizer_quality.jsonl", "efficient_attention_quality.jsonl", "no_mask.jsonl",
                                "no_mask_1000.jsonl", "no_mask_2000.jsonl"),
          allowed={**TORCH, "(seeds 0 and 1)": "section 14's null seeds (settings)"}),
    Trace("## Sections 17-19", QUALITY_FILES, extra=_run_count,
          allowed={"1e-3": "the lr grid (a setting)", "3e-3": "the lr grid (a setting)",
                   "1e-2": "the lr grid (a setting)",
                   "512": "windows per split (a setting)", "10%": "the recipe's held-out share (a setting)",
                   "of 64 characters": "the window (a setting)", **TORCH}),
]

# Each section's paragraph on its re-run's seeds 3, 4, 5 (a part of its own, up to the next section), once done.
NEW_SEED_PARTS = {
    "1": lambda: Trace(_new_seeds_start("1"), LN_FILES, _ln_new_rows, _ln_new_extra, end="## 2.", prefer_extra=True,
                       allowed={"3.1": "the train loss that counts as off the plateau (a setting)",
                                "With 100 warmup": "the warmup's steps (a setting)",
                                "with 100 warmup": "the warmup's steps (a setting)"}),
    "7": lambda: Trace(_new_seeds_start("7"), RECALL_FILES, _recall_new_rows, _recall_new_extra, end="## 8.",
                       allowed={"k..k+7": "the task's farthest distance (a setting)"}),
    "8": lambda: Trace(_new_seeds_start("8"), VIT_CNN_MAIN_FILES, _vit_cnn_new_rows, _vit_cnn_new_extra,
                       end="## Sections 10-16", prefer_extra=True,
                       allowed={"--vit-cap 6000": "the ViT's steps (a setting)",
                                "--cnn-cap 4000": "the CNN's steps (a setting)",
                                "--patience 1000": "never stops a run early (a setting)",
                                "--sizes 3500 500 1000": "the training sizes (settings)",
                                "--sizes 250": "the training size (a setting)",
                                "(ViT 6,000 steps": "the ViT's steps (a setting)", "CNN 4,000;": "the CNN's steps"}),
    "9": lambda: Trace(GRID_NEW_START, VIT_GRID_FILES, _vit_grid_new_rows, _vit_grid_new_extra,
                       doc="experiments_vit_grid.md", end=END_OF_PAGE),
    "2": lambda: Trace(_new_seeds_start("2"), POSITIONS_FILES, _positions_new_rows, _positions_extra, end="## 3."),
    "3": lambda: Trace(_new_seeds_start("3"), ACTIVATION_FILES, _activations_new_rows, _activations_extra,
                       end="## Sections 4-8", allowed={"0.02": "attnlab's init std (a setting)"}),
    "5": lambda: Trace(_new_seeds_start("5"), SCALE_FILES, _attn_scale_new_rows, _attn_scale_extra, end="## 6."),
    "6": lambda: Trace(_new_seeds_start("6"), MASK_FILES, _mask_new_rows, _mask_extra, end="## 7.",
                       allowed={"1,000": "training steps (a setting)"}),
    "11": lambda: Trace(_new_seeds_start("11"), TOKEN_QUALITY_FILES, _only_new(_tokenizer_quality_rows),
                        _tokenizer_quality_extra, end="## 12."),
    "13": lambda: Trace(_new_seeds_start("13"), EFF_QUALITY_FILES, _only_new(_efficient_quality_rows),
                        _efficient_quality_extra, end="## 14."),
    "17": lambda: Trace(_new_seeds_start("17"), HEADS_FILES, _new_seed_rows(_heads_label), _heads_row_extra,
                        end="## 18."),
    "18": lambda: Trace(_new_seeds_start("18"), WINDOW_FILES, _new_seed_rows(_window_label),
                        _tuned_extra(_window_label), end="## 19."),
    "19": lambda: Trace(_new_seeds_start("19"), (*POSITION_FILES, *UNTIED_FILES), _new_seed_rows(_position_label),
                        _tuned_extra(_position_label), end="## 20."),
    "21": lambda: Trace(_new_seeds_start("21"), NSP_FILES, _only_new(_nsp_rows), _nsp_extra, allowed=NSP_ALLOWED,
                        end="## 22."),
    "23": lambda: Trace(_new_seeds_start("23"), RESIDUAL_FILES, _only_new(_residual_rows), _residual_new_extra,
                        end="## Re-runs on new seeds"),
}
TRACES += [make() for row, make in NEW_SEED_PARTS.items() if row in RERUN_DONE]
TRACES += [
    Trace("## Re-runs on new seeds", (*LN_FILES, *RECALL_FILES, *VIT_GRID_FILES, *VIT_CNN_MAIN_FILES,
                                      "no_mask.jsonl", *NO_MASK_FILES[2:],
                                      *AMBIGUITY_FILES, *HEADS_FILES, *WINDOW_FILES, *POSITION_FILES, *UNTIED_FILES,
                                      *NSP_FILES, *RESIDUAL_FILES,
                                      *MASK_FILES, *TOKEN_QUALITY_FILES, *SCALE_FILES, *EFF_QUALITY_FILES,
                                      *dict.fromkeys((*ACTIVATION_FILES[3:], *POSITIONS_FILES[1:]))),
          _rerun_rows, _rerun_extra, allowed={"2026-12-07": "the date of the re-runs", "2.13": "torch version",
                                              "its 1,500-step runs": "row 1's runs (a setting)",
                                              "--vit-cap 6000": "the ViT's steps (a setting)",
                                              "--cnn-cap 4000": "the CNN's steps (a setting)",
                                              "--sizes 3500 500 1000": "the training sizes (settings)",
                                              "and 250 images": "the fourth size, run apart (a setting)"}),
]

# Numbers in docs/experiments*.md that no committed script and results file reproduce yet (issue 26.1).
UNTRACED: dict[str, str] = {}
