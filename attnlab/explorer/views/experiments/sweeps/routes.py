"""HTTP routes of the exact sweeps (compute.py), streamed as application/x-ndjson with progress lines, and the
Cancel that stops a running sweep at its next batch (POST /api/experiments/cancel, or the client leaving; the
job table is explorer/server/jobs.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.explorer.server import jobs
from attnlab.explorer.views.experiments import requests
from attnlab.explorer.views.experiments.sweeps import compute

router = APIRouter()


@router.post("/api/experiments/head-sweep", summary="each head switched off in turn: the drop in log P(target), "
             "streamed with progress")
async def head_sweep(req: requests.SweepRequest, request: Request):
    def work(progress, cancelled):
        lm = requests.experiment_model(request, req.model, req.text)
        return compute.head_sweep_grid(lm, req.text, position=req.position, target=req.target, mode=req.mode,
                                       progress=progress, cancelled=cancelled)

    return await requests.sweep_stream(request, req.job, work)


@router.post("/api/experiments/patch", summary="causal tracing: clean residual stream copied into the corrupted "
             "run at each (layer, position), streamed with progress")
async def patch(req: requests.PatchRequest, request: Request):
    def work(progress, cancelled):
        lm = requests.experiment_model(request, req.model, req.clean, req.corrupted)
        return compute.residual_patch_grid(lm, req.clean, req.corrupted, position=req.position,
                                           target=req.target, site=req.site, progress=progress,
                                           cancelled=cancelled)

    return await requests.sweep_stream(request, req.job, work)


@router.post("/api/experiments/cancel", summary="stop a running head sweep or patch grid at its next batch")
async def cancel(req: requests.CancelRequest, request: Request):
    return jobs.cancel(request, req.job)  # only the job's own client may stop it
