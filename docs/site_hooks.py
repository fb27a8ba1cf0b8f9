"""mkdocs hook (mkdocs.yml: `hooks:`): the pages link to files of the repository outside docs/ (bench/RESULTS.md,
a log under bench/results/, a module of attnlab/), which mkdocs neither checks nor serves.

Why a hook: a link on GitHub and a link in the built site should both land, and a broken one should fail
`mkdocs build --strict` instead of reaching a reader. So each relative link that leaves docs/ is resolved against the
repository: a target that does not exist is a warning (strict turns it into a failed build); one that exists is
copied into the site under `_repo/<its repository path>` and the link rewritten to the copy. A copied Markdown file
becomes a page whose own links are treated the same way (a link back into docs/ goes to the docs page); a folder
becomes a page listing its files. Links inside docs/ are left to mkdocs' own check.

It also builds the API reference (docs/api/, pdoc HTML from the docstrings, `python docs/build_api.py`) when it is
missing, so the reference page's link to it holds in a fresh clone.
"""

from __future__ import annotations

import logging
import posixpath
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.repo_links")

COPIES = "_repo"  # where the site keeps the repository files the pages link to
# an inline link or image target: ](target) or ](<target> "title")
INLINE = re.compile(r"\]\(\s*<?(?P<target>[^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(?P<target>\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


def _prose_spans(markdown: str) -> list[tuple[int, int]]:
    """(start, end) of the text outside fenced code blocks: a path in a code example is not a link."""
    spans, start, fence, offset = [], 0, None, 0
    for line in markdown.splitlines(keepends=True):
        opened = FENCE.match(line)
        if fence is None and opened:
            spans.append((start, offset))
            fence = opened[1][0] * len(opened[1])
        elif fence is not None and line.strip().startswith(fence) and set(line.strip()) == {fence[0]}:
            fence, start = None, offset + len(line)
        offset += len(line)
    if fence is None:
        spans.append((start, len(markdown)))
    return spans


def _links(markdown: str):
    """Each relative link target in the prose (not in code): (start, end, target) with the target's offsets."""
    for lo, hi in _prose_spans(markdown):
        prose = CODE_SPAN.sub(lambda m: " " * len(m[0]), markdown[lo:hi])  # same length: offsets stay true
        for pattern in (INLINE, REFERENCE):
            for m in pattern.finditer(prose):
                target = m["target"]
                if re.match(r"^[a-zA-Z][\w+.-]*:", target) or target.startswith(("#", "/")):
                    continue  # a URL, mailto:, an anchor on the same page, a site-absolute path
                yield lo + m.start("target"), lo + m.end("target"), target


def _dirs(config) -> tuple[Path, Path]:
    docs = Path(config["docs_dir"]).resolve()
    return docs, docs.parent


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _origin(file: File, docs: Path, root: Path) -> Path:
    """Where a page's source sits in the repository (a copied page: its original; a folder listing: the folder)."""
    if file.src_uri.startswith(COPIES + "/"):
        return root / file.src_uri[len(COPIES) + 1:]
    return Path(file.abs_src_path).resolve() if file.abs_src_path else docs / file.src_uri


def _resolve(origin: Path, target: str) -> tuple[Path, str]:
    path, _, fragment = target.partition("#")
    return (origin.parent / unquote(path)).resolve(), ("#" + fragment if fragment else "")


def _listing(folder: Path, root: Path) -> str:
    """A page for a linked folder: its files, each linked to its copy."""
    rows = [f"# {folder.relative_to(root).as_posix()}/", ""]
    for child in sorted(folder.iterdir()):
        if child.is_file() and not child.name.startswith("."):
            rows.append(f"- [{child.name}]({child.name})")
        elif child.is_dir() and not child.name.startswith((".", "__")):
            rows.append(f"- {child.name}/")
    return "\n".join(rows) + "\n"


def on_config(config):
    docs, _ = _dirs(config)
    builder = docs / "build_api.py"
    if builder.is_file() and not (docs / "api" / "index.html").is_file():
        log.info("building the API reference (python docs/build_api.py)")
        done = subprocess.run([sys.executable, str(builder)], capture_output=True, text=True)
        if done.returncode != 0:
            log.warning("the API reference (docs/api/) could not be built: %s; pip install -e '.[docs]'",
                        (done.stderr.strip().splitlines() or ["no output"])[-1])
    return config


def on_files(files, config):
    """Add a copy of every repository file that a page (or a copied page, in turn) links to outside docs/."""
    docs, root = _dirs(config)
    queue = [(Path(f.abs_src_path).resolve(), f.src_uri) for f in files.documentation_pages() if f.abs_src_path]
    added: set[str] = set()
    while queue:
        origin, _ = queue.pop()
        for _, _, target in _links(origin.read_text(encoding="utf-8")):
            resolved, _ = _resolve(origin, target)
            if _inside(resolved, docs) or not _inside(resolved, root) or not resolved.exists():
                continue  # docs/ is mkdocs' own; a missing target is reported on its page
            relative = resolved.relative_to(root).as_posix()
            if relative in added:
                continue
            added.add(relative)
            if resolved.is_dir():
                files.append(File.generated(config, f"{COPIES}/{relative}/index.md", content=_listing(resolved, root)))
                for child in resolved.iterdir():
                    child_relative = child.relative_to(root).as_posix()
                    if child.is_file() and not child.name.startswith(".") and child_relative not in added:
                        added.add(child_relative)
                        files.append(File.generated(config, f"{COPIES}/{child_relative}", abs_src_path=str(child)))
            else:
                files.append(File.generated(config, f"{COPIES}/{relative}", abs_src_path=str(resolved)))
                if resolved.suffix == ".md":
                    queue.append((resolved, relative))
    return files


def on_page_markdown(markdown, page, config, files):
    """Check each link that leaves docs/ (or comes from a copied page) and point it at the file in the site."""
    docs, root = _dirs(config)
    origin = _origin(page.file, docs, root)
    copied = not _inside(origin, docs)
    here = posixpath.dirname(page.file.src_uri)
    pieces, last = [], 0
    for start, end, target in sorted(_links(markdown)):
        resolved, fragment = _resolve(origin, target)
        if _inside(resolved, docs) and not copied:
            continue
        if not _inside(resolved, root):
            log.warning("Doc file '%s' links to '%s', outside the repository", page.file.src_uri, target)
            continue
        if not resolved.exists():
            log.warning("Doc file '%s' links to '%s', which does not exist in the repository (%s)",
                        page.file.src_uri, target, resolved.relative_to(root).as_posix())
            continue
        if _inside(resolved, docs):
            site = resolved.relative_to(docs).as_posix()
        else:
            site = f"{COPIES}/{resolved.relative_to(root).as_posix()}" + ("/index.md" if resolved.is_dir() else "")
        pieces += [markdown[last:start], posixpath.relpath(site, here or ".") + fragment]
        last = end
    return "".join(pieces) + markdown[last:]
