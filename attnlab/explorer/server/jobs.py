"""A long Experiments job streamed as it runs: the job table, a job's cancel flag, and the x-ndjson answer.

Why one place: the exact sweeps (head sweep, patching grid, components: progress lines) and the estimate-first
grids (routes_attribution.py: whole estimate and exact lines) hold a model slot for seconds, report from the
worker thread, and stop when POST /api/experiments/cancel names their job or the client leaves. One job table
serves both, so the page's one Cancel button stops either. A job belongs to the client that started it
(explorer/server/clients.py): a cancel from any other client is answered as for an unknown id, so in a class
nobody stops, or learns of, another student's job.

The answer: the lines the work hands over as it runs, each with "job": its id, then one {"result": answer} line
(its "cancelled" says whether every cell ran). Bad input found before the first line is an ordinary 4xx (the
app's handlers); an error after it is a last line {"error": message, "status": 400}.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid

from fastapi import Request
from fastapi.responses import Response, StreamingResponse

from attnlab.errors import AttnlabError, InputError
from attnlab.explorer.server.clients import Client
from attnlab.explorer.server.runner import run, runner


def jobs(request: Request) -> dict[str, Job]:
    """The app's running jobs by id."""
    app = request.app
    if not hasattr(app.state, "experiment_jobs"):
        app.state.experiment_jobs = {}
    return app.state.experiment_jobs


def cancel(request: Request, job_id: str) -> dict:
    """POST /api/experiments/cancel: stop job `job_id` at its next batch when it is the asking client's."""
    job = jobs(request).get(job_id)
    if job is None or job.owner != runner(request).client(request):
        return {"job": job_id, "cancelled": False, "detail": "no running job of yours by that id (it may have "
                "finished; a job is cancelled from the page that started it)"}
    job.stop.set()
    return {"job": job_id, "cancelled": True}


class Job:
    """A running job: its cancel flag (set by POST /api/experiments/cancel or by the client leaving) and the lines
    the worker thread hands to the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, owner: Client | None = None):
        self.owner = owner  # the client that started it: only it may cancel it
        self.stop = threading.Event()
        self.loop = loop
        self.progress: asyncio.Queue = asyncio.Queue()
        self.forwards = 0  # batched forwards run (tests read it: a cancelled sweep ran fewer than all)

    def emit(self, line: dict) -> None:  # worker thread
        self.forwards += 1
        self.loop.call_soon_threadsafe(self.progress.put_nowait, line)

    def report(self, done: int, total: int) -> None:  # worker thread: an exact sweep's progress line
        self.emit({"progress": done, "total": total})

    def cancelled(self) -> bool:  # worker thread
        return self.stop.is_set()


async def job_stream(request: Request, job_id: str | None, work) -> Response:
    """Run `work(job) -> dict` under the app's runner as job `job_id` (a new id when None) and answer its lines
    as they come (module docstring), or at once when the work ends before its first line."""
    table = jobs(request)
    job_id = job_id or uuid.uuid4().hex
    if job_id in table:
        raise InputError(f"job {job_id!r} is already running; choose another id")
    job = Job(asyncio.get_running_loop(), runner(request).client(request))
    table[job_id] = job
    task = asyncio.ensure_future(run(request, lambda: work(job)))

    def finish(_=None) -> None:
        job.stop.set()
        table.pop(job_id, None)

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
