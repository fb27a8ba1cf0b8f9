// Experiments · Ablate: switch heads off and watch the prediction change; "Which heads matter" sweeps every head.
import { api, el, fmt, notice, select } from "../util.js";
import { answerLegend, cellNum, gridTable, streamed, toward, tryThis } from "./draw.js";
import { estimateThenExact } from "./attribution.js";
import { defaultText, notForThisModel, pct, points, predictsTokens, shown, topList } from "./common.js";
import { bringIntoView, markCells, rovingGrid } from "./grid.js";
import { withdraw } from "./code.js";

export async function ablateSection(box, ctx) {
  const { state, info } = ctx;
  box.append(el("p", { class: "help" }, "An ablation switches attention heads off: their output is replaced by " +
    "zeros, or by its average over this sentence (“mean”, gentler: the head still adds its usual offset), and " +
    "the model runs again. What the prediction loses is what those heads did here."),
  tryThis("run “Which heads matter”, then click its darkest orange cell to switch that head off.", "most heads " +
    "barely move the prediction; a few change it a lot. The grid is first an estimate (in about a second); the " +
    "real values of the strongest heads then replace it: where do the two disagree? Switching several off " +
    "together can matter more than the sum of each alone."));
  if (!predictsTokens(info)) { notForThisModel(box, ctx); return; }
  const L = info.n_layers, H = info.n_heads;
  // a view that names a head to switch off (?off=L.H with its sentence: the tour, a shared link) opens on it
  const off = /^(\d+)\.(\d+)$/.exec(state.off || "");
  const named = off && Number(off[1]) < L && Number(off[2]) < H;
  const local = { text: named && state.text ? state.text : defaultText(info), mode: "zero",
    heads: new Set([named ? `${off[1]},${off[2]}` : `${L - 1},0`]) };
  const input = el("input", { type: "text", id: "abl-text", value: local.text, size: 36,
    "aria-label": "sentence to run with heads switched off" });
  const modeSel = select([["zero", "zero (output set to 0)"], ["mean", "mean (output set to its average)"]],
    local.mode, (v) => { local.mode = v; run(); }, { id: "abl-mode" });
  const runBtn = el("button", { type: "button", id: "abl-run", onclick: () => { local.text = input.value; run(); } },
    "Run");
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") runBtn.click(); });
  const clear = el("button", { type: "button", id: "abl-clear", onclick: () => { local.heads.clear(); paint(); run(); } },
    "Switch all back on");
  const picker = el("div", { id: "abl-heads", class: "head-picker scroll-x", role: "group", tabindex: "-1",
    "aria-label": `heads to switch off: ${L} layers × ${H} heads; arrow keys move, Enter or Space toggles` });
  const out = el("div", { id: "abl-out", "aria-live": "polite" });
  const sweepBtn = el("button", { type: "button", id: "abl-sweep", onclick: () => estimate() }, "Which heads matter");
  const exactBtn = el("button", { type: "button", id: "abl-sweep-exact", onclick: () => sweep() },
    "Exact: every head");
  const sweepOut = el("div", { id: "abl-sweep-out" });
  box.append(el("div", { class: "controls" }, el("label", { for: "abl-text" }, info.has_mlm ? "sentence with " +
    `${info.mask_token || "[MASK]"} ` : "sentence "), input, runBtn, el("label", {}, "switch off by ", modeSel)),
  el("div", { class: "row" }, el("div", { class: "picker-col" }, el("p", { class: "help" }, "Heads switched off " +
    "(click, or Enter on a head, to toggle; rows are layers, columns heads):"), picker,
  el("div", { class: "controls" }, clear, sweepBtn, exactBtn)), out), sweepOut);

  const buttons = [];
  picker.append(el("table", { class: "chipgrid" }, el("thead", {}, el("tr", {}, el("td", {}, ""),
    [...Array(H).keys()].map((h) => el("th", { scope: "col" }, `head ${h + 1}`)))),
  el("tbody", {}, [...Array(L).keys()].map((l) => el("tr", {}, el("th", { scope: "row" }, `layer ${l + 1}`),
    [...Array(H).keys()].map((h) => {
      const b = el("button", { type: "button", class: "chip hchip", dataset: { layer: l, head: h },
        tabindex: l === L - 1 && h === 0 ? "0" : "-1", onclick: () => toggle(l, h) }, `${l + 1}.${h + 1}`);
      buttons.push(b);
      return el("td", {}, b);
    }))))));
  rovingGrid(picker, buttons, H);
  function paint() {
    for (const b of buttons) {
      const on = local.heads.has(`${b.dataset.layer},${b.dataset.head}`);
      b.classList.toggle("selected", on);
      b.setAttribute("aria-pressed", on ? "true" : "false");
      b.setAttribute("aria-label", `layer ${Number(b.dataset.layer) + 1} head ${Number(b.dataset.head) + 1}: ` +
        (on ? "switched off" : "on"));
    }
    markCells(sweepOut, local.heads);  // the sweep grid says which heads the result is about
  }
  function toggle(l, h) {
    const k = `${l},${h}`;
    if (local.heads.has(k)) local.heads.delete(k); else local.heads.add(k);
    paint(); run();
  }

  let seq = 0;
  async function run() {
    box.dataset.ready = "0";
    const mine = ++seq;
    if (!local.heads.size) {
      out.replaceChildren(notice("Every head is on: pick one or more heads above to switch off.", "info"));
      withdraw("ablate", "/api/experiments/ablation");  // no ablated run is shown: its code goes too
      box.dataset.ready = "1"; return;
    }
    const heads = [...local.heads].map((k) => k.split(",").map(Number));
    let r;
    try {
      r = await api("/api/experiments/ablation", { model: state.model, text: local.text, heads, mode: local.mode });
    } catch (e) { if (mine === seq) { out.replaceChildren(notice(e.message, "error")); box.dataset.ready = "1"; } return; }
    if (mine !== seq) return;
    const t = r.target, where = r.predicts === "next" ? `the next token after “${r.tokens.slice(-1)[0]}”` :
      `the masked word (token ${r.position})`;
    out.replaceChildren(el("p", { id: "abl-summary", class: "summary", dataset: { before: t.prob_before,
      after: t.prob_after, change: t.prob_change } }, `Predicting ${where}. P(${shown(t.token)}) `,
    el("strong", {}, `${pct(t.prob_before)} → ${pct(t.prob_after)}`), ` (${points(t.prob_change)}; log-prob ` +
      `${t.logprob_change >= 0 ? "+" : ""}${fmt(t.logprob_change, 3)}) with ${r.heads.length} head` +
      `${r.heads.length > 1 ? "s" : ""} switched off (${r.mode}).`),
    el("div", { class: "row" }, topList(r.before, { id: "abl-before", title: "top 5, all heads on", mark: t.id }),
      topList(r.after, { id: "abl-after", title: "top 5, heads switched off", mark: t.id })));
    box.dataset.ready = "1";
  }

  // the estimate of every head at once, then the real drop of the strongest ones (attribution.js)
  async function estimate() {
    box.dataset.sweepReady = "0";
    local.text = input.value;
    sweepBtn.disabled = exactBtn.disabled = true;
    await estimateThenExact("/api/experiments/head-attribution", { model: state.model, text: local.text,
      mode: local.mode }, sweepOut, { id: "abl-est", unit: "heads", rows: (r) => r.layers, cols: (r) => r.heads,
      rowHead: (i) => `layer ${i + 1}`, colHead: (j) => `head ${j + 1}`,
      noun: (i, j) => `layer ${i + 1} head ${j + 1}`,
      what: (r) => `drop in log P(${shown(r.target.token)}) when one head is switched off (nats)`,
      title: (r) => el("p", { class: "help" }, `Clean: P(${shown(r.target.token)}) = ${pct(r.target.prob)}. ` +
        "Orange: switching the head off lowers the log-probability (the head helped); blue: raises it. A drop " +
        "of 0.69 halves the probability. Enter on a cell switches that head off alone (the result is above)."),
      onpick: (i, j) => pickFromGrid(i, j) });
    markCells(sweepOut, local.heads);  // the head already off, marked in the grid just drawn
    sweepBtn.disabled = exactBtn.disabled = false;
    if (document.activeElement === document.body) sweepBtn.focus();  // the Cancel button that had it is gone
    box.dataset.sweepReady = "1";
  }

  // a grid cell switches that head off alone; the result sits above the head picker, so it is brought into view
  // once it has changed (on a phone it was 300 px above the screen), and the grid marks the head (paint)
  function pickFromGrid(i, j) {
    local.heads = new Set([`${i},${j}`]);
    paint();
    run().then(() => bringIntoView(document.getElementById("abl-summary") || out));
  }

  async function sweep() {
    box.dataset.sweepReady = "0";
    local.text = input.value;
    sweepBtn.disabled = exactBtn.disabled = true;
    const r = await streamed("/api/experiments/head-sweep", { model: state.model, text: local.text,
      mode: local.mode }, sweepOut, { id: "abl-sweep", unit: "heads" });
    sweepBtn.disabled = exactBtn.disabled = false;
    if (r) drawSweep(r);
    if (document.activeElement === document.body) exactBtn.focus();  // the Cancel button that had it is gone
    box.dataset.sweepReady = "1";
  }
  function drawSweep(r) {
    const peak = Math.max(1e-6, ...r.grid.flat().filter((v) => v !== null).map(Math.abs));
    const cell = (i, j) => r.grid[i][j];
    const grid = gridTable({ id: "abl-sweep-grid", caption: `drop in log P(${shown(r.target.token)}) when one ` +
      "head is switched off (layers × heads; Enter on a cell switches that head off alone)",
    rows: r.layers, cols: r.heads, rowHead: (i) => `layer ${i + 1}`, colHead: (j) => `head ${j + 1}`,
    value: cell, text: (i, j) => cellNum(cell(i, j), peak < 0.1 ? 3 : 2),
    fill: (i, j) => (cell(i, j) === null ? "#d9d9d9" : toward(cell(i, j), peak)),
    label: (i, j) => `layer ${i + 1} head ${j + 1}: ` + (cell(i, j) === null ? "not run (cancelled)" :
      `log P drops by ${fmt(cell(i, j), 3)}`),
    onpick: pickFromGrid });
    sweepOut.replaceChildren(
      r.cancelled ? notice("Cancelled: the grey cells were not run.", "info") : "",
      el("p", { class: "help" }, `Clean: P(${shown(r.target.token)}) = ${pct(r.target.prob)}. Orange: switching ` +
        "the head off lowers the log-probability (the head helped); blue: raises it (the head worked against " +
        "this answer). A drop of 0.69 halves the probability."),
      answerLegend(peak, "drop in log P(answer) when the head is switched off (nats)"), grid);
    markCells(sweepOut, local.heads);
  }
  paint();
  await run();
}
