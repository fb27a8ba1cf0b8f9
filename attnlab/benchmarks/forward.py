"""Inference forward speed of attnlab against its peers on identical weights, under torch.inference_mode.

Cases: bert-base shape (batch 8 x 128) against HF BertModel and, block stack only, against
torch.nn.TransformerEncoder in eval mode (its fused fast path); GPT-2-small shape (1 x 512 and 8 x 128) against
HF GPT2LMHeadModel and nanoGPT (full logits); ViT-B/16 (batch 8) against HF ViTForImageClassification.

    python -m attnlab.benchmarks.forward [--quick] [--cases bert-base,gpt2-8x128] [--no-memory]
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab import build_model
from attnlab.benchmarks import case_cli, common, peers
from attnlab.config import ModelConfig
from attnlab.layers import kernel_build
from attnlab.models.stack import Stack
from attnlab.presets import get as preset


@dataclass
class ForwardCase:
    name: str
    kind: str  # "bert" | "stack" | "gpt" | "vit"
    config: ModelConfig
    batch: int
    seq: int
    in_quick: bool
    repeats: int
    peers: tuple[str, ...]


def _bert_base() -> ModelConfig:
    return preset("bert-base", dropout=0.0, head="none", pooler=True)


def _bert_stack() -> ModelConfig:
    """bert-base blocks only: what torch.nn.TransformerEncoder holds (no embeddings, no pooler)."""
    return preset("bert-base", dropout=0.0, head="none", pooler=False, position="none", type_vocab_size=0,
                       embedding_norm=False)


def _gpt2() -> ModelConfig:
    return preset("gpt2", dropout=0.0, bos_token_id=None, eos_token_id=None)


def _vit_b16() -> ModelConfig:
    return preset("vit-base-16", dropout=0.0)


CASES = {
    "bert-base": ForwardCase("bert-base", "bert", _bert_base(), 8, 128, True, 6, ("hf",)),
    "bert-base-stack": ForwardCase("bert-base-stack", "stack", _bert_stack(), 8, 128, True, 6, ("torch",)),
    "gpt2-1x512": ForwardCase("gpt2-1x512", "gpt", _gpt2(), 1, 512, False, 6, ("hf", "nanogpt")),
    "gpt2-8x128": ForwardCase("gpt2-8x128", "gpt", _gpt2(), 8, 128, False, 6, ("hf", "nanogpt")),
    "vit-b16": ForwardCase("vit-b16", "vit", _vit_b16(), 8, 197, False, 5, ("hf",)),
}


def build_models(case: ForwardCase, impls: tuple[str, ...]) -> dict[str, torch.nn.Module]:
    """impl -> model in eval mode, all holding the same weights."""
    def ours() -> torch.nn.Module:
        if case.kind == "stack":  # the blocks alone: what torch.nn.TransformerEncoder holds
            return Stack(case.config, n_layers=case.config.n_layers, causal=False)
        return build_model(case.config)

    models = peers.same_weights(impls, lambda: peers.hf_model(case.kind, case.config), ours)
    return {k: m.eval() for k, m in models.items()}


def make_inputs(case: ForwardCase) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    c = case.config
    if case.kind == "vit":
        return {"pixels": torch.randn(case.batch, c.n_channels, c.image_size, c.image_size, generator=gen)}
    if case.kind == "stack":
        return {"hidden": torch.randn(case.batch, case.seq, c.d_model, generator=gen)}
    return {"x": torch.randint(0, c.vocab_size, (case.batch, case.seq), generator=gen)}


def forward_of(case: ForwardCase, impl: str, model, inputs) -> torch.Tensor:
    """The tensor each library returns for this case (logits, or the last hidden state)."""
    if case.kind == "stack":
        return model.run(inputs["hidden"]) if impl == "attnlab" else model(inputs["hidden"])
    if case.kind == "vit":
        return model(inputs["pixels"]).logits if impl == "attnlab" else model(pixel_values=inputs["pixels"]).logits
    if case.kind == "bert":
        return model(inputs["x"]).hidden if impl == "attnlab" else model(input_ids=inputs["x"]).last_hidden_state
    if impl == "nanogpt":
        return model(inputs["x"])[0]
    return model(inputs["x"]).logits if impl == "attnlab" else model(input_ids=inputs["x"]).logits


def make_call(case: ForwardCase, impl: str, model, inputs, *, compile_backend: str | None = None,
              autocast: torch.dtype | None = None, device: str = "cpu"):
    forward = kernel_build.torch_compile(model, backend=compile_backend) if compile_backend else model

    def call():
        with torch.inference_mode():
            if autocast is not None:
                with torch.autocast(torch.device(device).type, dtype=autocast):
                    return forward_of(case, impl, forward, inputs)
            return forward_of(case, impl, forward, inputs)

    return call


def forward_flops(case: ForwardCase, model, inputs) -> float:
    """Counted matmul FLOPs of attnlab's forward plus attention's 4 b s^2 d per layer (hidden from the counter
    on CPU); causal attention is counted in full, as nanoGPT's MFU does."""
    with torch.inference_mode():
        counted = common.count_flops(lambda: forward_of(case, "attnlab", model, inputs))
    c = case.config
    return counted + 4 * case.batch * case.seq**2 * c.n_heads * c.head_dim * c.n_layers


def _fast_path_used(model, inputs) -> bool:
    """Whether torch.nn.TransformerEncoder took its fused kernel (aten::_transformer_encoder_layer_fwd).

    A dispatch mode sees every aten call; torch.profiler would too, but it prints its own start/stop lines."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen: set[str] = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.add(str(func.overloadpacket))
            return func(*args, **(kwargs or {}))

    with torch.inference_mode(), Ops() as ops:
        model(inputs["hidden"])
    return "aten._transformer_encoder_layer_fwd" in ops.seen


def _parity(case: ForwardCase, models, inputs) -> str:
    if len(models) < 2:
        return ""
    with torch.inference_mode():
        ref = forward_of(case, "attnlab", models["attnlab"], inputs)
        parts = [f"{k} {(forward_of(case, k, m, inputs) - ref).abs().max().item():.1e}"
                 for k, m in models.items() if k != "attnlab"]
    text = "max |output - attnlab|: " + ", ".join(parts)
    if "torch" in models:
        text += f"; TransformerEncoder fast path used: {_fast_path_used(models['torch'], inputs)}"
    return text


def run_case(case: ForwardCase, args) -> common.CaseResult:
    models = build_models(case, ("attnlab", *case.peers))
    inputs = make_inputs(case)
    models = {k: m.to(args.device) for k, m in models.items()}
    inputs = {k: v.to(args.device) for k, v in inputs.items()}
    check = _parity(case, models, inputs)
    flops = forward_flops(case, models["attnlab"], inputs)
    autocast = torch.bfloat16 if args.bf16 else None
    calls = {k: make_call(case, k, m, inputs, compile_backend=args.compile, autocast=autocast, device=args.device)
             for k, m in models.items()}
    repeats = args.repeats or (3 if args.quick else case.repeats)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 2)
    result = common.run_case(case.name, "forward", case.batch * case.seq, calls, flops=flops, warmup=warmup,
                             repeats=repeats, check=check, device=args.device, probe_size=args.probe_size,
                             clock=args.clock)
    missing = [p for p in case.peers if p not in models]
    if missing:
        result.notes = f"peers not available here: {', '.join(missing)}"
    return result


def memory_main(case_name: str, impl: str) -> None:
    """Child process: build one implementation only, run three forwards, print the peak memory as JSON."""
    case_cli.print_peak_memory(CASES[case_name], impl, build_models, make_inputs, make_call)


def main(argv=None) -> list[common.CaseResult]:
    p = case_cli.parser(__doc__, CASES, "forward", quick_help="bert-base cases only, 3 repeats, no memory runs",
                        warmup=None)
    return case_cli.main(p, argv, "attnlab.benchmarks.forward", CASES, run_case, memory_main)


if __name__ == "__main__":
    main()
