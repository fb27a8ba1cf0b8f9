"""HTTP routes of the self-supervised views (explorer/views/selfsup/compute.py): BERT's masked-language-model draw and
its predictions, and a causal model's next-token prediction at each position. Computed through the runner like every
router (a model slot, the queue limit, a worker thread)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.explorer import api
from attnlab.explorer.server.runner import model, run
from attnlab.explorer.server.schemas import DrawRequest, MLMRequest, TextRequest

router = APIRouter()


@router.post("/api/mlm/draw", summary="BERT's random 15% with its 80/10/10 split")
async def mlm_draw(request: Request, req: DrawRequest) -> dict:
    return await run(request, lambda: api.mlm_draw(model(request, req.model), req.text, req.seed))


@router.post("/api/mlm/predict", summary="top-5 predictions and loss at the selected positions")
async def mlm_predict(request: Request, req: MLMRequest) -> dict:
    return await run(request, lambda: api.mlm_predict(model(request, req.model), req.text, req.selections))


@router.post("/api/causal", summary="each position's next-token prediction and loss")
async def causal(request: Request, req: TextRequest) -> dict:
    return await run(request, lambda: api.causal_predictions(model(request, req.model), req.text))
