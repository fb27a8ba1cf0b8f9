"""The explorer's views inline in Jupyter: `show(model, text)` returns an object whose _repr_html_ is plain
HTML + SVG (no scripts, no network), built from the same api functions as the web page.

    from attnlab.explorer.notebook import show
    show("toy", "the cat sat on the mat", head=0, query=1)            # the seed's toy, head 1, "cat"
    show(model, "hello", tokenizer=tok, layer=1, head=2)              # any attnlab model
    show("runs/mine", "hello", view="architecture")                   # a checkpoint directory
"""

from __future__ import annotations

import html
from typing import Any

import torch

from attnlab.explorer import api
from attnlab.explorer.registry import Loaded

MAX_CELLS = 96  # heatmaps larger than this are average-pooled to MAX_CELLS x MAX_CELLS for the notebook


def _loaded(model, tokenizer=None) -> Loaded:
    if isinstance(model, Loaded):
        return model
    if isinstance(model, str) and model == "toy":
        from attnlab.explorer import toy

        m, tok = toy.build()
        return Loaded("toy", "toy (hand-crafted illustration)", m, tok, kind="toy", illustration=True)
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


class View:
    """An explorer view for Jupyter: `data` holds the api numbers, _repr_html_ draws them."""

    def __init__(self, html_text: str, data: dict[str, Any]):
        self.html, self.data = html_text, data

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"<attnlab explorer view: {', '.join(sorted(self.data))}>"


def show(model, text: str = "the cat sat on the mat", *, tokenizer=None, layer: int = 0, head: int = 0,
         query: int | None = None, part: str | None = None, view: str = "attention") -> View:
    """One explorer view inline: view="attention" (heatmap + the query token's raw scores and weights) or
    view="architecture" (blocks, shapes and parameter counts)."""
    lm = _loaded(model, tokenizer)
    if view == "architecture":
        arch = api.architecture(lm, len(api.encode(lm, text)[0]) if lm.model.config.topology != "vit" else 1)
        rows = []
        for stack in arch["stacks"]:
            for b in stack["embed"] + stack["layer"] + stack["tail"]:
                shapes = ", ".join(f"{k} ({', '.join(map(str, v))})" for k, v in b["shapes"].items())
                rows.append(f'<tr><td>{stack["name"]}</td><td>{html.escape(b["title"])}</td><td>{shapes}</td>'
                            f'<td data-params="{b["params"]}" style="text-align:right">{b["params"]:,}</td></tr>')
        body = (f'<div><b>{html.escape(lm.label)}</b>: {arch["total_params"]:,} parameters (closed form '
                f'{arch["closed_form"]:,})<table><tr><th>stack</th><th>block</th><th>shapes (n = {arch["n"]})</th>'
                f'<th>parameters</th></tr>{"".join(rows)}</table></div>')
        return View(body, arch)
    if view != "attention":
        raise ValueError(f"view={view!r}: allowed 'attention' or 'architecture'")
    data = api.attention(lm, text, layer, head, part)
    n = len(data["q_tokens"])
    query = 0 if query is None else query
    if not 0 <= query < n:
        raise ValueError(f"query={query}: the text has {n} query tokens (0..{n - 1})")
    chips = " ".join(
        f'<span style="padding:1px 6px;border:1px solid #ccc;border-radius:8px;'
        f'{"background:#ff7f0e;color:white;" if i == query else ""}">{html.escape(t)}</span>'
        for i, t in enumerate(data["q_tokens"]))
    title = (f'{html.escape(lm.label)} · {data["part"]} attention · layer {layer + 1} · head {head + 1}'
             + (f' ({html.escape(data["head_name"])})' if data.get("head_name") else ""))
    note = ('<div style="background:#fff8d6;padding:2px 6px">Illustration: hand-set weights, not trained.</div>'
            if lm.illustration or data.get("head_name") else "")
    body = (f'<div style="font-family:sans-serif;font-size:13px"><b>{title}</b>{note}<div>{chips}</div>'
            f'<div style="display:flex;gap:16px;align-items:flex-start">'
            f'<div>{_heatmap_svg(data["weights"] if not data["causal"] else _masked(data), query)}</div>'
            f'<div><div>raw scores Q·K/√d_k of “{html.escape(data["q_tokens"][query])}”</div>'
            f'{_bars_svg(data["k_tokens"], data["raw_scores"][query], "data-raw-score")}'
            f'<div>softmax weights</div>{_bars_svg(data["k_tokens"], data["weights"][query], "data-weight")}'
            f'</div></div></div>')
    return View(body, data)


def _masked(data: dict[str, Any]) -> list[list[float | None]]:
    return [[None if r is None else w for r, w in zip(raw, ws, strict=True)]
            for raw, ws in zip(data["raw_scores"], data["weights"], strict=True)]
