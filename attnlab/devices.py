"""Which device a command or a training run computes on: one spelling check and one resolution, shared.

`attnlab train device=...`, `attnlab generate --device` and `attnlab explore --device` accept the same names
(cpu, cuda, cuda:N, auto) and refuse the same mistakes with the same words, so they are checked here only.
The spelling check imports nothing heavy (settings files are checked before torch is needed); resolving a name
asks torch which GPUs exist, so `--device cuda` on a machine without one is refused before a model loads.
"""

from __future__ import annotations

import re

from attnlab.errors import AttnlabError, InputError

DEVICE_PATTERN = re.compile(r"cpu|auto|cuda(:\d+)?")
ALLOWED = "cpu, cuda, cuda:N (N a GPU index) or auto (cuda when available, else cpu)"


def _shown(name: str, label: str) -> str:
    """How a message names the value: `--device 'x'` for a flag, `device='x'` for a settings key."""
    return f"{label} {name!r}" if label.startswith("--") else f"{label}={name!r}"


def _fix(label: str) -> str:
    """The settings that always work, spelt as the user writes them."""
    sep = " " if label.startswith("--") else "="
    return f"use {label}{sep}cpu or {label}{sep}auto"


def check_device_name(name, label: str = "device", error: type[AttnlabError] = InputError) -> str:
    """`name` when it is spelt as a device attnlab accepts; else `error`, naming the value and what is allowed."""
    if not isinstance(name, str) or not DEVICE_PATTERN.fullmatch(name):
        raise error(f"{_shown(str(name), label)}: allowed {ALLOWED}")
    return name


def resolve_device(name, label: str = "device", error: type[AttnlabError] = InputError):
    """The torch.device `name` stands for: auto -> cuda when torch sees a GPU, else cpu. A CUDA name on a machine
    (or a torch build) without CUDA, or a GPU index beyond the GPUs present, is refused with one line saying why,
    instead of torch's own error from deep inside the first .to()."""
    import torch

    check_device_name(name, label, error)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            why = ("this torch build has no CUDA support" if torch.version.cuda is None
                   else "no GPU is visible to this process (driver, CUDA_VISIBLE_DEVICES)")
            raise error(f"{_shown(name, label)} but torch sees no CUDA device: {why}; {_fix(label)}")
        count = torch.cuda.device_count()
        index = int(name.split(":")[1]) if ":" in name else 0
        if index >= count:
            raise error(f"{_shown(name, label)} but this machine has {count} CUDA device(s): allowed cuda:0 .. "
                        f"cuda:{count - 1}, cpu or auto")
    return torch.device(name)
