"""docs/reference/cli.md is what `python docs/build_cli.py` writes from the parser now: an option added, renamed or
re-described without regenerating the page fails here (and the page names every command and option)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("build_cli", ROOT / "docs" / "build_cli.py")
build_cli = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build_cli)


def test_the_committed_cli_page_is_up_to_date():
    assert build_cli.PAGE.read_text() == build_cli.render(), \
        "docs/reference/cli.md is stale: run `python docs/build_cli.py` and commit the page"


def test_the_page_names_every_command_and_option():
    from attnlab.cli import COMMANDS, build_parser

    page = build_cli.PAGE.read_text()
    parser = build_parser()
    commands = next(a for a in parser._actions if a.choices and set(a.choices) == set(COMMANDS)).choices
    missing = [f"attnlab {name} {option}" for name, sub in commands.items() for action in sub._actions
               for option in action.option_strings if option not in ("-h", "--help") and f"`{option}" not in page
               and f", {option}" not in page]
    missing += [f"attnlab {name}" for name in COMMANDS if f"## attnlab {name}\n" not in page]
    assert missing == []
