"""Errors become answers, never crashes: one table from error to status code, and the 422 text that names ranges.

Unknown model/layer/head -> 404 (the Experiments views: a layer, head or position the model or text lacks ->
422 naming its range), a model that cannot be loaded -> 503, a full heavy-job queue -> 429, work stopped (busy,
past its deadline, the client left) -> 503, bad input (text beyond the limit, non-images, numbers the model
cannot use, ...) -> 400, malformed JSON or a value outside its allowed range -> 422. Each answer is
{"detail": message} saying what was wrong and what is allowed. (The guard's own refusals, 403/408/413, are
written in explorer/server/guard.py before any route runs.)
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError

from attnlab.errors import AttnlabError
from attnlab.explorer.server.common import OutOfRange, Stopped, shown
from attnlab.explorer.server.fair_queue import QueueFull
from attnlab.explorer.server.guard import answer
from attnlab.explorer.server.registry import ModelUnavailable, UnknownItem
from attnlab.explorer.server.schemas import LIMITS

# The most specific class an error is an instance of decides (OutOfRange is an UnknownItem, every one of these
# an AttnlabError), as Starlette looks handlers up along the error's class hierarchy.
STATUS: dict[type[Exception], int] = {
    UnknownItem: 404, OutOfRange: 422, ModelUnavailable: 503, QueueFull: 429, Stopped: 503, AttnlabError: 400,
}


def status_of(exc: Exception) -> int:
    """The status STATUS gives `exc` (its nearest class in the table); 500 for an error outside it."""
    return next((STATUS[c] for c in type(exc).__mro__ if c in STATUS), 500)


async def _known(request: Request, exc: Exception):
    return answer(status_of(exc), str(exc))


async def _invalid(request: Request, exc: RequestValidationError):
    parts = [_error_text(request, err) for err in exc.errors()]
    return answer(422, "malformed request: " + "; ".join(parts))


def add_handlers(app: FastAPI) -> None:
    """Answer every error in STATUS with its status and message, and a failed validation with a 422 that says
    where and what is allowed."""
    for cls in STATUS:
        app.add_exception_handler(cls, _known)
    app.add_exception_handler(RequestValidationError, _invalid)


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
