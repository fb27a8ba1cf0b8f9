// The page's shell: state in the URL, the model menu, the tab switcher and the guided tour.
// Each tab is an ES module exporting render(root, ctx); ctx carries the state and the loaded model's info.
// Every view is a URL: changing tab, model, sentence, layer or head adds a history entry (Back returns to the
// previous view inside the app); smaller changes (the selected token or key, hiding specials) replace it.
import { aborted, api, busy, el, focusKey, notice, refocus } from "./util.js";
import * as architecture from "./architecture/architecture.js";
import * as attention from "./attention/attention.js";
import * as selfsup from "./selfsup/selfsup.js";
import * as vision from "./vision/vision.js";
import * as generation from "./generation/generation.js";
import * as cost from "./cost/cost.js";
import * as experiments from "./experiments/experiments.js";
import { maybeStartTour, startTour } from "./tour.js";

const TABS = [
  ["architecture", "Architecture", architecture],
  ["attention", "Attention", attention],
  ["selfsup", "Self-supervised", selfsup],
  ["vision", "Vision", vision],
  ["generation", "Generation", generation],
  ["cost", "Cost", cost],
  ["experiments", "Experiments", experiments],
];
// off: "L.H", a head the Experiments tab opens switched off (the tour's experiment, a shared link)
const KEYS = ["model", "tab", "layer", "head", "part", "text", "target", "token", "key", "hide", "off"];
const NUMERIC = ["layer", "head", "token", "key"];
const PUSHED = ["model", "tab", "layer", "head", "part", "text", "target"];  // these make a new history entry
const FIRST_MODEL = "toy";  // a first visit opens on the hand-set toy with "cat" selected (the seed's story)

const state = {};
let models = [];
let info = null;
let loadedModel = null;

function readUrl() {
  for (const k of KEYS) delete state[k];
  const p = new URLSearchParams(location.search);
  for (const k of KEYS) if (p.has(k)) state[k] = p.get(k);
  for (const k of NUMERIC) if (state[k] !== undefined) state[k] = Number(state[k]);
  return p;
}

function urlOf() {
  const p = new URLSearchParams();
  for (const k of KEYS) if (state[k] !== undefined && state[k] !== null && state[k] !== "") p.set(k, state[k]);
  return "?" + p.toString();
}

export function setState(changes, { rerender = true, push = null } = {}) {
  const before = urlOf();
  Object.assign(state, changes);
  const after = urlOf();
  const pushes = push ?? Object.keys(changes).some((k) => PUSHED.includes(k) && String(changes[k] ?? "") !==
    String(new URLSearchParams(before).get(k) ?? ""));
  if (after !== before || location.search !== after) {
    if (pushes && after !== before) history.pushState(null, "", after);
    else history.replaceState(null, "", after);
  }
  if (rerender) render();
}

// Change model (loading it), and anything else, as one history entry.
export async function navigate(changes) {
  const modelChanged = changes.model !== undefined && changes.model !== state.model;
  if (modelChanged) {
    Object.assign(changes, { layer: changes.layer ?? 0, head: changes.head ?? 0, token: changes.token,
      key: changes.key, part: changes.part, target: changes.target, off: changes.off });
  }
  setState(changes, { rerender: false, push: true });
  if (modelChanged) {
    document.getElementById("model").value = state.model;
    if (!(await loadModel())) return;  // another choice came while this model loaded: that one draws the page
    // a sentence written for another model may be all [UNK] here: take this model's own example instead
    if (changes.text === undefined) {
      const ex = (info && info.examples) || [];
      setState({ text: ex.length ? ex[0] : "" }, { rerender: false, push: false });
    }
  }
  await render();
}

function modelLabel(m) {
  return m.available ? m.label : `${m.label} — not available`;
}

// Loading a model can take seconds; the person may pick another meanwhile. Each load has a number: only the
// latest may set `info` (an older answer would mix two models: one model's caption, another's numbers), and a
// newer choice aborts the older request. Returns true when this load is still the current one.
let loads = 0;
let loadController = null;

async function loadModel() {
  const mine = ++loads;
  if (loadController) loadController.abort();
  const status = document.getElementById("status");
  const entry = models.find((m) => m.id === state.model);
  info = null;
  loadedModel = state.model;
  if (!entry) return true;
  if (!entry.available) { status.replaceChildren(notice(`${entry.label}: ${entry.reason}`, "warn")); return true; }
  // a large model's first load takes a while (SmolLM2: ~30 s on a small CPU): show the seconds, allow Cancel
  const controller = new AbortController();
  loadController = controller;
  const box = busy(`loading ${entry.label} …`, () => controller.abort(), { id: "loading" });
  status.replaceChildren(box);
  try {
    const got = await api(`/api/models/${encodeURIComponent(state.model)}`, undefined, { signal: controller.signal });
    if (mine !== loads) return false;
    info = got;
    status.replaceChildren(info.illustration ? notice("Illustration: this toy's weights were set by hand, " +
      "not trained. Real models below carve up the space their own way.", "illustration") : "");
  } catch (e) {
    if (mine !== loads) return false;  // replaced by a newer choice: not an error, and not "cancelled"
    if (aborted(e)) {
      const retry = el("button", { type: "button", id: "retry-load", onclick: async () => {
        if (await loadModel()) render();
      } }, "Load it again");
      status.replaceChildren(el("div", { class: "notice warn", id: "load-cancelled", role: "status" },
        `Loading ${entry.label} was cancelled. The server may finish loading it anyway, so a second try is ` +
        "quicker; or pick another model. ", retry));
    } else status.replaceChildren(notice(e.message, "error"));
  } finally {
    box.stop();
    if (loadController === controller) loadController = null;
  }
  return mine === loads;
}

// A region that scrolls must be reachable by keyboard (axe: scrollable-region-focusable): every element of the
// tab that overflows its box and holds nothing focusable becomes a tab stop named after its heading.
function focusableScrollers(root) {
  for (const node of root.querySelectorAll(".panel, .scroll, .diagram, #thumbs, #embeddings, details, div")) {
    const css = getComputedStyle(node);
    const scrolls = (/(auto|scroll)/.test(css.overflowX) && node.scrollWidth > node.clientWidth + 1) ||
      (/(auto|scroll)/.test(css.overflowY) && node.scrollHeight > node.clientHeight + 1);
    if (!scrolls || node.hasAttribute("tabindex")) continue;
    if (node.querySelector("a[href], button, input, select, textarea, [tabindex]")) continue;
    node.tabIndex = 0;
    if (!node.getAttribute("role")) node.setAttribute("role", "region");
    if (!node.getAttribute("aria-label")) {
      const h = node.querySelector("h2, h3");
      node.setAttribute("aria-label", `${h ? h.textContent.trim() : node.id || "table"} (scrolls)`);
    }
  }
}

let scrollerTimer = null;
function watchScrollers(root) {
  const run = () => { clearTimeout(scrollerTimer); scrollerTimer = setTimeout(() => focusableScrollers(root), 60); };
  new MutationObserver(run).observe(root, { childList: true, subtree: true });
  window.addEventListener("resize", run);
}

let renders = 0;

async function render() {
  document.querySelectorAll("nav [role=tab]").forEach((b) => {
    const on = b.dataset.tab === state.tab;
    b.classList.toggle("active", on);
    b.setAttribute("aria-selected", on ? "true" : "false");
    b.tabIndex = on ? 0 : -1;
  });
  const root = document.getElementById("tab");
  const tab = TABS.find((t) => t[0] === state.tab) || TABS[0];
  const mine = ++renders;
  // each render fills its own container: a slower, older render only ever writes into a detached node
  const view = el("div", { class: "view" });
  const sameTab = root.dataset.tab === tab[0];
  const focused = focusKey(document.activeElement, root);
  const scrollY = window.scrollY;
  // a redraw of the same tab (another layer, head, sample) keeps the page where it is: the old height holds
  // until the new view is drawn, so the browser never clamps the scroll to the top of an empty tab
  if (sameTab) root.style.minHeight = `${root.offsetHeight}px`;
  root.dataset.ready = "0";  // tests (and people) wait for "1": the tab has all its numbers
  root.setAttribute("aria-busy", "true");
  root.replaceChildren(view);
  root.dataset.tab = tab[0];
  root.setAttribute("aria-labelledby", `tab-${tab[0]}`);
  document.title = `${tab[1]} · attnlab Transformer Explorer`;
  const ctx = { state, info, models, setState, navigate, root: view };
  try {
    await tab[2].render(view, ctx);
  } catch (e) {
    view.append(notice(e.message, "error"));
    console.error(e);
  }
  if (mine === renders) {
    root.style.minHeight = "";
    if (sameTab && Math.abs(window.scrollY - scrollY) > 1) window.scrollTo(0, scrollY);
    refocus(focused, root);
    focusableScrollers(root);
    root.dataset.ready = "1"; root.removeAttribute("aria-busy");
  }
}

function fillDefaults(fresh, data) {
  if (!(state.model && models.some((m) => m.id === state.model))) {
    const toy = models.find((m) => m.id === FIRST_MODEL && m.available);
    state.model = fresh && toy ? toy.id : data.default;
  }
  state.tab = TABS.some((t) => t[0] === state.tab) ? state.tab : "attention";
}

async function onPopState() {
  readUrl();
  fillDefaults(false, { default: models.length ? models[0].id : null });
  if (state.model !== loadedModel) {
    document.getElementById("model").value = state.model;
    if (!(await loadModel())) return;
  }
  render();
}

async function main() {
  const params = readUrl();
  const fresh = [...params.keys()].filter((k) => k !== "tour").length === 0;  // a first landing, no view asked
  const data = await api("/api/models");
  models = data.models;
  fillDefaults(fresh, data);
  const sel = document.getElementById("model");
  sel.replaceChildren(...models.map((m) => el("option", { value: m.id, disabled: !m.available }, modelLabel(m))));
  sel.value = state.model;
  sel.addEventListener("change", () => navigate({ model: sel.value }));
  const nav = document.getElementById("tabs");
  nav.setAttribute("role", "tablist");
  nav.replaceChildren(...TABS.map(([id, label]) => el("button", {
    type: "button", role: "tab", id: `tab-${id}`, "aria-controls": "tab", dataset: { tab: id },
    onclick: () => setState({ tab: id }),
  }, label)));
  nav.addEventListener("keydown", (ev) => {  // arrow keys move along the tab bar (the ARIA tabs pattern)
    const i = TABS.findIndex((t) => t[0] === state.tab);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: TABS.length - 1 }[ev.key];
    if (to === undefined) return;
    ev.preventDefault();
    const id = TABS[(to + TABS.length) % TABS.length][0];
    setState({ tab: id });
    document.getElementById(`tab-${id}`).focus();
  });
  document.getElementById("tour-button").addEventListener("click", () => startTour({ navigate, getState }));
  window.addEventListener("popstate", onPopState);
  watchScrollers(document.getElementById("tab"));
  await loadModel();
  if (!state.text && info && info.examples && info.examples.length) {
    state.text = info.examples[0];
    if (fresh && state.model === FIRST_MODEL) state.token = 1;  // "cat" in "the cat sat on the mat"
  }
  setState({}, { push: false });
  maybeStartTour({ navigate, getState }, { force: params.get("tour") === "1", fresh });
}

function getState() { return { ...state }; }

main().catch((e) => document.getElementById("status").replaceChildren(notice(e.message, "error")));
