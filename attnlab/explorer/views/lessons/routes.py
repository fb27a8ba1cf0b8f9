"""HTTP routes for the teaching lessons (scaling by sqrt(d_k), the projection x W_Q -> Q worked out, and a dual
encoder's image-text similarity matrix).

An APIRouter the server includes: each route parses the request, asks the app's registry for the model and
calls the pure function in explorer.scaling through `run` (explorer/server/runner.py): a model slot, the queue
limit and the work in a worker thread, like every other route that computes. Errors take the server's own
mapping (404 unknown layer/head, 400 bad input, 503 model unavailable).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from pydantic import Field

from attnlab.explorer.server.common import MAX_ID_CHARS, MAX_INDEX, MAX_TEXT_CHARS, MAX_TOKENS, RequestBody
from attnlab.explorer.server.runner import run
from attnlab.explorer.views.lessons import contrastive, scaling

router = APIRouter()

# Every number has a range and every string a length, as in the server's own schemas: a request outside them is
# refused (422 naming the range) before any model loads, and no message ever quotes more than a few characters
# of what was sent. Within the schema, an index the model does not have gets the 404 that names its range.


class HeadRequest(RequestBody):
    model: str = Field(max_length=MAX_ID_CHARS, description="model id from GET /api/models")
    text: str = Field(max_length=MAX_TEXT_CHARS)
    layer: int = Field(0, ge=0, le=MAX_INDEX)
    head: int = Field(0, ge=0, le=MAX_INDEX)
    part: str | None = Field(None, max_length=20, description="self; or encoder | decoder | cross for encoder-decoders")
    query: int | None = Field(None, ge=0, le=MAX_TOKENS - 1,
                              description="query token index (default: the second token)")


class PairRequest(HeadRequest):
    query: int = Field(0, ge=0, le=MAX_TOKENS - 1)
    key: int = Field(0, ge=0, le=MAX_TOKENS - 1)


@router.post("/api/scaling", summary="raw scores with and without 1/sqrt(d_k): variance, histogram, softmax")
async def scaling_lesson(req: HeadRequest, request: Request):
    registry = request.app.state.registry
    return await run(request, lambda: scaling.scaling_statistics(
        registry.get(req.model), req.text, req.layer, req.head, req.part, req.query))


@router.post("/api/projection", summary="x W_Q -> Q and x W_K -> K for one query/key pair, then Q.K/sqrt(d_k)")
async def projection_lesson(req: PairRequest, request: Request):
    registry = request.app.state.registry
    return await run(request, lambda: scaling.projection_steps(
        registry.get(req.model), req.text, req.layer, req.head, req.query, req.key, req.part))


@router.get("/api/contrastive/{model_id}", summary="a dual encoder's image-text similarity matrix (clip-mnist)")
async def contrastive_lesson(model_id: Annotated[str, PathParam(max_length=MAX_ID_CHARS)], request: Request,
                             lang: Annotated[str, Query(max_length=10)] = "en"):
    registry = request.app.state.registry

    def work() -> dict:
        entry = registry.entry(model_id)
        registry.get(model_id)  # loads (or refuses with 503) like every other route
        return contrastive.for_entry(entry, lang)

    return await run(request, work)
