"""Every claim-word rule of claims.tsv can fail: a change of the data it reads turns its word into the opposite.

A rule (tests/experiments_trace/claims.py) gives the claim word the results give ("worse" when 16 heads score a
higher test loss than 4 on every seed). A rule that gives the same word whatever its data say would bind nothing,
so for every rule claims.tsv uses, PERTURBATIONS names one field of one file the rule reads and a transform of that
field's values computed from the values themselves (mirror them about their mean, which reverses every ordering
among them; take reciprocals, which moves a ratio across 1; negate, which moves a value across 0; swap two sibling
fields, which swaps two compared values; square or take roots, which doubles or halves a growth exponent; set a
value to null or fill a null). The test serves the transformed file to the rule in place of the committed one (it
patches Path.read_text for that one file, so every loader the rule uses sees it) and asserts that the rule's word
changes to another word of its family (faster -> slower, grow as n -> grow as n², holds -> fails), and so that
each place claims.tsv gives that rule would then fail the claims check. No model runs; results files only.

A rule whose other outcome is no word of the family ("mixed": the sentence would be wrong, and no opposite word
fits it, as in "the worst CNN run beats the best ViT run") is flipped to that outcome instead; MIXED_ONLY names
those rules (OTHER_OUTCOME the one whose outcome is another verdict word).

    python tests/test_claim_rules_flip.py [RULE ...]   # searches for a perturbation of each rule (minutes)

The search tries, field by field of the files the rule read, the transforms above, then group moves (one arm's
values shifted by twice the field's range over the file, its spread stretched or shrunk tenfold, its numbers set
to null); fields that pick a run (SELECTORS: seed, n, layer ...) are never changed. The table below keeps what it
found, with a few chosen by hand where it found none or only a meaningless one.
"""

from __future__ import annotations

import json
import math
import pathlib
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from experiments_trace import claims  # noqa: E402

ROOT = claims.ROOT
RESULTS = claims.DOCS / "experiments" / "results"  # a bare file name in PERTURBATIONS is a results file
_READ = pathlib.Path.read_text
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?:e-?\d+)?(?![\d.])")


def _is_data(path: Path) -> bool:
    """A file a rule reads its data from (a results line, a log, a checkpoint's json), not a page or a table."""
    return path.suffix not in (".md", ".py", ".tsv")


@contextmanager
def _served(overrides: dict[Path, str], reads: set[Path] | None = None) -> Iterator[None]:
    """Path.read_text returns overrides[path] for the files named there; reads collects every data file read."""
    def read_text(self, *args, **kwargs):
        path = Path(self).resolve()
        if reads is not None and _is_data(path):
            reads.add(path)
        return overrides[path] if path in overrides else _READ(self, *args, **kwargs)

    pathlib.Path.read_text = read_text
    try:
        yield
    finally:
        pathlib.Path.read_text = _READ


def _run(rule: str, overrides: dict[Path, str] | None = None, reads: set[Path] | None = None,
         loader: tuple[str, str] | None = None) -> str:
    """The rule's word with the files of overrides served in place of the committed ones, or with one of claims.py's
    loaders (a function that reads a log value) returning a transform of what it read."""
    real = getattr(claims, loader[0]) if loader else None
    if loader:
        setattr(claims, loader[0], lambda *a, **k: _numeric_transform(loader[1], [])(real(*a, **k)))
    try:
        return _served_run(rule, overrides, reads)
    finally:
        if loader:
            setattr(claims, loader[0], real)


def _served_run(rule: str, overrides: dict[Path, str] | None, reads: set[Path] | None) -> str:
    with _served(overrides or {}, reads):
        try:
            return claims.RULES[rule]()
        except Exception as e:  # noqa: BLE001 - a perturbation the rule cannot read is no flip
            return f"error: {type(e).__name__}"


# ---------------------------------------------------------------- fields of a file and transforms of their values
def _records(text: str) -> tuple[str, list]:
    """("jsonl", rows), ("json", [value]) or ("text", lines)."""
    try:
        return "json", [json.loads(text)]
    except ValueError:
        pass
    try:
        return "jsonl", [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError:
        return "text", text.splitlines(keepends=True)


def _leaves(value, path: tuple = ()) -> Iterator[tuple[tuple, object]]:
    """(path, leaf) for every number, null and bool of a json value; a list index is written '*'."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        pair = len(value) <= 3 and not any(isinstance(v, (list, dict)) for v in value)
        for i, v in enumerate(value):  # a (step, loss) pair keeps its positions apart
            yield from _leaves(v, (*path, i if pair else "*"))
    else:
        yield path, value


def _map(value, path: tuple, fn: Callable):
    """The json value with every leaf at path replaced by fn(leaf) (fn may return the leaf unchanged)."""
    if not path:
        return fn(value)
    key, rest = path[0], path[1:]
    if isinstance(value, list):
        pair = len(value) <= 3 and not any(isinstance(v, (list, dict)) for v in value)
        if key == "*" and not pair:
            return [_map(v, rest, fn) for v in value]
        if isinstance(key, int) and pair and key < len(value):
            return [_map(v, rest, fn) if i == key else v for i, v in enumerate(value)]
        return value
    if isinstance(value, dict) and key in value:
        return {**value, key: _map(value[key], rest, fn)}
    return value


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _like(x, y: float):
    """y, an int where x was one and y is whole (so keys such as a step stay ints)."""
    return int(y) if isinstance(x, int) and float(y).is_integer() else y


def _field_values(rows: list, path: tuple) -> list:
    return [leaf for row in rows for p, leaf in _leaves(row) if p == path]


def _numeric_transform(name: str, values: list[float]) -> Callable[[float], float]:
    mean = sum(values) / len(values) if values else 0.0
    return {"exponent_mirror": lambda x: 3 - x,  # a growth exponent mirrored about 1.5, between n (1) and n² (2)
            "mirror": lambda x: 2 * mean - x, "negate": lambda x: -x, "reciprocal": lambda x: 1 / x,
            "square": lambda x: x * x, "sqrt": lambda x: math.sqrt(x),
            "halve": lambda x: x / 2, "double": lambda x: 2 * x}[name]


NUMERIC = ("mirror", "reciprocal", "negate", "square", "sqrt", "halve", "double")


def _transform_rows(rows: list, spec: tuple) -> list:
    """Apply a transform spec to a json file's rows: ("mirror" | "negate" | ..., path), ("swap", path_a, path_b),
    ("null_first", path), ("fill", path), ("not", path)."""
    kind = spec[0]
    if kind in NUMERIC:
        path = spec[1]
        values = [v for v in _field_values(rows, path) if _num(v)]
        fn = _numeric_transform(kind, values)
        return [_map(row, path, lambda x: _like(x, fn(x)) if _num(x) else x) for row in rows]
    if kind in ("shift", "stretch", "null_in", "fill_in"):  # one group of records (record[key] == value)
        path, key, value, sign = spec[1], spec[2], spec[3], spec[4] if len(spec) > 4 else 1
        values = [v for v in _field_values(rows, path) if _num(v)]
        group = [v for r in rows if r.get(key) == value for v in _field_values([r], path) if _num(v)]
        span = max(values) - min(values) if values else 0
        mid = sum(group) / len(group) if group else 0
        fill = sum(values) / len(values) if values else 1
        fn = {"shift": lambda x: _like(x, x + sign * 2 * span) if _num(x) else x,  # by twice the field's range
              "stretch": lambda x: mid + (x - mid) * (10 if sign > 0 else 0.1) if _num(x) else x,  # spread x10, /10
              "null_in": lambda x: None if _num(x) else x,
              "fill_in": lambda x: fill if x is None else x}[kind]
        return [_map(r, path, fn) if r.get(key) == value else r for r in rows]
    if kind == "end_above_first":  # each run of the group ends as far above its first evaluation as it was off it
        path, key, value = spec[1], spec[2], spec[3]

        def flip(curve):
            return [*curve[:-1], [curve[-1][0], curve[0][1] + abs(curve[0][1] - curve[-1][1])]]
        return [_map(r, path, flip) if r.get(key) == value else r for r in rows]
    if kind == "add_seed":  # a copy of the first record with a field, as one more seed of its setting
        first = next(r for r in rows if spec[1] in r and "seed" in r)
        return [*rows, {**first, "seed": max(r["seed"] for r in rows if "seed" in r) + 1}]
    if kind == "swap_groups":  # two groups' values of a field swap, record by record (matched by a key)
        path, key, a, b, match = spec[1:]
        value = {(r.get(key), r.get(match)): _field_values([r], path) for r in rows}
        out = []
        for r in rows:
            other = {a: b, b: a}.get(r.get(key))
            got = value.get((other, r.get(match)), [])
            out.append(_map(r, path, lambda _, got=got: got[0]) if other and len(got) == 1 else r)
        return out
    if kind == "under":  # a numeric transform of every number under a top-level key
        name, key = spec[1], spec[2]
        values = [v for row in rows for p, v in _leaves(row) if p[:1] == (key,) and _num(v)]
        fn = _numeric_transform(name, values)
        out = []
        for row in rows:
            for p in {p for p, v in _leaves(row) if p[:1] == (key,) and _num(v)}:
                row = _map(row, p, lambda x: _like(x, fn(x)) if _num(x) else x)
            out.append(row)
        return out
    if kind == "swapkeys":  # every dict of the file with both keys swaps their values
        return [_swap_keys(row, spec[1], spec[2]) for row in rows]
    if kind == "swap":  # two sibling fields of a record swap their values
        a, b = spec[1], spec[2]
        out = []
        for row in rows:
            va, vb = _field_values([row], a), _field_values([row], b)
            if len(va) == 1 and len(vb) == 1:
                row = _map(_map(row, a, lambda _, v=vb[0]: v), b, lambda _, v=va[0]: v)
            out.append(row)
        return out
    if kind == "null_first":  # the first record with a number there gets null
        path, done, out = spec[1], False, []
        for row in rows:
            if not done and any(_num(v) for v in _field_values([row], path)):
                row, done = _map(row, path, lambda _: None), True
            out.append(row)
        return out
    if kind == "fill":  # every null there gets the mean of the numbers there (1 where there are none)
        path = spec[1]
        values = [v for v in _field_values(rows, path) if _num(v)]
        fill = sum(values) / len(values) if values else 1
        return [_map(row, path, lambda x: fill if x is None else x) for row in rows]
    if kind == "not":
        return [_map(row, spec[1], lambda x: (not x) if isinstance(x, bool) else x) for row in rows]
    raise ValueError(f"unknown transform {kind!r}: allowed {NUMERIC} or swap, null_first, fill, not")


def _swap_keys(value, a: str, b: str):
    if isinstance(value, list):
        return [_swap_keys(v, a, b) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _swap_keys(v, a, b) for k, v in value.items()}
    if a in out and b in out:
        out[a], out[b] = out[b], out[a]
    return out


def _written_like(old: str, x: float) -> str:
    """x written as the log wrote the number it replaces (an integer with thousands commas stays one)."""
    if "." not in old and "e" not in old and float(x).is_integer():
        return f"{int(x):,}" if "," in old else str(int(x))
    return repr(float(x))


def _transform_text(lines: list[str], spec: tuple) -> str:
    """A log's number: ("reciprocal" | ..., line, index) or ("swap", line, index_a, index_b)."""
    out = list(lines)
    line = out[spec[1]]
    found = list(NUMBER.finditer(line))

    def value(m):
        return float(m.group().replace(",", ""))

    if spec[0] == "swap":
        a, b = found[spec[2]], found[spec[3]]
        new = {a.span(): b.group(), b.span(): a.group()}
    else:
        m = found[spec[2]]
        new = {m.span(): _written_like(m.group(), _numeric_transform(spec[0], [value(m)])(value(m)))}
    for (start, end), text in sorted(new.items(), reverse=True):
        line = line[:start] + text + line[end:]
    out[spec[1]] = line
    return "".join(out)


def perturbed(files: str | tuple[str, ...], spec: tuple) -> dict[Path, str]:
    """The overrides of files (named from the repository root) by one transform spec, applied to each file."""
    if isinstance(files, tuple):
        return {k: v for file in files for k, v in perturbed(file, spec).items()}
    path = ((ROOT / files) if "/" in files else (RESULTS / files)).resolve()
    kind, records = _records(_READ(path))
    if kind == "text":
        return {path: _transform_text(records, spec)}
    rows = _transform_rows(records, spec)
    text = json.dumps(rows[0]) if kind == "json" else "".join(json.dumps(r) + "\n" for r in rows)
    return {path: text}


# ---------------------------------------------------------------- what counts as a flip
def _family(rule: str) -> tuple[str, ...]:
    words = {c.word for c in claims.read_claims() if c.rule == rule}
    families = {claims.FAMILY[w] for w in words}
    assert len(families) == 1, f"{rule}: its places' words {sorted(words)} are of {len(families)} families"
    return families.pop()


def _used_rules() -> list[str]:
    return sorted({c.rule for c in claims.read_claims()} - set(claims.PINS))


# Fields that pick a run (its seed, length, layer, head count ...) rather than measure it: a perturbation of one
# would change which runs a rule compares, not what they measured, so none is tried.
SELECTORS = {"seed", "n", "layer", "steps", "step", "d_k", "h", "k", "threads", "warmup", "train_images", "cap",
             "n_layers", "n_heads", "grid", "d_ff", "d_model", "d_head", "words", "sentences", "budget",
             "steps_run_max", "window", "stride", "batch", "context"}


def _candidates(rule: str, reads: set[Path]) -> Iterator[tuple[str, tuple]]:
    """Every perturbation of the files the rule read, simplest first."""
    for path in sorted(reads):
        file = str(path.relative_to(ROOT.resolve()))
        kind, records = _records(_READ(path))
        if kind == "text":
            for i, line in enumerate(records):
                found = list(NUMBER.finditer(line))
                for j in range(len(found)):
                    for t in ("reciprocal", "negate", "square", "sqrt", "halve", "double"):
                        yield file, (t, i, j)
                for j in range(len(found)):
                    for k in range(j + 1, len(found)):
                        yield file, ("swap", i, j, k)
            continue
        paths: dict[tuple, set] = {}
        for row in records:
            for p, leaf in _leaves(row):
                if not set(p) & SELECTORS:
                    paths.setdefault(p, set()).add(type(leaf).__name__)
        tops = dict.fromkeys(p[0] for p, t in paths.items() if len(p) > 1 and t & {"int", "float"})
        for p, types in paths.items():
            if types & {"int", "float"}:
                for t in NUMERIC:
                    yield file, (t, p)
        for p, types in paths.items():
            if "bool" in types:
                yield file, ("not", p)
            if "NoneType" in types:
                yield file, ("fill", p)
            if types & {"int", "float"}:
                yield file, ("null_first", p)
        for key in tops:
            for t in ("mirror", "negate", "reciprocal", "square", "sqrt"):
                yield file, ("under", t, key)
        numeric = [p for p, t in paths.items() if t & {"int", "float"}]
        for i, a in enumerate(numeric):
            for b in numeric[i + 1:]:
                if a[:-1] == b[:-1]:
                    yield file, ("swap", a, b)
        groups = sorted(dict.fromkeys((k, v) for row in records for k, v in row.items()
                                      if isinstance(v, str) and k not in SELECTORS), key=lambda g: g[0])
        for p, types in paths.items():
            for key, value in groups:
                if types & {"int", "float"}:
                    for kind, sign in (("shift", 1), ("shift", -1), ("stretch", 1), ("stretch", -1),
                                       ("null_in", 1)):
                        yield file, (kind, p, key, value, sign)
                if "NoneType" in types:
                    yield file, ("fill_in", p, key, value, 1)
        siblings: dict[tuple, list] = {}
        for p, t in paths.items():
            if t & {"int", "float"} and isinstance(p[-1], str):
                siblings.setdefault(tuple(k for k in p[:-1] if k == "*" or isinstance(k, int)), []).append(p[-1])
        pairs = dict.fromkeys((a, b) for names in siblings.values() for i, a in enumerate(sorted(set(names)))
                              for b in sorted(set(names))[i + 1:])
        for a, b in pairs:
            yield file, ("swapkeys", a, b)


def search(rule: str) -> tuple[str, tuple, str] | None:
    """The first perturbation that turns the rule's word into another of its family, else the first that changes
    it at all (to "mixed"), else None."""
    reads: set[Path] = set()
    word = _run(rule, reads=reads)
    family, fallback = _family(rule), None
    json_files = tuple(str(p.relative_to(ROOT.resolve())) for p in sorted(reads) if _records(_READ(p))[0] != "text")

    def both():  # each json transform on every json file the rule reads, then on its own file
        for file, spec in _candidates(rule, reads):
            if len(json_files) > 1 and file in json_files:
                yield json_files, spec
            yield file, spec

    for file, spec in both():
        try:
            served = perturbed(file, spec)
        except (ArithmeticError, ValueError):  # a reciprocal of 0, a root of a negative: not this one
            continue
        new = _run(rule, served)
        if new in family and new != word:
            return file, spec, new
        if fallback is None and new != word and not new.startswith("error"):
            fallback = (file, spec, new)
    return fallback


# ---------------------------------------------------------------- the table (python tests/test_claim_rules_flip.py)
# rule -> (the file or files it reads that are served transformed, the transform), or ("loader", (a loader of
# claims.py, the transform of what it returns)). Found by the search above and checked by hand where it found none
# or only a meaningless one (a swap of unrelated fields).
PERTURBATIONS: dict[str, tuple[str | tuple[str, ...], tuple]] = {
    'ambiguity_above': ('ambiguity.jsonl', ('mirror', ('words_gap_positive',))),
    'attention_ops_more': ('recurrence_vs_attention.jsonl', ('mirror', ('flops_per_token',))),
    'attention_up_to_1024': ('recurrence_vs_attention.jsonl', ('mirror', ('wall_ms', 'median'))),
    'best_post_ln': ('ln_1500.jsonl', ('mirror', ('val', '*', 1))),
    'best_vit': ('vit_vs_cnn.jsonl', ('mirror', ('test_accuracy',))),
    'bpe_better': ('tokenizer_quality.jsonl', ('mirror', ('bits_per_char',))),
    'bpe_lead_shrinks': ('tokenizer_quality.jsonl', ('mirror', ('bits_per_char',))),
    'cached_rate_lower': ('docs/img/cost-gpt2/sweep.txt', ('reciprocal', 48, 3)),
    'chosen_best_val': ('vit_grid.jsonl', ('mirror', ('val_accuracy', 'mean'))),
    'cnn_fewer_errors_largest': ('vit_vs_cnn.jsonl', ('mirror', ('test_accuracy',))),
    'cnn_fewer_params': ('vit_vs_cnn.jsonl', ('mirror', ('params',))),
    'cnn_fewer_steps': ('vit_vs_cnn.jsonl', ('mirror', ('steps_run',))),
    'comparison_both_lengths': ('vit_vs_cnn.jsonl', ('mirror', ('test_accuracy',))),
    'cost_statement': ('efficient_attention_cost.jsonl', ('mirror', ('flops',))),
    'dense_core_grows': ('docs/img/cost-narrow/sweep.txt', ('reciprocal', 70, 0)),
    'dk128': ('attn_scale_dk128.jsonl', ('mirror', ('val', '*', 1))),
    'dk128_gap_twice_dk32': ('attn_scale.jsonl', ('square', ('val', '*', 1))),
    'dk128_more_slowly': ('attn_scale_dk128.jsonl', ('mirror', ('val', '*', 1))),
    'dk128_unscaled_scatter': ('attn_scale.jsonl', ('stretch', ('val', '*', 1), 'arm', 'no scale', 1)),
    'dk32_difference_smaller': ('attn_scale.jsonl', ('shift', ('val', '*', 1), 'arm', '1/sqrt(d_k)', 1)),
    'dk32_higher_seed_2': ('attn_scale.jsonl', ('mirror', ('val', '*', 1))),
    'dk32_lower_seeds_0_1': ('attn_scale.jsonl', ('mirror', ('val', '*', 1))),
    'dk32_no_worse': ('attn_scale.jsonl', ('mirror', ('val', '*', 1))),
    'dk32_not_better': ('attn_scale.jsonl', ('shift', ('val', '*', 1), 'arm', '1/sqrt(d_k)', 1)),
    'doubling_within_spread': (('vit_vs_cnn.jsonl', 'vit_vs_cnn_probe.jsonl'), ('mirror', ('test_accuracy',))),
    'eff_load_above': ('efficient_attention_cost.jsonl', ('reciprocal', ('loadavg_1min',))),
    'far_end_worse': ('heads_quality.jsonl', ('mirror', ('test_loss',))),
    'future_mass_more': ('mask_after_softmax.jsonl', ('mirror', ('future_mass_by_position', '*', '*'))),
    'gelu_lead_within_spread': (
        ('activations.jsonl', 'activations_1500.jsonl', 'positions.jsonl'),
        ('shift', ('val', '*', 1), 'activation', 'gelu', -1)),
    'gelu_linear_at_init': ('activations.jsonl', ('swap', ('preact_std_init',), ('preact_std_end',))),
    'gelu_runs_agree': ('positions.jsonl', ('shift', ('val', '*', 1), 'position', 'learned', 1)),
    'gelu_scaled_better': ('activations.jsonl', ('mirror', ('val', '*', 1))),
    'gguf_decodes_faster': ('loader', ('_logged', 'reciprocal')),
    'gguf_prefill_faster': ('loader', ('_logged', 'reciprocal')),
    'gpt2_forward_flops_grow': ('docs/img/cost-gpt2/sweep.txt', ('double', 66, 1)),
    'gpt_char_below_bigram': (
        'attnlab/assets/checkpoints/gpt-char/trained.json', ('double', ('final_eval', 'val_loss'))),
    'gpu_trains_faster': ('loader', ('_logged', 'reciprocal')),
    'grid_below_shipped': ('vit_grid.jsonl', ('mirror', ('test_accuracy',))),
    'grid_top_not_above': (('heads_quality.jsonl', 'heads_quality_seeds345.jsonl'), ('mirror', ('lr',))),
    'gru_forward_4096': ('recurrence_vs_attention.jsonl', ('mirror', ('wall_ms', 'median'))),
    'gru_less_arithmetic': ('recurrence_vs_attention.jsonl', ('mirror', ('flops_per_token',))),
    'gru_two_threads_4096': ('recurrence_vs_attention.jsonl', ('mirror', ('wall_ms', 'median'))),
    'heads_cost_more_longer': ('heads_cost.jsonl', ('mirror', ('ratio_sdpa', 'median'))),
    'heads_flops_same': ('heads_cost.jsonl', ('null_first', ('formula_flops',))),
    'heads_time_approx': ('heads_cost.jsonl', ('mirror', ('ratio_sdpa', 'median'))),
    'hf_drifts_more': ('check_ln.jsonl', ('null_first', ('drift_vs_attnlab', 'first_step_above_1e-3'))),
    'hier_never_below': ('efficient_attention_cost.jsonl', ('halve', ('flops_vs_full',))),
    'hier_quadratic': ('efficient_attention_cost.jsonl', ('halve', ('flops_vs_full',))),
    'higher_rate_not_tried': (('heads_quality.jsonl', 'heads_quality_seeds345.jsonl'), ('mirror', ('lr',))),
    'hot_lr_higher': ('check_ln.jsonl', ('reciprocal', ('lr',))),
    'hot_neither_higher': (('ln_1500.jsonl', 'ln_hot.jsonl'), ('mirror', ('val', '*', 1))),
    'hot_neither_lower': (('ln_1500.jsonl', 'ln_hot.jsonl'), ('mirror', ('val', '*', 1))),
    'hot_seed_0': ('ln_1500.jsonl', ('mirror', ('val', '*', 1))),
    'hot_seed_1': ('ln_1500.jsonl', ('reciprocal', ('val', '*', 1))),
    'hot_seed_2': ('ln_1500.jsonl', ('mirror', ('val', '*', 1))),
    'hot_smaller': ('ln_1500.jsonl', ('mirror', ('val', '*', 1))),
    'init_scores_below_one': ('attn_scale.jsonl', ('reciprocal', ('init_scaled',))),
    'layernorm_needed': ('residual_depth.jsonl', ('null_in', ('plateau_end',), 'arm', 'no norm', 1)),
    'linear_cpu_most': ('efficient_attention_quality.jsonl', ('mirror', ('cpu_s',))),
    'linear_vs_full': ('efficient_attention_quality.jsonl', ('mirror', ('val_loss',))),
    'local_below_full': ('efficient_attention_quality.jsonl', ('mirror', ('val_loss',))),
    'local_linear_growth': ('efficient_attention_cost.jsonl', ('square', ('flops',))),
    'local_linear_in_n': ('efficient_attention_cost.jsonl', ('square', ('flops',))),
    'local_time_256': ('efficient_attention_cost.jsonl', ('mirror', ('time_vs_full', 'median'))),
    'local_uses_no_more': ('efficient_attention_quality.jsonl', ('mirror', ('val_loss',))),
    'ln_first_seeds': ('ln_1500.jsonl', ('mirror', ('val', '*', 1))),  # section 1's paragraphs on seeds 0, 1, 2
    # the re-runs of rows 1, 8 and 9 on seeds 3, 4, 5
    'escaped_post_below_pre': ('ln_1500_seeds345.jsonl', ('mirror', ('val', '*', 1))),
    'post_warm_below_pre_all': (('ln_post_warmup.jsonl', 'ln_post_warmup_seeds345.jsonl'),
                                ('mirror', ('val', '*', 1))),
    'pre_warm_lower_all': (('ln_1500_warmup100.jsonl', 'ln_1500_warmup100_seeds345.jsonl'),
                           ('mirror', ('val', '*', 1))),
    'cnn_worst_250_500': ('vit_vs_cnn_seeds345.jsonl', ('mirror', ('test_accuracy',))),
    'vit_best_250_500': ('vit_vs_cnn_seeds345.jsonl', ('mirror', ('test_accuracy',))),
    'grid_new_p_below': ('vit_grid_seeds345.jsonl', ('mirror', ('p',))),
    'many_heads': ('heads_quality.jsonl', ('mirror', ('test_loss',))),
    'many_heads_worst': ('heads_quality.jsonl', ('mirror', ('test_loss',))),
    'mask_after_softmax': ('mask_after_softmax.jsonl', ('under', 'mirror', 'honest_last_position')),
    'middle_best': ('heads_quality.jsonl', ('mirror', ('test_loss',))),
    'minilm_gap_above_second': ('ambiguity_second.jsonl', ('under', 'negate', 'per_word')),
    'minilm_within_above': ('ambiguity.jsonl', ('under', 'mirror', 'per_word')),
    'minilm_within_above_second': ('ambiguity_second.jsonl', ('under', 'mirror', 'per_word')),
    'most_heads': (('heads_quality.jsonl', 'heads_quality_seeds345.jsonl'), ('mirror', ('test_loss',))),
    'multilevel_growth': ('efficient_attention_cost.jsonl', ('mirror', ('flops',))),
    'narrow_cached_below_predicted': ('docs/img/cost-narrow/sweep.txt', ('reciprocal', 67, 0)),
    'narrow_heads_more_time': ('heads_cost.jsonl', ('reciprocal', ('ratio_sdpa', 'median'))),
    'no_head_above_half': ('attention_explanation.jsonl', ('reciprocal', ('head_median_max',))),
    'no_mask_1000_below': ('no_mask_1000.jsonl', ('mirror', ('val_teacher_forced',))),
    'no_mask_honest': (
        ('no_mask.jsonl', 'no_mask_1000.jsonl', 'no_mask_2000.jsonl', 'no_mask_2000_seeds8910.jsonl'),
        ('mirror', ('honest_last_position', '16'))),
    'no_norm_above': (('residual_depth.jsonl', 'residual_depth_seeds345.jsonl'), ('mirror', ('val', '*', 1))),
    'none_slower': ('positions.jsonl', ('mirror', ('val', '*', 1))),
    'not_every_word_more': ('ambiguity.jsonl', ('negate', ('control_gap_max',))),
    'nsp_hurt': (('nsp.jsonl', 'nsp_seeds345.jsonl'), ('shift', ('mlm_loss',), 'arm', 'mlm', 1)),
    'nsp_loss_below_chance': ('nsp.jsonl', ('reciprocal', ('nsp_loss',))),
    'nsp_lower': ('nsp.jsonl', ('mirror', ('mlm_loss',))),
    'nsp_lower_most_seeds': ('nsp.jsonl', ('mirror', ('mlm_loss',))),
    'nsp_tenth_or_less': ('nsp.jsonl', ('shift', ('mlm_loss',), 'arm', 'mlm', 1)),
    'nudged_ends_above': ('check_ln.jsonl', ('mirror', ('drift_vs_attnlab', 'final_val_diff'))),
    'one_head_mean': ('heads_quality.jsonl', ('mirror', ('test_loss',))),
    'one_piece': ('ambiguity.jsonl', ('double', ('most_pieces_per_word',))),
    'one_query_grows': ('loader', ('_sweep_exponent', 'exponent_mirror')),
    'one_sense_less': ('ambiguity.jsonl', ('negate', ('gap_mean',))),
    'order_steps_larger': ('positions.jsonl', ('mirror', ('val', '*', 1))),
    'p7s1_no_more_than_chance': ('vit_grid.jsonl', ('mirror', ('nearest_is_neighbour',))),
    'p7s3_seed0_more': ('vit_grid.jsonl', ('mirror', ('nearest_p',))),
    'position_order_holds': ('positions.jsonl', ('mirror', ('val', '*', 1))),
    'post_ln_stuck': ('ln_1500.jsonl', ('square', ('val', '*', 1))),
    'post_warm_max_below_pre_min': ('ln_1500.jsonl', ('reciprocal', ('val', '*', 1))),
    'pre_clipped_more': ('ln_1500.jsonl', ('mirror', ('clipped_fraction',))),
    'pre_grad_larger': ('ln_1500.jsonl', ('mirror', ('grad_norm_median',))),
    'pre_ln_below_bigram': ('ln_1500.jsonl', ('mirror', ('val', '*', 1))),
    'pre_ln_not_better': (('ln_1500.jsonl', 'ln_post_warmup.jsonl', 'ln_warmup.jsonl'), ('mirror', ('val', '*', 1))),
    'probe_higher': ('nsp.jsonl', ('mirror', ('probe_accuracy',))),
    'probes_below_unigram': ('ln_300.jsonl', ('mirror', ('val', '*', 1))),
    'proj_hurt': ('position_concat.jsonl', ('mirror', ('test_loss',))),
    'proj_more_parameters': ('position_concat.jsonl', ('mirror', ('params',))),
    'proj_vs_add': ('position_concat.jsonl', ('mirror', ('test_loss',))),
    'proj_worse_six': (('position_concat.jsonl', 'position_concat_seeds345.jsonl'), ('mirror', ('test_loss',))),
    'quadratic_dominates': ('tokenizer_cost.jsonl', ('mirror', ('attn_flops',))),
    'recall_smaller_rate': ('recall_distance.jsonl', ('mirror', ('chosen_lr',))),
    'relu_scaled_seed2': ('activations.jsonl', ('reciprocal', ('val', '*', 1))),
    'relu_unchanged_roughly': (
        ('activations.jsonl', 'activations_1500.jsonl', 'positions.jsonl'),
        ('shift', ('val', '*', 1), 'init', 'default', 1)),
    'residual_needed': ('residual_depth.jsonl', ('fill', ('plateau_end',))),
    'residual_statement': ('residual_depth.jsonl', ('fill', ('plateau_end',))),
    'rope_below_learned': (('positions.jsonl', 'positions_seeds345.jsonl'), ('mirror', ('val', '*', 1))),
    'rope_best': (('positions.jsonl', 'positions_seeds345.jsonl'), ('mirror', ('val', '*', 1))),
    'rope_fastest': ('positions.jsonl', ('mirror', ('val', '*', 1))),
    'rope_mean_below_learned': ('positions.jsonl', ('mirror', ('val', '*', 1))),
    'rva_load_more': ('recurrence_vs_attention.jsonl', ('reciprocal', ('loadavg_1min',))),
    'sinusoidal_500_above_250': ('positions.jsonl', ('mirror', ('val', '*', 1))),
    'sinusoidal_hurt': (('positions.jsonl', 'positions_seeds345.jsonl'), ('mirror', ('val', '*', 1))),
    'sinusoidal_worst': ('positions.jsonl', ('mirror', ('val', '*', 1))),
    'sixteen_heads_mean': ('heads_quality.jsonl', ('mirror', ('test_loss',))),
    'small_grid_fewer_pairs': ('vit_grid.jsonl', ('mirror', ('pairs',))),
    'smollm2_8_22_above': ('ambiguity.jsonl', ('negate', ('gap_min',))),
    'smollm2_more_depth': (
        'ambiguity.jsonl', ('swap_groups', ('words_gap_positive',), 'model', 'minilm', 'smollm2', 'layer')),
    'smollm2_steps_lower': ('bench/results/fine-tune-2026-12-06/smollm2.json', ('reciprocal', ('val_loss_before',))),
    'smollm2_within_above': ('ambiguity.jsonl', ('under', 'mirror', 'per_word')),
    'smollm2_within_above_second': ('ambiguity_second.jsonl', ('under', 'mirror', 'per_word')),
    'split_better_six': (('position_concat.jsonl', 'position_concat_seeds345.jsonl'), ('mirror', ('test_loss',))),
    'strided_stays': (
        'efficient_attention_cost.jsonl', ('swap_groups', ('flops_vs_full',), 'variant', 'strided', 'local', 'n')),
    'strided_vs_full': ('efficient_attention_quality.jsonl', ('mirror', ('val_loss',))),
    'sum_claim_holds': ('position_concat.jsonl', ('mirror', ('test_loss',))),
    'sum_not_best': ('position_concat.jsonl', ('mirror', ('test_loss',))),
    'sweep_claim': ('ln_warmup.jsonl', ('mirror', ('val', '*', 1))),
    'sweep_post_below_pre': ('ln_warmup.jsonl', ('mirror', ('val', '*', 1))),
    'sweep_stuck_below_150': ('ln_warmup.jsonl', ('end_above_first', ('val',), 'placement', 'post')),
    'swiglu_fewer_parameters': ('activations.jsonl', ('mirror', ('params',))),
    'swiglu_scaled_best': ('activations.jsonl', ('mirror', ('val', '*', 1))),
    'test_half_lower': (
        ('heads_quality.jsonl', 'heads_quality_seeds345.jsonl', 'position_concat.jsonl',
         'position_concat_seeds345.jsonl', 'window_mlp.jsonl', 'window_mlp_seeds345.jsonl'),
        ('reciprocal', ('val_loss',))),
    'top_key_above_uniform': ('attention_explanation.jsonl', ('negate', ('top_agree',))),
    'tuned_32_heads_best': ('heads_quality.jsonl', ('mirror', ('val_loss',))),
    'uncached_flops_larger': ('docs/img/cost-gpt2/sweep.txt', ('square', 43, 1)),
    'uncached_step_slower': ('docs/img/cost-gpt2/sweep.txt', ('square', 12, 1)),
    'untied_vs_add': ('position_concat.jsonl', ('mirror', ('test_loss',))),
    # rows 5, 6, 11 and 13 read seeds 0-5: both results files are perturbed, since a change of the first alone no
    # longer turns an "every seed" rule
    'bpe_better_all': (('tokenizer_quality.jsonl', 'tokenizer_quality_seeds345.jsonl'), ('mirror', ('bits_per_char',))),
    'dk128_all': (('attn_scale_dk128.jsonl', 'attn_scale_dk128_seeds345.jsonl'), ('mirror', ('val', '*', 1))),
    'linear_vs_full_all': (('efficient_attention_quality.jsonl', 'efficient_attention_quality_seeds345.jsonl'),
                           ('mirror', ('val_loss',))),
    'local_below_full_all': (('efficient_attention_quality.jsonl', 'efficient_attention_quality_seeds345.jsonl'),
                             ('mirror', ('val_loss',))),
    'mask_after_softmax_all': (('mask_after_softmax.jsonl', 'mask_after_softmax_seeds345.jsonl'),
                               ('under', 'mirror', 'honest_last_position')),
    'strided_vs_full_all': (('efficient_attention_quality.jsonl', 'efficient_attention_quality_seeds345.jsonl'),
                            ('mirror', ('val_loss',))),
    'verdict_11_0': ('tokenizer_cost.jsonl', ('mirror', ('tokens_per_char',))),
    'verdict_11_1': (('tokenizer_quality.jsonl', 'tokenizer_quality_seeds345.jsonl'), ('mirror', ('bits_per_char',))),
    'verdict_12_0': ('meanings.jsonl', ('halve', ('nearest_is_paraphrase',))),
    'verdict_13_1': (('efficient_attention_quality.jsonl', 'efficient_attention_quality_seeds345.jsonl'),
                     ('negate', ('val_loss',))),
    'verdict_13_3': (('efficient_attention_quality.jsonl', 'efficient_attention_quality_seeds345.jsonl'),
                     ('mirror', ('val_loss',))),
    'verdict_16_0': ('no_mask_2000.jsonl', ('mirror', ('val_teacher_forced',))),
    'verdict_18_1': ('window_mlp.jsonl', ('mirror', ('test_loss',))),
    'verdict_20_0': ('ambiguity.jsonl', ('mirror', ('words_gap_positive',))),
    'verdict_22_0': ('recurrence_vs_attention.jsonl', ('mirror', ('flops_per_token',))),
    'verdict_5_0': ('attn_scale.jsonl', ('negate', ('unit_scaled',))),
    'verdict_6_0': ('mask_after_softmax.jsonl', ('mirror', ('honest_last_position', '8'))),
    'verdict_7_0': ('recall_distance.jsonl', ('mirror', ('test_accuracy',))),
    'verdict_8_0': ('vit_vs_cnn.jsonl', ('mirror', ('test_accuracy',))),
    'vit_gains_more': ('vit_vs_cnn.jsonl', ('square', ('test_accuracy',))),
    'warmup_lowers_pre_ln': ('ln_1500.jsonl', ('reciprocal', ('val', '*', 1))),
    'warmup_rescues': ('ln_1500.jsonl', ('reciprocal', ('val', '*', 1))),
    'water_above_smallest': ('ambiguity.jsonl', ('negate', ('control_per_word', 'water', 'gap'))),
    'weight_says_neither_less': ('attention_explanation_null.jsonl', ('halve', ('beat_share_p90',))),
    'weight_says_neither_more': ('attention_explanation_null.jsonl', ('halve', ('beat_share_p90',))),
    'whole_warmup_less': ('ln_warmup.jsonl', ('mirror', ('val', '*', 1))),
    'widest_window': ('window_mlp.jsonl', ('mirror', ('test_loss',))),
    'window_higher': (('window_mlp.jsonl', 'window_mlp_seeds345.jsonl'), ('mirror', ('test_loss',))),
    'wordpiece_fewer': ('tokenizer_cost.jsonl', ('mirror', ('tokens',))),
    'worst_cnn': ('vit_vs_cnn.jsonl', ('mirror', ('test_accuracy',))),
    'worst_pre_vs_best_post': ('ln_1500.jsonl', ('mirror', ('val', '*', 1))),
}
# ---- P3: docs/quantization.md's and docs/generation.md's rules (a loader's values transformed: the logged quick
# run's ratios and the printed ratios inverted, the computed byte counts negated, the busy runs' rates inverted)
PERTURBATIONS.update({
    'quantized_steps_faster': ('loader', ('_quick_ratio', 'reciprocal')),
    'unpacked_slower': ('loader', ('_quick_ratio', 'reciprocal')),
    'unpacked_costs_more': ('loader', ('_quick_ratio', 'reciprocal')),
    'kquant_more_bytes': ('loader', ('_computed', 'negate')),
    'int8_head_more': ('loader', ('_computed', 'negate')),
    'busy_two_threads_slow': ('loader', ('_busy_rate', 'reciprocal')),
    'kernel_error_larger': ('loader', ('_kernel_shapes', 'negate')),
    'kernel_error_smaller': ('loader', ('_kernel_shapes', 'negate')),
})
# ---- P3: end
# ---- G: docs/generation.md's decode-layout rules (the re-run log's ratios inverted: every layout or slice slower)
PERTURBATIONS.update({
    'g_wide_layout_faster': ('loader', ('_layout_ratio', 'reciprocal')),
    'g_one_row_layout_faster': ('loader', ('_layout_ratio', 'reciprocal')),
    'g_more_rows_layout_faster': ('loader', ('_layout_ratio', 'reciprocal')),
    'g_head_slices_faster': ('loader', ('_layout_ratio', 'reciprocal')),
    # docs/quantization.md: int8's prefill changes (in %) inverted: 0.56 and -0.23 become 1.79 and -4.35, past 1%
    'g_int8_prefill_less': ('loader', ('_int8_change', 'reciprocal')),
})
# ---- G: end

# Rules whose other outcome is no word of the family: the sentence states a fact that either holds or would be
# wrong ("mixed"), and no opposite word would fit it ("the worst pre-LN seed and the best post-LN one", "stays
# quadratic", "no word needed the mean of its pieces"). Their perturbation turns the word into that outcome, which
# fails the claims check as an opposite word would.
MIXED_ONLY = {
    "best_post_ln", "best_vit", "chosen_best_val", "cnn_worst_250_500", "vit_best_250_500", "dk32_no_worse",
    "dk32_not_better", "doubling_within_spread",
    "gelu_lead_within_spread", "gelu_linear_at_init", "grid_top_not_above", "hier_never_below", "hier_quadratic",
    "higher_rate_not_tried", "hot_neither_higher", "hot_neither_lower", "linear_cpu_most", "local_uses_no_more",
    "not_every_word_more", "one_piece", "p7s1_no_more_than_chance", "p7s3_seed0_more", "pre_ln_not_better",
    "quadratic_dominates", "recall_smaller_rate", "strided_stays", "sum_not_best",
    "weight_says_neither_less", "weight_says_neither_more", "worst_cnn", "worst_pre_vs_best_post", "verdict_12_0",
}
OTHER_OUTCOME = {"verdict_12_0": "not for"}  # row 12's verdict is "holds" or "not for"
# ---- P4: docs/interventions.md's agreement rule (the logged Spearman cells negated: the two lowest become the highest)
PERTURBATIONS["agreement_fails_two"] = ('loader', ('_logged', 'negate'))
PERTURBATIONS.update({
    "cost_check_holds": ('loader', ('_check_ratio', 'double')),  # counted FLOPs twice the predicted
    "first_hour_ablation_less": ('loader', ('_logged', 'reciprocal')),
    "quantized_smaller": ('loader', ('_computed', 'negate')),
    "quantized_ppl_less": ('loader', ('_quality_change', 'reciprocal')),  # 0.07% -> 14%
})
# ---- P4: end


# ---- P2: docs/explorer.md's rules over the hand timings it prints beside them (the printed values inverted)
PERTURBATIONS.update({
    "explorer_kept_less_cpu": ('loader', ('_logged', 'reciprocal')),  # P6: the re-run kept table's logged CPU times
    "explorer_patch_grid_slowest": ('loader', ('_explorer_printed', 'reciprocal')),
})
# ---- P2: end

# ---- E: docs/explorer.md's Q8_0 multi-row rule (every logged ratio inverted: the row-by-row calls then win)
PERTURBATIONS["e_q8_0_rows_faster"] = ('loader', ('_e_q8_rows_ratio', 'reciprocal'))
# ---- E: end

# ---- P1: docs/training.md's rules (a loader's values transformed: the logged trial figures and the printed hand
# rates inverted, a test-list score squared past the 60% target; the shipped vit-mnist's accuracy halved)
PERTURBATIONS.update({
    **dict.fromkeys(("block3_faster", "block3_lower", "teacher_loss_higher", "teacher_top5_lower", "distill_best_ten",
                     "earlier_best_ten", "big_a_better", "more_text_helps", "lr2e4_worse", "six_blocks_lower",
                     "short_not_hurt", "mix_a_best_yet", "mix_a_two_more", "mix_a_better_than_shipped",
                     "mix_b_below", "minilm_variant_best_19"), ('loader', ('_logged', 'reciprocal'))),
    **dict.fromkeys(("layers4_below_target", "big_a_below_target"), ('loader', ('_logged', 'square'))),
    'vit_above_97': ('attnlab/assets/checkpoints/vit-mnist/trained.json', ('halve', ('final_eval', 'accuracy'))),
})
# "best" or not the best ("mixed")
MIXED_ONLY |= {"distill_best_ten", "earlier_best_ten", "mix_a_best_yet", "minilm_variant_best_19"}
# ---- P1: end

# ---- T: docs/training.md's generator rule (the logged rates before and after inverted)
PERTURBATIONS["generator_faster"] = ('loader', ('_logged', 'reciprocal'))
# ---- T: end

def flipped(rule: str) -> tuple[str, str]:
    """(the rule's word on the committed data, its word on the perturbed data)."""
    files, spec = PERTURBATIONS[rule]
    if files == "loader":
        return _run(rule), _run(rule, loader=spec)
    return _run(rule), _run(rule, perturbed(files, spec))


def test_every_rule_in_use_has_a_perturbation():
    """A rule claims.tsv uses with no perturbation is one not shown able to fail: it is named here."""
    used = set(_used_rules())
    missing = sorted(used - set(PERTURBATIONS))
    assert not missing, (f"claim rules with no perturbation that changes their word: {missing}; find one with "
                         f"python tests/test_claim_rules_flip.py RULE, or fix the rule, or pin its places")
    assert set(PERTURBATIONS) <= used and MIXED_ONLY <= used, \
        f"rules no place uses: {sorted((set(PERTURBATIONS) | MIXED_ONLY) - used)}"


@pytest.mark.parametrize("rule", sorted(PERTURBATIONS))
def test_a_change_of_its_data_turns_the_rule_s_word(rule):
    word, new = flipped(rule)
    family = _family(rule)
    assert word in family, f"{rule} gives {word!r} on the committed data, not a word of {family}"
    if rule in MIXED_ONLY:
        other = OTHER_OUTCOME.get(rule, "mixed")
        assert new == other, f"{rule}: on {PERTURBATIONS[rule]} it gives {new!r}, not {other!r} (from {word!r})"
    else:
        assert new in family and new != word, \
            f"{rule}: on {PERTURBATIONS[rule]} it gives {new!r}, not the opposite of {word!r} in {family}"
    for claim in claims.read_claims():  # so each of its places would fail the claims check
        if claim.rule == rule:
            assert claim.word != new, (claim.before, claim.word)


if __name__ == "__main__":
    for rule in sys.argv[1:] or _used_rules():
        print(rule, search(rule), flush=True)


def test_the_claims_check_fails_on_a_perturbed_result():
    """End to end for one rule: with 4 heads' and 32 heads' test losses reversed (mirrored about their mean), the
    claims check of docs/experiments.md reports "16 and 32 heads ... score worse than 4 heads" (and the other words
    ruled by those losses), and only words ruled by the results (no place is lost)."""
    page = claims.page_path("experiments.md").read_text()
    files, spec = PERTURBATIONS["many_heads"]
    claims.expected_word.cache_clear()
    try:
        assert claims.problems(page, "experiments.md") == []
        claims.expected_word.cache_clear()
        with _served(perturbed(files, spec)):
            found = claims.problems(page, "experiments.md")
    finally:
        claims.expected_word.cache_clear()
    assert any("score [worse] than 4 heads" in p and "by rule many_heads)" in p for p in found), found
    assert all("the results give it by rule" in p for p in found), found  # every report is a ruled word
