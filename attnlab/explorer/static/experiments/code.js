// Experiments · Show the code: under each section a disclosure with the few lines of attnlab Python that give the
// numbers the section just showed, for the inputs it just sent. The server writes them (POST
// /api/experiments/code, explorer/views/experiments/code/routes.py) from the view's own request, which util.js announces as
// it goes out; this file keeps the last request per API path of each section and shows their code.
import { api, apiRequests, el, linkStyle, notice } from "../util.js";

// the API paths each section calls (the server has a snippet for each one named here)
export const CODE_PATHS = {
  flow: ["/api/experiments/flow"],
  "toy-edit": ["/api/experiments/toy"],
  timeline: [],  // it replays a file written while training: no computation to repeat here
  meanings: ["/api/experiments/neighbours", "/api/experiments/sentences"],
  ablate: ["/api/experiments/ablation", "/api/experiments/head-sweep", "/api/experiments/head-attribution"],
  patch: ["/api/experiments/patch", "/api/experiments/patch-attribution"],
  lens: ["/api/experiments/logit-lens"],
  "attn-abl": ["/api/experiments/attention-ablation"],
  components: ["/api/experiments/components"],
  dla: ["/api/experiments/logit-attribution"],
  attribution: ["/api/experiments/head-attribution", "/api/experiments/patch-attribution"],
  steer: ["/api/experiments/steer"],
  walk: ["/api/experiments/patch-attribution", "/api/experiments/components", "/api/experiments/head-attribution",
    "/api/experiments/logit-attribution", "/api/experiments/steer"],
};
// sections that tag their requests (asSection): they show only their own, never another section's to the same path
const SCOPED = new Set(["walk"]);

// Which section is sending requests right now (asSection), so that a request the circuit walk sends to the
// ablation's route shows in the walk's code, not under "Ablate" too. null: any section listening for the path.
let speaking = null;

// Runs fn() with its requests counted as section `id`'s: api() and apiLines() announce a request synchronously,
// before their first await, so the tag is read while fn's synchronous part runs. -> fn's return value.
export function asSection(id, fn) {
  const before = speaking;
  speaking = id;
  try { return fn(); } finally { speaking = before; }
}

// Says that section `id` no longer shows the result of its latest request to `path` (the ablation's "Switch all
// back on" shows no ablated run): its code block drops that snippet. Why: the code must match the page.
export function withdraw(id, path) {
  apiRequests.dispatchEvent(new CustomEvent("request", { detail: { path, body: null, section: id } }));
}

// The text onto the clipboard: the Clipboard API where the page is a secure context (localhost), else a hidden
// textarea and the copy command (a class's explorer served over plain http on the local network).
async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = el("textarea", { class: "copy-buffer", "aria-hidden": "true", tabindex: "-1" });
  area.value = text;
  document.body.append(area);
  area.select();
  const ok = document.execCommand("copy");
  area.remove();
  if (!ok) throw new Error("the browser refused to copy: select the code and press Ctrl+C");
}

// One snippet: what it computes, the code (a focusable region, it scrolls sideways on a phone), a Copy button.
function snippetView(id, view, code) {
  const status = el("span", { class: "copy-status", role: "status", "aria-live": "polite" });
  const copy = el("button", { type: "button", class: "copy-code", id: `${id}-copy` }, "Copy");
  copy.addEventListener("click", async () => {
    try { await copyText(code); status.textContent = "Copied to the clipboard."; }
    catch (e) { status.textContent = e.message; }
  });
  return el("div", { class: "snippet" },
    el("div", { class: "snippet-head" }, el("span", { class: "help" }, `Python for ${view}:`), copy, status),
    el("pre", { class: "code", id: `${id}-pre`, tabindex: "0", "aria-label": `Python code for ${view}` },
      el("code", {}, code)));
}

// The disclosure for section `sectionId`, listening from now on (create it before the section's first request,
// attach it where it should sit with box.append once the section has drawn).
export function codeBlock(sectionId) {
  linkStyle("/static/experiments/code.css");
  const paths = CODE_PATHS[sectionId] || [];
  const last = new Map();  // path -> the body of its latest request, in the order first seen
  const body = el("div", { class: "code-body", id: `x-${sectionId}-code-body` });
  const details = el("details", { class: "show-code", id: `x-${sectionId}-code` },
    el("summary", {}, "Show the code"), body);
  let seq = 0;

  async function refresh() {
    const mine = ++seq;
    if (!last.size) {
      body.replaceChildren(el("p", { class: "help" }, paths.length ? "Run the experiment above: the Python " +
        "for exactly what it computes appears here." : "This view computes nothing here: it replays the probe " +
        "file a training run wrote (attnlab/training/probe.py records the probe sentence's attention every few " +
        "steps with attnlab.record)."));
      details.dataset.ready = "1";
      return;
    }
    details.dataset.ready = "0";
    const parts = await Promise.all([...last].map(async ([path, request], i) => {
      try {
        const r = await api("/api/experiments/code", { path, body: request });
        return [r.code, snippetView(`x-${sectionId}-code-${i}`, r.view, r.code)];
      } catch (e) { return [e.message, notice(e.message, "warn")]; }
    }));
    if (mine !== seq) return;
    const seen = new Set();  // the same code once, however many paths wrote it
    const unique = parts.filter(([code]) => !seen.has(code) && seen.add(code)).map(([, node]) => node);
    body.replaceChildren(el("p", { class: "help" }, "The same numbers from Python, with the inputs above " +
      "filled in (pip install attnlab; run it as it is):"), ...unique);
    details.dataset.ready = "1";
  }

  function heard(event) {
    if (!details.isConnected && details.dataset.attached) {  // the tab was drawn again: this block is gone
      apiRequests.removeEventListener("request", heard);
      return;
    }
    const from = event.detail.section || speaking;
    if (SCOPED.has(sectionId) ? from !== sectionId : from && from !== sectionId) return;  // another section's
    const path = (event.detail.path || "").split("?")[0];
    const known = paths.find((p) => path === p || path.startsWith(`${p}/`));
    if (!known || event.detail.body === undefined) return;
    if (event.detail.body === null) last.delete(known);  // withdrawn: the page no longer shows it
    else last.set(known, event.detail.body);
    if (details.open) refresh();
    else details.dataset.ready = "0";  // what it shows is an earlier request's until it opens again
  }
  apiRequests.addEventListener("request", heard);
  details.addEventListener("toggle", () => { if (details.open) refresh(); });
  details.attach = (box) => {  // not under a section that says it cannot run on this model
    details.dataset.attached = "1";
    if (!box.querySelector(".not-for-model, .not-for-model-ref, .decoder-only")) box.append(details);
  };
  return details;
}
