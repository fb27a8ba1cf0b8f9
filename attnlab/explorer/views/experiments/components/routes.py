"""HTTP routes of two Experiments views (explorer/views/experiments/components/compute.py): patching by component
(streamed like the patch grid: progress lines, Cancel) and direct logit attribution. The server includes this router;
errors take its mapping (404 unknown model, 400 bad input, 422 a value outside its range or an unknown body field)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.explorer.server.runner import run
from attnlab.explorer.views.experiments import requests
from attnlab.explorer.views.experiments.components import compute as components

router = APIRouter()


@router.post("/api/experiments/components", summary="patching by component: attention output, MLP output and "
             "each head replaced (zero, mean, resample), the change in the answer's logit difference")
async def component_patch(req: requests.ComponentRequest, request: Request):
    def work(progress, cancelled):
        texts = (req.clean,) + ((req.corrupted,) if req.corrupted is not None else ())
        lm = requests.experiment_model(request, req.model, *texts)
        return components.component_grid(lm, req.clean, req.corrupted, mode=req.mode, method=req.method,
                                         grids=req.grids, position=req.position, target=req.target,
                                         contrast=req.contrast, progress=progress, cancelled=cancelled)

    return await requests.sweep_stream(request, req.job, work)


@router.post("/api/experiments/logit-attribution", summary="direct logit attribution: each head's and MLP's "
             "direct share of the answer's logit minus a contrast token's, with the sum check")
async def logit_attribution(req: requests.LogitAttributionRequest, request: Request):
    return await run(request, lambda: components.logit_attribution(
        requests.experiment_model(request, req.model, req.text), req.text, position=req.position, target=req.target,
        contrast=req.contrast))
