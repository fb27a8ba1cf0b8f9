"""The claim words of docs/experiments.md: each comparative or verdict word either follows from a rule over the
results or is pinned, and no such word stands anywhere else.

Why: the trace checks every number, but the words that carry a claim ("worse than 4 heads", "faster than the GRU",
"grow as n", "LayerNorm is not needed", "did not hurt") were free: turning one into its opposite passed every test.
A claim word is a word of one of FAMILIES (faster / slower, better / worse, above / below ...). Each place one
stands is a line of claims.tsv: the page, the text just before it and just after it (whitespace collapsed), the
word and a rule. A rule is a function here that returns the word the results give (for example "worse" when 16
heads score a higher test loss than 4 on every seed); "pinned" means the word is the one written, with no rule
over the results yet (so an edit of the word is caught, a change of the results is not); "quoted", "name" and
"place" (and "verb": "holds" as "contains", "best" as the name of a kept checkpoint, on the other pages) are pinned
too, for a word that is no result of this page: the seeds' claim under test (the top table's
claim column), the name of a thing (linear attention, a linear program) or a place on the page ("the table
above"). On docs/experiments.md three more kinds say why a word is no result of its runs: "math", a fact of
mathematics or of a model's arithmetic, true whatever the runs gave ("near 0 GELU is almost linear", a row that
"sums to less than 1", a CNN that cannot reach the marker "without more layers"); "method", how the runs were set
up or why ("ties go to the smaller rate", "a larger set contains the smaller", the reason for a null or a size);
"unmeasured", what the page says was not measured or tested ("not shown: that it holds at other sizes", "no GPU,
where the advantage would be far larger"). `problems(text, page)` reports a claim word that differs from its rule
or pin, a claims.tsv line whose place is gone, and a claim word at a place claims.tsv does not list (an invented
sentence, or a new one that needs its line).

    python tests/experiments_trace/claims.py      # rewrites claims.tsv, keeping the rules of the places it had
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments_trace.parts import (  # noqa: E402
    DOCS,
    EFF_QUALITY_FILES,
    HEADS_FILES,
    LN_FILES,
    LN_FIRST,
    MASK_FILES,
    NO_MASK_FILES,
    NSP_FILES,
    POSITIONS_FILES,
    RESIDUAL_FILES,
    SCALE_FILES,
    TOKEN_QUALITY_FILES,
    VIT_CNN_MAIN_FILES,
    WINDOW_FILES,
    _eff_runs,
    _final,
    _ln_group,
    _ln_runs,
    _load,
    _token_budgets,
)
from experiments_trace.verdicts import RULES as VERDICT_RULES  # noqa: E402
from experiments_trace.verdicts import (  # noqa: E402
    _ambiguity,
    _heads_label,
    _ln,
    _position_label,
    _test_losses,
    _window_label,
)

CLAIMS = Path(__file__).with_name("claims.tsv")
PAGES = ("experiments.md", "experiments_vit_grid.md")

# Words that carry a claim, in families of opposites (the longer form first: "not needed" before "needed").
FAMILIES: tuple[tuple[str, ...], ...] = (
    ("faster", "slower"), ("fastest", "slowest"), ("better", "worse"), ("best", "worst"), ("above", "below"),
    ("higher", "lower"), ("larger", "smaller"), ("more", "less", "fewer"), ("linear", "quadratic"),
    ("holds", "fails"), ("not needed", "needed"), ("not hurt", "hurt"),
    ("grow as n²", "grow as n log n", "grow as n"), ("grows as n²", "grows as n log n", "grows as n"))
FAMILY = {word: family for family in FAMILIES for word in family}
WORD = re.compile(r"(?<![\w-])(" + "|".join(re.escape(w) for f in FAMILIES for w in f) + r")(?![\w²-])")
ROOT = DOCS.parent


def USER_PAGES() -> list[str]:  # noqa: N802
    """The other pages of the user docs, named from the repository root (README.md, docs/cost.md ...): their claim
    words are claims.tsv's lines too (figures.py binds their numbers)."""
    from experiments_trace.figures import pages
    return pages()


def page_path(page: str) -> Path:
    """A page of PAGES is named inside docs/, one of USER_PAGES from the repository root."""
    return DOCS / page if page in PAGES else ROOT / page


# a place whose word is the one written (no rule over the results): "pinned" a claim of the page, the rest no claim
PINS = ("pinned", "quoted", "name", "place", "verb", "math", "method", "unmeasured")
CONTEXT = 40  # characters kept each side of a claim word in claims.tsv (more where that is not unique)


def normal(text: str) -> str:
    """The page with every run of whitespace one space: a claim keeps its place when a paragraph is rewrapped."""
    return re.sub(r"\s+", " ", text)


# ---------------------------------------------------------------- rules: the word the results give
def _every(pairs, word: str, other: str) -> str:
    """word when a < b for every pair, other when a > b for every pair, "mixed" otherwise."""
    pairs = list(pairs)
    return word if all(a < b for a, b in pairs) else other if all(a > b for a, b in pairs) else "mixed"


def _heads(h: int, every: bool = False) -> list[float]:
    """Test losses of h heads by seed: section 17's seeds 0, 1, 2, or (every) all seeds, as row 17 quotes them."""
    test = _test_losses(HEADS_FILES if every else ("heads_quality.jsonl",), _heads_label)
    return next(v for k, v in test.items() if k.startswith(f"{h} |"))


def _many_heads() -> str:
    """Section 17: 16 and 32 heads against 4, same seed: worse on every seed (a higher test loss)."""
    words = {_every(zip(_heads(4), _heads(h), strict=True), "worse", "better") for h in (16, 32)}
    return words.pop() if len(words) == 1 else "mixed"


def _most_heads() -> str:
    """Row 17: 32 heads against 4, same seed, over all seeds: worse on every seed."""
    return _every(zip(_heads(4, True), _heads(32, True), strict=True), "worse", "better")


def _one_head_mean() -> str:
    """Row 17: one head against four, mean test loss over all seeds."""
    one, four = _heads(1, True), _heads(4, True)
    return "worse" if sum(one) / len(one) > sum(four) / len(four) else "better"


def _rva(n: int, call: str, threads: int, layer: str) -> float:
    rows = _load("recurrence_vs_attention.jsonl")
    return next(r["wall_ms"]["median"] for r in rows
                if (r["n"], r["call"], r["threads"], r["layer"]) == (n, call, threads, layer))


def _attention_up_to_1024() -> str:
    """Row 22 / section 22: attention against the GRU on one thread, every n up to 1,024, both calls."""
    return _every(((_rva(n, c, 1, "attention"), _rva(n, c, 1, "GRU")) for n in (64, 256, 1024)
                   for c in ("forward", "train step")), "faster", "slower")


def _gru_forward_4096() -> str:
    """Section 22: the GRU's one-thread forward at n 4,096 against attention's."""
    return _every([(_rva(4096, "forward", 1, "GRU"), _rva(4096, "forward", 1, "attention"))], "faster", "slower")


def _gru_two_threads_4096() -> str:
    """Section 22: the GRU's two-thread forward at n 4,096 against its one-thread forward."""
    return _every([(_rva(4096, "forward", 2, "GRU"), _rva(4096, "forward", 1, "GRU"))], "faster", "slower")


def _exponent(variant: str) -> float:
    rows = _load("efficient_attention_cost.jsonl")
    ns = sorted({r["n"] for r in rows})
    flops = {(r["n"], r["variant"]): r["flops"] for r in rows}
    return math.log2(flops[(ns[-1], variant)] / flops[(ns[-2], variant)])


def _growth(*variants: str) -> str:
    """Row 13: how FLOPs grow, by the exponent over the last doubling of n: n below 1.02, n log n to 1.2, n²
    from 1.9 (between 1.2 and 1.9 none of the three)."""
    words = set()
    for v in variants:
        p = _exponent(v)
        words.add("grow as n" if p < 1.02 else "grow as n log n" if p < 1.2 else "grow as n²" if p >= 1.9 else "?")
    return words.pop() if len(words) == 1 else "mixed"


def _grows(variant: str) -> Callable[[], str]:
    return lambda: _growth(variant).replace("grow ", "grows ")


def _layernorm_needed() -> str:
    """Section 23: LayerNorm is not needed when every run without it leaves the unigram plateau."""
    rows = _load("residual_depth.jsonl")
    return "not needed" if all(r["plateau_end"] is not None for r in rows if r["arm"] == "no norm") else "needed"


def _nsp_hurt() -> str:
    """Row 21 / section 21: dropping NSP did not hurt MLM when MLM only's loss is no worse than MLM + NSP's by more
    than the smaller seed spread, on every seed."""
    rows = _load(NSP_FILES)
    a = sorted((r for r in rows if r["arm"] == "mlm"), key=lambda r: r["seed"])
    b = sorted((r for r in rows if r["arm"] == "mlm+nsp"), key=lambda r: r["seed"])
    spread = min(max(r["mlm_loss"] for r in rs) - min(r["mlm_loss"] for r in rs) for rs in (a, b))
    return "not hurt" if all(x["mlm_loss"] - y["mlm_loss"] <= spread for x, y in zip(a, b, strict=True)) else "hurt"


def _positions(name: str) -> list[float]:
    """Row 2's final val losses of one scheme by seed, over every seed the row quotes (the first runs and the
    re-run's)."""
    return [_final(r) for r in sorted((r for r in _load(POSITIONS_FILES) if r["position"] == name),
                                      key=lambda r: r["seed"])]


def _rope_below_learned() -> str:
    """Row 2: RoPE's final val loss against learned positions', same seed."""
    return _every(zip(_positions("rope"), _positions("learned"), strict=True), "below", "above")


def _dk128(files: tuple[str, ...] = ("attn_scale_dk128.jsonl",)) -> str:
    """Section 5 (seeds 0, 1, 2) or, with SCALE_FILES, row 5 (every seed it quotes): at d_k 128, training without
    the scale against with it (final val loss, same seed)."""
    rows = [r for r in _load(files) if r.get("d_k") == 128 and "arm" in r]
    runs = {arm: [_final(r) for r in sorted((r for r in rows if r["arm"] == arm), key=lambda r: r["seed"])]
            for arm in {r["arm"] for r in rows}}
    without = next(v for k, v in runs.items() if k != "1/sqrt(d_k)")
    return _every(zip(runs["1/sqrt(d_k)"], without, strict=True), "worse", "better")


def _mask_after_softmax(files: tuple[str, ...] = ("mask_after_softmax.jsonl",)) -> str:
    """Section 6 (seeds 0, 1, 2) or, with MASK_FILES, row 6 (every seed it quotes): masking after the softmax,
    honest loss at 8 and 16 characters against add-one unigram counts."""
    rows = _load(files)
    base = next(r for r in rows if "baseline" in r)["unigram_last_position"]
    after = [r for r in rows if r.get("arm") == "mask after softmax"]
    return _every(((base[n], r["honest_last_position"][n]) for r in after for n in ("8", "16")), "worse", "better")


def _bpe_better(files: tuple[str, ...] = ("tokenizer_quality.jsonl",)) -> str:
    """Section 11 (seeds 0, 1, 2) or, with TOKEN_QUALITY_FILES, row 11 (every seed it quotes): the 2,048-token BPE
    against characters, bits per character, same seed and budget."""
    budgets = _token_budgets(_load(files))
    return _every(((b["bits_per_char"], c["bits_per_char"]) for budget in budgets
                   for c, b in zip(budget["character"], budget["BPE 2048"], strict=True)), "better", "worse")


def _variant_vs_full(variant: str, below: bool,
                     files: tuple[str, ...] = ("efficient_attention_quality.jsonl",)) -> Callable[[], str]:
    """Section 13 (seeds 0, 1, 2) or, with EFF_QUALITY_FILES, row 13 (every seed it quotes): a variant's val loss
    against full attention's, same seed ("below" / "above", or "better" / "worse")."""
    def rule() -> str:
        runs = _eff_runs(_load(files))
        pairs = zip((r["val_loss"] for r in runs[variant]), (r["val_loss"] for r in runs["full"]), strict=True)
        return _every(pairs, "below", "above") if below else _every(pairs, "better", "worse")
    return rule


def _window_higher() -> str:
    """Row 18: a wider window (less hidden width at the same parameters) gives a higher mean test loss."""
    test = _test_losses(WINDOW_FILES, _window_label)  # row 18 quotes all seeds
    test.pop("transformer, context 64")
    means = [sum(v) / len(v) for _, v in sorted(test.items(), key=lambda kv: int(re.search(r"w (\d+)", kv[0])[1]))]
    return _every(zip(means, means[1:], strict=False), "higher", "lower")


def _ambiguity_above() -> str:
    """Row 20: within-sense cosine above across-sense after the first blocks (the row's verdict rule)."""
    return "above" if _ambiguity() == ["holds"] else "below"


def _no_norm_above() -> str:
    """Row 23: without LayerNorm the final val loss against the block with it, same depth and seed (the largest gap
    is what the row quotes: above when it is positive)."""
    rows = _load(RESIDUAL_FILES)
    full = {(r["n_layers"], r["seed"]): _final(r) for r in rows if r["arm"] == "both"}
    gap = max(_final(r) - full[(r["n_layers"], r["seed"])] for r in rows if r["arm"] == "no norm")
    return "above" if gap > 0 else "below"


def _warmup_rescues() -> str:
    """Row 1: post-LN with 100 warmup steps against pre-LN without warmup, final val loss, same seed."""
    warm = _ln_runs(_load("ln_post_warmup.jsonl"), 1500, "post", 100)
    pre = _ln_runs(_load("ln_1500.jsonl"), 1500, "pre")
    return _every(zip((_final(r) for r in warm), (_final(r) for r in pre), strict=True), "below", "above")


def _no_mask_honest() -> str:
    """Section 16: the unmasked model's honest last-position loss (16 characters) against the masked one's, at every
    budget and seed."""
    rows = _load(NO_MASK_FILES)
    by = {(r["steps"], r["seed"], r["arm"]): r["honest_last_position"]["16"] for r in rows}
    return _every(((by[(n, s, "causal mask")], by[(n, s, "no mask")]) for n, s, _ in by), "worse", "better")


def _position(arm: str) -> list[float]:
    return _test_losses(("position_concat.jsonl",), _position_label)[arm]


def _proj_vs_add() -> str:
    """Section 19: concatenate-and-project against add, test loss, same seed."""
    return _every(zip(_position("add"), _position("concat, proj."), strict=True), "worse", "better")


def _untied_vs_add() -> str:
    """Section 19: add with its own (untied) head against tied add, test loss, same seed."""
    untied = [r["test_loss"] for r in sorted(_load("position_concat_untied.jsonl"), key=lambda r: r["seed"])]
    return _every(zip(_position("add"), untied, strict=True), "worse", "better")


def _widest_window() -> str:
    """Section 18: the w 64 window MLP against the transformer, mean test loss."""
    test = _test_losses(("window_mlp.jsonl",), _window_label)
    mean = {k: sum(v) / len(v) for k, v in test.items()}
    w64 = next(v for k, v in mean.items() if "w 64" in k)
    return _every([(mean["transformer, context 64"], w64)], "worse", "better")


def _local_time_256() -> str:
    """Section 13: local attention's time at n 256 against full attention's (median of the rounds' ratios)."""
    r = next(r for r in _load("efficient_attention_cost.jsonl") if r["n"] == 256 and r["variant"] == "local")
    return "slower" if r["time_vs_full"]["median"] > 1 else "faster"


def _warmup_lowers_pre_ln() -> str:
    """Row 1: pre-LN with 100 warmup steps against pre-LN without, final val loss, same seed."""
    warm = _ln_runs(_load("ln_1500_warmup100.jsonl"), 1500, "pre", 100)
    cold = _ln_runs(_load("ln_1500.jsonl"), 1500, "pre")
    return _every(zip((_final(r) for r in warm), (_final(r) for r in cold), strict=True), "lower", "higher")


def _sweep_post_below_pre() -> str:
    """Row 1: in the 600-step warmup sweep, post-LN against pre-LN at the same warmup (above 0), same seed."""
    rows = _load("ln_warmup.jsonl")
    warmups = sorted({r["warmup"] for r in rows} - {0})
    return _every(((_final(a), _final(b)) for w in warmups for a, b in
                   zip(_ln_runs(rows, 600, "post", w), _ln_runs(rows, 600, "pre", w), strict=True)), "below", "above")


def _no_head_above_half() -> str:
    """Row 14: "no head's median above 0.5" holds when no head's median rank correlation exceeds 0.5 (else the
    sentence would have to say below)."""
    rows = [r for r in _load("attention_explanation.jsonl") if r.get("summary") and "rho_median" in r]
    return "above" if all(r["head_median_max"] <= 0.5 for r in rows) else "below"


def _nsp_lower() -> str:
    """Section 21: MLM + NSP's MLM loss against MLM only's, same seed, on its seeds 0, 1, 2 (row 21 quotes every
    seed, where the two cross: its word is pinned)."""
    rows = _load("nsp.jsonl")
    a, b = (sorted((r for r in rows if r["arm"] == arm), key=lambda r: r["seed"]) for arm in ("mlm+nsp", "mlm"))
    return _every(zip((r["mlm_loss"] for r in a), (r["mlm_loss"] for r in b), strict=True), "lower", "higher")


NO_GAIN = 0.02  # nats: a run whose val loss moves less than this from step 250 to its end has not improved (a setting)


def _post_ln_stuck() -> str:
    """Row 1: post-LN without warmup, where it stays on the plateau, is "no better than at step 250" when no such
    seed's final val loss is more than NO_GAIN below its step-250 loss ("no worse" when none is more than NO_GAIN
    above it, and the words differ)."""
    runs = [r for r in _ln_group(_load(LN_FILES), "post", 0) if r["plateau_end"] is None]
    gains = [r["val"][0][1] - _final(r) for r in runs]  # val[0] is step 250
    return "better" if all(g < NO_GAIN for g in gains) else "worse"


def _one_sense_less() -> str:
    """Row 20: one-sense words in two topics separate less than ambiguous words: after MiniLM's blocks their mean
    gap (within-topic minus across-topic cosine) spans lower values than the ambiguous words' (both ends)."""
    blocks = [r for r in _load("ambiguity.jsonl") if r["model"] == "minilm" and r["layer"] > 0]
    control, words = ([r[key] for r in blocks] for key in ("control_gap_mean", "gap_mean"))
    return _every([(min(control), min(words)), (max(control), max(words))], "less", "more")


def _top_key_above_uniform() -> str:
    """Row 14: the most-attended key is the most harmful to remove more often than uniform ranks over the 40 keys
    of a text would give (1/40), in both models."""
    rows = [r for r in _load("attention_explanation.jsonl") if r.get("summary") and "top_agree" in r]
    return _every(((1 / 40, r["top_agree"]) for r in rows), "above", "below")


def _verdict(row: int, index: int = 0) -> Callable[[], str]:
    """A "holds" or "fails" that restates a verdict of the top table: the row's verdict rule (verdicts.py), its
    index-th word, "contradicted" written as "fails"."""
    def rule() -> str:
        word = VERDICT_RULES[f"| {row} |"]()[index]
        return "fails" if word == "contradicted" else word
    return rule


def _ln_first_seeds() -> str:
    """Section 1's own paragraphs, which speak of seeds 0, 1, 2: row 1's rule over those seeds' runs only (the
    re-run on seeds 3, 4, 5 has its own paragraph), "contradicted" written as "fails"."""
    word = _ln(_load(LN_FIRST))[0]
    return "fails" if word == "contradicted" else word


def _ln_all(placement: str, warmup: int) -> dict[int, float]:
    """Section 1's 1,500-step runs over every seed (the re-run's too): final val loss by seed."""
    return {r["seed"]: _final(r) for r in _ln_group(_load(LN_FILES), placement, warmup)}


def _escaped_post_below_pre() -> str:
    """Row 1 and section 1's new-seed paragraph: the post-LN runs without warmup that leave the plateau end below
    every pre-LN run without warmup."""
    escaped = [_final(r) for r in _ln_group(_load(LN_FILES), "post", 0) if r["plateau_end"] is not None]
    return "below" if escaped and max(escaped) < min(_ln_all("pre", 0).values()) else "above"


def _warm_vs_cold(a: tuple[str, int], b: tuple[str, int], words: tuple[str, str]) -> Callable[[], str]:
    """Group a's final val loss against group b's, same seed, over every seed: words[0] when below on every seed."""
    def rule() -> str:
        x, y = _ln_all(*a), _ln_all(*b)
        return _every([(x[s], y[s]) for s in x], *words)
    return rule


def _grid_new_p_below() -> str:
    """The ViT grid page's new-seed paragraph: p4s3's permutation p is below 0.01 on seeds 3 and 5."""
    from experiments_trace.parts import VIT_GRID_FILES
    p = {r["seed"]: r["p"] for r in _load(VIT_GRID_FILES) if r.get("run") == "p4s3" and "nearest_is_neighbour" in r}
    return "below" if p[3] < 0.01 and p[5] < 0.01 else "above"


# ---------------------------------------------------------------- rules for places that were pinned
def _post_warm_max_below_pre_min() -> str:
    """Section 1: post-LN with 100 warmup steps, its highest final val loss against pre-LN without warmup's lowest."""
    warm = [_final(r) for r in _ln_runs(_load("ln_post_warmup.jsonl"), 1500, "post", 100)]
    pre = [_final(r) for r in _ln_runs(_load("ln_1500.jsonl"), 1500, "pre")]
    return _every([(max(warm), min(pre))], "below", "above")


def _position_runs(files: tuple[str, ...] = ("positions.jsonl",)) -> dict[str, list[dict]]:
    """The runs of each position scheme by seed: section 2's seeds 0, 1, 2, or those of the files given."""
    rows = _load(files)
    return {name: sorted((r for r in rows if r["position"] == name), key=lambda r: r["seed"])
            for name in dict.fromkeys(r["position"] for r in rows)}


def _rope_rank(word: str, other: str, at_every_eval: bool = False,
               files: tuple[str, ...] = ("positions.jsonl",)) -> Callable[[], str]:
    """Section 2 (seeds 0, 1, 2) or, with files, row 2 (every seed it quotes): RoPE's val loss the lowest of the
    four position schemes on every seed (at the end, or at every evaluation): word; the highest on every seed:
    other."""
    def rule() -> str:
        runs = _position_runs(files)
        seeds = range(len(runs["rope"]))
        points = range(len(runs["rope"][0]["val"])) if at_every_eval else [-1]
        cells = [[runs[n][s]["val"][i][1] for n in runs] for s in seeds for i in points]
        rope = list(runs).index("rope")
        return (word if all(c[rope] == min(c) for c in cells) else other if all(c[rope] == max(c) for c in cells)
                else "mixed")
    return rule


def _sinusoidal_worst() -> str:
    """Section 2: sinusoidal positions' final val loss the highest of the four on every seed."""
    runs = _position_runs()
    finals = [[_final(runs[n][s]) for n in runs] for s in range(len(runs["sinusoidal"]))]
    k = list(runs).index("sinusoidal")
    return "worst" if all(f[k] == max(f) for f in finals) else "best" if all(f[k] == min(f) for f in finals) \
        else "mixed"


def _position_order_holds() -> str:
    """Section 2: the order RoPE < learned < none < sinusoidal of final val loss holds on every seed."""
    runs = _position_runs()
    order = ("rope", "learned", "none", "sinusoidal")
    ok = all(all(_final(runs[a][s]) < _final(runs[b][s]) for a, b in zip(order, order[1:], strict=False))
             for s in range(len(runs["rope"])))
    return "holds" if ok else "fails"


def _rope_mean_below_learned() -> str:
    """Section 2: RoPE's mean final val loss against learned positions'."""
    runs = _position_runs()
    mean = lambda n: sum(_final(r) for r in runs[n]) / len(runs[n])  # noqa: E731
    return _every([(mean("rope"), mean("learned"))], "below", "above")


def _cost_rows(variant: str) -> list[dict]:
    return sorted((r for r in _load("efficient_attention_cost.jsonl") if r["variant"] == variant), key=lambda r: r["n"])


def _in_n(*variants: str) -> str:
    """Section 13: "linear" in n when the growth rule gives n for every variant, "quadratic" when it gives n²."""
    word = _growth(*variants)
    return {"grow as n": "linear", "grow as n²": "quadratic"}.get(word, "mixed")


def _strided_stays() -> str:
    """Section 13: strided attention with a fixed stride keeps one share of full attention's FLOPs at every n:
    quadratic, like full attention."""
    shares = {round(r["flops_vs_full"], 6) for r in _cost_rows("strided")}
    return "quadratic" if len(shares) == 1 else "mixed"


HIER_FLOOR = 1 / 64  # the one-level hierarchy's share of full attention's FLOPs as n grows: w/n + 1/64 (a setting)


def _hier_floor(word: str) -> Callable[[], str]:
    """Section 13: the one-level hierarchy's share never falls below 1/64, so it is quadratic with a small
    constant ("mixed" where a measured share falls below 1/64: the sentence would be wrong)."""
    return lambda: word if all(r["flops_vs_full"] >= HIER_FLOOR for r in _cost_rows("hierarchical")) else "mixed"


def _many_heads_worst() -> str:
    """Section 17: no run of 16 or 32 heads is as good as the worst 4-head run."""
    return _every([(max(_heads(4)), min(_heads(16) + _heads(32)))], "worst", "best")


def _head_means() -> dict[int, float]:
    return {h: sum(_heads(h)) / len(_heads(h)) for h in (1, 2, 4, 8, 16, 32)}


def _middle_best() -> str:
    """Section 17: the middle (4-8 heads) has the lowest mean test loss."""
    m = _head_means()
    return _every([(min(m[4], m[8]), min(v for h, v in m.items() if h not in (4, 8)))], "best", "worst")


def _far_end_worse() -> str:
    """Section 17: 16 and 32 heads have a higher mean test loss than 4 and 8."""
    m = _head_means()
    return _every([(max(m[4], m[8]), min(m[16], m[32]))], "worse", "better")


def _proj_more_parameters() -> str:
    """Section 19: "concat, proj." has more parameters than add."""
    params = {r["arm"]: r["params"] for r in _load("position_concat.jsonl") if "params" in r}
    return _every([(params["add"], params["concat, proj."])], "more", "less")


def _dk32() -> dict[str, list[float]]:
    """Section 5: final val loss at d_k 32 by arm ("1/sqrt(d_k)", "no scale"), seeds in order."""
    rows = [r for r in _load("attn_scale.jsonl") if r.get("d_k") == 32 and "arm" in r]
    return {arm: [_final(r) for r in sorted((r for r in rows if r["arm"] == arm), key=lambda r: r["seed"])]
            for arm in ("1/sqrt(d_k)", "no scale")}


def _dk32_no_worse() -> str:
    """Section 5: without the scale at d_k 32 the mean final val loss is no higher ("no worse"; "mixed" where it is
    higher: the sentence would be wrong)."""
    runs = _dk32()
    mean = {k: sum(v) / len(v) for k, v in runs.items()}
    return "worse" if mean["no scale"] <= mean["1/sqrt(d_k)"] else "mixed"


def _dk32_seeds(seeds: tuple[int, ...]) -> Callable[[], str]:
    """Section 5: without the scale against with it at d_k 32, on the named seeds."""
    return lambda: _every(((_dk32()["no scale"][s], _dk32()["1/sqrt(d_k)"][s]) for s in seeds), "lower", "higher")


def _dk32_difference_smaller() -> str:
    """Section 5: the mean paired difference at d_k 32 is smaller (in size) than either arm's spread over seeds."""
    runs = _dk32()
    diff = abs(sum(runs["no scale"]) / 3 - sum(runs["1/sqrt(d_k)"]) / 3)
    return _every([(diff, min(max(v) - min(v) for v in runs.values()))], "smaller", "larger")


def _dk128_unscaled_scatter() -> str:
    """Section 5: the unscaled runs' spread over seeds at d_k 128 against at d_k 32."""
    rows = _load("attn_scale_dk128.jsonl")
    at128 = [_final(r) for r in rows if r["arm"] != "1/sqrt(d_k)"]
    at32 = _dk32()["no scale"]
    return _every([(max(at32) - min(at32), max(at128) - min(at128))], "more", "less")


def _pre_vs_post(key: str, word: str, other: str) -> Callable[[], str]:
    """Section 1: pre-LN's value of `key` against post-LN's, same seed (1,500 steps, no warmup)."""
    def rule() -> str:
        rows = _load("ln_1500.jsonl")
        pre, post = _ln_runs(rows, 1500, "pre"), _ln_runs(rows, 1500, "post")
        return _every(((b[key], a[key]) for a, b in zip(pre, post, strict=True)), word, other)
    return rule


def _worst_pre_vs_best_post() -> str:
    """Section 1: the worst pre-LN seed against the best post-LN seed (final val loss)."""
    rows = _load("ln_1500.jsonl")
    pre = [_final(r) for r in _ln_runs(rows, 1500, "pre")]
    post = [_final(r) for r in _ln_runs(rows, 1500, "post")]
    return "worst" if max(pre) < min(post) else "mixed"


def _order_steps_larger() -> str:
    """Section 2: each step of the order RoPE < learned < none < sinusoidal (mean final val loss) against the
    largest seed-to-seed spread of the four."""
    runs = _position_runs()
    order = ("rope", "learned", "none", "sinusoidal")
    mean = {n: sum(_final(r) for r in runs[n]) / len(runs[n]) for n in order}
    spread = max(max(_final(r) for r in runs[n]) - min(_final(r) for r in runs[n]) for n in order)
    return _every(((spread, mean[b] - mean[a]) for a, b in zip(order, order[1:], strict=False)), "larger", "smaller")


def _nsp_arm(arm: str, key: str) -> list[float]:
    return [r[key] for r in sorted((r for r in _load("nsp.jsonl") if r["arm"] == arm), key=lambda r: r["seed"])]


def _nsp_loss_below_chance() -> str:
    """Section 21: the MLM + NSP arm's held-out NSP loss against chance's ln 2, every seed."""
    return _every(((x, math.log(2)) for x in _nsp_arm("mlm+nsp", "nsp_loss")), "below", "above")


def _probe_higher() -> str:
    """Section 21: the probe's accuracy on MLM + NSP's token vectors against MLM only's, same seed."""
    return _every(zip(_nsp_arm("mlm", "probe_accuracy"), _nsp_arm("mlm+nsp", "probe_accuracy"), strict=True),
                  "higher", "lower")


def _load_beyond_threads(name: str, word: str, other: str) -> Callable[[], str]:
    """Sections 13 and 22: the lowest 1-minute load average the results lines recorded against the most threads
    a timing used (a load above it means other work shared the cores)."""
    def rule() -> str:
        rows = [r for r in _load(name) if "loadavg_1min" in r]
        return _every([(max(r["threads"] for r in rows), min(r["loadavg_1min"] for r in rows))], word, other)
    return rule


def _gru_less_arithmetic() -> str:
    """Section 22: FLOPs per token of the GRU against attention at the longest n (forward)."""
    rows = [r for r in _load("recurrence_vs_attention.jsonl") if r["call"] == "forward" and r["threads"] == 1]
    n = max(r["n"] for r in rows)
    per = {r["layer"]: r["flops_per_token"] for r in rows if r["n"] == n}
    return _every([(per["GRU"], per["attention"])], "less", "more")


def _within_above_across(model: str, first_block: int) -> Callable[[], str]:
    """Section 20: after every block of the model from first_block on (the page counts blocks from 1; layer 0 of
    the results is the embedding), each word's within-sense cosine against its across-sense cosine ("above" when
    within is higher for every word and block)."""
    def rule() -> str:
        rows = [r for r in _load("ambiguity.jsonl") if r["model"] == model and r["layer"] >= first_block]
        return _every(((w["across"], w["within"]) for r in rows for w in r["per_word"].values()), "above", "below")
    return rule


def _bpe_lead_shrinks() -> str:
    """Section 11: BPE's lead over characters (bits per character, mean over seeds) is larger at the smaller budget
    than at the larger one: BPE learns faster early."""
    gaps = []
    for budget in _token_budgets(_load("tokenizer_quality.jsonl")):
        pairs = list(zip(budget["character"], budget["BPE 2048"], strict=True))
        gaps.append(sum(c["bits_per_char"] - b["bits_per_char"] for c, b in pairs) / len(pairs))
    return _every(zip(gaps[1:], gaps[:-1], strict=True), "faster", "slower")


def _cnn_fewer_errors_largest() -> str:
    """Section 8: at the largest training size, the CNN's test errors against the ViT's, same seed."""
    from experiments_trace.parts import _vit_cnn_main

    rows = _vit_cnn_main(_load("vit_vs_cnn.jsonl"))
    n = max(r["train_images"] for r in rows)
    acc = {m: [r["test_accuracy"] for r in sorted((r for r in rows if r["train_images"] == n and r["model"] == m),
                                                  key=lambda r: r["seed"])] for m in ("CNN", "ViT")}
    return _every(((1 - c, 1 - v) for c, v in zip(acc["CNN"], acc["ViT"], strict=True)), "fewer", "more")


PINNED_RULES: dict[str, Callable[[], str]] = {
    "cnn_fewer_errors_largest": _cnn_fewer_errors_largest,
    "bpe_lead_shrinks": _bpe_lead_shrinks,
    "minilm_within_above": _within_above_across("minilm", 1),
    "smollm2_within_above": _within_above_across("smollm2", 4),
    "nsp_loss_below_chance": _nsp_loss_below_chance, "probe_higher": _probe_higher,
    "rva_load_more": _load_beyond_threads("recurrence_vs_attention.jsonl", "more", "less"),
    "eff_load_above": _load_beyond_threads("efficient_attention_cost.jsonl", "above", "below"),
    "gru_less_arithmetic": _gru_less_arithmetic,
    "pre_grad_larger": _pre_vs_post("grad_norm_median", "larger", "smaller"),
    "pre_clipped_more": _pre_vs_post("clipped_fraction", "more", "less"),
    "worst_pre_vs_best_post": _worst_pre_vs_best_post, "order_steps_larger": _order_steps_larger,
    "dk32_no_worse": _dk32_no_worse, "dk32_lower_seeds_0_1": _dk32_seeds((0, 1)),
    "dk32_higher_seed_2": _dk32_seeds((2,)),
    "dk32_difference_smaller": _dk32_difference_smaller, "dk128_unscaled_scatter": _dk128_unscaled_scatter,
    "local_linear_in_n": lambda: _in_n("local", "linear"), "strided_stays": _strided_stays,
    "hier_quadratic": _hier_floor("quadratic"), "hier_never_below": _hier_floor("below"),
    "many_heads_worst": _many_heads_worst, "middle_best": _middle_best, "far_end_worse": _far_end_worse,
    "proj_more_parameters": _proj_more_parameters,
    "post_warm_max_below_pre_min": _post_warm_max_below_pre_min,
    "rope_best": _rope_rank("best", "worst", files=POSITIONS_FILES),
    "rope_fastest": _rope_rank("fastest", "slowest", at_every_eval=True),
    "sinusoidal_worst": _sinusoidal_worst, "position_order_holds": _position_order_holds,
    "rope_mean_below_learned": _rope_mean_below_learned,
}
PINNED_PLACES: tuple[tuple[str, str, str], ...] = (  # (page, the text the word follows, rule)
    ("experiments.md", "(against 1.720 / 1.927 / 1.837 without): ", "warmup_lowers_pre_ln"),
    ("experiments.md", "(a spread of 0.022, against 0.207 for pre-LN without warmup). It also ends ", "warmup_rescues"),
    ("experiments.md", "and its highest value (1.462) is ", "post_warm_max_below_pre_min"),
    ("experiments.md", "sinusoidal, RoPE or none | 002 | RoPE ", "rope_best"),
    ("experiments.md", "RoPE learns ", "rope_fastest"),
    ("experiments.md", "Sinusoidal positions are ", "sinusoidal_worst"),
    ("experiments.md", "The order RoPE < learned < none < sinusoidal ", "position_order_holds"),
    ("experiments.md", "at every evaluation and ends 0.181 ", "rope_mean_below_learned"),
    ("experiments.md", "Local and linear attention are ", "local_linear_in_n"),
    ("experiments.md", "Strided attention with a fixed stride stays ", "strided_stays"),
    ("experiments.md", "instead of 0.5 and never falls ", "hier_never_below"),
    ("experiments.md", "and never falls below 1/64, so it is ", "hier_quadratic"),
    ("experiments.md", "The local window loses nothing here: it ends ", "local_below_full"),
    ("experiments.md", "one-sense words in two topics separate too, but ", "one_sense_less"),
    ("experiments.md", "all but equal: MLM + NSP ends ", "nsp_lower"),
    ("experiments.md", "and no run of theirs is as good as the ", "many_heads_worst"),
    ("experiments.md", "So the middle (4-8 heads, d_head 16-8) is ", "middle_best"),
    ("experiments.md", "the far end is clearly ", "far_end_worse"),
    ("experiments.md", '"concat, proj.", with 8,192 ', "proj_more_parameters"),
    ("experiments.md", "yet over three seeds it trains no ", "dk32_no_worse"),
    ("experiments.md", "the 1,000 test and 500 validation images, the CNN still makes ", "cnn_fewer_errors_largest"),
    ("experiments.md", "the most harmful one to remove in 0.375 / 0.332 of pairs, far ", "top_key_above_uniform"),
    ("experiments.md", "The lead shrinks as the budget grows, so part of it is that BPE learns ", "bpe_lead_shrinks"),
    ("experiments.md", "MiniLM separates them from its first block on: after every block the within-sense cosine is ",
     "minilm_within_above"),
    ("experiments.md", "across from 0.989 to 0.939); within is ", "smollm2_within_above"),
    ("experiments.md", "its held-out NSP loss 0.6898-0.6913 nats, hardly ", "nsp_loss_below_chance"),
    ("experiments.md", "and MLM + NSP 0.622-0.659, ", "probe_higher"),
    ("experiments.md", "was 2.51-4.12 while these ran, ", "rva_load_more"),
    ("experiments.md", "the load average was 2.28-2.51 while they ran, ", "eff_load_above"),
    ("experiments.md", "so for long sequences the recurrent layer does ", "gru_less_arithmetic"),
    ("experiments.md", "(on 2% / 1% / 2% of steps), while pre-LN's are ", "pre_grad_larger"),
    ("experiments.md", "(median 1.42 / 0.80 / 0.83) and clipped ", "pre_clipped_more"),
    ("experiments.md", "is small next to the gap between the ", "worst_pre_vs_best_post"),
    ("experiments.md", "holds on all three seeds, and every step in it is far ", "order_steps_larger"),
    ("experiments.md", "its step-600 val loss is 1.815 on average against 1.839, ", "dk32_lower_seeds_0_1"),
    ("experiments.md", "lower on seeds 0 and 1 and ", "dk32_higher_seed_2"),
    ("experiments.md", "the mean difference (-0.024) is ", "dk32_difference_smaller"),
    ("experiments.md", "The unscaled runs at d_k 128 also scatter far ", "dk128_unscaled_scatter"),
    ("docs/notebook.md", "sinusoidal, RoPE or none | RoPE ", "rope_best"),
    ("docs/notebook.md", "keeps the scores at unit variance | the arithmetic ", "verdict_5_0"),
    ("docs/notebook.md", "more data than CNNs | small-data half ", "verdict_8_0"),
)


# ---------------------------------------------------------------- more rules for places that were pinned
def _same_seed(a: list[float], b: list[float], word: str, other: str) -> str:
    return _every(zip(a, b, strict=True), word, other)


def _finals(rows: list[dict]) -> list[float]:
    return [_final(r) for r in rows]


def _best_post_ln() -> str:
    """Section 1: "the worst pre-LN seed and the best post-LN one": the best post-LN seed still above every pre-LN
    seed (1,500 steps, no warmup)."""
    rows = _load("ln_1500.jsonl")
    pre, post = (_finals(_ln_runs(rows, 1500, p)) for p in ("pre", "post"))
    return "best" if max(pre) < min(post) else "mixed"


def _hot(seed: int | None = None) -> Callable[[], str]:
    """Section 1, without clipping at lr 6e-3: a pre-LN run's final val loss against the lr-2e-3 clipped run of its
    seed ("higher" / "lower"); seed None: whether every such difference is smaller than the lr-2e-3 runs' spread
    over seeds ("smaller" / "larger")."""
    def rule() -> str:
        hot = _finals(_ln_runs(_load("ln_hot.jsonl"), 1500, "pre"))
        cool = _finals(_ln_runs(_load("ln_1500.jsonl"), 1500, "pre"))
        if seed is not None:
            return _every([(cool[seed], hot[seed])], "higher", "lower")
        spread = max(cool) - min(cool)
        return _every(((abs(h - c), spread) for h, c in zip(hot, cool, strict=True)), "smaller", "larger")
    return rule


def _hot_neither(word: str) -> Callable[[], str]:
    """Section 1: "neither clearly higher nor clearly lower": the hot runs' differences are within the seeds'
    spread (else the sentence would be wrong: "mixed")."""
    return lambda: word if _hot()() == "smaller" else "mixed"


def _sweep_claim() -> str:
    """Section 1's 600-step sweep: the claim holds when post-LN without warmup ends on the unigram plateau (final
    val loss above 3.1) on every seed while every post-LN run with a warmup and every pre-LN run ends below it."""
    rows = _load("ln_warmup.jsonl")
    stuck = all(_final(r) > PLATEAU for r in _ln_runs(rows, 600, "post"))
    trained = all(_final(r) < PLATEAU for r in rows if r["placement"] == "pre" or r["warmup"] > 0)
    return "holds" if stuck and trained else "fails"


PLATEAU = 3.1  # nats/char: the unigram plateau's level the page uses (a setting)


def _sweep_stuck_below_150() -> str:
    """Section 1: post-LN without warmup ends "at most 0.035 below step 150": its largest drop from the step-150 val
    loss to the final one over the seeds is a drop (positive; "above" when every seed ends higher)."""
    runs = _ln_runs(_load("ln_warmup.jsonl"), 600, "post")
    return "below" if max(r["val"][0][1] - _final(r) for r in runs) > 0 else "above"


def _pre_ln_not_better() -> str:
    """Section 1: "it does not mean pre-LN trains better": with a warmup post-LN ends below pre-LN on every seed,
    in the sweep and at 1,500 steps."""
    return "better" if _sweep_post_below_pre() == "below" and _warmup_rescues() == "below" else "mixed"


def _none_slower() -> str:
    """Section 2: no positions against learned ones, final val loss, same seed ("slower" to learn when higher)."""
    runs = _position_runs()
    return _same_seed(_finals(runs["learned"]), _finals(runs["none"]), "slower", "faster")


def _sinusoidal_500_above_250(seeds: tuple[int, ...]) -> Callable[[], str]:
    """Section 2: sinusoidal positions' val loss at step 500 against at step 250, on the named seeds."""
    def rule() -> str:
        runs = _position_runs()["sinusoidal"]
        return _every(((runs[s]["val"][0][1], runs[s]["val"][1][1]) for s in seeds), "above", "below")
    return rule


def _act(arm: str, activation: str) -> list[float]:
    from experiments_trace.parts import _arm_runs
    rows = _load(("activations.jsonl", "positions.jsonl", "activations_1500.jsonl"))
    return _finals(_arm_runs(rows, arm, activation))


SCALED, SECTION3 = "W_1 at std 1/sqrt(d_model)", "lr 2e-3 (section 3)"


def _swiglu_fewer_parameters() -> str:
    """Section 3: SwiGLU's parameter count (d_ff 170) against ReLU's (d_ff 256)."""
    params = {r["activation"]: r["params"] for r in _load("activations.jsonl") if r["init"] == "default"}
    return _every([(params["swiglu"], params["relu"])], "fewer", "more")


def _gelu_scaled_better() -> str:
    """Section 3: GELU with W_1 at std 1/sqrt(d_model) against the default init, mean final val loss."""
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    return _every([(mean(_act(SCALED, "gelu")), mean(_act(SECTION3, "gelu")))], "better", "worse")


def _gelu_lead_within_spread() -> str:
    """Section 3: "not that GELU is better": GELU's lead over ReLU with the scaled init (mean) is no larger than the
    larger seed spread of that row."""
    gelu, relu = _act(SCALED, "gelu"), _act(SCALED, "relu")
    lead = sum(relu) / len(relu) - sum(gelu) / len(gelu)
    return "better" if lead <= max(max(v) - min(v) for v in (gelu, relu)) else "mixed"


def _relu_scaled_seed2() -> str:
    """Section 3: ReLU with the scaled init against the default, seed 2, final val loss."""
    return _every([(_act(SECTION3, "relu")[2], _act(SCALED, "relu")[2])], "worse", "better")


def _swiglu_scaled_best() -> str:
    """Section 3: SwiGLU the lowest final val loss of the three activations with the scaled init, every seed."""
    runs = [_act(SCALED, a) for a in ("gelu", "relu", "swiglu")]
    cells = list(zip(*runs, strict=True))
    return ("best" if all(c[2] == min(c) for c in cells) else "worst" if all(c[2] == max(c) for c in cells)
            else "mixed")


def _dk128_arms() -> tuple[list[float], list[float]]:
    rows = _load("attn_scale_dk128.jsonl")
    by = {arm: _finals(sorted((r for r in rows if r["arm"] == arm), key=lambda r: r["seed"]))
          for arm in {r["arm"] for r in rows}}
    return by.pop("1/sqrt(d_k)"), by.popitem()[1]


def _dk128_more_slowly() -> str:
    """Section 5: at d_k 128 without the scale the val loss ends higher than with it on every seed (it falls "more"
    slowly)."""
    scaled, unscaled = _dk128_arms()
    return _same_seed(scaled, unscaled, "more", "less")


def _dk128_gap_twice_dk32() -> str:
    """Section 5: the smallest d_k-128 paired difference against twice the largest d_k-32 one (in size)."""
    scaled, unscaled = _dk128_arms()
    runs = _dk32()
    small128 = min(u - s for s, u in zip(scaled, unscaled, strict=True))
    large32 = max(abs(u - s) for s, u in zip(runs["1/sqrt(d_k)"], runs["no scale"], strict=True))
    return _every([(2 * large32, small128)], "more", "less")


def _dk32_not_better() -> str:
    """Section 5: "not evidence that it trains better": the mean difference at d_k 32 is smaller than the spreads."""
    return "better" if _dk32_difference_smaller() == "smaller" else "mixed"


def _vit_cnn(cap_of: Callable[[str], int] | None = None,
             files: str | tuple[str, ...] = "vit_vs_cnn.jsonl") -> dict[tuple[int, str], list[float]]:
    """Section 8: test accuracies by (training images, model), seeds in order, at the whole schedule (files: the
    first seeds' runs, or with the re-run's)."""
    from experiments_trace.parts import VIT_CNN_FULL, _vit_cnn_main
    rows = _vit_cnn_main(_load(files))
    out: dict[tuple[int, str], list[float]] = {}
    for r in sorted(rows, key=lambda r: r["seed"]):
        if r["cap"] == (cap_of or VIT_CNN_FULL.get)(r["model"]):
            out.setdefault((r["train_images"], r["model"]), []).append(r["test_accuracy"])
    return out


def _worst_cnn_beats_best_vit(word: str, sizes: tuple[int, ...] | None = None,
                              files: str | tuple[str, ...] = "vit_vs_cnn.jsonl") -> Callable[[], str]:
    """Section 8: at every size (or at `sizes`) the CNN's lowest test accuracy is above the ViT's highest ("the worst
    CNN run beats the best ViT run"; "mixed" where it is not); files: the first seeds' runs, or with the re-run's."""
    def rule() -> str:
        acc = _vit_cnn(files=files)
        return word if all(min(acc[(n, "CNN")]) > max(acc[(n, "ViT")])
                           for n in (sizes or {n for n, _ in acc})) else "mixed"
    return rule


def _cnn_fewer(key: str) -> Callable[[], str]:
    """Section 8: the CNN's parameters or steps run against the ViT's, every size and seed."""
    def rule() -> str:
        from experiments_trace.parts import VIT_CNN_FULL, _vit_cnn_main
        rows = [r for r in _vit_cnn_main(_load("vit_vs_cnn.jsonl")) if r["cap"] == VIT_CNN_FULL[r["model"]]]
        cnn, vit = ([r[key] for r in rows if r["model"] == m] for m in ("CNN", "ViT"))
        return _every([(max(cnn), min(vit))], "fewer", "more")
    return rule


def _tokenizer(corpus_word: str, tokenizer: str) -> dict:
    return next(r for r in _load("tokenizer_cost.jsonl") if corpus_word in r["corpus"] and r["tokenizer"] == tokenizer)


def _quadratic_dominates() -> str:
    """Section 11: at the passage length, attention's FLOPs above the projections' for characters and below them
    for GPT-2's BPE ("the quadratic term already dominates for characters ... and not for BPE")."""
    char, bpe = _tokenizer("CPython", "character"), _tokenizer("CPython", "GPT-2 BPE")
    ok = char["attn_flops"] > char["proj_flops"] and bpe["attn_flops"] < bpe["proj_flops"]
    return "quadratic" if ok else "mixed"


def _wordpiece_fewer() -> str:
    """Section 11: WordPiece's tokens against GPT-2's BPE's, on each corpus."""
    rows = _load("tokenizer_cost.jsonl")
    count = {(r["corpus"], r["tokenizer"].split(" ")[0]): r["tokens"] for r in rows}
    return _every(((count[(c, "WordPiece")], count[(c, "GPT-2")]) for c, _ in count if (c, "WordPiece") in count),
                  "fewer", "more")


def _cost_statement() -> str:
    """Section 13: the statement holds for local, linear and multilevel attention when the first two grow as n and
    the last as n log n."""
    ok = _growth("local", "linear") == "grow as n" and _growth("multilevel") == "grow as n log n"
    return "holds" if ok else "fails"


def _linear_cpu_most() -> str:
    """Section 13: the variant whose runs took the most CPU time."""
    rows = _load("efficient_attention_quality.jsonl")
    return "linear" if max(rows, key=lambda r: r["cpu_s"])["variant"] == "linear" else "mixed"


def _no_mask_1000_below() -> str:
    """Section 16: at 1,000 steps the unmasked model's teacher-forced val loss against the masked one's, same seed."""
    rows = _load("no_mask_1000.jsonl")
    by = {(r["arm"], r["seed"]): r["val_teacher_forced"] for r in rows}
    seeds = sorted({s for _, s in by})
    return _every(((by[("no mask", s)], by[("causal mask", s)]) for s in seeds), "below", "above")


def _test_half_lower() -> str:
    """Sections 17-19: every reported run's test loss against its validation loss (the test half is easier)."""
    from experiments_trace.parts import POSITION_FILES
    rows = [r for name in (*HEADS_FILES, *WINDOW_FILES, *POSITION_FILES) for r in _load(name)
            if r.get("phase") == "report"]
    return _every(((r["test_loss"], r["val_loss"]) for r in rows), "lower", "higher")


def _sixteen_heads_mean() -> str:
    """Section 17 on seeds 3, 4, 5: 16 heads against 4, mean test loss over all seeds."""
    four, sixteen = _heads(4, True), _heads(16, True)
    return _every([(sum(four) / len(four), sum(sixteen) / len(sixteen))], "worse", "better")


def _position_all(arm: str) -> list[float]:
    from experiments_trace.parts import POSITION_FILES
    return _test_losses(POSITION_FILES, _position_label)[arm]


def _position_six(arm: str, word: str, other: str) -> Callable[[], str]:
    """Section 19 over all seeds: add's test loss against an arm's, same seed (word when add's is lower on every
    seed: the arm is worse)."""
    return lambda: _same_seed(_position_all("add"), _position_all(arm), word, other)


def _sum_not_best() -> str:
    """Section 19: "the sum is not the best of the three": the split concatenation beats add on every seed."""
    return "best" if _same_seed(_position("concat, split"), _position("add"), "below", "above") == "below" \
        else "mixed"


def _proj_hurt() -> str:
    """Section 19: the projection hurt when concatenate-and-project scores above add on every seed."""
    return {"worse": "hurt", "better": "not hurt"}.get(_proj_vs_add(), "mixed")


def _sum_claim_holds() -> str:
    """Section 19: the seeds' "the sum works fine" against the projected concatenation: add below it every seed."""
    return {"worse": "holds", "better": "fails"}.get(_proj_vs_add(), "mixed")


def _second_set(model: str, first_block: int, key: str = "") -> Callable[[], str]:
    """Section 20's second set of sentences: after every block of the model from first_block on, each word's
    within-sense cosine against its across-sense one (or, key "gap", its gap against 0)."""
    def rule() -> str:
        rows = [r for r in _load("ambiguity_second.jsonl") if r["model"] == model and r["layer"] >= first_block]
        if key == "gap":
            return _every(((0.0, w["gap"]) for r in rows for w in r["per_word"].values()), "above", "below")
        return _every(((w["across"], w["within"]) for r in rows for w in r["per_word"].values()), "above", "below")
    return rule


def _nsp_diffs(files=("nsp.jsonl",)) -> list[float]:
    rows = _load(files)
    a, b = (sorted((r for r in rows if r["arm"] == arm), key=lambda r: r["seed"]) for arm in ("mlm+nsp", "mlm"))
    return [x["mlm_loss"] - y["mlm_loss"] for x, y in zip(a, b, strict=True)]


def _nsp_tenth_or_less() -> str:
    """Section 21, seeds 0, 1, 2: every MLM-loss difference between the arms against a tenth of the smaller arm's
    spread over seeds."""
    spread = min(max(v) - min(v) for v in (_nsp_arm("mlm", "mlm_loss"), _nsp_arm("mlm+nsp", "mlm_loss")))
    return _every(((abs(d), spread / 10) for d in _nsp_diffs()), "less", "more")


def _nsp_lower_most_seeds() -> str:
    """Row 21: MLM + NSP's MLM loss lower than MLM only's on more seeds than not (the row counts them)."""
    diffs = _nsp_diffs(NSP_FILES)
    return "lower" if sum(d < 0 for d in diffs) > sum(d > 0 for d in diffs) else "higher"


def _residual_statement() -> str:
    """Section 23: the statement holds for the residual connection when every run without it stays on the plateau
    and every run with both trains."""
    rows = _load(RESIDUAL_FILES)
    ok = (all(r["plateau_end"] is None for r in rows if r["arm"] == "no residual")
          and all(r["plateau_end"] is not None for r in rows if r["arm"] == "both"))
    return "holds" if ok else "fails"


def _rerun_places() -> tuple[tuple[str, str, str], ...]:
    """The re-run table's verdict column ("widened: holds", "kept: not at this budget, holds", "kept: partial,
    holds, partly, fails"): per "holds" or "fails", the row's verdict rule and the index of the word in the row's
    verdict (its place in the comma-separated list)."""
    text = normal((DOCS / "experiments.md").read_text())
    start = text.find("## Re-runs on new seeds")
    out = []
    for m in re.finditer(r"\| (\d+) \| [^|]+ \| [^|]+ \| [^|]+ \| [^|]+ \| (?:kept|widened): ([^|]*?) \|",
                         text[start:] if start >= 0 else ""):
        at = m.start(2)
        for index, word in enumerate(m[2].split(", ")):
            if word in ("holds", "fails"):
                out.append(("experiments.md", text[start + m.start():start + at], f"verdict_{m[1]}_{index}"))
            at += len(word) + 2
    return tuple(out)


MORE_RULES: dict[str, Callable[[], str]] = {
    "best_post_ln": _best_post_ln, "hot_seed_0": _hot(0), "hot_seed_1": _hot(1), "hot_seed_2": _hot(2),
    "hot_smaller": _hot(), "hot_neither_higher": _hot_neither("higher"), "hot_neither_lower": _hot_neither("lower"),
    "sweep_claim": _sweep_claim, "sweep_stuck_below_150": _sweep_stuck_below_150,
    "pre_ln_not_better": _pre_ln_not_better, "none_slower": _none_slower,
    "sinusoidal_500_above_250": _sinusoidal_500_above_250((1, 2)),
    "swiglu_fewer_parameters": _swiglu_fewer_parameters, "gelu_scaled_better": _gelu_scaled_better,
    "gelu_lead_within_spread": _gelu_lead_within_spread, "relu_scaled_seed2": _relu_scaled_seed2,
    "swiglu_scaled_best": _swiglu_scaled_best, "dk128_more_slowly": _dk128_more_slowly,
    "dk128_gap_twice_dk32": _dk128_gap_twice_dk32, "dk32_not_better": _dk32_not_better,
    "worst_cnn": _worst_cnn_beats_best_vit("worst"), "best_vit": _worst_cnn_beats_best_vit("best"),
    "cnn_fewer_params": _cnn_fewer("params"), "cnn_fewer_steps": _cnn_fewer("steps_run"),
    "quadratic_dominates": _quadratic_dominates, "wordpiece_fewer": _wordpiece_fewer,
    "cost_statement": _cost_statement, "linear_cpu_most": _linear_cpu_most,
    "no_mask_1000_below": _no_mask_1000_below, "test_half_lower": _test_half_lower,
    "sixteen_heads_mean": _sixteen_heads_mean,
    "proj_worse_six": _position_six("concat, proj.", "worse", "better"),
    "split_better_six": _position_six("concat, split", "worse", "better"),
    "sum_not_best": _sum_not_best, "proj_hurt": _proj_hurt, "sum_claim_holds": _sum_claim_holds,
    "minilm_within_above_second": _second_set("minilm", 1), "smollm2_within_above_second": _second_set("smollm2", 5),
    "minilm_gap_above_second": _second_set("minilm", 1, "gap"),
    "nsp_tenth_or_less": _nsp_tenth_or_less, "nsp_lower_most_seeds": _nsp_lower_most_seeds,
    "residual_statement": _residual_statement,
}
MORE_PLACES: tuple[tuple[str, str, str], ...] = (  # (page, the text the word follows, rule)
    ("experiments.md", "small next to the gap between the worst pre-LN seed and the ", "best_post_ln"),
    ("experiments.md", "seed for seed they end 0.083 ", "hot_seed_0"),
    ("experiments.md", "0.083 higher, 0.088 ", "hot_seed_1"),
    ("experiments.md", "0.088 lower and 0.050 ", "hot_seed_2"),
    ("experiments.md", "0.050 higher, differences ", "hot_smaller"),
    ("experiments.md", "the hotter runs end neither clearly ", "hot_neither_higher"),
    ("experiments.md", "neither clearly higher nor clearly ", "hot_neither_lower"),
    ("experiments.md", "| 1.03 (56%) | **What it shows.** The claim ", "sweep_claim"),
    ("experiments.md", "at most 0.035 ", "sweep_stuck_below_150"),
    ("experiments.md", "Given a warmup, post-LN ends *", "sweep_post_below_pre"),
    ("experiments.md", "it does not mean pre-LN trains ", "pre_ln_not_better"),
    ("experiments.md", "So \"pre-LN trains deep stacks ", "quoted"),  # the seeds' claim, quoted
    ("experiments.md", "So \"pre-LN trains deep stacks more stably\" ", "ln_first_seeds"),
    ("experiments.md", "With 1,500 steps the seeds' claim ", "ln_first_seeds"),
    ("experiments.md", "in these runs learning to is much ", "none_slower"),
    ("experiments.md", "(3.270, 3.257) is still ", "sinusoidal_500_above_250"),
    ("experiments.md", "has 210,640 (0.08% ", "swiglu_fewer_parameters"),
    ("experiments.md", "(mean 1.460 vs 1.481), and 0.135 ", "gelu_scaled_better"),
    ("experiments.md", "so the runs show that the gap closes, not that GELU is ", "gelu_lead_within_spread"),
    ("experiments.md", "by 0.002 on seeds 0 and 1, but 0.030 ", "relu_scaled_seed2"),
    ("experiments.md", "(mean 1.429 vs 1.457; by 0.018-0.041), and is the ", "swiglu_scaled_best"),
    ("experiments.md", "(entropy 0.04-0.17 nats) and the val loss falls ", "dk128_more_slowly"),
    ("experiments.md", "mean +0.241; the smallest is ", "dk128_gap_twice_dk32"),
    ("experiments.md", "That is not evidence that it trains ", "dk32_not_better"),
    ("experiments.md", "0.012-0.023 at 3,500; at every size the ", "worst_cnn"),
    ("experiments.md", "at every size the worst CNN run beats the ", "best_vit"),
    ("experiments.md", "(the exception a 0.002 tie at 250 images), with ", "cnn_fewer_params"),
    ("experiments.md", "with fewer parameters and ", "cnn_fewer_steps"),
    ("experiments.md", "| 0.92x | **What it shows.** The statement ", "verdict_11_0"),
    ("experiments.md", "against 15.6 / 8.8. At this length the ", "quadratic_dominates"),
    ("experiments.md", "WordPiece gives slightly ", "wordpiece_fewer"),
    ("experiments.md", "against the one-level variant's 0.0312. So the statement ", "cost_statement"),
    ("experiments.md", "a run took 32.3-78.7 s of CPU time (", "linear_cpu_most"),
    ("experiments.md", "no head has a median ", "no_head_above_half"),
    ("experiments.md", "| spaces and stray letters | **What it shows.** The statement ", "verdict_16_0"),
    ("experiments.md", "against 0.0235-0.0259 at 300) and the teacher-forced loss is ", "no_mask_1000_below"),
    ("experiments.md", "than the validation half (every run scores ", "test_half_lower"),
    ("experiments.md", "The new seeds soften the far end: 32 heads are still ", "most_heads"),
    ("experiments.md", "(by 0.0078 and 0.0195), so 16 heads are ", "sixteen_heads_mean"),
    ("experiments.md", "One head stays ", "one_head_mean"),
    ("experiments.md", "The seeds' practical claim, that the sum works fine, ", "sum_claim_holds"),
    ("experiments.md", "But the sum is not the ", "sum_not_best"),
    ("experiments.md", "the control shows that its own LM head is not why (untying add's head makes it ",
     "untied_vs_add"),
    ("experiments.md", "\"more parameters\" (the projection) ", "proj_hurt"),
    ("experiments.md", "Over the six seeds \"concat, proj.\" is ", "proj_worse_six"),
    ("experiments.md", "by 0.0537-0.1326, \"concat, split\" ", "split_better_six"),
    ("experiments.md", "0.917 | 1.0 | **What it shows.** The claim ", "verdict_20_0"),
    ("experiments.md", "(accuracy 0.547 / 0.5); after every MiniLM block within is ", "minilm_within_above_second"),
    ("experiments.md", "the accuracy is 0.977-1.0; in SmolLM2 within is ", "smollm2_within_above_second"),
    ("experiments.md", "0.977-1.0 and 0.984-1.0, every word's gap ", "minilm_gap_above_second"),
    ("experiments.md", "nats on each of the 3 seeds, a tenth or ", "nsp_tenth_or_less"),
    ("experiments.md", "-0.0054 to 0.0095 nats (", "nsp_lower_most_seeds"),
    ("experiments.md", "so dropping NSP still did ", "nsp_hurt"),
    ("experiments.md", "so the first seeds' \"", "quoted"),  # the page's own earlier wording, quoted as not holding
    ("experiments.md", "RoBERTa (2019) found that dropping NSP does ", "quoted"),
    ("experiments.md", "The seeds (002, 004): a recurrent network needs ", "quoted"),
    ("experiments.md", "which makes it ", "quoted"),  # section 14's seed statement
    ("experiments.md", "they leave the plateau at step 124-171 and end 0.085-0.153 ", "no_norm_above"),
    ("experiments.md", "without them it may be. So the statement ", "residual_statement"),
    ("experiments.md", "| 23 | 3, 4, 5 | 12 layers: no LayerNorm's final val loss ", "no_norm_above"),
    *_rerun_places(),
    # names and definitions: a word that names a measured quantity, a column or a kept checkpoint, no result
    ("experiments.md", "So does each comparative word of the page (", "name"),
    ("experiments.md", "So does each comparative word of the page (faster, ", "name"),
    ("experiments.md", "So does each comparative word of the page (faster, worse, below, ", "name"),
    ("experiments.md", "So does each comparative word of the page (faster, worse, below, grow as n, ", "name"),
    ("experiments.md", "grad norm after step 20: median (10th-90th percentile), share clipped | train loss ", "name"),
    ("experiments.md", "the first step at which the mean train loss of the last 10 steps is ", "name"),
    ("experiments.md", "and the weights with the ", "name"),
    ("experiments.md", "| test error, ViT / CNN (means) | ViT ", "name"),
    ("experiments.md", "| ViT best step, seeds 0 / 1 / 2 | CNN ", "name"),
    ("experiments.md", "(every run did). The ", "name"),
    ("experiments.md", "so one image moves it by 0.002 and the choice of the ", "name"),
    ("experiments.md", "## 13. Sparse, ", "name"),
    ("experiments.md", "name sparse (local window, strided), ", "name"),
    ("experiments.md", "strided (query i sees the keys j = i mod 8); ", "name"),
    ("experiments.md", "| local (w 64) | strided (s 8) | ", "name"),
    ("experiments.md", "| 2.00 | as n² (always n²/8) | | ", "name"),
    ("experiments.md", "(local 0.75 at n 256, 0.0469 at 4096; ", "name"),
    ("experiments.md", "So the statement holds for local, ", "name"),
    ("experiments.md", "the query's own included); ", "name"),
    ("experiments.md", "| mean | minus full, seeds 0 / 1 / 2 | ", "name"),
    ("experiments.md", "| mean | minus full, seeds 3 / 4 / 5 | ", "name"),  # the re-run table's column header
    ("experiments.md", "| +0.0947 / +0.1140 / +0.0884 | 3 of 3 | | ", "name"),  # linear attention, a row's name
    ("experiments.md", "widened: partial, holds, partly, fails | | 13 | 3, 4, 5 | ", "name"),  # its re-run row's
    ("experiments.md", "unchanged. Section 5's \"the smallest is ", "quoted"),  # the page's earlier sentence
    ("experiments.md", "| +0.0945 / +0.1007 / +0.0965 | 3 of 3 | | ", "name"),
    ("experiments.md", "Per matched pair: whether the top key's drop in log P(target) is ", "name"),
    ("experiments.md", "is the most harmful knock-out (a drop ", "name"),
    ("experiments.md", "| matched pairs (top weight at most 1/2) | top key's drop ", "name"),
    ("experiments.md", "top key's drop above the null's median | share of null draws ", "name"),
    ("experiments.md", "Against this null the top key keeps a small edge in gpt-char (its drop is ", "name"),
)


def _drift(variant: str) -> dict:
    return next(r for r in _load("check_ln.jsonl") if r["variant"] == variant)["drift_vs_attnlab"]


def _hf_drifts_more() -> str:
    """Section 1's parity check: GPT-2 with attnlab's weights drifts from attnlab's run by more than 1e-3 at some
    step (and not by 0.1)."""
    d = _drift("hf-same-init")
    return "more" if d["first_step_above_1e-3"] is not None and d["first_step_above_0.1"] is None else "less"


def _nudged_ends_above() -> str:
    """Section 1's parity check: the nudged attnlab run's final val loss against the original's."""
    return "above" if _drift("attnlab-nudged")["final_val_diff"] > 0 else "below"


def _probes_below_unigram() -> str:
    """Section 1, why this size: every smaller post-LN probe ends below the unigram level while 16 x 64 (300 steps)
    is still above it."""
    probes = [_final(r) for r in _load("ln_probes.jsonl")]
    stuck = [_final(r) for r in _load("ln_300.jsonl") if r["placement"] == "post"]
    return "below" if max(probes) < PLATEAU < min(stuck) else "above"


def _gelu_runs_agree() -> str:
    """Section 3: the seed-0 GELU run (activations.jsonl) and section 2's seed-0 learned run differ by less than
    2e-7 at every evaluation."""
    gelu = next(r for r in _load("activations.jsonl") if (r["activation"], r["init"], r["lr"], r["steps"], r["seed"])
                == ("gelu", "default", 2e-3, 1500, 0))
    learned = next(r for r in _load("positions.jsonl") if r["position"] == "learned" and r["seed"] == 0)
    diff = max(abs(a[1] - b[1]) for a, b in zip(gelu["val"], learned["val"], strict=True))
    return "less" if diff < 2e-7 else "more"


def _heads_flops_same() -> str:
    """Section 4: in FLOPs the claim holds when the formula's count is the same for every head count at each n."""
    rows = _load("heads_cost.jsonl")
    return "holds" if all(len({r["formula_flops"] for r in rows if r["n"] == n}) == 1 for n in {r["n"] for r in rows}) \
        else "fails"


def _heads_ratio(n: int, h: int) -> float:
    return next(r["ratio_sdpa"]["median"] for r in _load("heads_cost.jsonl") if (r["n"], r["h"]) == (n, h))


def _heads_cost_more_longer() -> str:
    """Section 4: at d_head 16 and 8 (16 and 32 heads) the SDPA path's cost against one head is larger at the
    longer sequence."""
    ns = sorted({r["n"] for r in _load("heads_cost.jsonl")})
    return _every(((_heads_ratio(ns[0], h), _heads_ratio(ns[-1], h)) for h in (16, 32)), "more", "less")


def _narrow_heads_more_time() -> str:
    """Section 17, citing row 4: more, narrower heads (16 and 32) take more time than one wide head at every n."""
    ns = sorted({r["n"] for r in _load("heads_cost.jsonl")})
    return _every(((1.0, _heads_ratio(n, h)) for n in ns for h in (16, 32)), "more", "less")


def _init_scores_below_one() -> str:
    """Section 5: at attnlab's initialisation the scaled scores' variance against 1, every d_k."""
    rows = [r for r in _load("attn_scale.jsonl") if "init_scaled" in r]
    return _every(((r["init_scaled"], 1.0) for r in rows), "below", "above")


def _vit_gain(size: int, model: str) -> float:
    from experiments_trace.parts import VIT_CNN_FULL
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    whole = [r["test_accuracy"] for r in _load("vit_vs_cnn.jsonl") if "cpu_check" not in r
             and (r["train_images"], r["model"], r["cap"]) == (size, model, VIT_CNN_FULL[model])]
    half = [r["test_accuracy"] for r in _load("vit_vs_cnn_half.jsonl")
            if (r["train_images"], r["model"]) == (size, model)]
    return mean(whole) - mean(half)


def _vit_gains_more() -> str:
    """Section 8: the whole schedule against half of it lifted the ViT's mean test accuracy more than the CNN's at
    the small sizes (250 and 500 images)."""
    return _every(((_vit_gain(n, "CNN"), _vit_gain(n, "ViT")) for n in (250, 500)), "more", "less")


def _tuned_32_heads_best() -> str:
    """Section 17: the 32-head tuning run at 1e-2 has the lowest validation loss of its grid."""
    rows = [r for r in _load(HEADS_FILES) if r["phase"] == "tune" and r["n_heads"] == 32]
    best = min(rows, key=lambda r: r["val_loss"])
    return "best" if best["lr"] == 1e-2 else "worst" if max(rows, key=lambda r: r["val_loss"])["lr"] == 1e-2 \
        else "mixed"


def _ambiguity_rows(model: str) -> list[dict]:
    return sorted((r for r in _load("ambiguity.jsonl") if r["model"] == model), key=lambda r: r["layer"])


def _one_piece() -> str:
    """Section 20: "no word needed the mean of its pieces": every word is one token in both models."""
    return "needed" if all(r["most_pieces_per_word"] == 1 for r in _load("ambiguity.jsonl")) else "mixed"


def _first_separating_block(model: str) -> int:
    return next(r["layer"] for r in _ambiguity_rows(model) if r["words_gap_positive"] == r["words"])


def _smollm2_more_depth() -> str:
    """Section 20: SmolLM2's first block after which every word's within-sense cosine is above its across-sense one
    against MiniLM's."""
    return _every([(_first_separating_block("minilm"), _first_separating_block("smollm2"))], "more", "less")


def _water_above_smallest() -> str:
    """Section 20: water's control gap against the smallest ambiguous word's gap, after every MiniLM block."""
    rows = [r for r in _ambiguity_rows("minilm") if r["layer"] > 0]
    return _every(((r["gap_min"], r["control_per_word"]["water"]["gap"]) for r in rows), "above", "below")


def _smollm2_8_22_above() -> str:
    """Section 20: after SmolLM2's blocks 8-22 every ambiguous word's gap against every control word's."""
    rows = [r for r in _ambiguity_rows("smollm2") if 8 <= r["layer"] <= 22]
    return _every(((r["control_gap_max"], r["gap_min"]) for r in rows), "above", "below")


def _not_every_word_more() -> str:
    """Section 20: "not that every ambiguous word separates more than every unambiguous one": after some block a
    control word's gap exceeds an ambiguous word's."""
    rows = [r for m in ("minilm", "smollm2") for r in _ambiguity_rows(m) if r["layer"] > 0]
    return "more" if any(r["control_gap_max"] > r["gap_min"] for r in rows) else "mixed"


MORE_RULES.update({
    "hf_drifts_more": _hf_drifts_more, "nudged_ends_above": _nudged_ends_above,
    "probes_below_unigram": _probes_below_unigram, "gelu_runs_agree": _gelu_runs_agree,
    "heads_flops_same": _heads_flops_same, "heads_cost_more_longer": _heads_cost_more_longer,
    "narrow_heads_more_time": _narrow_heads_more_time, "init_scores_below_one": _init_scores_below_one,
    "vit_gains_more": _vit_gains_more, "tuned_32_heads_best": _tuned_32_heads_best, "one_piece": _one_piece,
    "smollm2_more_depth": _smollm2_more_depth, "water_above_smallest": _water_above_smallest,
    "smollm2_8_22_above": _smollm2_8_22_above, "not_every_word_more": _not_every_word_more,
})
MORE_PLACES += (
    ("experiments.md", "(4.6161 at step 1 in both), then the two runs drift apart by ", "hf_drifts_more"),
    ("experiments.md", "past 0.1 at step 41) and ends 0.052 ", "nudged_ends_above"),
    ("experiments.md", "`--n-layers 8 --steps 200 --eval-every 100`), well ", "probes_below_unigram"),
    ("experiments.md", "and section 2's seed-0 learned run differ by ", "gelu_runs_agree"),
    ("experiments.md", "**What it shows.** In FLOPs the claim ", "heads_flops_same"),
    ("experiments.md", "but at d_head 16 and 8 it costs 1.25-3.47x, ", "heads_cost_more_longer"),
    ("experiments.md", "\"Wasteful\" in the cost sense is row 4's: more, narrower heads take ",
     "narrow_heads_more_time"),
    ("experiments.md", "the scaled scores have variance 0.0025-0.0027, far ", "init_scores_below_one"),
    ("experiments.md", "So the path-length half of the claim ", "verdict_7_0"),
    ("experiments.md", "The longer schedules lifted both models, the ViT ", "vit_gains_more"),
    ("experiments.md", "(clipped) and which still ended with the ", "tuned_32_heads_best"),
    ("experiments.md", "Each word is one token in both tokenizers (no word ", "one_piece"),
    ("experiments.md", "SmolLM2 needs ", "smollm2_more_depth"),
    ("experiments.md", "after SmolLM2's blocks 5-30, and it is ", "water_above_smallest"),
    ("experiments.md", "after SmolLM2's blocks 8-22 every ambiguous word's gap is ", "smollm2_8_22_above"),
    ("experiments.md", "not that every ambiguous word separates ", "not_every_word_more"),
    # the seeds' claims, quoted
    ("experiments.md", "rather than concatenated with it and projected, which would be ", "quoted"),
    ("experiments.md", "which would be more general and have ", "quoted"),
    ("experiments.md", "keeping position and token in separate coordinates helped, and \"", "quoted"),
    ("experiments.md", "(it assumes nothing about where related pixels are), so it needs ", "quoted"),
    # a place on the page
    ("experiments.md", "so the differences ", "place"), ("experiments.md", "not re-run are listed ", "place"),
    ("experiments.md", "Each line ", "place"), ("experiments.md", "a \"same-seed change\" ", "place"),
    # definitions of a measured quantity or of a rule, names: no result
    ("experiments.md", "Pre-LN too starts on the plateau: its train loss first falls ", "name"),
    ("experiments.md", "the first step at which the mean training loss of the last 10 steps falls ", "name"),
    ("experiments.md", "median 0.452 / 0.444 / 0.443, ", "name"),
    ("experiments.md", "Two budgets, three seeds each; the ", "name"),
    ("experiments.md", "the larger is 4x the ", "name"),
    ("experiments.md", "by 0.4794-0.5809 bits per character at the ", "name"),
    ("experiments.md", "other pairs: mean, 90th percentile, max | paraphrases ", "name"),
    ("experiments.md", "(chance 1/2 if the top key is worth no ", "name"),
    ("experiments.md", "The pairs the null cannot match (top weight ", "name"),
    ("experiments.md", "| never any query's top key | no weight ", "name"),
    ("experiments.md", "This matches the mass only where the top key ", "verb"),
    ("experiments.md", "The recipe ", "verb"),
    ("experiments.md", "and is always written in ", "name"),
    ("experiments.md", "sense accuracy, leave one out: mean (lowest word), words at 0.9 or ", "name"),
    ("experiments.md", "of the sentences, with 6-8 of the 8 words at 0.9 or ", "name"),
    ("experiments.md", "8 / 8 words are at 0.9 or ", "name"),
    ("experiments.md", "every word is at 0.9 or ", "name"),
    ("experiments.md", "The row's rule would call LayerNorm ", "name"),
    ("experiments.md", "only if every run without it ended ", "name"),
    ("experiments.md", "ended more than 0.1 ", "name"),
)


APPROX = 1.25  # "holds only approximately": every head count up to 8 costs at most this times one head (a setting)


def _heads_time_approx() -> str:
    """Section 4: in time the claim holds approximately when up to 8 heads the SDPA path costs at most APPROX times
    one wide head at every n, and not exactly (some ratio above 1)."""
    ratios = [r["ratio_sdpa"]["median"] for r in _load("heads_cost.jsonl") if r["h"] <= 8]
    return "holds" if max(ratios) <= APPROX and max(ratios) > 1 else "fails"


def _vit_cnn_schedules() -> list[tuple[int, str, list[dict], list[dict]]]:
    from experiments_trace.parts import _vit_cnn_main, _vit_cnn_probes
    return list(_vit_cnn_probes(_vit_cnn_main(_load(("vit_vs_cnn.jsonl", "vit_vs_cnn_probe.jsonl")))))


def _acc_mean(runs: list[dict]) -> float:
    return sum(r["test_accuracy"] for r in runs) / len(runs)


def _acc_spread(runs: list[dict]) -> float:
    return max(r["test_accuracy"] for r in runs) - min(r["test_accuracy"] for r in runs)


def _doubling_within_spread() -> str:
    """Section 8: below the largest size, doubling the whole schedule moves neither model's mean test accuracy by
    more than its seeds' spread (the larger of the two schedules' spreads)."""
    probes = _vit_cnn_schedules()
    largest = max(size for size, *_ in probes)
    ok = all(abs(_acc_mean(b) - _acc_mean(a)) <= max(_acc_spread(a), _acc_spread(b))
             for size, _, a, b in probes if size < largest)
    return "more" if ok else "mixed"


def _comparison_both_lengths() -> str:
    """Section 8: the CNN's mean test accuracy above the ViT's at every size, at the whole schedules and at the
    longest schedule run."""
    from experiments_trace.parts import VIT_CNN_FULL, _vit_cnn_main, _vit_cnn_runs
    rows = _vit_cnn_main(_load(("vit_vs_cnn.jsonl", "vit_vs_cnn_probe.jsonl")))
    longest: dict[tuple[int, str], list[dict]] = {}
    for size, model, _, probe in _vit_cnn_schedules():
        if (size, model) not in longest or probe[0]["cap"] > longest[(size, model)][0]["cap"]:
            longest[(size, model)] = probe
    sizes = sorted({size for size, _ in longest})
    whole = all(_acc_mean(_vit_cnn_runs(rows, n, "CNN", VIT_CNN_FULL["CNN"]))
                > _acc_mean(_vit_cnn_runs(rows, n, "ViT", VIT_CNN_FULL["ViT"])) for n in sizes)
    longer = all(_acc_mean(longest[(n, "CNN")]) > _acc_mean(longest[(n, "ViT")]) for n in sizes)
    return "holds" if whole and longer else "fails"


def _attention_ops_more() -> str:
    """Section 22: attention's operations per token against the GRU's at every length up to 1,024 but the shortest,
    both calls, one thread ("as many or more"; "mixed" where the shortest is not the exception the sentence
    names)."""
    rows = [r for r in _load("recurrence_vs_attention.jsonl") if r["threads"] == 1 and r["n"] <= 1024]
    per = {(r["n"], r["call"], r["layer"]): r["flops_per_token"] for r in rows}
    ns = sorted({n for n, _, _ in per})
    calls = {c for _, c, _ in per}
    more = all(per[(n, c, "attention")] >= per[(n, c, "GRU")] for n in ns[1:] for c in calls)
    shortest_fewer = all(per[(ns[0], c, "attention")] < per[(ns[0], c, "GRU")] for c in calls)
    return "more" if more and shortest_fewer else "less" if not more else "mixed"


def _hot_lr_higher() -> str:
    """Section 1: the runs without clipping use a higher learning rate than section 1's runs (check_ln.jsonl's
    attnlab run is section 1's pre-LN seed 0 with its settings)."""
    hot = {r["lr"] for r in _load("ln_hot.jsonl")}
    base = next(r for r in _load("check_ln.jsonl") if r["variant"] == "attnlab")["lr"]
    return _every([(base, min(hot))], "higher", "lower")


def _heads_grid() -> tuple[float, set[float]]:
    rows = [r for name in HEADS_FILES for r in _load(name)]
    return max(r["lr"] for r in rows if r["phase"] == "tune"), {r["lr"] for r in rows if r["phase"] == "report"}


def _grid_top_not_above() -> str:
    """Sections 17-19: "a learning-rate grid above 1e-2" was not run when the grid's largest rate is 1e-2."""
    return "above" if _heads_grid()[0] <= 1e-2 else "mixed"


def _higher_rate_not_tried() -> str:
    """Section 17: every arm chose the top of the grid, so a higher rate was not tried."""
    top, chosen = _heads_grid()
    return "higher" if chosen == {top} else "mixed"


MORE_RULES.update({
    "heads_time_approx": _heads_time_approx, "doubling_within_spread": _doubling_within_spread,
    "comparison_both_lengths": _comparison_both_lengths, "attention_ops_more": _attention_ops_more,
    "hot_lr_higher": _hot_lr_higher, "grid_top_not_above": _grid_top_not_above,
    "higher_rate_not_tried": _higher_rate_not_tried,
})
MORE_PLACES += (
    ("experiments.md", "equals the formula 8nd² + 4n²d. In time it ", "heads_time_approx"),
    ("experiments.md", "1,000 images doubling moves neither model's mean by ", "doubling_within_spread"),
    ("experiments.md", "it understates both models by 0.006-0.011; the comparison ", "comparison_both_lengths"),
    ("experiments.md", "but the shortest it does as many operations or ", "attention_ops_more"),
    ("experiments.md", "### Without clipping, at a ", "hot_lr_higher"),
    ("experiments.md", "longer runs, other widths and a learning-rate grid ", "grid_top_not_above"),
    ("experiments.md", "was chosen for every arm, so a ", "higher_rate_not_tried"),
    # definitions: no result
    ("experiments.md", "A schedule counts as long enough when lengthening it moves the mean by ", "name"),
    ("experiments.md", "the 4 mean keys and values of the blocks that make up its next ", "name"),
    ("experiments.md", "would show as a run stopped for a non-finite loss, a ", "name"),
)


def _pre_ln_below_bigram() -> str:
    """Section 1: pre-LN without warmup ends below add-one bigram counts on the same windows (section 6's
    baselines line) on every seed."""
    bigram = next(r for r in _load("mask_after_softmax.jsonl") if "baseline" in r)["bigram_every_position"]
    return _every(((_final(r), bigram) for r in _ln_runs(_load("ln_1500.jsonl"), 1500, "pre")), "below", "above")


def _relu_unchanged_roughly() -> str:
    """Section 3: ReLU "unchanged" by the scaled init holds (roughly) when its mean final val loss moves by no more
    than the larger seed spread of the two rows."""
    scaled, default = _act(SCALED, "relu"), _act(SECTION3, "relu")
    move = abs(sum(scaled) / len(scaled) - sum(default) / len(default))
    return "holds" if move <= max(max(v) - min(v) for v in (scaled, default)) else "fails"


def _recall_smaller_rate() -> str:
    """Section 7: at k 8 the GRU's and LSTM's sweeps (seed 0) tie at every rate, so the smaller rate is chosen
    (ties go to the smaller): each summary line's chosen rate against its sweep's."""
    rows = [r for r in _load("recall_distance.jsonl") if r.get("summary") and r["k"] == 8
            and r["model"] in ("GRU", "LSTM")]
    tie = all(len(set(r["sweep_val_accuracy"].values())) == 1 for r in rows)
    chosen = {r["chosen_lr"] == min(r["swept_lrs"]) for r in rows}
    return "smaller" if tie and chosen == {True} else "mixed"


def _future_mass_crossing(mass: list[float], last: int = 50) -> int | None:
    """The first position from which layer 0's mass on future keys stays above uniform attention's over the
    whole window ((63 - t) / 64 at position t) up to `last`."""
    above = [m > (len(mass) - 1 - t) / len(mass) for t, m in enumerate(mass)]
    for p in range(last + 1):
        if all(above[p:last + 1]):
            return p
    return None


def _future_mass_more() -> str:
    """Section 6: masking after the softmax, layer 0 keeps more of every row on future keys than uniform attention
    would, from some position on to position 50, on every seed."""
    rows = [r for r in _load("mask_after_softmax.jsonl") if "future_mass_by_position" in r]
    return "more" if all(_future_mass_crossing(r["future_mass_by_position"][0]) is not None for r in rows) else "less"


MORE_RULES.update({
    "pre_ln_below_bigram": _pre_ln_below_bigram, "relu_unchanged_roughly": _relu_unchanged_roughly,
    "recall_smaller_rate": _recall_smaller_rate, "future_mass_more": _future_mass_more,
})
MORE_PLACES += (
    # docs/interop.md: "holds" as "contains", a place on the page, a column's name, a tolerance's definition
    ("docs/interop.md", "(Pythia) | `query_key_value` ", "verb"),
    ("docs/interop.md", "\"multimodal\" where the config ", "verb"),
    ("docs/interop.md", "`attnlab/interop/families.py` ", "verb"),
    ("docs/interop.md", "metadata claiming a larger model than the file ", "verb"),
    ("docs/interop.md", "SmolLM2-135M (Q4_1 + a Q8_0 embedding) then ", "verb"),
    ("docs/interop.md", "in attnlab and transformers (below). The file ", "verb"),
    ("docs/interop.md", "llama.cpp itself runs every written file; its logits are ", "place"),
    ("docs/interop.md", "| HF classes read and written | what needs ", "name"),
    ("docs/interop.md", "the kept path may lie as far from llama.cpp as the ", "name"),
    ("experiments.md", "at step 1,500 for seeds 0 / 1 / 2, ", "pre_ln_below_bigram"),
    ("experiments.md", "0.030 worse on seed 2, so \"unchanged\" ", "relu_unchanged_roughly"),
    ("experiments.md", "(the GRU and LSTM at every rate of the sweep, so the ", "recall_smaller_rate"),
    ("experiments.md", "of every row on future keys from position 10 to 50 on the three seeds, ", "future_mass_more"),
    ("experiments.md", "and many never get a weight ", "name"),  # the threshold of the table's column
)


NEARLY_LINEAR = 0.2  # near 0 GELU(x) = 0.5x + 0.4x² + ...: "nearly linear" where the quadratic term at one standard
# deviation s of its input, 0.4 s², is at most this share of the linear term 0.5 s, i.e. s <= 0.25 (a setting)
SPREAD = 0.1  # "does not say whether it matters more or less": per-pair shares reach within this of 0 and of 1


def _gelu_linear_at_init() -> str:
    """Section 3: where GELU's inputs start (the std every GELU run at the default init recorded at step 0),
    GELU's quadratic term at one std is at most NEARLY_LINEAR of its linear term ("mixed" otherwise: GELU far
    from 0 is no quadratic, so the sentence would just be wrong)."""
    stds = [r["preact_std_init"] for r in _load(("activations.jsonl", "activations_1500.jsonl"))
            if r["activation"] == "gelu" and r["init"] == "default"]
    return "linear" if stds and all(0.4 * s * s <= NEARLY_LINEAR * 0.5 * s for s in stds) else "mixed"


def _sinusoidal_hurt() -> str:
    """Row 2: sinusoidal positions against no positions at all, final val loss, same seed (worse on every seed:
    the sinusoidal table hurt)."""
    return _every(zip(_positions("none"), _positions("sinusoidal"), strict=True), "hurt", "not hurt")


def _whole_warmup_less() -> str:
    """Section 1's warmup sweep: post-LN with a warmup spanning the whole run against each shorter warmup (above
    0), final val loss, same seed ("less is learned": it ends higher on every seed)."""
    rows = [r for r in _load("ln_warmup.jsonl") if r["placement"] == "post"]
    whole = {r["seed"]: _final(r) for r in rows if r["warmup"] == r["steps"]}
    return _every(((_final(r), whole[r["seed"]]) for r in rows if 0 < r["warmup"] < r["steps"]), "less", "more")


def _local_uses_no_more() -> str:
    """Section 13: "uses no more than the last 64 characters": the local window (w 64, context 256) ends at or
    below full attention's val loss on every seed ("mixed" where full attention gains from the farther keys)."""
    runs = _eff_runs(_load("efficient_attention_quality.jsonl"))
    return "more" if all(a["val_loss"] <= b["val_loss"] for a, b in zip(runs["local"], runs["full"], strict=True)) \
        else "mixed"


def _weight_says_neither(word: str) -> Callable[[], str]:
    """Section 14: "its weight does not say whether it matters more or less than other keys of the same total
    weight": in both models the per-pair share of the null's draws the top key beats reaches within SPREAD of 0
    (10th percentile) and of 1 (90th), the null of seed 0 ("mixed" where the shares bunch on one side)."""
    def rule() -> str:
        rows = [r for r in _load("attention_explanation_null.jsonl") if r.get("summary")]
        wide = rows and all(r["beat_share_p10"] <= SPREAD and r["beat_share_p90"] >= 1 - SPREAD for r in rows)
        return word if wide else "mixed"
    return rule


MORE_RULES.update({
    "gelu_linear_at_init": _gelu_linear_at_init, "sinusoidal_hurt": _sinusoidal_hurt,
    "whole_warmup_less": _whole_warmup_less, "local_uses_no_more": _local_uses_no_more,
    "weight_says_neither_more": _weight_says_neither("more"), "weight_says_neither_less": _weight_says_neither("less"),
})
MORE_PLACES += (
    ("experiments.md", "seed spread 0.012-0.041, sinusoidal 0.120); sinusoidal ", "sinusoidal_hurt"),
    ("experiments.md", "GELU's inputs start at std 0.16, where it is nearly ", "gelu_linear_at_init"),
    ("experiments.md", "the activation's inputs start with std 0.16, where GELU is nearly ", "gelu_linear_at_init"),
    ("experiments.md", "what section 3 measured was an init that starts GELU's inputs where it is nearly ",
     "gelu_linear_at_init"),
    ("experiments.md", "the learning rate reaches its peak only at the last step, so ", "whole_warmup_less"),
    ("experiments.md", "at 600 steps this character model uses no ", "local_uses_no_more"),
    ("experiments.md", "but its weight does not say whether it matters ", "weight_says_neither_more"),
    ("experiments.md", "does not say whether it matters more or ", "weight_says_neither_less"),
    # mathematics: true whatever the runs gave
    ("experiments.md", "and near 0 GELU is almost ", "math"),
    ("experiments.md", "Positive homogeneity (ReLU(ax) = a ReLU(x)) means a ", "math"),
    ("experiments.md", "so each row keeps only the mass it gave to the past and sums to ", "math"),
    ("experiments.md", "the marker is out of its reach, so no training can help without ", "math"),
    # the method: what was run and compared, and why
    ("experiments.md", "**Why this size.** A ", "method"),
    ("experiments.md", "validation sequences (ties go to the ", "method"),
    ("experiments.md", "(N = 250, 500, 1,000 and 3,500; a ", "method"),
    ("experiments.md", "(N = 250, 500, 1,000 and 3,500; a larger set contains the ", "method"),
    ("experiments.md", "so the most-attended key removes the most, and would often ", "method"),
    ("experiments.md", "\"Wasteful\" in the cost sense is row 4's: ", "method"),
    ("experiments.md", "before the start of the window, where the transformer too sees ", "method"),
    # what was not measured
    ("experiments.md", "three seeds); not shown: that it ", "unmeasured"),
    ("experiments.md", "(the first version's k 128 was not repeated in this budget), ", "unmeasured"),
    ("experiments.md", "whether the character model catches up with much ", "unmeasured"),
    ("experiments.md", "Not shown: whether the order ", "unmeasured"),
    ("experiments.md", "whether it lasts with longer training, at ", "unmeasured"),
    ("experiments.md", "what a busy two-core machine gives, not as this CPU's ", "unmeasured"),
    ("experiments.md", "no GPU, where the parallel advantage would be far ", "unmeasured"),
)


# ---------------------------------------------------------------- docs/experiments_vit_grid.md
VIT_GRID = "experiments_vit_grid.md"


def _grid_runs(setting: str | None = None) -> list[dict]:
    return sorted((r for r in _load("vit_grid.jsonl") if "nearest_is_neighbour" in r and "seed" in r
                   and r.get("run") == (setting or r.get("run"))), key=lambda r: r["seed"])


def _grid_summaries() -> list[dict]:
    return [r for r in _load("vit_grid.jsonl") if "summary" in r]


def _p7s1_no_more_than_chance() -> str:
    """p7s1: on no seed are the nearest neighbours grid neighbours more often than chance."""
    return "more" if all(r["nearest_is_neighbour"] <= r["chance_neighbours"] for r in _grid_runs("p7s1")) else "mixed"


def _p7s3_seed0_more() -> str:
    """p7s3: the nearest neighbours are grid neighbours more often than chance (p < 0.01) on seed 0 and on no other
    seed."""
    p = [r["nearest_p"] for r in _grid_runs("p7s3")]
    return "more" if p[0] < 0.01 and all(x >= 0.01 for x in p[1:]) else "mixed"


def _chosen_best_val() -> str:
    """The chosen setting has the highest mean validation accuracy of the grid."""
    rows = _grid_summaries()
    best = max(rows, key=lambda r: r["val_accuracy"]["mean"])
    return "best" if best["chosen"] and sum(r["chosen"] for r in rows) == 1 else "mixed"


def _grid_below_shipped() -> str:
    """The grid's 1,500-step runs' test accuracy against the shipped 6,000-step checkpoint's."""
    rows = _load("vit_grid.jsonl")
    shipped = next(r for r in rows if r.get("run") == "shipped")["test_accuracy"]
    return _every(((r["test_accuracy"], shipped) for r in rows if r.get("chosen") and "seed" in r), "lower", "higher")


def _small_grid_fewer_pairs() -> str:
    """The 4 x 4 grid's pairs against the 7 x 7 grid's."""
    pairs = {r["grid"]: r["pairs"] for r in _grid_runs()}
    return _every([(pairs[min(pairs)], pairs[max(pairs)])], "less", "more")


MORE_RULES.update({
    "p7s1_no_more_than_chance": _p7s1_no_more_than_chance, "p7s3_seed0_more": _p7s3_seed0_more,
    "chosen_best_val": _chosen_best_val, "grid_below_shipped": _grid_below_shipped,
    "small_grid_fewer_pairs": _small_grid_fewer_pairs,
})
MORE_RULES["residual_needed"] = lambda: "needed" if _residual_statement() == "holds" else "not needed"
MORE_PLACES += (
    ("docs/notebook.md", "They make claims: pre-LN trains deep stacks ", "quoted"),
    ("docs/notebook.md", "keeps scores at unit variance, transformers need ", "quoted"),
    ("docs/notebook.md", "partial: the residual is ", "residual_needed"),  # row 23's verdict, section 23's rule
    ("docs/howto/gguf.md", "A file that claims a larger model than it ", "verb"),
    ("docs/performance.md", "(the last lines name the 15 ", "name"),  # what pytest --durations prints
    (VIT_GRID, "its nearest neighbours are grid neighbours no ", "p7s1_no_more_than_chance"),
    (VIT_GRID, "(-0.015 to +0.130), no seed with p < 0.01; its nearest neighbours are grid neighbours ",
     "p7s3_seed0_more"),
    (VIT_GRID, "The setting with the ", "chosen_best_val"),
    (VIT_GRID, "these are shorter trainings than the recipe's, and the accuracies are ", "grid_below_shipped"),
    (VIT_GRID, "2 x 2 inner block also give the statistic ", "small_grid_fewer_pairs"),
    (VIT_GRID, "nothing tells it that patch 8 sits ", "place"),  # a place in the image's grid of patches
    (VIT_GRID, "(rho > 0: nearer patches are ", "name"),  # the definition of the statistic's sign
)


# ---------------------------------------------------------------- docs/notebook.md: the verdicts in brief
def _notebook_rows() -> dict[int, list[str]]:
    """docs/notebook.md's summary table: row number -> its cells."""
    out = {}
    for line in (ROOT / "docs" / "notebook.md").read_text().splitlines():
        m = re.match(r"^\| (\d+) \| (.*) \|$", line)
        if m:
            out[int(m[1])] = m[2].split(" | ")
    return out


NOTEBOOK_PLACES = tuple(("docs/notebook.md", f"| {n} | {cells[0]} | ", f"verdict_{n}_0")
                        for n, cells in _notebook_rows().items() if re.match(r"(holds|fails)\b", cells[1]))


# ---------------------------------------------------------------- rules of the other pages: over the logs
def _logged(page: str, fragment: str) -> float:
    """The logged value of the figure tests/test_claims_sources.py's CLAIMS reads back where `page` prints text
    containing `fragment` (with the figure in braces, as CLAIMS writes it)."""
    import test_claims_sources as sources

    rows = [c for c in sources.CLAIMS if c[0] == page and fragment in c[1]]
    assert len(rows) == 1, f"{page}: {len(rows)} CLAIMS rows hold {fragment!r}"
    _, _, log, where, scale = rows[0]
    return sources._value(sources.ROOT / log, where) * scale


def _ratio_word(page: str, *fragments: str, above: str = "faster", below: str = "slower") -> Callable[[], str]:
    """above when every logged ratio (attnlab's rate over the peer's) is above 1, below when every one is under."""
    return lambda: _every(((1.0, _logged(page, f)) for f in fragments), above, below)


def _from_json(name: str, *path: str) -> float:
    import json
    value = json.loads((ROOT / name).read_text())
    for key in path:
        value = value[key]
    return float(value)


GGUF = "docs/howto/gguf.md"
RATIO_RULES: dict[str, Callable[[], str]] = {
    # attnlab's rate over the peer's, read from the logs test_claims_sources.py binds
    "gguf_decodes_faster": _ratio_word(GGUF, "{1.45}x llama.cpp's rate", "{1.51}x\n  at two"),
    "gguf_prefill_faster": _ratio_word(GGUF, "prompt at {4.96}x", "prompt at 4.96x / {4.31}x",
                                       "reads its prompt at {2.81}x", "reads its prompt at 2.81x / {2.32}x",
                                       "and {1.16}x / 1.09x", "and 1.16x / {1.09}x"),
    "gpu_trains_faster": _ratio_word("docs/howto/install.md", "trains {1.60}x faster"),
    "uncached_step_slower": lambda: _every([(_logged("docs/cost.md", "grows from {196} ms"),
                                             1000 * _logged("docs/cost.md", "196 ms to {2.4} s"))], "slower", "faster"),
    "gpt_char_below_bigram": lambda: _every([(_from_json(
        "attnlab/assets/checkpoints/gpt-char/trained.json", "final_eval", "val_loss"), _from_json(
        "attnlab/assets/checkpoints/gpt-char/trained.json", "final_eval", "bigram_val_loss"))], "below", "above"),
    "smollm2_steps_lower": lambda: _every([(_from_json("bench/results/fine-tune-2026-12-06/smollm2.json",
                                                       "val_loss_after"),
                                            _from_json("bench/results/fine-tune-2026-12-06/smollm2.json",
                                                       "val_loss_before"))], "lower", "higher"),
}
RATIO_PLACES: tuple[tuple[str, str, str], ...] = (  # (page, the text the word follows, rule)
    ("README.md", "SmolLM2's GGUF decodes ", "gguf_decodes_faster"),
    (GGUF, "into its own block, generates from them ", "gguf_decodes_faster"),
    ("docs/quantization.md", "and SmolLM2's GGUF decodes ", "gguf_decodes_faster"),
    ("docs/quantization.md", "every kept format reads its prompt ", "gguf_prefill_faster"),
    ("docs/howto/install.md", "GPT-2 small trains 1.60x ", "gpu_trains_faster"),
    ("docs/cost.md", "grows from 196 ms to 2.4 s, 43× ", "uncached_step_slower"),
    ("docs/training.md", "on the same split: **1.01 ", "gpt_char_below_bigram"),
    ("docs/fine-tuning.md", "40 steps of 2 windows ", "smollm2_steps_lower"),
)


# ---- P3: docs/quantization.md, docs/generation.md, docs/interop.md: words over the logged quick run (quantized steps
# against float32), the threads benchmark's busy runs, the library's computed sizes, and the ratios the pages print
# beside a word (hand measurements the pages mark not logged: figures.tsv pins the figure, the rule ties the word to
# it); the others are what the code does or refuses (method), arithmetic (math), a place, or "holds" as "contains"
QUICK_NIGHT = "bench/results/quantized-2026-12-07/quick.log"  # the speed table's run (quantized --quick, Zen 5)
QUICK_TABLES = {"gpt2": "| GPT-2-small shape (random), batch 1 | step | vs float32 |",
                "smollm2": "| SmolLM2-135M, batch 1 | step | vs float32 |"}


def _quick_ratio(table: str, variant: str) -> float:
    """The logged quick run's "vs float32" (float32's step time over the variant's) of `variant`'s row in the
    quantized benchmark's table of `table` (QUICK_TABLES)."""
    text = (ROOT / QUICK_NIGHT).read_text()
    rows = text[text.index(QUICK_TABLES[table]):].split("\n\n")[0]
    m = re.search(rf"^\| {re.escape(variant)} \| [\d.]+ ms \| ([\d.]+)x \|", rows, re.M)
    return float(m[1])


KEPT_FAST = (("gpt2", "int8"), ("gpt2", "int4"), ("smollm2", "GGUF kept (Q4_1 + Q8_0)"), ("smollm2", "int8"))
UNPACKED = (("gpt2", "int4 chunked (no kernel)"), ("smollm2", "GGUF kept, chunked (no kernel)"))


def _computed(name: str) -> float:
    """A figure tests/experiments_trace/figures.py computes from attnlab (COMPUTED[name]), as a number."""
    from experiments_trace.figures import COMPUTED
    return float(COMPUTED[name]())


def _printed(page: str, fragment: str) -> float:
    """The figure a page prints in `fragment` (written with the figure in braces, as CLAIMS writes it): a hand
    measurement the page marks not logged, whose figure figures.tsv pins."""
    before, _, rest = fragment.partition("{")
    figure, _, after = rest.partition("}")
    m = re.search(re.escape(before) + r"([\d.]+)" + re.escape(after), normal((ROOT / page).read_text()))
    assert m, f"{page} prints no {fragment!r}"
    return float(m[1])


def _busy_rates(threads: str) -> list[float]:
    """tokens/s of every row of the threads benchmark's busy runs (two busy competitors on the two cores) at
    threads=1 or threads=2 (bench/results/threads-2026-12-07/busy-run*.log), row by row."""
    out = []
    for log in sorted((ROOT / "bench/results/threads-2026-12-07").glob("busy-run*.log")):
        for m in re.finditer(r"^\| generate .* \| 2 busy competitors \| \d+ \([\d.]+ ms\) \| (\d+) \([\d.]+ ms\) \| "
                             r"(\d+) \([\d.]+ ms\) \|", log.read_text(), re.M):
            out.append(_busy_rate(float(m[1 if threads == "1" else 2])))
    return out


def _busy_rate(value: float) -> float:  # a loader: the flip test transforms what it returns
    return value


ATTENTION_LOG = "bench/results/long-prompts-2026-12-07/kernel-vs-sdpa.log"  # the kernel's error against SDPA's


def _kernel_shapes(which: str) -> float:
    """Of the log's random shapes, in how many the attention kernel's error (against float64) is `which` ("larger"
    or "smaller") than torch's float32 SDPA's."""
    return float(re.search(rf"{which} (?:than SDPA's )?in (\d+)", (ROOT / ATTENTION_LOG).read_text())[1])


GEN, QUANT, INTEROP = "docs/generation.md", "docs/quantization.md", "docs/interop.md"
MORE_RULES.update({
    # a quantized decoding step against float32's, the logged quick run: faster for every kept kernel's row
    "quantized_steps_faster": lambda: _every(((1.0, _quick_ratio(*r)) for r in KEPT_FAST), "faster", "slower"),
    # the 4-bit formats unpacked in torch (no kernel): slower than float32 in both tables, costing more than they save
    "unpacked_slower": lambda: _every(((_quick_ratio(*r), 1.0) for r in UNPACKED), "slower", "faster"),
    "unpacked_costs_more": lambda: _every(((_quick_ratio(*r), 1.0) for r in UNPACKED), "more", "less"),
    # bytes a weight beyond the file when a K-quant's scales are kept unpacked (Q4_K / Q5_K, and Q6_K)
    "kquant_more_bytes": lambda: _every(((0.0, _computed(n)) for n in ("kquant_4_5_extra", "kquant_6_extra")),
                                        "more", "less"),
    # int4 with its head at int8 against a 4-bit head, SmolLM2's MiB
    "int8_head_more": lambda: _every([(0.0, _computed("smollm2_int8_head_cost"))], "more", "less"),
    # more threads than free cores: threads=2 against threads=1 with two busy competitors, every row of every run
    "busy_two_threads_slow": lambda: _every(zip(_busy_rates("2"), _busy_rates("1"), strict=True), "more", "less"),
    # the attention kernel's error against SDPA's: larger in some cases, smaller in others (counts of the log)
    "kernel_error_larger": lambda: _every([(0.0, _kernel_shapes("larger"))], "larger", "smaller"),
    "kernel_error_smaller": lambda: _every([(0.0, _kernel_shapes("smaller"))], "smaller", "larger"),
})
MORE_PLACES += tuple((QUANT, end, rule) for end, rule in (
    ("so storing each weight in ", "math"),  # fewer bytes a weight: what quantizing is
    ("in fewer bytes is the direct way to make it ", "quantized_steps_faster"),
    ("is the direct way to make it faster and ", "math"),
    ("on a CPU with AVX512-VNNI a GPT-2-small step is 4.4x ", "quantized_steps_faster"),
    ("the blocks would then go through the chunked path, ", "unpacked_slower"),
    ("need up to 18 bits, ", "math"),
    ("at 0.19 (Q4_K, Q5_K) and 0.43 (Q6_K) ", "kquant_more_bytes"),
    ("also multiplies its rounding residual in a second call). A prefill (", "method"),
    ("the same logits bit for bit `model.safetensors` ", "verb"),
    ("whose tied embedding is Q8_0. \"float32\" ", "place"),
    ("at one token), and in forwards of ", "method"),
    ("now keeps the head at int8 (the row ", "place"),
    ("within noise of float32, for 10 MiB ", "int8_head_more"),
    ("4-bit formats are unpacked in torch, which costs ", "unpacked_costs_more"),
    ("there they buy memory, not speed. Prefill (", "method"),
    ("nobody else can write, and every folder ", "place"),  # higher in the path
    ("tests/test_attention_kernel.py): ", "kernel_error_larger"),
    ("larger than SDPA's in some cases, ", "kernel_error_smaller"),
    ("fresh, padded or after cached tokens, ", "kernel_error_larger"),
    ("after cached tokens, larger in 41 and ", "kernel_error_smaller"),
    ("larger in 41 and smaller in 38, the ", "name"),  # the largest error of the cases
))
MORE_PLACES += tuple((GEN, end, rule) for end, rule in (
    ("the command generates at most 64 new tokens and never ", "method"),
    ("a temperature that is negative, not finite or ", "method"),
    ("(use 0 for greedy: ", "method"),
    ("top-p outside (0, 1], a negative top-k, ", "method"),
    ("per sequence for multi-head attention, ", "math"),  # kv_heads < heads: fewer numbers
    ("(the nucleus: the smallest set of ", "method"),
    ("the nucleus is looked for among the 1,024 ", "method"),
    ("each step the 2·num_beams ", "method"),
    ("`decode_copy=False` or a ", "method"),
    ("start nothing, and so does a request of ", "method"),
    ("(loading the step would cost it ", "method"),  # why COMPILED_FROM is where it is
    ("where eager's two ", "name"),  # the two largest logits
    ("once the sequence has ", "method"),
    ("and to the count measured ", "method"),
    ("through this model (", "method"),
    ("(docs/reliability.md). Why: ", "busy_two_threads_slow"),
    ("one beam equals greedy; beams never score ", "method"),  # what the test asserts
    ("stop strings cut the text; - every bad input ", "place"),
))
# ---- P2: docs/explorer.md and docs/howto/class.md: words that say what the explorer does or how a run was set up
# (method), "holds" as "contains" (verb), a place on the page or in the page's grid (place), a quoted label, a
# name, arithmetic (math: Q4_1 / Q8_0 blocks read fewer bytes than float32 whatever the machine), and a general
# remark the page does not measure (unmeasured). Words over hand timings the page prints beside them (marked not
# logged: figures.tsv pins the figures, the rule ties the word to them): the patch grid "slowest" of the speed table
# (the Q8_0 multi-row kernel's "faster" follows its re-run's log: e_q8_0_rows_faster); the
# blocks' chunked fallback "slower" than float32 follows P3's unpacked_slower (the logged quick run). Left pinned:
# the head's row-by-row reads "cost more" (a profile, not logged, with no figure beside it).
EXPLORER_PAGE, CLASS_PAGE = "docs/explorer.md", "docs/howto/class.md"


def _explorer_speed_s(case: str, column: int) -> float:
    """docs/explorer.md's Experiments speed table (not logged): a case's time in seconds, column 0 MiniLM's CPU,
    1 its wall, 2 SmolLM2's CPU, 3 its wall (the cells read "CPU / wall ms" or "CPU / wall s")."""
    text = normal((ROOT / EXPLORER_PAGE).read_text())
    cells = re.search(r"\| " + re.escape(case) + r"[^|]*\|([^|]*)\|([^|]*)\|", text)
    values = []
    for cell in cells.groups():
        m = re.search(r"([\d.]+) / ([\d.]+) (ms|s)", cell)
        values += [float(m[1]), float(m[2])] if m else [math.nan, math.nan]
        values[-2:] = [v / 1000 if m and m[3] == "ms" else v for v in values[-2:]]
    return _explorer_printed(values[column])


def _explorer_printed(value: float) -> float:  # a loader: the flip test transforms what it returns
    return value


_SPEED_CASES = ("one plain forward (the peer)", "ablation answer", "one patched run",
                "which heads matter (72 / 270 heads)", "logit lens", "patch grid (20 × 6 / 20 × 30 cells)")
_KEPT_ROWS = (("one forward", "50", "141", "ms"), ("ablation", "75", "186", "ms"), ("patched run", "51", "133", "ms"),
              ("logit lens", "73", "192", "ms"), ("\"which heads matter\"", "5.1", "9.3", "s"),
              ("patch grid", "8.6", "17.6", "s"))  # P6: the kept table's rows as the page prints them


def _patch_grid_slowest() -> str:
    """Of the speed table's SmolLM2 answers (CPU), the patch grid against every other case."""
    grid = _explorer_speed_s(_SPEED_CASES[-1], 2)
    others = [_explorer_speed_s(c, 2) for c in _SPEED_CASES[:-1]]
    others = [v for v in others if not math.isnan(v)]
    return "slowest" if all(grid > v for v in others) else "fastest" if all(grid < v for v in others) else "mixed"


MORE_RULES.update({
    # P6: the kept-vs-expanded table re-run 2026-12-07 (logged): kept below expanded in every case
    "explorer_kept_less_cpu": lambda: _every(((_logged(EXPLORER_PAGE, f"| {case} | {{{k}}} {u} |"),
                                               _logged(EXPLORER_PAGE, f"| {case} | {k} {u} | {{{x}}} {u} |"))
                                              for case, k, x, u in _KEPT_ROWS), "less", "more"),
    "explorer_patch_grid_slowest": _patch_grid_slowest,
})
MORE_PLACES += tuple((EXPLORER_PAGE, end, kind) for end, kind in (
    ("flatten each to C·P·P numbers, the ", "name"),
    ("the softmax, whether the k ", "method"),
    ("Each step sends its 50 ", "method"),
    ("timed by default on models under 20 M parameters, on ", "method"),
    ("(the server stops stepping too). A step that ", "verb"),
    ("**The weights as the model ", "verb"),
    ("SmolLM2 as the explorer loads it ", "verb"),
    ("with the weights at the precision the model ", "verb"),
    ("blocks and 0.51 in float32 (5.17× ", "math"),
    ("that one matrix). The test ", "verb"),
    ("kept step from which its score stays at or ", "method"),
    ("and normalised. The default list ", "verb"),
    ("the share) are written in the line ", "place"),
    ("than the screen says \"scroll sideways: ", "quoted"),
    ("outlined, pressed) and scrolls the result ", "place"),
    ("(a late MLP often writes several times ", "unmeasured"),
    ("address served longest ago (among addresses with ", "method"),
    ("runs one heavy job at a time and may have 2 ", "method"),
    ("however many one student sends), with up to 32 ", "method"),
    ("Since turns go by address first, ", "method"),
    ("more ids from one address never buy ", "method"),
    ("beside two clients that try to take ", "method"),
    ("(the log's `rotator_ids` counts one ", "method"),  # the address's own id: rotator_ids - 1 ids were issued
    ("a sentence whose recording would take ", "method"),
    ("as the page asks (", "method"),  # best of 3: how the step is timed
    ("2.36x on 2026-11-26, not logged), and the model ", "verb"),
    ("extra CPU on products of ", "method"),
    ("on every call of ", "method"),
    ("nothing interactive. What it ", "verb"),
    ("embedded and the view says so. The lessons ", "place"),
    ("compares the page's `data-` numbers with `api.py`, ", "method"),
    ("Every case now takes ", "explorer_kept_less_cpu"),  # P6: the re-run kept table
    ("and its patch grid (600 cells) is the ", "explorer_patch_grid_slowest"),
    ("it expands the file to float32 as before (the blocks' chunked fallback is ", "unpacked_slower"),
))
MORE_PLACES += tuple((CLASS_PAGE, end, kind) for end, kind in (
    ("students open the address ", "place"),
    ("one long job at a time and may have two ", "method"),
    ("beside two clients trying to take ", "method"),
))
# ---- P2: end
MORE_PLACES += tuple((INTEROP, end, rule) for end, rule in (
    ("a `partial_rotary_factor` ", "method"),  # what the reader refuses
    ("a long forward followed by a shorter one ", "method"),
    ("on the meta device: metadata claiming a ", "method"),
    ("(grad enabled, kernels off, or ", "method"),
    ("are rebuilt from its scores in time ", "math"),  # one pass over the merges
    ("changes a single weight and checks the parity test ", "method"),
))
# ---- P3: end


# ---- P1: docs/training.md: words over the logged trials (tests/test_claims_sources.py's CLAIMS on
# bench/results/minilm-trials-2026-12-07, minilm-everyday-2026-12-07), the shipped checkpoints' trained.json and two
# hand rates the page prints (not logged: figures.tsv pins them, the rule ties the word to them); the others are
# what the code does or refuses and why (method), arithmetic (math), what the page says was not measured
# (unmeasured), a place, a name, a quoted answer, or "holds" as "contains"
TRAINING = "docs/training.md"
VIT_TRAINED = "attnlab/assets/checkpoints/vit-mnist/trained.json"


def _log_scores(log: str, which: str = "dev") -> list[float]:
    """Every cloze score of a trial log (tests/training/test_cloze.py's counts of a checkpoint): 'dev' (of 22) or
    'test' (of 40)."""
    return [float(m[1]) for m in re.finditer(rf"^cloze \S+ {which} (\d+)/", (ROOT / log).read_text(), re.M)]


_TRIALS_LOGS = ("bench/results/minilm-trials-2026-12-07/words-only.log",
                "bench/results/minilm-trials-2026-12-07/everyday.log",
                "bench/results/minilm-trials-2026-12-07/distill.log",
                "bench/results/minilm-everyday-2026-12-07/runs.log")


def _top(value: float, others: list[float]) -> str:
    return "best" if value >= max(others) else "mixed"


def _block3_pairs() -> list[tuple[float, float]]:
    """(layers=4's held-out loss, the six-block run's) at steps 500 and 1000, as the page prints them."""
    return [(_logged(TRAINING, "val loss {4.58} / top-5"), _logged(TRAINING, "| {4.93} / 42.1%")),
            (_logged(TRAINING, "**{4.22} / 49.7%**"), _logged(TRAINING, "at step 500; {4.53} / 46.2%"))]


MORE_RULES.update({
    # reading block 3 against block 5: the layers=4 run's held-out loss against the six-block run's, both evaluations
    "block3_faster": lambda: _every(_block3_pairs(), "faster", "slower"),
    "block3_lower": lambda: _every(_block3_pairs(), "lower", "higher"),
    # a test-list share against the 60% target
    "layers4_below_target": lambda: _every([(100 * _logged(TRAINING, "head gets {10} of") / 40,
                                             _computed("cloze_target_pct"))], "below", "above"),
    "big_a_below_target": lambda: _every([(100 * _logged(TRAINING, "runs.log`): **{17} of 40") / 40,
                                           _computed("cloze_target_pct"))], "below", "above"),
    # the teacher's seeds against the seeds without it: held-out loss higher, top-5 lower on every seed
    "teacher_loss_higher": lambda: _every(zip(
        [_logged(TRAINING, f) for f in ("| {3.17}, 3.18", "3.17, {3.18}, 3.16", "3.18, {3.16} /")],
        [_logged(TRAINING, f) for f in ("| {3.26}, 3.24", "3.26, {3.24}, 3.26", "3.24, {3.26} /")], strict=True),
        "higher", "lower"),
    "teacher_top5_lower": lambda: _every(zip(
        [_logged(TRAINING, f) for f in ("/ {63.1}%, 61.4%", "63.1%, {61.4}%", "61.4%, {61.2}%")],
        [_logged(TRAINING, f) for f in ("/ {64.0}%, 63.7%", "64.0%, {63.7}%", "63.7%, {63.2}%")], strict=True),
        "lower", "higher"),
    # "the best, 10 of 22": no development score of the distillation table's runs is higher
    "distill_best_ten": lambda: _top(_logged(TRAINING, "(the best, {10} of 22"), _log_scores(_TRIALS_LOGS[2])),
    # big-a on the test list against the earlier runs' best (10 of 40, the layers=4 run)
    "earlier_best_ten": lambda: _top(_logged(TRAINING, "**{10} of 40** at"),
                                     _log_scores(_TRIALS_LOGS[0], "test") + _log_scores(_TRIALS_LOGS[1], "test")),
    "big_a_better": lambda: _every([(_logged(TRAINING, "**{10} of 40** at"),
                                     _logged(TRAINING, "runs.log`): **{17} of 40"))], "better", "worse"),
    # 12, 33, 97 batches: the development score at each run's best step rises
    "more_text_helps": lambda: _every([(_logged(TRAINING, "score went {9}, 13, 14"),
                                        _logged(TRAINING, "score went 9, {13}, 14")),
                                       (_logged(TRAINING, "score went 9, {13}, 14"),
                                        _logged(TRAINING, "score went 9, 13, {14}"))], "more", "less"),
    # lr=2e-4 and six blocks against the pilot's val loss 2.75
    "lr2e4_worse": lambda: _every([(_logged(TRAINING, "against the pilot's {2.75})"),
                                    _logged(TRAINING, "(val loss {2.94} against"))], "worse", "better"),
    "six_blocks_lower": lambda: _every([(_logged(TRAINING, "reached a lower val loss ({2.68})"),
                                         _logged(TRAINING, "against the pilot's {2.75})"))], "lower", "higher"),
    # the cloze sentences alone against inside other text (big-a's context probe)
    "short_not_hurt": lambda: "not hurt" if _logged(TRAINING, "big-a scores {14} of 22 alone") >= max(
        _logged(TRAINING, f) for f in ("and {11}-14 inside", "and 11-{14} inside")) else "hurt",
    # mix-a's 15 of 22 against every development score logged before it and beside it
    "mix_a_best_yet": lambda: _top(_logged(TRAINING, "mix-a at step 1,500 ({15} of 22"),
                                   [s for log in (*_TRIALS_LOGS, "bench/results/minilm-everyday-2026-12-07/"
                                                  "facts-runs.log") for s in _log_scores(log)]),
    # mix-a's 19 of 40: no MiniLM variant scored on the test list did better
    "minilm_variant_best_19": lambda: _top(_logged(TRAINING, "Scored once on the test list: **{19} of 40"),
                                           [s for log in (*_TRIALS_LOGS, "bench/results/minilm-everyday-2026-12-07/"
                                                          "facts-runs.log") for s in _log_scores(log, "test")]),
    "mix_a_two_more": lambda: _every([(_logged(TRAINING, "runs.log`): **{17} of 40"),
                                      _logged(TRAINING, "Scored once on the test list: **{19} of 40"))],
                                     "more", "less"),
    "mix_a_better_than_shipped": lambda: _every([(_computed("cloze_shipped_hits"),
                                                  _logged(TRAINING, "Scored once on the test list: **{19} of 40"))],
                                                "better", "worse"),
    "mix_b_below": lambda: _every([(_logged(TRAINING, f), _logged(TRAINING, "mix-a at step 1,500 ({15} of 22"))
                                   for f in ("scored {7}, 11, 12, 12", "scored 7, {11}, 12, 12",
                                             "scored 7, 11, {12}, 12", "scored 7, 11, 12, {12} of")], "below", "above"),
    # the shipped vit-mnist (trained.json) against 97%
    "vit_above_97": lambda: _every([(97.0, 100 * _from_json(VIT_TRAINED, "final_eval", "accuracy"))],
                                   "above", "below"),
})
MORE_PLACES += tuple((TRAINING, end, rule) for end, rule in (
    ("describes what the loop does, what a checkpoint ", "verb"),
    ("the whole command as a function (the CLI and tests call it); the run-folder rules ", "place"),
    ("| schedule | `optim.py` `WarmupCosine` | ", "name"),  # the schedule's name
    ("as the cores other processes leave free (`attnlab/threads.py`), never ", "method"),
    ("and a corpus too small for one batch. Everything ", "place"),
    ("`log_every`, `save_every` or `keep`; `epochs` ", "method"),  # what is refused
    ("`save_every` or `keep`; `epochs` below 0, ", "method"),
    ("which on a busy machine made it several times ", "method"),  # why the count runs on one thread
    ("checkpoint at each evaluation and at the end (the latest and the ", "verb"),  # the kept checkpoint's name
    ("(24,000 of 567,129 windows of 64 tokens drawn); ", "method"),  # the summary's advice
    ("(2,400 of 6,539 windows of 64 tokens drawn); ", "method"),
    ("an epoch is as many windows as the training split ", "verb"),
    ("what share of an epoch the run covers, and how to cover ", "method"),
    ("stops the run after K evaluations in a row without a ", "method"),  # the patience rule
    ("without a lower `val_loss` (equal is not ", "method"),
    ("(`tests/training/test_checkpoint.py`, compared with `==`; it ", "method"),  # what the test asserts
    ("a batch's Encoding records are what the library ", "verb"),
    ("load average of 15-20 (so wall rates are several times ", "method"),  # how to read the table (P5: re-run)
    ("bench/results/baby-gpt-sapphire-rapids-2026-11-28/baby-2000-steps-same-init.log). What the gap ", "verb"),
    ("weights after 4 AdamW steps agree within 1e-6 for ", "method"),  # the test's threshold
    ("the measured shares and maximum by hand, not logged). The few ", "method"),  # the ones over the 1e-6 threshold
    ("reproduces the uninterrupted FSDP run's losses and weights bit for bit (it ", "method"),
    ("(1.867 at step 500, 1.556 at 1000) | >= 0.5 ", "method"),  # the target column
    ("which always answers `-`, scores none | well ", "method"),
    ("2778 masked positions of held-out articles | whole-word predictions, well ", "method"),
    ("- Shipped: `attnlab/assets/checkpoints/minilm-mlm/` ", "verb"),
    ("and the Wikipedia register shows (\"century\", \"species\"). More steps or ", "unmeasured"),
    ("the test now asserts it on smollm2-mlm. Scores ", "place"),
    ("**minilm-mlm and everyday blanks (not there; smollm2-mlm ", "place"),
    ("(a space then letters, not followed by ", "method"),  # what a whole word of one token is
    ("against minilm-mlm's 6 and the ", "minilm_variant_best_19"),
    ("is what the recipe taught. The times ", "place"),
    ("BERT's density. Reading block 3 learns ", "block3_faster"),
    ("than reading block 5 from the same seed and batches (", "block3_lower"),
    ("The layers=4 head gets 10 of 40 against the shipped 6, far ", "layers4_below_target"),
    ("neither was shipped. Reaching 60% needs far ", "unmeasured"),
    ("than these minutes of a shared CPU (each step ", "place"),
    ("What it would take, from these figures: a corpus tens of times ", "unmeasured"),
    ("(at SmolLM2's pace here, hours of a free core, or a ", "unmeasured"),
    ("a teacher's distribution at every word is ", "math"),  # a distribution against one word
    ("busy with other work; not logged). For ", "method"),
    ("For more text, SmolLM2 wrote 6 ", "method"),
    ("with the teacher the loss is 0.06-0.10 ", "teacher_loss_higher"),
    ("0.06-0.10 higher and the top-5 0.9-2.4 points ", "teacher_top5_lower"),
    ("A teacher's knowledge reaches the head only at the contexts the corpus ", "verb"),
    ("40k tokens of SmolLM2's stories hold few of them; ", "method"),  # the teacher's premise
    ("No variant came near the target rate on the development list (the ", "distill_best_ten"),
    ("nothing was shipped; the runs' folders and the ", "name"),  # the 12-batch corpus
    ("What it would take: far ", "unmeasured"),
    ("(an encoder pre-trained as a masked LM), not ", "unmeasured"),
    ("against the shipped head's 6 and the earlier ", "earlier_best_ten"),
    ("and the earlier best of 10: far ", "big_a_better"),
    ("(\"People in France speak [MASK].\" -> about, ", "quoted"),  # the model's answer
    ("It was not shipped: ", "big_a_below_target"),
    ("the development score went 9, 13, 14 of 22 at the ", "method"),  # each run's best evaluation
    ("9, 13, 14 of 22 at the best step: ", "more_text_helps"),
    ("what is left to try is several times ", "unmeasured"),
    ("two generator processes and other work, load average 2.8-4.5). A ", "method"),  # the setting tried
    ("(`lr=2e-4`, 1,000 steps on the 97 batches) ended ", "lr2e4_worse"),
    ("(`layers=6 train_layers=5`, 1,000 steps) reached a ", "six_blocks_lower"),
    ("its shipped file would pass 20 MB. 35 ", "method"),
    ("the held-out score no longer says how a run does on blanks. The cloze sentences are ", "short_not_hurt"),
    ("mix-a at step 1,500 (15 of 22, the ", "mix_a_best_yet"),
    ("**19 of 40 (47.5%)**, two ", "mix_a_two_more"),
    ("its answers to everyday blanks are ", "mix_a_better_than_shipped"),
    ("a head that still misses the target. 54 ", "method"),
    ("12, 12 of 22 at steps 500-2,000, ", "mix_b_below"),
    ("one standard error on 1000 test images is ~0.5 points: every run ends ", "vit_above_97"),
))
# ---- P1: end


# ---- T: docs/training.md: the everyday generator's rate before and after 52a06d4's mends, re-measured with
# attnlab/benchmarks/everyday_rate.py (tests/test_claims_sources.py's CLAIMS on
# bench/results/everyday-generator-2026-12-07)
MORE_RULES.update({
    "generator_faster": lambda: _every([(_logged(TRAINING, "one thread: {85}"),
                                         _logged(TRAINING, "CPU-second before, {132} after"))], "faster", "slower"),
})
MORE_PLACES += ((TRAINING, "Eight times the everyday text (tried 2026-12-07, not shipped).** SmolLM2 wrote ",
                 "generator_faster"),)
# ---- T: end


# ---------------------------------------------------------------- docs/cost.md: words over the sweep logs
COST = "docs/cost.md"
SWEEPS = {"gpt2": "docs/img/cost-gpt2/sweep.txt", "narrow": "docs/img/cost-narrow/sweep.txt"}


def _sweep_exponent(model: str, series: str, which: str = "measured") -> float:
    """A growth exponent of a sweep log (time ~ n^k over all n): the measured one or the one predicted from FLOPs
    (the lines tests/test_claims_sources.py binds the page's exponents to)."""
    text = (ROOT / SWEEPS[model]).read_text()
    m = re.search(rf"^\s+{series}\s+measured\s+([\d.]+)\s+predicted\s+([\d.]+)", text, re.M)
    return float(m[1] if which == "measured" else m[2])


def _sweep_row(model: str, series: str, n: int) -> tuple[float, float]:
    """(predicted FLOPs, GFLOP/s) of a sweep log's table row."""
    text = (ROOT / SWEEPS[model]).read_text()
    m = re.search(rf"^{series}\s+{n}\s+([\d,]+)\s+[\d.]+\s+([\d.]+)\s", text, re.M)
    return float(m[1].replace(",", "")), float(m[2])


def _growth_word(p: float, grows: bool) -> str:
    """The growth thresholds of _growth: n below 1.02 ... here n below 1.2 (a measured time exponent is noisier),
    n² from 1.9."""
    word = "grow as n" if p < 1.2 else "grow as n²" if p >= 1.9 else "?"
    return word.replace("grow ", "grows ") if grows else word


COST_RULES: dict[str, Callable[[], str]] = {
    "dense_core_grows": lambda: _growth_word(_logged(COST, "1.76 / **{2.00}**"), True),
    "gpt2_forward_flops_grow": lambda: _growth_word(_sweep_exponent("gpt2", "forward", "predicted"), False),
    "one_query_grows": lambda: _growth_word(max(_sweep_exponent(m, "attention_step") for m in SWEEPS), True),
    "narrow_cached_below_predicted": lambda: _every(
        [(_sweep_exponent("narrow", "decode_cached"), _sweep_exponent("narrow", "decode_cached", "predicted"))],
        "below", "above"),
    "uncached_flops_larger": lambda: _every(
        [(_sweep_row("gpt2", "decode_cached", 1024)[0], _sweep_row("gpt2", "decode_uncached", 1024)[0])],
        "larger", "smaller"),
    "cached_rate_lower": lambda: _every(
        [(_sweep_row("gpt2", "decode_cached", 1024)[1], _sweep_row("gpt2", "decode_uncached", 1024)[1])],
        "lower", "higher"),
}
COST_PLACES: tuple[tuple[str, str, str], ...] = (
    (COST, "### What matched - **The dense attention core ", "dense_core_grows"),
    (COST, "the d² terms and the 79 G of logits dominate, FLOPs ", "gpt2_forward_flops_grow"),
    (COST, "- **The one-query attention ", "one_query_grows"),
    (COST, "so its measured exponent 0.36 is ", "narrow_cached_below_predicted"),
    (COST, "43× slower at n = 1024, while its FLOPs are 747× ", "uncached_flops_larger"),
    (COST, "the cached step runs at a 17× ", "cached_rate_lower"),
)


# ---- P4: docs/reliability.md's claim words: what a test does or how it is set up (method), a property of an
# algorithm (math), a place in a folder tree or on the page, "holds" as "contains" or "occupies" (verb)
RELIABILITY_PAGE = "docs/reliability.md"
MORE_PLACES += tuple((RELIABILITY_PAGE, end, kind) for end, kind in (
    ("Everything ", "place"),
    ("refused by `build_model` using a closed-form ", "math"),  # the bound of a formula, whatever the runs gave
    ("(it replaces `Block.__init__` with a function that ", "method"),
    ("and `tests/reliability/test_report.py` ", "method"),
    ("reliability-2026-12-07/pytest.log`), with the counts ", "place"),
    ("peak RSS (VmHWM, measured in a fresh subprocess) grows by ", "method"),  # the test's bound
    ("text over 20,000 characters gets 422; ", "method"),  # the case the test sends
    ("The others wait in an asyncio queue that ", "verb"),
    ("and loopback use is unchanged. One browser ", "verb"),
    ("Numbers that used to give 500: a seed of 2**64 or ", "method"),  # the values the test sends
    ("no longer ", "method"),  # why the second slot is there
    ("before each build and each load. A folder that ", "method"),
    ("runs as root, skipped with its reason elsewhere; it ", "method"),
    ("what happens now, and the test (each ", "method"),
    ("without the private folder | ", "method"),
    ("(0777, a non-sticky 0777 folder ", "place"),  # a folder higher in the path
    ("an attacker-owned folder ", "place"),
    ("(its merges took ~5 s to rebuild, ", "math"),  # the old rebuild's pairwise search
    ("(1.6 GB and ~45 s in `gguf.GGUFReader`), or ", "method"),  # the cases the test builds
    ("a `llama` vocabulary's merges are rebuilt in ", "math"),  # one pass over a hash of the merges
    ("(grad enabled, kernels off, ", "method"),  # the setting the test runs
    ("in the order the page prints it, and a test ", "method"),
    ("A result of two significant digits or ", "method"),
    ("the test checks that the file still ", "verb"),
    ("so a re-run that wrote another value there ", "method"),
    ("results that no results file ", "verb"),
    ("a client can keep such a connection busy, but it ", "verb"),
))

# docs/interventions.md: the agreement table's two pairs where the ranking fails, over the logged Spearman cells
INTERVENTIONS_PAGE = "docs/interventions.md"
LOW_AGREEMENT = ("And the king said to th / ... sh", "Monday, Tuesday, Wednesday / Friday,")


def _agreement_spearman() -> dict[str, float]:
    """Each pair's Spearman cell, as tests/test_claims_sources.py reads it back from the two logs."""
    import test_claims_sources as sources
    rows = (*sources._ATTRIBUTION_ROWS, *sources.SMOLLM2_ATTRIBUTION_ROWS)
    return {pair: _logged(INTERVENTIONS_PAGE, f"{pair} | {cells[0]} | {{") for pair, _, cells in rows}


def _agreement_fails_two() -> str:
    """"it fails where ... (the Monday pair) and on the 8-cell gpt-char pair": those two have the lowest rank
    correlations of all pairs, each under 0.7 (the band the sentence gives the others)."""
    rho = _agreement_spearman()
    others = [v for k, v in rho.items() if k not in LOW_AGREEMENT]
    return "fails" if all(rho[k] < min(min(others), 0.7) for k in LOW_AGREEMENT) else "holds"


MORE_RULES["agreement_fails_two"] = _agreement_fails_two
MORE_PLACES += tuple((INTERVENTIONS_PAGE, end, kind) for end, kind in (
    ("the rank correlation is 0.7-0.99 on 10 of 12 pairs; it ", "agreement_fails_two"),
    ("what each layer would predict. Every example ", "place"),
    ("(noise: the ", "method"),  # the spread of the interleaved runs: their minimum
    ("## Sweeps on ", "name"),  # a heading
    ("(at most `batch_size` rows; ", "verb"),  # lower it: reduce it
    ("large edits in early layers are far from ", "math"),  # a first-order estimate of a non-linear map
    ("(the residual stream at layer 0 is the usual ", "name"),  # the worst cell: a measured quantity
    ("| top-10 overlap | top-10 real | ", "name"),  # a column
    ("(9.49-10.63 exact). The ", "name"),
    ("from one recorded forward. The final norm is not ", "math"),
    ("LayerNorm's centring is ", "math"),
))


# docs/cost.md: `attnlab cost ... --check` on the page's other configs (bench/results/cost-2026-12-07/check-*.log)
COST_CHECKS = tuple(f"bench/results/cost-2026-12-07/check-{m}.log" for m in ("t5-small", "bert-base", "tiny-vit"))


def _check_ratio(log: str, row: str) -> float:
    """counted / predicted FLOPs of a row of a --check log's FlopCounterMode table."""
    m = re.search(rf"^{re.escape(row)}\s+([\d,]+)\s+([\d,]+)\s+[+-][\d.]+%$", (ROOT / log).read_text(), re.M)
    return float(m[1].replace(",", "")) / float(m[2].replace(",", ""))


def _cost_check_holds() -> str:
    """"The same holds for t5-small ..., bert-base ... and tiny-vit": every row of their --check logs within
    attnlab.cost.check's tolerance (2%)."""
    from experiments_trace.figures import _cost_check_tolerance
    rows = [(log, m[1]) for log in COST_CHECKS for m in re.finditer(
        r"^(\S.*?)\s{2,}[\d,]+\s+[\d,]+\s+[+-][\d.]+%$", (ROOT / log).read_text(), re.M)]
    assert len(rows) >= len(COST_CHECKS), "a --check log without its table"
    return "holds" if all(abs(_check_ratio(*r) - 1) <= _cost_check_tolerance() for r in rows) else "fails"


# docs/tutorials/first-hour.md: the head-sweep block's printed P("e") before and after the ablation (its log)
def _first_hour_less() -> str:
    page = "docs/tutorials/first-hour.md"
    return _every([(_logged(page, "# {0.277}"), _logged(page, "# {0.874}"))], "less", "more")


# docs/howto/quantize.md: the sizes (computed) and the quality log's perplexity changes
QUALITY_LOG = "bench/results/quality-2026-12-07/quality.log"


def _quality_change(variant: str, lang: str) -> float:
    """The quality log's first table: `variant`'s perplexity change on es or fr, in %."""
    row = re.search(rf"^\| {re.escape(variant)} \|.*$", (ROOT / QUALITY_LOG).read_text(), re.M)[0]
    cells = [c.strip() for c in row.split("|")[1:-1]]
    return float(cells[4 if lang == "es" else 6].split("%")[0])


MORE_RULES.update({
    "cost_check_holds": _cost_check_holds,
    "first_hour_ablation_less": _first_hour_less,
    "quantized_smaller": lambda: _every(((_computed(n), _computed("smollm2_mib_float32"))
                                         for n in ("smollm2_mib_int8", "smollm2_mib_int4")), "smaller", "larger"),
    "quantized_ppl_less": lambda: "less" if all(abs(_quality_change(v, lang)) < 1 for v in ("int8", "int4")
                                                for lang in ("es", "fr")) else "more",
})
MORE_PLACES += tuple((page, end, kind) for page, end, kind in (
    ("docs/cost.md", "Q K^T, softmax and P V rows is ", "math"),  # fused: the n x n scores are never written
    ("docs/cost.md", "A kernel that skips the blocks ", "place"),
    ("docs/cost.md", "llama-style (g = 3 of 9) at n = 1024 ", "verb"),
    ("docs/cost.md", "(exit 1 if any differs by ", "method"),
    ("docs/cost.md", "+0.000% ``` The same ", "cost_check_holds"),
    ("docs/cost.md", "Timing: one torch thread, the ", "method"),
    ("docs/cost.md", "kernel skips key blocks that lie wholly ", "place"),
    ("docs/cost.md", "about half of the dense n² at large n and ", "math"),  # blocks straddle the diagonal
    ("docs/cost.md", "for about 0.3 s, keeps the ", "method"),
    ("docs/cost.md", "does not leave a low peak in the cache; with ", "method"),
    ("docs/cost.md", "backward (a scatter-add), and anything ", "method"),  # what the model leaves out
    ("docs/performance.md", "A request of ", "method"),  # the policy's threshold
    ("docs/tutorials/first-hour.md", "a first experiment of your own. Every command ", "place"),
    ("docs/tutorials/first-hour.md", "``` On the machine ", "place"),
    ("docs/tutorials/first-hour.md", "and without it the model is far ", "first_hour_ablation_less"),
    ("docs/architecture.md", "Each row ", "place"),
    ("docs/architecture.md", "(bottom-right aligned when a cache ", "verb"),
    ("docs/architecture.md", "is applied where probabilities are ", "method"),
    ("docs/architecture.md", "= any two of the ", "place"),
    ("docs/architecture.md", "is checked to exist, so the map ", "method"),
    ("docs/architecture.md", "| threads: never ", "method"),
    # the CLI reference (written from the parser's help by docs/build_cli.py) and the API reference's opening: what
    # an option or the library does, its rule, not a result measured on the page
    ("docs/reference/cli.md", "by `python docs/build_cli.py`; a test ", "method"),
    ("docs/reference/cli.md", "or wall (the default with ", "method"),
    ("docs/reference/cli.md", "tokens to generate (default: 64, or ", "method"),
    ("docs/reference/cli.md", "when the model's positions run out first; ", "method"),
    ("docs/reference/cli.md", "asking for 32 new tokens or ", "method"),
    ("docs/reference/index.md", "generate` and `attnlab train` never run ", "method"),
    ("docs/reference/index.md", "a decoding step uses the count measured ", "method"),
    ("docs/architecture.md", "the count measured ", "method"),
    ("docs/architecture.md", "(imports at the top and inside functions) and ", "method"),
    ("docs/architecture.md", "on any import that reaches a ", "place"),
    ("docs/architecture.md", "`attnlab/quantization.py` | layers and ", "place"),
    ("docs/architecture.md", "carries its tokenizer) | models and ", "place"),
    ("docs/architecture.md", "`attnlab/threads.py` | storage and ", "place"),
    ("docs/architecture.md", "`attnlab/benchmarks/` | everything ", "place"),
    ("docs/architecture.md", "Two methods of every model need code from ", "place"),
    ("docs/architecture.md", "the first time it is ", "method"),
    ("docs/architecture.md", "# model.generate(...): the models sit ", "place"),
    ("docs/architecture.md", "argument checks that ", "method"),
    ("docs/architecture.md", "check the scheme needs nothing ", "method"),
    ("docs/architecture.md", "and `formula_gap` ", "place"),
    ("docs/fine-tuning.md", "From Python it is one ", "method"),
    ("docs/fine-tuning.md", "the number fine-tuning has to ", "verb"),
    ("docs/fine-tuning.md", "and the backward pass stops ", "place"),
    ("docs/fine-tuning.md", "the backward pass stops above them. The ", "place"),
    ("docs/fine-tuning.md", "(the load average is stated: ", "math"),  # more runnable threads than cores
    ("docs/fine-tuning.md", "(the load average is stated: above 2, the run had ", "math"),
    ("docs/howto/gguf.md", "A file that claims a ", "method"),  # the hostile case the loader refuses
    ("docs/howto/quantize.md", "Storing each weight in 8 or 4 bits makes a model 4 to 6 times ", "quantized_smaller"),
    ("docs/howto/quantize.md", "times smaller, and on a CPU it decodes ", "quantized_steps_faster"),
    ("docs/howto/quantize.md", "On SmolLM2-135M both change perplexity by ", "quantized_ppl_less"),
    ("docs/howto/torchrun.md", "over 2 ranks; rank 0 ", "verb"),
))
# ---- end of P4's claim words

# ---- G: docs/generation.md (issue 54): the decode layouts' words over their re-run's log
# (attnlab/benchmarks/decode_layout.py,
# 2026-12-07; tests/experiments_trace/figures.py's matvec_rows reads it): the (in, out) layout of the wide matrices
# against nn.Linear's at 1-3 rows, at one row, at 2-3 rows, and the LM head's slices against its one product
def _layout_ratio(value: float) -> float:  # a loader: the flip test transforms what it returns
    return value


def _layout_faster(rows: str = "all", table: str = "layout") -> Callable[[], str]:
    """"faster" when every logged ratio (the plain product's time over the layout's) of the re-run is above 1:
    table "layout", the wide matrices (out > in) at rows "all", "one" or "more" (2 and up); table "head", the head's
    slices at every logged row count."""
    def rule() -> str:
        from experiments_trace.figures import matvec_rows
        picked = {"all": lambda n: True, "one": lambda n: n == 1, "more": lambda n: n > 1}[rows]
        values = [r[5] for r in matvec_rows(table) if table == "head" or (r[3] > r[2] and picked(r[4]))]
        assert values, f"no {table} rows ({rows}) in the decode-layout log"
        return _every(((1.0, _layout_ratio(v)) for v in values), "faster", "slower")
    return rule


MORE_RULES.update({
    "g_wide_layout_faster": _layout_faster("all"),
    "g_one_row_layout_faster": _layout_faster("one"),
    "g_more_rows_layout_faster": _layout_faster("more"),
    "g_head_slices_faster": _layout_faster(table="head"),
})
MORE_PLACES += tuple((GEN, end, rule) for end, rule in (
    ("MKL reads a wide matrix (out > in) for 1-3 rows 1.35-2.12x ", "g_wide_layout_faster"),
    ("above that layout is 1.35-1.67x ", "g_one_row_layout_faster"),
    ("faster at one row and 1.39-2.12x ", "g_more_rows_layout_faster"),
    ("rows on one thread (1.16-1.62x ", "g_head_slices_faster"),
))
# docs/quantization.md: a file written again "holds" (contains) every tensor in its type: what save_gguf writes, which
# tests/test_gguf_round_trip.py asserts, no measured result
MORE_PLACES += (("docs/quantization.md", "a Q4_K_M or Q5_K_M file read and written again ", "verb"),)
# docs/quantization.md: int8's prefill perplexity change in each language of the 8192-token re-run, against the
# quality benchmark's target (attnlab.benchmarks.quality.INT8_TARGET): "less" when both are within it
INT8_8192 = "bench/results/quality-8192-2026-12-07/int8-prefill-8192.log"


def _int8_change(value: float) -> float:  # a loader: the flip test transforms what it returns
    return value


def _int8_prefill_less() -> str:
    from attnlab.benchmarks.quality import INT8_TARGET
    m = re.search(r"^\| int8 \| int8 \| \d+ \| [\d.]+ \| ([+-][\d.]+)% \([^)]*\) \| [\d.]+ \| ([+-][\d.]+)% ",
                  (ROOT / INT8_8192).read_text(), re.M)
    return _every(((abs(_int8_change(float(v))), 100 * INT8_TARGET) for v in m.groups()), "less", "more")


MORE_RULES["g_int8_prefill_less"] = _int8_prefill_less
MORE_PLACES += (("docs/quantization.md", "int8's prefill perplexity changed by +0.56% (es) and -0.23% (fr), ",
                 "g_int8_prefill_less"),)
# ---- G: end

# ---- E: docs/explorer.md (issue 54): the Q8_0 multi-row kernel against the one-row kernel called row by row, every
# ratio of its re-run (attnlab/benchmarks/q8_0_rows.py, 2026-12-07: bench/results/q8_0-rows-2026-12-07/rows.log)
_Q8_ROWS_LOG = "bench/results/q8_0-rows-2026-12-07/rows.log"


def _e_q8_rows_ratio(value: float) -> float:  # a loader: the flip test transforms what it returns
    return value


def _e_q8_rows_faster() -> str:
    """"faster" when the row-by-row calls took longer than rows_product at every logged shape and row count."""
    rows = re.findall(r"^\| \d+ x \d+ \| \d+ \| [\d.]+ \| [\d.]+ \| ([\d.]+) \|$", (ROOT / _Q8_ROWS_LOG).read_text(),
                      re.M)
    assert rows, f"no ratios in {_Q8_ROWS_LOG}"
    return _every(((1.0, _e_q8_rows_ratio(float(r))) for r in rows), "faster", "slower")


MORE_RULES["e_q8_0_rows_faster"] = _e_q8_rows_faster
MORE_PLACES += ((EXPLORER_PAGE, "(`q8_0_kernel.rows_product`, 1.4-5.7x ", "e_q8_0_rows_faster"),)
# docs/reliability.md and docs/interop.md: words that are no result of a run
MORE_PLACES += (
    # what test_a_chunked_upload_is_cut_at_4_mib_as_it_streams asserts (after - before < 12 MiB), every time it runs
    (RELIABILITY_PAGE, "(32 MiB chunked to a server in a subprocess: 413, and its peak RSS grows by ", "method"),
    # the old merge rebuild's complexity: a property of the algorithm, as "linear" of the new one in the same row
    (RELIABILITY_PAGE, "GGUF tokenizer with a 200,000-character token (its merges were rebuilt in ", "math"),
    # what the hostile-GGUF tests send: counts past the caps
    (RELIABILITY_PAGE, "a million tokens (all parsed by `gguf.GGUFReader` first), or ", "method"),
    # why the array cap has its size (a design choice, no measurement of this page)
    (INTEROP, "at most 10,000 keys, 400,000 entries in one array (", "method"),
)
# ---- E: end

VERDICT_PLACES = {  # the text before a "holds" or "fails" that restates a verdict -> (row, index of its word)
    "preventing saturation (17.2) | 000, 001, 002 | arithmetic ": (5, 0),
    '"may just work" (17.4) | 004 | ': (6, 0), "(17.6) | 002 | path length: ": (7, 0),
    "(17.5) | 000 | small-data half ": (8, 0), "costlier attention (statement 3) | 001 | ": (11, 0),
    "Quality at equal training FLOPs ": (11, 1), "(statement 7) | 000 | ": (12, 0), "d_model 64): local ": (13, 1),
    "at most 1.7%), strided ": (13, 3), "(statement 1) | 004 | ": (16, 0), "The cost point ": (18, 1),
    "(issue 39, 3.3) | 003 | ": (20, 0),
    "run sequentially; attention runs all positions in parallel | 002, 004 | ": (22, 0),
    "**What it shows.** The arithmetic ": (5, 0),
    "Verdict: the claim ": (6, 0), "**Verdict.** The small-data half of the claim ": (8, 0),
    "For MiniLM the statement ": (12, 0)}

RULES: dict[str, Callable[[], str]] = {
    **RATIO_RULES, **PINNED_RULES, **MORE_RULES, **COST_RULES,
    "many_heads": _many_heads, "most_heads": _most_heads,
    "one_head_mean": _one_head_mean, "attention_up_to_1024": _attention_up_to_1024,
    "gru_forward_4096": _gru_forward_4096, "gru_two_threads_4096": _gru_two_threads_4096,
    "local_linear_growth": lambda: _growth("local", "linear"), "multilevel_growth": _grows("multilevel"),
    "layernorm_needed": _layernorm_needed, "nsp_hurt": _nsp_hurt, "rope_below_learned": _rope_below_learned,
    "dk128": _dk128, "mask_after_softmax": _mask_after_softmax, "bpe_better": _bpe_better,
    "dk128_all": lambda: _dk128(SCALE_FILES), "mask_after_softmax_all": lambda: _mask_after_softmax(MASK_FILES),
    "bpe_better_all": lambda: _bpe_better(TOKEN_QUALITY_FILES),
    "local_below_full_all": _variant_vs_full("local", True, EFF_QUALITY_FILES),
    "linear_vs_full_all": _variant_vs_full("linear", False, EFF_QUALITY_FILES),
    "strided_vs_full_all": _variant_vs_full("strided", False, EFF_QUALITY_FILES),
    "local_below_full": _variant_vs_full("local", True), "linear_vs_full": _variant_vs_full("linear", False),
    "strided_vs_full": _variant_vs_full("strided", False), "window_higher": _window_higher,
    "ambiguity_above": _ambiguity_above, "no_norm_above": _no_norm_above, "warmup_rescues": _warmup_rescues,
    "no_mask_honest": _no_mask_honest, "proj_vs_add": _proj_vs_add, "untied_vs_add": _untied_vs_add,
    "widest_window": _widest_window, "local_time_256": _local_time_256, "warmup_lowers_pre_ln": _warmup_lowers_pre_ln,
    "sweep_post_below_pre": _sweep_post_below_pre, "no_head_above_half": _no_head_above_half, "nsp_lower": _nsp_lower,
    "post_ln_stuck": _post_ln_stuck, "one_sense_less": _one_sense_less, "top_key_above_uniform": _top_key_above_uniform,
    "ln_first_seeds": _ln_first_seeds, "escaped_post_below_pre": _escaped_post_below_pre,
    "post_warm_below_pre_all": _warm_vs_cold(("post", 100), ("pre", 0), ("below", "above")),
    "pre_warm_lower_all": _warm_vs_cold(("pre", 100), ("pre", 0), ("lower", "higher")),
    "cnn_worst_250_500": _worst_cnn_beats_best_vit("worst", (250, 500), VIT_CNN_MAIN_FILES),
    "vit_best_250_500": _worst_cnn_beats_best_vit("best", (250, 500), VIT_CNN_MAIN_FILES),
    "grid_new_p_below": _grid_new_p_below,
    **{f"verdict_{row}_{index}": _verdict(row, index) for row, index in set(VERDICT_PLACES.values())},
    **{rule: _verdict(int(rule.split("_")[1]), 0) for _, _, rule in NOTEBOOK_PLACES},
}

# Where each rule applies: (page, the text that ends just before the word, the rule). claims.py's writer gives these
# places their rule; every other place is pinned.
RULED: tuple[tuple[str, str, str], ...] = (
    ("experiments.md", "32 heads (d_head 2) are ", "most_heads"),
    ("experiments.md", "1 head is ", "one_head_mean"),
    ("experiments.md", "runs at 75.58-150.46 GFLOP/s on one thread against the GRU's 30.22-52.36 and gains 1.12-1.95x "
                       "from a second core against the GRU's 0.28-1.13x; ", "attention_up_to_1024"),
    ("experiments.md", "So attention is ", "attention_up_to_1024"),
    ("experiments.md", "at n 4,096 the GRU's forward is ", "gru_forward_4096"),
    ("experiments.md", "its two-thread forward was ", "gru_two_threads_4096"),
    ("experiments.md", "cost, measured table: local and linear attention ", "local_linear_growth"),
    ("experiments.md", "multilevel hierarchical attention ", "multilevel_growth"),
    ("experiments.md", "LayerNorm is ", "layernorm_needed"),
    ("experiments.md", "so dropping NSP did ", "nsp_hurt"),
    ("experiments.md", "So dropping NSP did ", "nsp_hurt"),
    ("experiments.md", "RoPE 0.170-0.190 ", "rope_below_learned"),
    ("experiments.md", "); sinusoidal ", "sinusoidal_hurt"),  # row 2: over seeds 0-5
    # rows 5, 6, 11 and 13 quote seeds 0-5 (the first runs and the re-run's), their sections seeds 0, 1, 2
    ("experiments.md", "at d_k 128 ", "dk128_all"),
    ("experiments.md", "for 8- and 16-character prefixes, ", "mask_after_softmax_all"),
    ("experiments.md", "a 2,048-token BPE predicts held-out text ", "bpe_better_all"),
    ("experiments.md", "local holds (", "local_below_full_all"),
    ("experiments.md", "linear partly (", "linear_vs_full_all"),
    ("experiments.md", "strided fails (", "strided_vs_full_all"),
    ("experiments.md", "a narrower hidden layer and a ", "window_higher"),
    ("experiments.md", "within-sense cosine ", "ambiguity_above"),
    ("experiments.md", "at most 0.132 ", "no_norm_above"),
    ("experiments.md", "at most 0.153 ", "no_norm_above"),
    ("experiments.md", "and rescue post-LN (1.440-1.462, ", "warmup_rescues"),
    ("experiments.md", "(3.213-3.243, no ", "post_ln_stuck"),
    ("experiments.md", "on seed 3 it leaves the plateau at step 51 and ends at 1.446, ", "escaped_post_below_pre"),
    ("experiments.md", "than any pre-LN run, and ends at 1.446, ", "escaped_post_below_pre"),
    ("experiments.md", "With 100 warmup steps post-LN ends at 1.443 / 1.446 / 1.457, ", "post_warm_below_pre_all"),
    ("experiments.md", "Pre-LN with 100 warmup steps ends at 1.644 / 1.642 / 1.648, ", "pre_warm_lower_all"),
    ("experiments.md", "where seeds 0, 1, 2 alone gave \"", "quoted"),  # the verdict the first seeds gave
    ("experiments.md", "The warmup sweep's reading ", "place"),  # the paragraph above on the page
    ("experiments.md", "each model at the rate seed 0's sweep chose ", "place"),
    ("experiments.md", "over seeds 0-5 on 24 of 24 seed pairs. The ", "cnn_worst_250_500"),
    ("experiments.md", "The worst CNN run still beats the ", "vit_best_250_500"),
    ("experiments_vit_grid.md", "rho +0.074 to +0.104, with p ", "grid_new_p_below"),
    ("experiments.md", "two topics separate too, ", "one_sense_less"),
    ("experiments.md", "of cases, far ", "top_key_above_uniform"),
    ("experiments.md", "the top key's drop is ", "name"),  # the null comparison's name, defined in section 14
    ("experiments.md", "below every pre-LN run; 100 warmup steps ", "pre_warm_lower_all"),
    ("experiments.md", "and at the same warmup it ends ", "sweep_post_below_pre"),
    ("experiments.md", "no head's median ", "no_head_above_half"),
    ("experiments.md", "nats (MLM + NSP ", "nsp_lower"),
    ("experiments.md", "16 and 32 heads (d_head 4 and 2) score ", "many_heads"),
    ("experiments.md", "which mattered here at d_k 128 (", "dk128"),
    ("experiments.md", "of 8- or 16-character prefixes, ", "mask_after_softmax"),
    ("experiments.md", "the BPE model predicts the held-out text ", "bpe_better"),
    ("experiments.md", "is a close approximation with a cost: ", "linear_vs_full"),
    ("experiments.md", "trided attention with a fixed stride is ", "strided_vs_full"),
    ("experiments.md", "The honest loss is ", "no_mask_honest"),
    ("experiments.md", 'proj.", with 8,192 more parameters, is ', "proj_vs_add"),
    ("experiments.md", "all three ", "untied_vs_add"),
    ("experiments.md", "whose hidden layer is 49 wide, is ", "widest_window"),
    ("experiments.md", "variant's padding and copying make it ", "local_time_256"),
    *(("experiments.md", before, f"verdict_{row}_{index}") for before, (row, index) in VERDICT_PLACES.items()),
    *RATIO_PLACES, *PINNED_PLACES, *MORE_PLACES, *COST_PLACES, *NOTEBOOK_PLACES,
)


@dataclass(frozen=True)
class Claim:
    page: str
    before: str  # the text just before the word (whitespace collapsed)
    word: str
    after: str
    rule: str  # a name in RULES, or "pinned"

    def line(self) -> str:
        return "\t".join((self.page, self.before, self.word, self.after, self.rule))


def read_claims(path: Path = CLAIMS) -> list[Claim]:
    return [Claim(*line.split("\t")) for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


@cache
def _claims() -> tuple[Claim, ...]:
    return tuple(read_claims())


@cache
def expected_word(rule: str) -> str:
    return RULES[rule]()


def _pattern(claim: Claim) -> re.Pattern:
    words = "|".join(re.escape(w) for w in FAMILY.get(claim.word, (claim.word,)))
    return re.compile(re.escape(claim.before) + "(" + words + ")" + re.escape(claim.after))


def problems(text: str, page: str = "experiments.md") -> list[str]:
    """Claim words of the page that differ from their rule or pin, claims.tsv places that are gone, and claim words
    at places that claims.tsv does not list."""
    flat, out, covered = normal(text), [], set()
    for claim in _claims():
        if claim.page != page:
            continue
        found = [(flat.find(claim.before + w + claim.after), w) for w in FAMILY.get(claim.word, (claim.word,))
                 for _ in range(flat.count(claim.before + w + claim.after))]
        if len(found) != 1:
            out.append(f"{page}: the claim \"...{claim.before}[{claim.word}]{claim.after}...\" is "
                       f"{'not on the page' if not found else 'on it more than once'} (claims.tsv)")
            continue
        start, word = found[0]
        covered.add(start + len(claim.before))
        want = claim.word if claim.rule in PINS else expected_word(claim.rule)
        if word != want:
            why = f"{claim.rule} in claims.tsv" if claim.rule in PINS else f"the results give it by rule {claim.rule}"
            out.append(f"{page}: \"...{claim.before}[{word}]{claim.after}...\": the word is {want!r} ({why})")
    for m in WORD.finditer(flat):
        if m.start() not in covered:
            out.append(f"{page}: a claim word no rule or pin covers: \"...{flat[max(0, m.start() - 60):m.end() + 30]}"
                       f"...\" (add its place: python tests/experiments_trace/claims.py)")
    return out


def _context(flat: str, m: re.Match, others: list[re.Match]) -> tuple[str, str]:
    """The shortest context (from CONTEXT characters each side, longer where needed) that finds this word alone."""
    for size in range(CONTEXT, 400, 20):
        before, after = flat[max(0, m.start() - size):m.start()], flat[m.end():m.end() + size]
        probe = _pattern(Claim("", before, m.group(), after, ""))
        if len(probe.findall(flat)) == 1:
            return before, after
    raise ValueError(f"no unique context for {m.group()!r} at {m.start()}")


# "the table above", "the subsection below", "as above", "(see above)": a place on the page, not a comparison
PLACE_BEFORE = re.compile(r"\b(table|tables|subsection|section|number|numbers|as|said|see|sweep|runs|run|text|"
                          r"paragraph|list|drift|results|figure|plot|verdict|figures|commands)\s$")
PLACE_AFTER = re.compile(r"\s?[),.;:]")
NAMES = re.compile(r" (attention|program|partly|variant|probe|layers?|map|model)\b")  # "linear attention"


def _in_notebook_claim(flat: str, at: int) -> bool:
    """Is the offset inside the seeds' claim column (the second cell) of docs/notebook.md's summary table?"""
    for n, cells in _notebook_rows().items():
        start = flat.find(f"| {n} | {cells[0]} |")
        if start >= 0 and start + len(f"| {n} | ") <= at < start + len(f"| {n} | {cells[0]}"):
            return True
    return False


def _claim_cells(flat: str) -> list[tuple[int, int]]:
    """(start, end) in the flattened page of the claim column of each row of the table at the top."""
    out = []
    for m in re.finditer(r"\| \d+ \| ([^|]*) \|", flat[:flat.find(" ## ")]):
        out.append((m.start(1), m.end(1)))
    return out


def _kind(flat: str, m: re.Match, page: str = "experiments.md") -> str:
    """How a place without a rule is pinned: "quoted" in the claim column of the top table (the seeds' claim
    under test, not a result here), "name" where the word names a thing (linear attention, a linear program),
    "pinned" for a claim of this page that has no rule yet."""
    if page == "experiments.md" and any(a <= m.start() < b for a, b in _claim_cells(flat)):
        return "quoted"
    if page == "docs/notebook.md" and _in_notebook_claim(flat, m.start()):
        return "quoted"
    if m.group() in ("linear", "quadratic") and NAMES.match(flat, m.end()):
        return "name"
    if m.group() in ("above", "below") and (PLACE_BEFORE.search(flat, 0, m.start())
                                             or PLACE_AFTER.match(flat, m.end())):
        return "place"
    if page not in PAGES and m.group() == "holds" and CONTAINS.match(flat, m.end()):
        return "verb"
    if page not in PAGES and m.group() == "best" and (flat[m.start() - 1:m.start()] in "`/"
                                                      or BEST_NAME.match(flat, m.end())):
        return "verb"
    if m.start() > 0 and flat[m.start() - 1] in "`/.":  # `linear`, layers/linear.py, F.linear: code, no claim
        return "name"
    return "pinned"


# "holds the whole model", "holds one subfolder", "holds 407,424 of ...": "holds" as "contains", no verdict
CONTAINS = re.compile(r" (the|a|an|one|its|all|what|bad|previous|\d)\b")
BEST_NAME = re.compile(r"[`]| (checkpoint|`?val_loss`?)\b")  # "the best checkpoint": the name of a kept step


def _kept(rule: str | None, page: str) -> str | None:
    """A place's rule kept from claims.tsv: a rule over the results always; a pin on the other pages is derived
    again (so a new kind of pin reaches them)."""
    return rule if rule and (page in PAGES or rule not in PINS) else None


def main() -> None:
    old = {(c.page, c.before, c.after): c.rule for c in read_claims()} if CLAIMS.exists() else {}
    lines = ["# One line per claim word of the pages (tests/experiments_trace/claims.py says how):",
             "# page\tthe text before it\tthe word\tthe text after it\trule (a name in claims.py's RULES, or pinned)"]
    for page in (*PAGES, *USER_PAGES()):
        flat = normal(page_path(page).read_text())
        found = list(WORD.finditer(flat))
        for m in found:
            before, after = _context(flat, m, found)
            rule = next((r for p, end, r in RULED if p == page and flat[:m.start()].endswith(end)),
                        _kept(old.get((page, before, after)), page) or _kind(flat, m, page))
            lines.append(Claim(page, before, m.group(), after, rule).line())
    CLAIMS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
