"""Text generation with a KV cache: `attnlab.generate(model, input_ids, ...)`.

A decoder "predicts the next token given all previous ones, appends it, then repeats". With the KV cache the
keys and values of earlier tokens are kept, so each step runs only the new token through the model:
O(b d^2 + b n d) per token instead of O(b n d^2 + b n^2 d). An encoder-decoder runs its encoder once and its
cross-attention K/V are computed once and reused at every step.

Modules: options (what may be asked, validated), sampling (greedy/temperature/top-k/top-p), stopping (EOS,
stop strings), stepper (one model step, cache or not, either topology), loop (greedy and sampling as an
iterator of steps), beam (beam search).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from attnlab.errors import InputError
from attnlab.generation.beam import beam_search
from attnlab.generation.layout import DecodeLayout
from attnlab.generation.layout import worth_it as layout_worth_it
from attnlab.generation.loop import Step, decode_steps
from attnlab.generation.options import GenerationOptions
from attnlab.generation.stepper import Stepper
from attnlab.generation.stopping import Stopper
from attnlab.models.base import register_generator

__all__ = ["generate", "generate_stream", "GenerationResult", "GenerationOptions", "Step"]

_FROM_CONFIG = object()  # "use the model config's value" (None means "none")


@dataclass
class GenerationResult:
    sequences: torch.Tensor  # (batch, prompt_length + new): prompt (left-padded) then new tokens, pad after a stop
    tokens: list[list[int]]  # per sequence: the new tokens, up to and including the one that stopped it
    prompt_length: int  # columns of `sequences` before the first new token (decoder start ids for enc-dec)
    finished: list[bool]  # True: stopped by EOS or a stop string; False: ran out of max_new_tokens
    step_seconds: list[float]  # wall time per step; step 0 includes the prompt's forward pass (prefill)
    cache_bytes: int = 0  # bytes of K/V held by the cache at the end (0 without cache)
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


def generate(model, input_ids, *, attention_mask=None, max_new_tokens: int = 20, temperature: float = 0.0,
             top_k: int | None = None, top_p: float | None = None, num_beams: int = 1, length_penalty: float = 1.0,
             early_stopping: bool | str = False, eos_token_id=_FROM_CONFIG, pad_token_id: int | None = None,
             stop_strings: Sequence[str] | str | None = None, tokenizer=None, seed: int | None = None,
             generator: torch.Generator | None = None, use_cache: bool = True, stream: bool = False,
             decoder_input_ids=None, keep_logits: bool = False):
    """Generate up to max_new_tokens tokens after each prompt.

    input_ids: (batch, seq) tensor, one list of ids, or a list of lists of different lengths (padded here:
    left for decoders, right for encoder-decoder sources). For a decoder these are the prompt; for an
    encoder-decoder they are the source and the target starts from decoder_start_token_id (or decoder_input_ids).
    attention_mask: (batch, seq) 1 = real token; decoder prompts must be left-padded.
    temperature 0 = greedy (default); > 0 samples from softmax(logits / temperature), cut by top_k / top_p.
    num_beams > 1 = beam search with length_penalty (deterministic, not streamable).
    eos_token_id: int, list of ints, or None (never stop early); default: the model config's.
    stop_strings: stop a sequence once its generated text contains one of them (needs `tokenizer`).
    seed: sampling draws from a torch.Generator seeded with it, so equal seeds give equal tokens.
    use_cache=False recomputes the whole sequence at every step (the slow reference path).
    stream=True returns an iterator of Steps (one per new token position) instead of a GenerationResult.
    """
    request = _prepare(model, input_ids, attention_mask, decoder_input_ids, dict(
        max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p, num_beams=num_beams,
        length_penalty=length_penalty, early_stopping=early_stopping, eos_token_id=eos_token_id,
        pad_token_id=pad_token_id, stop_strings=stop_strings, seed=seed, use_cache=use_cache,
        keep_logits=keep_logits), tokenizer, generator)
    options = request.options
    # wide block weights stored (in, out) for this call when steps have few rows (see generation/layout.py)
    layout = DecodeLayout(model, active=layout_worth_it(request.prompt.shape[0] * options.num_beams,
                                                        options.max_new_tokens, options.use_cache))
    if stream:
        if options.num_beams > 1:
            raise InputError(f"stream=True with num_beams={options.num_beams}: beam search only knows its "
                             "tokens at the end; stream with greedy decoding or sampling (num_beams=1)")
        return _guarded(model, request.steps(), layout)
    with layout, _EvalInference(model):  # the layout's copies are made outside inference mode
        result = request.run()
    # hand back ordinary tensors: inference-mode tensors cannot enter autograd later (e.g. training on them)
    result.sequences = result.sequences.clone()
    if result.logits is not None:
        result.logits = [logits.clone() for logits in result.logits]
    return result


def generate_stream(model, input_ids, **kwargs) -> Iterator[Step]:
    """generate(..., stream=True): yields a Step (the new token of every sequence) as soon as it is chosen."""
    return generate(model, input_ids, stream=True, **kwargs)


# ---------------------------------------------------------------------------------------------- internals
class _EvalInference:
    """Dropout off and autograd off while generating; the model's train/eval mode is restored after."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.was_training = self.model.training
        self.model.eval()
        self.inference = torch.inference_mode()
        self.inference.__enter__()

    def __exit__(self, *exc):
        self.inference.__exit__(*exc)
        self.model.train(self.was_training)


def _guarded(model, steps: Iterator[Step], layout) -> Iterator[Step]:
    """Each step runs in eval + inference mode, but the caller's code between steps runs in its own mode.

    The decode layout lasts from the first step until the stream ends, is closed or is garbage-collected.
    """
    with layout:
        while True:
            with _EvalInference(model):
                try:
                    step = next(steps)
                except StopIteration:
                    return
            step.tokens, step.finished = step.tokens.clone(), step.finished.clone()  # ordinary tensors
            if step.logits is not None:
                step.logits = step.logits.clone()
            yield step


class _Request:
    def __init__(self, model, options, stopper, generator, prompt, prompt_mask, source, source_mask, tokenizer):
        self.model, self.options, self.stopper, self.generator = model, options, stopper, generator
        self.prompt, self.prompt_mask, self.source, self.source_mask = prompt, prompt_mask, source, source_mask
        self.tokenizer = tokenizer
        self.stepper: Stepper | None = None

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
        self.stepper = Stepper(self.model, prompt, mask, self.options.max_new_tokens, self.options.use_cache,
                               encoder_hidden=encoder_hidden, source_mask=source_mask)
        return self.stepper

    def steps(self) -> Iterator[Step]:
        yield from decode_steps(self._stepper(), self.options, self.stopper, self.generator)

    def run(self) -> GenerationResult:
        if self.options.num_beams > 1:
            return self._run_beams()
        steps = list(self.steps())
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


def _prepare(model, input_ids, attention_mask, decoder_input_ids, settings: dict, tokenizer, generator) -> _Request:
    config = getattr(model, "config", None)
    topology = getattr(config, "topology", None)
    if topology not in ("decoder", "encoder-decoder"):
        raise InputError(f"generate needs a Decoder or an EncoderDecoder, got {type(model).__name__}"
                         f"{f' (topology={topology!r})' if topology else ''}")
    if topology == "decoder" and config.head != "lm":
        raise InputError(f"generate needs a language-model head, this decoder has head={config.head!r}")
    encoder_decoder = topology == "encoder-decoder"
    device = next(model.parameters()).device
    vocab = config.vocab_size

    options = _options(config, settings)
    options.validate(vocab)
    stopper = Stopper(options.eos_token_ids, options.stop_strings, tokenizer)
    if generator is None and options.seed is not None:
        generator = torch.Generator(device=device).manual_seed(options.seed)

    ids, mask = _as_batch(input_ids, attention_mask, vocab, pad_left=not encoder_decoder,
                          pad_id=options.pad_token_id, name="input_ids", device=device)
    if encoder_decoder:
        source, source_mask = ids, mask
        _check_limit(model.encoder.seq_limit, source.shape[1], 0, config.position, "source")
        if decoder_input_ids is None:
            start = config.decoder_start_token_id
            start = start if start is not None else config.bos_token_id
            if start is None:
                raise InputError("this encoder-decoder's config has no decoder_start_token_id (nor bos_token_id); "
                                 "pass decoder_input_ids=[[start_id]]")
            prompt = torch.full((source.shape[0], 1), start, dtype=torch.long, device=device)
        else:
            prompt, _ = _as_batch(decoder_input_ids, None, vocab, pad_left=True,
                                            pad_id=options.pad_token_id, name="decoder_input_ids", device=device)
            if prompt.shape[0] != source.shape[0]:
                raise InputError(f"decoder_input_ids has {prompt.shape[0]} rows but the source has "
                                 f"{source.shape[0]}; give one decoder prompt per source")
        prompt_mask = None  # the target side is never padded: every row starts from the same ids
        limit = model.decoder.seq_limit
    else:
        source = source_mask = None
        prompt, prompt_mask = ids, mask
        limit = model.seq_limit
    _check_limit(limit, prompt.shape[1], options.max_new_tokens, config.position, "prompt")
    return _Request(model, options, stopper, generator, prompt, prompt_mask, source, source_mask, tokenizer)


def _options(config, settings: dict) -> GenerationOptions:
    eos = settings.pop("eos_token_id")
    if eos is _FROM_CONFIG:
        eos = config.eos_token_id
    if eos is None:
        eos_ids: tuple = ()
    elif isinstance(eos, (list, tuple)):
        eos_ids = tuple(eos)
    else:
        eos_ids = (eos,)
    pad = settings.pop("pad_token_id")
    if pad is None:
        pad = config.pad_token_id if config.pad_token_id is not None else (eos_ids[0] if eos_ids else 0)
    stop = settings.pop("stop_strings")
    stop_strings = () if stop is None else (stop,) if isinstance(stop, str) else tuple(stop)
    if settings["top_k"] == 0:
        settings["top_k"] = None
    return GenerationOptions(eos_token_ids=eos_ids, pad_token_id=pad, stop_strings=stop_strings, **settings)


def _as_batch(input_ids, attention_mask, vocab: int, *, pad_left: bool, pad_id: int, name: str, device):
    """Any accepted prompt form -> ((batch, seq) long tensor, (batch, seq) mask or None), checked."""
    if isinstance(input_ids, torch.Tensor):
        ids = input_ids
        if ids.dim() == 1:
            ids = ids[None]
    elif isinstance(input_ids, (list, tuple)):
        rows = list(input_ids)
        if not rows:
            raise InputError(f"{name} is empty: give at least one token")
        if all(isinstance(r, int) and not isinstance(r, bool) for r in rows):
            rows = [rows]
        if not all(isinstance(r, (list, tuple)) and all(isinstance(i, int) and not isinstance(i, bool) for i in r)
                   for r in rows):
            raise InputError(f"{name} must be a tensor, a list of token ids or a list of such lists")
        if attention_mask is None and len({len(r) for r in rows}) > 1:
            width = max(len(r) for r in rows)
            if min(len(r) for r in rows) == 0:
                raise InputError(f"{name} has an empty prompt at row {[len(r) for r in rows].index(0)}: "
                                 "give at least one token per prompt")
            padded = [([pad_id] * (width - len(r)) + list(r)) if pad_left else (list(r) + [pad_id] * (width - len(r)))
                      for r in rows]
            masks = [([0] * (width - len(r)) + [1] * len(r)) if pad_left else ([1] * len(r) + [0] * (width - len(r)))
                     for r in rows]
            ids, attention_mask = torch.tensor(padded), torch.tensor(masks)
        else:
            ids = torch.tensor(rows)
    else:
        raise InputError(f"{name} must be a torch.Tensor or a list of token ids, got {type(input_ids).__name__}")
    if ids.dtype not in (torch.long, torch.int32, torch.int16, torch.uint8, torch.int8) or ids.dim() != 2:
        raise InputError(f"{name} must be integer token ids of shape (batch, seq), got dtype {ids.dtype} and "
                         f"shape {tuple(ids.shape)}")
    if ids.shape[0] == 0 or ids.shape[1] == 0:
        raise InputError(f"{name} is empty (shape {tuple(ids.shape)}): give at least one token per prompt")
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab:
        bad = low if low < 0 else high
        raise InputError(f"{name} holds token id {bad}, outside the vocabulary [0, vocab_size={vocab})")
    ids = ids.to(device=device, dtype=torch.long)
    if attention_mask is None:
        return ids, None
    mask = torch.as_tensor(attention_mask)
    if mask.shape != ids.shape:
        raise InputError(f"attention_mask has shape {tuple(mask.shape)}, expected {tuple(ids.shape)} like {name}")
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise InputError("attention_mask must hold only 0 (padding) and 1 (real token)")
    mask = mask.to(device=device, dtype=torch.long)
    lengths = mask.sum(dim=1)
    if bool((lengths == 0).any()):
        row = int((lengths == 0).nonzero()[0])
        raise InputError(f"{name} row {row} is empty (its attention_mask is all 0): give at least one token")
    if pad_left and bool((mask[:, 1:] < mask[:, :-1]).any()):
        raise InputError("decoder prompts must be LEFT-padded (attention_mask rows like 0 0 1 1 1): the newest "
                         "token of every row must sit in the last column; pass lists of ids to have them padded")
    return ids, mask


def _check_limit(limit: int | None, prompt_len: int, max_new_tokens: int, position: str, what: str) -> None:
    if limit is None or prompt_len + max_new_tokens <= limit:
        return
    if max_new_tokens == 0:
        raise InputError(f"the {what} has {prompt_len} tokens, more than this model's limit of {limit} positions "
                         f"({position} positions); shorten it")
    raise InputError(
        f"{what} of {prompt_len} tokens + max_new_tokens={max_new_tokens} = {prompt_len + max_new_tokens} positions "
        f"exceeds this model's limit of {limit} ({position} positions have max_len={limit} rows); use "
        f"max_new_tokens <= {max(limit - prompt_len, 0)} or a shorter prompt (rope, alibi, t5 and 'none' "
        "positions have no such limit)")


register_generator(generate)  # model.generate(...): the models sit below generation and cannot import it
