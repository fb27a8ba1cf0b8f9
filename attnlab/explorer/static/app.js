// The page's shell: state in the URL, the model menu, the tab switcher and the guided tour.
// Each tab is an ES module exporting render(root, ctx); ctx carries the state and the loaded model's info.
// Every view is a URL: changing tab, model, sentence, layer or head adds a history entry (Back returns to the
// previous view inside the app); smaller changes (the selected token or key, hiding specials) replace it.
import { aborted, api, busy, el, notice } from "./util.js";
import * as architecture from "./tabs/architecture.js";
import * as attention from "./tabs/attention.js";
import * as selfsup from "./tabs/selfsup.js";
import * as vision from "./tabs/vision.js";
import * as generation from "./tabs/generation.js";
import * as cost from "./tabs/cost.js";
import * as experiments from "./tabs/experiments.js";
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
const KEYS = ["model", "tab", "layer", "head", "part", "text", "target", "token", "key", "hide"];
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
      key: changes.key, part: changes.part, target: changes.target });
  }
  setState(changes, { rerender: false, push: true });
  if (modelChanged) {
    document.getElementById("model").value = state.model;
    await loadModel();
    // a sentence written for another model may be all [UNK] here: take this model's own example instead
    if (changes.text === undefined) {
      const ex = (info && info.examples) || [];
      setState({ text: ex.length ? ex[0] : "" }, { rerender: false, push: false });
    }
  }
  render();
}

function modelLabel(m) {
  return m.available ? m.label : `${m.label} — not available`;
}

async function loadModel() {
  const status = document.getElementById("status");
  const entry = models.find((m) => m.id === state.model);
  info = null;
  loadedModel = state.model;
  if (!entry) return;
  if (!entry.available) { status.replaceChildren(notice(`${entry.label}: ${entry.reason}`, "warn")); return; }
  // a large model's first load takes a while (SmolLM2: ~30 s on a small CPU): show the seconds, allow Cancel
  const controller = new AbortController();
  const box = busy(`loading ${entry.label} …`, () => controller.abort(), { id: "loading" });
  status.replaceChildren(box);
  try {
    info = await api(`/api/models/${encodeURIComponent(state.model)}`, undefined, { signal: controller.signal });
    status.replaceChildren(info.illustration ? notice("Illustration: this toy's weights were set by hand, " +
      "not trained. Real models below carve up the space their own way.", "illustration") : "");
  } catch (e) {
    if (aborted(e)) {
      const retry = el("button", { type: "button", id: "retry-load", onclick: async () => { await loadModel(); render(); } },
        "Load it again");
      status.replaceChildren(el("div", { class: "notice warn", id: "load-cancelled", role: "status" },
        `Loading ${entry.label} was cancelled. The server may finish loading it anyway, so a second try is ` +
        "quicker; or pick another model. ", retry));
    } else status.replaceChildren(notice(e.message, "error"));
  } finally {
    box.stop();
  }
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
  if (mine === renders) { root.dataset.ready = "1"; root.removeAttribute("aria-busy"); }
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
    await loadModel();
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
