// Tab Cost: attnlab.cost for the loaded model at n tokens (per-operation FLOPs, bytes, intensity), and how
// FLOPs and the KV cache grow with n; on request, the forward timed at each n of the sweep.
import { api, bytes, el, fmt, human, notice, svg, table } from "../util.js";

export async function render(root, ctx) {
  const { state } = ctx;
  root.append(el("h2", {}, "Cost"), el("p", { class: "help" }, "Dense work grows like n (every token meets every " +
    "weight once); attention work (Q Kᵀ and P V) and the N×N matrices grow like n². Where the lines cross, long " +
    "contexts get expensive."));
  if (!ctx.info) return;
  const nInput = el("input", { type: "number", id: "cost-n", value: 128, min: 1 });
  const out = el("div", { id: "cost-out" });
  const measured = el("div", { id: "measured" });
  root.append(el("div", { class: "controls" }, el("label", {}, "n tokens ", nInput),
    el("button", { id: "measure", onclick: measure }, "Measure forward time over n")), out, measured);
  async function measure() {
    measured.replaceChildren(notice("timing the forward at each n …"));
    try {
      const r = await api(`/api/cost/${encodeURIComponent(state.model)}?n=${Number(nInput.value)}&measure=true`);
      if (!r.measured) { measured.replaceChildren(notice("nothing to sweep for this model", "warn")); return; }
      measured.replaceChildren(el("div", { class: "panel" }, el("h3", {}, "Measured forward time (best of runs)"),
        plot(r.measured.map((p) => ({ n: p.n, ms: p.ms, flops: p.flops })),
          [["ms", "#ff7f0e", "forward ms (measured)"], ["flops", "#4c78a8", "matmul FLOPs (predicted)"]], "measured-plot"),
        table(["n", "ms", "FLOPs"], r.measured.map((p) => [p.n, el("span", { dataset: { ms: p.ms } }, fmt(p.ms, 3)),
          el("span", { dataset: { flops: p.flops } }, human(p.flops))]))));
    } catch (e) { measured.replaceChildren(notice(e.message, "error")); }
  }
  async function run() {
    try {
      const r = await api(`/api/cost/${encodeURIComponent(state.model)}?n=${Number(nInput.value)}`);
      const a = r.at_n;
      const cell = (k, v, text) => el("span", { dataset: { [k]: v } }, text);
      out.replaceChildren(el("div", { class: "row" }, el("div", { class: "panel", id: "cost-table" },
        table(["quantity", `n = ${r.n}`], [
          ["parameters", cell("params", r.params, r.params.toLocaleString("en-US"))],
          ["matmul FLOPs, forward", cell("flops", a.flops, human(a.flops))],
          ["  of which dense (projections, FFN, head)", cell("flopsDense", a.flops_dense, human(a.flops_dense))],
          ["  of which attention (Q Kᵀ, P V)", cell("flopsAttention", a.flops_attention, human(a.flops_attention))],
          ["bytes moved (fp32)", cell("bytesMoved", a.bytes_moved, bytes(a.bytes_moved))],
          ["KV cache after n tokens (fp32)", cell("kvCacheBytes", a.kv_cache_bytes, bytes(a.kv_cache_bytes))],
          ["attention matrix per layer (fp32)", cell("attentionMatrixBytes", a.attention_matrix_bytes,
            bytes(a.attention_matrix_bytes))],
        ])), el("div", { class: "panel" }, el("h3", {}, "Scaling with n (log-log)"),
        plot(r.sweep, [["flops_dense", "#4c78a8", "dense FLOPs"], ["flops_attention", "#d62728", "attention FLOPs"],
          ["kv_cache_bytes", "#2ca02c", "KV-cache bytes"]], "cost-plot"))),
      el("div", { class: "panel" }, el("h3", {}, `Per operation (attnlab.cost, batch 1, n = ${r.n})`),
        el("div", { class: "scroll" }, table(["stack", "operation", "FLOPs per layer", "layers", "FLOPs", "bytes",
          "FLOPs/byte"], r.rows.map((row) => [row.stack, row.name, el("code", {}, row.formula), row.layers,
          el("span", { class: "op-flops", dataset: { flops: row.flops } }, human(row.flops)),
          el("span", { dataset: { bytes: row.bytes } }, bytes(row.bytes)),
          row.intensity === null ? "—" : el("span", { dataset: { intensity: row.intensity } }, fmt(row.intensity, 2))])))));
    } catch (e) { out.replaceChildren(notice(e.message, "error")); }
  }
  nInput.addEventListener("change", run);
  await run();
}

function plot(points, keys, id) {
  const W = 440, H = 250, pad = 46;
  const vals = points.flatMap((s) => keys.map(([k]) => s[k])).filter((v) => v > 0);
  if (!vals.length || points.length < 2) return el("p", { class: "help" }, "one point only (fixed n)");
  const lo = Math.log10(Math.min(...vals)), hi = Math.log10(Math.max(...vals));
  const nlo = Math.log10(points[0].n), nhi = Math.log10(points[points.length - 1].n);
  const x = (n) => pad + (Math.log10(n) - nlo) / Math.max(1e-9, nhi - nlo) * (W - pad - 10);
  const y = (v) => H - pad - (Math.log10(Math.max(v, 1e-12)) - lo) / Math.max(1e-9, hi - lo) * (H - pad - 20);
  const root = svg("svg", { width: W, height: H, id },
    svg("line", { x1: pad, y1: H - pad, x2: W, y2: H - pad, stroke: "#999" }),
    svg("line", { x1: pad, y1: 0, x2: pad, y2: H - pad, stroke: "#999" }),
    svg("text", { x: W / 2, y: H - 8, "font-size": 11 }, "n (tokens), log scale"));
  points.forEach((s) => root.append(svg("text", { x: x(s.n) - 8, y: H - pad + 14, "font-size": 10 }, s.n)));
  keys.forEach(([k, color, label], i) => {
    root.append(svg("polyline", { fill: "none", stroke: color, "stroke-width": 2,
      points: points.filter((s) => s[k] > 0).map((s) => `${x(s.n)},${y(s[k])}`).join(" ") }),
    svg("text", { x: pad + 8, y: 14 + i * 14, "font-size": 11, fill: color }, label));
  });
  return root;
}
