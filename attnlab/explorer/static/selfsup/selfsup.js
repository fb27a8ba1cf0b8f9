// Tab Self-supervised: masked-language modelling on an encoder (click tokens to mask, or draw BERT's random
// 15% with its 80/10/10 split), and next-token prediction on a decoder, with the mask-placement lesson.
import { api, el, fmt, focusKey, heatmap, legend, notice, refocus, svg, table, tokenLabel } from "../util.js";
import { needs, sentenceBox } from "../common.js";
import { references } from "../references.js";

export async function render(root, ctx) {
  root.append(el("h2", {}, "Self-supervised pre-training"), el("p", { class: "help" }, "The text is its own " +
    "label: hide tokens and predict them (MLM, BERT), or predict each next token (causal LM, GPT)."));
  const essay = concepts(ctx);
  try {
    await instrument(root, ctx);
  } finally {
    root.append(essay);
  }
}

async function instrument(root, ctx) {
  if (!needs(root, ctx, ["encoder", "decoder"], "This tab needs an MLM encoder or a causal decoder.")) return;
  root.append(sentenceBox(ctx));
  if (ctx.info.topology === "encoder") {
    if (!ctx.info.has_mlm) {  // toy and MiniLM (a sentence-embedding model) carry no MLM head
      const noHead = ["toy", "minilm"];
      needs(root, { ...ctx, info: { ...ctx.info, topology: "encoder without an MLM head" },
        models: ctx.models.filter((m) => !noHead.includes(m.id)) }, ["encoder", "decoder"],
      "Masked-token prediction needs an encoder trained with an MLM head (smollm2-mlm is SmolLM2 taught to fill " +
      "in words; minilm-mlm is this MiniLM with one; bert-mlm a small one trained here); next-token prediction a " +
      "decoder.");
      return;
    }
    return mlm(root, ctx);
  }
  return causal(root, ctx);
}

async function mlm(root, ctx) {
  const { state } = ctx;
  const text = state.text || "";
  let selections = [];  // {position, action, token_id, token}
  const chips = el("div", { class: "chips", id: "mlm-chips" });
  const out = el("div", { id: "mlm-out" });
  const seedInput = el("input", { type: "number", id: "seed", value: 0 });
  root.append(el("p", { class: "help" }, "One word is masked to start with: the model guesses it from the words " +
    "around it, on both sides. Click tokens to mask them (toggle), or draw BERT's random 15%: each " +
    "picked token becomes [MASK] (80%), a random token (10%) or stays unchanged (10%); all picked positions " +
    "count in the loss."),
  el("div", { class: "controls" }, el("button", { id: "draw", onclick: draw }, "Draw random 15% (80/10/10)"),
    el("label", {}, "seed ", seedInput), el("button", { id: "clear", onclick: () => { selections = []; update(); } },
      "Clear")), chips, out);
  // What the guesses come from: a masked LM knows the words of what it was trained on, so say what that was.
  const entry = ctx.models.find((m) => m.id === state.model);
  if (entry && entry.description) {
    root.insertBefore(el("p", { class: "help", id: "mlm-model" }, `The model: ${entry.label}, ${entry.description}. ` +
      "Its guesses come from what it was trained on."), chips.previousSibling);
  }
  const base = await api("/api/mlm/draw", { model: state.model, text, seed: 0 });  // tokens + specials
  // The first look already predicts: the sentence's last whole word (three letters or more, not a word piece) is
  // masked, so the learner sees the model's guesses before clicking anything.
  const words = base.tokens.map((t, i) => i).filter((i) => !base.special[i] &&
    /^\p{L}{3,}$/u.test(tokenLabel(base.tokens[i]).replace(/^·/, "")));
  if (words.length) selections = [{ position: words[words.length - 1], action: "mask" }];

  async function draw() {
    const d = await api("/api/mlm/draw", { model: state.model, text, seed: Number(seedInput.value) });
    selections = d.draws;
    update();
  }
  function toggle(i) {
    const k = selections.findIndex((s) => s.position === i);
    if (k >= 0) selections.splice(k, 1); else selections.push({ position: i, action: "mask" });
    update();
  }
  async function update() {
    const focused = focusKey(document.activeElement, chips);  // Space on a chip redraws the row: keep its focus
    chips.replaceChildren(...base.tokens.map((t, i) => {
      const s = selections.find((x) => x.position === i);
      const cls = "chip" + (base.special[i] ? " special" : "") + (s ? (s.action === "mask" ? " masked" :
        ` ${s.action}`) : "");
      const label = s ? (s.action === "mask" ? `[MASK] (${tokenLabel(t)})` : s.action === "random" ?
        `${tokenLabel(s.token)} ← random (${tokenLabel(t)})` : `${tokenLabel(t)} (kept)`) : tokenLabel(t);
      return el("button", { type: "button", class: cls, dataset: { index: i, action: s ? s.action : "none" },
        "aria-pressed": s ? "true" : "false", "aria-label": `token ${i}: ${label}; press to toggle its mask`,
        onclick: () => toggle(i) }, label);
    }));
    refocus(focused, chips);
    if (!selections.length) { out.replaceChildren(el("p", { class: "help" }, "Select at least one token.")); return; }
    try {
      const r = await api("/api/mlm/predict", { model: state.model, text, selections });
      const n = r.tokens.length, sel = r.rows.map((x) => x.position);
      const maskedCols = r.rows.filter((x) => x.action !== "keep").map((x) => x.position);
      const matrix = [...Array(n)].map(() => Array(n).fill(1));
      const canvas = heatmap(el("canvas", { id: "mlm-mask" }), matrix, { highlightCols: maskedCols,
        highlightRows: sel, size: 300, max: 2, rowLabels: r.corrupted, colLabels: r.corrupted });
      out.replaceChildren(el("div", { class: "row" },
        el("div", { class: "panel" }, el("h3", {}, "Predictions at the selected positions"),
          table(["pos", "original", "input", "top-5 predictions", "loss −log p(original)"], r.rows.map((row) => [
            row.position, tokenLabel(row.original), tokenLabel(row.input_token),
            el("span", {}, row.top5.map((p) => el("span", { class: "pred", dataset: { prob: p.prob, token: p.token } },
              `${tokenLabel(p.token)} ${fmt(p.prob, 3)}  `))),
            el("span", { class: "loss", dataset: { loss: row.loss, position: row.position } }, fmt(row.loss))])),
          el("p", {}, "mean loss over the selected positions: ",
            el("b", { id: "mlm-loss", dataset: { loss: r.loss } }, fmt(r.loss)))),
        el("div", { class: "panel" }, el("h3", {}, "MLM attention mask"), canvas, maskLegend(),
          el("p", { class: "help" }, "No position is blocked: every query sees every key (all cells are the " +
            "same colour: 1 = may attend). What differs is what a cell connects, in four kinds:"),
          el("ul", { id: "mask-legend-text" },
            el("li", {}, el("b", {}, "ordinary row → ordinary column: "), "a token reads a real word; no loss here."),
            el("li", {}, el("b", {}, "ordinary row → substituted column (orange): "), "a token reads a [MASK] or a " +
              "random word instead of the original."),
            el("li", {}, el("b", {}, "selected row (green) → ordinary column: "), "a position that will be scored " +
              "gathers clues from real context; this is where the learning signal comes from."),
            el("li", {}, el("b", {}, "selected row → substituted column: "), "a scored position reads another " +
              "substituted token (or itself): no information about the original there.")))));
    } catch (e) { out.replaceChildren(notice(e.message, "error")); }
  }
  update();
}

function maskLegend() {
  const item = (stroke, label, vertical) => el("span", { class: "legend-item" }, svg("svg", { width: 18, height: 18,
    "aria-hidden": "true" }, svg("rect", { x: vertical ? 6 : 1, y: vertical ? 1 : 6, width: vertical ? 6 : 16,
    height: vertical ? 16 : 6, fill: "none", stroke, "stroke-width": 2 })), " ", label);
  return el("div", { class: "legend-box", id: "mask-legend" },
    item("#e66100", "orange column: substituted input ([MASK] 80% / random 10%; kept 10% not outlined)", true),
    item("#1a9641", "green row: selected position, counted in the loss", false));
}

// clip-mnist's image-text similarity: one image of each digit against the ten digit names.
function clipPanel(ctx) {
  const clip = ctx.models.find((m) => m.id === "clip-mnist");
  if (!clip || !clip.available) {
    return el("p", { class: "help" }, "The clip-mnist checkpoint is not available here: train it with " +
      "`attnlab train clip-mnist` to see its image-text similarity matrix.");
  }
  const out = el("div", { id: "clip-out" });
  const lang = el("select", { id: "clip-lang", "aria-label": "language of the digit names" },
    ["en", "fr", "de", "es", "it"].map((l) => el("option", { value: l }, l)));
  async function show() {
    out.replaceChildren(notice("computing clip-mnist's embeddings …"));
    try {
      const r = await api(`/api/contrastive/clip-mnist?lang=${lang.value}`);
      const canvas = el("canvas", { id: "clip-map" });
      const readout = el("p", { class: "help", "aria-live": "polite" }, "hover or focus a cell");
      const say = (i, j) => `image of ${i} vs “${r.names[j]}”: cosine ${fmt(r.cosine[i][j], 3)}, ` +
        `probability ${fmt(r.probs[i][j], 3)}`;
      heatmap(canvas, r.probs, { size: 300, max: 1, rowLabels: r.image_labels.map((d) => `img ${d}`),
        colLabels: r.names, keyboard: { label: say, onfocus: (i, j) => { readout.textContent = say(i, j); } } });
      canvas.onmousemove = (ev) => { const c = canvas._toCell(ev); if (c) readout.textContent = say(c[0], c[1]); };
      out.replaceChildren(el("div", { class: "row" }, el("div", { class: "panel" },
        el("h3", {}, "Each image's softmax over the ten names (rows: images, columns: names)"), canvas,
        legend(1, "probability of the name given the image"), readout),
      el("div", { class: "panel narrow" }, el("p", {}, "Zero-shot: ", el("b", { id: "clip-correct",
        dataset: { correct: r.correct } }, `${r.correct} of 10`), " images are closest to their own name. The " +
        "bright diagonal is what contrastive training asks for: matching pairs close, all other pairs far."),
      el("p", { class: "help" }, `Cosine similarity of unit-length embeddings, turned into probabilities at ` +
        `the learned temperature ${fmt(r.temperature, 4)}. Names in “${r.lang}”: ${r.names.join(", ")}.`))));
    } catch (e) { out.replaceChildren(notice(e.message, "error")); }
  }
  return el("div", { class: "panel", id: "clip" }, el("h3", {}, "clip-mnist: images against digit names"),
    el("div", { class: "controls" }, el("button", { type: "button", id: "clip-show", onclick: show },
      "Show the image–text similarity"), el("label", {}, "names in ", lang)), out);
}

// The ideas around the instrument: latent learning, the self-supervision debate, contrastive learning.
function concepts(ctx) {
  return el("div", { class: "lesson", id: "selfsup-concepts" },
    el("h2", {}, "Latent learning: structure learned before any reward"),
    el("div", { class: "cards" },
      el("section", { class: "card" }, el("h3", {}, "Rats in a maze (Tolman, 1948)"), el("p", {}, "Rats allowed " +
        "to wander a maze with no food in it seemed to learn nothing. Once food appeared, they ran to it almost " +
        "as well as rats trained with food all along: a map of the maze had formed silently, from exploration " +
        "alone.")),
      el("section", { class: "card" }, el("h3", {}, "A transformer on raw text"), el("p", {}, "Pre-training shows " +
        "a model billions of tokens with no task attached. Its internal representations organise themselves " +
        "around the structure of the text; a small amount of labelled data later (fine-tuning) only has to " +
        "point that structure at a task."))),
    el("h2", {}, "Is self-supervised learning just supervised learning?"),
    el("p", {}, "Mechanically, yes: there are inputs, targets, a loss and backpropagation. The difference is " +
      "where the targets come from. In supervised learning someone decides and labels the right answer, at a cost " +
      "per example. In self-supervised learning the targets are cut out of the data itself: the hidden word, the " +
      "next word. That is why it scales to all the text there is, and why the model must pick up grammar, facts " +
      "and some reasoning to do well: nobody chose what to teach it."),
    el("p", {}, "Psychology had the same argument: behaviourists held that all learning is association driven by " +
      "reinforcement, Tolman that animals build maps from exposure alone, and the debate over whether latent " +
      "learning is “really” something else never fully closed. Next-token prediction is the borderline case: " +
      "its targets follow mechanically from the text, yet no label file exists, each sentence of n tokens gives " +
      "n − 1 signals at once, and what comes next is decided by language, not by a researcher. The line between " +
      "the two paradigms is real, if blurry."),
    el("h2", {}, "Contrastive learning"),
    el("p", {}, "Contrastive methods (SimCLR, MoCo, CLIP, DINO) state the goal directly: two views of the same " +
      "thing should map to nearby vectors, views of different things to distant ones. CLIP trains an image " +
      "encoder and a text encoder together so that an image and its own caption score highest among all pairs " +
      "in a batch; the pairing found on the web is the only supervision. attnlab's clip-mnist does this at toy " +
      "scale, pairing MNIST digits with their names: in the Vision tab it shows its image tower."),
    clipPanel(ctx),
    references(["devlin2019", "liu2019", "chen2020", "radford2021", "tolman1948"]));
}

async function causal(root, ctx) {
  const { state } = ctx;
  const text = state.text || "";
  const r = await api("/api/causal", { model: state.model, text });
  const n = r.tokens.length;
  const mask = [...Array(n)].map((_, i) => [...Array(n)].map((_, j) => (j <= i ? 1 : null)));
  const after = el("input", { type: "checkbox", id: "mask-after" });
  const placement = el("div", { id: "placement" });
  root.append(el("div", { class: "row" },
    el("div", { class: "panel" }, el("h3", {}, "Next-token prediction at every position"),
      el("div", { class: "scroll", tabindex: "0" }, table(["pos", "token", "predicted next (top 5)", "actual next", "loss"],
        r.rows.map((row) => [row.position, tokenLabel(row.token),
          el("span", {}, row.top5.map((p) => el("span", { class: "pred", dataset: { prob: p.prob, token: p.token } },
            `${tokenLabel(p.token)} ${fmt(p.prob, 3)}  `))),
          row.next === undefined ? "—" : tokenLabel(row.next),
          row.loss === undefined ? "—" : el("span", { class: "loss", dataset: { loss: row.loss, position: row.position } },
            fmt(row.loss))]))),
      el("p", {}, `${n} tokens give ${n - 1} training signals in one pass; mean loss `,
        el("b", { id: "causal-loss", dataset: { loss: r.loss } }, fmt(r.loss)))),
    el("div", { class: "panel" }, el("h3", {}, "Causal mask"), heatmap(el("canvas", { id: "causal-mask" }), mask,
      { size: 260, max: 1, rowLabels: r.tokens, colLabels: r.tokens }), el("p", { class: "help" }, "Row i may see columns 0..i; hatched cells are hidden."))),
  el("div", { class: "panel" }, el("h3", {}, "Where the mask goes"),
    el("label", {}, after, " apply the mask after the softmax instead of before (wrong)"), placement));
  async function drawPlacement() {
    const p = await api("/api/mask-placement", { model: state.model, text, layer: state.layer || 0,
      head: state.head || 0 });
    const m = after.checked ? p.after : p.before, sums = after.checked ? p.after_row_sums : p.before_row_sums;
    const shown = m.map((row, i) => row.map((v, j) => (j <= i ? v : null)));
    placement.replaceChildren(el("div", { class: "row" }, heatmap(el("canvas", { id: "placement-map" }), shown,
      { size: 260, max: 1, rowLabels: p.tokens, colLabels: p.tokens }),
    el("div", {}, el("h3", {}, "row sums"), table(["query", "sum of weights"], sums.map((s, i) => [
      tokenLabel(p.tokens[i]), el("span", { class: "row-sum", dataset: { rowSum: s } }, fmt(s, 4))])))),
    el("p", { class: "help" }, after.checked ? "Softmax first spreads probability over future tokens too; " +
      "zeroing them afterwards leaves rows that sum to less than 1." : "Masking the scores with −∞ before " +
      "the softmax keeps every row a probability distribution over the visible tokens."));
  }
  after.addEventListener("change", drawPlacement);
  await drawPlacement();
}
