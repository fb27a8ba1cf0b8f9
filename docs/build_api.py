"""Build attnlab's API reference (HTML) from its docstrings with pdoc; any warning fails the build.

    pip install 'attnlab[docs]'            # pdoc
    python docs/build_api.py               # -> docs/api/index.html (open it in a browser); --out DIR elsewhere

The reference covers `attnlab` (every name in attnlab.__all__: presets, build_model, load, generate, record,
quantize, the model classes and errors) and the modules a user calls directly (MODULES). pdoc warns about a name
in __all__ it cannot resolve, a module it cannot import and a broken cross-reference; CI (.ci/run) runs this script
and a warning is an error there, as it is here. tests/test_api_docs.py checks that every public name has a
docstring and a place in the output.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = ["attnlab", "attnlab.config", "attnlab.extras", "attnlab.generation",
           "attnlab.quantization", "attnlab.data.tokenizers", "attnlab.interop", "attnlab.interop.gguf",
           "attnlab.training"]


def build(out: Path) -> list[str]:
    """Render MODULES into `out`; returns the warnings pdoc (or an import) raised, as lines."""
    import pdoc
    import pdoc.render

    import attnlab

    for name in attnlab.__all__:  # the lazily imported names (PEP 562) become real attributes pdoc can inspect
        getattr(attnlab, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.render.configure(docformat="markdown", show_source=False, footer_text="attnlab API reference")
        pdoc.pdoc(*MODULES, output_directory=out)
    return [f"{w.category.__name__}: {w.message}" for w in caught]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "api", help="output folder (default docs/api)")
    args = parser.parse_args(argv)
    problems = build(args.out)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print(f"docs/build_api.py: {len(problems)} warning(s); the API reference must build without any",
              file=sys.stderr)
        return 1
    print(f"API reference: {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
