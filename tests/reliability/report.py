"""The case-count table of docs/reliability.md, computed from the tests' own definitions (nothing is run).

    python -m tests.reliability.report            # print the table
    python -m tests.reliability.report --write    # put it into docs/reliability.md, between its markers
    python -m tests.reliability.report --check    # exit 1 when the page differs

Why from the definitions: the count of cases a target gets is fixed by its test (hypothesis's max_examples,
derandomized; or the lists a loop walks), so the page can be checked in a second (test_report.py) instead of a
full run. How the cases *end* (refused or accepted) depends on the code under test and changes with every fix;
a run prints that split at its end (conftest.py), so the page says what each case must end as, not how many did.
Every `tally(...)` target in tests/reliability needs a row here: test_report.py fails on one that has none.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAGE = HERE.parents[1] / "docs" / "reliability.md"
BEGIN, END = "<!-- case-counts:begin (python -m tests.reliability.report --write) -->", "<!-- case-counts:end -->"


def _module(name: str):
    for folder in (HERE, HERE.parent):  # the tests import their shared helpers (`_cases`, tests/gguf_files.py, ...)
        if str(folder) not in sys.path:  # by their bare names, as pytest's rootdir-relative imports allow
            sys.path.insert(0, str(folder))
    return __import__(name)


def _hypothesis(module: str, test: str) -> Callable[[], int]:
    def count() -> int:
        return getattr(_module(module), test)._hypothesis_internal_use_settings.max_examples
    return count


def _traversals() -> int:
    """Each traversal name through every route that takes a name (read from the app, as the test does)."""
    from attnlab.explorer.server.app import create_app
    from attnlab.explorer.server.registry import build_registry

    abuse = _module("test_explorer_abuse")
    app = create_app(build_registry([], shipped=False, pretrained=False))
    return sum(len(list(abuse._requests_naming(app, name, Path("/root-of-the-test")))) for name in abuse.TRAVERSALS)


def _hf_keys() -> int:
    """Every key of the tiny encoder's Hugging Face config.json x the hostile values."""
    import json

    import torch

    import attnlab
    from attnlab.build import build_model

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = build_model(attnlab.presets["tiny-encoder"]).save(Path(tmp) / "bert", format="hf")
        keys = json.loads((path / "config.json").read_text())
    return len(keys) * len(_module("test_untrusted_files")._HF_VALUES)


@dataclass(frozen=True)
class Target:
    label: str  # as the page shows it
    tally: str  # the name the test tallies under (what a run prints)
    count: Callable[[], int]
    ends_as: str
    unit: str = ""


TARGETS = [
    Target("`ModelConfig.from_dict` (mutated JSON values)", "ModelConfig.from_dict (JSON values)",
           _hypothesis("test_config_fuzz", "test_any_field_value_is_refused_by_name_or_builds_a_finite_model"),
           "`ConfigError` naming a field, or a model that builds and gives finite logits"),
    Target("`ModelConfig(**kwargs)` + `build_model`", "ModelConfig(**kwargs) + build_model",
           _hypothesis("test_config_fuzz", "test_python_constructor_is_as_strict"),
           "`ConfigError` naming a field, or a model that builds and gives finite logits"),
    Target("`ModelConfig.from_dict` (any JSON document)", "ModelConfig.from_dict (any JSON)",
           _hypothesis("test_config_fuzz", "test_arbitrary_json_documents"), "`ConfigError`, or a valid config"),
    Target("token ids (dtype, shape, range)", "token ids (dtype, shape, range)",
           _hypothesis("test_inputs_fuzz", "test_token_ids_of_any_dtype_shape_and_range"),
           "`InputError` naming `input_ids`, or finite (batch, seq, vocab) logits"),
    Target("attention masks (0/1 patterns)", "attention masks (0/1 patterns)",
           _hypothesis("test_inputs_fuzz", "test_any_padding_pattern_gives_probability_rows"),
           "rows sum to 1, masked keys get exactly 0"),
    Target("malformed attention masks", "malformed attention masks",
           _hypothesis("test_inputs_fuzz", "test_malformed_masks_are_refused"),
           "`InputError` naming `attention_mask` (or a mask that is valid after all, and runs)"),
    Target("`generate` (prompts x settings)", "generate (prompts x settings)",
           _hypothesis("test_inputs_fuzz", "test_generation_settings_and_prompts"),
           "an attnlab error, or at most `max_new_tokens` in-vocabulary tokens"),
    Target("CLI `attnlab generate` arguments", "CLI `attnlab generate` arguments",
           _hypothesis("test_cli_fuzz", "test_generate_arguments_fuzz"),
           "exit 2 with a one-line error, or a run that exits 0"),
    Target("HTTP API payloads", "HTTP API payloads",
           _hypothesis("test_explorer_abuse", "test_http_payloads_get_a_clear_answer"),
           "200, or a 4xx/503 with a `detail`; never a 5xx"),
    Target("HTTP path-traversal attempts (every route that takes a name)", "HTTP path traversal attempts",
           _traversals, "4xx, the secret never in the answer, no stray file opened"),
    Target("HTTP requests under load (test-sized)", "HTTP requests under load (loopback)",
           lambda: _module("test_explorer_abuse").LOAD_CLIENTS * _module("test_explorer_abuse").LOAD_REQUESTS,
           "answered: 0 x 5xx, 0 lost valid answers"),
    Target("Hugging Face `config.json` (each key x 16 hostile values)", "Hugging Face config.json (key x value)",
           _hf_keys, "`CheckpointError` naming the checkpoint, or a model that loads"),
    Target("GGUF header sizes (6 keys x 0, 10**9, 2**32-1)", "GGUF header sizes",
           lambda: len(_module("test_untrusted_files").GGUF_KEYS) * len(_module("test_untrusted_files").GGUF_SIZES),
           "refused naming the file, or loaded (a context length allocates nothing up front)"),
    Target("SIGKILL + resume", "SIGKILL + resume", lambda: len(_module("test_crash_resume").KILL_MOMENTS),
           "`latest` loads after each kill; the resumed run equals the uninterrupted one bit for bit", " kills"),
    Target("non-finite loss", "non-finite loss", lambda: 1,
           "`NonFiniteLoss` naming the step; the last good checkpoint still loads", " run"),
]


def table() -> str:
    rows = ["| target | cases | each case ends as |", "|---|---:|---|"]
    total = 0
    for t in TARGETS:
        n = t.count()
        total += n
        rows.append(f"| {t.label} | {n:,}{t.unit} | {t.ends_as} |")
    rows.append(f"| total | {total:,} | |")
    return "\n".join(rows)


def page_table(text: str | None = None) -> str:
    """The table as the page has it now (between the markers)."""
    text = PAGE.read_text() if text is None else text
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{PAGE} has no {BEGIN!r} ... {END!r} block")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"replace the table in {PAGE.name}")
    parser.add_argument("--check", action="store_true", help="exit 1 when the page's table differs")
    args = parser.parse_args(argv)
    new = table()
    if args.write:
        text = PAGE.read_text()
        before, rest = text.split(BEGIN, 1)
        PAGE.write_text(before + BEGIN + "\n" + new + "\n" + END + rest.split(END, 1)[1])
        print(f"wrote the case-count table into {PAGE}")
    elif args.check:
        if page_table() != new:
            print(f"{PAGE.name}'s case-count table is out of date: run python -m tests.reliability.report --write")
            return 1
        print("docs/reliability.md's case-count table is up to date")
    else:
        print(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
