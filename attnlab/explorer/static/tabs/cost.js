// Tab Cost: parameters, FLOPs and memory of the loaded model for n tokens, and how each grows with n.
import { api, bytes, el, fmt, human, svg, table } from "../util.js";

export async function render(root, ctx) {
  const { state } = ctx;
  root.append(el("h2", {}, "Cost"), el("p", { class: "help" }, "Dense work grows like n (every token meets every " +
    "weight once); attention work and the N×N matrices grow like n². Where the lines cross, long contexts get " +
    "expensive."));
  if (!ctx.info) return;
  const nInput = el("input", { type: "number", id: "cost-n", value: Number(state.n || 128), min: 1 });
  const out = el("div", { id: "cost-out" });
  root.append(el("div", { class: "controls" }, el("label", {}, "n tokens ", nInput)), out);
  async function run() {
    const r = await api(`/api/cost/${encodeURIComponent(state.model)}?n=${Number(nInput.value)}`);
    const a = r.at_n;
    const cell = (k, v, text) => el("span", { dataset: { [k]: v } }, text);
    out.replaceChildren(el("div", { class: "row" }, el("div", { class: "panel", id: "cost-table" },
      table(["quantity", `n = ${r.n}`], [
        ["parameters", cell("params", r.params, r.params.toLocaleString("en-US"))],
        ["FLOPs, dense (2 · non-embedding params · n)", cell("flopsDense", a.flops_dense, human(a.flops_dense))],
        ["FLOPs, attention (4 · layers · n² · d)", cell("flopsAttention", a.flops_attention, human(a.flops_attention))],
        ["FLOPs, forward total", cell("flops", a.flops, human(a.flops))],
        ["KV cache (fp32)", cell("kvCacheBytes", a.kv_cache_bytes, bytes(a.kv_cache_bytes))],
        ["attention matrix per layer (fp32)", cell("attentionMatrixBytes", a.attention_matrix_bytes,
          bytes(a.attention_matrix_bytes))],
      ])), el("div", { class: "panel" }, el("h3", {}, "Scaling with n (log-log)"), plot(r.sweep))),
    r.cost_table ? el("div", { class: "panel" }, el("h3", {}, "attnlab.cost table"), generic(r.cost_table)) : "");
  }
  nInput.addEventListener("change", run);
  await run();
}

function plot(sweep) {
  const W = 420, H = 240, pad = 44;
  const keys = [["flops_dense", "#4c78a8", "dense FLOPs"], ["flops_attention", "#d62728", "attention FLOPs"],
    ["kv_cache_bytes", "#2ca02c", "KV-cache bytes"]];
  const vals = sweep.flatMap((s) => keys.map(([k]) => s[k])).filter((v) => v > 0);
  const lo = Math.log10(Math.min(...vals)), hi = Math.log10(Math.max(...vals));
  const nlo = Math.log10(sweep[0].n), nhi = Math.log10(sweep[sweep.length - 1].n);
  const x = (n) => pad + (Math.log10(n) - nlo) / Math.max(1e-9, nhi - nlo) * (W - pad - 10);
  const y = (v) => H - pad - (Math.log10(v) - lo) / Math.max(1e-9, hi - lo) * (H - pad - 10);
  const root = svg("svg", { width: W, height: H, id: "cost-plot" },
    svg("line", { x1: pad, y1: H - pad, x2: W, y2: H - pad, stroke: "#999" }),
    svg("line", { x1: pad, y1: 0, x2: pad, y2: H - pad, stroke: "#999" }),
    svg("text", { x: W / 2, y: H - 8, "font-size": 11 }, "n (tokens)"));
  sweep.forEach((s) => root.append(svg("text", { x: x(s.n) - 8, y: H - pad + 14, "font-size": 10 }, s.n)));
  keys.forEach(([k, color, label], i) => {
    root.append(svg("polyline", { fill: "none", stroke: color, "stroke-width": 2,
      points: sweep.map((s) => `${x(s.n)},${y(s[k])}`).join(" ") }),
    svg("text", { x: pad + 8, y: 14 + i * 14, "font-size": 11, fill: color }, label));
  });
  return root;
}

function generic(obj) {
  if (Array.isArray(obj) && obj.length && typeof obj[0] === "object") {
    const headers = Object.keys(obj[0]);
    return table(headers, obj.map((r) => headers.map((h) => fmt(r[h]))));
  }
  if (obj && typeof obj === "object") return table(["key", "value"], Object.entries(obj).map(([k, v]) =>
    [k, typeof v === "object" ? JSON.stringify(v) : fmt(v)]));
  return el("pre", {}, JSON.stringify(obj, null, 1));
}
