"""HTTP routes of the Vision tab (explorer/views/vision/compute.py, images from explorer/views/vision/images.py): the
sample images on offer, and a ViT's prediction with the attention of a patch, the rollout and the position similarity.
Computed through the runner like every router (a model slot, the queue limit, a worker thread)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.errors import AttnlabError
from attnlab.explorer import api
from attnlab.explorer.server.common import a_an
from attnlab.explorer.server.runner import model, run
from attnlab.explorer.server.schemas import VisionRequest
from attnlab.explorer.views.vision import images

router = APIRouter()


@router.get("/api/vision/samples", summary="MNIST digits and sample photos available here")
async def vision_samples(request: Request) -> dict:
    return await run(request, images.samples)


@router.post("/api/vision", summary="ViT prediction, attention of a patch, rollout, position similarity")
async def vision(request: Request, req: VisionRequest) -> dict:
    def work():
        lm = model(request, req.model)
        if lm.model.config.topology != "vit":
            raise AttnlabError(f"model {req.model!r} is {a_an(lm.model.config.topology)}; the Vision tab needs "
                               "a ViT")
        pixels, grey = images.to_pixels(lm.model.config, req.image)
        out = api.vision(lm, pixels, req.layer, req.head, req.patch)
        out["pixels"] = grey
        out["walk"] = api.vision_walk(lm, pixels, req.patch)  # the forward step by step, for the same patch
        return out

    return await run(request, work)
