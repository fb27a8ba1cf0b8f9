// Experiments · the training timeline: a run folder's probe replayed beside the loss curve.
import { api, el, fmt, heatmap, legend, select, tokenLabel } from "../util.js";
import { lineChart, tryThis } from "./draw.js";
import { fetchAnswer } from "./common.js";

// the charts' width: what the section offers, up to 420 px, so a phone shows them unscaled and their 11 px
// axis text stays 11 px on screen (a 420 px chart shrunk into 340 px drew it at 8 px)
const chartWidth = (box) => Math.max(240, Math.min(420, (box.clientWidth || 420) - 40));

// 3. Training timeline --------------------------------------------------------------------------------------
export async function timelineSection(box) {
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
    box.dataset.ready = "1";  // drawn (the notice is all there is): scripts waiting on the section go on
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
    if (!data) out.replaceChildren(el("p", { class: "help" }, "reading the run's probe (a few seconds for a long " +
      "run, the first time) …"));
    const got = await fetchAnswer(box, out, `/api/experiments/timeline/${encodeURIComponent(local.run)}${q}`);
    if (!got) return;
    data = got;
    local.layer = data.layer; local.head = data.head;
    if (local.step === null || local.step >= data.steps.length) local.step = data.steps.length - 1;
    const opts = [];
    for (let i = 0; i < data.n_layers; i++) for (let h = 0; h < data.n_heads; h++) {
      const s = data.previous_token[i][h];
      const formed = formedLabel(data, i, h);
      opts.push([`${i}:${h}`, `layer ${i + 1} head ${h + 1} (previous-token score ${fmt(s[s.length - 1], 2)}` +
        `${formed ? `, ${formed}` : ""})`]);
    }
    headBox.replaceChildren(el("label", {}, "head ", select(opts, `${data.layer}:${data.head}`, (v) => {
      [local.layer, local.head] = v.split(":").map(Number); load();
    }, { id: "timeline-head", style: "max-width: 100%" })));
    const slider = el("input", { type: "range", id: "timeline-step", min: 0, max: data.steps.length - 1, step: 1,
      value: local.step, "aria-label": "training step", list: "timeline-marks" });
    // tick marks on the slider where this head formed (its score stays at or above the threshold from there on)
    const marks = el("datalist", { id: "timeline-marks" }, ...formedSteps(data, data.layer, data.head).map(
      (f) => el("option", { value: data.steps.indexOf(f.step), label: `${f.kind} head from step ${f.step}` })));
    const stepText = el("output", { id: "timeline-step-text", for: "timeline-step" });
    slider.addEventListener("input", () => { local.step = Number(slider.value); frame(); });
    sliderBox.replaceChildren(el("label", { class: "slider" }, "step ", slider), marks, stepText);
    frame();
    if (had && document.getElementById(had)) document.getElementById(had).focus();  // the menu just rebuilt
    box.dataset.ready = "1";
  }

  function frame() {
    const i = local.step, step = data.steps[i];
    const slider = document.getElementById("timeline-step");
    const text = `step ${step} of ${data.steps[data.steps.length - 1]}`;
    const formedHere = formedSteps(data, data.layer, data.head);
    if (slider) slider.setAttribute("aria-valuetext", text);
    const st = document.getElementById("timeline-step-text");
    if (st) st.textContent = text;
    const canvas = el("canvas", { id: "timeline-heat", dataset: { step } });
    const score = data.previous_token[data.layer][data.head];
    const induction = data.induction ? data.induction[data.layer][data.head] : null;
    const scoreSeries = [{ name: "previous-token score", color: "#1a9641",
      points: data.steps.map((s, k) => [s, score[k]]) }];
    if (induction) scoreSeries.push({ name: "induction score", color: "#7b3294", dash: "6 3",
      points: data.steps.map((s, k) => [s, induction[k]]) });
    for (const f of formedHere) scoreSeries.push({ name: `formed as a ${f.kind} head at step ${f.step}`,
      color: f.kind === "induction" ? "#7b3294" : "#1a9641", dash: "1 3", points: [[f.step, 0], [f.step, 1]] });
    scoreSeries.push({ name: `threshold ${data.formed_threshold}`, color: "#888", dash: "2 3",
      points: [[data.steps[0], data.formed_threshold], [data.steps[data.steps.length - 1], data.formed_threshold]] });
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
        `${fmt(score[i], 3)} (1 = every character looks only one back)` + (induction ? `; induction score ` +
        `${fmt(induction[i], 3)} (1 = each character of the repeated words looks at the one that followed it ` +
        `last time)` : "")),
      formedSummary(data)),
      el("div", { class: "panel", id: "timeline-curves" }, el("h3", {}, "loss (nats per token)"),
        lineChart(series, { xLabel: "training step", yLabel: "loss (nats)", marker: step, id: "timeline-loss",
          width: chartWidth(box) }),
        el("h3", {}, `scores of layer ${data.layer + 1} head ${data.head + 1}: previous-token (green), ` +
          `induction (purple, dashed), the threshold ${data.formed_threshold} (grey, dotted)` +
          (formedHere.length ? `; formed at step ${formedHere.map((f) => f.step).join(", ")} (vertical)` : "")),
        lineChart(scoreSeries, { xLabel: "training step", yLabel: "score (0–1)",
        marker: step, id: "timeline-score-chart", yMin: 0, yMax: 1, height: 160, width: chartWidth(box) })));
  }
  await load();
}

// the steps where a head formed, as the server found them: [{kind, step}] for one head
function formedSteps(data, layer, head) {
  const out = [];
  for (const kind of ["previous_token", "induction"]) {
    for (const f of data.formed[kind]) {
      if (f.layer === layer && f.head === head) out.push({ kind: kind === "induction" ? "induction" : "previous-token",
        step: f.step });
    }
  }
  return out;
}

function formedLabel(data, layer, head) {
  return formedSteps(data, layer, head).map((f) => `${f.kind === "induction" ? "induction " : ""}from step ` +
    `${f.step}`).join(", ");
}

// every head that formed, and a plain statement when none of a kind did (a small model may have no induction head)
function formedSummary(data) {
  const list = (kind, name) => {
    const heads = data.formed[kind];
    if (!heads.length) {
      const scores = kind === "induction" ? data.induction : data.previous_token;
      if (!scores) return `${name} heads: not measured (the probe text repeats no words).`;
      const best = Math.max(...scores.flat().map((s) => Math.max(...s)));
      return `${name} heads: none formed (the highest score at any step is ${fmt(best, 2)}).`;
    }
    return `${name} heads: ` + heads.map((f) => `layer ${f.layer + 1} head ${f.head + 1} from step ${f.step}`)
      .join("; ") + ".";
  };
  return el("p", { class: "help", id: "timeline-formed" }, `Formed (score at or above ${data.formed_threshold} ` +
    `from that step to the end; ticks on the slider): ${list("previous_token", "Previous-token")} ` +
    `${list("induction", "Induction")}` + (data.shipped ? " This run is the bundled gpt-char's recipe " +
    "(attnlab train gpt-char): 20 of its probe steps, weights to 2 decimals; the loss is each kept step's " +
    "training batch." : ""));
}
