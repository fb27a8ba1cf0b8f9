// Experiments · Patching by component: which attention output, MLP output or head carries the answer.
// Three grids side by side (attention and MLP: layer x position; heads: layer x head), one diverging colour
// scale with its values, every cell a focusable button whose value the read-out line says (touch has no hover).
import { el, fmt, linkStyle, notice, select, tokenLabel } from "../util.js";
import { answerLegend, gridTable, streamed, toward, tryThis } from "./draw.js";
import { defaultPair, notForThisModel, predictsTokens, shown } from "./common.js";
import { intro } from "./patch.js";

const MODES = [
  ["resample", "resample (from the corrupted sentence)"],
  ["mean", "mean (over this sentence)"],
  ["zero", "zero"],
];
const METHODS = [["attribution", "estimate (attribution, one backward)"], ["exact", "exact (every cell run)"]];
const GRIDS = [
  ["attn", "attention output", "the attention sub-layer's output at one position"],
  ["mlp", "MLP output", "the MLP's output at one position"],
  ["head", "each head", "one head's output at every position"],
];

// the name-swap task (indirect object identification): John and Mary swapped keep every token count. gpt-char
// reads code, where the names mean nothing: it keeps the patch view's bracket pair (“)” against “]”)
export function nameSwap(info) {
  if ((info.id || "").startsWith("gpt-char")) return defaultPair(info);
  const tail = info.has_mlm ? ` ${info.mask_token || "[MASK]"}.` : "";
  return [`When John and Mary went to the store, John gave a drink to${tail}`,
    `When Mary and John went to the store, Mary gave a drink to${tail}`];
}
const isNameSwap = (info) => nameSwap(info)[0].startsWith("When John");

// this view's compact grids, which dla.js draws too (the shared experiments.css stays as it is)
export const ownStyle = () => linkStyle("/static/experiments/components.css");

export async function componentsSection(box, ctx) {
  const { state, info } = ctx;
  ownStyle();
  intro(box, "The clean sentence runs again with one component replaced: a layer's " +
    "attention output or MLP output at one position, or one head at every position. Each cell is how much the " +
    "answer's lead over the contrast token (their logit difference) falls: what that component contributed. " +
    "Orange: it pushed toward the answer (replacing it lowers the lead), as in every view on this page.",
  isNameSwap(info || {}) ? tryThis("Run the name swap (“… John gave a drink to” → “ Mary”) with resample, then " +
    "switch to zero and mean.", "the heads at the last position that carry the answer (name movers), and the MLP " +
    "and attention cells under the repeated name in early layers.") :
    tryThis(`Run the default pair (“${nameSwap(info || {})[0]}” / “${nameSwap(info || {})[1]}”) with resample.`,
      "the cells under the changed character in early layers, and which heads at the last position carry the " +
      "answer."));
  if (!predictsTokens(info)) { notForThisModel(box, ctx); return; }
  const [clean0, corrupted0] = nameSwap(info);
  const clean = el("input", { type: "text", id: "comp-clean", value: clean0, size: 48 });
  const corrupted = el("input", { type: "text", id: "comp-corrupted", value: corrupted0, size: 48 });
  const mode = select(MODES, "resample", () => explain(), { id: "comp-mode" });
  const method = select(METHODS, "attribution", () => {}, { id: "comp-method" });
  const runBtn = el("button", { type: "button", id: "comp-run", onclick: () => run() }, "Run");
  for (const i of [clean, corrupted]) i.addEventListener("keydown", (e) => { if (e.key === "Enter") run(); });
  const modes = el("ul", { class: "xc-modes", id: "comp-modes" },
    el("li", { dataset: { mode: "zero" } }, el("b", {}, "zero"), " replaces the component's values (each " +
      "head's z, the MLP's hidden activations) by zeros: only its output bias is left."),
    el("li", { dataset: { mode: "mean" } }, el("b", {}, "mean"), " replaces them by their average over the " +
      "clean sentence's positions (up to the read one; not a reference set)."),
    el("li", { dataset: { mode: "resample" } }, el("b", {}, "resample"), " replaces them by the same " +
      "activation from the corrupted sentence (names swapped), at the same position."));
  const out = el("div", { id: "comp-out", "aria-live": "polite" });
  box.append(el("div", { class: "pair-inputs" }, el("label", { for: "comp-clean" }, "clean"), clean,
    el("label", { for: "comp-corrupted" }, "corrupted"), corrupted),
  el("div", { class: "controls" }, el("label", {}, "replace by ", mode), " ", el("label", {}, "values ", method),
    " ", runBtn), modes, out);
  function explain() {
    for (const li of modes.children) li.classList.toggle("on", li.dataset.mode === mode.value);
  }
  explain();

  async function run() {
    box.dataset.ready = "0";
    runBtn.disabled = true;
    const r = await streamed("/api/experiments/components", { model: state.model, clean: clean.value,
      corrupted: corrupted.value, mode: mode.value, method: method.value }, out, { id: "comp", unit: "cells" });
    runBtn.disabled = false;
    if (r) draw(r);
    if (document.activeElement === document.body) runBtn.focus();
    box.dataset.ready = "1";
  }

  function draw(answer) {
    // shown as the contribution, clean minus replaced (the route's change when replaced, turned): positive
    // pushes toward the answer, the sign of ablation's drop and of direct logit attribution
    const turn = (v) => (v === null ? null : (v === 0 ? 0 : -v));
    const r = { ...answer, grids: Object.fromEntries(Object.entries(answer.grids).map(([g, cells]) =>
      [g, cells.map((row) => row.map(turn))])) };
    const all = GRIDS.flatMap(([g]) => (r.grids[g] || []).flat()).filter((v) => v !== null);
    const peak = Math.max(1e-9, ...all.map(Math.abs));
    const readout = el("p", { id: "comp-read", class: "summary", "aria-live": "polite" },
      "Pick a cell (click, tap, or Tab to a grid, then arrows and Enter) to read its value here.");
    const differs = (j) => r.corrupted_tokens && r.clean_tokens[j] !== r.corrupted_tokens[j];
    const posName = (j) => `position ${j} (${shown(r.clean_tokens[j])}${differs(j) ?
      ` / ${shown(r.corrupted_tokens[j])}` : ""})`;
    const what = (g, i, j) => (g === "head" ? `layer ${i + 1}, head ${j + 1}` : `layer ${i + 1}, ${posName(j)}`);
    const say = (g, i, j) => {
      const v = r.grids[g][i][j];
      const name = GRIDS.find((x) => x[0] === g)[1];
      return `${name}, ${what(g, i, j)}: ` + (v === null ? (g === "head" ? "not run" :
        "after the read position, cannot change the answer") : `contributes ${v >= 0 ? "+" : "−"}` +
        `${fmt(Math.abs(v), 3)} to the logit difference (${v >= 0 ? "toward" : "against"} the answer)`);
    };
    const panels = GRIDS.filter(([g]) => r.grids[g]).map(([g, title, sentence]) => {
      const cells = r.grids[g];
      const cols = cells[0].length;
      const compact = cols * cells.length > 40;
      return el("div", { class: "panel xc-panel" + (compact ? " xc-compact" : ""), id: `comp-${g}` },
        el("h3", {}, title), gridTable({ id: `comp-grid-${g}`, caption: `${sentence}: its contribution to the ` +
          `logit difference (${g === "head" ? "layers × heads" : "layers × positions"})`, rows: cells.length, cols,
        corner: "layer", rowHead: (i) => `${i + 1}`,
        colHead: (j) => (g === "head" ? `h${j + 1}` : el("span", { class: differs(j) ? "xc-tok xc-diff" : "xc-tok",
          title: posName(j) }, tokenLabel(r.clean_tokens[j]))),
        value: (i, j) => cells[i][j],
        text: (i, j) => (compact || cells[i][j] === null ? "" : fmt(cells[i][j], 2)),
        fill: (i, j) => (cells[i][j] === null ? "#d9d9d9" : toward(cells[i][j], peak)),
        label: (i, j) => say(g, i, j),
        onpick: (i, j) => {
          readout.textContent = say(g, i, j);
          box.querySelectorAll("td.read").forEach((td) => td.classList.remove("read"));
          box.querySelector(`#comp-grid-${g} td[data-row="${i}"][data-col="${j}"]`)?.classList.add("read");
        } }));
    });
    const top = GRIDS.filter(([g]) => r.grids[g]).flatMap(([g]) => r.grids[g].flatMap((row, i) => row.map((v, j) =>
      ({ g, i, j, v })))).filter((c) => c.v !== null).sort((a, b) => Math.abs(b.v) - Math.abs(a.v)).slice(0, 5);
    const estimate = r.method === "attribution";
    out.replaceChildren(r.cancelled ? notice("Cancelled: the grey cells were not run.", "info") : "",
      el("p", { id: "comp-summary", class: "summary", dataset: { clean: r.clean_diff, corrupted: r.corrupted_diff } },
        `Answer ${shown(r.answer.token)} against ${shown(r.contrast.token)} at position ${r.position}: logit ` +
        "difference ", el("strong", {}, `${fmt(r.clean_diff, 3)} clean`),
        r.corrupted_diff === null ? "" : [" and ", el("strong", {}, `${fmt(r.corrupted_diff, 3)} corrupted`)],
        `. Each cell: ${fmt(r.clean_diff, 3)} minus the difference with that component replaced by ${r.mode} ` +
        "(what it contributed; positive: toward the answer). ",
        estimate ? el("span", { id: "comp-estimate" }, el("b", {}, "Estimated"), " (attribution patching: one " +
          "forward and one backward give every cell to first order); choose “exact” to run every cell: where " +
          "the two differ, the estimate is off (a saturated softmax, large early edits).") : "Exact: every cell run."),
      el("div", { class: "xc-grids" }, panels, el("div", { class: "xc-side" },
        answerLegend(peak, "contribution to the logit difference (logits): clean − replaced"), readout,
        el("div", { class: "panel", id: "comp-top" }, el("h3", {}, "Largest cells"), el("ol", {}, top.map((c) =>
          el("li", {}, say(c.g, c.i, c.j))))))));
  }
  box.dataset.ready = "1";
}
