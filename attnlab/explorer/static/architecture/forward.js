// A forward pass the learner watches: the learner's sentence through the selected model, stage by stage, with the
// real values of one forward (POST /api/architecture/forward). Three levels: the whole model, one block, one head;
// one button moves between them. Each stage: its shape, a picture of its values with a legend, the equation in the
// seeds' notation and the path:line of attnlab that computes it. Prev / Next (or the arrow keys on the stage
// strip) walk the stages in the order the model runs them.
import { api, bars, color, el, fmt, linkStyle, notice, svg, tokenLabel } from "../util.js";
import { positionChips } from "../common.js";

const TOUR_SENTENCE = "the cat sat on the mat";  // the guided tour's sentence (tour.js)
const LEVELS = [["model", "Whole model"], ["block", "One block"], ["head", "One head"]];

// diverging blue - white - orange for signed values (colour-blind safe: no red/green); |v| / peak in [0, 1]
function diverging(v, peak) {
  if (v === null || v === undefined) return "#d9d9d9";
  const t = Math.max(-1, Math.min(1, v / (peak || 1)));
  const end = t < 0 ? [0, 114, 178] : [230, 97, 0];
  const a = Math.abs(t);
  return `rgb(${end.map((c) => Math.round(255 + (c - 255) * a)).join(",")})`;
}

function peakOf(values) {
  let p = 0;
  for (const row of values) for (const v of row) if (v !== null && Math.abs(v) > p) p = Math.abs(v);
  return p || 1;
}

function signedLegend(peak, unit) {
  const W = 220, stops = [-1, -0.5, 0, 0.5, 1];
  const id = `fw-lg-${Math.random().toString(36).slice(2, 8)}`;
  return el("div", { class: "legend-box" }, el("span", { class: "legend-title" }, `colour: ${unit}`),
    svg("svg", { width: W + 60, height: 34, class: "legend", role: "img",
      "aria-label": `colour scale: ${unit}, from ${fmt(-peak, 3)} (blue) through 0 (white) to ${fmt(peak, 3)} (orange)` },
    svg("defs", {}, svg("linearGradient", { id }, stops.map((t) => svg("stop", { offset: `${(t + 1) * 50}%`,
      "stop-color": diverging(t, 1) })))),
    svg("rect", { x: 30, y: 2, width: W, height: 12, fill: `url(#${id})`, stroke: "#999" }),
    stops.map((t) => svg("text", { x: 30 + (t + 1) / 2 * W, y: 27, "font-size": 10, "text-anchor": "middle" },
      fmt(t * peak, 3)))));
}

// a sequential (viridis) legend from `low` to `peak`, three labelled values
function weightLegend(peak, unit, masked, low = 0) {
  const W = 220, stops = [0, 0.25, 0.5, 0.75, 1];
  const id = `fw-lg-${Math.random().toString(36).slice(2, 8)}`;
  return el("div", { class: "legend-box" }, el("span", { class: "legend-title" }, `colour: ${unit}`),
    svg("svg", { width: W + 90, height: 34, class: "legend", role: "img",
      "aria-label": `colour scale: ${unit}, from ${fmt(low, 3)} (dark) to ${fmt(peak, 3)} (bright)` },
    svg("defs", {}, svg("linearGradient", { id }, stops.map((t) => svg("stop", { offset: `${t * 100}%`,
      "stop-color": color(t) })))),
    svg("rect", { x: 0, y: 2, width: W, height: 12, fill: `url(#${id})`, stroke: "#999" }),
    [0, 0.5, 1].map((t) => svg("text", { x: Math.min(W - 2, Math.max(2, t * W)), y: 27, "font-size": 10,
      "text-anchor": t === 0 ? "start" : t === 1 ? "end" : "middle" }, fmt(low + t * (peak - low), 3))),
    masked ? [svg("rect", { x: W + 10, y: 2, width: 12, height: 12, fill: "#d9d9d9", stroke: "#aaa" }),
      svg("text", { x: W + 26, y: 12, "font-size": 10 }, "masked")] : []));
}

// A matrix as an SVG grid: rows are tokens, columns features, layers or keys; `fill(v)` colours a cell. Column
// labels that are tokens (`tokenCols`) are written slanted, so a word fits above its narrow column.
function grid(values, rows, cols, fill, { cell = 18, label, colTitle, tokenCols = false, mark = -1 } = {}) {
  const left = 86, top = tokenCols ? 62 : 30;
  const W = Math.max(left + cols.length * cell + 4, left + (colTitle || "").length * 6.5 + 10);
  const H = top + rows.length * cell + 4;
  const root = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "fw-grid", role: "img",
    "aria-label": label });
  root.append(svg("text", { x: left, y: 10, "font-size": 11, fill: "#5b6475" }, colTitle || ""));
  cols.forEach((c, j) => {
    const x = left + j * cell + cell / 2;
    if (tokenCols) {
      root.append(svg("text", { x: 0, y: 0, "font-size": 11, "font-family": "ui-monospace, monospace",
        transform: `translate(${x + 3},${top - 5}) rotate(-55)` }, tokenLabel(String(c)).slice(0, 8)));
    } else if (cols.length <= 24 || j % 2 === 0) {
      root.append(svg("text", { x, y: top - 5, "font-size": 10, "text-anchor": "middle", fill: "#5b6475" },
        String(c)));
    }
  });
  rows.forEach((r, i) => {
    root.append(svg("text", { x: left - 6, y: top + i * cell + cell * 0.7, "font-size": 12, "text-anchor": "end",
      "font-family": "ui-monospace, monospace" }, tokenLabel(r).slice(0, 10)));
    values[i].forEach((v, j) => {
      root.append(svg("rect", { x: left + j * cell, y: top + i * cell, width: cell - 1, height: cell - 1,
        fill: fill(v), class: v === null ? "masked" : null },
      svg("title", {}, `${tokenLabel(r)}, ${tokenCols ? tokenLabel(String(cols[j])) : cols[j]}: ` +
        `${v === null ? "masked" : fmt(v, 4)}`)));
    });
  });
  if (mark >= 0 && mark < rows.length) {  // the followed token's row, outlined
    root.append(svg("rect", { x: left - 1, y: top + mark * cell - 1, width: cols.length * cell + 1, height: cell + 1,
      fill: "none", stroke: "#1d2433", "stroke-width": 2, class: "fw-mark" }));
  }
  return root;
}

// The followed token's row as numbers, so one row is read without opening the table.
function rowLine(p, mark, what) {
  if (mark < 0 || mark >= p.rows.length) return "";
  const row = p.values[mark];
  return el("p", { class: "fw-row", dataset: { row: mark } }, `${what} “${tokenLabel(p.rows[mark])}”: `,
    row.flatMap((v, j) => [el("span", { class: "fw-num" }, p.kind === "attention" ?
      `${tokenLabel(String(p.cols[j]))} ${v === null ? "−∞" : fmt(v, 3)}` : fmt(v, 3)), " "]));
}

// The numbers behind a picture, for reading and for screen readers (folded by default).
function numbers(values, rows, cols, caption) {
  return el("details", { class: "fw-numbers" }, el("summary", {}, "The numbers"),
    el("div", { class: "fw-scroll" }, el("table", {}, el("caption", {}, caption),
      el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "token"), cols.map((c) => el("th", { scope: "col" },
        tokenLabel(String(c)))))),
      el("tbody", {}, values.map((row, i) => el("tr", {}, el("th", { scope: "row" }, tokenLabel(rows[i])),
        row.map((v) => el("td", {}, v === null ? "−∞" : fmt(v, 4)))))))));
}

function matrixPicture(p, stageTitle, mark) {
  const cols = p.cols;
  const label = `${stageTitle}: ${p.rows.length} tokens × ${cols.length} columns (${p.col_title}), ${p.unit}`;
  let fill, scale;
  if (p.scale === "sequential") {  // e.g. log10 sizes: dark = the smallest shown, bright = the largest
    let lo = Infinity, hi = -Infinity;
    for (const row of p.values) for (const v of row) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    fill = (v) => color((v - lo) / ((hi - lo) || 1));
    scale = weightLegend(hi, p.unit, false, lo);
  } else {
    const peak = peakOf(p.values);
    fill = (v) => diverging(v, peak);
    scale = signedLegend(peak, p.unit);
  }
  return [el("div", { class: "fw-scroll" }, grid(p.values, p.rows, cols, fill,
    { label, colTitle: `→ ${p.col_title}`, cell: cols.length <= 16 ? 22 : 18, mark })),
    rowLine(p, mark, "row"), scale, p.note ? el("p", { class: "help fw-note" }, `Shown: ${p.note}.`) : "",
    numbers(p.values, p.rows, cols, `${stageTitle} (${p.unit})`)];
}

function attentionPicture(p, stageTitle, mark) {
  const masked = p.values.some((row) => row.some((v) => v === null));
  const weights = p.unit === "attention weight";
  const peak = weights ? 1 : peakOf(p.values);
  const fill = weights ? (v) => (v === null ? "#d9d9d9" : color(v)) : (v) => diverging(v, peak);
  const label = `${stageTitle}: ${p.rows.length} queries (rows) × ${p.cols.length} keys (columns), ${p.unit}` +
    (masked ? "; masked cells grey" : "");
  const cell = Math.max(14, Math.min(30, Math.floor(320 / Math.max(p.cols.length, 1))));  // small maps drawn larger
  return [el("div", { class: "fw-scroll" }, grid(p.values, p.rows, p.cols, fill,
    { label, colTitle: "→ keys (the tokens read)", tokenCols: true, cell, mark })),
  rowLine(p, mark, "query"),
  el("p", { class: "help fw-axes" }, "rows: queries (the token reading); columns: keys (the token read)"),
  weights ? weightLegend(1, p.unit, masked) : signedLegend(peak, p.unit + (masked ? " (grey: masked, −∞)" : "")),
  p.note ? el("p", { class: "help fw-note" }, `Shown: ${p.note}.`) : "",
  numbers(p.values, p.rows, p.cols, `${stageTitle} (${p.unit})`)];
}

function tokensPicture(p) {
  return el("ol", { class: "fw-tokens", "aria-label": "tokens and their ids" }, p.tokens.map((t, i) =>
    el("li", { class: "fw-token" }, el("span", { class: "chip" }, tokenLabel(t)),
      el("span", { class: "fw-id" }, `id ${p.ids[i]}`))));
}

function barsPicture(p) {
  const items = p.labels.map((l, i) => ({ label: tokenLabel(l), value: p.values[i] }));
  return [el("p", { class: "help fw-axes" }, `bars: ${p.unit} of each entry (${p.note || "top entries"})`),
    el("div", { class: "fw-scroll" }, bars(items, { width: 420, labelWidth: 110 })),
    el("p", { class: "help" }, p.unit === "probability" ? "Probabilities are between 0 and 1; all of them sum to 1." :
      "Logits are unbounded scores; only their differences matter to softmax.")];
}

function answerPicture(p) {
  return el("p", { class: "fw-answer" }, `${p.what}: `, el("b", { class: "chip selected" }, tokenLabel(p.token)),
    ` with probability ${fmt(p.probability, 4)}`);
}

function imagePicture(p) {
  const cell = 8, n = p.size, W = n * cell;
  const root = svg("svg", { width: W, height: W, viewBox: `0 0 ${W} ${W}`, role: "img", class: "fw-image",
    "aria-label": `the input image, ${n} × ${n} pixels, cut into ${p.patch} × ${p.patch} patches` });
  p.grey.forEach((row, i) => row.forEach((v, j) => {
    const g = Math.round(255 - v * 255);
    root.append(svg("rect", { x: j * cell, y: i * cell, width: cell, height: cell, fill: `rgb(${g},${g},${g})` }));
  }));
  for (let k = 0; k <= n; k += p.patch) {
    root.append(svg("line", { x1: k * cell, y1: 0, x2: k * cell, y2: W, stroke: "#e66100", "stroke-width": 1.5 }),
      svg("line", { x1: 0, y1: k * cell, x2: W, y2: k * cell, stroke: "#e66100", "stroke-width": 1.5 }));
  }
  return [root, el("p", { class: "help" }, p.note)];
}

function headsPicture(p, onHead, current) {
  // query heads in groups under the K/V head each group shares (one group per head when not grouped)
  return [el("div", { class: "fw-groups" }, p.groups.map((g, k) => el("div", { class: "fw-group" },
    el("span", { class: "fw-kv" }, p.kv_heads === p.n_heads ? `K, V of head ${k + 1}` : `K/V head ${k + 1}`),
    el("div", { class: "fw-qheads" }, g.map((j) => el("button", { type: "button",
      class: "chip" + (j === current ? " selected" : ""), dataset: { head: j },
      "aria-label": `open head ${j + 1}`, onclick: () => onHead(j) }, `Q ${j + 1}`)))))),
  el("p", { class: "help" }, `${p.note}; d_head = ${p.d_head}. The matrices: `,
    p.matrices.map(([name, rows, cols], i) => [i ? ", " : "", el("code", {}, `${name} ${rows} × ${cols}`)]), ".")];
}

function thumbsPicture(p, onHead, current) {
  const out = el("div", { class: "fw-thumbs" });
  p.maps.forEach((m, j) => {
    const cell = Math.max(3, Math.floor(72 / Math.max(m.rows.length, m.cols.length)));
    const W = m.cols.length * cell, H = m.rows.length * cell;
    const pic = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, "aria-hidden": "true" });
    m.values.forEach((row, i) => row.forEach((v, k) => pic.append(svg("rect", { x: k * cell, y: i * cell,
      width: cell, height: cell, fill: v === null ? "#d9d9d9" : color(v) }))));
    out.append(el("button", { type: "button", class: "fw-thumb" + (j === current ? " selected" : ""),
      dataset: { head: j }, "aria-label": `head ${j + 1}: open its arithmetic`, onclick: () => onHead(j) },
    pic, el("span", {}, `head ${j + 1}`)));
  });
  return [out, weightLegend(1, p.unit, p.maps.some((m) => m.values.some((r) => r.some((v) => v === null)))),
    el("p", { class: "help" }, p.note + ". Click a head to open it.")];
}

function beforeAfterPicture(p, title) {
  const peak = Math.max(peakOf(p.values), peakOf(p.after));
  const fill = (v) => diverging(v, peak);
  return [el("div", { class: "row" },
    [p.values, p.after].map((values, k) => el("figure", {}, el("figcaption", {}, p.captions[k]),
      el("div", { class: "fw-scroll" }, grid(values, p.rows, p.cols, fill,
        { label: `${title}: ${p.captions[k]}`, colTitle: `→ ${p.col_title}` }))))),
  signedLegend(peak, p.unit), p.note ? el("p", { class: "help fw-note" }, `Shown: ${p.note}.`) : ""];
}

function picture(stage, actions) {
  const mark = stage.picture && stage.picture.rows ? Math.min(actions.token, stage.picture.rows.length - 1) : -1;
  const p = stage.picture;
  if (!p) return "";
  switch (p.kind) {
    case "matrix": return matrixPicture(p, stage.title, mark);
    case "attention": return attentionPicture(p, stage.title, mark);
    case "tokens": return tokensPicture(p);
    case "bars": return barsPicture(p);
    case "answer": return answerPicture(p);
    case "image": return imagePicture(p);
    case "heads": return headsPicture(p, actions.openHead, actions.head);
    case "heads_attention": return thumbsPicture(p, actions.openHead, actions.head);
    case "before_after": return beforeAfterPicture(p, stage.title);
    default: return "";
  }
}

export function forwardPass(ctx) {
  linkStyle("/static/architecture/forward.css");
  const box = el("section", { class: "panel", id: "forward", "aria-labelledby": "forward-title" });
  const state = { text: ctx.state.text || TOUR_SENTENCE, level: "model", layer: 0, head: 0, part: null, index: 0,
    data: null, refocus: null, asked: 0, token: null };
  const input = el("input", { type: "text", id: "fw-text", value: state.text,
    "aria-label": "sentence to run through the model" });
  const body = el("div", { id: "fw-body" });  // announced: the status line while it runs, the focused stage after
  box.append(el("h2", { id: "forward-title" }, "A forward pass, stage by stage"),
    el("p", { class: "help" }, "Your sentence flows through the selected model. Every picture shows the real " +
      "numbers of one forward; each stage names its equation and the line of attnlab that computes it. " +
      "Zoom from the whole model into one block and one head; Next and Previous (or ← → on the stages) walk " +
      "the steps in the order the model runs them."));
  if (ctx.info && ctx.info.topology === "vit") {
    box.append(el("p", { class: "help" }, "A vision transformer reads an image: MNIST sample 0 is the input."));
  } else {
    const run = () => { state.text = input.value; state.token = null; load(); };  // a new text: follow its last token
    box.append(el("div", { class: "controls" }, el("label", { for: "fw-text" }, "sentence "), input,
      el("button", { type: "button", id: "fw-run", class: "primary", onclick: run }, "Run")));
    input.addEventListener("keydown", (e) => { if (e.key === "Enter") run(); });
  }
  box.append(body);

  async function load() {
    box.dataset.ready = "0";
    // progress without wiping what is drawn: a later forward (another block or head) keeps the stages in view
    const busy = el("p", { class: "help", id: "fw-busy", role: "status" },
      `Running the forward pass${state.data ? ` for block ${state.layer + 1}, head ${state.head + 1}` : ""}…`);
    if (state.data) { body.setAttribute("aria-busy", "true"); body.prepend(busy); } else body.replaceChildren(busy);
    const mine = ++state.asked;  // a later request wins: an earlier answer arriving after it is dropped
    try {
      const req = { model: ctx.state.model, text: state.text, layer: state.layer, head: state.head };
      if (state.part) req.part = state.part;
      const data = await api("/api/architecture/forward", req);
      if (mine !== state.asked) return;
      if (!data || !Array.isArray(data.stages)) {  // a page without the server (the notebook view) holds none
        throw new Error("The forward pass is computed live by the explorer's server: run `attnlab explore` " +
          "to watch one.");
      }
      state.data = data;
      state.part = state.data.part;
      draw();
      if (state.refocus) { const f = body.querySelector(state.refocus); if (f) f.focus(); state.refocus = null; }
    } catch (e) {
      if (mine !== state.asked) return;
      body.replaceChildren(notice(e.message, "error"));
    }
    body.removeAttribute("aria-busy");
    box.dataset.ready = "1";
  }

  const stagesAt = () => state.data.stages.filter((s) => s.level === state.level);
  const setLevel = (level, index = 0) => { state.level = level; state.index = index; draw(); focusStage(); };
  const openHead = (j) => {
    if (j === state.head) { setLevel("head"); return; }
    state.head = j; state.level = "head"; state.index = 0; state.refocus = ".fw-strip button[aria-current='step']";
    load();
  };
  const reload = (selector) => { state.refocus = selector; load(); };
  // after a redraw the keyboard focus goes back to the control that was used (`selector`), else to the stage
  function focusStage(selector) {
    const b = (selector && body.querySelector(`${selector}:not([disabled])`)) ||
      body.querySelector(".fw-strip button[aria-current='step']");
    if (b) b.focus();
  }

  function draw() {
    const d = state.data;
    const stages = stagesAt();
    state.index = Math.max(0, Math.min(stages.length - 1, state.index));
    const stage = stages[state.index];
    const blockName = d.parts.length > 1 ? `${d.part} block ${d.layer + 1}` : `block ${d.layer + 1}`;
    const levelLabel = { model: "Whole model", block: `Block ${d.layer + 1}`, head: `Head ${d.head + 1}` };
    const levels = el("div", { class: "fw-levels", role: "group", "aria-label": "level of detail" },
      LEVELS.map(([key]) => el("button", { type: "button", id: `fw-level-${key}`,
        "aria-pressed": String(state.level === key), onclick: () => { setLevel(key); focusStage(`#fw-level-${key}`); } },
      levelLabel[key])));
    const layerSel = el("select", { id: "fw-layer", "aria-label": "block to open" },
      Array.from({ length: d.n_layers }, (_, i) => el("option", { value: i }, `block ${i + 1} of ${d.n_layers}`)));
    layerSel.value = String(d.layer);
    layerSel.addEventListener("change", () => { state.layer = Number(layerSel.value); reload("#fw-layer"); });
    const headSel = el("select", { id: "fw-head", "aria-label": "head to open" },
      Array.from({ length: d.n_heads }, (_, j) => el("option", { value: j }, `head ${j + 1} of ${d.n_heads}`)));
    headSel.value = String(d.head);
    headSel.addEventListener("change", () => { state.head = Number(headSel.value); reload("#fw-head"); });
    const pickers = [el("label", {}, "block ", layerSel), el("label", {}, "head ", headSel)];
    if (d.parts.length > 1) {
      const partSel = el("select", { id: "fw-part", "aria-label": "stack to open" },
        d.parts.map((p) => el("option", { value: p }, p)));
      partSel.value = d.part;
      partSel.addEventListener("change", () => { state.part = partSel.value; state.layer = 0; reload("#fw-part"); });
      pickers.unshift(el("label", {}, "stack ", partSel));
    }
    const crumbs = el("p", { class: "fw-crumbs", id: "fw-path" }, el("b", {}, d.model), " › ",
      state.level === "model" ? "every stage" : blockName, state.level === "head" ? ` › head ${d.head + 1}` : "",
      d.topology === "vit" ? ` · the image as ${d.tokens.length} tokens ([CLS] + patches)` :
        d.parts.length > 1 ? ` · the source as ${d.source_tokens.length} tokens, the target as ${d.tokens.length}` :
          ` · the sentence as ${d.tokens.length} tokens`);
    const strip = el("ol", { class: "fw-strip", "aria-label": `stages of the ${state.level} level` },
      stages.map((s, i) => el("li", {}, el("button", { type: "button", dataset: { stage: s.id },
        "aria-current": i === state.index ? "step" : null, tabindex: i === state.index ? "0" : "-1",
        onclick: () => { state.index = i; draw(); focusStage(); } }, `${i + 1}. ${s.title}`,
      el("span", { class: "fw-strip-shape" }, `(${s.shape.join(", ")})`)))));
    strip.addEventListener("keydown", (ev) => {
      const moves = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };
      if (moves[ev.key] === undefined && ev.key !== "Home" && ev.key !== "End") return;
      ev.preventDefault();
      state.index = ev.key === "Home" ? 0 : ev.key === "End" ? stages.length - 1 :
        Math.max(0, Math.min(stages.length - 1, state.index + moves[ev.key]));
      draw(); focusStage();
    });
    const shown = d.tokens.slice(0, 24);  // the rows a picture shows (forward_pass.py's T_SHOWN)
    if (state.token === null || state.token >= shown.length) state.token = shown.length - 1;
    const follow = el("div", { class: "chips", id: "fw-follow", "aria-label": "token to follow through the stages" });
    positionChips(follow, shown, state.token, (i) => {  // redrawn: the focus goes back to the chip picked
      state.token = i; draw();
      const b = body.querySelector(`#fw-follow button[data-index="${i}"]`);
      if (b) b.focus();
    }, "follow token");
    const actions = { openHead, head: d.head, token: state.token };
    const zoom = [];
    if (stage.id.endsWith("blocks")) {
      const part = stage.id.includes(".") ? stage.id.split(".")[0] : d.part;  // an encoder-decoder's stack
      zoom.push(el("button", { type: "button", id: "fw-open-block", class: "primary", onclick: () => {
        if (part === d.part) { setLevel("block"); return; }
        Object.assign(state, { part, layer: 0, level: "block", index: 0 });
        reload(".fw-strip button[aria-current='step']");
      } }, part === d.part ? `Open ${blockName} ›` : `Open ${part} block 1 ›`));
    }
    if (stage.id.endsWith("weights") && state.level === "block") {
      zoom.push(el("button", { type: "button", id: "fw-open-head", class: "primary",
        onclick: () => setLevel("head") }, `Open head ${d.head + 1} ›`));
    }
    if (stage.id === "attn.head_out" && d.topology === "decoder") {  // from watching to changing
      zoom.push(el("button", { type: "button", id: "fw-ablate",
        onclick: () => ctx.navigate({ tab: "experiments", off: `${d.layer}.${d.head}`, text: state.text }) },
      `Switch head ${d.head + 1} of block ${d.layer + 1} off (Experiments) ›`));
    }
    const card = el("article", { class: "fw-stage", id: "fw-stage", dataset: { stage: stage.id, level: state.level },
      "aria-labelledby": "fw-stage-title" },
    el("h3", { id: "fw-stage-title" }, `${state.index + 1} of ${stages.length}. ${stage.title}`),
    el("p", { class: "fw-shape" }, "shape ", el("code", { dataset: { shape: stage.shape.join(",") } },
      `(${stage.shape.join(", ")})`), ` ${stage.dims}`),
    el("div", { class: "fw-eq" }, el("code", { class: "fw-equation" }, stage.equation),
      el("span", { class: "fw-code" }, "computed at ", el("code", {}, stage.code))),
    el("p", {}, stage.text), picture(stage, actions), zoom.length ? el("div", { class: "controls" }, zoom) : "",
    el("div", { class: "controls fw-nav" },
      el("button", { type: "button", id: "fw-prev", disabled: state.index === 0,
        onclick: () => { state.index -= 1; draw(); focusStage("#fw-prev"); } }, "‹ Previous"),
      el("button", { type: "button", id: "fw-next", disabled: state.index === stages.length - 1,
        onclick: () => { state.index += 1; draw(); focusStage("#fw-next"); } }, "Next ›")));
    body.replaceChildren(el("div", { class: "fw-top" }, levels, el("div", { class: "controls" }, pickers)), crumbs,
      el("div", { class: "fw-follow" }, el("span", { class: "help" }, "follow a token (its row is outlined):"),
        follow), strip, card);
  }

  // Another view (the block diagram) opens a stage here: level "model" | "block", the stage's id (or its end),
  // the stack of an encoder-decoder. A stage of the other stack asks for a new forward first.
  box.showStage = async (level, stageId, part = null) => {
    if (!state.data) return;
    if (part && state.data.parts.length > 1 && part !== state.data.part && level !== "model") {
      Object.assign(state, { part, layer: 0 });
      await load();
    }
    const stages = state.data.stages.filter((st) => st.level === level);
    const ids = [part ? `${part}.${stageId}` : null, stageId, stageId === "logits" ? "output" : null];
    let i = -1;
    for (const id of ids) if (id && i < 0) i = stages.findIndex((st) => st.id === id);
    if (i < 0) i = stages.findIndex((st) => st.id.endsWith(`.${stageId}`));
    state.level = level; state.index = Math.max(0, i);
    draw();
    box.scrollIntoView({ block: "start" });
    focusStage();
  };
  load();
  return box;
}
