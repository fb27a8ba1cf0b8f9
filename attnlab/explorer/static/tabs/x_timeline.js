// Experiments · the training timeline: a run folder's probe replayed beside the loss curve.
import { api, el, fmt, heatmap, legend, notice, select, tokenLabel } from "../util.js";
import { lineChart, tryThis } from "./experiments_draw.js";

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
