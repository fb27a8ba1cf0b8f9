"""The analytic count against torch's own: FlopCounterMode on the model's real forward, backward and steps.

The model is built on the `meta` device, where every operation computes only the shape of its result: counting
gpt3-175b at n = 2048 costs no memory and no arithmetic, yet FlopCounterMode sees every matrix product torch
dispatches. SDPA is forced onto its math backend, which runs attention as two batched products that
FlopCounterMode counts (on CPU the fused kernel is missing from its table and would count as zero).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from attnlab.config import ModelConfig
from attnlab.cost.analytic import cost_table, resolve_sizes


@dataclass(frozen=True)
class Check:
    what: str
    counted: int  # FlopCounterMode
    predicted: int  # cost_table(...).matmul_flops

    @property
    def relative_error(self) -> float:
        return (self.predicted - self.counted) / self.counted if self.counted else float("inf")

    @property
    def ok(self) -> bool:
        return abs(self.relative_error) <= 0.02


def _count(fn) -> int:
    counter = FlopCounterMode(display=False)
    with sdpa_kernel(SDPBackend.MATH), counter:
        fn()
    return counter.get_total_flops()


def flop_counter_check(config: ModelConfig, batch: int, seq: int | None, src_seq: int | None = None) -> list[Check]:
    """Forward, training step (forward + backward), cached and uncached decoding step: counted vs predicted."""
    from attnlab.build import build_model
    from attnlab.cache import KVCache

    b, n, m = resolve_sizes(config, batch, seq, src_seq)
    model = build_model(config, device="meta")
    # the input checks read values (id range, NaN pixels), which meta tensors do not have; shapes are checked above
    model.check_ids = lambda *args, **kwargs: None
    model.check_pixels = lambda *args, **kwargs: None
    topo = config.topology
    ids = torch.zeros(b, n, dtype=torch.long, device="meta")
    src = torch.zeros(b, m, dtype=torch.long, device="meta") if m is not None else None

    def forward():
        if topo == "vit":
            pixels = torch.zeros(b, config.n_channels, config.image_size, config.image_size, device="meta")
            return model(pixels)
        return model(src, ids) if topo == "encoder-decoder" else model(ids)

    holder = {}
    counted_fwd = _count(lambda: holder.setdefault("out", forward()))
    out = holder["out"]
    heads = [t for t in (out.logits, out.pooled) if t is not None]
    checks = [Check("forward", counted_fwd, cost_table(config, b, n, m).matmul_flops)]
    if heads:  # a model without a head has nothing to train against
        loss = sum(t.float().sum() for t in heads)
        counted_bwd = _count(loss.backward)
        checks.append(Check("training step (forward + backward)", counted_fwd + counted_bwd,
                            cost_table(config, b, n, m, mode="train").matmul_flops))
    if topo in ("decoder", "encoder-decoder") and n > 1:
        with torch.no_grad():
            cache = KVCache.for_model(model, batch=b, capacity=n)
            if topo == "encoder-decoder":
                hidden = model.encode(src)
                model.decode(ids[:, :-1], hidden, cache=cache)
                step = _count(lambda: model.decode(ids[:, -1:], None, cache=cache, last_only=True))
                again = _count(lambda: model.decode(ids, hidden, last_only=True))
            else:
                model(ids[:, :-1], cache=cache)
                step = _count(lambda: model(ids[:, -1:], cache=cache, last_only=True))
                again = _count(lambda: model(ids, last_only=True))
        checks.append(Check("decoding step, KV cache", step,
                            cost_table(config, b, n, m, mode="decode_step").matmul_flops))
        checks.append(Check("decoding step, no cache", again,
                            cost_table(config, b, n, m, mode="decode_step", cached=False).matmul_flops))
    return checks


def render_checks(checks: list[Check]) -> str:
    lines = [f"{'FlopCounterMode (meta device) vs the table':<40}{'counted':>20}{'predicted':>20}{'error':>10}"]
    for c in checks:
        lines.append(f"{c.what:<40}{c.counted:>20,}{c.predicted:>20,}{c.relative_error:>+10.3%}"
                     + ("" if c.ok else "  > 2%"))
    return "\n".join(lines)
