"""HTTP routes of the Architecture tab (explorer/views/architecture/compute.py): the models on offer and each one's
shape, the blocks and shapes for n tokens, the parameter calculator, the famous models, the inference walk-through
and the forward pass the learner watches (views/architecture/forward_pass.py).

Like every router: parse the request (explorer/server/schemas.py), compute through the runner (a model slot, the queue
limit, a worker thread), return the pure function's dict from explorer.api.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import Field

from attnlab.explorer import api
from attnlab.explorer.server.runner import model, run
from attnlab.explorer.server.schemas import (
    LIMITS,
    ModelId,
    QueryD,
    QueryDFF,
    QueryH,
    QueryL,
    QueryN,
    QueryNLayers,
    QueryText,
    QueryV,
    TextRequest,
)

router = APIRouter()


class ForwardRequest(TextRequest):
    layer: int = Field(0, ge=LIMITS["layer"][0], le=LIMITS["layer"][1], description="block shown inside (0-based)")
    head: int = Field(0, ge=LIMITS["head"][0], le=LIMITS["head"][1], description="head shown inside (0-based)")
    part: str | None = Field(None, max_length=20, description="encoder-decoders: encoder | decoder (default)")


@router.get("/api/models", summary="models on offer (loaded lazily on first use)")
def models(request: Request) -> dict:
    registry = request.app.state.registry
    return {"models": api.list_models(registry), "default": registry.default_id()}


@router.get("/api/models/{model_id}", summary="a model's shape and what the tabs can show for it")
async def model_info(request: Request, model_id: ModelId) -> dict:
    return await run(request, lambda: api.describe(model(request, model_id)))


@router.get("/api/architecture/{model_id}", summary="blocks, shapes for n tokens and parameter counts")
async def architecture(request: Request, model_id: ModelId, n: QueryN = 8, text: QueryText = None) -> dict:
    return await run(request, lambda: api.architecture(model(request, model_id), n, text))


@router.get("/api/params", summary="closed form V*d + L*d + N*12*d^2 beside the exact count")
async def params(request: Request, V: QueryV = 30522, d: QueryD = 768, N: QueryNLayers = 12,  # noqa: N803
                 h: QueryH = 12, L: QueryL = 512, d_ff: QueryDFF = None) -> dict:  # noqa: N803
    return await run(request, lambda: api.parameter_calculator(V, d, N, h, L, d_ff))


@router.get("/api/famous", summary="the seeds' table of famous models, counted by attnlab")
async def famous(request: Request) -> list:
    return await run(request, api.famous_models)


@router.post("/api/walkthrough", summary="the inference walk-through of the seeds, run on this model")
async def walkthrough(request: Request, req: TextRequest) -> dict:
    return await run(request, lambda: api.walkthrough(model(request, req.model), req.text))


@router.post("/api/architecture/forward", summary="one forward of the text, stage by stage: model, block, head")
async def forward(request: Request, req: ForwardRequest) -> dict:
    return await run(request, lambda: api.forward_pass(model(request, req.model), req.text, req.layer, req.head,
                                                       req.part))
