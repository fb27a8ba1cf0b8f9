"""HTTP routes of the estimate-first sweeps (explorer/views/experiments/attribution/compute.py): "Which heads matter"
and patching answered at once by attribution patching, then the exact values of the top cells streamed.

Each answer is application/x-ndjson: {"estimate": {...}} first (the whole grid, marked "kind": "estimate"),
then {"exact": [[layer, x, exact, estimate], ...], "done", "total", "spearman", "disagree", "job"} per batched
forward, then {"result": {...}} (every checked cell and their agreement; "cancelled" says whether all ran).
The work holds one model slot through the runner (explorer/server/runner.py) like every computing route; POST
/api/experiments/cancel with the job id, or the client leaving, stops it at its next batch (the sweeps' job
table, explorer/server/jobs.py, so one Cancel button serves both).
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.explorer.server.jobs import job_stream
from attnlab.explorer.views.experiments import requests
from attnlab.explorer.views.experiments.attribution import compute as attribution_grid

router = APIRouter()


@router.post("/api/experiments/head-attribution", summary="which heads matter, estimated at once (attribution "
             "patching), then the exact drop of the top heads streamed")
async def head_attribution(req: requests.HeadAttributionRequest, request: Request):
    def work(job):
        lm = requests.experiment_model(request, req.model, req.text)
        return attribution_grid.heads(lm, req.text, position=req.position, target=req.target, mode=req.mode,
                                      top=req.top, extra=req.extra, emit=job.emit, cancelled=job.cancelled)

    return await job_stream(request, req.job, work)


@router.post("/api/experiments/patch-attribution", summary="the residual-stream patching grid estimated at once "
             "(attribution patching), then the exact values of the top cells streamed")
async def patch_attribution(req: requests.PatchAttributionRequest, request: Request):
    def work(job):
        lm = requests.experiment_model(request, req.model, req.clean, req.corrupted)
        return attribution_grid.patching(lm, req.clean, req.corrupted, position=req.position, target=req.target,
                                         top=req.top, extra=req.extra, emit=job.emit, cancelled=job.cancelled)

    return await job_stream(request, req.job, work)
