"""Text rendering of cost tables: numbers with SI prefixes, one row per operation, totals last."""

from __future__ import annotations

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def human(x: float, unit: str = "") -> str:
    """1234567 -> '1.23 M' (SI prefixes, three significant digits)."""
    for scale, prefix in _PREFIXES:
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}".rstrip() if isinstance(x, float) else f"{x} {unit}".rstrip()


def _describe(table) -> str:
    c = table.config
    mode = table.mode
    if mode == "decode_step":
        mode = "one decoding step " + ("with the KV cache" if table.cached else "without a cache (prefix recomputed)")
    elif mode == "train":
        mode = "one training step (forward + backward = 3x forward)"
    else:
        mode = "one full forward"
    sizes = f"b={table.batch}, n={table.seq}" + (f", m={table.src_seq}" if table.src_seq is not None else "")
    shape = (f"d={c.d_model}, h={c.n_heads}, g={c.kv_heads} kv heads, d_k={c.head_dim}, d_ff={c.d_ff}, "
             f"V={c.vocab_size}, L={c.n_layers}"
             + (f"+{c.decoder_layers}" if c.topology == "encoder-decoder" else ""))
    return f"{c.name or c.topology} ({c.topology}; {shape})\n{mode}, {sizes}, {table.dtype}"


def render_table(table) -> str:
    header = ("stack", "operation", "xL", "FLOPs per layer", "FLOPs", "read", "written", "FLOP/B")
    lines = [[r.stack, r.name, str(r.layers), r.formula, human(r.flops), human(r.bytes_read, "B"),
              human(r.bytes_written, "B"), f"{r.intensity:.3g}"] for r in table.rows]
    total = ["", "total", "", "", human(table.flops), human(table.bytes_read, "B"), human(table.bytes_written, "B"),
             f"{table.intensity:.3g}"]
    mm = ["", "  of which matrix products", "", "", human(table.matmul_flops), "", "", ""]
    widths = [max(len(str(row[i])) for row in [header, *lines, total, mm]) for i in range(len(header))]
    right = {2, 4, 5, 6, 7}

    def fmt(row) -> str:
        return "  ".join(str(v).rjust(w) if i in right else str(v).ljust(w)
                         for i, (v, w) in enumerate(zip(row, widths, strict=True))).rstrip()

    rule = "-" * (sum(widths) + 2 * (len(widths) - 1))
    out = [_describe(table), "", fmt(header), rule, *map(fmt, lines), rule, fmt(total), fmt(mm)]
    return "\n".join(out)
