"""The command line: any argument list gets either a result or a one-line error with exit status 2, never a
Python traceback. Runs `attnlab.cli.main` in-process (no subprocess start-up per case)."""

from __future__ import annotations

import pytest
from _cases import cases, tally
from hypothesis import given
from hypothesis import strategies as st

from attnlab.cli import main

pytestmark = pytest.mark.timeout(120)


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refuses unknown flags and bad types itself, with status 2
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, words", [
    (["params", "nope"], ["nope", "preset"]),
    (["params", "/etc/passwd"], ["not valid JSON"]),
    (["params", "/"], ["config.json"]),
    (["train", "nope"], ["unknown recipe", "recipes:"]),
    (["train", "gpt-char", "steps=abc"], ["steps", "integer"]),
    (["train", "gpt-char", "bogus=1"], ["bogus", "valid keys"]),
    (["train", "gpt-char", "lr=-1"], ["lr"]),
    (["generate", "tiny-decoder", "--ids", "1 2 x"], ["ids"]),
    (["generate", "tiny-decoder", "--ids", "1 2 99999"], ["vocab_size"]),
    (["generate", "tiny-decoder", "--ids", "1 2", "--max-new-tokens", "-1"], ["max_new_tokens"]),
    (["generate", "tiny-decoder", "--ids", "1 2", "--temperature", "nan"], ["temperature"]),
    (["generate", "tiny-decoder", "--ids", "1 2", "--top-p", "2"], ["top_p"]),
    (["generate", "tiny-encoder", "--ids", "1 2"], ["Decoder"]),
    # numbers a person can type: refused in one line before anything is allocated (issue 23.4)
    (["generate", "tiny-decoder", "--ids", "1 2", "--max-new-tokens", "1000000000000"],
     ["max_new_tokens=1,000,000,000,000", "GiB", "free", "use max_new_tokens <="]),
    (["generate", "tiny-decoder", "--ids", "1 2", "--max-new-tokens", str(10**40)], ["max_new_tokens", "GiB"]),
    (["generate", "tiny-decoder", "--ids", "1 2", "--beams", "1000000000"], ["num_beams=1,000,000,000", "fewer beams"]),
    (["generate", "tiny-t5", "--ids", "1 2", "--beams", "1000000000"], ["num_beams=1,000,000,000", "GiB"]),
    (["generate", "tiny-decoder", "--ids", "1 2", "--threads", "1000000000"], ["--threads=1000000000", "up to"]),
    (["generate", "tiny-decoder", "--ids", "1 2", "--seed", str(2**64)], ["seed", "2^64"]),
])
def test_bad_invocations_exit_2_with_a_message(argv, words, capsys):
    code, _, err = run(argv, capsys)
    assert code == 2, (argv, code, err)
    assert "Traceback" not in err and "error" in err
    assert all(w in err for w in words), err
    lines = err.strip().splitlines()  # notes and warnings may come first; the error is one line, the last
    assert lines[-1].startswith(f"attnlab {argv[0]}: error: ") and sum(": error: " in x for x in lines) == 1, err


flags = st.sampled_from(["--ids", "--prompt", "--max-new-tokens", "--temperature", "--top-k", "--top-p", "--beams",
                         "--seed", "--stop", "--no-cache", "--threads"])
# large numbers too: each must be refused in one line, or fit (a huge --max-new-tokens is cut to 3 below)
words = st.one_of(st.sampled_from(["1 2 3", "0", "-1", "2", "nan", "inf", "1e309", "abc", "", "../../etc/passwd",
                                   "999999", "0.5", "3", "1000000000", "1000000000000", str(10**30)]),
                  st.text(max_size=6))


@cases(100)
@given(model=st.sampled_from(["tiny-decoder", "tiny-t5", "tiny-encoder", "nope", "/nonexistent", "tiny-vit"]),
       rest=st.lists(st.one_of(flags, words), max_size=7), with_ids=st.booleans())
def test_generate_arguments_fuzz(model, rest, with_ids, capsys):
    if with_ids and "--ids" not in rest and "--prompt" not in rest:
        rest = ["--ids", "1 2 3", *rest]
    if "--max-new-tokens" in rest:  # keep any accepted run short (a huge one is refused: tested above)
        i = rest.index("--max-new-tokens")
        if i + 1 < len(rest) and rest[i + 1].lstrip("-").isdigit() and 3 < int(rest[i + 1]) < 10**11:
            rest[i + 1] = "3"
    if "--beams" in rest:  # a million beams of a tiny model may fit in memory, and then take minutes
        i = rest.index("--beams")
        if i + 1 < len(rest) and rest[i + 1].isdigit() and 3 < int(rest[i + 1]) < 10**9:
            rest[i + 1] = "3"
    argv = ["generate", model, *rest, "--max-new-tokens", "3"] if "--max-new-tokens" not in rest else \
        ["generate", model, *rest]
    code, out, err = run(argv, capsys)
    assert "Traceback" not in err, err
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        assert "error" in err
    tally("CLI `attnlab generate` arguments", "ok" if code == 0 else "refused")
