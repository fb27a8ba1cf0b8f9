"""Serving a class: the class token, and which requests are heavy jobs.

Why: a teacher runs one explorer and thirty students open it on the local network. Beyond loopback anyone on
that network could reach it, so every request must carry a shared class token (random, printed at start, in the
address the students open, then kept in a cookie). And thirty students share two cores: a sweep (a head sweep,
a patching grid, a streamed generation) holds the machine for seconds, so such heavy jobs take turns in their
own queue while light requests (an attention map, the logit lens, one ablation) have their own slots and never
wait behind a sweep. Who a request belongs to is explorer/server/clients.py; the turns, round robin across
clients, explorer/server/fair_queue.py; the addresses a class is served on, explorer/server/addresses.py.
"""

from __future__ import annotations

import hmac
import re
import secrets
import socket
from urllib.parse import parse_qs

from attnlab.explorer.server import addresses

CLASS_COOKIE = "attnlab_class"  # the class token, kept by the student's browser after the first visit
CLASS_HEADER = "x-attnlab-class"  # or sent as a header (scripts, the class benchmark)
CLASS_QUERY = "class"  # the address the students open: http://HOST:PORT/?class=TOKEN
WILDCARDS = ("0.0.0.0", "::", "")  # a --host that listens on every interface
LOOPBACK = ("127.0.0.1", "localhost", "::1")
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{16,64}")
# The paths whose work is heavy (sweeps and streams that hold the machine for seconds); every other computing
# request is light. /api/cost/... is heavy only with measure=true (it times the model at several lengths).
HEAVY_PATHS = frozenset({
    "/api/experiments/head-sweep", "/api/experiments/patch", "/api/experiments/components",
    "/api/experiments/head-attribution", "/api/experiments/patch-attribution", "/api/generate/stream",
})


def new_token() -> str:
    """A class token: 128 random bits, URL-safe (22 characters)."""
    return secrets.token_urlsafe(16)


def check_token(token: str) -> str:
    """A token chosen by the teacher must be long enough not to be guessed and plain enough for a URL."""
    if not TOKEN_PATTERN.fullmatch(token):
        raise ValueError("a class token is 16 to 64 characters of letters, digits, - and _ (or auto for a random "
                         "one)")
    return token


def token_matches(given: str | None, token: str) -> bool:
    """Constant-time comparison (the time taken says nothing about how much of a guess was right)."""
    return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


def is_heavy(path: str, query: str) -> bool:
    """Whether a request's work is a heavy job (queued, one per client) rather than a light one."""
    if path in HEAVY_PATHS:
        return True
    measure = parse_qs(query).get("measure", ["false"])[-1].lower()
    return path.startswith("/api/cost/") and measure in ("1", "true", "on", "yes", "t", "y")  # as FastAPI reads it


def every_interface() -> str:
    """The address `--class` listens on: "" where this machine has IPv6 (uvicorn, through asyncio, then listens on
    every IPv4 and every IPv6 address, one socket each, so the students reach each address printed), else
    "0.0.0.0". Not "::": asyncio makes that socket IPv6 only."""
    if not socket.has_ipv6:
        return "0.0.0.0"
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::", 0))
    except OSError:
        return "0.0.0.0"
    return ""


def hosts_to_print(named: str) -> list[str]:
    """The hosts of the addresses `attnlab explore` prints for the pages' Host `named`: every address of this
    machine when it listens on every interface (the routed one first; an offline classroom network has no route,
    and its address is listed all the same; on "0.0.0.0" the IPv4 ones, on "::" the IPv6 ones), localhost on
    loopback, else `named`."""
    if named in WILDCARDS:
        found = [a for a in addresses.machine_addresses()
                 if (named != "0.0.0.0" or ":" not in a) and (named != "::" or ":" in a)]
        return found or ["localhost"]
    return ["localhost" if named in LOOPBACK else named]
