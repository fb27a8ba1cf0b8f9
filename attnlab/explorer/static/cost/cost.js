// Tab Cost: attnlab.cost for the loaded model at n tokens (per-operation FLOPs, bytes, intensity), and how
// FLOPs and the KV cache grow with n; on request, the forward timed at each n of the sweep.
import { aborted, api, busy, bytes, el, fmt, human, notice, svg, table } from "../util.js";
import { heldPanel, rooflinePanel } from "./roofline.js";

export async function render(root, ctx) {
  const { state } = ctx;
  root.append(el("h2", {}, "Cost"), el("p", { class: "help" }, "Dense work grows like n (every token meets every " +
    "weight once); attention work (Q Kᵀ and P V) and the N×N matrices grow like n². Where the lines cross, long " +
    "contexts get expensive."));
  if (!ctx.info) return;
  const limit = ctx.info.token_limit || null;
  const nInput = el("input", { type: "number", id: "cost-n", value: limit ? Math.min(128, limit) : 128, min: 1,
    max: limit || undefined, "aria-describedby": "cost-limit" });
  const out = el("div", { id: "cost-out" });
  const measured = el("div", { id: "measured" });
  const roof = el("div", { id: "roofline-box" });
  root.append(el("div", { class: "controls" }, el("label", {}, "n tokens ", nInput),
    el("span", { class: "help", id: "cost-limit" }, limit ? `(this model reads at most ${limit} tokens here)` : ""),
    el("button", { type: "button", id: "measure", onclick: measure }, "Measure forward time over n")), out, roof,
  measured);
  let controller = null;
  async function measure() {
    if (controller) return;  // one measurement at a time; Cancel ends it
    controller = new AbortController();
    const button = document.getElementById("measure");
    if (button) button.disabled = true;
    const box = busy("timing the forward at each n … (a few seconds on a small model, a minute or more on " +
      "SmolLM2; the server stops after its time limit)", () => controller.abort(), { id: "measuring" });
    measured.replaceChildren(box);
    try {
      const r = await api(`/api/cost/${encodeURIComponent(state.model)}?n=${Number(nInput.value)}&measure=true`,
        undefined, { signal: controller.signal });
      if (!r.measured) { measured.replaceChildren(notice("nothing to sweep for this model", "warn")); return; }
      measured.replaceChildren(el("div", { class: "panel" }, el("h3", {}, "Measured forward time (best of runs)"),
        plot(r.measured.map((p) => ({ n: p.n, ms: p.ms, flops: p.flops })),
          [["ms", "#e66100", "forward ms (measured)"], ["flops", "#0072b2", "matmul FLOPs (predicted)"]], "measured-plot",
          "ms or FLOPs (log scale; shapes compared)"),
        table(["n", "ms", "FLOPs"], r.measured.map((p) => [p.n, el("span", { dataset: { ms: p.ms } }, fmt(p.ms, 3)),
          el("span", { dataset: { flops: p.flops } }, human(p.flops))]))));
    } catch (e) {
      measured.replaceChildren(aborted(e) ? el("div", { class: "notice warn", id: "measure-cancelled",
        role: "status" }, "Measurement cancelled: the server stopped timing when the page left.") :
        notice(e.message, "error"));
    } finally {
      box.stop(); controller = null;
      if (button) button.disabled = false;
    }
  }
  async function run() {
    try {
      const r = await api(`/api/cost/${encodeURIComponent(state.model)}?n=${Number(nInput.value)}`);
      const a = r.at_n;
      if (r.n !== Number(nInput.value)) nInput.value = r.n;
      const cell = (k, v, text) => el("span", { dataset: { [k]: v } }, text);
      out.replaceChildren(r.note ? el("div", { class: "notice warn", id: "cost-note", role: "status" }, r.note) : "",
        el("div", { class: "row" }, el("div", { class: "panel", id: "cost-table" },
        table(["quantity", `n = ${r.n}`], [
          [tip("parameters", "every weight and bias, a tied matrix counted once"),
            cell("params", r.params, r.params.toLocaleString("en-US"))],
          [tip("matmul FLOPs, forward", "floating-point operations of the matrix products in one forward pass " +
            "over n tokens (a multiply-add counts 2)"), cell("flops", a.flops, human(a.flops))],
          [tip("  of which dense (projections, FFN, head)", "grows like n: each token meets every weight once"),
            cell("flopsDense", a.flops_dense, human(a.flops_dense))],
          [tip("  of which attention (Q Kᵀ, P V)", "grows like n²: every query meets every key"),
            cell("flopsAttention", a.flops_attention, human(a.flops_attention))],
          [tip("bytes moved (fp32)", "weights and activations read and written, 4 bytes per number"),
            cell("bytesMoved", a.bytes_moved, bytes(a.bytes_moved))],
          [tip("KV cache after n tokens (fp32)", "2 × layers × K/V heads × n × d_head numbers kept for decoding"),
            cell("kvCacheBytes", a.kv_cache_bytes, bytes(a.kv_cache_bytes))],
          [tip("attention matrix per layer (fp32)", "heads × n × n weights, if materialised"),
            cell("attentionMatrixBytes", a.attention_matrix_bytes, bytes(a.attention_matrix_bytes))],
        ])), el("div", { class: "panel" }, el("h3", {}, "Scaling with n (log-log)"),
        plot(r.sweep, [["flops_dense", "#0072b2", "dense FLOPs"], ["flops_attention", "#d55e00", "attention FLOPs"],
          ["kv_cache_bytes", "#1a9641", "KV-cache bytes"]], "cost-plot", "FLOPs or bytes (log scale)"))),
      r.heads ? el("div", { class: "panel", id: "heads-cost" }, el("h3", {}, "Several heads cost the same as one " +
        "wide head (one attention layer)"),
      table(["heads × d_head", "FLOPs counted by torch (FlopCounterMode)", "formula 6n·d·w + 4n²·w + 2n·w·d"],
        r.heads.map((h) => [`${h.heads} × ${h.d_head}`, el("span", { class: "heads-counted",
          dataset: { flops: h.flops_counted, heads: h.heads } }, h.flops_counted.toLocaleString("en-US")),
        el("span", { dataset: { flops: h.flops_formula } }, h.flops_formula.toLocaleString("en-US"))])),
      el("p", { class: "help" }, `w = heads × d_head = ${r.heads[0].heads * r.heads[0].d_head}, n = ${r.n}. ` +
        "Splitting the width into h heads leaves every matrix product the same size in total: the head count " +
        "drops out of the FLOPs. What h heads buy is h separate attention patterns for the same price.")) : "",
      r.held ? heldPanel(r.held) : "",
      r.decode ? decodePanel(r.decode) : "",
      el("div", { class: "panel" }, el("h3", {}, `Per operation (attnlab.cost, batch 1, n = ${r.n})`),
        el("div", { class: "scroll", tabindex: "0" }, table(["stack", "operation", "FLOPs per layer", "layers", "FLOPs", "bytes",
          "FLOPs/byte"], r.rows.map((row) => [row.stack, row.name, el("code", {}, row.formula), row.layers,
          el("span", { class: "op-flops", dataset: { flops: row.flops } }, human(row.flops)),
          el("span", { dataset: { bytes: row.bytes } }, bytes(row.bytes)),
          row.intensity === null ? "—" : el("span", { dataset: { intensity: row.intensity } }, fmt(row.intensity, 2))])))));
    } catch (e) { out.replaceChildren(notice(e.message, "error")); }
    await rooflinePanel(roof, state.model, Number(nInput.value));
  }
  nInput.addEventListener("change", run);
  await run();
}

// numbers as `attnlab cost` prints them (three significant digits, SI prefixes), so the table and the command
// it names can be compared digit by digit
function si(x, unit = "") {
  for (const [scale, prefix] of [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]]) {
    if (Math.abs(x) >= scale) return `${Number((x / scale).toPrecision(3))} ${prefix}${unit}`;
  }
  return `${x} ${unit}`.trim();
}

// One decoding step with the KV cache (the seed's decode-step cost): the new token's work per operation and
// per layer, the totals, the weights read once and the KV cache read, and the command printing the same table.
function decodePanel(d) {
  const num = (k, v, text) => el("span", { dataset: { [k]: v } }, text);
  const pastTokens = d.n - 1;
  return el("div", { class: "panel", id: "decode-cost" },
    el("h3", {}, `One decoding step with the KV cache (token ${d.n}: ${pastTokens} past tokens cached + itself)`),
    el("p", { class: "help" }, "Generating one token runs the model on that token alone: its query meets the " +
      `${d.n} keys and values (the ${pastTokens} cached ones and its own). Every weight matrix is still read once ` +
      "for one token, so the step moves about as many bytes as it does FLOPs: FLOPs per byte near 1 or below " +
      "means memory-bound (a CPU or GPU does 10–100× more FLOPs per byte it can fetch)."),
    table(["quantity (batch 1, " + d.dtype + ")", "value"], [
      ["FLOPs, one step (every operation)", num("stepFlops", d.flops, si(d.flops, "FLOP"))],
      ["FLOPs per layer (one block)", num("layerFlops", d.per_layer.flops, si(d.per_layer.flops, "FLOP"))],
      ["bytes moved, one step (read + written)", num("bytesMoved", d.bytes_moved, si(d.bytes_moved, "B"))],
      ["bytes moved per layer (one block)", num("layerBytes", d.per_layer.bytes_moved, si(d.per_layer.bytes_moved, "B"))],
      ["weight matrices read (the same for any n)", num("weights", d.weights_bytes, si(d.weights_bytes, "B"))],
      ...(d.held ? [[`  the same matrices as the model holds them (${d.held.formats.join(" + ")} blocks)`,
        num("weightsHeld", d.held.weights_bytes, si(d.held.weights_bytes, "B"))],
      ["  bytes moved, one step, with the weights as held", num("bytesMovedHeld", d.held.bytes_moved,
        si(d.held.bytes_moved, "B"))],
      ["  arithmetic intensity with the weights as held (FLOPs per byte)", num("intensityHeld", d.held.intensity,
        fmt(d.held.intensity, 3))]] : []),
      [`KV cache read (${d.n} keys and values × ${d.layers} layers)`, num("kvRead", d.kv_read_bytes,
        si(d.kv_read_bytes, "B"))],
      ["arithmetic intensity (FLOPs per byte moved)", num("intensity", d.intensity, fmt(d.intensity, 3))],
    ]),
    el("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "one decoding step per operation" },
      table(["stack", "operation", "FLOPs per layer (formula)", "FLOPs per layer", "layers", "FLOPs", "bytes read",
        "bytes written", "FLOPs/byte"], d.rows.map((row) => [row.stack || "—", row.name, el("code", {}, row.formula),
        si(row.flops_per_layer), row.layers, el("span", { class: "decode-flops", dataset: { flops: row.flops } },
          si(row.flops)), si(row.bytes_read, "B"), si(row.bytes_written, "B"),
        row.intensity === null ? "—" : fmt(row.intensity, 3)]).concat([["", el("strong", {}, "total"), "", "", "",
        el("strong", {}, si(d.flops)), si(d.bytes_read, "B"), si(d.bytes_written, "B"), fmt(d.intensity, 3)]]))),
    el("p", { class: "help" }, "Units: FLOP = one multiply or add (a multiply-add counts 2); B = bytes, 4 per " +
      "float32 number; k, M, G = 10³, 10⁶, 10⁹. The same table, with the uncached step beside it, from the " +
      "command line:"),
    el("pre", { class: "math", id: "decode-command" }, d.command));
}

// log-log lines with both axes labelled: y ticks at powers of ten, x labels thinned so they never collide
const tip = (text, title) => el("span", { title }, text);

function plot(points, keys, id, yLabel = "value (log scale)") {
  // as wide as the tab allows, up to 460 px: drawn for a phone's width (its text stays 10-11 px), never shrunk
  // or clipped (at 390 px a fixed 460 px chart was cut off at n = 4.1k)
  const tab = document.getElementById("tab");
  const W = Math.max(280, Math.min(460, (tab ? tab.clientWidth : 460) - 40)), H = 270, left = 62, bottom = 46, top = 52;
  const vals = points.flatMap((s) => keys.map(([k]) => s[k])).filter((v) => v > 0);
  if (!vals.length || points.length < 2) return el("p", { class: "help" }, "one point only (fixed n)");
  const lo = Math.floor(Math.log10(Math.min(...vals))), hi = Math.ceil(Math.log10(Math.max(...vals)));
  const nlo = Math.log10(points[0].n), nhi = Math.log10(points[points.length - 1].n);
  const x = (n) => left + (Math.log10(n) - nlo) / Math.max(1e-9, nhi - nlo) * (W - left - 16);
  const y = (v) => H - bottom - (Math.log10(Math.max(v, 1e-12)) - lo) / Math.max(1e-9, hi - lo) * (H - bottom - top);
  const root = svg("svg", { width: W, height: H, id, viewBox: `0 0 ${W} ${H}`, class: "plot", role: "img",
    "aria-label": `${keys.map((k) => k[2]).join(", ")} against n from ${points[0].n} to ${points[points.length - 1].n}` },
  svg("line", { x1: left, y1: H - bottom, x2: W - 8, y2: H - bottom, stroke: "#667" }),
  svg("line", { x1: left, y1: top - 6, x2: left, y2: H - bottom, stroke: "#667" }),
  svg("text", { x: (W + left) / 2, y: H - 6, "font-size": 11, "text-anchor": "middle" }, "n (tokens), log scale"),
  svg("text", { x: 12, y: (H - bottom + top) / 2, "font-size": 11, "text-anchor": "middle",
    transform: `rotate(-90 12 ${(H - bottom + top) / 2})` }, yLabel));
  const step = Math.max(1, Math.ceil((hi - lo) / 6));
  for (let p = lo; p <= hi; p += step) {
    root.append(svg("line", { x1: left - 4, y1: y(10 ** p), x2: W - 8, y2: y(10 ** p), stroke: "#eceef2" }),
      svg("text", { x: left - 6, y: y(10 ** p) + 3, "font-size": 10, "text-anchor": "end" }, human(10 ** p)));
  }
  let lastX = -Infinity;
  points.forEach((s, i) => {
    const px = x(s.n), last = i === points.length - 1;
    const label = human(s.n);
    if (px - lastX < 30 && !last) return;  // keep labels ~30 px apart; the last n is always shown
    if (last && px - lastX < 30) root.querySelectorAll("text.xtick").forEach((t, k, all) => {
      if (k === all.length - 1) t.remove();
    });
    root.append(svg("text", { x: px, y: H - bottom + 14, "font-size": 10, "text-anchor": "middle", class: "xtick" },
      label));
    lastX = px;
  });
  keys.forEach(([k, color, label], i) => {
    root.append(svg("polyline", { fill: "none", stroke: color, "stroke-width": 2,
      points: points.filter((s) => s[k] > 0).map((s) => `${x(s.n)},${y(s[k])}`).join(" ") }),
    svg("rect", { x: left + 8, y: 6 + i * 14, width: 10, height: 3, fill: color }),
    svg("text", { x: left + 22, y: 11 + i * 14, "font-size": 11, fill: "#1d2433" }, label));
  });
  return root;
}
