"""docs/training.md's "Train from Python" runs as written: each code block of that section is executed in a fresh
folder (with a small corpus.txt for the recipe) and must train, save and load without an error."""

from __future__ import annotations

import re
from pathlib import Path

import attnlab
from attnlab.training import latest_checkpoint

DOC = Path(__file__).resolve().parents[2] / "docs" / "training.md"


def _blocks() -> list[str]:
    text = DOC.read_text()
    section = text.split("## Train from Python", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_quick_start_trains_a_recipe_and_a_task_of_your_own(tmp_path, monkeypatch, capsys):
    blocks = _blocks()
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus.txt").write_text("".join(f"line {i}: the quick brown fox jumps over the lazy dog.\n"
                                                 for i in range(400)))
    recipe: dict = {}
    exec(compile(blocks[0], "training.md: run_train", "exec"), recipe)
    assert recipe["result"]["step"] == 40 and recipe["result"]["eval"]["val_loss"] > 0
    assert isinstance(recipe["model"], attnlab.Decoder)
    own: dict = {}
    exec(compile(blocks[1], "training.md: Trainer", "exec"), own)
    losses = own["result"]["losses"]
    assert own["result"]["step"] == 30 and losses[-1] < losses[0]  # the counting task is learnt
    assert latest_checkpoint(tmp_path / "runs" / "counting") is not None
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].endswith("after 30 steps")
