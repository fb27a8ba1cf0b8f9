"""`attnlab generate MODEL --prompt TEXT`: stream a continuation (or, for encoder-decoders, an output) to stdout.

A decoder's prompt is printed first, then the continuation as it is produced (--no-echo: the continuation
alone).

MODEL is anything attnlab.load reads: a model's name (`attnlab models`: gpt-char, smollm2, ...; a preset
builds random weights, useful to feel the speed, not the text, and says so), an attnlab checkpoint or training
run folder, a Hugging Face directory or a .gguf file. Text is printed as it is
produced; notes and the timing summary go to stderr so stdout stays clean for pipes.

Length: without --max-new-tokens, generation stops where the model's positions run out (at most 64 new
tokens) and says so. An explicit --max-new-tokens beyond that continues with a sliding window on decoders
(each step sees the last `limit` tokens) and is cut to the room left on encoder-decoders, again with a note.
"""

from __future__ import annotations

import math
import sys
import time

from attnlab.cli import placement, process, quantizing
from attnlab.errors import InputError

HELP = "stream generated text from a checkpoint (greedy, sampling or beams; with or without cache)"
DEFAULT_NEW_TOKENS = 64
MIN_TEMPERATURE = 1e-3  # below this, sampling is greedy decoding in all but name, and logits / t overflow float32
SEED_LIMIT = 2**64  # torch.Generator.manual_seed takes a 64-bit seed
# new tokens from which the default path offers the compiled step (loads it, or has it built apart); a shorter request
# decodes eagerly. Loading the kept step costs a process about 1-1.5 s of CPU (inductor's import and the file) in a
# thread beside the steps, and a SmolLM2 step saves ~6 ms (14.7 ms compiled against 20.3 eager, bench/RESULTS.md), so
# a short request only pays for it: SmolLM2's 8 tokens on a quiet 2-core AMD EPYC (Zen 5) took 0.97-1.31 s while the
# step loaded against 0.34 s before it was kept, 2.73-3.25 s of CPU against 1.76
# (bench/results/first-run-2026-12-06/quiet.log). Below the default request (64 tokens), which keeps the step.
COMPILED_FROM = 32


def add_arguments(p) -> None:
    p.add_argument("model", help="a model's name (`attnlab models`: gpt-char, smollm2, a preset, ...), checkpoint "
                                 "directory, training run folder, Hugging Face directory or .gguf file")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompt", help="prompt text (the source text for encoder-decoders)")
    source.add_argument("--ids", help="prompt as space-separated token ids (for models without a tokenizer)")
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help=f"tokens to generate (default: {DEFAULT_NEW_TOKENS}, or fewer when the model's positions "
                        "run out first; more than fits continues with a sliding window on decoders)")
    p.add_argument("--temperature", type=float, default=0.0,
                   help=f"0 = greedy (default); >= {MIN_TEMPERATURE:g} samples from softmax(logits / temperature)")
    p.add_argument("--top-k", type=int, default=None, help="sample among the k likeliest tokens")
    p.add_argument("--top-p", type=float, default=None,
                   help="sample among the likeliest tokens whose probabilities reach p, in (0, 1]")
    p.add_argument("--beams", type=int, default=1,
                   help="beam search width (printed at the end, not streamed)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed for sampling, 0 <= seed < 2^64 (same seed, same text)")
    p.add_argument("--no-cache", action="store_true", help="recompute the whole sequence every step (slow)")
    p.add_argument("--no-echo", dest="echo", action="store_false",
                   help="print only the new text (default for decoders: the prompt, then its continuation; "
                        "an encoder-decoder's output is printed alone)")
    p.add_argument("--stop", action="append", default=None, help="stop string (repeatable)")
    compiling = p.add_mutually_exclusive_group()
    compiling.add_argument("--compile", dest="compile", action="store_const", const=True, default=None,
                           help="decoders: run each new token through torch.compile's graph of the model's forward, "
                                "whatever the model, waiting for it to be built (default: only where it pays, a GGUF "
                                "or a model quantized with its blocks kept, asking for "
                                f"{COMPILED_FROM} new tokens or more, and never waiting: the first such run decodes "
                                "eagerly while a separate low-priority process builds it, later runs load it from "
                                "attnlab's cache)")
    compiling.add_argument("--no-compile", dest="compile", action="store_const", const=False,
                           help="run every token eagerly (no torch.compile)")
    placement.add_arguments(p, threads="torch threads",
                            auto_threads="as many as are free and measured useful for a decoding step here",
                            device="where the model runs", named="the summary line names it")
    quantizing.add_argument(p)


def check_options(args) -> None:
    """Refuse impossible settings before the model loads: one line naming the value and what is allowed."""
    def bad(flag: str, value, allowed: str) -> InputError:
        return InputError(f"{flag[2:].replace('-', '_')}={value!r} ({flag}) is not allowed: {allowed}")

    if args.max_new_tokens is not None and args.max_new_tokens < 1:
        raise bad("--max-new-tokens", args.max_new_tokens, "give a positive integer")
    t = args.temperature
    if not math.isfinite(t) or t < 0 or 0 < t < MIN_TEMPERATURE:
        raise bad("--temperature", t, f"use 0 (greedy) or a finite number >= {MIN_TEMPERATURE:g} "
                                      "(1 = the model's own distribution)")
    if args.top_p is not None and not (math.isfinite(args.top_p) and 0 < args.top_p <= 1):
        raise bad("--top-p", args.top_p, "use a probability in (0, 1] (1 keeps every token)")
    if args.top_k is not None and args.top_k < 0:
        raise bad("--top-k", args.top_k, "use 0 (no limit) or a positive integer")
    if args.beams < 1:
        raise bad("--beams", args.beams, "use an integer >= 1 (1 = no beam search)")
    if args.seed is not None and not 0 <= args.seed < SEED_LIMIT:
        raise bad("--seed", args.seed, "use an integer in [0, 2^64)")
    from attnlab.threads import check_threads

    args.threads = check_threads(args.threads, "--threads")  # N, or None for auto / 0
    quantizing.check(args.quantize)
    from attnlab.devices import resolve_device

    args.device = resolve_device(args.device, "--device")  # a torch.device; cuda without CUDA is refused here


def _load(spec: str):
    """attnlab.load: a path, or a model's name (a preset builds random weights and says so in a warning)."""
    import attnlab

    return attnlab.load(spec)


def prompt_ids(args, tokenizer, vocab_size: int) -> list[int]:
    if args.ids is not None:
        try:
            ids = [int(x) for x in args.ids.replace(",", " ").split()]
        except ValueError:
            raise InputError(f"--ids {args.ids!r}: give space-separated integer token ids") from None
        bad = [i for i in ids if not 0 <= i < vocab_size]
        if bad:
            raise InputError(f"--ids: token id {bad[0]} is outside this model's vocabulary: use ids in "
                             f"[0, vocab_size={vocab_size})")
    else:
        if tokenizer is None:
            raise InputError(f"{args.model} has no tokenizer to turn --prompt into ids; pass --ids instead")
        from attnlab.vocabulary import missing_characters, warn_unknown

        try:
            ids = tokenizer.encode(args.prompt)
        except InputError:
            missing = missing_characters(tokenizer, args.prompt)
            if not missing:
                raise
            raise InputError(f"the prompt holds characters this model's vocabulary does not have, and it has no "
                             f"unknown token to stand for them: {', '.join(map(repr, missing))}; leave them out") \
                from None
        warn_unknown(tokenizer, args.prompt)  # "café" must not become [UNK] without a word
    if not ids:
        raise InputError("the prompt is empty after tokenization: give some text")
    return ids


def plan_length(config, prompt_len: int, asked: int | None) -> tuple[int, bool, str]:
    """(max_new_tokens, sliding_window, note for stderr) for a prompt of prompt_len tokens.

    `asked` is --max-new-tokens (None = the default). Decoders count the prompt against the position limit;
    encoder-decoders count the decoder start token (the prompt is the source, limited on its own side).
    """
    limit = config.seq_limit
    if config.topology not in ("decoder", "encoder-decoder"):
        limit = None  # generate itself refuses other models
    wanted = DEFAULT_NEW_TOKENS if asked is None else asked
    if limit is None:
        return wanted, False, ""
    decoder = config.topology == "decoder"
    used = prompt_len if decoder else 1
    room = limit - used
    if wanted <= room:
        return wanted, False, ""
    if decoder and asked is not None:
        return wanted, True, (f"[{used} + {wanted} tokens exceed this model's {limit} positions: past position "
                              f"{limit} each step sees the last {limit} tokens (sliding window)]")
    if room < 1:
        raise InputError(f"the prompt's {prompt_len} tokens fill this model's {limit} positions: shorten it, or "
                         "pass --max-new-tokens N to continue with a sliding window")
    instead = f"the default {wanted}" if asked is None else f"--max-new-tokens {asked}"
    if decoder:
        return room, False, (f"[this model holds {limit} positions and the prompt takes {used}: generating up to "
                             f"{room} new tokens instead of {instead} (--max-new-tokens N goes on with a sliding "
                             "window)]")
    return room, False, (f"[this decoder holds {limit} positions, one taken by the start token: generating up to "
                         f"{room} new tokens instead of {instead}]")


def run(args) -> int:
    building = process.OWN[0]
    if building:  # a user's command never waits for a compiler: kernels not built yet are built apart, their
        from attnlab.layers import kernel_build  # builds started once the tokens are out (kernel_build.HOLD)

        kernel_build.DEFER[0] = kernel_build.HOLD[0] = True
    try:
        with process.start_up():  # torch's import and the model's load, with the collector paused (cli/process.py)
            model, tokenizer, ids, kwargs = _prepared(args)
        return _generated(args, model, tokenizer, ids, kwargs)
    finally:  # the notes held for after the text belong to this command: a later call in the process says its own
        held = sys.modules.get("attnlab.generation.compiled")
        if held is not None:
            held.HOLD_NOTES[0] = False
            held.NOTES.clear()
        if building:
            kernel_build.start_held()


def _prepared(args):
    """-> (model, tokenizer, prompt ids, generate's keyword arguments): everything before the first token's
    forward, its kernels built and the prompt echoed."""
    check_options(args)
    model, tokenizer = _load(args.model)
    topology = getattr(getattr(model, "config", None), "topology", type(model).__name__)
    if topology not in ("decoder", "encoder-decoder"):
        raise InputError(f"{args.model} is a {topology} model: generation needs a Decoder or an EncoderDecoder")
    if args.quantize != "none" and quantizing.already_quantized(model):
        print(f"[{args.model} is stored quantized (its own blocks are kept): --quantize {args.quantize} leaves it "
              "as it is]", file=sys.stderr, flush=True)
    model = quantizing.apply(model, args.quantize).to(args.device)  # generate puts the prompt where the model is
    ids = prompt_ids(args, tokenizer, model.config.vocab_size)
    max_new_tokens, sliding, note = plan_length(model.config, len(ids), args.max_new_tokens)
    if note:
        print(note, file=sys.stderr, flush=True)
    kwargs = dict(max_new_tokens=max_new_tokens, temperature=args.temperature, top_k=args.top_k,
                  top_p=args.top_p, num_beams=args.beams, seed=args.seed, use_cache=not args.no_cache,
                  stop_strings=args.stop, tokenizer=tokenizer, threads=args.threads)
    if args.compile is not None:  # only when asked, so that generate's own refusal (an encoder-decoder) names it
        kwargs["compile"] = args.compile
    if sliding:  # only when needed, so that generate's own limit check stays in force otherwise
        kwargs["sliding_window"] = True
    out = sys.stdout
    _ready_kernels(model, len(ids))
    if args.compile is None and topology == "decoder" and args.device.type == "cpu":
        _compile_apart(model, args, kwargs)
    if args.echo and topology == "decoder":  # a continuation reads with its prompt (nanoGPT, llama.cpp do the same)
        out.write(args.prompt if args.prompt is not None else _text(tokenizer, ids))
        out.flush()
    return model, tokenizer, ids, kwargs


def _generated(args, model, tokenizer, ids, kwargs) -> int:
    import torch

    import attnlab
    from attnlab.generation import generate_stream

    out = sys.stdout
    started = time.perf_counter()
    if args.beams > 1:
        result = attnlab.generate(model, [ids], **kwargs)
        out.write(_text(tokenizer, result.tokens[0]) + "\n")
        n = len(result.tokens[0])
    else:
        produced: list[int] = []
        stream = TextStream(lambda: _text(tokenizer, produced), out)
        for step in generate_stream(model, [ids], **kwargs):
            produced.append(int(step.tokens[0]))
            stream.update()
            if bool(step.finished[0]):
                break
        stream.finish()
        out.write("\n")
        n = len(produced)
    seconds = time.perf_counter() - started
    from attnlab.generation.compiled import COUNTS, NOTES

    for note in NOTES:  # held while the text streamed (the compiled step built apart): one line each, after it
        print(note, file=sys.stderr)
    from attnlab.layers.kernel_build import DEFERRED

    if DEFERRED:
        names = sorted(set(DEFERRED))
        print(f"[attnlab: this run used torch's own operators where attnlab's {', '.join(names)} kernel"
              f"{'s are' if len(names) > 1 else ' is'} being built at low priority for later runs]", file=sys.stderr)

    steps = "compiled step, " if COUNTS["compiled"] else ""
    print(f"[{n} tokens in {seconds:.2f} s, {n / seconds:.1f} tokens/s, cache {'off' if args.no_cache else 'on'}, "
          f"{steps}device {args.device}, torch {torch.__version__}]", file=sys.stderr)
    process.QUICK[0] = True  # nothing is left to do: the process may end at once
    return 0


def _compile_apart(model, args, kwargs: dict) -> None:
    """The default path never waits for the compiled step: it decodes eagerly while a thread loads the step kept by
    an earlier run, or, where none was kept yet, while a separate low-priority process builds it for later runs
    (generation/apart.py); the line saying so is printed after the text. --compile waits for it, as asked. A
    request of fewer than COMPILED_FROM new tokens decodes eagerly (kwargs' compile=False): neither loaded nor built.
    """
    from attnlab.generation import apart, compiled

    if not compiled.pays(model):  # a float model decodes eagerly anyway (compiled.auto): nothing to offer
        return
    if kwargs["max_new_tokens"] < COMPILED_FROM:  # the step's load would cost more than it saves (COMPILED_FROM)
        kwargs["compile"] = False
        return
    compiled.build_apart_with(model, [*apart.python(), "attnlab.generation.step_builder", "--model", args.model,
                                      "--quantize", args.quantize])
    compiled.HOLD_NOTES[0] = True


def _ready_kernels(model, prompt_len: int) -> None:
    """Build (or load) the kernels the prompt's forward and the steps will call before anything is printed: a first
    run's one line per build then stands on its own line, not after the echoed prompt.

    Where kernels not built yet are built apart (kernel_build.DEFER, the command's own process), every kernel a
    later run of this model may call is asked for now, whatever this prompt's length: the prompt kernels (rows,
    causal attention) too, so that their builds start with the first run's and a second run's longer prompt, or
    the thread probe's fill of cached positions, does not meet them still being built (a second run on a quiet
    machine took 2.13 s for 8 tokens that way, against 0.34 s for the third)."""
    from attnlab.layers import attention_kernel, kernel_build, norm_kernel, rope_kernel
    from attnlab.layers.attention import Attention
    from attnlab.layers.norms import RMSNorm
    from attnlab.layers.positions import Rotary
    from attnlab.layers.quantized import KERNELS, ROWS_FORMATS, QuantizedLinear

    every = kernel_build.DEFER[0]
    kinds = set()
    for module in model.modules():
        if isinstance(module, QuantizedLinear) and module.qweight.device.type == "cpu":
            module.runs_kernel(1)
            module.runs_kernel(prompt_len)
            if every and module.format in ROWS_FORMATS:
                KERNELS[module.format].rows_available()  # asked even while the one-row kernel is being built
        kinds.add(type(module))
    if next(model.parameters()).device.type == "cpu":
        if any(issubclass(kind, RMSNorm) for kind in kinds):
            norm_kernel.available()  # a decoding step's and a short prompt's norms (layers/norm_kernel.py)
        if any(issubclass(kind, Rotary) for kind in kinds):
            rope_kernel.available()  # their rotary positions (layers/rope_kernel.py)
        if any(issubclass(kind, Attention) for kind in kinds) and (every or 1 < prompt_len):
            attention_kernel.available()  # the prompt's attention (layers/attention_kernel.py)


class TextStream:
    """Print a growing decode so that what is printed, once finished, equals the decode of all the tokens.

    A decoder's text is not append-only: WordPiece puts " - " around punctuation and joins it again once the
    next piece arrives ("quarante -" then "quarante-deux"), clean-up joins " n't", and a byte-level BPE token
    may end inside a UTF-8 character (decoded as U+FFFD until the next byte comes). So only text that is
    stable is printed: the common prefix of the last two decodes, cut before its last whitespace (a space
    may still be removed) and before any U+FFFD; the rest is flushed by finish(), from the final decode.
    Printing waits at most for the next word boundary. Should a decoder ever rewrite text already printed,
    finish() cannot take it back: it says so on stderr and prints the final text whole on its own line."""

    def __init__(self, decode, out):
        self.decode, self.out = decode, out  # decode() -> the text of every token so far
        self.printed, self.previous = "", ""

    def update(self) -> None:
        text = self.decode()
        n = 0
        for a, b in zip(text, self.previous, strict=False):
            if a != b:
                break
            n += 1
        stable = text[:n]
        self.previous = text
        cut = max(stable.rfind(" "), stable.rfind("\n"), stable.rfind("\t"))
        stable = stable[:cut] if cut >= 0 else ""
        if "\ufffd" in stable[len(self.printed):]:
            stable = stable[: stable.index("\ufffd", len(self.printed))]
        if len(stable) > len(self.printed) and stable.startswith(self.printed):
            self._write(stable[len(self.printed):])
            self.printed = stable

    def finish(self) -> str:
        """Print the rest of the final decode; -> the whole text."""
        text = self.decode()
        if text.startswith(self.printed):
            self._write(text[len(self.printed):])
        else:  # never seen with the shipped tokenizers (tests/reliability/test_streaming.py checks them)
            print("\n[the tokenizer rewrote text already printed; the whole text follows]", file=sys.stderr,
                  flush=True)
            self._write("\n" + text)
        self.printed = text
        return text

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()


def _text(tokenizer, ids: list[int]) -> str:
    if tokenizer is None:
        return " ".join(str(i) for i in ids) + (" " if ids else "")
    return tokenizer.decode(ids)
