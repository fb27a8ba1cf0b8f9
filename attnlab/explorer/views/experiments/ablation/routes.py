"""HTTP route of ablation: switch heads off, the prediction before and after (compute.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.explorer.server.runner import run
from attnlab.explorer.views.experiments.ablation import compute
from attnlab.explorer.views.experiments.requests import AblationRequest, experiment_model

router = APIRouter()


@router.post("/api/experiments/ablation", summary="switch heads off: the prediction before and after")
async def ablation(req: AblationRequest, request: Request):
    return await run(request, lambda: compute.ablation(experiment_model(request, req.model, req.text), req.text,
                                                       req.heads, mode=req.mode, position=req.position,
                                                       target=req.target))
