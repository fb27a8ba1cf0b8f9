"""The `attnlab` command: one module per subcommand, listed in COMMANDS below.

Each command module defines HELP (one line for `attnlab --help`), add_arguments(parser) and run(args) -> exit
code. The modules import nothing heavy at the top: torch and the model code load inside run(), so that
`attnlab --help` and every `attnlab CMD --help` answer at once. (`attnlab train --help` lists the recipes,
which does import the training code.)
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings

from attnlab.cli import bench, cost, explore, generate, models, params, process, train
from attnlab.errors import AttnlabError
from attnlab.spelling import did_you_mean

DESCRIPTION = ("attnlab: one clean Transformer for every topology. Count and cost a model, train a recipe, "
               "generate text, explore a model in the browser, benchmark against its peers.")

# name -> module; the order is the order of `attnlab --help`
COMMANDS = {
    "models": models,
    "params": params,
    "cost": cost,
    "train": train,
    "generate": generate,
    "explore": explore,
    "bench": bench,
}


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose description may be a function, called only when the help is printed (the recipe
    list of `attnlab train --help` needs the training code; building the parser must not), and that says "did you
    mean" for a mistyped command or option (argparse does so itself only from Python 3.14 on)."""

    def format_help(self) -> str:
        if callable(self.description):
            self.description = self.description()
        return super().format_help()

    def parse_known_args(self, args=None, namespace=None):
        # A mistyped option is refused first: else argparse reports a required option as missing ("one of
        # --prompt --ids is required" for `--promt`), which hides the typo. Only a command's own parser checks
        # (the top-level parser sees the command's options too).
        if args is not None and not any(isinstance(a, argparse._SubParsersAction) for a in self._actions):
            self._refuse_unknown_options(list(args))
        return super().parse_known_args(args, namespace)

    def _refuse_unknown_options(self, args: list[str]) -> None:
        known = [o for o in self._option_string_actions if o.startswith("--")]
        for arg in args:
            if arg == "--":
                return
            if not arg.startswith("--"):
                continue
            name = arg.split("=", 1)[0]
            if any(o.startswith(name) for o in known):  # exact, or an abbreviation argparse accepts
                continue
            self.error(f"unrecognized option {name}{did_you_mean(name, known)}")

    def error(self, message: str):
        choice = re.match(r"argument COMMAND: invalid choice: '([^']*)'", message)
        if choice:
            message += did_you_mean(choice.group(1), COMMANDS)
        super().error(message)


def version_line() -> str:
    """`attnlab --version`: attnlab's version, and torch's when it is installed (read without importing it)."""
    from importlib.metadata import PackageNotFoundError, version

    from attnlab import __version__

    try:
        torch = f", torch {version('torch')}"
    except PackageNotFoundError:
        torch = ""
    return f"attnlab {__version__}{torch}"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="attnlab", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=version_line())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for name, module in COMMANDS.items():
        p = sub.add_parser(name, help=module.HELP, description=module.HELP,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    return parser


def _one_line(command: str):
    """warnings.showwarning for a command: `attnlab CMD: warning: message` on one stderr line, like its errors
    (Python's own format adds the file, the line and the source line: noise to a person at a terminal)."""

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = " ".join(str(message).split())
        print(f"attnlab {command}: warning: {text}", file=file or sys.stderr, flush=True)

    return show


def main(argv: list[str] | None = None) -> int:
    """Run the command `argv` names; None: this process's own command line (the `attnlab` script, `python -m
    attnlab`), which ends the process: then its start-up and exit skip the garbage collector's passes, and a
    command that asks for it (process.QUICK) ends at once after its exit handlers (cli/process.py)."""
    own = argv is None
    process.OWN[0], process.QUICK[0] = own, False
    code = _run(argv)
    if own:
        process.end(code)
    return code


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # key=value pairs after options (argparse stops filling a nargs="*" positional at the first option)
        if not hasattr(args, "key_values") or any(x.startswith("-") for x in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.key_values = [*args.key_values, *extra]
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line(args.command)
            return args.run(args) or 0
    except AttnlabError as exc:
        print(f"attnlab {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (MemoryError, RuntimeError) as exc:
        if not out_of_memory(exc):
            raise
        print(f"attnlab {args.command}: error: {memory_line(args.command, exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): end quietly, as a shell pipeline expects
        _quiet_stdout()
        return 141  # 128 + SIGPIPE, what a C program killed by it reports


# what to lower when an allocation fails: an estimate (generate's check_memory) passed, yet the memory was not there
# (a ulimit, other processes, the allocator's own overhead)
LOWER = {
    "generate": "--beams, --max-new-tokens or the prompt's length",
    "train": "batch_size= (accum= keeps the global batch in smaller pieces), seq_len= or the model's size",
    "cost": "--batch or --seq",
}
_ALLOCATION = re.compile(r"can't allocate memory|cannot allocate memory|out of memory|failed to allocate", re.I)
_ASKED = re.compile(r"tried to allocate (\d+) bytes")


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is an allocation that failed: Python's MemoryError, or torch's RuntimeError whose message says
    it cannot allocate (DefaultCPUAllocator: can't allocate memory, CUDA out of memory)."""
    return isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError) and bool(_ALLOCATION.search(str(exc))))


def memory_line(command: str, exc: BaseException) -> str:
    """The one line a failed allocation becomes: what ran out, how much one allocation asked (when torch says),
    and what to lower for this command."""
    asked = _ASKED.search(str(exc))
    size = f" (one allocation asked for {int(asked.group(1)) / 2**30:,.2f} GiB)" if asked else ""
    where = "GPU" if "cuda" in str(exc).lower() else "memory"
    return (f"out of {where}{size}: lower {LOWER.get(command, 'the sizes it was given')}, or free memory "
            "(other programs, a ulimit) and run it again")


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's own flush at exit meets no closed pipe (which would
    print "Exception ignored ... BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):  # no real stdout (a test's capture): nothing to protect
        pass


if __name__ == "__main__":
    sys.exit(main())
