"""The weight schemes a person may ask for by name (none | int8 | int4): the check before anything loads, and
applying one to a loaded model.

Why a module of its own in the library: both faces use it, `attnlab generate/explore --quantize` (attnlab.cli)
and the explorer's registry (attnlab.explorer), and a face never imports another face. The scheme itself is
applied by attnlab.quantization.quantize (weight-only: int8 with one scale per output channel, int4 with a scale
per group of weights; docs/quantization.md), imported only when a scheme is asked for, so that `--help` and a
registry without quantization stay free of the kernels.
"""

from __future__ import annotations

from attnlab.errors import InputError

SCHEMES = ("none", "int8", "int4")  # none: the weights as loaded (float32, or as the checkpoint stores them)
HELP = ("weights held in memory as: none (as loaded, the default), int8 (one scale per output channel) or int4 "
        "(group-wise scales); weight-only, activations stay float32")


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
    from attnlab import quantization

    quantize = getattr(quantization, "quantize", None)  # read at call time: a build without it says so
    if quantize is None:
        raise InputError(f"--quantize {scheme}: this attnlab has no attnlab.quantize; use --quantize none")
    return quantize(model.eval(), scheme)
