"""HTTP routes of the Attention tab (explorer/views/attention/compute.py): one layer and head in full, the thumbnails of
every layer x head, and the causal mask placed before vs after the softmax. Computed through the runner like every
router (a model slot, the queue limit, a worker thread)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.explorer import api
from attnlab.explorer.server.runner import model, run
from attnlab.explorer.server.schemas import AttentionRequest, GridRequest, MaskRequest

router = APIRouter()


@router.post("/api/attention", summary="one layer and head: raw scores, weights, Q and K")
async def attention(request: Request, req: AttentionRequest) -> dict:
    return await run(request, lambda: api.attention(model(request, req.model), req.text, req.layer, req.head,
                                                    req.part, req.target))


@router.post("/api/attention/grid", summary="thumbnails of every layer x head")
async def grid(request: Request, req: GridRequest) -> dict:
    return await run(request, lambda: api.attention_grid(model(request, req.model), req.text, req.part,
                                                         target=req.target))


@router.post("/api/mask-placement", summary="causal mask before vs after the softmax")
async def mask_placement(request: Request, req: MaskRequest) -> dict:
    return await run(request, lambda: api.mask_placement(model(request, req.model), req.text, req.layer, req.head))
