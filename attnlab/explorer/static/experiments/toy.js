// Experiments · the toy's W_Q and W_K, editable; scores, softmax and 2.34 recompute.
import { api, bars, el, fmt, heatmap, legend, notice, select } from "../util.js";
import { positionChips } from "../common.js";
import { tryThis } from "./draw.js";
import { fetchAnswer } from "./common.js";

// 2. The toy with editable W_Q and W_K -----------------------------------------------------------------------
export async function toySection(box) {
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
    const r = await fetchAnswer(box, out, "/api/experiments/toy", { text: local.text, w_q: local.w_q, w_k: local.w_k,
      query: local.query });
    if (!r) return;
    if (mine !== asked) return;
    const heatFocused = document.activeElement && document.activeElement.id === "toy-heat";
    positionChips(chips, r.words, r.query, (i) => { local.query = i; compute(); }, "query word");
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
