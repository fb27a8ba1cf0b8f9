// Experiments · Attention, finished: one token through one attention layer, head by head, to the residual add.
import { api, color, el, fmt, legend, notice, select, svg, tokenLabel } from "../util.js";
import { positionChips } from "../common.js";
import { diverge, divergeLegend, strip, tryThis } from "./draw.js";

// 1. Attention, finished -----------------------------------------------------------------------------------
export async function flowSection(box, ctx) {
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
    positionChips(chips, r.tokens, r.token, (i) => { local.token = i; draw(); }, "follow token");
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
    el("table", {}, el("thead", {}, el("tr", {}, ["head", "largest weight on", "‖Σ w·V‖", "‖share‖", ...ch]
      .map((h) => el("th", {}, h)))), el("tbody", {}, rows,
      r.bias ? line("+ b_O", r.bias, null, "flow-bias") : "",
      line("= attention output", r.output, r.output_norm, "flow-output"),
      line("x (residual in)", r.residual_in, r.residual_in_norm, "flow-x"),
      line("after the sub-layer", r.residual_out, r.residual_out_norm, "flow-after")))),
  el("p", { class: "help" }, "Why the heads add: W_O times the concatenated heads equals the sum over heads of " +
    "W_O's slice for that head times its Σ w·V. The attention output is a sum of one vector per head (+ b_O)."));
}

function mixingPicture() {
  // a tokens x channels grid twice: attention moves along a row (across tokens), the FFN along a column. Two
  // drawings side by side that wrap under each other on a phone, never scaled down (their text stays 12-13 px)
  const n = 5, c = 4, s = 24, gy = 34, W = 230, H = gy + c * s + 22;
  const grid = (title, arrows) => svg("g", {}, svg("text", { x: 0, y: 16, "font-size": 13, "font-weight": 600 },
    title), [...Array(c).keys()].flatMap((i) => [...Array(n).keys()].map((j) => svg("rect", {
    x: j * s, y: gy + i * s, width: s - 3, height: s - 3, fill: j === 2 ? "#ffe0c2" : "#eef0f3",
    stroke: "#98a2b3" }))), arrows(0),
  svg("text", { x: 0, y: gy + c * s + 16, "font-size": 12, fill: "#5b6475" }, "columns: tokens · rows: channels"));
  // arcs above row 1 from every other token's cell into the highlighted token's cell
  const att = (ox) => [0, 1, 3, 4].map((j) => {
    const x1 = ox + j * s + 10, x2 = ox + 2 * s + (j < 2 ? 4 : 16), y = gy + s + 4, lift = 8 + 5 * Math.abs(j - 2);
    return svg("path", { d: `M ${x1} ${y} C ${x1} ${y - lift}, ${x2} ${y - lift}, ${x2} ${y}`, fill: "none",
      stroke: "#0072b2", "stroke-width": 2, "marker-end": "url(#arrow-att)" });
  });
  // arcs right of column 2 from every other channel's cell into channel 2 of the same token
  const ffn = (ox) => [0, 1, 3].map((i) => {
    const x = ox + 2 * s + 20, y1 = gy + i * s + 10, y2 = gy + 2 * s + (i < 2 ? 4 : 16), bulge = 8 + 6 * Math.abs(i - 2);
    return svg("path", { d: `M ${x} ${y1} C ${x + bulge} ${y1}, ${x + bulge} ${y2}, ${x} ${y2}`, fill: "none",
      stroke: "#1a9641", "stroke-width": 2, "marker-end": "url(#arrow-ffn)" });
  });
  const arrow = (id) => svg("defs", {}, svg("marker", { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6,
    markerHeight: 6, orient: "auto-start-reverse" }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#333" })));
  const drawing = (id, label, title, arrows) => svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, id,
    role: "img", "aria-label": label }, arrow(`arrow-${id.slice(7)}`), grid(title, arrows));
  const pic = el("div", { class: "mixing-pair", id: "mixing" },
    drawing("mixing-att", "attention moves information across tokens within the channels",
      "attention: across tokens", att),
    drawing("mixing-ffn", "the feed-forward moves information across channels within one token",
      "feed-forward: across channels", ffn));
  return el("div", { class: "panel", id: "mixing-box" }, pic, el("p", { class: "help" }, "Attention mixes " +
    "tokens: the highlighted token receives a weighted sum of the others' values. The feed-forward mixes " +
    "channels: each token is rewritten on its own, its channels combined through W_1, the nonlinearity and W_2."));
}
