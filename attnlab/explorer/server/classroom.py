"""Serving a class: the class token, the client a request belongs to, and the queue of heavy jobs.

Why: a teacher runs one explorer and thirty students open it on the local network. Beyond loopback anyone on
that network could reach it, so every request must carry a shared class token (random, printed at start, in the
address the students open, then kept in a cookie). And thirty students share two cores: a sweep (a head sweep,
a patching grid, a streamed generation) holds the machine for seconds, so such heavy jobs take turns in one
queue, each client (one browser) running at most one of them at a time, while light requests (an attention
map, the logit lens, one ablation) have their own slots and never wait behind a sweep.

Everything here is plain data and asyncio; guard.py and runner.py wire it into the guard and into `run()`.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import re
import secrets
import socket
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from attnlab.errors import AttnlabError

CLASS_COOKIE = "attnlab_class"  # the class token, kept by the student's browser after the first visit
CLASS_HEADER = "x-attnlab-class"  # or sent as a header (scripts, the class benchmark)
CLASS_QUERY = "class"  # the address the students open: http://HOST:PORT/?class=TOKEN
CLIENT_COOKIE = "attnlab_client"  # one random id per browser: the "client" a heavy job belongs to
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{16,64}")
MAX_WAITING_PER_CLIENT = 4  # heavy jobs one client may have queued (beyond: refused with the queue's length)
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


def lan_address() -> str:
    """This machine's address on its local network: the source address the kernel would use to reach a private
    address (a UDP socket's connect sends nothing). 127.0.0.1 when there is no network."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("10.255.255.255", 1))
            address = sock.getsockname()[0]
        except OSError:
            return "127.0.0.1"
    return address if not ipaddress.ip_address(address).is_unspecified else "127.0.0.1"


def is_heavy(path: str, query: str) -> bool:
    """Whether a request's work is a heavy job (queued, one per client) rather than a light one."""
    if path in HEAVY_PATHS:
        return True
    measure = parse_qs(query).get("measure", ["false"])[-1].lower()
    return path.startswith("/api/cost/") and measure in ("1", "true", "on", "yes", "t", "y")  # as FastAPI reads it


def client_of(cookies: dict[str, str], address: str | None) -> str:
    """The client a request belongs to: its browser's id cookie when it has a well-formed one, else its address
    (a script without cookies: one client per machine)."""
    cid = cookies.get(CLIENT_COOKIE, "")
    if re.fullmatch(r"[0-9a-f]{32}", cid):
        return "c:" + cid
    return "a:" + (address or "unknown")


class QueueFull(AttnlabError):
    """A client asked for more heavy jobs than MAX_WAITING_PER_CLIENT at once (answered 429)."""


@dataclass(eq=False)
class Ticket:
    """One heavy job's place: waiting until `granted` is set, then running until released."""

    client: str
    granted: asyncio.Future = field(repr=False)


class HeavyQueue:
    """First come, first served over `slots` heavy slots, skipping a job whose client already runs one (so one
    client with four sweeps queued does not hold both slots; the next client's job goes first). One per event
    loop; every method runs on that loop, so no lock is needed."""

    def __init__(self, slots: int):
        self.slots = slots
        self.running: dict[str, Ticket] = {}  # client -> its running job
        self.waiting: list[Ticket] = []

    def join(self, client: str) -> Ticket:
        """A place in the queue (granted at once when a slot is free and the client runs nothing)."""
        places = [i + 1 for i, t in enumerate(self.waiting) if t.client == client]
        if len(places) >= MAX_WAITING_PER_CLIENT:
            raise QueueFull(f"you already have {len(places)} heavy jobs waiting (sweeps, patching grids, streams; "
                            f"at places {', '.join(map(str, places))} of {len(self.waiting)} in the queue): wait "
                            "for them or cancel one")
        ticket = Ticket(client, asyncio.get_running_loop().create_future())
        self.waiting.append(ticket)
        self._grant()
        return ticket

    def leave(self, ticket: Ticket) -> None:
        """The job finished, was cancelled or gave up waiting: its slot (or place) goes to the next."""
        if ticket in self.waiting:
            self.waiting.remove(ticket)
        if self.running.get(ticket.client) is ticket:
            del self.running[ticket.client]
        if not ticket.granted.done():
            ticket.granted.cancel()
        self._grant()

    def _grant(self) -> None:
        for ticket in list(self.waiting):
            if len(self.running) >= self.slots:
                return
            if ticket.client in self.running:
                continue  # this client's earlier job still runs: its next one waits, others go first
            self.waiting.remove(ticket)
            self.running[ticket.client] = ticket
            ticket.granted.set_result(True)

    def status(self, client: str) -> dict:
        """What the page shows: the queue's length, jobs running, and this client's places (1 = next to run)."""
        mine = [i + 1 for i, t in enumerate(self.waiting) if t.client == client]
        return {"running": len(self.running), "slots": self.slots, "waiting": len(self.waiting),
                "mine_running": client in self.running, "mine_waiting": mine}
