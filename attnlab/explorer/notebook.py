"""The explorer's views inline in Jupyter, interactive without a server.

`show(model, text)` computes in Python every number the Attention and Architecture tabs can ask for on that
text (every layer x head of every attention part, the thumbnail grids, the block diagram), embeds them as JSON
in the HTML, and inlines the explorer's own ES modules (static/util.js, common.js, attention/, architecture/) with
a `fetch` shim that answers /api/... requests from the embedded data. So the same code draws the same views,
layer / head / token clicks and the keyboard work, and nothing goes to the network: there is no server and no URL
to load.

The page runs in an <iframe srcdoc>: the explorer's stylesheet and the shim's `fetch` stay inside it and never
touch the notebook page. The modules are turned into blob: URLs in the frame (their relative imports rewritten
to those), which needs no network either. Until the script runs (or where scripts are off) the frame shows a
static SVG snapshot of the selected head.

    from attnlab.explorer.notebook import show
    show("toy", "the cat sat on the mat", head=0, query=1)            # the seed's toy, head 1, "cat"
    show(model, "hello", tokenizer=tok, layer=1, head=2)              # any attnlab model
    show("runs/mine", "hello", view="architecture")                   # a checkpoint directory
    show("minilm", "the bank of the river")                           # the explorer's own model ids
"""

from __future__ import annotations

import html
import json
import posixpath
import re
from importlib import resources
from pathlib import Path
from typing import Any

import torch

from attnlab.errors import AttnlabError, InputError
from attnlab.explorer import api
from attnlab.explorer.server.common import parts_of
from attnlab.explorer.server.registry import Loaded

MAX_CELLS = 96  # heatmaps larger than this are average-pooled to MAX_CELLS x MAX_CELLS in the static snapshot
MAX_TOKENS = 128  # the interactive view refuses longer texts: every layer x head of n^2 numbers is embedded
MAX_EMBEDDED_BYTES = 4_000_000  # JSON budget: beyond it only the requested layer's heads are embedded


_REGISTRY: list = []  # the explorer's own model list, built on the first show("<id>") and kept (models load once)


def _registry():
    if not _REGISTRY:
        from attnlab.explorer.server.registry import build_registry

        _REGISTRY.append(build_registry())
    return _REGISTRY[0]


def _loaded(model, tokenizer=None) -> Loaded:
    """`model` as the views take it: a Loaded, one of the explorer's model ids ("toy", "minilm", "gpt-char",
    ... the names of `attnlab explore`'s menu), a checkpoint folder or GGUF file, or an attnlab model."""
    if isinstance(model, Loaded):
        return model
    if isinstance(model, str) and not Path(model).expanduser().exists():
        registry = _registry()
        if model in registry.entries:
            return registry.get(model)  # a model that is not installed here says how to install it
        shown = model if len(model) <= 60 else model[:59] + "…"
        raise InputError(f"model {shown!r} is neither a checkpoint folder or file nor one of the explorer's models; "
                         f"allowed: a path, an attnlab model, or one of {', '.join(registry.entries)}")
    if isinstance(model, str) or hasattr(model, "__fspath__"):
        from attnlab.loading import load

        m, tok = load(model)
        return api.wrap(m, tokenizer if tokenizer is not None else tok, label=str(model))
    return api.wrap(model, tokenizer)


def _color(v: float) -> str:
    t = max(0.0, min(1.0, v))
    stops = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]
    x = t * (len(stops) - 1)
    i = min(len(stops) - 2, int(x))
    f = x - i
    r, g, b = (round(a + (c - a) * f) for a, c in zip(stops[i], stops[i + 1], strict=True))
    return f"rgb({r},{g},{b})"


def _heatmap_svg(weights: list[list[float | None]], highlight: int | None, size: int = 320) -> str:
    rows = len(weights)
    w = torch.tensor([[0.0 if v is None else v for v in row] for row in weights])
    masked = torch.tensor([[v is None for v in row] for row in weights])
    if rows > MAX_CELLS:  # pool for display; the exact numbers stay in the bars
        w = torch.nn.functional.adaptive_avg_pool2d(w[None], (MAX_CELLS, MAX_CELLS))[0]
        masked = torch.zeros_like(w, dtype=torch.bool)
        highlight = None if highlight is None else highlight * MAX_CELLS // rows
    n_r, n_c = w.shape
    cell = max(1.0, size / max(n_r, n_c))
    peak = float(w.max()) or 1.0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{n_c * cell:.0f}" height="{n_r * cell:.0f}">']
    for i in range(n_r):
        for j in range(n_c):
            fill = "#d9d9d9" if masked[i, j] else _color(float(w[i, j]) / peak)
            parts.append(f'<rect x="{j * cell:.2f}" y="{i * cell:.2f}" width="{cell:.2f}" height="{cell:.2f}" '
                         f'fill="{fill}"/>')
    if highlight is not None:
        parts.append(f'<rect x="0" y="{highlight * cell:.2f}" width="{n_c * cell:.2f}" height="{cell:.2f}" '
                     'fill="none" stroke="#ff7f0e" stroke-width="2"/>')
    parts.append("</svg>")
    return "".join(parts)


def _bars_svg(labels: list[str], values: list[float | None], attr: str, width: int = 360) -> str:
    row_h, label_w = 16, 90
    vals = [abs(v) for v in values if v is not None] or [1.0]
    peak = max(vals) or 1.0
    has_neg = any(v is not None and v < 0 for v in values)
    plot = width - label_w - 60
    zero = label_w + (plot / 2 if has_neg else 0)
    scale = (plot / 2 if has_neg else plot) / peak
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{len(values) * row_h + 4}" '
             'font-family="monospace" font-size="11">']
    for i, (label, v) in enumerate(zip(labels, values, strict=True)):
        y = i * row_h + 2
        shown = "masked" if v is None else f"{v:.4g}"
        parts.append(f'<g data-key="{i}" {attr}="{"masked" if v is None else v}">'
                     f'<text x="{label_w - 4}" y="{y + 12}" text-anchor="end">{html.escape(label)}</text>')
        if v is not None:
            w = abs(v) * scale
            x = zero - w if v < 0 else zero
            parts.append(f'<rect x="{x:.2f}" y="{y + 2}" width="{max(w, 0.5):.2f}" height="{row_h - 4}" '
                         'fill="#4c78a8"/>')
        parts.append(f'<text x="{label_w + plot + 4}" y="{y + 12}" fill="#666">{shown}</text></g>')
    parts.append("</svg>")
    return "".join(parts)



def _masked(data: dict[str, Any]) -> list[list[float | None]]:
    return [[None if r is None else w for r, w in zip(raw, ws, strict=True)]
            for raw, ws in zip(data["raw_scores"], data["weights"], strict=True)]


def _attention_snapshot(label: str, data: dict[str, Any], illustration: bool, query: int) -> str:
    """The selected head as static HTML + SVG: what the frame shows before (or without) its script."""
    chips = " ".join(
        f'<span style="padding:1px 6px;border:1px solid #ccc;border-radius:8px;'
        f'{"background:#ff7f0e;color:white;" if i == query else ""}">{html.escape(t)}</span>'
        for i, t in enumerate(data["q_tokens"]))
    title = (f'{html.escape(label)} · {data["part"]} attention · layer {data["layer"] + 1} · head {data["head"] + 1}'
             + (f' ({html.escape(data["head_name"])})' if data.get("head_name") else ""))
    note = ('<div style="background:#fff8d6;padding:2px 6px">Illustration: hand-set weights, not trained.</div>'
            if illustration or data.get("head_name") else "")
    return (f'<div style="font-family:sans-serif;font-size:13px"><b>{title}</b>{note}<div>{chips}</div>'
            f'<div style="display:flex;gap:16px;align-items:flex-start">'
            f'<div>{_heatmap_svg(data["weights"] if not data["causal"] else _masked(data), query)}</div>'
            f'<div><div>raw scores Q·K/√d_k of “{html.escape(data["q_tokens"][query])}”</div>'
            f'{_bars_svg(data["k_tokens"], data["raw_scores"][query], "data-raw-score")}'
            f'<div>softmax weights</div>{_bars_svg(data["k_tokens"], data["weights"][query], "data-weight")}'
            f'</div></div></div>')


def _architecture_snapshot(label: str, arch: dict[str, Any]) -> str:
    rows = []
    for stack in arch["stacks"]:
        for b in stack["embed"] + stack["layer"] + stack["tail"]:
            shapes = ", ".join(f"{k} ({', '.join(map(str, v))})" for k, v in b["shapes"].items())
            rows.append(f'<tr><td>{stack["name"]}</td><td>{html.escape(b["title"])}</td><td>{shapes}</td>'
                        f'<td data-params="{b["params"]}" style="text-align:right">{b["params"]:,}</td></tr>')
    return (f'<div style="font-family:sans-serif;font-size:13px"><b>{html.escape(label)}</b>: '
            f'{arch["total_params"]:,} parameters (closed form {arch["closed_form"]:,})<table><tr><th>stack</th>'
            f'<th>block</th><th>shapes (n = {arch["n"]})</th><th>parameters</th></tr>{"".join(rows)}</table></div>')


# ------------------------------------------------------------------------------------------ embedded data
CALCULATOR_QUERY = "V=30522&d=768&N=12&h=12&L=512&d_ff=3072"  # the calculator's first values in architecture.js
PER_HEAD = ("layer", "head", "raw_scores", "weights", "q", "k", "head_name")  # what changes between heads


def _or_error(work) -> dict[str, Any]:
    """A precomputed answer, or the error the server would have sent (the shim returns it as a 4xx)."""
    try:
        return {"ok": work()}
    except AttnlabError as exc:
        return {"error": str(exc)}


def _estimate(lm: Loaded, text: str) -> tuple[int, int]:
    """(tokens, bytes of JSON for every head of every part): about 9 bytes per rounded number."""
    cfg = lm.model.config
    n = len(api.encode(lm, text)[0])
    heads = sum(n_layers for _, n_layers, _ in parts_of(cfg).values()) * cfg.n_heads
    return n, heads * 9 * (2 * n * n + 2 * n * cfg.head_dim)


def _attention_data(lm: Loaded, text: str, layers_of: dict[str, list[int]] | None = None) -> dict[str, Any]:
    """Every head of every layer (or of `layers_of[part]`) of every attention part, split into what all heads
    share (tokens, embeddings) and what each head has (scores, weights, Q, K)."""
    cfg = lm.model.config
    out: dict[str, Any] = {}
    for p, (_, n_l, _) in parts_of(cfg).items():
        common, heads = None, [[None] * cfg.n_heads for _ in range(n_l)]
        for li in (layers_of or {}).get(p, range(n_l)):
            for hi in range(cfg.n_heads):
                d = api.attention(lm, text, li, hi, p)
                heads[li][hi] = {k: d[k] for k in PER_HEAD}
                if common is None:
                    common = {k: v for k, v in d.items() if k not in PER_HEAD}
        out[p] = {"common": common, "heads": heads, "grid": _or_error(lambda p=p: api.attention_grid(lm, text, p))}
    return out


def _text_data(lm: Loaded, text: str, layers_of: dict[str, list[int]] | None = None) -> dict[str, Any]:
    return {"attention": _attention_data(lm, text, layers_of), "architecture": api.architecture(lm, 8, text),
            "walkthrough": _or_error(lambda: api.walkthrough(lm, text))}


def _embedded(lm: Loaded, text: str, layer: int, head: int, part: str | None, tab: str, query: int | None
              ) -> dict[str, Any]:
    """Everything the two tabs can ask for: per text (`text`, then the model's example sentences while they fit
    the budget), the attention of every head, the grids, the diagram and the walk-through."""
    cfg = lm.model.config
    info = api.describe(lm)
    data: dict[str, Any] = {"info": info, "text": text, "tab": tab, "layer": layer, "head": head, "part": part,
                            "query": query, "notes": [], "texts": {}}
    if cfg.topology == "vit":
        data["architecture"] = api.architecture(lm, 8, None)
    else:
        n, size = _estimate(lm, text)
        if n > MAX_TOKENS:
            raise InputError(f"the text is {n} tokens; the notebook view embeds every layer x head and takes at "
                             f"most {MAX_TOKENS} tokens: shorten it, or run `attnlab explore` (up to "
                             f"{api.MAX_TOKENS})")
        layers_of = None
        if size > MAX_EMBEDDED_BYTES:
            layers_of = {p: [min(layer, n_l - 1)] for p, (_, n_l, _) in parts_of(cfg).items()}
            parts = parts_of(cfg).values()
            if size * len(parts) // sum(n_l for _, n_l, _ in parts) > MAX_EMBEDDED_BYTES:
                raise InputError(f"the text is {n} tokens: even one layer's heads exceed the notebook view's "
                                 f"{MAX_EMBEDDED_BYTES / 1e6:g} MB budget; shorten it or run `attnlab explore`")
            data["notes"].append(f"This view embeds layer {layer + 1} only (every layer x head of {n} tokens "
                                 f"exceeds {MAX_EMBEDDED_BYTES / 1e6:g} MB); call show(..., layer=L) for another.")
            size = size * len(parts) // sum(n_l for _, n_l, _ in parts)
        data["texts"][text] = _text_data(lm, text, layers_of)
        left = MAX_EMBEDDED_BYTES - size
        for example in info["examples"]:
            try:
                n, size = _estimate(lm, example)
            except AttnlabError:
                continue
            if example not in data["texts"] and n <= MAX_TOKENS and size <= left:
                data["texts"][example] = _text_data(lm, example)
                left -= size
    data["params"] = {CALCULATOR_QUERY: _or_error(lambda: api.parameter_calculator(30522, 768, 12, 12, 512, 3072))}
    data["famous"] = _or_error(api.famous_models)
    return data


# ------------------------------------------------------------------------------------------ inlined modules
STATIC = "attnlab.explorer"
ENTRY_MODULES = ("attention/attention.js", "architecture/architecture.js")
_IMPORT = re.compile(r'(\bfrom\s*)"(\.{1,2}/[^"]+)"')


def _static_text(name: str) -> str:
    return resources.files(STATIC).joinpath("static", name).read_text(encoding="utf-8")


def _modules() -> list[tuple[str, str]]:
    """The explorer's ES modules the two tabs need, dependencies first, each relative import rewritten to an
    "attnlab:<path>" placeholder that the frame's loader replaces by the blob: URL of that module."""
    done: dict[str, str] = {}

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if name in done:
            return
        if name in trail:
            raise RuntimeError(f"import cycle through static/{name}")
        src = _static_text(name)
        deps = []

        def rewrite(m: re.Match) -> str:
            dep = posixpath.normpath(posixpath.join(posixpath.dirname(name), m.group(2)))
            deps.append(dep)
            return f'{m.group(1)}"attnlab:{dep}"'

        src = _IMPORT.sub(rewrite, src)
        if re.search(r'\bimport\s*\(|\bimport\s*"|\bfrom\s*"(?!attnlab:)', src):
            raise RuntimeError(f"static/{name} has an import the notebook view cannot inline")
        for dep in deps:
            visit(dep, (*trail, name))
        done[name] = src

    for entry in ENTRY_MODULES:
        visit(entry, ())
    return list(done.items())


SHELL_JS = r"""
// The notebook's page shell: the explorer's Attention and Architecture tabs over embedded numbers.
import * as attention from "attnlab:attention/attention.js";
import * as architecture from "attnlab:architecture/architecture.js";
import { el, notice } from "attnlab:util.js";

const D = window.ATTNLAB_DATA;
const TABS = [["attention", "Attention", attention], ["architecture", "Architecture", architecture]];
const state = { model: D.info.id, tab: D.tab, text: D.text, layer: D.layer, head: D.head,
  part: D.part || undefined, token: D.query ?? undefined, hide: "" };
let renders = 0;

function setState(changes, { rerender = true } = {}) { Object.assign(state, changes); if (rerender) render(); }

async function render() {
  document.querySelectorAll("nav [role=tab]").forEach((b) => {
    const on = b.dataset.tab === state.tab;
    b.classList.toggle("active", on); b.setAttribute("aria-selected", on ? "true" : "false"); b.tabIndex = on ? 0 : -1;
  });
  const root = document.getElementById("tab");
  const tab = TABS.find((t) => t[0] === state.tab) || TABS[0];
  const mine = ++renders;
  const view = el("div", { class: "view" });
  root.dataset.ready = "0"; root.dataset.tab = tab[0];
  root.replaceChildren(view);
  const ctx = { state, info: D.info, models: [], setState, navigate: (c) => setState(c), root: view };
  try { await tab[2].render(view, ctx); } catch (e) { view.append(notice(e.message, "error")); }
  const lessons = view.querySelector("#lessons");  // hidden here: they compute per click on the server
  if (lessons) lessons.after(el("p", { class: "help", id: "lessons-note" }, "The lessons that follow this view " +
    "in the explorer (Q, K, V as a lookup, the maths step by step, why √d_k) are computed per click by its " +
    "server: run attnlab explore for them."));
  if (mine === renders) root.dataset.ready = "1";
}

const nav = document.getElementById("tabs");
nav.replaceChildren(...TABS.map(([id, label]) => el("button", { type: "button", role: "tab", id: `tab-${id}`,
  dataset: { tab: id }, onclick: () => setState({ tab: id }) }, label)));
document.getElementById("status").replaceChildren(...D.notes.map((t) => notice(t, "warn")),
  D.info.illustration ? notice("Illustration: this toy's weights were set by hand, not trained.", "illustration") : "");
document.getElementById("snapshot")?.remove();
render();
"""

LOADER_JS = r"""
(() => {
  const D = JSON.parse(document.getElementById("attnlab-data").textContent);
  window.ATTNLAB_DATA = D;
  const reply = (status, body) => Promise.resolve(new Response(JSON.stringify(body),
    { status, headers: { "Content-Type": "application/json" } }));
  const texts = Object.keys(D.texts).map((t) => `“${t}”`).join(", ") || "no text";
  const other = (what) => reply(404, { detail: `${what} is not embedded in this notebook view: it carries the ` +
    `numbers for ${texts} (call show() with another text, or run attnlab explore for everything live)` });
  const live = (path) => reply(404, { detail: `${path} is computed per click by the explorer's server ` +
    "(attnlab explore); this notebook view embeds the Attention and Architecture numbers only" });
  // Every request the tabs make is answered here from D; nothing reaches the network.
  window.fetch = (url, init = {}) => {
    const [path, qs] = String(url).split("?");
    const query = new URLSearchParams(qs || "");
    const body = init.body ? JSON.parse(init.body) : {};
    const text = body.text ?? query.get("text") ?? D.text;
    const T = D.texts[text];
    if (body.target) return other("a given target text");
    const pre = (x) => (x && "ok" in x ? reply(200, x.ok) : x ? reply(400, { detail: x.error }) : live(path));
    if (path.startsWith("/api/models/")) return reply(200, D.info);
    if (path === "/api/famous") return pre(D.famous);
    if (path === "/api/params") return pre(D.params[qs]);
    if (path.startsWith("/api/architecture/")) return T ? reply(200, T.architecture) :
      D.architecture ? reply(200, D.architecture) : other(`the text “${text}”`);
    if (!["/api/walkthrough", "/api/attention", "/api/attention/grid"].includes(path)) return live(path);
    if (!T) return other(`the text “${text}”`);
    if (path === "/api/walkthrough") return body.model === D.info.id ? pre(T.walkthrough) : other("another model");
    const part = T.attention[body.part || Object.keys(T.attention)[0]];
    if (path === "/api/attention/grid" && part) return pre(part.grid);
    if (path === "/api/attention" && part) {
      const h = (part.heads[body.layer] || [])[body.head];
      return h ? reply(200, { ...part.common, ...h }) : other(`layer ${body.layer + 1}, head ${body.head + 1}`);
    }
    return live(path);
  };
  const urls = {};
  for (const [name, src] of JSON.parse(document.getElementById("attnlab-modules").textContent)) {
    const code = src.replace(/"attnlab:([^"]+)"/g, (_, dep) => JSON.stringify(urls[dep]));
    urls[name] = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
  }
  import(urls["notebook.js"]).catch((e) => {
    document.getElementById("status").textContent = "The interactive view did not start: " + e.message;
  });
  // grow the frame with its content (the frame shares the notebook's origin: srcdoc)
  const fit = () => {
    try { frameElement.style.height = document.documentElement.scrollHeight + 4 + "px"; } catch (e) { /* no parent */ }
  };
  new ResizeObserver(fit).observe(document.documentElement);
})();
"""

NOTEBOOK_CSS = """
body { margin: 0; } main { padding: 8px 12px; }
#lessons { display: none; }  /* the lessons compute per click on the server: `attnlab explore` has them */
"""


def _json_script(element_id: str, value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _page(data: dict[str, Any], snapshot: str) -> str:
    modules = [*_modules(), ("notebook.js", SHELL_JS)]
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<style>{_static_text('style.css')}{NOTEBOOK_CSS}</style></head><body>"
            f'<header><h1>Transformer Explorer <small>attnlab · {html.escape(data["info"]["label"])} · '
            "in a notebook, no server</small></h1></header>"
            '<nav aria-label="Explorer tabs"><div id="tabs" role="tablist"></div></nav>'
            '<div id="status" role="status" aria-live="polite"></div>'
            f'<main id="tab" tabindex="-1"><div id="snapshot">{snapshot}</div></main>'
            f'{_json_script("attnlab-data", data)}{_json_script("attnlab-modules", modules)}'
            f"<script>{LOADER_JS}</script></body></html>")


class View:
    """An explorer view for Jupyter: `data` holds the api numbers of the selected view, `page` the full
    interactive page (every embedded number), _repr_html_ the frame that shows it."""

    def __init__(self, page: str, data: dict[str, Any], embedded: dict[str, Any] | None = None):
        self.page, self.data, self.embedded = page, data, embedded or {}

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{html.escape(self.page, quote=True)}" title="attnlab explorer view" '
                'style="width:100%;min-width:320px;height:720px;border:1px solid #ddd"></iframe>')

    def save(self, path) -> None:
        """Write the view as a standalone HTML file (opens with no server and no network)."""
        from pathlib import Path

        Path(path).write_text(self.page, encoding="utf-8")

    def __repr__(self) -> str:
        return f"<attnlab explorer view: {', '.join(sorted(self.data))}>"


def show(model, text: str = "the cat sat on the mat", *, tokenizer=None, layer: int = 0, head: int = 0,
         query: int | None = None, part: str | None = None, view: str = "attention") -> View:
    """The explorer inline: view="attention" (opens on the Attention tab at `layer`, `head`, with token `query`
    selected) or view="architecture" (the block diagram); or one of the Experiments tab's views (EXPERIMENT_VIEWS,
    see experiment_view: a static table, `query` the position read). Both tabs are in the frame; choosing another layer,
    head, part or token redraws from the numbers embedded for `text` (at most MAX_TOKENS tokens)."""
    if view in EXPERIMENT_VIEWS:
        return experiment_view(_loaded(model, tokenizer), text, view, layer=layer, head=head, position=query)
    if view not in ("attention", "architecture"):
        raise InputError(f"view={view!r}: allowed 'attention' or 'architecture', or an Experiments view: "
                         f"{', '.join(map(repr, EXPERIMENT_VIEWS))}")
    lm = _loaded(model, tokenizer)
    cfg = lm.model.config
    if view == "attention":
        selected = api.attention(lm, text, layer, head, part)  # checks layer, head and part with the api's errors
        n = len(selected["q_tokens"])
        query = 0 if query is None else query
        if isinstance(query, bool) or not isinstance(query, int) or not 0 <= query < n:
            raise InputError(f"query={query!r}: the text has {n} query tokens (0..{n - 1})")
        part = selected["part"]
    embedded = _embedded(lm, text, layer, head, part, view, query)
    if view == "architecture":
        selected = embedded["texts"][text]["architecture"] if embedded["texts"] else embedded["architecture"]
        snapshot = _architecture_snapshot(lm.label, selected)
    else:
        snapshot = _attention_snapshot(lm.label, selected, lm.illustration or bool(cfg.extra.get("illustration")),
                                       query)
    return View(_page(embedded, snapshot), selected, embedded)


# ------------------------------------------------------------------------------ the Experiments tab's views
EXPERIMENT_VIEWS = ("ablate", "logit-lens", "attention-ablation")


def _cell(text: str, prob: float | None, title: str = "") -> str:
    fill = "#d9d9d9" if prob is None else _color(prob)
    return (f'<td style="background:{fill};padding:3px 4px" title="{html.escape(title, quote=True)}">'
            f'<span style="background:rgba(255,255,255,.92);color:#111;padding:0 3px;border-radius:3px">'
            f"{html.escape(text)}</span></td>")


def _signed(v: float | None) -> str:
    return "–" if v is None else f"{v:+.4f}"


def _pct(p: float | None) -> str:
    return "–" if p is None else f"{100 * p:.1f}%" if p >= 0.1 else f"{100 * p:.2f}%"


def _experiment_html(view: str, label: str, data: dict[str, Any]) -> str:
    """A static page (no script: the numbers are all computed) for an Experiments view's answer."""
    def tok(t: str) -> str:
        return {" ": "␣ (space)", "\n": "↵ (new line)"}.get(t, t)

    head = f"<h2>{html.escape(label)} · {html.escape(view)}</h2>"
    legend = ('<p style="font-size:12px">colour: probability, ' + "".join(
        f'<span style="background:{_color(v)};color:{"#fff" if v < 0.5 else "#111"};padding:0 6px">{v:g}</span>'
        for v in (0, 0.25, 0.5, 0.75, 1)) + "</p>")
    if view == "logit-lens":
        k = len(data["rows"][0]["top"])
        rows = "".join(
            f'<tr><th scope="row" style="font-weight:normal;text-align:left">{html.escape(r["after"])}</th>'
            + "".join(_cell(f'{tok(c["token"])} {_pct(c["prob"])}', c["prob"]) for c in r["top"]) + "</tr>"
            for r in data["rows"])
        body = (f'<p>Top {k} predictions at position {data["position"]} '
                f'(“{html.escape(tok(data["tokens"][data["position"]]))}”), read after each layer through the final '
                "norm and the output head; the last row is the model's own prediction.</p>" + legend
                + '<table style="border-collapse:collapse"><thead><tr><th>read after</th>'
                + "".join(f'<th scope="col">#{j + 1}</th>' for j in range(k))
                + f"</tr></thead><tbody>{rows}</tbody></table>")
    elif view == "ablate":
        t = data["target"]
        lines = "".join(
            f"<tr><td>{j + 1}</td>" + _cell(f'{tok(b["token"])} {_pct(b["prob"])}', b["prob"])
            + _cell(f'{tok(a["token"])} {_pct(a["prob"])}', a["prob"]) + "</tr>"
            for j, (b, a) in enumerate(zip(data["before"], data["after"], strict=True)))
        heads = ", ".join(f"layer {layer + 1} head {h + 1}" for layer, h in data["heads"])
        body = (f'<p>Switched off ({html.escape(data["mode"])}): {heads}. P(“{html.escape(tok(t["token"]))}”) '
                f'{_pct(t["prob_before"])} → {_pct(t["prob_after"])} ({100 * t["prob_change"]:+.2f} points).</p>'
                + legend + '<table style="border-collapse:collapse"><thead><tr><th>rank</th><th>all heads on</th>'
                f"<th>heads switched off</th></tr></thead><tbody>{lines}</tbody></table>")
    else:
        rows = "".join(
            f'<tr><th scope="row" style="font-weight:normal;text-align:left">{r["position"]} '
            f'{html.escape(tok(r["token"]))}</th>' + _cell(f'{r["weight"]:.3f}', r["weight"])
            + f'<td style="text-align:right;padding:0 6px">{_signed(r["effect"])}</td></tr>'
            for r in data["rows"])
        body = (f'<p>Layer {data["layer"] + 1}, head {data["head"] + 1}, from position {data["position"]}: its '
                "attention weight on each token beside the drop in log P(answer “"
                f'{html.escape(tok(data["target"]["token"]))}”) when that one weight is set to 0. A large weight '
                "need not mean a large effect (attention is not explanation).</p>" + legend
                + '<table style="border-collapse:collapse"><thead><tr><th>token</th><th>weight</th>'
                f"<th>drop in log P (nats)</th></tr></thead><tbody>{rows}</tbody></table>")
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8"><style>body{font:14px system-ui,sans-serif;'
            "margin:12px;color:#1d2433} th{font-size:12px;padding:2px 6px}</style></head><body>"
            f"{head}{body}</body></html>")


def experiment_view(lm: Loaded, text: str, view: str, *, layer: int = 0, head: int = 0,
                    position: int | None = None, heads=None) -> View:
    """An Experiments view as a static table; `data` is what the explorer's route answers (explorer/views/experiments/).

    view="ablate": `heads` ([[layer, head], ...], default [[layer, head]]) switched off, top-5 before and after;
    "logit-lens": the top-5 after each layer at `position`; "attention-ablation": head (`layer`, `head`)'s
    weights from `position` beside the effect of removing each. Model: a decoder or an encoder with an MLM head.
    """
    from attnlab.explorer import api as experiments

    if view == "ablate":
        data = experiments.ablation(lm, text, heads if heads is not None else [[layer, head]], position=position)
    elif view == "logit-lens":
        data = experiments.logit_lens_top(lm, text, position=position)
    elif view == "attention-ablation":
        data = experiments.attention_vs_ablation(lm, text, layer, head, position=position)
    else:
        raise InputError(f"view={view!r}: allowed {', '.join(map(repr, EXPERIMENT_VIEWS))}")
    return View(_experiment_html(view, lm.label, data), data)
