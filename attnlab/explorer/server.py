"""The explorer's HTTP face: a FastAPI app over explorer.api, plus the static page served from the package.

Every endpoint is a thin adapter: parse the request, ask the registry for the model by id, call the pure
function in api.py, return its dict. Errors become answers, never crashes: unknown model/layer/head -> 404
(the Experiments views: a layer, head or position the model or text lacks -> 422 naming its range),
a model that cannot be loaded -> 503, bad input (text beyond the limit, non-images, numbers the model cannot
use, ...) -> 400, malformed JSON or a value outside its allowed range -> 422, oversize bodies -> 413, a body
that does not arrive in time -> 408, a foreign Host or a cross-origin POST -> 403; each with a
{"detail": message} that says what was wrong and what is allowed. An answer that closes the connection says
`Connection: close` (408, and a refused Host or Origin); every other answer leaves it open for the next request.
After a 413 the server (uvicorn) reads the rest of the body and throws it away as it arrives, so a client that
sends its whole body before it reads the answer still gets the 413, and memory holds at most the 4 MiB.

The order of work for a request (why: one slow or hostile client must not hold what others need):
  1. `_Guard` (plain ASGI, before any routing): Host and Origin checks, then the whole body is read with a
     deadline (BODY_SECONDS) and counted as it streams, chunked or not (MAX_BODY_BYTES).
  2. FastAPI validates the body and the query against the schemas below (every number has a range).
  3. Only then does the request queue for a model slot (MAX_CONCURRENT at once, QUEUE_SECONDS at most), and
     its work runs in a thread. Every endpoint that computes takes a slot, GET or POST. Heavy jobs (sweeps,
     patching grids, streamed generation: classroom.HEAVY_PATHS) take their own slots instead, in one queue where
     each client (one browser, else one address) runs one job at a time, so light answers never wait behind
     them; GET /api/queue tells the page its place.
With `class_token` (`attnlab explore --class`) the guard also refuses, with 403, a request without the class
token, and serves no Host but the class address and loopback.
"""

from __future__ import annotations

import asyncio
import http.cookies
import ipaddress
import json
import os
import time
import uuid
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, urlsplit

import torch
from fastapi import FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from attnlab.errors import AttnlabError, InputError
from attnlab.explorer import api, classroom, images, lessons, sessions
from attnlab.explorer.common import OutOfRange, RequestBody, Stop, Stopped, a_an, shown
from attnlab.explorer.registry import ModelUnavailable, Registry, UnknownItem, build_registry
from attnlab.explorer.routes_attribution import router as attribution_router
from attnlab.explorer.routes_code import router as code_router
from attnlab.explorer.routes_components import router as components_router
from attnlab.explorer.routes_experiments import router as experiments_router
from attnlab.explorer.routes_steer import router as steer_router
from attnlab.threads import allowed_cores, check_threads, using_threads

STATIC = Path(__file__).resolve().parent / "static"
MAX_BODY_BYTES = 4 * 1024 * 1024
BODY_SECONDS = 15.0  # the whole request body must arrive within this after the headers, else 408
QUEUE_SECONDS = 120  # a request still waiting for a model slot after this long is answered 503 "busy"
MEASURE_SECONDS = 60.0  # /api/cost/...?measure=true stops between lengths after this (or when the client leaves)
STREAM_SECONDS = 120.0  # /api/generate/stream stops between steps after this (or when the client leaves)
MAX_STREAM_STEPS = 64


def _concurrency_setting() -> int:
    """Model requests at once: ATTNLAB_EXPLORER_CONCURRENT, else 2 (two requests keep 2 cores busy while one of
    them waits on Python or JSON work). The others wait in line (asyncio, no thread held)."""
    raw = os.environ.get("ATTNLAB_EXPLORER_CONCURRENT", "2")
    if not raw.isdigit() or not 1 <= int(raw) <= 64:
        raise InputError(f"ATTNLAB_EXPLORER_CONCURRENT={raw!r}: allowed an integer from 1 to 64")
    return int(raw)


MAX_CONCURRENT = _concurrency_setting()

# Every number a request can carry, with its allowed range (inclusive). One table: the schemas and the 422
# messages read it, so a message always names the range that was enforced.
INT64 = (-(2**63), 2**63 - 1)
LIMITS: dict[str, tuple[float, float]] = {
    "V": (1, 1_000_000), "d": (1, 65_536), "N": (1, 256), "h": (1, 256), "L": (1, 1_000_000),
    "d_ff": (1, 262_144), "n": (1, 32_768), "cost_n": (1, 10**9), "layer": (0, 10_000), "head": (0, 10_000),
    "patch": (0, 100_000),
    "query": (0, api.MAX_TOKENS - 1), "key": (0, api.MAX_TOKENS - 1),
    "seed": INT64, "top_k": (0, 1_000_000), "temperature": (0.0, 10.0),
}
MAX_ID_CHARS = 200


def _int(name: str, default: int, **kw) -> Any:
    lo, hi = LIMITS[name]
    return Field(default, ge=lo, le=hi, **kw)


class TextRequest(RequestBody):
    model: str = Field(max_length=MAX_ID_CHARS, description="model id from GET /api/models")
    text: str = Field(max_length=api.MAX_TEXT_CHARS, description="the sentence to run")


class AttentionRequest(TextRequest):
    layer: int = _int("layer", 0)
    head: int = _int("head", 0)
    part: str | None = Field(None, max_length=20, description="self; or encoder | decoder | cross for enc-decs")
    target: str | None = Field(None, max_length=api.MAX_TEXT_CHARS,
                               description="encoder-decoders: target text (default: greedy translation)")


class GridRequest(TextRequest):
    part: str | None = Field(None, max_length=20)
    target: str | None = Field(None, max_length=api.MAX_TEXT_CHARS)


class MaskRequest(TextRequest):
    layer: int = _int("layer", 0)
    head: int = _int("head", 0)


class DrawRequest(TextRequest):
    seed: int = _int("seed", 0, description="any 64-bit signed integer")


class MLMRequest(TextRequest):
    selections: list[dict[str, Any] | int] = Field(max_length=api.MAX_TOKENS,
                                                   description="positions, or {position, action, token_id}")


class VisionRequest(RequestBody):
    model: str = Field(max_length=MAX_ID_CHARS)
    image: dict[str, Any] = Field(description='{"mnist": i} | {"photo": name} | {"upload": base64 PNG/JPEG}')
    layer: int = _int("layer", 0)
    head: int = _int("head", 0)
    patch: int = _int("patch", 0, description="token index: 0 = [CLS], 1.. = patches in raster order")


class GenerateRequest(RequestBody):
    model: str = Field(max_length=MAX_ID_CHARS)
    prompt: str = Field(max_length=api.MAX_TEXT_CHARS)
    generated: list[int] = Field(default_factory=list, max_length=api.MAX_TOKENS,
                                 description="token ids sampled so far")
    temperature: float = Field(1.0, ge=0.0, le=10.0, allow_inf_nan=False, description="0 = greedy")
    top_k: int = _int("top_k", 0)
    top_p: float = Field(1.0, gt=0.0, le=1.0, allow_inf_nan=False)
    seed: int = _int("seed", 0, description="any 64-bit signed integer")
    session: str | None = Field(None, max_length=sessions.MAX_ID_CHARS,
                                description="the id the last step answered with: its KV cache is reused")
    compare: bool | None = Field(None, description="also time a full recompute (default: small models only)")


class GenerateStreamRequest(GenerateRequest):
    steps: int = Field(10, ge=1, le=MAX_STREAM_STEPS, description="steps to run, one JSON line each")


def _query(name: str) -> Any:
    lo, hi = LIMITS[name]
    return Annotated[int, Query(ge=lo, le=hi)]


# query and path parameter types (module level: FastAPI resolves the string annotations in this module)
QueryN, QueryV, QueryD, QueryNLayers, QueryH, QueryL = (_query(k) for k in ("n", "V", "d", "N", "h", "L"))
QueryCostN = _query("cost_n")  # wide: api.cost clamps n to the model's own limit and says so (a note, not a 422)
QueryDFF = Annotated[int | None, Query(ge=LIMITS["d_ff"][0], le=LIMITS["d_ff"][1])]
QueryText = Annotated[str | None, Query(max_length=api.MAX_TEXT_CHARS)]
ModelId = Annotated[str, PathParam(max_length=MAX_ID_CHARS)]


def _bounds(metadata: list) -> tuple[float | None, float | None]:
    """(lowest, highest) allowed by a field's annotated_types constraints: Ge/Le as they are, Gt/Lt on integers
    as the next integer in; a strict bound on a float has no such figure (None: the plain message is kept)."""
    lo = hi = None
    for c in metadata:
        strict = getattr(c, "gt", getattr(c, "lt", None))
        if strict is not None and not isinstance(strict, int):
            return None, None
        lo = c.ge if hasattr(c, "ge") else c.gt + 1 if hasattr(c, "gt") else lo
        hi = c.le if hasattr(c, "le") else c.lt - 1 if hasattr(c, "lt") else hi
    return lo, hi


def _enforced_range(request: Request, loc: list[str]) -> tuple[float, float] | None:
    """The range the matched route enforces on the field at `loc` (["path", "head"], ["body", "layer"]): its own
    schema, so GET /api/experiments/toy/4 names the toy's 0..3, not a shared ceiling. None when not found."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None or len(loc) != 2:
        return None
    where, name = loc
    if where in ("path", "query"):
        params = dependant.path_params if where == "path" else dependant.query_params
        metadata = next((p.field_info.metadata for p in params if p.alias == name), None)
    else:
        schema = getattr(getattr(route, "body_field", None), "field_info", None)
        fields = getattr(getattr(schema, "annotation", None), "model_fields", {})
        metadata = fields[name].metadata if name in fields else None
    lo, hi = _bounds(metadata or [])
    return None if lo is None or hi is None else (lo, hi)


def _error_text(request: Request, err: dict) -> str:
    """One validation error as "where: what is allowed" (a value outside its range names the range enforced)."""
    full = [str(x) for x in err.get("loc", ())]
    loc = full[1:] if full[:1] in (["body"], ["query"], ["path"]) else full  # where it came from; a field
    loc = [x for x in loc if x not in ("int", "str", "float")]  # may be named "query" (the lessons')
    where = ".".join(loc) or "body"
    if not err.get("type", "").startswith(("greater", "less")):
        return f"{where}: {err.get('msg')}"
    name = "cost_n" if loc == ["n"] and request.url.path.startswith("/api/cost/") else loc[-1] if loc else ""
    bounds = _enforced_range(request, full) or LIMITS.get(name)
    if bounds is None:
        return f"{where}: {err.get('msg')}"
    value = err.get("input")
    return f"{where}={value[:40] if isinstance(value, str) else shown(value)}: allowed {bounds[0]}..{bounds[1]}"


def _encode(result: Any) -> bytes:
    """The answer as JSON bytes (in the worker thread, so a large grid does not hold up the event loop). NaN and
    infinity are not JSON: a model that produces them gets a 400 that says so, not a 500."""
    try:
        return json.dumps(jsonable_encoder(result), allow_nan=False, separators=(",", ":")).encode()
    except ValueError:
        raise InputError("the model produced numbers that are not finite (NaN or infinity) for this input: its "
                         "weights are probably damaged; try another model") from None


# ------------------------------------------------------------------------------------------ the guard
def _answer(status: int, detail: str, close: bool = False) -> Response:
    return JSONResponse({"detail": detail}, status_code=status, headers={"connection": "close"} if close else None)


def _allowed_names(host: str | None) -> tuple[set[str], bool]:
    """Host names (without port) this server answers to, and whether any IP literal is fine too (bound to every
    interface: a LAN user types the machine's address; DNS rebinding needs a *name*, so literals are safe)."""
    names = {"localhost", "127.0.0.1", "[::1]"}
    wildcard = host in ("0.0.0.0", "::", "")
    if host and not wildcard:
        names.add(f"[{host}]" if ":" in host and not host.startswith("[") else host.lower())
    return names, wildcard


def _host_name(value: str) -> str:
    """'Localhost:8000' -> 'localhost'; '[::1]:80' -> '[::1]'."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


class _Guard:
    """Plain ASGI middleware: Host and Origin checks, then the whole body read within BODY_SECONDS and counted
    as it streams. Runs before routing and before any slot, so a slow or huge upload only ever holds itself."""

    SAFE = ("GET", "HEAD", "OPTIONS")

    def __init__(self, app, host: str | None, body_seconds: float, max_body: int, class_token: str | None = None):
        self.app, self.body_seconds, self.max_body = app, body_seconds, max_body
        self.names, self.any_ip = _allowed_names(host)
        self.class_token = class_token
        if class_token is not None:  # a class: the address printed and loopback, never any other name or address
            self.any_ip = False

    def _host_ok(self, host: str) -> bool:
        name = _host_name(host)
        return bool(name) and (name in self.names or (self.any_ip and _is_ip(name)))

    def _class_token_via(self, scope, headers: dict[str, str], cookies: dict[str, str]) -> str | None:
        """Where the request carries the class token ("query", "cookie" or "header"); None without a right one."""
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        for via, given in (("query", query.get(classroom.CLASS_QUERY, [None])[0]),
                           ("cookie", cookies.get(classroom.CLASS_COOKIE)),
                           ("header", headers.get(classroom.CLASS_HEADER))):
            if classroom.token_matches(given, self.class_token):
                return via
        return None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers: dict[str, str] = {}
        for key, value in scope["headers"]:
            headers.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
        host = headers.get("host", "")
        if not self._host_ok(host):
            shown = host[:80] or "(none)"
            return await _answer(403, f"Host {shown!r} is not served here; allowed: "
                                 f"{', '.join(sorted(self.names))} (with any port)", close=True)(scope, receive, send)
        cookies = _cookies(headers.get("cookie", ""))
        set_cookies = []
        if self.class_token is not None:
            via = self._class_token_via(scope, headers, cookies)
            if via == "query":  # the address the students open: the browser keeps the token from here on
                set_cookies.append(f"{classroom.CLASS_COOKIE}={self.class_token}; Path=/; HttpOnly; SameSite=Strict")
            if via is None:
                return await _answer(403, "this explorer serves a class and needs its class token: open the "
                                     "address the teacher's explorer printed (http://HOST:PORT/?class=TOKEN)",
                                     close=True)(scope, receive, send)
        if scope["path"] == "/" and classroom.CLIENT_COOKIE not in cookies:  # the page: one id per browser
            set_cookies.append(f"{classroom.CLIENT_COOKIE}={uuid.uuid4().hex}; Path=/; HttpOnly; SameSite=Strict")
        if set_cookies:
            send = _adding_cookies(send, set_cookies)
        if scope["method"] not in self.SAFE:
            for header in ("origin", "referer"):  # a browser sends Origin; older ones only Referer
                value = headers.get(header)
                if value is None:
                    continue
                if urlsplit(value).netloc.lower() != host.strip().lower() or urlsplit(value).scheme not in (
                        "http", "https"):
                    return await _answer(403, f"cross-origin request refused: {header} {value[:80]!r} is not this "
                                         f"page (http://{host}); the explorer only answers its own page",
                                         close=True)(scope, receive, send)
                break
        length = headers.get("content-length")
        if length is None and "transfer-encoding" not in headers:
            return await self.app(scope, receive, send)  # no body
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            return await _answer(413, f"request body is {length[:30]} bytes; allowed up to {self.max_body}")(
                scope, receive, send)
        chunks, size = [], 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_seconds
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.0))
            except asyncio.TimeoutError:
                return await _answer(408, f"the request body did not arrive within {self.body_seconds:g} s "
                                     f"({size} bytes received); send it at once", close=True)(scope, receive, send)
            if message["type"] == "http.disconnect":
                return None  # the client went away mid-body: nobody to answer
            size += len(message.get("body", b""))
            if size > self.max_body:
                return await _answer(413, f"request body is over {self.max_body} bytes; allowed up to "
                                     f"{self.max_body}")(scope, receive, send)
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body, replayed = b"".join(chunks), False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: only http.disconnect comes

        return await self.app(scope, replay, send)


def _cookies(header: str) -> dict[str, str]:
    """The request's cookies by name; a malformed Cookie header counts as none."""
    jar = http.cookies.SimpleCookie()
    try:
        jar.load(header)
    except http.cookies.CookieError:
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


def _adding_cookies(send, cookies: list[str]):
    """`send` with Set-Cookie headers added to the answer's start."""
    async def sending(message):
        if message["type"] == "http.response.start":
            extra = [(b"set-cookie", c.encode("latin-1")) for c in cookies]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)
    return sending


class _SlotStream(StreamingResponse):
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


# ------------------------------------------------------------------------------------------ the app
def create_app(registry: Registry | None = None, *, host: str | None = "127.0.0.1",
               max_concurrent: int | None = None, body_seconds: float = BODY_SECONDS,
               measure_seconds: float = MEASURE_SECONDS, stream_seconds: float = STREAM_SECONDS,
               threads: int | None = None, class_token: str | None = None, heavy_concurrent: int = 1) -> FastAPI:
    """The explorer app. `host`: the address it is served on (--host); requests must name it, localhost,
    127.0.0.1 or [::1] as their Host. `max_concurrent`: model requests at once (default MAX_CONCURRENT).
    `threads`: torch threads per model request (--threads); None: the cores this process may use divided by
    `max_concurrent` (at least 1), the same for every request, so an answer never depends on the load.
    `class_token`: serving a class (`attnlab explore --class`): every request must carry this token (the address's
    ?class=, then a cookie) and only `host` and loopback are served. `heavy_concurrent`: heavy jobs (sweeps,
    streams) at once, in their own slots beside the `max_concurrent` light ones (explorer/classroom.py)."""
    registry = registry if registry is not None else build_registry()
    slots_wanted = MAX_CONCURRENT if max_concurrent is None else max_concurrent
    if isinstance(slots_wanted, bool) or not isinstance(slots_wanted, int) or slots_wanted < 1:
        raise InputError(f"max_concurrent={slots_wanted!r}: allowed a positive integer")
    if isinstance(heavy_concurrent, bool) or not isinstance(heavy_concurrent, int) or heavy_concurrent < 1:
        raise InputError(f"heavy_concurrent={heavy_concurrent!r}: allowed a positive integer")
    if class_token is not None:
        try:
            classroom.check_token(class_token)  # it goes into a cookie: plain characters only
        except ValueError as exc:
            raise InputError(f"class_token: {exc}") from None
    app = FastAPI(title="attnlab Transformer Explorer",
                  description="Every number inside real transformers: attention, masking, vision, generation, cost.",
                  version="0.1.0", docs_url=None, redoc_url=None)  # their pages load scripts from a CDN
    app.state.registry = registry
    threads = check_threads(threads)
    # One torch thread count for every request, fixed here: the cores this process may use shared by the slots
    # (or --threads). Why not chosen per request from the current load: a sum split over another number of
    # threads adds in another order, so the same request answered differently (6th decimal) depending on what
    # else ran (23.8: 20 of 2,737 answers under 16 clients). Fixed, the same request gives the same bytes.
    thread_cap = min(torch.get_num_threads(), allowed_cores())  # this thread's count: a worker's may be a scope's
    per_request = threads or max(1, thread_cap // slots_wanted)
    app.state.threads_per_request = per_request

    def request_threads():
        """The request's torch threads for the worker thread running it; its own count comes back after."""
        return using_threads(per_request)

    def threaded(work):
        with request_threads():
            return work()

    app.state.max_concurrent = slots_wanted
    app.state.sessions = sessions.GenerationSessions()  # generation's KV caches, one per page that steps
    app.add_middleware(_Guard, host=host, body_seconds=body_seconds, max_body=MAX_BODY_BYTES,
                       class_token=class_token)
    heavy: dict = {"loop": None, "slots": None, "queue": None}

    def _slots() -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()  # one semaphore per event loop (tests may start several)
        if heavy["loop"] is not loop:
            heavy.update(loop=loop, slots=asyncio.Semaphore(slots_wanted),
                         queue=classroom.HeavyQueue(heavy_concurrent))
        return heavy["slots"]

    def _queue() -> classroom.HeavyQueue:
        _slots()
        return heavy["queue"]

    def _client(request: Request) -> str:
        return classroom.client_of(request.cookies, request.client.host if request.client else None)

    async def _heavy_turn(request: Request, gone: asyncio.Task) -> classroom.Ticket:
        """Wait in the heavy queue (one running job per client) until this job's turn, QUEUE_SECONDS per place
        ahead at most. Raises (errors, not answers, so a streamed sweep answers them with their status too)
        QueueFull (429) when the client has too many waiting, Stopped (503) when busy or the client left."""
        queue = _queue()
        ticket = queue.join(_client(request))
        patience = QUEUE_SECONDS * max(1, len(queue.waiting))  # a sweep takes seconds: the line moves
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

    def _busy() -> Response:
        """The answer to a request that waited QUEUE_SECONDS for a model slot (run and the stream alike)."""
        return _answer(503, f"the explorer is busy ({slots_wanted} requests running and more waiting "
                       f"for over {QUEUE_SECONDS} s); retry shortly")

    async def run(request: Request, work, *, stop: Stop | None = None) -> Response:
        """Wait for a slot (QUEUE_SECONDS at most), then run `work()` and encode its dict as JSON in a thread.
        A client that disconnects meanwhile sets `stop.gone`: work still waiting for a slot is skipped, and
        cancellable work (a cost measurement) stops at its next check."""
        stop = stop if stop is not None else Stop()
        watcher = asyncio.create_task(_watch(request, stop))
        if classroom.is_heavy(request.url.path, request.url.query):
            try:
                return await _run_heavy(request, work, stop, watcher)
            finally:
                watcher.cancel()
        try:
            slots = _slots()
            try:
                await asyncio.wait_for(slots.acquire(), QUEUE_SECONDS)
            except asyncio.TimeoutError:
                return _busy()
            try:
                if stop.gone.is_set():
                    return _answer(503, "the client went away before its turn")  # nobody reads this
                stop.start()
                body = await run_in_threadpool(lambda: _encode(threaded(work)))
            finally:
                slots.release()
        finally:
            watcher.cancel()
        return Response(body, media_type="application/json")

    async def _run_heavy(request: Request, work, stop: Stop, watcher: asyncio.Task) -> Response:
        """`run` for a heavy job: its turn in the heavy queue instead of a light slot."""
        ticket = await _heavy_turn(request, watcher)
        try:
            stop.start()
            body = await run_in_threadpool(lambda: _encode(threaded(work)))
        finally:
            _queue().leave(ticket)
        return Response(body, media_type="application/json")

    async def _watch(request: Request, stop: Stop) -> None:
        while True:
            message = await request.receive()
            if message["type"] == "http.disconnect":
                stop.gone.set()
                return

    @app.exception_handler(UnknownItem)
    async def _unknown(request, exc):
        return _answer(404, str(exc))

    @app.exception_handler(ModelUnavailable)
    async def _unavailable(request, exc):
        return _answer(503, str(exc))

    @app.exception_handler(classroom.QueueFull)
    async def _queue_full(request, exc):
        return _answer(429, str(exc))

    @app.exception_handler(Stopped)
    async def _stopped(request, exc):
        return _answer(503, str(exc))

    @app.exception_handler(AttnlabError)
    async def _bad_input(request, exc):
        return _answer(400, str(exc))

    @app.exception_handler(OutOfRange)
    async def _out_of_range(request, exc):
        return _answer(422, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request, exc):
        parts = [_error_text(request, err) for err in exc.errors()]
        return _answer(422, "malformed request: " + "; ".join(parts))

    def get(model_id: str):
        return registry.get(model_id)

    @app.get("/api/models", summary="models on offer (loaded lazily on first use)")
    def models() -> dict:
        return {"models": api.list_models(registry), "default": registry.default_id()}

    @app.get("/api/models/{model_id}", summary="a model's shape and what the tabs can show for it")
    async def model_info(request: Request, model_id: ModelId) -> dict:
        return await run(request, lambda: api.describe(get(model_id)))

    @app.get("/api/architecture/{model_id}", summary="blocks, shapes for n tokens and parameter counts")
    async def architecture(request: Request, model_id: ModelId, n: QueryN = 8, text: QueryText = None) -> dict:
        return await run(request, lambda: api.architecture(get(model_id), n, text))

    @app.get("/api/params", summary="closed form V*d + L*d + N*12*d^2 beside the exact count")
    async def params(request: Request, V: QueryV = 30522, d: QueryD = 768, N: QueryNLayers = 12,  # noqa: N803
                     h: QueryH = 12, L: QueryL = 512, d_ff: QueryDFF = None) -> dict:  # noqa: N803
        return await run(request, lambda: api.parameter_calculator(V, d, N, h, L, d_ff))

    @app.get("/api/famous", summary="the seeds' table of famous models, counted by attnlab")
    async def famous(request: Request) -> list:
        return await run(request, api.famous_models)

    @app.post("/api/walkthrough", summary="the inference walk-through of the seeds, run on this model")
    async def walkthrough(request: Request, req: TextRequest) -> dict:
        return await run(request, lambda: api.walkthrough(get(req.model), req.text))

    @app.post("/api/attention", summary="one layer and head: raw scores, weights, Q and K")
    async def attention(request: Request, req: AttentionRequest) -> dict:
        return await run(request, lambda: api.attention(get(req.model), req.text, req.layer, req.head, req.part,
                                                        req.target))

    @app.post("/api/attention/grid", summary="thumbnails of every layer x head")
    async def grid(request: Request, req: GridRequest) -> dict:
        return await run(request, lambda: api.attention_grid(get(req.model), req.text, req.part, target=req.target))

    @app.post("/api/mask-placement", summary="causal mask before vs after the softmax")
    async def mask_placement(request: Request, req: MaskRequest) -> dict:
        return await run(request, lambda: api.mask_placement(get(req.model), req.text, req.layer, req.head))

    @app.post("/api/mlm/draw", summary="BERT's random 15% with its 80/10/10 split")
    async def mlm_draw(request: Request, req: DrawRequest) -> dict:
        return await run(request, lambda: api.mlm_draw(get(req.model), req.text, req.seed))

    @app.post("/api/mlm/predict", summary="top-5 predictions and loss at the selected positions")
    async def mlm_predict(request: Request, req: MLMRequest) -> dict:
        return await run(request, lambda: api.mlm_predict(get(req.model), req.text, req.selections))

    @app.post("/api/causal", summary="each position's next-token prediction and loss")
    async def causal(request: Request, req: TextRequest) -> dict:
        return await run(request, lambda: api.causal_predictions(get(req.model), req.text))

    @app.get("/api/vision/samples", summary="MNIST digits and sample photos available here")
    async def vision_samples(request: Request) -> dict:
        return await run(request, images.samples)

    @app.post("/api/vision", summary="ViT prediction, attention of a patch, rollout, position similarity")
    async def vision(request: Request, req: VisionRequest) -> dict:
        def work():
            lm = get(req.model)
            if lm.model.config.topology != "vit":
                raise AttnlabError(f"model {req.model!r} is {a_an(lm.model.config.topology)}; the Vision tab needs "
                                   "a ViT")
            pixels, grey = images.to_pixels(lm.model.config, req.image)
            out = api.vision(lm, pixels, req.layer, req.head, req.patch)
            out["pixels"] = grey
            return out

        return await run(request, work)

    @app.post("/api/generate/step", summary="one decoding step with the KV cache, timed with and without it")
    async def generate_step(request: Request, req: GenerateRequest) -> dict:
        return await run(request, lambda: api.generation_step(
            get(req.model), req.prompt, req.generated, req.temperature, req.top_k, req.top_p, req.seed,
            session=req.session, sessions=app.state.sessions, compare=req.compare))

    @app.post("/api/generate/stream", summary="several decoding steps, one JSON line per step as it is computed")
    async def generate_stream(request: Request, req: GenerateStreamRequest) -> Response:
        """The steps of "10 steps" as application/x-ndjson: one line per step (the dict /api/generate/step
        answers), then {"done": true, "steps": k, "reason": ...}. The stream holds one model slot from its
        first step to its last and stops between steps when the client leaves (the page's Stop button aborts
        the fetch) or after `stream_seconds`. An error in the first step is an ordinary 4xx/5xx answer; a
        later one is a final line {"error": message, "status": code}."""
        state = {"generated": list(req.generated), "session": req.session}

        def one_step() -> bytes:
            with request_threads():
                r = api.generation_step(get(req.model), req.prompt, state["generated"], req.temperature,
                                        req.top_k, req.top_p, req.seed, session=state["session"],
                                        sessions=app.state.sessions, compare=req.compare)
            state.update(generated=r["generated"], session=r["session"], finished=r["finished"])
            return _encode(r) + b"\n"

        stop = Stop(stream_seconds)
        watcher = asyncio.create_task(_watch(request, stop))
        try:
            ticket = await _heavy_turn(request, watcher)  # a stream is a heavy job: it waits in the heavy queue
        finally:
            watcher.cancel()  # from here on the streaming response watches for the client leaving
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                _queue().leave(ticket)

        try:
            if stop.gone.is_set():
                release()
                return _answer(503, "the client went away before its turn")
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
                        yield _encode({"error": f"stopped after {stream_seconds:g} s (the machine is busy or the "
                                       f"model is large); {done} of {req.steps} steps ran", "status": 503}) + b"\n"
                        break
                    try:
                        yield await run_in_threadpool(one_step)
                    except AttnlabError as exc:
                        reason = "error"
                        status = 404 if isinstance(exc, UnknownItem) else 503 if isinstance(
                            exc, ModelUnavailable) else 400
                        yield _encode({"error": str(exc), "status": status}) + b"\n"
                        break
                    done += 1
                if reason == "steps" and state.get("finished"):
                    reason = "finished"
                yield _encode({"done": True, "steps": done, "reason": reason, "session": state["session"]}) + b"\n"
            finally:
                release()  # also when the client left: the response cancels this generator after the running step

        return _SlotStream(lines(), release, media_type="application/x-ndjson",
                           headers={"cache-control": "no-store", "x-accel-buffering": "no"})

    @app.get("/api/cost/{model_id}", summary="parameters, FLOPs and memory for n tokens, and their scaling")
    async def cost(request: Request, model_id: ModelId, n: QueryCostN = 128, measure: bool = False) -> dict:
        stop = Stop(measure_seconds) if measure else None
        return await run(request, lambda: api.cost(get(model_id), n, measure, stop=stop), stop=stop)

    @app.get("/api/queue", summary="the heavy-job queue: jobs running and waiting, and this client's places")
    async def queue_status(request: Request) -> dict:
        return _queue().status(_client(request))

    app.state.run = run  # the lessons' routes compute under the same slots and limits
    app.include_router(lessons.router)  # the teaching lessons (explorer/lessons.py)
    app.include_router(experiments_router)  # the Experiments tab (explorer/routes_experiments.py)
    app.include_router(attribution_router)  # estimate-first sweeps (explorer/routes_attribution.py)
    app.include_router(steer_router)  # steering: a direction from two prompts (explorer/routes_steer.py)
    app.include_router(code_router)  # "Show the code": each view's attnlab Python (explorer/routes_code.py)
    app.include_router(components_router)  # patching by component, direct logit attribution

    @app.get("/", include_in_schema=False)
    def index():
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
