"""The explorer's HTTP face: a FastAPI app over explorer.api, plus the static page served from the package.

Every endpoint is a thin adapter in a router beside the view it serves (explorer/routes_<view>.py): parse the
request (explorer/server/schemas.py), ask the registry for the model by id, call the pure function in api.py, return
its dict. Errors become answers, never crashes (explorer/server/handlers.py maps each to its status and message). The
order of work for a request, so that one slow or hostile client cannot hold what others need, is told where it
happens: the guard before any routing (explorer/server/guard.py), then the schemas, then a model slot and a worker
thread (explorer/server/runner.py). This module only builds the app from those pieces.
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from attnlab.errors import InputError
from attnlab.explorer.server import classroom, queue, sessions
from attnlab.explorer.server.clients import ClientIds
from attnlab.explorer.server.guard import Guard
from attnlab.explorer.server.handlers import add_handlers
from attnlab.explorer.server.registry import Registry, build_registry
from attnlab.explorer.server.runner import Runner, threads_per_request
from attnlab.explorer.views.architecture import routes as architecture
from attnlab.explorer.views.attention import routes as attention
from attnlab.explorer.views.cost import routes as cost
from attnlab.explorer.views.experiments.ablation import routes as ablation
from attnlab.explorer.views.experiments.attention_ablation import routes as attention_ablation
from attnlab.explorer.views.experiments.attribution import routes as attribution
from attnlab.explorer.views.experiments.code import routes as code
from attnlab.explorer.views.experiments.components import routes as components
from attnlab.explorer.views.experiments.flow import routes as flow
from attnlab.explorer.views.experiments.lens import routes as lens
from attnlab.explorer.views.experiments.meanings import routes as meanings
from attnlab.explorer.views.experiments.steering import routes as steering
from attnlab.explorer.views.experiments.sweeps import routes as sweeps
from attnlab.explorer.views.experiments.timeline import routes as timeline
from attnlab.explorer.views.experiments.toy import routes as toy
from attnlab.explorer.views.generation import routes as generation
from attnlab.explorer.views.lessons import routes as lessons
from attnlab.explorer.views.selfsup import routes as selfsup
from attnlab.explorer.views.tour import routes as tour
from attnlab.explorer.views.vision import routes as vision
from attnlab.threads import check_threads

STATIC = Path(__file__).resolve().parents[1] / "static"
MAX_BODY_BYTES = 4 * 1024 * 1024
BODY_SECONDS = 15.0  # the whole request body must arrive within this after the headers, else 408
QUEUE_SECONDS = 120  # a request still waiting for a model slot after this long is answered 503 "busy"
MEASURE_SECONDS = 60.0  # /api/cost/...?measure=true stops between lengths after this (or when the client leaves)
STREAM_SECONDS = 120.0  # /api/generate/stream stops between steps after this (or when the client leaves)

# Every router, in the order their routes are matched and documented: the explorer's own tabs, the queue, the
# teaching lessons, then the Experiments tab's views. Each is the `routes` module of its view (explorer/views).
ROUTERS = (architecture, attention, selfsup, vision, generation, cost, queue, lessons, flow, toy, timeline, meanings,
           ablation, lens, attention_ablation, sweeps, attribution, steering, code, components, tour)


def _concurrency_setting() -> int:
    """Model requests at once: ATTNLAB_EXPLORER_CONCURRENT, else 2 (two requests keep 2 cores busy while one of
    them waits on Python or JSON work). The others wait in line (asyncio, no thread held)."""
    raw = os.environ.get("ATTNLAB_EXPLORER_CONCURRENT", "2")
    if not raw.isdigit() or not 1 <= int(raw) <= 64:
        raise InputError(f"ATTNLAB_EXPLORER_CONCURRENT={raw!r}: allowed an integer from 1 to 64")
    return int(raw)


MAX_CONCURRENT = _concurrency_setting()


def _positive(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{name}={value!r}: allowed a positive integer")
    return value


def _add_routes(app: FastAPI, router: APIRouter) -> None:
    """The router's routes as the app's own, in order. Why not app.include_router: recent FastAPI keeps an included
    router nested, one entry of app.routes, and what walks app.routes for every endpoint (the abuse tests attack
    each route that takes a name) would miss its routes. The routers set no prefix, dependencies or response class
    of their own, so their routes are the same as routes declared on the app."""
    app.router.routes.extend(router.routes)


def create_app(registry: Registry | None = None, *, host: str | None = "127.0.0.1",
               max_concurrent: int | None = None, body_seconds: float = BODY_SECONDS,
               measure_seconds: float = MEASURE_SECONDS, stream_seconds: float = STREAM_SECONDS,
               threads: int | None = None, class_token: str | None = None, heavy_concurrent: int = 1,
               compile_steps: bool = True) -> FastAPI:
    """The explorer app. `host`: the address it is served on (--host); requests must name it, localhost,
    127.0.0.1 or [::1] as their Host. `max_concurrent`: model requests at once (default MAX_CONCURRENT).
    `threads`: torch threads per model request (--threads); None: the cores this process may use divided by
    `max_concurrent` (at least 1), the same for every request, so an answer never depends on the load.
    `class_token`: serving a class (`attnlab explore --class`): every request must carry this token (the address's
    ?class=, then a cookie) and only `host` and loopback are served. `heavy_concurrent`: heavy jobs (sweeps,
    streams) at once, in their own slots beside the `max_concurrent` light ones (explorer/server/classroom.py).
    `compile_steps`: False never builds the Generation tab's compiled step (`--no-compile`; else it is built when
    the explorer is idle, explorer/server/idle_builds.py)."""
    registry = registry if registry is not None else build_registry()
    slots = _positive("max_concurrent", MAX_CONCURRENT if max_concurrent is None else max_concurrent)
    _positive("heavy_concurrent", heavy_concurrent)
    if class_token is not None:
        try:
            classroom.check_token(class_token)  # it goes into a cookie: plain characters only
        except ValueError as exc:
            raise InputError(f"class_token: {exc}") from None
    app = FastAPI(title="attnlab Transformer Explorer",
                  description="Every number inside real transformers: attention, masking, vision, generation, cost.",
                  version="0.1.0", docs_url=None, redoc_url=None)  # their pages load scripts from a CDN
    ids = ClientIds()  # the clients the queues share the machine between (guard issues, runner reads)
    runner = Runner(slots, heavy_concurrent, QUEUE_SECONDS, threads_per_request(check_threads(threads), slots),
                    ids=ids, compile_steps=compile_steps,
                    light_per_client=1 if class_token is not None else None)  # a class: one light request each
    app.state.registry = registry
    app.state.runner = runner  # every router computes under the same slots and limits (runner.run)
    app.state.threads_per_request, app.state.max_concurrent = runner.threads, slots
    app.state.measure_seconds, app.state.stream_seconds = measure_seconds, stream_seconds
    app.state.sessions = sessions.GenerationSessions()  # generation's KV caches, one per page that steps
    app.add_middleware(Guard, host=host, body_seconds=body_seconds, max_body=MAX_BODY_BYTES,
                       class_token=class_token, ids=ids)
    add_handlers(app)
    for view in ROUTERS:
        _add_routes(app, view.router)

    @app.get("/", include_in_schema=False)
    def index():
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
