"""An allocation that fails inside a command becomes one line naming what to lower, not a traceback.

generate's estimate (check_memory) reads the memory free now; a ulimit or another process can still leave an
allocation short after it passed (`--beams 40000` under `ulimit -v 12000000` ended in a MemoryError traceback).
The errors here are raised by torch's own allocator and by attnlab's attention kernel, not written by hand.
"""

from __future__ import annotations

import pytest
import torch
from cli_calls import run_cli

from attnlab import cli


def _allocator_error():
    torch.empty(2**50, dtype=torch.uint8)  # 1 PiB: torch's CPU allocator refuses it (RuntimeError)


def _kernel_error():
    raise MemoryError("attnlab's causal attention kernel could not allocate its buffers")


@pytest.mark.parametrize("fail", [_allocator_error, _kernel_error])
@pytest.mark.parametrize(("argv", "lower"), [
    (["generate", "preset:gpt-char", "--ids", "1 2 3", "--beams", "4"], "--beams, --max-new-tokens"),
    (["train", "gpt-char", "steps=1"], "batch_size="),
])
def test_a_failed_allocation_is_one_line_naming_what_to_lower(monkeypatch, capsys, fail, argv, lower):
    monkeypatch.setattr(cli.COMMANDS[argv[0]], "run", lambda args: fail())
    code, _, err = run_cli(argv, capsys)
    assert code == 1
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"attnlab {argv[0]}: error: out of memory") and lower in err
    if fail is _allocator_error:
        assert "one allocation asked for 1,048,576.00 GiB" in err  # torch's 2**50 bytes


def test_another_runtime_error_is_not_called_memory(monkeypatch, capsys):
    def broken(args):
        raise RuntimeError("shape '[1, 4, 1, 4, 64]' is invalid for input of size 1024")

    monkeypatch.setattr(cli.COMMANDS["generate"], "run", broken)
    with pytest.raises(RuntimeError, match="is invalid"):
        run_cli(["generate", "preset:gpt-char", "--ids", "1 2 3"], capsys)
