"""HTTP routes of the toy: its weights per head, and the scores with the page's edits (compute.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi import Path as PathParam

from attnlab.explorer.server.runner import run
from attnlab.explorer.views.experiments.requests import ToyRequest
from attnlab.explorer.views.experiments.toy import compute

router = APIRouter()


@router.get("/api/experiments/toy/{head}", summary="the toy's W_Q and W_K of a head, as the page edits them")
async def toy_weights(request: Request, head: int = PathParam(ge=0, lt=len(compute.HEADS))):
    def work():
        w_q, w_k = compute.default_weights(head)
        return {"head": head, "name": compute.HEADS[head][0], "w_q": w_q, "w_k": w_k, "dims": list(compute.DIMS),
                "sentences": list(compute.SENTENCES)}

    return await run(request, work)


@router.post("/api/experiments/toy", summary="the toy's scores and softmax with edited W_Q and W_K")
async def toy_scores(req: ToyRequest, request: Request):
    return await run(request, lambda: compute.scores(req.text, req.w_q, req.w_k, req.query))
