// Pieces several tabs share: the sentence box, and the "this tab needs another kind of model" notice.
import { el, notice } from "../util.js";

export function sentenceBox(ctx, onSubmit) {
  const input = el("input", { type: "text", id: "sentence", value: ctx.state.text || "" });
  const go = () => { ctx.setState({ text: input.value, token: undefined, key: undefined }); if (onSubmit) onSubmit(); };
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") go(); });
  const examples = (ctx.info && ctx.info.examples) || [];
  return el("div", { class: "controls" }, el("label", {}, "sentence "), input,
    el("button", { id: "run", onclick: go }, "Run"),
    examples.map((s) => el("button", { class: "example", onclick: () => { input.value = s; go(); } }, s)));
}

// Returns true when the loaded model fits; otherwise appends a notice with buttons for models that do.
export function needs(root, ctx, topologies, what) {
  const topo = ctx.info && ctx.info.topology;
  if (ctx.info && topologies.includes(topo)) return true;
  const fits = ctx.models.filter((m) => m.available && topologies.includes(m.topology));
  root.append(notice(`${what} ${ctx.info ? `The selected model is a ${topo}.` : ""}`, "warn"));
  if (fits.length) {
    root.append(el("div", { class: "controls" }, "Switch to: ", fits.map((m) => el("button", {
      class: "switch-model", dataset: { model: m.id },
      onclick: () => { document.getElementById("model").value = m.id;
        document.getElementById("model").dispatchEvent(new Event("change")); },
    }, m.label))));
  }
  const missing = ctx.models.filter((m) => !m.available && topologies.includes(m.topology));
  for (const m of missing) root.append(notice(`${m.label}: ${m.reason}`, "warn"));
  return false;
}
