"""HTTP routes of two Experiments views (explorer/components.py): patching by component (streamed like the
patch grid: progress lines, Cancel) and direct logit attribution. The server includes this router; errors take
its mapping (404 unknown model, 400 bad input, 422 a value outside its range or an unknown body field)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import Field

from attnlab.explorer import components
from attnlab.explorer.common import RequestBody
from attnlab.explorer.routes_experiments import (
    JOB_ID,
    MAX_ID,
    ExperimentText,
    Position,
    Target,
    _model,
    _sweep_stream,
)
from attnlab.explorer.runner import run

router = APIRouter()
Contrast = Field(None, ge=0, le=10_000_000, description="token id the answer is compared with (default: the "
                 "corrupted sentence's top prediction, else the clean one's second)")


class ComponentRequest(RequestBody):
    model: str = Field(max_length=MAX_ID)
    clean: ExperimentText
    corrupted: ExperimentText | None = Field(None, description="same token count; needed by mode 'resample'")
    mode: Literal["zero", "mean", "resample"] = "resample"
    method: Literal["attribution", "exact"] = "attribution"
    grids: list[Literal["attn", "mlp", "head"]] = Field(list(components.GRIDS), min_length=1, max_length=3)
    position: Position = None
    target: Target = None
    contrast: int | None = Contrast
    job: str | None = Field(None, pattern=JOB_ID)


class LogitAttributionRequest(RequestBody):
    model: str = Field(max_length=MAX_ID)
    text: ExperimentText
    position: Position = None
    target: Target = None
    contrast: int | None = Contrast


@router.post("/api/experiments/components", summary="patching by component: attention output, MLP output and "
             "each head replaced (zero, mean, resample), the change in the answer's logit difference")
async def component_patch(req: ComponentRequest, request: Request):
    def work(progress, cancelled):
        texts = (req.clean,) + ((req.corrupted,) if req.corrupted is not None else ())
        lm = _model(request, req.model, *texts)
        return components.component_grid(lm, req.clean, req.corrupted, mode=req.mode, method=req.method,
                                         grids=req.grids, position=req.position, target=req.target,
                                         contrast=req.contrast, progress=progress, cancelled=cancelled)

    return await _sweep_stream(request, req.job, work)


@router.post("/api/experiments/logit-attribution", summary="direct logit attribution: each head's and MLP's "
             "direct share of the answer's logit minus a contrast token's, with the sum check")
async def logit_attribution(req: LogitAttributionRequest, request: Request):
    return await run(request, lambda: components.logit_attribution(
        _model(request, req.model, req.text), req.text, position=req.position, target=req.target,
        contrast=req.contrast))
