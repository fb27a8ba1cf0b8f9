// Experiments · Steering: a direction from two prompts added to the residual stream while the model writes; the
// plain and the steered continuation of the same prompt side by side. The slider fires one request once it
// rests (debounced), shows progress, and aborts the request still running when it moves on.
import { aborted, api, el, fmt, linkStyle, notice, tokenLabel } from "../util.js";
import { tryThis } from "./draw.js";
import { pct, tok, topList } from "./common.js";

const WAIT_MS = 250;  // the slider rests this long before a generation starts
const ALPHA = { min: -4, max: 4, step: 0.25 };

// Defaults picked on each model so that the steered text visibly changes at the default strength:
// SmolLM2 at alpha 1 writes ". I am happy. I have a great job. I have a great life" where the plain one goes
// "like I'm just going through the motions of my life"; gpt-char (characters) leans to other words.
export function steerDefaults(info) {
  const L = info.n_layers || 1;
  if (info.id === "smollm2") {
    return { prompt: "Today I feel", positive: "I am very happy", negative: "I am very sad", layer: 4, alpha: 1,
      tokens: 20 };
  }
  if ((info.id || "").startsWith("gpt-char")) {
    return { prompt: "The function ", positive: "list ", negative: "string ", layer: Math.min(3, L - 1), alpha: 1,
      tokens: 40 };  // characters: 40 make a few words
  }
  return { prompt: (info.examples || ["The cat"])[0], positive: "I love", negative: "I hate",
    layer: Math.floor(L / 3), alpha: 1, tokens: 20 };
}

const where = (layer) => (layer === 0 ? "the embeddings (entering layer 1)" : `after layer ${layer}`);

function decoderOnly(box, ctx) {
  const fits = (ctx.models || []).filter((m) => m.available && ["gpt-char", "smollm2"].includes(m.id));
  box.append(el("div", { class: "decoder-only" }, notice("Steering writes text, which needs a decoder " +
    "(gpt-char, SmolLM2).", "warn"), fits.length ? el("div", { class: "controls" }, "Switch to: ",
    fits.map((m) => el("button", { type: "button", class: "switch-model", onclick: () => ctx.navigate({
      model: m.id }) }, m.label))) : ""));
}

export async function steerSection(box, ctx) {
  const { state, info } = ctx;
  linkStyle("/static/experiments/steer.css");
  box.append(el("p", { class: "help" }, "Steering adds a direction to the residual stream at every position " +
    "while the model writes. The direction is the difference between the stream at the last token of two " +
    "prompts (what changes when the model reads one instead of the other); α scales it. Both continuations " +
    "are greedy from the same prompt: only the added direction differs."),
  tryThis("drag α from 0 to 1, then to −1 and to 4.", "at 0 the columns agree; small α tilts the words " +
    "towards the first prompt (negative α towards the second); a large α drowns the text in repeats."));
  if (!info || info.topology !== "decoder") { decoderOnly(box, ctx); return; }
  const L = info.n_layers;
  const local = steerDefaults(info);
  const field = (id, label, value, size) => {
    const input = el("input", { type: "text", id, value, size });
    input.addEventListener("keydown", (e) => { if (e.key === "Enter") go(); });
    return [el("label", { for: id }, label), input];
  };
  const [posLabel, pos] = field("steer-positive", "towards", local.positive, 24);
  const [negLabel, neg] = field("steer-negative", "away from", local.negative, 24);
  const [promptLabel, prompt] = field("steer-prompt", "prompt", local.prompt, 30);
  const layer = el("select", { id: "steer-layer" }, [...Array(L).keys()].map((l) =>
    el("option", { value: l }, l === 0 ? "embeddings (layer 1's input)" : `after layer ${l}`)));
  layer.value = String(local.layer);
  layer.addEventListener("change", () => go());
  const count = el("select", { id: "steer-tokens" }, [10, 20, 40].map((n) => el("option", { value: n }, `${n}`)));
  count.value = String(local.tokens);
  count.addEventListener("change", () => go());
  const slider = el("input", { type: "range", id: "steer-alpha", min: ALPHA.min, max: ALPHA.max,
    step: ALPHA.step, value: local.alpha });
  const alphaText = el("output", { id: "steer-alpha-value", for: "steer-alpha" });
  const showAlpha = () => {
    const a = Number(slider.value);
    alphaText.textContent = `α = ${fmt(a, 2)}`;
    slider.setAttribute("aria-valuetext", `alpha ${fmt(a, 2)}`);
  };
  slider.addEventListener("input", () => { showAlpha(); later(); });
  const runBtn = el("button", { type: "button", id: "steer-run", onclick: () => go() }, "Generate");
  const status = el("div", { id: "steer-status", role: "status", "aria-live": "polite", class: "steer-status" });
  const out = el("div", { id: "steer-out" });
  box.append(el("div", { class: "pair-inputs" }, posLabel, pos, negLabel, neg, promptLabel, prompt),
    el("div", { class: "controls" }, el("label", { for: "steer-layer" }, "residual stream "), layer,
      el("label", { for: "steer-tokens" }, " new tokens "), count, runBtn),
    el("div", { class: "controls" }, el("label", { for: "steer-alpha" }, "strength α "), slider, " ", alphaText,
      el("span", { class: "help" }, ` (${ALPHA.min} to ${ALPHA.max}; arrow keys move by ${ALPHA.step})`)),
    status, out);
  showAlpha();

  let timer = null, controller = null, seq = 0;
  function later() {  // the slider moved: one request once it rests (the page says so at once)
    clearTimeout(timer);
    box.dataset.ready = "0";
    status.textContent = `α = ${fmt(Number(slider.value), 2)}: generating when the slider rests…`;
    out.classList.add("stale");
    timer = setTimeout(go, WAIT_MS);
  }
  async function go() {
    clearTimeout(timer);
    if (controller) controller.abort();  // the previous generation is not wanted any more
    controller = new AbortController();
    const mine = ++seq;
    box.dataset.ready = "0";
    const alpha = Number(slider.value);
    status.replaceChildren(el("span", { class: "spinner", "aria-hidden": "true" }),
      ` Generating ${count.value} tokens twice, plain and with α = ${fmt(alpha, 2)}…`);
    status.classList.add("busy");
    out.classList.add("stale");
    let r;
    try {
      r = await api("/api/experiments/steer", { model: state.model, prompt: prompt.value, positive: pos.value,
        negative: neg.value, layer: Number(layer.value), alpha, tokens: Number(count.value) },
      { signal: controller.signal });
    } catch (e) {
      if (aborted(e) || mine !== seq) return;
      status.classList.remove("busy");
      status.replaceChildren();
      out.classList.remove("stale");
      out.replaceChildren(notice(e.message, "error"));
      box.dataset.ready = "1";
      return;
    }
    if (mine !== seq) return;
    status.classList.remove("busy");
    status.textContent = `Done: α = ${fmt(r.alpha, 2)}.`;
    out.classList.remove("stale");
    draw(r);
    box.dataset.ready = "1";
  }

  function column(id, title, cont, differ, promptText) {
    const pieces = cont.tokens.map((t, i) => el("span", { class: differ !== null && i >= differ ? "tok new" :
      "tok", title: `token ${i + 1}` }, t === "\n" ? "↵\n" : t));
    return el("div", { class: "panel steer-col", id },
      el("h3", {}, title),
      el("p", { class: "steer-text" }, el("span", { class: "prompt-part" }, promptText), pieces),
      el("p", { class: "help" }, `${cont.tokens.length} new tokens` +
        (differ !== null && id === "steer-after" ? `; from token ${differ + 1} on it differs (underlined)` : "")));
  }
  function draw(r) {
    const d = r.direction;
    const scale = d.stream_norm ? `${fmt(Math.abs(r.alpha) * d.norm / d.stream_norm, 2)}×` : "–";
    out.replaceChildren(
      el("p", { id: "steer-summary", class: "summary", dataset: { alpha: r.alpha, norm: d.norm } },
        "Direction: the residual stream ", el("strong", {}, where(r.layer)), ` at the last token of ` +
        `“${d.positive}” minus the same at “${d.negative}”. Its length |v| = ${fmt(d.norm, 3)}; a typical ` +
        `token's stream there is ${fmt(d.stream_norm, 3)} long, so α·|v| adds ${scale} that length at every ` +
        "position."),
      el("div", { class: "row steer-cols" },
        column("steer-before", "Plain (α = 0)", r.plain, null, prompt.value),
        column("steer-after", `Steered (α = ${fmt(r.alpha, 2)})`, r.steered, r.first_difference, prompt.value)),
      el("div", { class: "row" },
        topList(r.next.plain, { id: "steer-next-plain", title: `next token after “${tokenLabel(r.prompt_tokens
          .slice(-1)[0])}”, plain` }),
        topList(r.next.steered, { id: "steer-next-steered", title: "next token, steered" })),
      el("p", { class: "help" }, `The plain top token ${tok(r.next.plain[0].token)}: P = ` +
        `${pct(r.next.plain[0].prob)} plain, ${steeredProb(r.next.steered, r.next.plain[0].id)} steered.`));
  }
  await go();
}

function steeredProb(rows, id) {
  const row = rows.find((x) => x.id === id);
  return row ? pct(row.prob) : `below ${pct(rows[rows.length - 1].prob)} (out of the top ${rows.length})`;
}
