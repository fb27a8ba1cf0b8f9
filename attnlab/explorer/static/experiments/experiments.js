// Tab Experiments: views where the learner changes something and watches a real number move.
//   1. Attention, finished: one token through one attention layer, head by head, down to the residual add.
//   2. Toy: edit W_Q and W_K of a hand-set head; the scores, the softmax and 2.34 recompute.
//   3. Training timeline: a run folder's probe replayed with a step slider beside the loss curve.
//   4. Nearby meanings: nearest tokens in the embedding table; cosines of MiniLM sentence vectors.
// Each section keeps its own state and redraws only itself, so working one never scrolls or resets another.
//   5. Ablate: switch heads off, the top-5 before and after; "Which heads matter" sweeps every head.
//   6. Patch: causal tracing, clean residual stream copied into a corrupted run, layer x position.
//   7. Logit lens: the top-5 after each layer at one position.
//   8. Attention vs ablation: a head's weights beside the effect of removing each one (seed 002).
//   9. Patching by component: attention output, MLP output, each head replaced (zero, mean, resample).
//  10. Direct logit attribution: each head's and MLP's direct share of answer - contrast, with the sum check.
//  11. Steering: a direction from two prompts added while generating, plain and steered side by side.
//  12. A circuit, step by step: one example through patching, components, ablation, DLA and steering (walk.js).
// Under each: "Show the code", the attnlab Python for what the section just computed (code.js).
import { el, linkStyle, notice } from "../util.js";
import { flowSection } from "./flow.js";
import { toySection } from "./toy.js";
import { timelineSection } from "./timeline.js";
import { meaningsSection } from "./meanings.js";
import { ablateSection } from "./ablate.js";
import { patchSection } from "./patch.js";
import { lensSection } from "./lens.js";
import { attnAblSection } from "./attnabl.js";
import { componentsSection } from "./components.js";
import { dlaSection } from "./dla.js";
import { steerSection } from "./steer.js";
import { walkSection } from "./walk.js";
import { codeBlock } from "./code.js";

const SECTIONS = [
  ["flow", "Attention, finished", flowSection],
  ["toy-edit", "Edit the toy's weights", toySection],
  ["timeline", "Training timeline", timelineSection],
  ["meanings", "Nearby meanings", meaningsSection],
  ["walk", "A circuit, step by step", walkSection],
  ["ablate", "Ablate: switch heads off", ablateSection],
  ["patch", "Patch: causal tracing", patchSection],
  ["lens", "Logit lens", lensSection],
  ["attn-abl", "Attention vs ablation", attnAblSection],
  ["components", "Patching by component", componentsSection],
  ["dla", "Direct logit attribution", dlaSection],
  ["steer", "Steering: push the residual stream", steerSection],
];

export async function render(root, ctx) {
  linkStyle("/static/experiments/experiments.css");
  root.append(el("h2", {}, "Experiments"),
    el("p", { class: "help" }, "Change something and watch the numbers answer. Each view says what to try " +
      "and what to look for; every number is computed on the server from the model you picked (the toy's " +
      "editor always uses the hand-set toy)."),
    el("nav", { class: "toc", "aria-label": "experiments on this page" }, el("ul", {},
      SECTIONS.map(([id, title]) => el("li", {}, el("a", { href: `#x-${id}` }, title))))));
  const boxes = SECTIONS.map(([id, title]) => {
    const box = el("section", { class: "experiment", id: `x-${id}`, "aria-labelledby": `x-${id}-title` },
      el("h2", { id: `x-${id}-title` }, title));
    root.append(box);
    return box;
  });
  // sections load side by side; a failing one says so in its own box. Each gets its "Show the code" (code.js)
  // listening before it runs, placed under it once it has drawn.
  await Promise.all(SECTIONS.map(([id, , fn], i) => {
    const code = codeBlock(id);
    return fn(boxes[i], ctx).catch((e) => {
      boxes[i].append(notice(e.message, "error"));
    }).finally(() => code.attach(boxes[i]));
  }));
}
