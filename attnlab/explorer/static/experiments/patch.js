// Experiments · Patch (causal tracing): copy the clean sentence's residual stream into the corrupted run.
import { el, fmt, notice, select, tokenLabel } from "../util.js";
import { answerLegend, cellNum, gridTable, streamed, toward, tryThis } from "./draw.js";
import { estimateThenExact } from "./attribution.js";
import { defaultPair, notForThisModel, pct, predictsTokens, shown } from "./common.js";
import { readableGrid, scrollCue } from "./grid.js";

// a view's opening: what it does (a help paragraph), then what to try and what to look for (draw.js tryThis);
// the views on a clean and a corrupted sentence (this one, the walk, components) and dla.js open with it
export function intro(box, help, tryIt) {
  box.append(el("p", { class: "help" }, help), tryIt);
}

export async function patchSection(box, ctx) {
  const { state, info } = ctx;
  intro(box, "Two sentences with the same number of tokens: a clean one and a " +
    "corrupted one whose answer differs. The corrupted sentence runs again many times; each time the residual " +
    "stream at one layer and one position is copied in from the clean run. Where one copied vector brings the " +
    "clean answer back, that vector carries the fact.",
  tryThis("Run with the default pair, then change one word in both sentences.", "a bright column under the changed " +
    "word in the early layers; in a decoder (SmolLM2) the brightness then moves to the last position in the " +
    "late layers: the fact travels from the subject to where the prediction is read."));
  if (!predictsTokens(info)) { notForThisModel(box, ctx); return; }
  const [clean0, corrupted0] = defaultPair(info);
  const clean = el("input", { type: "text", id: "patch-clean", value: clean0, size: 36,
    "aria-label": "clean sentence" });
  const corrupted = el("input", { type: "text", id: "patch-corrupted", value: corrupted0, size: 36,
    "aria-label": "corrupted sentence (same number of tokens)" });
  const site = select([["resid_pre", "entering the layer"], ["resid_post", "leaving the layer"]], "resid_pre",
    () => {}, { id: "patch-site" });
  const runBtn = el("button", { type: "button", id: "patch-run", onclick: () => first() }, "Run patching");
  const exactBtn = el("button", { type: "button", id: "patch-exact", onclick: () => run() }, "Exact: every cell");
  for (const i of [clean, corrupted]) i.addEventListener("keydown", (e) => { if (e.key === "Enter") first(); });
  const out = el("div", { id: "patch-out", "aria-live": "polite" });
  box.append(el("div", { class: "pair-inputs" }, el("label", { for: "patch-clean" }, "clean"), clean,
    el("label", { for: "patch-corrupted" }, "corrupted"), corrupted),
  el("div", { class: "controls" }, el("label", {}, "copy the residual stream ", site), runBtn, exactBtn), out);

  // the first answer: every cell estimated at once, then the real value of the strongest cells (attribution.js);
  // the estimate covers the stream entering a layer, so "leaving the layer" runs every cell exactly
  async function first() {
    if (site.value !== "resid_pre") { await run(); return; }
    box.dataset.ready = "0";
    runBtn.disabled = exactBtn.disabled = true;
    const cellNoun = (r, j) => `position ${j} (${tokenLabel(r.clean_tokens[j])}` +
      (r.clean_tokens[j] !== r.corrupted_tokens[j] ? ` / ${tokenLabel(r.corrupted_tokens[j])})` : ")");
    const detail = el("p", { class: "help", id: "patch-est-detail", "aria-live": "polite" });
    await estimateThenExact("/api/experiments/patch-attribution", { model: state.model, clean: clean.value,
      corrupted: corrupted.value }, out, { id: "patch-est", unit: "cells", rows: (r) => r.layers,
      cols: (r) => r.positions, rowHead: (i) => `layer ${i + 1}`, colHead: (j, r) => colHeadOf(r, j),
      noun: (i, j, r) => `layer ${i + 1}, ${cellNoun(r, j)}`,
      what: (r) => `change in log P(${shown(r.target.token)}) when that clean vector is copied in (nats)`,
      title: (r) => el("div", {}, el("p", { id: "patch-summary", class: "summary", dataset: {
        clean: r.target.prob_clean, corrupted: r.target.prob_corrupted } }, `Both sentences have ${r.positions} ` +
        `tokens. P(${shown(r.target.token)}) is `, el("strong", {}, `${pct(r.target.prob_clean)} clean`), " and ",
      el("strong", {}, `${pct(r.target.prob_corrupted)} corrupted`), `: a gap of ${fmt(r.target.logprob_gap, 3)} ` +
        "in log P. Each cell: how much copying the residual stream entering that layer at that position from " +
        `the clean run moves log P(${shown(r.target.token)}) in the corrupted run (${fmt(r.target.logprob_gap, 3)}` +
        " = all the way back to clean). Enter on a cell, or a tap, says its numbers in the line below."), detail),
      onpick: (i, j, text) => { detail.textContent = text; } });
    runBtn.disabled = exactBtn.disabled = false;
    if (document.activeElement === document.body) runBtn.focus();  // the Cancel button that had it is gone
    box.dataset.ready = "1";
  }

  async function run() {
    box.dataset.ready = "0";
    runBtn.disabled = exactBtn.disabled = true;
    const r = await streamed("/api/experiments/patch", { model: state.model, clean: clean.value,
      corrupted: corrupted.value, site: site.value }, out, { id: "patch", unit: "cells" });
    runBtn.disabled = exactBtn.disabled = false;
    if (r) draw(r);
    if (document.activeElement === document.body) exactBtn.focus();  // the Cancel button that had it is gone
    box.dataset.ready = "1";
  }
  const colHeadOf = (r, j) => (r.clean_tokens[j] !== r.corrupted_tokens[j] ? el("span", { class: "pair" },
    el("b", {}, tokenLabel(r.clean_tokens[j])), el("br"), el("span", { class: "corrupt" },
      tokenLabel(r.corrupted_tokens[j]))) : tokenLabel(r.clean_tokens[j]));
  function draw(r) {
    const t = r.target;
    const differs = (j) => r.clean_tokens[j] !== r.corrupted_tokens[j];
    const col = (j) => (differs(j) ? `${tokenLabel(r.clean_tokens[j])} / ${tokenLabel(r.corrupted_tokens[j])}` :
      tokenLabel(r.clean_tokens[j]));
    const colHead = (j) => (differs(j) ? el("span", { class: "pair" }, el("b", {}, tokenLabel(r.clean_tokens[j])),
      el("br"), el("span", { class: "corrupt" }, tokenLabel(r.corrupted_tokens[j]))) : tokenLabel(r.clean_tokens[j]));
    const rest = (i, j) => r.restored[i][j], prob = (i, j) => r.grid[i][j];
    out.replaceChildren(r.cancelled ? notice("Cancelled: the grey cells were not run.", "info") : "",
      el("p", { id: "patch-summary", class: "summary", dataset: { clean: t.prob_clean, corrupted: t.prob_corrupted } },
        `Both sentences have ${r.positions} tokens. P(${shown(t.token)}) is `, el("strong", {},
          `${pct(t.prob_clean)} clean`), " and ", el("strong", {}, `${pct(t.prob_corrupted)} corrupted`),
        ". Each cell: the share of that gap restored (0 = still corrupted, 1 = clean again) when the " +
        `residual stream ${r.site === "resid_pre" ? "entering" : "leaving"} that layer at that position is ` +
        "copied from the clean run; tap, hover or focus a cell (arrow keys move) for P itself."),
      answerLegend(1, "share of the gap restored (1: the clean answer back)", { note: "colour clamped at ±1" +
        (r.cancelled ? "; grey: not run" : "") }),
      overshoot(r.restored),
      readable(gridTable({ id: "patch-grid", caption: "restored share: layers × positions (where the sentences differ, the " +
        "column shows the clean token above the corrupted one)", rows: r.layers, cols: r.positions, corner: "",
      rowHead: (i) => `layer ${i + 1}`, colHead, value: rest,
      text: (i, j) => cellNum(rest(i, j)),
      fill: (i, j) => (rest(i, j) === null ? "#d9d9d9" : toward(rest(i, j), 1)),
      label: (i, j) => `layer ${i + 1}, position ${j} (${col(j)}): ` + (prob(i, j) === null ? "not run" :
        `P = ${pct(prob(i, j))}, restored ${fmt(rest(i, j), 3)}`) })));
  }
  box.dataset.ready = "1";
}

// the grid read cell by cell by keyboard and touch, with a cue when it is wider than the screen (grid.js)
function readable(grid) {
  readableGrid(grid, { id: "patch-readout" });
  scrollCue(grid);
  return grid;
}

// a patched vector can push P(answer) past the clean run (share > 1) or below the corrupted one (share < 0);
// the colour stops at the legend's ends, so say so in words whenever it happens
function overshoot(restored) {
  const vals = restored.flat().filter((v) => v !== null);
  const hi = Math.max(...vals, 1), lo = Math.min(...vals, 0);
  const over = hi >= 1.005, under = lo <= -0.005;  // beyond what the cells' 2 decimals show as 1 or 0
  if (!over && !under) return "";
  return el("p", { class: "help", id: "patch-overshoot", dataset: { max: hi, min: lo } },
    (over ? `Some shares exceed 1 (up to ${fmt(hi, 3)}): there the patched run gives the answer a higher ` +
      "probability than the clean run itself (it overshoots); those cells are coloured as 1. " : "") +
    (under ? `Some shares are below 0 (down to ${fmt(lo, 3)}): there patching made the answer even less likely ` +
      "than in the corrupted run; those cells are blue (against the answer)." : ""));
}
