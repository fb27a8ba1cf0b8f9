"""`--quantize none|int8|int4`, shared by the commands that load a model (generate, explore): the option, its
check before anything loads, and applying it.

Why here and not in each command: the same words, the same refusal and the same lazy import in both. The scheme
is applied by attnlab.quantize (weight-only: int8 with one scale per output channel, int4 with a scale per group
of weights; docs/quantization.md), imported only when a scheme is asked for, so that `--help` stays free of torch.
"""

from __future__ import annotations

from attnlab.errors import InputError

SCHEMES = ("none", "int8", "int4")  # none: the weights as loaded (float32, or as the checkpoint stores them)
HELP = ("weights held in memory as: none (as loaded, the default), int8 (one scale per output channel) or int4 "
        "(group-wise scales); weight-only, activations stay float32")


def add_argument(p) -> None:
    p.add_argument("--quantize", default="none", metavar="SCHEME", help=HELP)


def check(scheme) -> None:
    """Refuse a scheme that does not exist, in one line naming it and the allowed ones."""
    if scheme not in SCHEMES:
        raise InputError(f"quantize={scheme!r} (--quantize) is not allowed: use one of {', '.join(SCHEMES)} "
                         "(none keeps the weights as loaded)")


def already_quantized(model) -> bool:
    """Whether the model holds integer weight codes already (a GGUF file whose Q8_0 / Q4_0 / Q4_1 blocks
    attnlab.load keeps): quantizing it again is refused by attnlab.quantize, and would only lose precision."""
    return any(not (b.dtype.is_floating_point or b.dtype.is_complex) for b in model.buffers())


def apply(model, scheme):
    """The model in eval mode with its weights quantized by `scheme` (in place); only put in eval mode for "none"
    or None, or when it is quantized already (callers say so: `already_quantized`). attnlab.quantize takes
    eval-mode models only: quantized weights cannot be trained."""
    if scheme in (None, "none") or already_quantized(model):
        return model.eval()
    check(scheme)
    import attnlab

    quantize = getattr(attnlab, "quantize", None)  # attnlab.quantization.quantize, exported lazily
    if quantize is None:
        raise InputError(f"--quantize {scheme}: this attnlab has no attnlab.quantize; use --quantize none")
    return quantize(model.eval(), scheme)
