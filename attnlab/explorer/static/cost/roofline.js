// Cost · the weights as the model holds them, and this machine's roofline with a prefill and a decoding step on it.
// The roofline: x = arithmetic intensity (FLOPs per byte moved), y = the FLOP/s the machine can reach at that
// intensity, min(peak, bandwidth × intensity), both axes log scales; the peak and the bandwidth were measured on
// this machine (attnlab/cost/peak.py). Why: "memory-bound" in the tables is a word; here it is a place.
import { api, bytes, el, fmt, notice, svg, table } from "../util.js";

// three significant digits and an SI prefix: 10.4 GFLOP/s (util's human() writes B for 10⁹, read here as bytes)
function si(x, unit = "") {
  for (const [scale, prefix] of [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]]) {
    if (Math.abs(x) >= scale) return `${Number((x / scale).toPrecision(3))} ${prefix}${unit}`;
  }
  return `${Number(x.toPrecision(3))} ${unit}`.trim();
}

const COLORS = ["#e66100", "#0072b2", "#0072b2"];  // prefill, decoding step as held, the same step at float32

// Every weight by the format it is held in: kept GGUF blocks, int8/int4, or float32; bits per weight and bytes.
export function heldPanel(h) {
  const quantized = h.formats.some((f) => f.format !== "float32");
  return el("div", { class: "panel", id: "held-weights" }, el("h3", {}, "The weights as this model holds them"),
    el("p", { class: "help" }, quantized ? `Kept in their quantized blocks: ${bytes(h.bytes)} in memory, where ` +
      `float32 would take ${bytes(h.float32_bytes)} (${fmt(h.float32_bytes / h.bytes, 2)}× more). Q4_1 and ` +
      "int4 hold 32 weights in 16 bytes of 4-bit codes plus a float16 scale and minimum (5 bits a weight); Q8_0 " +
      "32 one-byte codes plus a float16 scale (8.5 bits); int8 a byte a weight plus a float32 scale per row." :
      `Every weight is a ${h.formats[0]?.format || "float32"} number: ${bytes(h.bytes)} in memory.`),
    table(["held as", "weights", "bytes", "bits per weight"], h.formats.map((f) => [f.format,
      el("span", { dataset: { weights: f.weights } }, f.weights.toLocaleString("en-US")),
      el("span", { class: "held-bytes", dataset: { bytes: f.bytes, format: f.format } }, bytes(f.bytes)),
      fmt(f.bits_per_weight, 3)])));
}

const sup = (p) => `10${String(p).replace("-", "⁻").replace(/\d/g, (d) => "⁰¹²³⁴⁵⁶⁷⁸⁹"[d])}`;

function chart(r, width) {
  const W = width, H = 300, left = 64, right = 18, top = 16, bottom = 48;
  const xs = r.points.map((p) => p.intensity).concat([r.ridge]);
  const xlo = Math.floor(Math.log10(Math.min(...xs) / 2)), xhi = Math.ceil(Math.log10(Math.max(...xs) * 2));
  const ylo = Math.floor(Math.log10(Math.min(r.bandwidth * 10 ** xlo, ...r.points.map((p) => p.attainable))));
  const yhi = Math.ceil(Math.log10(r.peak * 1.5));
  const X = (v) => left + ((Math.log10(v) - xlo) / (xhi - xlo)) * (W - left - right);
  const Y = (v) => H - bottom - ((Math.log10(v) - ylo) / (yhi - ylo)) * (H - top - bottom);
  const root = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, id: "roofline", class: "plot",
    role: "img", "aria-label": `roofline: peak ${si(r.peak, "FLOP/s")}, bandwidth ${bytes(r.bandwidth)}/s, ridge at ` +
      `${fmt(r.ridge, 3)} FLOPs per byte; ` + r.points.map((p) => `${p.name} at ${fmt(p.intensity, 3)} FLOPs per ` +
      `byte, up to ${si(p.attainable, "FLOP/s")}, ${p.bound}-bound`).join("; ") });
  for (let p = xlo; p <= xhi; p++) {
    root.append(svg("line", { x1: X(10 ** p), x2: X(10 ** p), y1: top, y2: H - bottom, stroke: "#eceef2" }),
      svg("text", { x: X(10 ** p), y: H - bottom + 14, "font-size": 10, "text-anchor": "middle" }, sup(p)));
  }
  for (let p = ylo; p <= yhi; p++) {
    root.append(svg("line", { x1: left, x2: W - right, y1: Y(10 ** p), y2: Y(10 ** p), stroke: "#eceef2" }),
      svg("text", { x: left - 6, y: Y(10 ** p) + 3, "font-size": 10, "text-anchor": "end" }, si(10 ** p, "")));
  }
  const x0 = 10 ** xlo, x1 = 10 ** xhi;
  root.append(
    svg("line", { x1: left, y1: H - bottom, x2: W - right, y2: H - bottom, stroke: "#667" }),
    svg("line", { x1: left, y1: top, x2: left, y2: H - bottom, stroke: "#667" }),
    svg("text", { x: (left + W - right) / 2, y: H - 8, "font-size": 11, "text-anchor": "middle" },
      "arithmetic intensity (FLOPs per byte moved), log scale"),
    svg("text", { x: 12, y: (top + H - bottom) / 2, "font-size": 11, "text-anchor": "middle",
      transform: `rotate(-90 12 ${(top + H - bottom) / 2})` }, "attainable FLOP/s, log scale"),
    svg("polyline", { id: "roof", fill: "none", stroke: "#1d2433", "stroke-width": 2, points: [[x0, r.bandwidth * x0],
      [r.ridge, r.peak], [x1, r.peak]].map(([a, b]) => `${X(a)},${Y(Math.max(b, 10 ** ylo))}`).join(" ") }),
    svg("line", { x1: X(r.ridge), x2: X(r.ridge), y1: Y(r.peak), y2: H - bottom, stroke: "#667",
      "stroke-dasharray": "4 3" }),
    svg("text", { x: W - right, y: Y(r.peak) - 5, "font-size": 10, "text-anchor": "end" },
      `peak ${si(r.peak, "FLOP/s")}`),
    svg("text", { x: X(r.ridge) + 4, y: H - bottom - 6, "font-size": 10 }, `ridge ${fmt(r.ridge, 2)} FLOP/B`));
  r.points.forEach((p, i) => {
    const cx = X(p.intensity), cy = Y(p.attainable);
    root.append(svg("circle", { cx, cy, r: 6, fill: i === 2 ? "#fff" : COLORS[i], stroke: COLORS[i],
      "stroke-width": 2, class: "roof-point", dataset: { intensity: p.intensity, attainable: p.attainable } },
    svg("title", {}, `${p.name}: ${fmt(p.intensity, 3)} FLOP/B, ${si(p.attainable, "FLOP/s")}`)),
    svg("text", { x: cx + (cx > W / 2 ? -9 : 9), y: cy + 14 + 11 * (i === 2), "font-size": 10,
      "text-anchor": cx > W / 2 ? "end" : "start" }, String.fromCharCode(65 + i)));
  });
  return root;
}

export async function rooflinePanel(box, model, n) {
  box.replaceChildren(el("div", { class: "panel", id: "roofline-panel" }, el("h3", {}, "Roofline of this machine"),
    el("p", { class: "help" }, "measuring this machine's peak and bandwidth (once, then cached) …")));
  let r;
  try {
    r = await api(`/api/cost/${encodeURIComponent(model)}/roofline?n=${n}`);
  } catch (e) {
    box.replaceChildren(notice(e.message, "error"));
    return;
  }
  const tab = document.getElementById("tab");
  const width = Math.max(300, Math.min(560, (tab ? tab.clientWidth : 560) - 40));
  const decode = r.points.find((p) => p.name.startsWith("decoding") && !p.name.endsWith("float32 weights"));
  const f32 = r.points.find((p) => p.name.endsWith("float32 weights"));
  box.replaceChildren(el("div", { class: "panel", id: "roofline-panel" }, el("h3", {}, "Roofline of this machine"),
    el("p", { class: "help" }, `A computation that does I FLOPs per byte it moves can reach at most ` +
      `min(peak, bandwidth × I) FLOP/s. Measured here: peak ${si(r.peak, "FLOP/s")}, bandwidth ` +
      `${bytes(r.bandwidth)}/s; below the ridge at ${fmt(r.ridge, 3)} FLOPs per byte the memory sets the speed, ` +
      `above it the arithmetic (${r.machine}).`),
    chart(r, width),
    table(["key", "work", "weights", "FLOPs", "bytes moved", "FLOPs per byte", "attainable", "bound by"],
      r.points.map((p, i) => [el("span", { class: "roof-key", "aria-hidden": "true", style: "display:inline-block;width:10px;" +
        `height:10px;border-radius:50%;border:2px solid ${COLORS[i]};background:` +
        `${i === 2 ? "#fff" : COLORS[i]}` }, ""), `${String.fromCharCode(65 + i)}: ${p.name}`, p.precision,
      `${si(p.flops, "FLOP")}`, bytes(p.bytes), el("span", { class: "roof-intensity", dataset: {
        intensity: p.intensity } }, fmt(p.intensity, 3)), `${si(p.attainable, "FLOP/s")}`, p.bound])),
    el("p", { class: "help", id: "roofline-says" }, decode ? `A decoding step does ${fmt(decode.intensity, 2)} ` +
      `FLOPs per byte: ${decode.bound === "memory" ? "memory-bound" : "compute-bound"} here` + (f32 ? `, where ` +
      `with float32 weights it would do ${fmt(f32.intensity, 2)} (${f32.bound}-bound): the quantized blocks ` +
      `move ${fmt(f32.bytes / decode.bytes, 2)}× fewer bytes for the same FLOPs.` : ".") + ` The prefill does ` +
      `${fmt(r.points[0].intensity, 1)}: every weight it reads serves ${r.n} tokens.` : `The forward over ` +
      `${r.n} tokens does ${fmt(r.points[0].intensity, 1)} FLOPs per byte (${r.points[0].bound}-bound here).`)));
}
