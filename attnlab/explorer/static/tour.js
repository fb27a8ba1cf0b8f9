// The guided tour: ONE story on one model and one sentence, from the tokens to an experiment that changes the
// answer, then two short stories (an encoder, vision). A card in the corner (not a modal: the page stays usable)
// with Back, Next and Skip; Escape closes it. Finishing or skipping is remembered in localStorage; "Tour" restarts.
//
// The story's numbers are computed, not written here: /api/tour/{model} gives the answer the model predicts and
// the head whose removal lowers its probability most (estimated, then checked exactly), so the last stop says what
// is true for the model in view. It is asked for when the tour starts, so it is ready by the time it is needed;
// every stop of the story stays on one model, so Next never waits for another model to load.
import { api, el, prefetch, tokenLabel } from "./util.js";

const STORAGE = "attnlab.tour";

// The story's model (the first one offered here) and its sentence; an answer the model gets right.
const STORY = [
  { model: "smollm2", text: "The capital of France is" },
  { model: "gpt-char", text: "The king said to his " },
];

const pct = (p) => `${(100 * p).toFixed(1)}%`;
const quoted = (t) => `“${tokenLabel(t)}”`;

// The main story's stops, written from the story (s: /api/tour's answer, or null while it is computed).
function storySteps(model, text, s) {
  const v = (extra) => ({ model, text, ...extra });
  const answer = s ? quoted(s.answer.token) : "the next token";
  const last = s ? s.tokens.length - 1 : undefined;
  const head = s && s.head;
  return [
    { title: "Your sentence becomes tokens", view: v({ tab: "attention", token: last, layer: 0, head: 0 }),
      target: "#chips",
      text: `The model never sees letters: “${text}” is cut into ${s ? s.tokens.length : "a few"} tokens, each ` +
        "an id in the model's vocabulary. Hover or focus a chip for its id. Everything after this works on these." },
    { title: "Each token becomes a vector", view: v({ tab: "attention", token: last, layer: 0, head: 0 }),
      target: "#embeddings",
      text: "Row id of the embedding table W_E is the token's vector (d_model numbers); the position is added to it, " +
        "or, as here with RoPE, rotates the queries and keys. These vectors are what the first block reads." },
    { title: "The last token looks back", view: v({ tab: "attention", token: last, layer: 0, head: 0 }),
      target: "#bars",
      text: "In one head, the last token's query is compared with every key: Q·K/√d_head, then a softmax turns the " +
        "scores into weights that sum to 1. A decoder's mask hides the tokens after it. Change the layer and head " +
        "above: each head reads the sentence its own way." },
    { title: "One block, stacked", view: v({ tab: "architecture" }),
      target: "#diagram",
      text: "Attention mixes information across positions, the feed-forward network rewrites each position, and a " +
        "residual connection with a norm wraps both. The same block is stacked N times; click a block (or focus it " +
        "and press Enter) for its shapes and parameters." },
    { title: "The next token", view: v({ tab: "generation" }),
      target: "#step",
      text: `After the last block, the final norm and the output head give one logit per vocabulary entry, and the ` +
        `softmax turns them into probabilities. Press Step: the model's choice is ${answer}` +
        (s ? ` (${pct(s.answer.prob)})` : "") + ". Temperature, top-k and top-p reshape that distribution." },
    { title: "One token at a time, with a cache", view: v({ tab: "generation" }),
      target: "#step",
      text: "Each Step appends the chosen token and runs the model on that one token only: the keys and values of " +
        "the earlier tokens are kept in the KV cache (its size is shown beside the distribution), so a step costs " +
        "one token's work, not the whole sentence's." },
    head ? { title: "Switch one head off", view: v({ tab: "experiments", off: `${head.layer}.${head.head}` }),
      target: "#abl-out",  // its answer asked for ahead, while the learner reads the stop before
      ahead: [["/api/experiments/ablation", { model, text, heads: [[head.layer, head.head]], mode: "zero" }]],
      text: `Now change the model. Switching off layer ${head.layer + 1}, head ${head.head + 1} (its output set to ` +
        `zero) lowers P(${answer}) from ${pct(head.prob_before)} to ${pct(head.prob_after)}: this head helps write ` +
        "the answer. It was found by attribution patching (one forward and one backward rank every head) and " +
        "checked exactly. “Which heads matter” below runs every head." }
      : { title: "Switch a head off", view: v({ tab: "experiments" }),
        target: "#abl-out",
        text: s ? `No head checked here lowers P(${answer}) when switched off alone: the answer is spread over ` +
          "many heads. “Which heads matter” below runs every head, one at a time." :
          "The story's numbers are still being computed; “Which heads matter” below runs every head." },
  ];
}

// Two short stories after the main one.
const ENCODER = [
  { title: "An encoder reads both ways", view: { model: "smollm2-mlm", tab: "selfsup" },
    fallback: ["minilm-mlm", "bert-mlm"], target: "#mlm-chips, #mlm-out",
    text: "An encoder (BERT, MiniLM) has no causal mask: every token sees the whole sentence. It learns by filling " +
      "in hidden words: click a token to mask it and read the model's guesses for it. (smollm2-mlm is the SmolLM2 " +
      "decoder with its mask taken away and taught to fill in words.)" },
  { title: "[CLS] and no mask", view: { model: "minilm-mlm", tab: "attention", layer: 0, head: 0 },
    fallback: ["bert-mlm"], target: "#heatmap",
    text: "The weights matrix is full, not triangular: a token attends to the words after it as well. [CLS] at " +
      "the start collects a summary of the sentence that a classifier reads." },
];
const VISION = [
  { title: "An image becomes tokens", view: { model: "vit-mnist", tab: "vision" }, target: "#image",
    text: "A vision transformer cuts the image into patches; each patch, flattened and projected, is a token, plus " +
      "a position and a [CLS] token. From there it is the same attention." },
  { title: "Where a patch looks", view: { model: "vit-mnist", tab: "vision" }, target: "#image",
    text: "Pick a patch: its attention over the other patches is drawn on the digit. The prediction is read from " +
      "[CLS] after the last block." },
];

let card = null;

// Starts by itself only on a first landing (no view in the URL: a shared link opens on what it names), unless
// dismissed before; ?tour=1 forces it.
export function maybeStartTour(app, { force = false, fresh = false } = {}) {
  let done = false;
  try { done = localStorage.getItem(STORAGE) === "done"; } catch (e) { done = false; }
  if (force || (fresh && !done)) startTour(app);
}

const offered = (id) => [...document.querySelectorAll("#model option")].some((o) => o.value === id && !o.disabled);

// A step's model, or the first of its fallbacks offered here (smollm2-mlm and minilm-mlm need their base packages);
// null: none.
function pick(step) {
  if (!step.view.model) return step;
  const id = [step.view.model, ...(step.fallback || [])].find(offered);
  return id ? { ...step, view: { ...step.view, model: id } } : null;
}

export function startTour(app) {
  close(false);
  const chosen = STORY.find((s) => offered(s.model));
  if (!chosen) return;
  const { model, text } = chosen;
  let story = null;
  const asked = api(`/api/tour/${encodeURIComponent(model)}?text=${encodeURIComponent(text)}`)
    .then((s) => { story = s; return s; }).catch(() => null);  // the last stop says so if it never comes
  let branchSteps = null;  // the encoder's or vision's short story, once chosen
  const current = () => branchSteps || storySteps(model, text, story);
  let i = 0;
  card = el("div", { id: "tour", class: "tour", role: "dialog", "aria-modal": "false",
    "aria-labelledby": "tour-title" });
  document.body.append(card);
  document.body.classList.add("touring");

  let shown = 0;  // the step whose view is being opened: an older navigation never highlights anything
  async function show(move) {
    const mine = ++shown;
    if (!branchSteps && !story && i === current().length - 1) await asked;  // the experiment needs the story
    if (mine !== shown || !card) return;
    const steps = current(), s = steps[i], last = i === steps.length - 1;
    unmark();
    const back = el("button", { type: "button", id: "tour-back", disabled: i === 0 ? true : null,
      onclick: () => { i -= 1; show(true); } }, "Back");
    const next = el("button", { type: "button", id: "tour-next", class: "primary",
      onclick: () => { if (last) close(true); else { i += 1; show(true); } } }, last ? "Finish" : "Next");
    const more = last && !branchSteps ? el("p", { class: "tour-more" }, "Two short stories more: ",
      el("button", { type: "button", id: "tour-encoder", onclick: () => branch(ENCODER) }, "an encoder"), ", ",
      el("button", { type: "button", id: "tour-vision", onclick: () => branch(VISION) }, "vision"), ".") : null;
    card.replaceChildren(
      el("div", { class: "tour-count" }, `Tour · ${i + 1} of ${steps.length}`),
      el("h2", { id: "tour-title" }, s.title), el("p", { id: "tour-text" }, s.text), ...(more ? [more] : []),
      el("div", { class: "tour-buttons" }, back, next,
        el("button", { type: "button", id: "tour-skip", onclick: () => close(true) }, "Skip tour")));
    card.dataset.step = String(i);
    next.focus({ preventScroll: true });
    for (const [path, body] of (steps[i + 1] && steps[i + 1].ahead) || []) prefetch(path, body);
    const loads = s.view.model && s.view.model !== new URLSearchParams(location.search).get("model");
    move = move && !onScreen(s.view);  // a stop on the view already drawn only outlines another part of it
    const drawn = move ? app.navigate({ ...s.view }) : null;  // the same model: the old view is replaced at once
    if (drawn && loads) await drawn;  // another model: the old view stays up while it loads
    // the subject is outlined as soon as ITS part of the view has its numbers (a section of the Experiments tab
    // is ready long before the whole tab), else when the tab is
    for (let waited = 0; !subject(s.target) && waited < 120000; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    if (mine === shown && card) mark(s.target);
    // the rest of the tab may still draw around it (sections above it growing or shrinking): until the whole tab
    // is drawn, the subject is brought back on screen whenever it moves away
    const tab = document.getElementById("tab");
    for (let waited = 0; waited < 120000 && mine === shown && card; waited += 25) {
      const target = subject(s.target), box = target && target.getBoundingClientRect();
      if (box && (box.top < 0 || box.top > window.innerHeight)) mark(s.target);
      if (tab.dataset.ready === "1") break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  function branch(list) {
    const steps = list.map(pick).filter(Boolean);
    if (!steps.length) return;
    branchSteps = steps;
    i = 0;
    show(true);
  }
  card.addEventListener("keydown", (ev) => { if (ev.key === "Escape") close(true); });
  // The first stop waits for the story (the model loads once, the numbers come with it), saying so; then every
  // stop is on the loaded model and Next is quick.
  const skip = el("button", { type: "button", id: "tour-skip", onclick: () => close(true) }, "Skip tour");
  card.replaceChildren(el("div", { class: "tour-count" }, "Tour"),
    el("h2", { id: "tour-title" }, "Preparing the story"),
    el("p", { id: "tour-text", role: "status" }, `${model} reads “${text}” once, to find what it predicts and ` +
      "which head helps it most…"), el("div", { class: "tour-buttons" }, skip));
  skip.focus({ preventScroll: true });
  const preparing = ++shown;
  asked.then(() => { if (card && shown === preparing) show(true); });  // the story's own model and sentence
}

// Whether the page shows `view` already: every address key it names has that value.
function onScreen(view) {
  const params = new URLSearchParams(location.search);
  return Object.entries(view).every(([k, v]) => v === undefined || params.get(k) === String(v));
}

// The step's subject once drawn with its numbers: its nearest part that says whether it is ready (a section of
// the Experiments tab, else the tab itself) says "1"; null before.
function subject(selector) {
  const target = selector && document.querySelector(`#tab ${selector.split(", ").join(", #tab ")}`);
  if (!target) return null;
  const part = target.closest("[data-ready]");
  return part && part.dataset.ready === "1" ? target : null;
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
