"""Which block options the compiled decoding step (generation/compiled.py) computes as the eager forward does, and a
one-line reason naming the first option it does not.

Why a list checked up front: the step is traced once, at one cache length, and attends through attnlab's own C++
kernel over the cache (attnlab::decode_attention: no mask, no cap). An option it cannot express used to show only
at trace time, a minute into a compile, as an opaque warning (Unsupported, GuardOnDataDependentSymNode). Named here,
generate(compile=None) decodes eagerly at once and says why, and compile=True is refused in one line.

Checked compiled against eager on tiny float decoders (tests/test_decode_compiled_options.py): q/k norm per head and
over all heads, partial RoPE, parallel residual, output and sandwich norms, a logit cap, learned positions and RoPE
with linear, llama3 or yarn scaling give the eager tokens and logits to float32 rounding; the options below fail
to trace.
"""

from __future__ import annotations


def unsupported_option(config) -> str | None:
    """Why the compiled step cannot serve a model with `config` (the option by name and what it needs), or None."""
    window = getattr(config, "sliding_window", None)
    if window is not None:
        return (f"sliding_window={window}: the step is traced at one cache length, where whether the window hides a "
                "key yet would be fixed, and its attention kernel takes no mask")
    cap = getattr(config, "attn_softcap", None)
    if cap is not None:
        return f"attn_softcap={cap}: the step's attention kernel does not cap the scores"
    scaling = getattr(config, "rope_scaling", None) or {}
    if scaling.get("type") in ("dynamic", "longrope"):
        return (f"rope_scaling type {scaling['type']!r}: its frequencies follow each step's longest position, a value "
                "read back from the tensors, which one traced graph cannot do")
    position = getattr(config, "position", None)
    if position in ("alibi", "t5"):
        return f"position={position!r}: a bias added to the scores, which the step's attention kernel does not take"
    return None
