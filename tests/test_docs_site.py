"""The documentation site's link check (docs/site_hooks.py): a link from a page to a repository file outside docs/
that does not exist fails `mkdocs build --strict`; one that exists is copied into the site and the link follows it;
a broken link inside docs/ fails too (mkdocs' own check, switched on in mkdocs.yml). Each case builds a tiny site in
a temporary folder with the real hook (about a second each); the real site is built by .ci/run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[docs]')")

ROOT = Path(__file__).resolve().parent.parent
HOOK = ROOT / "docs" / "site_hooks.py"


def _build(tmp_path: Path, page: str) -> subprocess.CompletedProcess:
    """A repository in tmp_path: docs/index.md (the page), docs/other.md, src/model.py, bench/notes.md; built strict."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "bench").mkdir()
    (tmp_path / "docs" / "index.md").write_text(page)
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## A section\n")
    (tmp_path / "src" / "model.py").write_text("WIDTH = 64\n")
    (tmp_path / "bench" / "notes.md").write_text("# Notes\n\nBack to [the docs](../docs/other.md).\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\ndocs_dir: docs\nstrict: true\n"
        f"hooks:\n  - {HOOK.as_posix()}\n"
        "validation:\n  links:\n    not_found: warn\n    anchors: warn\n"
        "nav:\n  - index.md\n  - other.md\n")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(tmp_path / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], capture_output=True, text=True, env=env, timeout=120)


def test_a_link_to_a_repository_file_is_copied_and_followed(tmp_path):
    done = _build(tmp_path, "# Home\n\nThe [model](../src/model.py), the [notes](../bench/notes.md), "
                            "[a section](other.md#a-section).\n\n`a code span ](../src/missing.py) is not a link`\n")
    assert done.returncode == 0, done.stderr
    site = tmp_path / "site"
    assert (site / "_repo" / "src" / "model.py").read_text() == "WIDTH = 64\n"
    home = (site / "index.html").read_text()
    assert 'href="_repo/src/model.py"' in home
    assert 'href="_repo/bench/notes/"' in home
    # the copied page's link back into docs/ goes to the docs page, not to a copy
    assert 'href="../../../other/"' in (site / "_repo" / "bench" / "notes" / "index.html").read_text()


def test_a_broken_link_out_of_docs_fails_the_build(tmp_path):
    done = _build(tmp_path, "# Home\n\nThe [model](../src/modle.py).\n")
    assert done.returncode != 0
    assert "src/modle.py" in done.stderr and "does not exist in the repository" in done.stderr


def test_a_broken_link_inside_docs_fails_the_build(tmp_path):
    done = _build(tmp_path, "# Home\n\n[Missing](othr.md) and [an anchor](other.md#no-such-section).\n")
    assert done.returncode != 0
    assert "othr.md" in done.stderr and "no-such-section" in done.stderr
