"""HTTP routes of the estimate-first sweeps (explorer/attribution_grid.py): "Which heads matter" and patching
answered at once by attribution patching, then the exact values of the top cells streamed.

Each answer is application/x-ndjson: {"estimate": {...}} first (the whole grid, marked "kind": "estimate"),
then {"exact": [[layer, x, exact, estimate], ...], "done", "total", "spearman", "disagree", "job"} per batched
forward, then {"result": {...}} (every checked cell and their agreement; "cancelled" says whether all ran).
The work holds one model slot through the runner (explorer/runner.py) like every computing route; POST
/api/experiments/cancel with the job id, or the client leaving, stops it at its next batch (the sweeps' job
table, explorer/jobs.py, so one Cancel button serves both).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import Field

from attnlab.explorer import attribution_grid
from attnlab.explorer.common import RequestBody
from attnlab.explorer.jobs import job_stream
from attnlab.explorer.routes_experiments import (
    JOB_ID,
    MAX_ID,
    ExperimentText,
    Position,
    SweepRequest,
    Target,
    _model,
)

router = APIRouter()
Top = Field(attribution_grid.TOP, ge=0, le=attribution_grid.MAX_TOP,
            description="cells checked exactly: the largest by |estimate|")
Extra = Field(attribution_grid.EXTRA, ge=0, le=attribution_grid.MAX_EXTRA,
              description="more cells checked exactly, drawn at random (fixed seed)")


class HeadAttributionRequest(SweepRequest):
    """The exact sweep's request, plus how many cells the estimate hands to exact ablation."""

    top: int = Top
    extra: int = Extra


class PatchAttributionRequest(RequestBody):
    model: str = Field(max_length=MAX_ID)
    clean: ExperimentText
    corrupted: ExperimentText
    position: Position = None
    target: Target = None
    top: int = Top
    extra: int = Extra
    job: str | None = Field(None, pattern=JOB_ID)


@router.post("/api/experiments/head-attribution", summary="which heads matter, estimated at once (attribution "
             "patching), then the exact drop of the top heads streamed")
async def head_attribution(req: HeadAttributionRequest, request: Request):
    def work(job):
        lm = _model(request, req.model, req.text)
        return attribution_grid.heads(lm, req.text, position=req.position, target=req.target, mode=req.mode,
                                      top=req.top, extra=req.extra, emit=job.emit, cancelled=job.cancelled)

    return await job_stream(request, req.job, work)


@router.post("/api/experiments/patch-attribution", summary="the residual-stream patching grid estimated at once "
             "(attribution patching), then the exact values of the top cells streamed")
async def patch_attribution(req: PatchAttributionRequest, request: Request):
    def work(job):
        lm = _model(request, req.model, req.clean, req.corrupted)
        return attribution_grid.patching(lm, req.clean, req.corrupted, position=req.position, target=req.target,
                                         top=req.top, extra=req.extra, emit=job.emit, cancelled=job.cancelled)

    return await job_stream(request, req.job, work)
