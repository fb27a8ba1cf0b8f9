"""HTTP route of the flow view: one token through one attention layer (compute.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.explorer.server.runner import run
from attnlab.explorer.views.experiments.flow import compute
from attnlab.explorer.views.experiments.requests import FlowRequest

router = APIRouter()


@router.post("/api/experiments/flow", summary="one token through one attention layer: per-head sum w.V, W_O, residual")
async def flow(req: FlowRequest, request: Request):
    registry = request.app.state.registry
    return await run(request, lambda: compute.attention_flow(registry.get(req.model), req.text, req.layer,
                                                             req.token, req.head))
