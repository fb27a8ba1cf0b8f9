// Experiments · Direct logit attribution: who writes the answer into the logits. Each head's and each MLP's
// output read straight through the final norm and the unembedding (answer minus contrast), a layer x head grid
// with an MLP column, and the sum check: the parts add up to the model's own logit difference.
import { el, fmt, select } from "../util.js";
import { answerLegend, gridTable, toward, tryThis } from "./draw.js";
import { nameSwap, ownStyle } from "./components.js";
import { intro } from "./patch.js";
import { fetchAnswer, notForThisModel, pct, predictsTokens, shown, tok } from "./common.js";

const NAME_SWAP_CONTRAST = " John";

export async function dlaSection(box, ctx) {
  const { state, info } = ctx;
  ownStyle();
  intro(box, "The residual stream at the end is a sum: the embedding, every head's " +
    "output, every MLP's output (and the attention output biases). Each part's direct contribution is that " +
    "part read through the final norm and the unembedding difference W_U[answer] − W_U[contrast]. The one " +
    "approximation: the final norm's scale (its division) is taken from the full residual stream and held " +
    "fixed for every part, as TransformerLens does; with it the parts add up exactly.",
  tryThis(`Run “${nameSwap(info || {})[0]}”, then pick another answer or contrast.`, "a few late heads with a " +
    "large positive value (in the name swap they copy the right name, “ Mary” against “ John”), and a few with " +
    "negative values (they push the other one)."));
  if (!predictsTokens(info)) { notForThisModel(box, ctx); return; }
  const local = { text: nameSwap(info)[0], target: null, contrast: null };
  const input = el("input", { type: "text", id: "dla-text", value: local.text, size: 48 });
  const runBtn = el("button", { type: "button", id: "dla-run", onclick: () => {
    local.text = input.value; local.target = local.contrast = null; draw();
  } }, "Run");
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") runBtn.click(); });
  const picks = el("span", { class: "controls", id: "dla-picks" });
  const out = el("div", { id: "dla-out", "aria-live": "polite" });
  box.append(el("div", { class: "controls" }, el("label", { for: "dla-text" }, "sentence "), input, " ", runBtn),
    picks, out);

  async function draw() {
    box.dataset.ready = "0";
    out.prepend(el("p", { class: "help", id: "dla-wait" }, "computing …"));
    const r = await fetchAnswer(box, out, "/api/experiments/logit-attribution", { model: state.model,
      text: local.text, target: local.target, contrast: local.contrast });
    if (!r) return;
    const other = r.top.find((t) => t.token === NAME_SWAP_CONTRAST);  // the name swap's " Mary" against " John"
    if (local.contrast === null && local.text === nameSwap(info)[0] && other && other.id !== r.answer.id) {
      local.target = r.answer.id; local.contrast = other.id;
      draw();
      return;
    }
    local.target = r.answer.id; local.contrast = r.contrast.id;
    const options = r.top.map((t) => [t.id, `${tok(t.token)} (${pct(t.prob)})`]);
    for (const who of [r.answer, r.contrast]) {  // a chosen token outside the top list stays choosable
      if (!options.some(([id]) => id === who.id)) options.push([who.id, tok(who.token)]);
    }
    const pickFocus = document.activeElement && picks.contains(document.activeElement) ? document.activeElement.id : "";
    picks.replaceChildren(el("label", {}, "answer ", select(options, r.answer.id, (v) => {
      local.target = Number(v); draw(); }, { id: "dla-answer" })), " ",
    el("label", {}, "against ", select(options, r.contrast.id, (v) => {
      local.contrast = Number(v); draw(); }, { id: "dla-contrast" })));
    if (pickFocus) document.getElementById(pickFocus)?.focus();
    const heads = r.heads, mlpCol = heads;  // the grid's last column is the MLP
    // the scale follows the heads: one late MLP often writes several times more than any head, and a shared
    // scale would wash the heads out; MLP cells beyond it are drawn at its ends (the legend says so)
    const peak = Math.max(1e-9, ...r.grid.flat().map(Math.abs));
    const clamped = r.mlp.some((v) => Math.abs(v) > peak);
    const value = (i, j) => (j === mlpCol ? r.mlp[i] : r.grid[i][j]);
    const name = (i, j) => (j === mlpCol ? `layer ${i + 1} MLP` : `layer ${i + 1}, head ${j + 1}`);
    const readout = el("p", { id: "dla-read", class: "summary", "aria-live": "polite" },
      "Pick a cell (click, tap, or Tab to the grid, then arrows and Enter) to read its value here.");
    const say = (i, j) => `${name(i, j)}: ${value(i, j) >= 0 ? "+" : "−"}${fmt(Math.abs(value(i, j)), 3)} ` +
      `to logit(${shown(r.answer.token)}) − logit(${shown(r.contrast.token)})`;  // quoted: “)” and “,” are tokens too
    const sumHeads = r.grid.flat().reduce((a, b) => a + b, 0), sumMlp = r.mlp.reduce((a, b) => a + b, 0);
    const sumBias = r.attn_bias.reduce((a, b) => a + b, 0);
    const gap = r.total - r.logit_diff;
    const row = (label, v, id) => el("tr", { id }, el("th", { scope: "row" }, label), el("td", {}, fmt(v, 4)));
    const compact = (heads + 1) * r.layers > 60;
    out.replaceChildren(
      el("p", { id: "dla-summary", class: "summary", dataset: { total: r.total, diff: r.logit_diff } },
        `At position ${r.position}, logit(${shown(r.answer.token)}) − logit(${shown(r.contrast.token)}) = `,
        el("strong", {}, fmt(r.logit_diff, 4)), ` (the model's own logits). Each cell: that part's direct share ` +
        `of it, in logits. The final norm's scale, taken from the full stream, is ${fmt(r.scale, 4)}` +
        (r.norm ? ` (${r.norm === "layernorm" ? "LayerNorm: each part is also centred" : "RMSNorm"}).` : ".")),
      el("div", { class: "xc-grids" }, el("div", { class: "panel xc-panel" + (compact ? " xc-compact" : ""),
        id: "dla-heads" }, gridTable({ id: "dla-grid", caption: "direct contribution: layers × heads, and each " +
        "layer's MLP (last column)", rows: r.layers, cols: heads + 1, corner: "layer", rowHead: (i) => `${i + 1}`,
      colHead: (j) => (j === mlpCol ? "MLP" : `h${j + 1}`), value,
      text: (i, j) => (compact ? "" : fmt(value(i, j), 2)),
      fill: (i, j) => toward(value(i, j), peak), label: say,
      onpick: (i, j) => {
        readout.textContent = say(i, j);
        box.querySelectorAll("td.read").forEach((td) => td.classList.remove("read"));
        box.querySelector(`#dla-grid td[data-row="${i}"][data-col="${j}"]`)?.classList.add("read");
      } })),
      el("div", { class: "xc-side" }, answerLegend(peak, "direct contribution to the logit difference (logits)",
        { note: clamped ? "MLP cells beyond the scale are drawn at its ends" : "" }), readout,
      el("div", { class: "panel", id: "dla-sum" }, el("h3", {}, "The sum check"),
        el("table", { class: "dla-parts", id: "dla-parts" }, el("caption", {}, "the parts, in logits"),
          el("tbody", {}, row("all heads", sumHeads, "dla-sum-heads"), row("all MLPs", sumMlp, "dla-sum-mlp"),
            row("attention output biases", sumBias, "dla-sum-bias"), row("embedding", r.embed, "dla-sum-embed"),
            row("final norm's β and the head's bias", r.constant, "dla-sum-const"),
            row("sum of the parts", r.total, "dla-sum-total"),
            row("the model's logit difference", r.logit_diff, "dla-sum-model"))),
        el("p", { class: "help", id: "dla-gap" }, `Sum − model = ${fmt(gap, 2)} ` +
          (Math.abs(gap) < 1e-3 ? "(float rounding): the parts account for all of it." :
            "— larger than rounding: please report it."))))));
    box.dataset.ready = "1";
  }
  await draw();
}
