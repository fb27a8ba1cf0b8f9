// Tab Vision: an image becomes [CLS] + a grid of patch tokens. Click a patch: its attention in one layer/head,
// the attention rollout through all layers, and the similarity of its learned position embedding to the others.
import { api, bars, el, fmt, heatmap, notice, select } from "../util.js";
import { needs } from "./common.js";

let image = { mnist: 0 };

export async function render(root, ctx) {
  const { state, info } = ctx;
  root.append(el("h2", {}, "Vision Transformer"), el("p", { class: "help" }, "The same self-attention, over " +
    "image patches instead of words. Patches are numbered in raster order; a learned position vector tells " +
    "the model where each came from."));
  if (!needs(root, ctx, ["vit"], "This tab needs a vision transformer (vit-mnist).")) return;
  const samples = await api("/api/vision/samples");
  const layer = Math.min(state.layer || 0, info.n_layers - 1), head = Math.min(state.head || 0, info.n_heads - 1);
  const patch = Number.isInteger(state.token) ? state.token : 0;
  const upload = el("input", { type: "file", id: "upload", accept: "image/png,image/jpeg" });
  upload.addEventListener("change", () => {
    const f = upload.files[0]; if (!f) return;
    const reader = new FileReader();
    reader.onload = () => { image = { upload: reader.result }; ctx.setState({}); };
    reader.readAsDataURL(f);
  });
  const thumbs = el("div", { class: "chips", id: "samples" }, samples.mnist.map((s) => {
    const c = heatmap(el("canvas", { dataset: { sample: s.index, label: s.label }, title: `digit ${s.label}` }),
      [...Array(28)].map((_, i) => s.pixels.slice(i * 28, i * 28 + 28)), { size: 42, max: 255 });
    c.addEventListener("click", () => { image = { mnist: s.index }; ctx.setState({ token: 0 }); });
    return c;
  }), samples.photos.map((p) => el("button", { onclick: () => { image = { photo: p }; ctx.setState({}); } }, p)));
  root.append(el("div", { class: "controls" }, "MNIST samples: ", thumbs),
    samples.mnist_note ? notice(samples.mnist_note, "warn") : "",
    el("div", { class: "controls" }, el("label", {}, "upload PNG/JPEG (≤ 2 MiB) ", upload),
      el("label", {}, "layer ", select([...Array(info.n_layers).keys()].map((i) => [i, `layer ${i + 1}`]), layer,
        (v) => ctx.setState({ layer: Number(v) }), { id: "layer" })),
      el("label", {}, "head ", select([...Array(info.n_heads).keys()].map((i) => [i, `head ${i + 1}`]), head,
        (v) => ctx.setState({ head: Number(v) }), { id: "head" })),
      el("button", { id: "cls", onclick: () => ctx.setState({ token: 0 }) }, "select [CLS]")));
  const r = await api("/api/vision", { model: state.model, image, layer, head, patch });
  const g = r.grid, size = r.pixels.length;
  const scale = Math.max(4, Math.floor(280 / size));
  const canvas = heatmap(el("canvas", { class: "image", id: "image" }), r.pixels, { size: size * scale, max: 255 });
  const ctx2 = canvas.getContext("2d"), cellPx = canvas.width / g;
  ctx2.strokeStyle = "rgba(255,255,255,0.35)";
  for (let i = 1; i < g; i++) {
    ctx2.beginPath(); ctx2.moveTo(i * cellPx, 0); ctx2.lineTo(i * cellPx, canvas.height); ctx2.stroke();
    ctx2.beginPath(); ctx2.moveTo(0, i * cellPx); ctx2.lineTo(canvas.width, i * cellPx); ctx2.stroke();
  }
  if (patch > 0) {
    ctx2.lineWidth = 4; ctx2.strokeStyle = "#ff7f0e";
    ctx2.strokeRect(((patch - 1) % g) * cellPx, Math.floor((patch - 1) / g) * cellPx, cellPx, cellPx);
  }
  canvas.onclick = (ev) => {
    const b = canvas.getBoundingClientRect();
    const c = Math.floor((ev.clientX - b.left) / cellPx), row = Math.floor((ev.clientY - b.top) / cellPx);
    ctx.setState({ token: 1 + row * g + c });
  };
  const toGrid = (v) => [...Array(g)].map((_, i) => v.slice(1 + i * g, 1 + (i + 1) * g));
  // the canvases carry their numbers too (token order: [CLS], then patches in raster order)
  const attn = heatmap(el("canvas", { id: "patch-attention", dataset: { values: JSON.stringify(r.attention) } }),
    toGrid(r.attention), { size: 196 });
  const roll = heatmap(el("canvas", { id: "rollout", dataset: { values: JSON.stringify(r.rollout) } }),
    toGrid(r.rollout), { size: 196 });
  const panels = [
    el("div", { class: "panel" }, el("h3", {}, "Image + patch grid (click a patch)"), canvas),
    el("div", { class: "panel" }, el("h3", {}, `Attention of ${r.tokens[patch]}, layer ${layer + 1}, head ${head + 1}`),
      attn, el("p", { class: "help" }, "weight on [CLS]: ", el("b", { dataset: { weight: r.attention[0] } },
        fmt(r.attention[0])), "; row sum ", el("b", { id: "attn-row-sum", dataset: { rowSum: r.attention_row_sum } },
        fmt(r.attention_row_sum)))),
    el("div", { class: "panel" }, el("h3", {}, "Attention rollout (all layers)"), roll,
      el("p", { class: "help" }, "heads averaged, residual added as ½I, multiplied through the layers; on [CLS]: ",
        el("b", { dataset: { rollout: r.rollout[0] } }, fmt(r.rollout[0])))),
  ];
  if (r.position_similarity) {
    const sim = [...Array(g)].map((_, i) => r.position_similarity.slice(i * g, (i + 1) * g));
    panels.push(el("div", { class: "panel" }, el("h3", {}, `Position-embedding similarity to patch ${r.position_similarity_of}`),
      heatmap(el("canvas", { id: "pos-sim" }), sim, { size: 196, max: 1 }),
      el("p", { class: "help" }, "cosine similarity of learned position vectors: trained ViTs show the 2-D grid.")));
  }
  if (r.prediction) panels.push(el("div", { class: "panel", id: "prediction" }, el("h3", {}, "Prediction"),
    bars(r.prediction.map((p) => ({ label: p.label, value: p.prob, attrs: { "data-prob": p.prob, "data-class": p.class } })),
      { width: 300, labelWidth: 40, max: 1 })));
  root.append(el("div", { class: "row" }, panels),
    el("h3", {}, "Token sequence fed to the transformer"),
    el("div", { class: "chips", id: "vit-tokens" }, r.tokens.map((t, i) => el("span", {
      class: "chip" + (i === patch ? " selected" : "") + (i === 0 ? " special" : ""), dataset: { index: i },
      onclick: () => ctx.setState({ token: i }) }, t))));
}
