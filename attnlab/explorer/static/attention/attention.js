// Tab Attention: one head of one layer for any sentence. Click a query token to see its raw scores
// Q.K/sqrt(d_k) and softmax weights as bars, the N x N heatmap with its row highlighted, and the dot
// product of a chosen (query, key) pair worked out from the real Q and K vectors. Below: the lessons
// (database analogy, the maths from x W_Q on, why several heads, why sqrt(d_k), RNN/CNN/attention).
import { api, bars, el, fmt, focusKey, heatmap, legend, notice, refocus, select, tokenLabel, color } from "../util.js";
import { chipRow, needs, sentenceBox } from "../common.js";
import { lessons, readingTokens, toyHints } from "./lessons.js";
import { compareHeads } from "./heads.js";

const GRIDS = new Map();  // sentence -> thumbnails answer (insertion order: the oldest goes first)

export async function render(root, ctx) {
  const { state, info } = ctx;
  root.append(el("h2", {}, "Attention"),
    el("p", { class: "help" }, "Each head owns its W_Q, W_K, W_V. A query token scores every key with " +
      "Q·K/√d_k; the softmax of a row gives the weights with which the head mixes the values. " +
      "Click a token (or Tab to the row and use the arrow keys) to take its point of view."));
  if (!needs(root, ctx, ["encoder", "decoder", "encoder-decoder"], "Attention over text needs a text model.")) return;
  root.append(sentenceBox(ctx));
  if (info.known_words) root.append(el("p", { class: "help", id: "known-words" }, "The toy knows these words " +
    "(any other becomes [UNK], a zero vector): " + info.known_words.join(", ")));
  if (info.illustration) root.append(toyHints(ctx));
  const parts = info.parts;
  const part = parts.includes(state.part) ? state.part : parts[0];
  const nLayers = part === "encoder" ? info.n_layers : (parts.length > 1 ? info.decoder_layers : info.n_layers);
  const layer = Math.min(state.layer || 0, nLayers - 1), head = Math.min(state.head || 0, info.n_heads - 1);
  const controls = el("div", { class: "controls" });
  if (parts.length > 1) controls.append(el("label", {}, "attention ",
    select(parts.map((p) => [p, p === "cross" ? "cross (decoder → encoder)" : p]), part,
      (v) => ctx.setState({ part: v, token: undefined, key: undefined }), { id: "part" })));
  controls.append(
    el("label", {}, "layer ", select([...Array(nLayers).keys()].map((i) => [i, `layer ${i + 1}`]), layer,
      (v) => ctx.setState({ layer: Number(v) }), { id: "layer" })),
    el("label", {}, "head ", select([...Array(info.n_heads).keys()].map((i) => [i, `head ${i + 1}`]), head,
      (v) => ctx.setState({ head: Number(v) }), { id: "head" })));
  if (parts.length > 1) {
    const target = el("input", { type: "text", id: "target", value: state.target || "",
      placeholder: "empty: the model's own greedy translation", "aria-label": "target text" });
    target.addEventListener("change", () => ctx.setState({ target: target.value, token: undefined, key: undefined }));
    controls.append(el("label", {}, "target ", target));
  }
  const hide = el("input", { type: "checkbox", id: "hide-special" });
  hide.checked = state.hide === "1";
  const hideLabel = el("label", { id: "hide-special-label" }, hide, " hide [CLS]/[SEP] and other special tokens");
  controls.append(hideLabel);
  root.append(controls);

  const body = { model: state.model, text: state.text || "", layer, head, part, target: state.target || null };
  const data = await api("/api/attention", body);
  // only where the tokenizer added special tokens ([CLS], [SEP], <s>): SmolLM2 or a character model has none
  if (![...(data.q_special || []), ...(data.k_special || [])].some(Boolean)) { hideLabel.remove(); hide.checked = false; }
  if (root.isConnected) document.getElementById("tab").dataset.n = data.q_tokens.length;
  if (data.head_name) root.append(notice(`Head ${head + 1} of the toy was set by hand to read “${data.head_name}”.`,
    "illustration"));
  if (info.truncation && data.k_tokens.length >= info.truncation) root.append(notice(`This model's tokenizer ` +
    `keeps only the first ${info.truncation} tokens: the rest of the text was cut before the model saw it.`, "warn"));
  if (data.causal) root.append(el("p", { class: "help", id: "causal-note" }, "Causal mask: a token sees only " +
    "itself and the tokens before it; the hatched cells (later tokens) get no weight."));
  if (part === "cross") root.append(el("p", { class: "help" }, "Cross-attention: rows are the target tokens " +
    "(the target, or the model's greedy translation), columns the source tokens the encoder read."));
  root.append(readingTokens(data, info));

  // which positions to show (specials hidden on request: display only, the weights are not renormalised;
  // done here in the page, from the numbers already fetched)
  let qIdx = [], kIdx = [];
  function computeShown() {
    qIdx = data.q_tokens.flatMap((_, i) => (hide.checked && data.q_special[i] ? [] : [i]));
    kIdx = data.k_tokens.flatMap((_, j) => (hide.checked && data.k_special[j] ? [] : [j]));
  }
  computeShown();
  let query = Number.isInteger(state.token) && state.token < data.q_tokens.length ? state.token : null;
  let key = Number.isInteger(state.key) && state.key < data.k_tokens.length ? state.key : null;
  if (query === null && data.q_tokens.length) {
    // nothing picked yet: start on the pair "The maths" below works out (query at position 1, the key it weights
    // most), so the bars, the Q·K panel and the maths all describe the same pair (the URL stays unchanged)
    query = Math.min(1, data.q_tokens.length - 1);
    if (key === null) {
      const w = data.weights[query];
      key = w.indexOf(Math.max(...w.filter((v) => v !== null)));
    }
  }

  // grid of every layer x head, fetched separately (one forward that records all layers)
  const gridBox = el("div", { class: "panel", id: "thumbs" }, el("h3", {}, "All layers × heads"), "loading…");
  const chips = el("div", { class: "chips", id: "chips", "aria-label": "query tokens" });
  const barsBox = el("div", { class: "panel scroll", id: "bars", tabindex: "0", role: "region", "aria-label": "scores and weights of the query" });
  const heat = el("canvas", { id: "heatmap" });
  const heatInfo = el("div", { id: "heat-readout", class: "help", "aria-live": "polite" },
    "hover a cell, or focus the heatmap and use the arrow keys");
  const heatLegend = el("div", { id: "heat-legend" });
  const pairBox = el("div", { class: "panel", id: "pair" });
  const zoomBox = el("div", { class: "panel zoom", id: "zoom" });
  const embBox = el("div", { class: "panel", id: "embeddings" });
  root.append(el("h3", {}, part === "cross" ? "Target tokens (queries)" : "Tokens — click one to query from it"),
    chips,
    el("div", { class: "row" },
      el("div", {}, el("h3", {}, "Query token: raw scores and weights"), barsBox),
      el("div", { class: "panel" }, el("h3", {}, "Attention heatmap (rows: queries, columns: keys)"), heat,
        heatLegend, heatInfo),
      zoomBox,
      gridBox),
    el("div", { class: "row" }, pairBox, embBox));
  root.append(compareHeads(body, info.n_heads, () => query));  // several heads overlaid, two side by side
  const lessonBox = el("div", { id: "lessons" });
  root.append(lessonBox);

  const selectQuery = (i) => { query = i; ctx.setState({ token: i }, { rerender: false }); update(); lessonUpdate(); };

  function drawChips() {
    const buttons = chipRow(chips, qIdx.map((i) => ({ index: i, token: data.q_tokens[i],
      piece: data.q_pieces && data.q_pieces[i], id: data.q_ids && data.q_ids[i],
      cls: data.q_special[i] ? "special" : "" })), query, selectQuery, { name: "query token" });
    if (chips.contains(document.activeElement) || chips.dataset.refocus === "1") {
      const b = buttons.find((x) => Number(x.dataset.index) === query);
      if (b) b.focus();
    }
    chips.dataset.refocus = "0";
    chips.addEventListener("click", () => { chips.dataset.refocus = "1"; }, { once: true, capture: true });
  }

  function drawBars() {
    if (query === null) { barsBox.replaceChildren(el("p", { class: "help" }, "Click a token chip above.")); return; }
    const raw = data.raw_scores[query], w = data.weights[query];
    const mk = (vals, attr) => kIdx.map((j) => ({ label: tokenLabel(data.k_tokens[j]), value: vals[j],
      attrs: { "data-key": j, [attr]: vals[j] === null ? "masked" : vals[j] } }));
    const pick = (i) => {
      key = kIdx[i]; ctx.setState({ key }, { rerender: false }); drawPair(); drawBars(); drawHeat(); lessonUpdate();
    };
    const sel = key === null ? -1 : kIdx.indexOf(key);
    const rowSum = w.reduce((a, b) => a + b, 0);
    const focused = focusKey(document.activeElement, barsBox);  // Enter on a bar redraws the bars: keep it
    barsBox.replaceChildren(
      el("div", { class: "help" }, `query “${tokenLabel(data.q_tokens[query])}” (position ${query}); ` +
        "click a bar (or focus it and press Enter) to work out that pair below"),
      el("h3", { title: "Q·K/√d_k for each key: any real number; bigger means a better match" },
        "raw scores Q·K/√d_k (unitless)"), el("div", { id: "raw-bars" }, bars(mk(raw, "data-raw-score"),
        { fill: "#9ecae9", onclick: pick, selected: sel })),
      el("h3", { title: "softmax of the raw scores: between 0 and 1, summing to 1 over the keys" },
        "softmax weights (0–1, sum 1)"), el("div", { id: "weight-bars" }, bars(mk(w, "data-weight"),
        { fill: "#0072b2", max: 1, onclick: pick, selected: sel })),
      el("div", { class: "help", id: "row-sum", dataset: { rowSum } }, `row sum = ${fmt(rowSum, 4)}` +
        " (each bar shows its weight to 4 decimals, 6 on hover; the sum adds the 6-decimal weights, so it can " +
        "miss 1 by a few millionths)" +
        (hide.checked ? " (over all keys, hidden specials included)" : "")));
    refocus(focused, barsBox);
  }

  function drawHeat() {
    const m = qIdx.map((i) => kIdx.map((j) => (data.raw_scores[i][j] === null ? null : data.weights[i][j])));
    const describe = (r, c) => {
      const i = qIdx[r], j = kIdx[c];
      return `${tokenLabel(data.q_tokens[i])} → ${tokenLabel(data.k_tokens[j])}: weight ${fmt(data.weights[i][j])}, ` +
        `raw score ${fmt(data.raw_scores[i][j])}`;
    };
    const readout = (r, c) => {
      const i = qIdx[r], j = kIdx[c];
      heatInfo.replaceChildren(`${tokenLabel(data.q_tokens[i])} → ${tokenLabel(data.k_tokens[j])}: weight `,
        el("b", { dataset: { weight: data.weights[i][j] } }, fmt(data.weights[i][j])),
        ", raw score ", el("b", { dataset: { rawScore: data.raw_scores[i][j] === null ? "masked" :
          data.raw_scores[i][j] } }, fmt(data.raw_scores[i][j])));
    };
    heatmap(heat, m, { highlightRow: query === null ? -1 : qIdx.indexOf(query), size: 420, max: null,
      rowLabels: qIdx.map((i) => data.q_tokens[i]), colLabels: kIdx.map((j) => data.k_tokens[j]),
      onclick: (r, c) => { selectQuery(qIdx[r]); readout(r, c); },  // a tap also shows the cell's values (touch)
      keyboard: { label: (r, c) => `attention heatmap, ${describe(r, c)}; Enter selects the row as the query`,
        onfocus: readout } });
    drawZoom(m);
    heatLegend.replaceChildren(legend(Number(heat.dataset.peak), "softmax weight (colour scaled to the largest " +
      "shown)", { masked: data.causal }));
    heat.onmousemove = (ev) => {
      const c = heat._toCell(ev);
      if (c) readout(c[0], c[1]);
    };
  }

  // focus + context: beyond 48 tokens the full map's cells are too small to read, so a labelled window of
  // 24 x 24 cells around the selected query (rows) and key (columns) is drawn beside it
  function drawZoom(m) {
    const W = 24;
    if (qIdx.length <= 48 && kIdx.length <= 48) { zoomBox.replaceChildren(); return; }
    const row = Math.max(0, query === null ? 0 : qIdx.indexOf(query));
    let col = key === null ? -1 : kIdx.indexOf(key);
    if (col < 0) {
      const r = m[row] || [];
      col = r.reduce((best, v, j) => (v !== null && (best < 0 || v > r[best]) ? j : best), -1);
    }
    const r0 = Math.max(0, Math.min(qIdx.length - W, row - W / 2)), c0 = Math.max(0, Math.min(kIdx.length - W, col - W / 2));
    const rows = m.slice(r0, r0 + W).map((r) => r.slice(c0, c0 + W));
    const canvas = el("canvas", { id: "heat-zoom" });
    heatmap(canvas, rows, { size: 300, max: Number(heat.dataset.peak), highlightRow: row - r0,
      rowLabels: qIdx.slice(r0, r0 + W).map((i) => data.q_tokens[i]),
      colLabels: kIdx.slice(c0, c0 + W).map((j) => data.k_tokens[j]),
      onclick: (i) => selectQuery(qIdx[r0 + i]),
      keyboard: { label: (i, j) => `zoomed heatmap, ${tokenLabel(data.q_tokens[qIdx[r0 + i]])} → ` +
        `${tokenLabel(data.k_tokens[kIdx[c0 + j]])}: weight ${fmt(m[r0 + i][c0 + j])}` } });
    zoomBox.replaceChildren(el("h3", {}, `Zoom: rows ${r0}–${Math.min(qIdx.length, r0 + W) - 1}, columns ` +
      `${c0}–${Math.min(kIdx.length, c0 + W) - 1}`), canvas, el("p", { class: "help" }, "The window follows the " +
      "selected query and key (or the key it weights most); same colour scale as the full map."));
  }

  function drawPair() {
    if (query === null || key === null) {
      pairBox.replaceChildren(el("h3", {}, "Q · K worked out"), el("p", { class: "help" },
        "Select a query token, then click one of its bars.")); return;
    }
    const q = data.q[query], k = data.k[key];
    const prods = q.map((x, i) => x * k[i]);
    const dot = prods.reduce((a, b) => a + b, 0);
    const scaled = dot * data.scale, raw = data.raw_scores[query][key];
    const bias = raw === null ? null : raw - scaled;
    const rowsShown = Math.min(q.length, 64);
    pairBox.replaceChildren(el("h3", {}, `Q·K for “${tokenLabel(data.q_tokens[query])}” → ` +
      `“${tokenLabel(data.k_tokens[key])}” (d_k = ${data.d_head})`),
    el("table", { class: "vec" }, el("thead", {}, el("tr", {}, el("th", { title: "dimension of the head" }, "i"),
      el("th", { title: "the query vector of this head" }, "Q"), el("th", { title: "the key vector" }, "K"),
      el("th", { title: "their product: Q·K is the sum of this column" }, "Q×K"))),
    el("tbody", {}, [...Array(rowsShown).keys()].map((i) => el("tr", {},
      el("td", {}, i), el("td", { dataset: { q: q[i] } }, fmt(q[i])), el("td", { dataset: { k: k[i] } }, fmt(k[i])),
      el("td", { dataset: { product: prods[i] } }, fmt(prods[i])))))),
    rowsShown < q.length ? el("p", { class: "help" }, `… ${q.length - rowsShown} more dimensions`) : "",
    el("p", {}, "Q·K = ", el("b", { id: "dot", dataset: { dot } }, fmt(dot)), " × ",
      el("span", { dataset: { scale: data.scale } }, fmt(data.scale)), " (1/√d_k) = ",
      el("b", { id: "scaled", dataset: { scaled } }, fmt(scaled)),
      bias !== null && Math.abs(bias) > 1e-3 ? el("span", { dataset: { bias } }, ` + position bias ${fmt(bias)}`) : "",
      " → raw score ", el("b", { id: "pair-raw", dataset: { rawScore: raw === null ? "masked" : raw } }, fmt(raw)),
      ", weight ", el("b", { id: "pair-weight", dataset: { weight: data.weights[query][key] } },
        fmt(data.weights[query][key]))));
  }

  function drawEmbeddings() {
    const e = data.embeddings;
    const shown = e.dims && e.dims.length ? e.dims.length : Math.min(32, e.values[0].length);
    const dims = e.dims && e.dims.length ? e.dims : [...Array(shown).keys()].map((i) => `${i}`);
    const peak = Math.max(1e-9, ...e.values.flat().map(Math.abs));
    embBox.replaceChildren(el("h3", {}, e.dims ? "Token embeddings (toy: 8 named, hand-set dimensions)" :
      `Token embeddings (first ${dims.length} of ${e.width} dimensions; they have no names)`),
    legend(peak, "embedding value (middle colour = 0)", { low: -peak }),
    el("div", { class: "scroll", tabindex: "0" }, el("table", { class: "vec" }, el("thead", {}, el("tr", {}, el("th", {}, "token"),
      dims.map((d) => el("th", {}, d)))), el("tbody", {}, kIdx.map((j) => el("tr", {}, el("td", {},
      tokenLabel(data.k_tokens[j])), e.values[j].slice(0, shown).map((v, di) => el("td", {
      dataset: { value: v }, title: `${tokenLabel(data.k_tokens[j])}, dimension ${dims[di]}: ${fmt(v, 4)}`,
      style: `background:${color(0.5 + v / peak / 2)};color:${0.5 + v / peak / 2 >= 0.4 ? "#000" : "#fff"}`,
    }, e.dims ? fmt(v, 2) : ""))))))));
  }

  function update() { drawChips(); drawBars(); drawHeat(); drawPair(); }
  update();
  drawEmbeddings();
  hide.addEventListener("change", () => {
    ctx.setState({ hide: hide.checked ? "1" : "" }, { rerender: false, push: false });
    computeShown(); update(); drawEmbeddings();
  });
  const lessonUpdate = lessons(lessonBox, ctx, { data, layer, head, part, getQuery: () => query,
    getKey: () => key });

  try {
    // the thumbnails depend on the sentence, not on the layer or head: kept for the last few sentences, so a
    // layer or head change asks the server only for the new view
    const gridKey = JSON.stringify([state.model, state.text || "", part, state.target || null]);
    let g = GRIDS.get(gridKey);
    if (!g) {
      g = await api("/api/attention/grid", { model: state.model, text: state.text || "", part,
        target: state.target || null });
      GRIDS.set(gridKey, g);
      if (GRIDS.size > 8) GRIDS.delete(GRIDS.keys().next().value);
    }
    const box = el("div", { class: "grid-thumbs", role: "group", "aria-label": "every layer and head",
      style: `grid-template-columns: repeat(${g.n_heads}, auto)` });
    g.thumbnails.forEach((layerThumbs, l) => layerThumbs.forEach((m, h) => {
      const c = heatmap(el("canvas", { title: `layer ${l + 1}, head ${h + 1}`, dataset: { layer: l, head: h },
        tabindex: "0", role: "button", "aria-label": `show layer ${l + 1}, head ${h + 1}`,
        "aria-pressed": l === layer && h === head ? "true" : "false" }),
      m, { size: Math.max(24, Math.min(56, 480 / g.n_heads)), max: 1 });
      if (l === layer && h === head) c.classList.add("selected");
      const go = () => ctx.setState({ layer: l, head: h });
      c.addEventListener("click", go);
      c.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); go(); } });
      box.append(c);
    }));
    gridBox.replaceChildren(el("h3", {}, "All layers × heads (rows: layers; click one)"), box,
      el("p", { class: "help" }, "each thumbnail scaled to its own largest weight"));
  } catch (e) {
    gridBox.replaceChildren(notice(e.message, "error"));
  }
  await lessonUpdate.ready;
}
