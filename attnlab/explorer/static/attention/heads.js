// Tab Attention · several heads at once: BertViz's head view (the query tokens on the left, the key tokens on the
// right, one line per query-key pair whose opacity is the weight, one colour per head, the heads toggled from
// their legend) and two heads side by side on the same sentence. Opened on request: it asks the server for every
// head of the layer (one request each; the server reads them from the sentence's recording).
import { api, el, fmt, select, svg, tokenLabel } from "../util.js";

// Okabe-Ito (colour-blind safe) then Paul Tol's muted set: distinct on white for up to 12 heads, then repeated
const PALETTE = ["#E69F00", "#0072B2", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#882255",
  "#44AA99", "#999933", "#117733", "#AA4499"];
export const headColor = (h) => PALETTE[h % PALETTE.length];

// One line view: rows of tokens, lines from query i (left) to key j (right), opacity = weight; `heads` the heads
// drawn, each in its colour; the chosen query's lines at full strength, the others faint (or hidden).
function lineView(data, heads, { query, width, id, label }) {
  const n = data[heads[0]].q_tokens.length, m = data[heads[0]].k_tokens.length;
  const row = 20, top = 22, H = top + Math.max(n, m) * row + 6;
  const colW = Math.min(110, Math.max(60, width * 0.26));
  const x0 = colW, x1 = width - colW;
  const yq = (i) => top + i * row + row / 2, yk = (j) => top + j * row + row / 2;
  const root = svg("svg", { width, height: H, viewBox: `0 0 ${width} ${H}`, id, class: "head-lines", role: "img",
    "aria-label": label });
  root.append(svg("text", { x: x0 - 6, y: 12, "font-size": 11, "text-anchor": "end", "font-weight": 600 },
    "query"), svg("text", { x: x1 + 6, y: 12, "font-size": 11, "font-weight": 600 }, "key"));
  const q = data[heads[0]].q_tokens, k = data[heads[0]].k_tokens;
  q.forEach((t, i) => root.append(svg("text", { x: x0 - 6, y: yq(i) + 4, "font-size": 12, "text-anchor": "end",
    "font-weight": i === query ? 700 : 400 }, tokenLabel(t))));
  k.forEach((t, j) => root.append(svg("text", { x: x1 + 6, y: yk(j) + 4, "font-size": 12 }, tokenLabel(t))));
  heads.forEach((h, k) => {
    const w = data[h].weights;
    const dy = (k - (heads.length - 1) / 2) * 2.5;  // heads on the same pair of tokens drawn apart, not blended
    for (let i = 0; i < n; i++) {
      if (query !== null && i !== query) continue;
      for (let j = 0; j < m; j++) {
        const v = w[i][j];
        if (!v || v < 0.01) continue;
        root.append(svg("line", { x1: x0, y1: yq(i) + dy, x2: x1, y2: yk(j) + dy, stroke: headColor(h),
          "stroke-opacity": Math.min(1, v), "stroke-width": 1 + 3 * v, class: "head-line",
          dataset: { head: h, query: i, key: j, weight: v } }, svg("title", {}, `head ${h + 1}: ` +
          `${tokenLabel(q[i])} → ${tokenLabel(k[j])}, weight ${fmt(v, 3)}`)));
      }
    }
  });
  return root;
}

// a head's legend button: pressed (drawn) in its colour's outline on a light fill, else faded and marked "off"
function paintToggle(button, on) {
  const h = Number(button.dataset.head);
  button.setAttribute("aria-pressed", on ? "true" : "false");
  button.style.cssText = on ? `border:2px solid ${headColor(h)};background:#f3f6fb;font-weight:600` :
    "border:1px dashed #8a93a3;background:#fff;color:#4a5263";
  button.lastChild.textContent = on ? `head ${h + 1}` : `head ${h + 1} (off)`;
}

// what the lines say in words, for a screen reader and for anyone reading numbers: each head's strongest key
function strongest(data, h, query) {
  const w = data[h].weights[query];
  const j = w.reduce((best, v, k) => (v !== null && v > (w[best] ?? -1) ? k : best), 0);
  return `head ${h + 1} → “${tokenLabel(data[h].k_tokens[j])}” (${fmt(w[j], 2)})`;
}

function weightKey() {
  return el("div", { class: "legend-box", id: "heads-weight-key" }, el("span", {}, "line: attention weight"),
    svg("svg", { width: 240, height: 24, role: "img", "aria-label": "line opacity and width grow with the weight: " +
      "0.25, 0.5, 1" }, [0.25, 0.5, 1].flatMap((v, i) => [svg("line", { x1: 6 + i * 80, y1: 8, x2: 56 + i * 80, y2: 8,
      stroke: "#1d2433", "stroke-opacity": v, "stroke-width": 1 + 3 * v }), svg("text", { x: 31 + i * 80, y: 22,
      "font-size": 10, "text-anchor": "middle" }, `weight ${v}`)])));
}

// -> a <details> that fetches the layer's heads when first opened. body: the /api/attention request of the
// tab (model, text, part, target, layer); nHeads; query(): the tab's selected query token (or null).
export function compareHeads(body, nHeads, query) {
  const details = el("details", { class: "panel", id: "compare-heads" },
    el("summary", {}, `Several heads at once: every head of layer ${body.layer + 1} overlaid, or two side by side`));
  const inner = el("div", { id: "compare-heads-body", "aria-live": "polite" }, "loading the heads …");
  details.append(inner);
  let started = false;
  details.addEventListener("toggle", () => {
    if (!details.open || started) return;
    started = true;
    load().catch((e) => { inner.textContent = e.message; });
  });

  async function load() {
    const data = await Promise.all([...Array(nHeads).keys()].map((h) => api("/api/attention", { ...body, head: h })));
    const n = data[0].q_tokens.length;
    const shown = new Set([...Array(Math.min(nHeads, 4)).keys()]);
    let q = Math.min(Math.max(0, query() ?? n - 1), n - 1);
    const width = () => Math.max(300, Math.min(560, details.clientWidth - 24));
    const overlay = el("div", { id: "heads-overlay" });
    const pairBox = el("div", { id: "heads-pair", class: "row" });
    const toggles = el("div", { class: "controls", role: "group", id: "heads-toggles",
      "aria-label": "heads drawn in the overlay (each button is its colour's legend)" },
    [...Array(nHeads).keys()].map((h) => el("button", { type: "button", class: "head-toggle",
      "aria-pressed": shown.has(h) ? "true" : "false", dataset: { head: h }, onclick: (ev) => {
        if (shown.has(h)) shown.delete(h); else shown.add(h);
        paintToggle(ev.currentTarget, shown.has(h));
        draw();
      } }, el("span", { class: "swatch", "aria-hidden": "true", style: `display:inline-block;width:14px;` +
      `height:4px;vertical-align:middle;margin-right:6px;background:${headColor(h)}` }), `head ${h + 1}`)));
    toggles.querySelectorAll("button").forEach((b, h) => paintToggle(b, shown.has(h)));
    const querySel = select(data[0].q_tokens.map((t, i) => [i, `${i}: ${tokenLabel(t)}`]), q, (v) => {
      q = Number(v); draw(); }, { id: "heads-query" });
    const [a0, b0] = [0, Math.min(1, nHeads - 1)];
    const selA = select([...Array(nHeads).keys()].map((h) => [h, `head ${h + 1}`]), a0, () => drawPair(),
      { id: "heads-a" });
    const selB = select([...Array(nHeads).keys()].map((h) => [h, `head ${h + 1}`]), b0, () => drawPair(),
      { id: "heads-b" });
    inner.replaceChildren(el("p", { class: "help" }, "Each head's weights from one query token: a line to each " +
      "key, as strong as the weight, in the head's colour (as BertViz's head view draws them). Heads that agree " +
      "draw on top of each other; heads that split the work fan out to different keys."),
    el("div", { class: "controls" }, el("label", {}, "query token ", querySel)), toggles, weightKey(), overlay,
    el("h4", {}, "Two heads side by side"),
    el("div", { class: "controls" }, el("label", {}, "left ", selA), el("label", {}, "right ", selB)), pairBox);

    function draw() {
      const heads = [...shown].sort((a, b) => a - b);
      if (!heads.length) { overlay.replaceChildren(el("p", { class: "help" }, "Every head is off: press one above.")); }
      else {
        const says = heads.map((h) => strongest(data, h, q)).join("; ");
        overlay.replaceChildren(lineView(data, heads, { query: q, width: width(), id: "heads-lines",
          label: `layer ${body.layer + 1}, query “${tokenLabel(data[0].q_tokens[q])}”: ${says}` }),
        el("p", { class: "help", id: "heads-says" }, `Strongest key per head: ${says}.`));
      }
      drawPair();
    }
    function drawPair() {
      const half = Math.max(300, Math.min(420, (details.clientWidth - 48) / 2));
      pairBox.replaceChildren(...[Number(selA.value), Number(selB.value)].map((h, k) => el("div", {
        class: "head-side", id: k ? "heads-right" : "heads-left" },
      el("h5", {}, el("span", { class: "swatch", "aria-hidden": "true", style: `display:inline-block;width:14px;` +
        `height:4px;vertical-align:middle;margin-right:6px;background:${headColor(h)}` }),
      `layer ${body.layer + 1}, head ${h + 1}`),
      lineView(data, [h], { query: q, width: half, id: k ? "heads-lines-right" : "heads-lines-left",
        label: `head ${h + 1}, query “${tokenLabel(data[0].q_tokens[q])}”: ${strongest(data, h, q)}` }),
      el("p", { class: "help" }, strongest(data, h, q)))));
    }
    draw();
    details.dataset.ready = "1";
  }
  return details;
}
