// Pieces the intervention views (ablate, patch, logit lens, attention vs ablation) share: which models they
// run on, a default sentence per model, percentages, and a top-5 list of predicted tokens.
import { api, el, notice, tokenLabel } from "../util.js";

// The route's answer, or null once its error is written into `out` and the section is marked ready again (what
// the browser tests wait for). Why one function: every section that draws one answer fails the same way.
export async function fetchAnswer(box, out, path, body) {
  try {
    return await api(path, body);
  } catch (e) {
    out.replaceChildren(notice(e.message, "error"));
    box.dataset.ready = "1";
    return null;
  }
}

// a decoder predicts the next token; an encoder with a masked-LM head the word at [MASK]
export function predictsTokens(info) {
  return !!info && (info.topology === "decoder" || info.has_mlm);
}

// The four intervention views share one explanation: the first of them on the page gets it with the buttons to
// switch model, the others one line pointing up to it (the same paragraph four times was noise).
export function notForThisModel(box, ctx) {
  const page = box.parentNode;
  const first = page && page.querySelector(".not-for-model");
  if (first) {
    const title = first.closest("section")?.querySelector("h2")?.textContent || "the first experiment above";
    box.append(el("p", { class: "help not-for-model-ref" }, `Not for this model either: see “${title}” above.`));
    return;
  }
  const fits = (ctx.models || []).filter((m) => m.available && ["gpt-char", "smollm2", "minilm-mlm", "bert-mlm"]
    .includes(m.id));
  const topology = ctx.info ? ctx.info.topology : "";
  const article = /^[aeiou]/i.test(topology) ? "an" : "a";
  box.append(el("div", { class: "not-for-model" }, notice("These experiments (ablate, patch, logit lens, attention " +
    "vs ablation) need a model that predicts tokens: a decoder (SmolLM2, gpt-char) or an encoder with a " +
    "masked-word head (minilm-mlm, bert-mlm). " + (ctx.info ? `The selected model is ${article} ${topology} ` +
    "without one." : ""), "warn"),
  fits.length ? el("div", { class: "controls" }, "Switch to: ", fits.map((m) => el("button", { type: "button",
    class: "switch-model", onclick: () => ctx.navigate({ model: m.id }) }, m.label))) : ""));
}

// [clean, corrupted]: sentences of the same token count whose answers differ (checked in the tests). Each pair
// was picked on its model so that the clean answer is right (MiniLM echoes the subject of "Paris is the capital
// of [MASK]." as "paris") and the patching grid shows the fact travel (a pair differing only in its last
// character lights the last column alone, which teaches nothing).
export function defaultPair(info) {
  const mask = info.mask_token || "[MASK]";
  // minilm-mlm: P(french) 16.5% (top) against 0.3% for Germany; the country's column fades over the layers
  if (info.has_mlm) return [`People in France speak ${mask}.`, `People in Germany speak ${mask}.`];
  if (info.id === "smollm2") return ["The Eiffel Tower is in the city of", "The Colosseum is in the city of"];
  if (info.topology === "decoder" && ((info.id || "").startsWith("gpt-char") || info.token_limit <= 64)) {
    // gpt-char: P(")") 32.6% (top) against 5.7% after "[": the bracket's column in layers 1-2, then the last
    // position from layer 3 on, the fact moving from where it is written to where the answer is read
    return ["def f(x, y", "def f[x, y"];
  }
  const first = (info.examples || ["the cat sat"])[0];
  return [first, first];
}

export const defaultText = (info) => defaultPair(info)[0];

export const pct = (p) => (p === null || p === undefined ? "–" : `${(100 * p).toFixed(p >= 0.1 ? 1 : 2)}%`);
export const points = (d) => `${d >= 0 ? "+" : "−"}${Math.abs(100 * d).toFixed(Math.abs(d) < 0.01 ? 2 : 1)} ` +
  "points";
// a token as a person reads it: a lone space or line break named, not drawn as an invisible mark
export const tok = (t) => (t === " " ? "␣ (space)" : t === "\n" ? "↵ (new line)" : tokenLabel(t));
export const shown = (t) => `“${tok(t)}”`;

// rows [{token, prob}] -> an ordered list with a probability bar under each token
export function topList(rows, { id, title, mark = null }) {
  return el("div", { class: "panel top5", id }, el("h3", {}, title), el("ol", {}, rows.map((r) => el("li", {
    class: r.id === mark ? "target" : "", dataset: { id: r.id, prob: r.prob } },
  el("span", { class: "tok" }, tok(r.token)), " ", el("span", { class: "p" }, pct(r.prob)),
  el("span", { class: "pbar", style: `width:${Math.max(1, Math.round(120 * r.prob))}px`, "aria-hidden": "true" }),
  ))));
}

export const layerName = (i) => (i === null || i === undefined ? "embeddings" : `layer ${i + 1}`);
