"""Training-step speed (forward + backward + AdamW) of attnlab against its peers on identical weights.

Cases: the two GPT-2-style decoders of nanoGPT's shakespeare-char runs (vocab 65), a BERT-style MLM step and a
ViT step. Every contestant uses the same optimizer, torch.optim.AdamW(fused=True) (Hugging Face Trainer's
default since torch 2.8), the same batch and its own library's loss, in the same process, interleaved.

    python -m attnlab.benchmarks.train [--quick] [--cases gpt-4L,gpt-6L] [--no-memory] [--compile inductor]
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attnlab import build_model
from attnlab.benchmarks import case_cli, common, peers
from attnlab.config import ModelConfig
from attnlab.layers import kernel_build


@dataclass
class TrainCase:
    name: str
    kind: str  # "gpt" | "mlm" | "vit"
    config: ModelConfig
    batch: int
    seq: int  # tokens per sequence (patches + [CLS] for a ViT)
    in_quick: bool
    repeats: int
    peers: tuple[str, ...]


def _gpt(n_layers: int, n_heads: int, d_model: int, block: int, vocab: int = 65, name: str = "") -> ModelConfig:
    return ModelConfig(topology="decoder", vocab_size=vocab, d_model=d_model, n_heads=n_heads, d_ff=4 * d_model,
                       n_layers=n_layers, max_len=block, activation="gelu_tanh", norm_placement="pre",
                       dropout=0.0, name=name or f"gpt-{n_layers}L")


def _bert_mlm() -> ModelConfig:
    return ModelConfig(topology="encoder", vocab_size=8192, d_model=256, n_heads=4, d_ff=1024, n_layers=4,
                       max_len=128, activation="gelu", norm_eps=1e-12, norm_placement="post", embedding_norm=True,
                       type_vocab_size=2, lm_head_bias=True, lm_head_transform=True, pooler=False, dropout=0.0,
                       pad_token_id=0, name="bert-mlm")


def _vit() -> ModelConfig:
    return ModelConfig(topology="vit", image_size=32, patch_size=4, n_channels=3, d_model=192, n_heads=3, d_ff=768,
                       n_layers=4, activation="gelu", norm_eps=1e-12, norm_placement="pre", head="classifier",
                       n_classes=10, vocab_size=1, dropout=0.0, name="vit-tiny")


CASES = {
    "gpt-4L": TrainCase("gpt-4L", "gpt", _gpt(4, 4, 128, 64), 12, 64, True, 20, ("hf", "nanogpt")),
    "gpt-6L": TrainCase("gpt-6L", "gpt", _gpt(6, 6, 384, 256), 8, 256, False, 8, ("hf", "nanogpt")),
    # GPT-2 small as nanoGPT trains it (vocab padded to 50,304, block 1,024, micro-batch 12): a GPU case, asked
    # for by name (--cases gpt2-small); one step is ~10 TFLOP (6 N per token + attention), minutes on a laptop CPU
    "gpt2-small": TrainCase("gpt2-small", "gpt", _gpt(12, 12, 768, 1024, vocab=50304, name="gpt2-small"), 12, 1024,
                            False, 10, ("hf", "nanogpt")),
    "bert-mlm": TrainCase("bert-mlm", "mlm", _bert_mlm(), 8, 128, True, 8, ("hf",)),
    "vit": TrainCase("vit", "vit", _vit(), 16, 65, True, 10, ("hf",)),
}


# ----------------------------------------------------------------------------- models, inputs, losses
def build_models(case: TrainCase, impls: tuple[str, ...]) -> dict[str, torch.nn.Module]:
    """impl -> model, all holding the same weights (attnlab's converted from HF's when HF is a contestant)."""
    return peers.same_weights(impls, lambda: peers.hf_model(case.kind, case.config), lambda: build_model(case.config))


def make_inputs(case: TrainCase) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    c = case.config
    if case.kind == "gpt":
        ids = torch.randint(0, c.vocab_size, (case.batch, case.seq + 1), generator=gen)
        return {"x": ids[:, :-1].contiguous(), "y": ids[:, 1:].contiguous()}
    if case.kind == "mlm":
        ids = torch.randint(5, c.vocab_size, (case.batch, case.seq), generator=gen)
        masked = torch.rand(case.batch, case.seq, generator=gen) < 0.15
        labels = torch.where(masked, ids, torch.full_like(ids, -100))
        return {"x": torch.where(masked, torch.full_like(ids, 4), ids), "labels": labels}
    pixels = torch.randn(case.batch, c.n_channels, c.image_size, c.image_size, generator=gen)
    return {"pixels": pixels, "labels": torch.randint(0, c.n_classes, (case.batch,), generator=gen)}


def loss_of(case: TrainCase, impl: str, model, inputs) -> torch.Tensor:
    """Each library's own way to get the training loss for this batch."""
    if case.kind == "gpt":
        if impl == "attnlab":
            logits = model(inputs["x"]).logits  # (batch, seq, vocab)
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), inputs["y"].view(-1))
        if impl == "hf":
            return model(input_ids=inputs["x"], labels=inputs["x"]).loss  # HF shifts the labels itself
        return model(inputs["x"], inputs["y"])[1]  # nanoGPT: (logits, loss)
    if case.kind == "mlm":
        if impl == "attnlab":
            logits = model(inputs["x"]).logits
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), inputs["labels"].view(-1), ignore_index=-100)
        return model(input_ids=inputs["x"], labels=inputs["labels"]).loss
    if impl == "attnlab":
        return F.cross_entropy(model(inputs["pixels"]).logits, inputs["labels"])
    return model(pixel_values=inputs["pixels"], labels=inputs["labels"]).loss


def logits_of(case: TrainCase, impl: str, model, inputs) -> torch.Tensor:
    if case.kind == "vit":
        return model(inputs["pixels"]).logits if impl == "attnlab" else model(pixel_values=inputs["pixels"]).logits
    if impl == "nanogpt":
        return model(inputs["x"])[0]
    return model(inputs["x"]).logits if impl == "attnlab" else model(input_ids=inputs["x"]).logits


def optimizer_for(model: torch.nn.Module, fused: bool = True) -> torch.optim.Optimizer:
    """The same AdamW for every contestant: decay on matrices only, fused kernel (CPU and CUDA)."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    rest = [p for p in params if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                             lr=3e-4, betas=(0.9, 0.95), fused=fused)


def make_step(case: TrainCase, impl: str, model, inputs, *, autocast: torch.dtype | None = None,
              compile_backend: str | None = None, device: str = "cpu"):
    """One training step as a zero-argument callable (forward, backward, AdamW, zero_grad)."""
    model.train()
    opt = optimizer_for(model)
    forward = kernel_build.torch_compile(model, backend=compile_backend) if compile_backend else model
    device_type = torch.device(device).type
    amp = (lambda: torch.autocast(device_type, dtype=autocast)) if autocast else contextlib.nullcontext

    def step():
        with amp():
            loss = loss_of(case, impl, forward, inputs)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step


def step_flops(case: TrainCase, model, inputs) -> float:
    """Matmul FLOPs FlopCounterMode sees in attnlab's forward + backward, plus attention's QK^T and AV
    (4 b s^2 d per layer forward, twice that backward) when the counter did not see them: CPU SDPA hides them,
    CUDA's fused kernels are counted (as the full square, like the formula)."""
    loss = None

    def fwd_bwd():
        nonlocal loss
        loss = loss_of(case, "attnlab", model, inputs)
        loss.backward()

    saw_attention: list[bool] = []
    counted = common.count_flops(fwd_bwd, saw_attention=saw_attention)
    model.zero_grad(set_to_none=True)
    if saw_attention[0]:
        return counted
    c = case.config
    attention = 3 * 4 * case.batch * case.seq**2 * c.n_heads * c.head_dim * c.n_layers
    return counted + attention


# ----------------------------------------------------------------------------- running
def run_case(case: TrainCase, args) -> common.CaseResult:
    impls = ("attnlab", *case.peers)
    models = build_models(case, impls)
    inputs = make_inputs(case)
    device = args.device
    models = {k: m.to(device) for k, m in models.items()}
    inputs = {k: v.to(device) for k, v in inputs.items()}
    check = _parity(case, models, inputs)
    flops = step_flops(case, models["attnlab"], inputs)
    autocast = torch.bfloat16 if args.bf16 else None
    steps = {k: make_step(case, k, m, inputs, autocast=autocast, compile_backend=args.compile, device=device)
             for k, m in models.items()}
    if args.compile_ours:  # attnlab once more, compiled (its own copy of the weights and optimizer)
        twin = copy.deepcopy(models["attnlab"])
        steps[f"attnlab+compile({args.compile_ours})"] = make_step(case, "attnlab", twin, inputs, autocast=autocast,
                                                                   compile_backend=args.compile_ours, device=device)
    repeats = args.repeats or (max(3, case.repeats // 2) if args.quick else case.repeats)
    result = common.run_case(case.name, "train step", case.batch * case.seq, steps, flops=flops,
                             warmup=args.warmup, repeats=repeats, check=check, device=device,
                             probe_size=args.probe_size, clock=args.clock,
                             probe_dtype=torch.bfloat16 if args.bf16 else torch.float32)
    missing = [p for p in case.peers if p not in models]
    if missing:
        result.notes = f"peers not available here: {', '.join(missing)}"
    return result


def _parity(case: TrainCase, models, inputs) -> str:
    """Max |logit difference| of each peer against attnlab on the timed batch, in eval mode."""
    if len(models) < 2:
        return ""
    with torch.no_grad():
        ref = logits_of(case, "attnlab", models["attnlab"].eval(), inputs)
        diffs = {k: (logits_of(case, k, m.eval(), inputs) - ref).abs().max().item()
                 for k, m in models.items() if k != "attnlab"}
    return "max |logits - attnlab|: " + ", ".join(f"{k} {v:.1e}" for k, v in diffs.items())


def memory_main(case_name: str, impl: str) -> None:
    """Child process: build one implementation only, run three steps, print the peak memory as JSON."""
    case_cli.print_peak_memory(CASES[case_name], impl, build_models, make_inputs, make_step)


def _compile_ours(p) -> None:
    p.add_argument("--compile-ours", default=None,
                   help="add attnlab compiled with this torch.compile backend as one more contestant (inductor)")


def main(argv=None) -> list[common.CaseResult]:
    p = case_cli.parser(__doc__, CASES, "train", quick_help="small cases only, fewer repeats, no memory runs",
                        warmup=2, extra=_compile_ours)
    # compiled contestants ("attnlab+compile") share attnlab's weights: their memory is not measured apart
    return case_cli.main(p, argv, "attnlab.benchmarks.train", CASES, run_case, memory_main,
                         measure_memory_of=lambda impl: impl != "matmul-peak" and "+" not in impl)


if __name__ == "__main__":
    main()
