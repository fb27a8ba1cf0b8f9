"""HTTP route of the tour's story (compute.py): the model by id, the sentence checked like every experiment's."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam

from attnlab.explorer.server.common import MAX_ID_CHARS
from attnlab.explorer.server.runner import run
from attnlab.explorer.views.tour import compute

router = APIRouter()


@router.get("/api/tour/{model_id}", summary="the tour's story on one model and sentence: the answer, and the head "
            "whose removal lowers its probability most (estimated, then checked exactly)")
async def tour_story(request: Request, model_id: str = PathParam(max_length=MAX_ID_CHARS),
                     text: str = Query(max_length=1_000, description="the sentence the whole tour follows")):
    registry = request.app.state.registry
    return await run(request, lambda: compute.story(registry.get(model_id), text))
