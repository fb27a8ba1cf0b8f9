"""The process that builds a compiled decoding step apart (generation/apart.py starts it; nobody runs it by hand):

    python -m attnlab.generation.step_builder --model SPEC [--quantize SCHEME] --rows R --threads T
        --kernel-threads K --dtype float32 --marker PATH

It lowers its own priority first (nice 19), loads the model as the command that started it did (attnlab.load, then
the same --quantize), readies it at the same thread counts (the step's key and inductor's loops depend on them),
builds the step (attnlab's C++ operators first where they are missing, then the step: loaded when another process
kept it meanwhile, else compiled) into the private compiled-step folder, and removes its marker, whatever
happened. Its output goes to the log beside the marker.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from attnlab.generation import apart

    apart.lower_priority()
    p = argparse.ArgumentParser(prog="python -m attnlab.generation.step_builder")
    p.add_argument("--model", required=True)
    p.add_argument("--quantize", default="none")
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--kernel-threads", type=int, required=True)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--marker", required=True)
    args = p.parse_args(argv)
    try:
        import torch

        from attnlab.generation import compiled
        from attnlab.loading import load
        from attnlab.quantize_options import apply

        model, _ = load(args.model)
        model = apply(model, args.quantize).eval()
        dtype = getattr(torch, args.dtype)
        built = compiled.build_here(model, (args.rows, args.threads, args.kernel_threads), dtype)
        print(f"[attnlab: the compiled decoding step {'is built' if built else 'could not be built'}]", flush=True)
        return 0 if built else 1
    finally:
        Path(args.marker).unlink(missing_ok=True)


if __name__ == "__main__":
    raise SystemExit(main())
