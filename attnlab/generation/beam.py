"""Beam search: keep the num_beams best partial sequences by summed log-probability instead of one.

Each step every running beam proposes every token; of the batch's beams x vocab candidates the 2 x num_beams
best are examined in order. A candidate that ends (EOS, stop string, or the last allowed step) becomes a
finished hypothesis if it ranks among the first num_beams, scored sum_logprob / length ** length_penalty
(length = generated tokens, EOS included); the others refill the num_beams running beams. Taking 2 x
num_beams guarantees enough running beams even if every top candidate ends.

A source is done when num_beams hypotheses are finished and no running beam can still beat the worst of
them (early_stopping=False: the running score judged at the current length, Hugging Face's default
heuristic; True: as soon as num_beams are finished; "never": judged at the longest possible length when
length_penalty > 0). These are Hugging Face's rules, so the two give the same sequences.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from attnlab.generation.options import GenerationOptions
from attnlab.generation.stepper import Stepper
from attnlab.generation.stopping import Stopper

_NEG = -1.0e9  # "impossible" score; finite so arithmetic on it stays well defined


@dataclass
class BeamOutput:
    tokens: list[list[int]]  # per source: the best hypothesis's generated tokens
    scores: list[float]  # its length-normalised score
    step_seconds: list[float]


def beam_search(stepper: Stepper, options: GenerationOptions, stopper: Stopper, n_sources: int) -> BeamOutput:
    """stepper holds n_sources x num_beams rows (each source's beams adjacent)."""
    beams, max_new = options.num_beams, options.max_new_tokens
    lp, early = options.length_penalty, options.early_stopping
    device = stepper.tokens.device
    running = torch.full((n_sources, beams), _NEG, device=device)  # (sources, beams) summed log-probs
    running[:, 0] = 0.0  # all beams start identical: let only the first propose, or the top-k repeats itself
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(n_sources)]
    done = [False] * n_sources
    step_seconds = []

    started = time.perf_counter()
    logits = stepper.first()  # (sources * beams, vocab)
    for t in range(1, max_new + 1):  # t = generated length once this step's token is appended
        vocab = logits.shape[-1]
        log_probs = torch.log_softmax(logits.float(), dim=-1).view(n_sources, beams, vocab)
        total = (log_probs + running[:, :, None]).view(n_sources, beams * vocab)
        top_scores, top_index = torch.topk(total, 2 * beams, dim=-1)  # (sources, 2 * beams), best first
        top_beam, top_token = top_index // vocab, top_index % vocab
        scores_l, beam_l, token_l = top_scores.tolist(), top_beam.tolist(), top_token.tolist()
        generated = stepper.generated  # (sources * beams, t - 1)

        next_rows, next_tokens, next_scores = [], [], []
        for s in range(n_sources):
            chosen: list[tuple[int, int, float]] = []
            ended: list[tuple[int, int, float]] = []
            for rank in range(2 * beams):
                beam, token, score = beam_l[s][rank], token_l[s][rank], scores_l[s][rank]
                row = s * beams + beam
                ends = t == max_new or token in stopper.eos_set
                if not ends and stopper.stop_strings:
                    ends = stopper.hits_string(generated[row].tolist() + [token])
                if ends:
                    if rank < beams and not done[s]:
                        finished[s].append((score / t ** lp, generated[row].tolist() + [token]))
                    ended.append((row, token, score + _NEG))
                elif len(chosen) < beams:
                    chosen.append((row, token, score))
            chosen += sorted(ended, key=lambda c: -c[2])[: beams - len(chosen)]  # only when all ended
            finished[s] = sorted(finished[s], key=lambda h: -h[0])[:beams]
            for row, token, score in chosen:
                next_rows.append(row)
                next_tokens.append(token)
                next_scores.append(score)
            best_running = max(c[2] for c in chosen)
            if not done[s] and len(finished[s]) == beams:
                if early is True:
                    done[s] = True
                else:
                    length = max_new if (early == "never" and lp > 0) else t
                    done[s] = best_running / length ** lp <= finished[s][-1][0]
        step_seconds.append(time.perf_counter() - started)
        if t == max_new or all(done):
            break
        started = time.perf_counter()
        running = torch.tensor(next_scores, device=device).view(n_sources, beams)
        index = torch.tensor(next_rows, device=device)
        stepper.reorder(index)
        logits = stepper.advance(torch.tensor(next_tokens, device=device))
    best = [hyps[0] for hyps in finished]
    return BeamOutput([h[1] for h in best], [h[0] for h in best], step_seconds)
