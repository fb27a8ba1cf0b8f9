"""The API reference (docs/build_api.py, pdoc) builds without a warning and covers every name in attnlab.__all__,
each with a docstring."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

import attnlab

pdoc_doc = pytest.importorskip("pdoc.doc", reason="pdoc absent: pip install 'attnlab[docs]'")
ROOT = Path(__file__).resolve().parent.parent
for _name in attnlab.__all__:  # the lazily imported names (PEP 562) become attributes pdoc inspects, as in the build
    getattr(attnlab, _name)


def _builder():
    spec = importlib.util.spec_from_file_location("build_api", ROOT / "docs" / "build_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def docstring(name: str) -> str:
    """The docstring pdoc shows for attnlab.<name> (a re-exported variable's comes from its own module's page)."""
    page = pdoc_doc.Module(attnlab)
    found = page.get(name)
    if found is None:  # a submodule listed in __all__ (attnlab.recording)
        return pdoc_doc.Module(importlib.import_module(f"attnlab.{name}")).docstring
    if isinstance(found, pdoc_doc.Variable) and not found.docstring:
        module, qualname = found.taken_from
        return pdoc_doc.Module(importlib.import_module(module)).get(qualname).docstring
    return found.docstring


def test_every_public_name_has_a_docstring():
    missing = [name for name in attnlab.__all__ if len(docstring(name).strip()) < 20]
    assert missing == [], f"public names without a docstring: {missing}"


def test_reference_builds_without_warnings_and_lists_every_public_name(tmp_path):
    problems = _builder().build(tmp_path)
    assert problems == [], problems
    page = (tmp_path / "attnlab.html").read_text()
    anchors = set(re.findall(r'id="([A-Za-z_]+)"', page))
    absent = [n for n in attnlab.__all__ if n not in anchors and not (tmp_path / "attnlab" / f"{n}.html").is_file()]
    assert absent == [], f"names of attnlab.__all__ missing from the reference: {absent}"
    assert "Load a model and its tokenizer" in page  # a docstring, rendered
    assert (tmp_path / "attnlab" / "interop" / "gguf.html").is_file()
