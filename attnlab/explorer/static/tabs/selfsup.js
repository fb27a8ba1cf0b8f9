// Tab Self-supervised: masked-language modelling on an encoder (click tokens to mask, or draw BERT's random
// 15% with its 80/10/10 split), and next-token prediction on a decoder, with the mask-placement lesson.
import { api, el, fmt, heatmap, notice, table, tokenLabel } from "../util.js";
import { needs, sentenceBox } from "./common.js";

export async function render(root, ctx) {
  root.append(el("h2", {}, "Self-supervised pre-training"), el("p", { class: "help" }, "The text is its own " +
    "label: hide tokens and predict them (MLM, BERT), or predict each next token (causal LM, GPT)."));
  if (!needs(root, ctx, ["encoder", "decoder"], "This tab needs an MLM encoder or a causal decoder.")) return;
  root.append(sentenceBox(ctx));
  if (ctx.info.topology === "encoder") {
    if (!ctx.info.has_mlm) {  // toy and MiniLM (a sentence-embedding model) carry no MLM head
      const noHead = ["toy", "minilm"];
      needs(root, { ...ctx, info: { ...ctx.info, topology: "encoder without an MLM head" },
        models: ctx.models.filter((m) => !noHead.includes(m.id)) }, ["encoder", "decoder"],
      "Masked-token prediction needs an encoder trained with an MLM head (bert-mlm); next-token prediction a decoder.");
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
  root.append(el("p", { class: "help" }, "Click tokens to mask them (toggle), or draw BERT's random 15%: each " +
    "picked token becomes [MASK] (80%), a random token (10%) or stays unchanged (10%); all picked positions " +
    "count in the loss."),
  el("div", { class: "controls" }, el("button", { id: "draw", onclick: draw }, "Draw random 15% (80/10/10)"),
    el("label", {}, "seed ", seedInput), el("button", { id: "clear", onclick: () => { selections = []; update(); } },
      "Clear")), chips, out);
  const base = await api("/api/mlm/draw", { model: state.model, text, seed: 0 });  // tokens + specials

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
    chips.replaceChildren(...base.tokens.map((t, i) => {
      const s = selections.find((x) => x.position === i);
      const cls = "chip" + (base.special[i] ? " special" : "") + (s ? (s.action === "mask" ? " masked" :
        ` ${s.action}`) : "");
      const label = s ? (s.action === "mask" ? `[MASK] (${tokenLabel(t)})` : s.action === "random" ?
        `${tokenLabel(s.token)} ← random (${tokenLabel(t)})` : `${tokenLabel(t)} (kept)`) : tokenLabel(t);
      return el("span", { class: cls, dataset: { index: i, action: s ? s.action : "none" }, onclick: () => toggle(i) },
        label);
    }));
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
        el("div", { class: "panel" }, el("h3", {}, "MLM attention mask"), canvas,
          el("p", { class: "help" }, "No position is blocked: every query sees every key. Orange columns: " +
            "substituted tokens ([MASK] or random); green rows: the positions whose predictions count in the loss."))));
    } catch (e) { out.replaceChildren(notice(e.message, "error")); }
  }
  update();
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
      el("div", { class: "scroll" }, table(["pos", "token", "predicted next (top 5)", "actual next", "loss"],
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
