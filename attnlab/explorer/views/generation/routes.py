"""HTTP routes of the Generation tab (explorer/views/generation/compute.py): one decoding step with the KV cache, timed
with and without it, and several steps streamed one JSON line each as they are computed. A page's KV cache lives in the
app's sessions (explorer/server/sessions.py) between its steps."""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from attnlab.errors import AttnlabError
from attnlab.explorer import api
from attnlab.explorer.server.common import Stop
from attnlab.explorer.server.guard import answer
from attnlab.explorer.server.handlers import status_of
from attnlab.explorer.server.runner import SlotStream, encode_json, model, run, runner, watch
from attnlab.explorer.server.schemas import GenerateRequest, GenerateStreamRequest

router = APIRouter()


@router.post("/api/generate/step", summary="one decoding step with the KV cache, timed with and without it")
async def generate_step(request: Request, req: GenerateRequest) -> dict:
    return await run(request, lambda: api.generation_step(
        model(request, req.model), req.prompt, req.generated, req.temperature, req.top_k, req.top_p, req.seed,
        session=req.session, sessions=request.app.state.sessions, compare=req.compare))


@router.post("/api/generate/stream", summary="several decoding steps, one JSON line per step as it is computed")
async def generate_stream(request: Request, req: GenerateStreamRequest) -> Response:
    """The steps of "10 steps" as application/x-ndjson: one line per step (the dict /api/generate/step
    answers), then {"done": true, "steps": k, "reason": ...}. The stream holds one model slot from its
    first step to its last and stops between steps when the client leaves (the page's Stop button aborts
    the fetch) or after `stream_seconds`. An error in the first step is an ordinary 4xx/5xx answer; a
    later one is a final line {"error": message, "status": code}."""
    slots, stream_seconds = runner(request), request.app.state.stream_seconds
    state = {"generated": list(req.generated), "session": req.session}

    def one_step() -> bytes:
        with slots.request_threads():
            r = api.generation_step(model(request, req.model), req.prompt, state["generated"], req.temperature,
                                    req.top_k, req.top_p, req.seed, session=state["session"],
                                    sessions=request.app.state.sessions, compare=req.compare)
        state.update(generated=r["generated"], session=r["session"], finished=r["finished"])
        return encode_json(r) + b"\n"

    stop = Stop(stream_seconds)
    watcher = asyncio.create_task(watch(request, stop))
    try:
        ticket = await slots.heavy_turn(request, watcher)  # a stream is a heavy job: it waits in the heavy queue
    finally:
        watcher.cancel()  # from here on the streaming response watches for the client leaving
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            slots.queue().leave(ticket)

    try:
        if stop.gone.is_set():
            release()
            return answer(503, "the client went away before its turn")
        stop.start()
        first = await run_in_threadpool(one_step)
    except BaseException:
        release()
        raise

    async def lines():
        done, reason = 1, "steps"
        try:
            yield first
            while done < req.steps and not state.get("finished"):
                if time.monotonic() > stop.deadline:
                    reason = "deadline"
                    yield encode_json({"error": f"stopped after {stream_seconds:g} s (the machine is busy or the "
                                       f"model is large); {done} of {req.steps} steps ran", "status": 503}) + b"\n"
                    break
                try:
                    yield await run_in_threadpool(one_step)
                except AttnlabError as exc:
                    reason = "error"
                    yield encode_json({"error": str(exc), "status": status_of(exc)}) + b"\n"
                    break
                done += 1
            if reason == "steps" and state.get("finished"):
                reason = "finished"
            yield encode_json({"done": True, "steps": done, "reason": reason, "session": state["session"]}) + b"\n"
        finally:
            release()  # also when the client left: the response cancels this generator after the running step

    return SlotStream(lines(), release, media_type="application/x-ndjson",
                      headers={"cache-control": "no-store", "x-accel-buffering": "no"})
