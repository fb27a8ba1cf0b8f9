"""The command-line reference, docs/reference/cli.md, written from the `attnlab` parser itself: each command's
`--help` as argparse prints it, so the page cannot drift from the code. tests/test_cli_reference.py fails when the
committed page differs from what this script writes now; after changing an option or a help text, run

    python docs/build_cli.py
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "cli.md"

INTRO = """# Command line

Every `attnlab` command and its options, as `attnlab COMMAND --help` describes them (this page is written
from the parser by `python docs/build_cli.py`; a test fails when it is out of date). The tutorials and how-to
guides show the commands at work: [The first hour](../tutorials/first-hour.md) and the [how-to
guides](../howto/install.md).
"""


def _text(text: str) -> str:
    """Plain help text as Markdown: `*` outside code spans written as itself (V*d + L*d is not emphasis), `|` kept
    out of the table's columns."""
    pieces = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else p.replace("*", "\\*") for p in pieces).replace("|", "\\|")


def _names(action: argparse.Action) -> str:
    """How the option is written: `--seq N, -n N`; a positional argument by its name."""
    if not action.option_strings:
        name = action.metavar or action.dest
        return f"{name} ..." if action.nargs in ("*", "+") else name
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    value = action.metavar or action.dest.upper()
    return ", ".join(f"{option} {value}" for option in action.option_strings)


def _help(action: argparse.Action) -> str:
    """The option's help with argparse's %(default)s and the like filled in, on one table row."""
    text = (action.help or "") % {**vars(action), "prog": "attnlab"}
    if action.choices and "%(choices)" not in (action.help or "") and action.nargs != 0:
        text += f" (one of: {', '.join(map(str, action.choices))})"
    return _text(" ".join(text.split()))


def _section(name: str, parser: argparse.ArgumentParser, line: str) -> list[str]:
    description = parser.description() if callable(parser.description) else parser.description
    rows = ["| argument | what it does |", "|---|---|"]
    rows += [f"| `{_names(a)}` | {_help(a)} |" for a in parser._actions
             if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)]
    parts = [f"## attnlab {name}\n", f"{_text(line)}\n"]
    if description and description.strip() != line.strip():
        parts.append("```text\n" + description.strip("\n") + "\n```\n")
    if len(rows) > 2:
        parts.append("\n".join(rows) + "\n")
    if parser.epilog:
        parts.append("```text\n" + parser.epilog.strip("\n") + "\n```\n")
    return parts


def render() -> str:
    """The page's Markdown: one section per command, in `attnlab --help`'s order (argparse's own layout of the
    usage lines differs between Python versions; these tables do not)."""
    sys.path.insert(0, str(ROOT))
    from attnlab.cli import COMMANDS, build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.choices and set(a.choices) == set(COMMANDS)).choices
    parts = [INTRO, "| command | what it does |\n|---|---|\n" + "\n".join(
        f"| [`attnlab {name}`](#attnlab-{name}) | {_text(module.HELP)} |" for name, module in COMMANDS.items()) + "\n"]
    for name, module in COMMANDS.items():
        parts += _section(name, commands[name], module.HELP)
    return "\n".join(parts)


def main() -> None:
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(render())
    print(f"wrote {PAGE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
