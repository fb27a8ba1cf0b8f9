// The papers the tabs cite, each written once: a tab lists the keys it cites, in the order it cites them, and
// the same paper reads the same wherever it appears (several tabs cite the Transformer, BERT or CLIP).
import { el } from "./util.js";

// One line a paper: key | authors (year) | title | where it appeared.
const PAPERS = Object.fromEntries(`
vaswani2017 | Vaswani et al. (2017) | Attention Is All You Need | NeurIPS 30
devlin2019 | Devlin et al. (2019) | BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding | NAACL-HLT 2019
radford2019 | Radford et al. (2019) | Language Models are Unsupervised Multitask Learners | OpenAI report (GPT-2)
brown2020 | Brown et al. (2020) | Language Models are Few-Shot Learners | NeurIPS 33 (GPT-3)
raffel2020 | Raffel et al. (2020) | Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer | JMLR 21 (T5)
xiong2020 | Xiong et al. (2020) | On Layer Normalization in the Transformer Architecture | ICML 2020 (pre-norm)
ainslie2023 | Ainslie et al. (2023) | GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints | EMNLP 2023
clark2019 | Clark et al. (2019) | What Does BERT Look at? An Analysis of BERT's Attention | BlackboxNLP 2019
xiao2024 | Xiao et al. (2024) | Efficient Streaming Language Models with Attention Sinks | ICLR 2024
liu2019 | Liu et al. (2019) | RoBERTa: A Robustly Optimized BERT Pretraining Approach | arXiv:1907.11692
chen2020 | Chen et al. (2020) | A Simple Framework for Contrastive Learning of Visual Representations | ICML 2020
radford2021 | Radford et al. (2021) | Learning Transferable Visual Models From Natural Language Supervision | ICML 2021
tolman1948 | Tolman (1948) | Cognitive maps in rats and men | Psychological Review 55(4)
dosovitskiy2021 | Dosovitskiy et al. (2021) | An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale | ICLR 2021
caron2021 | Caron et al. (2021) | Emerging Properties in Self-Supervised Vision Transformers | ICCV 2021 (DINO)
abnar2020 | Abnar and Zuidema (2020) | Quantifying Attention Flow in Transformers | ACL 2020 (rollout)
`.trim().split("\n").map((line) => {
  const [key, ...citation] = line.split(" | ");
  return [key, citation];
}));

// The closed "References" list of a tab: keys of PAPERS, in the order given.
export function references(keys) {
  return el("details", { class: "explain refs-box" }, el("summary", {}, "References"),
    el("ol", { class: "refs" }, keys.map((key) => {
      const [who, title, where] = PAPERS[key];
      return el("li", {}, `${who}. `, el("i", {}, title), `. ${where}.`);
    })));
}
