"""A random-weight model of Qwen2.5-0.5B's shape, written as a Q8_0 `qwen2` GGUF: the non-LLaMA family that
`python -m attnlab.benchmarks.llama_cpp --model FILE` times against llama.cpp (decode and prefill, 1 and 2 threads).

    python -m attnlab.benchmarks.qwen2_shape OUT.gguf
    python -m attnlab.benchmarks.llama_cpp --model OUT.gguf --fresh-rounds 0

The shape is Qwen2.5-0.5B's config.json (d_model 896, 24 blocks, 14 query heads sharing 2 K/V heads of 64, d_ff
4864, a vocabulary of 151,936 tied to the head, biases on W_Q, W_K, W_V, RoPE base 1e6); the weights are
attnlab's random initialisation (seeded), quantized with attnlab.quantize(model, "int8") and written by save_gguf
as Q8_0 (the same codes, each row's scale rounded to float16) with a byte-level BPE tokenizer trained here (the
rows past it are llama.cpp's unused [PAD] tokens). Speed depends on the shape and the blocks, not on the values,
so no download is needed; nothing is claimed about the text it writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

import attnlab
from attnlab.config import ModelConfig
from attnlab.interop.gguf import save_gguf

QWEN25_05B = dict(topology="decoder", vocab_size=151936, d_model=896, n_heads=14, n_kv_heads=2, d_ff=4864,
                  n_layers=24, max_len=32768, position="rope", rope_theta=1e6, activation="swiglu", norm="rmsnorm",
                  norm_eps=1e-6, bias=False, qkv_bias=True, tie_embeddings=True, name="random Qwen2.5-0.5B shape")


def write(path: Path) -> Path:
    from attnlab.benchmarks.llama_cpp_agreement import CORPUS
    from attnlab.data.tokenizers import train_bpe

    torch.manual_seed(0)
    model = attnlab.build_model(ModelConfig(**QWEN25_05B)).eval()
    attnlab.quantize(model, "int8")
    return save_gguf(model, path, train_bpe(CORPUS, 300))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__)
        return 2
    path = write(Path(argv[0]))
    print(f"{path}: {path.stat().st_size / 2**20:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
