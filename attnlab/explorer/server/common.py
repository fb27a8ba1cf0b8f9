"""What every explorer view shares: turning text into tokens within the limits and rounding numbers for
transport. There is no lock: each request records into its own recorder (attnlab.recording keeps it in a
ContextVar) and a forward pass changes no model state, so model requests run side by side (the server bounds
how many at once)."""

from __future__ import annotations

import threading
import time
import unicodedata
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from attnlab.errors import AttnlabError, InputError
from attnlab.explorer.server.registry import Loaded, UnknownItem
from attnlab.explorer.server.tokens import byte_level, display_texts, single_text, tokenizer_specials

MAX_TOKENS = 512  # the explorer's own ceiling: an N x N heatmap beyond this is not readable anyway
MAX_TEXT_CHARS = 20_000
MAX_ID_CHARS = 200  # a model id longer than this is refused by every schema (ids are short names)
MAX_INDEX = 10_000  # layers, heads: the schemas' ceiling; a model's own count is checked by check_index
MASKED = -1e30  # raw scores at or below this are masked entries (the model fills them with finfo.min)
PLAIN_BLANKS = frozenset(" \n\t")  # blanks the page names itself (␣ space, ↵ new line, ⇥ tab)


class OutOfRange(UnknownItem):
    """An index within the schema's range that this model or text does not have (layer 5 of a 2-layer model):
    answered 422 naming the model's own range, like every other value outside its allowed range."""


class RequestBody(BaseModel):
    """Base of every JSON request schema: a field it does not declare is refused (422 naming that field and the
    allowed ones) instead of being dropped, so a misspelt `sentence` never silently runs with the default."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = [k for k in data if k not in cls.model_fields]
            if unknown:
                names = ", ".join(shown(k) for k in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
                raise PydanticCustomError("extra_forbidden", "unknown field{s} {names}; allowed: {allowed}",
                                          {"s": "s" if len(unknown) > 1 else "", "names": names,
                                           "allowed": ", ".join(cls.model_fields)})
        return data


# ----------------------------------------------------------------------------------------------- helpers
def wrap(model, tokenizer=None, label: str | None = None, model_id: str = "model") -> Loaded:
    """A model built in Python as a `Loaded`, for the notebook view and tests."""
    model.eval()
    return Loaded(model_id, label or model.config.name or model.config.topology, model, tokenizer, kind="python")


def rounded(t: torch.Tensor, decimals: int = 6) -> list:
    """Tensor -> nested lists with `decimals` places: short JSON, and the same numbers the page shows."""
    t = t.detach().double()
    return (torch.round(t * 10**decimals) / 10**decimals).tolist()


def config_of(lm: Loaded):
    return lm.model.config


def text_model(lm: Loaded):
    cfg = config_of(lm)
    if cfg.topology == "vit":
        raise InputError(f"model {lm.id!r} is a vision transformer: it reads images, not text; use the Vision tab")
    return cfg


def token_limit(lm: Loaded) -> int:
    limit = config_of(lm).seq_limit
    return min(limit, MAX_TOKENS) if limit else MAX_TOKENS


def encode(lm: Loaded, text: str, add_special_tokens: bool = True) -> tuple[list[int], list[str]]:
    """Text -> (ids, token strings), refusing text beyond the model's limit with the limit in the message.

    A checkpoint saved without a tokenizer reads characters: id = code point (unknown when >= vocab_size).
    A byte-level BPE tokenizer's pieces (`Ġcat`, `æĹ` `¥`) come back as the text they decode to (" cat", "日",
    and tokens.CONTINUATION for a token that only continues a character); raw_pieces(lm, ids) gives the pieces.
    """
    cfg = text_model(lm)
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
        if byte_level(tok):
            tokens = display_texts(tokens, tokenizer_specials(tok))
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


def special_flags(lm: Loaded, ids: list[int]) -> list[bool]:
    specials = lm.tokenizer.special_ids if lm.tokenizer is not None else set()
    return [i in specials for i in ids]


def raw_pieces(lm: Loaded, ids: list[int]) -> list[str]:
    """The tokenizer's own piece for each id (`Ġcat`), for the page's hover text beside the decoded text."""
    return [lm.tokenizer.id_to_token(int(i)) or f"<{i}>" if lm.tokenizer is not None else
            chr(i) if 32 <= i < 0x110000 else f"<{i}>" for i in ids]


def token_texts(lm: Loaded, ids: list[int]) -> list[str]:
    """A sequence's tokens as the page shows them: byte-level pieces decoded together (a character split over
    several tokens on its first one, tokens.CONTINUATION on the rest), other tokenizers' pieces as they are."""
    if lm.tokenizer is not None and byte_level(lm.tokenizer):
        return display_texts(raw_pieces(lm, ids), tokenizer_specials(lm.tokenizer))
    return [token_text(lm, i) for i in ids]


def token_text(lm: Loaded, i: int) -> str:
    """One token as the label the page shows: a byte-level piece decoded on its own (tokens.single_text), else
    the piece; a label that would be blank or invisible (a no-break space) is written as its code points."""
    if lm.tokenizer is not None:
        piece = lm.tokenizer.id_to_token(int(i))
        if piece is None:
            return f"<{i}>"
        text = single_text(piece) if byte_level(lm.tokenizer) and piece not in tokenizer_specials(
            lm.tokenizer) else piece
        return visible_label(text)
    return visible_label(chr(i)) if 32 <= i < 0x110000 else f"<{i}>"


def visible_label(text: str) -> str:
    """`text` unchanged unless every character is invisible (whitespace, controls, format characters) and one
    of them is not a plain space, new line or tab (the page names those): then "<U+00A0>"-style code points,
    so a no-break space is not drawn as an empty label."""
    invisible = all(c.isspace() or unicodedata.category(c)[0] in "ZC" for c in text)
    if not text or not invisible or set(text) <= PLAIN_BLANKS:
        return text
    return "<" + " ".join(f"U+{ord(c):04X}" for c in text) + ">"


def check_index(what: str, value: Any, count: int, error: type[UnknownItem] = UnknownItem) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
        raise error(f"{what} {shown(value)} does not exist: this model has {count} ({what}s 0..{count - 1})")
    return value


def check_range(what: str, value: Any, count: int) -> int:
    """check_index for the Experiments views: an index beyond the model's (or text's) own range is OutOfRange
    (422 naming that range) in every one of them, whichever view is asked."""
    return check_index(what, value, count, OutOfRange)


def a_an(word: str) -> str:
    """The word with its article, as a message reads it: "an encoder", "an encoder-decoder", "a decoder"."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def shown(value: Any, limit: int = 40) -> str:
    """`value` as a message may quote it: repr, cut to `limit` characters (a 1 MB id is never echoed back)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"(an integer of {value.bit_length()} bits)"  # str() of a 5,000-digit int raises in Python 3.11+
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parts_of(cfg) -> dict[str, tuple[str, int, bool]]:
    """attention part -> (recording prefix, number of layers, causal)."""
    if cfg.topology == "encoder-decoder":
        return {"encoder": ("encoder.blocks.{l}.attn", cfg.n_layers, False),
                "decoder": ("decoder.blocks.{l}.attn", cfg.decoder_layers, True),
                "cross": ("decoder.blocks.{l}.cross_attn", cfg.decoder_layers, False)}
    return {"self": ("blocks.{l}.attn", cfg.n_layers, cfg.topology == "decoder")}


def head_site(lm: Loaded, part: str | None, layer: Any, head: Any):
    """One attention head of a text model, checked: -> (config, part, recording name of that attention (e.g.
    `decoder.blocks.2.attn`), causal, layer, head). Unknown parts, layers and heads are refused by name."""
    cfg = text_model(lm)
    part = default_part(cfg, part)
    prefix, n_layers, causal = parts_of(cfg)[part]
    layer = check_index("layer", layer, n_layers)
    head = check_index("head", head, cfg.n_heads)
    return cfg, part, prefix.format(l=layer), causal, layer, head


def default_part(cfg, part: str | None) -> str:
    parts = parts_of(cfg)
    if part in (None, "", "self") and "self" in parts:
        return "self"
    if part in (None, ""):
        return "encoder"
    if part not in parts:
        raise UnknownItem(f"attention part {part!r} does not exist for {a_an(cfg.topology)}; allowed: "
                          f"{', '.join(parts)}")
    return part


def param_count(module) -> int:
    """Distinct parameters of a module (a tied matrix counts once); 0 for None. A quantized matrix (codes and
    scales kept as buffers, attnlab.quantize) counts the weights it stands for, so a model shows the same count
    quantized or not."""
    if module is None:
        return 0
    from attnlab.layers.quantized import QuantizedEmbedding, QuantizedLinear

    counts = {id(p): p.numel() for p in module.parameters()}
    for m in module.modules():
        if isinstance(m, QuantizedLinear):
            counts[id(m.qweight)] = m.out_features * m.in_features
        elif isinstance(m, QuantizedEmbedding):  # its codes are its tied head's: the same key, counted once
            counts[id(m.qweight)] = m.num_embeddings * m.embedding_dim
    return sum(counts.values())


class Stopped(AttnlabError):
    """A cancellable computation stopped: its client went away or its deadline passed (answered 503)."""


class Stop:
    """Handed to cancellable work and called between its steps: raises Stopped once the client has gone or the
    deadline has passed. The event is set from the event loop; the check runs in the worker thread."""

    def __init__(self, seconds: float | None = None):
        self.gone = threading.Event()
        self.seconds = seconds
        self.deadline = float("inf")

    def start(self) -> None:
        """The clock starts when the work does (time spent waiting for a slot does not count)."""
        if self.seconds is not None:
            self.deadline = time.monotonic() + self.seconds

    def __call__(self, *_: Any) -> None:
        if self.gone.is_set():
            raise Stopped("the client went away; the measurement stopped")
        if time.monotonic() > self.deadline:
            raise Stopped(f"the measurement stopped after its {self.seconds:g} s limit (the machine is busy or "
                          "the model is large); the analytic figures need no measurement")
