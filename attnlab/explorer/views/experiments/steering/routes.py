"""HTTP route of steering (compute.py): it computes under the server's `run` (a model slot, the queue limit) and
stops between decoding steps when the client leaves: the page aborts the previous request when the slider moves
on."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.errors import AttnlabError
from attnlab.explorer.server.common import Stop
from attnlab.explorer.server.runner import run
from attnlab.explorer.views.experiments.requests import SteerRequest, experiment_model
from attnlab.explorer.views.experiments.steering import compute

router = APIRouter()


class _Gone(AttnlabError):
    """The client left while the continuations were generated (the slider moved on): nobody reads the answer."""


@router.post("/api/experiments/steer", summary="a direction from two prompts added to the residual stream: "
             "greedy continuations plain and steered")
async def steer_route(req: SteerRequest, request: Request):
    stop = Stop()

    def gone() -> None:
        if stop.gone.is_set():
            raise _Gone("the client went away; the generation stopped")

    return await run(request, lambda: compute.steering(
        experiment_model(request, req.model, req.prompt, req.positive, req.negative), req.prompt, req.positive,
        req.negative, req.layer, req.alpha, req.tokens, stop=gone), stop=stop)
