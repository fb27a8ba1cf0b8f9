"""docs/experiments/efficient_attention_cost.py takes only the lengths its variants can: `--ns 384` reached the
multilevel variant and failed inside it (RuntimeError: shape '[1, 4, 1, 4, 64]' is invalid); now it is refused
in one line naming the lengths allowed, and the rule is checked against the variants themselves."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "docs" / "experiments"))
import efficient_attention_cost as eff  # noqa: E402

BLOCKED = [name for name in eff.VARIANTS if name not in ("full", "linear")]  # those two take any n


def _every_variant_runs(n: int) -> bool:
    q, k, v = (torch.randn(1, 1, n, 1, generator=torch.Generator().manual_seed(n)) for _ in range(3))
    try:
        for name in BLOCKED:
            assert eff.VARIANTS[name](q, k, v).shape == (1, 1, n, 1)
    except RuntimeError:  # a view or reshape the length does not fit
        return False
    return True


def test_the_lengths_allowed_are_those_every_variant_takes():
    ns = [8, 1000, *range(32, 64 * 26 + 1, 32)]  # up to 26 blocks: 1, 2, 3, 4, 8, 12, 16 fit, 6 or 24 do not
    taken = [n for n in ns if _every_variant_runs(n)]
    assert [n for n in ns if eff.fits(n)] == taken
    assert 384 not in taken and {256, 512, 768, 1024} <= set(taken)


def test_a_length_a_variant_cannot_take_is_refused_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["efficient_attention_cost.py", "--ns", "256", "384", "--rounds", "1"])
    monkeypatch.setattr(eff, "interleaved_cpu_seconds", lambda *a: pytest.fail("nothing runs before the check"))
    with pytest.raises(SystemExit) as exit_:
        eff.main()
    assert exit_.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("efficient_attention_cost.py: error: --ns 384: every variant needs n a multiple of 64")
    assert "allowed up to 4096: 64, 128, 192, 256, 512, 768, 1024, 2048, 3072, 4096" in last
