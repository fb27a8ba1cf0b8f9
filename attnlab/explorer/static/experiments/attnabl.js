// Experiments · Attention vs ablation (seed 002): a head's weights beside what removing each weight does.
import { bars, el, fmt, select, tokenLabel } from "../util.js";
import { positionChips } from "../common.js";
import { tryThis } from "./draw.js";
import { defaultText, fetchAnswer, notForThisModel, pct, predictsTokens, shown, tok } from "./common.js";

export async function attnAblSection(box, ctx) {
  const { state, info } = ctx;
  box.append(el("p", { class: "help" }, "Attention is not explanation (seed 002): a large weight says a head " +
    "reads a token, not that the reading matters for the answer. Left, one head's weights from the chosen " +
    "position; right, how much log P of the answer drops when just that one weight is set to 0."),
  tryThis("step through the heads of the last layer.", "tokens with a big weight and almost no effect (often " +
    "the first token, a resting place for attention), and small weights with a large effect."));
  if (!predictsTokens(info)) { notForThisModel(box, ctx); return; }
  const local = { text: defaultText(info), layer: info.n_layers - 1, head: 0, position: null };
  const input = el("input", { type: "text", id: "aa-text", value: local.text, size: 36,
    "aria-label": "sentence for attention vs ablation" });
  const runBtn = el("button", { type: "button", id: "aa-run", onclick: () => {
    local.text = input.value; local.position = null; draw(); } }, "Run");
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") runBtn.click(); });
  const layerSel = select([...Array(info.n_layers).keys()].map((i) => [i, `${i + 1}`]), local.layer,
    (v) => { local.layer = Number(v); draw(); }, { id: "aa-layer" });
  const headSel = select([...Array(info.n_heads).keys()].map((i) => [i, `${i + 1}`]), local.head,
    (v) => { local.head = Number(v); draw(); }, { id: "aa-head" });
  const chips = el("div", { class: "chips", id: "aa-chips", "aria-label": "query position" });
  const out = el("div", { id: "aa-out", "aria-live": "polite" });
  box.append(el("div", { class: "controls" }, el("label", { for: "aa-text" }, "sentence "), input, runBtn,
    el("label", {}, "layer ", layerSel), el("label", {}, "head ", headSel)), chips, out);

  async function draw() {
    box.dataset.ready = "0";
    const r = await fetchAnswer(box, out, "/api/experiments/attention-ablation", { model: state.model,
      text: local.text, layer: local.layer, head: local.head, position: local.position });
    if (!r) return;
    local.position = r.position;
    positionChips(chips, r.tokens, r.position, (i) => { local.position = i; draw(); }, "query position");
    const rows = r.rows.filter((x) => x.effect !== null);
    const label = (x) => `${x.position} ${tok(x.token)}`.slice(0, 16);
    const byWeight = [...rows].sort((a, b) => b.weight - a.weight)[0];
    const byEffect = [...rows].sort((a, b) => b.effect - a.effect)[0];  // the reading that helped most
    const times = (e) => `P × ${fmt(Math.exp(-e), 3)}`;
    out.replaceChildren(el("p", { class: "summary", id: "aa-summary" }, `Layer ${r.layer + 1}, head ${r.head + 1}, ` +
      `reading from “${tokenLabel(r.tokens[r.position])}” (position ${r.position}); answer ${shown(r.target.token)} ` +
      `at ${pct(r.target.prob)}. Largest weight: “${tokenLabel(byWeight.token)}” (${fmt(byWeight.weight, 3)}); ` +
      (byEffect.effect < 0.01 ? "no single weight's removal lowers the answer by more than 0.01 nats: this " +
        "head's reading hardly matters here, whatever its weights." :
        `largest drop: “${tokenLabel(byEffect.token)}” (${fmt(byEffect.effect, 3)} nats, ${times(byEffect.effect)})` +
      (byWeight.position === byEffect.position ? " — here the two agree." : " — here they disagree."))),
    el("div", { class: "row" },
      el("div", { class: "panel", id: "aa-weights" }, el("h3", {}, "attention weight (0–1, the row sums to 1)"),
        bars(rows.map((x) => ({ label: label(x), value: x.weight, attrs: { dataset: { position: x.position,
          weight: x.weight } } })), { width: 330, max: 1, labelWidth: 110 })),
      el("div", { class: "panel", id: "aa-effects" }, el("h3", {}, "drop in log P(answer) with that weight at 0"),
        bars(rows.map((x) => ({ label: label(x), value: x.effect, fill: x.effect < 0 ? "#0072b2" : "#e66100",
          attrs: { dataset: { position: x.position, effect: x.effect } } })), { width: 330, labelWidth: 110 }))),
    el("p", { class: "help" }, "Orange: removing that weight lowers the answer's probability (the reading " +
      "helped); blue: raises it. The other weights are left as they are, so the row no longer sums to 1."));
    box.dataset.ready = "1";
  }
  await draw();
}
