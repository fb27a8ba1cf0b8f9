"""HTTP routes of the timeline: the run folders with a training probe, and one head over training."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam

from attnlab.explorer.server.runner import run
from attnlab.explorer.views.experiments.requests import MAX_ID
from attnlab.explorer.views.experiments.timeline import compute

router = APIRouter()


@router.get("/api/experiments/runs", summary="models served from a run folder that has a training probe")
async def runs(request: Request):
    registry = request.app.state.registry
    return await run(request, lambda: {"runs": compute.runs(list(registry.entries.values()))})


@router.get("/api/experiments/timeline/{model_id}", summary="a head's probed attention over training, with the loss")
async def timeline_view(request: Request, model_id: str = PathParam(max_length=MAX_ID),
                        layer: int = Query(0, ge=0, le=10_000),
                        head: int | None = Query(None, ge=0, le=10_000, description="default: the head whose "
                                                 "previous-token score ends highest (its layer too)")):
    registry = request.app.state.registry
    return await run(request, lambda: compute.timeline(registry.entry(model_id), layer, head))
