"""The command line called in-process the way a shell would, for tests that check its status and what it
printed: argparse's own refusals (bad int/float, unknown flag) raise SystemExit, which is read as the status."""

from __future__ import annotations

from attnlab.cli import main


def run_cli(argv: list, capsys) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `attnlab ARGV` (each argument passed through str())."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err
