"""The argument checks the edits, the sweeps and the attribution grids share: an index, one sentence, a target.

Why its own module: the same three checks (with the same messages) guard attnlab.interventions and
attnlab.interventions.attribution / attnlab.interventions.logit_attribution, so a user reads one wording whichever entry
point they used.
"""

from __future__ import annotations

from torch import nn

from attnlab.errors import InputError


def checked_index(value, name: str, upper: int, what: str) -> int:
    """`value` if it is an int in [0, upper), else InputError naming `name` and what is allowed."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < upper:
        raise InputError(f"{name}={value!r}: allowed a {what} in [0, {upper})")
    return value


def check_one_sentence(model: nn.Module, ids, name: str = "ids") -> None:
    """`ids` are valid token ids of shape (1, seq): a sweep repeats its one sentence on the batch dimension."""
    model.check_ids(ids, name)
    if ids.shape[0] != 1:
        raise InputError(f"{name} has shape {tuple(ids.shape)}: a sweep takes one sentence, shape (1, seq); it "
                         "repeats it on the batch dimension itself")


def checked_target(model: nn.Module, target) -> int:
    """`target` if it is a token id of `model`'s vocabulary, else InputError."""
    return checked_index(target, "target", model.config.vocab_size, "token id")
