"""HTTP route of "Show the code" (compute.py writes the snippets)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import Field

from attnlab.explorer.server.common import RequestBody
from attnlab.explorer.server.runner import run
from attnlab.explorer.views.experiments.code.compute import snippet

router = APIRouter()


class CodeRequest(RequestBody):
    path: str = Field(max_length=200, description="the API path the view called, e.g. /api/experiments/ablation")
    body: dict[str, Any] = Field(default_factory=dict, description="the JSON body the view sent")


@router.post("/api/experiments/code", summary="the attnlab Python that gives a view's numbers for its request")
async def code(req: CodeRequest, request: Request):
    registry = request.app.state.registry
    return await run(request, lambda: snippet(registry, req.path, req.body))

