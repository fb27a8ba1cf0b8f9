// Teaching content of the Attention tab: the toy's suggested clicks, how to read tokens, and the lessons
// (Q/K/V as a soft lookup, the maths from x W_Q on with this model's numbers, why several heads, why divide
// by sqrt(d_k) measured on this head, and attention beside recurrence and convolution).
import { api, bars, el, fmt, notice, svg, table, tokenLabel } from "../util.js";
import { references } from "../references.js";

// The seed's suggested clicks, as buttons that set sentence, head and query together.
export function toyHints(ctx) {
  const hints = [
    ["“cat” in head 1 (subject → verb)", { text: "the cat sat on the mat", head: 0, token: 1 }],
    ["“on” in head 3 (preposition → place)", { text: "the cat sat on the mat", head: 2, token: 3 }],
    ["“old” in head 4 (adjective → noun)", { text: "the old man walked to the river", head: 3, token: 1 }],
    ["“the” in head 2 (determiner → noun)", { text: "a dog chased the ball in the park", head: 1, token: 3 }],
  ];
  return el("div", { class: "hints", id: "toy-hints" }, el("span", { class: "help" }, "Try:"),
    hints.map(([label, view], i) => el("button", { type: "button", class: "hint", dataset: { hint: i },
      onclick: () => ctx.setState({ layer: 0, key: undefined, ...view }) }, label)),
    el("span", { class: "help" }, "Most rows of a head are flat: only tokens with the features it reads light up."));
}

// What a learner trips on when reading tokens; the notes that apply to this sentence come first.
export function readingTokens(data, info) {
  const toks = [...data.q_tokens, ...data.k_tokens];
  const spaced = toks.some((t) => /^[Ġ▁ ]/.test(t));
  const byteLevel = [...toks, ...(data.q_pieces || [])].some((t) => /[ĠĊ]/.test(t) || t === "◌");
  const wordpiece = toks.some((t) => t.startsWith("##"));
  const cls = toks.some((t) => t === "[CLS]" || t === "<s>" || t === "<|im_start|>");
  const items = [
    [spaced, "“·” at the start of a token", "marks a leading space: the token begins a new word. Tokenizers " +
      "keep the space inside the token (GPT-2 writes it Ġ, SentencePiece ▁); the explorer shows it as ·."],
    [wordpiece, "“##” at the start of a token", "WordPiece (BERT) splits a rare word into pieces; ## means " +
      "“glued to the previous piece”, so “ca ##t” is one word."],
    [byteLevel, "byte-level tokens", "A byte-level BPE tokenizer (GPT-2, SmolLM2) works on the UTF-8 bytes of " +
      "the text, not on letters. Common words are one token; a rare character (an accent, a Japanese character, " +
      "an emoji) can be split over several tokens that each hold only some of its bytes. The explorer shows " +
      "each token as the text it decodes to: the character on the first of its tokens, ◌ on the tokens that " +
      "continue it; the raw piece (GPT-2 writes a space as Ġ, a newline as Ċ) and the id are on hover. ↵ " +
      "stands for a newline, ⇥ for a tab."],
    [true, "why the first token or [CLS] collects much of the weight", "Softmax must give out a total weight of " +
      "1 in every row. When a head finds nothing relevant for a query, trained models learn to park that weight " +
      "on a token that is always there and carries little, usually the first one ([CLS] in BERT, the first " +
      "token in GPT-style models), or on [SEP] and punctuation. A bright first column is often “no-op”, not " +
      "“important”; tick “hide specials” to look past it."],
    [cls, "[CLS] and [SEP]", "special tokens the tokenizer adds: [CLS] opens the input (its final vector is " +
      "what a classifier reads), [SEP] closes a segment. You did not type them."],
  ];
  items.sort((a, b) => Number(b[0]) - Number(a[0]));
  return el("details", { class: "explain", id: "reading-tokens" }, el("summary", {}, "How to read these tokens"),
    el("dl", {}, items.flatMap(([applies, term, text]) => [el("dt", {}, el("b", {}, term),
      applies ? "" : el("span", { class: "help" }, " (not in this sentence)")), el("dd", {}, text)])),
    info.has_tokenizer ? "" : el("p", { class: "help" }, "This model reads characters: one token per letter."));
}

// The lessons under the attention instrument. Returns update() (call when the query or key changes), with
// update.ready: a promise that settles when the first numbers are drawn.
export function lessons(box, ctx, { data, layer, head, part, getQuery, getKey }) {
  const { state, info } = ctx;
  const stepsBox = el("div", { class: "panel lesson", id: "steps" }, "loading…");
  const scaleBox = el("div", { class: "panel lesson", id: "scaling" }, "loading…");
  const n = data.q_tokens.length;
  box.append(
    el("h2", {}, "Q, K and V: a soft database lookup"),
    el("div", { class: "lesson", id: "database" },
      el("p", {}, "A database answers a query by finding the row whose key matches and handing back that row's " +
        "value. Attention does the same, softly: every token asks a ", el("b", {}, "query"), " (what am I looking " +
        "for?), every token offers a ", el("b", {}, "key"), " (what can I be found by?) and carries a ",
        el("b", {}, "value"), " (what I hand over when found). Instead of returning one row, the head returns a " +
        "blend of all values, each weighted by how well its key matches the query (softmax of Q·K/√d_k)."),
      el("p", {}, "Q, K and V are three different projections of the same token vector, so a token can be found " +
        "for one reason (its key) and pass on something else (its value): scoring and content are separate.")),
    el("h2", {}, "The maths, step by step, with this model's numbers"), stepsBox,
    el("h2", {}, "Why several heads?"),
    el("div", { class: "lesson", id: "why-heads" },
      el("p", {}, "A head is nothing but its own W_Q, W_K and W_V (each d_model × d_head). With h heads a layer " +
        "asks h questions at once: in “the bank near the river overflowed its banks” one head can link the verb " +
        "to its subject while another uses “river” to settle which “bank” is meant. Each head works in a d_model/h " +
        "dimensional subspace, so h heads of width d/h cost about the same as one head of width d (the Cost tab " +
        "measures it); W_O then mixes the concatenated heads back to d_model."),
      el("p", {}, "No head is told its job: in a trained model the split emerges from training and is rarely as " +
        "clean as the toy's hand-set heads. Compare the thumbnails of all layers × heads above: different heads " +
        "draw different patterns for the same sentence.")),
    el("h2", {}, "Why divide by √d_k? Measured on this head"), scaleBox,
    el("h2", {}, "Attention beside recurrence and convolution"), comparison(n, info),
    references(["vaswani2017", "devlin2019", "clark2019", "xiao2024"]));

  let timer = null, seq = 0;
  async function refresh() {
    const mine = ++seq;
    const query = getQuery() ?? Math.min(1, n - 1);
    let key = getKey();
    if (key === null || key === undefined) {  // the key this query weights most
      const w = data.weights[query];
      key = w.indexOf(Math.max(...w.filter((v) => v !== null)));
    }
    const common = { model: state.model, text: state.text || "", layer, head, part };
    const [steps, scaling] = await Promise.all([
      part === "cross" ? Promise.resolve(null) : api("/api/projection", { ...common, query, key })
        .catch((e) => ({ error: e.message })),
      api("/api/scaling", { ...common, query }).catch((e) => ({ error: e.message }))]);
    if (mine !== seq) return;
    drawSteps(stepsBox, steps, data);
    drawScaling(scaleBox, scaling);
  }
  const update = () => { clearTimeout(timer); timer = setTimeout(refresh, 120); };
  update.ready = refresh();
  return update;
}

function vecTable(values, names, limit = 8) {
  const shown = values.slice(0, limit);
  return el("table", { class: "vec" }, el("tr", {}, shown.map((_, i) => el("th", {}, names ? names[i] : i)),
    values.length > limit ? el("th", {}, "…") : ""), el("tr", {}, shown.map((v) => el("td", {}, fmt(v, 3))),
    values.length > limit ? el("td", {}, `${values.length - limit} more`) : ""));
}

function terms(x, col, names) {
  const parts = x.map((v, i) => [v, col[i], names ? names[i] : i]);
  const shown = parts.filter(([a, b]) => a !== 0 && b !== 0).slice(0, 4);
  const total = parts.reduce((s, [a, b]) => s + a * b, 0);
  const text = shown.map(([a, b]) => `${fmt(a, 3)}×${fmt(b, 3)}`).join(" + ");
  const rest = parts.length - shown.length;
  const restZero = parts.filter(([a, b]) => a !== 0 && b !== 0).length === shown.length;
  const more = rest > 0 ? (restZero ? ` (the other ${rest} products are 0)` : ` + … (${rest} more terms)`) : "";
  return { text: (text || "0") + more, total };
}

function drawSteps(box, s, data) {
  if (!s) {
    box.replaceChildren(el("p", { class: "help" }, "Cross-attention takes K and V from the encoder's output; pick " +
      "the encoder or decoder part to see the projection worked out."));
    return;
  }
  if (s.error) { box.replaceChildren(notice(s.error, "error")); return; }
  const names = s.dims;
  const qx = terms(s.x_query, s.w_q_col0, names), kx = terms(s.x_key, s.w_k_col0, names);
  const qt = tokenLabel(s.query_token), kt = tokenLabel(s.key_token);
  const rawBar = data.raw_scores[s.query] ? data.raw_scores[s.query][s.key] : null;
  const matrix = (w) => el("div", { class: "scroll matrix", tabindex: "0" }, table(["row (x dimension)", ...w[0].map((_, j) => `col ${j}`)],
    w.map((row, i) => [names ? names[i] : `${i}`, ...row.map((v) => fmt(v, 3))])));
  box.replaceChildren(
    el("p", { class: "help" }, `Layer ${s.layer + 1}, head ${s.head + 1}: query “${qt}” (position ${s.query}) and ` +
      `key “${kt}” (position ${s.key}). Pick another token or click another bar above to redo it.`),
    el("ol", { class: "steps" },
      el("li", {}, el("b", {}, "The token's vector x. "), s.pre_norm ? "This model is pre-norm: W_Q multiplies the " +
        "layer's input after the block's norm. " : "This block reads its input directly (post-norm). ",
      `x(“${qt}”) has d_model = ${s.d_model} numbers:`, vecTable(s.x_query, names)),
      el("li", {}, el("b", {}, "Q = x · W_Q. "), `W_Q of head ${s.head + 1} is d_model × d_head = ${s.d_model} × ` +
        `${s.d_head}; column j of it makes Q[j]. `, s.w_q ? matrix(s.w_q) : "",
      el("div", { class: "math", id: "q0-terms" }, `Q[0] = Σ x_i · W_Q[i,0] = ${qx.text} = ${fmt(qx.total, 4)}` +
        (s.b_q ? ` + bias ${fmt(s.b_q[0], 3)}` : "")), "Q for this head:", vecTable(s.q_projected)),
      el("li", {}, el("b", {}, "K = x · W_K "), `for the key “${kt}”` + (s.kv_heads !== s.n_heads ?
        ` (grouped K/V: query head ${s.head + 1} shares K/V head ${s.kv_head + 1} of ${s.kv_heads})` : "") + ":",
      s.w_k ? matrix(s.w_k) : "",
      el("div", { class: "math" }, `K[0] = Σ x_i · W_K[i,0] = ${kx.text} = ${fmt(kx.total, 4)}` +
        (s.b_k ? ` + bias ${fmt(s.b_k[0], 3)}` : "")), vecTable(s.k_projected)),
      s.rotary ? el("li", {}, el("b", {}, "Rotary positions (RoPE). "), "This model rotates each pair of Q and K " +
        "dimensions by an angle that grows with the position, so Q·K depends on how far apart the two tokens " +
        "are. Q after rotation:", vecTable(s.q)) : "",
      el("li", {}, el("b", {}, "Score = Q·K / √d_k. "), el("span", { class: "math", id: "score-line" },
        `${fmt(s.dot, 4)} × ${fmt(s.scale, 4)} = `, el("b", { id: "steps-scaled", dataset: { scaled: s.scaled } },
          fmt(s.scaled, 4))),
      rawBar !== null && rawBar !== undefined ? ` (the bar above shows ${fmt(rawBar, 4)}` +
        (Math.abs(rawBar - s.scaled) > 1e-3 ? `; the difference is the model's position bias)` : ")") : ""),
      el("li", {}, el("b", {}, "Weights = softmax of the row. "), "Every key's score goes through the softmax, so " +
        "the weights are positive and sum to 1; the head's output for the query is Σ weight × V. Written for " +
        "all tokens at once: Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V, one row per query; the heads' outputs " +
        "are concatenated and multiplied by W_O.")));
}

function drawScaling(box, r) {
  if (r.error) { box.replaceChildren(notice(r.error, "error")); return; }
  const predicted = r.d_head * r.q_variance * r.k_variance;
  box.replaceChildren(
    el("p", {}, `A dot product adds up d_k = ${r.d_head} products. If the entries of q and k were independent ` +
      "with variances s_q and s_k, the sum would have variance d_k · s_q · s_k: it grows with the width of the " +
      "head. Large scores push the softmax towards one-hot, where its gradient almost vanishes. Dividing by " +
      `√d_k = ${fmt(r.sqrt_d_head, 4)} divides the variance by d_k. Here are this head's own ${r.pairs} scores` +
      (r.causal ? " (visible pairs only)" : "") + ":"),
    table(["measure", "without scaling (Q·K)", "with scaling (Q·K/√d_k)"], [
      ["variance of the scores", el("b", { id: "var-unscaled", dataset: { variance: r.unscaled.variance } },
        fmt(r.unscaled.variance, 4)), el("b", { id: "var-scaled", dataset: { variance: r.scaled.variance } },
        fmt(r.scaled.variance, 4))],
      ["standard deviation", fmt(r.unscaled.std, 4), fmt(r.scaled.std, 4)],
      ["range", `${fmt(r.unscaled.min, 3)} … ${fmt(r.unscaled.max, 3)}`, `${fmt(r.scaled.min, 3)} … ${fmt(r.scaled.max, 3)}`],
      [`largest softmax weight of “${tokenLabel(r.query_token)}”`, el("span", { dataset: { max: r.softmax_unscaled.max } },
        fmt(r.softmax_unscaled.max, 4)), el("span", { dataset: { max: r.softmax_scaled.max } }, fmt(r.softmax_scaled.max, 4))],
      ["entropy of that softmax (nats; 0 = one-hot)", fmt(r.softmax_unscaled.entropy, 4), fmt(r.softmax_scaled.entropy, 4)],
    ]),
    el("p", { class: "help" }, `Independence would predict d_k · s_q · s_k = ${r.d_head} × ${fmt(r.q_variance, 3)} × ` +
      `${fmt(r.k_variance, 3)} = ${fmt(predicted, 4)} for the unscaled variance; a trained head's q and k are not ` +
      "independent, so the measured value differs, but the ratio between the columns is exactly d_k." +
      // sqrt_d_head arrives rounded to 6 decimals: compare within that, or every model "scales by 0.1768, not 1/√d_k"
      (Math.abs(r.scale * r.sqrt_d_head - 1) > 1e-4 ? ` (This model scales by ${fmt(r.scale, 4)}, not 1/√d_k.)` : "")),
    el("div", { class: "row" },
      el("div", {}, el("h3", {}, "Histogram of the scores (shared bins)"), histogram(r)),
      el("div", {}, el("h3", {}, `Softmax of “${tokenLabel(r.query_token)}” without scaling`),
        el("div", { id: "softmax-unscaled" }, bars(r.keys.map((k, i) => ({ label: tokenLabel(k),
          value: r.softmax_unscaled.weights[i] })), { max: 1, width: 320, labelWidth: 80, fill: "#e66100" }))),
      el("div", {}, el("h3", {}, "with scaling (what the model uses)"),
        el("div", { id: "softmax-scaled" }, bars(r.keys.map((k, i) => ({ label: tokenLabel(k),
          value: r.softmax_scaled.weights[i] })), { max: 1, width: 320, labelWidth: 80, fill: "#0072b2" })))));
}

function histogram(r) {
  const W = 360, H = 200, left = 44, bottom = 40, top = 24;
  const peak = Math.max(1, ...r.hist_unscaled, ...r.hist_scaled);
  const nb = r.hist_unscaled.length, bw = (W - left - 10) / nb;
  const y = (c) => H - bottom - (c / peak) * (H - bottom - top);
  const root = svg("svg", { width: W, height: H, id: "scaling-hist", role: "img", viewBox: `0 0 ${W} ${H}`,
    "aria-label": `histogram of ${r.pairs} raw scores: unscaled variance ${fmt(r.unscaled.variance, 3)}, ` +
      `scaled variance ${fmt(r.scaled.variance, 3)}` });
  for (let i = 0; i < nb; i++) {
    root.append(svg("rect", { x: left + i * bw, y: y(r.hist_unscaled[i]), width: bw / 2, height: H - bottom -
      y(r.hist_unscaled[i]), fill: "#e66100" }, svg("title", {}, `unscaled: ${r.hist_unscaled[i]} scores`)),
    svg("rect", { x: left + i * bw + bw / 2, y: y(r.hist_scaled[i]), width: bw / 2, height: H - bottom -
      y(r.hist_scaled[i]), fill: "#0072b2" }, svg("title", {}, `scaled: ${r.hist_scaled[i]} scores`)));
  }
  const e = r.bin_edges;
  root.append(svg("line", { x1: left, y1: H - bottom, x2: W - 10, y2: H - bottom, stroke: "#667" }),
    svg("line", { x1: left, y1: top, x2: left, y2: H - bottom, stroke: "#667" }),
    svg("text", { x: left - 4, y: top + 4, "font-size": 10, "text-anchor": "end" }, peak),
    svg("text", { x: left - 4, y: H - bottom, "font-size": 10, "text-anchor": "end" }, 0),
    svg("text", { x: 12, y: (H - bottom + top) / 2, "font-size": 10, "text-anchor": "middle",
      transform: `rotate(-90 12 ${(H - bottom + top) / 2})` }, "pairs (count)"),
    svg("text", { x: left, y: H - bottom + 13, "font-size": 10 }, fmt(e[0], 3)),
    svg("text", { x: W - 10, y: H - bottom + 13, "font-size": 10, "text-anchor": "end" }, fmt(e[e.length - 1], 3)),
    svg("text", { x: (W + left) / 2, y: H - 8, "font-size": 11, "text-anchor": "middle" }, "score value"),
    svg("rect", { x: left + 6, y: 4, width: 10, height: 10, fill: "#e66100" }),
    svg("text", { x: left + 20, y: 13, "font-size": 11 }, "Q·K"),
    svg("rect", { x: left + 60, y: 4, width: 10, height: 10, fill: "#0072b2" }),
    svg("text", { x: left + 74, y: 13, "font-size": 11 }, "Q·K/√d_k"));
  return root;
}

// RNN / CNN / self-attention, with the numbers for this sentence's n and this model's d.
function comparison(n, info) {
  const d = info.d_model, k = 3;
  const logk = Math.max(1, Math.ceil(Math.log(Math.max(n, 2)) / Math.log(k)));
  return el("div", { class: "lesson", id: "comparison" },
    el("p", {}, "How far apart can two tokens be, counted in layers or steps, before information passes between " +
      "them? And how much must happen one after another? (n = sequence length, d = width, k = kernel size.)"),
    el("div", { class: "scroll", tabindex: "0" }, table(["layer type", "work per layer", "sequential operations",
      "maximum path length", `for this sentence (n = ${n}, d = ${d}, k = ${k})`], [
      ["self-attention", "O(n² · d)", "O(1)", "O(1)", `path 1; ${fmt(n * n * d)} multiply-adds for scores`],
      ["recurrent (RNN, LSTM)", "O(n · d²)", "O(n)", "O(n)", `path up to ${n - 1} steps, ${n} steps in a row`],
      ["convolution (kernel k)", "O(k · n · d²)", "O(1)", "O(log_k n) dilated, O(n/k) plain",
        `${logk} dilated layers (or ${Math.ceil(n / k)} plain) to connect the ends`],
    ])),
    el("p", {}, "Inductive bias, in one line each: a ", el("b", {}, "CNN"), " assumes what matters is local and " +
      "the same everywhere; an ", el("b", {}, "RNN"), " assumes order matters and squeezes the past into one " +
      "fixed-size state (LSTM gates choose what to keep); ", el("b", {}, "self-attention"), " assumes almost " +
      "nothing: any token may matter to any other, with weights computed afresh for each input. That freedom is " +
      "why transformers need much data, and why their cost grows with n², not n. A transformer also keeps no state " +
      "between inputs: all it knows at inference is in its weights and its context window."));
}
