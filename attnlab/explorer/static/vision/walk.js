// Vision · the ViT's forward, step by step, on the digit in view: patchify, flatten, linear projection,
// + position, [CLS] in front, the blocks, [CLS] -> class. Every number is the model's own (the walk the
// server sends with /api/vision: explorer/views/vision/walk.py); Back / Next, the step list, or the arrow keys
// move through it, and the selected patch is the one followed.
import { color, el, fmt, legend, linkStyle, svg } from "../util.js";

let current = 0;  // the step on show, kept while the learner clicks other patches

const TITLES = ["Cut into patches", "Flatten each patch", "Linear projection", "Add the position",
  "Put [CLS] in front", "Through the blocks", "[CLS] → the class"];

const peakOf = (...vs) => Math.max(1e-9, ...vs.flat(2).map(Math.abs));

// black or white, whichever reads better on this fill (WCAG relative luminance)
function ink(fill) {
  const [r, g, b] = fill.match(/\d+/g).map((c) => {
    const x = Number(c) / 255;
    return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.179 ? "#1d2433" : "white";
}

// the flattened patch: its C·P·P pixel values in reading order, each printed on the colour step 1 used
function pixelRow(values, [lo, hi]) {
  const t = (v) => (v - lo) / Math.max(1e-9, hi - lo);
  return el("div", { class: "vw-flat", id: "vw-flat", role: "list", "aria-label": `${values.length} pixel values`,
    dataset: { values: JSON.stringify(values) } }, values.map((v, i) => {
    const fill = color(t(v));
    return el("span", { role: "listitem", title: `index ${i}: ${fmt(v, 4)}`,
      style: `background:${fill};color:${ink(fill)}` }, fmt(v, 2));
  }));
}

// one vector as a strip of coloured cells (viridis from -peak to +peak, as the legend says), index axis below
function strip(values, { id, name, peak, height = 18 }) {
  const n = values.length, W = 640, cell = W / n;
  const lo = Math.min(...values), hi = Math.max(...values);
  return el("figure", { class: "vw-vector" }, el("figcaption", {}, name, el("span", { class: "help" },
    ` (${n} numbers, from ${fmt(lo, 3)} to ${fmt(hi, 3)}; first: ${values.slice(0, 4).map((v) => fmt(v, 3))
      .join(", ")}, …)`)),
  svg("svg", { id, viewBox: `0 0 ${W} ${height}`, width: "100%", height, preserveAspectRatio: "none", role: "img",
    "aria-label": `${name}: ${n} numbers from ${fmt(lo, 3)} to ${fmt(hi, 3)}`, dataset: { values:
      JSON.stringify(values) } },
  values.map((v, i) => svg("rect", { x: i * cell, y: 0, width: cell + 0.3, height,
    fill: color((v + peak) / (2 * peak)) }, svg("title", {}, `index ${i}: ${fmt(v, 4)}`)))),
  el("div", { class: "vw-axis", "aria-hidden": "true" }, el("span", {}, "index 0"), el("span", {}, `index ${n - 1}`)));
}

// the patch's pixels as a P x P grid with each value printed, coloured over the image's range [lo, hi]
function patchGrid(pixels, id, [lo, hi]) {
  const t = (v) => (v - lo) / Math.max(1e-9, hi - lo);
  const p = pixels[0].length, cell = Math.max(26, Math.floor(200 / p));
  return svg("svg", { id, width: p * cell, height: p * cell, viewBox: `0 0 ${p * cell} ${p * cell}`, role: "img",
    "aria-label": `the patch's ${p} × ${p} pixel values, row by row` },
  pixels[0].flatMap((row, i) => row.flatMap((v, j) => [svg("rect", { x: j * cell, y: i * cell, width: cell, height: cell,
    fill: color(t(v)), stroke: "white" }), p <= 8 ? svg("text", { x: (j + 0.5) * cell, y: (i + 0.62) * cell,
    "font-size": 10, "text-anchor": "middle", fill: ink(color(t(v))) }, fmt(v, 2)) : ""])));
}

function imageWithPatch(grey, w) {
  const n = grey.length, scale = Math.max(3, Math.floor(168 / n)), size = n * scale, cell = w.patch_size * scale;
  const r = Math.floor(w.patch_index / w.grid), c = w.patch_index % w.grid;
  const lines = [];
  for (let i = 1; i < w.grid; i++) {
    lines.push(svg("line", { x1: i * cell, y1: 0, x2: i * cell, y2: size, stroke: "rgba(255,255,255,0.4)" }),
      svg("line", { x1: 0, y1: i * cell, x2: size, y2: i * cell, stroke: "rgba(255,255,255,0.4)" }));
  }
  return svg("svg", { width: size, height: size, viewBox: `0 0 ${size} ${size}`, role: "img", id: "vw-image",
    "aria-label": `the ${n} × ${n} image cut into a ${w.grid} × ${w.grid} grid; patch ${w.patch_index} ` +
      `(row ${r + 1}, column ${c + 1}) outlined` },
  grey.flatMap((row, i) => row.map((v, j) => svg("rect", { x: j * scale, y: i * scale, width: scale, height: scale,
    fill: `rgb(${v},${v},${v})` }))), lines,
  svg("rect", { x: c * cell, y: r * cell, width: cell, height: cell, fill: "none", stroke: "#e66100",
    "stroke-width": 3 }));
}

const eq = (...parts) => el("p", { class: "eq" }, ...parts);
const shape = (text) => el("p", { class: "vw-shape" }, "shape: ", el("code", {}, text));

function body(k, w, grey) {
  const P = w.patch_size, C = w.channels, D = w.d_model, N = w.n_patches, flatLen = C * P * P;
  const i = w.patch_index, name = `patch ${i}`;
  if (k === 0) {
    return [eq(`N = (H / P) × (W / P) = (${w.image_size} / ${P})² = ${N} patches of P × P = ${P} × ${P} pixels`),
      shape(`(${C}, ${w.image_size}, ${w.image_size}) → (${N}, ${C}, ${P}, ${P})`),
      el("div", { class: "vw-pair" }, imageWithPatch(grey, w), patchGrid(w.pixels, "vw-patch", w.pixel_range)),
      legend(w.pixel_range[1], "pixel value as the model reads it (this image's darkest … brightest)",
        { low: w.pixel_range[0] }),
      el("p", { class: "help" }, `The image is cut into a ${w.grid} × ${w.grid} grid, left to right, top to ` +
        `bottom; ${name} (outlined) is the one followed here` + (w.followed_for_cls ? " ([CLS] is selected and " +
        "has no pixels, so the walk follows the brightest patch)" : "") + ". Click another patch in the image " +
        "above to follow it." + (w.pixel_range[0] < 0 ? " The pixels are normalised as in training (0–1, then " +
        "minus the training mean, divided by its spread), so black is below 0." : ""))];
  }
  if (k === 1) {
    return [eq(`x`, el("sub", {}, "p"), ` = the ${P} × ${P} pixels row by row${C > 1 ? ", channel by channel" : ""}` +
      ` → a vector of C·P·P = ${flatLen} numbers`), shape(`(${N}, ${C}, ${P}, ${P}) → (${N}, ${flatLen})`),
    el("p", { class: "vw-caption" }, `x_${i}, ${name} flattened: row 1, then row 2, …`), pixelRow(w.flat,
      w.pixel_range), legend(w.pixel_range[1], "pixel value as the model reads it (the colours of step 1)",
      { low: w.pixel_range[0] })];
  }
  const peak = peakOf(w.projected, w.position_vector || [], w.embedded, w.cls_embedded);
  const scale = legend(peak, "value of a feature (colour)", { low: -peak });
  if (k === 2) {
    return [eq("e", el("sub", {}, "p"), " = x", el("sub", {}, "p"), " W", el("sub", {}, "E"), "ᵀ + b, with W",
      el("sub", {}, "E"), ` of shape (d_model, C·P·P) = (${w.weight_shape.join(", ")})`),
    shape(`(${N}, ${flatLen}) → (${N}, ${D})`),
    strip(w.projected, { id: "vw-projected", name: `e_${i}, the patch as a ${D}-number token`, peak }), scale,
    el("p", { class: "help" }, `One matrix shared by every patch. attnlab computes it as a convolution with a ` +
      `${P} × ${P} kernel and stride ${P} (attnlab/models/vit.py, PatchEmbedding): on patches that do not ` +
      "overlap, that is the same product.")];
  }
  if (k === 3) {
    return [eq("z", el("sub", {}, "p"), " = e", el("sub", {}, "p"), " + E", el("sub", {}, "pos"),
      `[${i + 1}]`, w.embedding_norm ? ", then a LayerNorm" : ""),
    shape(`(${N}, ${D}) + (${N}, ${D}) → (${N}, ${D})`),
    strip(w.projected, { id: "vw-e", name: `e_${i}`, peak }),
    w.position_vector ? strip(w.position_vector, { id: "vw-pos", name: `E_pos[${i + 1}], the learned ` +
      `vector of position ${i + 1}`, peak }) : el("p", { class: "help" }, `positions: ${w.position}`),
    strip(w.embedded, { id: "vw-embedded", name: `z_${i}, what the first block reads for ${name}`, peak }), scale,
    el("p", { class: "help" }, "Attention does not know where a patch came from: the position vector tells it. " +
      "Position 0 belongs to [CLS], so patch p gets position p + 1.")];
  }
  if (k === 4) {
    return [eq("z", el("sub", {}, "0"), " = x", el("sub", {}, "[CLS]"), " + E", el("sub", {}, "pos"), "[0]; the " +
      `sequence is [CLS], patch 0, …, patch ${N - 1}`), shape(`(${N}, ${D}) → (${N + 1}, ${D})`),
    strip(w.cls_token, { id: "vw-cls", name: "x_[CLS], one learned vector, the same for every image", peak }),
    w.cls_position ? strip(w.cls_position, { id: "vw-cls-pos", name: "E_pos[0]", peak }) : "",
    strip(w.cls_embedded, { id: "vw-cls-embedded", name: "z_0, [CLS] as the first block reads it", peak }), scale,
    el("p", { class: "help" }, "[CLS] carries nothing of the image yet: it will gather it through attention, " +
      "and the classifier reads only its final vector.")];
  }
  if (k === 5) {
    const rows = [w.cls_embedded, ...w.blocks.map((b) => b.cls)];
    const bPeak = peakOf(rows);
    return [eq("h", el("sub", {}, "l"), " = h", el("sub", {}, "l−1"), " + Attention(LN(h", el("sub", {}, "l−1"),
      ")), then h", el("sub", {}, "l"), " + MLP(LN(h", el("sub", {}, "l"), ")), for l = 1 … ", String(w.n_layers)),
    shape(`(${N + 1}, ${D}) → (${N + 1}, ${D}) in each of ${w.n_layers} blocks`),
    rows.map((v, l) => strip(v, { id: `vw-block-${l}`, name: l === 0 ? "[CLS] entering block 1" :
      `[CLS] after block ${l}`, peak: bPeak, height: 14 })),
    legend(bPeak, "value of a feature (colour)", { low: -bPeak }),
    el("p", { class: "help" }, "Each block lets every token attend to every other (no mask: a ViT is an " +
      "encoder), then rewrites each token on its own. [CLS] changes block by block as it collects the patches; " +
      "the attention maps above show where it looks.")];
  }
  const best = w.probs ? w.probs.indexOf(Math.max(...w.probs)) : -1;
  const fPeak = peakOf(w.final_cls);
  return [eq("logits = W", el("sub", {}, "c"), " h", el("sub", {}, "[CLS]"), " + b", el("sub", {}, "c"),
    "; p = softmax(logits)"), shape(`(${D}) → (${w.logits ? w.logits.length : 0})`),
  strip(w.final_cls, { id: "vw-final", name: w.final_norm ? "h_[CLS] after the final LayerNorm" :
    "h_[CLS] after the last block", peak: fPeak }), legend(fPeak, "value of a feature (colour)", { low: -fPeak }),
  w.logits ? el("table", { id: "vw-classes", class: "vw-classes" }, el("caption", {}, "the classifier's output " +
    "for this image"), el("thead", {}, el("tr", {}, ["class", "logit", "probability"].map((h) =>
    el("th", { scope: "col" }, h)))), el("tbody", {}, w.logits.map((z, c) => el("tr", { class: c === best ?
    "best" : "", dataset: { logit: z, prob: w.probs[c] } }, el("th", { scope: "row" }, w.labels[c]),
  el("td", {}, fmt(z, 3)), el("td", {}, el("span", { class: "vw-bar", style: `width:${Math.round(80 * w.probs[c])}px`,
    "aria-hidden": "true" }), ` ${fmt(w.probs[c], 4)}`))))) : "",
  w.logits ? el("p", { class: "help", id: "vw-answer" }, `The model says “${w.labels[best]}” with probability ` +
    `${fmt(w.probs[best], 4)}.`) : ""];
}

// the walk's panel: the step list, Back / Next, the arrow keys, and the step's equation, shape and values
export function walkPanel(w, grey) {
  linkStyle("/static/vision/walk.css");
  const box = el("section", { class: "panel", id: "vit-walk", "aria-labelledby": "vw-title" });
  const stage = el("div", { id: "vw-stage", "aria-live": "polite" });
  const list = el("ol", { class: "vw-steps", id: "vw-steps" });
  const back = el("button", { type: "button", id: "vw-back" }, "← Back");
  const next = el("button", { type: "button", id: "vw-next" }, "Next →");
  function show(k, focus = null) {
    current = Math.max(0, Math.min(TITLES.length - 1, k));
    list.replaceChildren(...TITLES.map((t, j) => el("li", {}, el("button", { type: "button",
      class: j === current ? "current" : "", "aria-current": j === current ? "step" : null, dataset: { step: j },
      onclick: () => show(j, j) }, `${j + 1}. ${t}`))));
    const had = document.activeElement;  // a button that gets disabled drops the focus: hand it to the other
    back.disabled = current === 0; next.disabled = current === TITLES.length - 1;
    if (had === next && next.disabled) back.focus();
    if (had === back && back.disabled) next.focus();
    stage.replaceChildren(el("h4", { id: "vw-step-title", dataset: { step: current } },
      `Step ${current + 1} of ${TITLES.length}: ${TITLES[current]}`), ...body(current, w, grey).flat());
    box.dataset.step = current;
    if (focus !== null) list.querySelector(`button[data-step="${focus}"]`)?.focus();
  }
  back.onclick = () => show(current - 1);
  next.onclick = () => show(current + 1);
  box.addEventListener("keydown", (ev) => {
    if (ev.target.matches && ev.target.matches("input, select, textarea")) return;
    if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
      ev.preventDefault();
      const onList = list.contains(document.activeElement);
      const k = current + (ev.key === "ArrowRight" ? 1 : -1);
      show(k, onList ? Math.max(0, Math.min(TITLES.length - 1, k)) : null);
    }
  });
  box.append(el("h3", { id: "vw-title" }, `From pixels to a class, step by step (following patch ${w.patch_index})`),
    el("p", { class: "help" }, "The real numbers of this forward pass. Back / Next, a step's name, or the ← → " +
      "keys move through it."), list, el("div", { class: "controls" }, back, next), stage);
  show(current);
  return box;
}
