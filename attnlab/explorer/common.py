"""What every explorer view shares: turning text into tokens within the limits, rounding numbers for
transport, recording one layer and stopping there, and the one lock every forward pass holds."""

from __future__ import annotations

import contextvars
import functools
import importlib
import sys
import threading
from contextlib import contextmanager
from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.registry import Loaded, UnknownItem
from attnlab.recording import Recorder

MAX_TOKENS = 512  # the explorer's own ceiling: an N x N heatmap beyond this is not readable anyway
MAX_TEXT_CHARS = 20_000
MASKED = -1e30  # raw scores at or below this are masked entries (the model fills them with finfo.min)


# ----------------------------------------------------------------------------------------------- helpers
def _recorder_is_per_context() -> bool:
    """Whether attnlab.recording keeps its active recorder in a contextvars.ContextVar (each thread and each
    request its own) rather than in one module-global variable shared by the whole process."""
    module = importlib.import_module("attnlab.recording")  # `from attnlab import recording` may be the function
    return any(isinstance(v, contextvars.ContextVar) for v in vars(module).values())


_MODEL_LOCK = threading.RLock()
_SERIALISE = not _recorder_is_per_context()


def exclusive(fn):
    """Run `fn` holding the api's lock while the recorder is process-global: then ONE recorder is active per
    process and any forward pass records into it, so a forward in one thread must never overlap a recording in
    another. With a per-context recorder (a ContextVar) every request records into its own, nothing else in
    these views is shared across requests, and model requests run concurrently (the server bounds how many)."""
    if not _SERIALISE:
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with _MODEL_LOCK:
            return fn(*args, **kwargs)

    return wrapper


class _Enough(Exception):
    """Raised once the last wanted tensor is recorded: the rest of the forward (later layers, the LM head) is
    skipped, which is most of the time of an attention request on a large-vocabulary model."""


class _RecordUntil(Recorder):
    def __init__(self, names: list[str], head: int | None, last: str):
        super().__init__(names, head)
        self.last = last

    def save(self, name: str, tensor, per_head: bool = False) -> None:
        super().save(name, tensor, per_head)
        if name == self.last:
            raise _Enough


@contextmanager
def record_until(names: list[str], last: str, head: int | None = None):
    """Like attnlab.recording(names, head), but the forward stops right after `last` is recorded."""
    module = sys.modules["attnlab.recording"]
    previous, rec = module._active, _RecordUntil(names, head, last)
    module._active = rec
    try:
        with torch.no_grad():
            yield rec.store
    except _Enough:
        pass
    finally:
        module._active = previous


def wrap(model, tokenizer=None, label: str | None = None, model_id: str = "model") -> Loaded:
    """A model built in Python as a `Loaded`, for the notebook view and tests."""
    model.eval()
    return Loaded(model_id, label or model.config.name or model.config.topology, model, tokenizer, kind="python")


def _round(t: torch.Tensor, decimals: int = 6) -> list:
    """Tensor -> nested lists with `decimals` places: short JSON, and the same numbers the page shows."""
    t = t.detach().double()
    return (torch.round(t * 10**decimals) / 10**decimals).tolist()


def _config(lm: Loaded):
    return lm.model.config


def _text_model(lm: Loaded):
    cfg = _config(lm)
    if cfg.topology == "vit":
        raise InputError(f"model {lm.id!r} is a vision transformer: it reads images, not text; use the Vision tab")
    return cfg


def token_limit(lm: Loaded) -> int:
    limit = _config(lm).seq_limit
    return min(limit, MAX_TOKENS) if limit else MAX_TOKENS


def encode(lm: Loaded, text: str, add_special_tokens: bool = True) -> tuple[list[int], list[str]]:
    """Text -> (ids, token strings), refusing text beyond the model's limit with the limit in the message.

    A checkpoint saved without a tokenizer reads characters: id = code point (unknown when >= vocab_size).
    """
    cfg = _text_model(lm)
    if not isinstance(text, str):
        raise InputError(f"text must be a string, got {type(text).__name__}")
    if len(text) > MAX_TEXT_CHARS:
        raise InputError(f"text is {len(text)} characters; the explorer accepts at most {MAX_TEXT_CHARS}")
    tok = lm.tokenizer
    if tok is not None:
        try:
            enc = tok.hf.encode(text, add_special_tokens=add_special_tokens)
        except BaseException as exc:  # a Rust panic (pyo3's PanicException) is a BaseException, not an Exception
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            raise InputError(f"the tokenizer of model {lm.id!r} failed on this text ({first}); try a shorter "
                             "or simpler text") from None
        ids, tokens = list(enc.ids), list(enc.tokens)
    else:
        ids = [ord(c) if ord(c) < cfg.vocab_size else 0 for c in text]
        tokens = list(text)
    if not ids:
        raise InputError("the text has no tokens; type at least one word")
    limit = token_limit(lm)
    if len(ids) > limit:
        raise InputError(f"the text is {len(ids)} tokens; model {lm.id!r} takes at most {limit} tokens here "
                         "(its position limit, capped at the explorer's 512): shorten it")
    return ids, tokens


def _special_flags(lm: Loaded, ids: list[int]) -> list[bool]:
    specials = lm.tokenizer.special_ids if lm.tokenizer is not None else set()
    return [i in specials for i in ids]


def _token_text(lm: Loaded, i: int) -> str:
    if lm.tokenizer is not None:
        return lm.tokenizer.id_to_token(int(i)) or f"<{i}>"
    return chr(i) if 32 <= i < 0x110000 else f"<{i}>"


def _check_index(what: str, value: Any, count: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
        raise UnknownItem(f"{what} {value!r} does not exist: this model has {count} ({what}s 0..{count - 1})")
    return value


def _parts(cfg) -> dict[str, tuple[str, int, bool]]:
    """attention part -> (recording prefix, number of layers, causal)."""
    if cfg.topology == "encoder-decoder":
        return {"encoder": ("encoder.blocks.{l}.attn", cfg.n_layers, False),
                "decoder": ("decoder.blocks.{l}.attn", cfg.decoder_layers, True),
                "cross": ("decoder.blocks.{l}.cross_attn", cfg.decoder_layers, False)}
    return {"self": ("blocks.{l}.attn", cfg.n_layers, cfg.topology == "decoder")}


def _default_part(cfg, part: str | None) -> str:
    parts = _parts(cfg)
    if part in (None, "", "self") and "self" in parts:
        return "self"
    if part in (None, ""):
        return "encoder"
    if part not in parts:
        raise UnknownItem(f"attention part {part!r} does not exist for a {cfg.topology}; allowed: {', '.join(parts)}")
    return part


def _param_count(module) -> int:
    """Distinct parameters of a module (a tied matrix counts once); 0 for None."""
    return sum(p.numel() for p in {id(p): p for p in module.parameters()}.values()) if module is not None else 0
