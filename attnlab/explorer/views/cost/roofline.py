"""The roofline of this machine with the loaded model's work placed on it: a prefill of n tokens and one decoding
step at token n, each at its arithmetic intensity (FLOPs / bytes moved, the weights counted at the precision the
model holds them) and the FLOP/s the machine can reach there, min(peak, bandwidth x intensity).

Why: the Cost tab's tables say a decoding step moves about a byte per FLOP; the roofline shows what that means
on this machine. The peak and the bandwidth are measured here (attnlab/cost/peak.py: a large matmul and a large
copy, cached), so the ridge (peak / bandwidth, the intensity where a kernel stops waiting for memory) is this
machine's, not a datasheet's.
"""

from __future__ import annotations

from typing import Any

from attnlab.cost.analytic import cost_table, matmul_parameters
from attnlab.cost.peak import cpu_name, measured_bandwidth, measured_peak_flops
from attnlab.explorer.server.common import config_of
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.views.cost.held import held_weights

FLOAT32 = 4


def _point(name: str, flops: int, moved: int, peak: float, bandwidth: float, precision: str) -> dict[str, Any]:
    intensity = flops / moved
    return {"name": name, "flops": flops, "bytes": moved, "intensity": intensity, "precision": precision,
            "attainable": min(peak, bandwidth * intensity),
            "bound": "memory" if intensity < peak / bandwidth else "compute"}


def roofline(lm: Loaded, n: int, *, peak: float | None = None, bandwidth: float | None = None) -> dict[str, Any]:
    """{"peak", "bandwidth", "ridge", "machine", "held", "points": [...]}: the prefill of n tokens and (a model
    that generates) one cached decoding step at token n, each read with its weights at the held precision and,
    where that differs, at float32 too. peak (FLOP/s) and bandwidth (bytes/s): measured when not given."""
    cfg = config_of(lm)
    held = held_weights(lm.model)
    peak = measured_peak_flops("cpu") if peak is None else peak
    bandwidth = measured_bandwidth("cpu") if bandwidth is None else bandwidth
    formats = [f["format"] for f in held["formats"] if f["format"] != "float32"]
    precision = " + ".join(formats) + " weights (as held)" if formats else "float32 weights"
    # the tables count each weight matrix at 4 bytes; the held bytes replace them where the counts agree
    # (a decoder: every matrix a step multiplies by is one Linear or the tied head)
    weights = matmul_parameters(cfg)
    swap = held["matmul"]["bytes"] - FLOAT32 * weights if held["matmul"]["weights"] == weights else 0
    points = []
    n = cfg.n_patches + 1 if cfg.topology == "vit" else min(n, cfg.seq_limit or n)
    forward = cost_table(cfg, 1, n)
    moved = forward.bytes_read + forward.bytes_written
    first = "prefill" if cfg.topology == "decoder" else "forward"  # an encoder reads its n tokens once, no decoding
    points.append(_point(f"{first}, {n} tokens", forward.flops, moved + swap, peak, bandwidth, precision))
    if cfg.topology == "decoder":
        step = cost_table(cfg, 1, n, mode="decode_step", cached=True)
        moved = step.bytes_read + step.bytes_written
        points.append(_point(f"decoding step at token {step.seq}", step.flops, moved + swap, peak, bandwidth,
                             precision))
        if swap:
            points.append(_point(f"decoding step at token {step.seq}, float32 weights", step.flops, moved, peak,
                                 bandwidth, "float32 weights"))
    return {"model": lm.id, "n": n, "peak": peak, "bandwidth": bandwidth, "ridge": peak / bandwidth,
            "machine": f"{cpu_name()}, float32 (peak: a 1024 x 1024 matmul; bandwidth: a 128 MB copy)",
            "held": held, "held_counted": held["matmul"]["weights"] == weights, "points": points}
