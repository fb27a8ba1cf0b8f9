// Drawing helpers the Experiments views share: the 'Try / Look for' line, a diverging blue-white-orange scale
// with its legend, a vector as a strip of cells, a line chart with axes, units and a step marker, a grid of
// numbers as a keyboard-friendly table, and a streamed sweep with progress and Cancel.
import { aborted, api, apiLines, ApiError, busy, color, el, fmt, notice, svg } from "../util.js";
import { rovingGrid } from "./grid.js";

// small helpers --------------------------------------------------------------------------------------------
export function tryThis(what, look) {
  return el("p", { class: "try" }, el("strong", {}, "Try: "), what, " ", el("strong", {}, "Look for: "), look);
}

// blue (negative) - white - orange (positive), colour-blind safe (Okabe-Ito ends)
export function diverge(v, peak) {
  const t = Math.max(-1, Math.min(1, peak ? v / peak : 0));
  const [r, g, b] = t < 0 ? [0, 114, 178] : [230, 97, 0];
  const a = Math.abs(t);
  return `rgb(${Math.round(255 + (r - 255) * a)},${Math.round(255 + (g - 255) * a)},${Math.round(255 + (b - 255) * a)})`;
}

export function divergeLegend(peak, what) {
  const w = 220;
  const stops = [-1, -0.5, 0, 0.5, 1];
  return el("div", { class: "legend-box" }, el("span", {}, what), svg("svg", { width: w + 40, height: 32,
    role: "img", "aria-label": `colour scale: ${what}, blue ${fmt(-peak, 3)}, white 0, orange ${fmt(peak, 3)}` },
  [...Array(44).keys()].map((i) => svg("rect", { x: 20 + i * 5, y: 2, width: 5, height: 12,
    fill: diverge((i / 43) * 2 - 1, 1) })),
  stops.map((t) => svg("text", { x: 20 + ((t + 1) / 2) * w, y: 27, "font-size": 10, "text-anchor": "middle" },
    fmt(t * peak, 3)))));
}

// The one sign convention of the intervention views (ablation, patching, components, attribution, direct logit
// attribution, the lens's answer column): orange = pushes toward the answer, blue = pushes against it, whatever
// the view's raw sign (a view whose raw number is "the change when replaced" turns it first). Why: the same head
// was orange in one view and blue in another for the same role.
export const TOWARD = "orange: pushes toward the answer", AGAINST = "blue: pushes against it";
export const toward = (v, peak) => diverge(v, peak);

// The legend every answer-signed grid shows: the scale with its values and unit, and what each end means.
// unit: what the numbers are ("drop in log P (nats)", "logit difference", "share of the gap restored").
export function answerLegend(peak, unit, { note = "" } = {}) {
  const w = 220;
  const stops = [-1, -0.5, 0, 0.5, 1];
  return el("div", { class: "legend-box answer-legend", dataset: { peak } },
    el("span", { class: "legend-title" }, `${unit}${note ? ` (${note})` : ""}`),
    svg("svg", { width: w + 40, height: 46, role: "img", "aria-label": `colour scale: ${unit}; blue ` +
      `${fmt(-peak, 3)} pushes against the answer, white 0, orange ${fmt(peak, 3)} pushes toward it` },
    [...Array(44).keys()].map((i) => svg("rect", { x: 20 + i * 5, y: 2, width: 5, height: 12,
      fill: diverge((i / 43) * 2 - 1, 1) })),
    stops.map((t) => svg("text", { x: 20 + ((t + 1) / 2) * w, y: 27, "font-size": 10, "text-anchor": "middle" },
      fmt(t * peak, 3))),
    svg("text", { x: 20, y: 42, "font-size": 10, "text-anchor": "start" }, "← against the answer"),
    svg("text", { x: 20 + w, y: 42, "font-size": 10, "text-anchor": "end" }, "toward the answer →")));
}

// a row of coloured cells for a vector (SVG), with its values in <title> and data-values
export function strip(values, peak, { cell = 12, label = "" } = {}) {
  return svg("g", { class: "strip", dataset: { values: values.join(",") } },
    values.map((v, i) => svg("rect", { x: i * cell, y: 0, width: cell - 1, height: cell - 1, fill: diverge(v, peak),
      stroke: "#c8ccd4" }, svg("title", {}, `${label} channel ${i + 1}: ${fmt(v)}`))));
}

export function lineChart(series, { width = 420, height = 200, xLabel = "", yLabel = "", marker = null, id = "",
  yMin = null, yMax = null } = {}) {
  // series: [{name, color, points: [[x, y]], dash}]
  const pad = { l: 52, r: 26, t: 10, b: 40 };
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1);
  const y0 = yMin ?? Math.min(...ys), y1 = yMax ?? Math.max(...ys, y0 + 1e-9);
  const X = (x) => pad.l + ((x - x0) / (x1 - x0)) * (width - pad.l - pad.r);
  const Y = (y) => pad.t + (1 - (y - y0) / (y1 - y0 || 1)) * (height - pad.t - pad.b);
  const ticks = (a, b, n) => {  // round values (1, 2 or 5 x 10^k apart) inside [a, b]
    const raw = (b - a) / n, mag = 10 ** Math.floor(Math.log10(raw || 1));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((v) => v >= raw) || raw;
    const out = [];
    for (let t = Math.ceil(a / step) * step; t <= b + step * 1e-9; t += step) out.push(Number(t.toPrecision(12)));
    return out;
  };
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "chart", id, role: "img",
    "aria-label": `${yLabel} against ${xLabel}: ` + series.map((s) => `${s.name} from ${fmt(s.points[0]?.[1], 3)} ` +
      `to ${fmt(s.points[s.points.length - 1]?.[1], 3)}`).join("; ") },
  svg("line", { x1: pad.l, y1: height - pad.b, x2: width - pad.r, y2: height - pad.b, stroke: "#667" }),
  svg("line", { x1: pad.l, y1: pad.t, x2: pad.l, y2: height - pad.b, stroke: "#667" }),
  ticks(x0, x1, 4).map((t) => svg("text", { x: X(t), y: height - pad.b + 14, "font-size": 10,
    "text-anchor": "middle" }, fmt(t, 4))),
  ticks(y0, y1, 4).map((t) => svg("text", { x: pad.l - 4, y: Y(t) + 3, "font-size": 10, "text-anchor": "end" },
    fmt(t, 3))),
  svg("text", { x: (pad.l + width - pad.r) / 2, y: height - 6, "font-size": 11, "text-anchor": "middle" }, xLabel),
  svg("text", { x: 12, y: (pad.t + height - pad.b) / 2, "font-size": 11, "text-anchor": "middle",
    transform: `rotate(-90 12 ${(pad.t + height - pad.b) / 2})` }, yLabel),
  series.map((s) => svg("polyline", { fill: "none", stroke: s.color, "stroke-width": 2,
    "stroke-dasharray": s.dash || null, points: s.points.map((p) => `${X(p[0])},${Y(p[1])}`).join(" ") })),
  marker === null ? [] : svg("line", { class: "marker", x1: X(marker), x2: X(marker), y1: pad.t, y2: height - pad.b,
    stroke: "#a94400", "stroke-width": 2, "stroke-dasharray": "4 3" }));
  const key = el("div", { class: "legend-box" }, series.map((s) => el("span", { class: "legend-item" },
    svg("svg", { width: 22, height: 10, "aria-hidden": "true" }, svg("line", { x1: 0, y1: 5, x2: 22, y2: 5,
      stroke: s.color, "stroke-width": 2, "stroke-dasharray": s.dash || null })), " ", s.name)));
  return el("div", { class: "chart-box" }, root, key);
}

// A grid of numbers as an HTML table: rows x cols cells coloured by fill(i, j), each showing text(i, j) and
// carrying data-value. With onpick, every cell is a button and the grid is one tab stop: arrow keys, Home/End
// move, Enter or Space picks (a roving tabindex, as the token chips do). A scroll region at phone widths.
export function gridTable({ id, caption, rows, cols, rowHead, colHead, corner = "", value, text, fill, label,
  onpick = null }) {
  const buttons = [];
  const body = [...Array(rows).keys()].map((i) => el("tr", {}, el("th", { scope: "row" }, rowHead(i)),
    [...Array(cols).keys()].map((j) => {
      const v = value(i, j);
      const inner = el("span", { class: "val" }, text(i, j));
      const attrs = { style: `background:${fill(i, j)}`, dataset: { row: i, col: j, value: v === null ? "" : v },
        title: label(i, j) };
      if (!onpick) return el("td", attrs, inner);
      const b = el("button", { type: "button", class: "cell", tabindex: i === 0 && j === 0 ? "0" : "-1",
        "aria-label": label(i, j), dataset: { row: i, col: j }, onclick: () => onpick(i, j) }, inner);
      buttons.push(b);
      return el("td", attrs, b);
    })));
  const table = el("table", { class: "xgrid", id, "aria-label": caption },
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, corner || el("span", { class: "sr-only" }, "row / column")),
      [...Array(cols).keys()].map((j) => el("th", { scope: "col" }, colHead(j))))), el("tbody", {}, body));
  if (onpick) rovingGrid(table, buttons, cols);
  return el("div", {}, el("p", { class: "grid-caption" }, caption),
    el("div", { class: "scroll-x xgrid-box", tabindex: "0", role: "region", "aria-label": caption }, table));
}

// A long computation streamed as JSON lines ({progress, total} ..., then {result} or {error}): a progress bar,
// the count done and a Cancel button that asks the server to stop (POST /api/experiments/cancel); the partial
// answer still arrives and is drawn. Resolves to the result (null when the request failed or was aborted).
// A cancellable job's status line: a job id the server knows it by, a progress bar and a count, and Cancel (which
// aborts the request while it still waits in the queue, else asks the server to stop the job).
export function jobStatus(id, barLabel, first) {
  const job = `${id}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const controller = new AbortController();
  const bar = el("progress", { id: `${id}-progress`, max: 1, value: 0, "aria-label": barLabel });
  const count = el("span", { id: `${id}-count`, class: "count" }, first);
  const status = busy("", () => {
    count.textContent += " — cancelling …";
    if (Number(status.querySelector(".queue-place").dataset.place) > 0) controller.abort();  // still queued
    api("/api/experiments/cancel", { job }).catch(() => controller.abort());
  }, { id });
  status.prepend(bar, " ", count);
  return { job, controller, bar, count, status };
}

export async function streamed(path, body, out, { id, unit }) {
  const { job, controller, bar, count, status } = jobStatus(id, `${unit} done`, "starting …");
  out.replaceChildren(status);
  status.querySelector("button.cancel").focus();
  let result = null;
  try {
    await apiLines(path, { ...body, job }, (line) => {
      if (line.progress !== undefined) {
        bar.max = line.total; bar.value = line.progress;
        count.textContent = `${line.progress} of ${line.total} ${unit}`;
      } else if (line.result) result = line.result;
      else if (line.error) throw new ApiError(line.error);
    }, { signal: controller.signal });
  } catch (e) {
    status.stop();
    out.replaceChildren(notice(aborted(e) ? "cancelled" : e.message, aborted(e) ? "info" : "error"));
    return null;
  }
  status.stop();
  return result;
}

// a cell's number: two decimals, "0" when it rounds to zero (no 7.2e-4 in a grid read at a glance)
export const cellNum = (v, digits = 2) => (v === null || v === undefined ? "–" :
  Math.abs(v) < 0.5 * 10 ** -digits ? "0" : v.toFixed(digits));

// the sequential scale for probabilities (0..1) and the diverging one for changes, as cell backgrounds
export const probFill = (p) => (p === null || p === undefined ? "#d9d9d9" : color(p));
