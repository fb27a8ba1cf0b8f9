"""Kept parts against the same mixed matrices expanded to float32 (what load_gguf did before), one process,
contestants interleaved, one thread, CPU clock: greedy decoding of 32 tokens after an 8-token prompt, eager
(`eager`) or through the compiled step (`compiled`, each model compiled first), and a 64-token prompt's forward
(eager only)."""

import os
import sys
import time

import torch

import attnlab
from attnlab.interop import gguf as G
from attnlab.layers.quantized import parts_of

MODELS = "~/.cache/attnlab/llama.cpp/models/SmolLM2-135M-Instruct.{}.gguf"


def kept_before(real):
    """G._kept as it was: a fused matrix of mixed kept types expanded to float32."""
    def kept(reader, config):
        formats, sources = real(reader, config)
        formats = {k: v for k, v in formats.items() if parts_of(v) is None}
        names = {n for ours, ns, _ in G.expand(G.gguf_table(config), config) if ours in formats for n in ns}
        return formats, {n: fmt for n, fmt in sources.items() if n in names}
    return kept


def main(preset: str, mode: str) -> None:
    torch.set_num_threads(1)
    path = os.path.expanduser(MODELS.format(preset))
    parts, tok = G.load_gguf(path)
    real, G._kept = G._kept, kept_before(G._kept)
    try:
        before, _ = G.load_gguf(path)
    finally:
        G._kept = real
    models = {"parts": parts, "before": before}
    compiled = mode == "compiled"
    prompt = [tok.encode("The capital of France is a city")[:8]]
    args = dict(max_new_tokens=32, compile=compiled, threads=1)
    tokens = {name: attnlab.generate(m, prompt, **args).tokens for name, m in models.items()}  # compiles, if so
    print(preset, mode, "same tokens:", tokens["parts"] == tokens["before"])
    long = torch.tensor([list(range(100, 164))])
    decode, prefill = {n: [] for n in models}, {n: [] for n in models}
    for r in range(6):
        for name in (("parts", "before") if r % 2 == 0 else ("before", "parts")):
            start = time.process_time()
            attnlab.generate(models[name], prompt, **args)
            decode[name].append(32 / (time.process_time() - start))
            if not compiled:
                start = time.process_time()
                with torch.no_grad():
                    models[name](long)
                prefill[name].append(time.process_time() - start)
    for name in models:
        line = f"{name:7s} {mode} decode tok/CPU-s {' '.join(f'{x:.1f}' for x in decode[name])}"
        if prefill[name]:
            line += f"; 64-token prompt CPU-s {' '.join(f'{x:.3f}' for x in prefill[name])}"
        print(line)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "eager")
