// Tab Vision: an image becomes [CLS] + a grid of patch tokens. Click a patch: its attention in one layer/head,
// the attention rollout through all layers, and the similarity of its learned position embedding to the others.
// "overlay" lays [CLS]'s attention and rollout over the image itself; the position-grid statistic under the
// similarity map is measured on the loaded checkpoint by the server (rho, permutation p, nearest neighbours).
import { api, bars, color, el, fmt, heatmap, legend, notice, select } from "../util.js";
import { chipRow, needs } from "../common.js";
import { references } from "../references.js";
import { walkPanel } from "./walk.js";

const DEFAULT_IMAGE = { mnist: 0 };
let image = DEFAULT_IMAGE;
let imageModel = null;  // the model the current image was chosen for: another model starts from a sample
let uploadError = null;
let view = "maps";  // "maps": patch-grid heat maps; "overlay": [CLS] attention and rollout drawn over the image

// the image in grey with a patch grid of values drawn over it: colour and opacity rise with value / peak.
// Drawn at devicePixelRatio with nearest-neighbour scaling, so pixels and patch edges stay sharp on 2x screens.
function overlay(canvas, pixels, values, g, { size = 224, label = "" } = {}) {
  const n = pixels.length, dpr = Math.max(1, Math.min(3, window.devicePixelRatio || 1));
  canvas.width = Math.round(size * dpr); canvas.height = Math.round(size * dpr);
  canvas.style.width = size + "px"; canvas.style.height = size + "px";
  const src = document.createElement("canvas"); src.width = n; src.height = n;
  const img = src.getContext("2d").createImageData(n, n);
  pixels.forEach((row, i) => row.forEach((v, j) => {
    const k = 4 * (i * n + j); img.data[k] = img.data[k + 1] = img.data[k + 2] = v; img.data[k + 3] = 255;
  }));
  src.getContext("2d").putImageData(img, 0, 0);
  const c = canvas.getContext("2d");
  c.setTransform(dpr, 0, 0, dpr, 0, 0);
  c.imageSmoothingEnabled = false;
  c.drawImage(src, 0, 0, size, size);
  const peak = Math.max(1e-12, ...values), cell = size / g;
  values.forEach((v, i) => {
    c.globalAlpha = 0.6 * Math.max(0, v) / peak;  // the digit stays visible under the strongest patch
    c.fillStyle = color(v / peak);
    c.fillRect((i % g) * cell, Math.floor(i / g) * cell, cell, cell);
  });
  c.globalAlpha = 1;
  const top = values.indexOf(Math.max(...values));
  canvas.dataset.peak = peak; canvas.dataset.values = JSON.stringify(values);
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", `${label} over the image; strongest on patch ${top} (row ${Math.floor(top / g) + 1}, ` +
    `column ${(top % g) + 1}): ${fmt(values[top], 3)}`);
  return canvas;
}

// the measured position-grid statistic of this checkpoint, in words that follow from its numbers alone
function structureText(s) {
  const grid = s.p < 0.01 && s.rho > 0, local = !grid && s.nearest_p < 0.01;
  return el("div", { id: "pos-structure", dataset: { rho: s.rho, p: s.p, nearest: s.nearest_is_neighbour,
    patches: s.patches, chance: s.chance_neighbours } },
  el("p", { class: "help" }, "Measured on this checkpoint over its ", String(s.pairs), " patch pairs: Spearman ρ ",
    el("b", {}, fmt(s.rho, 3)), " between cosine similarity and nearness on the grid (negative distance), ",
    "permutation p ", el("b", {}, fmt(s.p, 3)), ` (${s.permutations} random relabellings, seed ${s.seed}); ` +
    "the most similar other position vector is a grid neighbour (8 around it) for ",
    el("b", {}, `${s.nearest_is_neighbour} of ${s.patches}`), ` patches (chance: ${fmt(s.chance_neighbours, 3)}, ` +
    `p ${fmt(s.nearest_p, 3)}).`),
  el("p", { class: "help", id: "pos-verdict" }, grid
    ? "So this checkpoint has learned the 2-D layout: patches near each other on the image got similar " +
      "position vectors, though nothing in the model says the patches form a grid."
    : local
      ? "So this checkpoint has learned the layout locally: a patch's most similar position vector belongs to a " +
        "grid neighbour far more often than chance, but over the whole grid similarity does not fall with " +
        "distance."
      : "So this checkpoint shows no measurable 2-D grid in its position vectors: nearness on the image does " +
        "not predict their similarity better than a random relabelling of the patches does."),
  // one checkpoint says nothing about how often training gives a grid: what the recipe's defaults gave, measured
  el("p", { class: "help", id: "pos-recipe" }, "This is one checkpoint. The shipped vit-mnist was trained with " +
    "patch_size=4 max_shift=3 (shifts of up to 3 pixels); trained with the vit-mnist recipe's defaults (patch 7, " +
    "shifts of 1 pixel), none of 6 seeds showed a grid (rho below 0 in each; docs/experiments_vit_grid.md)."));
}

export async function render(root, ctx) {
  root.append(el("h2", {}, "Vision Transformer"), el("p", { class: "help" }, "The same self-attention, over " +
    "image patches instead of words. Patches are numbered in raster order; a learned position vector tells " +
    "the model where each came from."));
  const notes = visionNotes();
  try {
    await instrument(root, ctx);
  } finally {
    root.append(notes);
  }
}

async function instrument(root, ctx) {
  const { state, info } = ctx;
  if (!needs(root, ctx, ["vit"], "This tab needs a vision transformer (vit-mnist).")) return;
  if (imageModel !== state.model) { image = DEFAULT_IMAGE; imageModel = state.model; }
  const samples = await api("/api/vision/samples");
  const layer = Math.min(state.layer || 0, info.n_layers - 1), head = Math.min(state.head || 0, info.n_heads - 1);
  const patch = Number.isInteger(state.token) ? state.token : 0;
  const upload = el("input", { type: "file", id: "upload", accept: "image/png,image/jpeg" });
  upload.addEventListener("change", () => {
    const f = upload.files[0]; if (!f) return;
    const reader = new FileReader();
    reader.onload = () => { image = { upload: reader.result }; uploadError = null; ctx.setState({}); };
    reader.readAsDataURL(f);
  });
  const thumbs = el("div", { class: "chips", id: "samples" }, samples.mnist.map((s) => {
    const c = heatmap(el("canvas", { dataset: { sample: s.index, label: s.label }, title: `digit ${s.label}`,
      tabindex: "0", role: "button", "aria-label": `MNIST sample ${s.index}, a handwritten ${s.label}` }),
    [...Array(28)].map((_, i) => s.pixels.slice(i * 28, i * 28 + 28)), { size: 42, max: 255 });
    const pick = () => { image = { mnist: s.index }; uploadError = null; ctx.setState({ token: 0 }); };
    c.addEventListener("click", pick);
    c.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pick(); } });
    return c;
  }), samples.photos.map((p) => el("button", { type: "button", onclick: () => { image = { photo: p }; uploadError = null;
    ctx.setState({}); } }, p)));
  root.append(el("div", { class: "controls" }, "MNIST samples: ", thumbs),
    samples.mnist_note ? notice(samples.mnist_note, "warn") : "",
    samples.mnist_source ? el("p", { class: "help", id: "mnist-source" }, samples.mnist_source) : "",
    el("div", { class: "controls" }, el("label", {}, "upload PNG/JPEG (≤ 2 MiB) ", upload),
      el("label", {}, "layer ", select([...Array(info.n_layers).keys()].map((i) => [i, `layer ${i + 1}`]), layer,
        (v) => ctx.setState({ layer: Number(v) }), { id: "layer" })),
      el("label", {}, "head ", select([...Array(info.n_heads).keys()].map((i) => [i, `head ${i + 1}`]), head,
        (v) => ctx.setState({ head: Number(v) }), { id: "head" })),
      el("label", {}, "show ", select([["maps", "patch-grid maps"], ["overlay", "[CLS] maps over the image"]], view,
        (v) => { view = v; ctx.setState({}); }, { id: "vit-view" })),
      el("button", { id: "cls", onclick: () => ctx.setState({ token: 0 }) }, "select [CLS]")));
  if (uploadError) root.append(notice(uploadError, "error"));
  let r;
  try {
    r = await api("/api/vision", { model: state.model, image, layer, head, patch });
  } catch (e) {
    if (!image.upload) throw e;
    // a picture the server refuses: say why, and fall back to a sample so the tab (and the next model) still work
    uploadError = `That upload could not be used: ${e.message}. Showing an MNIST sample instead.`;
    image = DEFAULT_IMAGE;
    root.append(notice(uploadError, "error"));
    r = await api("/api/vision", { model: state.model, image, layer, head, patch });
  }
  const g = r.grid, size = r.pixels.length;
  const scale = Math.max(4, Math.floor(280 / size));
  const canvas = heatmap(el("canvas", { class: "image", id: "image" }), r.pixels, { size: size * scale, max: 255 });
  const ctx2 = canvas.getContext("2d"), cssSize = Number(canvas.dataset.cssWidth), cellPx = cssSize / g;
  ctx2.strokeStyle = "rgba(255,255,255,0.35)";
  for (let i = 1; i < g; i++) {
    ctx2.beginPath(); ctx2.moveTo(i * cellPx, 0); ctx2.lineTo(i * cellPx, cssSize); ctx2.stroke();
    ctx2.beginPath(); ctx2.moveTo(0, i * cellPx); ctx2.lineTo(cssSize, i * cellPx); ctx2.stroke();
  }
  if (patch > 0) {
    ctx2.lineWidth = 4; ctx2.strokeStyle = "#ff7f0e";
    ctx2.strokeRect(((patch - 1) % g) * cellPx, Math.floor((patch - 1) / g) * cellPx, cellPx, cellPx);
  }
  canvas.onclick = (ev) => {
    const b = canvas.getBoundingClientRect();
    const k = b.width ? cssSize / b.width : 1;
    const c = Math.floor((ev.clientX - b.left) * k / cellPx), row = Math.floor((ev.clientY - b.top) * k / cellPx);
    ctx.setState({ token: 1 + row * g + c });
  };
  const toGrid = (v) => [...Array(g)].map((_, i) => v.slice(1 + i * g, 1 + (i + 1) * g));
  // the canvases carry their numbers too (token order: [CLS], then patches in raster order)
  const attn = heatmap(el("canvas", { id: "patch-attention", dataset: { values: JSON.stringify(r.attention) } }),
    toGrid(r.attention), { size: 196 });
  const roll = heatmap(el("canvas", { id: "rollout", dataset: { values: JSON.stringify(r.rollout) } }),
    toGrid(r.rollout), { size: 196 });
  const imagePanel = el("div", { class: "panel narrow" }, el("h3", {}, "Image + patch grid (click a patch)"), canvas);
  const panels = view === "overlay" ? overlayPanels(r, g, layer, head, imagePanel) : [imagePanel,
    el("div", { class: "panel narrow" }, el("h3", {}, `Attention of ${r.tokens[patch]}, layer ${layer + 1}, head ${head + 1}`),
      attn, legend(Number(attn.dataset.peak), "attention weight (patch grid)"),
      el("p", { class: "help" }, "weight on [CLS]: ", el("b", { dataset: { weight: r.attention[0] } },
        fmt(r.attention[0])), "; row sum ", el("b", { id: "attn-row-sum", dataset: { rowSum: r.attention_row_sum } },
        fmt(r.attention_row_sum)))),
    el("div", { class: "panel narrow" }, el("h3", {}, "Attention rollout (all layers)"), roll,
      legend(Number(roll.dataset.peak), "rollout weight"),
      el("p", { class: "help" }, "heads averaged, residual added as ½I, multiplied through the layers; on [CLS]: ",
        el("b", { dataset: { rollout: r.rollout[0] } }, fmt(r.rollout[0])))),
  ];
  if (r.position_similarity) {
    const sim = [...Array(g)].map((_, i) => r.position_similarity.slice(i * g, (i + 1) * g));
    const of = r.position_similarity_of, name = r.tokens[of + 1];  // patch `of` is token of + 1
    panels.push(el("div", { class: "panel narrow" }, el("h3", {}, `Position-embedding similarity to ${name}` +
      (r.position_similarity_for_cls ? " (the top-left patch)" : "")),
    r.position_similarity_for_cls ? el("p", { class: "help", id: "pos-sim-cls" }, "[CLS] is selected. It has a " +
      "learned position vector too, but no place on the grid, so this map compares with the top-left patch, " +
      `${name}, instead. Click a patch to compare with it.`) : "",
    heatmap(el("canvas", { id: "pos-sim" }), sim, { size: 196, max: 1 }), legend(1, "cosine similarity"),
    el("p", { class: "help" }, "Cosine similarity of this checkpoint's learned position vectors to the vector " +
      `of ${name}; click another patch to move it.`),
      r.position_structure ? structureText(r.position_structure) : ""));
  }
  if (r.prediction) panels.push(el("div", { class: "panel", id: "prediction" }, el("h3", {}, "Prediction"),
    bars(r.prediction.map((p) => ({ label: p.label, value: p.prob, attrs: { "data-prob": p.prob, "data-class": p.class } })),
      { width: 300, labelWidth: 40, max: 1 })));
  const tokens = el("div", { class: "chips", id: "vit-tokens", "aria-label": "patch tokens" });
  chipRow(tokens, r.tokens.map((t, i) => ({ index: i, token: t, cls: i === 0 ? "special" : "", label: t })), patch,
    (i) => ctx.setState({ token: i }), { name: "patch token" });
  root.append(el("div", { class: "row" }, panels),
    el("h3", {}, "Token sequence fed to the transformer (click, or Tab in and use the arrow keys)"), tokens,
    r.walk ? walkPanel(r.walk, r.pixels) : "");
}

// overlay view: [CLS]'s attention in the chosen layer/head, and its rollout through all layers, over the image
function overlayPanels(r, g, layer, head, imagePanel) {
  const patches = (v) => v.slice(1);  // token 0 is [CLS] itself; the overlay shows the patches
  const attn = overlay(el("canvas", { id: "overlay-attention" }), r.pixels, patches(r.cls_attention), g,
    { label: `[CLS] attention, layer ${layer + 1}, head ${head + 1}` });
  const roll = overlay(el("canvas", { id: "overlay-rollout" }), r.pixels, patches(r.cls_rollout), g,
    { label: "[CLS] attention rollout through all layers" });
  return [imagePanel,
    el("div", { class: "panel narrow" }, el("h3", {}, `[CLS] → patches, layer ${layer + 1}, head ${head + 1}`), attn,
      legend(Number(attn.dataset.peak), "attention weight (colour and opacity)"),
      el("p", { class: "help" }, "What the token the classifier reads looks at in this head; its weight on itself: ",
        el("b", { id: "overlay-cls-self", dataset: { weight: r.cls_attention[0] } }, fmt(r.cls_attention[0])))),
    el("div", { class: "panel narrow" }, el("h3", {}, "[CLS] rollout over the image (all layers)"), roll,
      legend(Number(roll.dataset.peak), "rollout weight (colour and opacity)"),
      el("p", { class: "help" }, "Heads averaged, residual added as ½I, multiplied through the layers: how much " +
        "of [CLS]'s final vector traces back to each patch. On [CLS] itself: ",
        el("b", { dataset: { rollout: r.cls_rollout[0] } }, fmt(r.cls_rollout[0]))))];
}

function visionNotes() {
  return el("div", { class: "lesson", id: "vision-notes" },
    el("h2", {}, "ViT or CNN: what each assumes"),
    el("p", {}, "A convolution looks at a small neighbourhood and applies the same filter everywhere: locality and " +
      "translation are built in, and a global view only appears after many layers. A ViT's attention may connect " +
      "any two patches from the first layer, and nothing tells it that neighbouring patches are related: it " +
      "must learn that from data (its position vectors are where it does). With little data the CNN's built-in " +
      "assumptions win; with a lot, the ViT catches up and often overtakes, because it is not held to them."),
    el("p", {}, "Nothing in attention is about language: patches, graph nodes, protein residues or notes of music " +
      "can all be tokens."),
    el("h2", {}, "[CLS] and self-distillation (DINO)"),
    el("p", {}, "A [CLS] token goes in front of the patches; its final vector summarises the image. With labels, " +
      "a linear classifier reads it. DINO trains without labels: a student network sees small crops, a teacher " +
      "(an average of past students) sees larger views of the same image, and the student learns to give the " +
      "teacher's output. Its [CLS] attention maps end up outlining objects though no one ever marked them: the " +
      "same idea as contrastive learning (Self-supervised tab), within images alone."),
    references(["dosovitskiy2021", "caron2021", "abnar2020", "radford2021"]));
}
