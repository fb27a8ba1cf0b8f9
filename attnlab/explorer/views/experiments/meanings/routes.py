"""HTTP routes of nearby meanings: nearest tokens in the embedding table, sentence cosines."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.explorer.server.runner import run
from attnlab.explorer.views.experiments.meanings import compute
from attnlab.explorer.views.experiments.requests import NeighboursRequest, SentencesRequest

router = APIRouter()


@router.post("/api/experiments/neighbours", summary="nearest tokens in the input embedding table (cosine)")
async def neighbours(req: NeighboursRequest, request: Request):
    registry = request.app.state.registry
    return await run(request, lambda: compute.nearest_tokens(registry.get(req.model), req.text, req.k))


@router.post("/api/experiments/sentences", summary="cosines of mean-pooled sentence vectors (MiniLM)")
async def sentences(req: SentencesRequest, request: Request):
    registry = request.app.state.registry
    return await run(request, lambda: compute.sentence_similarity(registry.get(req.model), req.sentences))
