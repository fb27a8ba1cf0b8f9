"""Who a request belongs to: a client id the server issues (a cookie), bound to the address it was issued to,
with few new ids per address, so that the fair queues (explorer/server/fair_queue.py) cannot be gamed.

Why: the queues share the machine round robin across clients. Were a client any id a request names, one student
could send twenty ids and take twenty shares. So an id is made here (a random nonce and an HMAC of it and the
address, under a secret that lives as long as the server): a made-up id, or one copied to another machine, counts
as none. One address gets at most ID_LIMIT new ids per ID_WINDOW seconds; a request without a valid id belongs to
its address's own client. And the queues take turns by address first, then among the ids of one address (a
teacher's laptop with two browsers: two clients inside one address's share), so more ids from one address never
buy more turns: rotating cookies gains nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass

CLIENT_COOKIE = "attnlab_client"  # the id the page gets on its first visit (HttpOnly, SameSite=Strict)
ID_LIMIT = 4  # new ids one address may be given per ID_WINDOW (a few browsers, a restarted one)
ID_WINDOW = 600.0  # seconds
MAX_ADDRESSES = 4096  # addresses whose issued ids are remembered at once (older ones forgotten first)
_ID = re.compile(r"[0-9a-f]{48}")  # a nonce (16 hex) and its HMAC (32 hex)


@dataclass(frozen=True)
class Client:
    """A request's client: its network address, and its issued id (None: the address's own client)."""

    address: str
    id: str | None = None


class ClientIds:
    """Issues and checks client ids (module docstring). One per app; `clock` is replaceable for tests."""

    def __init__(self, limit: int = ID_LIMIT, window: float = ID_WINDOW, clock=time.monotonic):
        self.limit, self.window, self.clock = limit, window, clock
        self._secret = secrets.token_bytes(32)
        self._issued: dict[str, list[float]] = {}  # address -> when its ids in the window were issued

    def _mac(self, nonce: str, address: str) -> str:
        return hmac.new(self._secret, f"{nonce}|{address}".encode(), hashlib.sha256).hexdigest()[:32]

    def issue(self, address: str) -> str | None:
        """A new id for a browser at `address`, or None when that address had ID_LIMIT ids in the window."""
        now = self.clock()
        recent = [t for t in self._issued.get(address, []) if now - t < self.window]
        if len(recent) >= self.limit:
            self._issued[address] = recent
            return None
        if address not in self._issued and len(self._issued) >= MAX_ADDRESSES:
            del self._issued[next(iter(self._issued))]  # the address remembered longest
        self._issued[address] = [*recent, now]
        nonce = secrets.token_hex(8)
        return nonce + self._mac(nonce, address)

    def valid(self, cid: str | None, address: str) -> bool:
        """Whether `cid` is an id this server issued to `address` (constant-time comparison)."""
        if not cid or not _ID.fullmatch(cid):
            return False
        return hmac.compare_digest(cid[16:], self._mac(cid[:16], address))

    def client(self, cookies: dict[str, str], address: str | None) -> Client:
        """The client of a request with these cookies from `address`."""
        address = address or "unknown"
        cid = cookies.get(CLIENT_COOKIE)
        return Client(address, cid if self.valid(cid, address) else None)
