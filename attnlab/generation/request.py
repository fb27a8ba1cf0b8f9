"""One generation request, prepared and checked: run it to a GenerationResult, or stream its Steps.

generate (the package's entry) checks its arguments once (inputs.py) and hands a Request here; the Request
builds the Stepper (encoder output once per request, beams as adjacent rows), drains the greedy/sampling loop
or runs beam search, and gathers the result. Every step runs in eval + inference mode (EvalInference) and
with the thread count attnlab.threads chooses for its shape (or the caller's threads=N); a stream gives the
caller's code between steps back its own mode and thread count.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from attnlab.generation.beam import beam_search
from attnlab.generation.loop import Step, decode_steps
from attnlab.generation.stepper import Stepper
from attnlab.threads import choose, using_threads


@dataclass
class GenerationResult:
    sequences: torch.Tensor  # (batch, prompt_length + new): prompt (left-padded) then new tokens, pad after a stop
    tokens: list[list[int]]  # per sequence: the new tokens, up to and including the one that stopped it
    prompt_length: int  # columns of `sequences` before the first new token (decoder start ids for enc-dec)
    finished: list[bool]  # True: stopped by EOS or a stop string; False: ran out of max_new_tokens
    step_seconds: list[float]  # wall time per step; step 0 includes the prompt's forward pass (prefill)
    cache_bytes: int = 0  # bytes of K/V held by the cache at the end (0 without cache, or after a window shift)
    scores: list[float] | None = None  # beam search: the length-normalised score of each returned sequence
    logits: list[torch.Tensor] | None = None  # keep_logits=True: (batch, vocab) per step
    texts: list[str] | None = None  # decoded new tokens, when a tokenizer was given

    @property
    def new_tokens(self) -> torch.Tensor:
        """(batch, new) the generated columns of `sequences`."""
        return self.sequences[:, self.prompt_length:]

    @property
    def tokens_per_second(self) -> float:
        """Generated tokens (all sequences) per second of wall time, prompt processing included."""
        total = sum(self.step_seconds)
        return sum(len(t) for t in self.tokens) / total if total > 0 else float("inf")


class EvalInference:
    """Dropout off and autograd off while generating; each module's train/eval mode is restored after.

    Only the modules in training mode are switched, and only they are switched back: model.eval() and
    model.train(mode) set all ~340 of SmolLM2's modules twice per call through Module.__setattr__ (~1 ms of every
    generate() on an AMD EPYC Zen 5, 2026-11-28), and train(mode) also put every submodule in the root's mode,
    losing a mix the caller had set (a frozen part left in eval mode)."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.switched = [m for m in self.model.modules() if m.training]
        for m in self.switched:
            m.training = False
        self.inference = torch.inference_mode()
        self.inference.__enter__()

    def __exit__(self, *exc):
        self.inference.__exit__(*exc)
        for m in self.switched:
            m.training = True


class Request:
    def __init__(self, model, options, stopper, generator, prompt, prompt_mask, source, source_mask, tokenizer,
                 window: int | None = None):
        self.model, self.options, self.stopper, self.generator = model, options, stopper, generator
        self.prompt, self.prompt_mask, self.source, self.source_mask = prompt, prompt_mask, source, source_mask
        self.tokenizer, self.window = tokenizer, window
        self.stepper: Stepper | None = None

    def run(self) -> GenerationResult:
        """Every step to the end, in eval + inference mode; the result holds ordinary tensors."""
        with using_threads(self._threads()), EvalInference(self.model):
            result = self._run_beams() if self.options.num_beams > 1 else self._run_steps()
        # hand back ordinary tensors: inference-mode tensors cannot enter autograd later (e.g. training on them)
        result.sequences = result.sequences.clone()
        if result.logits is not None:
            result.logits = [logits.clone() for logits in result.logits]
        return result

    def stream(self) -> Iterator[Step]:
        """Each step runs in eval + inference mode, but the caller's code between steps runs in its own mode."""
        steps = self._steps()
        threads = self._threads()  # chosen once: every step of a stream has the same shape
        while True:
            with using_threads(threads), EvalInference(self.model):
                try:
                    step = next(steps)
                except StopIteration:
                    return
            step.tokens, step.finished = step.tokens.clone(), step.finished.clone()  # ordinary tensors
            if step.logits is not None:
                step.logits = step.logits.clone()
            yield step

    # ------------------------------------------------------------------ internals
    def _threads(self) -> int | None:
        """threads=N as asked; otherwise on CPU the policy's count for rows = sequences x beams (a GPU step
        leaves the CPU thread count alone). Its positions (prompt + new tokens) let a short request skip the
        policy's measuring."""
        if self.options.threads is None and self.prompt.device.type != "cpu":
            return None
        return choose(self.options.threads, model=self.model, rows=self.prompt.shape[0] * self.options.num_beams,
                      steps=self.prompt.shape[1] + self.options.max_new_tokens)

    def _stepper(self, expand: int = 1) -> Stepper:
        prompt, mask, source_mask = self.prompt, self.prompt_mask, self.source_mask
        encoder_hidden = None
        if self.source is not None:
            encoder_hidden = self.model.encode(self.source, source_mask)  # once per request
        if expand > 1:  # beam search: each sequence becomes `expand` adjacent rows
            prompt = prompt.repeat_interleave(expand, dim=0)
            mask = mask.repeat_interleave(expand, dim=0) if mask is not None else None
            if encoder_hidden is not None:
                encoder_hidden = encoder_hidden.repeat_interleave(expand, dim=0)
                source_mask = source_mask.repeat_interleave(expand, dim=0) if source_mask is not None else None
        compiled = None
        if self.options.compile is not False and self.options.use_cache:  # True: asked; None: where it pays
            from attnlab.generation.compiled import compiled_step  # torch.compile's machinery: only when asked

            compiled = compiled_step(self.model, wait=self.options.compile is True)
        self.stepper = Stepper(self.model, prompt, mask, self.options.max_new_tokens, self.options.use_cache,
                               encoder_hidden=encoder_hidden, source_mask=source_mask, window=self.window,
                               compiled=compiled)
        return self.stepper

    def _steps(self) -> Iterator[Step]:
        yield from decode_steps(self._stepper(), self.options, self.stopper, self.generator)

    def _run_steps(self) -> GenerationResult:
        steps = list(self._steps())
        stepper = self.stepper
        batch = stepper.batch
        finished = steps[-1].finished.tolist()
        tokens: list[list[int]] = [[] for _ in range(batch)]
        done = [False] * batch
        for step in steps:
            for row, token in enumerate(step.tokens.tolist()):
                if not done[row]:
                    tokens[row].append(token)
            done = step.finished.tolist()
        result = GenerationResult(
            sequences=stepper.tokens[:, : stepper.length].clone(), tokens=tokens, prompt_length=stepper.prompt_len,
            finished=finished, step_seconds=[s.seconds for s in steps],
            cache_bytes=stepper.cache.nbytes if stepper.cache is not None else 0,
            logits=[s.logits for s in steps] if self.options.keep_logits else None)
        return self._with_texts(result)

    def _run_beams(self) -> GenerationResult:
        n_sources = self.prompt.shape[0]
        stepper = self._stepper(expand=self.options.num_beams)
        out = beam_search(stepper, self.options, self.stopper, n_sources)
        width = max(len(t) for t in out.tokens)
        sequences = torch.full((n_sources, self.prompt.shape[1] + width), self.options.pad_token_id,
                               dtype=torch.long, device=self.prompt.device)
        sequences[:, : self.prompt.shape[1]] = self.prompt
        for row, toks in enumerate(out.tokens):
            sequences[row, self.prompt.shape[1] : self.prompt.shape[1] + len(toks)] = torch.tensor(toks)
        finished = [bool(t) and (t[-1] in self.stopper.eos_set or self.stopper.hits_string(t)) for t in out.tokens]
        result = GenerationResult(
            sequences=sequences, tokens=out.tokens, prompt_length=self.prompt.shape[1], finished=finished,
            step_seconds=out.step_seconds, cache_bytes=stepper.cache.nbytes if stepper.cache is not None else 0,
            scores=out.scores)
        return self._with_texts(result)

    def _with_texts(self, result: GenerationResult) -> GenerationResult:
        if self.tokenizer is not None:
            result.texts = [self.tokenizer.decode(t) for t in result.tokens]
        return result
