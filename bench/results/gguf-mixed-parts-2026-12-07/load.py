"""One GGUF file loaded by load_gguf in a fresh process: its QuantizedLinear modules (those inside QuantizedParts
counted), the float Linear modules left (matrices expanded to float32), resident memory growth over the load and
the load's CPU time. Run once per file and per checkout (before: PYTHONPATH at a copy of the older attnlab)."""

import gc
import os
import sys
import time

import torch

from attnlab.interop.gguf import load_gguf
from attnlab.layers.quantized import QuantizedLinear


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main(path: str) -> None:
    torch.set_num_threads(1)
    before = rss()
    start = time.process_time()
    model, _ = load_gguf(path)
    cpu = time.process_time() - start
    gc.collect()
    grown = rss() - before
    kept = sum(isinstance(m, QuantizedLinear) for m in model.modules())
    parts = sum(type(m).__name__ == "QuantizedParts" for m in model.modules())
    expanded = sum(isinstance(m, torch.nn.Linear) for m in model.modules())
    name = os.path.basename(path).split(".", 1)[1]
    print(f"{name:<12} QuantizedLinear {kept:4d} (in {parts} split matrices)  float Linear {expanded:3d}  "
          f"load +{grown / 1e6:6.0f} MB resident  load CPU {cpu:.2f} s")


if __name__ == "__main__":
    main(sys.argv[1])
