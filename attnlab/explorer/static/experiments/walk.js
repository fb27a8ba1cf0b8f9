// Experiments · A circuit, step by step: one example walked through five experiments, each one click, each ending
// in a conclusion written from its own numbers. 1 which positions matter (patching: estimate, then exact cells),
// 2 which layers (attention and MLP outputs patched by component), 3 which heads (the ablation estimate with its
// exact check), 4 who writes the answer (direct logit attribution), 5 steer the corrupted sentence with the
// difference the walk found. Why: the views above each answer one question; a learner needs to see them answer
// one example in order, the next step reading what the last one found (the layer to steer at, the contrast).
import { api, el, fmt, notice, tokenLabel } from "../util.js";
import { answerLegend, gridTable, streamed, toward, tryThis } from "./draw.js";
import { estimateThenExact } from "./attribution.js";
import { defaultPair, pct, shown } from "./common.js";
import { asSection } from "./code.js";
import { intro } from "./patch.js";

const SECTION = "walk";

// [clean, corrupted]: the same token count, answers that differ. SmolLM2 knows capitals (" Paris" / " Rome");
// gpt-char reads code (a closing bracket after "(" against "[").
export function walkPair(info) {
  if (info.id === "smollm2") return ["The capital of France is", "The capital of Italy is"];
  return defaultPair(info);
}

const STEPS = [
  ["positions", "Which positions matter?", "Patching: copy the clean residual stream into the corrupted run, one " +
    "layer and one position at a time (estimated for every cell, the strongest checked exactly)."],
  ["layers", "Which layers?", "Patching by component: each layer's attention output and MLP output replaced by " +
    "the corrupted sentence's, summed over the positions."],
  ["heads", "Which heads?", "Ablation: each head of the clean sentence switched off, estimated at once, the " +
    "strongest checked by really switching them off."],
  ["writers", "Who writes the answer?", "Direct logit attribution: each head's and MLP's output read straight " +
    "through the unembedding, answer against the corrupted answer."],
  ["steer", "Steer it", "Add the clean-minus-corrupted difference to the corrupted sentence's residual stream at " +
    "the layer step 1 found, and read the next token."],
];

// the checked cells' exact values over the estimate: what the walk's conclusions read
function bestGrid(r) {
  const g = r.grid.map((row) => row.slice());
  for (const [i, j, v] of r.exact || []) g[i][j] = v;
  return g;
}

const nats = (v) => `${fmt(v, 2)} nats`;
const logits = (v) => `${v >= 0 ? "+" : "−"}${fmt(Math.abs(v), 2)} logits`;

export async function walkSection(box, ctx) {
  const { state, info } = ctx;
  intro(box, "Five experiments on one example, in order (each step opens once the one before it has run, " +
    "since it reads what that one found). Each step is one click; " +
    "under it, what its numbers say, written from them. Colours follow the page's one convention: orange " +
    "pushes toward the answer, blue against it.",
  tryThis("click the five steps in order.", "the position where the sentences differ, the layers where the fact " +
    "moves to the last token, a few heads that matter, the ones that write the answer, and a steered sentence " +
    "that gives the clean answer."));
  if (!info || info.topology !== "decoder") {
    box.append(el("div", { class: "decoder-only" }, notice("The walk ends by steering generated text, which needs " +
      "a decoder (SmolLM2, gpt-char).", "warn")));
    return;
  }
  const [clean0, corrupted0] = walkPair(info);
  const clean = el("input", { type: "text", id: "walk-clean", value: clean0, size: 36 });
  const corrupted = el("input", { type: "text", id: "walk-corrupted", value: corrupted0, size: 36 });
  box.append(el("div", { class: "pair-inputs" }, el("label", { for: "walk-clean" }, "clean"), clean,
    el("label", { for: "walk-corrupted" }, "corrupted"), corrupted));
  const found = {};  // what each step found, read by the next ones
  const ol = el("ol", { class: "walk-steps", id: "walk-steps" });
  box.append(ol);
  const steps = {};
  STEPS.forEach(([key, title, what], k) => {
    const btn = el("button", { type: "button", id: `walk-${key}-run`, disabled: k > 0 ? true : null,
      onclick: () => go(key) }, `Step ${k + 1}: ${title}`);
    const out = el("div", { id: `walk-${key}-out`, "aria-live": "polite" });
    const conclusion = el("p", { class: "summary walk-conclusion", id: `walk-${key}-conclusion`,
      "aria-live": "polite" });
    steps[key] = { btn, out, conclusion, k };
    ol.append(el("li", { class: "walk-step", id: `walk-${key}` }, el("h3", {}, btn), el("p", { class: "help" }, what),
      out, conclusion));
  });
  for (const i of [clean, corrupted]) i.addEventListener("change", () => {  // a new pair starts the walk over
    for (const [key, s] of Object.entries(steps)) {
      s.btn.disabled = s.k > 0; s.out.replaceChildren(); s.conclusion.textContent = ""; delete found[key];
    }
  });

  async function go(key) {
    const s = steps[key];
    box.dataset.ready = "0";
    s.conclusion.textContent = "";
    for (const t of Object.values(steps)) t.btn.disabled = true;
    let said = null;
    try {
      said = await asSection(SECTION, () => RUN[key](s.out));
    } catch (e) {
      s.out.replaceChildren(notice(e.message, "error"));
    }
    if (said) {
      s.conclusion.textContent = said;
      s.conclusion.dataset.done = "1";
    }
    for (const t of Object.values(steps)) t.btn.disabled = t.k > 0 && !found[STEPS[t.k - 1][0]];
    box.dataset.ready = "1";
    box.dataset.step = key;
  }

  const RUN = {
    // 1: the patching grid; conclusion: the position and layer that restore most, and where the last position
    // takes over (the fact has moved to where the answer is read)
    async positions(out) {
      const r = await estimateThenExact("/api/experiments/patch-attribution", { model: state.model,
        clean: clean.value, corrupted: corrupted.value }, out, { id: "walk-patch", unit: "cells",
        rows: (x) => x.layers, cols: (x) => x.positions, rowHead: (i) => `layer ${i + 1}`,
        colHead: (j, x) => tokenLabel(x.clean_tokens[j]),
        noun: (i, j, x) => `layer ${i + 1}, position ${j} (${tokenLabel(x.clean_tokens[j])})`,
        what: (x) => `step 1: change in log P(${shown(x.target.token)}) when the clean vector is copied in (nats)`,
        title: (x) => el("p", { class: "help" }, `P(${shown(x.target.token)}): ${pct(x.target.prob_clean)} clean, ` +
          `${pct(x.target.prob_corrupted)} corrupted, a gap of ${nats(x.target.logprob_gap)}.`) });
      if (!r) return null;
      const g = bestGrid(r), gap = r.target.logprob_gap, last = r.position;
      const differ = r.clean_tokens.map((t, j) => t !== r.corrupted_tokens[j]);
      if (!differ.some(Boolean)) {
        found.positions = { layer: Math.floor(r.layers / 2), answer: r.target };
        return "The two sentences are the same: change a word in the corrupted one so that its answer differs.";
      }
      let best = { v: -Infinity };
      g.forEach((row, i) => row.forEach((v, j) => { if (v !== null && v > best.v) best = { v, i, j }; }));
      // the first layer from which the last position alone restores at least half the gap
      const handover = g.findIndex((row) => row[last] !== null && row[last] >= 0.5 * gap);
      found.positions = { layer: handover > 0 ? handover : Math.max(1, best.i), answer: r.target, gap };
      const where = differ.flatMap((d, j) => (d ? [j] : []));
      return `The sentences differ at position${where.length > 1 ? "s" : ""} ${where.join(", ")} ` +
        `(${where.map((j) => shown(r.clean_tokens[j])).join(", ")}). Copying one clean vector restores most at ` +
        `position ${best.j} (${shown(r.clean_tokens[best.j])}) entering layer ${best.i + 1}: ${nats(best.v)} of ` +
        `the ${nats(gap)} gap (${Math.round((100 * best.v) / (gap || 1))}%). ` + (handover >= 0 ?
        `From the stream entering layer ${handover + 1}${handover ? ` (after layer ${handover})` : ""} on, the last position ` +
        `(${shown(r.clean_tokens[last])}) alone restores at least half the gap: by then the fact has moved to ` +
        "where the answer is read; step 5 steers there." :
        "No layer's last position alone restores half the gap: the fact stays spread over positions.");
    },

    // 2: attention and MLP outputs per layer (summed over positions), as contributions toward the answer
    async layers(out) {
      const r = await streamed("/api/experiments/components", { model: state.model, clean: clean.value,
        corrupted: corrupted.value, mode: "resample", method: "attribution", grids: ["attn", "mlp"] }, out,
      { id: "walk-comp", unit: "cells" });
      if (!r) return null;
      const sum = (row) => row.reduce((a, v) => a + (v === null ? 0 : -v), 0);  // contribution = −change
      const attn = r.grids.attn.map(sum), mlp = r.grids.mlp.map(sum);
      const peak = Math.max(1e-9, ...attn.map(Math.abs), ...mlp.map(Math.abs));
      const value = (i, j) => (j === 0 ? attn[i] : mlp[i]);
      const name = (i, j) => `layer ${i + 1} ${j === 0 ? "attention" : "MLP"}`;
      out.replaceChildren(el("p", { class: "help" }, `Answer ${shown(r.answer.token)} against ` +
        `${shown(r.contrast.token)}: logit difference ${fmt(r.clean_diff, 3)} clean, ${fmt(r.corrupted_diff, 3)} ` +
        "corrupted. Each cell: that output's contribution (estimated), summed over the positions."),
      answerLegend(peak, "contribution to the logit difference (logits)"),
      gridTable({ id: "walk-layers-grid", caption: "step 2: contribution of each layer's attention and MLP outputs",
        rows: r.layers || attn.length, cols: 2, corner: "layer", rowHead: (i) => `layer ${i + 1}`,
        colHead: (j) => (j === 0 ? "attention" : "MLP"), value, text: (i, j) => fmt(value(i, j), 2),
        fill: (i, j) => toward(value(i, j), peak),
        label: (i, j) => `${name(i, j)}: ${logits(value(i, j))} toward ${shown(r.answer.token)}` }));
      found.layers = { answer: r.answer, contrast: r.contrast };
      const all = attn.map((v, i) => [v, i, 0]).concat(mlp.map((v, i) => [v, i, 1])).sort((a, b) => b[0] - a[0]);
      const top = all.slice(0, 3).filter(([v]) => v > 0);
      const total = all.reduce((a, [v]) => a + Math.max(0, v), 0);
      const share = top.reduce((a, [v]) => a + v, 0) / (total || 1);
      const attnTotal = attn.reduce((a, v) => a + v, 0), mlpTotal = mlp.reduce((a, v) => a + v, 0);
      if (!top.length) return "No attention or MLP output pushes toward the answer here (every estimate ≤ 0).";
      return `The outputs that carry the answer most: ${top.map(([v, i, j]) => `${name(i, j)} (${logits(v)})`)
        .join(", ")}, ${Math.round(100 * share)}% of all the positive contributions. Summed over layers the ` +
        `attention outputs give ${logits(attnTotal)} and the MLPs ${logits(mlpTotal)}: ` +
        (Math.abs(attnTotal) >= Math.abs(mlpTotal) ? "attention moves more of it here." :
          "the MLPs move more of it here.");
    },

    // 3: the ablation estimate with its exact check; conclusion from the checked (exact) heads
    async heads(out) {
      const r = await estimateThenExact("/api/experiments/head-attribution", { model: state.model,
        text: clean.value, mode: "zero" }, out, { id: "walk-heads", unit: "heads", rows: (x) => x.layers,
        cols: (x) => x.heads, rowHead: (i) => `layer ${i + 1}`, colHead: (j) => `head ${j + 1}`,
        noun: (i, j) => `layer ${i + 1} head ${j + 1}`,
        what: (x) => `step 3: drop in log P(${shown(x.target.token)}) when one head is switched off (nats)`,
        title: (x) => el("p", { class: "help" }, `Clean: P(${shown(x.target.token)}) = ${pct(x.target.prob)}.`) });
      if (!r) return null;
      const checked = [...r.exact].sort((a, b) => b[2] - a[2]);
      found.heads = checked.filter((c) => c[2] > 0).slice(0, 3).map(([i, j]) => [i, j]);
      const [i, j, v, est] = checked[0];
      const strong = checked.filter((c) => c[2] >= 0.5 * v && c[2] > 0);
      const rho = r.spearman === null || r.spearman === undefined ? "" : ` Over the ${checked.length} checked ` +
        `heads the estimate ranks them with Spearman ρ = ${fmt(r.spearman, 2)}` +
        (r.disagree.length ? `, and is far off for ${r.disagree.length} of them.` : ", none far off.");
      if (v <= 0) return `No checked head helps: switching any of them off leaves log P the same or higher.${rho}`;
      return `Switching off layer ${i + 1} head ${j + 1} alone lowers log P(${shown(r.target.token)}) by ` +
        `${nats(v)} (exact; the estimate said ${nats(est)}): P falls to about ` +
        `${pct(r.target.prob * Math.exp(-v))}. ${strong.length > 1 ? `${strong.length} checked heads drop it by ` +
        "at least half as much." : "No other checked head comes within half of it."}${rho}`;
    },

    // 4: direct logit attribution, answer against the corrupted sentence's answer (step 2's contrast)
    async writers(out) {
      const body = { model: state.model, text: clean.value, target: found.layers?.answer?.id ?? null,
        contrast: found.layers?.contrast?.id ?? null };
      const r = await api("/api/experiments/logit-attribution", body);
      const parts = [];
      r.grid.forEach((row, i) => row.forEach((v, j) => parts.push({ v, name: `layer ${i + 1} head ${j + 1}`,
        head: [i, j] })));
      r.mlp.forEach((v, i) => parts.push({ v, name: `layer ${i + 1} MLP` }));
      const peak = Math.max(1e-9, ...r.grid.flat().map(Math.abs));
      const value = (i, j) => (j === r.heads ? r.mlp[i] : r.grid[i][j]);
      out.replaceChildren(el("p", { class: "help" }, `logit(${shown(r.answer.token)}) − ` +
        `logit(${shown(r.contrast.token)}) = ${fmt(r.logit_diff, 3)}; the parts sum to ${fmt(r.total, 3)}.`),
      answerLegend(peak, "direct contribution to the logit difference (logits)",
        { note: "MLP cells beyond the scale drawn at its ends" }),
      gridTable({ id: "walk-dla-grid", caption: "step 4: direct contribution, layers × heads and each layer's MLP",
        rows: r.layers, cols: r.heads + 1, corner: "layer", rowHead: (i) => `${i + 1}`,
        colHead: (j) => (j === r.heads ? "MLP" : `h${j + 1}`), value, text: (i, j) => fmt(value(i, j), 2),
        fill: (i, j) => toward(value(i, j), peak),
        label: (i, j) => `${j === r.heads ? `layer ${i + 1} MLP` : `layer ${i + 1} head ${j + 1}`}: ` +
          logits(value(i, j)) }));
      found.writers = { diff: r.logit_diff };
      const writers = parts.filter((p) => p.v > 0).sort((a, b) => b.v - a.v).slice(0, 3);
      const against = parts.filter((p) => p.v < 0).sort((a, b) => a.v - b.v)[0];
      const fromStep3 = (found.heads || []).map(([i, j]) => {
        const v = r.grid[i][j];
        return `layer ${i + 1} head ${j + 1} ${Math.abs(v) >= 0.1 * Math.abs(r.logit_diff) ? `writes ${logits(v)}` +
          " directly" : `writes little directly (${logits(v)}): it acts through later layers`}`;
      });
      return `The largest direct writers of ${shown(r.answer.token)} over ${shown(r.contrast.token)}: ` +
        `${writers.map((p) => `${p.name} (${logits(p.v)})`).join(", ") || "none"}, of a difference of ` +
        `${fmt(r.logit_diff, 2)}.` + (against ? ` The strongest push against it: ${against.name} ` +
        `(${logits(against.v)}).` : "") + (fromStep3.length ? ` Of the heads step 3 found, ${fromStep3.join("; ")}.`
        : "");
    },

    // 5: steer the corrupted sentence with the clean-minus-corrupted direction at step 1's layer
    async steer(out) {
      const layer = Math.min(found.positions?.layer ?? 1, info.n_layers - 1);
      const body = { model: state.model, prompt: corrupted.value, positive: clean.value,
        negative: corrupted.value, layer, alpha: 1, tokens: 1 };
      const r = await api("/api/experiments/steer", body);
      const answer = found.layers?.answer || found.positions?.answer;
      const row = (list, id) => list.find((c) => c.id === id);
      const top = (list) => list.map((c) => el("li", { dataset: { id: c.id } }, `${shown(c.token)} ${pct(c.prob)}`));
      out.replaceChildren(el("div", { class: "row" },
        el("div", { class: "panel", id: "walk-steer-plain" }, el("h4", {}, "next token, corrupted as it is"),
          el("ol", {}, top(r.next.plain))),
        el("div", { class: "panel", id: "walk-steer-steered" }, el("h4", {}, `steered ${layer === 0 ?
          "at the embeddings" : `after layer ${layer}`} (α = 1)`), el("ol", {}, top(r.next.steered)))));
      const before = r.next.plain[0], after = r.next.steered[0];
      const a = answer && row(r.next.steered, answer.id), b = answer && row(r.next.plain, answer.id);
      const said = `Added ${layer === 0 ? "to the embeddings" : `after layer ${layer}`} (the layer step 1 found), ` +
        `the difference turns the corrupted sentence's next token from ${shown(before.token)} ` +
        `(${pct(before.prob)}) into ${shown(after.token)} (${pct(after.prob)}).`;
      if (!answer) return said;
      return said + ` P(${shown(answer.token)}) goes from ${b ? pct(b.prob) : "outside the top 5"} to ` +
        `${a ? pct(a.prob) : "outside the top 5"}: ` + (after.id === answer.id ? "steering alone gives back the " +
        "clean answer." : "steering at this layer does not give the clean answer back.");
    },
  };
  box.dataset.ready = "1";
}
