// The page's shell: state in the URL, the model menu, the sentence box and the tab switcher.
// Each tab is an ES module exporting render(root, ctx); ctx carries the state and the loaded model's info.
import { api, el, notice } from "./util.js";
import * as architecture from "./tabs/architecture.js";
import * as attention from "./tabs/attention.js";
import * as selfsup from "./tabs/selfsup.js";
import * as vision from "./tabs/vision.js";
import * as generation from "./tabs/generation.js";
import * as cost from "./tabs/cost.js";

const TABS = [
  ["architecture", "Architecture", architecture],
  ["attention", "Attention", attention],
  ["selfsup", "Self-supervised", selfsup],
  ["vision", "Vision", vision],
  ["generation", "Generation", generation],
  ["cost", "Cost", cost],
];
const KEYS = ["model", "tab", "layer", "head", "part", "text", "target", "token", "key", "hide"];

const state = {};
let models = [];
let info = null;

function readUrl() {
  const p = new URLSearchParams(location.search);
  for (const k of KEYS) if (p.has(k)) state[k] = p.get(k);
  for (const k of ["layer", "head", "token", "key"]) if (state[k] !== undefined) state[k] = Number(state[k]);
}

export function setState(changes, { rerender = true } = {}) {
  Object.assign(state, changes);
  const p = new URLSearchParams();
  for (const k of KEYS) if (state[k] !== undefined && state[k] !== null && state[k] !== "") p.set(k, state[k]);
  history.replaceState(null, "", "?" + p.toString());
  if (rerender) render();
}

function modelLabel(m) {
  return m.available ? m.label : `${m.label} — not available`;
}

async function loadModel() {
  const status = document.getElementById("status");
  const entry = models.find((m) => m.id === state.model);
  info = null;
  if (!entry) return;
  if (!entry.available) { status.replaceChildren(notice(`${entry.label}: ${entry.reason}`, "warn")); return; }
  status.replaceChildren(notice(`loading ${entry.label} …`));
  try {
    info = await api(`/api/models/${encodeURIComponent(state.model)}`);
    status.replaceChildren(info.illustration ? notice("Illustration: this toy's weights were set by hand, " +
      "not trained. Real models below carve up the space their own way.", "illustration") : "");
  } catch (e) {
    status.replaceChildren(notice(e.message, "error"));
  }
}

let renders = 0;

async function render() {
  document.querySelectorAll("nav button").forEach((b) => b.classList.toggle("active", b.dataset.tab === state.tab));
  const root = document.getElementById("tab");
  const tab = TABS.find((t) => t[0] === state.tab) || TABS[0];
  const mine = ++renders;
  // each render fills its own container: a slower, older render only ever writes into a detached node
  const view = el("div", { class: "view" });
  root.dataset.ready = "0";  // tests (and people) wait for "1": the tab has all its numbers
  root.replaceChildren(view);
  root.dataset.tab = tab[0];
  const ctx = { state, info, models, setState, root: view };
  try {
    await tab[2].render(view, ctx);
  } catch (e) {
    view.append(notice(e.message, "error"));
    console.error(e);
  }
  if (mine === renders) root.dataset.ready = "1";
}

async function main() {
  readUrl();
  const data = await api("/api/models");
  models = data.models;
  state.model = state.model && models.some((m) => m.id === state.model) ? state.model : data.default;
  state.tab = state.tab || "attention";
  const sel = document.getElementById("model");
  sel.replaceChildren(...models.map((m) => el("option", { value: m.id, disabled: !m.available }, modelLabel(m))));
  sel.value = state.model;
  sel.addEventListener("change", async () => {
    setState({ model: sel.value, layer: 0, head: 0, token: undefined, key: undefined, part: undefined,
      target: undefined },
      { rerender: false });
    await loadModel();
    render();
  });
  const nav = document.getElementById("tabs");
  nav.replaceChildren(...TABS.map(([id, label]) => el("button", {
    dataset: { tab: id }, onclick: () => setState({ tab: id }),
  }, label)));
  await loadModel();
  if (!state.text && info && info.examples && info.examples.length) state.text = info.examples[0];
  setState({});
}

main().catch((e) => document.getElementById("status").replaceChildren(notice(e.message, "error")));
