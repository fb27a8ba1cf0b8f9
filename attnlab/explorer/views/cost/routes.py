"""HTTP route of the Cost tab (explorer/views/cost/compute.py): parameters, FLOPs and memory for n tokens and how they
scale, optionally measured on this machine (a heavy job then: it times the model at several lengths, and stops between
lengths after the app's `measure_seconds` or when the client leaves)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.explorer import api
from attnlab.explorer.server.common import Stop
from attnlab.explorer.server.runner import model, run
from attnlab.explorer.server.schemas import ModelId, QueryCostN
from attnlab.explorer.views.cost.roofline import roofline as roofline_of

router = APIRouter()


@router.get("/api/cost/{model_id}", summary="parameters, FLOPs and memory for n tokens, and their scaling")
async def cost(request: Request, model_id: ModelId, n: QueryCostN = 128, measure: bool = False) -> dict:
    stop = Stop(request.app.state.measure_seconds) if measure else None
    return await run(request, lambda: api.cost(model(request, model_id), n, measure, stop=stop), stop=stop)


@router.get("/api/cost/{model_id}/roofline", summary="this machine's roofline with a prefill and a decoding step "
            "placed on it, the weights counted at the precision the model holds them")
async def roofline(request: Request, model_id: ModelId, n: QueryCostN = 128) -> dict:
    return await run(request, lambda: roofline_of(model(request, model_id), n))
