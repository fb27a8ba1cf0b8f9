"""`attnlab generate PATH --prompt TEXT`: stream a continuation (or, for encoder-decoders, an output) to stdout.

PATH is anything attnlab.load reads (attnlab checkpoint, Hugging Face directory, .gguf file) or a preset name
(random weights: useful to feel the speed, not the text). Text is printed as it is produced; the timing
summary goes to stderr so stdout stays clean for pipes.
"""

from __future__ import annotations

import sys
import time

from attnlab.cli import register
from attnlab.errors import InputError


def _add_arguments(p) -> None:
    p.add_argument("model", help="checkpoint directory, Hugging Face directory, .gguf file, or preset name")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompt", help="prompt text (the source text for encoder-decoders)")
    source.add_argument("--ids", help="prompt as space-separated token ids (for models without a tokenizer)")
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default); > 0 samples")
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument("--top-p", type=float, default=None)
    p.add_argument("--beams", type=int, default=1, help="beam search width (printed at the end, not streamed)")
    p.add_argument("--seed", type=int, default=None, help="seed for sampling (same seed, same text)")
    p.add_argument("--no-cache", action="store_true", help="recompute the whole sequence every step (slow)")
    p.add_argument("--stop", action="append", default=None, help="stop string (repeatable)")


def _load(spec: str):
    from pathlib import Path

    import attnlab

    if spec in attnlab.presets and not Path(spec).exists():
        return attnlab.build_model(attnlab.presets[spec]), None
    return attnlab.load(spec)


def run(args) -> int:
    import torch

    import attnlab
    from attnlab.generation import generate_stream

    model, tokenizer = _load(args.model)
    if args.ids is not None:
        try:
            ids = [int(x) for x in args.ids.replace(",", " ").split()]
        except ValueError:
            raise InputError(f"--ids {args.ids!r}: give space-separated integer token ids") from None
    else:
        if tokenizer is None:
            raise InputError(f"{args.model} has no tokenizer to turn --prompt into ids; pass --ids instead")
        ids = tokenizer.encode(args.prompt)
    if not ids:
        raise InputError("the prompt is empty after tokenization: give some text")
    kwargs = dict(max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_k=args.top_k,
                  top_p=args.top_p, num_beams=args.beams, seed=args.seed, use_cache=not args.no_cache,
                  stop_strings=args.stop, tokenizer=tokenizer)
    out = sys.stdout
    started = time.perf_counter()
    if args.beams > 1:
        result = attnlab.generate(model, [ids], **kwargs)
        out.write(_text(tokenizer, result.tokens[0]) + "\n")
        n = len(result.tokens[0])
    else:
        produced: list[int] = []
        printed = ""
        for step in generate_stream(model, [ids], **kwargs):
            produced.append(int(step.tokens[0]))
            text = _text(tokenizer, produced)
            if text.startswith(printed):  # print only what is new (a token may complete a multi-byte char)
                out.write(text[len(printed):])
                out.flush()
                printed = text
            if bool(step.finished[0]):
                break
        out.write("\n")
        n = len(produced)
    seconds = time.perf_counter() - started
    print(f"[{n} tokens in {seconds:.2f} s, {n / seconds:.1f} tokens/s, cache {'off' if args.no_cache else 'on'}, "
          f"torch {torch.__version__}]", file=sys.stderr)
    return 0


def _text(tokenizer, ids: list[int]) -> str:
    if tokenizer is None:
        return " ".join(str(i) for i in ids) + (" " if ids else "")
    return tokenizer.decode(ids)


register("generate", "stream generated text from a checkpoint (greedy, sampling or beams; with or without cache)",
         _add_arguments, run)
