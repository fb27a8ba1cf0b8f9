"""HTTP routes for the teaching lessons (scaling by sqrt(d_k), the projection x W_Q -> Q worked out, and a dual
encoder's image-text similarity matrix).

An APIRouter the server includes: each route parses the request, asks the app's registry for the model and
calls the pure function in explorer.scaling through the server's `run` (app.state.run): a model slot, the queue
limit and the work in a worker thread, like every other route that computes. Errors take the server's own
mapping (404 unknown layer/head, 400 bad input, 503 model unavailable).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from attnlab.explorer import contrastive, scaling
from attnlab.explorer.common import MAX_TEXT_CHARS

router = APIRouter()


class HeadRequest(BaseModel):
    model: str = Field(description="model id from GET /api/models")
    text: str = Field(max_length=MAX_TEXT_CHARS)
    layer: int = 0
    head: int = 0
    part: str | None = Field(None, description="self; or encoder | decoder | cross for encoder-decoders")
    query: int | None = Field(None, description="query token index (default: the second token)")


class PairRequest(HeadRequest):
    query: int = 0
    key: int = 0


@router.post("/api/scaling", summary="raw scores with and without 1/sqrt(d_k): variance, histogram, softmax")
async def scaling_lesson(req: HeadRequest, request: Request):
    registry = request.app.state.registry
    return await request.app.state.run(request, lambda: scaling.scaling_statistics(
        registry.get(req.model), req.text, req.layer, req.head, req.part, req.query))


@router.post("/api/projection", summary="x W_Q -> Q and x W_K -> K for one query/key pair, then Q.K/sqrt(d_k)")
async def projection_lesson(req: PairRequest, request: Request):
    registry = request.app.state.registry
    return await request.app.state.run(request, lambda: scaling.projection_steps(
        registry.get(req.model), req.text, req.layer, req.head, req.query, req.key, req.part))


@router.get("/api/contrastive/{model_id}", summary="a dual encoder's image-text similarity matrix (clip-mnist)")
async def contrastive_lesson(model_id: str, request: Request, lang: str = "en"):
    registry = request.app.state.registry

    def work() -> dict:
        entry = registry.entry(model_id)
        registry.get(model_id)  # loads (or refuses with 503) like every other route
        return contrastive.for_entry(entry, lang)

    return await request.app.state.run(request, work)
