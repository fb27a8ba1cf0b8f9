// Small helpers every tab shares: DOM building, the JSON API, number formatting, SVG bars, Canvas heatmaps.

export class ApiError extends Error {}

export async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  const res = await fetch(path, init);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (!res.ok) throw new ApiError((data && data.detail) || `${res.status} ${res.statusText}`);
  return data;
}

// el("div", {class: "x", dataset: {weight: 0.5}, onclick: f}, child, "text", ...)
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) {
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

const SVGNS = "http://www.w3.org/2000/svg";
export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVGNS, tag);
  setAttrs(node, attrs);
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) {
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function setAttrs(node, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "dataset") for (const [dk, dv] of Object.entries(v)) node.dataset[dk] = String(dv);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
}

export function fmt(x, digits = 4) {
  if (x === null || x === undefined) return "masked";
  if (typeof x !== "number") return String(x);
  if (Number.isInteger(x) && Math.abs(x) >= 1000) return x.toLocaleString("en-US");
  if (x !== 0 && (Math.abs(x) < 1e-3 || Math.abs(x) >= 1e5)) return x.toExponential(2);
  return Number(x.toFixed(digits)).toString();
}

export function human(n) {
  const units = [[1e12, "T"], [1e9, "B"], [1e6, "M"], [1e3, "k"]];
  for (const [u, s] of units) if (Math.abs(n) >= u) return (n / u).toFixed(n / u >= 100 ? 0 : 1) + s;
  return String(n);
}

export function bytes(n) {
  const units = [[2 ** 30, "GiB"], [2 ** 20, "MiB"], [2 ** 10, "KiB"]];
  for (const [u, s] of units) if (n >= u) return (n / u).toFixed(1) + " " + s;
  return n + " B";
}

export function tokenLabel(t) {
  return (t || "").replace(/^[Ġ▁ ]/, "·").replace(/\n/g, "↵") || "∅";
}

// viridis-like ramp from dark blue (0) to yellow (1)
export function color(v) {
  const t = Math.max(0, Math.min(1, v));
  const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const x = t * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
  const c = stops[i].map((a, k) => Math.round(a + (stops[i + 1][k] - a) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

// N x M matrix on a canvas; null cells (masked) drawn hatched grey; an optional highlighted row and column.
// rowLabels / colLabels are drawn in a margin when the cells are big enough to read them.
export function heatmap(canvas, matrix, { highlightRow = -1, highlightCols = [], highlightRows = [],
  size = 360, max = null, onclick = null, rowColor = "#ff7f0e", rowLabels = null, colLabels = null } = {}) {
  const rows = matrix.length, cols = rows ? matrix[0].length : 0;
  const cell = Math.max(1, Math.floor(size / Math.max(rows, cols, 1)));
  const labelled = rowLabels && colLabels && cell >= 10;
  const left = labelled ? 64 : 0, top = labelled ? 64 : 0;
  canvas.width = cols * cell + left; canvas.height = rows * cell + top;
  canvas.style.width = canvas.width + "px"; canvas.style.height = canvas.height + "px";
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, canvas.width, canvas.height);
  let peak = max;
  if (peak === null) { peak = 0; for (const r of matrix) for (const v of r) if (v !== null && v > peak) peak = v; }
  peak = peak || 1;
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) {
    const v = matrix[i][j];
    const x = left + j * cell, y = top + i * cell;
    ctx.fillStyle = v === null ? "#d9d9d9" : color(v / peak);
    ctx.fillRect(x, y, cell, cell);
    if (v === null && cell >= 6) {
      ctx.strokeStyle = "#aaa"; ctx.beginPath(); ctx.moveTo(x, y + cell); ctx.lineTo(x + cell, y); ctx.stroke();
    }
  }
  if (labelled) {
    ctx.fillStyle = "#333"; ctx.font = `${Math.min(12, cell - 1)}px monospace`; ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    rowLabels.forEach((t, i) => ctx.fillText(tokenLabel(t).slice(0, 8), left - 4, top + i * cell + cell / 2));
    colLabels.forEach((t, j) => {
      ctx.save(); ctx.translate(left + j * cell + cell / 2, top - 4); ctx.rotate(-Math.PI / 3);
      ctx.textAlign = "left"; ctx.fillText(tokenLabel(t).slice(0, 8), 0, 0); ctx.restore();
    });
  }
  ctx.lineWidth = Math.max(1, Math.min(3, cell / 4));
  for (const j of highlightCols) { ctx.strokeStyle = "#ff7f0e"; ctx.strokeRect(left + j * cell, top, cell, rows * cell); }
  for (const i of highlightRows) { ctx.strokeStyle = "#2ca02c"; ctx.strokeRect(left, top + i * cell, cols * cell, cell); }
  if (highlightRow >= 0) {
    ctx.strokeStyle = rowColor; ctx.strokeRect(left, top + highlightRow * cell, cols * cell, cell);
  }
  canvas.dataset.rows = rows; canvas.dataset.cols = cols; canvas.dataset.cell = cell;
  canvas.dataset.left = left; canvas.dataset.top = top;
  if (onclick) canvas.onclick = (ev) => {
    const r = canvas.getBoundingClientRect();
    const j = Math.floor((ev.clientX - r.left - left) / cell), i = Math.floor((ev.clientY - r.top - top) / cell);
    if (i >= 0 && i < rows && j >= 0 && j < cols) onclick(i, j);
  };
  return canvas;
}

// horizontal bars: items [{label, value, attrs}] -> SVG; negative values extend left of the axis
export function bars(items, { width = 420, rowHeight = 18, labelWidth = 110, max = null, fill = "#4c78a8",
  onclick = null, selected = -1 } = {}) {
  const peak = max ?? Math.max(1e-12, ...items.map((d) => Math.abs(d.value ?? 0)));
  const hasNeg = items.some((d) => (d.value ?? 0) < 0);
  const plot = width - labelWidth - 70, zero = labelWidth + (hasNeg ? plot / 2 : 0);
  const scale = (hasNeg ? plot / 2 : plot) / peak;
  const root = svg("svg", { width, height: items.length * rowHeight + 4, class: "bars" });
  items.forEach((d, i) => {
    const y = i * rowHeight + 2, v = d.value;
    const g = svg("g", { class: "bar" + (i === selected ? " selected" : ""), ...d.attrs });
    if (onclick) { g.addEventListener("click", () => onclick(i)); g.style.cursor = "pointer"; }
    g.append(svg("text", { x: labelWidth - 6, y: y + rowHeight * 0.7, "text-anchor": "end", class: "label" },
      d.label));
    if (v === null || v === undefined) {
      g.append(svg("text", { x: zero + 4, y: y + rowHeight * 0.7, class: "masked" }, "masked"));
    } else {
      const w = Math.abs(v) * scale;
      g.append(svg("rect", { x: v < 0 ? zero - w : zero, y: y + 2, width: Math.max(w, 0.5), height: rowHeight - 5,
        fill: d.fill || fill }));
      g.append(svg("text", { x: labelWidth + plot + 6 + (hasNeg ? 0 : 0), y: y + rowHeight * 0.7, class: "value" },
        fmt(v)));
    }
    root.append(g);
  });
  return root;
}

export function table(headers, rows) {
  return el("table", {}, el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => (c instanceof Node ? el("td", {}, c) : el("td", {}, c)))))));
}

export function select(options, value, onchange, attrs = {}) {
  const s = el("select", attrs, options.map(([v, label]) => el("option", { value: v }, label)));
  s.value = String(value);
  s.addEventListener("change", () => onchange(s.value));
  return s;
}

export function notice(text, kind = "info") {
  return el("div", { class: `notice ${kind}` }, text);
}
