// Pieces several tabs share: the sentence box, the "this tab needs another kind of model" notice, and token
// chips that work by keyboard (one tab stop for the row; arrow keys move, Enter or Space selects).
import { el, notice, tokenLabel, tokenTitle } from "./util.js";

export function sentenceBox(ctx, onSubmit) {
  const input = el("input", { type: "text", id: "sentence", value: ctx.state.text || "",
    "aria-label": "sentence to run through the model" });
  const go = () => { ctx.setState({ text: input.value, token: undefined, key: undefined }); if (onSubmit) onSubmit(); };
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") go(); });
  const examples = (ctx.info && ctx.info.examples) || [];
  return el("div", { class: "controls" }, el("label", { for: "sentence" }, "sentence "), input,
    el("button", { type: "button", id: "run", onclick: go }, "Run"),
    examples.length ? el("span", { class: "help" }, "examples for this model:") : "",
    examples.map((s) => el("button", { type: "button", class: "example", onclick: () => { input.value = s; go(); } },
      s)));
}

// A row of token chips. items: [{index, token, cls, label, piece, id}] (piece and id, when given, are the
// tokenizer's raw piece and the token id, shown on hover/focus); onselect(index). Roving tabindex: the selected
// chip (or the first) is the row's one tab stop.
export function chipRow(container, items, selected, onselect, { name = "token" } = {}) {
  const current = items.some((t) => t.index === selected) ? selected : (items.length ? items[0].index : null);
  const buttons = items.map((t) => el("button", {
    type: "button", class: "chip" + (t.cls ? ` ${t.cls}` : "") + (t.index === selected ? " selected" : ""),
    dataset: { index: t.index, token: t.token }, title: tokenTitle(t.token, t.index, t.piece, t.id),
    "aria-pressed": t.index === selected ? "true" : "false", tabindex: t.index === current ? "0" : "-1",
    "aria-label": `${name} ${t.index}: ${tokenLabel(t.token)}`,
    onclick: () => onselect(t.index),
  }, t.label ?? tokenLabel(t.token)));
  container.setAttribute("role", "group");
  container.onkeydown = (ev) => {
    const i = buttons.indexOf(document.activeElement);
    if (i < 0) return;
    const to = { ArrowRight: i + 1, ArrowDown: i + 1, ArrowLeft: i - 1, ArrowUp: i - 1, Home: 0,
      End: buttons.length - 1 }[ev.key];
    if (to === undefined) return;
    ev.preventDefault();
    const b = buttons[Math.max(0, Math.min(buttons.length - 1, to))];
    buttons.forEach((x) => { x.tabIndex = -1; });
    b.tabIndex = 0; b.focus();
  };
  container.replaceChildren(...buttons);
  return buttons;
}

// chipRow with one chip per token of `tokens` (its index the position), redrawn on every pick: when the keyboard
// focus was in the row it stays there, on the selected chip. Why: without it each pick dropped the focus to
// the top of the page.
export function positionChips(container, tokens, selected, onselect, name) {
  const focused = document.activeElement && container.contains(document.activeElement);
  const buttons = chipRow(container, tokens.map((t, i) => ({ index: i, token: t })), selected, onselect, { name });
  if (focused) buttons[selected].focus();
  return buttons;
}

// Returns true when the loaded model fits; otherwise appends a notice with buttons for models that do.
export function needs(root, ctx, topologies, what) {
  const topo = ctx.info && ctx.info.topology;
  if (ctx.info && topologies.includes(topo)) return true;
  const fits = ctx.models.filter((m) => m.available && topologies.includes(m.topology));
  const article = /^[aeiou]/i.test(topo || "") ? "an" : "a";
  root.append(notice(`${what} ${ctx.info ? `The selected model is ${article} ${topo}.` : ""}`, "warn"));
  if (fits.length) {
    root.append(el("div", { class: "controls" }, "Switch to: ", fits.map((m) => el("button", {
      type: "button", class: "switch-model", dataset: { model: m.id },
      onclick: () => ctx.navigate({ model: m.id }),
    }, m.label))));
  }
  // models that would fit but are not here, in one quiet line (not a warning per model on every tab): only
  // those a command installs; a checkpoint nobody trained is not news on every "Switch to" list
  const missing = ctx.models.filter((m) => !m.available && topologies.includes(m.topology) &&
    /pip install/.test(m.reason || ""));
  if (missing.length) root.append(el("p", { class: "help", id: "not-installed" }, "Not installed here: ",
    missing.map((m, i) => [i ? "; " : "", `${m.id} (${m.reason})`])));
  return false;
}
