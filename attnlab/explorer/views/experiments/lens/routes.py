"""HTTP route of the logit lens (compute.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.explorer.server.runner import run
from attnlab.explorer.views.experiments.lens import compute
from attnlab.explorer.views.experiments.requests import LensRequest, experiment_model

router = APIRouter()


@router.post("/api/experiments/logit-lens", summary="the top-k tokens after the embeddings and after each block")
async def lens(req: LensRequest, request: Request):
    return await run(request, lambda: compute.logit_lens_top(experiment_model(request, req.model, req.text), req.text,
                                                             position=req.position, k=req.k,
                                                             target=req.target))
