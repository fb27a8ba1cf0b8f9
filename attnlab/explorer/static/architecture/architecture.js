// Tab Architecture: the loaded model's block diagram drawn from its config, block details with shapes and
// parameter counts, the parameter calculator (closed form beside the exact count) and the famous-models table.
import { api, el, fmt, human, notice, svg, table, tokenLabel } from "../util.js";
import { references } from "../references.js";
import { forwardPass } from "./forward.js";

const COLORS = { embed_extras: "#dbe9f6", tokens: "#dbe9f6", patches: "#dbe9f6", positions: "#e8e0f5", attn: "#fde2c8", norm1: "#eef0f3",
  cross_attn: "#ffd6d6", norm_cross: "#eef0f3", ffn: "#d8f0dc", norm2: "#eef0f3", final_norm: "#eef0f3",
  head: "#fff3c4" };

export async function render(root, ctx) {
  const { state, info } = ctx;
  root.append(el("h2", {}, "Architecture"), el("p", { class: "help" }, "Every topology is the same block " +
    "stacked N times: attention routes information across positions, the feed-forward network rewrites each " +
    "position, residual connections and norms wrap both. Click a block."));
  const detail = el("div", { class: "panel", id: "block-detail" }, el("p", { class: "help" },
    "← Click a block to explore it"));
  if (info) {
    const q = new URLSearchParams({ n: 8 });
    if (state.text) q.set("text", state.text);
    const arch = await api(`/api/architecture/${encodeURIComponent(state.model)}?${q}`);
    const forward = forwardPass(ctx);
    root.append(el("div", { class: "row" }, el("div", { class: "diagram" }, diagram(arch, detail, forward)), detail),
      el("p", { class: "help", id: "arch-total" }, `${info.label}: `,
        el("b", { dataset: { params: arch.total_params } }, arch.total_params.toLocaleString("en-US")),
        " parameters (measured) vs closed form V·d + L·d + N·12d² = ",
        el("b", { dataset: { closedForm: arch.closed_form } }, arch.closed_form.toLocaleString("en-US")),
        `; shapes shown for n = ${arch.n} tokens.`), particulars(arch, info), forward);
  } else {
    root.append(notice("Pick an available model to draw its diagram.", "warn"));
  }
  root.append(el("h2", {}, "Three topologies, one block"), topologyCards(ctx),
    el("h2", {}, "Parameter calculator"), await calculator(),
    el("h2", {}, "Famous models, counted by attnlab from its presets"), await famous(),
    el("h2", {}, "Inference walk-throughs"), walkthroughs(ctx),
    references(["vaswani2017", "devlin2019", "radford2019", "brown2020", "raffel2020", "xiong2020", "ainslie2023"]));
}

// What is particular to the model in view, and the closed form's gap to the real count, term by term.
function particulars(arch, info) {
  const g = arch.count_gap;
  const rows = g.rows.map((r) => [r.term, el("span", { dataset: { gap: r.params } },
    (r.params > 0 ? "+" : r.params < 0 ? "−" : "") + Math.abs(r.params).toLocaleString("en-US")),
  el("span", { class: "how" }, r.how)]);
  const sum = g.rows.reduce((a, r) => a + r.params, 0);
  const t = table(["term", "parameters", "how"], [
    ["closed form V·d + L·d + N·12d²", el("b", {}, g.closed_form.toLocaleString("en-US")), "the seeds' formula"],
    ...rows,
    [el("b", {}, "= the real count"), el("b", { id: "gap-total", dataset: { total: g.closed_form + sum } },
      (g.closed_form + sum).toLocaleString("en-US")), "measured from the built model: " +
      g.measured.toLocaleString("en-US")]]);
  t.querySelectorAll("tbody tr").forEach((tr) => { const c = tr.children[2]; if (c) c.className = "how"; });
  return el("section", { class: "panel", id: "particulars", "aria-labelledby": "particulars-title" },
    el("h2", { id: "particulars-title" }, `What is particular to ${info.label}`),
    el("ul", {}, arch.features.map((f) => el("li", {}, el("b", {}, f.name), ": ", f.why))),
    el("h3", {}, "Why the closed form is not the real count"),
    el("p", { class: "help" }, "The formula assumes d × d attention matrices, a two-matrix FFN with d_ff = 4d and " +
      "nothing else. Each row is one way this model departs from that; the rows add up to the real count exactly."),
    el("div", { class: "fw-scroll", id: "count-gap" }, t));
}

const TOPOLOGIES = [
  ["encoder", "Encoder only", "every token sees every token (no mask)",
    "N tokens in, N context-aware vectors out, all at once. Nothing is generated: a small head reads the vectors. " +
    "The first vector ([CLS]) can feed a classifier, every vector can get a label, and whole-sentence vectors " +
    "placed near each other by meaning make semantic search work even without shared words.",
    "BERT, RoBERTa, ELECTRA, MiniLM", "classification, named entities, embeddings and search, extractive QA",
    ["toy", "bert-mlm", "minilm"]],
  ["decoder", "Decoder only", "causal mask: a token sees itself and what came before",
    "Predicts the next token from the ones before it, appends it and repeats. Training needs no labels: every " +
    "position of a text is a training example. The vectors of earlier tokens never change, so their K and V " +
    "can be cached.",
    "GPT-2/3/4, LLaMA, Mistral, SmolLM2", "chat assistants, code completion, any text generation",
    ["gpt-char", "gpt-bpe", "smollm2"]],
  ["encoder-decoder", "Encoder–decoder", "encoder: no mask; decoder: causal + cross-attention",
    "The encoder reads the whole source once; its vectors stay fixed. The decoder writes the target one token " +
    "at a time with causal self-attention, and each of its layers looks up the source through cross-attention " +
    "(queries from the target, keys and values from the encoder).",
    "the original Transformer, T5, BART, Marian", "translation, summarisation, any sequence-to-sequence task",
    ["translate-numbers"]],
];

function topologyCards(ctx) {
  return el("div", { class: "cards", id: "topologies" }, TOPOLOGIES.map(([topo, title, mask, text, examples, uses,
    ids]) => {
    const here = ids.filter((id) => ctx.models.some((m) => m.id === id && m.available));
    return el("section", { class: "card", dataset: { topology: topo },
      "aria-current": ctx.info && ctx.info.topology === topo ? "true" : null },
    el("h3", {}, title, ctx.info && ctx.info.topology === topo ? " (the selected model)" : ""),
    el("div", { class: "tags" }, mask), el("p", {}, text),
    el("p", {}, el("b", {}, "Examples: "), examples), el("p", {}, el("b", {}, "Used for: "), uses),
    here.length ? el("div", { class: "controls" }, "Open: ", here.map((id) => el("button", { type: "button",
      onclick: () => ctx.navigate({ model: id, tab: "architecture" }) }, id))) : "");
  }));
}

function diagram(arch, detail, forward) {
  const W = 230, BH = 34, GAP = 8, colGap = 130;  // the gap holds the "× N layers" label, the bridge and its label
  const cols = arch.stacks.length;
  const rowsOf = (s) => s.embed.length + s.layer.length + s.tail.length;
  const maxRows = Math.max(...arch.stacks.map(rowsOf)) + 1;
  const H = 60 + maxRows * (BH + GAP) + 40;
  const width = cols * W + (cols - 1) * colGap + 74;
  // two stacks side by side are too wide for a phone: shrunk to fit, their text would be ~6 px. The diagram
  // keeps at least 92% of its size (12 px text) and its box scrolls sideways instead.
  const root = svg("svg", { width, height: H, id: "diagram", viewBox: `0 0 ${width} ${H}`, role: "group",
    style: cols > 1 ? `min-width: ${Math.round(width * 0.92)}px` : null,
    "aria-label": "block diagram, bottom (input) to top (output); each block is a button" });
  const positions = {};
  let selected = null;
  root.append(svg("defs", {}, svg("marker", { id: "flow", markerWidth: 7, markerHeight: 7, refX: 6, refY: 3.5,
    orient: "auto" }, svg("path", { d: "M0,0 L7,3.5 L0,7 z", fill: "#667" }))));
  arch.stacks.forEach((s, ci) => {
    const x = 34 + ci * (W + colGap);
    let y = H - 30;
    let prevTop = null;
    const place = (b) => {
      y -= BH + GAP;
      if (prevTop !== null) root.append(svg("line", { x1: x + W / 2, y1: prevTop, x2: x + W / 2, y2: y + BH + 1,
        stroke: "#667", "stroke-width": 1.2, "marker-end": "url(#flow)" }));
      prevTop = y;
      const g = svg("g", { class: "block", dataset: { block: b.id, params: b.params }, tabindex: "0",
        role: "button", "aria-label": `${b.title}: ${b.params.toLocaleString("en-US")} parameters; show details` });
      g.append(svg("rect", { x, y, width: W, height: BH, rx: 6, fill: COLORS[b.kind] || "#eee", stroke: "#99a" }),
        svg("text", { x: x + 10, y: y + 21, "font-size": 13 }, b.title),
        svg("text", { x: x + W - 8, y: y + 21, "font-size": 11, "text-anchor": "end", fill: "#667" },
          human(b.params)));
      const open = () => {
        if (selected) selected.classList.remove("selected");
        selected = g; g.classList.add("selected"); showDetail(detail, b, forward);
      };
      g.addEventListener("click", open);
      g.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); open(); } });
      root.append(g);
      positions[b.id] = { x, y };
      return y;
    };
    root.append(svg("text", { x, y: H - 10, "font-size": 12, fill: "#445" },
      s.name === "vit" ? "image → patches" : s.name === "decoder" && cols > 1 ? "target tokens" : "input tokens"));
    s.embed.forEach(place);
    const bottom = y;
    const byId = Object.fromEntries(s.layer.map((b) => [b.id, b]));
    const order = s.run_order || s.layer.map((b) => b.id);
    order.forEach((id) => place(byId[id]));
    // residual connections: around each (norm, sublayer) pair, the input skips ahead and is added back
    for (let i = 0; i + 1 < order.length; i += 2) {
      const low = positions[order[i]], high = positions[order[i + 1]];
      const y1 = low.y + BH + GAP / 2, y2 = s.norm_placement === "pre" ? high.y - GAP / 2 : high.y + BH / 2;
      root.append(svg("path", { d: `M${x},${y1} C${x - 26},${y1} ${x - 26},${y2} ${x},${y2}`, fill: "none",
        stroke: "#667", "stroke-width": 1.5, "marker-end": "url(#flow)", class: "residual" }),
      svg("text", { x: x - 24, y: (y1 + y2) / 2 + 4, "font-size": 13, fill: "#445", "text-anchor": "middle" }, "+"));
    }
    root.append(svg("rect", { x: x - 8, y: y - 6, width: W + 16, height: bottom - y + 4, rx: 8, fill: "none",
      stroke: "#445", "stroke-dasharray": "5 4" }),
    svg("text", { x: x + W + 20, y: (y + bottom) / 2, "font-size": 13, "font-weight": 600, fill: "#445",
      transform: `rotate(90 ${x + W + 20} ${(y + bottom) / 2})`, "text-anchor": "middle" },
    `× ${s.n_layers} layers${s.causal ? " · causal" : ""}${s.norm_placement === "pre" ? " · pre-norm" : ""}`));
    s.tail.forEach(place);
    if (ci === cols - 1) place(arch.head);
    root.append(svg("text", { x, y: y - 10, "font-size": 12, fill: "#445" },
      ci === cols - 1 ? "output" : "encoder output → every decoder layer"),
    svg("text", { x: x - 30, y: H - 30, "font-size": 10, fill: "#667" }, "+ = residual"));
  });
  if (cols > 1) {  // the cross-attention bridge from the encoder's output to each decoder layer's cross-attention
    const enc = arch.stacks[0], dec = arch.stacks[1];
    const from = positions[(enc.tail[0] || enc.layer[enc.layer.length - 1]).id];
    const to = positions[dec.layer.find((b) => b.kind === "cross_attn").id];
    const x1 = from.x + W, y1 = from.y + BH / 2, x2 = to.x, y2 = to.y + BH / 2;
    root.append(svg("path", { d: `M${x1},${y1} C${x1 + 50},${y1} ${x2 - 50},${y2} ${x2},${y2}`, fill: "none",
      stroke: "#d62728", "stroke-width": 2.5, "marker-end": "url(#arrow)", id: "bridge" }),
    svg("defs", {}, svg("marker", { id: "arrow", markerWidth: 8, markerHeight: 8, refX: 7, refY: 4,
      orient: "auto" }, svg("path", { d: "M0,0 L8,4 L0,8 z", fill: "#d62728" }))),
    // the label sits in the gap between the stacks, under the arrow: on neither column's blocks
    // between the encoder's rotated "× N layers" (to x1 + 28) and the decoder's residual arcs (from x2 - 28)
    svg("text", { x: (x1 + x2) / 2, y: Math.max(y1, y2) + 20, "font-size": 12, fill: "#b31b1b",
      "text-anchor": "middle", id: "bridge-label" }, svg("tspan", { x: (x1 + x2) / 2 }, "K, V for"),
    svg("tspan", { x: (x1 + x2) / 2, dy: 14 }, "cross-attn")));
  }
  return root;
}

// diagram block kind -> the forward pass's stage that computes it (level, stage id)
const STAGE_OF = { tokens: ["model", "tokens"], patches: ["model", "input"], embed_extras: ["model", "positions"],
  positions: ["model", "positions"], attn: ["block", "attn.weights"], norm1: ["block", "resid_mid"],
  cross_attn: ["block", "cross_attn.weights"], norm_cross: ["block", "resid_cross"], ffn: ["block", "ffn.hidden"],
  norm2: ["block", "resid_post"], final_norm: ["model", "final_norm"], head: ["model", "logits"] };

function showDetail(box, b, forward) {
  box.replaceChildren(el("h3", {}, b.title), el("p", {}, b.text),
    el("p", { class: "help" }, "shapes: (batch, heads, tokens, d_head) or (batch, tokens, d_model)"),
    el("div", { class: "kv" }, Object.entries(b.shapes).flatMap(([k, v]) => [el("span", {}, k),
      el("code", { dataset: { shape: v.join(",") } }, `(${v.join(", ")})`)])),
    el("p", {}, "parameters: ", el("b", { id: "detail-params", dataset: { params: b.params } },
      b.params.toLocaleString("en-US")),
    b.n_layers ? ` (${b.params_per_layer.toLocaleString("en-US")} per layer × ${b.n_layers})` : "",
    b.tied ? " (projection tied to the token embeddings: counted there)" : ""));
  const to = STAGE_OF[b.kind];
  if (forward && to) {
    const pre = b.id.includes(".") && ["encoder", "decoder"].includes(b.id.split(".")[0]) ? b.id.split(".")[0] : null;
    // a pre-norm's norm is the stage before its sublayer: the norm's own output
    const stage = b.norm_placement === "pre" && ["norm1", "norm2", "norm_cross"].includes(b.kind) ? b.kind : to[1];
    box.append(el("button", { type: "button", id: "detail-watch", class: "primary",
      onclick: () => forward.showStage(to[0], stage, pre) }, "Watch it on your sentence ›"));
  }
}

async function calculator() {
  const fields = { V: 30522, d: 768, N: 12, h: 12, L: 512, d_ff: 3072 };
  const inputs = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k,
    el("input", { type: "number", id: `calc-${k}`, value: v, min: 1 })]));
  const out = el("div", { id: "calc-out" });
  async function run() {
    const q = new URLSearchParams(Object.fromEntries(Object.entries(inputs).map(([k, i]) => [k, i.value])));
    try {
      const r = await api(`/api/params?${q}`);
      out.replaceChildren(el("p", {}, "closed form V·d + L·d + N·12d² = ",
        el("span", { dataset: { term: "V*d", value: r.terms["V*d"] } }, fmt(r.terms["V*d"])), " + ",
        el("span", { dataset: { term: "L*d", value: r.terms["L*d"] } }, fmt(r.terms["L*d"])), " + ",
        el("span", { dataset: { term: "N*12*d^2", value: r.terms["N*12*d^2"] } }, fmt(r.terms["N*12*d^2"])), " = ",
        el("b", { id: "calc-closed", dataset: { closedForm: r.closed_form } }, r.closed_form.toLocaleString("en-US")),
        " ; exact count of the encoder these sizes build: ",
        el("b", { id: "calc-exact", dataset: { exact: r.exact } }, r.exact.toLocaleString("en-US")),
        " (", el("span", { dataset: { relativeDifference: (r.exact - r.closed_form) / r.closed_form } },
          `${((r.exact - r.closed_form) / r.closed_form * 100).toFixed(2)}%`), " more: biases, norms, d_ff ≠ 4d)"),
      table(["component", "parameters"], r.rows.map((row) => [row.component,
        el("span", { dataset: { params: row.params } }, row.params.toLocaleString("en-US"))])));
    } catch (e) { out.replaceChildren(notice(e.message, "error")); }
  }
  Object.values(inputs).forEach((i) => i.addEventListener("change", run));
  await run();
  return el("div", { class: "panel", id: "calculator" }, el("div", { class: "controls" },
    Object.entries(inputs).map(([k, i]) => el("label", {}, `${k} `, i))), out);
}

async function famous() {
  const rows = await api("/api/famous");
  return el("div", { class: "panel", id: "famous" }, table(["model", "V", "d", "N", "h", "parameters (exact)",
    "V·d + L·d + N·12d²"], rows.map((r) => [r.model, el("span", { dataset: { v: r.V } }, r.V.toLocaleString("en-US")),
    el("span", { dataset: { d: r.d } }, r.d), el("span", { dataset: { n: r.N } }, r.N),
    el("span", { dataset: { h: r.h } }, r.h),
    el("span", { dataset: { params: r.params, model: r.model } }, `${human(r.params)} (${r.params.toLocaleString("en-US")})`),
    el("span", { dataset: { closedForm: r.closed_form } }, human(r.closed_form))])));
}

const WALKS = [
  ["encoder", "Encoder: N tokens in, N vectors out, all at once"],
  ["decoder", "Decoder: predict the next token, append it, repeat"],
  ["encoder-decoder", "Encoder-decoder: encode the source once, then generate the target"],
];
const SLOW = ["smollm2"];  // never loaded just for a walk-through: it takes tens of seconds

// One walk-through per topology, each run live on the selected model when it has that topology, else on the
// first available small model that does.
function walkthroughs(ctx) {
  const row = el("div", { class: "row", id: "walkthroughs" });
  for (const [topo, title] of WALKS) {
    const current = ctx.info && ctx.info.topology === topo ? ctx.state.model : null;
    const other = ctx.models.find((m) => m.available && m.topology === topo && !SLOW.includes(m.id));
    const model = current || (other && other.id);
    const box = el("div", { class: "panel walk", dataset: { topology: topo },
      id: current ? "walkthrough" : undefined }, el("h3", {}, title));
    row.append(box);
    if (!model) {
      box.append(el("p", { class: "help" }, `No small ${topo} is available here; select one in the model menu ` +
        "(or train one with its attnlab recipe) to run this walk-through."));
      continue;
    }
    const text = current && ctx.state.text ? ctx.state.text : (topo === "encoder-decoder" ? "forty-two" :
      current ? "the cat sat on the mat" : "the cat sat");
    api("/api/walkthrough", { model, text }).then((w) => walkBody(box, w, topo, model))
      .catch((e) => box.append(notice(e.message, "error")));
  }
  return row;
}

function walkBody(box, w, topo, model) {
  box.append(el("p", { class: "help" }, `model: ${model}`),
    el("div", { class: "chips" }, w.tokens.map((t) => el("span", { class: "chip" }, tokenLabel(t)))),
    el("p", {}, `N = ${w.n} tokens in → output `, el("code", { class: "walk-shape",
      dataset: { shape: w.output_shape.join(",") } }, `(${w.output_shape.join(", ")})`),
    topo === "encoder" ? " — the first vector ([CLS] in BERT) feeds a classifier; every vector can get a label" :
      topo === "decoder" ? " — only the last vector predicts the next token" :
        " — held fixed while the decoder cross-attends to it"));
  if (w.first_vector) box.append(el("p", { class: "help" }, "first vector, first 8 of d = " + w.d_model + ": ",
    w.first_vector.map((v) => el("code", { dataset: { value: v } }, fmt(v, 3) + " "))));
  if (w.steps) box.append(table(["step", "context", "greedy next token", "probability"], w.steps.map((s, i) => [
    i + 1, s.context, tokenLabel(s.token), el("span", { class: "walk-prob", dataset: { prob: s.prob } }, fmt(s.prob))])),
  el("p", { class: "help" }, "With a KV cache each step computes Q, K, V for the new token only (Generation tab)."));
  box.dataset.ready = "1";
}
