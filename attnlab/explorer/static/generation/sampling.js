// Generation · sampling the learner can feel: temperature, top-k and top-p reshape the current step's
// distribution the moment a slider moves, with no request. The step sent its N best logits and, for the other
// tokens, their log-sum-exp at every slider temperature and the nucleus where it reaches past the N
// (explorer/views/generation/sampling.py): from those, `filtered` computes exactly what the server's
// filtered_probs computes (explorer/views/generation/compute.py): z / T, softmax, the k best, the nucleus,
// renormalised.
import { el, fmt, linkStyle, svg, tokenLabel } from "../util.js";

export const DRAWN = 10;  // rows drawn; the other tokens are summed in one row
export const T_STEP = 0.05, P_STEP = 0.05;  // the sliders' steps: the server's tables hold exactly these values
export const T_MAX = 2;

// a typed value on the slider's grid: temperature 0 (greedy) or 0.05 .. 2, top-p 0.05 .. 1, top-k 0 .. kMax
export const snapT = (v) => Math.min(T_MAX, Math.max(0, Math.round((Number(v) || 0) / T_STEP) * T_STEP));
export const snapP = (v) => Math.min(1, Math.max(P_STEP, Math.round((Number(v) || 1) / P_STEP) * P_STEP));
export const snapK = (v, kMax) => Math.min(kMax, Math.max(0, Math.round(Number(v) || 0)));

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

// s: the step's "sampling" answer. -> each sent token's probability at each stage, the kept count and mass
export function filtered(s, temperature, topK, topP) {
  const z = s.logits, n = z.length, V = s.vocab;
  const k = topK > 0 && topK < V ? Math.min(topK, n) : 0;  // 0: top-k off
  const p = topP > 0 && topP < 1 ? topP : 1;
  const greedy = !(temperature > 0);
  const t = Math.round(temperature / T_STEP) - 1;  // the row of the server's tables
  const T = greedy ? 0 : s.temperatures[t];
  // the best logit is shifted to 0 before the division, as filtered_probs does (softmax is unchanged)
  const scaled = greedy ? z.map(() => null) : z.map((v) => (v - z[0]) / T);
  const e = greedy ? z.map((_, i) => (i === 0 ? 1 : 0)) : scaled.map(Math.exp);
  const restSum = greedy || !s.others ? 0 : Math.exp(s.rest_lse[t]);
  const Z = sum(e) + restSum;  // every token's exp(z / T): the N sent and the rest
  const before = e.map((v) => v / Z);  // softmax(z / T)
  const Zk = k ? sum(e.slice(0, k)) : Z;
  const afterK = e.map((v, i) => (k && i >= k ? 0 : v / Zk));  // softmax over the k best
  let keep = greedy ? 1 : (k || V), mass = greedy ? 1 : sum(afterK) + (k ? 0 : restSum / Zk);
  if (!greedy && p < 1) {
    // a token is dropped when the better ones already hold p (the best is always kept)
    const known = k || n;
    let acc = 0, cut = -1;
    for (let i = 1; i <= known; i++) {
      acc += afterK[i - 1];
      if (i < keep && acc >= p) { cut = i; break; }
    }
    if (cut > 0) { keep = cut; mass = sum(afterK.slice(0, cut)); }
    else if (!k && n < V) {  // the nucleus reaches past the tokens sent: the server counted it
      const j = Math.round(p / P_STEP) - 1, row = s.nucleus[t][j];
      if (row) { keep = row.tokens; mass = row.mass; }
    }
  }
  const after = afterK.map((v, i) => (i < keep ? v / mass : 0));
  const why = (i) => (i < keep ? "" : greedy ? "greedy" : k && i >= k ? "rank > k" : "outside the nucleus");
  const rows = z.map((logit, i) => ({ id: s.ids[i], token: s.tokens[i], rank: i + 1, logit, scaled: scaled[i],
    before: before[i], kept: i < keep, why: why(i), after: after[i] }));
  let chosen = null;
  if (s.chosen) {
    const c = s.chosen, sent = rows.find((r) => r.id === c.id);
    if (sent) chosen = sent;
    else {  // outside the N sent: its rank says whether it survives the cut
      const b = greedy ? 0 : Math.exp((c.logit - z[0]) / T) / Z;
      const kept = !greedy && !k && c.rank <= keep;
      chosen = { id: c.id, token: c.token, rank: c.rank, logit: c.logit, before: b, kept,
        after: kept ? (b * Z / Zk) / mass : 0, why: kept ? "" : greedy ? "greedy" : k ? "rank > k" :
          "outside the nucleus" };
    }
  }
  return { T, k, p, greedy, keep, mass, rows, chosen, vocab: V };
}

const pct = (x) => (x >= 0.001 || x === 0 ? `${fmt(100 * x, 2)}%` : `${x.toExponential(1)}`);

// one probability as a bar and its number
function probCell(x, cls) {
  return el("td", { class: "pcell" }, el("span", { class: "track", "aria-hidden": "true" }, el("span", {
    class: `sbar ${cls}`, style: `width:${Math.max(0, Math.min(100, 100 * x))}%` })),
  el("span", { class: "pnum" }, x === 0 ? "0" : fmt(x, 4)));
}

// the redrawn panel: the equation with today's numbers, the stages per token, the other tokens, and the sample
export function samplingPanel(s, settings, drawn, stepInfo) {
  linkStyle("/static/generation/sampling.css");
  const f = filtered(s, settings.temperature, settings.top_k, settings.top_p);
  const shown = f.rows.slice(0, DRAWN);
  const others = f.vocab - shown.length;
  const stageNote = f.greedy
    ? "T = 0 is greedy: the most likely token gets probability 1 and nothing is drawn at random."
    : `softmax over all ${f.vocab.toLocaleString("en-US")} tokens of z / ${fmt(f.T, 2)}; ` +
      (f.k ? `keep the ${f.k} best` : "top-k off") + (f.p < 1 ? `, then the fewest whose probabilities add up to ` +
      `${fmt(f.p, 2)}` : ", top-p off") + `: ${f.keep.toLocaleString("en-US")} kept, holding ${fmt(f.mass, 4)} ` +
      `of the probability; each kept one is divided by ${fmt(f.mass, 4)} so they sum to 1.`;
  const head = ["rank", "token", "logit z", "z / T", "softmax", "cut", "after the cut"];
  const tableEl = el("table", { class: "sampling", id: "sampling-table", dataset: { keep: f.keep, mass: f.mass } },
    el("caption", {}, `The ${DRAWN} largest logits, stage by stage (z / T is shifted so the best is 0: the ` +
      "softmax is the same)"),
    el("thead", {}, el("tr", {}, head.map((h, j) => el("th", { scope: "col", class: j === 0 ? "rank" : null }, h)))),
    el("tbody", {}, shown.map((r) => el("tr", { class: (r.kept ? "" : "cut ") + (r.id === stepInfo.token_id ?
      "chosen" : ""), dataset: { tokenId: r.id, before: r.before, after: r.after, kept: r.kept ? "1" : "0" } },
    el("td", { class: "rank" }, String(r.rank)), el("th", { scope: "row", class: "tok" }, tokenLabel(r.token)),
    el("td", { class: "num" }, fmt(r.logit, 3)), el("td", { class: "num" }, r.scaled === null ? "—" :
      fmt(r.scaled, 3)), probCell(r.before, "before"), el("td", { class: "why" }, r.kept ? "kept" : `cut: ${r.why}`),
    probCell(r.after, "after"))),
    el("tr", { class: "others", id: "sampling-others" }, el("td", { class: "rank" }, "…"), el("th", { scope: "row" },
      `the other ${others.toLocaleString("en-US")}`), el("td", {}, ""), el("td", {}, ""),
    probCell(Math.max(0, 1 - sum(shown.map((r) => r.before))), "before"),
    el("td", { class: "why" }, `${Math.max(0, f.keep - shown.filter((r) => r.kept).length).toLocaleString("en-US")} ` +
      "kept"),
    probCell(Math.max(0, 1 - sum(shown.map((r) => r.after))), "after"))));
  const c = f.chosen;
  const changed = ["temperature", "top_k", "top_p"].some((key) => Number(drawn[key]) !== Number(settings[key]));
  const sample = c ? el("div", { id: "sample-stage", dataset: { tokenId: c.id, before: c.before, after: c.after } },
    el("h4", {}, "The sample"),
    el("p", {}, `Step ${stepInfo.step} drew `, el("b", { id: "sampled", dataset: { tokenId: stepInfo.token_id } },
      `“${tokenLabel(stepInfo.token)}”`), stepInfo.finished ? " (end of sequence)" : "",
    ` (rank ${c.rank}) with T ${fmt(drawn.temperature, 2)}, top-k ${drawn.top_k || "off"}, top-p ` +
    `${Number(drawn.top_p) < 1 ? fmt(drawn.top_p, 2) : "off"}. ` + (changed ? "With the settings now, " : "") +
    "its probability is ", el("b", { id: "chosen-before" }, pct(c.before)), " after the softmax and ",
    el("b", { id: "chosen-after" }, pct(c.after)), " after the cut" + (c.kept ? "." : ` (${c.why}: Step could ` +
      "not draw it now).")),
    strip(f, stepInfo.token_id),
    el("p", { class: "help" }, "A draw is one uniform random number between 0 and 1 (seeded: the same seed " +
      "draws the same tokens); the token whose stretch of the strip it lands in comes next. The next Step draws " +
      "with the settings above.")) : "";
  return el("div", { class: "panel", id: "sampling" },
    el("h3", {}, `Step ${stepInfo.step}: from logits to the next token`),
    el("p", { class: "eq", id: "sampling-eq" }, "p", el("sub", {}, "i"), " = exp(z", el("sub", {}, "i"),
      " / T) / Σ", el("sub", {}, "j"), " exp(z", el("sub", {}, "j"), " / T) → keep the top-k, then the top-p " +
      "nucleus → p′", el("sub", {}, "i"), " = p", el("sub", {}, "i"), " / Σ", el("sub", {}, "kept"), " p"),
    el("p", { class: "help", id: "sampling-note", role: "status" }, stageNote),
    el("div", { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "the sampling table (scrolls sideways on a narrow screen)" }, tableEl), sample);
}

// the kept tokens laid end to end on [0, 1] in rank order: a uniform draw picks the segment it lands in
function strip(f, chosenId) {
  const W = 420, H = 46, x = (v) => 10 + v * (W - 20);
  let at = 0;
  const parts = [];
  f.rows.filter((r) => r.after > 0).forEach((r, i) => {
    const w = r.after;
    parts.push(svg("rect", { x: x(at), y: 6, width: Math.max(0.5, x(at + w) - x(at)), height: 18,
      fill: r.id === chosenId ? "#e66100" : i % 2 ? "#6baed6" : "#0072b2", stroke: "white", "stroke-width": 0.5 },
    svg("title", {}, `“${tokenLabel(r.token)}”: ${fmt(at, 3)} to ${fmt(at + w, 3)}`)));
    if (w > 0.08) parts.push(svg("text", { x: x(at + w / 2), y: 19, "text-anchor": "middle", "font-size": 11,
      fill: "white" }, tokenLabel(r.token).slice(0, 6)));
    at += w;
  });
  if (at < 1 - 1e-9) parts.push(svg("rect", { x: x(at), y: 6, width: x(1) - x(at), height: 18, fill: "#bbb" },
    svg("title", {}, `kept tokens beyond the ${f.rows.length} with the largest logits: ${fmt(1 - at, 3)}`)));
  return svg("svg", { width: "100%", height: H, viewBox: `0 0 ${W} ${H}`, id: "sample-strip", role: "img",
    "aria-label": `the kept tokens' probabilities laid end to end from 0 to 1; the drawn token is orange` },
  parts, svg("text", { x: x(0), y: 40, "font-size": 10, "text-anchor": "start" }, "0"),
  svg("text", { x: x(1), y: 40, "font-size": 10, "text-anchor": "end" }, "1"),
  svg("text", { x: x(0.5), y: 40, "font-size": 10, "text-anchor": "middle" },
    "cumulative probability (kept tokens in rank order)"));
}
