"""HTTP routes of the Experiments tab: attention finished (per head through W_O), the editable toy, the training
timeline, and nearby meanings.

An APIRouter the server includes (like explorer/lessons.py): each route validates its body with a schema whose
numbers have ranges, asks the app's registry for the model by id and runs the pure function (attention_flow,
toy, timeline, meanings) through the server's `run` (app.state.run): a model slot, the queue limit and the work
in a worker thread. Errors take the server's mapping (404 unknown model/layer/head, 400 bad input, 503 model
unavailable, 422 a value outside its range).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, Field

from attnlab.explorer import attention_flow, meanings, timeline, toy
from attnlab.explorer.common import MAX_TEXT_CHARS

router = APIRouter()
MAX_ID = 200
Matrix = list[list[float]]


class FlowRequest(BaseModel):
    model: str = Field(max_length=MAX_ID, description="model id from GET /api/models")
    text: str = Field(max_length=MAX_TEXT_CHARS)
    layer: int = Field(0, ge=0, le=10_000)
    token: int | None = Field(None, ge=0, le=100_000, description="query position (default: the last token)")
    head: int | None = Field(None, ge=0, le=10_000, description="head shown in detail (default: largest share)")


class ToyRequest(BaseModel):
    text: str = Field(max_length=400, description="a few of the toy's words")
    w_q: Matrix = Field(max_length=len(toy.DIMS), description="W_Q of one head: 8 rows x 4 numbers")
    w_k: Matrix = Field(max_length=len(toy.DIMS), description="W_K of one head: 8 rows x 4 numbers")
    query: int = Field(1, ge=0, le=100)


class NeighboursRequest(BaseModel):
    model: str = Field(max_length=MAX_ID)
    text: str = Field(max_length=200, description="a word (its first token is looked up)")
    k: int = Field(10, ge=1, le=meanings.MAX_NEIGHBOURS)


class SentencesRequest(BaseModel):
    model: str = Field("minilm", max_length=MAX_ID)
    sentences: list[Annotated[str, Field(max_length=2_000)]] | None = Field(None, max_length=meanings.MAX_SENTENCES,
                                        description="2 to 8 sentences (default: paraphrase pairs + unrelated)")


def _run(request: Request, work):
    return request.app.state.run(request, work)


@router.post("/api/experiments/flow", summary="one token through one attention layer: per-head sum w.V, W_O, residual")
async def flow(req: FlowRequest, request: Request):
    registry = request.app.state.registry
    return await _run(request, lambda: attention_flow.attention_flow(registry.get(req.model), req.text, req.layer,
                                                                     req.token, req.head))


@router.get("/api/experiments/toy/{head}", summary="the toy's W_Q and W_K of a head, as the page edits them")
async def toy_weights(request: Request, head: int = PathParam(ge=0, lt=len(toy.HEADS))):
    def work():
        w_q, w_k = toy.default_weights(head)
        return {"head": head, "name": toy.HEADS[head][0], "w_q": w_q, "w_k": w_k, "dims": list(toy.DIMS),
                "sentences": list(toy.SENTENCES)}

    return await _run(request, work)


@router.post("/api/experiments/toy", summary="the toy's scores and softmax with edited W_Q and W_K")
async def toy_scores(req: ToyRequest, request: Request):
    return await _run(request, lambda: toy.scores(req.text, req.w_q, req.w_k, req.query))


@router.get("/api/experiments/runs", summary="models served from a run folder that has a training probe")
async def runs(request: Request):
    registry = request.app.state.registry
    return await _run(request, lambda: {"runs": timeline.runs(list(registry.entries.values()))})


@router.get("/api/experiments/timeline/{model_id}", summary="a head's probed attention over training, with the loss")
async def timeline_view(request: Request, model_id: str = PathParam(max_length=MAX_ID),
                        layer: int = Query(0, ge=0, le=10_000),
                        head: int | None = Query(None, ge=0, le=10_000, description="default: the head whose "
                                                 "previous-token score ends highest (its layer too)")):
    registry = request.app.state.registry
    return await _run(request, lambda: timeline.timeline(registry.entry(model_id), layer, head))


@router.post("/api/experiments/neighbours", summary="nearest tokens in the input embedding table (cosine)")
async def neighbours(req: NeighboursRequest, request: Request):
    registry = request.app.state.registry
    return await _run(request, lambda: meanings.nearest_tokens(registry.get(req.model), req.text, req.k))


@router.post("/api/experiments/sentences", summary="cosines of mean-pooled sentence vectors (MiniLM)")
async def sentences(req: SentencesRequest, request: Request):
    registry = request.app.state.registry
    return await _run(request, lambda: meanings.sentence_similarity(registry.get(req.model), req.sentences))
