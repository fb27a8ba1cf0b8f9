"""Where a route's work runs: a model slot, the queue limit, the torch threads, and the answer encoded in a thread.

The order of work for a request (why: one slow or hostile client must not hold what others need):
  1. the guard (explorer/server/guard.py, before any routing): Host and Origin, the body read with a deadline and
  counted; 2. FastAPI validates the body and the query against the schemas (every number has a range); 3. only then does
  the request queue here for a model slot (`slots` at once, `queue_seconds` at most), and its work runs in a thread.
  Every endpoint that computes takes a slot, GET or POST. Heavy jobs (sweeps, patching grids, streamed generation:
  classroom.HEAVY_PATHS) take their own slots instead, so light answers never wait behind them; GET /api/queue tells
  the page its place. Both queues take turns round robin across clients (explorer/server/fair_queue.py), a client
  being an id the server issued, else an address (explorer/server/clients.py).

create_app builds one Runner and keeps it as app.state.runner; every router computes through `run(request,
work)` below, so none of them imports the server.
"""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import contextmanager
from typing import Any

import torch
from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from attnlab.errors import InputError
from attnlab.explorer.server import classroom, idle_builds
from attnlab.explorer.server.clients import Client, ClientIds
from attnlab.explorer.server.common import Stop, Stopped
from attnlab.explorer.server.fair_queue import (
    MAX_HEAVY_RUNNING,
    MAX_HEAVY_WAITING,
    MAX_LIGHT_WAITING,
    FairQueue,
    Ticket,
)
from attnlab.explorer.server.guard import answer
from attnlab.explorer.server.registry import Loaded
from attnlab.threads import allowed_cores, using_threads


def threads_per_request(threads: int | None, slots: int) -> int:
    """Torch threads for every request: `threads` (--threads), else the cores this process may use shared by the
    slots (at least 1). Why not chosen per request from the current load: a sum split over another number of
    threads adds in another order, so the same request answered differently (6th decimal) depending on what
    else ran (23.8: 20 of 2,737 answers under 16 clients). Fixed, the same request gives the same bytes."""
    thread_cap = min(torch.get_num_threads(), allowed_cores())  # this thread's count: a worker's may be a scope's
    return threads or max(1, thread_cap // slots)


def encode_json(result: Any) -> bytes:
    """The answer as JSON bytes (in the worker thread, so a large grid does not hold up the event loop). NaN and
    infinity are not JSON: a model that produces them gets a 400 that says so, not a 500."""
    try:
        return json.dumps(jsonable_encoder(result), allow_nan=False, separators=(",", ":")).encode()
    except ValueError:
        raise InputError("the model produced numbers that are not finite (NaN or infinity) for this input: its "
                         "weights are probably damaged; try another model") from None


async def watch(request: Request, stop: Stop) -> None:
    """Sets `stop.gone` when the client disconnects (run as a task beside the request's wait and work)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            stop.gone.set()
            return


class Runner:
    """The app's slots: the light queue of `slots` and the heavy-job queue of `heavy_slots` (fair_queue.FairQueue),
    one of each per event loop (tests may start several), created on first use. `ids` tells a request's client;
    `compile_steps` False keeps the Generation tab's compiled step from being built (idle_builds.py).
    `light_per_client`: light requests one client may run at once (None: any while nobody else waits; a class
    takes 1, so a slot stays free for the other students however many requests one of them sends)."""

    def __init__(self, slots: int, heavy_slots: int, queue_seconds: float, threads: int,
                 ids: ClientIds | None = None, compile_steps: bool = True, light_per_client: int | None = None):
        self.slots, self.heavy_slots, self.queue_seconds, self.threads = slots, heavy_slots, queue_seconds, threads
        self.light_per_client = light_per_client
        self.ids = ids if ids is not None else ClientIds()
        self.compile_steps = compile_steps
        self._loop: asyncio.AbstractEventLoop | None = None
        self._light: FairQueue | None = None
        self._heavy: FairQueue | None = None
        self._made = time.monotonic()

    @contextmanager
    def request_threads(self):
        """The request's torch threads for the worker thread running it (its own count comes back after), marked
        as serving this runner (a compiled step's build then waits until the runner is idle)."""
        with using_threads(self.threads), idle_builds.serving(self):
            yield

    def _threaded(self, work):
        with self.request_threads():
            return work()

    def light(self) -> FairQueue:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._light = FairQueue(self.slots, "requests", max_running=self.light_per_client,
                                    max_waiting=MAX_LIGHT_WAITING)
            self._heavy = FairQueue(self.heavy_slots, "heavy jobs (sweeps, patching grids, streams)",
                                    max_running=MAX_HEAVY_RUNNING, max_waiting=MAX_HEAVY_WAITING)
        return self._light

    def queue(self) -> FairQueue:
        self.light()
        return self._heavy

    def waiting(self) -> int:
        """Light requests waiting for a slot now (what the tests and the class benchmark read)."""
        return len(self._light.waiting) if self._light is not None else 0

    def quiet_for(self) -> float:
        """Seconds since any request ran or waited here (read from another thread: a build waiting for idle)."""
        queues = [q for q in (self._light, self._heavy) if q is not None]
        return min((q.quiet_for() for q in queues), default=time.monotonic() - self._made)

    def client(self, request: Request) -> Client:
        """The request's client: its issued id from its address, else the address (explorer/server/clients.py)."""
        return self.ids.client(request.cookies, request.client.host if request.client else None)

    async def heavy_turn(self, request: Request, gone: asyncio.Task) -> Ticket:
        """Wait in the heavy queue (one running job per client, round robin across clients) until this job's turn,
        queue_seconds per job waiting at most. Raises (errors, not answers, so a streamed sweep answers them with
        their status too) QueueFull (429) when the client has too many waiting, Stopped (503) when busy or the
        client left."""
        queue = self.queue()
        ticket = queue.join(self.client(request))
        patience = self.queue_seconds * max(1, len(queue.waiting))  # a sweep takes seconds: the line moves
        try:
            await asyncio.wait({ticket.granted, gone}, timeout=patience, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            queue.leave(ticket)
            raise
        if not ticket.granted.done() or ticket.granted.cancelled():
            queue.leave(ticket)
            raise Stopped("the client went away before its turn" if gone.done() else
                          f"the explorer is busy (the heavy-job queue did not move for {patience:g} s); retry shortly")
        return ticket

    def _busy(self) -> Response:
        """The answer to a request that waited queue_seconds for a model slot."""
        return answer(503, f"the explorer is busy ({self.slots} requests running and more waiting "
                      f"for over {self.queue_seconds} s); retry shortly")

    async def run(self, request: Request, work, *, stop: Stop | None = None) -> Response:
        """Wait for a slot (queue_seconds at most), then run `work()` and encode its dict as JSON in a thread.
        A client that disconnects meanwhile sets `stop.gone`: work still waiting for a slot is skipped, and
        cancellable work (a cost measurement) stops at its next check."""
        stop = stop if stop is not None else Stop()
        watcher = asyncio.create_task(watch(request, stop))
        if classroom.is_heavy(request.url.path, request.url.query):
            try:
                return await self._run_heavy(request, work, stop, watcher)
            finally:
                watcher.cancel()
        try:
            slots = self.light()
            ticket = slots.join(self.client(request))  # QueueFull (429): this client has too many waiting
            try:
                await asyncio.wait({ticket.granted, watcher}, timeout=self.queue_seconds,
                                   return_when=asyncio.FIRST_COMPLETED)
                if stop.gone.is_set():
                    return answer(503, "the client went away before its turn")  # nobody reads this
                if not ticket.granted.done():
                    return self._busy()
                stop.start()
                body = await run_in_threadpool(lambda: encode_json(self._threaded(work)))
            finally:
                slots.leave(ticket)
        finally:
            watcher.cancel()
        return Response(body, media_type="application/json")

    async def _run_heavy(self, request: Request, work, stop: Stop, watcher: asyncio.Task) -> Response:
        """`run` for a heavy job: its turn in the heavy queue instead of a light slot."""
        ticket = await self.heavy_turn(request, watcher)
        try:
            stop.start()
            body = await run_in_threadpool(lambda: encode_json(self._threaded(work)))
        finally:
            self.queue().leave(ticket)
        return Response(body, media_type="application/json")


class SlotStream(StreamingResponse):
    """A streamed answer that gives its model slot back however it ends: its generator releases the slot when it
    finishes or is cancelled (the client left), and this releases it too if the generator never started."""

    def __init__(self, content, release, **kw):
        super().__init__(content, **kw)
        self._release = release

    async def __call__(self, scope, receive, send):
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


def runner(request: Request) -> Runner:
    return request.app.state.runner


def run(request: Request, work, *, stop: Stop | None = None):
    """The app's Runner.run: what every router awaits to compute (a slot, the queue limit, a worker thread)."""
    return runner(request).run(request, work, stop=stop)


def model(request: Request, model_id: str) -> Loaded:
    """The model by id from the app's registry (404 unknown, 503 unavailable): call it inside the work, so the
    loading happens in the worker thread, under the request's slot."""
    return request.app.state.registry.get(model_id)
