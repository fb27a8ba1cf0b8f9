// What the intervention grids share beyond drawing (draw.js draws them): the arrow keys of every grid, a grid of
// numbers that keyboard and touch can read cell by cell, a cue when a grid is wider than its box, the heads
// switched off marked in a sweep grid, and a result brought into view without a jump for those who asked for
// less motion.
import { el } from "../util.js";

// One tab stop for a grid of focusable cells (`items` in reading order, `cols` a row): arrow keys move the focus
// a cell, Home and End to the ends of the row, stopping at the edges (a roving tabindex, as the token chips do).
// Returns focusAt(k), which moves the tab stop to items[k] and focuses it. Why one function: the drawn grids,
// the pickable grids and the ablation's head picker must answer the same keys the same way.
export function rovingGrid(container, items, cols) {
  const focusAt = (k) => {
    items.forEach((c) => { c.tabIndex = -1; });
    items[k].tabIndex = 0;
    items[k].focus();
  };
  container.addEventListener("keydown", (ev) => {
    const k = items.indexOf(document.activeElement);
    if (k < 0) return;
    const r = Math.floor(k / cols), c = k % cols, rows = Math.ceil(items.length / cols);
    const to = { ArrowRight: [r, c + 1], ArrowLeft: [r, c - 1], ArrowDown: [r + 1, c], ArrowUp: [r - 1, c],
      Home: [r, 0], End: [r, cols - 1] }[ev.key];
    if (!to) return;
    ev.preventDefault();
    focusAt(Math.max(0, Math.min(rows - 1, to[0])) * cols + Math.max(0, Math.min(cols - 1, to[1])));
  });
  return focusAt;
}

export const reducedMotion = () => window.matchMedia("(prefers-reduced-motion: reduce)").matches;

// Scrolls `node` just enough to show it (block "nearest": nothing moves when it is on screen already), smoothly
// unless the learner's system asks for reduced motion. Why: a click far below a result changed it unseen.
export function bringIntoView(node) {
  if (!node || !node.isConnected) return;
  node.scrollIntoView({ block: "nearest", inline: "nearest", behavior: reducedMotion() ? "auto" : "smooth" });
}

// The sweep grid's cells of the heads in `off` ("layer,head" keys) get aria-pressed="true", the class "off"
// (an outline) and "switched off" in their label; every other cell is unpressed. Why: the grid is where the
// learner clicked, so it must say which head the result above is about.
export function markCells(container, off) {
  if (!container) return;
  for (const b of container.querySelectorAll("button.cell[data-row]")) {
    const on = off.has(`${b.dataset.row},${b.dataset.col}`);
    b.setAttribute("aria-pressed", on ? "true" : "false");
    b.classList.toggle("off", on);
    const base = (b.getAttribute("aria-label") || "").replace(/ — switched off$/, "");
    b.setAttribute("aria-label", on ? `${base} — switched off` : base);
  }
}

// Makes a drawn grid (gridTable without onpick: plain <td> cells carrying their full reading in `title`) one tab
// stop whose cells the arrow keys, Home and End walk; the focused or tapped cell's reading is written in a line
// above the grid (a polite live region). Why: title text shows on mouse hover only, never on focus or touch.
// wrapper: the element gridTable returned; -> the readout element.
export function readableGrid(wrapper, { id, hint = "Tap or focus a cell (arrow keys move) to read it here." } = {}) {
  const table = wrapper.querySelector("table");
  const cells = [...table.querySelectorAll("tbody td")];
  const readout = el("p", { class: "grid-readout", id, "aria-live": "polite" }, hint);
  const box = wrapper.querySelector(".xgrid-box") || table;
  box.before(readout);
  if (!cells.length) return readout;
  const cols = table.querySelector("tbody tr").querySelectorAll("td").length;
  const show = (td) => {
    cells.forEach((c) => c.classList.toggle("read", c === td));
    readout.textContent = td.title || td.textContent;
    readout.dataset.row = td.dataset.row;
    readout.dataset.col = td.dataset.col;
  };
  const go = rovingGrid(table, cells, cols);
  cells.forEach((td, k) => {
    td.tabIndex = k === 0 ? 0 : -1;
    td.addEventListener("focus", () => show(td));
    td.addEventListener("click", () => { show(td); go(k); });
  });
  return readout;
}

// Under a grid's scroll box: "more columns →" while part of it is hidden sideways (kept up to date as the box
// resizes or scrolls). Why: on a phone a clipped last column looked like the end of the grid.
export function scrollCue(wrapper) {
  const box = wrapper.querySelector(".xgrid-box");
  if (!box) return null;
  const cue = el("p", { class: "scroll-cue", "aria-hidden": "true", hidden: true });
  box.after(cue);
  const update = () => {
    const hidden = box.scrollWidth - box.clientWidth - box.scrollLeft;
    cue.hidden = box.scrollWidth <= box.clientWidth + 1;
    box.classList.toggle("clipped", !cue.hidden);
    cue.textContent = hidden > 1 ? "scroll sideways: more columns →" : "← scroll back for the first columns";
  };
  box.addEventListener("scroll", update, { passive: true });
  if (window.ResizeObserver) new ResizeObserver(update).observe(box);
  requestAnimationFrame(update);
  return cue;
}
