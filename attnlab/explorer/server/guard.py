"""The explorer's guard: plain ASGI middleware that every request passes first, before any routing.

The order of work for a request (why: one slow or hostile client must not hold what others need):
  1. `Guard` (here, before any routing): Host and Origin checks, then the whole body is read with a deadline
     (`body_seconds`) and counted as it streams, chunked or not (`max_body`).
  2. FastAPI validates the body and the query against the schemas (explorer/server/schemas.py: every number has a
  range). 3. Only then does the request queue for a model slot and its work runs in a thread
  (explorer/server/runner.py).

What the guard refuses, each with a {"detail": message} that says what was wrong and what is allowed: a foreign
Host or a cross-origin POST -> 403, an oversize body -> 413, a body that does not arrive in time -> 408. An
answer that closes the connection says `Connection: close` (408, and a refused Host or Origin); every other
answer leaves it open for the next request. After a 413 the server (uvicorn) reads the rest of the body and
throws it away as it arrives, so a client that sends its whole body before it reads the answer still gets the
413, and memory holds at most `max_body`. With a class token (`attnlab explore --class`) the guard also
refuses, with 403, a request without the token, and serves no Host but the class address (on every interface:
each address of this machine, explorer/server/addresses.py) and loopback. It gives each browser that opens the
page the client id the server issues (explorer/server/clients.py: few per address), and every answer says
Referrer-Policy: no-referrer (the class address carries the token; no page it links to may see it).
"""

from __future__ import annotations

import asyncio
import http.cookies
import ipaddress
import time
from urllib.parse import parse_qs, urlsplit

from fastapi.responses import JSONResponse, Response

from attnlab.explorer.server import addresses, classroom
from attnlab.explorer.server.clients import CLIENT_COOKIE, ClientIds

OWN_ADDRESSES_SECONDS = 5.0  # a class on every interface re-reads this machine's addresses at most this often


def answer(status: int, detail: str, close: bool = False) -> Response:
    """Every refusal the explorer writes itself: {"detail": detail}, closing the connection when `close`."""
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


class Guard:
    """Plain ASGI middleware: Host and Origin checks, then the whole body read within `body_seconds` and counted
    as it streams. Runs before routing and before any slot, so a slow or huge upload only ever holds itself."""

    SAFE = ("GET", "HEAD", "OPTIONS")

    def __init__(self, app, host: str | None, body_seconds: float, max_body: int, class_token: str | None = None,
                 ids: ClientIds | None = None):
        self.app, self.body_seconds, self.max_body = app, body_seconds, max_body
        self.names, self.any_ip = _allowed_names(host)
        self.class_token = class_token
        self.ids = ids if ids is not None else ClientIds()
        self.own = class_token is not None and self.any_ip  # a class on every interface: this machine's addresses
        self._own_names: set[str] = set()
        self._own_read = float("-inf")
        if class_token is not None:  # a class: its addresses and loopback, never any other name or address
            self.any_ip = False

    def _own_address(self, name: str) -> bool:
        """Whether `name` is one of this machine's interface addresses (re-read when a name misses, at most every
        OWN_ADDRESSES_SECONDS: a laptop may join the classroom's network after the explorer started)."""
        if name not in self._own_names and time.monotonic() - self._own_read >= OWN_ADDRESSES_SECONDS:
            self._own_read = time.monotonic()
            self._own_names = {f"[{a}]" if ":" in a else a for a in addresses.machine_addresses()}
        return name in self._own_names

    def _host_ok(self, host: str) -> bool:
        name = _host_name(host)
        return bool(name) and (name in self.names or (self.any_ip and _is_ip(name))
                               or (self.own and _is_ip(name) and self._own_address(name)))

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
            allowed = sorted(self.names | self._own_names)
            return await answer(403, f"Host {shown!r} is not served here; allowed: "
                                 f"{', '.join(allowed)} (with any port)", close=True)(scope, receive, send)
        cookies = _cookies(headers.get("cookie", ""))
        send = _adding_headers(send, [(b"referrer-policy", b"no-referrer")])
        set_cookies = []
        if self.class_token is not None:
            via = self._class_token_via(scope, headers, cookies)
            if via == "query":  # the address the students open: the browser keeps the token from here on
                set_cookies.append(f"{classroom.CLASS_COOKIE}={self.class_token}; Path=/; HttpOnly; SameSite=Strict")
            if via is None:
                return await answer(403, "this explorer serves a class and needs its class token: open the "
                                     "address the teacher's explorer printed (http://HOST:PORT/?class=TOKEN)",
                                     close=True)(scope, receive, send)
        address = scope["client"][0] if scope.get("client") else "unknown"
        if scope["path"] == "/" and not self.ids.valid(cookies.get(CLIENT_COOKIE), address):
            issued = self.ids.issue(address)  # the page: one id per browser, few per address; else the address's
            if issued is not None:
                set_cookies.append(f"{CLIENT_COOKIE}={issued}; Path=/; HttpOnly; SameSite=Strict")
        if set_cookies:
            send = _adding_headers(send, [(b"set-cookie", c.encode("latin-1")) for c in set_cookies])
        if scope["method"] not in self.SAFE:
            for header in ("origin", "referer"):  # a browser sends Origin; older ones only Referer
                value = headers.get(header)
                if value is None:
                    continue
                if urlsplit(value).netloc.lower() != host.strip().lower() or urlsplit(value).scheme not in (
                        "http", "https"):
                    return await answer(403, f"cross-origin request refused: {header} {value[:80]!r} is not this "
                                         f"page (http://{host}); the explorer only answers its own page",
                                         close=True)(scope, receive, send)
                break
        length = headers.get("content-length")
        if length is None and "transfer-encoding" not in headers:
            return await self.app(scope, receive, send)  # no body
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            return await answer(413, f"request body is {length[:30]} bytes; allowed up to {self.max_body}")(
                scope, receive, send)
        chunks, size = [], 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_seconds
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.0))
            except asyncio.TimeoutError:
                return await answer(408, f"the request body did not arrive within {self.body_seconds:g} s "
                                     f"({size} bytes received); send it at once", close=True)(scope, receive, send)
            if message["type"] == "http.disconnect":
                return None  # the client went away mid-body: nobody to answer
            size += len(message.get("body", b""))
            if size > self.max_body:
                return await answer(413, f"request body is over {self.max_body} bytes; allowed up to "
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


def _adding_headers(send, extra: list[tuple[bytes, bytes]]):
    """`send` with these headers added to the answer's start (one the answer already has is kept as it is, except
    Set-Cookie, which may repeat)."""
    async def sending(message):
        if message["type"] == "http.response.start":
            present = {k.lower() for k, _ in message.get("headers", [])}
            added = [(k, v) for k, v in extra if k == b"set-cookie" or k not in present]
            message = {**message, "headers": [*message.get("headers", []), *added]}
        await send(message)
    return sending
