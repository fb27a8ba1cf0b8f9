"""Recording of the numbers inside a forward pass, under stable dotted names.

    rec = attnlab.record(model, ids, names=["blocks.*.attn.weights"])        # one forward, a dict back
    with attnlab.recording.capture(model, names=["logits"]) as store:        # any code that runs `model`
        model.generate(ids, max_new_tokens=5)

Names (per block i; encoder-decoders prefix `encoder.` / `decoder.`, a DualEncoder its towers' attribute names):
  embed                      vectors entering block 0 (embeddings + positions, after any embedding norm)
  blocks.i.resid_pre         residual stream entering block i
  blocks.i.attn.q/k/v        (batch, heads, seq, d_head) after any rotary embedding (k/v per query head)
  blocks.i.attn.raw_scores   (batch, heads, q, k)  Q K^T * scale + B   (B: positions bias + mask)
  blocks.i.attn.weights      (batch, heads, q, k)  softmax of raw_scores
  blocks.i.attn.z            (batch, seq, heads, d_head)  each head's sum of w * V, before W_O
  blocks.i.attn.head_out     (batch, heads, seq, d_model) each head's z through its W_O slice
                             (sum over heads + W_O's bias = the attention output). Both opt-in: computed
                             only when a pattern ending in their leaf asks (`blocks.*.attn.z`), not by None
  blocks.i.resid_mid         after the self-attention sub-layer (residual added, post-LN norm applied)
  blocks.i.cross_attn.*      the same for cross-attention; blocks.i.resid_cross after it
  blocks.i.ffn.hidden        (batch, seq, d_ff) activations inside the feed-forward
  blocks.i.resid_post        leaving block i
  final                      after the final norm (the model's last hidden state)
  logits                     the head's output

Where a name comes from: a module's name is its dotted path in the model being recorded, `model.named_modules()`,
looked up by the Recorder when the module first reports something. Modules carry no name of their own. So the
name is right however the model was built (`Decoder(cfg)` directly, build_model, a loader, a tower inside a
DualEncoder), after a block is deep-copied or moved into another model, and when one module object sits in two
models that two threads record at once: each recording names it from its own root. The alternative, stamping
a `record_name` attribute on every module when a model is built, is wrong in each of those cases (a copied block
keeps its old index; a tower keeps the name it had before it was wrapped; two roots fight over one attribute).
A module outside the recorded model records nothing. A module reachable under two paths records under the
first one `named_modules()` yields.

`sites(model)` lists every name a model has. The same names are where attnlab.interventions edits values: each
module hands a value to `active().keep(...)` and continues with what it returns (a Probe: edits, then recording).

Where the recorder lives: a `contextvars.ContextVar`, so a recording belongs to the thread (or asyncio task)
that started it. Two threads recording at once each get exactly their own tensors, and a thread that is not
recording runs the plain forward even while another thread records the same model.

Cost when nothing records: each module calls `active()` once per forward (ContextVar.get, a C call of ~40 ns,
about what the module-global lookup it replaced cost) and takes the fast path when it answers None. A recording
walks the model once to map modules to paths (~20 us for 2 layers, well under a millisecond for 30: small next
to the forward it records); a module then asks once per (module, leaf) whether its name is wanted (cached), and
attention takes its explicit path only when one of its own tensors is wanted.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import nn

from attnlab.errors import InputError

_ACTIVE: ContextVar[Probe | None] = ContextVar("attnlab_probe", default=None)

_get = _ACTIVE.get


def active() -> Probe | None:
    """The Probe of the current thread/task (a recording, edits, or both), or None: the one accessor layers call
    per forward. Recording and interventions (attnlab.interventions) share it, so the cost of both when off is
    this one call per module per forward (~0.2 us).

    None while torch.compile traces: dynamo cannot trace ContextVar.get (each call would split the graph), so a
    compiled forward neither records nor takes edits. generate(compile=True) refuses to run while a Probe is
    active, rather than ignore it."""
    return None if torch.compiler.is_compiling() else _get()


class _StopForward(Exception):
    """Raised by a Recorder right after its `stop_after` name is kept; caught by the record() that owns it."""

    def __init__(self, recorder: Recorder):
        super().__init__(f"recording stopped after {recorder.stop_after!r}")
        self.recorder = recorder


OPT_IN = ("z", "head_out")
"""Leaves matched only by a pattern that ends with them (`blocks.*.attn.z`), never by `None` or `blocks.0.attn.*`:
per-head outputs cost heads x d_model per position, so a full recording does not compute them."""


def matches(name: str, patterns: list[str] | None) -> bool:
    """Whether `name` is one of `patterns` (globs; None = every name that is not OPT_IN)."""
    leaf = name.rpartition(".")[2]
    if leaf in OPT_IN:
        return patterns is not None and any(p.endswith(leaf) and fnmatch.fnmatchcase(name, p) for p in patterns)
    return patterns is None or any(fnmatch.fnmatchcase(name, p) for p in patterns)


class Named:
    """Names the tensors of one model: module -> dotted path, and (module, leaf) -> wanted full name or None.

    The base of a Recorder and of an intervention (attnlab.interventions.Editor); `wants` says which names.
    """

    def __init__(self, model: nn.Module):
        # module -> its dotted path in `model` ("" for the model itself); keyed by the module object (identity
        # hash, and the reference keeps it alive, so an id is never reused while this object exists)
        self._paths: dict[nn.Module, str] = {module: path for path, module in model.named_modules()}
        self._names: dict[tuple[nn.Module, str], str | None] = {}  # (module, leaf) -> wanted full name or None

    def wants(self, name: str) -> bool:
        raise NotImplementedError

    def name(self, module: nn.Module, leaf: str) -> str | None:
        """`module`'s path + "." + leaf when that name is wanted, else None (also for a module outside the model)."""
        key = (module, leaf)
        try:
            return self._names[key]
        except KeyError:
            pass
        path = self._paths.get(module)
        full = None if path is None else f"{path}.{leaf}" if path else leaf
        if full is not None and not self.wants(full):
            full = None
        self._names[key] = full
        return full


class Recorder(Named):
    """Collects, from the modules of `model`, the tensors whose names match `names` (glob patterns; None = all).

    `head` keeps only one head of the per-head tensors (q, k, v, raw_scores, weights, z, head_out).
    `stop_after` ends the forward pass (by an exception that record() catches) right after that name is kept.
    """

    def __init__(self, model: nn.Module, names: list[str] | str | None = None, head: int | None = None,
                 stop_after: str | None = None):
        super().__init__(model)
        if isinstance(names, str):
            names = [names]
        self.patterns = names
        self.head = head
        self.stop_after = stop_after
        self.store: dict[str, torch.Tensor] = {}

    def wants(self, name: str) -> bool:
        return matches(name, self.patterns)

    def keep(self, module: nn.Module, leaf: str, tensor: torch.Tensor, head_axis: int | None = None) -> None:
        """Store `tensor` as `module`'s `leaf` if wanted; a per-head tensor (heads on `head_axis`) obeys `head`."""
        name = self.name(module, leaf)
        if name is None:
            return
        if head_axis is not None and self.head is not None:
            tensor = tensor.narrow(head_axis, self.head, 1)
        self.store[name] = tensor.detach()
        if name == self.stop_after:
            raise _StopForward(self)


class Probe:
    """What the layers see through `active()`: the recording and the edits in effect in this context.

    A layer hands every named value to `keep`, which returns the value the forward continues with: the edits
    (innermost first) apply, then the recorder keeps the edited value. So a recording inside or around an
    intervention records what the model really computed under it. An inner recording hides an outer one (as
    before interventions existed); edits accumulate. Probes are immutable: entering a context makes a new one.
    """

    __slots__ = ("recorder", "editors", "_any")

    def __init__(self, recorder: Recorder | None, editors: tuple = ()):
        self.recorder, self.editors = recorder, editors
        self._any: dict[tuple[nn.Module, tuple[str, ...]], bool] = {}

    def wants_any(self, module: nn.Module, leaves: tuple[str, ...]) -> bool:
        """Whether any of `module`'s `leaves` is recorded or edited (attention: explicit path, per-head outputs)."""
        key = (module, leaves)
        hit = self._any.get(key)
        if hit is None:
            named = ((self.recorder,) if self.recorder is not None else ()) + self.editors
            hit = self._any[key] = any(n.name(module, leaf) is not None for n in named for leaf in leaves)
        return hit

    def keep(self, module: nn.Module, leaf: str, tensor: torch.Tensor, head_axis: int | None = None) -> torch.Tensor:
        """-> the value the forward continues with: `tensor` after any edits of this name; recorded if wanted."""
        for editor in self.editors:
            tensor = editor.edit(module, leaf, tensor)
        if self.recorder is not None:
            self.recorder.keep(module, leaf, tensor, head_axis)
        return tensor

    def span(self, end: int, mask: torch.Tensor | None = None) -> None:
        """A stack's forward covers columns up to `end` (past + seq), `mask` (batch, end) marking real tokens
        (None: no padding): position-selective edits read both to find each row's token positions."""
        for editor in self.editors:
            editor.end, editor.mask = end, mask


def sites(model: nn.Module) -> list[str]:
    """Every name `model` records or lets edit, in forward order (each module lists its own with `sites()`)."""
    names = []
    for path, module in model.named_modules():
        own = getattr(module, "sites", None)
        if callable(own) and not isinstance(module, type):
            names += [f"{path}.{leaf}" if path else leaf for leaf in own()]
    return names


def summarize(names: list[str]) -> str:
    """A short list of allowed names for an error: layer indices folded into '*' (blocks.*.attn.q)."""
    seen: dict[str, None] = {}
    for name in names:
        seen[re.sub(r"(?<=blocks\.)\d+(?=\.)", "*", name)] = None
    return ", ".join(seen)


@contextmanager
def activated(recorder: Recorder | None = None, editor=None) -> Iterator[None]:
    """Make a new Probe current for this thread/task: `recorder` replaces (hides) the current recording, `editor`
    (an attnlab.interventions.Editor) applies before the edits already in effect. Reset in `finally`, so nothing
    is left behind after an exception."""
    outer = _ACTIVE.get()
    if outer is not None:
        recorder = recorder if recorder is not None else outer.recorder if editor is not None else None
        editors = ((editor,) if editor is not None else ()) + outer.editors
    else:
        editors = (editor,) if editor is not None else ()
    token = _ACTIVE.set(Probe(recorder, editors))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


@contextmanager
def _activated(recorder: Recorder) -> Iterator[Recorder]:
    with activated(recorder):
        yield recorder


@contextmanager
def capture(model: nn.Module, names: list[str] | str | None = None,
            head: int | None = None) -> Iterator[dict[str, torch.Tensor]]:
    """`with capture(model, ["blocks.0.attn.*"]) as store: model(x)` fills `store` with what `model` computed.

    For code that runs the model itself (generation, a custom loop); names as in the module docstring. The
    recorder belongs to this thread/task only; an inner capture hides an outer one until it ends.
    """
    recorder = Recorder(model, names, head)
    with _activated(recorder):
        yield recorder.store


def record(model: nn.Module, *args, names: list[str] | str | None = None, head: int | None = None,
           stop_after: str | None = None, **kwargs) -> dict[str, torch.Tensor]:
    """Run `model(*args, **kwargs)` once (no grad) and return every recorded tensor (names: module docstring).

    `stop_after=NAME` ends the forward pass right after NAME is recorded: later layers and the head never run
    (what an explorer view of one layer needs). NAME must be one of the recorded names; the model's output is
    not produced, and a KV cache passed in is left part-filled.
    """
    n_heads = getattr(getattr(model, "config", None), "n_heads", None)
    if head is not None and (isinstance(head, bool) or not isinstance(head, int)
                             or not 0 <= head < (n_heads or head + 1)):
        raise InputError(f"head={head!r}: allowed a head index in [0, n_heads={n_heads}) or None for all heads")
    recorder = Recorder(model, names, head, stop_after)
    if stop_after is not None and not recorder.wants(stop_after):
        raise InputError(f"stop_after={stop_after!r} is not among names={recorder.patterns!r}: the forward would "
                         "never stop there; add it to names")
    with torch.no_grad(), _activated(recorder):
        try:
            model(*args, **kwargs)
        except _StopForward as stop:
            if stop.recorder is not recorder:  # an inner record()'s stop is that call's to catch
                raise
    if stop_after is not None and stop_after not in recorder.store:
        raise InputError(f"stop_after={stop_after!r} was never recorded: this model records no tensor of that name "
                         "(names look like 'blocks.0.attn.weights'; see attnlab.recording)")
    return dict(recorder.store)
