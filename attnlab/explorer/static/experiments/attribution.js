// Estimate first, then the exact values: the first answer of "Which heads matter" and of patching.
// The server streams {estimate} (the whole grid by attribution patching, a gradient approximation, in about a
// second), then {exact: [[row, col, exact, estimate], ...]} as each batched forward of the real runs finishes,
// then {result}. The grid is drawn from the estimate at once; each exact cell replaces its number in place (bold,
// outlined, "≠" where the two disagree), and a table below lists every checked cell with the rank correlation.
import { aborted, apiLines, ApiError, el, fmt, notice } from "../util.js";
import { answerLegend, cellNum, gridTable, jobStatus, toward } from "./draw.js";
import { scrollCue } from "./grid.js";

const WHY = "Attribution patching: one forward and one backward pass give every cell at once, as the first-order " +
  "(gradient) approximation (changed value − value) · ∂ log P / ∂ value. It is exact only for small changes " +
  "where the model is nearly linear; a saturated softmax or a large early change can make it wrong.";

// view: { id, unit, title(r), what(r) (the cells' units), rowHead(i), colHead(j), rows(r), cols(r),
//   noun(i, j, r) (a cell in words), onpick(i, j) (optional) }. Resolves to the final result (null: failed).
export async function estimateThenExact(path, body, out, view) {
  const { id } = view;
  const { job, controller, bar, count, status } = jobStatus(id, `${view.unit} checked exactly`,
    "estimating every cell …");
  const gridBox = el("div", { id: `${id}-estimate` });
  const agree = el("div", { id: `${id}-agree`, "aria-live": "polite" });
  out.replaceChildren(status, gridBox, agree);
  status.querySelector("button.cancel").focus();
  let grid = null, result = null;
  try {
    await apiLines(path, { ...body, job }, (line) => {
      if (line.estimate) {
        grid = drawEstimate(line.estimate, view, gridBox);
        count.textContent = `estimate shown; checking ${line.estimate.cells.length} ${view.unit} exactly …`;
        bar.max = line.estimate.cells.length;
      } else if (line.exact) {
        grid.mark(line.exact, line.disagree);
        bar.value = line.done;
        count.textContent = `${line.done} of ${line.total} ${view.unit} checked exactly`;
        agree.replaceChildren(agreement(grid.checked, line, view, grid.r));
      } else if (line.result) result = line.result;
      else if (line.error) throw new ApiError(line.error);
    }, { signal: controller.signal });
  } catch (e) {
    status.stop();
    const message = notice(aborted(e) ? "cancelled" : e.message, aborted(e) ? "info" : "error");
    if (grid) status.replaceWith(message); else out.replaceChildren(message);
    return null;
  }
  status.stop();
  if (result) {
    if (grid) grid.mark(result.exact, result.disagree);
    status.replaceWith(result.cancelled ? notice(`Cancelled: ${result.checked} of ${result.total} ${view.unit} ` +
      "were checked; the others show the estimate only.", "info") : "");
    agree.replaceChildren(agreement(result.exact, result, view, result));
    out.dataset.done = "1";
  }
  return result;
}

// the estimate grid, drawn once; mark() puts the exact values in place as they arrive
function drawEstimate(r, view, box) {
  const g = r.grid;
  const peak = Math.max(1e-6, ...g.flat().filter((v) => v !== null).map(Math.abs));
  const exact = new Map(), off = new Set();
  const key = (i, j) => `${i},${j}`;
  const shown = (i, j) => (exact.has(key(i, j)) ? exact.get(key(i, j)) : g[i][j]);
  const label = (i, j) => `${view.noun(i, j, r)}: estimate ${fmt(g[i][j], 3)}` + (exact.has(key(i, j)) ?
    `, exact ${fmt(exact.get(key(i, j)), 3)}${off.has(key(i, j)) ? " (they differ a lot)" : ""}` :
    " (not checked exactly)");
  const digits = peak < 0.1 ? 3 : 2;
  const table = gridTable({ id: `${view.id}-grid`, caption: `${view.what(r)}, ${view.rows(r)} × ${view.cols(r)}: ` +
    "every cell estimated; outlined cells checked by the exact run (≠: the estimate is far off)",
  rows: view.rows(r), cols: view.cols(r), rowHead: view.rowHead, colHead: (j) => view.colHead(j, r),
  value: (i, j) => g[i][j], text: (i, j) => cellNum(g[i][j], digits),
  fill: (i, j) => (g[i][j] === null ? "#d9d9d9" : toward(g[i][j], peak)), label,
  onpick: view.onpick ? (i, j) => view.onpick(i, j, label(i, j)) : null });
  box.replaceChildren(
    el("p", { class: "help estimate-note", id: `${view.id}-why` }, el("strong", {}, "Estimate. "), WHY,
      " Outlined cells have been checked with the real run; their number is the exact value."),
    view.title(r), answerLegend(peak, view.what(r), { note: "colour clamped at the ends" }),
    el("p", { class: "help" }, "Outlined, bold: checked exactly (the number shown is the real value); “≠”: the " +
      "estimate differs from it by over 30% (and by over 5% of the largest cell)."), table);
  scrollCue(table);  // on a phone the last column (where a decoder reads its answer) may be off to the side
  const cellOf = (i, j) => box.querySelector(`#${view.id}-grid td[data-row="${i}"][data-col="${j}"]`);
  return {
    r,
    get checked() {
      return [...exact.entries()].map(([k, v]) => { const [i, j] = k.split(",").map(Number); return [i, j, v, g[i][j]]; });
    },
    mark(cells, disagree) {
      for (const [i, j, v] of cells) exact.set(key(i, j), v);
      off.clear();
      for (const [i, j] of disagree || []) off.add(key(i, j));
      for (const k of exact.keys()) {
        const [i, j] = k.split(",").map(Number);
        const td = cellOf(i, j);
        if (!td) continue;
        const v = shown(i, j);
        td.classList.add("checked");
        td.dataset.exact = v;
        td.dataset.differs = off.has(k) ? "1" : "0";
        td.style.background = toward(v, peak);
        td.style.outline = "2px solid #111";
        td.style.outlineOffset = "-2px";
        const val = td.querySelector("span.val");
        val.replaceChildren(el("b", {}, cellNum(v, digits)), off.has(k) ? " ≠" : "");
        td.title = label(i, j);
        const b = td.querySelector("button");
        if (b) b.setAttribute("aria-label", label(i, j));
      }
    },
  };
}

// the checked cells side by side, their rank correlation and how many disagree
function agreement(cells, line, view, r) {
  const off = new Set((line.disagree || []).map(([i, j]) => `${i},${j}`));
  const rho = line.spearman;
  const rows = [...cells].sort((a, b) => Math.abs(b[2]) - Math.abs(a[2]));
  return el("div", { class: "agreement" },
    el("p", { class: "summary", id: `${view.id}-rho`, dataset: { spearman: rho ?? "", checked: cells.length,
      disagree: off.size } }, `Checked exactly: ${cells.length} ${view.unit} (the largest estimates, and a few ` +
      "others at random). ", rho !== null && rho !== undefined ? "Rank correlation of estimate and exact " +
      `value (Spearman ρ, 1 = same order): ${fmt(rho, 3)}. ` : cells.length < 3 ? "Rank correlation: needs 3 " +
      "checked cells. " : "Rank correlation: not defined (all the estimates or all the exact values are equal). ",
    off.size ? `${off.size} of them differ a lot (≠).` : "None differs a lot."),
    el("details", { class: "checked-details" }, el("summary", {}, `The ${cells.length} checked ${view.unit}, ` +
      "estimate beside exact value"),
    el("div", { class: "scroll-x" }, el("table", { class: "checked-cells", id: `${view.id}-checked` },
      el("caption", {}, `Checked ${view.unit}: ${view.what(r)}`),
      el("thead", {}, el("tr", {}, ["cell", "estimate", "exact", "agree?"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows.map(([i, j, v, est]) => el("tr", { dataset: { row: i, col: j } },
        el("th", { scope: "row" }, view.noun(i, j, r)), el("td", {}, fmt(est, 3)), el("td", {}, fmt(v, 3)),
        el("td", {}, off.has(`${i},${j}`) ? "≠ differs a lot" : "close"))))))));
}
