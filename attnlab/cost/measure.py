"""Measured against predicted: time the real attnlab model over a sweep of n and fit growth exponents.

Five series, each timed at every n of the sweep:
- forward:          the whole model on b sequences of n tokens (logits for every position);
- decode_cached:    one new token against a KV cache holding n-1 tokens (Decoder.forward(ids, cache=cache,
                    last_only=True)); the cache is filled with random K, V once and rewound before every call,
                    since the cost of a step does not depend on the numbers in it;
- decode_uncached:  the same step without a cache: the model re-reads the whole prefix of n tokens;
- attention:        the attention core alone (F.scaled_dot_product_attention on (b, h, n, d_k), causal, times
                    L layers): the n^2 part of the forward, which the whole forward only approaches at large n;
- attention_dense:  the same core without the causal mask. The table counts the dense n^2 (as FlopCounterMode
                    does), but a causal kernel may skip key blocks wholly above the diagonal, up to half the work
                    at large n; this series shows the n^2 the table predicts;
- attention_step:   the same core for one query against n keys (the part of a cached step that grows with n).

While a sweep runs on a terminal, a status line on stderr names the point being timed, how many are done and
about how long the rest will take (the first call of a large n, or a warm-up, can take seconds with nothing
else on screen); each finished point goes to the `progress` callback, which prints it for `attnlab cost`.

The growth exponent is the least-squares slope of log(time) against log(n). The predicted exponent is the
same fit applied to the analytic FLOPs (attnlab.cost.analytic) over the same n, so the two can be compared
directly: with d fixed, FLOPs go from ~n (d^2 terms) to ~n^2 (attention) as n passes ~6d.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from attnlab.config import ModelConfig
from attnlab.cost.analytic import cost_table, resolve_sizes
from attnlab.errors import InputError
from attnlab.extras import require

SERIES = ("forward", "decode_cached", "decode_uncached", "attention", "attention_dense", "attention_step")
PLOTS = {"forward": ("forward", "attention", "attention_dense"), "decode_cached": ("decode_cached", "attention_step"),
         "decode_uncached": ("decode_uncached",)}


@dataclass(frozen=True)
class Point:
    series: str
    n: int
    seconds: float  # best of the timed calls
    flops: int  # predicted matrix-product FLOPs of one call
    runs: int

    @property
    def flops_per_second(self) -> float:
        return self.flops / self.seconds


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def time_call(fn, budget_s: float = 0.3, min_runs: int = 2, max_runs: int = 200,
              clock: str = "wall") -> tuple[float, int]:
    """Best time of fn() over at least `min_runs` calls, repeated until about `budget_s` of wall time is spent.

    The minimum, not the mean: on a shared machine every disturbance only ever adds time. clock="cpu" reads
    the process's CPU time instead of the wall clock: with one thread it equals the wall time of an idle
    machine but does not count the time other processes hold the core (useful on a crowded machine).
    """
    read = CLOCKS[clock]
    best, spent, runs = float("inf"), 0.0, 0
    while runs < max_runs and (runs < min_runs or spent < budget_s):
        wall, start = time.perf_counter(), read()
        fn()
        elapsed = read() - start
        best, spent, runs = min(best, elapsed), spent + time.perf_counter() - wall, runs + 1
    return max(best, 1e-9), runs


def fit_exponent(ns, values) -> float:
    """Slope of log(value) against log(n), least squares: value ~ n^slope."""
    xs = [math.log(n) for n in ns]
    ys = [math.log(v) for v in values]
    if len(xs) < 2:
        raise InputError("fitting a growth exponent needs at least two sequence lengths")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


def _predicted(config: ModelConfig, series: str, b: int, n: int, m: int | None) -> int:
    if series in ("attention", "attention_dense", "attention_step"):
        mode = "decode_step" if series == "attention_step" else "forward"
        table = cost_table(config, b, n, m, mode=mode, cached=True)
        skip = "encoder" if config.topology == "encoder-decoder" else None  # the core is timed on the decoder
        return sum(r.flops for r in table.rows
                   if r.stack != skip and r.name.startswith("self-attn") and r.name.endswith(("Q K^T", "P V")))
    mode, cached = {"forward": ("forward", True), "decode_cached": ("decode_step", True),
                    "decode_uncached": ("decode_step", False)}[series]
    return cost_table(config, b, n, m, mode=mode, cached=cached).matmul_flops


def _callables(model, config: ModelConfig, series: str, b: int, n_max: int, m: int | None, dtype, device):
    """series -> function of n that runs one call (all inputs prepared outside the timed region)."""
    from attnlab.cache import KVCache

    topo = config.topology
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, config.vocab_size, (b, n_max), generator=gen).to(device)
    if series in ("attention", "attention_dense", "attention_step"):
        h, g, dk = config.n_heads, config.kv_heads, config.head_dim
        layers = config.decoder_layers if topo == "encoder-decoder" else config.n_layers
        causal = topo in ("decoder", "encoder-decoder")
        q_all = torch.randn(b, h, n_max, dk, dtype=dtype, device=device)
        k_all = torch.randn(b, g, n_max, dk, dtype=dtype, device=device)
        v_all = torch.randn(b, g, n_max, dk, dtype=dtype, device=device)

        def core(n: int):
            q = q_all[:, :, n - 1: n] if series == "attention_step" else q_all[:, :, :n]
            for _ in range(layers):  # the model calls it once per layer
                F.scaled_dot_product_attention(q, k_all[:, :, :n], v_all[:, :, :n],
                                               is_causal=causal and series == "attention", enable_gqa=g != h)
        return core

    src = torch.randint(0, config.vocab_size, (b, m), generator=gen).to(device) if m is not None else None
    if series == "forward":
        if topo == "encoder-decoder":
            return lambda n: model(src, ids[:, :n])
        return lambda n: model(ids[:, :n])
    if topo not in ("decoder", "encoder-decoder"):
        raise InputError(f"series {series!r} needs a decoder or an encoder-decoder; this model is a {topo}")
    if series == "decode_uncached":
        if topo == "encoder-decoder":
            context = torch.randn(b, m, config.d_model, dtype=dtype, device=device)
            return lambda n: model.decode(ids[:, :n], context, last_only=True)
        return lambda n: model(ids[:, :n], last_only=True)
    cache = KVCache.for_model(model, batch=b, capacity=n_max, dtype=dtype, device=device)
    for layer in cache.layers:
        layer.k.normal_()
        layer.v.normal_()
    if cache.cross is not None:
        for layer in cache.cross:
            layer.k = torch.randn(b, config.kv_heads, m, config.head_dim, dtype=dtype, device=device)
            layer.v = torch.randn_like(layer.k)

    def step(n: int):
        for layer in cache.layers:
            layer.length = n - 1  # rewind: the cache holds the n-1 tokens before the new one
        new = ids[:, n - 1: n]
        if topo == "encoder-decoder":
            return model.decode(new, None, cache=cache, last_only=True)
        return model(new, cache=cache, last_only=True)
    return step


class _Status:
    """'[k/N] forward n=512 ... about 40 s left' rewritten in place on stderr, only when stderr is a terminal;
    cleared before each finished point is handed on, so a point printed on stdout starts a clean line."""

    def __init__(self, total: int, stream=None, show: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.show = bool(getattr(self.stream, "isatty", lambda: False)()) if show is None else show
        self.total, self.done, self.started = total, 0, time.perf_counter()

    def timing(self, name: str, n: int) -> None:
        if not self.show:
            return
        left = ""
        if self.done:
            per_point = (time.perf_counter() - self.started) / self.done
            left = f", about {per_point * (self.total - self.done):.0f} s left"
        self.stream.write(f"\r\x1b[K[{self.done + 1}/{self.total}] timing {name} n={n}{left}")
        self.stream.flush()

    def finished(self) -> None:
        self.done += 1
        if self.show:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def sweep(config: ModelConfig, seqs, *, batch: int = 1, src_seq: int | None = None, series=SERIES,
          dtype=torch.float32, device="cpu", budget_s: float = 0.3, clock: str = "wall",
          progress=None, status: bool | None = None) -> list[Point]:
    """Time every series at every n in `seqs` on a randomly initialised model of `config` (seeded).

    progress: called with each Point as it is measured; status: the status line on stderr (None: on a terminal)."""
    from attnlab.build import build_model

    seqs = sorted(set(seqs))
    if config.topology == "vit":
        raise InputError("a ViT's sequence length is fixed by image_size/patch_size; sweep a text model")
    if len(seqs) < 2:
        raise InputError(f"seq={seqs}: a sweep needs at least two sequence lengths")
    if config.topology == "encoder-decoder" and src_seq is None:
        src_seq = 64 if (config.seq_limit or 64) >= 64 else config.seq_limit
    for n in seqs:
        resolve_sizes(config, batch, n, src_seq)  # validates every n against the positions' limit
    if clock not in CLOCKS:
        raise InputError(f"clock={clock!r}: allowed {', '.join(CLOCKS)}")
    unknown = [s for s in series if s not in SERIES]
    if unknown:
        raise InputError(f"unknown series {unknown}; allowed: {', '.join(SERIES)}")
    if config.topology == "encoder":
        series = [s for s in series if s in ("forward", "attention", "attention_dense")]
    torch.manual_seed(0)
    model = build_model(config, device=device, dtype=dtype).eval()
    points: list[Point] = []
    shown = _Status(len(series) * len(seqs), show=status)
    with torch.inference_mode():
        for name in series:
            shown.timing(name, seqs[0])
            run = _callables(model, config, name, batch, max(seqs), src_seq, dtype, device)
            run(seqs[0])  # warm-up: first calls pay for allocation and kernel selection
            for n in seqs:
                shown.timing(name, n)
                seconds, runs = time_call(lambda: run(n), budget_s, clock=clock)  # noqa: B023 (called right here)
                point = Point(name, n, seconds, _predicted(config, name, batch, n, src_seq), runs)
                points.append(point)
                shown.finished()
                if progress is not None:
                    progress(point)
    return points


@dataclass(frozen=True)
class Fit:
    series: str
    measured: float  # exponent fitted to the times, all n
    predicted: float  # exponent fitted to the analytic FLOPs, same n
    measured_top: float  # the same over the upper half of the sweep (the large-n regime)
    predicted_top: float


def fits(points: list[Point]) -> list[Fit]:
    out = []
    for name in SERIES:
        pts = sorted((p for p in points if p.series == name), key=lambda p: p.n)
        if len(pts) < 2:
            continue
        top = pts[len(pts) // 2:] if len(pts) >= 3 else pts
        ns, ts, fs = [p.n for p in pts], [p.seconds for p in pts], [p.flops for p in pts]
        out.append(Fit(name, fit_exponent(ns, ts), fit_exponent(ns, fs),
                       fit_exponent([p.n for p in top], [p.seconds for p in top]),
                       fit_exponent([p.n for p in top], [p.flops for p in top])))
    return out


def plot(points: list[Point], out_dir: str | Path, title: str = "") -> list[Path]:
    """One log-log PNG of time vs n per decoding regime (forward, cached step, uncached step)."""
    matplotlib = require("matplotlib", "plots", "cost --measure's plots")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    slopes = {f.series: f for f in fits(points)}
    paths = []
    for figure, names in PLOTS.items():
        present = [s for s in names if any(p.series == s for p in points)]
        if not present:
            continue
        fig, ax = plt.subplots(figsize=(5.5, 4.0))
        for name in present:
            pts = sorted((p for p in points if p.series == name), key=lambda p: p.n)
            ns, ts = [p.n for p in pts], [p.seconds * 1e3 for p in pts]
            fit = slopes[name]
            ax.plot(ns, ts, "o-", label=f"{name}: measured slope {fit.measured:.2f}")
            scale = ts[-1] / pts[-1].flops  # predicted time = FLOPs x (ms per FLOP at the largest n)
            ax.plot(ns, [p.flops * scale for p in pts], "--", color=ax.lines[-1].get_color(), alpha=0.6,
                    label=f"{name}: predicted FLOPs, slope {fit.predicted:.2f}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("n (tokens)")
        ax.set_ylabel("time per call (ms)")
        ax.set_title(f"{title} {figure}".strip(), fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out_dir / f"cost_{figure}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


def render(points: list[Point], peak: float | None = None) -> str:
    """Measured beside predicted, one line per (series, n), then the fitted exponents."""
    lines = [f"{'series':<16}{'n':>6}{'predicted FLOPs':>17}{'time (ms)':>12}{'GFLOP/s':>10}"
             + (f"{'MFU':>8}" if peak else "")]
    for p in points:
        line = f"{p.series:<16}{p.n:>6}{p.flops:>17,}{p.seconds * 1e3:>12.3f}{p.flops_per_second / 1e9:>10.2f}"
        lines.append(line + (f"{p.flops_per_second / peak:>8.1%}" if peak else ""))
    lines += ["", "growth exponents (time ~ n^k): measured vs predicted from FLOPs; all n | upper half of n"]
    for f in fits(points):
        lines.append(f"  {f.series:<16} measured {f.measured:5.2f}  predicted {f.predicted:5.2f}  |  "
                     f"measured {f.measured_top:5.2f}  predicted {f.predicted_top:5.2f}")
    return "\n".join(lines)
