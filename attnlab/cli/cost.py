"""`attnlab cost`: the seeds' per-operation cost table for any model, and (--measure) timings against it."""

from __future__ import annotations

from attnlab.cli.params import resolve_config
from attnlab.errors import InputError

HELP = "FLOPs, bytes and arithmetic intensity per operation; KV cache; --measure times the model"
DEFAULT_SWEEP = (64, 128, 256, 512, 1024, 2048)
QUICK_SWEEP = (32, 64, 128, 256)


def _int_list(text: str | None, name: str) -> list[int] | None:
    if text is None:
        return None
    try:
        values = [int(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise InputError(f"--{name}={text!r}: expected an integer or a comma-separated list of integers") from None
    if not values:
        raise InputError(f"--{name} is empty: give an integer")
    return values


def add_arguments(p) -> None:
    p.add_argument("model", help="a model's name (`attnlab models`), config .json, checkpoint directory or .gguf")
    p.add_argument("--batch", "-b", type=str, default="1", help="batch size b (default 1)")
    p.add_argument("--seq", "-n", type=str, default=None,
                   help="tokens per sequence n; with --measure a comma-separated sweep of lengths (default "
                        "64,...,2048 up to the model's limit), or one n: then n/8, n/4, n/2 and n are timed (a growth "
                        "exponent needs at least two lengths)")
    p.add_argument("--src-seq", "-m", type=str, default=None, help="source length m (encoder-decoders; default n)")
    p.add_argument("--dtype", default="float32", help="float32 | bfloat16 | float16 (bytes per number)")
    p.add_argument("--mode", default="all", help="forward | train | decode_step | all (default)")
    p.add_argument("--check", action="store_true",
                   help="also count the model's real forward, training step and decoding steps with torch's "
                        "FlopCounterMode (on the meta device: free at any size) beside the table's numbers")
    p.add_argument("--measure", action="store_true",
                   help="time the real model over a sweep of n, fit growth exponents, save PNG plots")
    p.add_argument("--quick", action="store_true", help="with --measure: a short sweep (32..256)")
    p.add_argument("--out", default="cost_plots", help="with --measure: folder for the PNG plots")
    p.add_argument("--budget", type=float, default=0.3, help="with --measure: seconds of repeats per point")
    p.add_argument("--threads", type=int, default=1,
                   help="with --measure: torch threads (default 1: far steadier timings on a shared machine)")
    p.add_argument("--clock", default=None,
                   help="with --measure: cpu (process CPU time; the default with 1 thread, immune to other "
                        "processes holding the core) or wall (the default with more threads)")


def _summary(config, b: int, n: int, m: int | None, dtype: str) -> str:
    from attnlab.cost.analytic import (
        DTYPE_BYTES,
        closed_form_training_flops_per_token,
        kv_cache_bytes,
        matmul_parameters,
        training_flops_per_token,
    )
    from attnlab.cost.report import human

    lines = ["summary"]
    if config.topology in ("decoder", "encoder-decoder"):
        kv = kv_cache_bytes(config, b, n, m, dtype)
        layers = config.n_layers if config.topology == "decoder" else config.decoder_layers
        lines.append(f"  KV cache ({dtype}): 2·n·g·d_k·L·bytes x b = 2·{n}·{config.kv_heads}·{config.head_dim}·"
                     f"{layers}·{DTYPE_BYTES[dtype]}"
                     f" x {b} = {kv['self']:,} B ({human(kv['self'], 'B')})")
        if kv["cross"]:
            lines.append(f"  cross-attention K,V over m={m} source tokens: {kv['cross']:,} B "
                         f"({human(kv['cross'], 'B')})")
    exact = training_flops_per_token(config, n, m)
    lines.append(f"  training FLOPs per token (n={n}, matrix products, forward + backward = 3x forward): "
                 f"{human(exact)}")
    if config.topology in ("decoder", "encoder"):
        rule = closed_form_training_flops_per_token(config, n)
        lines.append(f"  rule 6N + 12·L·n·(h·d_k) with N = {matmul_parameters(config):,} parameters every token "
                     f"multiplies by (block matrices + LM-head matrix; embedding lookups, biases, norms "
                     f"excluded): {human(rule)} ({(rule - exact) / exact:+.2%} vs the table)")
    return "\n".join(lines)


def _table(args, config) -> int:
    from attnlab.cost.analytic import cost_table, dtype_name

    (b,) = _one(_int_list(args.batch, "batch"), "batch")
    n = _one(_int_list(args.seq, "seq"), "seq")[0] if args.seq is not None else None
    m = _one(_int_list(args.src_seq, "src-seq"), "src-seq")[0] if args.src_seq is not None else None
    dtype = dtype_name(args.dtype)
    modes = {"all": ["forward", "train", "decode_cached", "decode_uncached"], "forward": ["forward"],
             "train": ["train"], "decode_step": ["decode_cached", "decode_uncached"]}
    if args.mode not in modes:
        raise InputError(f"--mode={args.mode!r}: allowed {', '.join(modes)}")
    wanted = modes[args.mode]
    if config.topology not in ("decoder", "encoder-decoder"):
        if args.mode == "decode_step":
            raise InputError(f"--mode decode_step needs a decoder or encoder-decoder; this is a {config.topology}")
        wanted = [w for w in wanted if not w.startswith("decode")]
    tables = []
    for name in wanted:
        mode = "decode_step" if name.startswith("decode") else name
        tables.append(cost_table(config, b, n, m, dtype=dtype, mode=mode, cached=name != "decode_uncached"))
    for table in tables:
        print(table.render())
        print()
    t = tables[0]
    print(_summary(config, t.batch, t.seq, t.src_seq, dtype))
    if args.check:
        from attnlab.cost.check import flop_counter_check, render_checks

        checks = flop_counter_check(config, t.batch, t.seq, t.src_seq)
        print()
        print(render_checks(checks))
        return 0 if all(c.ok for c in checks) else 1
    return 0


def _one(values: list[int], name: str) -> list[int]:
    if len(values) != 1:
        raise InputError(f"--{name} takes one integer for the table (a list only with --measure)")
    return values


def around(n: int) -> list[int]:
    """The lengths timed for a single --seq n: n/8, n/4, n/2 and n (the distinct ones >= 2)."""
    lengths = sorted({n // 8, n // 4, n // 2, n} - {0, 1})
    if len(lengths) < 2:
        raise InputError(f"--seq {n} with --measure: a growth exponent needs at least two lengths and n={n} leaves "
                         "one; give n >= 4 or a comma-separated list such as --seq 32,64,128")
    return lengths


def _measure(args, config) -> int:
    import torch

    from attnlab.cost.analytic import dtype_name

    dtype = getattr(torch, dtype_name(args.dtype))
    (b,) = _one(_int_list(args.batch, "batch"), "batch")
    m = _one(_int_list(args.src_seq, "src-seq"), "src-seq")[0] if args.src_seq is not None else None
    seqs = _int_list(args.seq, "seq")
    if seqs is not None and len(seqs) == 1:
        seqs = around(seqs[0])
        print(f"--seq {args.seq} is one length; a growth exponent needs several: timing n in {seqs} "
              "(give a comma-separated list to choose them)", flush=True)
    if seqs is None:
        limit = config.seq_limit or max(DEFAULT_SWEEP)
        seqs = [n for n in (QUICK_SWEEP if args.quick else DEFAULT_SWEEP) if n <= limit]
    if args.budget <= 0:
        raise InputError(f"--budget={args.budget}: must be a positive number of seconds")
    from attnlab.threads import check_threads

    if args.threads <= 0:
        raise InputError(f"--threads={args.threads}: must be a positive integer")
    check_threads(args.threads, "--threads")  # a billion threads aborts inside libgomp: refused by name
    clock = args.clock or ("cpu" if args.threads == 1 else "wall")
    if clock not in ("cpu", "wall"):
        raise InputError(f"--clock={clock!r}: allowed cpu, wall")
    if clock == "cpu" and args.threads != 1:
        raise InputError("--clock cpu adds up the CPU time of every thread; use it with --threads 1")
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        return _sweep(args, config, dtype, b, m, seqs, clock)
    finally:
        torch.set_num_threads(threads)  # the caller's setting (tests call main() in-process)


def _sweep(args, config, dtype, b, m, seqs, clock) -> int:
    import torch

    from attnlab.cost import measure
    from attnlab.cost.analytic import dtype_name
    from attnlab.cost.peak import measured_peak_flops

    name = config.name or config.topology
    print(f"timing {name} ({config.topology}) on cpu, {dtype_name(args.dtype)}, b={b}, n in {seqs}, "
          f"{torch.get_num_threads()} threads, {clock} clock; best of repeats filling {args.budget}s per point",
          flush=True)
    peak = measured_peak_flops("cpu", dtype)
    print(f"measured matmul peak: {peak / 1e9:.1f} GFLOP/s", flush=True)
    points = measure.sweep(config, seqs, batch=b, src_seq=m, dtype=dtype, budget_s=args.budget, clock=clock,
                           progress=lambda p: print(f"  {p.series:<16} n={p.n:<6} {p.seconds * 1e3:10.3f} ms",
                                                    flush=True))
    print()
    print(measure.render(points, peak))
    paths = measure.plot(points, args.out, title=name)
    print()
    for path in paths:
        print(f"saved {path}")
    return 0


def run(args) -> int:
    config = resolve_config(args.model)
    if args.measure:
        return _measure(args, config)
    return _table(args, config)

