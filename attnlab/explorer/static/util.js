// Small helpers every tab shares: DOM building, the JSON API, number formatting, SVG bars, Canvas heatmaps.

export class ApiError extends Error {}

// Every API call the page makes, announced as a "request" event ({path, body}): the Experiments tab's "Show the
// code" (experiments/code.js) writes the Python for the request a view just sent.
export const apiRequests = new EventTarget();
const announce = (path, body) => apiRequests.dispatchEvent(new CustomEvent("request", { detail: { path, body } }));

// `signal` (an AbortController's) cancels the request: the promise then rejects with an AbortError.
export async function api(path, body, { signal } = {}) {
  announce(path, body);
  const early = prefetched.get(requestKey(path, body));
  if (early) {  // asked for ahead (the tour's next stop): the answer is used once, then forgotten
    prefetched.delete(requestKey(path, body));
    const answer = await early;
    if (answer) return answer;  // a failed prefetch is simply asked again
  }
  return fetched(path, body, signal);
}

// Ask for an answer ahead of the view that will need it (the same path and body): api() then uses it once.
const prefetched = new Map();
const requestKey = (path, body) => `${path}\n${JSON.stringify(body ?? null)}`;
export function prefetch(path, body) {
  const key = requestKey(path, body);
  if (!prefetched.has(key)) prefetched.set(key, fetched(path, body).catch(() => null));
}

async function fetched(path, body, signal) {
  const init = body === undefined ? { signal } : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal,
  };
  const res = await fetch(path, init);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (!res.ok) throw new ApiError((data && data.detail) || `${res.status} ${res.statusText}`);
  return data;
}

// A streamed JSON-lines answer (POST): onLine(object) for each line as it arrives. Rejects like api() when the
// answer is not 200; `signal` stops reading (the server then stops too: it sees the client leave).
export async function apiLines(path, body, onLine, { signal } = {}) {
  announce(path, body);
  const res = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body), signal });
  if (!res.ok) {
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    throw new ApiError((data && data.detail) || `${res.status} ${res.statusText}`);
  }
  const reader = res.body.getReader(), decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buffer += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (line) onLine(JSON.parse(line));
    }
    if (done) break;
  }
  if (buffer.trim()) onLine(JSON.parse(buffer));
}

// "work in progress" for slow requests: a status line with the seconds elapsed and a Cancel button that calls
// onCancel (which aborts the fetch). Call .stop() when the work ends.
export function busy(text, onCancel, { id = "busy" } = {}) {
  const t0 = performance.now();
  const secs = el("span", { class: "elapsed", dataset: { seconds: 0 } }, "0 s");
  const cancel = el("button", { type: "button", class: "cancel", id: `${id}-cancel`, onclick: () => onCancel() },
    "Cancel");
  const place = el("span", { class: "queue-place", id: `${id}-queue` });
  const box = el("div", { class: "notice info busy", id, role: "status", "aria-live": "polite" }, `${text} `, secs,
    " ", place, " ", cancel);
  const timer = setInterval(() => {
    const s = Math.floor((performance.now() - t0) / 1000);
    secs.dataset.seconds = s; secs.textContent = `${s} s`;
    queuePlace(place);
  }, 1000);
  box.stop = () => { clearInterval(timer); cancel.disabled = true; };
  return box;
}

// Heavy jobs (sweeps, patching grids, streams) take turns, one running per browser: while this page's job waits,
// the busy line says its place (GET /api/queue answers at once, beside any sweep).
async function queuePlace(node) {
  try {
    const q = await api("/api/queue");
    node.dataset.place = q.mine_waiting.length ? q.mine_waiting[0] : 0;
    node.textContent = q.mine_waiting.length ? `(waiting for its turn: place ${q.mine_waiting[0]} of ` +
      `${q.waiting} in the queue for heavy jobs, ${q.running} running)` : "";
  } catch (e) { node.textContent = ""; }
}

export const aborted = (e) => e && e.name === "AbortError";

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
  return (t || "").replace(/^[Ġ▁ ]/, "·").replace(/\n/g, "↵").replace(/\t/g, "⇥") || "∅";
}

// What a learner sees on a token chip when hovering or focusing it: the marks explained. `piece` and `id`
// (when the server sends them) are the tokenizer's raw piece, e.g. byte-level BPE's “Ġcat” or “æĹ”, and the id.
export function tokenTitle(t, index, piece, id) {
  const notes = [`token ${index}: “${t}”` + (id !== undefined && id !== null ? ` (id ${id}` +
    (piece !== undefined && piece !== t ? `, piece “${piece}”)` : ")") : "")];
  if (t === "◌") notes.push("◌ continues a character an earlier token started: byte-level BPE split its UTF-8 " +
    "bytes over several tokens, and the character is shown on the first of them");
  if (/^[Ġ▁ ]/.test(t || "")) notes.push("· marks a leading space: the token starts a new word");
  if (/^##/.test(t || "")) notes.push("## marks a piece that continues the previous word (WordPiece)");
  if (/^\[.*\]$|^<.*>$/.test(t || "")) notes.push("special token added by the tokenizer, not typed by you");
  return notes.join(" · ");
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
// rowLabels / colLabels are drawn in a margin when the cells are big enough to read them. The canvas is drawn
// at devicePixelRatio (sharp on 2x screens); all coordinates and data- attributes are CSS pixels.
// With `keyboard` ({label(i, j) -> text, onfocus(i, j)}) the canvas takes focus: arrow keys move a cell cursor,
// Home/End jump along the row, Enter or Space acts like a click on the cell.
export function heatmap(canvas, matrix, opts = {}) {
  const { highlightRow = -1, highlightCols = [], highlightRows = [], size = 360, max = null, onclick = null,
    rowColor = "#e66100", rowLabels = null, colLabels = null, keyboard = null, minLabelCell = 10 } = opts;
  const rows = matrix.length, cols = rows ? matrix[0].length : 0;
  const cell = Math.max(1, Math.floor(size / Math.max(rows, cols, 1)));
  const labelled = rowLabels && colLabels && cell >= minLabelCell;
  const left = labelled ? 64 : 0, top = labelled ? 64 : 0;
  const W = cols * cell + left, H = rows * cell + top;
  const dpr = Math.max(1, Math.min(3, window.devicePixelRatio || 1));
  canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
  canvas.style.width = W + "px"; canvas.style.height = H + "px";
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  let peak = max;
  if (peak === null) { peak = 0; for (const r of matrix) for (const v of r) if (v !== null && v > peak) peak = v; }
  peak = peak || 1;
  canvas.dataset.rows = rows; canvas.dataset.cols = cols; canvas.dataset.cell = cell;
  canvas.dataset.left = left; canvas.dataset.top = top; canvas.dataset.cssWidth = W; canvas.dataset.peak = peak;
  function draw() {
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, W, H);
    for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) {
      const v = matrix[i][j];
      const x = left + j * cell, y = top + i * cell;
      ctx.fillStyle = v === null ? "#d9d9d9" : color(v / peak);
      ctx.fillRect(x, y, cell, cell);
      if (v === null && cell >= 6) {
        ctx.strokeStyle = "#aaa"; ctx.lineWidth = 1;
        ctx.beginPath(); ctx.moveTo(x, y + cell); ctx.lineTo(x + cell, y); ctx.stroke();
      }
    }
    if (labelled) {
      ctx.fillStyle = "#333"; ctx.font = `${Math.max(10, Math.min(12, cell - 1))}px monospace`; ctx.textBaseline = "middle";
      ctx.textAlign = "right";
      rowLabels.forEach((t, i) => ctx.fillText(tokenLabel(t).slice(0, 8), left - 4, top + i * cell + cell / 2));
      colLabels.forEach((t, j) => {
        ctx.save(); ctx.translate(left + j * cell + cell / 2, top - 4); ctx.rotate(-Math.PI / 3);
        ctx.textAlign = "left"; ctx.fillText(tokenLabel(t).slice(0, 8), 0, 0); ctx.restore();
      });
    }
    ctx.lineWidth = Math.max(1, Math.min(3, cell / 4));
    for (const j of highlightCols) { ctx.strokeStyle = "#e66100"; ctx.strokeRect(left + j * cell, top, cell, rows * cell); }
    for (const i of highlightRows) { ctx.strokeStyle = "#1a9641"; ctx.strokeRect(left, top + i * cell, cols * cell, cell); }
    if (highlightRow >= 0) {
      ctx.strokeStyle = rowColor; ctx.strokeRect(left, top + highlightRow * cell, cols * cell, cell);
    }
    const f = canvas._focusCell;
    if (f && document.activeElement === canvas) {
      ctx.save(); ctx.lineWidth = 2; ctx.strokeStyle = "#000"; ctx.setLineDash([3, 2]);
      ctx.strokeRect(left + f[1] * cell + 1, top + f[0] * cell + 1, Math.max(2, cell - 2), Math.max(2, cell - 2));
      ctx.restore();
    }
  }
  draw();
  // pointer -> [row, col] (or null), correct also when CSS shrinks the canvas to fit a narrow screen
  canvas._toCell = (ev) => {
    const r = canvas.getBoundingClientRect(), k = r.width ? W / r.width : 1;
    const j = Math.floor(((ev.clientX - r.left) * k - left) / cell), i = Math.floor(((ev.clientY - r.top) * k - top) / cell);
    return i >= 0 && i < rows && j >= 0 && j < cols ? [i, j] : null;
  };
  if (onclick) canvas.onclick = (ev) => {
    const c = canvas._toCell(ev);
    if (c) onclick(c[0], c[1]);
  };
  if (keyboard && rows && cols) {
    canvas.tabIndex = 0;
    canvas.setAttribute("role", "application");
    canvas.setAttribute("aria-roledescription", "heatmap");
    if (!canvas._focusCell || canvas._focusCell[0] >= rows || canvas._focusCell[1] >= cols) {
      canvas._focusCell = [Math.max(0, highlightRow), 0];
    } else if (highlightRow >= 0 && canvas._lastHighlight !== highlightRow) {
      canvas._focusCell = [highlightRow, canvas._focusCell[1]];  // the cursor follows a newly selected query
    }
    canvas._lastHighlight = highlightRow;
    const announce = () => {
      const [i, j] = canvas._focusCell;
      canvas.setAttribute("aria-label", keyboard.label(i, j));
      if (keyboard.onfocus) keyboard.onfocus(i, j);
    };
    canvas.onfocus = () => { announce(); draw(); };
    canvas.onblur = draw;
    canvas.onkeydown = (ev) => {
      let [i, j] = canvas._focusCell;
      const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
      if (moves[ev.key]) { i += moves[ev.key][0]; j += moves[ev.key][1]; }
      else if (ev.key === "Home") j = 0;
      else if (ev.key === "End") j = cols - 1;
      else if ((ev.key === "Enter" || ev.key === " ") && onclick) { ev.preventDefault(); onclick(i, j); return; }
      else return;
      ev.preventDefault();
      canvas._focusCell = [Math.max(0, Math.min(rows - 1, i)), Math.max(0, Math.min(cols - 1, j))];
      announce(); draw();
    };
    canvas.setAttribute("aria-label", keyboard.label(...canvas._focusCell));
  }
  return canvas;
}

// A colour legend for `color`: a gradient strip from `low` (default 0) to `peak` with values, and its meaning.
export function legend(peak, what, { low = 0, masked = false, width = 220 } = {}) {
  const stops = [0, 0.25, 0.5, 0.75, 1];
  const g = svg("linearGradient", { id: `lg${++legendCount}` },
    stops.map((t) => svg("stop", { offset: `${t * 100}%`, "stop-color": color(t) })));
  const root = svg("svg", { width: width + 90, height: 34, class: "legend", role: "img",
    "aria-label": `colour scale: ${what}, from ${fmt(low, 3)} (dark) to ${fmt(peak, 3)} (bright)` },
  svg("defs", {}, g), svg("rect", { x: 0, y: 2, width, height: 12, fill: `url(#${g.id})`, stroke: "#999" }),
  stops.map((t) => svg("text", { x: Math.min(width - 2, Math.max(2, t * width)), y: 27, "font-size": 10,
    "text-anchor": t === 0 ? "start" : t === 1 ? "end" : "middle" }, fmt(low + t * (peak - low), 3))),
  masked ? [svg("rect", { x: width + 10, y: 2, width: 12, height: 12, fill: "#d9d9d9", stroke: "#aaa" }),
    svg("text", { x: width + 26, y: 12, "font-size": 10 }, "masked")] : []);
  return el("div", { class: "legend-box" }, el("span", { class: "legend-title" }, what), root);
}
let legendCount = 0;

// horizontal bars: items [{label, value, attrs}] -> SVG; negative values extend left of the axis
export function bars(items, { width = 420, rowHeight = 18, labelWidth = 110, max = null, fill = "#4c78a8",
  onclick = null, selected = -1 } = {}) {
  const peak = max ?? Math.max(1e-12, ...items.map((d) => Math.abs(d.value ?? 0)));
  const hasNeg = items.some((d) => (d.value ?? 0) < 0);
  const plot = width - labelWidth - 70, zero = labelWidth + (hasNeg ? plot / 2 : 0);
  const scale = (hasNeg ? plot / 2 : plot) / peak;
  const root = svg("svg", { width, height: items.length * rowHeight + 4, class: "bars",
    viewBox: `0 0 ${width} ${items.length * rowHeight + 4}` });
  items.forEach((d, i) => {
    const y = i * rowHeight + 2, v = d.value;
    const g = svg("g", { class: "bar" + (i === selected ? " selected" : ""), ...d.attrs },
      svg("title", {}, `${d.label}: ${v === null || v === undefined ? "masked" : fmt(v, 6)}`));
    if (onclick) {
      g.addEventListener("click", () => onclick(i)); g.style.cursor = "pointer";
      g.setAttribute("tabindex", "0"); g.setAttribute("role", "button");
      g.setAttribute("aria-label", `${d.label}: ${v === null || v === undefined ? "masked" : fmt(v)}`);
      g.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); onclick(i); }
      });
    }
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

// A view's own stylesheet (style.css holds what every tab shares; a tab's folder may add rules of its own),
// linked into the page the first time the view draws and never again however often it redraws.
export function linkStyle(href) {
  if (document.querySelector(`link[rel="stylesheet"][href="${href}"]`)) return;
  document.head.append(el("link", { rel: "stylesheet", href }));
}

// Keyboard focus survives a redraw: the focused control is named by its id, or by its container's id and its
// stable data- attributes (a chip's index, a bar's key, a thumbnail's layer and head, a sample), and the same
// control in the new view takes the focus back. Without this, Enter on a thumbnail or ArrowDown in the head
// menu dropped the focus to the top of the page.
const STABLE = ["index", "key", "layer", "head", "sample", "hint", "model", "block", "example"];

export function focusKey(node, root = document.getElementById("tab")) {
  if (!node || node === document.body || !root.contains(node)) return null;
  if (node.id) return `#${CSS.escape(node.id)}`;
  const attrs = STABLE.filter((k) => node.dataset[k] !== undefined)
    .map((k) => `[data-${k}="${CSS.escape(node.dataset[k])}"]`).join("");
  const box = node.parentElement && node.parentElement.closest("[id]");
  const where = box && box !== root ? `#${CSS.escape(box.id)} ` : "";
  if (attrs) return `${where}${node.tagName.toLowerCase()}${attrs}`;
  const text = node.textContent.trim();  // a plain button: the same words in the same place
  return text ? { where, tag: node.tagName.toLowerCase(), text } : null;
}

export function refocus(key, root = document.getElementById("tab")) {
  if (!key || (document.activeElement && document.activeElement !== document.body &&
    root.contains(document.activeElement))) return;  // nothing to restore, or the view focused something itself
  let target = null;
  if (typeof key === "string") target = root.querySelector(key);
  else target = [...root.querySelectorAll(`${key.where}${key.tag}`)].find((n) => n.textContent.trim() === key.text);
  if (target) target.focus({ preventScroll: true });
}
