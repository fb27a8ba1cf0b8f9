"""HTTP routes of the estimate-first sweeps (explorer/attribution_grid.py): "Which heads matter" and patching
answered at once by attribution patching, then the exact values of the top cells streamed.

Each answer is application/x-ndjson: {"estimate": {...}} first (the whole grid, marked "kind": "estimate"),
then {"exact": [[layer, x, exact, estimate], ...], "done", "total", "spearman", "disagree", "job"} per batched
forward, then {"result": {...}} (every checked cell and their agreement; "cancelled" says whether all ran).
The work holds one model slot through the server's `run` (app.state.run) like every computing route; POST
/api/experiments/cancel with the job id, or the client leaving, stops it at its next batch (the sweeps' own
job table, so one Cancel button serves both).
"""

from __future__ import annotations

import asyncio
import json
import uuid

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import Field

from attnlab.errors import AttnlabError, InputError
from attnlab.explorer import attribution_grid
from attnlab.explorer.common import RequestBody
from attnlab.explorer.routes_experiments import (
    JOB_ID,
    MAX_ID,
    ExperimentText,
    Position,
    SweepRequest,
    Target,
    _Job,
    _jobs,
    _model,
)

router = APIRouter()
Top = Field(attribution_grid.TOP, ge=0, le=attribution_grid.MAX_TOP,
            description="cells checked exactly: the largest by |estimate|")
Extra = Field(attribution_grid.EXTRA, ge=0, le=attribution_grid.MAX_EXTRA,
              description="more cells checked exactly, drawn at random (fixed seed)")


class HeadAttributionRequest(SweepRequest):
    """The exact sweep's request, plus how many cells the estimate hands to exact ablation."""

    top: int = Top
    extra: int = Extra


class PatchAttributionRequest(RequestBody):
    model: str = Field(max_length=MAX_ID)
    clean: ExperimentText
    corrupted: ExperimentText
    position: Position = None
    target: Target = None
    top: int = Top
    extra: int = Extra
    job: str | None = Field(None, pattern=JOB_ID)


class _LineJob(_Job):
    """A running estimate-first sweep: the cancel flag of _Job, and whole lines (dicts) for the stream."""

    def emit(self, line: dict) -> None:  # worker thread
        self.forwards += 1
        self.loop.call_soon_threadsafe(self.progress.put_nowait, line)


async def _line_stream(request: Request, job_id: str | None, work) -> Response:
    """work(emit, cancelled) -> dict, run under the server's `run`; each emitted dict is one line, the answer the
    last ({"result": ...}). Bad input found before the first line is an ordinary 4xx."""
    jobs = _jobs(request)
    job_id = job_id or uuid.uuid4().hex
    if job_id in jobs:
        raise InputError(f"job {job_id!r} is already running; choose another id")
    job = _LineJob(asyncio.get_running_loop())
    jobs[job_id] = job
    task = asyncio.ensure_future(request.app.state.run(request, lambda: work(job.emit, job.cancelled)))

    def finish(_=None) -> None:
        job.stop.set()
        jobs.pop(job_id, None)

    task.add_done_callback(finish)
    first = asyncio.ensure_future(job.progress.get())
    try:
        await asyncio.wait({task, first}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        job.stop.set()
        first.cancel()
        raise
    if task.done() and not first.done():
        first.cancel()
        response = task.result()  # raises the work's error: the app's handlers answer 4xx/5xx
        if response.status_code != 200:  # a refusal (busy: 503) rather than an answer: as it came
            return response
        return Response(b'{"result":' + response.body + b"}\n", media_type="application/x-ndjson")

    async def lines():
        pending = first
        try:
            while True:
                if pending.done():
                    yield json.dumps({**pending.result(), "job": job_id}).encode() + b"\n"
                    pending = asyncio.ensure_future(job.progress.get())
                    continue
                await asyncio.wait({task, pending}, return_when=asyncio.FIRST_COMPLETED)
                if task.done() and not pending.done():
                    break
            try:
                yield b'{"result":' + task.result().body + b"}\n"
            except AttnlabError as exc:
                yield json.dumps({"error": str(exc), "status": 400}).encode() + b"\n"
        finally:
            pending.cancel()
            job.stop.set()  # the client left (the response cancels this generator): the work stops too

    return StreamingResponse(lines(), media_type="application/x-ndjson",
                             headers={"cache-control": "no-store", "x-accel-buffering": "no", "x-job": job_id})


@router.post("/api/experiments/head-attribution", summary="which heads matter, estimated at once (attribution "
             "patching), then the exact drop of the top heads streamed")
async def head_attribution(req: HeadAttributionRequest, request: Request):
    def work(emit, cancelled):
        lm = _model(request, req.model, req.text)
        return attribution_grid.heads(lm, req.text, position=req.position, target=req.target, mode=req.mode,
                                      top=req.top, extra=req.extra, emit=emit, cancelled=cancelled)

    return await _line_stream(request, req.job, work)


@router.post("/api/experiments/patch-attribution", summary="the residual-stream patching grid estimated at once "
             "(attribution patching), then the exact values of the top cells streamed")
async def patch_attribution(req: PatchAttributionRequest, request: Request):
    def work(emit, cancelled):
        lm = _model(request, req.model, req.clean, req.corrupted)
        return attribution_grid.patching(lm, req.clean, req.corrupted, position=req.position, target=req.target,
                                         top=req.top, extra=req.extra, emit=emit, cancelled=cancelled)

    return await _line_stream(request, req.job, work)
