// The guided tour: nine short stops that walk the story of the explorer across the tabs, from one head of the
// hand-set toy to real trained models. A card in the corner (not a modal: the page stays usable) with Back,
// Next and Skip; Escape closes it. Finishing or skipping is remembered in localStorage; "Tour" restarts it.
import { el } from "./util.js";

const STORAGE = "attnlab.tour";

const STEPS = [
  { title: "One head, one query", view: { model: "toy", tab: "attention", text: "the cat sat on the mat",
    head: 0, layer: 0, token: 1 },
  target: "#bars",
  text: "The sentence is read all at once. “cat” is the query: the bars show the score it gives every other " +
    "word (Q·K/√d_k) and, below, the softmax weights. Head 1 of this toy was set by hand to link a subject " +
    "to its verb, so “sat” takes most of the weight." },
  { title: "Another head, another question", view: { model: "toy", tab: "attention", text: "the cat sat on the mat",
    head: 2, layer: 0, token: 3 },
  target: "#bars",
  text: "Head 3 asks a different question with its own W_Q and W_K: a preposition looks for a place. From “on”, " +
    "the weight goes to “mat”. Several heads let one layer follow several relations at the same time." },
  { title: "Where the numbers come from", view: { model: "toy", tab: "attention", text: "the cat sat on the mat",
    head: 0, layer: 0, token: 1, key: 2 },
  target: "#steps",
  text: "Here, in “The maths, step by step”: the embedding of “cat” times W_Q gives Q, the embedding of " +
    "“sat” times W_K gives K, and Q·K/√d_k = 2.34 is the score in the bars. Every number is computed live." },
  { title: "The whole machine", view: { tab: "architecture" },
  target: "#diagram",
  text: "The same block, stacked N times: attention mixes information across positions, the feed-forward " +
    "network rewrites each position, residual connections and norms wrap both. Click any block (or focus it " +
    "and press Enter) for its shapes and parameter count." },
  { title: "Learning without labels", view: { model: "minilm-mlm", tab: "selfsup" }, fallback: ["bert-mlm"],
  target: "#mlm-chips, #causal-loss",
  text: "Text supervises itself: hide words and predict them (masked language modelling), or predict each next " +
    "word. Click tokens to mask them, or draw BERT's random 15%." },
  { title: "Images are tokens too", view: { model: "vit-mnist", tab: "vision" },
  target: "#image",
  text: "A vision transformer cuts the image into patches and attends over them with the very same attention. " +
    "Pick a patch to see where it looks." },
  { title: "Writing one token at a time", view: { model: "gpt-char", tab: "generation" },
  target: "#step",
  text: "A decoder predicts the next token, appends it and repeats. Press Step and watch the distribution, the " +
    "sampled token and the KV cache grow." },
  { title: "Switch a head off", view: { model: "smollm2", tab: "experiments" }, fallback: ["gpt-char"],
  target: "#abl-out",  // the result, which fits a screen (the whole section, 270 heads on SmolLM2, did not)
  text: "An experiment on a real model, in “Ablate: switch heads off”: one head is already switched off, and " +
    "the outlined result shows the answer's probability and the top 5 before and after. Press “Which heads " +
    "matter” (under the head picker), then click the darkest orange cell: that head off, watch the answer's " +
    "probability fall." },
  { title: "What it costs", view: { tab: "cost" },
  target: "#cost-plot",
  text: "Dense work grows like n, attention like n². This tab counts the FLOPs and bytes of the model you picked. " +
    "That is the tour: every tab has more to explore, and the model menu switches to real models." },
];

let card = null;

// Starts by itself only on a first landing (no view in the URL: a shared link opens on what it names), unless
// dismissed before; ?tour=1 forces it.
export function maybeStartTour(app, { force = false, fresh = false } = {}) {
  let done = false;
  try { done = localStorage.getItem(STORAGE) === "done"; } catch (e) { done = false; }
  if (force || (fresh && !done)) startTour(app, { navigateFirst: force });
}

export function startTour(app, { navigateFirst = true } = {}) {
  let i = 0;
  close(false);
  card = el("div", { id: "tour", class: "tour", role: "dialog", "aria-modal": "false",
    "aria-labelledby": "tour-title" });
  document.body.append(card);
  document.body.classList.add("touring");
  const enabled = (id) => [...document.querySelectorAll("#model option")].some((o) => o.value === id && !o.disabled);
  // a step's model, or the first of its fallbacks offered here (minilm-mlm needs the MiniLM package)
  const pick = (step) => {
    if (!step.view.model) return step;
    const id = [step.view.model, ...(step.fallback || [])].find(enabled);
    return id ? { ...step, view: { ...step.view, model: id } } : null;
  };
  const steps = STEPS.map(pick).filter(Boolean);

  let shown = 0;  // the step whose view is being opened: an older navigation never highlights anything
  async function show(move) {
    const s = steps[i], mine = ++shown;
    unmark();
    const back = el("button", { type: "button", id: "tour-back", disabled: i === 0 ? true : null,
      onclick: () => { i -= 1; show(true); } }, "Back");
    const next = el("button", { type: "button", id: "tour-next", class: "primary",
      onclick: () => { if (i === steps.length - 1) close(true); else { i += 1; show(true); } } },
    i === steps.length - 1 ? "Finish" : "Next");
    card.replaceChildren(
      el("div", { class: "tour-count" }, `Tour · ${i + 1} of ${steps.length}`),
      el("h2", { id: "tour-title" }, s.title), el("p", { id: "tour-text" }, s.text),
      el("div", { class: "tour-buttons" }, back, next,
        el("button", { type: "button", id: "tour-skip", onclick: () => close(true) }, "Skip tour")));
    card.dataset.step = String(i);
    next.focus({ preventScroll: true });
    if (move) await app.navigate({ ...s.view });
    const tab = document.getElementById("tab");
    for (let waited = 0; tab.dataset.ready !== "1" && waited < 120000; waited += 50) {  // the view is drawing
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (mine === shown && card) mark(s.target);
  }
  card.addEventListener("keydown", (ev) => { if (ev.key === "Escape") close(true); });
  show(navigateFirst);
}

// The step's subject: scrolled into view (above the card on a phone, where the card takes the bottom of the
// screen) and outlined, so the text's "the bars", "the diagram" point at something visible.
function mark(selector) {
  const target = selector && document.querySelector(`#tab ${selector.split(", ").join(", #tab ")}`);
  if (!target) return;
  target.classList.add("tour-target");
  const phone = window.matchMedia("(max-width: 600px)").matches;
  const tall = target.getBoundingClientRect().height > 0.6 * window.innerHeight;  // its start is what to read
  target.scrollIntoView({ block: phone || tall ? "start" : "center", behavior: "instant" });
  if (phone || tall) window.scrollBy(0, -40);  // the outline and the heading just above stay on screen
}

function unmark() {
  document.querySelectorAll(".tour-target").forEach((n) => n.classList.remove("tour-target"));
}

function close(remember) {
  if (remember) { try { localStorage.setItem(STORAGE, "done"); } catch (e) { /* private mode: ask again */ } }
  if (card) { card.remove(); card = null; }
  unmark();
  document.body.classList.remove("touring");
}
