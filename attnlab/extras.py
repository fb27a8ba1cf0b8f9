"""Optional packages: imported where they are needed, with a one-line error naming the extra that installs them.

The core install (`pip install attnlab`: torch, safetensors, tokenizers, numpy) builds, loads attnlab and Hugging
Face checkpoints, trains and generates. The rest comes in extras (pyproject.toml):

    explorer  fastapi, uvicorn, pillow        `attnlab explore`, image uploads
    interop   gguf                            GGUF files (llama.cpp): load_gguf, save_gguf, SmolLM2
    data      num2words, pillow, scikit-learn  the translate-numbers recipe's data, image folders, sklearn digits
    plots     matplotlib                      loss.png, `compare` plots, `cost --measure` plots
    all       every extra above;  test: all + pytest, transformers and the browser tools

    gguf = require("gguf", "interop")           # the module, or MissingExtra: "... pip install 'attnlab[interop]'"
"""

from __future__ import annotations

import importlib
from types import ModuleType

from attnlab.errors import AttnlabError

# import name -> the PyPI distribution that provides it (where the two differ)
DISTRIBUTIONS = {"PIL": "pillow", "sklearn": "scikit-learn", "yaml": "pyyaml"}


class MissingExtra(AttnlabError, ImportError):
    """An optional package is not installed; the message names the extra that installs it."""


def require(module: str, extra: str, purpose: str | None = None) -> ModuleType:
    """Import `module` (e.g. "gguf", "PIL.Image", "matplotlib.pyplot"), or raise MissingExtra naming `extra`.

    Only the package itself being absent is turned into MissingExtra; an ImportError raised from inside an
    installed package (a broken install, a missing dependency of its own) propagates as it is.
    """
    top = module.split(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] != top:
            raise
        package = DISTRIBUTIONS.get(top, top)
        needs = f"{purpose} needs {package}" if purpose else f"{package} is needed"
        raise MissingExtra(f"{needs}, which is not installed: pip install 'attnlab[{extra}]'") from None
