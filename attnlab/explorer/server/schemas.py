"""The request schemas of the explorer's own views (architecture, attention, self-supervised, vision, generation,
cost) and LIMITS, the one table of the ranges their numbers may take.

Why one table: the schemas and the 422 messages (explorer/server/handlers.py) both read it, so a message always names
the range that was enforced. Every number has a range and every string a length, so a request outside them is
refused before any model loads. The Experiments views keep their schemas beside their routes
(explorer/views/experiments/requests.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path as PathParam
from fastapi import Query
from pydantic import Field

from attnlab.explorer.server import sessions
from attnlab.explorer.server.common import MAX_ID_CHARS, MAX_TEXT_CHARS, MAX_TOKENS, RequestBody

MAX_STREAM_STEPS = 64

# Every number a request can carry, with its allowed range (inclusive).
INT64 = (-(2**63), 2**63 - 1)
LIMITS: dict[str, tuple[float, float]] = {
    "V": (1, 1_000_000), "d": (1, 65_536), "N": (1, 256), "h": (1, 256), "L": (1, 1_000_000),
    "d_ff": (1, 262_144), "n": (1, 32_768), "cost_n": (1, 10**9), "layer": (0, 10_000), "head": (0, 10_000),
    "patch": (0, 100_000),
    "query": (0, MAX_TOKENS - 1), "key": (0, MAX_TOKENS - 1),
    "seed": INT64, "top_k": (0, 1_000_000), "temperature": (0.0, 10.0),
}


def _int(name: str, default: int, **kw) -> Any:
    lo, hi = LIMITS[name]
    return Field(default, ge=lo, le=hi, **kw)


class TextRequest(RequestBody):
    model: str = Field(max_length=MAX_ID_CHARS, description="model id from GET /api/models")
    text: str = Field(max_length=MAX_TEXT_CHARS, description="the sentence to run")


class AttentionRequest(TextRequest):
    layer: int = _int("layer", 0)
    head: int = _int("head", 0)
    part: str | None = Field(None, max_length=20, description="self; or encoder | decoder | cross for enc-decs")
    target: str | None = Field(None, max_length=MAX_TEXT_CHARS,
                               description="encoder-decoders: target text (default: greedy translation)")


class GridRequest(TextRequest):
    part: str | None = Field(None, max_length=20)
    target: str | None = Field(None, max_length=MAX_TEXT_CHARS)


class MaskRequest(TextRequest):
    layer: int = _int("layer", 0)
    head: int = _int("head", 0)


class DrawRequest(TextRequest):
    seed: int = _int("seed", 0, description="any 64-bit signed integer")


class MLMRequest(TextRequest):
    selections: list[dict[str, Any] | int] = Field(max_length=MAX_TOKENS,
                                                   description="positions, or {position, action, token_id}")


class VisionRequest(RequestBody):
    model: str = Field(max_length=MAX_ID_CHARS)
    image: dict[str, Any] = Field(description='{"mnist": i} | {"photo": name} | {"upload": base64 PNG/JPEG}')
    layer: int = _int("layer", 0)
    head: int = _int("head", 0)
    patch: int = _int("patch", 0, description="token index: 0 = [CLS], 1.. = patches in raster order")


class GenerateRequest(RequestBody):
    model: str = Field(max_length=MAX_ID_CHARS)
    prompt: str = Field(max_length=MAX_TEXT_CHARS)
    generated: list[int] = Field(default_factory=list, max_length=MAX_TOKENS,
                                 description="token ids sampled so far")
    temperature: float = Field(1.0, ge=0.0, le=10.0, allow_inf_nan=False, description="0 = greedy")
    top_k: int = _int("top_k", 0)
    top_p: float = Field(1.0, gt=0.0, le=1.0, allow_inf_nan=False)
    seed: int = _int("seed", 0, description="any 64-bit signed integer")
    session: str | None = Field(None, max_length=sessions.MAX_ID_CHARS,
                                description="the id the last step answered with: its KV cache is reused")
    compare: bool | None = Field(None, description="also time a full recompute (default: small models only)")


class GenerateStreamRequest(GenerateRequest):
    steps: int = Field(10, ge=1, le=MAX_STREAM_STEPS, description="steps to run, one JSON line each")


def _query(name: str) -> Any:
    lo, hi = LIMITS[name]
    return Annotated[int, Query(ge=lo, le=hi)]


# Query and path parameter types. A router imports the ones it uses by name: FastAPI resolves a route's string
# annotations in the router's own module.
QueryN, QueryV, QueryD, QueryNLayers, QueryH, QueryL = (_query(k) for k in ("n", "V", "d", "N", "h", "L"))
QueryCostN = _query("cost_n")  # wide: api.cost clamps n to the model's own limit and says so (a note, not a 422)
QueryDFF = Annotated[int | None, Query(ge=LIMITS["d_ff"][0], le=LIMITS["d_ff"][1])]
QueryText = Annotated[str | None, Query(max_length=MAX_TEXT_CHARS)]
ModelId = Annotated[str, PathParam(max_length=MAX_ID_CHARS)]
