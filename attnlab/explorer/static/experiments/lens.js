// Experiments · Logit lens: what the model would predict if it stopped after each layer, and where its final
// answer climbs: a column with the answer's rank and probability per layer, and a line of that probability.
import { el, legend } from "../util.js";
import { positionChips } from "../common.js";
import { answerLegend, gridTable, lineChart, probFill, toward, tryThis } from "./draw.js";
import { defaultText, fetchAnswer, notForThisModel, pct, predictsTokens, tok as plainTok } from "./common.js";

const SPECIAL = /^(\[[A-Z]+\]|<\/?s>|<[a-z_|]+>)$/;  // [CLS], [SEP], [PAD], <s>, </s>, <pad>, ...

// The server writes a token that would look blank as its code points ("<U+00A0>", server/common.py
// visible_label); the page names the blanks it knows, as it names a space "␣ (space)", and keeps the code
// point of any other.
const BLANKS = { "00A0": "⍽ (no-break space)", "202F": "⍽ (narrow no-break space)", "2009": "(thin space)",
  "200B": "(zero-width space)", "3000": "(ideographic space)", FEFF: "(zero-width no-break space)",
  "00AD": "(soft hyphen)", "2002": "(en space)", "2003": "(em space)", "200C": "(zero-width non-joiner)",
  "200D": "(zero-width joiner)" };
export function blankName(t) {
  const m = /^<(U\+[0-9A-F]{4,6}(?: U\+[0-9A-F]{4,6})*)>$/.exec(t || "");
  if (!m) return null;
  return m[1].split(" ").map((u) => BLANKS[u.slice(2)] || u).join(" + ");
}
const tok = (t) => blankName(t) || plainTok(t);

export async function lensSection(box, ctx) {
  const { state, info } = ctx;
  box.append(el("p", { class: "help" }, "The logit lens reads the residual stream after every layer through the " +
    "model's final norm and output head, as if the model stopped there. The last row is the model's real " +
    "prediction."),
  tryThis(`“${defaultText(info || {})}” (the sentence below), then pick ` + (info && info.has_mlm ?
    "another word (it is masked and guessed)." : "an earlier token."), "the row where the final answer first reaches the top 5, and how its " +
    "probability grows layer by layer; early rows often just echo the input token."));
  if (!predictsTokens(info)) { notForThisModel(box, ctx); return; }
  const local = { text: defaultText(info), position: null };
  const input = el("input", { type: "text", id: "lens-text", value: local.text, size: 36,
    "aria-label": "sentence for the logit lens" });
  const runBtn = el("button", { type: "button", id: "lens-run", onclick: () => {
    local.text = input.value; local.position = null; draw(); } }, "Run");
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") runBtn.click(); });
  const chips = el("div", { class: "chips", id: "lens-chips", "aria-label": "position whose prediction is read" });
  const out = el("div", { id: "lens-out", "aria-live": "polite" });
  box.append(el("div", { class: "controls" }, el("label", { for: "lens-text" }, "sentence "), input, runBtn),
    el("p", { class: "help" }, info.has_mlm ? "Position (a word that is not the mask is masked " +
      "and guessed; [CLS]/[SEP] are not words and cannot be picked):" :
      "Position (the prediction made there is for the token after it):"), chips, out);

  async function draw() {
    box.dataset.ready = "0";
    const r = await fetchAnswer(box, out, "/api/experiments/logit-lens", { model: state.model, text: local.text,
      position: local.position });
    if (!r) return;
    local.position = r.position;
    const buttons = positionChips(chips, r.tokens.map((t) => blankName(t) || t), r.position, (i) => {
      local.position = i; draw();
    }, "read position");
    // an encoder's [CLS]/[SEP] are not words: masking one and guessing it says little, so they cannot be picked
    const mask = info.mask_token || "[MASK]";
    if (info.has_mlm) buttons.forEach((b, i) => {
      if (r.tokens[i] !== mask && SPECIAL.test(r.tokens[i])) {
        b.disabled = true; b.classList.add("special"); b.title = "a special token, not a word: nothing to guess";
      }
    });
    const k = r.rows[0].top.length;
    const a = r.answer;  // the final answer followed down the rows: its rank and probability after each layer
    // what each layer did to it, on the page's answer scale (orange: toward the answer): the change in log P
    const push = a.prob.map((p, i) => (i === 0 || !(p > 0) || !(a.prob[i - 1] > 0) ? null :
      Math.log(p) - Math.log(a.prob[i - 1])));
    const pushPeak = Math.max(1e-9, ...push.filter((v) => v !== null).map(Math.abs));
    const cell = (i, j) => r.rows[i].top[j];
    const after = (i) => (i === 0 ? "the embeddings" : `layer ${i}`);
    const rowHead = (i) => (i === 0 ? "embeddings" : `layer ${i}`);
    out.replaceChildren(el("p", { class: "help" }, r.predicts === "next" ? `Top ${k} next tokens after ` +
      `“${tok(r.tokens[r.position])}” (position ${r.position}), read after each layer:` :
      `Top ${k} words for the masked position ${r.position}, read after each layer:`),
    legend(1, "probability of the token in that cell"),
    el("div", { class: "lens-wrap", style: "display:flex;flex-wrap:wrap;gap:10px 24px;align-items:flex-start" },
      gridTable({ id: "lens-grid", caption: "logit lens: layers × rank", rows: r.rows.length, cols: k,
        corner: "read after", rowHead, colHead: (j) => `#${j + 1}`, value: (i, j) => cell(i, j).prob,
        text: (i, j) => `${tok(cell(i, j).token)} ${pct(cell(i, j).prob)}`,
        fill: (i, j) => probFill(cell(i, j).prob),
        label: (i, j) => `after ${after(i)}, rank ${j + 1}: “${tok(cell(i, j).token)}” ${pct(cell(i, j).prob)}` }),
      el("div", { id: "lens-answer" }, gridTable({ id: "lens-answer-grid", caption: `the final answer ` +
        `“${tok(a.token)}” after each layer: its rank (1 = top), probability and the layer's change in log P`,
      rows: r.rows.length, cols: 3, corner: "read after", rowHead,
      colHead: (j) => ["rank", "probability", "Δ log P (nats)"][j],
      value: (i, j) => [a.rank[i], a.prob[i], push[i]][j],
      text: (i, j) => (j === 0 ? `#${a.rank[i].toLocaleString("en-US")}` : j === 1 ? pct(a.prob[i]) :
        push[i] === null ? "–" : `${push[i] >= 0 ? "+" : "−"}${Math.abs(push[i]).toFixed(2)}`),
      fill: (i, j) => (j === 0 ? "#fff" : j === 1 ? probFill(a.prob[i]) :  // the rank column is not coloured
        push[i] === null ? "#fff" : toward(push[i], pushPeak)),
      label: (i, j) => `after ${after(i)}, “${tok(a.token)}” ranks ${a.rank[i]} with ${pct(a.prob[i])}` +
        (push[i] === null ? "" : `; this layer moved log P by ${push[i] >= 0 ? "+" : "−"}` +
          `${Math.abs(push[i]).toFixed(3)} nats (${push[i] >= 0 ? "toward" : "against"} it)`) }),
      answerLegend(pushPeak, "Δ log P of the final answer, layer by layer (nats)"),
      lineChart([{ name: `P(“${tok(a.token)}”), x = layer (0: the embeddings)`, color: "#0072b2",
        points: a.prob.map((p, i) => [i, p]) }], { id: "lens-answer-chart", width: 300, height: 170, yMin: 0,
        yMax: 1, xLabel: "layer", yLabel: "probability" }))));
    box.dataset.ready = "1";
  }
  await draw();
}
