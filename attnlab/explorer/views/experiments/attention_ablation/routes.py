"""HTTP route of attention vs ablation (compute.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.explorer.server.runner import run
from attnlab.explorer.views.experiments.attention_ablation import compute
from attnlab.explorer.views.experiments.requests import AttentionAblationRequest, experiment_model

router = APIRouter()


@router.post("/api/experiments/attention-ablation", summary="one head's attention weights beside the effect of "
             "knocking each weight out")
async def attention_ablation(req: AttentionAblationRequest, request: Request):
    return await run(request, lambda: compute.attention_vs_ablation(
        experiment_model(request, req.model, req.text), req.text, req.layer, req.head, position=req.position,
        target=req.target))
