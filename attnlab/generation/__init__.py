"""Text generation with a KV cache: `attnlab.generate(model, input_ids, ...)`.

A decoder "predicts the next token given all previous ones, appends it, then repeats". With the KV cache the
keys and values of earlier tokens are kept, so each step runs only the new token through the model:
O(b d^2 + b n d) per token instead of O(b n d^2 + b n^2 d). An encoder-decoder runs its encoder once and its
cross-attention K/V are computed once and reused at every step. Every step is a call of the model's own
forward (Decoder.forward / EncoderDecoder.decode): generation re-implements no layer; the decode-time speed
tricks live in the layers they speed up (layers/linear.py, models/heads.py).

Modules: inputs (arguments checked once, at this entry), options (what may be asked, validated), request
(runs a request to a GenerationResult or a stream), stepper (one model call per step, cache or not, either
topology, sliding window), loop (greedy and sampling as an iterator of steps), beam (beam search), sampling
(greedy/temperature/top-k/top-p), stopping (EOS, stop strings).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from attnlab.errors import InputError
from attnlab.generation.inputs import FROM_CONFIG, prepare
from attnlab.generation.loop import Step
from attnlab.generation.options import GenerationOptions
from attnlab.generation.request import GenerationResult
from attnlab.models.base import register_generator

__all__ = ["generate", "generate_stream", "GenerationResult", "GenerationOptions", "Step"]


def generate(model, input_ids, *, attention_mask=None, max_new_tokens: int = 20, temperature: float = 0.0,
             top_k: int | None = None, top_p: float | None = None, num_beams: int = 1, length_penalty: float = 1.0,
             early_stopping: bool | str = False, eos_token_id=FROM_CONFIG, pad_token_id: int | None = None,
             stop_strings: Sequence[str] | str | None = None, tokenizer=None, seed: int | None = None,
             generator: torch.Generator | None = None, use_cache: bool = True, stream: bool = False,
             decoder_input_ids=None, keep_logits: bool = False, sliding_window: bool = False,
             threads: int | None = None, compile: bool | None = None):
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
    sliding_window=True: a model with a position limit (learned or sinusoidal positions, max_len) keeps going
    past it: once the (target) sequence no longer fits, each step runs on its last max_len tokens, positions
    restarting at 0, without cache (each such step costs about a prefill of max_len tokens). Without it,
    prompt + max_new_tokens beyond the limit is refused. Models without a limit ignore it.
    threads: torch threads for the steps (restored after). Default None (or 0, "auto"): the caller's count,
    lowered to the cores other processes leave free and to the count measured fastest for a step of this many
    rows through this model on this machine (attnlab.threads; more threads than free cores is the slow path).
    compile: the one-token steps of a decoder with the cache through torch.compile's graph of the model's own
    forward, the quantized products as attnlab::quantized_rows nodes (generation/compiled.py). None (default):
    where it pays, a model whose products are attnlab's quantized CPU kernels (a GGUF, a model quantized with its
    blocks kept), unless something records or intervenes (then eagerly); True: any decoder (refused while
    recording); False: never. The step is saved in attnlab's private cache: the first process ever compiles it
    (a minute or more for SmolLM2, said in one line), later ones load it in about a second. After
    compiled.build_apart_with(model, command) (what `attnlab generate` does) compile=None never waits: the steps
    run eagerly while a thread loads the kept step, or while a separate low-priority process builds it for later
    runs (generation/apart.py).
    """
    request = prepare(model, input_ids, attention_mask, decoder_input_ids, dict(
        max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p, num_beams=num_beams,
        length_penalty=length_penalty, early_stopping=early_stopping, eos_token_id=eos_token_id,
        pad_token_id=pad_token_id, stop_strings=stop_strings, seed=seed, use_cache=use_cache,
        keep_logits=keep_logits, sliding_window=sliding_window, threads=threads, compile=compile), tokenizer,
        generator)
    if stream:
        if request.options.num_beams > 1:
            raise InputError(f"stream=True with num_beams={request.options.num_beams}: beam search only knows its "
                             "tokens at the end; stream with greedy decoding or sampling (num_beams=1)")
        return request.stream()
    return request.run()


def generate_stream(model, input_ids, **kwargs) -> Iterator[Step]:
    """generate(..., stream=True): yields a Step (the new token of every sequence) as soon as it is chosen."""
    return generate(model, input_ids, stream=True, **kwargs)


register_generator(generate)  # model.generate(...): the models sit below generation and cannot import it
